"""Named wrong implementations of the block's parts: layer norm, feed-forward, positional encoding, add & norm.

A part of solutions.misconceptions, which says what the mutants are for and
imports these (the bank names them solutions.misconceptions.NAME). Its header is
that module's, word for word: each function stands alone with it and `ref`.
"""

import math
from functools import partial

import numpy as np

from . import numpy_ref as ref

_f = partial(np.asarray, dtype=float)


# ------------------------------------------------------------------ layer_norm


def layer_norm_unbiased(x, gamma, beta, eps=1e-5):
    """Variance divided by d - 1 (np.var with ddof=1) instead of d."""
    x = _f(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, ddof=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * _f(gamma) + _f(beta)


def layer_norm_eps_outside(x, gamma, beta, eps=1e-5):
    """eps added to the standard deviation instead of to the variance under the root."""
    x = _f(x)
    mean = x.mean(axis=-1, keepdims=True)
    std = x.std(axis=-1, keepdims=True)
    return (x - mean) / (std + eps) * _f(gamma) + _f(beta)


def layer_norm_over_tokens(x, gamma, beta, eps=1e-5):
    """Statistics taken over the tokens (axis -2) instead of over each token's features."""
    x = _f(x)
    mean = x.mean(axis=-2, keepdims=True)
    var = x.var(axis=-2, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * _f(gamma) + _f(beta)


def layer_norm_over_batch(x, gamma, beta, eps=1e-5):
    """Statistics over the first (batch) axis, as batch normalisation takes them, instead of each token's features."""
    x = _f(x)
    mean = x.mean(axis=0, keepdims=True)
    var = x.var(axis=0, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * _f(gamma) + _f(beta)


def layer_norm_no_affine(x, gamma, beta, eps=1e-5):
    """Normalises but never applies gamma and beta."""
    return ref.layer_norm(x, np.ones(np.shape(gamma)), np.zeros(np.shape(beta)), eps)


# ---------------------------------------------------------------- feed_forward


def ffn_no_relu(x, W1, b1, W2, b2):
    """Two linear layers with no activation between them."""
    return (_f(x) @ _f(W1) + _f(b1)) @ _f(W2) + _f(b2)


def ffn_relu_on_output(x, W1, b1, W2, b2):
    """An extra ReLU after the second layer, so the output can never be negative."""
    return np.maximum(ref.feed_forward(x, W1, b1, W2, b2), 0.0)


def ffn_relu_after_second(x, W1, b1, W2, b2):
    """max(0, (x W1 + b1) W2 + b2): the ReLU moved from the hidden layer to the output."""
    return np.maximum((_f(x) @ _f(W1) + _f(b1)) @ _f(W2) + _f(b2), 0.0)


def ffn_biases_ignored(x, W1, b1, W2, b2):
    """ReLU(x W1) W2: both biases left out."""
    return np.maximum(_f(x) @ _f(W1), 0.0) @ _f(W2)


# ------------------------------------------------ sinusoidal_positional_encoding


def pe_sin_cos_swapped(n, d):
    """cos in the even columns and sin in the odd ones."""
    j = np.arange(d)
    angles = np.arange(n, dtype=float)[:, None] / 10000.0 ** ((j - j % 2) / d)
    return np.where(j % 2 == 0, np.cos(angles), np.sin(angles))


def pe_exponent_i(n, d):
    """Angle p / 10000^(i/d) with i the pair number, instead of p / 10000^(2i/d)."""
    j = np.arange(d)
    angles = np.arange(n, dtype=float)[:, None] / 10000.0 ** ((j // 2) / d)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))


def pe_column_index(n, d):
    """Each column uses its own index j in the exponent, so cos columns get 2i+1 instead of 2i."""
    j = np.arange(d)
    angles = np.arange(n, dtype=float)[:, None] / 10000.0 ** (j / d)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))


def pe_positions_from_one(n, d):
    """Positions counted 1, ..., n instead of 0, ..., n-1: every row is the next position's."""
    return ref.sinusoidal_positional_encoding(n + 1, d)[1:]


# ---------------------------------------------------------------- add_and_norm


def add_norm_sublayer_normalised(x, sublayer_out, gamma, beta, eps=1e-5):
    """x + LayerNorm(sublayer_out): the sublayer's output is normalised and the sum never is.

    Neither post-norm, LN(x + F(x)), nor pre-norm, x + F(LN(x)), which normalises the sublayer's input.
    """
    return _f(x) + ref.layer_norm(sublayer_out, gamma, beta, eps)


def add_norm_no_residual(x, sublayer_out, gamma, beta, eps=1e-5):
    """LayerNorm(sublayer_out): the input x is never added back."""
    return ref.layer_norm(sublayer_out, gamma, beta, eps)


def add_norm_norm_then_add(x, sublayer_out, gamma, beta, eps=1e-5):
    """LayerNorm(x) + sublayer_out: the input is normalised before the addition."""
    return ref.layer_norm(x, gamma, beta, eps) + _f(sublayer_out)
