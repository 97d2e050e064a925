"""Shared fixtures: the bank, built assignments, and submissions made from the answer key."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as dt
import fcntl
import inspect
import os
import pickle
import pprint
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import nbformat
import numpy as np
import pytest
import yaml

from autograder.bank.load import Bank, load_bank_strict
from autograder.assemble import BuildResult, build
from autograder.assemble.manifest import Assignment
from autograder.assemble.solution_key import key_answer, key_function, key_module
from autograder.sandbox import Call, Limits, ProblemCalls, isolation_available
from page_look import axe  # noqa: F401 (a fixture: pytest finds it here)
from served_course import ServedCourse, make_course
from servers import chromium_browser, postgres_db, postgres_url  # noqa: F401 (fixtures: pytest finds them here)

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
QKV = Path(sys.executable).with_name("qkv")  # the installed command, run as a user would

# The hostile and broken submissions (one attack per file) each define softmax_rows(S) and
# double(x); CORE calls both, under limits small enough to keep their loops short.
HOSTILE = ROOT / "tests" / "fixtures" / "submissions"
S = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-1.0, 5.0, 2.0]])
X = np.arange(4.0)
CORE = (
    ProblemCalls("softmax", (Call("s1", "softmax_rows", (S,)), Call("s2", "softmax_rows", (10 * S,)))),
    ProblemCalls("double", (Call("d1", "double", (X,)), Call("d2", "double", (), {"x": 3}))),
)
SANDBOX_LIMITS = Limits(load_seconds=3.0, problem_seconds=2.0, cpu_seconds=10, memory_bytes=512 * 1024**2,
                        max_processes=16, max_output_bytes=100_000, max_file_bytes=1_000_000)
# For the attacks whose tests check the memory and size limits: filling 512 MiB costs seconds of CPU in page faults
# on a slow machine (2 s of kernel time on the 2-core one the figures come from), and under load a 2 s limit would end
# them first. With these time limits only memory can (a phase that is short of CPU runs on up to STARVED_FACTOR times
# its limit); a regression that lets a bomb grow still fails, by timing out.
MEMORY_TEST_LIMITS = dataclasses.replace(SANDBOX_LIMITS, load_seconds=30.0, problem_seconds=30.0, cpu_seconds=60)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules whose every test is slow first, each module's tests in their own order: under `make test` (xdist, one
    module per worker at a time, in this order) the longest start at once, and no worker is left alone with one."""
    all_slow: dict[Path, bool] = {}
    for item in items:
        all_slow[item.path] = all_slow.get(item.path, True) and item.get_closest_marker("slow") is not None
    items.sort(key=lambda item: not all_slow[item.path])


@pytest.fixture(scope="session")
def bank() -> Bank:
    return load_bank_strict()


def once_per_run(what: str, make: Callable[[Path], T], tmp_path_factory: pytest.TempPathFactory,
                 config: pytest.Config) -> T:
    """make(the run's folder) once per test run: the workers of `pytest -n` (xdist) take the first one's result
    (pickled), and what it made, which the tests only read, as they do within one process."""
    root = tmp_path_factory.getbasetemp()
    if hasattr(config, "workerinput"):  # an xdist worker: the run's folder is above each worker's own
        root = root.parent
    saved = root / f"{what}.pickle"
    with open(root / f"{what}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if saved.exists():
            return pickle.loads(saved.read_bytes())
        result = make(root)
        saved.write_bytes(pickle.dumps(result))
        return result


@contextlib.contextmanager
def own_runtime():
    """qkv's own qkv_runtime imported while a build copies its files: a notebook's helper cell run in this process
    (tests/routes/test_mistake_routes.py) leaves its embedded one, which has no files, in sys.modules."""
    runtime = sys.modules.get("qkv_runtime")
    if runtime is None or runtime.__spec__ is not None:
        yield
        return
    embedded = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "qkv_runtime" or k.startswith("qkv_runtime.")}
    try:
        yield
    finally:
        for name in [k for k in sys.modules if k == "qkv_runtime" or k.startswith("qkv_runtime.")]:
            del sys.modules[name]
        sys.modules.update(embedded)


def shared_build(name: str, bank: Bank, tmp_path_factory: pytest.TempPathFactory, config: pytest.Config) -> BuildResult:
    """`qkv build NAME` once per test run."""
    def make(root: Path) -> BuildResult:
        with own_runtime():
            return build(name, root / "shared-dist" / name, bank=bank)

    return once_per_run(f"shared-build-{name}", make, tmp_path_factory, config)


@pytest.fixture(scope="session")
def built_numpy(bank, tmp_path_factory, pytestconfig) -> BuildResult:
    return shared_build("attention-numpy", bank, tmp_path_factory, pytestconfig)


