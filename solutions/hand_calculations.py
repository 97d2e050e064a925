"""Answers of the hand-calculation (numeric) problems, computed from their parameters with the references.

Each `compute` function takes a problem's parameters and returns {part name:
value}; each `feasible` function returns None for a draw that a student can do
by hand, else the reason it is rejected. Wrong-method twins (named `..._wrong_...`)
give the answers of a misconception: `qkv validate` checks that they differ from
the right answers on every checked variant.
"""

from __future__ import annotations

import math

import numpy as np

from . import counting
from . import numpy_ref as ref


def _f(a):
    return np.asarray(a, dtype=float)


# the numbers a student who knows nothing types into every blank (tests/test_guessing.py): a part whose answer is one
# of them is earned without the method, so the draws of the problems whose answers fall on them often avoid them
GUESSED_EVERYWHERE = (0.0, 0.5, 1.0, 2.0, 4.0)


def typed_everywhere(*values) -> bool:
    """Whether any of the values is a number a guesser types everywhere."""
    return any(abs(float(v) - x) < 1e-9 for v in values for x in GUESSED_EVERYWHERE)


def _distinct(values) -> bool:
    values = np.round(_f(values).reshape(-1), 9).tolist()
    return len(set(values)) == len(values)


# ------------------------------------------------ one query, three keys (L08 p.16-20)


def _exponents(scores, scale: float = 1.0):
    """The x of every e^x a softmax by hand needs, once the largest score is subtracted."""
    scores = _f(scores)
    return (scores - scores.max()) / scale


def one_query_attention(q, K, V):
    """Unscaled scores of one query, their softmax and the weighted values (V may be of any width)."""
    q, K, V = (np.asarray(a, dtype=float) for a in (q, K, V))
    scores = K @ q
    weights = ref.softmax_rows(scores)
    return {"scores": scores, "weights": weights, "output": weights @ V, "exponents": _exponents(scores)}


def one_query_attention_feasible(params, answers):
    scores = answers["scores"]
    if len(set(scores.tolist())) < len(scores):
        return "scores are not distinct"
    if np.abs(scores).max() > 12:
        return "a score is larger than 12"
    wrong = one_query_attention_wrong_no_exp(**params)["weights"]
    if np.abs(wrong - answers["weights"]).max() < 2e-2:  # well outside the 5e-3 the weights are accepted within
        return "dividing by the sum of the scores gives nearly the softmax weights"
    return None


def one_query_attention_admissible(q, K, V):
    """What the whole-number scores alone settle: distinct, at most 12 in size, spread at most 3 (by_hand)."""
    scores = [sum(a * b for a, b in zip(row, q)) for row in K]
    if len(set(scores)) < len(scores):
        return "scores are not distinct"
    if max(abs(s) for s in scores) > 12 or max(scores) - min(scores) > 3:
        return "a score is larger than 12 or the scores spread more than 3"
    return None


def one_query_attention_wrong_no_exp(q, K, V):
    """Weights taken as scores divided by their sum (no exponential)."""
    answers = one_query_attention(q, K, V)
    s = answers["scores"]
    total = s.sum() if s.sum() != 0 else 1.0
    return {**answers, "weights": s / total, "output": s / total @ _f(V)}


# --------------------------------------------- one query, two keys (L08 p.10-12)


def two_key_attention(q, K, v):
    """Scores q.k_j, unscaled softmax weights, and the weighted scalar value."""
    q, K, v = _f(q), _f(K), _f(v)
    scores = K @ q
    weights = ref.softmax_rows(scores)
    return {"scores": scores, "weights": weights, "output": weights @ v, "exponents": _exponents(scores)}


def two_key_attention_feasible(params, answers):
    if _f(params["v"])[0] == _f(params["v"])[1]:
        return "the two values are equal"
    if not _distinct(answers["scores"]):
        return "the two scores are equal"
    if np.abs(answers["scores"]).max() > 5:
        return "a score is larger than 5"
    if np.ptp(answers["scores"]) > 3:
        return "the scores differ by more than 3, so one weight is almost 1"
    return None


