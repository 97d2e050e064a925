"""qkv_runtime/judge.py: each judging rule once, and nowhere else.

The tolerance rule is found by reading the code (its syntax tree, so docstrings and
comments that state the rule are not counted): an addition of an absolute term and a
relative term times something, or numpy's and math's isclose/allclose given a
tolerance, anywhere in autograder/ and qkv_runtime/ outside judge.py fails the test.
"""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from qkv_runtime import answers, judge
from qkv_runtime.compare import compare

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("autograder", "qkv_runtime")
HOME = ROOT / "qkv_runtime" / "judge.py"

_ABS = re.compile(r"(?:^|_)abs(?:_|$)|^atol$|^abs_?tol$", re.IGNORECASE)
_REL = re.compile(r"(?:^|_)rel(?:_|$)|^rtol$|^rel_?tol$", re.IGNORECASE)
_TOLERANCE_KEYWORDS = {"atol", "rtol", "abs_tol", "rel_tol"}


def _names(node: ast.AST) -> set[str]:
    """The names, attributes and string subscripts inside `node`, leaving out what is called (np.abs is a
    function, not an absolute tolerance)."""
    found: set[str] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Call):
            for child in [*n.args, *(k.value for k in n.keywords)]:
                visit(child)
            if isinstance(n.func, ast.Attribute):
                visit(n.func.value)
            return
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            found.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            found.add(n.value)
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return found


def _is_term(node: ast.AST, pattern: re.Pattern) -> bool:
    return any(pattern.search(name) for name in _names(node))


