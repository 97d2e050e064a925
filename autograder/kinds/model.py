"""The shared pieces of the question bank's schema: plain data parsed from YAML in, frozen pydantic models out.

What every problem has (`ProblemBase`), tolerances, test inputs and test cases,
parameter specs. Each kind's own model is in its package of autograder/kinds/,
and `autograder.kinds.Problem` is their union, discriminated by `kind`.
Unknown keys are errors, so a typo in a problem file is caught instead of
silently ignored. `docs/question-bank.md` documents every field with an example
of each kind.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

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


# ------------------------------------------------------ every problem


class ProblemBase(Strict):
    """The fields every problem has; a kind's model adds `kind: Literal[its name]` and its own."""

    id: ProblemId
    title: str = Field(min_length=3)
    topic: Annotated[str, Field(pattern=r"^[a-z0-9-]+(/[a-z0-9-]+)*$")]
    points: float = Field(gt=0)
    difficulty: Literal[1, 2, 3]
    source: str = Field(min_length=3, description="which lecture page or exercise it follows")
    prompt: str = Field(min_length=10)
    solution: str = Field(min_length=10)
    tags: list[str] = []


# ------------------------------------------------------------ parameters


class IntParam(Strict):
    """Integers drawn uniformly from a closed range; `ints: []` is a scalar."""

    ints: list[Annotated[int, Field(ge=1)]]
    range: tuple[int, int]

    @model_validator(mode="after")
    def _ordered(self) -> "IntParam":
        if self.range[0] > self.range[1]:
            raise ValueError("range must be [low, high] with low <= high")
        if not (-2**63 <= self.range[0] and self.range[1] < 2**63):  # NumPy's int64, as every variant is drawn
            raise ValueError("range must lie within 64-bit integers (-2**63 to 2**63 - 1)")
        return self


class ChoiceParam(Strict):
    choice: list[Any] = Field(min_length=1)


ParamSpec = Annotated[
    Union[Annotated[IntParam, Tag("IntParam")], Annotated[ChoiceParam, Tag("ChoiceParam")]],
    Discriminator(by_key({"ints": "IntParam", "choice": "ChoiceParam"}), custom_error_type="parameter_spec",
                  custom_error_message="a parameter is {ints: [...], range: [low, high]} or {choice: [...]}"),
]
