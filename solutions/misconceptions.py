"""Named wrong implementations (NumPy), one per misconception in the bank.

The trusted grader runs them on a failed test's inputs to tell a student which
mistake their output matches; `qkv validate` checks that each one fails at
least one hidden test of its problem. Each takes the same arguments as the
reference function it imitates (solutions.numpy_ref). Never shipped to students.

Every function stands alone (it needs only the imports and assignments above the
first `def`, and `ref`), so tests can paste one into a submission in place of the
right function. Mutants that overflow on purpose silence floating-point warnings.
"""

import math
from functools import partial

import numpy as np

from . import numpy_ref as ref

_f = partial(np.asarray, dtype=float)


# ------------------------------------------------------------ attention_scores


def scores_unscaled(Q, K, scale=True):
    """Q K^T with no division by sqrt(d_k), whatever `scale` says."""
    return _f(Q) @ np.swapaxes(_f(K), -1, -2)


def scores_transposed(Q, K, scale=True):
    """K Q^T: rows are keys and columns are queries."""
    S = _f(K) @ np.swapaxes(_f(Q), -1, -2)
    return S / math.sqrt(_f(Q).shape[-1]) if scale else S


def scores_divided_by_dk(Q, K, scale=True):
    """Divides by d_k instead of sqrt(d_k)."""
    S = _f(Q) @ np.swapaxes(_f(K), -1, -2)
    return S / _f(Q).shape[-1] if scale else S


def scores_k_dot_t(Q, K, scale=True):
    """Q @ K.T: right for one matrix, but on a batch `.T` reverses every axis of K, batch axes too."""
    Q, K = _f(Q), _f(K)
    S = Q @ K.T
    return S / math.sqrt(Q.shape[-1]) if scale else S


# ---------------------------------------------------------------- softmax_rows


def softmax_over_columns(S, mask=None):
    """Normalises down each column (over the queries) instead of along each row."""
    S = _f(S)
    logits = np.where(mask, S, -np.inf) if mask is not None else S
    with np.errstate(all="ignore"):
        shifted = logits - np.max(logits, axis=-2, keepdims=True)
        e = np.exp(shifted)
        return np.nan_to_num(e / e.sum(axis=-2, keepdims=True))


def softmax_zero_after(S, mask=None):
    """Softmax over all keys, then masked weights set to 0 without renormalising."""
    weights = ref.softmax_rows(S)
    return weights if mask is None else np.where(mask, weights, 0.0)


def softmax_no_max_shift(S, mask=None):
    """exp of the raw scores (no subtraction of the row maximum): overflows for large scores."""
    S = _f(S)
    with np.errstate(all="ignore"):
        e = np.exp(S)
        if mask is not None:
            e = np.where(mask, e, 0.0)
        total = e.sum(axis=-1, keepdims=True)
        return e / np.where(total > 0, total, 1.0)


def softmax_keepdims_forgotten(S, mask=None):
    """Row maximum and row sum taken without keepdims: the (..., n) results line up with the last axis,
    so entry (i, j) is shifted by row j's maximum and divided by row j's sum (silent on square input)."""
    S = _f(S)
    logits = S if mask is None else np.where(mask, S, -np.inf)
    with np.errstate(all="ignore"):
        row_max = logits.max(axis=-1)
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        e = np.exp(logits - row_max)
        total = e.sum(axis=-1)
        return e / np.where(total > 0, total, 1.0)


def softmax_mask_minus_1e9(S, mask=None):
    """Masked scores set to -1e9 instead of -inf: right while a row has an allowed key, but a fully
    masked row is a row of equal scores and comes out uniform."""
    S = _f(S)
    logits = S if mask is None else np.where(mask, S, -1e9)
    with np.errstate(under="ignore"):
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_nan_fully_masked(S, mask=None):
    """-inf masking and the max shift with no guard: a fully masked row gives -inf - (-inf) = nan."""
    S = _f(S)
    logits = S if mask is None else np.where(mask, S, -np.inf)
    with np.errstate(all="ignore"):
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def softmax_mask_inverted(S, mask=None):
    """True read as "blocked" (PyTorch's attn_mask and key_padding_mask, or masked_fill(mask, -inf)):
    exactly the keys that were allowed are hidden."""
    return ref.softmax_rows(S, None if mask is None else ~np.asarray(mask, dtype=bool))


# ----------------------------------------------------------------- causal_mask


def causal_mask_upper(n):
    """Upper triangle: each query sees itself and the *future*."""
    return np.triu(np.ones((n, n), dtype=bool))


def causal_mask_strict(n):
    """Strictly lower triangle: a token may not attend to itself."""
    return np.tril(np.ones((n, n), dtype=bool), k=-1)


# ------------------------------------------------------------ attention_output


def output_weights_transposed(weights, V):
    """A^T V: mixes the values with the columns of the weight matrix."""
    return np.swapaxes(_f(weights), -1, -2) @ _f(V)


def output_uniform_average(weights, V):
    """Every query gets the plain average of the values (the weights are ignored)."""
    W = _f(weights)
    uniform = np.full_like(W, 1.0 / W.shape[-1])
    return uniform @ _f(V)


# ------------------------------------------------- scaled_dot_product_attention


def sdpa_unscaled(Q, K, V, mask=None, scale=True):
    """softmax(Q K^T) V: the 1/sqrt(d_k) is missing."""
    return ref.scaled_dot_product_attention(Q, K, V, mask=mask, scale=False)


def sdpa_zero_after(Q, K, V, mask=None, scale=True):
    """Masked weights are set to 0 after the softmax and the row is not renormalised."""
    weights = ref.softmax_rows(ref.attention_scores(Q, K, scale=scale))
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights @ _f(V), weights


def sdpa_column_softmax(Q, K, V, mask=None, scale=True):
    """Softmax over the queries (axis -2) instead of over the keys."""
    S = ref.attention_scores(Q, K, scale=scale)
    logits = np.where(mask, S, -np.inf) if mask is not None else S
    with np.errstate(all="ignore"):
        e = np.exp(logits - np.max(logits, axis=-2, keepdims=True))
        weights = np.nan_to_num(e / e.sum(axis=-2, keepdims=True))
    return weights @ _f(V), weights


def sdpa_scores_transposed(Q, K, V, mask=None, scale=True):
    """Scores computed as K Q^T, so rows belong to keys."""
    S = _f(K) @ np.swapaxes(_f(Q), -1, -2)
    S = S / math.sqrt(_f(Q).shape[-1]) if scale else S
    weights = ref.softmax_rows(S, mask)
    return weights @ _f(V), weights


def sdpa_scaled_after_softmax(Q, K, V, mask=None, scale=True):
    """softmax(Q K^T) / sqrt(d_k): the weights are divided after the softmax, so each row sums to 1/sqrt(d_k)."""
    weights = ref.softmax_rows(ref.attention_scores(Q, K, scale=False), mask)
    if scale:
        weights = weights / math.sqrt(_f(Q).shape[-1])
    return weights @ _f(V), weights


def sdpa_mask_inverted(Q, K, V, mask=None, scale=True):
    """True read as "blocked", as in nn.MultiheadAttention's boolean attn_mask: the allowed keys are hidden."""
    inverted = None if mask is None else ~np.asarray(mask, dtype=bool)
    return ref.scaled_dot_product_attention(Q, K, V, mask=inverted, scale=scale)


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


def ffn_biases_ignored(x, W1, b1, W2, b2):
    """ReLU(x W1) W2: both biases left out."""
    return np.maximum(_f(x) @ _f(W1), 0.0) @ _f(W2)


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

