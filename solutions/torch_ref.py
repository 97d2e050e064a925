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
