"""The bundled question bank: complete, graded by what the lecture says, and read the way students type.

Lecture figures are copied here from the course notes (L08, the 3-8 course page,
Lecture 16 notes), so nothing reads the notes at test time.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter

import numpy as np
import pytest

from qkv_runtime.answers import (
    AnswerFormatError,
    evaluate_dim,
    parse_bool,
    parse_choice,
    parse_numbers,
    parse_shape,
)
from autograder.bank.load import Bank, load_bank, parse_problem
from autograder.kinds.model import Tolerance
from autograder.kinds import (
    KINDS,
    ImplementProblem,
    MultipleChoiceProblem,
    NumericProblem,
    ShapeProblem,
    TrueFalseProblem,
    kind_of,
)
from autograder.kinds.multiple_choice import check_choice
from autograder.kinds.numeric.parts import check_part
from autograder.kinds.shape import check_shape, expected_shape
from autograder.kinds.true_false import check_true_false
from qkv_runtime.compare import compare
from autograder.kinds.resolve import resolve
from autograder.bank.validate import check_problem
from autograder.kinds.numeric.variants import draw_variant, lecture_variant
from autograder.errors import QkvError
from autograder.references import numpy_ref
from conftest import ROOT


@pytest.fixture(scope="module")
def bank() -> Bank:
    report = load_bank()
    assert report.errors == [], [str(e) for e in report.errors]
    return report.bank


def _of_kind(bank: Bank, cls):
    return [p for p in bank.problems.values() if isinstance(p, cls)]


# ------------------------------------------------------------------ coverage


def test_bank_size_and_mix(bank: Bank) -> None:
    assert len(bank.problems) >= 40
    kinds = Counter(p.kind for p in bank.problems.values())
    assert kinds["implement"] >= 21
    assert kinds["numeric"] >= 10
    assert kinds["shape"] >= 5
    assert kinds["true_false"] >= 5
    assert kinds["multiple_choice"] >= 5


def test_every_file_is_named_after_its_id_and_sits_in_its_topic_folder(bank: Bank) -> None:
    for problem_id, path in bank.paths.items():
        assert path.stem == problem_id
        assert path.parent.name == bank.problems[problem_id].topic.split("/")[0], path


REQUIRED_TOPICS = {
    "qkv/roles", "qkv/projections",
    "attention/scores", "attention/scaling", "attention/softmax", "attention/weighting", "attention/sdpa",
    "attention/shapes", "attention/interpretation",
    "masking/causal", "masking/renormalise", "masking/fully-masked",
    "multi-head/split", "multi-head/concat", "multi-head/mha", "multi-head/shapes", "multi-head/sharing",
    "multi-head/roles",
    "layer-norm/implement", "layer-norm/by-hand", "layer-norm/axis",
    "feed-forward/implement", "feed-forward/by-hand", "feed-forward/shapes",
    "residual/add-norm",
    "positional/sinusoidal", "positional/learned", "positional/permutation", "positional/shapes",
    "parameters/mha", "parameters/ffn", "parameters/gqa",
    "complexity/scores", "complexity/heads", "complexity/ffn",
    "background/rnn", "background/conv",
    "masking/padding", "architecture/masks", "architecture/cross-attention", "architecture/pooling",
    "architecture/encoder", "generation/kv-cache", "generation/kv-cache-memory", "attention/softmax-gradient",
    "multi-head/gqa",
}


def test_every_topic_is_covered(bank: Bank) -> None:
    topics = {p.topic for p in bank.problems.values()}
    assert REQUIRED_TOPICS <= topics, sorted(REQUIRED_TOPICS - topics)


def test_homework_statements_self_test_and_top_five_misconceptions(bank: Bank) -> None:
    sources = [p.source for p in bank.problems.values()]
    for item in ("HW03 Q1(1)", "HW03 Q1(2)", "HW03 Q1(3)", "HW03 Q1(4)"):
        assert any(item in s for s in sources), item
    for q in range(1, 6):
        assert any(f"self-test Q{q}" in s for s in sources), f"self-test Q{q}"
    top5 = [p for p in bank.problems.values() if "top-5-misconception" in p.tags]
    assert len(top5) == 5
    assert all(isinstance(p, (TrueFalseProblem, MultipleChoiceProblem)) for p in top5)
    conv = bank.get("one-by-one-convolution")
    assert "L07" in conv.source and conv.topic.startswith("background/")
    for problem_id in ("rnn-sequential", "heads-reduce-cost", "one-by-one-convolution", "ffn-quadratic"):
        assert bank.get(problem_id).answer is False


@pytest.mark.slow
def test_every_problem_passes_the_deep_checks(bank: Bank) -> None:
    failures = {pid: check_problem(p) for pid, p in bank.problems.items()}
    assert {pid: f for pid, f in failures.items() if f} == {}


# ------------------------------------------------------------ implement problems


def test_every_reference_function_has_an_implement_problem(bank: Bank) -> None:
    implement = {p.function: p for p in _of_kind(bank, ImplementProblem)}
    for name in numpy_ref.__all__:
        assert name in implement, f"no implement problem for {name}"
        problem = implement[name]
        assert problem.references == {"numpy": f"solutions.numpy_ref.{name}", "torch": f"solutions.torch_ref.{name}"}
        assert problem.signature.startswith(f"{name}(")


def test_implement_problems_have_public_hidden_tests_and_misconceptions(bank: Bank) -> None:
    for problem in _of_kind(bank, ImplementProblem):
        assert problem.public_tests and problem.hidden_tests, problem.id
        assert problem.misconceptions, problem.id
        assert all(m.implementation for m in problem.misconceptions), problem.id
        assert any(t.expect is not None for t in problem.public_tests), f"{problem.id}: no worked figure in public tests"


REQUIRED_MISCONCEPTIONS = {
    ("softmax-rows", "solutions.misconceptions.softmax_over_columns"),
    ("scaled-dot-product-attention", "solutions.misconceptions.sdpa_column_softmax"),
    ("attention-scores", "solutions.misconceptions.scores_unscaled"),
    ("scaled-dot-product-attention", "solutions.misconceptions.sdpa_unscaled"),
    ("softmax-rows", "solutions.misconceptions.softmax_zero_after"),
    ("scaled-dot-product-attention", "solutions.misconceptions.sdpa_zero_after"),
    ("layer-norm", "solutions.misconceptions.layer_norm_unbiased"),
    ("layer-norm", "solutions.misconceptions.layer_norm_eps_outside"),
    ("layer-norm", "solutions.misconceptions.layer_norm_over_tokens"),
    ("feed-forward", "solutions.misconceptions.ffn_no_relu"),
    ("split-heads", "solutions.misconceptions.split_heads_over_tokens"),
    ("split-heads", "solutions.misconceptions.split_heads_plain_reshape"),
    ("sinusoidal-positional-encoding", "solutions.misconceptions.pe_sin_cos_swapped"),
    ("sinusoidal-positional-encoding", "solutions.misconceptions.pe_exponent_i"),
    ("causal-mask", "solutions.misconceptions.causal_mask_upper"),
    ("causal-mask", "solutions.misconceptions.causal_mask_strict"),
    ("multi-head-attention", "solutions.misconceptions.mha_scaled_by_sqrt_d"),
    ("multi-head-attention", "solutions.misconceptions.mha_without_wo"),
    ("attention-scores", "solutions.misconceptions.scores_transposed"),
    ("softmax-rows", "solutions.misconceptions.softmax_keepdims_forgotten"),
    ("softmax-rows", "solutions.misconceptions.softmax_mask_minus_1e9"),
    ("softmax-rows", "solutions.misconceptions.softmax_nan_fully_masked"),
    ("softmax-rows", "solutions.misconceptions.softmax_mask_inverted"),
    ("scaled-dot-product-attention", "solutions.misconceptions.sdpa_mask_inverted"),
    ("scaled-dot-product-attention", "solutions.misconceptions.sdpa_scaled_after_softmax"),
    ("attention-scores", "solutions.misconceptions.scores_k_dot_t"),
    ("sinusoidal-positional-encoding", "solutions.misconceptions.pe_positions_from_one"),
    ("feed-forward", "solutions.misconceptions.ffn_biases_ignored"),
    ("layer-norm", "solutions.misconceptions.layer_norm_over_batch"),
    ("padding-mask", "solutions.misconceptions.padding_mask_true_on_padding"),
    ("decoder-step", "solutions.misconceptions.step_first_causal_row"),
    ("grouped-query-attention", "solutions.misconceptions.gqa_groups_interleaved"),
    ("encoder-layer", "solutions.misconceptions.encoder_layer_pre_norm"),
}


def test_required_misconceptions_are_in_the_bank(bank: Bank) -> None:
    present = {(p.id, m.implementation) for p in _of_kind(bank, ImplementProblem) for m in p.misconceptions}
    assert REQUIRED_MISCONCEPTIONS <= present, sorted(REQUIRED_MISCONCEPTIONS - present)


def test_hidden_tests_include_edge_cases(bank: Bank) -> None:
    tests = {p.id: p.hidden_tests for p in _of_kind(bank, ImplementProblem)}
    assert any(t.expect_error == "ValueError" for t in tests["split-heads"])
    assert any(t.expect_error == "ValueError" for t in tests["multi-head-attention"])
    assert any("fully masked" in t.name for t in tests["softmax-rows"])
    assert any("fully masked" in t.name for t in tests["scaled-dot-product-attention"])
    assert any("large" in t.name for t in tests["softmax-rows"])
    assert any(t.args and t.args[1] % 2 == 1 for t in tests["sinusoidal-positional-encoding"])  # odd d

    def square(problem_id: str) -> bool:
        # a square score matrix is where a reduction without keepdims broadcasts silently
        return any(not t.expect_error and t.args and getattr(t.args[0], "shape", [0])[-2:] == [n, n]
                   for t in tests[problem_id] for n in range(2, 10))

    assert square("softmax-rows") and square("softmax-backward")
    assert any("fully masked" in t.name for t in tests["softmax-backward"])
    assert any("empty cache" in t.name for t in tests["decoder-step"])
    assert any("padding only" in t.name for t in tests["pool-tokens"])
    for problem_id in ("padding-mask", "encoder-decoder-masks", "kv-cache-bytes", "grouped-query-attention"):
        assert any(t.expect_error == "ValueError" for t in tests[problem_id]), problem_id


def test_every_misconception_is_named_on_a_hidden_test(bank: Bank) -> None:
    """Stronger than validate: on some hidden test the mutant returns an output (it does not just crash)
    that fails the test and that the grader names as this misconception, not as one listed before it."""
    from autograder.kinds.implement.outputs import run_trusted
    from qkv_runtime.compare import select

    def outputs(function, test):
        try:
            return select(run_trusted(function, test), test.output)
        except Exception:  # noqa: BLE001 - a mutant that cannot run on an input is not named there
            return None

    for problem in _of_kind(bank, ImplementProblem):
        reference = resolve(problem.references["numpy"])
        mutants = [(m.id, resolve(m.implementation)) for m in problem.misconceptions]
        for mistake, mutant in mutants:
            named_on = []
            for test in problem.hidden_tests:
                got = None if test.expect_error else outputs(mutant, test)
                if got is None or compare(got, outputs(reference, test), test.tolerance.abs, test.tolerance.rel) is None:
                    continue
                first = next(other for other, function in mutants
                             if (theirs := outputs(function, test)) is not None
                             and compare(got, theirs, test.tolerance.abs, test.tolerance.rel) is None)
                if first == mistake:
                    named_on.append(test.name)
            assert named_on, f"{problem.id}: {mistake} is never named on a hidden test"


def test_examples_shown_to_students_are_what_the_reference_prints(bank: Bank) -> None:
    import doctest

    checked = 0
    for problem in _of_kind(bank, ImplementProblem):
        if not problem.example.strip():
            continue
        namespace = {"np": np, problem.function: resolve(problem.references["numpy"])}
        test = doctest.DocTestParser().get_doctest(problem.example, namespace, problem.id, problem.id, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        runner.run(test, out=lambda text: None)
        assert runner.failures == 0, f"{problem.id}: its example does not print what the reference gives"
        checked += 1
    assert checked >= 15


def test_each_misconception_stands_alone(bank: Bank) -> None:
    """A mutant needs only the module header (imports and assignments) and `ref`, so it can be pasted into a submission."""
    import inspect

    from autograder.kinds.implement.outputs import run_trusted
    from autograder.references import misconceptions

    header = inspect.getsource(misconceptions).split("\ndef ", 1)[0].replace("from . import numpy_ref as ref", "")
    for problem in _of_kind(bank, ImplementProblem):
        test = next(t for t in problem.hidden_tests if not t.expect_error)
        for wrong in problem.misconceptions:
            original = resolve(wrong.implementation)
            namespace = {"ref": numpy_ref}
            exec(compile(header + "\n" + inspect.getsource(original), wrong.implementation, "exec"), namespace)
            pasted = namespace[original.__name__]
            try:
                want = run_trusted(original, test)
            except Exception as err:  # noqa: BLE001 - the pasted copy must fail the same way
                with pytest.raises(type(err)):
                    run_trusted(pasted, test)
                continue
            got = run_trusted(pasted, test)
            assert all(np.array_equal(g, w, equal_nan=True) for g, w in zip(got, want)), wrong.implementation


# ----------------------------------------------------------- lecture figures


def _lecture(bank: Bank, problem_id: str) -> dict[str, np.ndarray]:
    return lecture_variant(bank.get(problem_id)).answers


def test_one_query_example(bank: Bank) -> None:
    a = _lecture(bank, "one-query-by-hand")
    assert a["scores"].tolist() == [2, 4, 4]
    assert a["weights"] == pytest.approx([0.0634, 0.4683, 0.4683], abs=5e-5)
    assert a["output"] == pytest.approx([1.9366, 6.6831, 1.5951], abs=5e-5)


def test_masked_example_170_40_and_wrong_20_thirds(bank: Bank) -> None:
    problem = bank.get("masked-renormalisation")
    a = lecture_variant(problem).answers
    assert float(a["output"]) == pytest.approx(170 / 3, abs=1e-9)
    assert float(a["masked_output"]) == pytest.approx(40 / 3, abs=1e-9)
    assert a["masked_weights"] == pytest.approx([2 / 3, 1 / 3, 0], abs=1e-12)
    (wrong,) = problem.misconceptions
    twin = resolve(wrong.compute)(**problem.lecture_example.params)
    assert float(twin["masked_output"]) == pytest.approx(20 / 3, abs=1e-9)
    # the masked implement problem shows the same figure in a public test
    sdpa = bank.get("scaled-dot-product-attention")
    assert any(t.expect == [[13.333333]] for t in sdpa.public_tests)


def test_layer_norm_and_ffn_examples(bank: Bank) -> None:
    ln = _lecture(bank, "layer-norm-by-hand")
    assert (float(ln["mean"]), float(ln["variance"])) == (3.0, 1.0)
    assert ln["normalised"].tolist() == [-1.0, 1.0]
    problem = bank.get("ffn-by-hand")
    ffn = lecture_variant(problem).answers
    assert ffn["pre"].tolist() == [1, -1, 0]
    assert ffn["hidden"].tolist() == [1, 0, 0]
    assert ffn["output"].tolist() == [1, 0]
    no_relu = resolve(problem.misconceptions[0].compute)(**problem.lecture_example.params)
    assert np.asarray(no_relu["output"]).tolist() == [1, -1]


def test_parameter_counts_and_growth(bank: Bank) -> None:
    mha = bank.get("mha-parameter-count")
    assert float(_lecture(bank, "mha-parameter-count")["total"]) == 1_050_624
    compute = resolve(mha.compute)
    assert [compute(d=512, h=h)["total"] for h in (1, 8, 16)] == [1_050_624] * 3  # unchanged by h
    ffn = _lecture(bank, "ffn-parameter-count")
    assert float(ffn["ffn"]) == 2 * 512 * 2048 + 2048 + 512
    growth = _lecture(bank, "score-growth")
    assert (float(growth["scores_old"]), float(growth["scores_new"]), float(growth["ratio"])) == (
        16_777_216, 67_108_864, 4)


def test_course_page_self_test(bank: Bank) -> None:
    assert float(_lecture(bank, "course-q1-scaled-score")["scaled"]) == pytest.approx(2.828, abs=5e-4)
    q2 = _lecture(bank, "course-q2-softmax-mix")
    assert q2["weights"] == pytest.approx([0.238, 0.238, 0.525], abs=5e-4)
    assert q2["output"] == pytest.approx([5.525, 5.525], abs=5e-4)
    part = {p.name: p for p in bank.get("course-q2-softmax-mix").parts}["output"]
    assert check_part(part, q2["output"], "[5.53, 5.53]").correct  # the page's rounded figure is accepted
    assert float(_lecture(bank, "two-keys-by-hand")["output"]) == pytest.approx(12.689, abs=5e-4)


# ------------------------------------------------------- parameterised variants

HAND_CALCULATIONS = {"one-query-by-hand", "two-keys-by-hand", "course-q1-scaled-score", "course-q2-softmax-mix",
                     "masked-renormalisation", "layer-norm-by-hand", "ffn-by-hand", "pe-entry"}


def _distinct(values: np.ndarray) -> bool:
    flat = np.round(np.asarray(values, dtype=float).reshape(-1), 6).tolist()
    return len(set(flat)) == len(flat)


REQUIRED_DISTINCT = {
    "one-query-by-hand": lambda v: _distinct(v.answers["scores"]),
    "two-keys-by-hand": lambda v: _distinct(v.answers["scores"]) and v.params["v"][0] != v.params["v"][1],
    "masked-renormalisation": lambda v: _distinct(v.params["v"])
    and abs(float(v.answers["output"] - v.answers["masked_output"])) >= 0.5,
    "course-q1-scaled-score": lambda v: float(v.answers["dot"]) != 0,
    "course-q2-softmax-mix": lambda v: len(set(v.params["scores"])) > 1,
    "layer-norm-by-hand": lambda v: float(v.answers["variance"]) > 0,
    "ffn-by-hand": lambda v: bool((v.answers["pre"] < 0).any()),
    "kv-sharing-parameters": lambda v: _distinct([v.answers[k] for k in ("mha_kv", "gqa_kv", "mqa_kv")]),
}


def _within(got, want, tolerance) -> bool:
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return got.shape == want.shape and bool(np.all(np.abs(got - want) <= tolerance.abs + tolerance.rel * np.abs(want)))


def _parameterised(bank: Bank) -> list[NumericProblem]:
    return [p for p in _of_kind(bank, NumericProblem) if p.parameters]


@pytest.mark.slow
def test_two_hundred_draws_are_feasible_finite_distinct_and_tell_mistakes_apart(bank: Bank) -> None:
    problems = _parameterised(bank)
    assert len(problems) >= 10
    assert set(REQUIRED_DISTINCT) <= {p.id for p in problems}
    for problem in problems:
        feasible = resolve(problem.feasible) if problem.feasible else None
        seen = set()
        for seed in range(200):
            variant = draw_variant(problem, seed)
            seen.add(repr(variant.params))
            assert all(np.all(np.isfinite(a)) for a in variant.answers.values()), (problem.id, variant.params)
            if feasible:
                assert feasible(variant.params, variant.answers) is None, (problem.id, variant.params)
            if problem.id in REQUIRED_DISTINCT:
                assert REQUIRED_DISTINCT[problem.id](variant), (problem.id, variant.params)
            if problem.id in HAND_CALCULATIONS:
                assert max(np.abs(a).max() for a in variant.answers.values()) <= 100, (problem.id, variant.params)
            for wrong in problem.misconceptions:
                twin = resolve(wrong.compute)(**variant.params)
                assert not all(_within(twin[p.name], variant.answers[p.name], p.tolerance)
                               for p in problem.parts if p.name in twin), (problem.id, wrong.id, variant.params)
        assert len(seen) >= min(10, _count_choices(problem)), f"{problem.id}: only {len(seen)} different draws"


@pytest.mark.slow
def test_two_hundred_variants_of_every_numeric_problem_keep_their_hand_rules(bank: Bank) -> None:
    """Each drawn variant keeps its problem's `by_hand` rules, and what the issue measured is gone: no weight
    of 0.99 or more, perfect-square variances, no all-zero FFN output, no counts of 9 digits or more, and an
    e^x table holding every exponent the work needs."""
    problems = _parameterised(bank)
    checked = 0
    for problem in problems:
        rules = problem.by_hand
        assert rules is not None, f"{problem.id}: a numeric problem with parameters declares by_hand rules"
        parts = [p.name for p in problem.parts]
        integers = [p.name for p in problem.parts if p.form == "integer"]
        for seed in range(200):
            variant = draw_variant(problem, seed, "s2026001" if seed % 2 else None)
            assert rules.broken(variant.quantities, parts) is None, (problem.id, variant.params)
            assert all(abs(float(variant.answers[name])) < 1e8 for name in integers), (problem.id, variant.params)
            q = variant.quantities
            if problem.id == "one-query-by-hand":
                assert q["weights"].max() < 0.99, variant.params
                assert np.ptp(q["scores"]) <= 3, variant.params
            if problem.id == "layer-norm-by-hand":
                assert float(q["variance"]) == round(np.sqrt(float(q["variance"]))) ** 2, variant.params
            if problem.id == "ffn-by-hand":
                assert np.any(q["output"] != 0), variant.params
            for table in rules.tables:
                if "exp" in table.functions:
                    prompt = kind_of(problem).prompt_text(problem, variant)
                    for x in np.ravel(q[table.needs]):
                        assert f"{np.exp(x):.{table.decimals}f}" in prompt, (problem.id, x)
            checked += 1
    assert checked == 200 * len(problems) and len(problems) >= 14


@pytest.mark.parametrize("problem_id", ["layer-norm-by-hand", "add-and-norm-by-hand", "layer-norm-batch-axis"])
def test_every_layer_norm_draw_has_three_distinct_deviations(bank: Bank, problem_id: str) -> None:
    """Issue 47: a token with two distinct deviations from its mean normalises to all +-1 (56-66% of these
    problems' draws did), which a student types without dividing by anything; every draw now has at least three."""
    problem = bank.get(problem_id)
    for seed in range(200):
        variant = draw_variant(problem, seed, "s2026001" if seed % 2 else None)
        for token in np.atleast_2d(variant.answers["normalised"]):
            assert len(set(np.round(token, 6).tolist())) >= 3, (problem_id, variant.params)


def test_the_mislabels_the_issue_found_are_fixed(bank: Bank) -> None:
    """Each mistake's wrong method is the mistake its message names, and corrections say what is true."""
    variance = bank.get("dot-product-variance")
    wrong = {m.id: m for m in variance.misconceptions}["std-equals-variance"]
    for d_k in (4, 16, 64):
        twin = resolve(wrong.compute)(d_k=d_k)
        assert twin["std"] == d_k and twin["scaled_std"] == pytest.approx(d_k ** 0.5)  # the std taken to be d_k
    assert "the standard deviation to be the variance" in wrong.message
    heads = bank.get("heads-reduce-cost")
    right = {c.id: c for c in heads.follow_up.choices}[heads.follow_up.answer]
    assert "subspace" in heads.correction and "subspace" in right.text  # what multiple heads are for (HW03)
    convex = bank.get("convex-output-range")
    assert "finite scores" in convex.statement and "masked" in convex.reason  # a fully masked row gives 0


def _longest_letter(choices, answer_order) -> str:
    from autograder.bank.measures import longest
    from autograder.kinds.choices import letter_of

    return letter_of(answer_order, longest({c.id: c.text for c in choices}))


def test_answering_false_and_picking_the_longest_choice_earns_at_most_forty_percent(bank: Bank) -> None:
    """The test-wise guesser: False for every statement, the longest choice of every choice question (and of
    every follow-up with choices), nothing where a number or a shape is asked."""
    from autograder.kinds.choices import order_in

    earned = total = 0.0
    for problem in sorted(bank.problems.values(), key=lambda p: p.id):
        kind = kind_of(problem)
        variant = kind.variant(problem, 0, "same", None)
        if isinstance(problem, MultipleChoiceProblem):
            typed = _longest_letter(problem.choices, order_in(variant, problem.id, problem.ids))
        elif isinstance(problem, TrueFalseProblem):
            typed = {"answer": False, "correction": "It is false."}
            follow = problem.follow_up
            if follow is not None and follow.form == "choice":
                typed["follow_up"] = _longest_letter(follow.choices, order_in(variant, problem.id, follow.ids))
        else:
            continue
        earned += kind.grade(problem, typed, variant).fraction * problem.points
        total += problem.points
    assert total >= 40
    assert earned / total <= 0.40, f"guessing earns {earned:g} of {total:g} points"


def test_the_bank_is_close_to_half_true(bank: Bank) -> None:
    statements = _of_kind(bank, TrueFalseProblem)
    true = sum(p.answer for p in statements)
    assert len(statements) >= 12 and 0.35 <= true / len(statements) <= 0.65, (true, len(statements))


def _count_choices(problem: NumericProblem) -> int:
    total = 1
    for spec in problem.parameters.values():
        total *= len(spec.choice) if hasattr(spec, "choice") else 1000
    return total


def test_variants_depend_on_seed_and_student(bank: Bank) -> None:
    problem = bank.get("one-query-by-hand")
    assert draw_variant(problem, 1).params == draw_variant(problem, 1).params
    draws = {repr(draw_variant(problem, 1, s).params) for s in ("alice", "bob", "carol", "dave")}
    assert len(draws) > 1


def test_numeric_texts_render_for_lecture_and_drawn_variants(bank: Bank) -> None:
    for problem in _of_kind(bank, NumericProblem):
        variants = ([lecture_variant(problem)] if problem.lecture_example else []) + (
            [draw_variant(problem, s) for s in range(5)] if problem.parameters else [])
        for variant in variants:
            prompt, solution = kind_of(problem).prompt_text(problem, variant), kind_of(problem).solution_text(problem, variant)
            assert "{{" not in prompt + solution and "{%" not in prompt + solution, problem.id
            assert "nan" not in prompt + solution, problem.id


# ------------------------------------------------------- written problem kinds


def test_shape_answers_and_their_misconceptions(bank: Bank) -> None:
    for problem in _of_kind(bank, ShapeProblem):
        assert check_shape(problem, " x ".join(problem.answer)).correct, problem.id
        assert check_shape(problem, "(" + ", ".join(problem.answer) + ")").correct, problem.id
        for wrong in problem.misconceptions:
            # typed in numbers when the problem gives them ("h*n" cannot be typed: '*' reads as 'x')
            dims = [evaluate_dim(d, problem.parameters) for d in wrong.answer] if problem.parameters else wrong.answer
            assert tuple(evaluate_dim(d, problem.parameters) for d in wrong.answer) != expected_shape(problem)
            verdict = check_shape(problem, " x ".join(dims))
            assert not verdict.correct and verdict.message == wrong.message, (problem.id, wrong.answer)
    batch = bank.get("split-heads-batch-shape")
    b, h, n, head = expected_shape(batch)  # the class's draw: sizes are drawn per student (issue 47)
    d = int(head) * int(h)
    assert check_shape(batch, f"{b} x {h} x {n} x {head}").correct
    assert check_shape(batch, "(b, h, n, d/h)").correct
    assert "tokens" in check_shape(batch, f"({b}, {h}, {n}/{h}, {d})").message
    query = bank.get("query-projection-shape")
    assert check_shape(query, "x".join(expected_shape(query))).correct


def _class_order(problem):
    return kind_of(problem).variant(problem, 0, "same", None)


def test_choices_and_statements_carry_feedback(bank: Bank) -> None:
    for problem in _of_kind(bank, MultipleChoiceProblem):
        for choice in problem.choices:
            assert (choice.misconception is None) == (choice.id == problem.answer), (problem.id, choice.text)
        variant = _class_order(problem)
        letter = kind_of(problem).answer(problem, variant)
        assert check_choice(problem, letter.lower(), variant).correct
    for problem in _of_kind(bank, TrueFalseProblem):
        assert problem.answer or problem.correction
        assert problem.follow_up is not None, f"{problem.id}: every statement of the bank has a graded follow-up"
        right = kind_of(problem).answer(problem, _class_order(problem))
        assert check_true_false(problem, {**right, "answer": "T" if problem.answer else "f"},
                                _class_order(problem)).fraction == 1.0
        for choice in problem.follow_up.choices:
            assert (choice.misconception is None) == (choice.id == problem.follow_up.answer), (problem.id, choice.text)
    problem = bank.get("mask-before-softmax")
    variant = _class_order(problem)
    zeroed = "ABCD"[variant.params["order"].index("zeroed-after")]
    verdict = check_choice(problem, zeroed, variant)
    assert not verdict.correct and "after the softmax" in verdict.message


def test_a_letter_means_the_choice_a_students_own_order_puts_there(bank: Bank) -> None:
    problem = bank.get("qkv-roles")
    kind = kind_of(problem)
    orders = {tuple(kind.variant(problem, 3230, "per_student", s).params["order"]) for s in ("ann", "bo", "cy", "di", "ed")}
    assert len(orders) > 1, "the order of the choices should differ between students"
    assert kind.variant(problem, 3230, "per_student", "ann") == kind.variant(problem, 3230, "per_student", "ann")
    for order in orders:
        variant = kind.variant(problem, 0, "same", None).__class__(problem.id, {"order": list(order)}, {}, "t")
        right = "ABCD"[list(order).index(problem.answer)]
        assert check_choice(problem, right, variant).correct
        assert not check_choice(problem, "ABCD"[(list(order).index(problem.answer) + 1) % 4], variant).correct
    # the same class-wide order in every route: same seed, no student
    assert kind.variant(problem, 7, "same", "ann") == kind.variant(problem, 7, "same", None)


def test_a_false_statement_earns_half_for_its_verdict_and_half_for_its_follow_up(bank: Bank) -> None:
    problem = bank.get("ffn-quadratic")
    assert check_true_false(problem, {"answer": False, "follow_up": "327680", "correction": ""}).fraction == 1.0
    assert check_true_false(problem, {"answer": False, "follow_up": None, "correction": "It is linear."}).fraction == 0.5
    banana = check_true_false(problem, {"answer": False, "correction": "banana"})
    assert banana.fraction == 0.5 and "kept for your instructor" in banana.message
    assert check_true_false(problem, {"answer": True, "follow_up": 327680}).fraction == 0.5
    assert check_true_false(problem, "F").fraction == 0.5  # a bare verdict: the follow-up is unanswered


# ---------------------------------------------------------------- answer forms


@pytest.mark.parametrize(("typed", "want"), [
    ("0.0634", 0.0634),
    ("6.34e-2", 0.0634),
    ("[0.0634, 0.4683, 0.4683]", [0.0634, 0.4683, 0.4683]),
    ("1 2; 3 4", [[1, 2], [3, 4]]),
    ("[1 2; 3 4]", [[1, 2], [3, 4]]),
    ("40/3", 40 / 3),
    ("-2", -2),
])
def test_numbers_are_read(typed: str, want) -> None:
    assert parse_numbers(typed) == pytest.approx(np.asarray(want, dtype=float))


@pytest.mark.parametrize(("typed", "want"), [
    ("(3, 4)", ("3", "4")),
    ("3x4", ("3", "4")),
    ("3 x 4", ("3", "4")),
    ("n x d_v", ("n", "dv")),
    ("(n, d_v)", ("n", "dv")),
    ("(n, d/h)", ("n", "d/h")),
    ([3, 4], ("3", "4")),
    # as students write them (issue 14): nested parentheses, brackets, no brackets, spaces alone
    ("n x (d/h)", ("n", "d/h")),
    ("(n, (d/h))", ("n", "d/h")),
    ("((n, d))", ("n", "d")),
    ("[n d_v]", ("n", "dv")),
    ("[n, d/h]", ("n", "d/h")),
    ("n, d_v", ("n", "dv")),
    ("n d_v", ("n", "dv")),
    ("n x d / h", ("n", "d/h")),
    ("n × d/h", ("n", "d/h")),
])
def test_shapes_are_read(typed, want) -> None:
    assert parse_shape(typed) == want


def test_shape_messages_quote_what_was_typed(bank: Bank) -> None:
    problem = bank.get("split-heads-shape")
    for typed in ("n x (d/h)", "(n, (d/h))", "[n d/h]"):
        assert check_shape(problem, typed).correct, typed
    assert check_shape(problem, "n x (d/h").message.endswith('got "n x (d/h"')  # was "n x (d/h is not the shape"
    # d_v is the head width here (a notation of d/h, accepted); d_ff is not
    assert check_shape(problem, "[n d_ff]").message == '"[n d_ff]" is not the shape'  # was "ndff is not the shape"


@pytest.mark.parametrize(("typed", "count", "want"), [
    ("1,050,624", 1, [1050624]), ("1 050 624", 1, [1050624]), ("1_050_624", 1, [1050624]),
    ("1,050,624", None, [1050624]), ("1 050 624", None, [1, 50, 624]), ("10,200", 2, [10, 200]),
    ("2,099,712.5", 1, [2099712.5]),
])
def test_digit_groups_make_one_number_where_one_is_asked(typed, count, want) -> None:
    assert np.ravel(parse_numbers(typed, count)).tolist() == pytest.approx(want)


def test_a_count_with_digit_groups_is_graded_and_a_wrong_count_quoted(bank: Bank) -> None:
    problem = bank.get("mha-parameter-count")
    part = {p.name: p for p in problem.parts}["total"]
    want = lecture_variant(problem).answers["total"]
    assert check_part(part, want, "1,050,624").correct and check_part(part, want, "1 050 624").correct
    assert check_part(part, want, "1,050,62").message.endswith('got 3 in "1,050,62"')


@pytest.mark.parametrize(("typed", "want"), [("True", True), ("true", True), ("T", True), ("yes", True),
                                             ("False", False), ("f", False), ("no", False), (True, True)])
def test_true_false_is_read(typed, want) -> None:
    assert parse_bool(typed) is want


@pytest.mark.parametrize("typed", ["abc", "", "   ", "0.5.3", "[1, two]", "[[1, 2], [3]]", "1/0", True])
def test_malformed_numbers_name_the_format(typed) -> None:
    with pytest.raises(AnswerFormatError, match="a number such as 0.0634"):
        parse_numbers(typed)


@pytest.mark.parametrize("typed", ["", "(3; 4)", "@", None, 3.5])
def test_malformed_shapes_name_the_format(typed) -> None:
    with pytest.raises(AnswerFormatError, match=r"a shape such as \(3, 4\), 3x4 or n x d_v"):
        parse_shape(typed)


def test_malformed_bools_and_letters_name_the_format() -> None:
    with pytest.raises(AnswerFormatError, match="True or False"):
        parse_bool("maybe")
    with pytest.raises(AnswerFormatError, match="one letter from A, B, C, D"):
        parse_choice("E", 4)


def test_ragged_matrix_names_the_format() -> None:
    with pytest.raises(AnswerFormatError):
        parse_numbers("1 2; 3")


def test_dimension_dividing_by_zero_names_the_format() -> None:
    with pytest.raises(AnswerFormatError):
        evaluate_dim("1/0", {"d": 4})


def test_answers_checked_against_a_part() -> None:
    bank = load_bank().bank
    problem = bank.get("masked-renormalisation")
    parts = {p.name: p for p in problem.parts}
    answers = lecture_variant(problem).answers
    assert check_part(parts["masked_output"], answers["masked_output"], "40/3").correct
    assert check_part(parts["masked_output"], answers["masked_output"], "13.3333").correct
    assert not check_part(parts["masked_output"], answers["masked_output"], "20/3").correct
    assert check_part(parts["masked_weights"], answers["masked_weights"], "2/3, 1/3, 0").correct
    verdict = check_part(parts["output"], answers["output"], "fifty-six")
    assert not verdict.correct and "a number such as" in verdict.message


# ------------------------------------------------------------------------ docs


def _schema_page_examples() -> dict[str, str]:
    text = (ROOT / "docs" / "question-bank.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    return {re.search(r"^kind: (\w+)$", block, flags=re.M).group(1): block for block in blocks}


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_schema_page_has_a_valid_example_of_every_kind(kind: str) -> None:
    examples = _schema_page_examples()
    assert kind in examples, f"docs/question-bank.md has no example of {kind}"
    problem = parse_problem(examples[kind], "docs/question-bank.md")
    assert kind_of(problem) is KINDS[kind]
    assert check_problem(problem) == [], problem.id


def test_every_example_in_the_schema_page_is_of_a_registered_kind() -> None:
    assert set(_schema_page_examples()) <= set(KINDS)


def test_nothing_reads_the_course_notes() -> None:
    for folder in ("question_bank", "solutions", "tests", "autograder"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".yaml") and path.name != "test_bank.py":
                assert "/work/shared" not in path.read_text(encoding="utf-8", errors="replace"), path


def test_a_shape_answer_cannot_make_the_grader_compute_for_ever() -> None:
    with pytest.raises(AnswerFormatError):
        evaluate_dim("9**9**9", {"d": 4})


def test_thousands_separators_and_times_sign() -> None:
    assert float(parse_numbers("1,050,624")) == 1_050_624
    assert parse_shape("n×d") == ("n", "d")


@pytest.mark.parametrize("typed", [",", ",;", ", ,", "[1, 2]; ,"])
def test_separators_without_numbers_name_the_format(typed) -> None:
    with pytest.raises(AnswerFormatError, match="a number such as 0.0634"):
        parse_numbers(typed)


@pytest.mark.parametrize("typed", ["(1, 2); (3, 4)", "[1, 2]; [3, 4]", "[1 2; 3 4]"])
def test_matrix_rows_may_carry_their_own_brackets(typed) -> None:
    assert parse_numbers(typed).tolist() == [[1, 2], [3, 4]]


def test_an_integer_answer_with_zero_absolute_tolerance_is_exact(bank) -> None:
    part = next(p for p in bank.get("mha-parameter-count").parts if p.name == "total")
    assert (part.tolerance.abs, part.tolerance.rel) == (0, 0)
    assert check_part(part, np.array(1_050_624.0), "1050624").correct
    assert not check_part(part, np.array(1_050_624.0), "1050625").correct


@pytest.mark.parametrize("got, want, mismatch", [
    ([0.1, 0.2], [0.1, 0.2 + 5e-7], None),
    ([-np.inf, 1.0], [-np.inf, 1.0], None),  # a fully masked score stays -inf
    ([np.inf, 1.0], [-np.inf, 1.0], "1 of 2 entries differ"),
    ([5.0, 1.0], [np.inf, 1.0], "1 of 2 entries differ"),
    ([np.nan, 1.0], [0.0, 1.0], "contains NaN"),
    ([0.1, 0.3], [0.1, 0.2], "1 of 2 entries differ, largest error 0.1"),
])
def test_outputs_are_compared_entry_by_entry(got, want, mismatch) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from inf - inf reaches the grader's output
        found = compare((np.array(got),), (np.array(want),), Tolerance().abs, Tolerance().rel)
    assert (found is None) if mismatch is None else mismatch in found.reason


@pytest.mark.parametrize("file, old, new, message", [
    ("positional/pe-entry.yaml", "range: [1, 30]", "range: [8, -4]", ":9: parameters.p: range must be [low, high]"),
    ("positional/pe-entry.yaml", "{ints: [], range", "{intz: [], range", ":9: parameters.p: a parameter is {ints"),
    ("positional/pe-entry.yaml", "range: [1, 30]", "range: [1, 9223372036854775808]",
     ":9: parameters.p: range must lie within 64-bit integers"),
    ("attention/softmax-rows.yaml", "{causal_mask: 6}", "{causal_mask: 0}",
     ":54: hidden_tests[1].kwargs.mask.causal_mask: Input should be greater than or equal to 1"),
    ("attention/softmax-rows.yaml", "dtype: bool}}", "dtype: int32}}", ":43: public_tests[1].kwargs.mask.dtype: Input should be"),
])
def test_a_wrong_input_or_parameter_spec_names_its_own_field(file, old, new, message) -> None:
    text = (ROOT / "question_bank" / file).read_text()
    assert old in text
    with pytest.raises(QkvError) as err:
        parse_problem(text.replace(old, new, 1), "f.yaml")
    assert str(err.value).startswith(f"f.yaml{message}")


def test_the_bank_is_parsed_by_libyaml_and_a_bad_file_is_still_named_by_pyyamls_words():
    import yaml

    from autograder.bank import load as bank_load
    from autograder.errors import QkvError

    assert yaml.__with_libyaml__ and bank_load.FAST_LOADER is yaml.CSafeLoader  # ten times PyYAML's own parser
    with pytest.raises(QkvError) as refused:
        parse_problem("id: x\nkind: numeric\nparts: [1, 2\n", "broken.yaml")
    # libyaml says "did not find expected ',' or ']'" at the next line; PyYAML names what it found, where
    assert str(refused.value) == "broken.yaml:4:1: bad YAML: expected ',' or ']', but got '<stream end>'"
