"""Answer forms: what a student types (a number, a list, a shape, true/false, a letter) in, canonical values out.

The grader, the self-check and the nbgrader cells read answers with these
functions, so one answer means one thing everywhere. Every reader is bounded
(length, count, nesting) and never evaluates the text: a malformed or hostile
answer raises `AnswerFormatError`, whose message says what format is expected.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import math
import re
import threading
from fractions import Fraction
from typing import Any, Optional

import numpy as np

from .judge import letters

# CPython 3.11 keeps the ast module's recursion counter per interpreter: threads that parse at
# once (a Dask worker scoring several submissions) can corrupt it, so parsing takes turns.
_AST_LOCK = threading.Lock()

class AnswerFormatError(ValueError):
    """The answer could not be read; the message says what format is expected."""



_NUMBER_HINT = "a number such as 0.0634 or 6.34e-2, or a list such as [0.0634, 0.4683, 0.4683]"
MAX_NUMBERS_TEXT = 10_000  # characters of one typed answer
MAX_NUMBERS = 10_000  # numbers in one answer
MAX_NESTING = 4  # brackets inside brackets: a matrix needs 2
_TOKEN = re.compile(
    r"\s*(?:(?P<open>[\[(])|(?P<close>[\])])|(?P<comma>,)"
    r"|(?P<number>(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?:\s*/\s*\d+)?|[-+]?(?:infinity|inf|nan))"
    r"(?=[\s,\[\]()]|$)))",
    re.IGNORECASE)


def _number(token: str) -> float:
    token = token.strip()
    if "/" in token:
        return float(Fraction(token.replace(" ", "")))
    return float(token)


def _nested_numbers(text: str) -> Any:
    """Numbers in brackets, read without recursion or eval: "[[1, 2], [3, 4]]", "(1 2 3)", "1/2"."""
    stack: list = [[]]
    position, count = 0, 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            rest = text[position:].strip()
            if not rest:
                break
            raise AnswerFormatError(f"could not read {rest[:40]!r} as {_NUMBER_HINT}")
        position = match.end()
        if match.group("open"):
            if len(stack) > MAX_NESTING:
                raise AnswerFormatError(f"brackets nest deeper than {MAX_NESTING}: expected {_NUMBER_HINT}")
            stack.append([])
        elif match.group("close"):
            if len(stack) == 1:
                raise AnswerFormatError("a closing bracket has no opening one")
            inner = stack.pop()
            stack[-1].append(inner)
        elif match.group("number"):
            count += 1
            if count > MAX_NUMBERS:
                raise AnswerFormatError(f"more than {MAX_NUMBERS:,} numbers in one answer")
            try:
                stack[-1].append(_number(match.group("number")))
            except (ValueError, ZeroDivisionError, OverflowError):
                raise AnswerFormatError(f"could not read {match.group('number')[:40]!r} as {_NUMBER_HINT}") from None
    if len(stack) != 1:
        raise AnswerFormatError("an opening bracket is never closed")
    top = stack[0]
    if not top:
        raise AnswerFormatError(f"no number in {text[:40]!r}: expected {_NUMBER_HINT}")
    return top[0] if len(top) == 1 else top


def _rectangular(value: Any, depth: int = 0) -> np.ndarray:
    if depth > MAX_NESTING:
        raise AnswerFormatError(f"lists nest deeper than {MAX_NESTING}: expected {_NUMBER_HINT}")
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_NUMBERS:
            raise AnswerFormatError(f"more than {MAX_NUMBERS:,} numbers in one answer")
        items = [_rectangular(v, depth + 1) for v in value]
        if len({item.shape for item in items}) > 1:
            raise AnswerFormatError(f"the rows of the matrix have different lengths: expected {_NUMBER_HINT}")
        return np.asarray(items, dtype=float) if items else np.zeros(0)
    if isinstance(value, bool):
        raise AnswerFormatError(f"expected {_NUMBER_HINT}, got a true/false value")
    if isinstance(value, str):
        return _list_entry(value)
    try:
        return np.asarray(float(value))
    except (ValueError, TypeError, OverflowError):
        raise AnswerFormatError(f"could not read {str(value)[:40]!r} as {_NUMBER_HINT}") from None


# digit groups of one whole number: 1,050,624  1 050 624  1_050_624  1'050'624 (and thin spaces)
_GROUPED = re.compile(r"[-+]?\d{1,3}(?:(?P<sep>[,_' \u2009\u202f])\d{3})(?:(?P=sep)\d{3})*(?:\.\d+)?")


# minus signs as a PDF, a word processor or a web page sets them (U+2212 minus, the dashes and hyphens, the small
# and full-width hyphen-minus): a pasted "−1" is the -1 it shows
_MINUS_FORMS = str.maketrans({char: "-" for char in "\u2212\u2010\u2011\u2012\u2013\u2014\u2015\ufe58\ufe63\uff0d"})


def plain_minus(text: str) -> str:
    """The text with every minus or dash form typed as ASCII's hyphen-minus."""
    return text.translate(_MINUS_FORMS)


