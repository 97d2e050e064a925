"""Answers of the hand calculations on attention itself: the third query, separate Q and K, the softmax Jacobian.

Each `compute` function takes a problem's parameters and returns {part name:
value}; `feasible` functions return None for a draw a student can do by hand,
else the reason it is rejected; `..._wrong_...` twins give the answers of a
misconception (`qkv validate` checks they differ from the right answers on every
checked variant). Scores, softmax and the Jacobian come from `numpy_ref`.
"""

from __future__ import annotations

import numpy as np

from . import numpy_ref as ref


def _f(a):
    return np.asarray(a, dtype=float)


# ------------------------------------------------ the third query (2, 1, 3) and the figure's rounding (L08 p.19)


def third_query(q, K, V, shown):
    """Unscaled attention of one query, and the output of the rounded weights the slide draws (`shown`)."""
    q, K, V, shown = _f(q), _f(K), _f(V), _f(shown)
    scores = ref.attention_scores(q[None], K, scale=False)[0]
    weights = ref.softmax_rows(scores)
    return {"scores": scores, "weights": weights, "output": ref.attention_output(weights[None], V)[0],
            "figure_output": shown @ V, "exponents": scores - scores.max()}


def third_query_wrong_figure_exact(q, K, V, shown):
    """Takes the slide's rounded weights as the exact softmax."""
    answers = third_query(q, K, V, shown)
    return {**answers, "weights": _f(shown), "output": answers["figure_output"]}


def third_query_wrong_scaled(q, K, V, shown):
    """Divides by sqrt(d_k) although the slide's weights are unscaled."""
    answers = third_query(q, K, V, shown)
    weights = ref.softmax_rows(answers["scores"] / np.sqrt(len(q)))
    return {**answers, "weights": weights, "output": weights @ _f(V)}


# a figure drawn as the slide's is, for numbers of the student's own: the weights rounded to 1 decimal

def _figure_weights(q, K):
    return np.round(ref.softmax_rows(ref.attention_scores(_f(q)[None], _f(K), scale=False)[0]), 1)


def rounded_figure(q, K, V):
    """`third_query` of a figure that draws the weights rounded to 1 decimal (the slide's rounding)."""
    return {**third_query(q, K, V, _figure_weights(q, K)), "shown": _figure_weights(q, K)}


def rounded_figure_feasible(params, answers):
    weights = answers["weights"]
    if weights.min() >= 0.05:
        return "no weight is drawn as 0"
    if np.abs(weights * 10 - np.round(weights * 10) - 0.5).min() < 0.02 or \
            np.abs(weights * 10 - np.round(weights * 10) + 0.5).min() < 0.02:
        return "a weight is too near a rounding boundary of the figure"
    if np.abs(answers["output"] - answers["figure_output"]).max() < 0.05:
        return "the figure's rounding hardly moves the output"
    return None


def rounded_figure_wrong_figure_exact(q, K, V):
    """Takes the figure's rounded weights as the exact softmax."""
    return third_query_wrong_figure_exact(q, K, V, _figure_weights(q, K))


def rounded_figure_wrong_scaled(q, K, V):
    """Divides by sqrt(d_k) although the figure's weights are unscaled."""
    return third_query_wrong_scaled(q, K, V, _figure_weights(q, K))


# ------------------------------------- why Q and K are separate: the asymmetry (Lecture 16 notes, 16.3)


def query_key_scores(X, Wq, Wk):
    """Scores of two tokens with separate projections, and with W_K tied to W_Q."""
    X, Wq, Wk = _f(X), _f(Wq), _f(Wk)
    Q, K = X @ Wq, X @ Wk
    return {"queries": Q, "keys": K, "scores": ref.attention_scores(Q, K, scale=False),
            "scores_tied": ref.attention_scores(Q, Q, scale=False)}


def query_key_scores_feasible(params, answers):
    S = answers["scores"]
    if S[0, 1] == S[1, 0]:
        return "the scores are symmetric anyway"
    if np.array_equal(params["Wq"], params["Wk"]):
        return "W_Q equals W_K"
    if np.array_equal(params["X"][0], params["X"][1]):
        return "the two tokens are equal"
    if not np.all(np.any(answers["queries"], axis=1)) or not np.all(np.any(answers["keys"], axis=1)):
        return "a query or a key is the zero vector"
    if not np.any(answers["scores_tied"] - np.diag(np.diag(answers["scores_tied"]))):
        return "the tied scores have no off-diagonal entry"
    return None


def query_key_scores_wrong_transposed(X, Wq, Wk):
    """Computes K Q^T: row i then holds how every query scores key i."""
    answers = query_key_scores(X, Wq, Wk)
    return {**answers, "scores": answers["scores"].T}


# ---------------------------------------------- the softmax Jacobian diag(a) - a a^T (issue 14, L08 p.20)


def softmax_jacobian_by_hand(e):
    """Scores ln e_j: the weights are e / sum(e), and J[i, j] = da_i / ds_j."""
    scores = np.log(_f(e))
    return {"weights": ref.softmax_rows(scores), "jacobian": ref.softmax_jacobian(scores)}


def softmax_jacobian_by_hand_feasible(params, answers):
    if len(set(params["e"])) < 2:
        return "all scores are equal"
    return None


def softmax_jacobian_by_hand_wrong_elementwise(e):
    """Treats the softmax like an elementwise sigmoid: diag(a(1 - a)), no off-diagonal terms."""
    answers = softmax_jacobian_by_hand(e)
    a = answers["weights"]
    return {**answers, "jacobian": np.diag(a * (1 - a))}


def softmax_jacobian_by_hand_wrong_no_outer(e):
    """Forgets the a a^T term: diag(a)."""
    answers = softmax_jacobian_by_hand(e)
    return {**answers, "jacobian": np.diag(answers["weights"])}
