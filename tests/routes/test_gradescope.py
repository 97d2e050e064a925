"""The Gradescope zip as Gradescope runs it: unpacked into an /autograder-like root, set up by its own
setup.sh on Python 3.10 (Gradescope's Ubuntu 22.04 image) in a clean venv holding only what setup.sh
installs, then run_autograder as root, once with bubblewrap and once with bubblewrap unusable, as it
usually is inside Gradescope's containers.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from autograder.assemble.gradescope import REQUIREMENTS, TORCH
from autograder.bundle import read_bundle
from autograder.grade.written_policy import fixed_items
from autograder.report.results_json import results_json
from autograder.routes.class_grading import grade_class
from conftest import ROOT, key_module, replace_function, require_bwrap
from served_course import class_sample
from autograder.references import misconceptions

pytestmark = pytest.mark.slow  # a Python 3.10 venv made by setup.sh

FIXTURES = ROOT / "tests" / "fixtures" / "gradescope"
# bwrap as it behaves in a container that may not make namespaces
FAILING_BWRAP = ("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel "
                 "does not allow non-privileged user namespaces' >&2\nexit 1\n")


def python310() -> str:
    """Gradescope's default Python: the machine's python3.10, or pyenv's."""
    candidates = [shutil.which("python3.10"), *sorted(glob.glob("/root/.pyenv/versions/3.10*/bin/python3.10"))]
    for found in filter(None, candidates):
        if subprocess.run([found, "-c", "import venv, ensurepip"], capture_output=True).returncode == 0:
            return found
    if os.environ.get("CI"):
        pytest.fail("no Python 3.10 on this CI machine: the Gradescope route cannot be tried as deployed")
    pytest.skip("no Python 3.10 here")


@pytest.fixture(scope="module")
def autograder_root(built_numpy_same) -> Path:
    """/autograder as Gradescope lays it out, after setup.sh ran (as root, as Gradescope runs it)."""
    if os.geteuid() != 0:
        pytest.skip("Gradescope runs its scripts as root") if not os.environ.get("CI") else pytest.fail("needs root")
    # a root every uid may traverse, like /autograder (pytest's own tmp folders are 0700)
    root = Path(tempfile.mkdtemp(prefix="qkv-autograder-", dir="/tmp"))
    root.chmod(0o755)
    (root / "source").mkdir()
    with zipfile.ZipFile(built_numpy_same.out / "gradescope.zip") as archive:
        archive.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        (root / "source" / script).chmod(0o755)
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "QKV_GRADESCOPE_ROOT": str(root),
           "QKV_SKIP_APT": "1", "QKV_PYTHON": python310()}
    done = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    yield root
    shutil.rmtree(root, ignore_errors=True)


def run_autograder(root: Path, submission: str, name: str = "submission.py", bwrap_works: bool = True,
                   sid: str = "s1") -> dict:
    shutil.rmtree(root / "submission", ignore_errors=True)
    shutil.rmtree(root / "results", ignore_errors=True)
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission" / name).write_text(submission)
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"sid": sid, "email": "x@y.z"}]}))
    path = os.environ["PATH"]
    if not bwrap_works:
        fake = root / "fake-bin"
        fake.mkdir(exist_ok=True)
        (fake / "bwrap").write_text(FAILING_BWRAP)
        (fake / "bwrap").chmod(0o755)
        path = f"{fake}:{path}"
    env = {"PATH": path, "QKV_GRADESCOPE_ROOT": str(root)}  # nothing of this test's venv
    run = subprocess.run(["bash", str(root / "source" / "run_autograder")], capture_output=True, text=True,
                         env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text())