def two_key_attention_wrong_hard(q, K, v):
    """Attention as a hard choice: the output is the value of the best-matching key."""
    answers = two_key_attention(q, K, v)
    best = int(np.argmax(answers["scores"]))
    hard = np.zeros(2)
    hard[best] = 1.0
    return {**answers, "weights": hard, "output": _f(v)[best]}


# ----------------------------------------- course page self-test Q1 (one scaled score)


def scaled_score(q, k):
    q, k = _f(q), _f(k)
    dot = float(q @ k)
    return {"dot": dot, "scaled": dot / math.sqrt(q.shape[-1]), "d_k": q.shape[-1]}


def scaled_score_feasible(params, answers):
    if answers["dot"] == 0:
        return "the dot product is 0"
    if abs(answers["dot"]) > 36:  # up to 36 either side: 70 scores, so a class shares few
        return "the dot product is larger than 36"
    if abs(answers["dot"]) == 2:
        return "the scaled score would be the table's own sqrt(2)"
    return None


def scaled_score_wrong_divide_by_dk(q, k):
    """Divides by d_k instead of its square root."""
    answers = scaled_score(q, k)
    return {**answers, "scaled": answers["dot"] / len(q)}


def scaled_score_wrong_unscaled(q, k):
    """Forgets the scaling: reports q.k as the scaled score."""
    answers = scaled_score(q, k)
    return {**answers, "scaled": answers["dot"]}


# --------------------------------------------- course page self-test Q2 (softmax, mix)


def softmax_mix(scores, V):
    weights = ref.softmax_rows(_f(scores))
    return {"weights": weights, "output": weights @ _f(V), "exponents": _exponents(scores)}


def softmax_mix_feasible(params, answers):
    if len(set(params["scores"])) < 2:
        return "all scores are equal"
    if min(params["scores"]) <= 0:
        return "a score is not positive (the proportional shortcut would be undefined)"
    if len(set(map(tuple, params["V"]))) < 3:
        return "two value rows are equal"
    return None


def softmax_mix_wrong_proportional(scores, V):
    """Weights proportional to the raw scores (score / sum of scores), no exponential."""
    s = _f(scores)
    weights = s / s.sum()
    return {"weights": weights, "output": weights @ _f(V)}


def softmax_mix_wrong_hard(scores, V):
    """Takes only the value of the highest score."""
    s = _f(scores)
    weights = (s == s.max()).astype(float)
    weights /= weights.sum()
    return {"weights": weights, "output": weights @ _f(V)}


# ------------------------------------------- masking and renormalisation (L08, after p.20)


def masked_renormalisation(e, v, masked):
    """Scores ln e_j and scalar values v_j; key `masked` (0-based) hidden from the query."""
    scores = np.log(_f(e))
    values = _f(v)
    keep = np.ones(len(values), dtype=bool)
    keep[masked] = False
    weights = ref.softmax_rows(scores)
    masked_weights = ref.softmax_rows(scores, keep)
    return {
        "weights": weights,
        "output": weights @ values,
        "masked_weights": masked_weights,
        "masked_output": masked_weights @ values,
    }


def masked_renormalisation_feasible(params, answers):
    if len(set(params["v"])) < 3:
        return "two values are equal"
    if abs(answers["output"] - answers["masked_output"]) < 0.5:
        return "masking hardly changes the output"
    wrong = masked_renormalisation_wrong_zero_after(**params)["masked_output"]
    if abs(wrong - answers["masked_output"]) < 0.5:
        return "zeroing after the softmax gives nearly the right output"
    return None


def masked_renormalisation_wrong_zero_after(e, v, masked):
    """Softmax over all keys, then the masked weight set to 0 and the rest left as they were."""
    answers = masked_renormalisation(e, v, masked)
    zeroed = answers["weights"].copy()
    zeroed[masked] = 0.0
    return {**answers, "masked_weights": zeroed, "masked_output": zeroed @ _f(v)}


