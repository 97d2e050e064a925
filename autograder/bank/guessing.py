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
- the cues of the statement itself (`VERDICT_CUES`, bank/cues.py): the verdict the bank's key gives most
  statements with the same follow-up form, with or without a hedging word, with or without an absolute word, and
  the verdict most of the three give (`cues_together`); and the test-wise rules "a hedging word means true", "an absolute
  word means false" (`hedged_true`, `absolute_false`);
- the longest, the shortest choice (`longest`, `shortest`), the first shown of equals; the first or the last
  shown (`first`, `last`); the first shown once the longest and the shortest are dropped (`between_ends`), which
  earns most where every right choice is kept away from the ends; the first shown with (without) a form of the
  text (`by_form`: explanation punctuation, a hedging word, an absolute word); the first shown of those that share
  most (fewest) words with the question (`most_overlap`, `least_overlap`);
- constants (`Guesser.number`, `Guesser.shape`): the same number for every numeric part and follow-up (filled
  into a vector or a matrix of the right size), the same shape for every shape;
- the combination (`best_combination`): a verdict, a pick, a number and a shape together, each the one that
  earns most on the paper.
Chance is half of the verdict points, 1/n of a choice part's points for n choices, and nothing for a number or
a shape; `paper_score` weighs what a `Guesser` earns against all the paper's points.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from autograder.bank import cues as cue_rules
from autograder.bank.load import Bank
from autograder.kinds import kind_of
from autograder.kinds import choices as ch
from autograder.kinds.true_false.checks import presupposing

Shown = Sequence[tuple[str, str]]  # (choice id, text) in the order a student sees them
Pick = Callable[[Shown, str], str]  # (the choices as shown, the question's text) -> the id picked


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


def learned_cue(bank: Bank, cue: Callable[[Any], Any]) -> Callable[[Any], bool]:
    """The verdict most of the bank's statements sharing `cue`'s value have (true on a tie)."""
    return cue_rules.learned([p for p in bank.problems.values() if kind_of(p).truth(p) is not None], cue)


def cues_together(bank: Bank) -> Callable[[Any], bool]:
    """The verdict most of the cues of bank/cues.py give, each learned as `learned_cue` learns it (true on a
    tie). Not one cue learned on every cue's values at once: with as many groups as statements, that is the key
    learned by heart, not a cue."""
    each = [learned_cue(bank, cue) for cue in cue_rules.VERDICT_CUES.values()]
    return lambda problem: 2 * sum(guess(problem) for guess in each) >= len(each)


def hedged_true(problem: Any) -> bool:
    return cue_rules.hedges(problem.statement)


def absolute_false(problem: Any) -> bool:
    return not cue_rules.absolute(problem.statement)


def longest(shown: Shown, asked: str = "") -> str:
    return max(shown, key=lambda choice: len(choice[1]))[0]


def shortest(shown: Shown, asked: str = "") -> str:
    return min(shown, key=lambda choice: len(choice[1]))[0]


def by_form(has: Callable[[str], bool], prefer: bool) -> Pick:
    """The first shown of the choices with (prefer) or without a form, or the first shown when none is."""
    def pick(shown: Shown, asked: str = "") -> str:
        return cue_rules.with_form(dict(shown), has, prefer)[0]
    return pick


def most_overlap(shown: Shown, asked: str = "") -> str:
    return cue_rules.most_overlap(asked, dict(shown))[0]


def least_overlap(shown: Shown, asked: str = "") -> str:
    return cue_rules.least_overlap(asked, dict(shown))[0]


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


