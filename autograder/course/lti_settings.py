"""The `lti:` section of course.yaml: the tool's public address and key pair, and each LMS (platform) it trusts.

Only pydantic here, beside the course loader, which validates the section on every command without the web stack;
the service's LTI routes (serve/lti/) read it.
"""

from __future__ import annotations

import enum
from typing import Optional
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ISSUER_CHARS = 300


def tool_address(value: str) -> str:
    """An http(s) address without query or fragment, without its trailing slash; ValueError for anything else."""
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"{value!r} is not an http(s) address without query or fragment")
    return value.rstrip("/")


def origin_of(address: str) -> str:
    parts = urlsplit(address)
    return f"{parts.scheme}://{parts.netloc}"


class Lms(enum.Enum):
    """Which LMS a platform is: how its launches name a student (serve/lti/members.lms_user)."""

    CANVAS = "canvas"
    MOODLE = "moodle"
    OTHER = "other"


class Platform(BaseModel):
    """One LMS registration: what its admin shows once the tool is added (docs/lti.md, per LMS)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    issuer: str = Field(min_length=1, max_length=ISSUER_CHARS, description="the platform's `iss`")
    client_id: str = Field(min_length=1, max_length=200, description="the tool's id at the platform (`aud`)")
    lms: Lms = Field(default=Lms.OTHER, description="canvas, moodle or other: how its launches name a student")
    deployment_ids: list[str] = Field(min_length=1, description="the deployments whose launches are accepted")
    # a deployment can be site-wide (Moodle's always are): without the course's own ids, an instructor of any
    # course of the LMS would be an instructor here. Empty until the first instructor launch shows the id.
    context_ids: list[str] = Field(default=[], description="the LMS courses (context ids) whose launches are "
                                                           "accepted (an instructor's first launch shows it)")
    auth_login_url: str = Field(description="the platform's OIDC authorization endpoint")
    auth_token_url: str = Field(description="the platform's OAuth2 token endpoint (grades and roster)")
    key_set_url: str = Field(description="the platform's JWKS")
    auth_audience: Optional[str] = Field(default=None, description="the token endpoint's `aud`, when not its URL")
    # Canvas signs in on canvas.instructure.com but frames the tool from the school's own domain
    origins: Optional[list[str]] = Field(default=None, min_length=1, description="the web origins that frame the "
                                         "service's pages and that deep-linking answers are posted to (default: "
                                         "auth_login_url's)")

    _addresses = field_validator("auth_login_url", "auth_token_url", "key_set_url")(tool_address)

    @model_validator(mode="before")
    @classmethod
    def _canvas_by_its_issuer(cls, given: object) -> object:
        """A platform without `lms:` whose issuer is Instructure's (canvas.instructure.com, its beta and test) is a
        Canvas: course.yaml files written before `lms:` existed keep matching their students by Canvas id."""
        if isinstance(given, dict) and "lms" not in given and isinstance(given.get("issuer"), str):
            host = urlsplit(given["issuer"]).hostname or ""
            if host == "instructure.com" or host.endswith(".instructure.com"):
                return {**given, "lms": Lms.CANVAS}
        return given

    @field_validator("origins")
    @classmethod
    def _bare_origins(cls, origins: Optional[list[str]]) -> Optional[list[str]]:
        for given in origins or ():
            parts = urlsplit(tool_address(given))
            if parts.path:
                raise ValueError(f"{given!r} is not an origin (scheme and host only, no path)")
        return [o.rstrip("/") for o in origins] if origins is not None else None

    @property
    def framing(self) -> tuple[str, ...]:
        """The platform's web origins: the only ones allowed to frame the service's pages."""
        if self.origins is not None:
            return tuple(self.origins)
        return (origin_of(self.auth_login_url),)

    @property
    def service_origins(self) -> frozenset[str]:
        """Where its grade and roster services may be (the tool sends them its access tokens): the sites of its
        configured endpoints and the ones it frames the tool from."""
        return frozenset(self.framing) | {origin_of(u) for u in (self.auth_login_url, self.auth_token_url,
                                                                  self.key_set_url)}


class LtiSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    tool_url: str = Field(description="the service's public address, as the LMS reaches it (https://...)")
    keys: str = Field(default="lti-keys", description="the folder of the tool's key pair (`qkv lti keys`), "
                                                      "relative to the course folder")
    platforms: list[Platform] = Field(min_length=1)
    add_unknown: bool = Field(default=False, description="a learner the roster lacks is signed in (as "
                                                         "lms-USERID-HASH) rather than refused")
    # an LMS where users set their own email would otherwise hand a roster row to whoever typed its address
    emails_verified: bool = Field(default=False, description="the LMSs' emails are the school's, checked: a "
                                                             "student no LMS id matches is matched by email")
    # fractional hours are allowed (0.001 is 3.6 s: the tests' period); a year at most keeps a wait's timeout finite
    sync_hours: float = Field(default=24, ge=0, le=8760, allow_inf_nan=False,
                              description="qkv serve pulls the LMS's class list this often (0: never)")

    _tool = field_validator("tool_url")(tool_address)

    @field_validator("platforms")
    @classmethod
    def _one_per_issuer(cls, platforms: list[Platform]) -> list[Platform]:
        issuers = [p.issuer for p in platforms]
        twice = sorted({i for i in issuers if issuers.count(i) > 1})
        if twice:
            raise ValueError(f"issuer {twice[0]!r} is listed twice (one entry per LMS)")
        return platforms

    def platform(self, issuer: str) -> Optional[Platform]:
        return next((p for p in self.platforms if p.issuer == issuer), None)

    def tool_config(self) -> dict:
        """The platforms in the shape PyLTI1p3's ToolConfDict takes."""
        return {p.issuer: {"default": True, "client_id": p.client_id, "auth_login_url": p.auth_login_url,
                           "auth_token_url": p.auth_token_url, "key_set_url": p.key_set_url, "key_set": None,
                           "auth_audience": p.auth_audience, "deployment_ids": list(p.deployment_ids)}
                for p in self.platforms}
