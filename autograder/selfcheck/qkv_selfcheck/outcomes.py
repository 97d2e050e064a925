"""Verdicts: one check's outcome and one problem's result, as the report prints them."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

PASS, FAIL, TODO = "pass", "fail", "not answered"


class Outcome:
    """One verdict: `passed`, `status` (pass / fail / not answered), a message for the student, and the
    misconceptions a wrong answer is (`named`: the bank's messages, which the history remembers)."""

    def __init__(self, status: str, message: str, details: Optional[List[str]] = None,
                 named: Optional[List[str]] = None) -> None:
        self.status = status
        self.message = message
        self.details = details or []
        self.named = named or []

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def lines(self) -> List[str]:
        mark = {PASS: "PASS", FAIL: "FAIL", TODO: "TODO"}[self.status]
        return [f"  {mark}  {self.message}"] + [f"        {d}" for d in self.details]

    def __repr__(self) -> str:
        return f"Outcome({self.status!r}, {self.message!r})"


class ProblemResult:
    def __init__(self, problem: Dict[str, Any], outcomes: List[Outcome], note: str = "") -> None:
        self.problem = problem
        self.outcomes = outcomes
        self.note = note

    @property
    def status(self) -> str:
        """fail if anything fails, pass if everything passes, else not answered (yet)."""
        if any(o.status == FAIL for o in self.outcomes):
            return FAIL
        if self.outcomes and all(o.status == PASS for o in self.outcomes):
            return PASS
        return TODO

    def summary(self) -> str:
        unit = "public tests" if self.problem["code"] else "parts"
        passed = sum(o.passed for o in self.outcomes)
        if self.status == TODO and not passed:
            return TODO
        if len(self.outcomes) > 1:
            return f"{self.status} ({passed}/{len(self.outcomes)} {unit})"
        return self.status

    def lines(self) -> List[str]:
        p = self.problem
        out = [f"[{p['id']}] {p['title']} ({_points(p['points'])})"]
        for outcome in self.outcomes:
            out.extend(outcome.lines())
        if self.note:
            out.append(f"        {self.note}")
        return out


def _points(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")
