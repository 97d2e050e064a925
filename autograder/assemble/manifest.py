"""Assignment manifests: `assignments/<name>.yaml` in, a resolved `Assignment` (manifest + bank problems) out.

Every error names the manifest file and the field: an unknown problem id, a
problem the track cannot take, bad points, bad YAML, true/false statements so
unbalanced that answering all true or all false earns more than about half of their
points (the rule is bank/measures.py's `paper_balance_finding`, which `qkv exam` draws by).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from autograder.bank import measures
from autograder.bank.load import Bank
from autograder.bundle import module_name
from autograder.grading_policy import GradingPolicy
from autograder.late_policy import LatePolicy
from autograder.grade.written_policy import WrittenPolicy
from qkv_runtime.limits import Limits
from autograder.kinds.model import ProblemId, Track
from autograder.errors import QkvError
from autograder.kinds import Problem, kind_of

StudentId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProblemEntry(_Strict):
    id: ProblemId
    points: float | None = Field(default=None, gt=0, le=1000)


class LmsLinks(_Strict):
    """The assignment as the LMS knows it, so grades go back to it (`qkv export-grades`, `qkv push-grades`)."""

    canvas_assignment_id: int | None = Field(
        default=None, ge=1, description="the number at the end of the Canvas assignment's address, /assignments/ID")


class ServeSettings(_Strict):
    """What `qkv serve` lets each student do (docs/serve.md)."""

    attempts: int = Field(default=20, ge=1, le=10_000, description="attempts a student may make in all")
    attempts_per_hour: int = Field(default=6, ge=1, le=10_000, description="attempts in any 60 minutes")
    upload_kb: int = Field(default=512, ge=1, le=1024, description="the largest file a student may upload, in KiB")
    counts: Literal["latest", "best"] = Field(default="latest", description="which attempt's score counts")


class Manifest(_Strict):
    title: str = Field(min_length=3)
    track: Track
    seed: int = Field(ge=0)
    due: dt.datetime | dt.date | None = None
    variants: Literal["same", "per_student"] = Field(
        default="same",
        description="hand-calculation numbers: the same for the class, or one set per student id",
    )
    roster: list[StudentId] = Field(
        default=[], description="student ids whose numbers the release lists (per_student)"
    )
    problems: list[Union[ProblemId, ProblemEntry]] = Field(min_length=1)
    grading: GradingPolicy = GradingPolicy()
    late: LatePolicy | None = None
    lms: LmsLinks = LmsLinks()
    serve: ServeSettings = ServeSettings()
    written_attempts: WrittenPolicy = Field(
        default=WrittenPolicy(), description="how repeated attempts score written answers: first, penalty or hidden")

    @model_validator(mode="after")
    def _late_needs_due(self) -> "Manifest":
        if self.late is not None and self.due is None:
            raise ValueError("late: a late policy needs a due date (due:)")
        if self.late is not None and self.late.last is not None and self.due is not None:
            def moment(value: dt.datetime | dt.date) -> dt.datetime:
                value = value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time(23, 59, 59))
                return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
            if moment(self.late.last) < moment(self.due):
                raise ValueError("late.last: the last date is before the due date")
        return self


@dataclass(frozen=True)
class AssignedProblem:
    problem: Problem
    points: float


@dataclass(frozen=True)
class Assignment:
    """A manifest with its problems looked up in the bank: what every build writer receives."""

    name: str
    manifest: Manifest
    problems: tuple[AssignedProblem, ...]
    source: Path
    problem_files: dict[str, Path]  # the bank file of each problem

    @property
    def track(self) -> Track:
        return self.manifest.track

    @property
    def implement(self) -> list[AssignedProblem]:
        return [p for p in self.problems if kind_of(p.problem).code]

    @property
    def written(self) -> list[AssignedProblem]:
        return [p for p in self.problems if not kind_of(p.problem).code]

    @property
    def max_points(self) -> float:
        return sum(p.points for p in self.problems)

    @property
    def module_name(self) -> str:
        return module_name(self.name)

    @property
    def limits(self) -> Limits:
        return self.manifest.grading.runtime_limits()


def default_assignments_root() -> Path:
    """The bundled manifests (package data; the repository's assignments/)."""
    from importlib import resources

    return Path(str(resources.files("autograder") / "bundled" / "assignments"))


def find_manifest(name_or_path: str, root: Path | None = None) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml"):
        if not candidate.is_file():
            raise QkvError(str(candidate), "no such manifest file")
        return candidate
    root = root or default_assignments_root()
    path = root / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in root.glob("*.yaml"))) or "none"
        raise QkvError(str(path), f"unknown assignment '{name_or_path}' (known: {known})")
    return path


