"""Attention from scratch (NumPy) (numpy track): your submission file.

1. Write the body of every function below that raises NotImplementedError.
2. Put your answers to the written problems in ANSWERS at the bottom
   (PROBLEMS.md has every prompt; set STUDENT_ID first).
3. Check your work offline:   python qkv_check.py attention_numpy.py
4. Submit this file as <your student id>.py (or the notebook attention_numpy.ipynb).
"""

import numpy as np


def attention_scores(Q, K, scale=True):
    """Implement `attention_scores(Q, K, scale=True)`.

    `Q` holds one query per row, shape $(\\dots, n_q, d_k)$, and `K` one key per row,
    shape $(\\dots, n_k, d_k)$; any leading batch axes are shared. Return the score
    matrix $S$ of shape $(\\dots, n_q, n_k)$ whose entry $S_{ij}$ is the dot product of
    query $i$ with key $j$:

    $$S = \\frac{Q K^\\top}{\\sqrt{d_k}} \\quad\\text{when } \\texttt{scale} \\text{ is true}, \\qquad S = Q K^\\top \\quad\\text{otherwise.}$$

    Row $i$ must belong to query $i$ (it is later turned into that query's weights).

    Returns: array of shape (..., n_q, n_k)

    Example:
        >>> attention_scores([[1, 0, 2]], [[0, 1, 1], [4, 4, 0], [2, 3, 1]], scale=False)
        array([[2., 4., 4.]])
    """
    raise NotImplementedError("attention_scores")


def softmax_rows(S, mask=None):
    """Implement `softmax_rows(S, mask=None)`. It turns a score matrix into attention
    weights by applying softmax to **each row** (the last axis: one query spread over
    all keys), so every row of the result is non-negative and sums to 1.

    `mask` is an optional boolean array broadcastable to `S`; `True` means the query
    may attend to that key. Masked keys must receive weight exactly 0 and the
    remaining weights of the row must still sum to 1. A row in which no key is
    allowed must come out as all zeros (no `nan`, no warning). Your function must
    stay finite for scores as large as $10^4$.

    Returns: array of the same shape as S; each row sums to 1 (or is all zeros if fully masked)

    Example:
        >>> softmax_rows([[0.6931, 0.0, 1.0986]], mask=[[True, True, False]]).round(4)
        array([[0.6667, 0.3333, 0.    ]])
    """
    raise NotImplementedError("softmax_rows")


def causal_mask(n):
    """Implement `causal_mask(n)`: the $(n, n)$ boolean mask of a decoder that may only read
    the past. Entry $[i, j]$ is `True` when query $i$ may attend to key $j$, that is when
    $j \\le i$: every token sees itself and the tokens before it, never a later one.

    Returns: boolean array of shape (n, n)

    Example:
        >>> causal_mask(3)
        array([[ True, False, False],
               [ True,  True, False],
               [ True,  True,  True]])
    """
    raise NotImplementedError("causal_mask")


def attention_output(weights, V):
    """Implement `attention_output(weights, V)`.

    `weights` has shape $(\\dots, n_q, n_k)$: row $i$ holds how much query $i$ reads from
    each key. `V` has one value per row, shape $(\\dots, n_k, d_v)$. Return
    $Y = A V$, shape $(\\dots, n_q, d_v)$, so that output row $i$ is
    $\\sum_j A_{ij} v_j$: a weighted mix of **all** value rows.

    When the weights of a row are non-negative and sum to 1, each output is a convex
    combination of the values; with scalar values 2 and 10 and weights 0.25, 0.75 the
    output is 8, between the two.

    Returns: array of shape (..., n_q, d_v)

    Example:
        >>> attention_output([[0.25, 0.75]], [[2], [10]])
        array([[8.]])
    """
    raise NotImplementedError("attention_output")


def scaled_dot_product_attention(Q, K, V, mask=None, scale=True):
    """Implement `scaled_dot_product_attention(Q, K, V, mask=None, scale=True)` and return
    the pair `(output, weights)`:

    $$A = \\operatorname{softmax}_{\\text{rows}}\\!\\Big(\\frac{QK^\\top}{\\sqrt{d_k}}\\Big), \\qquad \\text{output} = A V.$$

    Shapes: `Q` is $(\\dots, n_q, d_k)$, `K` is $(\\dots, n_k, d_k)$, `V` is
    $(\\dots, n_k, d_v)$; `weights` is $(\\dots, n_q, n_k)$ and `output` is
    $(\\dots, n_q, d_v)$. With `scale=False` skip the division by $\\sqrt{d_k}$.

    `mask` (optional, boolean, broadcastable to the weights; `True` = may attend) must be
    applied **before** the softmax, so masked keys get weight 0 and each row of allowed
    weights still sums to 1. A row with no allowed key gives zero weights and a zero
    output, never `nan`. Large scores must not overflow.

    Returns: (output of shape (..., n_q, d_v), weights of shape (..., n_q, n_k))

    Example:
        >>> out, w = scaled_dot_product_attention([[1, 0, 2]], [[0, 1, 1], [4, 4, 0], [2, 3, 1]],
        ...                                       [[1, 2, 3], [2, 8, 0], [2, 6, 3]], scale=False)
        >>> out.round(4), w.round(4)
        (array([[1.9366, 6.6831, 1.5951]]), array([[0.0634, 0.4683, 0.4683]]))
    """
    raise NotImplementedError("scaled_dot_product_attention")


