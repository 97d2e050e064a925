"""Typed problems of the question bank: what one YAML file may say.

Takes plain data parsed from YAML; gives frozen pydantic models, one class per
problem kind, discriminated by `kind`. Unknown keys are errors, so a typo in a
problem file is caught instead of silently ignored. `docs/question-bank.md`
documents every field with an example of each kind.
"""

from __future__ import annotations

import ast
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

ProblemId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*[a-z0-9]$", max_length=80)]
DottedRef = Annotated[str, Field(pattern=r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$")]
Track = Literal["numpy", "torch"]
TRACKS: tuple[Track, ...] = ("numpy", "torch")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def by_key(tags: dict[str, str], otherwise: str | None = None) -> Any:
    """Pick a union member by the key a mapping has, so an error names that member's field, not another's.

    Tags are class names: the loader leaves capitalised parts out of the field path it reports.
    """
    def pick(value: Any) -> str | None:
        keys = value.keys() if isinstance(value, dict) else type(value).model_fields if isinstance(value, BaseModel) else None
        if keys is None:
            return otherwise
        return next((tag for key, tag in tags.items() if key in keys), None)

    return pick


class Tolerance(Strict):
    """Absolute and relative tolerance, as in numpy.isclose: |got - want| <= abs + rel * |want|."""

    abs: float = Field(default=1e-6, ge=0)
    rel: float = Field(default=1e-6, ge=0)


class AnswerTolerance(Tolerance):
    """A hand-calculated answer's window: 5e-4 either side, and relative only when the problem asks for it."""

    abs: float = Field(default=5e-4, ge=0)
    rel: float = Field(default=0.0, ge=0)


# ---------------------------------------------------------------- test inputs


class RandomArray(Strict):
    """A seeded random array: the same spec always gives the same numbers."""

    random: Literal["normal", "uniform", "ints", "mask"]
    shape: list[Annotated[int, Field(ge=0)]]
    seed: int = 0
    scale: float = 1.0
    low: float = -1.0
    high: float = 1.0
    keep: float = Field(default=0.7, gt=0, le=1)
    dtype: Literal["float64", "float32"] = "float64"
    ensure_key: bool = Field(
        default=True,
        description="mask only: every row keeps at least one allowed key",
    )


class CausalMask(Strict):
    causal_mask: Annotated[int, Field(ge=1)]


class ArrayLiteral(Strict):
    array: list[Any]
    dtype: Literal["float64", "float32", "bool", "int64"] = "float64"


ArgSpec = Annotated[
    Union[
        Annotated[RandomArray, Tag("RandomArray")],
        Annotated[CausalMask, Tag("CausalMask")],
        Annotated[ArrayLiteral, Tag("ArrayLiteral")],
        Annotated[Union[bool, int, float, str, None], Tag("Scalar")],
    ],
    Discriminator(
        by_key({"random": "RandomArray", "causal_mask": "CausalMask", "array": "ArrayLiteral"}, otherwise="Scalar"),
        custom_error_type="input_spec",
        custom_error_message="an input is {random: ...}, {causal_mask: n}, {array: [...]}, a number, a string, true/false or null",
    ),
]


class TestCase(Strict):
    """One call of the student's function, compared with the reference's output."""

    name: str
    args: list[ArgSpec] = []
    kwargs: dict[str, ArgSpec] = {}
    points: float = Field(default=1.0, ge=0)
    tolerance: Tolerance = Tolerance()
    expect: Any = Field(
        default=None,
        description="optional literal expected output (e.g. the lecture's figure); the reference must agree",
    )
    expect_error: str | None = Field(
        default=None, description="name of the exception the call must raise, e.g. ValueError"
    )
    output: Literal["all", "first", "second"] = Field(
        default="all", description="which returned value is compared when a function returns a pair"
    )


class Misconception(Strict):
    """A named wrong implementation, run by the trusted grader to recognise a student's mistake."""

    id: ProblemId
    message: str = Field(min_length=10)
    implementation: DottedRef | None = None


# -------------------------------------------------------------- problem kinds


class ProblemBase(Strict):
    id: ProblemId
    title: str = Field(min_length=3)
    topic: Annotated[str, Field(pattern=r"^[a-z0-9-]+(/[a-z0-9-]+)*$")]
    points: float = Field(gt=0)
    difficulty: Literal[1, 2, 3]
    source: str = Field(min_length=3, description="which lecture page or exercise it follows")
    prompt: str = Field(min_length=10)
    solution: str = Field(min_length=10)
    tags: list[str] = []


class ImplementProblem(ProblemBase):
    kind: Literal["implement"]
    function: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")]
    signature: str
    returns: str
    example: str = ""
    references: dict[Track, DottedRef] = Field(min_length=1, description="one or both tracks")
    stub: DottedRef = Field(
        default="solutions.stubs.not_implemented",
        description="what the stub does: validate checks that it fails every test",
    )
    public_tests: list[TestCase] = Field(min_length=1)
    hidden_tests: list[TestCase] = Field(min_length=1)
    misconceptions: list[Misconception] = []

    @field_validator("signature")
    @classmethod
    def _signature_names_function(cls, value: str, info: Any) -> str:
        function = info.data.get("function")
        if function and not value.startswith(f"{function}("):
            raise ValueError(f"must start with '{function}('")
        try:  # stubs, notebooks and keys are written from it: it must be a Python def line
            ast.parse(f"def {value}:\n    pass\n")
        except SyntaxError as err:
            raise ValueError(f"is not a Python signature ({err.msg})") from None
        return value

    @model_validator(mode="after")
    def _unique_test_names(self) -> "ImplementProblem":
        names = [t.name for t in self.public_tests + self.hidden_tests]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"test names must be unique, repeated: {', '.join(dupes)}")
        return self


class IntParam(Strict):
    """Integers drawn uniformly from a closed range; `ints: []` is a scalar."""

    ints: list[Annotated[int, Field(ge=1)]]
    range: tuple[int, int]

    @model_validator(mode="after")
    def _ordered(self) -> "IntParam":
        if self.range[0] > self.range[1]:
            raise ValueError("range must be [low, high] with low <= high")
        return self


class ChoiceParam(Strict):
    choice: list[Any] = Field(min_length=1)


ParamSpec = Annotated[
    Union[Annotated[IntParam, Tag("IntParam")], Annotated[ChoiceParam, Tag("ChoiceParam")]],
    Discriminator(by_key({"ints": "IntParam", "choice": "ChoiceParam"}), custom_error_type="parameter_spec",
                  custom_error_message="a parameter is {ints: [...], range: [low, high]} or {choice: [...]}"),
]


class AnswerPart(Strict):
    """One number, vector or matrix the student computes by hand."""

    name: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")]
    label: str
    form: Literal["scalar", "vector", "matrix", "integer"] = "scalar"
    decimals: int | None = Field(default=None, ge=0, le=8, description="how the answer is rounded when shown")
    tolerance: AnswerTolerance = AnswerTolerance()


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
    parts: list[AnswerPart] = Field(min_length=1)
    lecture_example: LectureExample | None = None
    misconceptions: list[NumericMisconception] = []

    @model_validator(mode="after")
    def _has_a_variant(self) -> "NumericProblem":
        if not self.parameters and self.lecture_example is None:
            raise ValueError("needs parameters or a lecture_example")
        return self


class TrueFalseProblem(ProblemBase):
    kind: Literal["true_false"]
    statement: str = Field(min_length=10)
    answer: bool
    correction: str | None = None
    reason: str = Field(min_length=10)

    @model_validator(mode="after")
    def _false_has_correction(self) -> "TrueFalseProblem":
        if not self.answer and not self.correction:
            raise ValueError("a false statement needs its correction")
        return self


class Choice(Strict):
    text: str
    misconception: str | None = Field(default=None, description="for a wrong choice: the mistake it reflects")


class MultipleChoiceProblem(ProblemBase):
    kind: Literal["multiple_choice"]
    choices: list[Choice] = Field(min_length=2, max_length=8)
    answer: Annotated[str, Field(pattern=r"^[A-H]$")]

    @model_validator(mode="after")
    def _answer_is_a_choice(self) -> "MultipleChoiceProblem":
        if ord(self.answer) - ord("A") >= len(self.choices):
            raise ValueError(f"answer {self.answer} is not one of the {len(self.choices)} choices")
        return self


class ShapeMisconception(Strict):
    answer: list[str]
    message: str = Field(min_length=10)


class ShapeProblem(ProblemBase):
    kind: Literal["shape"]
    parameters: dict[str, int] = Field(
        default={}, description="values of the symbols, when the answer is asked in numbers"
    )
    answer: list[str] = Field(min_length=1, description="one entry per axis: a symbol, a number, or d/h")
    misconceptions: list[ShapeMisconception] = []


Problem = Annotated[
    Union[ImplementProblem, NumericProblem, TrueFalseProblem, MultipleChoiceProblem, ShapeProblem],
    Field(discriminator="kind"),
]
KINDS = ("implement", "numeric", "true_false", "multiple_choice", "shape")
