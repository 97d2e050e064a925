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


# ------------------------------------------------------- encoder_decoder_masks


def masks_causal_encoder(src_lengths, tgt_lengths, n_src, n_tgt):
    """A causal mask in the encoder as well: the encoder reads the whole source in both directions."""
    encoder, decoder, cross = ref.encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt)
    return encoder & ref.causal_mask(n_src), decoder, cross


def masks_decoder_not_causal(src_lengths, tgt_lengths, n_src, n_tgt):
    """The decoder's self-attention hides the padding but not the future."""
    encoder, decoder, cross = ref.encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt)
    keys = ref.padding_mask(tgt_lengths, n_tgt)[..., None, :]
    return encoder, np.broadcast_to(keys, decoder.shape).copy(), cross


def masks_causal_cross(src_lengths, tgt_lengths, n_src, n_tgt):
    """Cross-attention made causal (target i reads source j <= i only); the decoder may read the whole source."""
    encoder, decoder, cross = ref.encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt)
    return encoder, decoder, cross & np.tril(np.ones((n_tgt, n_src), dtype=bool))


def masks_padding_on_queries(src_lengths, tgt_lengths, n_src, n_tgt):
    """Padding hides rows (queries) instead of columns (keys)."""
    src = ref.padding_mask(src_lengths, n_src)[..., :, None]
    tgt = ref.padding_mask(tgt_lengths, n_tgt)[..., :, None]
    encoder = np.broadcast_to(src, (*src.shape[:-2], n_src, n_src)).copy()
    decoder = ref.causal_mask(n_tgt) & tgt
    cross = np.broadcast_to(tgt, (*tgt.shape[:-2], n_tgt, n_src)).copy()
    return encoder, decoder, cross


def masks_causal_or_padding(src_lengths, tgt_lengths, n_src, n_tgt):
    """Decoder keys allowed when either rule allows them (causal OR real) instead of both."""
    encoder, _, cross = ref.encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt)
    keys = ref.padding_mask(tgt_lengths, n_tgt)[..., None, :]
    return encoder, ref.causal_mask(n_tgt) | keys, cross


# ------------------------------------------------------------- cross_attention


