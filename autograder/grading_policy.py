"""The grading policy as a manifest or course.yaml writes it: limits and the isolation required.

A leaf: the manifest model (build), the course model and the bundle use it; every
route reads the result from the bundle (qkv_runtime.limits.Limits and the isolation
request, sandbox/isolation.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from qkv_runtime.limits import Limits


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GradingLimits(_Strict):
    """Limits for running one submission; unset ones take qkv's defaults (qkv_runtime.limits.Limits)."""

    load_seconds: float | None = Field(default=None, gt=0, le=3600)
    problem_seconds: float | None = Field(default=None, gt=0, le=3600)
    attempt_seconds: float | None = Field(default=None, gt=0, le=36000,
                                          description="the most one whole attempt may take, loading included")
    cpu_seconds: int | None = Field(default=None, gt=0, le=36000)
    memory_bytes: int | None = Field(default=None, ge=64 * 1024**2, le=256 * 1024**3)
    max_processes: int | None = Field(default=None, gt=0, le=4096)
    max_output_bytes: int | None = Field(default=None, gt=0, le=10**9)
    max_file_bytes: int | None = Field(default=None, gt=0, le=10**10)


class GradingPolicy(_Strict):
    """How student code of this assignment is run, in every route (qkv grade, Gradescope, pytest, self-check)."""

    isolation: Literal["require", "allow-rlimits"] = Field(
        default="require",
        description="require: refuse to grade where student code could read the grader's files; "
                    "allow-rlimits: fall back to resource limits only, with a warning",
    )
    limits: GradingLimits = GradingLimits()

    def merged_over(self, defaults: "GradingPolicy") -> "GradingPolicy":
        """This policy, with what it leaves unset taken from `defaults` (a course's)."""
        limits = {**defaults.limits.model_dump(exclude_none=True), **self.limits.model_dump(exclude_none=True)}
        isolation = self.isolation if "isolation" in self.model_fields_set else defaults.isolation
        return GradingPolicy(isolation=isolation, limits=GradingLimits(**limits))

    def runtime_limits(self) -> Limits:
        return Limits(**self.limits.model_dump(exclude_none=True))
