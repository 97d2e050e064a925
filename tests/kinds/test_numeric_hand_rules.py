"""The rules a variant worked by hand keeps (kinds/numeric/by_hand.py's HandRules.broken), checked in plain Python,
refuse exactly what the same rules in NumPy refuse, entries that are not finite included: which draws a problem keeps
decides every student's numbers."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.kinds.numeric.by_hand import EPS, HandRules

ENTRY = st.one_of(st.integers(-40, 40).map(float), st.fractions(-20, 20, max_denominator=12).map(float),
                  st.floats(-1e6, 1e6), st.sampled_from([math.nan, math.inf, -math.inf, 0.5, -2.5, 1e-10, 3.0]))
VALUES = st.lists(ENTRY, min_size=1, max_size=6)


def numpy_broken(rules: HandRules, values: list[float]) -> str | None:
    """Each rule as NumPy says it, on one quantity `q` that is also the answer part: the verdicts to match."""
    x = np.asarray(values, dtype=float)
    if rules.whole and np.any(np.abs(x - np.round(x)) > EPS):
        return "whole"
    for largest in rules.fractions.values():
        if any(abs(float(Fraction(float(v)).limit_denominator(largest)) - v) > EPS for v in x):
            return "fractions"
    if rules.nonzero and np.all(np.abs(x) <= EPS):
        return "nonzero"
    if rules.distinct and len(set(np.round(x, 9).tolist())) < x.size:
        return "distinct"
    for widest in rules.spread.values():
        if float(np.ptp(x)) > widest + EPS:
            return "spread"
    for low, high in rules.within.values():
        if np.any(x < low - EPS) or np.any(x > high + EPS):
            return "within"
    if rules.digits is not None and np.any(np.abs(x) >= 10 ** rules.digits):
        return "digits"
    return None


RULES = [HandRules(whole=["q"]), HandRules(nonzero=["q"]), HandRules(distinct=["q"]), HandRules(spread={"q": 3.0}),
         HandRules(within={"q": (-2.0, 5.0)}), HandRules(digits=2), HandRules(fractions={"q": 4})]
RULE_NAMES = ["whole", "nonzero", "distinct", "spread", "within", "digits", "fractions"]


@settings(max_examples=300, deadline=None)
@given(values=VALUES)
def test_each_rule_refuses_what_numpy_refuses(values: list[float]) -> None:
    for rules, name in zip(RULES, RULE_NAMES):
        if name == "fractions" and not all(map(math.isfinite, values)):
            continue  # Fraction refuses what is not finite, in either
        with np.errstate(all="ignore"):  # inf - inf in NumPy's verdict: it says nan, and so compares false
            said, numpy_said = rules.broken({"q": np.asarray(values)}, ["q"]), numpy_broken(rules, values)
        assert (said is not None) == (numpy_said is not None), (name, values, said)
