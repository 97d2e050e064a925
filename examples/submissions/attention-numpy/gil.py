"""Attention from scratch (NumPy) (numpy track): your submission file.

1. Write the body of every function below that raises NotImplementedError.
2. Put your answers to the written problems in ANSWERS at the bottom
   (PROBLEMS.md has every prompt; set STUDENT_ID first: your numbers depend on it).
3. Check your work offline:   python qkv_check.py attention_numpy.py
4. Submit this file as <your student id>.py (or the notebook attention_numpy.ipynb).
"""

import numpy as np


def attention_scores(Q, K, scale=True):
    r"""Implement `attention_scores(Q, K, scale=True)`.

    `Q` holds one query per row, shape $(\dots, n_q, d_k)$, and `K` one key per row,
    shape $(\dots, n_k, d_k)$; any leading batch axes are shared. Return the score
    matrix $S$ of shape $(\dots, n_q, n_k)$ whose entry $S_{ij}$ is the dot product of
    query $i$ with key $j$:

    $$S = \frac{Q K^\top}{\sqrt{d_k}} \quad\text{when } \texttt{scale} \text{ is true}, \qquad S = Q K^\top \quad\text{otherwise.}$$

    Row $i$ must belong to query $i$ (it is later turned into that query's weights).

    Returns: array of shape (..., n_q, n_k)

    Example:
        >>> attention_scores([[1, 0, 2]], [[0, 1, 1], [4, 4, 0], [2, 3, 1]], scale=False)
        array([[2., 4., 4.]])
    """
    raise NotImplementedError("attention_scores")