@pytest.fixture(scope="session")
def built_numpy_same(bank, tmp_path_factory, pytestconfig) -> BuildResult:
    """attention-numpy built from a copy whose class shares one set of numbers (`variants: same`), where the bundled
    manifest draws them per student (built_numpy): for the tests of the grading machinery that hand the class's key
    (key_module without a student) in as any student and expect every point, as a generated class does."""
    def make(root: Path) -> BuildResult:
        manifest = yaml.safe_load((ROOT / "assignments" / "attention-numpy.yaml").read_text(encoding="utf-8"))
        manifest["variants"] = "same"  # one key for any student: what these tests hand in
        manifest.pop("roster", None)
        folder = root / "same-numbers"
        folder.mkdir()
        (folder / "attention-numpy.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        with own_runtime():
            return build("attention-numpy", root / "same-dist" / "attention-numpy", bank=bank, assignments_root=folder)

    return once_per_run("shared-build-attention-numpy-same", make, tmp_path_factory, pytestconfig)


@pytest.fixture(scope="session")
def served_numpy(tmp_path_factory, pytestconfig) -> ServedCourse:
    """A course of its own with attention-numpy due in 30 days (the last date a week later) and the default `serve`
    limits, built once per test run, for the tests that serve it: the bundled manifest's dates are fixed, and past
    them the service would refuse every upload. Tests copy it before writing in it."""
    def make(root: Path) -> ServedCourse:
        due = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(days=30)
        # a folder of its own each time: a make that failed half-way leaves nothing in the next one's way
        return ServedCourse(make_course(Path(tempfile.mkdtemp(prefix="served-numpy-", dir=root)) / "course", {}, due))

    return once_per_run("served-numpy", make, tmp_path_factory, pytestconfig)


def replace_function(source: str, target: str, implementation) -> str:
    """Append `implementation` (a misconception from solutions.misconceptions) under the name
    `target`, so it replaces the key's version. Its module's header comes along; the `ref` it
    may call is the submission's own (right) functions, never the solutions package."""
    header = inspect.getsource(inspect.getmodule(implementation)).split("\ndef ", 1)[0]
    header = header.replace("from . import numpy_ref as ref", "")
    ref = "import types as _types\nref = _types.SimpleNamespace(**{k: v for k, v in dict(globals()).items() if callable(v)})\n"
    return f"{source}\n{header}\n{ref}\n{inspect.getsource(implementation)}\n{target} = {implementation.__name__}\n"


def key_notebook(assignment: Assignment, release_notebook: Path, student: str | None = None) -> str:
    """The release notebook with every work cell filled from the answer key."""
    nb = nbformat.read(release_notebook, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("qkv", {})
        if meta.get("role") == "work":
            problem = next(a.problem for a in assignment.problems if a.problem.id == meta["problem"])
            if problem.kind == "implement":
                cell.source = key_function(problem, assignment.track)
            else:
                cell.source = f"ANSWERS[{problem.id!r}] = {pprint.pformat(key_answer(problem, assignment, student))}"
        if meta.get("role") == "setup" and student:
            cell.source = cell.source.replace('STUDENT_ID = ""', f"STUDENT_ID = {student!r}")
    return nbformat.writes(nb)


def graded_so_far(gradebook: Path) -> int:
    """Rows in a gradebook that a running grader writes; 0 until its file and tables exist."""
    if not gradebook.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(gradebook)) as db:
            return db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):  # the grader has created the file but not yet its tables
            return 0
        raise


def said(stderr: str) -> list[str]:
    """What a command told its user on stderr, but for its first line naming the course it works in."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("course: ")]


def gradebook_rows(out: Path) -> dict[str, dict[str, str]]:
    """gradebook.csv of a grading output folder, by student."""
    with open(out / "gradebook.csv", newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def wait_for(done: Callable[[], object], what: str, shown: Callable[[], object] = lambda: "",
             seconds: float = 300.0, every: float = 0.3) -> None:
    """Poll `done` until it holds; `seconds` bounds a loaded 2-core machine's wait, it is not an expected time."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {seconds:g} s: {shown()}", pytrace=False)
        time.sleep(every)


def require_bwrap() -> None:
    """Skip a test that needs bubblewrap on a machine without it; in CI, which installs it, fail instead."""
    if isolation_available() != "bwrap":
        if os.environ.get("CI"):
            pytest.fail("bubblewrap does not work on this CI machine, and the sandbox tests need it")
        pytest.skip("bubblewrap does not work here")


@pytest.fixture(scope="session")
def bwrap_required() -> None:
    require_bwrap()


needs_bwrap = pytest.mark.usefixtures("bwrap_required")

__all__ = ["CORE", "HOSTILE", "MEMORY_TEST_LIMITS", "QKV", "ROOT", "S", "SANDBOX_LIMITS", "X", "graded_so_far",
           "gradebook_rows", "said", "key_module", "key_notebook", "needs_bwrap", "replace_function", "require_bwrap"]  # what test modules import from here


def no_network_prefix() -> list[str]:
    """A command prefix that runs its command with no network (unshare -n, else bwrap); [] where none works here."""
    for prefix in (["unshare", "-n"], ["bwrap", "--unshare-net", "--dev-bind", "/", "/"]):
        if shutil.which(prefix[0]):
            try:
                if subprocess.run(prefix + ["true"], capture_output=True, timeout=20).returncode == 0:
                    return prefix
            except (OSError, subprocess.TimeoutExpired):
                pass
    return []
