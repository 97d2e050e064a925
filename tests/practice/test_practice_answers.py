"""autograder/practice/answers.py: a written variant's typed answers judged by the kinds' own code, as the service's
/practice judges them in its web process (tests/serve/test_practice_serve.py serves them)."""

from __future__ import annotations

import pytest

from autograder.practice.answers import ANSWER_CHARS, Unreadable, judge, questions, skipped
from practice_client import right_answer, wrong_answer

PROBLEMS = ("fully-masked-row", "mask-cells-count", "masked-renormalisation", "course-q2-softmax-mix")


def by_label(problem, seed: int, fields: dict[str, str]) -> dict[str, str]:
    return {q.label: fields[f"part-{n}"] for n, q in enumerate(questions(problem, seed))}


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_the_keys_answers_are_the_whole_and_a_mistake_names_its_misconception(bank, problem_id):
    problem = bank.problems[problem_id]
    for seed in (0, 7, 2**31 - 1):
        right = judge(problem, seed, by_label(problem, seed, right_answer(problem, seed)))
        assert right.share == 1.0 and right.misconceptions == () and all(p.correct for p in right.parts)
        fields, misconception = wrong_answer(problem, seed)
        wrong = judge(problem, seed, by_label(problem, seed, fields))
        assert wrong.share < 1.0 and misconception in wrong.misconceptions


def test_the_variant_is_the_seeds_own(bank):
    problem = bank.problems["course-q2-softmax-mix"]
    ones = right_answer(problem, 1)
    assert judge(problem, 1, by_label(problem, 1, ones)).share == 1.0
    assert judge(problem, 2, by_label(problem, 2, ones)).share < 1.0  # other numbers, another answer


@pytest.mark.parametrize("typed, why", [
    ("", "no answer"), ("   ", "no answer"), ("x" * (ANSWER_CHARS + 1), f"longer than {ANSWER_CHARS}"),
    ("(1, 2", ""), ("not a number", "")])
def test_an_answer_in_no_readable_form_is_a_one_line_reason_naming_the_part(bank, typed, why):
    problem = bank.problems["course-q2-softmax-mix"]
    labels = [q.label for q in questions(problem, 3)]
    fields = {**by_label(problem, 3, right_answer(problem, 3)), labels[0]: typed}
    with pytest.raises(Unreadable) as raised:
        judge(problem, 3, fields)
    assert str(raised.value).startswith(f"{labels[0]}: ") and why in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_skip_earns_nothing_and_names_nothing():
    assert (skipped().share, skipped().misconceptions, skipped().skipped) == (0.0, (), True)
