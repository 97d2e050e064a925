"""`qkv validate`'s checks of a numeric problem: a problem in, 'field: reason' findings and a summary of its draws out.

The lecture's figures are reproduced; 200 variants are drawn (each must be feasible and
keep the problem's `by_hand` rules, which the generator enforces, so a rule no draw can
keep shows up as an infeasible problem) with at least 50 different answers; every rule
names a quantity `compute` gives; the tables the rules promise and the counting base of
each position part are printed in the prompt; and every misconception's wrong method
differs from the right answers, and from every other misconception's on the parts it gets
wrong, on every variant; an `admissible` test refuses only draws the full check refuses. `draws` keeps the 200 variants for the summary validate prints.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autograder.kinds.items import Variant
from autograder.kinds.numeric.by_hand import spread_report, table_markdown
from autograder.kinds.numeric.parts import close
from autograder.kinds.numeric.render import render_prompt
from autograder.kinds.numeric.stream import IntegerStream
from autograder.kinds.numeric.variants import (InfeasibleProblem, draw_parameter, draw_variant, lecture_variant,
                                               rejection)
from autograder.kinds.resolve import resolve
from autograder.memo import Memo
from qkv_runtime import judge

VARIANTS_CHECKED = 200  # drawn by `qkv validate` for each parameterised problem
# per-student numbers are a student's own only if few others share them: with 50 variants a class of 200
# has about 4 students per variant, and no one can look the answers up in a short list
MIN_VARIANTS = 50
ADMISSIBLE_CHECKED = 2000  # draws on which an `admissible` test is held to refuse only what the full check refuses
_DRAWN: Memo[list[Variant]] = Memo(1024)


def draws(problem) -> list[Variant]:
    """The variants of seeds 0 to 199 (remembered: validate checks them, then summarises them)."""
    return _DRAWN.get((problem,), lambda: [draw_variant(problem, seed) for seed in range(VARIANTS_CHECKED)])


def checked_variants(problem) -> list[Variant]:
    """What validate checks: the 200 draws, or the lecture's example without parameters; none when the
    problem cannot be drawn at all (a compute that raises, no feasible draw), which its own checks report."""
    try:
        return draws(problem) if problem.parameters else [lecture_variant(problem)]
    except Exception:  # noqa: BLE001 - the bank's compute functions are the instructor's code
        return []


@dataclass(frozen=True)
class DrawSummary:
    problem_id: str
    variants: int
    answers: int  # different answers among the variants: what students could share, as the variety check counts
    rules: str
    spread: str


def summary(problem) -> DrawSummary | None:
    """How varied and how workable the 200 checked variants are, for validate's table; None without parameters."""
    if not problem.parameters:
        return None
    variants = checked_variants(problem)
    if not variants:
        return None
    rules = problem.by_hand
    named = [] if rules is None else [f"{k}" for k, v in rules.model_dump(exclude_defaults=True).items() if v]
    spread = spread_report(rules, [v.quantities for v in variants]) if rules is not None else ""
    return DrawSummary(problem.id, len(variants), different_answers(variants), ", ".join(named), spread)


def different_answers(drawn: list[Variant]) -> int:
    """How many different answers the variants have. Answers, not parameters, are what students share: a parameter
    the answer ignores adds no variant (142 parameter sets were 47 answers)."""
    return len({repr([np.round(np.asarray(a, dtype=float), 9).tolist() for _, a in sorted(v.answers.items())])
                for v in drawn})


def _variety_findings(drawn: list[Variant]) -> list[str]:
    answers = different_answers(drawn)
    if answers >= MIN_VARIANTS:
        return []
    return [f"parameters: only {answers} different answers in {len(drawn)} draws; per-student numbers need "
            f"at least {MIN_VARIANTS} (students could share the few answers): widen the ranges or choices"]


def _lecture_findings(problem, variant: Variant) -> list[str]:
    out = []
    parts = {p.name: p for p in problem.parts}
    for name, figure in problem.lecture_example.expected.items():
        if name not in parts:
            out.append(f"lecture_example.expected.{name}: no part of that name")
            continue
        got, want = variant.answers[name], np.asarray(figure, dtype=float)
        tol = parts[name].tolerance
        if not judge.close(got, want, tol.abs, tol.rel):
            out.append(f"lecture_example.expected.{name}: computed {np.round(got, 6).tolist()} "
                       f"but the file says {want.tolist()}")
    return out


