"""The hand calculations of the topics issue 14 added, checked against closed forms written here.

Their `compute` functions (solutions/hand_architecture.py, hand_blocks.py, hand_attention.py)
call the references; these formulas are the lecture's, typed out independently, and are
compared on the 200 variants validate draws and on the lecture's own numbers (L08 p.19's third
query and p.28's positional vectors, copied here so nothing reads the notes).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from autograder.bank.load import Bank, load_bank
from autograder.kinds.numeric.variants import lecture_variant
from autograder.kinds.numeric.checks import draws


def _kv_cache(p):
    width = p["d"] // p["h"]
    per_token = lambda heads: 2 * heads * width  # noqa: E731 - a key and a value per key/value head
    mib = lambda heads: per_token(heads) * p["layers"] * p["n"] * 2 / 2**20  # noqa: E731 - float16
    return {"head_width": width, "mha_per_token": 2 * p["d"], "gqa_per_token": per_token(p["kv_heads"]),
            "mqa_per_token": per_token(1), "mha_mib": mib(p["h"]), "gqa_mib": mib(p["kv_heads"])}


def _mask_cells(p):
    n, src, tgt = p["n"], p["src_length"], p["tgt_length"]
    # padding hides keys only; the decoder is also causal: rows 0..tgt-1 see i+1 keys, the rest see tgt
    return {"encoder": n * src, "decoder": tgt * (tgt + 1) // 2 + (n - tgt) * tgt, "cross": n * src,
            "computed": 3 * n * n}


def _generation(p):
    n = p["n"]
    return {"step_scores": p["m"], "cached_total": n * (n + 1) // 2,
            "recompute_total": n * (n + 1) * (2 * n + 1) // 6, "training_pass": n * n}


def _pooling(p):
    H = np.asarray(p["H"], float)
    total = np.array([H[i, :length].sum(axis=0) for i, length in enumerate(p["lengths"])])
    return {"total": total, "pooled": total / np.asarray(p["lengths"], float)[:, None]}


def _ffn(p):
    x, W1, b1, W2, b2 = (np.asarray(p[k], float) for k in ("x", "W1", "b1", "W2", "b2"))
    pre = x @ W1 + b1
    return {"pre": pre, "hidden": np.maximum(pre, 0), "output": np.maximum(pre, 0) @ W2 + b2}


def _normalise(rows):
    rows = np.atleast_2d(np.asarray(rows, float))
    mean = rows.mean(axis=1, keepdims=True)
    return (rows - mean) / np.sqrt(((rows - mean) ** 2).mean(axis=1, keepdims=True))


def _layer_norm_batch(p):
    x = np.asarray(p["x"], float)
    X = np.stack([x, np.roll(x, 1) * p["scale"] + p["shift"]])
    return {"means": X.mean(axis=1), "variances": X.var(axis=1), "normalised": _normalise(X)}


def _add_and_norm(p):
    s = np.asarray(p["x"], float) + np.asarray(p["f"], float)
    return {"sum": s, "mean": s.mean(), "variance": s.var(), "normalised": _normalise(s)[0]}


def _residual(p):
    return {"without": p["a"] ** p["layers"], "one_layer": 1 + p["a"], "with_residual": (1 + p["a"]) ** p["layers"]}


def _positions(p):
    word, P = np.asarray(p["word"], float), np.asarray(p["P"], float) / 10
    return {"x0": word + P[0], "x1": word + P[1], "dot": (word + P[0]) @ (word + P[1])}


def _query_key(p):
    X, Wq, Wk = (np.asarray(p[k], float) for k in ("X", "Wq", "Wk"))
    Q, K = X @ Wq, X @ Wk
    return {"queries": Q, "keys": K, "scores": Q @ K.T, "scores_tied": Q @ Q.T}


def _jacobian(p):
    a = np.asarray(p["e"], float) / sum(p["e"])
    return {"weights": a, "jacobian": np.diag(a) - np.outer(a, a)}


def _third_query(p):
    scores = np.asarray(p["K"], float) @ np.asarray(p["q"], float)
    weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    V = np.asarray(p["V"], float)
    shown = p.get("shown", np.round(weights, 1))  # the figure rounds the weights to 1 decimal
    return {"scores": scores, "weights": weights, "output": weights @ V, "figure_output": np.asarray(shown) @ V}


def _vit_tokens(p):
    per_side = p["side"] // p["patch"]
    return {"per_side": per_side, "patches": per_side**2, "tokens": per_side**2 + 1,
            "embedding": p["patch"] ** 2 * p["channels"] * p["d"] + p["d"]}


def _patch_attention(p):
    patches = (p["side"] // p["patch"]) ** 2
    return {"patches": patches, "scores": patches**2, "score_products": patches**2 * p["head_width"],
            "scores_half_patch": (4 * patches) ** 2}


def _linear_attention(p):
    n, d = p["n"], p["d"]
    return {"softmax": 2 * n * n * d, "linear": 2 * n * d * d, "ratio": n / d, "break_even": d}


def _local_window(p):
    n, w = p["n"], p["window"]
    allowed = [[0 <= i - j < w for j in range(n)] for i in range(n)]  # key j within the w keys ending at query i
    return {"full": n * (n + 1) // 2, "windowed": sum(map(sum, allowed)), "layers": math.ceil((n - 1) / (w - 1))}


def _heads(p):
    d, h, n = p["d"], p["h"], p["n"]
    return {"head_width": d // h, "parameters": 4 * d * d + 4 * d, "scores": h * n * n, "products": 2 * n * n * d}


CLOSED_FORMS = {
    # issue 47: Vision Transformers, efficient attention, and the heads in numbers
    "vit-patch-tokens": _vit_tokens, "patch-attention-cost": _patch_attention, "linear-attention-cost": _linear_attention,
    "local-window-scores": _local_window, "heads-by-numbers": _heads,
    "kv-cache-memory": _kv_cache, "mask-cells-count": _mask_cells, "generation-score-count": _generation,
    "mean-pooling-by-hand": _pooling, "ffn-with-biases": _ffn, "layer-norm-batch-axis": _layer_norm_batch,
    "add-and-norm-by-hand": _add_and_norm, "residual-gradient": _residual, "add-positions-by-hand": _positions,
    "query-key-asymmetry": _query_key, "softmax-jacobian-by-hand": _jacobian, "third-query-rounding": _third_query,
}


@pytest.fixture(scope="module")
def bank() -> Bank:
    report = load_bank()
    assert report.errors == [], [str(e) for e in report.errors]
    return report.bank


@pytest.mark.parametrize("problem_id", sorted(CLOSED_FORMS))
@pytest.mark.slow
def test_every_variant_agrees_with_the_closed_form(bank: Bank, problem_id: str) -> None:
    problem = bank.get(problem_id)
    variants = draws(problem) if problem.parameters else []
    if problem.lecture_example is not None:
        variants.append(lecture_variant(problem))
    assert variants
    for variant in variants:
        expected = CLOSED_FORMS[problem_id](variant.params)
        for part in problem.parts:
            assert np.allclose(variant.answers[part.name], expected[part.name], atol=1e-9), \
                (problem_id, variant.params, part.name, variant.answers[part.name], expected[part.name])


def test_the_lecture_figures_of_the_third_query_and_the_positional_vectors() -> None:
    """L08 p.19: q = (2, 1, 3) scores (4, 12, 10), weights about (0.000295, 0.88054, 0.11917), the figure's
    rounded (0, 0.9, 0.1) gives (2, 7.8, 0.3); p.28: (1, 2) + (0.1, 0) = (1.1, 2) and (1, 2) + (0, 0.2) = (1, 2.2)."""
    third = _third_query({"q": [2, 1, 3], "K": [[0, 1, 1], [4, 4, 0], [2, 3, 1]],
                          "V": [[1, 2, 3], [2, 8, 0], [2, 6, 3]], "shown": [0, 0.9, 0.1]})
    assert third["scores"].tolist() == [4, 12, 10]
    assert np.allclose(third["weights"], [0.000295, 0.88054, 0.11917], atol=5e-6)
    assert np.allclose(third["figure_output"], [2, 7.8, 0.3])
    positions = _positions({"word": [1, 2], "P": [[1, 0], [0, 2]]})
    assert np.allclose(positions["x0"], [1.1, 2]) and np.allclose(positions["x1"], [1, 2.2])


def test_the_follow_up_numbers_of_the_new_statements(bank: Bank) -> None:
    numbers = {"small-weights-still-computed": 300**2, "bidirectional-encoder": 6 * 6, "kv-cache-growth": 8192 / 2048,
               "constant-token": 0.5, "attention-op-parameters": 0, "padding-query-rows": 3 / (3 + 1 + 1)}
    for problem_id, number in numbers.items():
        assert math.isclose(bank.get(problem_id).follow_up.number, number), problem_id


def test_the_follow_up_numbers_of_the_missing_topics(bank: Bank) -> None:
    """Issue 24's missing topics, each follow-up worked here from its question: every layer and head its own
    table, a rotation by the offset times the frequency, weights per layer, rows that each sum to 1, every query
    reading every key, and two normalised tokens that point opposite ways."""
    tokens = _normalise([[1, 2, 3], [3, 2, 1]])
    scores = np.arange(36.0).reshape(6, 6) % 5  # any scores: each row's softmax sums to 1 whatever they are
    weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    numbers = {"layers-recompute-attention": 12 * 12, "rotation-relative-position": (7 - 2) * 30,
               "layers-share-parameters": 6 * 3, "softmax-whole-table": weights.sum(),
               "self-means-same-sequence": 7 * 7, "normalised-tokens-differ": float(tokens[0] @ tokens[1])}
    for problem_id, number in numbers.items():
        follow = bank.get(problem_id).follow_up
        assert math.isclose(follow.number, number, abs_tol=follow.tolerance.abs), (problem_id, follow.number, number)
    w_v = bank.get("key-equals-value").follow_up
    assert tuple(int(x) for x in w_v.expected_shape()) == (512, 128)


def test_the_sinusoidal_offset_property(bank: Bank) -> None:
    """Issue 47: the dot product of two sinusoidal position vectors depends only on their offset and, for small
    offsets, falls as it grows; the reference's encoding shows it, against the closed form sum_i cos(offset w_i),
    and sinusoidal-offset's follow-up is cos 3."""
    from solutions.numpy_ref import sinusoidal_positional_encoding

    d = 16
    pe = sinusoidal_positional_encoding(64, d)
    w = 1 / 10000 ** (np.arange(0, d, 2) / d)
    for offset in range(0, 12):
        dots = [pe[p] @ pe[p + offset] for p in range(0, 64 - offset)]
        assert np.allclose(dots, np.cos(offset * w).sum(), atol=1e-9), offset
    falls = [np.cos(k * w).sum() for k in range(0, 4)]
    assert all(a > b for a, b in zip(falls, falls[1:])), falls
    problem = bank.get("sinusoidal-offset")
    assert problem.answer is False and problem.follow_up.number == pytest.approx(math.cos(3), abs=1e-4)


