"""Named wrong implementations (NumPy), one per misconception in the bank.

The trusted grader runs them on a failed test's inputs to tell a student which
mistake their output matches; `qkv validate` checks that each one fails at
least one hidden test of its problem. Each takes the same arguments as the
reference function it imitates (solutions.numpy_ref). Never shipped to students.

This module holds the attention topic's (scores, softmax and its derivatives,
masks, scaled dot-product attention); the other topics' live in
misconceptions_heads, misconceptions_blocks and misconceptions_architecture, and
are imported here at the end: the bank names every one solutions.misconceptions.NAME.

Every function stands alone (it needs only the imports and assignments above the
first `def`, and `ref`), so tests can paste one into a submission in place of the
right function. Each part opens with this module's header, word for word, so
either header serves any mutant. Mutants that overflow on purpose silence
floating-point warnings.
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


def softmax_over_axis_0(S, mask=None):
    """np.exp(S) / np.exp(S).sum(axis=0): the first axis, which is the queries of one score matrix but the batch
    (or the heads) of a stack of them."""
    S = _f(S)
    moved = None if mask is None else np.moveaxis(np.broadcast_to(mask, S.shape), 0, -1)
    return np.moveaxis(ref.softmax_rows(np.moveaxis(S, 0, -1), moved), -1, 0)


def softmax_over_axis_1(S, mask=None):
    """axis=1: the keys of one score matrix, but the queries of a batch (b, n, m) and the heads of (b, h, n, m)."""
    S = _f(S)
    moved = None if mask is None else np.moveaxis(np.broadcast_to(mask, S.shape), 1, -1)
    return np.moveaxis(ref.softmax_rows(np.moveaxis(S, 1, -1), moved), -1, 1)


def softmax_over_whole_table(S, mask=None):
    """np.exp(S) / np.exp(S).sum(): one softmax over every entry, so the whole table sums to 1, not each row."""
    S = _f(S)
    logits = np.where(mask, S, -np.inf) if mask is not None else S
    with np.errstate(all="ignore"):
        e = np.exp(logits - np.max(logits))
        return np.nan_to_num(e / e.sum())


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


def sdpa_keys_as_values(Q, K, V, mask=None, scale=True):
    """weights @ K: the keys read out as if they were the values (the lecture's "the key is the value")."""
    weights = ref.softmax_rows(ref.attention_scores(Q, K, scale=scale), mask)
    return weights @ _f(K), weights


def sdpa_reads_only_itself(Q, K, V, mask=None, scale=True):
    """Weight 1 on the query's own position and 0 elsewhere: "self-attention" read as a token attending to itself."""
    n_q, n_k = _f(Q).shape[-2], _f(K).shape[-2]
    weights = np.broadcast_to(np.eye(n_q, n_k), (*np.broadcast_shapes(_f(Q).shape[:-2], _f(K).shape[:-2]), n_q, n_k))
    return weights @ _f(V), weights


# ---------------------------------------------------------------- padding_mask


def padding_mask_true_on_padding(lengths, n):
    """True on the padding, as PyTorch's key_padding_mask has it, instead of on the real tokens."""
    return ~ref.padding_mask(lengths, n)


def padding_mask_one_too_many(lengths, n):
    """j <= length: the first padding position passes as a real token."""
    return np.arange(n) <= np.asarray(lengths)[..., None]


def padding_mask_transposed(lengths, n):
    """Positions down the rows and sequences across the columns: (n, b) instead of (b, n)."""
    return np.arange(n)[:, None] < np.asarray(lengths)


# ------------------------------------------------------------ softmax_jacobian


def jacobian_diagonal_only(S):
    """Only the diagonal a_i (1 - a_i): each weight treated as depending on its own score alone."""
    a = ref.softmax_rows(S)
    return (a * (1 - a))[..., :, None] * np.eye(a.shape[-1])


def jacobian_sign_flipped(S):
    """a a^T - diag(a): the Jacobian with the wrong sign."""
    a = ref.softmax_rows(S)
    return a[..., :, None] * a[..., None, :] - a[..., :, None] * np.eye(a.shape[-1])


def jacobian_of_scores(S):
    """diag(s) - s s^T: the formula applied to the scores instead of the softmax weights."""
    s = _f(S)
    return s[..., :, None] * np.eye(s.shape[-1]) - s[..., :, None] * s[..., None, :]


def jacobian_no_max_shift(S):
    """Softmax of the raw scores (no max shift) before the formula: nan for large scores."""
    S = _f(S)
    with np.errstate(all="ignore"):
        e = np.exp(S)
        a = e / e.sum(axis=-1, keepdims=True)
        return a[..., :, None] * np.eye(a.shape[-1]) - a[..., :, None] * a[..., None, :]


# ------------------------------------------------------------ softmax_backward


def softmax_backward_keepdims_forgotten(S, dA, mask=None):
    """The row sum taken without keepdims: it lines up with the last axis, so column j gets row j's sum
    (silent on square scores)."""
    A = ref.softmax_rows(S, mask)
    dA = _f(dA)
    return A * (dA - (dA * A).sum(axis=-1))


def softmax_backward_sigmoid(S, dA, mask=None):
    """dA * A * (1 - A): softmax differentiated as if elementwise, like a sigmoid; the coupling term is lost."""
    A = ref.softmax_rows(S, mask)
    return _f(dA) * A * (1 - A)


def softmax_backward_over_queries(S, dA, mask=None):
    """The sum taken down each column (over the queries) instead of along each row."""
    A = ref.softmax_rows(S, mask)
    dA = _f(dA)
    return A * (dA - (dA * A).sum(axis=-2, keepdims=True))


def softmax_backward_mask_ignored(S, dA, mask=None):
    """The weights recomputed without the mask, so masked scores get gradient and every row is off."""
    A = ref.softmax_rows(S)
    dA = _f(dA)
    return A * (dA - (dA * A).sum(axis=-1, keepdims=True))


# The other topics' mutants, under the names the bank gives them. Imported last, below every `def`: the header
# above the first one is what a pasted mutant gets, and a relative import there would not run in a submission.
from .misconceptions_architecture import *  # noqa: E402,F401,F403
from .misconceptions_blocks import *  # noqa: E402,F401,F403
from .misconceptions_heads import *  # noqa: E402,F401,F403
