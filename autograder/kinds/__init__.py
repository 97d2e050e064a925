"""The problem kinds: one package per kind, and the registry every stage asks.

Takes nothing; gives `KINDS` (name -> `Kind`, in the order of every list and
table of kinds), `kind_of(problem)`, `Problem` (the pydantic union of the kinds'
models, discriminated by `kind`) and `problem_adapter()`, which parses a problem
of any kind registered now. A stage asks `kind_of(problem)` for a behaviour
instead of testing the problem's class (base.py lists them), so a new kind is
its package, its line below and its schema entry in docs/question-bank.md;
docs/architecture.md, "Adding a problem kind", says how.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field, TypeAdapter

from autograder.kinds.base import AllOrNothingKind, Kind, WrittenKind
from autograder.kinds.implement import IMPLEMENT, ImplementProblem
from autograder.kinds.model import ProblemBase
from autograder.kinds.multiple_choice import MULTIPLE_CHOICE, MultipleChoiceProblem
from autograder.kinds.numeric import NUMERIC
from autograder.kinds.numeric.model import NumericProblem
from autograder.kinds.shape import SHAPE, ShapeProblem
from autograder.kinds.true_false import TRUE_FALSE, TrueFalseProblem

KINDS: dict[str, Kind] = {kind.name: kind for kind in (IMPLEMENT, NUMERIC, SHAPE, TRUE_FALSE, MULTIPLE_CHOICE)}


def _union(models: tuple[type[ProblemBase], ...]):
    # Union[...] rather than `|`: it takes the tuple of however many models are registered
    return Annotated[Union[models], Field(discriminator="kind")]


Problem = _union(tuple(kind.model for kind in KINDS.values()))
_ADAPTERS: dict[tuple[type[ProblemBase], ...], TypeAdapter] = {}


def problem_adapter() -> TypeAdapter:
    """A validator of problem files for the kinds registered now (a test may register one of its own)."""
    models = tuple(kind.model for kind in KINDS.values())
    if models not in _ADAPTERS:
        _ADAPTERS[models] = TypeAdapter(_union(models))
    return _ADAPTERS[models]


def kind_of(problem: ProblemBase) -> Kind:
    return KINDS[problem.kind]  # type: ignore[attr-defined]  # every kind's model has its `kind`


__all__ = [
    "KINDS", "AllOrNothingKind", "ImplementProblem", "Kind", "MultipleChoiceProblem", "NumericProblem", "Problem",
    "ShapeProblem", "TrueFalseProblem", "WrittenKind", "kind_of", "problem_adapter",
]
