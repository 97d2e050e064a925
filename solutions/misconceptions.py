"""Named wrong implementations (NumPy), one per misconception in the bank.

The trusted grader runs them on a failed test's inputs to tell a student which
mistake their output matches. Never shipped to students.
"""

from __future__ import annotations

import numpy as np

from solutions import numpy_ref as ref


def softmax_over_columns(S, mask=None):
    """Normalises down each column (over the queries) instead of along each row."""
    S = np.asarray(S, dtype=float)
    logits = np.where(mask, S, -np.inf) if mask is not None else S
    shifted = logits - np.max(logits, axis=-2, keepdims=True)
    e = np.exp(shifted)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num(e / e.sum(axis=-2, keepdims=True))


def softmax_zero_after(S, mask=None):
    """Softmax over all keys, then masked weights set to 0 without renormalising."""
    weights = ref.softmax_rows(S)
    return weights if mask is None else np.where(mask, weights, 0.0)
