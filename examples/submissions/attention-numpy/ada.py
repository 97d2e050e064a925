"""Answer key of Attention from scratch (NumPy) (instructors only)."""

import numpy as np


def attention_scores(Q, K, scale=True):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)

    Q, K = _float_array(Q), _float_array(K)
    S = Q @ np.swapaxes(K, -1, -2)
    return S / math.sqrt(Q.shape[-1]) if scale else S


def softmax_rows(S, mask=None):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)

    S = _float_array(S)
    logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
    row_max = logits.max(axis=-1, keepdims=True)
    # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    # Far-below-max logits underflow to 0, which is the correct weight; without this
    # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
    with np.errstate(under="ignore"):
        e = np.exp(logits - row_max)
    total = e.sum(axis=-1, keepdims=True)
    # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
    return e / np.where(total > 0, total, 1.0)


def causal_mask(n):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    return np.tril(np.ones((n, n), dtype=bool))


def attention_output(weights, V):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)

    return _float_array(weights) @ _float_array(V)


def scaled_dot_product_attention(Q, K, V, mask=None, scale=True):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


    def attention_scores(Q: ArrayLike, K: ArrayLike, scale: bool = True) -> NDArray[np.floating]:
        """Q (..., n_q, d_k), K (..., n_k, d_k) -> Q K^T (..., n_q, n_k), / sqrt(d_k) if ``scale``."""
        Q, K = _float_array(Q), _float_array(K)
        S = Q @ np.swapaxes(K, -1, -2)
        return S / math.sqrt(Q.shape[-1]) if scale else S


    def softmax_rows(S: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
        """Softmax over the last axis; masked entries get weight exactly 0.

        ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
        with no allowed entry gives all zeros, without NaN or floating-point warnings.
        """
        S = _float_array(S)
        logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
        row_max = logits.max(axis=-1, keepdims=True)
        # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        # Far-below-max logits underflow to 0, which is the correct weight; without this
        # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
        with np.errstate(under="ignore"):
            e = np.exp(logits - row_max)
        total = e.sum(axis=-1, keepdims=True)
        # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
        return e / np.where(total > 0, total, 1.0)


    def attention_output(weights: ArrayLike, V: ArrayLike) -> NDArray[np.floating]:
        """weights (..., n_q, n_k), V (..., n_k, d_v) -> weights @ V (..., n_q, d_v)."""
        return _float_array(weights) @ _float_array(V)

    weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
    return attention_output(weights, V), weights


def split_heads(X, h):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)

    X = _float_array(X)
    *lead, n, d = X.shape
    if h < 1 or d % h != 0:
        raise ValueError(f"number of heads h={h} must be a positive divisor of the model dimension d={d}")
    # Reshaping the feature axis (not the token axis) keeps every token in every head.
    return np.swapaxes(X.reshape(*lead, n, h, d // h), -3, -2)


def merge_heads(H):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)

    H = _float_array(H)
    *lead, h, n, dh = H.shape
    return np.swapaxes(H, -3, -2).reshape(*lead, n, h * dh)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask=None):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


    def attention_scores(Q: ArrayLike, K: ArrayLike, scale: bool = True) -> NDArray[np.floating]:
        """Q (..., n_q, d_k), K (..., n_k, d_k) -> Q K^T (..., n_q, n_k), / sqrt(d_k) if ``scale``."""
        Q, K = _float_array(Q), _float_array(K)
        S = Q @ np.swapaxes(K, -1, -2)
        return S / math.sqrt(Q.shape[-1]) if scale else S


    def softmax_rows(S: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
        """Softmax over the last axis; masked entries get weight exactly 0.

        ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
        with no allowed entry gives all zeros, without NaN or floating-point warnings.
        """
        S = _float_array(S)
        logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
        row_max = logits.max(axis=-1, keepdims=True)
        # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        # Far-below-max logits underflow to 0, which is the correct weight; without this
        # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
        with np.errstate(under="ignore"):
            e = np.exp(logits - row_max)
        total = e.sum(axis=-1, keepdims=True)
        # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
        return e / np.where(total > 0, total, 1.0)


    def attention_output(weights: ArrayLike, V: ArrayLike) -> NDArray[np.floating]:
        """weights (..., n_q, n_k), V (..., n_k, d_v) -> weights @ V (..., n_q, d_v)."""
        return _float_array(weights) @ _float_array(V)


    def scaled_dot_product_attention(
        Q: ArrayLike,
        K: ArrayLike,
        V: ArrayLike,
        mask: ArrayLike | None = None,
        scale: bool = True,
    ) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
        """softmax(Q K^T / sqrt(d_k)) V; returns (output (..., n_q, d_v), weights (..., n_q, n_k))."""
        weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
        return attention_output(weights, V), weights


    def split_heads(X: ArrayLike, h: int) -> NDArray[np.floating]:
        """(..., n, d) -> (..., h, n, d/h); head i gets features i*d/h:(i+1)*d/h of every token."""
        X = _float_array(X)
        *lead, n, d = X.shape
        if h < 1 or d % h != 0:
            raise ValueError(f"number of heads h={h} must be a positive divisor of the model dimension d={d}")
        # Reshaping the feature axis (not the token axis) keeps every token in every head.
        return np.swapaxes(X.reshape(*lead, n, h, d // h), -3, -2)


    def merge_heads(H: ArrayLike) -> NDArray[np.floating]:
        """(..., h, n, d_h) -> (..., n, h*d_h): concatenate the heads along the features."""
        H = _float_array(H)
        *lead, h, n, dh = H.shape
        return np.swapaxes(H, -3, -2).reshape(*lead, n, h * dh)

    X = _float_array(X)
    Q = split_heads(X @ _float_array(Wq), h)
    K = split_heads(X @ _float_array(Wk), h)
    V = split_heads(X @ _float_array(Wv), h)
    # A new head axis in front of (n, n) lets one mask serve every head.
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
    heads, _ = scaled_dot_product_attention(Q, K, V, mask=head_mask)
    return merge_heads(heads) @ _float_array(Wo)


def layer_norm(x, gamma, beta, eps=1e-5):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)

    x = _float_array(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * _float_array(gamma) + _float_array(beta)


def feed_forward(x, W1, b1, W2, b2):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)

    hidden = np.maximum(_float_array(x) @ _float_array(W1) + _float_array(b1), 0.0)
    return hidden @ _float_array(W2) + _float_array(b2)


def add_and_norm(x, sublayer_out, gamma, beta, eps=1e-5):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


    def layer_norm(x: ArrayLike, gamma: ArrayLike, beta: ArrayLike, eps: float = 1e-5) -> NDArray[np.floating]:
        """Normalise over the last axis (biased variance), then scale by gamma and shift by beta."""
        x = _float_array(x)
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * _float_array(gamma) + _float_array(beta)

    return layer_norm(_float_array(x) + _float_array(sublayer_out), gamma, beta, eps)


def sinusoidal_positional_encoding(n, d):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    positions = np.arange(n, dtype=np.float64)[:, None]
    even_columns = np.arange(0, d, 2, dtype=np.float64)
    angles = positions / 10000.0 ** (even_columns / d)
    pe = np.empty((n, d), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)
    # With odd d there is one fewer cosine column than sine columns.
    pe[:, 1::2] = np.cos(angles[:, : d // 2])
    return pe


def padding_mask(lengths, n):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > n):
        raise ValueError(f"every length must lie between 0 and n={n}")
    return np.arange(n) < lengths[..., None]


def encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def causal_mask(n: int) -> NDArray[np.bool_]:
        """(n, n) boolean mask, True where key index <= query index."""
        return np.tril(np.ones((n, n), dtype=bool))


    def padding_mask(lengths: ArrayLike, n: int) -> NDArray[np.bool_]:
        """lengths (...,) -> (..., n) boolean, True at positions 0..length-1 (real tokens), False on padding.

        ValueError for a length below 0 or above n.
        """
        lengths = np.asarray(lengths)
        if np.any(lengths < 0) or np.any(lengths > n):
            raise ValueError(f"every length must lie between 0 and n={n}")
        return np.arange(n) < lengths[..., None]

    src_keys = padding_mask(src_lengths, n_src)[..., None, :]
    tgt_keys = padding_mask(tgt_lengths, n_tgt)[..., None, :]
    lead = src_keys.shape[:-2]
    encoder = np.broadcast_to(src_keys, (*lead, n_src, n_src)).copy()
    decoder = causal_mask(n_tgt) & tgt_keys
    cross = np.broadcast_to(src_keys, (*lead, n_tgt, n_src)).copy()
    return encoder, decoder, cross


def cross_attention(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


    def attention_scores(Q: ArrayLike, K: ArrayLike, scale: bool = True) -> NDArray[np.floating]:
        """Q (..., n_q, d_k), K (..., n_k, d_k) -> Q K^T (..., n_q, n_k), / sqrt(d_k) if ``scale``."""
        Q, K = _float_array(Q), _float_array(K)
        S = Q @ np.swapaxes(K, -1, -2)
        return S / math.sqrt(Q.shape[-1]) if scale else S


    def softmax_rows(S: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
        """Softmax over the last axis; masked entries get weight exactly 0.

        ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
        with no allowed entry gives all zeros, without NaN or floating-point warnings.
        """
        S = _float_array(S)
        logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
        row_max = logits.max(axis=-1, keepdims=True)
        # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        # Far-below-max logits underflow to 0, which is the correct weight; without this
        # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
        with np.errstate(under="ignore"):
            e = np.exp(logits - row_max)
        total = e.sum(axis=-1, keepdims=True)
        # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
        return e / np.where(total > 0, total, 1.0)


    def attention_output(weights: ArrayLike, V: ArrayLike) -> NDArray[np.floating]:
        """weights (..., n_q, n_k), V (..., n_k, d_v) -> weights @ V (..., n_q, d_v)."""
        return _float_array(weights) @ _float_array(V)


    def scaled_dot_product_attention(
        Q: ArrayLike,
        K: ArrayLike,
        V: ArrayLike,
        mask: ArrayLike | None = None,
        scale: bool = True,
    ) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
        """softmax(Q K^T / sqrt(d_k)) V; returns (output (..., n_q, d_v), weights (..., n_q, n_k))."""
        weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
        return attention_output(weights, V), weights

    X_dec, X_enc = _float_array(X_dec), _float_array(X_enc)
    Q = X_dec @ _float_array(Wq)
    K = X_enc @ _float_array(Wk)
    V = X_enc @ _float_array(Wv)
    return scaled_dot_product_attention(Q, K, V, mask=mask)


def pool_tokens(H, mask=None, method="mean"):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)

    if method not in ("mean", "cls"):
        raise ValueError(f"method must be 'mean' or 'cls', got {method!r}")
    H = _float_array(H)
    if method == "cls":
        return H[..., 0, :].copy()
    keep = np.ones(H.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    keep = keep[..., None]
    total = np.where(keep, H, 0.0).sum(axis=-2)
    # The count keeps its feature axis (..., 1), so it divides every feature of its own sequence.
    count = keep.sum(axis=-2).astype(H.dtype)
    return total / np.maximum(count, 1)


def encoder_layer(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


    def attention_scores(Q: ArrayLike, K: ArrayLike, scale: bool = True) -> NDArray[np.floating]:
        """Q (..., n_q, d_k), K (..., n_k, d_k) -> Q K^T (..., n_q, n_k), / sqrt(d_k) if ``scale``."""
        Q, K = _float_array(Q), _float_array(K)
        S = Q @ np.swapaxes(K, -1, -2)
        return S / math.sqrt(Q.shape[-1]) if scale else S


    def softmax_rows(S: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
        """Softmax over the last axis; masked entries get weight exactly 0.

        ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
        with no allowed entry gives all zeros, without NaN or floating-point warnings.
        """
        S = _float_array(S)
        logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
        row_max = logits.max(axis=-1, keepdims=True)
        # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        # Far-below-max logits underflow to 0, which is the correct weight; without this
        # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
        with np.errstate(under="ignore"):
            e = np.exp(logits - row_max)
        total = e.sum(axis=-1, keepdims=True)
        # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
        return e / np.where(total > 0, total, 1.0)


    def attention_output(weights: ArrayLike, V: ArrayLike) -> NDArray[np.floating]:
        """weights (..., n_q, n_k), V (..., n_k, d_v) -> weights @ V (..., n_q, d_v)."""
        return _float_array(weights) @ _float_array(V)


    def scaled_dot_product_attention(
        Q: ArrayLike,
        K: ArrayLike,
        V: ArrayLike,
        mask: ArrayLike | None = None,
        scale: bool = True,
    ) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
        """softmax(Q K^T / sqrt(d_k)) V; returns (output (..., n_q, d_v), weights (..., n_q, n_k))."""
        weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
        return attention_output(weights, V), weights


    def layer_norm(x: ArrayLike, gamma: ArrayLike, beta: ArrayLike, eps: float = 1e-5) -> NDArray[np.floating]:
        """Normalise over the last axis (biased variance), then scale by gamma and shift by beta."""
        x = _float_array(x)
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * _float_array(gamma) + _float_array(beta)


    def add_and_norm(
        x: ArrayLike,
        sublayer_out: ArrayLike,
        gamma: ArrayLike,
        beta: ArrayLike,
        eps: float = 1e-5,
    ) -> NDArray[np.floating]:
        """Post-norm residual of the original Transformer: layer_norm(x + sublayer_out)."""
        return layer_norm(_float_array(x) + _float_array(sublayer_out), gamma, beta, eps)


    def feed_forward(
        x: ArrayLike,
        W1: ArrayLike,
        b1: ArrayLike,
        W2: ArrayLike,
        b2: ArrayLike,
    ) -> NDArray[np.floating]:
        """Position-wise FFN: relu(x @ W1 + b1) @ W2 + b2."""
        hidden = np.maximum(_float_array(x) @ _float_array(W1) + _float_array(b1), 0.0)
        return hidden @ _float_array(W2) + _float_array(b2)


    def split_heads(X: ArrayLike, h: int) -> NDArray[np.floating]:
        """(..., n, d) -> (..., h, n, d/h); head i gets features i*d/h:(i+1)*d/h of every token."""
        X = _float_array(X)
        *lead, n, d = X.shape
        if h < 1 or d % h != 0:
            raise ValueError(f"number of heads h={h} must be a positive divisor of the model dimension d={d}")
        # Reshaping the feature axis (not the token axis) keeps every token in every head.
        return np.swapaxes(X.reshape(*lead, n, h, d // h), -3, -2)


    def merge_heads(H: ArrayLike) -> NDArray[np.floating]:
        """(..., h, n, d_h) -> (..., n, h*d_h): concatenate the heads along the features."""
        H = _float_array(H)
        *lead, h, n, dh = H.shape
        return np.swapaxes(H, -3, -2).reshape(*lead, n, h * dh)


    def multi_head_attention(
        X: ArrayLike,
        Wq: ArrayLike,
        Wk: ArrayLike,
        Wv: ArrayLike,
        Wo: ArrayLike,
        h: int,
        mask: ArrayLike | None = None,
    ) -> NDArray[np.floating]:
        """Multi-head self-attention of X (..., n, d) with d x d projections; returns (..., n, d).

        Each head uses scores scaled by sqrt(d/h). ``mask`` is broadcastable to
        (..., n, n) (no head axis) and is applied to every head.
        """
        X = _float_array(X)
        Q = split_heads(X @ _float_array(Wq), h)
        K = split_heads(X @ _float_array(Wk), h)
        V = split_heads(X @ _float_array(Wv), h)
        # A new head axis in front of (n, n) lets one mask serve every head.
        head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
        heads, _ = scaled_dot_product_attention(Q, K, V, mask=head_mask)
        return merge_heads(heads) @ _float_array(Wo)

    Y = add_and_norm(X, multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask), gamma1, beta1)
    return add_and_norm(Y, feed_forward(Y, W1, b1, W2, b2), gamma2, beta2)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, h, kv_heads, mask=None):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


    def attention_scores(Q: ArrayLike, K: ArrayLike, scale: bool = True) -> NDArray[np.floating]:
        """Q (..., n_q, d_k), K (..., n_k, d_k) -> Q K^T (..., n_q, n_k), / sqrt(d_k) if ``scale``."""
        Q, K = _float_array(Q), _float_array(K)
        S = Q @ np.swapaxes(K, -1, -2)
        return S / math.sqrt(Q.shape[-1]) if scale else S


    def softmax_rows(S: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
        """Softmax over the last axis; masked entries get weight exactly 0.

        ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
        with no allowed entry gives all zeros, without NaN or floating-point warnings.
        """
        S = _float_array(S)
        logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
        row_max = logits.max(axis=-1, keepdims=True)
        # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        # Far-below-max logits underflow to 0, which is the correct weight; without this
        # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
        with np.errstate(under="ignore"):
            e = np.exp(logits - row_max)
        total = e.sum(axis=-1, keepdims=True)
        # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
        return e / np.where(total > 0, total, 1.0)


    def attention_output(weights: ArrayLike, V: ArrayLike) -> NDArray[np.floating]:
        """weights (..., n_q, n_k), V (..., n_k, d_v) -> weights @ V (..., n_q, d_v)."""
        return _float_array(weights) @ _float_array(V)


    def scaled_dot_product_attention(
        Q: ArrayLike,
        K: ArrayLike,
        V: ArrayLike,
        mask: ArrayLike | None = None,
        scale: bool = True,
    ) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
        """softmax(Q K^T / sqrt(d_k)) V; returns (output (..., n_q, d_v), weights (..., n_q, n_k))."""
        weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
        return attention_output(weights, V), weights


    def split_heads(X: ArrayLike, h: int) -> NDArray[np.floating]:
        """(..., n, d) -> (..., h, n, d/h); head i gets features i*d/h:(i+1)*d/h of every token."""
        X = _float_array(X)
        *lead, n, d = X.shape
        if h < 1 or d % h != 0:
            raise ValueError(f"number of heads h={h} must be a positive divisor of the model dimension d={d}")
        # Reshaping the feature axis (not the token axis) keeps every token in every head.
        return np.swapaxes(X.reshape(*lead, n, h, d // h), -3, -2)


    def merge_heads(H: ArrayLike) -> NDArray[np.floating]:
        """(..., h, n, d_h) -> (..., n, h*d_h): concatenate the heads along the features."""
        H = _float_array(H)
        *lead, h, n, dh = H.shape
        return np.swapaxes(H, -3, -2).reshape(*lead, n, h * dh)

    X = _float_array(X)
    if kv_heads < 1 or h % kv_heads != 0:
        raise ValueError(f"kv_heads={kv_heads} must be a positive divisor of the number of query heads h={h}")
    Q = split_heads(X @ _float_array(Wq), h)
    K = split_heads(X @ _float_array(Wk), kv_heads)
    V = split_heads(X @ _float_array(Wv), kv_heads)
    # Consecutive query heads form a group: repeat each key/value head (not tile the stack).
    K = np.repeat(K, h // kv_heads, axis=-3)
    V = np.repeat(V, h // kv_heads, axis=-3)
    head_mask = None if mask is None else np.expand_dims(np.atleast_2d(np.asarray(mask, dtype=bool)), -3)
    heads, _ = scaled_dot_product_attention(Q, K, V, mask=head_mask)
    return merge_heads(heads) @ _float_array(Wo)


def kv_cache_bytes(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    from typing import TYPE_CHECKING

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


    def kv_cache_entries(n: int, d: int, h: int, kv_heads: int, layers: int = 1) -> int:
        """Numbers stored in a KV cache: keys and values for n tokens, kv_heads * d/h wide, per layer."""
        _require_positive(n=n, layers=layers)
        return 2 * layers * n * _kv_width(d, h, kv_heads)

    _require_positive(batch=batch, bytes_per_value=bytes_per_value)
    return batch * bytes_per_value * kv_cache_entries(n, d, h, kv_heads, layers)


def decoder_step(x, K_cache, V_cache, Wq, Wk, Wv):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


    def attention_scores(Q: ArrayLike, K: ArrayLike, scale: bool = True) -> NDArray[np.floating]:
        """Q (..., n_q, d_k), K (..., n_k, d_k) -> Q K^T (..., n_q, n_k), / sqrt(d_k) if ``scale``."""
        Q, K = _float_array(Q), _float_array(K)
        S = Q @ np.swapaxes(K, -1, -2)
        return S / math.sqrt(Q.shape[-1]) if scale else S


    def softmax_rows(S: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
        """Softmax over the last axis; masked entries get weight exactly 0.

        ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
        with no allowed entry gives all zeros, without NaN or floating-point warnings.
        """
        S = _float_array(S)
        logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
        row_max = logits.max(axis=-1, keepdims=True)
        # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        # Far-below-max logits underflow to 0, which is the correct weight; without this
        # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
        with np.errstate(under="ignore"):
            e = np.exp(logits - row_max)
        total = e.sum(axis=-1, keepdims=True)
        # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
        return e / np.where(total > 0, total, 1.0)


    def attention_output(weights: ArrayLike, V: ArrayLike) -> NDArray[np.floating]:
        """weights (..., n_q, n_k), V (..., n_k, d_v) -> weights @ V (..., n_q, d_v)."""
        return _float_array(weights) @ _float_array(V)


    def scaled_dot_product_attention(
        Q: ArrayLike,
        K: ArrayLike,
        V: ArrayLike,
        mask: ArrayLike | None = None,
        scale: bool = True,
    ) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
        """softmax(Q K^T / sqrt(d_k)) V; returns (output (..., n_q, d_v), weights (..., n_q, n_k))."""
        weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
        return attention_output(weights, V), weights

    x = _float_array(x)
    K = np.concatenate([_float_array(K_cache), x @ _float_array(Wk)], axis=-2)
    V = np.concatenate([_float_array(V_cache), x @ _float_array(Wv)], axis=-2)
    # The newest token is the last position, whose causal row allows every key: no mask needed.
    out, _ = scaled_dot_product_attention(x @ _float_array(Wq), K, V)
    return out, K, V


def softmax_jacobian(S):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


    def softmax_rows(S: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
        """Softmax over the last axis; masked entries get weight exactly 0.

        ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
        with no allowed entry gives all zeros, without NaN or floating-point warnings.
        """
        S = _float_array(S)
        logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
        row_max = logits.max(axis=-1, keepdims=True)
        # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        # Far-below-max logits underflow to 0, which is the correct weight; without this
        # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
        with np.errstate(under="ignore"):
            e = np.exp(logits - row_max)
        total = e.sum(axis=-1, keepdims=True)
        # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
        return e / np.where(total > 0, total, 1.0)

    a = softmax_rows(S)
    column = a[..., :, None]
    return column * np.eye(a.shape[-1], dtype=a.dtype) - column * a[..., None, :]


def softmax_backward(S, dA, mask=None):
    import math
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    def _float_array(a: ArrayLike) -> NDArray[np.floating]:
        # Keep float32 inputs float32; only integer/bool inputs are promoted.
        arr = np.asarray(a)
        return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)


    def softmax_rows(S: ArrayLike, mask: ArrayLike | None = None) -> NDArray[np.floating]:
        """Softmax over the last axis; masked entries get weight exactly 0.

        ``mask`` is boolean and broadcastable to ``S`` (True = may attend). A row
        with no allowed entry gives all zeros, without NaN or floating-point warnings.
        """
        S = _float_array(S)
        logits = S if mask is None else np.where(np.asarray(mask, dtype=bool), S, -np.inf)
        row_max = logits.max(axis=-1, keepdims=True)
        # A fully masked row has max -inf; shifting by it would give inf - inf = NaN.
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        # Far-below-max logits underflow to 0, which is the correct weight; without this
        # a caller's np.errstate(all="raise") would turn it into a FloatingPointError.
        with np.errstate(under="ignore"):
            e = np.exp(logits - row_max)
        total = e.sum(axis=-1, keepdims=True)
        # Fully masked rows have total 0 and e == 0, so dividing by 1 leaves zeros.
        return e / np.where(total > 0, total, 1.0)

    A = softmax_rows(S, mask)
    dA = _float_array(dA)
    return A * (dA - (dA * A).sum(axis=-1, keepdims=True))


STUDENT_ID = "ada"

ANSWERS = {'one-query-by-hand': {'scores': [-10.0, -11.0, -9.0],
                       'weights': [0.2447284711, 0.0900305732, 0.6652409558],
                       'output': [4.3347590442, 2.0085542654]},
 'masked-renormalisation': {'weights': [0.2727272727, 0.4545454545, 0.2727272727],
                            'output': 7.9090909091,
                            'masked_weights': [0.0, 0.625, 0.375],
                            'masked_output': 6.375},
 'layer-norm-by-hand': {'mean': 0.0,
                        'variance': 9.0,
                        'normalised': [-1.0, -0.3333333333, 1.6666666667, -0.3333333333]},
 'ffn-by-hand': {'pre': [4.0, -4.0, 4.0], 'hidden': [4.0, 0.0, 4.0], 'output': [8.0, 0.0]},
 'mha-parameter-count': {'weights': 984064.0, 'biases': 1984.0, 'total': 986048.0},
 'score-growth': {'scores_old': 147456.0, 'scores_new': 5308416.0, 'ratio': 36.0},
 'scores-shape': '12 x 5',
 'output-shape': '12 x 40',
 'split-heads-shape': '5 x 384',
 'concat-shape': '11 x 384',
 'rnn-sequential': {'answer': False,
                    'follow_up': 'A',
                    'correction': 'Given the whole input sequence, a Transformer processes all '
                                  'positions at once: the scores QK^T, the softmax and AV are '
                                  'matrix operations over every position in parallel. Only '
                                  'autoregressive generation is step by step, because each new '
                                  'token depends on the tokens generated before it.'},
 'rnn-batch-parallel': {'answer': True, 'follow_up': 'D', 'correction': ''},
 'heads-reduce-cost': {'answer': False,
                       'follow_up': 'D',
                       'correction': 'The advantage of multiple heads is what they can represent: '
                                     'h heads attend in h different learned subspaces at once, so '
                                     'one layer can follow several relations (for example '
                                     'agreement and coreference) in parallel. The cost is not '
                                     'reduced: with the model width d fixed each head works in d/h '
                                     'dimensions, so h heads together still cost O(n^2 d), the '
                                     'same as one wide head.'},
 'training-vs-generation': {'answer': True, 'follow_up': 'C', 'correction': ''},
 'ffn-quadratic': {'answer': False,
                   'follow_up': 327680.0,
                   'correction': 'The FFN does act on each position independently, and for exactly '
                                 'that reason its cost is O(n d d_ff): linear in the sequence '
                                 'length n. The O(n^2) term of a layer comes from attention, which '
                                 'pairs every position with every other.'},
 'ffn-shared-weights': {'answer': True, 'follow_up': 'A', 'correction': ''},
 'mha-heads-and-parameters': 'C',
 'heads-by-numbers': {'head_width': 128.0,
                      'parameters': 2362368.0,
                      'scores': 1536.0,
                      'products': 393216.0},
 'local-window-scores': {'full': 780.0, 'windowed': 114.0, 'layers': 19.0},
 'generation-score-count': {'step_scores': 5.0,
                            'cached_total': 28.0,
                            'recompute_total': 140.0,
                            'training_pass': 49.0}}
