"""solutions.torch_ref against solutions.numpy_ref and against PyTorch's own operators.

Random batched float64 inputs (batch dims (2, 3)) with no mask, a causal mask,
a key-padding mask and a random mask, the last two each with a fully masked row.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder.references import numpy_ref as npr
from autograder.references import torch_ref as tr

BATCH = (2, 3)
N_Q, N_K, D = 5, 6, 8
TOL = 1e-10
MASK_KINDS = [None, "causal", "padding", "random"]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(2024)


def make_mask(kind: str | None, rng: np.random.Generator, n_q: int = N_Q, n_k: int = N_K) -> np.ndarray | None:
    """A boolean mask broadcastable to BATCH + (n_q, n_k); True = may attend."""
    if kind is None:
        return None
    if kind == "causal":
        return npr.causal_mask(max(n_q, n_k))[:n_q, :n_k]
    if kind == "padding":
        mask = rng.random((*BATCH, 1, n_k)) < 0.6
        mask[..., 0] = True
        mask[0, 1] = False  # one batch element has no valid key at all
        return mask
    if kind == "random":
        mask = rng.random((*BATCH, n_q, n_k)) < 0.5
        mask[1, 2, 0] = False
        return mask
    raise AssertionError(kind)


def t(a: np.ndarray | None) -> Tensor | None:
    return None if a is None else torch.from_numpy(np.ascontiguousarray(a))


def assert_matches(torch_out: Tensor, numpy_out: np.ndarray, tol: float = TOL) -> None:
    assert isinstance(torch_out, Tensor)
    assert torch_out.dtype == torch.float64
    assert torch_out.shape == numpy_out.shape
    np.testing.assert_allclose(torch_out.numpy(), numpy_out, rtol=0, atol=tol)


# --- NumPy reference vs PyTorch reference, float64 --------------------------------------


@pytest.mark.parametrize("scale", [True, False])
def test_attention_scores(rng: np.random.Generator, scale: bool) -> None:
    Q, K = rng.normal(size=(*BATCH, N_Q, D)), rng.normal(size=(*BATCH, N_K, D))
    assert_matches(tr.attention_scores(t(Q), t(K), scale), npr.attention_scores(Q, K, scale))


@pytest.mark.parametrize("kind", MASK_KINDS)
def test_softmax_rows(rng: np.random.Generator, kind: str | None) -> None:
    S = 5 * rng.normal(size=(*BATCH, N_Q, N_K))
    mask = make_mask(kind, rng)
    assert_matches(tr.softmax_rows(t(S), t(mask)), npr.softmax_rows(S, mask))


def test_causal_mask() -> None:
    for n in (1, 2, 7):
        got = tr.causal_mask(n)
        assert got.dtype == torch.bool
        assert got.tolist() == npr.causal_mask(n).tolist()


def test_attention_output(rng: np.random.Generator) -> None:
    W, V = rng.random(size=(*BATCH, N_Q, N_K)), rng.normal(size=(*BATCH, N_K, 3))
    assert_matches(tr.attention_output(t(W), t(V)), npr.attention_output(W, V))


@pytest.mark.parametrize("scale", [True, False])
@pytest.mark.parametrize("kind", MASK_KINDS)
def test_scaled_dot_product_attention(rng: np.random.Generator, kind: str | None, scale: bool) -> None:
    Q, K = rng.normal(size=(*BATCH, N_Q, D)), rng.normal(size=(*BATCH, N_K, D))
    V = rng.normal(size=(*BATCH, N_K, 3))
    mask = make_mask(kind, rng)
    out, weights = tr.scaled_dot_product_attention(t(Q), t(K), t(V), t(mask), scale)
    np_out, np_weights = npr.scaled_dot_product_attention(Q, K, V, mask, scale)
    assert_matches(out, np_out)
    assert_matches(weights, np_weights)


def test_layer_norm_and_add_and_norm(rng: np.random.Generator) -> None:
    x, sub = rng.normal(size=(*BATCH, N_Q, D)), rng.normal(size=(*BATCH, N_Q, D))
    gamma, beta = rng.normal(size=D), rng.normal(size=D)
    assert_matches(tr.layer_norm(t(x), t(gamma), t(beta)), npr.layer_norm(x, gamma, beta))
    assert_matches(tr.layer_norm(t(x), t(gamma), t(beta), 0.1), npr.layer_norm(x, gamma, beta, 0.1))
    assert_matches(
        tr.add_and_norm(t(x), t(sub), t(gamma), t(beta)),
        npr.add_and_norm(x, sub, gamma, beta),
    )


def test_feed_forward(rng: np.random.Generator) -> None:
    d_ff = 16
    x = rng.normal(size=(*BATCH, N_Q, D))
    W1, b1 = rng.normal(size=(D, d_ff)), rng.normal(size=d_ff)
    W2, b2 = rng.normal(size=(d_ff, D)), rng.normal(size=D)
    assert_matches(tr.feed_forward(*map(t, (x, W1, b1, W2, b2))), npr.feed_forward(x, W1, b1, W2, b2))


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_split_and_merge_heads(rng: np.random.Generator, h: int) -> None:
    X = rng.normal(size=(*BATCH, N_Q, D))
    heads = tr.split_heads(t(X), h)
    assert_matches(heads, npr.split_heads(X, h))
    assert_matches(tr.merge_heads(heads), npr.merge_heads(npr.split_heads(X, h)))
    assert torch.equal(tr.merge_heads(heads), t(X))


@pytest.mark.parametrize("h", [1, 2, 4])
@pytest.mark.parametrize("kind", MASK_KINDS)
def test_multi_head_attention(rng: np.random.Generator, kind: str | None, h: int) -> None:
    X = rng.normal(size=(*BATCH, N_K, D))
    Ws = [rng.normal(size=(D, D)) for _ in range(4)]
    mask = make_mask(kind, rng, n_q=N_K)
    assert_matches(
        tr.multi_head_attention(t(X), *map(t, Ws), h, t(mask)),
        npr.multi_head_attention(X, *Ws, h, mask),
    )


@pytest.mark.parametrize("n, d", [(7, 8), (4, 5), (1, 1), (50, 16)])
def test_sinusoidal_positional_encoding(n: int, d: int) -> None:
    assert_matches(tr.sinusoidal_positional_encoding(n, d), npr.sinusoidal_positional_encoding(n, d))


# --- dtype, stability and autograd of the PyTorch reference ------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_is_preserved(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(*BATCH, N_K, D, generator=g, dtype=dtype)
    W = torch.randn(D, D, generator=g, dtype=dtype)
    gamma, beta = torch.ones(D, dtype=dtype), torch.zeros(D, dtype=dtype)
    mask = torch.ones(N_K, N_K, dtype=torch.bool)
    mask[2] = False
    out, weights = tr.scaled_dot_product_attention(X, X, X, mask)
    results = [
        tr.attention_scores(X, X),
        tr.softmax_rows(tr.attention_scores(X, X), mask),
        out,
        weights,
        tr.layer_norm(X, gamma, beta),
        tr.add_and_norm(X, X, gamma, beta),
        tr.feed_forward(X, W, beta, W, beta),
        tr.split_heads(X, 2),
        tr.merge_heads(tr.split_heads(X, 2)),
        tr.multi_head_attention(X, W, W, W, W, 2, mask),
        tr.sinusoidal_positional_encoding(N_K, D, dtype=dtype),
        *tr.cross_attention(X, X[..., :3, :], W, W, W, mask[:, :3]),
        tr.pool_tokens(X, mask[0]),
        tr.softmax_jacobian(X),
        tr.softmax_backward(tr.attention_scores(X, X), tr.attention_scores(X, X), mask),
        *tr.decoder_step(X[..., :1, :], X, X, W, W, W),
        tr.grouped_query_attention(X, W, W[:, :4], W[:, :4], W, 2, 1, mask),
        tr.encoder_layer(X, W, W, W, W, 2, W, beta, W, beta, gamma, beta, gamma, beta, mask),
    ]
    for r in results:
        assert r.dtype == dtype
        assert torch.isfinite(r).all()
    assert weights[..., 2, :].eq(0).all()


def test_positional_encoding_defaults_to_float64() -> None:
    assert tr.sinusoidal_positional_encoding(3, 4).dtype == torch.float64


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_stable_for_huge_logits(dtype: torch.dtype) -> None:
    S = torch.tensor([[1e4, -1e4, 0.0], [1e4, 1e4, 1e4], [-1e4, -1e4, -1e4 + 1]], dtype=dtype)
    weights = tr.softmax_rows(S)
    assert torch.isfinite(weights).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, dtype=dtype))
    torch.testing.assert_close(weights[0], torch.tensor([1.0, 0.0, 0.0], dtype=dtype))


def test_fully_masked_row_gives_zeros_and_zero_gradient() -> None:
    S = torch.tensor([[1.0, 2.0, 3.0], [1e4, -1e4, 5.0]], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, False, True], [False, False, False]])
    weights = tr.softmax_rows(S, mask)
    assert weights[1].tolist() == [0.0, 0.0, 0.0]
    assert weights[0, 1].item() == 0.0
    weights.sum().backward()
    assert torch.isfinite(S.grad).all()
    assert S.grad[1].tolist() == [0.0, 0.0, 0.0]


def test_multi_head_attention_gradcheck() -> None:
    # gradcheck also proves nothing is routed through NumPy (that would break autograd).
    g = torch.Generator().manual_seed(1)
    n, d, h = 4, 6, 3
    X, Wq, Wk, Wv, Wo = (
        torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)
        for shape in [(2, n, d), (d, d), (d, d), (d, d), (d, d)]
    )
    mask = tr.causal_mask(n).expand(2, n, n).clone()
    mask[1, 2] = False

    def f(*args: Tensor) -> Tensor:
        return tr.multi_head_attention(*args, h, mask)

    assert torch.autograd.gradcheck(f, (X, Wq, Wk, Wv, Wo))


def test_split_heads_rejects_non_divisor() -> None:
    with pytest.raises(ValueError, match="divisor"):
        tr.split_heads(torch.zeros(4, 6), 4)


# --- PyTorch reference vs PyTorch's own operators ----------------------------------------


@pytest.mark.parametrize("kind", [None, "padding", "random"])
def test_softmax_matches_torch_softmax(rng: np.random.Generator, kind: str | None) -> None:
    S = t(10 * rng.normal(size=(*BATCH, N_Q, N_K)))
    mask = t(make_mask(kind, rng))
    ours = tr.softmax_rows(S, mask)
    if mask is None:
        torch.testing.assert_close(ours, F.softmax(S, dim=-1), rtol=0, atol=TOL)
        return
    theirs = F.softmax(S.masked_fill(~mask, -math.inf), dim=-1)
    has_key = mask.expand_as(S).any(-1)
    torch.testing.assert_close(ours[has_key], theirs[has_key], rtol=0, atol=TOL)
    assert ours[~has_key].eq(0).all()


def test_layer_norm_matches_torch(rng: np.random.Generator) -> None:
    x = t(rng.normal(size=(*BATCH, N_Q, D)))
    gamma, beta = t(rng.normal(size=D)), t(rng.normal(size=D))
    for eps in (1e-5, 0.5):
        torch.testing.assert_close(
            tr.layer_norm(x, gamma, beta, eps), F.layer_norm(x, (D,), gamma, beta, eps), rtol=0, atol=TOL
        )


@pytest.mark.parametrize("kind", ["padding", "random"])
def test_sdpa_matches_torch_with_bool_mask(rng: np.random.Generator, kind: str) -> None:
    Q, K = t(rng.normal(size=(*BATCH, N_Q, D))), t(rng.normal(size=(*BATCH, N_K, D)))
    V = t(rng.normal(size=(*BATCH, N_K, 3)))
    mask = t(make_mask(kind, rng))
    ours, _ = tr.scaled_dot_product_attention(Q, K, V, mask)
    # F.scaled_dot_product_attention's boolean attn_mask also means True = may attend.
    # Rows without any allowed key come out as NaN or as zeros depending on the torch
    # version and backend, so only the other rows are compared.
    theirs = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    has_key = mask.expand(*BATCH, N_Q, N_K).any(-1)
    assert not has_key.all()
    torch.testing.assert_close(ours[has_key], theirs[has_key], rtol=0, atol=TOL)
    assert ours[~has_key].eq(0).all()


def test_sdpa_matches_torch_causal(rng: np.random.Generator) -> None:
    Q, K, V = (t(rng.normal(size=(*BATCH, N_K, D))) for _ in range(3))
    ours, _ = tr.scaled_dot_product_attention(Q, K, V, tr.causal_mask(N_K))
    theirs = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=TOL)


def test_sdpa_unscaled_matches_torch_with_scale_one(rng: np.random.Generator) -> None:
    Q, K, V = (t(rng.normal(size=(*BATCH, N_K, D))) for _ in range(3))
    ours, _ = tr.scaled_dot_product_attention(Q, K, V, scale=False)
    torch.testing.assert_close(ours, F.scaled_dot_product_attention(Q, K, V, scale=1.0), rtol=0, atol=TOL)


def torch_mha(Wq: Tensor, Wk: Tensor, Wv: Tensor, Wo: Tensor, h: int) -> nn.MultiheadAttention:
    d = Wq.shape[0]
    mha = nn.MultiheadAttention(d, h, bias=False, batch_first=True, dtype=torch.float64)
    # nn.MultiheadAttention computes x @ W.T (column convention), so our row-convention
    # matrices go in transposed, stacked as [Wq^T; Wk^T; Wv^T].
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([Wq.T, Wk.T, Wv.T]))
        mha.out_proj.weight.copy_(Wo.T)
    return mha


@pytest.mark.parametrize("h", [1, 2, 4])
def test_multi_head_attention_matches_nn_multihead_attention(rng: np.random.Generator, h: int) -> None:
    X = t(rng.normal(size=(*BATCH, N_K, D)))
    Ws = [t(rng.normal(size=(D, D))) for _ in range(4)]
    mha = torch_mha(*Ws, h)
    flat = X.reshape(-1, N_K, D)  # nn.MultiheadAttention takes a single batch dimension

    theirs, _ = mha(flat, flat, flat, need_weights=False)
    ours = tr.multi_head_attention(X, *Ws, h)
    torch.testing.assert_close(ours, theirs.reshape(X.shape), rtol=0, atol=TOL)

    # Its boolean attn_mask means True = NOT allowed, the opposite of ours.
    causal = tr.causal_mask(N_K)
    theirs, _ = mha(flat, flat, flat, attn_mask=~causal, need_weights=False)
    ours = tr.multi_head_attention(X, *Ws, h, causal)
    torch.testing.assert_close(ours, theirs.reshape(X.shape), rtol=0, atol=TOL)

    # key_padding_mask is (batch, n_k), also True = ignore; key 0 stays valid so no row is empty.
    keep = torch.from_numpy(rng.random((*BATCH, N_K)) < 0.6)
    keep[..., 0] = True
    theirs, _ = mha(flat, flat, flat, key_padding_mask=~keep.reshape(-1, N_K), need_weights=False)
    ours = tr.multi_head_attention(X, *Ws, h, keep.unsqueeze(-2))
    torch.testing.assert_close(ours, theirs.reshape(X.shape), rtol=0, atol=TOL)


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_split_heads_matches_view_transpose(rng: np.random.Generator, h: int) -> None:
    X = t(rng.normal(size=(*BATCH, N_Q, D)))
    assert torch.equal(tr.split_heads(X, h), X.view(*BATCH, N_Q, h, D // h).transpose(-3, -2))


# --- masks, cross-attention, pooling, the softmax's derivative, caches, GQA, the encoder layer ---


def test_padding_and_encoder_decoder_masks_match_numpy(rng: np.random.Generator) -> None:
    src, tgt = rng.integers(0, 6, size=4), rng.integers(0, 5, size=4)
    assert torch.equal(tr.padding_mask(t(src), 6), t(npr.padding_mask(src, 6)))
    for ours, theirs in zip(tr.encoder_decoder_masks(t(src), t(tgt), 6, 5), npr.encoder_decoder_masks(src, tgt, 6, 5)):
        assert ours.dtype == torch.bool and torch.equal(ours, t(theirs))
    with pytest.raises(ValueError):
        tr.padding_mask(torch.tensor([7]), 6)


def test_padding_mask_matches_pad_sequence() -> None:
    lengths = [3, 1, 4, 0]
    padded = nn.utils.rnn.pad_sequence([torch.ones(n) for n in lengths], batch_first=True)
    assert torch.equal(tr.padding_mask(torch.tensor(lengths), 4), padded.bool())


def test_decoder_mask_is_pytorchs_causal_mask_and_key_padding_mask(rng: np.random.Generator) -> None:
    n = 5
    # PyTorch marks what may NOT be read: -inf above the diagonal, True on padding keys.
    future = torch.isneginf(nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64))
    lengths = torch.tensor([5, 3])
    _, decoder, _ = tr.encoder_decoder_masks(lengths, lengths, n, n)
    assert torch.equal(decoder, ~future & tr.padding_mask(lengths, n).unsqueeze(-2))

    X = t(rng.normal(size=(2, n, D)))
    Ws = [t(rng.normal(size=(D, D))) for _ in range(4)]
    mha = torch_mha(*Ws, 2)
    theirs, _ = mha(X, X, X, attn_mask=future, key_padding_mask=~tr.padding_mask(lengths, n), need_weights=False)
    torch.testing.assert_close(tr.multi_head_attention(X, *Ws, 2, decoder), theirs, rtol=0, atol=TOL)


def test_cross_attention_matches_numpy_and_nn_multihead_attention(rng: np.random.Generator) -> None:
    d_enc = 6
    X_dec, X_enc = rng.normal(size=(*BATCH, N_Q, D)), rng.normal(size=(*BATCH, N_K, d_enc))
    Wq, Wk, Wv = rng.normal(size=(D, D)), rng.normal(size=(d_enc, D)), rng.normal(size=(d_enc, D))
    keep = rng.random((*BATCH, N_K)) < 0.6
    keep[..., 0] = True
    mask = keep[..., None, :]
    out, weights = tr.cross_attention(*map(t, (X_dec, X_enc, Wq, Wk, Wv, mask)))
    np_out, np_weights = npr.cross_attention(X_dec, X_enc, Wq, Wk, Wv, mask)
    assert_matches(out, np_out)
    assert_matches(weights, np_weights)

    # One head, query from the decoder, key and value (of another width) from the encoder.
    mha = nn.MultiheadAttention(D, 1, bias=False, kdim=d_enc, vdim=d_enc, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.q_proj_weight.copy_(t(Wq).T)
        mha.k_proj_weight.copy_(t(Wk).T)
        mha.v_proj_weight.copy_(t(Wv).T)
        mha.out_proj.weight.copy_(torch.eye(D, dtype=torch.float64))
    flat_dec, flat_enc = t(X_dec).reshape(-1, N_Q, D), t(X_enc).reshape(-1, N_K, d_enc)
    theirs, their_weights = mha(flat_dec, flat_enc, flat_enc, key_padding_mask=~t(keep).reshape(-1, N_K))
    torch.testing.assert_close(out, theirs.reshape(out.shape), rtol=0, atol=TOL)
    torch.testing.assert_close(weights, their_weights.reshape(weights.shape), rtol=0, atol=TOL)


def test_pool_tokens_matches_numpy_and_a_loop(rng: np.random.Generator) -> None:
    H = rng.normal(size=(4, N_K, D))
    lengths = np.array([N_K, 3, 0, 1])
    mask = npr.padding_mask(lengths, N_K)
    for method in ("mean", "cls"):
        assert_matches(tr.pool_tokens(t(H), t(mask), method), npr.pool_tokens(H, mask, method))
    ours = tr.pool_tokens(t(H), t(mask))
    for b, n in enumerate(lengths):
        want = t(H)[b, :n].mean(dim=0) if n else torch.zeros(D, dtype=torch.float64)
        torch.testing.assert_close(ours[b], want, rtol=0, atol=TOL)
    assert torch.equal(tr.pool_tokens(t(H), method="cls"), t(H)[:, 0])


def test_softmax_jacobian_matches_numpy_and_autograd(rng: np.random.Generator) -> None:
    S = 3 * rng.normal(size=(*BATCH, N_K))
    ours = tr.softmax_jacobian(t(S))
    assert_matches(ours, npr.softmax_jacobian(S))
    for index in np.ndindex(*BATCH):
        theirs = torch.autograd.functional.jacobian(lambda s: F.softmax(s, dim=-1), t(S[index]))
        torch.testing.assert_close(ours[index], theirs, rtol=0, atol=TOL)


@pytest.mark.parametrize("kind", MASK_KINDS)
def test_softmax_backward_matches_numpy_and_autograd(rng: np.random.Generator, kind: str | None) -> None:
    S, dA = 3 * rng.normal(size=(*BATCH, N_Q, N_K)), rng.normal(size=(*BATCH, N_Q, N_K))
    mask = make_mask(kind, rng)
    ours = tr.softmax_backward(t(S), t(dA), t(mask))
    assert_matches(ours, npr.softmax_backward(S, dA, mask))
    scores = t(S).requires_grad_()
    logits = scores if mask is None else scores.masked_fill(~t(mask), -math.inf)
    F.softmax(logits, dim=-1).backward(t(dA))
    # F.softmax turns a row with no allowed key into NaN (and NaN gradients); ours gives zeros there.
    has_key = torch.ones(S.shape[:-1], dtype=torch.bool) if mask is None else t(mask).expand(S.shape).any(-1)
    torch.testing.assert_close(ours[has_key], scores.grad[has_key], rtol=0, atol=TOL)
    assert ours[~has_key].eq(0).all()


def test_decoding_with_the_cache_matches_torch_causal_attention(rng: np.random.Generator) -> None:
    n, dk, dv = 6, 4, 3
    X = t(rng.normal(size=(*BATCH, n, D)))
    Wq, Wk, Wv = t(rng.normal(size=(D, dk))), t(rng.normal(size=(D, dk))), t(rng.normal(size=(D, dv)))
    full = F.scaled_dot_product_attention(X @ Wq, X @ Wk, X @ Wv, is_causal=True)
    K, V = torch.zeros(*BATCH, 0, dk, dtype=torch.float64), torch.zeros(*BATCH, 0, dv, dtype=torch.float64)
    for step in range(n):
        x = X[..., step : step + 1, :]
        np_out, np_K, np_V = npr.decoder_step(x.numpy(), K.numpy(), V.numpy(), Wq.numpy(), Wk.numpy(), Wv.numpy())
        out, K, V = tr.decoder_step(x, K, V, Wq, Wk, Wv)
        assert_matches(out, np_out)
        assert_matches(K, np_K)
        assert_matches(V, np_V)
        torch.testing.assert_close(out[..., 0, :], full[..., step, :], rtol=0, atol=TOL)
    torch.testing.assert_close(K, X @ Wk, rtol=0, atol=TOL)


@pytest.mark.parametrize("h, kv_heads", [(4, 4), (4, 2), (4, 1), (8, 2)])
def test_gqa_matches_numpy_and_torch_enable_gqa(rng: np.random.Generator, h: int, kv_heads: int) -> None:
    dh = D // h
    X = rng.normal(size=(*BATCH, N_K, D))
    Wq, Wo = rng.normal(size=(D, D)), rng.normal(size=(D, D))
    Wk, Wv = rng.normal(size=(D, kv_heads * dh)), rng.normal(size=(D, kv_heads * dh))
    mask = make_mask("causal", rng, n_q=N_K)
    ours = tr.grouped_query_attention(*map(t, (X, Wq, Wk, Wv, Wo)), h, kv_heads, t(mask))
    assert_matches(ours, npr.grouped_query_attention(X, Wq, Wk, Wv, Wo, h, kv_heads, mask))
    Q, K, V = tr.split_heads(t(X @ Wq), h), tr.split_heads(t(X @ Wk), kv_heads), tr.split_heads(t(X @ Wv), kv_heads)
    heads = F.scaled_dot_product_attention(Q, K, V, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(ours, tr.merge_heads(heads) @ t(Wo), rtol=0, atol=TOL)
    if kv_heads == h:
        torch.testing.assert_close(ours, tr.multi_head_attention(*map(t, (X, Wq, Wk, Wv, Wo)), h, t(mask)),
                                   rtol=0, atol=TOL)


def test_grouped_query_attention_gradcheck() -> None:
    g = torch.Generator().manual_seed(3)
    n, d, h, kv = 3, 4, 2, 1
    args = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)
            for shape in [(n, d), (d, d), (d, kv * d // h), (d, kv * d // h), (d, d)]]
    assert torch.autograd.gradcheck(lambda *a: tr.grouped_query_attention(*a, h, kv, tr.causal_mask(n)), args)


def torch_encoder_layer(weights: list[np.ndarray], h: int, norm_first: bool) -> nn.TransformerEncoderLayer:
    Wq, Wk, Wv, Wo, W1, b1, W2, b2, g1, be1, g2, be2 = map(t, weights)
    layer = nn.TransformerEncoderLayer(D, h, dim_feedforward=W1.shape[1], dropout=0.0, batch_first=True,
                                       norm_first=norm_first, dtype=torch.float64)
    # Column convention inside nn (x @ W.T): our row-convention matrices go in transposed; no attention biases.
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([Wq.T, Wk.T, Wv.T]))
        layer.self_attn.in_proj_bias.zero_()
        layer.self_attn.out_proj.weight.copy_(Wo.T)
        layer.self_attn.out_proj.bias.zero_()
        layer.linear1.weight.copy_(W1.T)
        layer.linear1.bias.copy_(b1)
        layer.linear2.weight.copy_(W2.T)
        layer.linear2.bias.copy_(b2)
        layer.norm1.weight.copy_(g1)
        layer.norm1.bias.copy_(be1)
        layer.norm2.weight.copy_(g2)
        layer.norm2.bias.copy_(be2)
    return layer.train()  # train mode with dropout 0 keeps PyTorch off its fused inference path


def test_encoder_layer_matches_numpy_and_nn_transformer_encoder_layer(rng: np.random.Generator) -> None:
    from autograder.references import misconceptions

    h, d_ff = 2, 16
    X = rng.normal(size=(*BATCH, N_K, D))
    weights = [rng.normal(size=(D, D)) for _ in range(4)]
    weights += [rng.normal(size=(D, d_ff)), rng.normal(size=d_ff), rng.normal(size=(d_ff, D)), rng.normal(size=D)]
    weights += [rng.uniform(0.5, 2, size=D), rng.normal(size=D), rng.uniform(0.5, 2, size=D), rng.normal(size=D)]
    keep = rng.random((*BATCH, N_K)) < 0.6
    keep[..., 0] = True
    mask = keep[..., None, :]
    args = [X, *weights[:4], h, *weights[4:]]
    ours = tr.encoder_layer(*(a if isinstance(a, int) else t(a) for a in args), t(mask))
    assert_matches(ours, npr.encoder_layer(*args, mask))

    flat = t(X).reshape(-1, N_K, D)
    padding = ~t(keep).reshape(-1, N_K)
    theirs = torch_encoder_layer(weights, h, norm_first=False)(flat, src_key_padding_mask=padding)
    torch.testing.assert_close(ours, theirs.reshape(ours.shape), rtol=0, atol=1e-9)
    # The misconception named pre-norm is what PyTorch calls norm_first.
    pre_norm = torch_encoder_layer(weights, h, norm_first=True)(flat, src_key_padding_mask=padding)
    assert not torch.allclose(theirs, pre_norm, atol=1e-3)
    np.testing.assert_allclose(misconceptions.encoder_layer_pre_norm(*args, mask),
                               pre_norm.detach().reshape(ours.shape).numpy(), rtol=0, atol=1e-9)
