"""Item analysis: the gradebook's latest grading of each student (and the bundle, for choice texts) in,
an `ItemAnalysis` out. `load_scores` does the reading (through the gradebook's `latest_scores`); `analyse` is
pure numpy.

Students whose file could not be run at all (status other than `graded`) are left out: they tell
nothing about the items. For each item (a problem, and each hidden test of a code problem), over the
n students analysed, with x the item's score and t the total score:

- mean: mean(x); facility: mean(x) / the item's points;
- discrimination, point-biserial: Pearson's r of x and t - x (the rest score, so an item is not
  correlated with itself); for a pass/fail item this is the point-biserial correlation;
- discrimination, upper-lower: facility in the top 27% of students by t minus facility in the bottom
  27% (g = max(1, round(0.27 n)) students each, ties broken by student id);
- Cronbach's alpha over the problems: k/(k-1) * (1 - sum var(x_i) / var(t)), sample variances;
- flags: facility above 0.95, point-biserial below 0.2, or no variance at all.
Choice items (multiple_choice, true_false) get a distractor table: how many chose each option, overall
and in the upper and lower groups. Each named misconception is counted once per student who matched it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from autograder.grade.gradebook import Gradebook
from autograder.kinds import KINDS, kind_of
from autograder.kinds.implement import IMPLEMENT
from qkv_runtime.answers import AnswerFormatError, parse_choice

GROUP = 0.27
LOW_DISCRIMINATION = 0.2
HIGH_FACILITY = 0.95


@dataclass(frozen=True)
class Scores:
    """The latest grading of each analysed student, as arrays."""

    students: tuple[str, ...]
    columns: tuple[tuple[str, str, str], ...]  # (problem, test, visibility) per test column
    tests: np.ndarray  # students x columns: points earned
    test_max: np.ndarray  # columns
    misconceptions: dict[tuple[str, str], set[str]]  # (problem, misconception) -> students
    answers: dict[str, dict[str, Any]]  # student -> problem -> answer as handed in
    excluded: int = 0  # graded but not run (load errors, no functions, ...)
    problem_kinds: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ChoiceItem:
    """What `analyse` needs to know of a choice problem: its options, which is right, and their texts."""

    kind: str  # multiple_choice or true_false
    options: tuple[str, ...]  # the choices' ids (or letters), or "true", "false"
    correct: str
    texts: tuple[str, ...] = ()
    # (student, answer) -> the option chosen, when letters mean different choices for different students
    reader: Optional[Callable[[str, Any], str]] = field(default=None, compare=False)


@dataclass(frozen=True)
class ItemStats:
    problem: str
    test: Optional[str]  # None for a whole problem
    kind: str
    max_score: float
    mean: float
    facility: float
    point_biserial: Optional[float]
    upper_lower: Optional[float]
    flags: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.problem if self.test is None else f"{self.problem}::{self.test}"


@dataclass(frozen=True)
class Distractor:
    option: str
    text: str
    correct: bool
    count: int
    upper: int
    lower: int


@dataclass(frozen=True)
class MisconceptionCount:
    problem: str
    misconception: str
    message: str
    students: int
    share: float


@dataclass(frozen=True)
class ItemAnalysis:
    students: int
    excluded: int
    max_score: float
    totals: np.ndarray
    alpha: Optional[float]
    group_size: int
    problems: tuple[ItemStats, ...]
    hidden_tests: tuple[ItemStats, ...]
    distractors: dict[str, tuple[Distractor, ...]]
    misconceptions: tuple[MisconceptionCount, ...]

    @property
    def flagged(self) -> list[ItemStats]:
        return [i for i in (*self.problems, *self.hidden_tests) if i.flags]


# ------------------------------------------------------------------ reading


def load_scores(book: Gradebook) -> Scores:
    """The latest grading of each student whose file ran, by student id."""
    table = book.latest_scores()
    students = [g.student for g in table.gradings]
    student_of = {g.id: g.student for g in table.gradings}
    misconceptions: dict[tuple[str, str], set[str]] = {}
    for grading, problem, misconception, _ in book.latest_mistakes():
        misconceptions.setdefault((problem, misconception), set()).add(student_of[grading])
    answers = {g.student: g.answers for g in table.gradings}
    order = sorted(range(len(students)), key=students.__getitem__)  # by student id, as every report lists them
    return Scores(tuple(students[i] for i in order), table.columns, table.scores[order], table.maxima,
                  misconceptions, answers, excluded=table.excluded, problem_kinds=book.problem_kinds())


# ---------------------------------------------------------------- the numbers


def rest_correlations(items: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Pearson's r of each item column with the total less that item (NaN where either has no variance)."""
    rest = totals[:, None] - items
    x = items - items.mean(axis=0)
    y = rest - rest.mean(axis=0)
    denominator = np.sqrt((x * x).sum(axis=0) * (y * y).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (x * y).sum(axis=0) / denominator
    r[denominator <= 1e-12] = np.nan
    return r


def groups(totals: np.ndarray, students: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    """Row indices of the upper and lower 27% by total (ties by student id) and the group size."""
    n = len(totals)
    size = max(1, int(round(GROUP * n))) if n else 0
    order = sorted(range(n), key=lambda i: (-totals[i], students[i]))
    return np.array(order[:size], dtype=int), np.array(order[n - size:], dtype=int), size


def cronbach_alpha(items: np.ndarray) -> Optional[float]:
    n, k = items.shape
    if n < 2 or k < 2:
        return None
    total_var = items.sum(axis=1).var(ddof=1)
    if total_var <= 1e-12:
        return None
    return float(k / (k - 1) * (1 - items.var(axis=0, ddof=1).sum() / total_var))


def _item_stats(problem: str, test: Optional[str], kind: str, x: np.ndarray, max_score: float, r: float,
                upper: np.ndarray, lower: np.ndarray) -> ItemStats:
    n = len(x)
    mean = float(x.mean()) if n else 0.0
    facility = mean / max_score if max_score else 0.0
    pb = None if np.isnan(r) else float(r)
    ul = None
    if n >= 2 and max_score:
        ul = float(x[upper].mean() / max_score - x[lower].mean() / max_score)
    flags = []
    if n and float(x.max() - x.min()) <= 1e-12:
        flags.append("no variance")
    if facility > HIGH_FACILITY:
        flags.append(f"facility above {HIGH_FACILITY}")
    if pb is not None and pb < LOW_DISCRIMINATION:
        flags.append(f"discrimination below {LOW_DISCRIMINATION}")
    return ItemStats(problem, test, kind, max_score, mean, facility, pb, ul, tuple(flags))


def _chosen(item: ChoiceItem, answer: Any, student: str = "") -> str:
    try:
        if item.reader is not None:
            return item.reader(student, answer)
        return parse_choice(answer, len(item.options))
    except (AnswerFormatError, TypeError, ValueError, AttributeError):
        return "(unreadable)" if answer not in (None, "") else "(none)"


def _distractors(item: ChoiceItem, problem: str, scores: Scores, upper: np.ndarray, lower: np.ndarray
                 ) -> tuple[Distractor, ...]:
    picks = [_chosen(item, scores.answers.get(s, {}).get(problem), s) for s in scores.students]
    up = {i for i in upper.tolist()}
    low = {i for i in lower.tolist()}
    options = list(item.options) + sorted({p for p in picks if p not in item.options})
    texts = dict(zip(item.options, item.texts))
    out = []
    for option in options:
        rows = [i for i, p in enumerate(picks) if p == option]
        out.append(Distractor(option, texts.get(option, ""), option == item.correct, len(rows),
                              sum(1 for i in rows if i in up), sum(1 for i in rows if i in low)))
    return tuple(out)


def analyse(scores: Scores, order: tuple[str, ...] = (), kinds: dict[str, str] | None = None,
            choices: dict[str, ChoiceItem] | None = None, messages: dict[tuple[str, str], str] | None = None
            ) -> ItemAnalysis:
    """The item analysis; `order` lists the problems (default: as found), `kinds` each problem's kind,
    `choices` the choice problems' options, `messages` each misconception's text for the instructor."""
    kinds, choices, messages = {**scores.problem_kinds, **(kinds or {})}, choices or {}, messages or {}
    found = list(dict.fromkeys(p for p, _, _ in scores.columns))
    problems = [p for p in order if p in found] + [p for p in found if p not in order]
    n = len(scores.students)
    totals = scores.tests.sum(axis=1) if scores.tests.size else np.zeros(n)
    by_problem = np.zeros((n, len(problems)))
    problem_max = np.zeros(len(problems))
    where = {p: i for i, p in enumerate(problems)}
    for col, (problem, _, _) in enumerate(scores.columns):
        by_problem[:, where[problem]] += scores.tests[:, col]
        problem_max[where[problem]] += scores.test_max[col]
    upper, lower, size = groups(totals, scores.students)
    r_problems = rest_correlations(by_problem, totals) if n else np.full(len(problems), np.nan)
    problem_stats = tuple(_item_stats(p, None, kinds.get(p, ""), by_problem[:, i], float(problem_max[i]),
                                      r_problems[i], upper, lower) for i, p in enumerate(problems))
    hidden = [c for c, (problem, _, vis) in enumerate(scores.columns)
              if vis == "hidden" and KINDS[kinds.get(problem, IMPLEMENT.name)].code]
    r_tests = rest_correlations(scores.tests[:, hidden], totals) if n and hidden else np.full(len(hidden), np.nan)
    test_stats = sorted((_item_stats(scores.columns[c][0], scores.columns[c][1], "hidden test", scores.tests[:, c],
                                     float(scores.test_max[c]), r_tests[i], upper, lower)
                         for i, c in enumerate(hidden)), key=lambda s: (where[s.problem], s.test))
    distractors = {p: _distractors(choices[p], p, scores, upper, lower) for p in problems if p in choices}
    counts = tuple(sorted(
        (MisconceptionCount(p, m, messages.get((p, m), m), len(who), len(who) / n if n else 0.0)
         for (p, m), who in scores.misconceptions.items()),
        key=lambda c: (-c.students, c.problem, c.misconception)))
    return ItemAnalysis(n, scores.excluded, float(problem_max.sum()), totals, cronbach_alpha(by_problem), size,
                        problem_stats, tuple(test_stats), distractors, counts)


def _read_choice(kind: Any, problem: Any, seed: int, mode: str, student: str, answer: Any) -> str:
    return kind.chosen(problem, answer, kind.variant(problem, seed, mode, student))


def bundle_info(bundle: Any) -> tuple[tuple[str, ...], dict[str, str], dict[str, ChoiceItem], dict[tuple[str, str], str]]:
    """(order, kinds, choice items, misconception messages) of a GradingBundle."""
    kinds = {p.id: IMPLEMENT.name for p in bundle.code}
    messages = {(p.id, m): text for p in bundle.code for m, text in p.misconceptions.items()}
    code = {p.id: p for p in bundle.code}  # and a mistake upstream, as the gradebook stores it: "softmax-rows/column-softmax"
    messages.update({(p.id, f"{u}/{m}"): text for p in bundle.code for u in p.builds_on if u in code
                     for m, text in code[u].misconceptions.items()})
    choices = {}
    for written in bundle.written:
        problem = written.problem
        kinds[written.id] = problem.kind
        kind = kind_of(problem)
        options = kind.options(problem)
        if options is not None:
            read = functools.partial(_read_choice, kind, problem, bundle.seed, bundle.variants)
            choices[written.id] = ChoiceItem(problem.kind, options.ids, options.correct, options.texts, read)
    return tuple(bundle.problem_order), kinds, choices, messages
