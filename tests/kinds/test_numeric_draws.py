"""Drawing a student's numbers (kinds/numeric/variants.py): an `admissible` test of the parameters alone makes the
draw cheap without changing it, and validate refuses one that would change it."""

from __future__ import annotations

import pytest

from autograder.bank.load import Bank
from autograder.kinds.numeric import checks
from autograder.kinds.numeric.variants import draw_variant
from autograder.references import hand_calculations

STUDENTS = ("s0001", "s0002", None)


def _admissible_problems(bank: Bank) -> list[str]:
    return [p.id for p in bank.by_kind("numeric") if p.admissible]


def test_the_bank_has_problems_drawn_with_an_admissible_test(bank: Bank) -> None:
    assert {"layer-norm-by-hand", "one-query-by-hand"} <= set(_admissible_problems(bank))


def test_an_admissible_test_leaves_every_students_numbers_as_they_were(bank: Bank) -> None:
    """The same numbers with and without it, for every student and seed: releases already handed out keep
    their answers."""
    for problem_id in _admissible_problems(bank):
        problem = bank.get(problem_id)
        without = problem.model_copy(update={"admissible": None})
        for seed in range(30):
            for student in STUDENTS:
                drawn, plain = draw_variant(problem, seed, student), draw_variant(without, seed, student)
                assert drawn.params == plain.params, (problem_id, seed, student)


@pytest.mark.parametrize("problem_id", ["layer-norm-by-hand", "one-query-by-hand"])
def test_validate_refuses_an_admissible_test_that_refuses_a_workable_draw(bank: Bank, problem_id: str,
                                                                           monkeypatch) -> None:
    problem = bank.get(problem_id)
    assert checks._admissible_findings(problem) == []
    # stricter than the full check: also refuses the draws whose first parameter starts with an even number
    admissible = getattr(hand_calculations, problem.admissible.rpartition(".")[2])

    def stricter(**params):
        first = params[next(iter(problem.parameters))]
        while isinstance(first, list):
            first = first[0]
        return admissible(**params) or ("an even first entry" if first % 2 == 0 else None)

    monkeypatch.setattr(hand_calculations, "stricter_admissible", stricter, raising=False)
    planted = problem.model_copy(update={"admissible": "solutions.hand_calculations.stricter_admissible"})
    found = checks._admissible_findings(planted)
    assert len(found) == 1 and found[0].startswith("admissible: refuses") and "an even first entry" in found[0]