# ----------------------------------------------------------- LayerNorm of one token


def layer_norm_by_hand(x):
    x = _f(x)
    mean = x.mean()
    variance = ((x - mean) ** 2).mean()
    normalised = ref.layer_norm(x, np.ones_like(x), np.zeros_like(x), eps=0.0)
    return {"mean": mean, "variance": variance, "normalised": normalised}


MIN_DEVIATIONS = 3  # distinct deviations from the mean a normalised token needs, or it comes out all +-1


def few_deviations(x) -> str | None:
    """Why a token is too plain to normalise by hand (fewer than 3 distinct deviations from its mean: with two,
    the normalised token is all +-1 whatever is understood of the division), or None."""
    x = _f(x)
    distinct = len(set(np.round(x - x.mean(), 9).tolist()))
    if distinct < MIN_DEVIATIONS:
        return f"only {distinct} distinct deviation(s) from the mean (the normalised token is all +-1)"
    return None


def layer_norm_by_hand_feasible(params, answers):
    if answers["variance"] == 0:
        return "all features are equal"
    if few_deviations(params["x"]):
        return few_deviations(params["x"])
    if not float(answers["mean"]).is_integer():
        return "the mean is not a whole number"
    if answers["variance"] > 30:
        return "the variance is larger than 30"
    if typed_everywhere(answers["variance"]):
        return "the variance is a number a student who knows nothing types everywhere"
    return None