def split_heads(X, h):
    """Implement `split_heads(X, h)`: turn `X` of shape $(\\dots, n, d)$ into
    $(\\dots, h, n, d/h)$, where head $i$ holds features $i\\,d/h$ to $(i+1)\\,d/h - 1$ of
    **every** token. Heads divide the features; each head still sees all $n$ tokens.

    If $h$ is not a positive divisor of $d$, raise `ValueError`.

    Returns: array of shape (..., h, n, d/h)

    Example:
        >>> split_heads(np.arange(8).reshape(1, 8), 2)
        array([[[0., 1., 2., 3.]],
               [[4., 5., 6., 7.]]])
    """
    raise NotImplementedError("split_heads")


def merge_heads(H):
    """Implement `merge_heads(H)`, the inverse of `split_heads`: `H` has shape
    $(\\dots, h, n, d_h)$ and the result has shape $(\\dots, n, h\\,d_h)$, where token $t$'s row
    is head 0's row $t$, then head 1's row $t$, and so on, concatenated along the features.

    Returns: array of shape (..., n, h*d_h)

    Example:
        >>> merge_heads(np.arange(12).reshape(2, 3, 2))
        array([[ 0.,  1.,  6.,  7.],
               [ 2.,  3.,  8.,  9.],
               [ 4.,  5., 10., 11.]])
    """
    raise NotImplementedError("merge_heads")


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask=None):
    """Implement `multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask=None)`.

    `X` is $(\\dots, n, d)$ and all four weight matrices are $(d, d)$ (no biases). Compute
    $Q = XW_Q$, $K = XW_K$, $V = XW_V$; split each into $h$ heads of width $d/h$ (as in
    `split_heads`); in every head compute
    $\\operatorname{softmax}\\big(Q_i K_i^\\top / \\sqrt{d/h}\\big) V_i$; concatenate the heads
    (as in `merge_heads`) and multiply by $W_O$. The result is $(\\dots, n, d)$.

    `mask` (optional, boolean, broadcastable to $(\\dots, n, n)$, `True` = may attend) is
    applied to every head before the softmax. If $h$ does not divide $d$, raise
    `ValueError`.

    Returns: array of shape (..., n, d)
    """
    raise NotImplementedError("multi_head_attention")


def layer_norm(x, gamma, beta, eps=1e-5):
    """Implement `layer_norm(x, gamma, beta, eps=1e-5)`.

    `x` has shape $(\\dots, d)$: every leading index is one token, the last axis its $d$
    features. Normalise **each token over its own features**:

    $$\\mu = \\frac1d \\sum_k x_k, \\qquad \\sigma^2 = \\frac1d \\sum_k (x_k - \\mu)^2, \\qquad
    y = \\frac{x - \\mu}{\\sqrt{\\sigma^2 + \\varepsilon}} \\odot \\gamma + \\beta,$$

    where `gamma` and `beta` have shape $(d,)$. Note the variance divides by $d$ (the
    biased variance) and $\\varepsilon$ goes under the square root. With $x = (2, 4)$,
    $\\gamma = (1, 1)$, $\\beta = (0, 0)$ and $\\varepsilon = 0$ the result is $(-1, 1)$; with the
    default $\\varepsilon = 10^{-5}$ it is $(-0.999995, 0.999995)$.

    Returns: array of the same shape as x

    Example:
        >>> layer_norm([[2, 4]], [1, 1], [0, 0], eps=0.0)
        array([[-1.,  1.]])
    """
    raise NotImplementedError("layer_norm")


