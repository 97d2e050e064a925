"""Named wrong implementations of the architecture and generation functions: encoder-decoder masks, cross-attention,
pooling, the encoder layer, the KV cache's size and the decoder's step.

A part of solutions.misconceptions, which says what the mutants are for and
imports these (the bank names them solutions.misconceptions.NAME). Its header is
that module's, word for word: each function stands alone with it and `ref`.
"""

import math
from functools import partial

import numpy as np

from . import numpy_ref as ref

_f = partial(np.asarray, dtype=float)


# ------------------------------------------------------- encoder_decoder_masks


def masks_causal_encoder(src_lengths, tgt_lengths, n_src, n_tgt):
    """A causal mask in the encoder as well: the encoder reads the whole source in both directions."""
    encoder, decoder, cross = ref.encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt)
    return encoder & ref.causal_mask(n_src), decoder, cross


def masks_decoder_not_causal(src_lengths, tgt_lengths, n_src, n_tgt):
    """The decoder's self-attention hides the padding but not the future."""
    encoder, decoder, cross = ref.encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt)
    keys = ref.padding_mask(tgt_lengths, n_tgt)[..., None, :]
    return encoder, np.broadcast_to(keys, decoder.shape).copy(), cross


def masks_causal_cross(src_lengths, tgt_lengths, n_src, n_tgt):
    """Cross-attention made causal (target i reads source j <= i only); the decoder may read the whole source."""
    encoder, decoder, cross = ref.encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt)
    return encoder, decoder, cross & np.tril(np.ones((n_tgt, n_src), dtype=bool))


def masks_padding_on_queries(src_lengths, tgt_lengths, n_src, n_tgt):
    """Padding hides rows (queries) instead of columns (keys)."""
    src = ref.padding_mask(src_lengths, n_src)[..., :, None]
    tgt = ref.padding_mask(tgt_lengths, n_tgt)[..., :, None]
    encoder = np.broadcast_to(src, (*src.shape[:-2], n_src, n_src)).copy()
    decoder = ref.causal_mask(n_tgt) & tgt
    cross = np.broadcast_to(tgt, (*tgt.shape[:-2], n_tgt, n_src)).copy()
    return encoder, decoder, cross


def masks_causal_or_padding(src_lengths, tgt_lengths, n_src, n_tgt):
    """Decoder keys allowed when either rule allows them (causal OR real) instead of both."""
    encoder, _, cross = ref.encoder_decoder_masks(src_lengths, tgt_lengths, n_src, n_tgt)
    keys = ref.padding_mask(tgt_lengths, n_tgt)[..., None, :]
    return encoder, ref.causal_mask(n_tgt) | keys, cross


# ------------------------------------------------------------- cross_attention