def layer_norm_by_hand_admissible(x):
    """What the draw's features alone settle, in whole numbers: a whole mean, three distinct deviations, and a
    variance that is a nonzero square up to 30 (by_hand's `squares`); one draw in about 200 passes."""
    total, d = sum(x), len(x)
    if total % d:
        return "the mean is not a whole number"
    deviations = [v - total // d for v in x]
    if len(set(deviations)) < MIN_DEVIATIONS:
        return "fewer than 3 distinct deviations from the mean"
    squares = sum(v * v for v in deviations)
    if squares % d or not 0 < squares // d <= 30 or math.isqrt(squares // d) ** 2 != squares // d:
        return "the variance is not a nonzero square up to 30"
    return None


def layer_norm_by_hand_wrong_unbiased(x):
    """Divides the squared deviations by d - 1 (the sample variance)."""
    x = _f(x)
    mean = x.mean()
    variance = x.var(ddof=1)
    return {"mean": mean, "variance": variance, "normalised": (x - mean) / math.sqrt(variance)}


# ---------------------------------------------------------- FFN of one token (L08 p.25-26)


def ffn_by_hand(x, W1, W2):
    """Biases zero: pre-activation x W1, ReLU, then W2."""
    x, W1, W2 = _f(x), _f(W1), _f(W2)
    pre = x @ W1
    hidden = np.maximum(pre, 0.0)
    output = ref.feed_forward(x, W1, np.zeros(W1.shape[1]), W2, np.zeros(W2.shape[1]))
    return {"pre": pre, "hidden": hidden, "output": output}


def ffn_by_hand_feasible(params, answers):
    if not (answers["pre"] < 0).any():
        return "no pre-activation is negative, so ReLU changes nothing"
    if not (answers["hidden"] > 0).any():
        return "ReLU zeroes every hidden unit"
    if np.array_equal(ffn_by_hand_wrong_no_relu(**params)["output"], answers["output"]):
        return "skipping the ReLU gives the same output"
    if not _f(params["x"]).any():
        return "x is zero"
    return None


def ffn_by_hand_wrong_no_relu(x, W1, W2):
    """No activation: the hidden layer is the pre-activation."""
    pre = _f(x) @ _f(W1)
    return {"pre": pre, "hidden": pre, "output": pre @ _f(W2)}


# ------------------------------------------------------------- parameter counts


def mha_parameters(d, h):
    weights = 4 * d * d
    biases = 4 * d
    total = counting.mha_parameter_count(d, h)
    return {"weights": weights, "biases": biases, "total": total}


def mha_parameters_wrong_per_head(d, h):
    """Every head given its own d x d W_Q, W_K and W_V (only W_O shared)."""
    weights = 3 * h * d * d + d * d
    biases = 3 * h * d + d
    return {"weights": weights, "biases": biases, "total": weights + biases}


def mha_parameters_wrong_no_output(d, h):
    """Counts W_Q, W_K and W_V with their biases but not the output projection W_O."""
    return {"weights": 3 * d * d, "biases": 3 * d, "total": 3 * d * d + 3 * d}


def mha_parameters_wrong_no_bias(d, h):
    """Counts the four weight matrices but forgets their biases."""
    return {"biases": 0, "total": 4 * d * d}


def kv_sharing_parameters(d, h, groups):
    """K and V projection parameters (with biases) for MHA, GQA with `groups` K/V heads, and MQA."""
    return {
        "head_width": counting.head_dim(d, h),
        "mha_kv": counting.gqa_kv_parameter_count(d, h, h),
        "gqa_kv": counting.gqa_kv_parameter_count(d, h, groups),
        "mqa_kv": counting.gqa_kv_parameter_count(d, h, 1),
        "gqa_total": counting.attention_parameter_count(d, h, kv_heads=groups),
    }


def kv_sharing_feasible(params, answers):
    if params["h"] % params["groups"] != 0 or params["groups"] >= params["h"]:
        return "the groups must divide h and be fewer than h"
    return None


def kv_sharing_wrong_full_width(d, h, groups):
    """Shared K/V heads still given full d x d projections (sharing saves nothing)."""
    full = 2 * (d * d + d)
    return {"mha_kv": full, "gqa_kv": full, "mqa_kv": full, "gqa_total": 4 * (d * d + d)}


def ffn_parameters(d, ratio):
    d_ff = ratio * d
    ffn = counting.ffn_parameter_count(d, d_ff)
    mha = counting.mha_parameter_count(d, 1)
    return {"d_ff": d_ff, "ffn": ffn, "mha": mha, "ffn_share": ffn / (ffn + mha)}


def ffn_parameters_wrong_one_matrix(d, ratio):
    """Counts only W1 (and its bias): the FFN's second layer is forgotten."""
    d_ff = ratio * d
    ffn = d * d_ff + d_ff
    mha = counting.mha_parameter_count(d, 1)
    return {"ffn": ffn, "ffn_share": ffn / (ffn + mha)}


# ------------------------------------------------------------------ complexity


def score_growth(n_old, factor):
    n_new = n_old * factor
    return {
        "scores_old": counting.attention_score_count(n_old),
        "scores_new": counting.attention_score_count(n_new),
        "ratio": float(counting.attention_score_growth(n_old, n_new)),
    }


def score_growth_wrong_linear(n_old, factor):
    """Assumes the number of scores grows like the length."""
    old = counting.attention_score_count(n_old)
    return {"scores_old": old, "scores_new": old * factor, "ratio": factor}


def cost_scaling(n, d, h, factor):
    d_ff = 4 * d
    return {
        "attention": counting.attention_flops(n, d, 1),
        "attention_heads": counting.attention_flops(n, d, h),
        "ffn": counting.ffn_flops(n, d, d_ff),
        "attention_growth": counting.attention_flops(n * factor, d, h) / counting.attention_flops(n, d, h),
        "ffn_growth": counting.ffn_flops(n * factor, d, d_ff) / counting.ffn_flops(n, d, d_ff),
    }


def cost_scaling_wrong_heads_divide(n, d, h, factor):
    """Believes h heads divide the attention cost by h."""
    answers = cost_scaling(n, d, h, factor)
    return {**answers, "attention_heads": answers["attention"] // h}


def cost_scaling_wrong_ffn_quadratic(n, d, h, factor):
    """Believes the FFN is quadratic in the length too."""
    answers = cost_scaling(n, d, h, factor)
    return {**answers, "ffn_growth": factor**2}


def dot_product_spread(d_k, q_var=1, k_var=1):
    """Variance and standard deviation of q.k for independent entries of mean 0 (variances q_var and k_var),
    before and after scaling: each product q_i k_i has variance q_var k_var, and d_k of them add up."""
    variance = d_k * q_var * k_var
    return {"variance": variance, "std": math.sqrt(variance), "scaled_std": math.sqrt(q_var * k_var)}


def dot_product_spread_wrong_linear_std(d_k, q_var=1, k_var=1):
    """Takes the standard deviation to be the variance; dividing q.k by sqrt(d_k) then leaves a standard
    deviation of variance / sqrt(d_k), which is what this mistake gives for the scaled score."""
    variance = d_k * q_var * k_var
    return {"variance": variance, "std": variance, "scaled_std": variance / math.sqrt(d_k)}


def dot_product_spread_wrong_variance_scaled_once(d_k, q_var=1, k_var=1):
    """Divides the variance (not the standard deviation) by sqrt(d_k): scaled variance variance / sqrt(d_k), so a
    standard deviation of its square root for the scaled score."""
    variance = d_k * q_var * k_var
    return {"variance": variance, "std": math.sqrt(variance), "scaled_std": math.sqrt(variance / math.sqrt(d_k))}


def dot_product_spread_wrong_unit_entries(d_k, q_var=1, k_var=1):
    """Takes every entry to have variance 1, as the lecture's case does, whatever the entries' variances."""
    return {"variance": d_k, "std": math.sqrt(d_k), "scaled_std": 1.0}


# ---------------------------------------------------------- positional encoding


def pe_offset_follow_up():
    """PE[7] . PE[10] for d = 2 (one pair, angle = position): cos 3, the offset alone."""
    pe = ref.sinusoidal_positional_encoding(11, 2)
    return float(pe[7] @ pe[10])


def pe_entry(p, d, j):
    """One entry of the encoding, its pair and angle, and the angles p / 10^k (k = 0 to 3) whose sine and cosine
    the prompt's table prints, so the table does not tell which one the entry needs."""
    i = j // 2
    angles = [p / 10.0 ** k for k in range(4)]  # 10000^(2i/d) is a power of ten for every pair drawn
    if j >= d:  # no such column: NaN answers make the draw be rejected
        return {"pair": i, "angle": math.nan, "value": math.nan, "angles": angles}
    pe = ref.sinusoidal_positional_encoding(p + 1, d)
    return {"pair": i, "angle": p / 10000.0 ** (2 * i / d), "value": pe[p, j], "angles": angles}


def pe_entry_feasible(params, answers):
    i, d = int(answers["pair"]), params["d"]
    if i == 0:
        return "pair 0's angle is p whatever the exponent, so the exponent slip (i/d) would go unseen"
    if (8 * i) % d:
        return "10000^(2i/d) is not a power of ten"
    if abs(float(answers["value"])) < 0.05 or abs(float(answers["value"])) > 0.99:
        return "the entry is near 0 or 1, which a guess of 0 or 1 earns (the cosine of a small angle is about 1)"
    if typed_everywhere(answers["angle"]):
        return "the angle is a number typed everywhere by a student who knows nothing"
    return None


def pe_entry_wrong_swapped(p, d, j):
    """sin in the odd columns and cos in the even ones."""
    answers = pe_entry(p, d, j)
    angle = answers["angle"]
    return {**answers, "value": math.cos(angle) if j % 2 == 0 else math.sin(angle)}


def pe_entry_wrong_exponent_i(p, d, j):
    """Exponent i/d instead of 2i/d."""
    i = j // 2
    angle = p / 10000.0 ** (i / d)
    return {**pe_entry(p, d, j), "angle": angle, "value": math.sin(angle) if j % 2 == 0 else math.cos(angle)}


# ------------------------------------------- numbers stated by true/false follow-ups


def ffn_quadratic_follow_up():
    """HW03 Q1(4): the FFN's multiply-adds for n = 10 tokens of width 64 with d_ff = 256."""
    return counting.ffn_flops(10, 64, 256)
