"""Answers of the hand calculations on the block's parts: FFN with biases, LayerNorm over a batch, residuals, positions.

Each `compute` function takes a problem's parameters and returns {part name:
value}; `feasible` functions return None for a draw a student can do by hand,
else the reason it is rejected; `..._wrong_...` twins give the answers of a
misconception (`qkv validate` checks they differ from the right answers on every
checked variant). The block's operations come from `numpy_ref`.
"""

from __future__ import annotations

import math

import numpy as np

from . import numpy_ref as ref
from .hand_calculations import few_deviations


def _f(a):
    return np.asarray(a, dtype=float)


def _whole(x) -> bool:
    return bool(np.all(np.abs(_f(x) - np.round(_f(x))) < 1e-9))


def _square(x) -> bool:
    return all(abs(round(math.sqrt(max(v, 0.0))) ** 2 - v) < 1e-9 for v in np.ravel(_f(x)))


# --------------------------------------------------------- FFN with its biases (L08 p.25-26)


def ffn_with_biases(x, W1, b1, W2, b2):
    x, W1, b1, W2, b2 = (_f(a) for a in (x, W1, b1, W2, b2))
    pre = x @ W1 + b1
    return {"pre": pre, "hidden": np.maximum(pre, 0.0), "output": ref.feed_forward(x, W1, b1, W2, b2)}


def ffn_with_biases_feasible(params, answers):
    if not (answers["pre"] < 0).any():
        return "no pre-activation is negative, so ReLU changes nothing"
    if not (answers["hidden"] > 0).any():
        return "ReLU zeroes every hidden unit"
    if not _f(params["b1"]).any() or not _f(params["b2"]).any():
        return "a bias is zero"
    twins = (ffn_with_biases_wrong_no_biases, ffn_with_biases_wrong_bias_after_relu)
    outputs = [twin(**params)["output"] for twin in twins]
    if any(np.array_equal(output, answers["output"]) for output in outputs):
        return "a wrong method gives the right output"
    if np.array_equal(*outputs):  # then the two mistakes could not be told apart
        return "leaving the biases out and adding b1 after the ReLU give the same output"
    return None


def ffn_with_biases_wrong_no_biases(x, W1, b1, W2, b2):
    """Leaves out b1 and b2."""
    pre = _f(x) @ _f(W1)
    hidden = np.maximum(pre, 0.0)
    return {"pre": pre, "hidden": hidden, "output": hidden @ _f(W2)}


def ffn_with_biases_wrong_bias_after_relu(x, W1, b1, W2, b2):
    """Adds b1 after the ReLU instead of before it."""
    pre = _f(x) @ _f(W1)
    hidden = np.maximum(pre, 0.0) + _f(b1)
    return {"pre": pre, "hidden": hidden, "output": hidden @ _f(W2) + _f(b2)}


# ------------------------------------------------- LayerNorm per token, not over the batch (L08 p.24)


def _two_tokens(x, scale, shift):
    """Token 1 is x; token 2 is x rotated by one feature, times `scale`, plus `shift` (a rearranged, rescaled token)."""
    x = _f(x)
    return np.stack([x, np.roll(x, 1) * scale + shift])


def layer_norm_batch(x, scale, shift):
    """Two tokens of four features: statistics per token (row), gamma 1, beta 0, no eps."""
    X = _two_tokens(x, scale, shift)
    d = X.shape[-1]
    return {"means": X.mean(axis=-1), "variances": X.var(axis=-1),
            "normalised": ref.layer_norm(X, np.ones(d), np.zeros(d), eps=0.0)}


def layer_norm_batch_feasible(params, answers):
    if answers["variances"][0] > 16:
        return "the first token's variance is above 16"
    if few_deviations(params["x"]):  # both tokens normalise to the same values, rearranged
        return few_deviations(params["x"])
    X = _two_tokens(**params)
    if np.any(X[0] == X[1]):
        return "a feature is the same in both tokens (its batch statistics would divide by 0)"
    return None


def layer_norm_batch_wrong_batch_axis(x, scale, shift):
    """Normalises each feature over the tokens of the batch (the batch axis), as batch normalisation does."""
    X = _two_tokens(x, scale, shift)
    mean, var = X.mean(axis=0), X.var(axis=0)
    return {"means": mean, "variances": var, "normalised": (X - mean) / np.sqrt(np.where(var > 0, var, 1.0))}


# ------------------------------------------------------------- Add & Norm of one token (L08 p.24)


