"""A student's practice history in a file of their own: the path in; their tries (and the problem they stopped in,
to resume it) out, and written back whole after every problem, owner-only (autograder/private.py).

Only facts are kept (what was tried, on which seed, when, how well, the misconceptions named): mastery, held
misconceptions and reviews are replayed from them by the rule, so a change of the rule never strands a file. The
decoder is bounded (MAX_BYTES, MAX_TRIES, each field's length); a file that is too large, damaged or not a qkv
practice history is moved aside (renamed, never deleted) and practice starts afresh with a one-line message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from autograder.private import write_private
from autograder.practice.rule import Try
from qkv_runtime.files import Unusable, read_bounded

FORMAT: Literal["qkv-practice-history"] = "qkv-practice-history"
VERSION: Literal[1] = 1
MAX_BYTES = 4 * 1024 * 1024
MAX_TRIES = 20_000  # years of daily practice; a file with more is not one a drill wrote
DEFAULT_NAME = "qkv-practice-history.json"

_Name = Annotated[str, Field(min_length=1, max_length=300)]
_Text = Annotated[str, Field(min_length=1, max_length=2000)]
_Seed = Annotated[int, Field(ge=0, lt=2**63)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _TryRecord(_Strict):
    problem: _Name
    seed: _Seed
    at: AwareDatetime
    score: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
    misconceptions: Annotated[list[_Text], Field(max_length=50)] = []


class _Pending(_Strict):
    problem: _Name
    seed: _Seed


class _HistoryFile(_Strict):
    format: Literal["qkv-practice-history"]
    version: Literal[1]
    tries: Annotated[list[_TryRecord], Field(max_length=MAX_TRIES)] = []
    pending: _Pending | None = None


@dataclass(frozen=True)
class Pending:
    """The problem on screen when the student stopped, to be asked again on the same variant."""

    problem_id: str
    seed: int


@dataclass(frozen=True)
class History:
    tries: tuple[Try, ...] = ()
    pending: Pending | None = None


@dataclass(frozen=True)
class Loaded:
    history: History
    message: str | None = None  # one line when the file could not be used and was put aside


def _decode(data: bytes) -> History:
    try:
        raw = _HistoryFile.model_validate_json(data)
    except ValidationError as err:
        first = err.errors()[0]
        if first["type"] in ("json_invalid", "json_type") or first["loc"] == ():
            raise Unusable("is damaged (not JSON)") from None
        if first["loc"][0] in ("format", "version"):
            raise Unusable("is not a qkv practice history (or one of a newer qkv)") from None
        where = ".".join(str(part) for part in first["loc"])
        raise Unusable(f"is damaged ({where}: {first['msg']})") from None
    tries = tuple(Try(t.problem, t.seed, t.at, t.score, tuple(t.misconceptions)) for t in raw.tries)
    pending = Pending(raw.pending.problem, raw.pending.seed) if raw.pending else None
    return History(tries, pending)


def _put_aside(path: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    aside = path.with_name(f"{path.name}.aside-{stamp}")
    os.replace(path, aside)
    return aside


def load_history(path: Path) -> Loaded:
    """The history in `path`; a fresh one when there is none, or (with a one-line message) when it is unusable."""
    try:
        data = read_bounded(path, MAX_BYTES, "a practice history")
        return Loaded(History() if data is None else _decode(data))
    except Unusable as why:
        try:
            kept = f"kept as {_put_aside(path).name}"
        except OSError as err:
            kept = f"left where it is ({err.strerror or err})"
        return Loaded(History(), f"{path}: {why}; {kept}; starting a fresh history")


def encode(history: History) -> bytes:
    raw = _HistoryFile(
        format=FORMAT, version=VERSION,
        tries=[_TryRecord(problem=t.problem_id, seed=t.seed, at=t.at, score=t.score,
                          misconceptions=list(t.misconceptions)) for t in history.tries[-MAX_TRIES:]],
        pending=_Pending(problem=history.pending.problem_id, seed=history.pending.seed) if history.pending else None)
    return raw.model_dump_json(indent=1).encode()


def save_history(path: Path, history: History) -> None:
    """Write the history whole, owner-only; a QkvError naming the file when it cannot be written."""
    write_private(path, encode(history))