# a comma between two digits: a digit group's in 1,050,624, a list's in 1,2,3, or a decimal comma in 0,67
_COMMA_IN_DIGITS = re.compile(r"(?<=\d),(?=\d)")


def _refuse_decimal_comma(text: str, count: Optional[int]) -> None:
    """Refuses a text where a comma between digits could be a decimal comma, which is never guessed: where the text
    read with points for those commas is numbers too (and as many as expected, when that is known). "5,000" could
    be five or five thousand; "0,67 0,24" two numbers, not four. "1,050,624" and "1,2,3" cannot be read with points,
    and "10,200" where two numbers are expected can only be two: those stay as they are read."""
    if not _COMMA_IN_DIGITS.search(text):
        return
    try:
        with_points = _rectangular(_nested_numbers(_COMMA_IN_DIGITS.sub(".", text))).size
    except AnswerFormatError:
        return
    if count is not None and with_points != count:
        return
    first = re.search(r"\d+,\d+", text)
    if first is None:  # _COMMA_IN_DIGITS found one: this is the same digits, comma, digits
        return
    number = first.group(0)
    grouped = re.fullmatch(r"\d{1,3},\d{3}", number)
    whole = f" or, for a whole number, no comma ({number.replace(',', '')})" if grouped else ""
    raise AnswerFormatError(
        f"the comma in {quoted(number)} could be a decimal comma, which is not guessed: type a decimal point "
        f"({number.replace(',', '.')}){whole}, and a space or a comma and a space between numbers")


