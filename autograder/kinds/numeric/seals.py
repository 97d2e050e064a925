"""A numeric problem's self-check data: its parts' right answers and its misconceptions' wrong ones, sealed
per student under keys of their cells (kinds/sealing.py); never an answer in clear.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.kinds.base import CLASS, Build
from autograder.kinds.items import Variant
from autograder.kinds.numeric.model import AnswerPart, NumericProblem
from autograder.kinds.numeric.parts import close
from autograder.kinds.numeric.variants import variant_for
from autograder.kinds.resolve import resolve
from autograder.kinds.sealing import Seal, derive_seals, number_seals
from qkv_runtime import sealed
from qkv_runtime.answers import symbol_values


def numeric_part_plan(salt: Callable[[str], str], want: Any, part: AnswerPart,
                      wrong: list[Any]) -> tuple[dict[str, Any], list[list[Seal] | None]]:
    """One part for one student: its mode, cell sizes and the seals of the right answer, and of each
    wrong answer in `wrong` (None where a wrong answer has another shape or is within tolerance)."""
    want = np.asarray(want, dtype=float)
    tol = part.tolerance
    mode, sizes = sealed.part_plan(want, tol.abs, tol.rel, part.decimals)
    entry = {"mode": mode, "cells": sizes, "right": number_seals(salt, want, mode, sizes, "right")}
    wrong_seals: list[list[Seal] | None] = []
    for j, value in enumerate(wrong):
        value = None if value is None else np.asarray(value, dtype=float)
        if value is None or value.size != want.size or close(value.reshape(want.shape), want, tol):
            wrong_seals.append(None)  # another shape, or not a mistake for these numbers
        else:
            wrong_seals.append(number_seals(salt, value.reshape(want.shape), mode, sizes, f"mistake{j}"))
    return entry, wrong_seals


def numeric_part_data(salt: Callable[[str], str], want: Any, part: AnswerPart, wrong: list[Any],
                      params: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[Any]]:
    """`numeric_part_plan` with its keys derived: the part's data as selfcheck.json holds it."""
    entry, wrong_seals = numeric_part_plan(salt, want, part, wrong)
    return derive_seals([entry, wrong_seals], params or sealed.kdf_params())


def shown_symbols(problem: NumericProblem, variant: Variant) -> dict[str, int]:
    """The whole-number parameters the student's prompt prints as themselves (`{{ d }}`, `{{ n | fmt }}`): those
    an answer may name, and all selfcheck.json may hold in clear. One the prompt only computes with (a scale
    inside the matrix it prints) is the student's to find, not to read in the release."""
    import jinja2  # a build dependency, as in render.py

    printed = set()
    for output in jinja2.Environment().parse(problem.prompt).find_all(jinja2.nodes.Output):
        for node in output.nodes:
            while isinstance(node, jinja2.nodes.Filter) and node.node is not None:
                node = node.node
            if isinstance(node, jinja2.nodes.Name):
                printed.add(node.name)
    return {name: value for name, value in symbol_values(variant.params).items() if name in printed}


def numeric_data(problem: NumericProblem, assignment: Build, students: list[str]) -> dict[str, Any]:
    parts = problem.parts
    digests: dict[str, dict[str, Any]] = {}
    shapes: dict[str, list[int]] = {}
    wrong: dict[str, list[dict[str, Any]]] = {}
    symbols: dict[str, dict[str, int]] = {}  # in clear, as the student's prompt shows them
    for student in students:
        variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants,
                              None if student == CLASS else student)
        mistakes = [resolve(m.compute)(**variant.params) for m in problem.misconceptions]
        symbols[student] = shown_symbols(problem, variant)
        digests[student] = {}
        found: list[dict[str, list[Seal]]] = [{} for _ in mistakes]
        for part in parts:
            want = variant.answers[part.name]
            shapes[part.name] = list(np.shape(want))
            salt = lambda suffix, p=part.name: sealed.digest_salt(  # noqa: E731
                assignment.name, student, problem.id, p + suffix)
            entry, wrong_parts = numeric_part_plan(salt, want, part, [m.get(part.name) for m in mistakes])
            digests[student][part.name] = entry
            for i, d in enumerate(wrong_parts):
                if d is not None:
                    found[i][part.name] = d
        wrong[student] = [{"message": m.message, "label": f"mistake{j}", "digests": f}
                          for j, (m, f) in enumerate(zip(problem.misconceptions, found)) if f]
    return {
        "parts": [{"name": p.name, "label": p.label, "shape": shapes[p.name],
                   "tolerance": p.tolerance.model_dump()} for p in parts],
        "digests": digests,
        "misconceptions": wrong,
        "symbols": symbols,
    }
