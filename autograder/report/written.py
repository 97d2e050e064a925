"""A written answer as the feedback page explains it: the result, the bundle's problem and the due date in, what to show out.

Before the due date: right, wrong or partly right, and the form the answer
takes (the kind's blanks: "weights (3 numbers)"), never the right answer.
After it: also what the student typed, what was accepted (the kind's key, with
its tolerance), the verdict's words, and the bank's worked solution rendered
with the student's own numbers (their variant, per student when the
assignment draws them so).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from markupsafe import Markup

from autograder.bundle import GradingBundle, WrittenProblem
from autograder.grade.written_policy import HIDDEN_MESSAGE, problem_seed
from autograder.kinds import kind_of
from autograder.memo import Memo
from autograder.results import ProblemResult


@dataclass(frozen=True)
class WrittenView:
    verdict: str  # "right", "wrong", "partly right (1.5 of 3 points)", "not answered"
    form: str  # how the answer is written, e.g. "weights (3 numbers); output (3 numbers)"
    typed: tuple[tuple[str, str], ...] = ()  # (part, as typed); after the due date only
    message: str = ""
    accepted: tuple[tuple[str, str, str], ...] = ()  # (label, answer, window)
    solution: Markup = Markup("")


def typed_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def typed_parts(answer: Any) -> tuple[tuple[str, str], ...]:
    if answer is None or answer == "":
        return (("", "nothing"),)
    if isinstance(answer, dict):
        return tuple((str(k), typed_text(v)) for k, v in answer.items())
    return (("", typed_text(answer)),)


def verdict(problem: ProblemResult) -> str:
    if problem.message == HIDDEN_MESSAGE:
        return "kept: right or wrong is shown once hand-in closes"
    if problem.message == "not answered":
        return "not answered"
    if problem.score >= problem.max_score - 1e-9:
        return "right"
    if problem.score <= 1e-9:
        return "wrong"
    return f"partly right ({problem.score:g} of {problem.max_score:g} points)"


# a class shares its variants: each key and solution is rendered once
_RENDERED: Memo[Any] = Memo(4096)


def _remembered(what: str, written: WrittenProblem, seed: int, mode: str, who: Optional[str], make) -> Any:
    return _RENDERED.get((written,), lambda: make(written, seed, mode, who), (what, seed, mode, who))


def _explain(written: WrittenProblem, seed: int, mode: str, who: Optional[str]) -> tuple[tuple, Markup, str]:
    from autograder.exam.markup import readable_html  # markdown-it: only once a page shows a solution

    problem = written.problem
    kind = kind_of(problem)
    variant = kind.variant(problem, seed, mode, who)
    key = kind.key(problem, variant)
    form = "; ".join(b.label for b in kind.blanks(problem, variant))
    accepted = tuple((line.label, line.answer, line.accepted) for line in key.lines)
    return accepted, Markup(readable_html(key.solution)) if key.solution.strip() else Markup(""), form


def _form(written: WrittenProblem, seed: int, mode: str, who: Optional[str]) -> str:
    problem = written.problem
    kind = kind_of(problem)
    return "; ".join(b.label for b in kind.blanks(problem, kind.variant(problem, seed, mode, who)))


def written_view(written: WrittenProblem, problem: ProblemResult, answer: Any, bundle: GradingBundle,
                 student: str, past_due: bool, attempt_seed: Optional[int] = None) -> WrittenView:
    """`attempt_seed`: the seed of the attempt's fresh numbers (grade/written_policy.py), so that its feedback is
    about the numbers it answered."""
    seed = problem_seed(bundle.seed, written.problem, attempt_seed)
    who = student if bundle.variants == "per_student" else None
    if not past_due:
        return WrittenView(verdict(problem), _remembered("form", written, seed, bundle.variants, who, _form))
    accepted, solution, form = _remembered("key", written, seed, bundle.variants, who, _explain)
    return WrittenView(verdict(problem), form, typed_parts(answer), problem.message, accepted, solution)
