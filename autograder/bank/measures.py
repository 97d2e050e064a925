"""Whether the bank's scores measure knowledge: a `Bank` (or what one paper asks) in, findings, warnings and
per-topic figures out.

Guessing must not earn points: the bank's true/false statements are close to half
true (`balance`, enforced on the whole bank and on each topic once they hold enough
statements, the topic's finding on its first file), and so is every paper a student sits,
an assignment or a drawn exam (`paper_balance_finding`: true and false, weighted by points,
differ by at most one statement or a tenth of the points, so that answering all true or all
false earns about half); the right choice's length rank is spread (`length_end`: a topic where
more than a third of the right choices sit at one end is an error, more than a quarter a warning),
so that picking the longest or the shortest choice earns what chance does, and so does dropping
both ends, which a bank that kept every right choice between them would reward; and no prompt,
statement or choice quotes a number that another problem asks for (`leaks`, an error): a
draw's answers, a lecture example's when a problem has no parameters, a follow-up's number.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import numpy as np

from autograder.bank.load import Bank
from autograder.kinds import kind_of
from autograder.kinds.true_false import VERDICT_SHARE
from autograder.kinds.numeric.model import NumericProblem

TRUE_SHARE = (0.35, 0.65)  # of a bank's true/false statements that are true
BALANCE_FROM = 12  # true/false problems a bank needs before its balance is enforced
TOPIC_TRUE_SHARE = (0.25, 0.75)  # of one topic's statements: looser, a topic holds few
TOPIC_BALANCE_FROM = 4  # true/false problems a topic needs before its own balance is enforced
CLEAR_MARGIN = 1.2  # the right choice is "clearly" the longest when it is this much longer than every other
LONGEST_SHARE = 1 / 3  # of a topic's choice questions, at either end of the lengths (chance: 1/4 with 4 choices)
CHANCE_AT_END = 1 / 4  # of a topic's choice questions, at one end of the lengths, that chance gives with 4 choices
TOPIC_CHOICES_FROM = 3  # choice questions a topic needs before the spread of its right choices' lengths is enforced
PAPER_MARGIN = 0.05  # of a paper's verdict points: what answering all true or all false may earn above half
LEAK_DECIMALS = range(0, 7)
_TOKEN = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w])")


def _topic(problem: Any) -> str:
    return problem.topic.split("/")[0]


# ------------------------------------------------------------ true or false


def balance(bank: Bank) -> dict[str, tuple[int, int]]:
    """(true, false) statements per topic."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for problem in bank.problems.values():
        truth = kind_of(problem).truth(problem)
        if truth is not None:
            counts[_topic(problem)][0 if truth else 1] += 1
    return {topic: (t, f) for topic, (t, f) in sorted(counts.items())}


def _unbalanced(true: int, total: int, share: tuple[float, float], enough: int) -> bool:
    return total >= enough and not share[0] <= true / total <= share[1]


def balance_findings(bank: Bank) -> list[str]:
    """The whole bank's balance, as 'field: reason' (the finding belongs to the bank, not to a file)."""
    true = sum(t for t, _ in balance(bank).values())
    total = sum(t + f for t, f in balance(bank).values())
    if not _unbalanced(true, total, TRUE_SHARE, BALANCE_FROM):
        return []
    return [f"true_false: {true} of {total} statements are true; keep between {TRUE_SHARE[0]:.0%} and "
            f"{TRUE_SHARE[1]:.0%} true, so that answering all true or all false earns little"]


def topic_balance_findings(bank: Bank) -> dict[str, list[str]]:
    """problem id -> 'field: reason' for each topic out of balance: its true and false statements (the finding on
    the topic's first true/false file), the lengths of its right choices (on its first choice question)."""
    out: dict[str, list[str]] = defaultdict(list)
    for topic, (true, false) in balance(bank).items():
        if _unbalanced(true, true + false, TOPIC_TRUE_SHARE, TOPIC_BALANCE_FROM):
            first = min(p.id for p in bank.problems.values() if kind_of(p).truth(p) is not None and _topic(p) == topic)
            out[first].append(f"true_false: {true} of {true + false} statements of the topic {topic} are true; keep "
                              f"between {TOPIC_TRUE_SHARE[0]:.0%} and {TOPIC_TRUE_SHARE[1]:.0%} of a topic true")
    for topic, sets in ends_by_topic(bank).items():
        if len(sets) < TOPIC_CHOICES_FROM:
            continue
        for end in ("longest", "shortest"):
            at_end = [c for c, where in sets if where == end]
            if len(at_end) > LONGEST_SHARE * len(sets):
                out[sets[0][0].problem_id].append(
                    f"{sets[0][0].field}: the right choice is the {end} (or ties for it) in {len(at_end)} of the "
                    f"{len(sets)} choice questions of the topic {topic} ({', '.join(c.problem_id for c in at_end)}); "
                    f"keep it at either end in at most {LONGEST_SHARE:.0%} of a topic's, so that picking by length "
                    "earns what chance does")
    return dict(out)


