"""The late policy: what handing in after the due date costs, as a manifest's `late:` section writes it.

The one type of it, and the one home of its defaults: the manifest validates it (assemble/manifest.py),
the grading bundle carries it (bundle.py), the gradebook keeps it beside the class (grade/gradebook/), and
classroom/deadlines.py applies it with the bundle's due date. A leaf, like grading_policy.py.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class LatePolicy(BaseModel):
    """What handing in after `due` costs (autograder/classroom/deadlines.py; docs/class.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grace_minutes: float = Field(default=0, ge=0, le=7 * 24 * 60, description="minutes after the due date still on time")
    penalty_percent: float = Field(default=0, ge=0, le=100,
                                   description="percent of the assignment's points taken per started `per` late")
    per: Literal["hour", "day"] = "day"
    cap_percent: float = Field(default=100, ge=0, le=100, description="the most the lateness penalty takes, in percent")
    last: dt.datetime | dt.date | None = Field(default=None, description="hand-ins after this get zero")

    @field_validator("last", mode="before")
    @classmethod
    def _a_bare_date_stays_a_date(cls, value: Any) -> Any:
        # pydantic reads "2026-12-25" as midnight; a date without a time is the end of that day (deadlines.py)
        if isinstance(value, str) and len(value.strip()) == 10:
            return dt.date.fromisoformat(value.strip())
        return value

    def to_json(self) -> dict[str, Any]:
        """As the bundle and the gradebook keep it (plain JSON data, read back by `LatePolicy.model_validate`)."""
        return self.model_dump(mode="json")
