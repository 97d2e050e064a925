"""Answers of the hand calculations on the architecture types, padding masks and generation with a KV cache.

Each `compute` function takes a problem's parameters and returns {part name:
value}; each `feasible` function returns None for a draw a student can do by
hand, else the reason it is rejected; `..._wrong_...` twins give the answers of
a misconception (`qkv validate` checks they differ from the right answers on
every checked variant). Counts come from `counting` and masks from `numpy_ref`,
so the formulas live in one place.
"""

from __future__ import annotations

import numpy as np

from . import counting
from . import numpy_ref as ref
from .hand_calculations import typed_everywhere

MIB = 2**20
BYTES_FLOAT16 = 2


def _f(a):
    return np.asarray(a, dtype=float)


# ------------------------------------------- mean pooling over real tokens (Lecture 16 notes, 16.7)


def mean_pooling(H, lengths):
    """H (b, n, d) encoder outputs, lengths (b,): the mean of each sequence's real tokens."""
    H, lengths = _f(H), np.asarray(lengths)
    mask = ref.padding_mask(lengths, H.shape[-2])
    total = np.where(mask[..., None], H, 0.0).sum(axis=-2)
    return {"total": total, "pooled": ref.pool_tokens(H, mask)}


def mean_pooling_feasible(params, answers):
    for twin in (mean_pooling_wrong_padding_included, mean_pooling_wrong_divide_by_n):
        if np.allclose(twin(**params)["pooled"], answers["pooled"], atol=1e-3):
            return f"{twin.__name__} gives the right pooled vectors"
    return None


def mean_pooling_wrong_padding_included(H, lengths):
    """Averages all n positions, padding included."""
    answers = mean_pooling(H, lengths)
    return {**answers, "pooled": _f(H).mean(axis=-2)}


def mean_pooling_wrong_divide_by_n(H, lengths):
    """Sums the real tokens only, but divides by the padded length n."""
    answers = mean_pooling(H, lengths)
    return {**answers, "pooled": answers["total"] / _f(H).shape[-2]}


# ----------------------------------------- allowed cells of the three masks (3-8 course page, section 8)


def mask_cells(n, src_length, tgt_length):
    """Cells a query may attend to in each mask of one padded sentence pair (both padded to n)."""
    if max(src_length, tgt_length) > n:  # no such sentence: NaN answers make the draw be rejected
        return dict.fromkeys(("encoder", "decoder", "cross", "computed"), np.nan)
    encoder, decoder, cross = ref.encoder_decoder_masks(np.array([src_length]), np.array([tgt_length]), n, n)
    return {
        "encoder": int(encoder.sum()),
        "decoder": int(decoder.sum()),
        "cross": int(cross.sum()),
        "computed": 3 * counting.attention_score_count(n),
    }


def mask_cells_feasible(params, answers):
    if params["src_length"] == params["tgt_length"]:
        return "the two lengths are equal"
    if params["tgt_length"] >= params["n"] or params["src_length"] >= params["n"]:
        return "a sentence has no padding"
    return None


def mask_cells_wrong_padding_rows(n, src_length, tgt_length):
    """Padding hides queries (rows) as well as keys: only real-by-real cells are counted."""
    answers = mask_cells(n, src_length, tgt_length)
    return {**answers, "encoder": src_length**2, "decoder": tgt_length * (tgt_length + 1) // 2,
            "cross": tgt_length * src_length}


def mask_cells_wrong_causal_everywhere(n, src_length, tgt_length):
    """The causal rule applied to the encoder and to the cross-attention too."""
    answers = mask_cells(n, src_length, tgt_length)
    causal_keys = lambda length: int(sum(min(i + 1, length) for i in range(n)))  # noqa: E731
    return {**answers, "encoder": causal_keys(src_length), "cross": causal_keys(src_length)}


def mask_cells_wrong_masked_skipped(n, src_length, tgt_length):
    """Believes masked cells are never computed: the computed count is the allowed count."""
    answers = mask_cells(n, src_length, tgt_length)
    return {**answers, "computed": answers["encoder"] + answers["decoder"] + answers["cross"]}


# ------------------------------------ scores computed while generating (L08 p.19-20: parallel vs step by step)


def generation_scores(n, m):
    """Generating n tokens one per step; step t (counting from 1) is the t-th token, which reads t keys."""
    steps = np.arange(1, n + 1)
    return {
        "step_scores": m,
        "cached_total": int(steps.sum()),
        "recompute_total": int((steps**2).sum()),
        "training_pass": counting.attention_score_count(n),
    }


def generation_scores_feasible(params, answers):
    if params["m"] > params["n"]:
        return "the step asked comes after the last token"
    if typed_everywhere(params["m"]):
        return "the step's count is a number a student who knows nothing types everywhere"
    return None


