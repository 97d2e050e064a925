"""The bank's problems as the practice rule sees them: the problems in, PracticeProblems (id, top-level topic, the
misconceptions a wrong answer can name, as the kinds' answer keys list them, or a code problem's bank file) out."""

from __future__ import annotations

from collections.abc import Iterable

from autograder.kinds import Problem, kind_of
from autograder.practice.rule import PracticeProblem

# the variant whose key lists the misconceptions: their messages are the same on every variant
_KEY_SEED = 0


def topic_of(problem: Problem) -> str:
    return problem.topic.split("/")[0]


def practice_problem(problem: Problem) -> PracticeProblem:
    kind = kind_of(problem)
    if kind.code:  # a code problem names the misconceptions its bank file lists, run by the grader
        return PracticeProblem(problem.id, topic_of(problem),
                               frozenset(m.message for m in getattr(problem, "misconceptions", ())))
    key = kind.key(problem, kind.variant(problem, _KEY_SEED, "per_student", None))
    return PracticeProblem(problem.id, topic_of(problem), frozenset(m.message for m in key.mistakes))


def catalogue(problems: Iterable[Problem]) -> tuple[PracticeProblem, ...]:
    return tuple(practice_problem(p) for p in sorted(problems, key=lambda p: p.id))
