"""Answers of the hand calculations on Vision Transformers and efficient attention (issue 47, item 5).

Standard facts, not the lecture notes' numbers (the notes list these parts by title only): a ViT cuts an image
into square patches, embeds each with one linear map and prepends a class token; linear attention computes
phi(K)^T V first; a sliding window caps the keys of each query; grouped and multi-query attention share key
and value heads. Each `compute` takes a problem's parameters and returns {part name: value}; `feasible`
returns None for a draw to keep, else why not; `..._wrong_...` twins give a misconception's answers. Counts
come from `counting`, masks from `numpy_ref`, so each formula lives once.
"""

from __future__ import annotations

import numpy as np

from . import counting
from . import numpy_ref as ref
from .hand_calculations import typed_everywhere

LECTURE_VIT = {"side": 224, "patch": 16}  # ViT-Base's 224 x 224 images in 16 x 16 patches: 196 of them


# ---------------------------------------------------------------- a ViT's tokens and its patch embedding


def vit_tokens(side, patch, channels, d):
    """Patches per side, patches, tokens with the class token, and the patch embedding's parameters."""
    if side % patch:  # not a whole number of patches: NaN answers make the draw be rejected
        return dict.fromkeys(("per_side", "patches", "tokens", "embedding"), np.nan)
    patches = counting.patch_count(side, patch)
    return {"per_side": side // patch, "patches": patches, "tokens": patches + 1,
            "embedding": counting.patch_embedding_parameter_count(patch, channels, d)}


def vit_tokens_feasible(params, answers):
    if params["side"] % params["patch"]:
        return "the side is not a whole number of patches"
    if params["side"] // params["patch"] == LECTURE_VIT["side"] // LECTURE_VIT["patch"]:
        return "14 patches a side is ViT-Base's count, which the statements quote"
    return None


def vit_tokens_wrong_no_class_token(side, patch, channels, d):
    """Counts the patches only: no class token in front of them."""
    answers = vit_tokens(side, patch, channels, d)
    return {**answers, "tokens": answers["patches"]}


def vit_tokens_wrong_no_channels(side, patch, channels, d):
    """Flattens a patch to patch^2 numbers, forgetting its colour channels."""
    answers = vit_tokens(side, patch, channels, d)
    return {**answers, "embedding": counting.patch_embedding_parameter_count(patch, 1, d)}


# ---------------------------------------------------------------- attention's cost over patches


def patch_attention_cost(side, patch, head_width):
    """Scores per head over the patches (class token left out), the multiply-adds of Q K^T for one head, and
    the scores once the patch side is halved: four times the patches, sixteen times the scores."""
    if side % patch:  # not a whole number of patches: NaN answers make the draw be rejected
        return dict.fromkeys(("patches", "scores", "score_products", "scores_half_patch"), np.nan)
    patches = counting.patch_count(side, patch)
    return {"patches": patches, "scores": counting.attention_score_count(patches),
            "score_products": counting.attention_score_count(patches) * head_width,
            "scores_half_patch": counting.attention_score_count(counting.patch_count(side, patch // 2))}


def patch_attention_cost_feasible(params, answers):
    reason = vit_tokens_feasible(params, answers)
    if reason is None and any(float(value) == 10000 for value in answers.values()):
        return "10000 scores: the base the positional encoding's prompts print"
    return reason


def patch_attention_cost_wrong_linear(side, patch, head_width):
    """Takes the scores to grow as the patches do: four times, not sixteen."""
    answers = patch_attention_cost(side, patch, head_width)
    return {**answers, "scores_half_patch": 4 * answers["scores"]}


# ---------------------------------------------------------------- linear attention against softmax attention


def linear_attention_cost(n, d):
    """Multiply-adds of softmax attention (2 n^2 d) and of linear attention (2 n d^2) for one head of width d,
    their ratio n / d, and the length at which they cost the same (n = d)."""
    softmax, linear = counting.attention_flops(n, d), counting.linear_attention_flops(n, d)
    return {"softmax": softmax, "linear": linear, "ratio": softmax / linear, "break_even": d}


def linear_attention_cost_feasible(params, answers):
    if params["n"] <= params["d"]:
        return "the sequence is no longer than the width, where linear attention saves nothing"
    if answers["softmax"] >= 1e8:
        return "a count of nine digits, which is copying, not counting"
    if params["n"] % params["d"]:
        return "the ratio n/d is not whole"
    if typed_everywhere(answers["ratio"]):
        return "the ratio is a number typed everywhere by a student who knows nothing"
    return None


def linear_attention_cost_wrong_quadratic_state(n, d):
    """Forms phi(Q) phi(K)^T first, as softmax attention does: the n x n table comes back."""
    answers = linear_attention_cost(n, d)
    return {**answers, "linear": answers["softmax"], "ratio": 1.0}


# ---------------------------------------------------------------- a sliding window of keys


def local_window_mask(n, window):
    """Causal attention over a sliding window: query i reads keys i - window + 1 to i."""
    behind = np.arange(n)[:, None] - np.arange(n)[None, :]  # how far key j is behind query i
    return ref.causal_mask(n) & (behind < window)


def local_window(n, window):
    """Scores of full causal attention and of a causal sliding window, and the layers it takes the last token
    to read (through the layers below it) the first: each layer reaches window - 1 tokens further back."""
    full = int(ref.causal_mask(n).sum())
    windowed = int(local_window_mask(n, window).sum())
    return {"full": full, "windowed": windowed, "layers": -(-(n - 1) // (window - 1))}


def local_window_feasible(params, answers):
    if params["window"] >= params["n"]:
        return "the window holds the whole sequence"
    return None


def local_window_wrong_n_times_window(n, window):
    """n * window scores: every query given a full window, even the first ones that have fewer keys before them."""
    return {**local_window(n, window), "windowed": n * window}


# ---------------------------------------------------------------- numbers stated by true/false follow-ups


def vit_token_count_follow_up():
    """384 x 384 images in 16 x 16 patches, with the class token."""
    return vit_tokens(384, 16, 3, 768)["tokens"]


def sliding_window_reach_follow_up():
    """Layers a causal window of 5 keys needs before the last of 21 tokens can have read the first."""
    return local_window(21, 5)["layers"]


def gqa_cache_fraction_follow_up():
    """The share of multi-head attention's KV cache kept with 16 query heads and 2 key/value heads."""
    return counting.kv_cache_entries(1, 1024, 16, 2) / counting.kv_cache_entries(1, 1024, 16, 16)