def parse_numbers(value: Any, count: Optional[int] = None, symbols: Optional[dict] = None, *,
                  arithmetic: bool = True) -> np.ndarray:
    """A scalar, vector or matrix typed as a number, a string or nested lists.

    `count`, when known, is how many numbers the answer has: digit groups ("1,050,624", "1 050 624")
    are then read as one number only where one number is expected, and "10,200" is two where two are.
    Without it, commas between groups of three digits make one number and spaces separate numbers.
    A comma between digits that could be a decimal comma is refused, never guessed (`_refuse_decimal_comma`), and
    a pasted minus sign (U+2212, a dash) is a minus. Where one number is expected it may be typed as arithmetic
    (`parse_expression`) of integers and
    the problem's whole-number `symbols` ({"d": 512}): `n*m` too, and "1048576 -2048" is then the
    difference, not two numbers. Never inside a list, whose entries are numbers (`arithmetic` False).
    """
    if isinstance(value, bool):
        raise AnswerFormatError(f"expected {_NUMBER_HINT}, got a true/false value")
    if not isinstance(value, str):
        return _rectangular(value)
    text = plain_minus(value.strip())
    if not text:
        raise AnswerFormatError(f"the answer is empty: expected {_NUMBER_HINT}")
    if len(text) > MAX_NUMBERS_TEXT:
        raise AnswerFormatError(f"the answer is longer than {MAX_NUMBERS_TEXT:,} characters")
    _refuse_decimal_comma(text, count)
    if ";" in text:  # "1 2; 3 4" is a matrix, row by row
        rows = [parse_numbers(r.strip("[]() ")).reshape(-1) for r in text.split(";") if r.strip("[]() ")]
        if len({row.size for row in rows}) > 1:
            raise AnswerFormatError("the rows of the matrix have different lengths")
        return np.array(rows, dtype=float)
    grouped = _GROUPED.fullmatch(text)
    if grouped and (count == 1 or (count is None and grouped.group("sep") not in (" ",))):
        text = re.sub(r"[,_' \u2009\u202f]", "", text)
    arithmetic = arithmetic and count in (None, 1) and _arithmetic_text(text, symbols)
    if arithmetic and count == 1 and _INNER_SIGN.search(text):
        # one number expected: "1048576 -2048" is a difference, not two numbers
        with contextlib.suppress(AnswerFormatError):
            return np.asarray(parse_expression(text, symbols))
    try:
        return _rectangular(_nested_numbers(text))
    except AnswerFormatError:
        if not arithmetic or len(text) > MAX_EXPRESSION_TEXT:  # a long malformed list is not arithmetic
            raise
    return np.asarray(parse_expression(text, symbols))


def _list_entry(text: str) -> np.ndarray:
    # arithmetic is read where one number is expected, never inside a list: ["4*2", "3"] is refused, not [8, 3]
    try:
        return parse_numbers(text, arithmetic=False)
    except AnswerFormatError:
        if _arithmetic_text(text.strip(), None, names=True):
            raise AnswerFormatError(f"{quoted(text, 40)} in a list is arithmetic: type each entry of a list as a "
                                    "number (arithmetic is read only where one number is expected)") from None
        raise


_SHAPE_HINT = "a shape such as (3, 4), 3x4 or n x d_v"
MAX_SHAPE_TEXT = 200
_OPENS, _CLOSES = "([{", ")]}"


