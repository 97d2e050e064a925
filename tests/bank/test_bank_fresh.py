"""Numbers of each student's own (issue 47, item 2): most written points of every shipped assignment differ between
two students, so a classmate's answers are not this student's; the shapes' drawn sizes are graded, sealed and
shown as each student's own.

Each shipped assignment is measured as it ships, under its manifest's own `variants:`: one that gives the class one
set of numbers (`variants: same`) shares every written point between two students, and fails here."""

from __future__ import annotations

import itertools

import pytest

from autograder.assemble.manifest import find_manifest, resolve_assignment
from autograder.bank import measures
from autograder.bank.load import Bank
from autograder.kinds import kind_of
from autograder.kinds.shape import check_shape, expected_shape

ASSIGNMENTS = ("attention-numpy", "attention-torch", "exam-prep")
STUDENTS = [f"s{n:04d}" for n in range(12)]
OWN_SHARE = 0.6  # of an assignment's written points, between two students, on average over pairs


def _own_share(bank: Bank, name: str, first: str, second: str) -> float:
    assignment = resolve_assignment(find_manifest(name), bank)
    seed, variants = assignment.manifest.seed, assignment.manifest.variants
    differ = total = 0.0
    for placed in assignment.written:
        problem, kind = placed.problem, kind_of(placed.problem)
        ours = [kind.variant(problem, seed, variants, student) for student in (first, second)]
        differ += placed.points * measures.own_share(problem, *ours)
        total += placed.points
    return differ / total


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_most_written_points_differ_between_two_students(bank: Bank, name: str) -> None:
    shares = [_own_share(bank, name, a, b) for a, b in itertools.combinations(STUDENTS, 2)]
    mean = sum(shares) / len(shares)
    assert mean >= OWN_SHARE, f"{name}: {mean:.1%} of the written points differ between two students"
    assert min(shares) >= OWN_SHARE - 0.1, f"{name}: a pair shares {1 - min(shares):.1%} of its written points"


def test_a_choice_in_another_order_is_the_same_answer(bank: Bank) -> None:
    """Only numbers make a student's own answer: letters shuffled per student do not (68 of the 94 written
    problems at 479d19b only shuffled them)."""
    problem = bank.get("head-roles")
    kind = kind_of(problem)
    orders = {s: kind.variant(problem, 0, "per_student", s) for s in STUDENTS}
    assert len({tuple(v.params["order"]) for v in orders.values()}) > 1
    assert measures.own_share(problem, orders[STUDENTS[0]], orders[STUDENTS[1]]) == 0.0
    numeric = bank.get("vit-patch-tokens")
    drawn = [kind_of(numeric).variant(numeric, 0, "per_student", s) for s in STUDENTS[:2]]
    assert 0 < measures.own_share(numeric, *drawn) <= 1


def test_a_drawn_shape_is_graded_against_the_students_own_numbers(bank: Bank) -> None:
    problem = bank.get("split-heads-batch-shape")
    kind = kind_of(problem)
    variants = {s: kind.variant(problem, 7, "per_student", s) for s in STUDENTS}
    shapes = {s: expected_shape(problem, v) for s, v in variants.items()}
    assert len(set(shapes.values())) >= len(STUDENTS) // 2, shapes
    first, other = STUDENTS[0], next(s for s in STUDENTS if shapes[s] != shapes[STUDENTS[0]])
    typed = " x ".join(shapes[first])
    assert check_shape(problem, typed, variants[first]).correct
    assert not check_shape(problem, typed, variants[other]).correct  # a classmate's numbers are wrong here
    assert check_shape(problem, "b x h x n x d/h", variants[other]).correct  # the symbols are each student's own
    b, n, d, h = (variants[first].params[k] for k in "bndh")
    assert shapes[first] == (str(b), str(h), str(n), str(d // h))
    text = kind.prompt_text(problem, variants[first])
    assert f"$b = {b}$" in text and f"$h = {h}$" in text and "{{" not in text
    assert f"{d // h}" in kind.key(problem, variants[first]).lines[0].answer
    # without a per-student assignment the class shares one draw
    assert kind.variant(problem, 7, "same", first) == kind.variant(problem, 7, "same", other)


def test_the_self_check_seals_each_students_own_shape(bank: Bank) -> None:
    """Offline, a drawn shape is sealed per student: each student's own numbers (or the symbols) pass, a
    classmate's numbers fail, and a named mistake is named with the student's own numbers."""
    from types import SimpleNamespace

    from autograder.kinds.sealing import derive_seals
    from autograder.selfcheck import qkv_check
    from qkv_runtime import sealed

    problem = bank.get("query-projection-shape")
    kind = kind_of(problem)
    manifest = SimpleNamespace(seed=11, variants="per_student")
    assignment = SimpleNamespace(name="fresh", manifest=manifest)
    students = ["ann", "bob", "cy", "dee"]
    entry = {"id": problem.id, "kind": "shape", "judge": kind.selfcheck_judge, "title": problem.title, "points": 1,
             **kind.selfcheck_data(SimpleNamespace(problem=problem, points=1.0), assignment, None, students)}
    entry = derive_seals(entry, sealed.kdf_params())
    data = {"format": sealed.FORMAT, "assignment": "fresh", "variants": "per_student", "track": "numpy",
            "problems": [entry], "kdf": sealed.kdf_params()}
    shapes = {s: expected_shape(problem, kind.variant(problem, 11, "per_student", s)) for s in students}
    assert len(set(shapes.values())) > 1, shapes
    for student in students:
        own = qkv_check.check_written(data, entry, " x ".join(shapes[student]), student)
        assert own[0].passed, (student, own[0].message)
        assert qkv_check.check_written(data, entry, "d x d_k", student)[0].passed
        for other in students:
            if shapes[other] != shapes[student]:
                assert not qkv_check.check_written(data, entry, " x ".join(shapes[other]), student)[0].passed
        flipped = " x ".join(reversed(shapes[student]))  # d_k x d, the mistake the problem names
        said = qkv_check.check_written(data, entry, flipped, student)[0]
        assert not said.passed and "d x d_k" in said.message, said.message
