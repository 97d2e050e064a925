"""The numeric kind's problem model: a YAML mapping in, a frozen `NumericProblem` out.

Parameters to draw, the `compute` reference that gives every answer part from them,
the parts a student computes (each with its form, shown decimals and tolerance), the
by-hand rules every draw keeps (by_hand.py), the lecture's own numbers and the
misconceptions whose wrong methods a typed answer may match.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from autograder.kinds.model import DottedRef, ParamSpec, ProblemBase, ProblemId, Strict, Tolerance
from autograder.kinds.numeric.by_hand import HandRules


class AnswerTolerance(Tolerance):
    """A hand-calculated answer's window: 5e-4 either side, and relative only when the problem asks for it."""

    abs: float = Field(default=5e-4, ge=0)
    rel: float = Field(default=0.0, ge=0)


class AnswerPart(Strict):
    """One number, vector or matrix the student computes by hand."""

    name: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")]
    label: str
    form: Literal["scalar", "vector", "matrix", "integer", "position"] = "scalar"
    base: Literal[0, 1] | None = Field(default=None, description="a position: counted from 0 or from 1, as the prompt says")
    decimals: int | None = Field(default=None, ge=0, le=8, description="how the answer is rounded when shown")
    tolerance: AnswerTolerance = AnswerTolerance()

    @model_validator(mode="after")
    def _position_has_base(self) -> "AnswerPart":
        if (self.form == "position") != (self.base is not None):
            raise ValueError("a position part says whether it counts from 0 or from 1 (base), and only it has a base")
        return self


class LectureExample(Strict):
    """The lecture's own numbers: fixed parameters and the figures the lecture prints."""

    params: dict[str, Any]
    expected: dict[str, Any]


class NumericMisconception(Strict):
    id: ProblemId
    message: str = Field(min_length=10)
    compute: DottedRef


class NumericProblem(ProblemBase):
    kind: Literal["numeric"]
    parameters: dict[str, ParamSpec] = {}
    compute: DottedRef = Field(description="function(**params) -> {part name: value}")
    feasible: DottedRef | None = Field(
        default=None,
        description="function(params, answers) -> None when fine, else the reason the draw is rejected",
    )
    admissible: DottedRef | None = Field(
        default=None,
        description="function(**params) -> None, else the reason: a cheap test of the drawn parameters alone, run "
                    "before compute; it may refuse only draws feasible or by_hand refuse too (validate checks it)",
    )
    parts: list[AnswerPart] = Field(min_length=1)
    by_hand: HandRules | None = Field(default=None, description="what makes every drawn variant workable by hand")
    lecture_example: LectureExample | None = None
    misconceptions: list[NumericMisconception] = []

    @model_validator(mode="after")
    def _has_a_variant(self) -> "NumericProblem":
        if not self.parameters and self.lecture_example is None:
            raise ValueError("needs parameters or a lecture_example")
        return self
