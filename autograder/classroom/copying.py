"""Copying signals, for the instructor only (never in a student's feedback): answers and code in, flags out.

1. Numbers that are someone else's. With per-student variants every student computes with their own
   numbers, so a written answer that matches another student's numbers and not one's own is evidence:
   for students s and t, `fits_other` counts the numeric parts s answered that are right for t's numbers
   and wrong for s's, `fits_own` the reverse. s is flagged with the t that maximises `fits_other`
   when `fits_other >= MIN_PARTS` and `fits_other > fits_own`. Comparison is the grader's own
   (qkv_runtime.answers.parse_numbers, judge.within with each part's tolerance).
2. Code that is unusually similar once the stub and the class's common code are ignored: copydetect's
   fingerprints (k = NOISE characters of filtered code: names become V, strings S, whitespace and comments
   go; a window of 1, every k-gram kept, so the figures do not depend on Python's per-process hash seed).
   Not evidence, and removed from both files before anything is measured: the stub's fingerprints (the
   release's starter code), and the class's common ones, those in at least COMMON_SHARE of the compared
   files and in at least COMMON_MIN_FILES of them (MOSS's default: a passage in more than ten programs is
   ignored). Half a class writing the same thing is an idiom or the lecture's code, not one student taking
   another's; the floor keeps a small class's copying ring (three of six files) from counting as an idiom.
   Removed from both files, as the stub is, so a copy scores as high whatever share of it is idiom.
   A pair's similarity is the smaller of its two shares (share: how much of a file's fingerprinted code is
   found in the other), i.e. the share of the larger file found in the smaller, the coverage form of
   |A n B| / max(|A|, |B|). It is symmetric and a big file cannot game it: a file holding everyone's code
   (a "kitchen sink") is mostly code no one else has, so its share in each student is small, and padding a
   copy only lowers the copy's own score. The containment |A n B| / min(|A|, |B|) this replaces made one
   92 kB file score 1.0 with every student. A pair is flagged at the threshold, with a side-by-side view.
   What a large file holding most of others' code still says is reported once, against that file: a
   container is a file in which at least the threshold of another's code is found while the pair is
   below it; it is listed with whose code it holds. That is a reason to look at the container (how did it
   come to hold their code?), not a flag on the students whose code it holds, and it keeps a padded copy
   in view. One file changes each fingerprint's count of files by one, so it can tip only fingerprints
   already at the common cutoff into not counting; it never adds shared code to another pair.
"""

from __future__ import annotations

import ast
import io
import itertools
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np

from qkv_runtime import judge
from qkv_runtime.answers import AnswerFormatError, parse_numbers

MIN_PARTS = 3
NOISE = 25
CODE_THRESHOLD = 0.9
COMMON_SHARE = 0.5  # of the compared files
COMMON_MIN_FILES = 10
MAX_CODE_CHARS = 200_000  # larger files are not compared (and are named in the report)
LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class AnswerFlag:
    student: str
    other: str
    fits_other: int
    fits_own: int
    answered: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class CodePair:
    a: str
    b: str
    similarity: float  # the smaller of the two shares
    shares: tuple[float, float]  # of a's code found in b, of b's found in a
    tokens: int  # characters of filtered code they share
    a_html: str = ""  # the code, HTML-escaped, shared parts in <mark>
    b_html: str = ""


@dataclass(frozen=True)
class Container:
    student: str  # whose file holds at least the threshold of each of `holds`' code
    holds: tuple[str, ...]  # most of whose code is found in it, the largest share first
    shares: tuple[float, ...]  # of each one's code found in it
    own_shares: tuple[float, ...]  # of its code found in each one's


@dataclass(frozen=True)
class CodeReport:
    pairs: tuple[CodePair, ...]  # at or above the threshold, most similar first
    threshold: float
    compared: int  # pairs compared
    above: dict[float, int]  # pairs at or above each of LEVELS
    highest: tuple[CodePair, ...]  # the most similar pairs, flagged or not (for calibration)
    skipped: tuple[str, ...] = ()  # students whose code was not compared, and why
    containers: tuple[Container, ...] = ()  # files holding most of others' code, the most held first
    common: int = 0  # fingerprints common to the class, not counted


