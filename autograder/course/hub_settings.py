"""The `jupyterhub:` section of course.yaml: `qkv serve` as a JupyterHub service (docs/jupyterhub.md).

Only pydantic here, beside the course loader, which validates the section on every command without the web stack;
the service's hub sign-in and exchange intake (serve/hub/) read it. Where the hub is (its API, the service's prefix,
its OAuth client) is not here: the hub hands a managed service that in its environment (serve/hub/api.py).
"""

from __future__ import annotations

import re
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,254}")


class HubSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    staff_groups: list[str] = Field(default=[], description="hub groups whose members see the class (staff)")
    instructor_groups: list[str] = Field(default=[], description="hub groups whose members are instructors")
    staff_roles: list[str] = Field(default=[], description="hub roles that make a user staff")
    instructor_roles: list[str] = Field(default=[], description="hub roles that make a user an instructor")
    exchange: Optional[str] = Field(default=None, description="nbgrader's exchange root (its inbound folder is "
                                                              "graded as it fills), e.g. /srv/nbgrader/exchange")
    course_id: str = Field(default="qkv", description="the nbgrader course id in the exchange")
    local_user_prefix: str = Field(default="", max_length=40,
                                   description="what the hub puts before a hub name to make the local user's name, "
                                               "which nbgrader names submissions by (TLJH: jupyter-)")
    poll_seconds: float = Field(default=2.0, gt=0, le=3600, description="how often the inbound folder is read")

    @field_validator("staff_groups", "instructor_groups", "staff_roles", "instructor_roles")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not _NAME.fullmatch(n)]
        if bad:
            raise ValueError(f"{bad[0][:40]!r} is not a hub group or role name")
        return names

    @field_validator("course_id")
    @classmethod
    def _course(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", value):
            raise ValueError(f"{value[:40]!r} is not an nbgrader course id")
        return value