def choice_score(paper: Sequence[Sequence[Sitting]], pick: Pick) -> Score:
    """The choices `pick` makes among each set of choices, as the student's own order shows them."""
    earned = total = chance = 0.0
    for sittings in paper:
        for sitting in sittings:
            problem = sitting.problem
            for field, texts, answer in kind_of(problem).choice_sets(problem):
                order = ch.order_in(sitting.variant, problem.id, list(texts))
                right = _points(sitting, _typed_choice(field, ch.letter_of(order, answer)))
                picked = pick([(cid, texts[cid]) for cid in order], cue_rules.asked(problem, field))
                earned += _points(sitting, _typed_choice(field, ch.letter_of(order, picked)))
                total += right
                chance += right / len(texts)
    return Score(earned, total, chance)


def first(shown: Shown, asked: str = "") -> str:
    return shown[0][0]


def last(shown: Shown, asked: str = "") -> str:
    return shown[-1][0]


def between_ends(shown: Shown, asked: str = "") -> str:
    """The first shown of the choices left once the longest and the shortest are dropped (the first, when none is)."""
    ends = {longest(shown), shortest(shown)}
    return next((cid for cid, _ in shown if cid not in ends), shown[0][0])


@dataclass(frozen=True)
class Guesser:
    """A student who knows nothing, by what they type in each kind of blank; None leaves that blank empty (the
    kinds' `Guess`: each kind says what such a student hands in, `Kind.guessed`)."""
    verdict: Callable[[Any], bool] | None = None
    pick: Pick | None = None
    number: float | None = None
    shape: str | None = None
    asked: str = ""  # the text above the choices of the problem at hand (`typed_by` sets it)

    def says(self, problem) -> bool | None:
        return None if self.verdict is None else self.verdict(problem)

    def letter(self, variant, question: str, choices: dict[str, str]) -> str | None:
        if self.pick is None:
            return None
        order = ch.order_in(variant, question, list(choices))
        return ch.letter_of(order, self.pick([(cid, choices[cid]) for cid in order], self.asked))


def typed_by(sitting: Sitting, guesser: Guesser) -> Any:
    """What `guesser` types for one problem, as a student would hand it in (None: nothing)."""
    fields = [field for field, _, _ in kind_of(sitting.problem).choice_sets(sitting.problem)]
    reading = replace(guesser, asked=cue_rules.asked(sitting.problem, fields[0])) if fields else guesser
    return kind_of(sitting.problem).guessed(sitting.problem, sitting.variant, reading)


def paper_score(paper: Sequence[Sequence[Sitting]], guesser: Guesser) -> Score:
    """What `guesser` earns of all the paper's (written) points, against what random verdicts and picks in the
    blanks it fills would earn."""
    earned = total = 0.0
    for sittings in paper:
        for sitting in sittings:
            total += sitting.points
            typed = typed_by(sitting, guesser)
            if typed is not None:
                earned += _points(sitting, typed)
    chance = (verdict_score(paper, always(True)).chance if guesser.verdict else 0.0) + \
        (choice_score(paper, first).chance if guesser.pick else 0.0)
    return Score(earned, total, chance)


def best_combination(paper: Sequence[Sequence[Sitting]], verdicts: Iterable[Callable[[Any], bool]],
                     picks: Iterable[Pick], numbers: Iterable[float],
                     shapes: Iterable[str]) -> Guesser:
    """Each blank's strategy that earns most on this paper, together: the strongest guesser made of them."""
    def best(options: Iterable[Any], field: str) -> Any:
        return max(options, key=lambda option: paper_score(paper, Guesser(**{field: option})).earned)
    return Guesser(best(verdicts, "verdict"), best(picks, "pick"), best(numbers, "number"), best(shapes, "shape"))


def largest_question(paper: Sequence[Sequence[Sitting]], part: str) -> float:
    """The most one question is worth in a part ("verdicts": one statement's verdict, "choices": one set of
    choices, "all": one problem): no guesser can be held nearer chance than one lucky question."""
    worth = {"verdicts": lambda s: verdict_score([[s]], always(True)).total,
             "choices": lambda s: choice_score([[s]], first).total, "all": lambda s: s.points}[part]
    return max((worth(s) for sittings in paper for s in sittings), default=0.0)
