"""Drawing an exam: the bank and the examiner's choices (topics, kinds, count, seed, student) in; numbered problems,
balanced over topics, difficulty, kinds and true/false verdicts, each with its variant, out.

The difficulty mix depends only on the pool and the count, never on the seed, so
two seeds give two exams of the same difficulty. The seed picks the problems and,
with the student id, their numbers; the problems do not depend on the student, so
a class sits the same questions, each student with numbers of their own. The true
and false statements drawn are made to hold equal points where swaps of problems of
the same difficulty can do it (in the same topic first, no kind beyond its share of the
paper and one), and a draw that cannot keep the rule an assignment keeps
(bank/measures.py's `paper_balance_finding`) is refused. The choice questions drawn are
then swapped the same way until a guesser by length earns as near chance as the pool
allows (`length_lean`), the verdicts kept as even.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from autograder.bank import cues, measures
from autograder.bank.load import Bank
from autograder.kinds.items import Variant
from autograder.errors import QkvError
from autograder.kinds import KINDS, Problem, kind_of

DEFAULT_KINDS = tuple(name for name, kind in KINDS.items() if not kind.code)  # code is practised with `qkv build`
DIFFICULTIES = (1, 2, 3)
# a count that does not split evenly gives its extra problems to the middle difficulty first
_EXTRA_ORDER = (2, 1, 3)
Chosen = list[tuple[str, Problem]]
Measure = tuple[float, ...]  # compared in order: the first that differs decides
_EPS = 1e-9


@dataclass(frozen=True)
class ExamSpec:
    topics: tuple[str, ...] = ()  # topic prefixes; empty: every top-level topic
    kinds: tuple[str, ...] = DEFAULT_KINDS
    count: int = 10
    seed: int = 0
    student: str | None = None


@dataclass(frozen=True)
class ExamItem:
    number: int
    problem: Problem
    variant: Variant | None  # kinds with numbers only
    group: str  # the topic group it was drawn for


@dataclass(frozen=True)
class Exam:
    spec: ExamSpec
    items: tuple[ExamItem, ...]

    @property
    def points(self) -> float:
        return sum(item.problem.points for item in self.items)


def parse_list(text: str | None) -> tuple[str, ...]:
    """'a, b,c' -> ('a', 'b', 'c'); None or '' -> ()."""
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


def check_kinds(kinds: tuple[str, ...]) -> None:
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise QkvError("--kinds", f"unknown kind '{unknown[0]}' (kinds: {', '.join(KINDS)})")


def _in_topic(problem: Problem, prefix: str) -> bool:
    return problem.topic == prefix or problem.topic.startswith(prefix.rstrip("/") + "/")


def topic_groups(bank: Bank, topics: tuple[str, ...], kinds: tuple[str, ...]) -> dict[str, list[Problem]]:
    """The pool, grouped by the topics asked for (a problem goes to the most specific prefix it matches)."""
    check_kinds(kinds)
    pool = sorted((p for p in bank.problems.values() if p.kind in kinds), key=lambda p: (p.topic, p.id))
    if not topics:
        topics = tuple(sorted({p.topic.split("/")[0] for p in pool}))
    groups: dict[str, list[Problem]] = {t: [] for t in topics}
    for problem in pool:
        group = max((t for t in topics if _in_topic(problem, t)), key=len, default=None)
        if group is not None:
            groups[group].append(problem)
    known = sorted({p.topic.split("/")[0] for p in bank.problems.values()})
    for topic, members in groups.items():
        if not members:
            has_any = any(_in_topic(p, topic) for p in bank.problems.values())
            inner = [t for t in topics if t != topic and t.startswith(topic.rstrip("/") + "/")]
            if inner and any(_in_topic(p, topic) for p in pool):
                why = f"has no problem of the kinds {', '.join(kinds)} outside {', '.join(inner)}"
            elif has_any:
                why = f"has no problem of the kinds {', '.join(kinds)}"
            else:
                why = f"is not a topic (topics: {', '.join(known)})"
            raise QkvError("--topics", f"'{topic}' {why}")
    return groups


def difficulty_quota(available: Counter, count: int) -> dict[int, int]:
    """How many problems of each difficulty: as even as the pool allows, the same for every seed."""
    quota = {d: 0 for d in DIFFICULTIES}
    for _ in range(count):
        not_full = [d for d in _EXTRA_ORDER if quota[d] < available[d]]
        best = min(not_full, key=lambda d: (quota[d], _EXTRA_ORDER.index(d)))
        quota[best] += 1
    return quota


def select_problems(groups: dict[str, list[Problem]], count: int, seed: int) -> Chosen:
    """`count` problems meeting the difficulty quota, spread over the groups as evenly as it allows, in exam order."""
    pool_size = sum(len(members) for members in groups.values())
    if count > pool_size:
        raise QkvError("--count", f"{count} problems asked for, but only {pool_size} match the topics and kinds")
    rng = random.Random(f"qkv-exam|{seed}")
    left = {topic: list(members) for topic, members in groups.items()}
    available = Counter(p.difficulty for members in groups.values() for p in members)
    quota = difficulty_quota(available, count)
    rank = list(groups)
    rng.shuffle(rank)  # which group goes first when several are equally behind
    picked: dict[str, int] = {topic: 0 for topic in groups}
    kinds: Counter = Counter()  # problems drawn of each kind
    chosen: list[tuple[str, Problem]] = []
    # the scarcest difficulty first, so that few groups holding it does not crowd them later
    for difficulty in sorted(DIFFICULTIES, key=lambda d: (available[d] - quota[d], d)):
        for _ in range(quota[difficulty]):
            # the group furthest behind, and in it the kind furthest behind: a bank of many true/false statements
            # would otherwise give a paper of them (6 of 10), where the kinds should share it as the topics do
            fits = [(t, p) for t in rank for p in left[t] if p.difficulty == difficulty]
            topic, _ = min(fits, key=lambda tp: (picked[tp[0]], kinds[tp[1].kind], rank.index(tp[0])))
            problem = rng.choice([p for t, p in fits if t == topic and kinds[p.kind] == min(
                kinds[q.kind] for u, q in fits if u == topic)])
            left[topic].remove(problem)
            picked[topic] += 1
            kinds[problem.kind] += 1
            chosen.append((topic, problem))
    # lengths first with a free hand, the verdicts evened after, then lengths again as far as the verdicts allow
    balance_lengths(chosen, left, picked, rng, keep_verdicts=False)
    balance_verdicts(chosen, left, picked, rng)
    balance_lengths(chosen, left, picked, rng, keep_verdicts=True)
    unbalanced = measures.paper_balance_finding((p, p.points) for _, p in chosen)
    if unbalanced:
        raise QkvError("--topics", f"{unbalanced}; draw from more topics or kinds, or fewer problems")
    order = list(groups)
    return sorted(chosen, key=lambda tp: (tp[1].difficulty, order.index(tp[0]), tp[1].id))


def _below(a: Measure, b: Measure) -> bool:
    """Whether `a` is lower than `b` (beyond rounding), the first element that differs deciding."""
    for x, y in zip(a, b):
        if x < y - _EPS:
            return True
        if x > y + _EPS:
            return False
    return False


def _verdicts(chosen: Chosen) -> Measure:
    """How far the true and false points are apart, then how many points above half a guesser earns who reads a
    cue of the statements (the follow-up's form, a hedging or an absolute word; bank/cues.py): even points alone
    still let a paper whose number follow-ups are all false tell its verdicts."""
    items = [(p, p.points) for _, p in chosen]
    return measures.verdict_gap(items), cues.verdict_lean(items)


def _lean(chosen: Chosen) -> Measure:
    return (measures.length_lean((p, p.points) for _, p in chosen),)


def _statement(problem: Problem) -> bool:
    return kind_of(problem).truth(problem) is not None


def _choices(problem: Problem) -> bool:
    return bool(kind_of(problem).choice_sets(problem))


def balance_verdicts(chosen: Chosen, left: dict[str, list[Problem]], picked: dict[str, int],
                     rng: random.Random) -> None:
    """Even the true and false points, then the verdicts within each cue's groups: a swap that changes a statement
    (a kind may then hold one problem more than its share)."""
    _rebalance(chosen, left, picked, rng, _verdicts, lambda a, b: _statement(a) or _statement(b),
               lambda trial: True, spare=1, pairs=True)


def balance_lengths(chosen: Chosen, left: dict[str, list[Problem]], picked: dict[str, int],
                    rng: random.Random, keep_verdicts: bool) -> None:
    """Bring a guesser by length nearest chance: a swap that changes a choice question (with `keep_verdicts`, one
    that leaves the verdicts as even as they are). A draw of few choice questions can put most of its right
    choices at one end of the lengths, which no rule of the bank's topics sees."""
    kept = _verdicts(chosen)
    _rebalance(chosen, left, picked, rng, _lean, lambda a, b: _choices(a) or _choices(b),
               lambda trial: not keep_verdicts or not _below(kept, _verdicts(trial)), spare=0)


Swap = tuple[int, str, Problem]  # the place in the paper, the topic drawn for, the problem put there


def _swaps(chosen: Chosen, left: dict[str, list[Problem]], picked: dict[str, int],
           fits: Callable[[Problem, Problem], bool], any_topic: bool) -> list[Swap]:
    """Each drawn problem against each undrawn one of the same difficulty that `fits` allows; into another topic
    only where that topic has fewer problems (`any_topic`: anywhere, for the first half of a pair)."""
    out = []
    for i, (topic, problem) in enumerate(chosen):
        for other, pool in left.items():
            if other != topic and not any_topic and picked[other] >= picked[topic]:
                continue
            out += [(i, other, candidate) for candidate in pool
                    if candidate.difficulty == problem.difficulty and fits(problem, candidate)]
    return out


def _applied(chosen: Chosen, left: dict[str, list[Problem]], picked: dict[str, int], swap: Swap) -> None:
    i, other, candidate = swap
    topic, problem = chosen[i]
    left[topic].append(problem)
    left[other].remove(candidate)
    picked[topic] -= 1
    picked[other] += 1
    chosen[i] = (other, candidate)


def _trial(chosen: Chosen, swaps: tuple[Swap, ...]) -> Chosen:
    trial = list(chosen)
    for i, other, candidate in swaps:
        trial[i] = (other, candidate)
    return trial


def _spread(chosen: Chosen, groups: list[str]) -> list[int]:
    counts = Counter(topic for topic, _ in chosen)
    return sorted(counts[g] for g in groups)


def _rebalance(chosen: Chosen, left: dict[str, list[Problem]], picked: dict[str, int], rng: random.Random,
               measure: Callable[[Chosen], Measure], swappable: Callable[[Problem, Problem], bool],
               keeps: Callable[[Chosen], bool], spare: int, pairs: bool = False) -> None:
    """Swap drawn problems for undrawn ones of the same difficulty (pairs `swappable` allows), the swap that lowers
    `measure` most (in the same topic first, then the one leaving the kinds nearest even) and `keeps` accepts, until
    no swap lowers it further; a swap into another topic only where that topic has fewer problems, so that the
    spread over topics stays as even as it was. With `pairs`, where no single swap helps, two swaps together: the first may
    break the spread over topics or the kinds' shares, the second must mend them (seed 1's 20 problems were stuck
    at 6 points of true statements against 5: each statement that would even them sat in a topic of one problem,
    or would have made one statement too many)."""
    # a swap may change a problem's kind, but never give a kind more than its share of the paper and `spare` (or
    # than the most drawn kind has already): an odd number of statements is evened by a problem of another kind
    kinds = {p.kind for _, p in chosen} | {p.kind for pool in left.values() for p in pool}
    share = -(-len(chosen) // len(kinds)) + spare
    groups = list(picked)
    zero = (0.0,) * len(measure(chosen))
    while _below(zero, current := measure(chosen)):
        most = max(share, _most_of_a_kind(chosen))
        spread = _spread(chosen, groups)

        def better(trial: Chosen) -> Measure | None:
            value = measure(trial)
            return value if _below(value, current) and keeps(trial) and _most_of_a_kind(trial) <= most else None

        found = []
        for swap in _swaps(chosen, left, picked, swappable, any_topic=False):
            trial = _trial(chosen, (swap,))
            if (value := better(trial)) is not None:
                found.append(((swap,), swap[1] != chosen[swap[0]][0], value, _kinds_apart(trial, kinds)))
        if not found and pairs:
            found = _pairs(chosen, left, picked, swappable, measure, current, better, spread, groups, kinds)
        if not found:
            return
        best = min(found, key=lambda f: f[1:])
        ties = [f for f in found if f[1:] == best[1:]]
        move = rng.choice(sorted(ties, key=lambda f: [(i, c.id) for i, _, c in f[0]]))[0]
        for swap in move:
            _applied(chosen, left, picked, swap)


def _pairs(chosen: Chosen, left: dict[str, list[Problem]], picked: dict[str, int],
           swappable: Callable[[Problem, Problem], bool], measure: Callable[[Chosen], Measure], current: Measure,
           better: Callable[[Chosen], Measure | None], spread: list[int], groups: list[str],
           kinds: set[str]) -> list:
    """Two swaps together: a first that lowers `measure` into any topic and past the kinds' shares, a second (of
    any problem) that gives back the spread over topics and the shares, the pair still lowering `measure`."""
    found = []
    for first in _swaps(chosen, left, picked, swappable, any_topic=True):
        once = _trial(chosen, (first,))
        if not _below(measure(once), current):
            continue
        i, other, candidate = first
        after = {t: [p for p in pool if p is not candidate] + ([chosen[i][1]] if t == chosen[i][0] else [])
                 for t, pool in left.items()}
        for second in _swaps(once, after, Counter(t for t, _ in once), lambda a, b: True, any_topic=True):
            if second[0] == i:
                continue
            trial = _trial(once, (second,))
            if _spread(trial, groups) != spread:
                continue
            if (value := better(trial)) is not None:
                found.append(((first, second), True, value, _kinds_apart(trial, kinds)))
    return found


def _most_of_a_kind(chosen: list[tuple[str, Problem]]) -> int:
    return max(Counter(p.kind for _, p in chosen).values())


def _kinds_apart(chosen: list[tuple[str, Problem]], kinds: set[str]) -> int:
    """How far the most drawn kind is ahead of the least drawn, over the kinds of the pool (one not drawn counts 0)."""
    counts = Counter(p.kind for _, p in chosen)
    return max(counts.values()) - min(counts[kind] for kind in kinds)


def instantiate(problem: Problem, seed: int, student: str | None) -> Variant | None:
    # an exam is drawn for at most one student, whose own numbers they are
    return kind_of(problem).variant(problem, seed, "per_student", student)


def draw_exam(bank: Bank, spec: ExamSpec) -> Exam:
    groups = topic_groups(bank, spec.topics, spec.kinds)
    chosen = select_problems(groups, spec.count, spec.seed)
    items = tuple(ExamItem(i + 1, problem, instantiate(problem, spec.seed, spec.student), topic)
                  for i, (topic, problem) in enumerate(chosen))
    return Exam(spec, items)