def _rule_findings(problem, sample: Variant, prompt: str) -> list[str]:
    rules = problem.by_hand
    if rules is None:
        return ["by_hand: a problem with parameters says what makes its variants workable by hand "
                "(whole numbers, fractions, a table, a spread ...)"]
    out = [f"by_hand: no quantity {name!r} (compute gives {', '.join(sorted(sample.quantities))})"
           for name in sorted(rules.quantities()) if name not in sample.quantities]
    if not out and rules.tables and table_markdown(rules, sample.quantities) not in prompt:
        out.append("prompt: the by_hand tables are not printed: put {{ tables }} in the prompt")
    return out


def _position_findings(problem, prompt: str) -> list[str]:
    out = []
    for part in problem.parts:
        if part.form == "position" and not any(f"{word} from {part.base}" in prompt for word in ("counting", "counted")):
            out.append(f"parts.{part.name}: the prompt must say the position is counted from {part.base} "
                       f"(\"counting from {part.base}\")")
    return out


def _twin_findings(problem, variants: list[Variant]) -> list[str]:
    for wrong in problem.misconceptions:
        twin = resolve(wrong.compute)
        for variant in variants:
            answers = twin(**variant.params)
            # indistinguishable when every part it gives is within that part's grading tolerance
            if all(close(np.asarray(answers[p.name], dtype=float), variant.answers[p.name], p.tolerance)
                   for p in problem.parts if p.name in answers):
                return [f"misconceptions.{wrong.id}: gives the right answer for {variant.params}"]
    return []


def _wrong_parts(problem, variant: Variant, answers: dict) -> dict[str, np.ndarray]:
    """{part: a misconception's answer} where it is not within the part's tolerance of the right one."""
    parts = {}
    for part in problem.parts:
        if part.name in answers:
            value = np.asarray(answers[part.name], dtype=float)
            if value.shape != np.shape(variant.answers[part.name]) or not close(value, variant.answers[part.name],
                                                                                 part.tolerance):
                parts[part.name] = value
    return parts


def _overlap_findings(problem, variants: list[Variant]) -> list[str]:
    # the grader names the misconception that explains the most wrong parts (qkv_runtime.diagnosis.written_mistakes):
    # it cannot tell A from B when B gives A's answer on every part A gets wrong
    tolerances = {p.name: p.tolerance for p in problem.parts}
    for variant in variants:
        wrong = {m.id: _wrong_parts(problem, variant, resolve(m.compute)(**variant.params))
                 for m in problem.misconceptions}
        for a, mine in wrong.items():
            for b, theirs in wrong.items():
                if a != b and mine and all(name in theirs and theirs[name].shape == value.shape
                                           and close(theirs[name], value, tolerances[name])
                                           for name, value in mine.items()):
                    return [f"misconceptions.{a}: {b} gives the same answer on every part {a} gets wrong, for "
                            f"{variant.params}: a student who makes one mistake would be told the other; change "
                            f"the numbers (feasible) or the misconceptions so that they differ"]
    return []


def _admissible_findings(problem) -> list[str]:
    """An `admissible` test that refused a draw the full check accepts would change every student's numbers and
    leave variants out: on ADMISSIBLE_CHECKED draws, each draw it refuses is refused by feasible or by_hand too."""
    if not problem.admissible or not problem.parameters:
        return []
    admissible = resolve(problem.admissible)
    stream = IntegerStream(0)
    for _ in range(ADMISSIBLE_CHECKED):
        params = {name: draw_parameter(spec, stream) for name, spec in problem.parameters.items()}
        refused = admissible(**params)
        if refused is not None and rejection(problem, params)[0] is None:
            return [f"admissible: refuses {params} ({refused}), which feasible and by_hand accept: it may refuse "
                    "only draws they refuse too"]
    return []


def numeric_findings(problem, render_findings) -> list[str]:
    found: list[str] = []
    variants: list[Variant] = []
    if problem.lecture_example is not None:
        variants.append(lecture_variant(problem))
        found += _lecture_findings(problem, variants[0])
    if problem.parameters:
        try:
            drawn = draws(problem)
        except InfeasibleProblem as err:
            return found + [f"parameters: {err}"]
        variants += drawn
        try:
            prompt = render_prompt(problem, drawn[0])
        except Exception:  # noqa: BLE001 - reported by render_findings below
            prompt = ""
        found += _rule_findings(problem, drawn[0], prompt)
    found += _admissible_findings(problem) + _twin_findings(problem, variants) + _overlap_findings(problem, variants)
    for variant in variants[:3]:
        found += [f for f in render_findings(problem, variant) if f not in found]
        try:
            found += [f for f in _position_findings(problem, render_prompt(problem, variant)) if f not in found]
        except Exception:  # noqa: BLE001 - a template that does not render is reported above
            pass
    # how many variants there are matters once the draws themselves are sound: one finding at a time
    return found or (_variety_findings(variants[-VARIANTS_CHECKED:]) if problem.parameters else [])
