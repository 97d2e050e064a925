"""The self-check's time limits: the grader's, from the release, held by a parent that kills a hung child.

A release of tests/fixtures/selfcheck/time-limits.yaml (load_seconds: 1, problem_seconds: 1) and files
that hang in every way we know: an endless loop in a function, one that swallows BaseException (the
old in-process alarm's exception), one that ignores SIGALRM, one at the top level, one in a notebook
cell, and a function that kills its own process. The command line must end, exit 0, name the call
that hung and still report every other problem.

The subprocess timeouts below only keep a broken checker from hanging the test suite; no assertion
is about how long anything took.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.assemble import build
from autograder.selfcheck import qkv_check
from conftest import QKV

pytestmark = pytest.mark.slow  # waits out the self-check's time limits

FIXTURE = Path(__file__).parents[1] / "fixtures" / "selfcheck" / "time-limits.yaml"
HANG_GUARD = 120  # seconds: far beyond the limits of 1 s; only there so that a broken checker fails


@pytest.fixture(scope="module")
def limited(bank, tmp_path_factory):
    """The fixture's release, its answer key (every function and answer right) beside it."""
    built = build(str(FIXTURE), tmp_path_factory.mktemp("limits") / "dist", bank=bank)
    folder = tmp_path_factory.mktemp("limits-student") / "release"
    shutil.copytree(built.out / "student", folder)
    key = (built.out / "key" / f"{built.assignment.module_name}.py").read_text()
    (folder / "right.py").write_text(key)
    return built, folder, key


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "qkv_check.py", *args], cwd=folder, capture_output=True, text=True,
                          timeout=HANG_GUARD)


def _rows(text: str) -> dict[str, str]:
    rows = {}
    for line in text.split("\nSummary\n", 1)[1].splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] in ("implement", "numeric", "true_false"):
            rows[fields[0]] = fields[3]
    return rows


def _with(key: str, extra: str) -> str:
    """The answer key with one function replaced (appended below it, so the later definition wins)."""
    return key + "\n\n" + extra.strip() + "\n"


def test_the_release_carries_the_graders_limits(limited):
    built, folder, _ = limited
    data = json.loads((folder / "selfcheck.json").read_text())
    assert data["limits"]["load_seconds"] == 1 and data["limits"]["problem_seconds"] == 1
    assert qkv_check.limits_of(data) == built.assignment.limits
    right = _run(folder, "right.py")
    assert right.returncode == 0 and set(_rows(right.stdout).values()) == {"pass"}, right.stdout + right.stderr


HANGS = {
    "loop": ("softmax_rows", "def softmax_rows(*args, **kwargs):\n    while True:\n        pass\n"),
    "swallow": ("attention_scores", """
def attention_scores(*args, **kwargs):
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass
"""),
    "no-alarm": ("causal_mask", """
import signal as _signal
def causal_mask(*args, **kwargs):
    if hasattr(_signal, "SIGALRM"):
        _signal.signal(_signal.SIGALRM, _signal.SIG_IGN)
    while True:
        pass
"""),
}


@pytest.mark.parametrize("case", sorted(HANGS))
def test_a_function_that_never_returns_is_stopped_and_named_and_the_rest_is_checked(limited, case):
    built, folder, key = limited
    function, source = HANGS[case]
    (folder / f"{case}.py").write_text(_with(key, source))
    run = _run(folder, f"{case}.py")
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr
    problem = next(a.problem for a in built.assignment.implement if a.problem.function == function)
    first = problem.public_tests[0].name
    assert f"took longer than 1 s while running {function}() (public test {first!r})" in run.stdout, run.stdout
    assert re.search(r", at line \d+: an endless loop\?", run.stdout)
    rows = _rows(run.stdout)
    assert rows.pop(problem.id) == "fail"
    assert rows and set(rows.values()) == {"pass"}, run.stdout
    if len(problem.public_tests) > 1:
        assert f"the problem's other {len(problem.public_tests) - 1} public test" in run.stdout


