"""Parameter, score and FLOP counts from solutions.counting, including the course-page quiz numbers."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from torch import nn

from autograder.references import counting as c

# --- parameter counts --------------------------------------------------------------------


def test_mha_parameters_for_d_512() -> None:
    assert c.mha_parameter_count(512, 8) == 1_050_624
    assert c.mha_parameter_count(512, 8, bias=False) == 4 * 512 * 512


@pytest.mark.parametrize("d, h_a, h_b", [(512, 8, 16), (64, 1, 64), (96, 3, 12)])
def test_mha_parameters_do_not_depend_on_heads(d: int, h_a: int, h_b: int) -> None:
    assert c.mha_parameter_count(d, h_a) == c.mha_parameter_count(d, h_b) == 4 * d * d + 4 * d


@pytest.mark.parametrize("d, h", [(512, 3), (10, 4), (8, 0)])
def test_mha_parameters_reject_bad_head_count(d: int, h: int) -> None:
    with pytest.raises(ValueError):
        c.mha_parameter_count(d, h)


@pytest.mark.parametrize("d, h, bias", [(16, 4, True), (16, 4, False), (12, 3, True)])
def test_mha_parameters_match_nn_multihead_attention(d: int, h: int, bias: bool) -> None:
    mha = nn.MultiheadAttention(d, h, bias=bias)
    assert c.mha_parameter_count(d, h, bias) == sum(p.numel() for p in mha.parameters())


def test_gqa_and_mqa_parameters() -> None:
    d, h = 512, 8
    dh = d // h
    assert c.attention_parameter_count(d, h, kv_heads=h) == c.mha_parameter_count(d, h)
    # GQA with 2 key/value heads: K and V are d x (2 * 64).
    assert c.attention_parameter_count(d, h, kv_heads=2, bias=False) == 2 * d * d + 2 * d * 2 * dh
    assert c.attention_parameter_count(d, h, kv_heads=2) == 2 * d * d + 2 * d * 2 * dh + 2 * d + 2 * 2 * dh
    assert c.mqa_parameter_count(d, h, bias=False) == 2 * d * d + 2 * d * dh
    assert c.mqa_parameter_count(d, h) == c.attention_parameter_count(d, h, kv_heads=1)
    assert c.gqa_kv_parameter_count(d, h, groups=h, bias=False) == 2 * d * d
    assert c.gqa_kv_parameter_count(d, h, groups=1) == 2 * (d * dh + dh)
    assert c.gqa_kv_parameter_count(d, h, groups=4, bias=False) == 2 * d * 4 * dh


def test_fewer_kv_heads_means_fewer_parameters() -> None:
    counts = [c.attention_parameter_count(512, 8, kv) for kv in (8, 4, 2, 1)]
    assert counts == sorted(counts, reverse=True)
    assert len(set(counts)) == 4


@pytest.mark.parametrize("kv_heads", [0, 3, 16])
def test_kv_heads_must_divide_query_heads(kv_heads: int) -> None:
    with pytest.raises(ValueError):
        c.attention_parameter_count(512, 8, kv_heads)


def test_ffn_and_layer_norm_parameters() -> None:
    assert c.ffn_parameter_count(512, 2048) == 2 * 512 * 2048 + 2048 + 512 == 2_099_712
    assert c.ffn_parameter_count(512, 2048, bias=False) == 2_097_152
    assert c.layer_norm_parameter_count(512) == 1024
    assert c.layer_norm_parameter_count(512) == sum(p.numel() for p in nn.LayerNorm(512).parameters())


def test_head_dim() -> None:
    assert c.head_dim(512, 8) == 64
    with pytest.raises(ValueError):
        c.head_dim(512, 7)


# --- attention scores and complexity ---------------------------------------------------


def test_score_count_quiz() -> None:
    assert c.attention_score_count(4096) == 16_777_216
    assert c.attention_score_count(8192) == 67_108_864
    assert c.attention_score_growth(4096, 8192) == 4
    assert c.attention_score_growth(4096, 2048) == Fraction(1, 4)
    assert c.attention_score_count(10, heads=8) == 800


@pytest.mark.parametrize("n, d, d_ff", [(128, 512, 2048), (1000, 64, 256), (3, 8, 32)])
def test_doubling_length_doubles_ffn_and_quadruples_attention(n: int, d: int, d_ff: int) -> None:
    assert c.ffn_flops(2 * n, d, d_ff) == 2 * c.ffn_flops(n, d, d_ff)
    assert c.attention_flops(2 * n, d) == 4 * c.attention_flops(n, d)
    assert c.attention_score_count(2 * n) == 4 * c.attention_score_count(n)


def test_flop_formulas() -> None:
    assert c.attention_flops(10, 64) == 2 * 10 * 10 * 64
    assert c.ffn_flops(10, 64, 256) == 2 * 10 * 64 * 256


@pytest.mark.parametrize("h", [1, 2, 8, 64])
def test_heads_do_not_change_attention_flops(h: int) -> None:
    assert c.attention_flops(256, 512, h) == c.attention_flops(256, 512) == 2 * 256 * 256 * 512


def test_attention_overtakes_ffn_only_for_long_sequences() -> None:
    d, d_ff = 512, 2048
    # 2 n^2 d > 2 n d d_ff exactly when n > d_ff.
    assert c.attention_flops(d_ff, d) == c.ffn_flops(d_ff, d, d_ff)
    assert c.attention_flops(d_ff - 1, d) < c.ffn_flops(d_ff - 1, d, d_ff)
    assert c.attention_flops(d_ff + 1, d) > c.ffn_flops(d_ff + 1, d, d_ff)


def test_kv_cache_entries() -> None:
    n, d, h, layers = 1024, 512, 8, 6
    assert c.kv_cache_entries(n, d, h, kv_heads=h, layers=layers) == 2 * layers * n * d
    assert c.kv_cache_entries(n, d, h, kv_heads=1, layers=layers) == 2 * layers * n * (d // h)
    assert c.kv_cache_entries(n, d, h, kv_heads=h) * 8 == c.kv_cache_entries(8 * n, d, h, kv_heads=h)


def test_kv_cache_bytes_of_the_base_model() -> None:
    # d 512, 8 heads of 64, 6 decoder layers, float16: 48 MiB at 4,096 tokens, 8 times that at 32,768.
    assert c.kv_cache_bytes(4096, 512, 8, kv_heads=8, layers=6) == 2 * 6 * 4096 * 512 * 2 == 48 * 2**20
    assert c.kv_cache_bytes(32768, 512, 8, kv_heads=8, layers=6) == 384 * 2**20
    assert c.kv_cache_bytes(4096, 512, 8, kv_heads=2, layers=6) == 12 * 2**20  # GQA: a quarter
    assert c.kv_cache_bytes(4096, 512, 8, kv_heads=1, layers=6) == 6 * 2**20  # MQA: an eighth
    assert c.kv_cache_bytes(100, 64, 4, 2, layers=3, batch=5, bytes_per_value=4) == (
        5 * 4 * c.kv_cache_entries(100, 64, 4, 2, layers=3))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("h, kv_heads", [(4, 4), (4, 2), (4, 1)])
def test_kv_cache_bytes_are_the_bytes_of_the_cached_tensors(dtype: torch.dtype, h: int, kv_heads: int) -> None:
    n, d, layers, batch = 7, 16, 3, 2
    # What a decoder keeps: per layer, a key and a value tensor of shape (batch, kv_heads, n, d/h).
    cache = [torch.zeros(batch, kv_heads, n, d // h, dtype=dtype) for _ in range(2 * layers)]
    held = sum(tensor.element_size() * tensor.nelement() for tensor in cache)
    assert c.kv_cache_bytes(n, d, h, kv_heads, layers, batch, torch.empty(0, dtype=dtype).element_size()) == held


@pytest.mark.parametrize("args", [(128, 512, 8, 3), (128, 500, 8, 8), (0, 512, 8, 8), (128, 512, 8, 8, 1, 0)])
def test_kv_cache_bytes_rejects_impossible_sizes(args: tuple[int, ...]) -> None:
    with pytest.raises(ValueError):
        c.kv_cache_bytes(*args)


@pytest.mark.parametrize("bad", [0, -1])
def test_non_positive_sizes_are_rejected(bad: int) -> None:
    with pytest.raises(ValueError):
        c.attention_score_count(bad)
    with pytest.raises(ValueError):
        c.ffn_flops(bad, 8, 32)
    with pytest.raises(ValueError):
        c.layer_norm_parameter_count(bad)