def test_the_vit_facts_against_pytorch(bank: Bank) -> None:
    """Issue 47: a ViT's patch embedding is a convolution of kernel and stride the patch side; PyTorch's own
    Conv2d gives ViT-Base's 196 patches of a 224 x 224 image and 590,592 parameters at d = 768, as the
    problem's reference does, and the statements' follow-ups (577 tokens at 384 x 384) hold."""
    import torch

    from solutions.hand_vision import vit_tokens

    for side, patch, d in ((224, 16, 768), (96, 12, 192), (384, 16, 64)):
        embed = torch.nn.Conv2d(3, d, kernel_size=patch, stride=patch)
        out = embed(torch.zeros(1, 3, side, side)).flatten(2).transpose(1, 2)  # (1, patches, d), as a ViT reads it
        ours = vit_tokens(side, patch, 3, d)
        assert out.shape[1] == ours["patches"] and out.shape[2] == d
        assert sum(p.numel() for p in embed.parameters()) == ours["embedding"]
    assert bank.get("vit-token-count").follow_up.number == (384 // 16) ** 2 + 1
    shape = bank.get("patch-embedding-shape")
    assert tuple(int(x) for x in __import__("autograder.kinds.shape", fromlist=["x"]).expected_shape(shape)) == \
        (4, (96 // 12) ** 2 + 1, 192)


def test_linear_attention_against_pytorch(bank: Bank) -> None:
    """phi(Q) (phi(K)^T V), normalised, equals the n x n table's product (phi(Q) phi(K)^T) V: the order is exact
    for a kernel that splits, which the softmax's exp(q . k) is not; the summary phi(K)^T V is d_k x d_v."""
    import torch

    torch.manual_seed(47)
    n, d_k, d_v = 50, 8, 12
    phi = lambda x: torch.nn.functional.elu(x) + 1  # noqa: E731 - Katharopoulos et al.'s feature map
    Q, K, V = phi(torch.randn(n, d_k, dtype=torch.float64)), phi(torch.randn(n, d_k, dtype=torch.float64)), \
        torch.randn(n, d_v, dtype=torch.float64)
    table = Q @ K.T
    quadratic = (table / table.sum(1, keepdim=True)) @ V
    state = K.T @ V
    linear = (Q @ state) / (Q @ K.sum(0))[:, None]
    assert torch.allclose(quadratic, linear) and tuple(state.shape) == (d_k, d_v)
    softmax = torch.softmax(Q @ K.T, dim=1) @ V
    assert not torch.allclose(softmax, linear)  # another weighting: linear-attention-weights is false
    assert bank.get("linear-attention-weights").answer is False
    shape = bank.get("linear-attention-state-shape")
    assert [shape.parameters[a] for a in shape.answer] == [32, 48]


def test_the_follow_ups_of_the_efficient_statements(bank: Bank) -> None:
    """A window of w keys carries information w - 1 tokens further back per layer; GQA keeps the key/value heads'
    share of the cache."""
    window = bank.get("sliding-window-reach")
    assert window.answer is (math.ceil((10 - 1) / (4 - 1)) <= 3)
    assert window.follow_up.number == math.ceil((21 - 1) / (5 - 1))
    gqa = bank.get("gqa-cache-fraction")
    assert gqa.answer is (8 / 32 == 1 / 8) and gqa.follow_up.number == 2 / 16
