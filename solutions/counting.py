"""Closed-form counts for Transformer layers: parameters, attention scores, FLOPs, KV cache.

Takes positive ints (model width d, heads h, sequence length n, ...) and gives
exact ints (or a ``Fraction`` for growth ratios). FLOP counts are
multiply-add counts: one multiply-add per term of every dot product.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = [
    "head_dim",
    "attention_parameter_count",
    "mha_parameter_count",
    "mqa_parameter_count",
    "gqa_kv_parameter_count",
    "ffn_parameter_count",
    "layer_norm_parameter_count",
    "attention_score_count",
    "attention_score_growth",
    "attention_flops",
    "ffn_flops",
    "kv_cache_entries",
    "kv_cache_bytes",
]


def _require_positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")


def head_dim(d: int, h: int) -> int:
    """Per-head width d / h; ValueError unless h divides d."""
    _require_positive(d=d, h=h)
    if d % h != 0:
        raise ValueError(f"number of heads h={h} must divide the model dimension d={d}")
    return d // h


def _kv_width(d: int, h: int, kv_heads: int) -> int:
    # K and V each have kv_heads heads of width d/h; query heads share them in equal groups.
    dh = head_dim(d, h)
    _require_positive(kv_heads=kv_heads)
    if h % kv_heads != 0:
        raise ValueError(f"kv_heads={kv_heads} must divide the number of query heads h={h}")
    return kv_heads * dh


def attention_parameter_count(d: int, h: int, kv_heads: int, bias: bool = True) -> int:
    """Parameters of an attention layer with h query heads and kv_heads key/value heads.

    kv_heads=h is multi-head attention (MHA), kv_heads=1 multi-query (MQA),
    anything in between grouped-query (GQA). Q and output projections are
    d x d; K and V projections are d x (kv_heads * d/h).
    """
    kv = _kv_width(d, h, kv_heads)
    weights = 2 * d * d + 2 * d * kv
    biases = 2 * d + 2 * kv if bias else 0
    return weights + biases


def mha_parameter_count(d: int, h: int, bias: bool = True) -> int:
    """4 d^2 (+ 4 d biases): independent of h, which only has to divide d."""
    return attention_parameter_count(d, h, kv_heads=h, bias=bias)


def mqa_parameter_count(d: int, h: int, bias: bool = True) -> int:
    """Multi-query attention: all h query heads share one key head and one value head."""
    return attention_parameter_count(d, h, kv_heads=1, bias=bias)


def gqa_kv_parameter_count(d: int, h: int, groups: int, bias: bool = True) -> int:
    """Parameters of the K and V projections alone when there are ``groups`` key/value heads."""
    kv = _kv_width(d, h, groups)
    return 2 * (d * kv + (kv if bias else 0))


def ffn_parameter_count(d: int, d_ff: int, bias: bool = True) -> int:
    """2 d d_ff (+ d_ff + d biases) for the two linear layers of the position-wise FFN."""
    _require_positive(d=d, d_ff=d_ff)
    return 2 * d * d_ff + (d_ff + d if bias else 0)


def layer_norm_parameter_count(d: int) -> int:
    """2 d: one gain and one bias per feature."""
    _require_positive(d=d)
    return 2 * d


def attention_score_count(n: int, heads: int = 1) -> int:
    """n^2 scores per head: every query against every key."""
    _require_positive(n=n, heads=heads)
    return n * n * heads


def attention_score_growth(n_old: int, n_new: int) -> Fraction:
    """Factor by which the number of scores grows when the length goes from n_old to n_new."""
    # Imported here, not at the top: an answer key made from this module (kv_cache_bytes) carries its
    # top-level imports, and a sandbox without namespaces may only import what its zygote preloaded.
    from fractions import Fraction

    _require_positive(n_old=n_old, n_new=n_new)
    return Fraction(n_new, n_old) ** 2


def attention_flops(n: int, d: int, h: int = 1) -> int:
    """Multiply-adds for Q K^T and for weights @ V: 2 n^2 d.

    Splitting into h heads gives h * 2 n^2 (d/h), the same count.
    """
    _require_positive(n=n)
    return h * 2 * n * n * head_dim(d, h)


def ffn_flops(n: int, d: int, d_ff: int) -> int:
    """Multiply-adds for the two FFN matrix products over n tokens: 2 n d d_ff."""
    _require_positive(n=n, d=d, d_ff=d_ff)
    return 2 * n * d * d_ff


def kv_cache_entries(n: int, d: int, h: int, kv_heads: int, layers: int = 1) -> int:
    """Numbers stored in a KV cache: keys and values for n tokens, kv_heads * d/h wide, per layer."""
    _require_positive(n=n, layers=layers)
    return 2 * layers * n * _kv_width(d, h, kv_heads)


def kv_cache_bytes(
    n: int, d: int, h: int, kv_heads: int, layers: int = 1, batch: int = 1, bytes_per_value: int = 2
) -> int:
    """Memory of a KV cache in bytes: ``kv_cache_entries`` for each of ``batch`` sequences, times the
    size of one stored number (2 for float16 / bfloat16, 4 for float32)."""
    _require_positive(batch=batch, bytes_per_value=bytes_per_value)
    return batch * bytes_per_value * kv_cache_entries(n, d, h, kv_heads, layers)


def patch_count(side: int, patch: int) -> int:
    """Patches of a square image of `side` pixels cut into `patch` x `patch` squares: (side / patch)^2."""
    _require_positive(side=side, patch=patch)
    if side % patch:
        raise ValueError(f"a side of {side} pixels is not a whole number of {patch}-pixel patches")
    return (side // patch) ** 2


def patch_embedding_parameter_count(patch: int, channels: int, d: int, bias: bool = True) -> int:
    """A ViT's patch embedding: one linear map of a flattened patch (patch^2 * channels numbers) to width d,
    the same as a convolution of kernel and stride `patch` with d filters."""
    _require_positive(patch=patch, channels=channels, d=d)
    return patch * patch * channels * d + (d if bias else 0)


def linear_attention_flops(n: int, d: int) -> int:
    """Multiply-adds of linear attention, phi(Q) (phi(K)^T V), with d-wide features and values: the d x d state
    phi(K)^T V costs n d^2, reading it for every query n d^2 more; linear in n where softmax attention's
    `attention_flops` is quadratic."""
    _require_positive(n=n, d=d)
    return 2 * n * d * d


def local_window_score_count(n: int, window: int) -> int:
    """Scores of causal attention over a sliding window: query i (from 1) reads min(i, window) keys, itself and
    the window - 1 before it."""
    _require_positive(n=n, window=window)
    return sum(min(i, window) for i in range(1, n + 1))