# ------------------------------------------------------------------ numbers


def _typed(problem: Any, answer: Any, part: str) -> Any:
    return judge.part_of(answer, part, len(problem.parts) == 1)


def _parsed(value: Any) -> Optional[np.ndarray]:
    if judge.blank(value):
        return None
    try:
        return np.asarray(parse_numbers(value), dtype=float)
    except (AnswerFormatError, TypeError, ValueError, OverflowError):
        return None


def answer_flags(students: list[str], answers: Mapping[str, Mapping[str, Any]], problems: list[Any], seed: int,
                 min_parts: int = MIN_PARTS) -> list[AnswerFlag]:
    """`problems`: the per-student numeric problems (bank NumericProblems with parameters)."""
    from autograder.kinds.numeric.variants import variant_for

    n = len(students)
    fits_other = np.zeros((n, n), dtype=np.int32)
    fits_own = np.zeros((n, n), dtype=np.int32)
    answered = np.zeros(n, dtype=np.int32)
    labels: list[tuple[str, np.ndarray]] = []  # the part of each comparison, kept for the evidence
    for problem in problems:
        truths = [variant_for(problem, seed, "per_student", s).answers for s in students]
        for part in problem.parts:
            want = [np.asarray(t[part.name], dtype=float) for t in truths]
            got = [_parsed(_typed(problem, answers.get(s, {}).get(problem.id), part.name)) for s in students]
            match = np.zeros((n, n), dtype=bool)
            for size in {w.size for w in want}:
                columns = [j for j, w in enumerate(want) if w.size == size]
                present = [(i, g) for i, g in enumerate(got) if g is not None and g.size == size]
                if not present:
                    continue
                rows = [i for i, _ in present]
                truth = np.stack([want[j].reshape(-1) for j in columns])  # (c, size)
                typed = np.stack([g.reshape(-1) for _, g in present])  # (r, size)
                close = np.all(judge.within(typed[:, None, :], truth[None, :, :], part.tolerance.abs,
                                            part.tolerance.rel), axis=-1)
                match[np.ix_(rows, columns)] = close
            own = np.diag(match).copy()
            answered += np.array([g is not None for g in got], dtype=np.int32)
            other_only = match & ~own[:, None]
            own_only = own[:, None] & ~match
            fits_other += other_only
            fits_own += own_only
            labels.append((f"{problem.id}.{part.name}", other_only))
    np.fill_diagonal(fits_other, 0)
    flags = []
    for i, student in enumerate(students):
        if n < 2:
            break
        j = int(np.argmax(fits_other[i]))
        a, b = int(fits_other[i, j]), int(fits_own[i, j])
        if a >= min_parts and a > b:
            evidence = tuple(label for label, other_only in labels if other_only[i, j])
            flags.append(AnswerFlag(student, students[j], a, b, int(answered[i]), evidence))
    return sorted(flags, key=lambda f: (-f.fits_other, f.student))


# --------------------------------------------------------------------- code


def _fingerprint(code: str, boilerplate: np.ndarray):
    from copydetect import CodeFingerprint

    return CodeFingerprint("submission.py", NOISE, 1, boilerplate=boilerplate, fp=io.StringIO(code))


def _common(prints: Mapping[str, Any]) -> set[int]:
    cutoff = max(COMMON_MIN_FILES, math.ceil(COMMON_SHARE * len(prints)))
    counts = Counter(h for p in prints.values() for h in p.hashes)
    return {h for h, files in counts.items() if files >= cutoff}


