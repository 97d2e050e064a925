"""Answers of the hand-calculation (numeric) problems, computed from their parameters with the references.

Each `compute` function takes a problem's parameters and returns {part name:
value}; each `feasible` function returns None for a draw that a student can do
by hand, else the reason it is rejected. Wrong-method twins (named `..._wrong_...`)
give the answers of a misconception.
"""

from __future__ import annotations

import numpy as np

from solutions import numpy_ref as ref


def one_query_attention(q, K, V):
    q, K, V = (np.asarray(a, dtype=float) for a in (q, K, V))
    scores = K @ q
    weights = ref.softmax_rows(scores)
    scaled_weights = ref.softmax_rows(scores / np.sqrt(q.shape[-1]))
    return {"scores": scores, "weights": weights, "output": weights @ V, "scaled_weights": scaled_weights}


def one_query_attention_feasible(params, answers):
    scores = answers["scores"]
    if len(set(scores.tolist())) < len(scores):
        return "scores are not distinct"
    if np.abs(scores).max() > 12:
        return "a score is larger than 12"
    return None


def one_query_attention_wrong_no_shift(q, K, V):
    """Weights taken as scores divided by their sum (no exponential)."""
    answers = one_query_attention(q, K, V)
    s = answers["scores"]
    total = s.sum() if s.sum() != 0 else 1.0
    return {**answers, "weights": s / total, "scaled_weights": s / total}