# ------------------------------------------------------------ one paper


def verdict_points(items: Iterable[tuple[Any, float]]) -> tuple[list[float], list[float]]:
    """The points of the true and of the false statements among (problem, points) pairs."""
    true: list[float] = []
    false: list[float] = []
    for problem, points in items:
        truth = kind_of(problem).truth(problem)
        if truth is not None:
            (true if truth else false).append(float(points))
    return true, false


def verdict_gap(items: Iterable[tuple[Any, float]]) -> float:
    """How many more points the true statements hold than the false ones, or the other way round."""
    true, false = verdict_points(items)
    return abs(sum(true) - sum(false))


def paper_excess(items: Iterable[tuple[Any, float]]) -> float:
    """How far the paper's true and false points are apart beyond what the rule allows (0: balanced): the rule is
    at most one statement's points apart (an odd count cannot do better), or a tenth of the points."""
    true, false = verdict_points(items)
    allowed = max(max(true + false, default=0.0), 2 * PAPER_MARGIN * (sum(true) + sum(false)))
    return max(0.0, abs(sum(true) - sum(false)) - allowed)


def paper_balance_finding(items: Iterable[tuple[Any, float]]) -> str | None:
    """What is wrong with the true/false balance of one paper (an assignment, a drawn exam), or None."""
    items = list(items)
    if paper_excess(items) <= 1e-9:
        return None
    true, false = verdict_points(items)
    more = "true" if sum(true) > sum(false) else "false"
    share = max(sum(true), sum(false)) / (sum(true) + sum(false))

    def points(values: list[float]) -> str:
        return f"{sum(values):g} point" + ("" if sum(values) == 1 else "s")

    return (f"the true/false statements are unbalanced: {len(true)} true ({points(true)}) and {len(false)} false "
            f"({points(false)}), so answering all {more} earns {share:.0%} of their verdicts; true and false "
            f"may differ by one statement's points or {2 * PAPER_MARGIN:.0%} of them")


# ------------------------------------------------------------------ choices


@dataclass(frozen=True)
class ChoiceSet:
    problem_id: str
    field: str  # "choices" or "follow_up.choices"
    texts: dict[str, str]  # id -> text
    answer: str


def choice_sets(bank: Bank) -> Iterator[ChoiceSet]:
    for problem in sorted(bank.problems.values(), key=lambda p: p.id):
        for field, texts, answer in kind_of(problem).choice_sets(problem):
            yield ChoiceSet(problem.id, field, texts, answer)


def longest(texts: dict[str, str]) -> str:
    """The id of the longest choice (the first of equals): what a test-wise guesser picks."""
    return max(texts, key=lambda i: len(texts[i]))


def longest_right(choices: ChoiceSet) -> bool:
    """Whether the right choice is the longest by a clear margin."""
    right = len(choices.texts[choices.answer])
    others = [len(t) for i, t in choices.texts.items() if i != choices.answer]
    return right > CLEAR_MARGIN * max(others)


def length_end(choices: ChoiceSet) -> str | None:
    """"longest" or "shortest" when no other choice is longer (shorter) than the right one: a guesser who picks by
    length, the first shown of equals, earns it at least sometimes; None when it sits between the ends."""
    right = len(choices.texts[choices.answer])
    others = [len(t) for i, t in choices.texts.items() if i != choices.answer]
    if right >= max(others):
        return "longest"
    if right <= min(others):
        return "shortest"
    return None


def length_lean(items: Iterable[tuple[Any, float]]) -> float:
    """How many points above chance a guesser by length earns on the choice questions among (problem, points)
    pairs: the longest, the shortest, or one of the choices between the two (on average, in a student's own order),
    whichever earns most; a follow-up's choices carry the follow-up's share of the points."""
    longest = shortest = between = chance = 0.0
    for problem, points in items:
        for field, texts, answer in kind_of(problem).choice_sets(problem):
            worth = points * (1 - VERDICT_SHARE) if field.startswith("follow_up.") else points
            end = length_end(ChoiceSet(problem.id, field, texts, answer))
            longest += worth * (end == "longest")
            shortest += worth * (end == "shortest")
            between += worth / (len(texts) - 2) if end is None else 0.0
            chance += worth / len(texts)
    return max(longest, shortest, between) - chance


