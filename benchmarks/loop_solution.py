"""A correct attention-numpy submission, written as a student who thinks in loops would write it.

Independent of the answer key (solutions/numpy_ref.py): explicit Python loops over batch entries, heads, tokens
and rows, `math.exp` and small numpy pieces (one dot product, one row) inside them, and each later function built
from the earlier ones. benchmarks/grade.py grades it beside the key, so that its figures are of code a class
hands in, not only of the key's vectorised one-liners; it appends the key's ANSWERS for the written problems.
"""

import math

import numpy as np


def _floats(a):
    return np.asarray(a, dtype=float)


def _batches(a, inner):
    """Every index of `a`'s leading axes, those before its last `inner` ones (one empty index if there are none)."""
    return np.ndindex(*a.shape[:a.ndim - inner])


def _linear(X, W):
    """Each token (row of the last axis) times W, one token at a time."""
    X, W = _floats(X), _floats(W)
    out = np.zeros(X.shape[:-1] + (W.shape[1],))
    for token in _batches(X, 1):
        out[token] = np.dot(X[token], W)
    return out


def _check_heads(d, h):
    if h <= 0 or d % h != 0:
        raise ValueError(f"{h} heads do not divide the width {d}")


def attention_scores(Q, K, scale=True):
    Q, K = _floats(Q), _floats(K)
    d_k = Q.shape[-1]
    S = np.zeros(Q.shape[:-1] + (K.shape[-2],))
    for b in _batches(Q, 2):
        for i in range(Q.shape[-2]):
            for j in range(K.shape[-2]):
                score = float(np.dot(Q[b][i], K[b][j]))
                S[b][i, j] = score / math.sqrt(d_k) if scale else score
    return S


def softmax_rows(S, mask=None):
    S = _floats(S)
    allowed = np.ones(S.shape, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), S.shape)
    A = np.zeros(S.shape)
    for row in _batches(S, 1):
        kept = [s for s, ok in zip(S[row], allowed[row]) if ok]
        if not kept:  # no key allowed: the row stays all zeros
            continue
        top = max(kept)  # shifting by the row's maximum keeps exp from overflowing
        exps = [math.exp(s - top) if ok else 0.0 for s, ok in zip(S[row], allowed[row])]
        total = sum(exps)
        A[row] = [e / total for e in exps]
    return A


def causal_mask(n):
    return np.array([[j <= i for j in range(n)] for i in range(n)], dtype=bool).reshape(n, n)


def attention_output(weights, V):
    A, V = _floats(weights), _floats(V)
    Y = np.zeros(A.shape[:-1] + (V.shape[-1],))
    for b in _batches(A, 2):
        for i in range(A.shape[-2]):
            mix = np.zeros(V.shape[-1])
            for j in range(A.shape[-1]):
                mix += A[b][i, j] * V[b][j]
            Y[b][i] = mix
    return Y


def scaled_dot_product_attention(Q, K, V, mask=None, scale=True):
    weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
    return attention_output(weights, V), weights


def split_heads(X, h):
    X = _floats(X)
    n, d = X.shape[-2], X.shape[-1]
    _check_heads(d, h)
    width = d // h
    H = np.zeros(X.shape[:-2] + (h, n, width))
    for b in _batches(X, 2):
        for head in range(h):
            for t in range(n):
                H[b][head, t] = X[b][t, head * width:(head + 1) * width]
    return H


def merge_heads(H):
    H = _floats(H)
    h, n, width = H.shape[-3], H.shape[-2], H.shape[-1]
    X = np.zeros(H.shape[:-3] + (n, h * width))
    for b in _batches(H, 3):
        for t in range(n):
            X[b][t] = np.concatenate([H[b][head, t] for head in range(h)])
    return X


def _masks_by_batch(mask, X):
    """The (n, n) mask of each batch entry of X (None for no mask)."""
    n = X.shape[-2]
    if mask is None:
        return None
    return np.broadcast_to(np.asarray(mask, dtype=bool), X.shape[:-1] + (n,))


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask=None):
    X = _floats(X)
    _check_heads(X.shape[-1], h)
    Qh, Kh, Vh = (split_heads(_linear(X, W), h) for W in (Wq, Wk, Wv))
    masks = _masks_by_batch(mask, X)
    heads = np.zeros(Qh.shape)
    for b in _batches(X, 2):
        for head in range(h):
            heads[b][head], _ = scaled_dot_product_attention(Qh[b][head], Kh[b][head], Vh[b][head],
                                                             None if masks is None else masks[b])
    return _linear(merge_heads(heads), Wo)


def layer_norm(x, gamma, beta, eps=1e-5):
    x, gamma, beta = _floats(x), _floats(gamma), _floats(beta)
    d = x.shape[-1]
    y = np.zeros(x.shape)
    for token in _batches(x, 1):
        values = [float(v) for v in x[token]]
        mean = sum(values) / d
        variance = sum((v - mean) ** 2 for v in values) / d
        spread = math.sqrt(variance + eps)
        y[token] = [(v - mean) / spread * gamma[k] + beta[k] for k, v in enumerate(values)]
    return y


def feed_forward(x, W1, b1, W2, b2):
    x, W1, b1, W2, b2 = (_floats(a) for a in (x, W1, b1, W2, b2))
    out = np.zeros(x.shape[:-1] + (W2.shape[1],))
    for token in _batches(x, 1):
        hidden = [max(0.0, float(v)) for v in np.dot(x[token], W1) + b1]
        out[token] = np.dot(hidden, W2) + b2
    return out


