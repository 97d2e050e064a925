"""Cues: a form of the text that tells the right answer without its content. A `Bank` in, findings out.

A student who knows nothing reads how an answer is written as well as what it says. Where
the right choices of a topic differ from their distractors as a class in form, picking by
that form earns more than chance, so `qkv validate` refuses the topic, as it refuses one
whose right choices sit at an end of the lengths (measures.py, which this module leaves the
lengths to). The forms a test-wise student reads (`FORMS`):
- explanation punctuation: "claim: reason" or a ';' (a right answer written as a worked reason);
- a hedging word ("may", "usually", "can"...): right answers qualify, wrong ones overstate;
- an absolute word ("always", "never", "only"...): the other half of the same belief;
- word overlap with the question: the choice that repeats most of the question's words.
A guesser prefers the choices of a form (or avoids them) and picks among what is left; its
expected share is weighed against chance over a topic's choice questions (an error above
`TOPIC_MARGIN`, from `TOPIC_FROM` questions) and over the whole bank's (above `BANK_MARGIN`, from
`BANK_FROM`).

True/false statements have one verdict cue more: the follow-up's form (a choice, a number, a
shape) or a form of the statement (a hedging or an absolute word) splits the statements into
groups, and a guesser who learned each group's usual verdict from the bank's key must earn at
most half the verdicts plus `BANK_MARGIN` (from `BANK_FROM` statements).

The guessers of autograder/bank/guessing.py play the same forms through the grader, on every paper.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from autograder.bank.load import Bank
from autograder.kinds import kind_of

TOPIC_FROM = 3  # choice questions a topic needs before its cues are enforced (as for the lengths)
TOPIC_MARGIN = 0.25  # of a topic's choice questions: what picking by a form may earn above chance
BANK_FROM = 12  # choice questions (statements) a bank needs before its own cues are enforced
BANK_MARGIN = 0.05  # of the bank's choice questions (verdicts): what picking by a form may earn above chance

HEDGES = ("may", "might", "can", "could", "usually", "often", "typically", "generally", "mostly", "roughly",
          "approximately", "about", "tend", "tends", "likely", "some", "sometimes")
ABSOLUTES = ("always", "never", "all", "every", "none", "nothing", "only", "must", "cannot", "exactly", "whatever",
             "whenever", "entirely", "completely", "any")
_WORD = re.compile(r"[a-z][a-z0-9_]*")
_EXPLAINS = re.compile(r"[\w)\]}$'\"]: \S|;")
# words too common to be overlap with a question
_STOP = frozenset(("the", "and", "for", "its", "his", "her", "are", "was", "were", "has", "have", "had", "with",
                   "that", "this", "these", "those", "from", "into", "onto", "each", "than", "then", "which", "what",
                   "when", "where", "who", "whom", "how", "why", "not", "but", "one", "two", "does", "did", "doing",
                   "will", "would", "should", "there", "their", "they", "them", "it", "is", "of", "to", "in", "on",
                   "by", "as", "at", "an", "a", "or", "be", "so", "if", "no", "do"))


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if len(w) > 2 and w not in _STOP}


def explains(text: str) -> bool:
    return bool(_EXPLAINS.search(text))


def hedges(text: str) -> bool:
    return bool(words(text) & set(HEDGES))


def absolute(text: str) -> bool:
    return bool(words(text) & set(ABSOLUTES))


@dataclass(frozen=True)
class Form:
    name: str  # as a finding names it
    has: Callable[[str], bool]


FORMS = (Form("explanation punctuation (': ' or ';')", explains), Form("a hedging word", hedges),
         Form("an absolute word", absolute))


@dataclass(frozen=True)
class Question:
    """One set of choices with what a student reads above it."""
    problem_id: str
    field: str
    asked: str  # the question's own text: a multiple-choice prompt, a follow-up's statement and question
    texts: dict[str, str]
    answer: str


def asked(problem: Any, field: str) -> str:
    """What a student reads above a set of choices: a follow-up's statement and question, or the prompt."""
    if field.startswith("follow_up."):
        return f"{problem.statement} {problem.follow_up.question}"
    return kind_of(problem).prompt_text(problem)


def questions(bank: Bank) -> list[Question]:
    out = []
    for problem in sorted(bank.problems.values(), key=lambda p: p.id):
        for field, texts, answer in kind_of(problem).choice_sets(problem):
            out.append(Question(problem.id, field, asked(problem, field), texts, answer))
    return out


# ------------------------------------------------------------------ the picks


def with_form(texts: Mapping[str, str], has: Callable[[str], bool], prefer: bool) -> list[str]:
    """The choices a guesser who prefers (avoids) a form picks among: those with (without) it, or all of them."""
    kept = [cid for cid, text in texts.items() if has(text) == prefer]
    return kept or list(texts)


def most_overlap(asked: str, texts: Mapping[str, str]) -> list[str]:
    """The choices that share most content words with the question."""
    shared = {cid: len(content_words(text) & content_words(asked)) for cid, text in texts.items()}
    return [cid for cid, n in shared.items() if n == max(shared.values())]


def least_overlap(asked: str, texts: Mapping[str, str]) -> list[str]:
    shared = {cid: len(content_words(text) & content_words(asked)) for cid, text in texts.items()}
    return [cid for cid, n in shared.items() if n == min(shared.values())]


@dataclass(frozen=True)
class Strategy:
    name: str
    candidates: Callable[[Question], list[str]]  # the choices it picks among, each as likely


def _by_form(has: Callable[[str], bool], prefer: bool) -> Callable[[Question], list[str]]:
    return lambda q: with_form(q.texts, has, prefer)


