"""The self-check's history (qkv_selfcheck/history.py): each run's per-problem results kept in the student's folder,
owner-only and whole, replayed by the practice rule into mastery, the misconceptions held and what to work on next;
a damaged, foreign or oversized file is one line, put aside, and a fresh start. In process, on hand-made release
data (test_selfcheck.py runs a built release twice, offline)."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.selfcheck.qkv_selfcheck import history
from autograder.selfcheck.qkv_selfcheck.outcomes import FAIL, PASS, TODO, Outcome, ProblemResult
from qkv_runtime import practice

T0 = datetime(2027, 3, 1, 9, 0, tzinfo=timezone.utc)
MIX = "you divided by d instead of its square root"
COLS = "you normalised the columns"
DATA = {
    "assignment": "attention-numpy", "variants": "class",
    "problems": [
        {"id": "scale", "code": False, "topic": "attention", "title": "Scale", "points": 2, "kind": "numeric",
         "misconceptions": {"*": [{"label": "m0", "message": MIX, "digests": {}}]}},
        {"id": "scale-shape", "code": False, "topic": "attention", "title": "Shape", "points": 1, "kind": "shape",
         "misconceptions": {"*": [{"message": MIX, "digests": {}}]}},
        {"id": "softmax", "code": True, "topic": "softmax", "title": "Softmax", "points": 3, "kind": "implement",
         "misconceptions": {"cols": COLS}, "builds_on": []},
    ],
}


def result(pid: str, *outcomes: Outcome) -> ProblemResult:
    return ProblemResult(next(p for p in DATA["problems"] if p["id"] == pid), list(outcomes))


WRONG_RUN = [result("scale", Outcome(FAIL, "not close", named=[MIX])),
             result("scale-shape", Outcome(TODO, "not answered yet")),
             result("softmax", Outcome(PASS, "t1"), Outcome(FAIL, "t2", named=[COLS]))]
RIGHT_RUN = [result("scale", Outcome(PASS, "correct")), result("scale-shape", Outcome(PASS, "correct shape")),
             result("softmax", Outcome(PASS, "t1"), Outcome(PASS, "t2"))]


def test_a_run_is_one_try_per_answered_problem_with_its_share_and_the_misconceptions_named():
    tries = history.run_tries(WRONG_RUN, T0)
    assert [(t.problem_id, t.score, t.misconceptions) for t in tries] == [
        ("scale", 0.0, (MIX,)), ("softmax", 0.5, (COLS,))]  # scale-shape: not answered


def test_a_run_keeps_only_names_the_reader_takes_back(tmp_path):
    flood = [result("scale", Outcome(FAIL, "wrong", named=["", "x" * 5000] + [f"m{i}" for i in range(80)]))]
    tries = history.run_tries(flood, T0)
    assert tries[0].misconceptions == tuple(f"m{i}" for i in range(50))
    history.remember_run(DATA, "*", flood, tmp_path, T0)
    assert history.load(tmp_path / history.FILE, "attention-numpy", "*").message is None


def test_the_release_data_says_what_each_problem_can_show():
    problems = {p.id: p for p in history.catalogue(DATA, "*")}
    assert problems["scale"].detects == problems["scale-shape"].detects == {MIX}
    assert problems["softmax"].detects == {COLS} and problems["softmax"].topic == "softmax"


def test_runs_resume_from_the_file_hold_the_misconception_and_target_it_next(tmp_path):
    first = "\n".join(history.remember_run(DATA, "*", WRONG_RUN, tmp_path, T0))
    assert f"- {MIX} (named in scale; 0/2 right answers since)" in first
    assert f"- {COLS} (named in softmax; 0/2 right answers since)" in first
    assert f"Work next on: softmax (why: a misconception you hold: {COLS})" in first  # the last named comes first
    saved = json.loads((tmp_path / history.FILE).read_text())
    assert [t["problem"] for t in saved["tries"]] == ["scale", "softmax"]
    assert set(saved["tries"][0]) == {"problem", "at", "score", "misconceptions"}  # facts only, never an answer

    second = "\n".join(history.remember_run(DATA, "*", RIGHT_RUN, tmp_path, T0 + timedelta(minutes=5)))
    assert "2 runs, 5 tries" in second  # resumed: the first run's tries are still there
    assert MIX not in second  # cleared: scale and scale-shape, both able to show it, answered right
    assert f"- {COLS} (named in softmax; 1/2 right answers since)" in second  # one right answer is not enough
    assert f"Work next on: softmax (why: a misconception you hold: {COLS})" in second
    third = "\n".join(history.remember_run(DATA, "*", RIGHT_RUN, tmp_path, T0 + timedelta(minutes=9)))
    assert "No misconception held." in third and "Misconceptions you hold" not in third
    assert " 60%  scale-shape  (2 tries)" in third and " 60%  softmax" in third
    assert "Work next on: scale-shape (why: your weakest topic)" in third  # attention ties softmax; fewer tries


def test_the_file_is_owner_only_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        history.remember_run(DATA, "*", WRONG_RUN, tmp_path, T0)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / history.FILE).stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [history.FILE]  # no temporary file left behind


def test_a_folder_that_cannot_be_written_is_one_line_and_the_run_still_reports(tmp_path):
    (tmp_path / history.FILE).mkdir()  # a directory where the file should be: replacing it fails
    lines = history.remember_run(DATA, "*", WRONG_RUN, tmp_path, T0)
    assert "is not a file; kept as" in lines[0] and lines[0].endswith("starting a fresh history")
    lines = history.remember_run(DATA, "*", WRONG_RUN, tmp_path / "gone", T0)
    unsaved = [line for line in lines if "cannot be written" in line]
    assert len(unsaved) == 1 and "\n" not in unsaved[0] and "this run is not remembered" in unsaved[0]


UNUSABLE = {
    "not JSON": (b"{\"format\": \"qkv-selfcheck-history\", \"tries\": [", "is damaged (not JSON)"),
    "not UTF-8": (b"\xff\xfe\x00", "is damaged (not JSON)"),
    "foreign": (json.dumps({"format": "qkv-practice-history", "version": 1, "tries": []}).encode(),
                "is not a qkv self-check history"),
    "newer": (json.dumps({"format": history.FORMAT, "version": 2}).encode(), "is not a qkv self-check history"),
    "another assignment": (json.dumps({"format": history.FORMAT, "version": 1, "assignment": "other", "student": "*",
                                       "tries": []}).encode(), "is the history of another assignment"),
    "another student": (json.dumps({"format": history.FORMAT, "version": 1, "assignment": "attention-numpy",
                                    "student": "s2", "tries": []}).encode(), "is the history of another student id"),
    "a bad score": (json.dumps({"format": history.FORMAT, "version": 1, "assignment": "attention-numpy",
                                "student": "*", "tries": [{"problem": "scale", "at": T0.isoformat(), "score": 7,
                                                           "misconceptions": []}]}).encode(),
                    "is damaged (tries.0.score: not a share from 0 to 1)"),
    "a naive time": (json.dumps({"format": history.FORMAT, "version": 1, "assignment": "attention-numpy",
                                 "student": "*", "tries": [{"problem": "scale", "at": "2027-03-01T09:00:00",
                                                            "score": 1, "misconceptions": []}]}).encode(),
                     "is damaged (tries.0.at: a time without its zone)"),
    "deeply nested": (b"[" * 200_000, "is damaged (not JSON)"),
    "too large": (b" " * (history.MAX_BYTES + 1), "is larger than 2 MiB"),
}


@pytest.mark.parametrize("case", sorted(UNUSABLE))
def test_an_unusable_history_is_one_line_put_aside_and_a_fresh_start(tmp_path, case):
    content, why = UNUSABLE[case]
    (tmp_path / history.FILE).write_bytes(content)
    lines = history.remember_run(DATA, "*", WRONG_RUN, tmp_path, T0)
    message = lines[0]
    assert why in message and message.startswith(str(tmp_path / history.FILE)) and "\n" not in message
    assert message.endswith("starting a fresh history")
    aside = [p for p in tmp_path.iterdir() if p.name.startswith(history.FILE + ".aside-")]
    assert len(aside) == 1 and aside[0].read_bytes() == content  # kept, never deleted
    assert "1 run, 2 tries" in "\n".join(lines)  # this run alone
    assert len(json.loads((tmp_path / history.FILE).read_text())["tries"]) == 2


def test_a_symlink_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    (tmp_path / history.FILE).symlink_to(target)
    loaded = history.load(tmp_path / history.FILE, "attention-numpy", "*")
    assert loaded.tries == () and "cannot be read" in loaded.message and target.read_text() == "{}"


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.binary(max_size=400) | st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["format", "version", "assignment", "student", "tries", "problem", "at", "score", "misconceptions"]), inner,
        max_size=5), max_leaves=20).map(lambda v: json.dumps(v).encode()))
def test_any_bytes_load_or_are_refused_in_one_line(tmp_path_factory, content):
    folder = tmp_path_factory.mktemp("any")
    (folder / history.FILE).write_bytes(content)
    loaded = history.load(folder / history.FILE, "attention-numpy", "*")
    assert loaded.tries == () and loaded.message is not None and "\n" not in loaded.message


def test_a_saved_history_loads_back_the_same_tries(tmp_path):
    tries = [practice.Try("scale", 0, T0 + timedelta(seconds=i), i / 10, (MIX,) if i % 2 else ()) for i in range(11)]
    assert history.save(tmp_path / history.FILE, "attention-numpy", "s1", tries) is None
    assert history.load(tmp_path / history.FILE, "attention-numpy", "s1").tries == tuple(tries)


def test_the_history_is_bounded_on_write_keeping_the_latest(tmp_path, monkeypatch):
    monkeypatch.setattr(history, "MAX_TRIES", 3)
    tries = [practice.Try("scale", 0, T0 + timedelta(seconds=i), 1.0) for i in range(5)]
    history.save(tmp_path / history.FILE, "attention-numpy", "*", tries)
    assert history.load(tmp_path / history.FILE, "attention-numpy", "*").tries == tuple(tries[-3:])


def test_nothing_answered_writes_nothing(tmp_path: Path):
    assert history.remember_run(DATA, "*", [result("scale", Outcome(TODO, "not answered yet"))], tmp_path, T0) == []
    assert not (tmp_path / history.FILE).exists()
