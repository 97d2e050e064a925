"""A class with hostile files in it, graded by `qkv grade` as instructors run it: each bad file gets its own
row and one line, the students beside it are graded as if it were not there, and nothing reaches the
instructor's terminal but text.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from autograder.routes.class_grading import grade_class
from conftest import HOSTILE, QKV, key_module

pytestmark = pytest.mark.slow  # grades a hostile class, on a Dask cluster too

ESCAPE_BYTES = (b"\x1b", b"\x07", "\u202e".encode())


def forged_layout_override(problem_id: str, first_test: str) -> str:
    """softmax_rows that first writes, in order, a result frame with an absurd layout for its own first call."""
    return f'''
import json as _json, os as _os, struct as _struct
_head = _json.dumps({{"kind": "call", "call_id": "{problem_id}::{first_test}", "ok": True,
                     "arrays": [["<f8", [0, 10**30]]]}}).encode()
_forged = _struct.pack(">II", len(_head), 0) + _head
_right = softmax_rows


def softmax_rows(S, mask=None):
    for fd in range(3, 32):
        try:
            _os.write(fd, _forged)
        except OSError:
            pass
    return _right(S, mask)
'''


@pytest.fixture(scope="module")
def hostile_class(built_numpy_same, tmp_path_factory):
    assignment = built_numpy_same.assignment
    key = key_module(assignment)
    softmax = next(p for p in assignment.implement if p.problem.function == "softmax_rows").problem
    subs = tmp_path_factory.mktemp("hostile-class")
    (subs / "bystander.py").write_text(key)
    (subs / "forger.py").write_text(key + forged_layout_override(softmax.id, softmax.public_tests[0].name))
    numeric = next(p.problem for p in assignment.written if p.problem.kind == "numeric")
    (subs / "deep_answers.py").write_text(key + f"\nANSWERS[{numeric.id!r}] = "
                                          + repr({part.name: "[" + "-" * 5000 + "1]" for part in numeric.parts})
                                          + "\nANSWERS['scores-shape'] = '-' * 9000\n")
    (subs / os.fsdecode(b"J\xfcrgen.py")).write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    (subs / "escapes.py").write_bytes((HOSTILE / "terminal_escapes.py").read_bytes())
    (subs / "z_last.py").write_text(key)
    return subs


def test_hostile_files_each_get_their_row_and_the_batch_goes_on(built_numpy_same, hostile_class, tmp_path):
    run = grade_class(built_numpy_same.out / "autograder", hostile_class, tmp_path / "out", jobs=2, timeout=5.0)
    rows = {r.student: r for r in run.results}
    assert len(rows) == 6
    full = built_numpy_same.assignment.max_points
    assert rows["bystander"].score == rows["z_last"].score == pytest.approx(full)
    forger = rows["forger"]
    softmax = next(p for p in forger.problems if p.problem_id.startswith("softmax"))
    assert any("cannot read" in t.message for t in softmax.tests), [t.message for t in softmax.tests]
    assert forger.score < full
    deep = rows["deep_answers"]
    assert deep.status == "graded" and deep.score < full
    latin = next(r for s, r in rows.items() if s.startswith("J_rgen-"))
    assert latin.status == "not_utf8"
    for student in rows:
        page = (tmp_path / "out" / "feedback" / student / "feedback.html").read_bytes()
        page.decode("utf-8")  # written, and valid UTF-8 (a lone surrogate used to make writing it fail)


def test_escape_sequences_never_reach_the_terminal(built_numpy_same, hostile_class, tmp_path):
    done = subprocess.run([str(QKV), "grade", "attention-numpy", str(hostile_class), "--dist", str(built_numpy_same.out),
                           "--out", str(tmp_path / "cli"), "--jobs", "2", "--timeout", "5"],
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    for stream in (done.stdout, done.stderr):
        assert not any(b in stream for b in ESCAPE_BYTES), stream.decode(errors="replace")[-2000:]
    assert b"\\x1b" in done.stdout  # shown, escaped, in the gradebook table


def test_on_a_dask_worker_too_a_forged_layout_costs_only_its_sender(built_numpy_same, hostile_class, tmp_path):
    subs = tmp_path / "two"
    subs.mkdir()
    for name in ("bystander.py", "forger.py"):
        (subs / name).write_bytes((hostile_class / name).read_bytes())
    run = grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", timeout=5.0, cluster="local:1")
    rows = {r.student: r for r in run.results}
    assert rows["bystander"].score == pytest.approx(built_numpy_same.assignment.max_points)
    assert rows["forger"].status == "graded" and rows["forger"].score < rows["bystander"].score
