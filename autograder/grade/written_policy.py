"""The written-answer policy for repeated attempts: what a written answer earns, and what a student is shown of it,
when results are shown before hand-in closes (the service's pages, Gradescope's results.json, the pytest route).

Without it, a page that says which written parts are right is an oracle: a true/false verdict falls in two tries.
One rule for every route, declared in the manifest's `written_attempts:` (validated here, carried by the bundle,
applied once by the grading service, grade/service.py, and read by every page):

- a problem with numbers of its own (a kind's `own_numbers`: drawn per seed and student) draws new numbers on every
  attempt: the attempt's seed (`attempt_seed`) is kept with the attempt, it is graded on those numbers, and its
  feedback is about them; its first attempt has the assignment's own numbers, as the release lists them;
- every other written item (a verdict, a choice, a fixed calculation) is a fixed item, scored by the rule:
  `first` (an item's first graded answer counts), `penalty` (the latest answer counts, less `penalty_percent` of the
  item per different wrong answer before it, as Moodle's adaptive mode) or `hidden` (the latest answer counts, and
  right or wrong is shown only once hand-in closes for everyone).

The default is `hidden`: it is the one rule no number of attempts can farm, since no page says anything of a fixed
item before the close, and a student who changes their mind is not punished. `first` shows the verdict and cannot
be farmed either, but a verdict seen is a verdict a classmate can be told; `penalty` can be farmed unless its share is
high (a true/false item farmed by elimination earns 1 - share/2 on average).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Optional, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from autograder.results import ProblemResult, SubmissionResult, TestResult


class WrittenRule(str, Enum):
    FIRST = "first"
    PENALTY = "penalty"
    HIDDEN = "hidden"


class WrittenPolicy(BaseModel):
    """The manifest's `written_attempts:`, a word (`hidden`) or `{rule: penalty, penalty_percent: 50}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: WrittenRule = WrittenRule.HIDDEN
    penalty_percent: float = Field(default=50, ge=0, le=100,
                                   description="penalty: percent of an item taken per different wrong answer before")

    @model_validator(mode="before")
    @classmethod
    def _a_bare_word(cls, value: Any) -> Any:
        return {"rule": value} if isinstance(value, str) else value

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def sentence(self) -> str:
        """The rule in one sentence, as the assignment page says it."""
        fresh = "Hand calculations get new numbers on every attempt; "
        if self.rule is WrittenRule.FIRST:
            return fresh + "for every other written answer, the first answer you hand in for it is the one that counts."
        if self.rule is WrittenRule.PENALTY:
            return (fresh + f"every other written answer counts as last handed in, less {self.penalty_percent:g}% of"
                            " its points for each different wrong answer you handed in before.")
        return (fresh + "whether every other written answer is right is shown only once hand-in closes, and the one"
                        " in the attempt that counts is marked.")


class Written(Protocol):
    """A written problem of a grading bundle (bundle.py's WrittenProblem, which imports this module)."""

    @property
    def id(self) -> str: ...

    @property
    def points(self) -> float: ...

    @property
    def problem(self) -> Any: ...


class Bundle(Protocol):
    """What the rule reads of a grading bundle (bundle.py's GradingBundle)."""

    @property
    def written(self) -> Sequence[Written]: ...

    @property
    def max_points(self) -> float: ...


# what a fixed item's answer earns, as grade/score.py's score_written judges it (which imports this module)
Judge = Callable[[Any, Any], ProblemResult]


# ------------------------------------------------------------------ fresh numbers


def fresh_numbers(problem: Any) -> bool:
    """Whether the problem draws numbers of its own (new ones on every attempt); otherwise it is a fixed item."""
    from autograder.kinds import kind_of

    return kind_of(problem).own_numbers(problem)