def test_an_endless_loop_at_the_top_level_is_stopped(limited):
    _, folder, key = limited
    (folder / "top.py").write_text("n = 0\nwhile True:\n    n += 1\n" + key)
    run = _run(folder, "top.py")
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr
    assert re.search(r"Your file does not load: loading took longer than 1 s, at line [23] \(an endless loop at the "
                     r"top level\?\)", run.stdout), run.stdout
    assert "The grader cannot load it either" in run.stdout


def test_a_notebook_cell_that_never_ends_is_stopped(limited):
    built, folder, key = limited
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_code_cell("while True:\n    x += 1"),
                                         nbformat.v4.new_code_cell(key)])
    (folder / "cell.ipynb").write_text(nbformat.writes(nb))
    run = _run(folder, "cell.ipynb")
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr
    assert re.search(r"the notebook took longer than 1 s to run, at cell 2, line [12] \(an endless loop\?\)",
                     run.stdout), run.stdout


def test_a_function_that_kills_its_process_fails_alone(limited):
    built, folder, key = limited
    (folder / "exits.py").write_text(_with(key, "import os\ndef causal_mask(*args, **kwargs):\n    os._exit(3)\n"))
    run = _run(folder, "exits.py")
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr
    assert "the check stopped while running causal_mask() (public test 'three tokens'): exit code 3" in run.stdout
    rows = _rows(run.stdout)
    assert rows.pop("causal-mask") == "fail" and set(rows.values()) == {"pass"}, run.stdout


def test_qkv_check_holds_the_same_limits(limited, tmp_path):
    built, folder, key = limited
    path = tmp_path / "loop.py"
    path.write_text(_with(key, HANGS["loop"][1]))
    run = subprocess.run([str(QKV), "check", "time-limits", str(path), "--dist", str(built.out)],
                         capture_output=True, text=True, timeout=HANG_GUARD)
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr
    assert "took longer than 1 s while running softmax_rows() (public test 'batched heads (2, 2, 3, 4)')" in run.stdout
    rows = _rows(run.stdout)
    assert rows.pop("softmax-rows") == "fail" and set(rows.values()) == {"pass"}, run.stdout


def test_in_process_checks_keep_the_alarm_with_the_releases_limit(limited, tmp_path):
    """check() in a notebook runs in the student's kernel: an alarm, with the problem's limit from the release."""
    built, folder, key = limited
    data = qkv_check.load_data(folder / "selfcheck.json")
    path = tmp_path / "loop.py"
    path.write_text(_with(key, HANGS["loop"][1]))
    submission = qkv_check.load_submission(path)
    problem = next(p for p in data["problems"] if p["id"] == "softmax-rows")
    result = qkv_check.check_problem(data, problem, submission)
    assert result.status == "fail"
    assert result.outcomes[0].message.startswith("took longer than 1 s while running softmax_rows()")


def test_a_thread_that_kills_the_process_later_costs_at_most_the_problems_it_hits(limited):
    """A function that returns, leaving a thread that ends the process soon after: whichever problem (or
    the time between two) that lands in, the check ends, every problem gets a verdict, the rest pass."""
    built, folder, key = limited
    (folder / "later.py").write_text(_with(key, """
import os as _os, threading as _threading, time as _time
_right_causal_mask = causal_mask
def causal_mask(*args, **kwargs):
    _threading.Thread(target=lambda: (_time.sleep(0.05), _os._exit(5))).start()
    return _right_causal_mask(*args, **kwargs)
"""))
    run = _run(folder, "later.py")
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr
    rows = _rows(run.stdout)
    assert set(rows) == {a.problem.id for a in built.assignment.problems}, run.stdout
    assert "exit code 5" in run.stdout or set(rows.values()) == {"pass"}, run.stdout
    failed = [p for p, r in rows.items() if r != "pass"]
    assert len(failed) <= 2 and all(p in ("causal-mask", "attention-scores") for p in failed), run.stdout
