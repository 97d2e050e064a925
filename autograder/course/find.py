"""Finding and reading a course: `--course DIR`, `QKV_COURSE`, the current folder upwards, else the bundled course.

Gives a `Course`: its root, its typed `course.yaml`, and where its bank folders,
assignments, roster, builds and grades are. Every error is one line naming the
file and the field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from autograder.kinds.model import ProblemId, Track
from autograder.errors import QkvError
from autograder.grading_policy import GradingPolicy
from autograder.course.hub_settings import HubSettings
from autograder.course.lti_settings import LtiSettings

COURSE_FILE = "course.yaml"
ENVIRONMENT = "QKV_COURSE"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BundledSelection(_Strict):
    """Which bundled problems a course takes: those under these topic prefixes, and these ids."""

    topics: list[str] = []
    ids: list[ProblemId] = []


class BankConfig(_Strict):
    folders: list[str] = Field(default=["question_bank"], description="the course's own problems, files or folders")
    bundled: Union[Literal["all", "none"], BundledSelection] = Field(
        default="all", description="the bundled problems the course takes: all, none, or {topics, ids}")


class PracticeSettings(_Strict):
    """`qkv serve`'s practice space (/practice): the bank's written problems under these topics and of these kinds."""

    topics: list[str] = Field(default=[], description="topic prefixes, e.g. [attention, masking] (default: every topic)")
    kinds: list[str] = Field(default=[], description="written kinds (default: the drill's, every kind but code)")


class CourseConfig(_Strict):
    title: str = Field(min_length=3)
    term: str = ""
    track: Track = "numpy"
    qkv: Optional[str] = Field(default=None, description="the qkv version the course was made with")
    bank: BankConfig = BankConfig()
    assignments: str = "assignments"
    roster: Optional[str] = Field(default=None, description="the roster CSV, relative to the course folder")
    grading: GradingPolicy = GradingPolicy()
    lti: Optional[LtiSettings] = Field(default=None, description="qkv serve as an LTI 1.3 tool (docs/lti.md)")
    jupyterhub: Optional[HubSettings] = Field(default=None,
                                              description="qkv serve as a JupyterHub service (docs/jupyterhub.md)")
    practice: Optional[PracticeSettings] = Field(default=None, description="qkv serve's /practice (docs/exam-prep.md)")


@dataclass(frozen=True)
class Course:
    root: Path
    config: CourseConfig
    bundled: bool  # the course that ships with qkv

    @property
    def title(self) -> str:
        return self.config.title

    @property
    def bank_folders(self) -> list[Path]:
        return [self.root / folder for folder in self.config.bank.folders]

    @property
    def assignments(self) -> Path:
        return self.root / self.config.assignments

    @property
    def roster(self) -> Optional[Path]:
        return self.root / self.config.roster if self.config.roster else None

    def grading_roster(self, given: Optional[Path] = None) -> tuple[Optional[Path], str]:
        """The roster `qkv grade` uses, and the line saying which and why: `--roster`, else the one course.yaml
        names (which must exist: a roster that silently went missing would grade hand-ins under file names),
        else none. Nothing else is picked up, so `qkv init`'s roster.example.csv never grades a class."""
        if given is not None:
            return given, f"roster: {given} (--roster)"
        if self.roster is None:
            return None, ("roster: none, so each hand-in is graded under the student id its file name gives "
                          f"(name one with --roster FILE, or `roster: FILE` in {COURSE_FILE})")
        if not self.roster.is_file():
            raise QkvError(str(self.root / COURSE_FILE), f"roster: {self.config.roster}: no such file "
                                                          "(write your class list there, or remove the line)")
        return self.roster, f"roster: {self.roster} (from {COURSE_FILE})"

    def output(self, kind: Literal["dist", "grades"], name: str) -> Path:
        """Where a build or a grading goes by default: the course's own folder, or the current one for the
        bundled course (which lies inside the installed package)."""
        base = Path(kind) if self.bundled else self.root / kind
        return base / name

    def describe(self) -> str:
        """The line every command starts with."""
        where = "bundled with qkv" if self.bundled else str(self.root)
        return f"course: {self.title} ({where})"


def qkv_version() -> str:
    try:
        return metadata.version("qkv")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def bundled_root() -> Path:
    return Path(str(resources.files("autograder").joinpath("bundled")))


def read_course(root: Path, bundled: bool = False) -> Course:
    path = root / COURSE_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise QkvError(str(root), f"not a course folder: no {COURSE_FILE} (make one with `qkv init`)") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise QkvError(f"{path}{at}", f"bad YAML: {getattr(err, 'problem', None) or err}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise QkvError(str(path), f"cannot read: {err}") from None
    if not isinstance(data, dict):
        raise QkvError(str(path), f"{COURSE_FILE} must be a YAML mapping")
    try:
        config = CourseConfig.model_validate(data)
    except ValidationError as err:
        first = max(err.errors(), key=lambda e: len(e["loc"]))
        field = ".".join(str(p) for p in first["loc"] if not str(p)[:1].isupper() and not str(p).startswith(("literal", "function")))
        raise QkvError(str(path), f"{field or '(top level)'}: {first['msg'].removeprefix('Value error, ')}") from None
    return Course(root.resolve(), config, bundled)


def bundled_course() -> Course:
    return read_course(bundled_root(), bundled=True)


def find_course(explicit: Optional[Union[str, Path]] = None, start: Optional[Path] = None) -> Course:
    """The course a command works in; see the module's docstring for the order."""
    chosen = explicit or os.environ.get(ENVIRONMENT)
    if chosen:
        root = Path(chosen).expanduser()
        if not root.is_dir():
            raise QkvError(str(root), "--course: no such folder")
        return read_course(root)
    folder = (start or Path.cwd()).resolve()
    for candidate in [folder, *folder.parents]:
        if (candidate / COURSE_FILE).is_file():
            return read_course(candidate)
    return bundled_course()
