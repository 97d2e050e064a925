"""Named wrong implementations of the multi-head functions: split and merge heads, multi-head and GQA.

A part of solutions.misconceptions, which says what the mutants are for and
imports these (the bank names them solutions.misconceptions.NAME). Its header is
that module's, word for word: each function stands alone with it and `ref`.
"""

import math
from functools import partial

import numpy as np

from . import numpy_ref as ref

_f = partial(np.asarray, dtype=float)


# ------------------------------------------------------- split_heads, merge_heads


def split_heads_over_tokens(X, h):
    """Splits the tokens into h groups: (..., h, n/h, d) instead of (..., h, n, d/h)."""
    X = _f(X)
    *lead, n, d = X.shape
    return X.reshape(*lead, h, n // h, d)


def split_heads_plain_reshape(X, h):
    """Reshapes (..., n, d) straight to (..., h, n, d/h) without the transpose."""
    X = _f(X)
    *lead, n, d = X.shape
    if d % h != 0:
        raise ValueError("h must divide d")
    return X.reshape(*lead, h, n, d // h)


def split_heads_interleaved(X, h):
    """Head i gets features i, i+h, i+2h, ... instead of one contiguous block."""
    X = _f(X)
    *lead, n, d = X.shape
    if d % h != 0:
        raise ValueError("h must divide d")
    return np.moveaxis(X.reshape(*lead, n, d // h, h), -1, -3)


def merge_heads_plain_reshape(H):
    """Reshapes (..., h, n, d_h) straight to (..., n, h*d_h) without moving the head axis."""
    H = _f(H)
    *lead, h, n, dh = H.shape
    return H.reshape(*lead, n, h * dh)


def merge_heads_along_tokens(H):
    """Stacks the heads one after another along the token axis: (..., h*n, d_h)."""
    H = _f(H)
    *lead, h, n, dh = H.shape
    return H.reshape(*lead, h * n, dh)


# -------------------------------------------------------- multi_head_attention


def mha_scaled_by_sqrt_d(X, Wq, Wk, Wv, Wo, h, mask=None):
    """Each head's scores divided by sqrt(d) (the model width) instead of sqrt(d/h)."""
    X = _f(X)
    Q, K, V = (ref.split_heads(X @ _f(W), h) for W in (Wq, Wk, Wv))
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
    S = Q @ np.swapaxes(K, -1, -2) / math.sqrt(X.shape[-1])
    return ref.merge_heads(ref.softmax_rows(S, head_mask) @ V) @ _f(Wo)


def mha_without_wo(X, Wq, Wk, Wv, Wo, h, mask=None):
    """Heads concatenated but the output projection W_O never applied."""
    X = _f(X)
    Q, K, V = (ref.split_heads(X @ _f(W), h) for W in (Wq, Wk, Wv))
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
    S = Q @ np.swapaxes(K, -1, -2) / math.sqrt(X.shape[-1] // h)
    return ref.merge_heads(ref.softmax_rows(S, head_mask) @ V)


def mha_plain_reshape(X, Wq, Wk, Wv, Wo, h, mask=None):
    """Heads formed by a plain reshape to (h, n, d/h), without the transpose."""
    X = _f(X)
    *lead, n, d = X.shape
    if d % h != 0:
        raise ValueError("h must divide d")
    Q, K, V = ((X @ _f(W)).reshape(*lead, h, n, d // h) for W in (Wq, Wk, Wv))
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
    S = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d // h)
    return ref.merge_heads(ref.softmax_rows(S, head_mask) @ V) @ _f(Wo)


# ----------------------------------------------------- grouped_query_attention


def gqa_groups_interleaved(X, Wq, Wk, Wv, Wo, h, kv_heads, mask=None):
    """Query head i paired with key/value head i % kv_heads (the stack tiled) instead of i // (h / kv_heads)."""
    X = _f(X)
    if kv_heads < 1 or h % kv_heads != 0:
        raise ValueError("kv_heads must divide h")
    Q = ref.split_heads(X @ _f(Wq), h)
    K = np.concatenate([ref.split_heads(X @ _f(Wk), kv_heads)] * (h // kv_heads), axis=-3)
    V = np.concatenate([ref.split_heads(X @ _f(Wv), kv_heads)] * (h // kv_heads), axis=-3)
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
    heads, _ = ref.scaled_dot_product_attention(Q, K, V, mask=head_mask)
    return ref.merge_heads(heads) @ _f(Wo)


def gqa_scaled_by_sqrt_d(X, Wq, Wk, Wv, Wo, h, kv_heads, mask=None):
    """Each head's scores divided by sqrt(d) (the model width) instead of sqrt(d/h)."""
    X = _f(X)
    if kv_heads < 1 or h % kv_heads != 0:
        raise ValueError("kv_heads must divide h")
    Q = ref.split_heads(X @ _f(Wq), h)
    K = np.repeat(ref.split_heads(X @ _f(Wk), kv_heads), h // kv_heads, axis=-3)
    V = np.repeat(ref.split_heads(X @ _f(Wv), kv_heads), h // kv_heads, axis=-3)
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
    S = Q @ np.swapaxes(K, -1, -2) / math.sqrt(X.shape[-1])
    return ref.merge_heads(ref.softmax_rows(S, head_mask) @ V) @ _f(Wo)


def gqa_without_wo(X, Wq, Wk, Wv, Wo, h, kv_heads, mask=None):
    """Heads concatenated but the output projection W_O never applied."""
    X = _f(X)
    d = X.shape[-1]
    return ref.grouped_query_attention(X, Wq, Wk, Wv, np.eye(d), h, kv_heads, mask)