def cross_queries_from_encoder(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    """Roles swapped: queries from the encoder, keys and values from the decoder."""
    X_dec, X_enc = _f(X_dec), _f(X_enc)
    return ref.scaled_dot_product_attention(X_enc @ _f(Wq), X_dec @ _f(Wk), X_dec @ _f(Wv), mask=mask)


def cross_self_attention(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    """Keys and values from the decoder too: self-attention over the target, the source never read."""
    X = _f(X_dec)
    return ref.scaled_dot_product_attention(X @ _f(Wq), X @ _f(Wk), X @ _f(Wv))


def cross_causal(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    """A causal mask added to cross-attention: target position i reads source tokens j <= i only."""
    n_dec, n_enc = _f(X_dec).shape[-2], _f(X_enc).shape[-2]
    causal = np.tril(np.ones((n_dec, n_enc), dtype=bool))
    return ref.cross_attention(X_dec, X_enc, Wq, Wk, Wv, causal if mask is None else causal & np.asarray(mask, dtype=bool))


def cross_unscaled(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    """Scores not divided by sqrt(d_k)."""
    X_dec, X_enc = _f(X_dec), _f(X_enc)
    return ref.scaled_dot_product_attention(X_dec @ _f(Wq), X_enc @ _f(Wk), X_enc @ _f(Wv), mask=mask, scale=False)


# ----------------------------------------------------------------- pool_tokens


def pool_mean_over_padding(H, mask=None, method="mean"):
    """The plain mean over all n positions, padding included."""
    H = _f(H)
    return H[..., 0, :] if method == "cls" else H.mean(axis=-2)


def pool_divided_by_length(H, mask=None, method="mean"):
    """Padding zeroed, but the sum divided by the padded length n instead of the number of real tokens."""
    H = _f(H)
    if method == "cls":
        return H[..., 0, :]
    keep = np.ones(H.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    return np.where(keep[..., None], H, 0.0).sum(axis=-2) / H.shape[-2]


def pool_nan_on_empty(H, mask=None, method="mean"):
    """Sum of the real tokens over their count with no guard: a sequence of padding only gives 0/0 = nan."""
    H = _f(H)
    if method == "cls":
        return H[..., 0, :]
    keep = np.ones(H.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    with np.errstate(all="ignore"):
        return np.where(keep[..., None], H, 0.0).sum(axis=-2) / keep.sum(axis=-1, keepdims=True)


def pool_count_not_broadcast(H, mask=None, method="mean"):
    """(b, d) sums divided by a (b,) count, which lines up with the features instead of the sequences."""
    H = _f(H)
    if method == "cls":
        return H[..., 0, :]
    keep = np.ones(H.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    return np.where(keep[..., None], H, 0.0).sum(axis=-2) / np.maximum(keep.sum(axis=-1), 1)


def pool_cls_last(H, mask=None, method="mean"):
    """The "cls" vector read from the last position instead of position 0, where [CLS] is prepended."""
    if method == "cls":
        return _f(H)[..., -1, :]
    return ref.pool_tokens(H, mask, method)


# --------------------------------------------------------------- encoder_layer


def encoder_layer_pre_norm(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None):
    """Pre-norm, Y = X + MHA(LN1(X)) and Y + FFN(LN2(Y)), where the post-norm layer was asked for."""
    X = _f(X)
    Y = X + ref.multi_head_attention(ref.layer_norm(X, gamma1, beta1), Wq, Wk, Wv, Wo, h, mask)
    return Y + ref.feed_forward(ref.layer_norm(Y, gamma2, beta2), W1, b1, W2, b2)


def encoder_layer_no_residual(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None):
    """LN1(MHA(X)) and LN2(FFN(Y)): neither sublayer's input is added back."""
    Y = ref.layer_norm(ref.multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask), gamma1, beta1)
    return ref.layer_norm(ref.feed_forward(Y, W1, b1, W2, b2), gamma2, beta2)


def encoder_layer_ffn_first(X, Wq, Wk, Wv, Wo, h, W1, b1, W2, b2, gamma1, beta1, gamma2, beta2, mask=None):
    """The feed-forward sublayer before the attention sublayer."""
    Y = ref.add_and_norm(X, ref.feed_forward(X, W1, b1, W2, b2), gamma1, beta1)
    return ref.add_and_norm(Y, ref.multi_head_attention(Y, Wq, Wk, Wv, Wo, h, mask), gamma2, beta2)
# -------------------------------------------------------------- kv_cache_bytes


def kv_bytes_keys_only(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    """The keys only: the cache holds the values as well (the factor 2 is missing)."""
    return layers * batch * n * kv_heads * (d // h) * bytes_per_value


def kv_bytes_query_heads(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    """One cached key/value head per query head, whatever kv_heads says: the MHA figure for every layer type."""
    return 2 * layers * batch * n * d * bytes_per_value


def kv_bytes_full_width_heads(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    """Every key/value head as wide as the model (kv_heads * d) instead of d/h."""
    return 2 * layers * batch * n * kv_heads * d * bytes_per_value


def kv_bytes_entries(n, d, h, kv_heads, layers=1, batch=1, bytes_per_value=2):
    """A count of numbers, not bytes: bytes_per_value never applied."""
    return 2 * layers * batch * n * kv_heads * (d // h)


# ---------------------------------------------------------------- decoder_step


def step_attends_before_appending(x, K_cache, V_cache, Wq, Wk, Wv):
    """Attention over the old cache only, so the new token never reads itself; the caches are updated afterwards."""
    x = _f(x)
    out, _ = ref.scaled_dot_product_attention(x @ _f(Wq), _f(K_cache), _f(V_cache))
    K = np.concatenate([_f(K_cache), x @ _f(Wk)], axis=-2)
    V = np.concatenate([_f(V_cache), x @ _f(Wv)], axis=-2)
    return out, K, V


def step_first_causal_row(x, K_cache, V_cache, Wq, Wk, Wv):
    """Row 0 of the training-time causal mask applied to the new token: it reads token 0 only."""
    x = _f(x)
    K = np.concatenate([_f(K_cache), x @ _f(Wk)], axis=-2)
    V = np.concatenate([_f(V_cache), x @ _f(Wv)], axis=-2)
    out, _ = ref.scaled_dot_product_attention(x @ _f(Wq), K, V, mask=ref.causal_mask(K.shape[-2])[:1])
    return out, K, V


def step_prepends_new_token(x, K_cache, V_cache, Wq, Wk, Wv):
    """The new key and value put in front of the cache: the output is right, the cache order is not."""
    x = _f(x)
    K = np.concatenate([x @ _f(Wk), _f(K_cache)], axis=-2)
    V = np.concatenate([x @ _f(Wv), _f(V_cache)], axis=-2)
    out, _ = ref.scaled_dot_product_attention(x @ _f(Wq), K, V)
    return out, K, V


def step_cache_not_updated(x, K_cache, V_cache, Wq, Wk, Wv):
    """The right output, but the caches handed back as they came, without the new key and value."""
    out, _, _ = ref.decoder_step(x, K_cache, V_cache, Wq, Wk, Wv)
    return out, _f(K_cache), _f(V_cache)


def step_unscaled(x, K_cache, V_cache, Wq, Wk, Wv):
    """Scores of the new query not divided by sqrt(d_k)."""
    x = _f(x)
    K = np.concatenate([_f(K_cache), x @ _f(Wk)], axis=-2)
    V = np.concatenate([_f(V_cache), x @ _f(Wv)], axis=-2)
    out, _ = ref.scaled_dot_product_attention(x @ _f(Wq), K, V, scale=False)
    return out, K, V