def add_and_norm_by_hand(x, f):
    """Post-norm: LN(x + F(x)) with gamma 1, beta 0, no eps; f is the sublayer's output F(x)."""
    x, f = _f(x), _f(f)
    s = x + f
    mean = s.mean()
    return {"sum": s, "mean": mean, "variance": ((s - mean) ** 2).mean(),
            "normalised": ref.layer_norm(s, np.ones_like(s), np.zeros_like(s), eps=0.0)}


def add_and_norm_by_hand_feasible(params, answers):
    if answers["variance"] == 0:
        return "all features of the sum are equal"
    if answers["variance"] > 25:
        return "the variance is above 25"
    if few_deviations(_f(params["x"]) + _f(params["f"])):
        return few_deviations(_f(params["x"]) + _f(params["f"]))
    f = _f(params["f"])
    if np.all(f == f[0]):
        return "the sublayer output is constant"
    if np.all(_f(params["x"]) == 0):
        return "x is zero"
    wrong = add_and_norm_by_hand_wrong_norm_sublayer(**params)["normalised"]
    if np.allclose(wrong, answers["normalised"], atol=1e-3):
        return "normalising only the sublayer output gives the right answer"
    return None


def add_and_norm_by_hand_wrong_norm_sublayer(x, f):
    """x + LN(F(x)): normalises the sublayer's output and adds x afterwards (neither post- nor pre-norm)."""
    x, f = _f(x), _f(f)
    return {"normalised": x + ref.layer_norm(f, np.ones_like(f), np.zeros_like(f), eps=0.0)}


def add_and_norm_by_hand_wrong_no_residual(x, f):
    """Forgets the residual: LN(F(x))."""
    f = _f(f)
    mean = f.mean()
    return {"sum": f, "mean": mean, "variance": ((f - mean) ** 2).mean(),
            "normalised": ref.layer_norm(f, np.ones_like(f), np.zeros_like(f), eps=0.0)}


# ----------------------------------------------- the residual as a gradient path (Lecture 16 notes, 16.5)


def residual_gradient(a, layers):
    """A stack of `layers` scalar sublayers F(x) = a x: d(out)/d(in) without and with residual connections."""
    return {"without": a**layers, "with_residual": (1 + a) ** layers, "one_layer": 1 + a}


def residual_gradient_wrong_first_order(a, layers):
    """Adds the layers' slopes, 1 + L a, as if the products of the slopes did not appear."""
    answers = residual_gradient(a, layers)
    return {**answers, "with_residual": 1 + layers * a}


def residual_gradient_wrong_identity_plus_chain(a, layers):
    """Takes the residual gradient as the direct path plus the plain chain, 1 + a^L."""
    answers = residual_gradient(a, layers)
    return {**answers, "with_residual": 1 + a**layers}


# ------------------------------------------- adding positional vectors (L08 p.28: (1, 2) + (0.1, 0))


def add_positions(word, P):
    """The same word at positions 0 and 1; P holds the positional vectors in tenths, one row per position."""
    word, P = _f(word), _f(P) / 10
    x0, x1 = word + P[0], word + P[1]
    return {"x0": x0, "x1": x1, "dot": float(x0 @ x1), "words_dot": float(word @ word)}


def add_positions_feasible(params, answers):
    if np.array_equal(params["P"][0], params["P"][1]):
        return "the two positions have the same vector"
    if not np.any(params["P"][0]):  # then leaving positions out and giving both tokens p_0 read the same
        return "position 0's vector is zero"
    if not np.any(params["word"]):
        return "the word vector is zero"
    if abs(answers["dot"] - float(_f(params["word"]) @ _f(params["word"]))) < 1e-6:
        return "the positions do not change the score"
    return None


def add_positions_wrong_no_positions(word, P):
    """Leaves the positional vectors out: both tokens stay the word vector."""
    word = _f(word)
    return {"x0": word, "x1": word, "dot": float(word @ word)}


def add_positions_wrong_same_position(word, P):
    """Gives both tokens the vector of position 0."""
    word, P = _f(word), _f(P) / 10
    x = word + P[0]
    return {"x0": x, "x1": x, "dot": float(x @ x)}


# -------------------------------------------------- numbers stated by true/false follow-ups


def constant_token_follow_up():
    """LayerNorm (gamma 2, beta 0.5, eps 1e-5) of the constant token (3, 3, 3, 3): every entry is beta."""
    out = ref.layer_norm(np.full(4, 3.0), np.full(4, 2.0), np.full(4, 0.5))
    return float(out[0])
