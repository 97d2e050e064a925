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
