"""Test inputs: an `ArgSpec` from a problem file in, the concrete value (array or scalar) out.

Random specs are seeded, so a spec always gives the same numbers on every
machine: hidden tests are data, not code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autograder.kinds.model import ArgSpec, ArrayLiteral, CausalMask, RandomArray, TestCase


def materialize(spec: ArgSpec) -> Any:
    if isinstance(spec, RandomArray):
        return _random_array(spec)
    if isinstance(spec, CausalMask):
        return np.tril(np.ones((spec.causal_mask, spec.causal_mask), dtype=bool))
    if isinstance(spec, ArrayLiteral):
        return np.asarray(spec.array, dtype=spec.dtype)
    return spec


def _random_array(spec: RandomArray) -> np.ndarray:
    rng = np.random.default_rng(spec.seed)
    shape = tuple(spec.shape)
    if spec.random == "normal":
        return (rng.standard_normal(shape) * spec.scale).astype(spec.dtype)
    if spec.random == "uniform":
        return rng.uniform(spec.low, spec.high, shape).astype(spec.dtype)
    if spec.random == "ints":
        return rng.integers(int(spec.low), int(spec.high) + 1, shape).astype(spec.dtype)
    mask = rng.random(shape) < spec.keep
    if spec.ensure_key and mask.ndim and mask.shape[-1]:
        # a row with no allowed key is a separate, deliberate test case, never an accident of the draw
        first = rng.integers(0, mask.shape[-1], mask.shape[:-1])
        np.put_along_axis(mask, first[..., None], True, axis=-1)
    return mask


def call_arguments(test: TestCase) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return tuple(materialize(a) for a in test.args), {k: materialize(v) for k, v in test.kwargs.items()}