def ends_by_topic(bank: Bank) -> dict[str, list[tuple[ChoiceSet, str | None]]]:
    """topic -> each choice question of the topic and the end of the lengths its right choice sits at."""
    out: dict[str, list[tuple[ChoiceSet, str | None]]] = defaultdict(list)
    for choices in choice_sets(bank):
        out[_topic(bank.get(choices.problem_id))].append((choices, length_end(choices)))
    return dict(sorted(out.items()))


def longest_by_topic(bank: Bank) -> dict[str, tuple[int, int]]:
    """(choice questions whose right choice is clearly the longest, choice questions) per topic."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for choices in choice_sets(bank):
        entry = counts[_topic(bank.get(choices.problem_id))]
        entry[0] += longest_right(choices)
        entry[1] += 1
    return {topic: (n, total) for topic, (n, total) in sorted(counts.items())}


def length_warnings(bank: Bank) -> list[str]:
    """One line per topic naming its choice questions whose right choice sits at an end of the lengths more often
    than chance puts it there."""
    out = []
    for topic, sets in ends_by_topic(bank).items():
        parts = []
        clearly = [c.problem_id for c, _ in sets if longest_right(c)]
        if clearly and len(clearly) > LONGEST_SHARE * len(sets):
            parts.append(f"the longest by a clear margin in {len(clearly)} of {len(sets)} choice questions "
                         f"({', '.join(clearly)})")
        else:
            clearly = []
        for end in ("longest", "shortest"):
            which = [c.problem_id for c, where in sets if where == end and c.problem_id not in clearly]
            # chance puts a right choice among 4 at each end one time in 4: only more than that is a lean
            if len(which) > max(1, CHANCE_AT_END * len(sets)):
                parts.append(f"the {end} (or tied for it) in {', '.join(which)}")
        if parts:
            out.append(f"{topic}: the right choice is {'; '.join(parts)}; a guesser who picks by length earns them")
    return out


# ------------------------------------------------------------------- leaks


def _significant(token: str) -> int:
    return len(token.replace(",", "").replace(".", "").lstrip("0"))


def _distinctive(token: str) -> bool:
    """A number worth quoting only as an answer: a whole number of 5 digits or more, or 3 significant
    digits after a decimal point."""
    if "." in token:
        return _significant(token) >= 3 and len(token.split(".")[1]) >= 2
    return _significant(token) >= 5


def _shown(values: list[float]) -> set[tuple[int, float]]:
    return {(k, round(x, k)) for x in values if np.isfinite(x) for k in LEAK_DECIMALS}


def leaks(bank: Bank) -> dict[str, list[str]]:
    """problem id -> 'field: reason' for each text that quotes another problem's answer."""
    asked = {pid: _shown(kind_of(p).numbers_asked(p)) for pid, p in bank.problems.items()}
    out: dict[str, list[str]] = defaultdict(list)
    for pid, problem in sorted(bank.problems.items()):
        for field, text in kind_of(problem).texts_shown(problem):
            for token in _TOKEN.findall(text):
                if not _distinctive(token):
                    continue
                decimals = len(token.split(".")[1]) if "." in token else 0
                value = (decimals, round(float(token.replace(",", "")), decimals))
                owners = sorted(other for other, shown in asked.items() if other != pid and value in shown)
                if owners:
                    out[pid].append(f"{field}: quotes {token}, an answer of {owners[0]}; a student of "
                                    f"{owners[0]} who reads this one is given it")
                    break
    return dict(out)


# ------------------------------------------------------------------- each student's own numbers


def own_share(problem: Any, first: Any, second: Any) -> float:
    """The share of a written problem's points whose right answers differ between two students' variants
    (issue 47: a classmate's answers must not be this student's). A numeric part counts on its own; choices in
    another order are the same answer, so only drawn numbers make one."""
    kind = kind_of(problem)
    if isinstance(problem, NumericProblem):
        parts = [not np.allclose(first.answers[p.name], second.answers[p.name]) for p in problem.parts]
        return sum(parts) / len(parts)

    def content(variant: Any) -> Any:
        return kind.answer(problem, None if variant is None or "order" in variant.params else variant)

    return float(content(first) != content(second))