def _relative_term(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and _is_term(node, _REL)


def rule_written(source: str) -> list[int]:
    """The lines of `source` that write the tolerance rule themselves."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for one, other in ((node.left, node.right), (node.right, node.left)):
                if _relative_term(other) and not isinstance(one, ast.BinOp) and _is_term(one, _ABS):
                    lines.append(node.lineno)
                    break
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("isclose", "allclose") and (
                    {k.arg for k in node.keywords} & _TOLERANCE_KEYWORDS or len(node.args) > 2):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_the_tolerance_rule_is_written_only_in_judge():
    found = []
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == HOME:
                continue
            found += [f"{path.relative_to(ROOT)}:{line}" for line in rule_written(path.read_text(encoding="utf-8"))]
    assert found == [], "the tolerance rule is written outside qkv_runtime/judge.py: call judge.within, " \
                        "judge.close or judge.window instead: " + ", ".join(found)
    assert rule_written(HOME.read_text(encoding="utf-8")), "the scan no longer sees the rule where it is"


@pytest.mark.parametrize("code", [
    "ok = np.all(np.abs(got - want) <= tolerance.abs + tolerance.rel * np.abs(want))",
    "ok = (g == w) | ((err <= tol_abs + tol_rel * np.abs(w)) & np.isfinite(w))",
    "bad = abs(value - number) > follow.tolerance.abs + follow.tolerance.rel * abs(value)",
    "tol = part.tolerance.abs + part.tolerance.rel * np.abs(truth)[None, :, :]",
    "bound = (tol_abs + tol_rel * x) / max(1.0 - tol_rel, 1e-9)",
    "w = tol['abs'] + tol['rel'] * abs(t)",
    "w = rel * abs(t) + atol",
    "ok = np.allclose(got, want, atol=tol.abs, rtol=tol.rel)",
    "ok = numpy.isclose(got, want, 1e-5, 1e-8)",
    "ok = math.isclose(x, y, rel_tol=1e-9)",
])
def test_the_scan_finds_the_rule_in_each_form_it_was_written(code):
    assert rule_written(code) == [1]


@pytest.mark.parametrize("code", [
    '"""|got - want| <= abs + rel * |want|"""',
    "# err <= tol_abs + tol_rel * |want|",
    "np.allclose(a, a)",
    "total = x + y * np.abs(z)",
    "text = f'{tol_abs:g} + {tol_rel:g} x |answer|'",
    "ok = judge.within(got, want, tolerance.abs, tolerance.rel)",
    "window = [f'{tol_abs:g}'] * bool(tol_abs) + [f'{tol_rel:g} x |answer|'] * bool(tol_rel)",
])
def test_the_scan_leaves_words_and_other_arithmetic_alone(code):
    assert rule_written(code) == []


# ------------------------------------------------------------------ the tolerance


def test_within_is_inclusive_at_the_edge_and_exclusive_past_it():
    # powers of two: the edge is exact in binary
    assert judge.within(1.5, 1.0, 0.5, 0.0)
    assert not judge.within(np.nextafter(1.5, 2.0), 1.0, 0.5, 0.0)
    assert judge.within(0.5, 1.0, 0.5, 0.0)
    assert not judge.within(0.5 - 2.0**-53, 1.0, 0.5, 0.0)  # the first number below whose distance is exact


def test_zero_tolerance_takes_the_exact_value_only():
    assert judge.within(2_099_200.0, 2_099_200.0, 0.0, 0.0)
    assert not judge.within(np.nextafter(2_099_200.0, 3e6), 2_099_200.0, 0.0, 0.0)
    assert judge.within(-0.0, 0.0, 0.0, 0.0)
    assert float(judge.window(7.0, 0.0, 0.0)) == 0.0


def test_a_relative_tolerance_scales_with_the_expected_value_not_the_typed_one():
    assert float(judge.window(-1024.0, 0.0, 2.0**-10)) == 1.0
    assert judge.within(1025.0, 1024.0, 0.0, 2.0**-10)
    assert not judge.within(1025.5, 1024.0, 0.0, 2.0**-10)
    # the window is the expected value's: 1024 is not within rel of 2048, though 2048 is "near" by its own window
    assert not judge.within(1024.0, 2048.0, 0.0, 2.0**-10)
    # relative only, around zero: nothing but zero itself
    assert judge.within(0.0, 0.0, 0.0, 0.5)
    assert not judge.within(1e-300, 0.0, 0.0, 0.5)


def test_an_infinite_expected_value_is_met_only_by_itself():
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")  # inf - inf and 0 * inf are NaN: no warning may escape either
        assert judge.within(np.inf, np.inf, 0.0, 0.0)
        assert judge.within(-np.inf, -np.inf, 1e-6, 1e-6)
        assert not judge.within(np.inf, -np.inf, 1e-6, 1e-6)
        assert not judge.within(1e308, np.inf, 0.0, 1.0)  # its window, rel * inf, would take any number
        assert not judge.within(-1e308, -np.inf, 1.0, 1.0)
        assert not judge.within(np.inf, 1e308, 1.0, 1.0)
        assert not judge.within(np.inf, 0.0, 0.0, 0.0)
        got = np.array([[-np.inf, 0.5], [np.inf, 1.0]])
        assert judge.within(got, np.array([[-np.inf, 0.5], [np.inf, 1.0]]), 0.0, 0.0).tolist() == [[True, True],
                                                                                                    [True, True]]
        assert judge.within(got, np.array([[0.0, 0.5], [np.inf, 1.0]]), 1e6, 1e6).tolist() == [[False, True],
                                                                                                [True, True]]


def test_nan_meets_nothing_not_even_nan():
    with np.errstate(all="raise"):
        assert not judge.within(np.nan, np.nan, 1.0, 1.0)
        assert not judge.within(np.nan, 1.0, 1e9, 1e9)
        assert not judge.within(1.0, np.nan, 1e9, 1e9)
        assert not judge.close([1.0, np.nan], [1.0, np.nan], 1.0, 1.0)
    # compare, for function outputs, keeps its own exception: NaN where the reference has NaN is its answer
    assert compare([np.array([np.nan, 1.0])], [np.array([np.nan, 1.0])], 0.0, 0.0) is None
    assert compare([np.array([np.nan])], [np.array([1.0])], 1.0, 1.0).reason == "contains NaN"


def test_compare_judges_outputs_by_the_same_rule():
    want = np.array([1.0, np.inf, -np.inf, 1024.0])
    for got in (np.array([1.5, np.inf, -np.inf, 1025.0]), np.array([1.5, 1e308, -np.inf, 1025.0]),
                np.array([1.5, np.inf, -np.inf, 1025.5]), np.array([np.nextafter(1.5, 2), np.inf, -np.inf, 1024.0])):
        expected = bool(judge.close(got, want, 0.5, 2.0**-10))
        assert (compare([got], [want], 0.5, 2.0**-10) is None) == expected, got


def test_within_broadcasts_as_the_copying_check_uses_it():
    typed = np.array([[1.0, 2.0], [5.0, 6.0]])  # 2 students' answers
    truth = np.array([[1.0, 2.0], [5.0, 6.5], [9.0, 9.0]])  # 3 students' right answers
    match = np.all(judge.within(typed[:, None, :], truth[None, :, :], 0.25, 0.0), axis=-1)
    assert match.tolist() == [[True, False, False], [False, False, False]]


def test_close_needs_the_same_shape_and_takes_lists():
    assert judge.close([1.0, 2.0], np.array([1.0, 2.0]), 0.0, 0.0)
    assert not judge.close([1.0, 2.0], [[1.0, 2.0]], 1.0, 1.0)
    assert not judge.close([1.0], 1.0, 1.0, 1.0)
    assert judge.close(np.zeros((0,)), np.zeros((0,)), 0.0, 0.0)
    assert not judge.close([1.0, 3.0], [1.0, 2.0], 0.5, 0.0)


# ------------------------------------------------------------------ answers


class _EqualToAll:
    def __eq__(self, other):  # a student's object that claims to equal anything
        return True

    __hash__ = object.__hash__


@pytest.mark.parametrize("answer", [None, "", {}, {"a": None, "b": ""}, {"answer": None, "correction": ""}])
def test_not_answered(answer):
    assert judge.unanswered(answer)


@pytest.mark.parametrize("answer", [0, 0.0, False, [], " ", "0", {"a": 0}, {"a": None, "b": "x"}, [None],
                                    _EqualToAll(), {"a": _EqualToAll()}])
def test_answered(answer):
    assert not judge.unanswered(answer)


def test_a_part_of_an_answer():
    assert judge.part_of(0.25, "w", single=True) == 0.25
    assert judge.part_of({"w": 0.25}, "w", single=True) == 0.25
    assert judge.part_of({"v": 0.25}, "w", single=True) is None
    assert judge.part_of(0.25, "w", single=False) is None  # several parts: a bare value answers none of them
    assert judge.part_of({"w": [1, 2], "v": 3}, "v", single=False) == 3
    assert judge.part_of("true", "answer", single=True) == "true"  # a true/false verdict typed bare
    assert judge.part_of("true", "follow_up", single=False) is None


# ------------------------------------------------------------------ choices and positions


def test_choice_letters_are_read_and_written_by_one_alphabet():
    from autograder.kinds.choices import letters_hint, read_choice
    from autograder.kinds.multiple_choice import MultipleChoiceProblem
    from autograder.kinds.true_false import FollowUp

    def most(model) -> int:
        return next(m.max_length for m in model.model_fields["choices"].metadata if hasattr(m, "max_length"))

    assert most(MultipleChoiceProblem) == most(FollowUp) == len(judge.LETTERS)  # every choice has a letter
    order = ["f", "b", "h", "a", "c", "e", "d", "g"]
    for place, choice in enumerate(order):
        letter = judge.letter_of(order, choice)
        assert letter == "ABCDEFGH"[place]
        assert judge.choice_at(order, letter) == choice
        assert read_choice(f"({letter.lower()}).", order) == choice
    assert judge.letters(3) == "ABC" and letters_hint(3) == "A/B/C"
    assert answers.parse_choice(" h ", 8) == "H"
    with pytest.raises(answers.AnswerFormatError, match="A, B, C$"):
        answers.parse_choice("D", 3)
    with pytest.raises(answers.AnswerFormatError):
        answers.parse_choice("I", 8)


def test_source_positions():
    frames = [("/usr/lib/python3/runpy.py", 80), ("submission.py", 3), (judge.cell_file(2), 4), ("numpy/core.py", 9)]
    assert judge.position(frames, "submission.py") == "cell 2, line 4"
    assert judge.position(frames[:2], "submission.py") == "line 3"
    assert judge.position(frames[:2], "other.py") is None
    assert judge.position([("cell x", 1), ("cell ", 2), ("cell 12a", 3)], "submission.py") is None
    assert judge.position([], "submission.py") is None


def test_a_traceback_names_the_cell_and_line_in_every_route():
    from autograder.selfcheck import qkv_check
    from qkv_runtime.notebook import run_steps, Step
    from qkv_runtime.values import raised_at

    errors = run_steps([Step(7, "python", "x = 1\n\nraise ValueError('no')")], {})
    assert errors == ["cell 7: ValueError: no (line 3)"]  # the cell is named once, in front
    for name, where in (("submission.py", "line 2"), (judge.cell_file(4), "cell 4, line 2"), ("numpy.py", None)):
        try:
            exec(compile("def f():\n    return 1 / 0\nf()", name, "exec"), {})
        except ZeroDivisionError as exc:
            assert raised_at(exc) == where
    assert qkv_check._where([(judge.cell_file(7), 3)], "mine.py") == ", at cell 7, line 3"
    assert qkv_check._where([("elsewhere.py", 3)], "mine.py") == ""


def test_outputs_equal_to_the_byte_are_judged_as_every_other_output():
    nan = np.array([[0.5, np.nan], [np.inf, -np.inf]])
    assert compare((nan,), (nan.copy(),), 1e-6, 1e-6) is None  # a NaN where the reference has one: its answer
    assert compare((np.zeros(2, dtype=np.int64),), (np.zeros(2),), 0, 0) is None  # the same bytes, other dtypes
    assert compare((np.array([-0.0]),), (np.array([0.0]),), 0, 0) is None  # other bytes, the same number
    words = np.array(["a", "b"])
    assert compare((words,), (words.copy(),), 0, 0).reason == "returned an array of <U1, expected numbers"
    assert compare((np.eye(2),), (np.eye(2).reshape(1, 4),), 0, 0).reason == "shape (2, 2), expected (1, 4)"
    assert compare((np.eye(2)[:, ::-1],), (np.fliplr(np.eye(2)).copy(),), 0, 0) is None  # a view, read in order
    assert compare((np.eye(2)[:, ::-1],), (np.eye(2),), 0, 0).reason == "4 of 4 entries differ, largest error 1"