def _containers(found: list[CodePair], threshold: float) -> tuple[Container, ...]:
    held: dict[str, list[tuple[float, float, str]]] = {}
    for p in found:
        if p.similarity < threshold <= max(p.shares):
            # shares[0] is a's code found in b: when it is the large one, b holds a
            if p.shares[0] >= p.shares[1]:
                held.setdefault(p.b, []).append((p.shares[0], p.shares[1], p.a))
            else:
                held.setdefault(p.a, []).append((p.shares[1], p.shares[0], p.b))
    out = []
    for student, rows in held.items():
        rows.sort(key=lambda r: (-r[0], r[2]))
        out.append(Container(student, tuple(r[2] for r in rows), tuple(r[0] for r in rows), tuple(r[1] for r in rows)))
    return tuple(sorted(out, key=lambda c: (-len(c.holds), c.student)))


def without_answers(code: str) -> str:
    """`code` without its statements that fill in ANSWERS: written answers are compared by the answer signal,
    and in a class given one set of numbers everyone's right answers are alike, which in a notebook (a cell per
    answer) outweighs the code once the written part grows. Code that does not parse is kept whole."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code
    drop: set[int] = set()
    for statement in tree.body:
        targets = (statement.targets if isinstance(statement, ast.Assign)
                   else [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:
            named = target.value if isinstance(target, ast.Subscript) else target
            if isinstance(named, ast.Name) and named.id == "ANSWERS":
                drop.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return "\n".join(line for number, line in enumerate(code.split("\n"), 1) if number not in drop)


def code_pairs(codes: Mapping[str, str], stub: str, threshold: float = CODE_THRESHOLD, keep: int = 10) -> CodeReport:
    """Every pair of `codes` (student -> Python source) compared, the stub's and the class's common code ignored."""
    from copydetect import compare_files
    from copydetect.utils import highlight_overlap

    stub = without_answers(stub)
    codes = {student: without_answers(code) if len(code) <= MAX_CODE_CHARS else code for student, code in codes.items()}
    stub_hashes = set(_fingerprint(stub, np.array([])).hashes) if stub.strip() else set()
    ignored = np.array(sorted(stub_hashes))
    prints, skipped = {}, []
    for student, code in sorted(codes.items()):
        if len(code) > MAX_CODE_CHARS:
            skipped.append(f"{student}: {len(code):,} characters, more than {MAX_CODE_CHARS:,}: not compared")
        elif code.strip():
            prints[student] = _fingerprint(code, ignored)
    common = _common(prints)
    if common:
        ignored = np.array(sorted(stub_hashes | common))
        prints = {s: _fingerprint(codes[s], ignored) if fp.hashes & common else fp for s, fp in prints.items()}
    found: list[CodePair] = []
    compared = 0
    above = {level: 0 for level in LEVELS}
    for (a, fa), (b, fb) in itertools.combinations(prints.items(), 2):
        compared += 1
        if not fa.hashes or not fb.hashes or fa.hashes.isdisjoint(fb.hashes):
            found.append(CodePair(a, b, 0.0, (0.0, 0.0), 0))
            continue
        tokens, shares, _ = compare_files(fa, fb)
        similarity = float(min(shares))
        for level in LEVELS:
            above[level] += similarity >= level
        found.append(CodePair(a, b, similarity, (float(shares[0]), float(shares[1])), int(tokens)))
    found.sort(key=lambda p: (-p.similarity, p.a, p.b))
    flagged = []
    for pair in (p for p in found if p.similarity >= threshold):
        _, _, (slices_a, slices_b) = compare_files(prints[pair.a], prints[pair.b])
        a_html, _ = highlight_overlap(prints[pair.a].raw_code, slices_a, "<mark>", "</mark>", escape_html=True)
        b_html, _ = highlight_overlap(prints[pair.b].raw_code, slices_b, "<mark>", "</mark>", escape_html=True)
        flagged.append(CodePair(pair.a, pair.b, pair.similarity, pair.shares, pair.tokens, a_html, b_html))
    return CodeReport(tuple(flagged), threshold, compared, above, tuple(found[:max(keep, len(flagged))]),
                      tuple(skipped), _containers(found, threshold), len(common))