def generation_scores_wrong_cache_quadratic(n, m):
    """Believes a step with a KV cache still scores every cached token against every other (t^2 per step)."""
    answers = generation_scores(n, m)
    return {**answers, "step_scores": m * m, "cached_total": answers["recompute_total"]}


def generation_scores_wrong_training_half(n, m):
    """Believes the training pass computes only the allowed (causal) cells, n(n+1)/2."""
    answers = generation_scores(n, m)
    return {**answers, "training_pass": answers["cached_total"]}


# ----------------------------------- KV cache memory under MHA, GQA and MQA (Lecture 16 notes, 16.4)


def kv_cache_memory(d, h, kv_heads, layers, n):
    """Numbers cached per token and layer, and the float16 cache of n tokens in MiB, for MHA and GQA (and MQA)."""
    per_token = lambda heads: counting.kv_cache_entries(1, d, h, heads)  # noqa: E731 - one token, one layer
    mib = lambda heads: counting.kv_cache_entries(n, d, h, heads, layers) * BYTES_FLOAT16 / MIB  # noqa: E731
    return {
        "head_width": counting.head_dim(d, h),
        "mha_per_token": per_token(h),
        "gqa_per_token": per_token(kv_heads),
        "mqa_per_token": per_token(1),
        "mha_mib": mib(h),
        "gqa_mib": mib(kv_heads),
    }


def _scaled(answers, factor):
    keep = ("head_width",)
    return {k: (v if k in keep else v * factor) for k, v in answers.items()}


def kv_cache_memory_wrong_queries_cached(d, h, kv_heads, layers, n):
    """Caches the queries as well: 3 vectors per token instead of 2 (queries are never reused)."""
    right = kv_cache_memory(d, h, kv_heads, layers, n)
    wrong = _scaled(right, 1.5)
    # the queries are per query head, d wide, whatever K and V share
    extra = lambda per_token: per_token + d  # noqa: E731
    wrong["gqa_per_token"] = extra(right["gqa_per_token"])
    wrong["mqa_per_token"] = extra(right["mqa_per_token"])
    wrong["gqa_mib"] = right["gqa_mib"] + right["mha_mib"] / 2
    return wrong


def kv_cache_memory_wrong_keys_only(d, h, kv_heads, layers, n):
    """Counts only the keys: the values are cached too."""
    return _scaled(kv_cache_memory(d, h, kv_heads, layers, n), 0.5)


def kv_cache_memory_wrong_sharing_saves_nothing(d, h, kv_heads, layers, n):
    """Believes the shared key/value heads are each d wide, so sharing saves no memory."""
    right = kv_cache_memory(d, h, kv_heads, layers, n)
    return {**right, "gqa_per_token": right["mha_per_token"], "mqa_per_token": right["mha_per_token"],
            "gqa_mib": right["mha_mib"]}


def kv_cache_memory_feasible(params, answers):
    if params["kv_heads"] >= params["h"]:
        return "GQA needs fewer key/value heads than query heads"
    if not float(answers["gqa_mib"]).is_integer():
        return "the GQA cache is not a whole number of MiB"
    return None


# -------------------------------------------------- numbers stated by true/false follow-ups


def cells_still_computed_follow_up():
    """Scores one head computes for n = 300 tokens, however small most weights are."""
    return counting.attention_score_count(300)


def bidirectional_encoder_follow_up():
    """Cells the self-attention mask of a 6-token encoder input (no padding) allows."""
    encoder, _, _ = ref.encoder_decoder_masks(np.array([6]), np.array([6]), 6, 6)
    return int(encoder.sum())


def kv_cache_growth_follow_up():
    """Factor by which the KV cache grows when the context goes from 2,048 to 8,192 tokens."""
    return counting.kv_cache_entries(8192, 512, 8, 8) / counting.kv_cache_entries(2048, 512, 8, 8)


# ----------------------------------------- what heads cost and hold (L08 p.21-23; 3-8 course page self-test Q4)


def heads_by_numbers(d, h, n):
    """A multi-head layer of width d with h heads of width d/h over n tokens: the head width, its parameters
    (4 d^2 + 4 d, whatever h), the scores of all heads (h n^2) and the multiply-adds of Q K^T and of the weights
    times V over all heads (2 n^2 d, whatever h)."""
    if d % h:  # heads that do not split the width: NaN answers make the draw be rejected
        return dict.fromkeys(("head_width", "parameters", "scores", "products"), np.nan)
    return {"head_width": counting.head_dim(d, h), "parameters": counting.mha_parameter_count(d, h),
            "scores": counting.attention_score_count(n, h), "products": counting.attention_flops(n, d, h)}


def heads_by_numbers_wrong_full_width_heads(d, h, n):
    """Gives every head the full width d: h times the projections and the products."""
    answers = heads_by_numbers(d, h, n)
    return {**answers, "head_width": d, "parameters": h * answers["parameters"], "products": h * answers["products"]}
