"""Answer forms every route reads alike: counts as arithmetic, shapes in the taught notations, Fraction and
Decimal objects, one decimal rule per paper, and hand problems whose numbers test the method.

The routes are the real ones: the grader's kind (`qkv grade` scores written answers with it), the
self-check's judge on the release's own selfcheck.json, and nbgrader's test cells, run as the code
strings the build writes into them.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from autograder.exam.paper import INSTRUCTIONS
from autograder.kinds import kind_of
from autograder.kinds.numeric.checks import MIN_VARIANTS, checked_variants, numeric_findings
from autograder.kinds.numeric.model import NumericProblem
from autograder.kinds.numeric.parts import part_answer
from autograder.kinds.numeric.variants import draw_variant
from autograder.kinds.shape import ShapeProblem, check_shape, expected_shape
from autograder.selfcheck import qkv_check
from qkv_runtime import nbcells
from qkv_runtime import answers
from qkv_runtime.answers import AnswerFormatError, evaluate_dim, parse_expression, parse_numbers
from qkv_runtime.values import plain_answers

# ------------------------------------------------------------ arithmetic for counts


@pytest.mark.parametrize("typed, symbols, value", [
    ("4*512^2", {}, 4 * 512**2),
    ("2^26", {}, 2**26),
    ("4 * 512**2 + 4*512", {}, 4 * 512**2 + 4 * 512),
    ("3*d^2+3*d", {"d": 512}, 3 * 512**2 + 3 * 512),
    ("(d/h) * 2 * h", {"d": 768, "h": 12}, 2 * 768),
    ("n_old^2", {"n_old": 640}, 640**2),
    ("N_old^2", {"n_old": 640}, 640**2),  # names read as dims are: case and _ do not matter
    ("d_{model} × 4", {"d_model": 96}, 384),
    ("2^3^2", {}, 2**9),  # a power tower reads right to left, as on paper
    ("-(2-5)*3", {}, 9),
])
def test_a_count_typed_as_arithmetic_is_the_number_it_names(typed, symbols, value):
    assert parse_numbers(typed, 1, symbols).item() == value


@pytest.mark.parametrize("typed", [
    "9^9^9",  # the inner power is built (9^9), the outer is refused before it is computed
    "2**10**10",
    "10^18*10",
    "2^64",
    "2^-1",
    "2^(1/2)",
    "d^d",  # d = 512: a power beyond 64
    "__import__('os').system('true')",
    "(1).__class__",
    "[x for x in (1, 2)]",
    "lambda: 1",
    "1 if 1 else 2",
    "x + 1",  # not a symbol of the problem
    "1.5*2",  # integers only: a decimal is typed as a number
    "1/0*2",
    "2 ^ ",
    "(" * 120 + "1" + ")" * 120 + "*2",
    "+".join(["1"] * 90),
    "1" + "*1" * 300,
    "2 ** 3 ** 4 ** 5",
])
def test_hostile_arithmetic_is_refused_in_one_line_and_never_run(typed):
    with pytest.raises(AnswerFormatError) as err:
        parse_numbers(typed, 1, {"d": 512})
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message and len(message) < 300


def test_arithmetic_is_read_only_where_one_number_is_expected():
    assert parse_numbers("2^3", 1).item() == 8
    with pytest.raises(AnswerFormatError):
        parse_numbers("2^3", 2)
    # what the number reader takes stays as it was: a fraction, a sign, digit groups, lists
    assert parse_numbers("1/7", 1).item() == pytest.approx(1 / 7)
    assert parse_numbers("-3", 1).item() == -3
    assert parse_numbers("1,050,624", 1).item() == 1050624
    assert parse_numbers("1 2", 2).tolist() == [1, 2]


@pytest.mark.parametrize("typed, symbols, value", [
    ("n*m", {"n": 6, "m": 7}, 42),
    ("d_model*d_ff", {"d_model": 512, "d_ff": 2048}, 512 * 2048),
    ("(d/h)^2", {"d": 512, "h": 8}, 64**2),
])
def test_arithmetic_of_symbols_alone_is_read(typed, symbols, value):
    assert parse_numbers(typed, 1, symbols).item() == value


def test_words_that_are_not_symbols_keep_the_number_readers_message():
    for typed in ("fifty-six", "x*y"):
        with pytest.raises(AnswerFormatError, match=r"^could not read .* as a number such as"):
            parse_numbers(typed, 1, {"d": 512})


def test_arithmetic_inside_a_list_is_refused_in_words_and_numbers_are_read():
    for entries in (["d*2", "3"], ["4*2", "3"]):
        with pytest.raises(AnswerFormatError, match=r"in a list is arithmetic: type each entry of a list as a number"):
            parse_numbers(entries, 2, {"d": 4})
    assert parse_numbers(["1e-5", "-3", "1,050,624", "1/2"], 4).tolist() == [1e-5, -3, 1050624, 0.5]


def test_a_sign_inside_one_expected_number_is_arithmetic():
    assert parse_numbers("1048576 -2048", 1).item() == 1048576 - 2048
    assert parse_numbers("1048576 - 2048", 1).item() == 1048576 - 2048
    assert parse_numbers("1048576 -2048", 2).tolist() == [1048576, -2048]  # two expected: two numbers
    assert parse_numbers("6.34e-2", 1).item() == pytest.approx(0.0634)


def test_a_long_malformed_list_gets_the_number_readers_message():
    typed = " ".join(["1", "-2"] * 60) + " -zz"
    assert len(typed) > 200
    with pytest.raises(AnswerFormatError, match=r"^could not read '-zz' as a number"):
        parse_numbers(typed, 1)


def test_the_depth_and_term_limits_under_the_length_cap():
    deep = "(" * 99 + "7" + ")" * 99  # 199 characters, 99 parentheses deep: within every limit
    assert len(deep) == 199 and parse_numbers(deep, 1).item() == 7
    signs = "-(" * 40 + "7" + ")" * 40  # 40 nested negations: 82 terms (a sign is two)
    assert parse_numbers(signs, 1).item() == 7
    terms = "1" + "+1" * 60  # 121 characters, 121 terms
    assert len(terms) < 200
    with pytest.raises(AnswerFormatError, match=r"has more than 100 terms"):
        parse_numbers(terms, 1)


def test_an_unknown_name_is_refused_with_the_problems_own_names():
    with pytest.raises(AnswerFormatError, match=r"'x'.*the symbols: d, h"):
        parse_expression("x*2", {"d": 512, "h": 8, "K": [[1, 2]]})


# ------------------------------------------------------------ the same verdicts in every route


def _nbgrader(kind, problem, variant, answer) -> float:
    """The points nbgrader's test cell of `problem` gives `answer`: the cell's own checks, run."""
    helper = nbcells.WrittenAnswer({"ANSWERS": {problem.id: answer}}, problem.id, 1.0)
    for line in kind.nbgrader_checks(problem, variant):
        eval(line, {"_w": helper})  # noqa: S307 - the build's own cell code, as nbgrader runs it
    return helper.score()


def _selfcheck(data, problem_id, answer) -> bool:
    entry = next(p for p in data["problems"] if p["id"] == problem_id)
    return all(o.passed for o in qkv_check.check_written(data, entry, answer))


def _grader(kind, problem, variant, answer) -> float:
    return kind.grade(problem, plain_answers({"a": answer})["a"], variant).fraction


@pytest.fixture(scope="module")
def release(built_numpy_same):
    data = qkv_check.load_data(built_numpy_same.out / "student" / "selfcheck.json")
    written = {w.problem.id: w.problem for w in built_numpy_same.assignment.written}
    manifest = built_numpy_same.assignment.manifest
    return data, written, manifest


def _variant(problem, manifest):
    return kind_of(problem).variant(problem, manifest.seed, manifest.variants, None)


def test_counts_as_arithmetic_and_exact_objects_pass_in_every_route(release):
    data, written, manifest = release
    problem = written["mha-parameter-count"]
    kind, variant = kind_of(problem), _variant(problem, manifest)
    d = variant.params["d"]
    forms = [
        {"weights": "4*d^2", "biases": "4*d", "total": "4*d^2 + 4*d"},
        {"weights": f"4*{d}^2", "biases": f"4 * {d}", "total": f"4*{d}**2+4*{d}"},
        {"weights": Decimal(4 * d * d), "biases": Fraction(8 * d, 2), "total": Decimal(f"{4 * d * d + 4 * d}.0")},
    ]
    for answer in forms:
        assert _grader(kind, problem, variant, answer) == 1.0, answer
        assert _selfcheck(data, problem.id, answer), answer
        assert _nbgrader(kind, problem, variant, answer) == pytest.approx(1.0), answer
    wrong = {"weights": "3*d^2", "biases": "4*d", "total": "3*d^2+3*d"}  # W_O forgotten
    assert _grader(kind, problem, variant, wrong) < 1.0
    assert not _selfcheck(data, problem.id, wrong)
    assert _nbgrader(kind, problem, variant, wrong) < 1.0


def test_a_fraction_object_is_a_number_in_every_route(release):
    data, written, manifest = release
    problem = written["score-growth"]
    kind, variant = kind_of(problem), _variant(problem, manifest)
    ratio = Fraction(variant.answers["ratio"].item()).limit_denominator(1000)
    answer = {"scores_old": Decimal(int(variant.answers["scores_old"])), "scores_new": "(n_old*factor)^2",
              "ratio": ratio}
    assert _grader(kind, problem, variant, answer) == 1.0
    assert _selfcheck(data, problem.id, answer)
    assert _nbgrader(kind, problem, variant, answer) == pytest.approx(1.0)


def test_hostile_arithmetic_is_refused_alike_in_every_route(release):
    data, written, manifest = release
    problem = written["mha-parameter-count"]
    kind, variant = kind_of(problem), _variant(problem, manifest)
    for typed in ("9^9^9", "__import__('os')", "d^d"):
        answer = {"weights": typed, "biases": typed, "total": typed}
        assert _grader(kind, problem, variant, answer) == 0.0
        entry = next(p for p in data["problems"] if p["id"] == problem.id)
        outcomes = qkv_check.check_written(data, entry, answer)
        assert not any(o.passed for o in outcomes) and all("\n" not in o.message for o in outcomes)
        assert _nbgrader(kind, problem, variant, answer) == 0.0


# ------------------------------------------------------------ shapes in the notations students are taught


@pytest.mark.parametrize("problem_id, accepted, refused", [
    ("split-heads-shape", ["n x d_k", "(n, d_v)", "n x d_head", "[n d_{k}]", "n x d/h"], ["n x d", "n/h x d", "d_k x n"]),
    ("pe-shape", ["n x d_model", "(n, d_{model})", "n x d"], ["n x 2d", "n x 2d_model", "n+1 x d"]),
    ("split-heads-batch-shape", ["b x h x n x d_k"], ["b x h x n x d"]),
    ("concat-shape", ["n x d_model"], ["n x d_k"]),
    # d_ff is drawn apart from d now (issue 47): 4d is no longer the hidden width
    ("ffn-weight-shape", ["d x d_ff", "(d_model, d_ff)"], ["d_ff x d", "d x d", "d x 4d"]),
])
def test_the_taught_notations_of_a_dim_are_the_dim(bank, problem_id, accepted, refused):
    problem = bank.get(problem_id)
    # the numbers too, as the class's draw gives them (sizes drawn per student, issue 47)
    for typed in [*accepted, " x ".join(expected_shape(problem)), "(" + ", ".join(expected_shape(problem)) + ")"]:
        assert check_shape(problem, typed).correct, typed
    for typed in refused:
        assert not check_shape(problem, typed).correct, typed


@pytest.mark.parametrize("typed", ["4d", "4*d", "4 d"])
def test_a_number_before_a_name_multiplies_it_as_on_paper(typed):
    assert evaluate_dim(typed, {"d": 512}) == evaluate_dim("4*d", {"d": 512}) != evaluate_dim("4", {"d": 512})


def test_split_heads_in_d_k_passes_in_every_route(release):
    data, written, _ = release
    problem = written["split-heads-shape"]
    kind = kind_of(problem)
    for typed, right in (("n x d_k", True), ("(n, d_head)", True), ("n x d", False)):
        assert kind.grade(problem, typed, None).fraction == float(right), typed
        assert _selfcheck(data, problem.id, typed) == right, typed
        assert (_nbgrader(kind, problem, None, typed) > 0) == right, typed


def test_a_notation_must_name_a_dim_of_the_answer():
    fields = dict(id="head-out", title="head shape", topic="multi-head/shapes", points=1, difficulty=1,
                  source="a test", prompt="The shape of one head?", solution="n x d/h, as the heads split d.",
                  kind="shape", answer=["n", "d/h"])
    with pytest.raises(ValueError, match="notations.d_k: 'd' is not a dim of the answer"):
        ShapeProblem(**fields, notations={"d_k": "d"})
    with pytest.raises(ValueError, match="notations.h: already a parameter"):
        ShapeProblem(**fields, parameters={"h": 8, "d": 64, "n": 3}, notations={"h": "d/h"})


def test_n_by_d_v_is_the_shape_and_other_words_between_dims_cannot_be_read(bank):
    """'by' is how a shape is said ("a 3 by 4 matrix"); any other word between the dims is no spelling of a shape, and
    is refused as unreadable (asked again by the drill, "could not read" everywhere), never judged a wrong shape."""
    problem = bank.get("output-shape")
    assert problem.answer == ["n", "d_v"]
    for typed in ("n by d_v", "n BY d_v", "(n by d_v)"):
        assert check_shape(problem, typed).correct, typed
    assert not check_shape(problem, "d_v by n").correct
    for typed in ("n times d_v", "n and d_v", "n rows d_v columns"):
        verdict = check_shape(problem, typed)
        assert not verdict.correct and verdict.message.startswith("could not read the answer"), (typed, verdict)


@pytest.mark.parametrize("typed, count, point", [
    ("5,000", 1, "5.000"),  # five, or five thousand?
    ("5,000", None, "5.000"),
    ("10,200", 1, "10.200"),
    ("0,67 0,24 0,09", 3, "0.67"),
    ("0,67 0,24 0,09", None, "0.67"),
    ("0,5", 1, "0.5"),
    ("1,5; 2,5", None, "1.5"),
])
def test_a_comma_that_could_be_a_decimal_comma_is_refused_and_a_point_asked_for(typed, count, point):
    with pytest.raises(AnswerFormatError, match="could be a decimal comma") as err:
        parse_numbers(typed, count)
    assert f"type a decimal point ({point})" in str(err.value) and "\n" not in str(err.value)


def test_commas_that_cannot_be_decimal_commas_are_read_as_before():
    assert parse_numbers("1,050,624", 1).item() == 1050624  # two commas: digit groups
    assert parse_numbers("1,050,624").item() == 1050624
    assert parse_numbers("1,050.5", 1).item() == 1050.5  # a point and a comma: the comma groups
    assert parse_numbers("10,200", 2).tolist() == [10, 200]  # two expected: two numbers
    assert parse_numbers("1,2,3", 3).tolist() == [1, 2, 3]
    assert parse_numbers("0.67, 0.24, 0.09", 3).tolist() == [0.67, 0.24, 0.09]
    assert parse_numbers(["1,050,624", "-3"], 2).tolist() == [1050624, -3]


@pytest.mark.parametrize("minus", ["\u2212", "\u2013", "\u2012", "\u2010", "\u2011", "\ufe63", "\uff0d"])
def test_a_minus_sign_pasted_from_a_pdf_is_a_minus(minus):
    assert parse_numbers(f"1, 1, {minus}1, {minus}1", 4).tolist() == [1, 1, -1, -1]
    assert parse_numbers(f"[{minus}0.5 {minus}1.5e{minus}2]", 2).tolist() == [-0.5, -0.015]
    assert parse_numbers(f"4*512^2 {minus} 2048", 1).item() == 4 * 512**2 - 2048


def test_a_normalised_token_with_unicode_minus_signs_passes_in_every_route(release):
    data, written, manifest = release
    problem = written["layer-norm-by-hand"]
    kind, variant = kind_of(problem), _variant(problem, manifest)
    answer = {part.name: part_answer(part, variant.answers[part.name]).replace("-", "\u2212") for part in problem.parts}
    assert "\u2212" in answer["normalised"]  # a normalised token has entries below its mean
    assert _grader(kind, problem, variant, answer) == 1.0
    assert _selfcheck(data, problem.id, answer)
    assert _nbgrader(kind, problem, variant, answer) == pytest.approx(1.0)


# ------------------------------------------------------------ hand problems that test the method


def _numeric(bank) -> list[NumericProblem]:
    return [p for p in bank.problems.values() if p.kind == "numeric"]


def test_every_per_student_problem_has_at_least_50_different_answers(bank):
    for problem in _numeric(bank):
        assert problem.parameters, f"{problem.id}: the lecture's numbers are its only variant"
        answers = {repr([np.round(a, 9).tolist() for _, a in sorted(v.answers.items())])
                   for v in checked_variants(problem)}
        assert len(answers) >= MIN_VARIANTS, (problem.id, len(answers))


def test_validate_refuses_a_problem_with_few_answers(bank):
    problem = bank.get("mha-parameter-count").model_copy(
        update={"parameters": {"d": bank.get("mha-parameter-count").parameters["d"].model_copy(
            update={"choice": [64, 128, 256]}), "h": bank.get("mha-parameter-count").parameters["h"]}})
    found = numeric_findings(problem, lambda problem, variant: [])
    assert found == [f"parameters: only 3 different answers in 200 draws; per-student numbers need at least "
                     f"{MIN_VARIANTS} (students could share the few answers): widen the ranges or choices"]


def test_no_drawn_variant_is_the_lectures_own(bank):
    for problem in _numeric(bank):
        if problem.lecture_example is None:
            continue
        lecture = {k: np.asarray(v, dtype=float).tolist() for k, v in problem.lecture_example.params.items()}
        for variant in checked_variants(problem):
            drawn = {k: np.asarray(v, dtype=float).tolist() for k, v in variant.params.items()}
            assert drawn != lecture, problem.id
    # the course page prints the count for d = 512 (its Q4): no student is given it
    assert 512 not in bank.get("mha-parameter-count").parameters["d"].choice


def test_softmax_by_hand_asks_few_decimals_from_short_tables(bank):
    one = bank.get("one-query-by-hand")
    parts = {p.name: p for p in one.parts}
    assert parts["weights"].decimals <= 2
    third = bank.get("third-query-rounding")
    assert third.parameters
    assert all(t.decimals <= 4 for t in third.by_hand.tables)


def test_about_two_thirds_is_the_ffn_share(bank):
    problem = bank.get("ffn-parameter-count")
    kind = kind_of(problem)
    for seed in range(60):
        variant = draw_variant(problem, seed)
        fraction = "2/3" if variant.params["ratio"] == 4 else "1/2"
        decimal = "0.667" if variant.params["ratio"] == 4 else "0.5"
        for typed in (fraction, decimal):
            answer = {p.name: variant.answers[p.name].item() for p in problem.parts} | {"ffn_share": typed}
            assert kind.grade(problem, answer, variant).fraction == 1.0, (variant.params, typed)


def test_the_kv_cache_prompt_says_how_many_tokens_are_cached(bank):
    prompt = bank.get("kv-cache-memory").prompt
    assert re.search(r"all \$n\$ of them: not\s+\$n - 1\$", prompt)


def test_an_index_asked_is_a_position_part_with_its_base_stated(bank):
    part = next(p for p in bank.get("pe-entry").parts if p.name == "pair")
    assert part.form == "position" and part.base == 0


# ------------------------------------------------------------ one decimal rule per paper


def test_the_paper_states_one_rule_and_each_blank_its_decimals(bank):
    assert "fractions as decimals" not in INSTRUCTIONS
    assert "decimals its blank asks for" in INSTRUCTIONS
    for problem in _numeric(bank):
        kind = kind_of(problem)
        variant = draw_variant(problem, 0)
        for part, blank in zip(problem.parts, kind.blanks(problem, variant)):
            if part.decimals and part.form not in ("integer", "position"):
                assert f"{part.decimals} decimals" in blank.label, (problem.id, blank.label)


def test_every_decimals_a_prompt_names_is_a_parts(bank):
    words = {"one": 1, "two": 2, "three": 3, "four": 4}
    for problem in _numeric(bank):
        named = {int(words.get(n, n)) for n in re.findall(r"\b(\d|one|two|three|four)\s+decimals?\b", problem.prompt)}
        shown = {p.decimals for p in problem.parts if p.decimals}
        assert named <= shown, (problem.id, named, shown)


# ------------------------------------------------------------ worked out once per class


def test_a_dim_is_worked_out_once_for_its_symbols_and_a_bad_one_is_refused_each_time(monkeypatch):
    """Every answer judged works out the problem's dims again: kept by the dim's text and the symbols, so the second
    time parses nothing; a dim that cannot be read is never kept, and symbols that cannot be a key still work."""
    answers._evaluated.cache_clear()  # what other tests of this process kept
    parsed = []
    syntax_tree = answers._syntax_tree
    monkeypatch.setattr(answers, "_syntax_tree", lambda *args: parsed.append(args[0]) or syntax_tree(*args))
    symbols = {"d": 768, "h": 12, "d_k": "d/h", "n": 41}  # a problem's symbols, one of them a notation
    assert [evaluate_dim(dim, symbols) for dim in ("d/h", "d_k", "n*2", "d/h", "d_k", "n*2")] == ["64", "64", "82"] * 2
    assert parsed == ["768/12", "768/12", "41*2"]
    for _ in range(2):
        with pytest.raises(AnswerFormatError):
            evaluate_dim("d/(h-12)", symbols)
    assert parsed[3:] == ["768/(12-12)"] * 2
    assert evaluate_dim("d/h", {"d": 768, "h": 12, "extra": [1, 2]}) == "64"
    assert (evaluate_dim("d", {"d": 4}), evaluate_dim("d", {"d": 4.0})) == ("4", "d")  # equal values, other dims


def test_the_misconceptions_of_a_variant_are_worked_out_once_for_every_answer_judged(bank, monkeypatch):
    """A class sharing a variant types many wrong answers: each misconception's method runs once for it, and a
    variant with the same numbers (another object) is judged alike."""
    from autograder.kinds import numeric

    problem = next(p for p in _numeric(bank) if p.parameters and len(p.misconceptions) >= 2)
    variant = draw_variant(problem, 0, "s001")
    ran = []
    resolve = numeric.resolve
    monkeypatch.setattr(numeric, "resolve", lambda name: ran.append(name) or resolve(name))
    wrong = [{part.name: (np.asarray(variant.answers[part.name]) + shift).tolist() for part in problem.parts}
             for shift in (1000, -1000)]
    marked = [kind_of(problem).grade(problem, answer, variant) for answer in wrong * 3]
    assert sorted(ran) == sorted([m.compute for m in problem.misconceptions] * len(problem.parts))
    again = [kind_of(problem).grade(problem, answer, draw_variant(problem, 0, "s001")) for answer in wrong]
    assert [m.message for m in again] == [m.message for m in marked[:2]] and all(m.fraction == 0 for m in marked)
    # and what is kept names the mistake: each misconception's own numbers, typed twice, are named both times
    for mistake in problem.misconceptions:
        typed = {name: np.asarray(value).tolist() for name, value in resolve(mistake.compute)(**variant.params).items()
                 if name in {part.name for part in problem.parts}}
        named = [kind_of(problem).grade(problem, typed, variant).misconception for _ in range(2)]
        assert named == [mistake.message] * 2
