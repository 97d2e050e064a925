"""Copying signals, for the instructor only (never in a student's feedback): answers and code in, flags out.

1. Numbers that are someone else's. With per-student variants every student computes with their own
   numbers, so a written answer that matches another student's numbers and not one's own is evidence:
   for students s and t, `fits_other` counts the numeric parts s answered that are right for t's numbers
   and wrong for s's, `fits_own` the reverse. s is flagged with the t that maximises `fits_other`
   when `fits_other >= MIN_PARTS` and `fits_other > fits_own`. Comparison is the grader's own
   (qkv_runtime.answers.parse_numbers, each part's tolerance).
2. Code that is unusually similar once the stub is ignored: copydetect's winnowed fingerprints
   (k = NOISE characters of filtered code: names become V, strings S, whitespace and comments go), the
   stub's fingerprints removed as boilerplate, a window of 1 (every k-gram kept, so the figures do not
   depend on Python's per-process hash seed). A pair is flagged when the larger of its two
   similarities (the share of each file's fingerprinted code found in the other) is at least the
   threshold. Flagged pairs get a side-by-side view with the shared code marked.
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np

from qkv_runtime.answers import AnswerFormatError, parse_numbers

MIN_PARTS = 3
NOISE = 25
CODE_THRESHOLD = 0.9
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
    similarity: float  # the larger of the two
    shares: tuple[float, float]  # of a's code found in b, of b's found in a
    tokens: int  # characters of filtered code they share
    a_html: str = ""  # the code, HTML-escaped, shared parts in <mark>
    b_html: str = ""


@dataclass(frozen=True)
class CodeReport:
    pairs: tuple[CodePair, ...]  # at or above the threshold, most similar first
    threshold: float
    compared: int  # pairs compared
    above: dict[float, int]  # pairs at or above each of LEVELS
    highest: tuple[CodePair, ...]  # the most similar pairs, flagged or not (for calibration)
    skipped: tuple[str, ...] = ()  # students whose code was not compared, and why


# ------------------------------------------------------------------ numbers


def _typed(problem: Any, answer: Any, part: str) -> Any:
    if len(problem.parts) == 1 and not isinstance(answer, dict):
        return answer
    return answer.get(part) if isinstance(answer, dict) else None


def _parsed(value: Any) -> Optional[np.ndarray]:
    if value is None or value == "":
        return None
    try:
        return np.asarray(parse_numbers(value), dtype=float)
    except (AnswerFormatError, TypeError, ValueError, OverflowError):
        return None


def answer_flags(students: list[str], answers: Mapping[str, Mapping[str, Any]], problems: list[Any], seed: int,
                 min_parts: int = MIN_PARTS) -> list[AnswerFlag]:
    """`problems`: the per-student numeric problems (bank NumericProblems with parameters)."""
    from autograder.bank.variants import variant_for

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
                rows = [i for i, g in enumerate(got) if g is not None and g.size == size]
                if not rows:
                    continue
                truth = np.stack([want[j].reshape(-1) for j in columns])  # (c, size)
                typed = np.stack([got[i].reshape(-1) for i in rows])  # (r, size)
                tol = part.tolerance.abs + part.tolerance.rel * np.abs(truth)[None, :, :]
                close = np.all(np.abs(typed[:, None, :] - truth[None, :, :]) <= tol, axis=-1)
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


def code_pairs(codes: Mapping[str, str], stub: str, threshold: float = CODE_THRESHOLD, keep: int = 10) -> CodeReport:
    """Every pair of `codes` (student -> Python source) compared, the stub's lines ignored."""
    from copydetect import compare_files
    from copydetect.utils import highlight_overlap

    stub_hashes = np.array(sorted(_fingerprint(stub, np.array([])).hashes)) if stub.strip() else np.array([])
    prints, skipped = {}, []
    for student, code in sorted(codes.items()):
        if len(code) > MAX_CODE_CHARS:
            skipped.append(f"{student}: {len(code):,} characters, more than {MAX_CODE_CHARS:,}: not compared")
        elif code.strip():
            prints[student] = _fingerprint(code, stub_hashes)
    found: list[CodePair] = []
    compared = 0
    above = {level: 0 for level in LEVELS}
    for (a, fa), (b, fb) in itertools.combinations(prints.items(), 2):
        compared += 1
        if not fa.hashes or not fb.hashes or fa.hashes.isdisjoint(fb.hashes):
            found.append(CodePair(a, b, 0.0, (0.0, 0.0), 0))
            continue
        tokens, shares, _ = compare_files(fa, fb)
        similarity = float(max(shares))
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
                      tuple(skipped))
