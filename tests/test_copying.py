"""Copying signals: a constructed pair is found, and 100 honest students are not flagged, for both signals:
numbers that are another student's (per-student variants of exam-prep), and code similar once the stub
is ignored (copydetect). The honest class is tests/fixtures/classroom/honest.py."""

from __future__ import annotations

import random

import pytest

from autograder.kinds import NumericProblem
from autograder.assemble.manifest import find_manifest, resolve_assignment
from autograder.assemble.solution_key import key_answer
from autograder.classroom.copying import CODE_THRESHOLD, MIN_PARTS, answer_flags, code_pairs
from autograder.classroom.copying_page import copying_html
from fixtures.classroom.honest import disguise, honest_module

HONEST = [f"s{i:03d}" for i in range(100)]


@pytest.fixture(scope="module")
def exam_prep(bank):
    assignment = resolve_assignment(find_manifest("exam-prep"), bank)
    numeric = [a.problem for a in assignment.written if isinstance(a.problem, NumericProblem) and a.problem.parameters]
    return assignment, numeric


def slipped(answer, rng: random.Random):
    """An honest slip: one number of the answer off by a little more than the tolerance."""
    if isinstance(answer, dict):
        key = rng.choice(sorted(answer))
        return {**answer, key: slipped(answer[key], rng)}
    if isinstance(answer, list):
        return [slipped(answer[0], rng), *answer[1:]] if answer else answer
    return float(answer) + 0.37 if isinstance(answer, (int, float)) else answer


def class_answers(assignment, numeric, rng: random.Random) -> dict[str, dict]:
    answers = {}
    for student in HONEST:
        own = {p.id: key_answer(p, assignment, student) for p in numeric}
        answers[student] = {pid: slipped(a, rng) if rng.random() < 0.15 else a for pid, a in own.items()}
    return answers


def test_numbers_of_another_student_are_flagged_and_honest_ones_are_not(exam_prep):
    assignment, numeric = exam_prep
    rng = random.Random(2026)
    answers = class_answers(assignment, numeric, rng)
    assert sum(len(p.parts) for p in numeric) >= 6
    honest = answer_flags(HONEST, answers, numeric, assignment.manifest.seed)
    assert honest == []
    answers["c01"] = {p.id: key_answer(p, assignment, "s042") for p in numeric}  # s042's numbers, all right
    borrowed = min(numeric, key=lambda p: len(p.parts))  # an honest student who took one small problem from s017
    assert len(borrowed.parts) < MIN_PARTS
    answers["c02"] = {**{p.id: key_answer(p, assignment, "c02") for p in numeric},
                      borrowed.id: key_answer(borrowed, assignment, "s017")}
    flags = answer_flags([*HONEST, "c01", "c02"], answers, numeric, assignment.manifest.seed)
    assert [(f.student, f.other) for f in flags] == [("c01", "s042")]
    (flag,) = flags
    assert flag.fits_other >= MIN_PARTS and flag.fits_own < flag.fits_other and flag.evidence
    assert all("." in e for e in flag.evidence)  # problem.part


def test_code_of_another_student_is_flagged_and_honest_code_is_not(built_numpy):
    rng = random.Random(7)
    codes = {s: honest_module(rng) for s in HONEST}
    stub = (built_numpy.out / "student" / "attention_numpy.py").read_text()
    honest = code_pairs(codes, stub)
    assert honest.compared == 100 * 99 // 2 and honest.pairs == ()
    codes["c01"] = disguise(codes["s042"], rng)  # renamed, recommented, reordered
    report = code_pairs(codes, stub)
    assert [(p.a, p.b) for p in report.pairs] == [("c01", "s042")]
    pair = report.pairs[0]
    assert pair.similarity >= CODE_THRESHOLD and "<mark>" in pair.a_html and "<mark>" in pair.b_html
    highest_honest = max(p.similarity for p in honest.highest)
    assert highest_honest < CODE_THRESHOLD <= pair.similarity


def test_the_stub_alone_is_not_similarity(built_numpy):
    stub = (built_numpy.out / "student" / "attention_numpy.py").read_text()
    report = code_pairs({"a": stub, "b": stub + "\n# untouched\n"}, stub)
    assert report.pairs == () and report.highest[0].similarity == 0


def test_code_in_the_side_by_side_view_is_escaped(built_numpy):
    hostile = honest_module(random.Random(1)) + "\nX = '</pre><script>alert(1)</script>'\n"
    report = code_pairs({"a": hostile, "b": hostile}, "")
    page = copying_html("T", True, [], report)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