def quoted(value: Any, limit: int = 60) -> str:
    """What the student typed, shown as typed (in quotes, cut at `limit` characters), for messages."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return '"' + (text if len(text) <= limit else text[:limit - 3] + "...") + '"'


def wrong_count(expected: int, got: int, typed: Any) -> str:
    """The message for an answer with too few or too many numbers, quoting what was typed."""
    return f"expected {expected} number(s), got {got} in {quoted(typed)}"


def not_close(tol_abs: float, tol_rel: float) -> str:
    """The verdict on numbers outside the window abs + rel*|answer|, in the grader's and the self-check's words.
    A zero term is left out ("within 0 of the answer" reads as nonsense), and with no window at all an exact
    part says that it must be exact."""
    window = [f"{tol_abs:g}"] * bool(tol_abs) + [f"{tol_rel:g} x |answer|"] * bool(tol_rel)
    if not window:
        return "not the answer (it must be exact)"
    return f"not within {' + '.join(window)} of the answer"


def not_the_shape(typed: Any) -> str:
    """The verdict on a shape that was read but is wrong: what was typed, never the answer."""
    return f"{quoted(typed)} is not the shape"


def not_the_choice(typed: Any) -> str:
    """The verdict on a letter that was read but names a wrong choice with no mistake of its own."""
    return f"{quoted(typed)} is not the answer"


def _unreadable_shape(value: Any) -> AnswerFormatError:
    # one sentence for every way a shape cannot be read, so that it never looks like a wrong shape
    got = quoted(value) if not isinstance(value, str) or value.strip() else "an empty answer"
    return AnswerFormatError(f"could not read the answer: expected {_SHAPE_HINT}, got {got}")


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        if char in _OPENS:
            depth += 1
        elif char in _CLOSES:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _unwrap(text: str) -> str:
    """Outer brackets that enclose all of the text, removed: "((n, d))" -> "n, d", "(n) x (d)" kept."""
    text = text.strip()
    while len(text) >= 2 and text[0] in _OPENS and text[-1] in _CLOSES and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _top_level(text: str) -> str:
    """The text with what is inside brackets blanked out (same length, the brackets kept), to find the
    separators outside them."""
    out, depth = [], 0
    for char in text:
        if char in _CLOSES:
            depth -= 1
        out.append(char if depth == 0 else "_")
        if char in _OPENS:
            depth += 1
    return "".join(out)


def _split_at(text: str, spans: list) -> list:
    pieces, start = [], 0
    for begin, end in spans:
        pieces.append(text[start:begin])
        start = end
    return pieces + [text[start:]]


# "n by d_v" is said of a matrix's shape everywhere, and is read as n x d_v; other words between dims ("n times d",
# "n and d") are no spelling of a shape, and are refused as one (never read as a third dim)
_BY = re.compile(r"(?<=\S)\s+by\s+(?=\S)", re.IGNORECASE)
_NOT_DIMS = frozenset({"times", "and", "of", "rows", "columns", "cols", "shape", "is", "matrix"})


def _shape_dims(text: str) -> list:
    """Split a typed shape into its dims at the separators outside brackets: ',' first, then 'x' (or ×, \\times,
    by), then spaces: "(n, (d/h))", "n x (d/h)", "[n d_v]" and "3x4" all split as written."""
    text = _BY.sub(" x ", text)
    text = _unwrap(text.replace("×", " x ").replace("\\times", " x "))
    top = _top_level(text)
    commas = [m.span() for m in re.finditer(",", top)]
    if commas:
        return _split_at(text, commas)
    crosses = [m.span() for m in re.finditer(r"(?<=\S)\s+x\s+(?=\S)|(?<=[\d)\]])x(?=[\d(\[])", top)]
    if crosses:
        return _split_at(text, crosses)
    # spaces separate dims, but not those around an operator: "d / h" is one dim
    squeezed = re.sub(r"\s*([/*+-])\s*", r"\1", text)
    return _split_at(squeezed, [m.span() for m in re.finditer(r"\s+", _top_level(squeezed))])


def canonical_dim(dim: str) -> str:
    dim = _unwrap(dim).lower().replace(" ", "").replace("_", "").replace("·", "*")
    dim = _unwrap(dim.replace("{", "").replace("}", "").replace("\\", ""))
    # a number written before a name multiplies it, as on paper: 4d is 4*d (not after '/': d/2h stays unread)
    return re.sub(r"(?<![a-z0-9/.])(\d+)(?=[a-z(])", r"\1*", dim)


def parse_shape(value: Any) -> tuple[str, ...]:
    """A shape as a tuple of canonical dims: '(n, d_v)', 'n x dv', '[n d_v]' and 'n x (d_v)' all give ('n', 'dv')."""
    if isinstance(value, (list, tuple)):
        dims = [str(v) for v in value]
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        dims = [str(value)]
    elif isinstance(value, str) and value.strip() and len(value) <= MAX_SHAPE_TEXT and _balanced(value):
        dims = _shape_dims(value.strip())
    else:
        raise _unreadable_shape(value)
    dims = [canonical_dim(plain_minus(d)) for d in dims if d.strip()]
    if not dims or any(not re.fullmatch(r"[a-z0-9/()+*-]+", d) or not _balanced(d) or d in _NOT_DIMS for d in dims):
        raise _unreadable_shape(value)
    return tuple(dims)


# An expression a student types for a count or a dimension: integers, the prompt's symbols, + - * / and
# powers (^ or **) in parentheses; read from Python's syntax tree against this whitelist, never evaluated
# as Python, and bounded so that no answer can take long or grow large (9^9^9 is refused, not computed).
MAX_EXPRESSION_TEXT = 200
MAX_EXPRESSION_NODES = 100
MAX_EXPONENT = 64
MAX_MAGNITUDE = 10**18
_EXPRESSION_HINT = "a whole number such as 1050624, or arithmetic such as 4*512^2 + 4*512"
_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}


def _bounded(value: Fraction, what: str) -> Fraction:
    if abs(value.numerator) > MAX_MAGNITUDE or value.denominator > MAX_MAGNITUDE:
        raise AnswerFormatError(f"{what} is too large to be the answer")
    return value


def _power(base: Fraction, exponent: Fraction, what: str) -> Fraction:
    if exponent.denominator != 1 or not 0 <= exponent <= MAX_EXPONENT:
        raise AnswerFormatError(f"{what} has a power that is not a whole number from 0 to {MAX_EXPONENT}")
    # the size of the result known before computing it: a large power is refused, never built
    largest = max(abs(base.numerator), base.denominator)
    if largest > 1 and int(exponent) * math.log2(largest) > math.log2(MAX_MAGNITUDE) + 1:
        raise AnswerFormatError(f"{what} is too large to be the answer")
    return _bounded(base ** int(exponent), what)


def _arithmetic(node: ast.AST, names: dict, powers: bool, what: str, hint: str) -> Fraction:
    """The value of a whitelisted syntax tree: integers, `names`, + - * /, and ** where `powers`; `what` and
    `hint` word the refusal ("the expression '...'", what is expected)."""
    if isinstance(node, ast.Expression):
        return _arithmetic(node.body, names, powers, what, hint)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return _bounded(Fraction(node.value), what)
    if isinstance(node, ast.Name) and node.id in names:
        return Fraction(names[node.id])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _arithmetic(node.operand, names, powers, what, hint)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and (type(node.op) in _OPERATORS or isinstance(node.op, ast.Div)
                                        or (powers and isinstance(node.op, ast.Pow))):
        left, right = (_arithmetic(side, names, powers, what, hint) for side in (node.left, node.right))
        if isinstance(node.op, ast.Pow):
            return _power(left, right, what)
        if isinstance(node.op, ast.Div):
            if right == 0:
                raise AnswerFormatError(f"{what} divides by zero")
            return _bounded(left / right, what)
        return _bounded(_OPERATORS[type(node.op)](left, right), what)
    if isinstance(node, ast.Name):
        raise AnswerFormatError(f"{what} uses {node.id!r}, which is not a symbol of the problem: expected {hint}")
    raise AnswerFormatError(f"could not read {what}: expected {hint}")


def _syntax_tree(text: str, what: str, hint: str) -> ast.AST:
    try:
        with _AST_LOCK:
            tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise AnswerFormatError(f"could not read {what}: expected {hint}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_EXPRESSION_NODES:
        raise AnswerFormatError(f"{what} has more than {MAX_EXPRESSION_NODES} terms")
    return tree


def symbol_values(params: Optional[dict]) -> dict[str, int]:
    """The whole-number parameters of a problem: the symbols an expression may use (lists and text are not)."""
    return {str(name): int(value) for name, value in (params or {}).items()
            if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))}


# what is read as arithmetic once the number reader has refused it: these characters only, with a digit and
# an operator the number reader has no use for (a text of words, or of "/" alone, keeps the number reader's
# message: "fifty-six" and "1/0" are malformed numbers, not arithmetic)
_EXPRESSION = re.compile(r"[\d\sA-Za-z_{}\\()+\-*/^×·]+")
_OPERATOR = re.compile(r"(?<=.)[-+*^×·()]|^\(")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_{}\\]*")
_INNER_SIGN = re.compile(r"[\d)]\s*[-+]\s*[\d(]")  # a sign after a number: 6.34e-2's is inside it


def _arithmetic_text(text: str, symbols: Optional[dict], names: bool = False) -> bool:
    """Whether the number reader's refusal of `text` is arithmetic's to read: these characters, an operator,
    and a digit or only names that are symbols of the problem (`n*m`; any names where `names`)."""
    if not _EXPRESSION.fullmatch(text) or not _OPERATOR.search(text):
        return False
    if re.search(r"\d", text):
        return True
    found = {canonical_dim(n) for n in _NAME.findall(text)}
    known = {canonical_dim(name) for name in symbol_values(symbols)}
    return bool(found) and (names or found <= known)


def parse_expression(text: str, symbols: Optional[dict] = None) -> float:
    """One number typed as arithmetic (`4*512^2`, `2^26`, `3*d^2+3*d` with d a symbol of the problem)."""
    text = plain_minus(text)
    what = "the expression " + quoted(text, 40)
    if len(text) > MAX_EXPRESSION_TEXT:
        raise AnswerFormatError(f"the expression is longer than {MAX_EXPRESSION_TEXT} characters")
    # names are read as dims are (d_model, dmodel and d_{model} are one name); ^ is a power, as on paper
    source = re.sub(r"[A-Za-z][A-Za-z0-9_{}\\]*", lambda m: canonical_dim(m.group(0)), text)
    source = source.replace("^", "**").replace("×", "*").replace("·", "*")
    given = symbol_values(symbols)
    hint = _EXPRESSION_HINT + (f" (the symbols: {', '.join(sorted(given))})" if given else "")
    names = {canonical_dim(name): value for name, value in given.items()}
    return float(_arithmetic(_syntax_tree(source, what, hint), names, True, what, hint))


def evaluate_dim(dim: str, symbols: dict[str, Any]) -> str:
    """A dim such as 'd/h' with numbers for its symbols, as a canonical string ('4').

    A symbol whose value is text is another name of a dim ({"d_k": "d/h"}: the notation a course
    teaches), read as that dim when it is the whole dim."""
    # each value's type in the key: 4 and 4.0 are equal keys but not the same dim ("4" and the name)
    key = tuple((name, type(value), value) for name, value in symbols.items())
    try:
        hash(key)
    except TypeError:  # a symbol's value that cannot be a key: worked out afresh
        return _evaluate_dim(dim, symbols)
    return _evaluated(dim, key)


# A problem's dims, and the few a class types, are worked out again for every answer judged: kept, by the dim's text
# and the symbols. A failure is never kept (lru_cache keeps only results), so it is raised again each time.
@functools.lru_cache(maxsize=4096)
def _evaluated(dim: str, symbols: tuple) -> str:
    return _evaluate_dim(dim, {name: value for name, _, value in symbols})


def _evaluate_dim(dim: str, symbols: dict[str, Any]) -> str:
    dim = canonical_dim(dim)
    other_names = {canonical_dim(k): canonical_dim(v) for k, v in symbols.items() if isinstance(v, str)}
    dim = other_names.get(dim, dim)
    names = {canonical_dim(k): v for k, v in symbols.items() if not isinstance(v, str)}
    if not names:
        return dim
    expr = re.sub(r"[a-z][a-z0-9]*", lambda m: str(names.get(m.group(0), m.group(0))), dim)
    if len(expr) <= 60 and re.fullmatch(r"[\d/()+*-]+", expr):
        what = f"the dimension {dim!r}"  # a dim is +, -, * and / of its symbols: no powers
        value = _arithmetic(_syntax_tree(expr, what, _SHAPE_HINT), {}, False, what, _SHAPE_HINT)
        if abs(value) > 10**12:
            raise AnswerFormatError("a dimension that large is not a shape")
        return str(value)
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
    shown = letters(n_choices)
    if isinstance(value, str):
        letter = value.strip().strip("().").upper()
        if len(letter) == 1 and letter in shown:
            return letter
    raise AnswerFormatError(f"expected one letter from {', '.join(shown)}")
