"""The bank's depth (issue 14, item 5): enough problems, enough hard ones, and written problems in every topic.

An exam or a drill draws its written (non-code) problems by topic folder; with fewer than
four in a folder the same ones come back in every paper. The lecture topics that had no
problem are named here with the problems that now cover them, so that none silently goes.
"""

from __future__ import annotations

from collections import Counter

import pytest

from autograder.bank.load import Bank, load_bank

MIN_PROBLEMS = 90
MIN_HARD = 15  # difficulty 3
MIN_WRITTEN_PER_FOLDER = 4  # kind other than implement

# lecture topic -> the written problems that cover it (L08, Lecture 16 notes, 3-8 course page)
LECTURE_TOPICS = {
    "the three architecture types and their masks": ["architecture-types", "bidirectional-encoder"],
    "cross-attention: Q from the decoder, K and V from the encoder, n_dec x n_enc": ["cross-attention-weights-shape"],
    "the [CLS] token and pooling": ["cls-token-reads-all", "mean-pooling-by-hand"],
    "padding masks": ["mask-cells-count", "padding-query-rows"],
    "decoder masks in training against generation": ["training-vs-generation", "cached-step-keys",
                                                       "generation-score-count"],
    "KV cache memory under MHA, GQA and MQA": ["kv-cache-memory", "kv-cache-growth", "kv-cache-shape"],
    "the third query (2, 1, 3) and the figure's rounding": ["third-query-rounding"],
    "adding a positional vector (1, 2) + (0.1, 0)": ["add-positions-by-hand"],
    "attention is linear only for fixed weights": ["attention-linear"],
    "the attention operation has no parameters": ["attention-op-parameters"],
    "why Q and K are separate": ["tied-query-key", "query-key-asymmetry"],
    "residuals as a gradient path": ["residual-gradient", "residual-purpose"],
    "cells of weight 0.01 are still computed": ["small-weights-still-computed"],
    "the softmax Jacobian diag(a) - a a^T": ["softmax-jacobian-by-hand"],
    "Lecture 16, 16.6: the dot product of two sinusoidal position vectors depends only on their offset":
        ["sinusoidal-offset"],
    # issue 24: the lecture sections and the misconceptions the lectures warn about that had no problem
    "L08 p.1-4: a Transformer arranges familiar modules; the weights mixing positions come from the input":
        ["transformer-ingredients"],
    "L08 p.12: token, id, one-hot vector and embedding": ["token-embedding-one-hot"],
    "L08 p.28: learned-position similarity need not fall with distance": ["learned-position-similarity"],
    "L08 p.29: every stacked layer computes attention again": ["layers-recompute-attention"],
    "L08 small check: head axis against key axis; a length-3 row is not three heads": ["weight-row-axes"],
    "Lecture 16, 16.1: from the MLP to the CNN to attention": ["mlp-cnn-attention"],
    "Lecture 16, 16.5: parameters are not shared across layers": ["layers-share-parameters"],
    "Lecture 16, 16.6: relative position by the rotation R_delta": ["rotation-relative-position"],
    "3-8 section 9: positional encoding beyond the trained length does not extrapolate": ["pe-beyond-trained-length"],
    "softmax along each row, not over the whole table": ["softmax-whole-table"],
    "a token's key need not equal its value": ["key-equals-value"],
    "'self' names the source of Q, K and V, not a token reading only itself": ["self-means-same-sequence"],
    "L08 p.22: the heat maps are cross-language alignment, not one sentence's self-attention": ["head-heat-maps"],
    "LayerNorm does not make tokens identical": ["normalised-tokens-differ"],
}


@pytest.fixture(scope="module")
def bank() -> Bank:
    report = load_bank()
    assert report.errors == [], [str(e) for e in report.errors]
    return report.bank


def _folder(bank: Bank, problem_id: str) -> str:
    return bank.paths[problem_id].parent.name


def test_the_bank_has_enough_problems_and_enough_hard_ones(bank: Bank) -> None:
    assert len(bank.problems) >= MIN_PROBLEMS
    hard = sorted(pid for pid, p in bank.problems.items() if p.difficulty == 3)
    assert len(hard) >= MIN_HARD, hard


def test_every_topic_folder_has_enough_written_problems(bank: Bank) -> None:
    written = Counter(_folder(bank, pid) for pid, p in bank.problems.items() if p.kind != "implement")
    folders = {_folder(bank, pid) for pid in bank.problems}
    short = {folder: written[folder] for folder in sorted(folders) if written[folder] < MIN_WRITTEN_PER_FOLDER}
    assert short == {}, f"topic folders with fewer than {MIN_WRITTEN_PER_FOLDER} non-code problems: {short}"


def test_every_written_kind_appears_in_most_folders(bank: Bank) -> None:
    kinds = Counter(p.kind for p in bank.problems.values() if p.kind != "implement")
    assert set(kinds) == {"numeric", "shape", "true_false", "multiple_choice"}
    for folder in ("architecture", "generation"):
        here = {p.kind for pid, p in bank.problems.items() if _folder(bank, pid) == folder}
        assert {"numeric", "shape", "true_false", "multiple_choice"} <= here, (folder, sorted(here))


@pytest.mark.parametrize("topic", sorted(LECTURE_TOPICS))
def test_each_lecture_topic_has_a_written_problem(bank: Bank, topic: str) -> None:
    for problem_id in LECTURE_TOPICS[topic]:
        assert problem_id in bank.problems, f"{topic}: no problem {problem_id}"
        assert bank.problems[problem_id].kind != "implement", f"{topic}: {problem_id} is a code problem"
