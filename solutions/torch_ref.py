"""PyTorch reference implementation of Transformer building blocks.

Takes and gives ``torch.Tensor``; float32 and float64 inputs keep their dtype
and everything stays differentiable (no NumPy round trips). Same names and
semantics as ``solutions.numpy_ref``: row-vector convention (``Q = X @ Wq``),
leading batch dimensions allowed, boolean masks with True meaning "may attend"
(the opposite of ``nn.MultiheadAttention``'s ``attn_mask``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

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


def attention_scores(Q: Tensor, K: Tensor, scale: bool = True) -> Tensor:
    """Q (..., n_q, d_k), K (..., n_k, d_k) -> Q K^T (..., n_q, n_k), / sqrt(d_k) if ``scale``."""
    S = Q @ K.transpose(-2, -1)
    return S / math.sqrt(Q.shape[-1]) if scale else S


def softmax_rows(S: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the last dimension; masked entries get weight exactly 0.

    ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
    with no allowed entry gives all zeros rather than NaN.
    """
    logits = S if mask is None else S.masked_fill(~mask.bool(), -math.inf)
    row_max = logits.amax(dim=-1, keepdim=True)
    # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(logits - row_max)
    total = e.sum(dim=-1, keepdim=True)
    # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
    return e / torch.where(total > 0, total, torch.ones_like(total))


def causal_mask(n: int) -> Tensor:
    """(n, n) boolean mask, True where key index <= query index."""
    return torch.ones(n, n, dtype=torch.bool).tril()


def attention_output(weights: Tensor, V: Tensor) -> Tensor:
    """weights (..., n_q, n_k), V (..., n_k, d_v) -> weights @ V (..., n_q, d_v)."""
    return weights @ V