def softmax_rows(S, mask=None):
    r"""Implement `softmax_rows(S, mask=None)`. It turns a score matrix into attention
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
    r"""Implement `causal_mask(n)`: the $(n, n)$ boolean mask of a decoder that may only read
    the past. Entry $[i, j]$ is `True` when query $i$ may attend to key $j$, that is when
    $j \le i$: every token sees itself and the tokens before it, never a later one.

    Returns: boolean array of shape (n, n)

    Example:
        >>> causal_mask(3)
        array([[ True, False, False],
               [ True,  True, False],
               [ True,  True,  True]])
    """
    raise NotImplementedError("causal_mask")


def attention_output(weights, V):
    r"""Implement `attention_output(weights, V)`.

    `weights` has shape $(\dots, n_q, n_k)$: row $i$ holds how much query $i$ reads from
    each key. `V` has one value per row, shape $(\dots, n_k, d_v)$. Return
    $Y = A V$, shape $(\dots, n_q, d_v)$, so that output row $i$ is
    $\sum_j A_{ij} v_j$: a weighted mix of **all** value rows.

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
    r"""Implement `scaled_dot_product_attention(Q, K, V, mask=None, scale=True)` and return
    the pair `(output, weights)`:

    $$A = \operatorname{softmax}_{\text{rows}}\!\Big(\frac{QK^\top}{\sqrt{d_k}}\Big), \qquad \text{output} = A V.$$

    Shapes: `Q` is $(\dots, n_q, d_k)$, `K` is $(\dots, n_k, d_k)$, `V` is
    $(\dots, n_k, d_v)$; `weights` is $(\dots, n_q, n_k)$ and `output` is
    $(\dots, n_q, d_v)$. With `scale=False` skip the division by $\sqrt{d_k}$.

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
    r"""Implement `split_heads(X, h)`: turn `X` of shape $(\dots, n, d)$ into
    $(\dots, h, n, d/h)$, where head $i$ holds features $i\,d/h$ to $(i+1)\,d/h - 1$ of
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
    r"""Implement `merge_heads(H)`, the inverse of `split_heads`: `H` has shape
    $(\dots, h, n, d_h)$ and the result has shape $(\dots, n, h\,d_h)$, where token $t$'s row
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
    r"""Implement `multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask=None)`.

    `X` is $(\dots, n, d)$ and all four weight matrices are $(d, d)$ (no biases). Compute
    $Q = XW_Q$, $K = XW_K$, $V = XW_V$; split each into $h$ heads of width $d/h$ (as in
    `split_heads`); in every head compute
    $\operatorname{softmax}\big(Q_i K_i^\top / \sqrt{d/h}\big) V_i$; concatenate the heads
    (as in `merge_heads`) and multiply by $W_O$. The result is $(\dots, n, d)$.

    `mask` (optional, boolean, broadcastable to $(\dots, n, n)$, `True` = may attend) is
    applied to every head before the softmax. If $h$ does not divide $d$, raise
    `ValueError`.

    Returns: array of shape (..., n, d)
    """
    raise NotImplementedError("multi_head_attention")


def layer_norm(x, gamma, beta, eps=1e-5):
    r"""Implement `layer_norm(x, gamma, beta, eps=1e-5)`.

    `x` has shape $(\dots, d)$: every leading index is one token, the last axis its $d$
    features. Normalise **each token over its own features**:

    $$\mu = \frac1d \sum_k x_k, \qquad \sigma^2 = \frac1d \sum_k (x_k - \mu)^2, \qquad
    y = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} \odot \gamma + \beta,$$

    where `gamma` and `beta` have shape $(d,)$. Note the variance divides by $d$ (the
    biased variance) and $\varepsilon$ goes under the square root. With $x = (2, 4)$,
    $\gamma = (1, 1)$, $\beta = (0, 0)$ and $\varepsilon = 0$ the result is $(-1, 1)$; with the
    default $\varepsilon = 10^{-5}$ it is $(-0.999995, 0.999995)$.

    Returns: array of the same shape as x

    Example:
        >>> layer_norm([[2, 4]], [1, 1], [0, 0], eps=0.0)
        array([[-1.,  1.]])
    """
    raise NotImplementedError("layer_norm")


def feed_forward(x, W1, b1, W2, b2):
    r"""Implement `feed_forward(x, W1, b1, W2, b2)`, the feed-forward sublayer applied to every
    token separately and with the same weights:

    $$\operatorname{FFN}(x) = \operatorname{ReLU}(x W_1 + b_1)\, W_2 + b_2 .$$

    `x` is $(\dots, d)$ (one token per row, any leading axes), `W1` is $(d, d_{ff})$, `b1`
    is $(d_{ff},)$, `W2` is $(d_{ff}, d)$ and `b2` is $(d,)$. The result has the shape of
    `x`. No token may influence another.

    Returns: array of the same shape as x

    Example:
        >>> feed_forward([[1, -1]], [[1, 0, 1], [0, 1, 1]], [0, 0, 0], [[1, 0], [0, 1], [1, 1]], [0, 0])
        array([[1., 0.]])
    """
    raise NotImplementedError("feed_forward")


def add_and_norm(x, sublayer_out, gamma, beta, eps=1e-5):
    r"""Implement `add_and_norm(x, sublayer_out, gamma, beta, eps=1e-5)`, the post-norm
    residual step of the original Transformer:

    $$\operatorname{AddNorm}(x) = \operatorname{LayerNorm}\big(x + \operatorname{sublayer}(x)\big).$$

    `x` and `sublayer_out` have the same shape $(\dots, d)$; `gamma`, `beta` are $(d,)$.
    LayerNorm is per token over the last axis with the biased variance and $\varepsilon$
    under the square root (as in `layer_norm`).

    Returns: array of the same shape as x

    Example:
        >>> add_and_norm([[1, 0, 2, 1]], [[1, 4, 0, 3]], [1, 1, 1, 1], [0, 0, 0, 0], eps=0.0)
        array([[-1.,  1., -1.,  1.]])
    """
    raise NotImplementedError("add_and_norm")


def sinusoidal_positional_encoding(n, d):
    r"""Implement `sinusoidal_positional_encoding(n, d)`: the $(n, d)$ table whose row $p$ is
    added to the embedding of the token at position $p = 0, \dots, n-1$:

    $$PE[p, 2i] = \sin\!\Big(\frac{p}{10000^{2i/d}}\Big), \qquad
    PE[p, 2i+1] = \cos\!\Big(\frac{p}{10000^{2i/d}}\Big).$$

    Columns $2i$ and $2i+1$ share one angle. If $d$ is odd, the last column is a sine.
    Return a float64 array.

    Returns: float64 array of shape (n, d)

    Example:
        >>> sinusoidal_positional_encoding(2, 4).round(4)
        array([[0.    , 1.    , 0.    , 1.    ],
               [0.8415, 0.5403, 0.01  , 1.    ]])
    """
    raise NotImplementedError("sinusoidal_positional_encoding")


def padding_mask(lengths, n):
    r"""Sentences of different lengths are batched by padding them to a common length $n$.
    Implement `padding_mask(lengths, n)`.

    `lengths` is an integer array of shape $(b,)$ (or any shape $(\dots)$): the number of
    real tokens of each sequence. Positions are counted **from 0**, so a sequence of length
    $L$ has its real tokens at positions $0, \dots, L-1$ and padding at $L, \dots, n-1$.
    Return a boolean array of shape $(\dots, n)$ that is `True` at the real tokens (the
    keys a query may attend to) and `False` on the padding.

    A length below 0 or above $n$ is an error: raise `ValueError`.

    Returns: boolean array of shape lengths.shape + (n,)

    Example:
        >>> padding_mask(np.array([2, 0]), 3)
        array([[ True,  True, False],
               [False, False, False]])
    """
    raise NotImplementedError("padding_mask")


def encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt):
    r"""The same attention block becomes an encoder, a decoder or the bridge between them
    depending only on its mask. For a padded batch of $b$ source sentences (padded to
    $n_{src}$) and $b$ target sentences (padded to $n_{tgt}$), implement
    `encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt)` and return the triple
    `(encoder, decoder, cross)` of boolean masks, `True` = the query may attend to the key:

    - `encoder`, shape $(b, n_{src}, n_{src})$, for the encoder's self-attention: it reads
      the whole source in both directions, so query $i$ may attend to key $j$ whenever
      source position $j$ is a real token;
    - `decoder`, shape $(b, n_{tgt}, n_{tgt})$, for the decoder's self-attention: key $j$ must
      be a real target token **and** not in the future ($j \le i$);
    - `cross`, shape $(b, n_{tgt}, n_{src})$, for cross-attention (queries from the decoder,
      keys from the encoder): every target position may attend to every real source token.

    `src_lengths` and `tgt_lengths` are integer arrays of shape $(b,)$; positions count from
    0, so a sequence of length $L$ is real at $0, \dots, L-1$. Padding hides **keys**
    (columns) only: rows of padding queries follow the same rules (their outputs are ignored
    later). A length outside $[0, n]$ raises `ValueError`. An encoder-only model (BERT) uses
    just the first mask, a decoder-only model (GPT) just the second, without padding.

    Returns: (encoder (b, n_src, n_src), decoder (b, n_tgt, n_tgt), cross (b, n_tgt, n_src)), boolean

    Example:
        >>> enc, dec, cross = encoder_decoder_masks(np.array([2]), np.array([3]), 3, 3)
        >>> dec[0].astype(int)
        array([[1, 0, 0],
               [1, 1, 0],
               [1, 1, 1]])
        >>> cross[0].astype(int)
        array([[1, 1, 0],
               [1, 1, 0],
               [1, 1, 0]])
    """
    raise NotImplementedError("encoder_decoder_masks")


def cross_attention(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    r"""In an encoder-decoder Transformer, each decoder layer reads the source sentence through
    **cross-attention**: the queries come from the decoder, the keys and values from the
    encoder's output. Implement `cross_attention(X_dec, X_enc, Wq, Wk, Wv, mask=None)` and
    return the pair `(output, weights)`:

    $$Q = X_{dec} W_Q,\quad K = X_{enc} W_K,\quad V = X_{enc} W_V,\qquad
    \text{weights} = \operatorname{softmax}_{\text{rows}}\!\Big(\frac{QK^\top}{\sqrt{d_k}}\Big),\quad
    \text{output} = \text{weights}\, V.$$

    Shapes: `X_dec` is $(\dots, n_{dec}, d_{dec})$ and `X_enc` is $(\dots, n_{enc}, d_{enc})$
    (the two lengths and widths may differ); `Wq` is $(d_{dec}, d_k)$, `Wk` is
    $(d_{enc}, d_k)$, `Wv` is $(d_{enc}, d_v)$. `weights` is $(\dots, n_{dec}, n_{enc})$, one row
    per decoder position, and `output` is $(\dots, n_{dec}, d_v)$. `mask` (optional, boolean,
    broadcastable to the weights, `True` = may attend; typically the source padding mask of
    shape $(b, 1, n_{enc})$) applies before the softmax; a row with no allowed key gives zero
    weights and a zero output. No causal mask: the whole source is known.

    Returns: (output of shape (..., n_dec, d_v), weights of shape (..., n_dec, n_enc))

    Example:
        >>> out, w = cross_attention([[1, 0]], [[1, 0], [0, 1], [0, 0]], np.eye(2), np.eye(2), [[10], [20]])
        >>> w.shape, out.shape
        ((1, 3), (1, 1))
    """
    raise NotImplementedError("cross_attention")


def pool_tokens(H, mask=None, method="mean"):
    r"""A classifier on top of an encoder needs one vector per sentence. Implement
    `pool_tokens(H, mask=None, method="mean")`.

    `H` is the encoder output, shape $(\dots, n, d)$: $n$ token vectors of width $d$ per
    sequence. `mask` (shape $(\dots, n)$, boolean) is `True` at real tokens and `False` on
    padding; `None` means every position is real. Return an array of shape $(\dots, d)$:

    - `method="mean"`: the average of the **real** token vectors of each sequence (padding
      must neither be added nor counted). A sequence with no real token gives a zero vector,
      never `nan`.
    - `method="cls"`: the vector of the [CLS] token, which is prepended to every sequence,
      so it sits at position 0 (positions count from 0); the mask is not needed.

    Any other `method` raises `ValueError`.

    Returns: array of shape (..., d)

    Example:
        >>> pool_tokens([[[1, 2], [3, 4], [100, 100]]], [[True, True, False]])
        array([[2., 3.]])
        >>> pool_tokens([[[1, 2], [3, 4], [100, 100]]], method="cls")
        array([[1., 2.]])
    """
    raise NotImplementedError("pool_tokens")


def encoder_layer(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None):
    r"""Implement `encoder_layer(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None)`,
    the post-norm encoder layer of the original Transformer:

    $$Y = \operatorname{LN}_1\big(X + \operatorname{MHA}(X)\big), \qquad
    Z = \operatorname{LN}_2\big(Y + \operatorname{FFN}(Y)\big).$$

    `X` is $(\dots, n, d)$. $\operatorname{MHA}$ is multi-head self-attention with the
    $(d, d)$ matrices `Wq`, `Wk`, `Wv`, `Wo` and `h` heads (as in `multi_head_attention`,
    `mask` applied to every head, `True` = may attend). $\operatorname{FFN}(y) =
    \operatorname{ReLU}(yW_1 + b_1)W_2 + b_2$ with `W1` $(d, d_{ff})$, `b1` $(d_{ff},)$,
    `W2` $(d_{ff}, d)$, `b2` $(d,)$. $\operatorname{LN}_1$ uses `gamma1`, `beta1` and
    $\operatorname{LN}_2$ uses `gamma2`, `beta2` (each $(d,)$), both over the last axis with the
    biased variance and $\varepsilon = 10^{-5}$. Return $Z$, shape $(\dots, n, d)$. If $h$
    does not divide $d$, raise `ValueError`.

    Returns: array of shape (..., n, d)
    """
    raise NotImplementedError("encoder_layer")


def grouped_query_attention(X, Wq, Wk, Wv, Wo, h, kv_heads, mask=None):
    r"""Implement `grouped_query_attention(X, Wq, Wk, Wv, Wo, h, kv_heads, mask=None)`:
    self-attention with $h$ query heads but only `kv_heads` key/value heads.

    `X` is $(\dots, n, d)$; `Wq` and `Wo` are $(d, d)$; `Wk` and `Wv` are
    $(d, \text{kv\_heads} \cdot d/h)$ (no biases). Split $Q = XW_Q$ into $h$ heads and
    $K = XW_K$, $V = XW_V$ into `kv_heads` heads, all of width $d/h$ (features split in
    contiguous blocks, as in `split_heads`). The query heads form `kv_heads` groups of
    $g = h / \text{kv\_heads}$ **consecutive** heads: query head $i$ (counting from 0) uses
    key/value head $\lfloor i / g \rfloor$. Each head computes
    $\operatorname{softmax}(Q_i K_{\lfloor i/g \rfloor}^\top / \sqrt{d/h})\, V_{\lfloor i/g \rfloor}$;
    concatenate the $h$ heads and multiply by $W_O$. The result is $(\dots, n, d)$.

    `kv_heads = h` is ordinary multi-head attention and `kv_heads = 1` is multi-query
    attention. `mask` (optional, boolean, broadcastable to $(\dots, n, n)$, `True` = may
    attend) applies to every head. Raise `ValueError` if $h$ does not divide $d$ or
    `kv_heads` does not divide $h$.

    Returns: array of shape (..., n, d)
    """
    raise NotImplementedError("grouped_query_attention")


def kv_cache_bytes(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    r"""While generating, a decoder keeps the key and value vectors of every earlier token of
    every layer (the **KV cache**), so each new token only computes its own. Implement
    `kv_cache_bytes(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2)`: the memory
    in bytes that the cache of `batch` sequences of `n` tokens takes.

    The model has width $d$ and $h$ query heads of width $d/h$. Keys and values have
    `kv_heads` heads of the same width $d/h$: `kv_heads = h` is multi-head attention (MHA),
    `1 < kv_heads < h` grouped-query attention (GQA, groups of query heads share one key and
    one value head), `kv_heads = 1` multi-query attention (MQA). Each stored number takes
    `bytes_per_value` bytes (2 for float16 or bfloat16, 4 for float32). Return an integer.
    Raise `ValueError` when $h$ does not divide $d$ or `kv_heads` does not divide $h$.

    Returns: int, the number of bytes

    Example:
        >>> kv_cache_bytes(4096, 512, 8, 8, layers=6)
        50331648
    """
    raise NotImplementedError("kv_cache_bytes")


def decoder_step(x, K_cache, V_cache, Wq, Wk, Wv):
    r"""In training, a decoder processes a whole sequence at once under a causal mask. When it
    **generates**, tokens arrive one at a time, and recomputing every key and value at each
    step would be wasted work: the keys and values of earlier tokens never change, so they
    are kept in a **KV cache**. Implement one step of single-head causal self-attention,
    `decoder_step(x, K_cache, V_cache, Wq, Wk, Wv)`, and return the triple
    `(output, K, V)`.

    - `x`, shape $(\dots, 1, d)$: the new token (a sequence of length 1), at position $t$
      when $t$ tokens came before it (positions count from 0);
    - `K_cache`, shape $(\dots, t, d_k)$, and `V_cache`, shape $(\dots, t, d_v)$: the keys and
      values of the $t$ earlier tokens, oldest first ($t$ may be 0: an empty cache);
    - `Wq`, `Wk` are $(d, d_k)$, `Wv` is $(d, d_v)$.

    Compute the new token's query, key and value, append the key and value at the **end**
    of the caches, and let the query attend (scaled by $\sqrt{d_k}$) to all $t + 1$ keys.
    `output` is $(\dots, 1, d_v)$ and must equal row $t$ of the full causal pass over the
    $t + 1$ tokens; `K` and `V` are the updated caches, $(\dots, t+1, d_k)$ and
    $(\dots, t+1, d_v)$.

    Returns: (output (..., 1, d_v), K (..., t+1, d_k), V (..., t+1, d_v))

    Example:
        >>> out, K, V = decoder_step(np.ones((1, 4)), np.zeros((0, 2)), np.zeros((0, 3)),
        ...                          np.ones((4, 2)), np.ones((4, 2)), np.ones((4, 3)))
        >>> out, K.shape, V.shape
        (array([[4., 4., 4.]]), (1, 2), (1, 3))
    """
    raise NotImplementedError("decoder_step")


def softmax_jacobian(S):
    r"""Implement `softmax_jacobian(S)`. `S` holds score vectors along its last axis, shape
    $(\dots, n)$; with $a = \operatorname{softmax}(s)$ for each vector, return the Jacobian of
    every vector, shape $(\dots, n, n)$:

    $$J_{ij} = \frac{\partial a_i}{\partial s_j} = a_i\,(\delta_{ij} - a_j), \qquad
    J = \operatorname{diag}(a) - a\,a^\top,$$

    where $\delta_{ij}$ is 1 if $i = j$ and 0 otherwise (row $i$ is the output, column $j$
    the score). Leading axes are batch axes: each vector gets its own $n \times n$ matrix.
    Scores as large as $10^3$ must not overflow.

    Returns: array of shape (..., n, n)

    Example:
        >>> softmax_jacobian([1.0, 0.0]).round(4)
        array([[ 0.1966, -0.1966],
               [-0.1966,  0.1966]])
    """
    raise NotImplementedError("softmax_jacobian")


def softmax_backward(S, dA, mask=None):
    r"""Implement `softmax_backward(S, dA, mask=None)`, the backward pass of
    `A = softmax_rows(S, mask)`.

    `S` is a score matrix of shape $(\dots, n_q, n_k)$, `mask` an optional boolean mask
    broadcastable to it (`True` = may attend; masked scores become $-\infty$ before the
    softmax), and `dA` (same shape as `S`) is the gradient of some loss with respect to the
    weights $A$. Return the gradient with respect to the scores, shape of `S`. Each row is a
    separate softmax, and by the softmax Jacobian $\operatorname{diag}(a) - a a^\top$:

    $$\frac{\partial L}{\partial s_{j}} = a_j \Big(\frac{\partial L}{\partial a_j} - \sum_k \frac{\partial L}{\partial a_k}\, a_k\Big)
    \quad\text{within each row.}$$

    Do not build the $n_k \times n_k$ Jacobians. Masked scores and fully masked rows get
    gradient 0 (and never `nan`).

    Returns: array of the same shape as S

    Example:
        >>> softmax_backward([[1.0, 0.0]], [[1.0, 0.0]]).round(4)
        array([[ 0.1966, -0.1966]])
    """
    raise NotImplementedError("softmax_backward")



# =============================================================================
# Written problems: replace each None with your answer.
# Numbers: 0.0634 or [0.0634, 0.4683, 0.4683]; matrices [[1, 2], [3, 4]].
# Shapes: "n x d_v" or (3, 4). True/false: {"answer": False, "correction": "..."}.
# Multiple choice: one letter, e.g. "B".
# =============================================================================

STUDENT_ID = ""

ANSWERS = {
    # one-query-by-hand (3 points): One query, three keys, by hand
    "one-query-by-hand": {"scores": None, "weights": None, "output": None},
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
    # rnn-batch-parallel (2 points): What can an RNN compute in parallel?
    "rnn-batch-parallel": {"answer": None, "follow_up": None, "correction": ""},
    # heads-reduce-cost (2 points): Do more heads make attention cheaper?
    "heads-reduce-cost": {"answer": None, "follow_up": None, "correction": ""},
    # training-vs-generation (2 points): Does a decoder compute a training sequence in one pass?
    "training-vs-generation": {"answer": None, "follow_up": None, "correction": ""},
    # ffn-quadratic (2 points): Is the FFN quadratic in the length?
    "ffn-quadratic": {"answer": None, "follow_up": None, "correction": ""},
    # ffn-shared-weights (2 points): Does every position get its own feed-forward network?
    "ffn-shared-weights": {"answer": None, "follow_up": None, "correction": ""},
    # mha-heads-and-parameters (2 points): Heads and the parameter count
    "mha-heads-and-parameters": None,
    # heads-by-numbers (3 points): What the heads of a layer hold and cost
    "heads-by-numbers": {"head_width": None, "parameters": None, "scores": None, "products": None},
    # local-window-scores (3 points): Scores of a sliding window
    "local-window-scores": {"full": None, "windowed": None, "layers": None},
    # generation-score-count (4 points): Scores computed while generating, with and without a cache
    "generation-score-count": {"step_scores": None, "cached_total": None, "recompute_total": None, "training_pass": None},
}
