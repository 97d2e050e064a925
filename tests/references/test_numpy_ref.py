"""Worked numbers from the lecture notes and course page, checked against solutions.numpy_ref.

The lecture rounds to about four digits, hence the loose tolerances on the
approximate values; exact fractions are checked tightly.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from autograder.references import numpy_ref as ref

KEYS = np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 0.0], [2.0, 3.0, 1.0]])
VALUES = np.array([[1.0, 2.0, 3.0], [2.0, 8.0, 0.0], [2.0, 6.0, 3.0]])
LECTURE_TOL = 5e-4


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


# --- three-token example -------------------------------------------------------------


def test_unscaled_scores_weights_and_output() -> None:
    q = np.array([[1.0, 0.0, 2.0]])
    scores = ref.attention_scores(q, KEYS, scale=False)
    assert scores.tolist() == [[2.0, 4.0, 4.0]]
    out, weights = ref.scaled_dot_product_attention(q, KEYS, VALUES, scale=False)
    assert weights[0] == pytest.approx([0.0634, 0.4683, 0.4683], abs=LECTURE_TOL)
    assert out[0] == pytest.approx([1.9366, 6.6831, 1.5951], abs=LECTURE_TOL)


def test_scaling_by_sqrt_dk_flattens_the_weights() -> None:
    q = np.array([[1.0, 0.0, 2.0]])
    assert ref.attention_scores(q, KEYS)[0] == pytest.approx(np.array([2.0, 4.0, 4.0]) / math.sqrt(3))
    _, weights = ref.scaled_dot_product_attention(q, KEYS, VALUES)
    assert weights[0] == pytest.approx([0.1361, 0.4319, 0.4319], abs=LECTURE_TOL)


def test_third_query_is_dominated_by_one_key() -> None:
    q = np.array([[2.0, 1.0, 3.0]])
    assert ref.attention_scores(q, KEYS, scale=False).tolist() == [[4.0, 12.0, 10.0]]
    _, weights = ref.scaled_dot_product_attention(q, KEYS, VALUES, scale=False)
    assert weights[0, 0] == pytest.approx(0.000295, abs=5e-7)
    assert weights[0, 1:] == pytest.approx([0.88054, 0.11917], abs=5e-6)


def test_all_queries_at_once_match_query_by_query() -> None:
    Q = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [2.0, 1.0, 3.0]])
    out, weights = ref.scaled_dot_product_attention(Q, KEYS, VALUES, scale=False)
    for i in range(3):
        row_out, row_weights = ref.scaled_dot_product_attention(Q[i : i + 1], KEYS, VALUES, scale=False)
        assert out[i] == pytest.approx(row_out[0])
        assert weights[i] == pytest.approx(row_weights[0])


# --- minimal, masked and convex-combination examples ----------------------------------


def test_minimal_two_key_example() -> None:
    out, weights = ref.scaled_dot_product_attention(
        [[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[10.0], [20.0]], scale=False
    )
    assert weights[0] == pytest.approx([0.7311, 0.2689], abs=LECTURE_TOL)
    assert out[0, 0] == pytest.approx(12.689, abs=LECTURE_TOL)


def test_masking_before_softmax_renormalises() -> None:
    scores = np.array([[math.log(2), 0.0, math.log(3)]])
    values = np.array([[10.0], [20.0], [100.0]])

    weights = ref.softmax_rows(scores)
    assert weights[0] == pytest.approx([1 / 3, 1 / 6, 1 / 2], abs=1e-12)
    assert ref.attention_output(weights, values)[0, 0] == pytest.approx(170 / 3, abs=1e-10)

    masked = ref.softmax_rows(scores, mask=np.array([True, True, False]))
    assert masked[0] == pytest.approx([2 / 3, 1 / 3, 0.0], abs=1e-12)
    assert masked[0, 2] == 0.0
    assert ref.attention_output(masked, values)[0, 0] == pytest.approx(40 / 3, abs=1e-10)

    # The classic mistake: zero the weight after the softmax without renormalising.
    wrong_weights = weights * np.array([1.0, 1.0, 0.0])
    wrong_out = (wrong_weights @ values)[0, 0]
    assert wrong_out == pytest.approx(20 / 3, abs=1e-10)
    assert ref.attention_output(masked, values)[0, 0] != pytest.approx(wrong_out)


def test_output_is_a_convex_combination_of_values() -> None:
    out = ref.attention_output([[0.25, 0.75]], [[2.0], [10.0]])
    assert out[0, 0] == pytest.approx(8.0)


# --- course-page quiz ----------------------------------------------------------------


def test_quiz_single_score() -> None:
    score = ref.attention_scores([[2.0, 0.4]], [[2.0, 0.0]])
    assert score[0, 0] == pytest.approx(4 / math.sqrt(2))
    assert score[0, 0] == pytest.approx(2.828, abs=LECTURE_TOL)


def test_quiz_softmax_and_output() -> None:
    weights = ref.softmax_rows([[1.98, 1.98, 2.772]])
    assert weights[0] == pytest.approx([0.238, 0.238, 0.525], abs=LECTURE_TOL)
    out = ref.attention_output(weights, [[10.0, 0.0], [0.0, 10.0], [6.0, 6.0]])
    assert out[0] == pytest.approx([5.525, 5.525], abs=5e-3)


# --- layer norm and feed-forward -----------------------------------------------------


def test_layer_norm_two_features() -> None:
    out = ref.layer_norm([2.0, 4.0], gamma=np.ones(2), beta=np.zeros(2), eps=0.0)
    assert out == pytest.approx([-1.0, 1.0])


def test_layer_norm_uses_biased_variance_and_affine(rng: np.random.Generator) -> None:
    x = rng.normal(size=(2, 3, 5))
    gamma, beta = rng.normal(size=5), rng.normal(size=5)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, ddof=0, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(ref.layer_norm(x, gamma, beta), expected, rtol=0, atol=1e-12)


def test_add_and_norm_is_post_norm_residual(rng: np.random.Generator) -> None:
    x, sub = rng.normal(size=(2, 4, 6)), rng.normal(size=(2, 4, 6))
    gamma, beta = rng.normal(size=6), rng.normal(size=6)
    np.testing.assert_allclose(ref.add_and_norm(x, sub, gamma, beta), ref.layer_norm(x + sub, gamma, beta))
    assert not np.allclose(ref.add_and_norm(x, sub, gamma, beta), x + ref.layer_norm(sub, gamma, beta))


def test_feed_forward_worked_example() -> None:
    x = np.array([1.0, -1.0])
    W1 = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    W2 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert (x @ W1).tolist() == [1.0, -1.0, 0.0]
    assert ref.feed_forward(x, W1, np.zeros(3), np.eye(3), np.zeros(3)).tolist() == [1.0, 0.0, 0.0]
    assert ref.feed_forward(x, W1, np.zeros(3), W2, np.zeros(2)).tolist() == [1.0, 0.0]


# --- heads -------------------------------------------------------------------------


def test_multi_head_shapes() -> None:
    n, d, h = 5, 8, 2
    X = np.arange(n * d, dtype=float).reshape(n, d)
    heads = ref.split_heads(X, h)
    assert heads.shape == (h, n, 4)
    assert ref.merge_heads(heads).shape == (n, d)
    W = np.eye(d)
    assert ref.multi_head_attention(X, W, W, W, W, h).shape == (n, d)


def test_split_heads_slices_features_not_tokens() -> None:
    X = np.arange(3 * 8, dtype=float).reshape(3, 8)
    heads = ref.split_heads(X, 2)
    np.testing.assert_array_equal(heads[0], X[:, :4])
    np.testing.assert_array_equal(heads[1], X[:, 4:])
    np.testing.assert_array_equal(ref.merge_heads(heads), X)


@pytest.mark.parametrize("d, h", [(8, 3), (6, 4), (5, 2)])
def test_split_heads_rejects_non_divisor(d: int, h: int) -> None:
    with pytest.raises(ValueError, match="divisor"):
        ref.split_heads(np.zeros((4, d)), h)


def test_multi_head_attention_matches_per_head_loop(rng: np.random.Generator) -> None:
    n, d, h = 4, 6, 3
    dh = d // h
    X = rng.normal(size=(n, d))
    Wq, Wk, Wv, Wo = (rng.normal(size=(d, d)) for _ in range(4))
    mask = ref.causal_mask(n)
    heads = []
    for i in range(h):
        cols = slice(i * dh, (i + 1) * dh)
        out, _ = ref.scaled_dot_product_attention(X @ Wq[:, cols], X @ Wk[:, cols], X @ Wv[:, cols], mask)
        heads.append(out)
    expected = np.concatenate(heads, axis=-1) @ Wo
    np.testing.assert_allclose(ref.multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask), expected, atol=1e-12)


# --- positions ---------------------------------------------------------------------


def test_identical_tokens_are_indistinguishable_without_positions() -> None:
    X = np.array([[1.0, 2.0], [1.0, 2.0]])
    Wq, Wk, Wv, Wo = np.eye(2), np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([[0.0, 1.0], [1.0, 1.0]]), np.eye(2)
    out = ref.multi_head_attention(X, Wq, Wk, Wv, Wo, h=1)
    assert out[0] == pytest.approx(out[1])

    with_positions = X + np.array([[0.1, 0.0], [0.0, 0.2]])
    assert with_positions == pytest.approx(np.array([[1.1, 2.0], [1.0, 2.2]]))
    out = ref.multi_head_attention(with_positions, Wq, Wk, Wv, Wo, h=1)
    assert out[0] != pytest.approx(out[1])


def test_attention_is_permutation_equivariant_until_positions_are_added(rng: np.random.Generator) -> None:
    n, d, h = 5, 8, 2
    X = rng.normal(size=(n, d))
    Wq, Wk, Wv, Wo = (rng.normal(size=(d, d)) for _ in range(4))
    perm = np.array([3, 0, 4, 1, 2])

    out = ref.multi_head_attention(X, Wq, Wk, Wv, Wo, h)
    np.testing.assert_allclose(ref.multi_head_attention(X[perm], Wq, Wk, Wv, Wo, h), out[perm], atol=1e-12)

    pe = ref.sinusoidal_positional_encoding(n, d)
    out = ref.multi_head_attention(X + pe, Wq, Wk, Wv, Wo, h)
    assert not np.allclose(ref.multi_head_attention(X[perm] + pe, Wq, Wk, Wv, Wo, h), out[perm])


def test_sinusoidal_positional_encoding_values() -> None:
    pe = ref.sinusoidal_positional_encoding(4, 6)
    assert pe.shape == (4, 6)
    assert pe.dtype == np.float64
    assert pe[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    assert pe[1, 0] == pytest.approx(math.sin(1.0))
    assert pe[1, 1] == pytest.approx(math.cos(1.0))
    assert pe[2, 2] == pytest.approx(math.sin(2 / 10000 ** (2 / 6)))
    assert pe[3, 5] == pytest.approx(math.cos(3 / 10000 ** (4 / 6)))


def test_sinusoidal_positional_encoding_odd_width() -> None:
    pe = ref.sinusoidal_positional_encoding(3, 5)
    assert pe.shape == (3, 5)
    assert pe[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert pe[2, 4] == pytest.approx(math.sin(2 / 10000 ** (4 / 5)))
    assert pe[2, 3] == pytest.approx(math.cos(2 / 10000 ** (2 / 5)))


# --- masks and numerical stability ------------------------------------------------


def test_causal_mask() -> None:
    assert ref.causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]


def test_causal_attention_ignores_future_tokens(rng: np.random.Generator) -> None:
    n, d = 5, 4
    Q, K, V = (rng.normal(size=(n, d)) for _ in range(3))
    out, weights = ref.scaled_dot_product_attention(Q, K, V, ref.causal_mask(n))
    assert np.all(np.triu(weights, k=1) == 0.0)
    K2, V2 = K.copy(), V.copy()
    K2[-1], V2[-1] = 100.0, -100.0
    out2, _ = ref.scaled_dot_product_attention(Q, K2, V2, ref.causal_mask(n))
    np.testing.assert_allclose(out2[:-1], out[:-1], atol=1e-12)


def test_softmax_is_stable_for_huge_logits() -> None:
    S = np.array([[1e4, -1e4, 0.0], [1e4, 1e4, 1e4], [-1e4, -1e4, -1e4 + 1], [0.0, -705.0, -1e4]])
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        weights = ref.softmax_rows(S)
        out = ref.attention_output(weights, [[0.5, -3.0], [1e-3, 2.0], [7.0, 0.25]])
    assert np.all(np.isfinite(weights))
    assert out[0] == pytest.approx([0.5, -3.0])
    assert weights.sum(axis=-1) == pytest.approx([1.0, 1.0, 1.0, 1.0])
    assert weights[0] == pytest.approx([1.0, 0.0, 0.0])
    assert weights[3] == pytest.approx([1.0, 0.0, 0.0])
    assert weights[1] == pytest.approx([1 / 3, 1 / 3, 1 / 3])


def test_fully_masked_row_gives_zeros_without_warnings() -> None:
    S = np.array([[1.0, 2.0, 3.0], [1e4, -1e4, 5.0]])
    mask = np.array([[True, False, True], [False, False, False]])
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        weights = ref.softmax_rows(S, mask)
        out, _ = ref.scaled_dot_product_attention(np.ones((2, 2)), np.ones((3, 2)), np.ones((3, 2)), mask)
    assert weights[1].tolist() == [0.0, 0.0, 0.0]
    assert weights[0, 1] == 0.0
    assert weights[0].sum() == pytest.approx(1.0)
    assert out[1].tolist() == [0.0, 0.0]


def test_softmax_accepts_broadcast_padding_mask(rng: np.random.Generator) -> None:
    S = rng.normal(size=(2, 3, 4))
    key_mask = np.array([True, True, False, True])
    weights = ref.softmax_rows(S, key_mask)
    assert np.all(weights[..., 2] == 0.0)
    assert weights.sum(axis=-1) == pytest.approx(np.ones((2, 3)))


# --- padding, encoder and decoder masks -----------------------------------------------


def test_padding_mask_counts_positions_from_zero() -> None:
    assert ref.padding_mask([3, 1, 4], 4).tolist() == [
        [True, True, True, False], [True, False, False, False], [True, True, True, True]]
    assert ref.padding_mask(np.array([0]), 2).tolist() == [[False, False]]
    assert ref.padding_mask(np.array([[1, 2]]), 3).shape == (1, 2, 3)


@pytest.mark.parametrize("lengths, n", [([4], 3), ([-1, 2], 3)])
def test_padding_mask_rejects_impossible_lengths(lengths, n) -> None:
    with pytest.raises(ValueError):
        ref.padding_mask(np.array(lengths), n)


def test_encoder_decoder_masks_follow_the_three_rules() -> None:
    src, tgt = np.array([3, 2]), np.array([2, 4])
    encoder, decoder, cross = ref.encoder_decoder_masks(src, tgt, 3, 4)
    assert (encoder.shape, decoder.shape, cross.shape) == ((2, 3, 3), (2, 4, 4), (2, 4, 3))
    src_keys, tgt_keys = ref.padding_mask(src, 3), ref.padding_mask(tgt, 4)
    for b in range(2):
        for i in range(4):
            for j in range(4):
                assert decoder[b, i, j] == (j <= i and tgt_keys[b, j])
            assert cross[b, i].tolist() == src_keys[b].tolist()
        for i in range(3):
            assert encoder[b, i].tolist() == src_keys[b].tolist()
    # Without padding: an encoder-only model sees everything, a decoder-only model is causal.
    encoder, decoder, cross = ref.encoder_decoder_masks(np.array([5]), np.array([5]), 5, 5)
    assert encoder.all() and cross.all()
    np.testing.assert_array_equal(decoder[0], ref.causal_mask(5))


def test_padding_keys_do_not_change_the_real_tokens_outputs(rng: np.random.Generator) -> None:
    # A padded sequence, masked, gives its real tokens the outputs they have without the padding.
    X = rng.normal(size=(5, 4))
    Wq, Wk, Wv, Wo = (rng.normal(size=(4, 4)) for _ in range(4))
    padded = np.concatenate([X[:3], 100 * rng.normal(size=(2, 4))])
    encoder, _, _ = ref.encoder_decoder_masks(np.array([3]), np.array([1]), 5, 1)
    out = ref.multi_head_attention(padded, Wq, Wk, Wv, Wo, 2, encoder[0])
    np.testing.assert_allclose(out[:3], ref.multi_head_attention(X[:3], Wq, Wk, Wv, Wo, 2), atol=1e-12)


# --- cross-attention and pooling --------------------------------------------------------


def test_cross_attention_lecture_query_reads_the_encoder() -> None:
    X_enc = np.hstack([KEYS, VALUES])  # each encoder token projects to the lecture's key and value
    Wk, Wv = np.vstack([np.eye(3), np.zeros((3, 3))]), np.vstack([np.zeros((3, 3)), np.eye(3)])
    out, weights = ref.cross_attention([[1.0, 0.0, 2.0]], X_enc, np.eye(3), Wk, Wv)
    assert weights[0] == pytest.approx([0.1361, 0.4319, 0.4319], abs=LECTURE_TOL)
    assert out[0] == pytest.approx(0.1361258 * VALUES[0] + 0.4319371 * (VALUES[1] + VALUES[2]), abs=1e-6)


def test_cross_attention_is_attention_of_decoder_queries_over_encoder_keys(rng: np.random.Generator) -> None:
    X_dec, X_enc = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 6))
    Wq, Wk, Wv = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    mask = ref.padding_mask(np.array([5, 2]), 5)[:, None, :]
    out, weights = ref.cross_attention(X_dec, X_enc, Wq, Wk, Wv, mask)
    assert out.shape == (2, 3, 2) and weights.shape == (2, 3, 5)
    want_out, want_weights = ref.scaled_dot_product_attention(X_dec @ Wq, X_enc @ Wk, X_enc @ Wv, mask)
    np.testing.assert_allclose(out, want_out, atol=1e-12)
    np.testing.assert_allclose(weights, want_weights, atol=1e-12)
    assert np.all(weights[1, :, 2:] == 0.0)


def test_pool_tokens_mean_and_cls() -> None:
    H = np.array([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]], [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]])
    mask = np.array([[True, True, False], [False, False, False]])
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        mean = ref.pool_tokens(H, mask)
    assert mean.tolist() == [[2.0, 3.0], [0.0, 0.0]]
    assert ref.pool_tokens(H).tolist() == [[104 / 3, 106 / 3], [7.0, 8.0]]
    assert ref.pool_tokens(H, mask, method="cls").tolist() == [[1.0, 2.0], [5.0, 6.0]]
    with pytest.raises(ValueError):
        ref.pool_tokens(H, mask, method="max")


# --- the softmax's derivative -----------------------------------------------------------


def test_softmax_jacobian_lecture_numbers_and_finite_differences(rng: np.random.Generator) -> None:
    J = ref.softmax_jacobian([1.0, 0.0])
    assert J == pytest.approx(np.array([[0.19661, -0.19661], [-0.19661, 0.19661]]), abs=1e-5)
    s = rng.normal(size=(2, 3, 4))
    J = ref.softmax_jacobian(s)
    assert J.shape == (2, 3, 4, 4)
    step = 1e-6
    for j in range(4):
        bump = np.zeros(4)
        bump[j] = step
        numeric = (ref.softmax_rows(s + bump) - ref.softmax_rows(s - bump)) / (2 * step)
        np.testing.assert_allclose(J[..., :, j], numeric, atol=1e-8)
    np.testing.assert_allclose(J.sum(axis=-1), 0.0, atol=1e-15)  # raising one score moves no total weight
    np.testing.assert_allclose(J, np.swapaxes(J, -1, -2), atol=0)


def test_saturated_softmax_has_a_vanishing_jacobian() -> None:
    # One score far above the rest: the weights are one-hot and the gradient is (nearly) zero.
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        J = ref.softmax_jacobian([[1000.0, 0.0, -1000.0]])
    assert np.abs(J).max() == 0.0
    assert np.abs(ref.softmax_jacobian([[1.0, 0.0, -1.0]])).max() > 0.1


def test_softmax_backward_is_the_jacobian_applied_to_the_gradient(rng: np.random.Generator) -> None:
    S, dA = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 3, 5))
    want = np.einsum("...ij,...i->...j", ref.softmax_jacobian(S), dA)
    np.testing.assert_allclose(ref.softmax_backward(S, dA), want, atol=1e-12)


def test_softmax_backward_lecture_masked_example() -> None:
    # o = sum_j a_j v_j = 40/3 with the third key masked, so do/da = v = (10, 20, 100).
    scores = np.array([[math.log(2), 0.0, math.log(3)]])
    mask = np.array([[True, True, False]])
    grad = ref.softmax_backward(scores, [[10.0, 20.0, 100.0]], mask)
    assert grad[0] == pytest.approx([2 / 3 * (10 - 40 / 3), 1 / 3 * (20 - 40 / 3), 0.0], abs=1e-12)
    assert grad[0] == pytest.approx([-20 / 9, 20 / 9, 0.0], abs=1e-12)
    step = 1e-6
    for j in range(2):  # the masked score has no effect at all
        bump = np.zeros(3)
        bump[j] = step
        hi = ref.attention_output(ref.softmax_rows(scores + bump, mask), [[10.0], [20.0], [100.0]])
        lo = ref.attention_output(ref.softmax_rows(scores - bump, mask), [[10.0], [20.0], [100.0]])
        assert (hi - lo)[0, 0] / (2 * step) == pytest.approx(grad[0, j], abs=1e-7)
    fully_masked = ref.softmax_backward(np.ones((1, 3)), np.ones((1, 3)), np.zeros((1, 3), dtype=bool))
    assert fully_masked.tolist() == [[0.0, 0.0, 0.0]]


# --- generation with a KV cache --------------------------------------------------------


def test_decoding_step_by_step_reproduces_the_causal_pass(rng: np.random.Generator) -> None:
    n, d, dk, dv = 6, 5, 4, 3
    X = rng.normal(size=(2, n, d))
    Wq, Wk, Wv = rng.normal(size=(d, dk)), rng.normal(size=(d, dk)), rng.normal(size=(d, dv))
    full, _ = ref.scaled_dot_product_attention(X @ Wq, X @ Wk, X @ Wv, ref.causal_mask(n))
    K, V = np.zeros((2, 0, dk)), np.zeros((2, 0, dv))
    for t in range(n):
        out, K, V = ref.decoder_step(X[:, t : t + 1], K, V, Wq, Wk, Wv)
        assert out.shape == (2, 1, dv) and K.shape == (2, t + 1, dk)
        np.testing.assert_allclose(out[:, 0], full[:, t], atol=1e-12)
    np.testing.assert_allclose(K, X @ Wk, atol=1e-12)
    np.testing.assert_allclose(V, X @ Wv, atol=1e-12)


def test_decoder_step_lecture_numbers() -> None:
    x = np.array([[1.0, 0.0, 2.0, *KEYS[2], *VALUES[2]]])  # query (1,0,2), key and value of token 3
    select = [np.eye(9)[:, 3 * k : 3 * k + 3] for k in range(3)]
    out, K, V = ref.decoder_step(x, KEYS[:2], VALUES[:2], *select)
    np.testing.assert_array_equal(K, KEYS)
    np.testing.assert_array_equal(V, VALUES)
    want, _ = ref.scaled_dot_product_attention([[1.0, 0.0, 2.0]], KEYS, VALUES)
    np.testing.assert_allclose(out, want, atol=1e-12)


# --- grouped-query attention and the encoder layer ------------------------------------------


def test_gqa_with_one_group_per_head_is_multi_head_attention(rng: np.random.Generator) -> None:
    X = rng.normal(size=(2, 5, 8))
    Ws = [rng.normal(size=(8, 8)) for _ in range(4)]
    mask = ref.causal_mask(5)
    np.testing.assert_allclose(ref.grouped_query_attention(X, *Ws, 4, 4, mask),
                               ref.multi_head_attention(X, *Ws, 4, mask), atol=1e-12)


@pytest.mark.parametrize("h, kv_heads", [(4, 2), (4, 1), (8, 4), (6, 3)])
def test_gqa_matches_a_loop_over_query_heads(rng: np.random.Generator, h: int, kv_heads: int) -> None:
    n, d = 4, 24
    dh, group = d // h, h // kv_heads
    X = rng.normal(size=(n, d))
    Wq, Wo = rng.normal(size=(d, d)), rng.normal(size=(d, d))
    Wk, Wv = rng.normal(size=(d, kv_heads * dh)), rng.normal(size=(d, kv_heads * dh))
    heads = []
    for i in range(h):
        g = i // group  # query heads 0..group-1 share key/value head 0, and so on
        q_cols, kv_cols = slice(i * dh, (i + 1) * dh), slice(g * dh, (g + 1) * dh)
        out, _ = ref.scaled_dot_product_attention(X @ Wq[:, q_cols], X @ Wk[:, kv_cols], X @ Wv[:, kv_cols])
        heads.append(out)
    want = np.concatenate(heads, axis=-1) @ Wo
    np.testing.assert_allclose(ref.grouped_query_attention(X, Wq, Wk, Wv, Wo, h, kv_heads), want, atol=1e-12)


@pytest.mark.parametrize("h, kv_heads", [(4, 3), (4, 0), (3, 3)])
def test_gqa_rejects_impossible_head_counts(h: int, kv_heads: int) -> None:
    with pytest.raises(ValueError):
        ref.grouped_query_attention(np.zeros((2, 8)), np.zeros((8, 8)), np.zeros((8, 6)), np.zeros((8, 6)),
                                    np.zeros((8, 8)), h, kv_heads)


def test_encoder_layer_is_two_post_norm_sublayers(rng: np.random.Generator) -> None:
    X = rng.normal(size=(2, 4, 8))
    Wq, Wk, Wv, Wo = (rng.normal(size=(8, 8)) for _ in range(4))
    W1, b1, W2, b2 = rng.normal(size=(8, 16)), rng.normal(size=16), rng.normal(size=(16, 8)), rng.normal(size=8)
    g1, be1, g2, be2 = (rng.normal(size=8) for _ in range(4))
    mask = ref.padding_mask(np.array([4, 2]), 4)[:, None, :]
    Y = ref.layer_norm(X + ref.multi_head_attention(X, Wq, Wk, Wv, Wo, 2, mask), g1, be1)
    want = ref.layer_norm(Y + ref.feed_forward(Y, W1, b1, W2, b2), g2, be2)
    got = ref.encoder_layer(X, Wq, Wk, Wv, Wo, 2, W1, b1, W2, b2, g1, be1, g2, be2, mask)
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_encoder_layer_lecture_token() -> None:
    # (2, 4): attention over one token returns it, (4, 8) normalises to (-1, 1), the lecture FFN
    # maps that to (0, 1), and (-1, 2) normalises to (-1, 1) again.
    W1, W2 = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert ref.feed_forward([-1.0, 1.0], W1, np.zeros(3), W2, np.zeros(2)).tolist() == [0.0, 1.0]
    I, ones, zeros = np.eye(2), np.ones(2), np.zeros(2)
    out = ref.encoder_layer([[2.0, 4.0]], I, I, I, I, 1, W1, np.zeros(3), W2, zeros, ones, zeros, ones, zeros)
    assert out[0] == pytest.approx([-1.0, 1.0], abs=1e-5)
