"""Variants of parameterised problems: a problem, a seed and (optionally) a student id in, numbers and answers out.

Answers are always computed by the problem's `compute` reference from the drawn
parameters, never typed in. The draw is derived from a hash of
(seed, student, problem id), so it is the same on every machine and for every
stage (build, grade, self-check, exam) that asks for it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from autograder.kinds.items import Variant
from autograder.kinds.model import ChoiceParam, IntParam
from autograder.kinds.numeric.model import NumericProblem
from autograder.kinds.numeric.stream import IntegerStream
from autograder.kinds.resolve import resolve

MAX_DRAWS = 5000
DRAWS_PER_VARIANT = 4  # small parameter spaces may not have K distinct variants: stop looking after 4K draws


class InfeasibleProblem(ValueError):
    pass


def variant_seed(seed: int, student: str | None, problem_id: str) -> int:
    digest = hashlib.sha256(f"{seed}\x1f{student or ''}\x1f{problem_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def draw_parameter(spec: IntParam | ChoiceParam, stream: IntegerStream) -> Any:
    if isinstance(spec, ChoiceParam):
        return spec.choice[stream.integer(0, len(spec.choice) - 1)]
    return stream.integers(spec.range[0], spec.range[1], spec.ints)


def compute_quantities(problem: NumericProblem, params: dict[str, Any]) -> dict[str, np.ndarray]:
    """Everything `compute` gives, as arrays; a position part counted from 1 is shifted here, once."""
    raw = resolve(problem.compute)(**params)
    quantities = {name: np.asarray(value, dtype=float) for name, value in raw.items()}
    for part in problem.parts:
        if part.form == "position":
            quantities[part.name] = quantities[part.name] + part.base
    return quantities


def lecture_variant(problem: NumericProblem) -> Variant:
    assert problem.lecture_example is not None
    params = dict(problem.lecture_example.params)
    quantities = compute_quantities(problem, params)
    return Variant(problem.id, params, {p.name: quantities[p.name] for p in problem.parts}, "lecture", quantities)


def rejection(problem: NumericProblem, params: dict[str, Any]) -> tuple[str | None, dict[str, np.ndarray]]:
    """Why a draw's parameters make no variant (None when they make one), and what `compute` gave for them."""
    with np.errstate(all="ignore"):  # a degenerate draw (0/0) is rejected below, not warned about
        quantities = compute_quantities(problem, params)
    answers = {part.name: quantities[part.name] for part in problem.parts}
    if not all(np.isfinite(a).all() for a in answers.values()):  # (the method: a third of np.all's time)
        return "an answer is not finite", quantities
    reason = resolve(problem.feasible)(params, answers) if problem.feasible else None
    if reason is None and problem.by_hand is not None:
        reason = problem.by_hand.broken(quantities, [part.name for part in problem.parts])
    return reason, quantities


def draw_variant(problem: NumericProblem, seed: int, student: str | None = None) -> Variant:
    """A fresh, feasible variant; problems without parameters always give the lecture's example."""
    if not problem.parameters:
        return lecture_variant(problem)
    stream = IntegerStream(variant_seed(seed, student, problem.id))
    # most draws of a problem workable by hand are refused; refusing them from the parameters alone, before the
    # reference computes them, keeps drawing a student's numbers cheap enough to do on every attempt
    admissible = resolve(problem.admissible) if problem.admissible else None
    last_reason: str | None = "no draw was tried"
    for _ in range(MAX_DRAWS):
        params = {name: draw_parameter(spec, stream) for name, spec in problem.parameters.items()}
        last_reason = admissible(**params) if admissible else None
        if last_reason is None:
            last_reason, quantities = rejection(problem, params)
        if last_reason is None:
            answers = {part.name: quantities[part.name] for part in problem.parts}
            return Variant(problem.id, params, answers, f"seed:{seed}/{student or ''}", quantities)
    raise InfeasibleProblem(f"no feasible parameters in {MAX_DRAWS} draws (last rejection: {last_reason})")


def distinct_variants(problem: NumericProblem, seed: int, count: int) -> list[Variant]:
    """Up to `count` variants with different parameters (problems without parameters have one)."""
    if not problem.parameters:
        return [draw_variant(problem, seed)]
    found: dict[str, Variant] = {}
    for n in range(count * DRAWS_PER_VARIANT):
        variant = draw_variant(problem, seed, f"lms-variant-{n + 1}")
        found.setdefault(repr(sorted(variant.params.items())), variant)
        if len(found) == count:
            break
    return list(found.values())


_DRAWN: dict[tuple[int, int, str | None], tuple[NumericProblem, Variant]] = {}
MAX_REMEMBERED = 50_000


def variant_for(problem: NumericProblem, seed: int, mode: str, student: str | None) -> Variant:
    """The variant a student gets under an assignment's `variants:` mode ("same" or "per_student").

    Remembered: grading a class asks for the same class-wide variant once per student."""
    who = student if mode == "per_student" else None
    key = (id(problem), seed, who)
    cached = _DRAWN.get(key)
    if cached is not None and cached[0] is problem:
        return cached[1]
    variant = draw_variant(problem, seed, who)
    if len(_DRAWN) >= MAX_REMEMBERED:
        _DRAWN.clear()
    _DRAWN[key] = (problem, variant)
    return variant