def test_zip_has_gradescope_layout(built_numpy_same):
    with zipfile.ZipFile(built_numpy_same.out / "gradescope.zip") as archive:
        names = set(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
    assert {"setup.sh", "run_autograder", "requirements.txt", "bundle/assignment.json", "bundle/arrays.npz",
            "qkv_runtime/wire.py", "autograder/routes/gradescope.py"} <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111


@pytest.mark.parametrize("python", ["3.10", "3.11", "3.13"])
def test_the_pins_resolve_for_gradescopes_pythons(python, tmp_path):
    """pip's own resolver, for another Python, wheels only: what setup.sh asks for exists there."""
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                           "--python-version", python, "--only-binary=:all:", "--target", str(tmp_path / "t"),
                           "--report", str(report), *REQUIREMENTS],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    installed = {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}
    assert {"numpy", "pyyaml", "pydantic"} <= installed
    if python == "3.10":  # the torch track's pin too (its metadata only: no multi-GB download)
        torch = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                                "--no-deps", "--python-version", python, "--only-binary=:all:",
                                "--target", str(tmp_path / "t"), TORCH], capture_output=True, text=True, timeout=300)
        assert torch.returncode == 0, torch.stderr[-2000:]


def test_setup_made_a_venv_with_only_its_pins(autograder_root):
    venv_python = autograder_root / "qkv-venv" / "bin" / "python"
    version = subprocess.run([str(venv_python), "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True).stdout
    assert version.strip() == "(3, 10)"
    listed = subprocess.run([str(venv_python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True)
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "rich" not in names and "jinja2" not in names and "matplotlib" not in names and "qkv" not in names
    assert {"numpy", "pyyaml", "pydantic"} <= names


@pytest.mark.parametrize("bwrap_works", [True, False], ids=["bwrap", "no-bwrap"])
def test_the_key_scores_full_marks_and_the_stub_zero(built_numpy_same, autograder_root, bwrap_works):
    if bwrap_works:
        require_bwrap()
    key = run_autograder(autograder_root, key_module(built_numpy_same.assignment), bwrap_works=bwrap_works)
    assert key["score"] == pytest.approx(built_numpy_same.assignment.max_points), key["output"]
    assert key["extra_data"]["isolation"] == ("bwrap" if bwrap_works else "uid")
    for test in key["tests"]:
        assert {"name", "score", "max_score", "output", "visibility"} <= set(test)
    # the manifest's written rule is `hidden`: its fixed written items wait for grades to be published
    fixed = {w.id for w in fixed_items(read_bundle(built_numpy_same.out / "autograder"))}
    held = {t["name"].split(":")[0] for t in key["tests"] if t["visibility"] == "after_published"}
    assert fixed and held == fixed and "written answers kept" in key["output"]
    assert set(key["extra_data"]["written_answers"]) == fixed  # for the submissions after it to read back
    assert {t["visibility"] for t in key["tests"] if t["visibility"] != "after_published"} == \
        {"visible", "after_due_date"}
    stub = (built_numpy_same.out / "student" / f"{built_numpy_same.assignment.module_name}.py").read_text()
    assert run_autograder(autograder_root, stub, bwrap_works=bwrap_works)["score"] == 0


@pytest.mark.parametrize("bwrap_works", [True, False], ids=["bwrap", "no-bwrap"])
def test_a_submission_reading_the_graders_files_gets_nothing(autograder_root, bwrap_works):
    if bwrap_works:
        require_bwrap()
    thief = (FIXTURES / "thief.py").read_text().replace('ROOT = "/autograder"', f'ROOT = "{autograder_root}"')
    results = run_autograder(autograder_root, thief, bwrap_works=bwrap_works)
    assert results["score"] == 0
    text = json.dumps(results)
    assert "STOLEN" not in text and "numpy_ref" not in text and "x@y.z" not in text
    modes = {p: oct(p.stat().st_mode & 0o777) for p in (autograder_root / "source",
                                                       autograder_root / "source" / "bundle" / "assignment.json")}
    assert all(mode in ("0o700", "0o600") for mode in modes.values()), modes


def test_a_mistake_loses_points_and_is_named(built_numpy_same, autograder_root):
    source = replace_function(key_module(built_numpy_same.assignment), "softmax_rows", misconceptions.softmax_over_columns)
    results = run_autograder(autograder_root, source, bwrap_works=False)
    assert results["score"] < built_numpy_same.assignment.max_points
    failed = [t for t in results["tests"] if t["score"] < t["max_score"]]
    assert failed and all(t["name"].startswith("softmax-rows") for t in failed)
    assert "columns" in results["output"] and all(t["output"].startswith("mistake 1 of") for t in failed)


def test_results_json_names_each_mistake_in_the_words_of_qkv_grade(built_numpy_same, autograder_root, tmp_path):
    """The sample student whose attention functions build on his column softmax: Gradescope's summary names it
    once, and every test's output is the one qkv grade's results.json writes for that test."""
    sample = class_sample("ben.py")  # the class's numbers, as this course draws them
    results = run_autograder(autograder_root, sample.read_text())
    (tmp_path / "subs").mkdir()
    shutil.copy(sample, tmp_path / "subs" / "ben.py")
    graded = grade_class(built_numpy_same.out / "autograder", tmp_path / "subs", tmp_path / "out", jobs=1).results[0]
    message = next(p for p in graded.problems if p.problem_id == "softmax-rows").tests[-1].message.split(" (")[0]
    assert "what to fix first:" in results["output"] and message in results["output"]
    written = results_json(graded, "bwrap", read_bundle(built_numpy_same.out / "autograder"))
    expected = {t["name"]: t["output"] for t in written["tests"] if t["status"] == "failed"}
    got = {t["name"]: t["output"] for t in results["tests"] if t["status"] == "failed"}
    assert got == expected and results["output"].count(message) == 1
    assert got["multi-head-attention: one head"].startswith("mistake 1 of what to fix first (column softmax in")


def test_an_empty_submission_folder_scores_zero_with_a_reason(autograder_root):
    results = run_autograder(autograder_root, "", name="notes.txt")
    assert results["score"] == 0 and "missing" in results["output"]


@pytest.mark.parametrize("readable_by_all", [True, False], ids=["engine readable by all", "engine owner-only"])
def test_where_nothing_isolates_an_engine_others_may_read_is_refused_and_an_owner_only_one_gets_a_uid(
        built_numpy_same, autograder_root, tmp_path, readable_by_all):
    """The route as deployed (setup.sh's venv, the zip's engine) with no bubblewrap at all, the engine copied out of
    the source folder that the route locks down. One any user may read (as after `pip install` on a shared machine)
    would be handed to student code, so the route refuses, in results.json, naming it; an owner-only one lets root
    give student code a uid of its own. The test makes both copies under the world-traversable root: the modes of
    the folders this checkout sits in do not count."""
    engine = autograder_root / ("engine-readable" if readable_by_all else "engine-owner-only")
    for package in ("autograder", "qkv_runtime"):
        shutil.copytree(autograder_root / "source" / package, engine / package, symlinks=True, dirs_exist_ok=True)
    subprocess.run(["chmod", "-R", "go+rX" if readable_by_all else "go-rwx", str(engine)], check=True)
    root = tmp_path / "autograder"
    shutil.copytree(autograder_root / "source" / "bundle", root / "source" / "bundle")
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "s.py").write_text(key_module(built_numpy_same.assignment))
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"sid": "s1", "email": "x@y.z"}]}))
    script = ("import json, os, sys\nfrom pathlib import Path\nimport autograder\n"
              "assert autograder.__file__.startswith(sys.argv[2] + os.sep), autograder.__file__\n"
              "from autograder.routes.gradescope import grade_gradescope\n"
              "print(json.dumps(grade_gradescope(Path(sys.argv[1]), Path(sys.argv[1]) / 'source')))\n")
    env = {"PATH": "/nonexistent", "PYTHONPATH": str(engine)}  # no bwrap at all, nothing of this test's venv
    done = subprocess.run([str(autograder_root / "qkv-venv" / "bin" / "python"), "-c", script, str(root), str(engine)],
                          cwd=engine, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    if readable_by_all:
        assert results["score"] == 0 and results["tests"] == [] and results["extra_data"]["isolation"] == "none"
        assert "requires isolation" in results["output"] and "readable by other users" in results["output"]
        assert f"{engine}{os.sep}" in results["output"], results["output"]
    else:
        assert results["extra_data"]["isolation"] == "uid", results["output"]
        assert results["score"] == pytest.approx(built_numpy_same.assignment.max_points), results["output"]