def scaled_dot_product_attention(
    Q: Tensor,
    K: Tensor,
    V: Tensor,
    mask: Tensor | None = None,
    scale: bool = True,
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V; returns (output (..., n_q, d_v), weights (..., n_q, n_k))."""
    weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
    return attention_output(weights, V), weights


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, eps: float = 1e-5) -> Tensor:
    """Normalise over the last dimension (biased variance), then scale by gamma and shift by beta."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def add_and_norm(x: Tensor, sublayer_out: Tensor, gamma: Tensor, beta: Tensor, eps: float = 1e-5) -> Tensor:
    """Post-norm residual of the original Transformer: layer_norm(x + sublayer_out)."""
    return layer_norm(x + sublayer_out, gamma, beta, eps)


def feed_forward(x: Tensor, W1: Tensor, b1: Tensor, W2: Tensor, b2: Tensor) -> Tensor:
    """Position-wise FFN: relu(x @ W1 + b1) @ W2 + b2."""
    return torch.relu(x @ W1 + b1) @ W2 + b2


def split_heads(X: Tensor, h: int) -> Tensor:
    """(..., n, d) -> (..., h, n, d/h); head i gets features i*d/h:(i+1)*d/h of every token."""
    *lead, n, d = X.shape
    if h < 1 or d % h != 0:
        raise ValueError(f"number of heads h={h} must be a positive divisor of the model dimension d={d}")
    # Reshaping the feature axis (not the token axis) keeps every token in every head.
    return X.reshape(*lead, n, h, d // h).transpose(-3, -2)


def merge_heads(H: Tensor) -> Tensor:
    """(..., h, n, d_h) -> (..., n, h*d_h): concatenate the heads along the features."""
    *lead, h, n, dh = H.shape
    return H.transpose(-3, -2).reshape(*lead, n, h * dh)


def multi_head_attention(
    X: Tensor,
    Wq: Tensor,
    Wk: Tensor,
    Wv: Tensor,
    Wo: Tensor,
    h: int,
    mask: Tensor | None = None,
) -> Tensor:
    """Multi-head self-attention of X (..., n, d) with d x d projections; returns (..., n, d).

    Each head uses scores scaled by sqrt(d/h). ``mask`` is broadcastable to
    (..., n, n) (no head dimension) and is applied to every head.
    """
    Q = split_heads(X @ Wq, h)
    K = split_heads(X @ Wk, h)
    V = split_heads(X @ Wv, h)
    # A new head dimension in front of (n, n) lets one mask serve every head.
    head_mask = None if mask is None else torch.atleast_2d(mask.bool()).unsqueeze(-3)
    heads, _ = scaled_dot_product_attention(Q, K, V, mask=head_mask)
    return merge_heads(heads) @ Wo


def sinusoidal_positional_encoding(n: int, d: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """(n, d) tensor of ``dtype``: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same angle).

    For odd d the last column is a sine.
    """
    # Computed in float64 and cast at the end so float32 output is correctly rounded.
    positions = torch.arange(n, dtype=torch.float64).unsqueeze(-1)
    even_columns = torch.arange(0, d, 2, dtype=torch.float64)
    angles = positions / 10000.0 ** (even_columns / d)
    pe = torch.empty(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    # With odd d there is one fewer cosine column than sine columns.
    pe[:, 1::2] = torch.cos(angles[:, : d // 2])
    return pe.to(dtype)


def padding_mask(lengths: Tensor, n: int) -> Tensor:
    """lengths (...,) -> (..., n) boolean, True at positions 0..length-1 (real tokens), False on padding.

    ValueError for a length below 0 or above n.
    """
    if bool((lengths < 0).any()) or bool((lengths > n).any()):
        raise ValueError(f"every length must lie between 0 and n={n}")
    return torch.arange(n, device=lengths.device) < lengths.unsqueeze(-1)


def encoder_decoder_masks(src_lengths: Tensor, tgt_lengths: Tensor, n_src: int, n_tgt: int) -> tuple[Tensor, Tensor, Tensor]:
    """The three masks of an encoder-decoder Transformer for a padded batch (lengths (b,)).

    Encoder self-attention (b, n_src, n_src): every query may read every real source token.
    Decoder self-attention (b, n_tgt, n_tgt): causal and real target tokens only.
    Cross-attention (b, n_tgt, n_src): every target query may read every real source token.
    Padding queries are not masked: their rows are computed and later ignored.
    """
    # A key axis in front of which the query axis broadcasts: padding hides keys (columns), never queries.
    src_keys = padding_mask(src_lengths, n_src).unsqueeze(-2)
    tgt_keys = padding_mask(tgt_lengths, n_tgt).unsqueeze(-2)
    lead = src_keys.shape[:-2]
    encoder = src_keys.expand(*lead, n_src, n_src).clone()
    decoder = causal_mask(n_tgt).to(tgt_keys.device) & tgt_keys
    cross = src_keys.expand(*lead, n_tgt, n_src).clone()
    return encoder, decoder, cross


def cross_attention(
    X_dec: Tensor, X_enc: Tensor, Wq: Tensor, Wk: Tensor, Wv: Tensor, mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Queries from the decoder, keys and values from the encoder.

    X_dec (..., n_dec, d_dec), X_enc (..., n_enc, d_enc), Wq (d_dec, d_k), Wk (d_enc, d_k),
    Wv (d_enc, d_v); returns (output (..., n_dec, d_v), weights (..., n_dec, n_enc)).
    """
    return scaled_dot_product_attention(X_dec @ Wq, X_enc @ Wk, X_enc @ Wv, mask=mask)


def pool_tokens(H: Tensor, mask: Tensor | None = None, method: str = "mean") -> Tensor:
    """One vector per sequence: H (..., n, d) -> (..., d).

    "mean": the average of the real tokens (``mask`` (..., n), True = real; None = all real),
    zeros for a sequence with none. "cls": the [CLS] token's vector, position 0.
    """
    if method not in ("mean", "cls"):
        raise ValueError(f"method must be 'mean' or 'cls', got {method!r}")
    if method == "cls":
        return H[..., 0, :].clone()
    keep = torch.ones(H.shape[:-1], dtype=torch.bool, device=H.device) if mask is None else mask.bool()
    keep = keep.unsqueeze(-1)
    total = torch.where(keep, H, torch.zeros((), dtype=H.dtype, device=H.device)).sum(dim=-2)
    # The count keeps its feature dimension (..., 1), so it divides every feature of its own sequence.
    count = keep.sum(dim=-2).to(H.dtype)
    return total / count.clamp(min=1)


def softmax_jacobian(S: Tensor) -> Tensor:
    """S (..., n) -> (..., n, n) Jacobian of a = softmax(S): J[i, j] = da_i/ds_j = a_i (delta_ij - a_j)."""
    a = softmax_rows(S)
    column = a.unsqueeze(-1)
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    return column * eye - column * a.unsqueeze(-2)


def softmax_backward(S: Tensor, dA: Tensor, mask: Tensor | None = None) -> Tensor:
    """Gradient with respect to the scores S of a loss whose gradient with respect to A = softmax_rows(S, mask) is dA.

    Row by row dS = J^T dA = A * (dA - sum_k dA_k A_k), without building the Jacobian.
    Masked scores and fully masked rows get gradient 0.
    """
    A = softmax_rows(S, mask)
    return A * (dA - (dA * A).sum(dim=-1, keepdim=True))


def decoder_step(
    x: Tensor, K_cache: Tensor, V_cache: Tensor, Wq: Tensor, Wk: Tensor, Wv: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """One generation step of causal self-attention with a KV cache.

    x (..., 1, d) is the new token; K_cache (..., t, d_k) and V_cache (..., t, d_v) hold the
    keys and values of the t earlier tokens. Returns (output (..., 1, d_v), keys (..., t+1, d_k),
    values (..., t+1, d_v)); the output equals row t of the full causal pass over all t+1 tokens.
    """
    K = torch.cat([K_cache, x @ Wk], dim=-2)
    V = torch.cat([V_cache, x @ Wv], dim=-2)
    # The newest token is the last position, whose causal row allows every key: no mask needed.
    out, _ = scaled_dot_product_attention(x @ Wq, K, V)
    return out, K, V


def grouped_query_attention(
    X: Tensor,
    Wq: Tensor,
    Wk: Tensor,
    Wv: Tensor,
    Wo: Tensor,
    h: int,
    kv_heads: int,
    mask: Tensor | None = None,
) -> Tensor:
    """Self-attention with h query heads sharing kv_heads key/value heads; X (..., n, d) -> (..., n, d).

    Wq, Wo are (d, d); Wk, Wv are (d, kv_heads * d/h). Query head i reads key/value head
    i // (h / kv_heads). kv_heads = h is multi-head attention, kv_heads = 1 multi-query.
    """
    if kv_heads < 1 or h % kv_heads != 0:
        raise ValueError(f"kv_heads={kv_heads} must be a positive divisor of the number of query heads h={h}")
    Q = split_heads(X @ Wq, h)
    # Consecutive query heads form a group: repeat each key/value head (not tile the stack).
    K = split_heads(X @ Wk, kv_heads).repeat_interleave(h // kv_heads, dim=-3)
    V = split_heads(X @ Wv, kv_heads).repeat_interleave(h // kv_heads, dim=-3)
    head_mask = None if mask is None else torch.atleast_2d(mask.bool()).unsqueeze(-3)
    heads, _ = scaled_dot_product_attention(Q, K, V, mask=head_mask)
    return merge_heads(heads) @ Wo


def encoder_layer(
    X: Tensor,
    Wq: Tensor,
    Wk: Tensor,
    Wv: Tensor,
    Wo: Tensor,
    h: int,
    W1: Tensor,
    b1: Tensor,
    W2: Tensor,
    b2: Tensor,
    gamma1: Tensor,
    beta1: Tensor,
    gamma2: Tensor,
    beta2: Tensor,
    mask: Tensor | None = None,
) -> Tensor:
    """One post-norm encoder layer: Y = LN1(X + MHA(X)), then LN2(Y + FFN(Y)); X (..., n, d) -> (..., n, d)."""
    Y = add_and_norm(X, multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask), gamma1, beta1)
    return add_and_norm(Y, feed_forward(Y, W1, b1, W2, b2), gamma2, beta2)
