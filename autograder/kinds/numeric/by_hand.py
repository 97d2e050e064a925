"""What makes a numeric problem workable by hand: declared rules in, a draw kept or rejected (and why) out.

A numeric problem's `by_hand` names quantities (its answer parts, or extra values its
`compute` returns, such as the exponents a softmax needs) and what must hold of every
entry: whole numbers, fractions with small denominators, squares of whole numbers,
not all zero, all different, a bounded spread, a range, a number of digits; and the
tables (e^x, sin, cos, square roots) printed with the prompt where a calculator
cannot be avoided, which must hold every value the work needs. The generator draws
only variants that keep every rule (variants.py); `qkv validate` draws 200 and
reports their spread (`spread_report`).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from pydantic import Field

from autograder.kinds.model import Strict

EPS = 1e-9
TABLE_FUNCTIONS = {"exp": (np.exp, "e^{{{x}}}"), "sin": (np.sin, "\\sin({x})"), "cos": (np.cos, "\\cos({x})"),
                   "sqrt": (np.sqrt, "\\sqrt{{{x}}}")}
_LITERAL = re.compile(r"^(-?)(\d+(?:\.\d+)?|sqrt\(\d+\))(?:/(\d+(?:\.\d+)?|sqrt\(\d+\)))?$")


def _term(text: str) -> float:
    return math.sqrt(float(text[5:-1])) if text.startswith("sqrt(") else float(text)


def literal(text: str) -> float | None:
    """A table entry typed in the file: 2, -1, 0.5, -1/3, -2/sqrt(3), sqrt(2); None when it names a quantity."""
    match = _LITERAL.fullmatch(text.replace(" ", ""))
    if match is None:
        return None
    sign, top, bottom = match.groups()
    value = _term(top) / (_term(bottom) if bottom else 1.0)
    return -value if sign else value


def literal_value(text: str) -> float:
    """A table entry typed in the file as a number, which `x:` as a list holds."""
    value = literal(text)
    if value is None:
        raise ValueError(f"x: {text!r} is not a number such as -1/3 or sqrt(2)")
    return value


def latex_of(text: str) -> str:
    return re.sub(r"sqrt\((\d+)\)", r"\\sqrt{\1}", text.replace(" ", ""))


class Table(Strict):
    """Values of a function printed with the prompt, for every x the work needs."""

    functions: list[Literal["exp", "sin", "cos", "sqrt"]] = Field(min_length=1)
    needs: str = Field(description="the quantity listing every x whose value the work needs")
    x: list[str] | str = Field(description="the x printed: literals such as -1/sqrt(3), or the name of a quantity")
    decimals: int = Field(default=4, ge=2, le=8)

    def xs(self, quantities: dict[str, np.ndarray]) -> list[tuple[str, float]]:
        if isinstance(self.x, str):
            values = np.ravel(quantities[self.x]).tolist()
            return [(f"{v:g}", float(v)) for v in dict.fromkeys(round(v, 12) for v in values)]
        return [(latex_of(t), literal_value(t)) for t in self.x]

    def markdown(self, quantities: dict[str, np.ndarray]) -> str:
        xs = self.xs(quantities)
        head = "| $x$ | " + " | ".join(f"${label}$" for label, _ in xs) + " |"
        rows = [head, "|" + "---|" * (len(xs) + 1)]
        for name in self.functions:
            function, shown = TABLE_FUNCTIONS[name]
            rows.append(f"| ${shown.format(x='x')}$ | " + " | ".join(f"{function(v):.{self.decimals}f}" for _, v in xs) + " |")
        return "\n".join(rows)


class HandRules(Strict):
    """Rules every drawn variant keeps; each names quantities: answer parts or extra values of `compute`."""

    whole: list[str] = Field(default=[], description="every entry is a whole number")
    fractions: dict[str, int] = Field(default={}, description="quantity -> the largest denominator allowed")
    squares: list[str] = Field(default=[], description="every entry is the square of a whole number")
    nonzero: list[str] = Field(default=[], description="not every entry is 0")
    distinct: list[str] = Field(default=[], description="the entries all differ")
    spread: dict[str, float] = Field(default={}, description="quantity -> the largest max - min of its entries")
    within: dict[str, tuple[float, float]] = Field(default={}, description="quantity -> [low, high] of every entry")
    digits: int | None = Field(default=None, ge=1, description="no answer has more digits before the point")
    tables: list[Table] = []

    def quantities(self) -> set[str]:
        named = set(self.whole) | set(self.fractions) | set(self.squares) | set(self.nonzero) | set(self.distinct)
        named |= set(self.spread) | set(self.within)
        for table in self.tables:
            named.add(table.needs)
            if isinstance(table.x, str):
                named.add(table.x)
        return named

    def broken(self, quantities: dict[str, np.ndarray], parts: list[str]) -> str | None:
        """The first rule these values break, in words; None when every rule holds. In plain Python over each
        quantity's few entries (NumPy's set-up per call costs more than these arrays' work), with NumPy's answers
        for entries that are not finite (a comparison with NaN holds for neither) and NumPy's rounding where
        Python's differs (`distinct`)."""
        entries: dict[str, list[float]] = {}

        def flat(name: str) -> list[float]:
            if name not in entries:
                entries[name] = np.ravel(np.asarray(quantities[name], dtype=float)).tolist()
            return entries[name]

        for name in self.whole:
            if any(math.isfinite(x) and abs(x - round(x)) > EPS for x in flat(name)):
                return f"{name} is not a whole number"
        for name, largest in self.fractions.items():
            for x in flat(name):
                if abs(float(Fraction(x).limit_denominator(largest)) - x) > EPS:
                    return f"{name} is not a fraction with a denominator up to {largest}"
        for name in self.squares:
            if any(x < -EPS or abs(round(math.sqrt(max(x, 0.0))) ** 2 - x) > EPS for x in flat(name)):
                return f"{name} is not the square of a whole number"
        for name in self.nonzero:
            if all(abs(x) <= EPS for x in flat(name)):
                return f"{name} is all zero"
        for name in self.distinct:
            values = flat(name)
            if len(set(np.round(values, 9).tolist())) < len(values):
                return f"the entries of {name} are not all different"
        for name, widest in self.spread.items():
            values = flat(name)
            spread = max(values) - min(values) if all(map(math.isfinite, values)) else float(np.ptp(values))
            if spread > widest + EPS:
                return f"the spread of {name} is above {widest:g}"
        for name, (low, high) in self.within.items():
            if any(x < low - EPS or x > high + EPS for x in flat(name)):
                return f"an entry of {name} is outside [{low:g}, {high:g}]"
        if self.digits is not None:
            for name in parts:
                if any(abs(x) >= 10 ** self.digits for x in flat(name)):
                    return f"{name} has more than {self.digits} digits"
        for table in self.tables:
            printed = [v for _, v in table.xs(quantities)]
            missing = [x for x in flat(table.needs) if not any(abs(x - v) <= EPS for v in printed)]
            if missing:
                return f"the table does not print x = {missing[0]:.6g}, which {table.needs} needs"
        return None


def spread_report(rules: HandRules, quantities: list[dict[str, np.ndarray]]) -> str:
    """What 200 variants look like under the declared spreads, e.g. 'spread of scores: median 2, max 3'."""
    out = []
    for name in rules.spread:
        spreads = [float(np.ptp(np.ravel(q[name]))) for q in quantities]
        out.append(f"spread of {name}: median {np.median(spreads):g}, max {max(spreads):g}")
    for name, (low, high) in rules.within.items():
        values = np.concatenate([np.ravel(q[name]) for q in quantities])
        out.append(f"{name} in [{values.min():.3g}, {values.max():.3g}]")
    return "; ".join(out)


def table_markdown(rules: HandRules | None, quantities: dict[str, Any]) -> str:
    """The tables of a variant, for the prompt's `{{ tables }}`."""
    if rules is None or not rules.tables:
        return ""
    return "\n\n".join(t.markdown({k: np.asarray(v, dtype=float) for k, v in quantities.items()}) for t in rules.tables)