def attempt_seed(seed: int, student: str, number: int) -> int:
    """The seed of a student's attempt `number` (0 first): the assignment's for the first, as the release lists its
    numbers; a new one for each later attempt (31 bits: an INTEGER in both databases)."""
    if number == 0:
        return seed
    digest = hashlib.sha256(f"{seed}\x1f{student}\x1f{number}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def problem_seed(bundle_seed: int, problem: Any, attempt: Optional[int]) -> int:
    """The seed a problem's variant is drawn with in an attempt of seed `attempt` (None: the assignment's)."""
    return attempt if attempt is not None and fresh_numbers(problem) else bundle_seed


# --------------------------------------------------------------- fixed items


@dataclass(frozen=True)
class Try:
    """One answer handed in for a fixed item: whether there was one, what it earned (0..1), and what it was."""

    answered: bool
    fraction: float
    answer: str = ""


def item_fraction(policy: WrittenPolicy, tries: Sequence[Try]) -> float:
    """What an item earns after `tries` (oldest first, the last one the attempt being graded)."""
    if not tries:
        return 0.0
    current = tries[-1]
    if policy.rule is WrittenRule.FIRST:
        first = next((t for t in tries if t.answered), current)
        return first.fraction
    if policy.rule is WrittenRule.PENALTY and current.answered:
        wrong = {t.answer for t in tries[:-1] if t.answered and t.fraction < 1 and t.answer != current.answer}
        return max(0.0, current.fraction - policy.penalty_percent / 100 * len(wrong))
    return current.fraction


def fixed_items(bundle: Bundle) -> list[Written]:
    return [w for w in bundle.written if not fresh_numbers(w.problem)]


def applied(policy: WrittenPolicy, bundle: Bundle, result: SubmissionResult,
            earlier: Sequence[Mapping[str, Any]], judge: Judge) -> SubmissionResult:
    """`result` with each fixed item scored by the rule, `earlier` being the answers of the student's attempts
    before this one (oldest first): judged again by `judge(written problem, answer)`, as they were, since a fixed
    item's verdict depends on nothing but the answer."""
    from qkv_runtime.judge import unanswered

    if policy.rule is WrittenRule.HIDDEN or not earlier:
        return result
    fixed = {w.id: w for w in fixed_items(bundle)}
    problems = []
    for problem in result.problems:
        written = fixed.get(problem.problem_id)
        if written is None or not written.points:
            problems.append(problem)
            continue
        tries = []
        for answers in [*earlier, result.answers]:
            answer = answers.get(written.id)
            judged = judge(written, answer)
            tries.append(Try(not unanswered(answer), judged.score / written.points, repr(answer)))
        fraction = item_fraction(policy, tries)
        problems.append(_rescored(problem, round(written.points * fraction, 4), policy))
    total = round(sum(p.score for p in problems), 4)
    return replace(result, problems=tuple(problems), score=total)


def _rescored(problem: ProblemResult, score: float, policy: WrittenPolicy) -> ProblemResult:
    if score == problem.score:
        return problem
    why = ("the first answer you handed in counts" if policy.rule is WrittenRule.FIRST else
           "less the penalty for the different wrong answers handed in before")
    message = f"{problem.message} ({why})"
    tests = tuple(replace(t, score=score, message=message) for t in problem.tests[:1]) + problem.tests[1:]
    return replace(problem, score=score, message=message, tests=tests)


# ------------------------------------------------------------------ shown


HIDDEN_MESSAGE = "answer kept; whether it is right is shown once hand-in closes"


def hides(policy: WrittenPolicy, bundle: Bundle, closed: bool) -> bool:
    """Whether fixed items' verdicts are kept from the student now."""
    return policy.rule is WrittenRule.HIDDEN and not closed and bool(fixed_items(bundle))


def shown_score(policy: WrittenPolicy, bundle: Bundle, result: SubmissionResult) -> float:
    """The score a student is shown before the close: without what fixed items earned, when they are hidden."""
    if policy.rule is not WrittenRule.HIDDEN:
        return result.score
    fixed = {w.id for w in fixed_items(bundle)}
    return round(sum(p.score for p in result.problems if p.problem_id not in fixed), 4)


def shown_max(policy: WrittenPolicy, bundle: Bundle) -> float:
    if policy.rule is not WrittenRule.HIDDEN:
        return bundle.max_points
    return round(bundle.max_points - sum(w.points for w in fixed_items(bundle)), 4)


def masked(policy: WrittenPolicy, bundle: Bundle, result: SubmissionResult, closed: bool) -> SubmissionResult:
    """`result` as a student may see it now: while fixed items are hidden, their verdicts, scores and points are
    out of it (their answers are shown as handed in)."""
    if not hides(policy, bundle, closed):
        return result
    fixed = {w.id for w in fixed_items(bundle)}
    problems = tuple(p if p.problem_id not in fixed else ProblemResult(
        p.problem_id, p.kind, 0.0, 0.0, HIDDEN_MESSAGE,
        (TestResult(p.problem_id, "answer", "hidden", 0.0, 0.0, False, HIDDEN_MESSAGE),)) for p in result.problems)
    return replace(result, problems=problems, score=shown_score(policy, bundle, result),
                   max_score=shown_max(policy, bundle))


__all__ = ["HIDDEN_MESSAGE", "Try", "WrittenPolicy", "WrittenRule", "applied", "attempt_seed", "fixed_items",
           "fresh_numbers", "hides", "item_fraction", "masked", "problem_seed", "shown_max", "shown_score"]
