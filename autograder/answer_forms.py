"""Answer forms: what a student types (a number, a list, a shape, true/false, a letter) in, canonical values out.

Standalone (stdlib + numpy only) because it is copied verbatim into every
student release as `qkv_answers.py`: the offline self-check and the grader must
read answers, and canonicalise them for hashing, in exactly the same way.
A malformed answer raises `AnswerFormatError` whose message says what format is expected.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
import threading
from fractions import Fraction
from typing import Any

import numpy as np

# CPython 3.11 keeps the ast module's recursion counter per interpreter: threads that parse at
# once (a Dask worker scoring several submissions) can corrupt it, so parsing takes turns.
_AST_LOCK = threading.Lock()

class AnswerFormatError(ValueError):
    """The answer could not be read; the message says what format is expected."""



_NUMBER_HINT = "a number such as 0.0634 or 6.34e-2, or a list such as [0.0634, 0.4683, 0.4683]"


def _number(token: str) -> float:
    token = token.strip()
    if re.fullmatch(r"[-+]?\d+\s*/\s*\d+", token):
        return float(Fraction(token.replace(" ", "")))
    return float(token)


def parse_numbers(value: Any) -> np.ndarray:
    """A scalar, vector or matrix typed as a number, a string or nested lists."""
    if isinstance(value, bool):
        raise AnswerFormatError(f"expected {_NUMBER_HINT}, got a true/false value")
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise AnswerFormatError(f"the answer is empty: expected {_NUMBER_HINT}")
        if ";" in text:  # "1 2; 3 4" is a matrix, row by row
            rows = [parse_numbers(r.strip("[]() ")).reshape(-1) for r in text.split(";") if r.strip("[]() ")]
            if len({row.size for row in rows}) > 1:
                raise AnswerFormatError("the rows of the matrix have different lengths")
            return np.array(rows, dtype=float)
        if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d+)?", text):  # 1,050,624 is one number, not three
            text = text.replace(",", "")
        if text[0] in "[(":
            try:
                with _AST_LOCK:
                    value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = [t for t in re.split(r"[\s,]+", text.strip("[]() ")) if t]
        else:
            tokens = [t for t in re.split(r"[\s,]+", text) if t]
            if not tokens:
                raise AnswerFormatError(f"no number in {text[:40]!r}: expected {_NUMBER_HINT}")
            value = tokens if len(tokens) > 1 else tokens[0]
    try:
        if isinstance(value, str):
            return np.asarray(_number(value), dtype=float)
        if isinstance(value, (list, tuple)):
            items = [parse_numbers(v) for v in value]
            if len({item.shape for item in items}) > 1:
                raise AnswerFormatError("the rows of the matrix have different lengths")
            return np.asarray(items, dtype=float)
        array = np.asarray(value, dtype=float)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        raise AnswerFormatError(f"could not read {str(value)[:40]!r} as {_NUMBER_HINT}") from None
    return array


_SHAPE_HINT = "a shape such as (3, 4), 3x4 or n x d_v"


def _canonical_dim(dim: str) -> str:
    dim = dim.strip().lower().replace(" ", "").replace("_", "").replace("·", "*")
    return dim.replace("{", "").replace("}", "").replace("\\", "")


def parse_shape(value: Any) -> tuple[str, ...]:
    """A shape as a tuple of canonical dims: '(n, d_v)' and 'n x dv' both give ('n', 'dv')."""
    if isinstance(value, (list, tuple)):
        dims = [str(v) for v in value]
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        dims = [str(value)]
    elif isinstance(value, str) and value.strip():
        text = value.strip().strip("()[]")
        text = text.replace("×", " x ").replace("\\times", " x ")
        dims = re.split(r"\s*,\s*|\s+x\s+|(?<=[\w)])x(?=[\d(])", text) if text else []
    else:
        raise AnswerFormatError(f"expected {_SHAPE_HINT}")
    dims = [_canonical_dim(d) for d in dims if d.strip()]
    if not dims or any(not re.fullmatch(r"[a-z0-9/()+*-]+", d) for d in dims):
        raise AnswerFormatError(f"could not read {str(value)[:40]!r} as {_SHAPE_HINT}")
    return tuple(dims)


def _arithmetic(node: ast.AST) -> Fraction:
    """+, -, * and / on integers, nothing else: a typed shape can never run code or take long."""
    if isinstance(node, ast.Expression):
        return _arithmetic(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        if node.value > 10**12:
            raise AnswerFormatError("a dimension that large is not a shape")
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _arithmetic(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if isinstance(node.op, ast.Div):
            if right == 0:
                raise AnswerFormatError("a dimension divides by zero")
            return left / right
        result = {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}[type(node.op)]
        if abs(result) > 10**12:
            raise AnswerFormatError("a dimension that large is not a shape")
        return result
    raise AnswerFormatError(f"expected {_SHAPE_HINT}")


def evaluate_dim(dim: str, symbols: dict[str, int]) -> str:
    """A dim such as 'd/h' with numbers for its symbols, as a canonical string ('4')."""
    dim = _canonical_dim(dim)
    if not symbols:
        return dim
    names = {_canonical_dim(k): v for k, v in symbols.items()}
    expr = re.sub(r"[a-z][a-z0-9]*", lambda m: str(names.get(m.group(0), m.group(0))), dim)
    if len(expr) <= 60 and re.fullmatch(r"[\d/()+*-]+", expr):
        try:
            with _AST_LOCK:
                tree = ast.parse(expr, mode="eval")
        except SyntaxError:
            raise AnswerFormatError(f"could not read the dimension {dim!r}: expected {_SHAPE_HINT}") from None
        return str(_arithmetic(tree))
    return dim


_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


def parse_bool(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise AnswerFormatError("expected True or False (also accepted: true/false, T/F, yes/no)")


def parse_choice(value: Any, n_choices: int) -> str:
    letters = "ABCDEFGH"[:n_choices]
    if isinstance(value, str):
        letter = value.strip().strip("().").upper()
        if len(letter) == 1 and letter in letters:
            return letter
    raise AnswerFormatError(f"expected one letter from {', '.join(letters)}")




# ----------------------------------------------------- canonical forms and digests
# Self-check stores only salted digests of canonical answers, never the answers.
#
# Numbers: each entry of the right answer t is snapped to a grid, k = round(t / step),
# and the digest is taken of the integers k. The self-check enumerates every grid
# point within the tolerance window of the typed x (plus half a step), hashes each
# candidate and looks for the stored digest. So every answer the grader accepts,
# |x - t| <= abs + rel*|t|, is accepted here too, and an answer is accepted here
# only if |x - t| <= window + step, with step <= window / fineness.
# The fineness is as high as keeps the number of candidates of one part within
# GRID_BUDGET; parts with many entries are hashed entry by entry ("each" mode).

GRID_BUDGET = 50_000  # most digests the self-check computes for one answer part
GRID_FINENESS = (8, 4, 2, 1)


def canonical_numbers(values: np.ndarray, digits: int) -> str:
    flat = np.round(np.asarray(values, dtype=float).reshape(-1), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{np.shape(values)}:" + ",".join(f"{x:.{digits}f}" for x in flat)


def exact_step(decimals: int | None) -> float:
    """The grid of an exact answer: its stated decimals, whole numbers by default."""
    return 10.0 ** -(decimals or 0)


def _window(x: float, tol_abs: float, tol_rel: float) -> float:
    return tol_abs + tol_rel * abs(x)


def _power_of_two_below(x: float) -> float:
    return 2.0 ** math.floor(math.log2(max(x, 1e-12)))


EXACT_REACH = 30  # an answer on its decimals' grid is hashed exactly while its window spans at most 30 grid steps


def grid_plan(values: Any, tol_abs: float, tol_rel: float,
              decimals: int | None = None) -> tuple[str, list[float], bool]:
    """How the right answer `values` of a part is hashed: ("whole" or "each", one grid step per entry, exact).

    Exact: every entry sits on the grid of its stated decimals (integer scores, counts, 0.25):
    the self-check then tries exactly the grid points within the tolerance of the typed number,
    which is the grader's rule. Otherwise the steps are powers of two, from the absolute
    tolerance alone where it dominates (so they say nothing of the answer), else from the
    whole window.
    """
    flat = np.asarray(values, dtype=float).reshape(-1)
    step = exact_step(decimals)
    windows = [_window(x, tol_abs, tol_rel) for x in flat]
    if all(abs(x / step - round(x / step)) <= 1e-9 and w / step <= EXACT_REACH for x, w in zip(flat, windows)):
        counts = [2 * w / step + 1 for w in windows]
        return ("whole" if math.prod(counts) <= GRID_BUDGET else "each"), [step] * flat.size, True
    for mode, fineness in [("whole", m) for m in GRID_FINENESS] + [("each", GRID_FINENESS[0])]:
        steps = [_power_of_two_below((tol_abs if tol_rel * abs(x) <= tol_abs else w) / fineness)
                 for x, w in zip(flat, windows)]
        counts = [2 * (w / s + 1) + 1 for w, s in zip(windows, steps)]
        if mode == "each" or math.prod(counts) <= GRID_BUDGET:
            return mode, steps, False
    raise AssertionError("unreachable")


def grid_index(value: float, step: float) -> int:
    return int(round(float(value) / step))


def grid_candidates(value: float, step: float, tol_abs: float, tol_rel: float, exact: bool = False,
                    limit: int = 160) -> list[int]:
    """Grid points the right answer may sit on if the typed `value` is within tolerance of it."""
    value = float(value)
    if not math.isfinite(value) or abs(value) / step > 1e15:  # no answer is that far off the grid's scale
        return []
    # |t| <= |x| + w(t) bounds the window w(t) = abs + rel*|t| from the typed value alone.
    window = (tol_abs + tol_rel * abs(value)) / max(1.0 - tol_rel, 1e-9) + 1e-12 * max(1.0, abs(value))
    # exact: the right answer is a grid point, so only grid points within the window can be it
    reach = window if exact else window + step / 2
    low, high = math.ceil((value - reach) / step), math.floor((value + reach) / step)
    if high - low + 1 > limit:  # far wider than any right answer's window: cannot be within tolerance
        return []
    return list(range(low, high + 1))


def grid_form(indices: Any, shape: Any) -> str:
    """The canonical form of grid points: the shape and the integers."""
    return f"grid{tuple(int(n) for n in shape)}:" + ",".join(str(int(k)) for k in indices)


def answer_digest(salt: str, canonical: str) -> str:
    return hashlib.sha256(f"qkv1|{salt}|{canonical}".encode()).hexdigest()


def digest_salt(assignment: str, student: str, problem: str, part: str) -> str:
    return f"{assignment}|{student}|{problem}|{part}"


OUTPUT_DIGITS = 6  # a function output matches a misconception's when equal to 6 decimals


def outputs_digest(outputs, digits: int = OUTPUT_DIGITS) -> str:
    """A digest of a function's outputs, to recognise a misconception's output without shipping it."""
    canonical = "|".join(canonical_numbers(np.asarray(o, dtype=float), digits) for o in outputs)
    return hashlib.sha256(f"qkv1|outputs|{canonical}".encode()).hexdigest()
