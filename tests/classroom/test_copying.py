"""Copying signals: a constructed pair is found, and 100 honest students are not flagged, for both signals:
numbers that are another student's (per-student variants of exam-prep), and code similar once the stub
and the class's common code are ignored (copydetect). The honest class is tests/fixtures/classroom/honest.py;
one file holding everyone's code is tests/fixtures/classroom/kitchen_sink.py."""

from __future__ import annotations

import random

import pytest

from autograder.kinds import NumericProblem
from autograder.assemble.manifest import find_manifest, resolve_assignment
from autograder.assemble.solution_key import key_answer
from autograder.classroom.copying import (CODE_THRESHOLD, COMMON_MIN_FILES, MIN_PARTS, answer_flags, code_pairs,
                                         without_answers)
from autograder.classroom.copying_page import copying_csv, copying_html
from fixtures.classroom.honest import disguise, honest_module
from fixtures.classroom.kitchen_sink import SIZE, kitchen_sink

pytestmark = pytest.mark.slow  # classes of 100 students

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


def test_written_answers_are_not_code_similarity_nor_hide_it(built_numpy):
    """The same code handed in once with one dict of answers and once as a notebook's answer cells (each answer
    a statement of its own, more of them than code) is the same code: answers are compared by the answer signal."""
    code = honest_module(random.Random(3))
    stub = (built_numpy.out / "student" / "attention_numpy.py").read_text()
    answers = {f"problem-{n}": [round(random.Random(n).random(), 6) for _ in range(40)] for n in range(60)}
    as_module = code + f"\nANSWERS = {answers!r}\n"
    as_cells = code + "".join(f"\nANSWERS[{k!r}] = (\n    {v!r})\n" for k, v in answers.items())
    report = code_pairs({"py": as_module, "notebook": as_cells, "other": honest_module(random.Random(4))}, stub)
    assert [(p.a, p.b) for p in report.pairs] == [("notebook", "py")]
    assert without_answers(as_cells).strip() == without_answers(as_module).strip() == code.strip()
    assert without_answers("ANSWERS = {") == "ANSWERS = {"  # what does not parse is kept whole
    report = code_pairs({"a": code + f"\nANSWERS = {answers!r}\n", "b": honest_module(random.Random(5))
                         + f"\nANSWERS = {answers!r}\n"}, stub)
    assert report.pairs == ()  # alike answers do not make unlike code a pair


def test_the_stub_alone_is_not_similarity(built_numpy):
    stub = (built_numpy.out / "student" / "attention_numpy.py").read_text()
    report = code_pairs({"a": stub, "b": stub + "\n# untouched\n"}, stub)
    assert report.pairs == () and report.highest[0].similarity == 0


def test_code_in_the_side_by_side_view_is_escaped(built_numpy):
    hostile = honest_module(random.Random(1)) + "\nX = '</pre><script>alert(1)</script>'\n"
    report = code_pairs({"a": hostile, "b": hostile}, "")
    page = copying_html("T", True, [], report)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page


@pytest.fixture(scope="module")
def stub(built_numpy) -> str:
    return (built_numpy.out / "student" / "attention_numpy.py").read_text()


def by_pair(report) -> dict[tuple[str, str], float]:
    return {(p.a, p.b): p.similarity for p in report.highest}


def test_one_file_holding_everyones_code_does_not_flag_them(stub):
    rng = random.Random(19)
    honest = {f"s{i}": honest_module(rng) for i in range(8)}
    alone = code_pairs(honest, stub, keep=100)
    sink = kitchen_sink(list(honest.values()), rng)
    assert len(sink) >= SIZE and all(code in sink for code in honest.values())  # each file verbatim
    report = code_pairs({**honest, "sink": sink}, stub, keep=100)
    # the students' pairs among themselves are what they are without the sink
    assert alone.pairs == ()
    with_sink = by_pair(report)
    assert {pair: with_sink[pair] for pair in by_pair(alone)} == by_pair(alone)
    # no pair is flagged, the sink's with a student included: most of the sink is code the student lacks
    assert report.compared == 9 * 8 // 2
    sink_pairs = [p for p in report.highest if "sink" in (p.a, p.b)]
    assert len(sink_pairs) == 8 and all(p.similarity < 0.5 for p in sink_pairs)
    assert report.pairs == ()
    # what the sink does hold is said once, against the sink
    assert alone.containers == ()
    (container,) = report.containers
    assert container.student == "sink" and sorted(container.holds) == sorted(honest)
    assert min(container.shares) >= CODE_THRESHOLD and max(container.own_shares) < 0.5
    table = copying_csv([], report).splitlines()
    assert [row.split(",")[:3] for row in table[1:]] == [["contains", "sink", s] for s in container.holds]
    page = copying_html("T", True, [], report)
    assert 'id="containers"' in page and "flagged: side by side" not in page


def test_a_copy_is_still_flagged_beside_the_kitchen_sink(stub):
    rng = random.Random(23)
    honest = {f"s{i}": honest_module(rng) for i in range(8)}
    codes = {**honest, "sink": kitchen_sink(list(honest.values()), rng), "c01": disguise(honest["s3"], rng)}
    report = code_pairs(codes, stub)
    assert [(p.a, p.b) for p in report.pairs] == [("c01", "s3")]
    assert report.pairs[0].similarity >= CODE_THRESHOLD
    # padded with three modules of other code, the copy is no pair any more, and the file holding s3's code is named
    codes["c01"] += "\n\n".join(honest_module(random.Random(seed)) for seed in range(3))
    padded = code_pairs(codes, stub)
    assert padded.pairs == ()
    holders = {c.student: c.holds for c in padded.containers}
    assert "s3" in holders["c01"] and set(holders["sink"]) == {*honest, "c01"}


def test_code_the_whole_class_shares_is_not_evidence(stub):
    rng = random.Random(29)
    lecture = "\n".join(f"def lecture_helper_{i}(x, y):\n    z = np.einsum('ij,jk->ik', x, y) + {i}\n"
                         f"    return np.where(z > {i}, z, -z) / (1 + np.abs(z).sum())\n" for i in range(150))
    honest = {f"s{i:02d}": honest_module(rng) for i in range(2 * COMMON_MIN_FILES)}
    alone = code_pairs(honest, stub, keep=1000)
    shared = code_pairs({s: code + "\n" + lecture for s, code in honest.items()}, stub, keep=1000)
    # the lecture's code is most of each file and in all of them: counted, it would flag every pair
    without_filter = code_pairs({"a": honest["s00"] + "\n" + lecture, "b": honest["s01"] + "\n" + lecture}, stub)
    assert without_filter.pairs
    before, after = by_pair(alone), by_pair(shared)
    assert max(abs(after[pair] - before[pair]) for pair in before) < 0.05
    assert shared.pairs == () and shared.common > 0 and without_filter.common == 0
