"""Whether the bank's scores measure knowledge: a `Bank` in, findings, warnings and per-topic figures out.

Guessing must not earn points: the bank's true/false statements are close to half
true (`balance`, enforced on the whole bank and on each topic once they hold enough
statements, the topic's finding on its first file), the right choice is not
the longest by a clear margin in more than a third of a topic's choice questions
(`longest_right`, a warning), and no prompt, statement or choice quotes a number
that another problem asks for (`leaks`, an error): a draw's answers, a lecture
example's when a problem has no parameters, a follow-up's number.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from autograder.bank.load import Bank
from autograder.kinds import kind_of

TRUE_SHARE = (0.35, 0.65)  # of a bank's true/false statements that are true
BALANCE_FROM = 12  # true/false problems a bank needs before its balance is enforced
TOPIC_TRUE_SHARE = (0.25, 0.75)  # of one topic's statements: looser, a topic holds few
TOPIC_BALANCE_FROM = 4  # true/false problems a topic needs before its own balance is enforced
CLEAR_MARGIN = 1.2  # the right choice is "clearly" the longest when it is this much longer than every other
LONGEST_SHARE = 1 / 3  # of a topic's choice questions
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
    """problem id (the first true/false file of the topic) -> 'field: reason' for each topic out of balance."""
    out: dict[str, list[str]] = {}
    for topic, (true, false) in balance(bank).items():
        if _unbalanced(true, true + false, TOPIC_TRUE_SHARE, TOPIC_BALANCE_FROM):
            first = min(p.id for p in bank.problems.values() if kind_of(p).truth(p) is not None and _topic(p) == topic)
            out[first] = [f"true_false: {true} of {true + false} statements of the topic {topic} are true; keep "
                          f"between {TOPIC_TRUE_SHARE[0]:.0%} and {TOPIC_TRUE_SHARE[1]:.0%} of a topic true"]
    return out


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


def longest_by_topic(bank: Bank) -> dict[str, tuple[int, int]]:
    """(choice questions whose right choice is clearly the longest, choice questions) per topic."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for choices in choice_sets(bank):
        entry = counts[_topic(bank.get(choices.problem_id))]
        entry[0] += longest_right(choices)
        entry[1] += 1
    return {topic: (n, total) for topic, (n, total) in sorted(counts.items())}


def length_warnings(bank: Bank) -> list[str]:
    out = []
    for topic, (clearly, total) in longest_by_topic(bank).items():
        if clearly > LONGEST_SHARE * total:
            which = [c.problem_id for c in choice_sets(bank) if _topic(bank.get(c.problem_id)) == topic and longest_right(c)]
            out.append(f"{topic}: the right choice is the longest by a clear margin in {clearly} of {total} choice "
                       f"questions ({', '.join(which)}); a guesser who picks the longest earns them")
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