def add_and_norm(x, sublayer_out, gamma, beta, eps=1e-5):
    return layer_norm(_floats(x) + _floats(sublayer_out), gamma, beta, eps)


def sinusoidal_positional_encoding(n, d):
    PE = np.zeros((n, d), dtype=np.float64)
    for p in range(n):
        for col in range(d):
            angle = p / 10000 ** (2 * (col // 2) / d)  # columns 2i and 2i+1 share angle i
            PE[p, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return PE


def padding_mask(lengths, n):
    lengths = np.asarray(lengths)
    mask = np.zeros(lengths.shape + (n,), dtype=bool)
    for seq in np.ndindex(*lengths.shape):
        length = int(lengths[seq])
        if length < 0 or length > n:
            raise ValueError(f"a length of {length} does not fit {n} positions")
        mask[seq] = [position < length for position in range(n)]
    return mask


def encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt):
    src, tgt = padding_mask(src_lengths, n_src), padding_mask(tgt_lengths, n_tgt)
    b = src.shape[0]
    encoder = np.zeros((b, n_src, n_src), dtype=bool)
    decoder = np.zeros((b, n_tgt, n_tgt), dtype=bool)
    cross = np.zeros((b, n_tgt, n_src), dtype=bool)
    for s in range(b):
        for i in range(n_src):
            for j in range(n_src):
                encoder[s, i, j] = src[s, j]
        for i in range(n_tgt):
            for j in range(n_tgt):
                decoder[s, i, j] = tgt[s, j] and j <= i
            for j in range(n_src):
                cross[s, i, j] = src[s, j]
    return encoder, decoder, cross


def cross_attention(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    return scaled_dot_product_attention(_linear(X_dec, Wq), _linear(X_enc, Wk), _linear(X_enc, Wv), mask)


def pool_tokens(H, mask=None, method="mean"):
    if method not in ("mean", "cls"):
        raise ValueError(f"unknown pooling method {method!r}")
    H = _floats(H)
    n, d = H.shape[-2], H.shape[-1]
    real = np.ones(H.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    pooled = np.zeros(H.shape[:-2] + (d,))
    for seq in _batches(H, 2):
        if method == "cls":
            pooled[seq] = H[seq][0]
            continue
        total, count = np.zeros(d), 0
        for t in range(n):
            if real[seq][t]:
                total += H[seq][t]
                count += 1
        pooled[seq] = total / count if count else total
    return pooled


def encoder_layer(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None):
    Y = add_and_norm(X, multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask), gamma1, beta1)
    return add_and_norm(Y, feed_forward(Y, W1, b1, W2, b2), gamma2, beta2)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, h, kv_heads, mask=None):
    X = _floats(X)
    d = X.shape[-1]
    _check_heads(d, h)
    if kv_heads <= 0 or h % kv_heads != 0:
        raise ValueError(f"{kv_heads} key/value heads do not divide {h} query heads")
    width, group = d // h, h // kv_heads
    Q, K, V = _linear(X, Wq), _linear(X, Wk), _linear(X, Wv)
    masks = _masks_by_batch(mask, X)
    concat = np.zeros(X.shape)
    for b in _batches(X, 2):
        for head in range(h):
            kv = head // group  # consecutive query heads share a key/value head
            q = Q[b][:, head * width:(head + 1) * width]
            k = K[b][:, kv * width:(kv + 1) * width]
            v = V[b][:, kv * width:(kv + 1) * width]
            out, _ = scaled_dot_product_attention(q, k, v, None if masks is None else masks[b])
            concat[b][:, head * width:(head + 1) * width] = out
    return _linear(concat, Wo)


def kv_cache_bytes(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    _check_heads(d, h)
    if kv_heads <= 0 or h % kv_heads != 0:
        raise ValueError(f"{kv_heads} key/value heads do not divide {h} query heads")
    per_token = 2 * kv_heads * (d // h)  # a key and a value per key/value head
    return int(per_token * n * layers * batch * bytes_per_value)


def decoder_step(x, K_cache, V_cache, Wq, Wk, Wv):
    q, k, v = _linear(x, Wq), _linear(x, Wk), _linear(x, Wv)
    K = np.concatenate([_floats(K_cache), k], axis=-2)
    V = np.concatenate([_floats(V_cache), v], axis=-2)
    output, _ = scaled_dot_product_attention(q, K, V)  # the newest token may read every cached one and itself
    return output, K, V


def softmax_jacobian(S):
    S = _floats(S)
    n = S.shape[-1]
    J = np.zeros(S.shape + (n,))
    for vector in _batches(S, 1):
        a = softmax_rows(S[vector])
        for i in range(n):
            for j in range(n):
                J[vector][i, j] = a[i] * ((1.0 if i == j else 0.0) - a[j])
    return J


def softmax_backward(S, dA, mask=None):
    A = softmax_rows(S, mask)
    dA = _floats(dA)
    dS = np.zeros(A.shape)
    for row in _batches(A, 1):
        through = sum(float(g) * float(a) for g, a in zip(dA[row], A[row]))
        dS[row] = [float(a) * (float(g) - through) for g, a in zip(dA[row], A[row])]
    return dS
