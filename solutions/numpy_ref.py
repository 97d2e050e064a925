"""NumPy reference implementation of Transformer building blocks.

Takes array-likes (lists, tuples or ``np.ndarray``) and gives ``np.ndarray``.
Row-vector convention throughout (``Q = X @ Wq``), and every function accepts
leading batch dimensions. Masks are boolean with True meaning "may attend".
``solutions.torch_ref`` mirrors this module function for function.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "attention_scores",
    "softmax_rows",
    "causal_mask",
    "attention_output",
    "scaled_dot_product_attention",
    "layer_norm",
    "add_and_norm",
    "feed_forward",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "sinusoidal_positional_encoding",
    "padding_mask",
    "encoder_decoder_masks",
    "cross_attention",
    "pool_tokens",
    "softmax_jacobian",
    "softmax_backward",
    "decoder_step",
    "grouped_query_attention",
    "encoder_layer",
]


def _float_array(a: ArrayLike) -> NDArray[np.floating]:
    # Keep float32 inputs float32; only integer/bool inputs are promoted.
    arr = np.asarray(a)
    return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


def attention_scores(Q: ArrayLike, K: ArrayLike, scale: bool = True) -> NDArray[np.floating]:
    """Q (..., n_q, d_k), K (..., n_k, d_k) -> Q K^T (..., n_q, n_k), / sqrt(d_k) if ``scale``."""
    Q, K = _float_array(Q), _float_array(K)
    S = Q @ np.swapaxes(K, -1, -2)
    return S / math.sqrt(Q.shape[-1]) if scale else S


def softmax_rows(S: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
    """Softmax over the last axis; masked entries get weight exactly 0.

    ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
    with no allowed entry gives all zeros, without NaN or floating-point warnings.
    """
    S = _float_array(S)
    logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
    row_max = logits.max(axis=-1, keepdims=True)
    # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    # Far-below-max logits underflow to 0, which is the correct weight; without this
    # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
    with np.errstate(under="ignore"):
        e = np.exp(logits - row_max)
    total = e.sum(axis=-1, keepdims=True)
    # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
    return e / np.where(total > 0, total, 1.0)


def causal_mask(n: int) -> NDArray[np.bool_]:
    """(n, n) boolean mask, True where key index <= query index."""
    return np.tril(np.ones((n, n), dtype=bool))


def attention_output(weights: ArrayLike, V: ArrayLike) -> NDArray[np.floating]:
    """weights (..., n_q, n_k), V (..., n_k, d_v) -> weights @ V (..., n_q, d_v)."""
    return _float_array(weights) @ _float_array(V)


def scaled_dot_product_attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = None,
    scale: bool = True,
) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
    """softmax(Q K^T / sqrt(d_k)) V; returns (output (..., n_q, d_v), weights (..., n_q, n_k))."""
    weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
    return attention_output(weights, V), weights


def layer_norm(x: ArrayLike, gamma: ArrayLike, beta: ArrayLike, eps: float = 1e-5) -> NDArray[np.floating]:
    """Normalise over the last axis (biased variance), then scale by gamma and shift by beta."""
    x = _float_array(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * _float_array(gamma) + _float_array(beta)


def add_and_norm(
    x: ArrayLike,
    sublayer_out: ArrayLike,
    gamma: ArrayLike,
    beta: ArrayLike,
    eps: float = 1e-5,
) -> NDArray[np.floating]:
    """Post-norm residual of the original Transformer: layer_norm(x + sublayer_out)."""
    return layer_norm(_float_array(x) + _float_array(sublayer_out), gamma, beta, eps)


def feed_forward(
    x: ArrayLike,
    W1: ArrayLike,
    b1: ArrayLike,
    W2: ArrayLike,
    b2: ArrayLike,
) -> NDArray[np.floating]:
    """Position-wise FFN: relu(x @ W1 + b1) @ W2 + b2."""
    hidden = np.maximum(_float_array(x) @ _float_array(W1) + _float_array(b1), 0.0)
    return hidden @ _float_array(W2) + _float_array(b2)


def split_heads(X: ArrayLike, h: int) -> NDArray[np.floating]:
    """(..., n, d) -> (..., h, n, d/h); head i gets features i*d/h:(i+1)*d/h of every token."""
    X = _float_array(X)
    *lead, n, d = X.shape
    if h < 1 or d % h != 0:
        raise ValueError(f"number of heads h={h} must be a positive divisor of the model dimension d={d}")
    # Reshaping the feature axis (not the token axis) keeps every token in every head.
    return np.swapaxes(X.reshape(*lead, n, h, d // h), -3, -2)


def merge_heads(H: ArrayLike) -> NDArray[np.floating]:
    """(..., h, n, d_h) -> (..., n, h*d_h): concatenate the heads along the features."""
    H = _float_array(H)
    *lead, h, n, dh = H.shape
    return np.swapaxes(H, -3, -2).reshape(*lead, n, h * dh)


def multi_head_attention(
    X: ArrayLike,
    Wq: ArrayLike,
    Wk: ArrayLike,
    Wv: ArrayLike,
    Wo: ArrayLike,
    h: int,
    mask: ArrayLike | None = None,
) -> NDArray[np.floating]:
    """Multi-head self-attention of X (..., n, d) with d x d projections; returns (..., n, d).

    Each head uses scores scaled by sqrt(d/h). ``mask`` is broadcastable to
    (..., n, n) (no head axis) and is applied to every head.
    """
    X = _float_array(X)
    Q = split_heads(X @ _float_array(Wq), h)
    K = split_heads(X @ _float_array(Wk), h)
    V = split_heads(X @ _float_array(Wv), h)
    # A new head axis in front of (n, n) lets one mask serve every head.
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
    heads, _ = scaled_dot_product_attention(Q, K, V, mask=head_mask)
    return merge_heads(heads) @ _float_array(Wo)


def sinusoidal_positional_encoding(n: int, d: int) -> NDArray[np.float64]:
    """(n, d) float64: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same angle).

    For odd d the last column is a sine.
    """
    positions = np.arange(n, dtype=np.float64)[:, None]
    even_columns = np.arange(0, d, 2, dtype=np.float64)
    angles = positions / 10000.0 ** (even_columns / d)
    pe = np.empty((n, d), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)
    # With odd d there is one fewer cosine column than sine columns.
    pe[:, 1::2] = np.cos(angles[:, : d // 2])
    return pe


def padding_mask(lengths: ArrayLike, n: int) -> NDArray[np.bool_]:
    """lengths (...,) -> (..., n) boolean, True at positions 0..length-1 (real tokens), False on padding.

    ValueError for a length below 0 or above n.
    """
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > n):
        raise ValueError(f"every length must lie between 0 and n={n}")
    return np.arange(n) < lengths[..., None]


def encoder_decoder_masks(
    src_lengths: ArrayLike, tgt_lengths: ArrayLike, n_src: int, n_tgt: int
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    """The three masks of an encoder-decoder Transformer for a padded batch (lengths (b,)).

    Encoder self-attention (b, n_src, n_src): every query may read every real source token.
    Decoder self-attention (b, n_tgt, n_tgt): causal and real target tokens only.
    Cross-attention (b, n_tgt, n_src): every target query may read every real source token.
    Padding queries are not masked: their rows are computed and later ignored.
    """
    # A key axis in front of which the query axis broadcasts: padding hides keys (columns), never queries.
    src_keys = padding_mask(src_lengths, n_src)[..., None, :]
    tgt_keys = padding_mask(tgt_lengths, n_tgt)[..., None, :]
    lead = src_keys.shape[:-2]
    encoder = np.broadcast_to(src_keys, (*lead, n_src, n_src)).copy()
    decoder = causal_mask(n_tgt) & tgt_keys
    cross = np.broadcast_to(src_keys, (*lead, n_tgt, n_src)).copy()
    return encoder, decoder, cross


def cross_attention(
    X_dec: ArrayLike,
    X_enc: ArrayLike,
    Wq: ArrayLike,
    Wk: ArrayLike,
    Wv: ArrayLike,
    mask: ArrayLike | None = None,
) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
    """Queries from the decoder, keys and values from the encoder.

    X_dec (..., n_dec, d_dec), X_enc (..., n_enc, d_enc), Wq (d_dec, d_k), Wk (d_enc, d_k),
    Wv (d_enc, d_v); returns (output (..., n_dec, d_v), weights (..., n_dec, n_enc)).
    """
    X_dec, X_enc = _float_array(X_dec), _float_array(X_enc)
    Q = X_dec @ _float_array(Wq)
    K = X_enc @ _float_array(Wk)
    V = X_enc @ _float_array(Wv)
    return scaled_dot_product_attention(Q, K, V, mask=mask)


def pool_tokens(H: ArrayLike, mask: ArrayLike | None = None, method: str = "mean") -> NDArray[np.floating]:
    """One vector per sequence: H (..., n, d) -> (..., d).

    "mean": the average of the real tokens (``mask`` (..., n), True = real; None = all real),
    zeros for a sequence with none. "cls": the [CLS] token's vector, position 0.
    """
    if method not in ("mean", "cls"):
        raise ValueError(f"method must be 'mean' or 'cls', got {method!r}")
    H = _float_array(H)
    if method == "cls":
        return H[..., 0, :].copy()
    keep = np.ones(H.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    keep = keep[..., None]
    total = np.where(keep, H, 0.0).sum(axis=-2)
    # The count keeps its feature axis (..., 1), so it divides every feature of its own sequence.
    count = keep.sum(axis=-2).astype(H.dtype)
    return total / np.maximum(count, 1)


def softmax_jacobian(S: ArrayLike) -> NDArray[np.floating]:
    """S (..., n) -> (..., n, n) Jacobian of a = softmax(S): J[i, j] = da_i/ds_j = a_i (delta_ij - a_j)."""
    a = softmax_rows(S)
    column = a[..., :, None]
    return column * np.eye(a.shape[-1], dtype=a.dtype) - column * a[..., None, :]


def softmax_backward(S: ArrayLike, dA: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
    """Gradient with respect to the scores S of a loss whose gradient with respect to A = softmax_rows(S, mask) is dA.

    Row by row dS = J^T dA = A * (dA - sum_k dA_k A_k), without building the Jacobian.
    Masked scores and fully masked rows get gradient 0.
    """
    A = softmax_rows(S, mask)
    dA = _float_array(dA)
    return A * (dA - (dA * A).sum(axis=-1, keepdims=True))


def decoder_step(
    x: ArrayLike,
    K_cache: ArrayLike,
    V_cache: ArrayLike,
    Wq: ArrayLike,
    Wk: ArrayLike,
    Wv: ArrayLike,
) -> tuple[NDArray[np.floating], NDArray[np.floating], NDArray[np.floating]]:
    """One generation step of causal self-attention with a KV cache.

    x (..., 1, d) is the new token; K_cache (..., t, d_k) and V_cache (..., t, d_v) hold the
    keys and values of the t earlier tokens. Returns (output (..., 1, d_v), keys (..., t+1, d_k),
    values (..., t+1, d_v)); the output equals row t of the full causal pass over all t+1 tokens.
    """
    x = _float_array(x)
    K = np.concatenate([_float_array(K_cache), x @ _float_array(Wk)], axis=-2)
    V = np.concatenate([_float_array(V_cache), x @ _float_array(Wv)], axis=-2)
    # The newest token is the last position, whose causal row allows every key: no mask needed.
    out, _ = scaled_dot_product_attention(x @ _float_array(Wq), K, V)
    return out, K, V


def grouped_query_attention(
    X: ArrayLike,
    Wq: ArrayLike,
    Wk: ArrayLike,
    Wv: ArrayLike,
    Wo: ArrayLike,
    h: int,
    kv_heads: int,
    mask: ArrayLike | None = None,
) -> NDArray[np.floating]:
    """Self-attention with h query heads sharing kv_heads key/value heads; X (..., n, d) -> (..., n, d).

    Wq, Wo are (d, d); Wk, Wv are (d, kv_heads * d/h). Query head i reads key/value head
    i // (h / kv_heads). kv_heads = h is multi-head attention, kv_heads = 1 multi-query.
    """
    X = _float_array(X)
    if kv_heads < 1 or h % kv_heads != 0:
        raise ValueError(f"kv_heads={kv_heads} must be a positive divisor of the number of query heads h={h}")
    Q = split_heads(X @ _float_array(Wq), h)
    K = split_heads(X @ _float_array(Wk), kv_heads)
    V = split_heads(X @ _float_array(Wv), kv_heads)
    # Consecutive query heads form a group: repeat each key/value head (not tile the stack).
    K = np.repeat(K, h // kv_heads, axis=-3)
    V = np.repeat(V, h // kv_heads, axis=-3)
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
    heads, _ = scaled_dot_product_attention(Q, K, V, mask=head_mask)
    return merge_heads(heads) @ _float_array(Wo)


def encoder_layer(
    X: ArrayLike,
    Wq: ArrayLike,
    Wk: ArrayLike,
    Wv: ArrayLike,
    Wo: ArrayLike,
    h: int,
    W1: ArrayLike,
    b1: ArrayLike,
    W2: ArrayLike,
    b2: ArrayLike,
    gamma1: ArrayLike,
    beta1: ArrayLike,
    gamma2: ArrayLike,
    beta2: ArrayLike,
    mask: ArrayLike | None = None,
) -> NDArray[np.floating]:
    """One post-norm encoder layer: Y = LN1(X + MHA(X)), then LN2(Y + FFN(Y)); X (..., n, d) -> (..., n, d)."""
    Y = add_and_norm(X, multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask), gamma1, beta1)
    return add_and_norm(Y, feed_forward(Y, W1, b1, W2, b2), gamma2, beta2)
