"""A course of the caller's own served by `qkv serve`, made and run through the commands an instructor runs: `qkv init`,
the bundled attention-numpy manifest (36 problems) with its dates moved to the future and the caller's `serve:`
limits, `qkv build`, `qkv tokens` and the `qkv serve` command line. The browser tests and benchmarks/serve.py use it,
and so, through the `served_numpy` fixture (one such course per test run), every other test that serves attention-numpy.

The dates move with the clock because the bundled manifest's are fixed: past its `last` date every upload would be
refused, and a test or benchmark that worked in the term would fail after it.

The course's attention-numpy gives the class one set of numbers (`variants: same`), where the bundled one draws them
per student: its callers hand one sample in as many students (generated rosters, a sample handed in by each roster
student), so each sample is written with the class's key (`class_sample`) and earns the same score whoever hands it
in, the score `qkv grade` gives it. Per-student numbers are tested on the bundled manifest (tests/routes/test_examples.py,
tests/selfcheck, tests/bank/test_bank_fresh.py).
"""

from __future__ import annotations

import atexit
import csv
import dataclasses
import datetime as dt
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import yaml

from autograder.serve.course import ServedAssignment, served_assignment

ROOT = Path(__file__).resolve().parents[1]
QKV = Path(sys.executable).with_name("qkv")  # the installed command, run as a user would
NAME = "attention-numpy"
ROSTER = ROOT / "examples" / "canvas" / "roster.csv"
COMMAND_S = 900  # a bound on one command on a loaded two-core machine (a build takes about 30 s on a quiet one)


def qkv(course: Path, *args: object) -> str:
    """Run `qkv --course COURSE ARGS...`; its stdout, or an AssertionError with what it said."""
    done = subprocess.run([str(QKV), "--course", str(course), *map(str, args)], capture_output=True, text=True,
                          timeout=COMMAND_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"qkv {' '.join(map(str, args))} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def make_course(folder: Path, serve: dict, due: dt.datetime, last_days: int = 7, grading: dict | None = None,
                written_attempts: str | None = "first", manifest_file: Path | None = None) -> Path:
    """`qkv init FOLDER`, attention-numpy due at `due` (the late policy's last date `last_days` after), with `serve`
    (and `grading`, when given) as its manifest's `serve:` (`grading:`), built; returns the course folder.
    `written_attempts` (None: the manifest's, whose default hides written verdicts until hand-in closes): `first`
    by default, so that a student who hands in their written answers once is shown every point `qkv grade` gives
    (the tests that compare the two); tests/serve/test_written_attempts.py plays the default. `manifest_file`: the
    manifest to start from (default: this checkout's; benchmarks/serve.py --baseline serves an older one's problems)."""
    done = subprocess.run([str(QKV), "init", str(folder)], capture_output=True, text=True, timeout=COMMAND_S,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    manifest = yaml.safe_load((manifest_file or ROOT / "assignments" / f"{NAME}.yaml").read_text(encoding="utf-8"))
    manifest["due"] = due.isoformat()
    if manifest.get("late"):
        manifest["late"]["last"] = (due + dt.timedelta(days=last_days)).isoformat()
    manifest["serve"] = serve
    manifest["variants"] = "same"  # one sample handed in as any student earns its one score (the module's docstring)
    manifest.pop("roster", None)
    if written_attempts is not None:
        manifest["written_attempts"] = written_attempts
    if grading is not None:
        manifest["grading"] = grading
    (folder / "assignments" / f"{NAME}.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    qkv(folder, "build", NAME)
    return folder


@cache
def class_samples() -> Path:
    """The sample class (examples/regenerate.py's samples, ada.py ... hua.ipynb) written with the class's key, in a
    folder of this process's own."""
    spec = importlib.util.spec_from_file_location("regenerate", ROOT / "examples" / "regenerate.py")
    regenerate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regenerate)
    shipped = regenerate.load_assignment()
    assignment = dataclasses.replace(shipped, manifest=shipped.manifest.model_copy(update={"variants": "same",
                                                                                          "roster": []}))
    folder = Path(tempfile.mkdtemp(prefix="qkv-class-samples-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for name, text in regenerate.samples(assignment, lambda _: None).items():
        (folder / name).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    (folder / "hua.ipynb").write_text(regenerate.key_notebook(assignment, None), encoding="utf-8")
    return folder


def class_sample(name: str) -> Path:
    """The sample `name` (ada.py, ben.py, ..., hua.ipynb) written for a make_course course: its prompts, the class's
    numbers and an empty STUDENT_ID, where examples/submissions holds each with its own student's."""
    return class_samples() / name


@dataclass
class ServedCourse:
    """A course made by make_course, and its attention-numpy as `qkv serve` reads it from the build."""

    folder: Path

    @property
    def dist(self) -> Path:
        return self.folder / "dist" / NAME

    @cached_property
    def assignment(self) -> ServedAssignment:
        return served_assignment(NAME, self.dist)


def every_function_loops(functions: Sequence[str]) -> str:
    """A submission whose every function (of `functions`) loops for ever: the looping student of issue 45, whose
    attempt only its budget (attempt_seconds) bounds."""
    return "".join(f"def {name}(*args, **kwargs):\n    while True:\n        pass\n\n\n" for name in functions)


def every_function_sleeps(functions: Sequence[str]) -> str:
    """A submission whose every function (of `functions`) sleeps for ever: a loop whose time is its own on a busy
    machine as on an idle one (it waits for no CPU), so it runs long after the same wall time whatever the load."""
    return "import time\n\n\n" + "".join(f"def {name}(*args, **kwargs):\n    while True:\n        time.sleep(1)\n\n\n"
                                          for name in functions)


def issue_tokens(course: Path, store: Path, roster: Path, url: str, out: Path, *extra: str) -> dict[str, dict]:
    """`qkv tokens` for the roster (and `extra`, e.g. --instructor NAME): the CSV's rows by person."""
    qkv(course, "tokens", NAME, "--roster", roster, "--db", store, "--url", url, "--out", out, *extra)
    with open(out, newline="", encoding="utf-8") as handle:
        return {row["id"]: row for row in csv.DictReader(handle)}


def serve_command(course: Path, store: Path, roster: Path, *extra: str) -> Callable[[int], Sequence[str]]:
    """The `qkv serve` command line on a port, for ServerProcess."""
    return lambda port: [str(QKV), "--course", str(course), "serve", NAME, "--roster", str(roster), "--db",
                         str(store), "--port", str(port), *extra]