def feed_forward(x, W1, b1, W2, b2):
    """Implement `feed_forward(x, W1, b1, W2, b2)`, the feed-forward sublayer applied to every
    token separately and with the same weights:

    $$\\operatorname{FFN}(x) = \\operatorname{ReLU}(x W_1 + b_1)\\, W_2 + b_2 .$$

    `x` is $(\\dots, d)$ (one token per row, any leading axes), `W1` is $(d, d_{ff})$, `b1`
    is $(d_{ff},)$, `W2` is $(d_{ff}, d)$ and `b2` is $(d,)$. The result has the shape of
    `x`. No token may influence another.

    Returns: array of the same shape as x

    Example:
        >>> feed_forward([[1, -1]], [[1, 0, 1], [0, 1, 1]], [0, 0, 0], [[1, 0], [0, 1], [1, 1]], [0, 0])
        array([[1., 0.]])
    """
    raise NotImplementedError("feed_forward")


def add_and_norm(x, sublayer_out, gamma, beta, eps=1e-5):
    """Implement `add_and_norm(x, sublayer_out, gamma, beta, eps=1e-5)`, the post-norm
    residual step of the original Transformer:

    $$\\operatorname{AddNorm}(x) = \\operatorname{LayerNorm}\\big(x + \\operatorname{sublayer}(x)\\big).$$

    `x` and `sublayer_out` have the same shape $(\\dots, d)$; `gamma`, `beta` are $(d,)$.
    LayerNorm is per token over the last axis with the biased variance and $\\varepsilon$
    under the square root (as in `layer_norm`).

    Returns: array of the same shape as x

    Example:
        >>> add_and_norm([[1, 0, 2, 1]], [[1, 4, 0, 3]], [1, 1, 1, 1], [0, 0, 0, 0], eps=0.0)
        array([[-1.,  1., -1.,  1.]])
    """
    raise NotImplementedError("add_and_norm")


def sinusoidal_positional_encoding(n, d):
    """Implement `sinusoidal_positional_encoding(n, d)`: the $(n, d)$ table whose row $p$ is
    added to the embedding of the token at position $p = 0, \\dots, n-1$:

    $$PE[p, 2i] = \\sin\\!\\Big(\\frac{p}{10000^{2i/d}}\\Big), \\qquad
    PE[p, 2i+1] = \\cos\\!\\Big(\\frac{p}{10000^{2i/d}}\\Big).$$

    Columns $2i$ and $2i+1$ share one angle. If $d$ is odd, the last column is a sine.
    Return a float64 array.

    Returns: float64 array of shape (n, d)

    Example:
        >>> sinusoidal_positional_encoding(2, 4).round(4)
        array([[0.    , 1.    , 0.    , 1.    ],
               [0.8415, 0.5403, 0.01  , 1.    ]])
    """
    raise NotImplementedError("sinusoidal_positional_encoding")



# =============================================================================
# Written problems: replace each None with your answer.
# Numbers: 0.0634 or [0.0634, 0.4683, 0.4683]; matrices [[1, 2], [3, 4]].
# Shapes: "n x d_v" or (3, 4). True/false: {"answer": False, "correction": "..."}.
# Multiple choice: one letter, e.g. "B".
# =============================================================================

STUDENT_ID = ""

ANSWERS = {
    # one-query-by-hand (3 points): One query, three keys, by hand
    "one-query-by-hand": {"scores": None, "weights": None, "output": None, "scaled_weights": None},
    # masked-renormalisation (4 points): Mask before the softmax, not after
    "masked-renormalisation": {"weights": None, "output": None, "masked_weights": None, "masked_output": None},
    # layer-norm-by-hand (3 points): Normalising one token
    "layer-norm-by-hand": {"mean": None, "variance": None, "normalised": None},
    # ffn-by-hand (3 points): The FFN on one token
    "ffn-by-hand": {"pre": None, "hidden": None, "output": None},
    # mha-parameter-count (2 points): Parameters of a multi-head attention layer
    "mha-parameter-count": {"weights": None, "biases": None, "total": None},
    # score-growth (2 points): Longer documents, more scores
    "score-growth": {"scores_old": None, "scores_new": None, "ratio": None},
    # scores-shape (1 point): Shape of the score matrix in cross-attention
    "scores-shape": None,
    # output-shape (1 point): Shape of the attention output
    "output-shape": None,
    # split-heads-shape (1 point): Shape of one head's output
    "split-heads-shape": None,
    # concat-shape (1 point): Shape of the concatenated heads
    "concat-shape": None,
    # rnn-sequential (2 points): Does a Transformer read one word at a time?
    "rnn-sequential": {"answer": None, "follow_up": None, "correction": ""},
    # heads-reduce-cost (2 points): Do more heads make attention cheaper?
    "heads-reduce-cost": {"answer": None, "follow_up": None, "correction": ""},
    # ffn-quadratic (2 points): Is the FFN quadratic in the length?
    "ffn-quadratic": {"answer": None, "follow_up": None, "correction": ""},
    # mha-heads-and-parameters (2 points): Heads and the parameter count
    "mha-heads-and-parameters": None,
}
