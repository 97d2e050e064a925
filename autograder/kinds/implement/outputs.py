"""Our own functions run on a test's inputs: a reference or mutant and a `TestCase` in, its outputs out.

Used in the trusted process only (validate, build). How outputs are judged
(`compare`, `select`) is the portable runtime's, the same for every route.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from autograder.kinds.implement.inputs import call_arguments
from autograder.kinds.model import TestCase, Track
from qkv_runtime.values import to_arrays, to_track

Outputs = tuple[np.ndarray, ...]


def as_outputs(value: Any) -> Outputs:
    """A function's return value as a tuple of numeric arrays (tensors detached, pairs split)."""
    arrays = to_arrays(value)
    if isinstance(arrays, str):
        raise TypeError(arrays)
    return tuple(arrays)


def run_trusted(function: Callable[..., Any], test: TestCase, track: Track = "numpy") -> Outputs:
    """Run one of *our* functions (reference, mutant) on a test's inputs in this process."""
    args, kwargs = call_arguments(test)
    # a mutant dividing 0 by 0 on purpose is not news; its NaN output is what gets compared
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = function(*(to_track(a, track) for a in args), **{k: to_track(v, track) for k, v in kwargs.items()})
    return as_outputs(result)


def literal_outputs(expect: Any) -> Outputs:
    """A test's `expect:` figure, compared with the selected output (`output: first` for a pair)."""
    return (np.asarray(expect, dtype=float),)
