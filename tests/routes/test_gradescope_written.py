"""The written-answer policy on the Gradescope route (routes/gradescope.py, grade/written_policy.py): under `hidden`
nothing a student sees at once says whether a fixed item is right (the top-level output is the same for a right and
a wrong answer, the fixed items' tests wait for grades to be published); under `first` and `penalty` the fixed items
are scored over the earlier submissions Gradescope lists in submission_metadata.json, shaped as its documentation
shows it (https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/), each with the results.json
this route wrote for it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autograder.bundle import GradingBundle, WrittenProblem
from autograder.grade.intake import Submission
from autograder.grade.score import grade_submission
from autograder.grade.written_policy import WrittenPolicy, WrittenRule
from autograder.kinds import choices as ch
from autograder.kinds import kind_of
from autograder.routes import gradescope
from autograder.routes.gradescope import (ANSWERS, HELD, NOT_KEPT, earlier_answers,
                                          gradescope_results, read_metadata, student_id)
from autograder.sandbox import SubmissionRun
from qkv_runtime.judge import letter_of

FIRST, PENALTY, HIDDEN = (WrittenPolicy(rule=r) for r in WrittenRule)
STATEMENT, SHAPE, NUMERIC = "training-vs-generation", "scores-shape", "kv-cache-memory"


@pytest.fixture(scope="module")
def tiny(bank) -> GradingBundle:
    """A hand calculation with numbers of its own, a true/false statement and a shape (both fixed items)."""
    written = (WrittenProblem(NUMERIC, 3.0, bank.get(NUMERIC)), WrittenProblem(STATEMENT, 2.0, bank.get(STATEMENT)),
               WrittenProblem(SHAPE, 1.0, bank.get(SHAPE)))
    return GradingBundle("tiny", "Tiny", "numpy", 1, "same", None, (), written, tuple(w.id for w in written))


def under(bundle: GradingBundle, policy: WrittenPolicy) -> GradingBundle:
    return replace(bundle, written_attempts=policy)


def answers(bundle: GradingBundle, right: bool) -> dict[str, Any]:
    """Every item right (the key's answers) or every fixed item wrong; the hand calculation right either way."""
    by_id = {w.id: w.problem for w in bundle.written}
    numeric = by_id[NUMERIC]
    variant = kind_of(numeric).variant(numeric, bundle.seed, bundle.variants, "s1")
    statement = by_id[STATEMENT]
    shown = ch.order_in(kind_of(statement).variant(statement, bundle.seed, bundle.variants, "s1"), STATEMENT,
                        [c.id for c in statement.follow_up.choices])
    right_choice = next(c.id for c in statement.follow_up.choices if not c.misconception)
    wrong_choice = next(c.id for c in statement.follow_up.choices if c.misconception)
    verdict = bool(statement.answer) == right
    return {NUMERIC: {part.name: np.asarray(variant.answers[part.name]).tolist() for part in numeric.parts},
            STATEMENT: {"answer": "true" if verdict else "false",
                        "follow_up": letter_of(shown, right_choice if right else wrong_choice)},
            SHAPE: ["n_q", "n_k"] if right else ["n_k", "n_q"]}


def graded(bundle: GradingBundle, right: bool):
    run = SubmissionRun("ok", "", {}, answers(bundle, right), (), "")
    return grade_submission(bundle, Submission("s1", Path("tiny.py"), str(right), None, "ok", ""), run)


def fixed_score(document: dict) -> float:
    return sum(t["score"] for t in document["tests"] if t["name"].split(":")[0] in (STATEMENT, SHAPE))


def metadata(*earlier: tuple[str, dict], created_at: str = "2026-03-02T10:00:00.000000-08:00") -> dict:
    """submission_metadata.json as Gradescope writes it: `earlier` the (submission_time, results.json) before."""
    return {"id": 123456, "created_at": created_at,
            "assignment": {"due_date": "2026-03-09T23:00:00.000000-08:00", "late_due_date": None, "id": 25828,
                           "title": "Tiny", "total_points": "6.0", "group_submission": False},
            "submission_method": "upload", "users": [{"email": "s1@example.edu", "id": 1234, "name": "S One"}],
            "previous_submissions": [{"submission_time": when, "score": results["score"], "results": results}
                                     for when, results in earlier]}


def test_under_hidden_what_gradescope_shows_at_once_is_the_same_for_right_and_wrong_fixed_items(tiny):
    right, wrong = (gradescope_results(tiny, graded(tiny, r), "bwrap", metadata()) for r in (True, False))
    assert right["output"] == wrong["output"]
    assert f"{STATEMENT}, {SHAPE} (3 points)" in right["output"]
    for document in (right, wrong):
        shown = {t["name"].split(":")[0]: t["visibility"] for t in document["tests"]}
        assert shown == {NUMERIC: "after_due_date", STATEMENT: HELD, SHAPE: HELD}
    # the instructor's gradebook keeps the whole score; Gradescope shows no total while tests are hidden
    assert right["score"] == 6.0 and wrong["score"] == 3.0 and fixed_score(wrong) == 0.0


@pytest.mark.parametrize("policy", [FIRST, PENALTY], ids=["first", "penalty"])
def test_under_first_and_penalty_verdicts_wait_for_the_due_date_and_no_line_says_they_are_kept(tiny, policy):
    document = gradescope_results(under(tiny, policy), graded(tiny, False), "bwrap", metadata())
    assert {t["visibility"] for t in document["tests"]} == {"after_due_date"}
    assert "written answers kept" not in document["output"]


def test_every_results_json_keeps_the_fixed_items_answers_for_the_submissions_after_it(tiny):
    document = gradescope_results(tiny, graded(tiny, False), "bwrap", metadata())
    assert document["extra_data"][ANSWERS] == {k: v for k, v in answers(tiny, False).items() if k != NUMERIC}
    json.dumps(document, allow_nan=False)  # what Gradescope reads back is JSON


def test_under_first_the_first_submissions_answer_counts(tiny):
    bundle = under(tiny, FIRST)
    first = gradescope_results(bundle, graded(bundle, False), "bwrap", metadata())
    later = gradescope_results(bundle, graded(bundle, True), "bwrap",
                               metadata(("2026-03-01T09:00:00.000000-08:00", first)))
    assert later["score"] == first["score"] == 3.0  # the hand calculation right both times, the rest as first
    assert fixed_score(later) == fixed_score(first) == 0.0
    alone = gradescope_results(bundle, graded(bundle, True), "bwrap", metadata())
    assert alone["score"] == 6.0


def test_under_penalty_each_different_wrong_answer_before_costs_its_share(tiny):
    bundle = under(tiny, WrittenPolicy(rule=WrittenRule.PENALTY, penalty_percent=25))
    wrong = gradescope_results(bundle, graded(bundle, False), "bwrap", metadata())
    twice = metadata(("2026-03-01T09:00:00.000000-08:00", wrong), ("2026-03-01T10:00:00.000000-08:00", wrong))
    later = gradescope_results(bundle, graded(bundle, True), "bwrap", twice)
    assert fixed_score(later) == pytest.approx(0.75 * 3.0)  # the same wrong answer twice is one


def test_a_regraded_submission_counts_only_the_submissions_before_it(tiny):
    """Gradescope may list, for a submission graded again, submissions made after it: they are not before it."""
    bundle = under(tiny, FIRST)
    wrong = gradescope_results(bundle, graded(bundle, False), "bwrap", metadata())
    after = metadata(("2026-03-03T09:00:00.000000-08:00", wrong), created_at="2026-03-02T10:00:00.000000-08:00")
    assert gradescope_results(bundle, graded(bundle, True), "bwrap", after)["score"] == 6.0
    assert earlier_answers(after) == []


def test_earlier_submissions_are_read_oldest_first_whatever_order_they_come_in(tiny):
    first, second = {"results": {"extra_data": {ANSWERS: {"a": 1}}}}, {"results": {"extra_data": {ANSWERS: {"a": 2}}}}
    listed = {"created_at": "2026-03-02T10:00:00+00:00", "previous_submissions": [
        {**second, "submission_time": "2026-03-01T10:00:00+00:00"},
        {**first, "submission_time": "2026-03-01T09:00:00+00:00"}]}
    assert earlier_answers(listed) == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize("previous", [
    None, "all of them", [None, 3, "x", []], [{"results": None}], [{"results": {"extra_data": []}}],
    [{"results": {"extra_data": {ANSWERS: "not a mapping"}}, "submission_time": "yesterday"}],
    [{"score": 1.0, "results": {"score": 1.0, "tests": []}, "submission_time": "2026-03-01T09:00:00+00:00"}],
], ids=["null", "a string", "odd entries", "no results", "odd extra_data", "odd answers", "before this route"])
def test_odd_previous_submissions_count_as_none(tiny, previous):
    data = {"created_at": "2026-03-02T10:00:00+00:00", "previous_submissions": previous}
    assert earlier_answers(data) == []
    bundle = under(tiny, FIRST)
    assert gradescope_results(bundle, graded(bundle, True), "bwrap", data)["score"] == 6.0


def test_an_answer_too_long_to_keep_is_kept_as_a_wrong_one(tiny):
    bundle = under(tiny, FIRST)
    long = graded(bundle, True)
    long = replace(long, answers={**long.answers, SHAPE: ["n_q"] * 5000})
    document = gradescope_results(bundle, long, "bwrap", metadata())
    assert document["extra_data"][ANSWERS][SHAPE] == NOT_KEPT
    later = gradescope_results(bundle, graded(bundle, True), "bwrap",
                               metadata(("2026-03-01T09:00:00.000000-08:00", document)))
    shape = next(t for t in later["tests"] if t["name"].startswith(SHAPE))
    assert shape["score"] == 0.0


def test_the_metadata_is_read_bounded_and_a_damaged_one_is_none(tmp_path, monkeypatch):
    path = tmp_path / "submission_metadata.json"
    assert read_metadata(tmp_path) == {}
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert read_metadata(tmp_path) == {}
    monkeypatch.setattr(gradescope, "METADATA_LIMIT", 1000)
    path.write_text(json.dumps({"users": [{"sid": "s1", "email": "x@y.z"}], "pad": "x" * 1000}))
    assert read_metadata(tmp_path) == {}
    path.write_text(json.dumps({"users": [{"sid": "s1", "email": "x@y.z"}]}))
    assert student_id(read_metadata(tmp_path)) == "s1"
