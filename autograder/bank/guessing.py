"""What a student who knows nothing earns: a paper (what each student of a class sits) in, each guessing strategy's
points on the paper's verdicts and on its choices out, judged by the grader's own `Kind.grade`.

A paper is one list of `Sitting`s per student (the whole bank, an assignment, a drawn exam), each
problem with its points and that student's variant, so choices are seen in the student's own
order. Its verdict part is the verdicts of its true/false statements, each answered alone; its
choice part is its choice questions and its follow-ups with choices. The strategies:
- all true, all false (`always`): one verdict for every statement;
- the cue (`cue_guess`): the verdict that the wording around a statement suggests, learned from the
  whole bank's key as a student learns it from last year's answers: the prompt, whether there
  is a follow-up, a follow-up question or title that takes its verdict for granted;
- the longest, the shortest choice (`longest`, `shortest`), the first shown of equals.
Chance is half of the verdict points, and 1/n of a choice part's points for n choices.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from autograder.bank.load import Bank
from autograder.kinds import kind_of
from autograder.kinds import choices as ch
from autograder.kinds.true_false.checks import presupposing

Shown = Sequence[tuple[str, str]]  # (choice id, text) in the order a student sees them


@dataclass(frozen=True)
class Sitting:
    problem: Any
    points: float
    variant: Any  # the student's own (None: nothing of the problem is drawn)


@dataclass(frozen=True)
class Score:
    earned: float
    total: float  # what right answers to the part earn
    chance: float  # what random answers earn on average

    @property
    def share(self) -> float:
        return self.earned / self.total if self.total else 0.0

    @property
    def chance_share(self) -> float:
        return self.chance / self.total if self.total else 0.0


def always(verdict: bool) -> Callable[[Any], bool]:
    return lambda problem: verdict


def cue(problem: Any) -> tuple:
    """What a student reads around a statement besides the statement itself."""
    follow = getattr(problem, "follow_up", None)
    return (kind_of(problem).prompt_text(problem), follow is None,
            presupposing(follow.question) is not None if follow is not None else False,
            presupposing(problem.title) is not None)


def cue_guess(bank: Bank) -> Callable[[Any], bool]:
    """The verdict most of the bank's statements with the same cue have (true on a tie)."""
    seen: dict[tuple, Counter] = defaultdict(Counter)
    for problem in bank.problems.values():
        truth = kind_of(problem).truth(problem)
        if truth is not None:
            seen[cue(problem)][truth] += 1
    return lambda problem: seen[cue(problem)][True] >= seen[cue(problem)][False]


def longest(shown: Shown) -> str:
    return max(shown, key=lambda choice: len(choice[1]))[0]


def shortest(shown: Shown) -> str:
    return min(shown, key=lambda choice: len(choice[1]))[0]


def _points(sitting: Sitting, typed: Any) -> float:
    return kind_of(sitting.problem).grade(sitting.problem, typed, sitting.variant).fraction * sitting.points


def verdict_score(paper: Sequence[Sequence[Sitting]], guess: Callable[[Any], bool]) -> Score:
    """The verdicts `guess` gives, each typed alone (a bare verdict leaves the follow-up unanswered)."""
    earned = total = 0.0
    for sittings in paper:
        for sitting in sittings:
            truth = kind_of(sitting.problem).truth(sitting.problem)
            if truth is None:
                continue
            total += _points(sitting, "true" if truth else "false")
            earned += _points(sitting, "true" if guess(sitting.problem) else "false")
    return Score(earned, total, total / 2)


def _typed_choice(field: str, letter: str) -> Any:
    # a follow-up's letter alone: its verdict unanswered, so only the follow-up's share is at stake
    return {"follow_up": letter} if field.startswith("follow_up.") else letter


def choice_score(paper: Sequence[Sequence[Sitting]], pick: Callable[[Shown], str]) -> Score:
    """The choices `pick` makes among each set of choices, as the student's own order shows them."""
    earned = total = chance = 0.0
    for sittings in paper:
        for sitting in sittings:
            problem = sitting.problem
            for field, texts, answer in kind_of(problem).choice_sets(problem):
                order = ch.order_in(sitting.variant, problem.id, list(texts))
                right = _points(sitting, _typed_choice(field, ch.letter_of(order, answer)))
                picked = pick([(cid, texts[cid]) for cid in order])
                earned += _points(sitting, _typed_choice(field, ch.letter_of(order, picked)))
                total += right
                chance += right / len(texts)
    return Score(earned, total, chance)