def strategies() -> list[Strategy]:
    out = []
    for form in FORMS:
        out.append(Strategy(f"prefers {form.name}", _by_form(form.has, True)))
        out.append(Strategy(f"avoids {form.name}", _by_form(form.has, False)))
    out.append(Strategy("prefers the most word overlap with the question", lambda q: most_overlap(q.asked, q.texts)))
    out.append(Strategy("prefers the least word overlap with the question",
                        lambda q: least_overlap(q.asked, q.texts)))
    return out


def expected(question: Question, strategy: Strategy) -> float:
    picked = strategy.candidates(question)
    return (question.answer in picked) / len(picked)


def lean(sets: Iterable[Question], strategy: Strategy) -> tuple[float, list[str]]:
    """(what the strategy earns above chance, as a share of the questions; the questions it surely wins)."""
    sets = list(sets)
    gain = sum(expected(q, strategy) - 1 / len(q.texts) for q in sets)
    sure = [q.problem_id for q in sets if strategy.candidates(q) == [q.answer]]
    return gain / len(sets), sure


def _topic(problem: Any) -> str:
    return problem.topic.split("/")[0]


def choice_findings(bank: Bank) -> dict[str, list[str]]:
    """problem id -> 'field: reason' on the first choice question of each topic a form of its choices tells, and on
    the bank's first choice question when the whole bank's do."""
    sets = questions(bank)
    by_topic: dict[str, list[Question]] = defaultdict(list)
    for q in sets:
        by_topic[_topic(bank.get(q.problem_id))].append(q)
    out: dict[str, list[str]] = defaultdict(list)
    groups = [(f"the topic {topic}", qs, TOPIC_MARGIN, TOPIC_FROM) for topic, qs in sorted(by_topic.items())]
    groups.append(("the bank", sets, BANK_MARGIN, BANK_FROM))
    for scope, qs, margin, enough in groups:
        if len(qs) < enough:
            continue
        for strategy in strategies():
            gain, sure = lean(qs, strategy)
            if gain > margin:
                where = f" (it alone in {', '.join(sure)})" if sure else ""
                out[qs[0].problem_id].append(
                    f"{qs[0].field}: a guesser who {strategy.name} earns {gain:.0%} of the {len(qs)} choice questions "
                    f"of {scope} above chance{where}; write right choices and distractors alike in form, so that "
                    f"picking by form earns at most {margin:.0%} above chance")
                break  # one cue is enough to rewrite the topic's choices
    return dict(out)


# ------------------------------------------------------------------ verdicts


def follow_up_form(problem: Any) -> str:
    follow = getattr(problem, "follow_up", None)
    return "none" if follow is None else follow.form


VERDICT_CUES: dict[str, Callable[[Any], Any]] = {
    "the follow-up's form": follow_up_form,
    "a hedging word in the statement": lambda p: hedges(p.statement),
    "an absolute word in the statement": lambda p: absolute(p.statement),
}


def learned(statements: Iterable[Any], cue: Callable[[Any], Any]) -> Callable[[Any], bool]:
    """The verdict most statements sharing a cue's value have (true on a tie): a student's reading of last year's key."""
    seen: dict[Any, Counter] = defaultdict(Counter)
    for problem in statements:
        seen[cue(problem)][kind_of(problem).truth(problem)] += 1
    return lambda problem: seen[cue(problem)][True] >= seen[cue(problem)][False]


def verdict_findings(bank: Bank) -> list[str]:
    """'field: reason' for each cue whose learned verdicts earn more than half the bank's statements and the margin,
    and more than one verdict for all of them does (an unbalanced bank is the balance rule's finding)."""
    statements = [p for p in bank.problems.values() if kind_of(p).truth(p) is not None]
    if len(statements) < BANK_FROM:
        return []
    out = []
    true = sum(bool(kind_of(p).truth(p)) for p in statements)
    one_verdict = max(true, len(statements) - true)  # what the balance rule (measures.py) answers for
    for name, cue in VERDICT_CUES.items():
        guess = learned(statements, cue)
        right = sum(guess(p) == kind_of(p).truth(p) for p in statements)
        if right > one_verdict and right / len(statements) > 0.5 + BANK_MARGIN:
            groups = Counter((cue(p), kind_of(p).truth(p)) for p in statements)
            told = ", ".join(f"{value}: {groups[value, True]} true, {groups[value, False]} false"
                             for value in sorted({v for v, _ in groups}, key=str))
            out.append(f"true_false: {name} tells the verdict of {right} of {len(statements)} statements ({told}); "
                       f"keep each group's statements about half true, so that reading it earns at most "
                       f"{BANK_MARGIN:.0%} above half")
    return out


def verdict_lean(items: Iterable[tuple[Any, float]]) -> float:
    """The most points above half of one paper's verdicts that a guesser earns who knows, for one cue of
    `VERDICT_CUES`, each of its groups' usual verdict on this paper ((problem, points) pairs; a statement's verdict
    weighed by its points): whatever the bank's key teaches, reading a cue earns no more. 0 when each group of every
    cue is as much true as false."""
    statements = [(problem, points) for problem, points in items if kind_of(problem).truth(problem) is not None]
    most = 0.0
    for cue in VERDICT_CUES.values():
        apart: dict[Any, float] = defaultdict(float)
        for problem, points in statements:
            apart[cue(problem)] += points if kind_of(problem).truth(problem) else -points
        most = max(most, sum(abs(gap) for gap in apart.values()) / 2)
    return most