def cross_queries_from_encoder(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    """Roles swapped: queries from the encoder, keys and values from the decoder."""
    X_dec, X_enc = _f(X_dec), _f(X_enc)
    return ref.scaled_dot_product_attention(X_enc @ _f(Wq), X_dec @ _f(Wk), X_dec @ _f(Wv), mask=mask)


def cross_self_attention(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    """Keys and values from the decoder too: self-attention over the target, the source never read."""
    X = _f(X_dec)
    return ref.scaled_dot_product_attention(X @ _f(Wq), X @ _f(Wk), X @ _f(Wv))


def cross_causal(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    """A causal mask added to cross-attention: target position i reads source tokens j <= i only."""
    n_dec, n_enc = _f(X_dec).shape[-2], _f(X_enc).shape[-2]
    causal = np.tril(np.ones((n_dec, n_enc), dtype=bool))
    return ref.cross_attention(X_dec, X_enc, Wq, Wk, Wv, causal if mask is None else causal & np.asarray(mask, dtype=bool))


def cross_unscaled(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    """Scores not divided by sqrt(d_k)."""
    X_dec, X_enc = _f(X_dec), _f(X_enc)
    return ref.scaled_dot_product_attention(X_dec @ _f(Wq), X_enc @ _f(Wk), X_enc @ _f(Wv), mask=mask, scale=False)


# ----------------------------------------------------------------- pool_tokens


def pool_mean_over_padding(H, mask=None, method="mean"):
    """The plain mean over all n positions, padding included."""
    H = _f(H)
    return H[..., 0, :] if method == "cls" else H.mean(axis=-2)


def pool_divided_by_length(H, mask=None, method="mean"):
    """Padding zeroed, but the sum divided by the padded length n instead of the number of real tokens."""
    H = _f(H)
    if method == "cls":
        return H[..., 0, :]
    keep = np.ones(H.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    return np.where(keep[..., None], H, 0.0).sum(axis=-2) / H.shape[-2]


def pool_nan_on_empty(H, mask=None, method="mean"):
    """Sum of the real tokens over their count with no guard: a sequence of padding only gives 0/0 = nan."""
    H = _f(H)
    if method == "cls":
        return H[..., 0, :]
    keep = np.ones(H.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    with np.errstate(all="ignore"):
        return np.where(keep[..., None], H, 0.0).sum(axis=-2) / keep.sum(axis=-1, keepdims=True)


def pool_count_not_broadcast(H, mask=None, method="mean"):
    """(b, d) sums divided by a (b,) count, which lines up with the features instead of the sequences."""
    H = _f(H)
    if method == "cls":
        return H[..., 0, :]
    keep = np.ones(H.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    return np.where(keep[..., None], H, 0.0).sum(axis=-2) / np.maximum(keep.sum(axis=-1), 1)


def pool_cls_last(H, mask=None, method="mean"):
    """The "cls" vector read from the last position instead of position 0, where [CLS] is prepended."""
    if method == "cls":
        return _f(H)[..., -1, :]
    return ref.pool_tokens(H, mask, method)


# -------------------------------------------------------------- kv_cache_bytes


def kv_bytes_keys_only(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    """The keys only: the cache holds the values as well (the factor 2 is missing)."""
    return layers * batch * n * kv_heads * (d // h) * bytes_per_value


def kv_bytes_query_heads(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    """One cached key/value head per query head, whatever kv_heads says: the MHA figure for every layer type."""
    return 2 * layers * batch * n * d * bytes_per_value


def kv_bytes_full_width_heads(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    """Every key/value head as wide as the model (kv_heads * d) instead of d/h."""
    return 2 * layers * batch * n * kv_heads * d * bytes_per_value


def kv_bytes_entries(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    """A count of numbers, not bytes: bytes_per_value never applied."""
    return 2 * layers * batch * n * kv_heads * (d // h)


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


# ---------------------------------------------------------------- decoder_step


def step_attends_before_appending(x, K_cache, V_cache, Wq, Wk, Wv):
    """Attention over the old cache only, so the new token never reads itself; the caches are updated afterwards."""
    x = _f(x)
    out, _ = ref.scaled_dot_product_attention(x @ _f(Wq), _f(K_cache), _f(V_cache))
    K = np.concatenate([_f(K_cache), x @ _f(Wk)], axis=-2)
    V = np.concatenate([_f(V_cache), x @ _f(Wv)], axis=-2)
    return out, K, V


def step_first_causal_row(x, K_cache, V_cache, Wq, Wk, Wv):
    """Row 0 of the training-time causal mask applied to the new token: it reads token 0 only."""
    x = _f(x)
    K = np.concatenate([_f(K_cache), x @ _f(Wk)], axis=-2)
    V = np.concatenate([_f(V_cache), x @ _f(Wv)], axis=-2)
    out, _ = ref.scaled_dot_product_attention(x @ _f(Wq), K, V, mask=ref.causal_mask(K.shape[-2])[:1])
    return out, K, V


def step_prepends_new_token(x, K_cache, V_cache, Wq, Wk, Wv):
    """The new key and value put in front of the cache: the output is right, the cache order is not."""
    x = _f(x)
    K = np.concatenate([x @ _f(Wk), _f(K_cache)], axis=-2)
    V = np.concatenate([x @ _f(Wv), _f(V_cache)], axis=-2)
    out, _ = ref.scaled_dot_product_attention(x @ _f(Wq), K, V)
    return out, K, V


def step_cache_not_updated(x, K_cache, V_cache, Wq, Wk, Wv):
    """The right output, but the caches handed back as they came, without the new key and value."""
    out, _, _ = ref.decoder_step(x, K_cache, V_cache, Wq, Wk, Wv)
    return out, _f(K_cache), _f(V_cache)


def step_unscaled(x, K_cache, V_cache, Wq, Wk, Wv):
    """Scores of the new query not divided by sqrt(d_k)."""
    x = _f(x)
    K = np.concatenate([_f(K_cache), x @ _f(Wk)], axis=-2)
    V = np.concatenate([_f(V_cache), x @ _f(Wv)], axis=-2)
    out, _ = ref.scaled_dot_product_attention(x @ _f(Wq), K, V, scale=False)
    return out, K, V


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


# --------------------------------------------------------------- encoder_layer


def encoder_layer_pre_norm(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None):
    """Pre-norm, Y = X + MHA(LN1(X)) and Y + FFN(LN2(Y)), where the post-norm layer was asked for."""
    X = _f(X)
    Y = X + ref.multi_head_attention(ref.layer_norm(X, gamma1, beta1), Wq, Wk, Wv, Wo, h, mask)
    return Y + ref.feed_forward(ref.layer_norm(Y, gamma2, beta2), W1, b1, W2, b2)


def encoder_layer_no_residual(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None):
    """LN1(MHA(X)) and LN2(FFN(Y)): neither sublayer's input is added back."""
    Y = ref.layer_norm(ref.multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask), gamma1, beta1)
    return ref.layer_norm(ref.feed_forward(Y, W1, b1, W2, b2), gamma2, beta2)


def encoder_layer_ffn_first(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None):
    """The feed-forward sublayer before the attention sublayer."""
    Y = ref.add_and_norm(X, ref.feed_forward(X, W1, b1, W2, b2), gamma1, beta1)
    return ref.add_and_norm(Y, ref.multi_head_attention(Y, Wq, Wk, Wv, Wo, h, mask), gamma2, beta2)