def lms_links(name: str, root: Path) -> LmsLinks:
    """What assignment `name`'s manifest under `root` says of the LMS; nothing when there is no such manifest
    (grades kept from a build of another course)."""
    path = root / f"{name}.yaml"
    return parse_manifest(path).lms if path.is_file() else LmsLinks()


def _field(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in ("str", "ProblemEntry", "datetime", "date") and "[" not in str(part):
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def parse_manifest(path: Path) -> Manifest:
    where = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise QkvError(f"{where}{at}", f"bad YAML: {getattr(err, 'problem', None) or err}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise QkvError(where, f"cannot read: {err}") from None
    if not isinstance(data, dict):
        raise QkvError(where, "a manifest must be a YAML mapping")
    try:
        return Manifest.model_validate(data)
    except ValidationError as err:
        first = max(err.errors(), key=lambda e: len(e["loc"]))  # the deepest error names the field best
        raise QkvError(where, f"{_field(first['loc'])}: {first['msg'].removeprefix('Value error, ')}") from None


def resolve_assignment(path: Path, bank: Bank, defaults: GradingPolicy = GradingPolicy()) -> Assignment:
    """The manifest at `path` with its problems looked up in `bank`; `defaults`: the course's grading policy,
    for what the manifest leaves unset."""
    manifest = parse_manifest(path)
    manifest = manifest.model_copy(update={"grading": manifest.grading.merged_over(defaults)})
    name = path.stem
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,59}", name):
        raise QkvError(str(path), "file name: an assignment name is lower-case letters, digits and dashes")
    entries = [ProblemEntry(id=e) if isinstance(e, str) else e for e in manifest.problems]
    seen: set[str] = set()
    resolved = []
    for i, entry in enumerate(entries):
        where = f"problems[{i}]"
        if entry.id in seen:
            raise QkvError(str(path), f"{where}: '{entry.id}' is listed twice")
        seen.add(entry.id)
        if entry.id not in bank.problems:
            raise QkvError(str(path), f"{where}: unknown problem id '{entry.id}'")
        problem = bank.problems[entry.id]
        if not kind_of(problem).takes_track(problem, manifest.track):
            raise QkvError(
                str(path), f"{where}: '{entry.id}' has no {manifest.track} reference, so the {manifest.track} track cannot take it"
            )
        resolved.append(AssignedProblem(problem, entry.points if entry.points is not None else problem.points))
    unbalanced = measures.paper_balance_finding((p.problem, p.points) for p in resolved)
    if unbalanced:
        raise QkvError(str(path), f"problems: {unbalanced}; add or swap statements")
    files = {p.problem.id: bank.paths[p.problem.id] for p in resolved}
    assignment = Assignment(name, manifest, tuple(resolved), path, files)
    functions = [p.problem.function for p in assignment.implement]
    clash = sorted({f for f in functions if functions.count(f) > 1})
    if clash:
        raise QkvError(str(path), f"problems: two problems ask for the same function {', '.join(clash)}")
    if manifest.variants == "per_student" and not manifest.roster:
        raise QkvError(str(path), "roster: per_student variants need the student ids, so each one's numbers can be listed")
    return assignment
