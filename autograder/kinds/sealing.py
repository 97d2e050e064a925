"""Sealing the self-check's answers: each kind's self-check data holds `Seal`s; `derive_seals` turns them into tags.

A seal stands for one answer (a right one, or a named mistake's) under the scrypt key of its
cell and salt (qkv_runtime.sealed); numbers also carry their exact values, sealed under that
key, so the checker can apply the grader's own tolerance once a typed answer finds the cell.
Every distinct key of a release is derived once, in threads, at the end of the build.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

import numpy as np

from autograder.kinds.base import CLASS
from qkv_runtime import sealed


class Seal:
    """A placeholder in the self-check data: the tag (and, for numbers, the sealed exact values) of one
    answer under the key of `password` and `salt`, derived later with all the others (`derive_seals`)."""

    __slots__ = ("password", "salt", "label", "values")

    def __init__(self, password: str, salt: str, label: str, values: Optional[list[float]] = None) -> None:
        self.password, self.salt, self.label, self.values = password, salt, label, values

    def render(self, key: bytes) -> Any:
        if self.values is None:
            return sealed.tag(key, self.label)
        return {"tag": sealed.tag(key, self.label), "sealed": sealed.seal(key, self.label, self.values)}


def _seals(value: Any) -> list[Seal]:
    if isinstance(value, Seal):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _seals(v)]
    if isinstance(value, list):
        return [s for v in value for s in _seals(v)]
    return []


def _rendered(value: Any, keys: dict[tuple[str, str], bytes]) -> Any:
    if isinstance(value, Seal):
        return value.render(keys[value.password, value.salt])
    if isinstance(value, dict):
        return {k: _rendered(v, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [_rendered(v, keys) for v in value]
    return value


def derive_seals(data: Any, params: dict[str, Any], workers: Optional[int] = None) -> Any:
    """`data` with every Seal replaced by its tag and sealed values: each distinct key derived once, in
    threads (hashlib.scrypt releases the GIL: 2 cores derive twice as many keys a second). The keys are
    a function of their inputs alone, so the result is the same however the work is spread."""
    wanted = list(dict.fromkeys((s.password, s.salt) for s in _seals(data)))
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(wanted) < 2:
        keys = [sealed.derive_key(p, s, params) for p, s in wanted]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            keys = list(pool.map(lambda ps: sealed.derive_key(ps[0], ps[1], params), wanted))
    return _rendered(data, dict(zip(wanted, keys)))


def number_seals(salt: Callable[[str], str], values: Any, mode: str, sizes: list[float], label: str) -> list[Seal]:
    """The seals of `values` in their cells: one for the whole part, or one per entry.

    `salt(suffix)` gives the salt of the part ("") or of entry i ("[i]").
    """
    values = np.asarray(values, dtype=float)
    flat = [float(x) for x in values.reshape(-1)]
    ks = [sealed.cell_index(x, size) for x, size in zip(flat, sizes)]
    if mode == "whole":
        return [Seal(sealed.cell_password(sizes, values.shape, ks), salt(""), label, flat)]
    return [Seal(sealed.cell_password([size], (), [k]), salt(f"[{i}]"), label, [x])
            for i, (x, size, k) in enumerate(zip(flat, sizes, ks))]


def answer_seal(assignment: str, problem: str, canonical: str, label: str) -> Seal:
    """Shapes, true/false and choice ids are the same for every student (only numbers vary per student):
    one class-wide key each, a student's own salt would cost the build a key per student and hide nothing."""
    return Seal(sealed.answer_password(canonical), sealed.digest_salt(assignment, CLASS, problem, "answer"), label)




def class_answer(assignment: str, problem_id: str, canonical: str) -> dict[str, dict[str, Any]]:
    """The self-check data of a right answer that is the same for everyone."""
    return {CLASS: {"answer": answer_seal(assignment, problem_id, canonical, "right")}}


def class_mistakes(assignment: str, problem_id: str, mistakes: list[tuple[str, str]]) -> dict[str, list[dict[str, Any]]]:
    """The self-check data of named mistakes ((message, canonical answer) pairs) the same for everyone."""
    return {CLASS: [{"message": message, "digests": {"answer": answer_seal(assignment, problem_id, c, "mistake")}}
                    for message, c in mistakes]}
