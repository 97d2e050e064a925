"""Submission intake: a folder of student files in, one `Submission` per student and an `IntakeReport` out.

Never an exception, never a student lost or swapped. Accepted layouts:
`<student>.py`, `<student>.ipynb`, `<student>/` holding the work (at most
MAX_DEPTH folders down), and nbgrader's `submitted/<student>/<NAME>/<file>` when
`submitted/` is all the folder holds.

Ids come from names and depend on nothing else: a name that is already a safe id
(letters, digits, `.`, `-`, `_`) is the id; any other name is cleaned and given a
short digest of the original, so "Alice Smith.py" and "Alice_Smith.py" are two
students whatever the order they arrive in, on every run. Files that cannot be
graded (empty, binary, not UTF-8, too large, not a notebook) get a row with their
status; what is not graded at all (symbolic links, extra files in a student's
folder, folders too deep) is named in the report. Notebooks are read here, in the
trusted process, by `qkv_runtime.notebook`; their code is never run here.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from autograder.errors import QkvError
from autograder.sandbox import Program
from qkv_runtime.notebook import NotebookError, program_steps, read_cells
from qkv_runtime.values import clean_text

MAX_SUBMISSION_BYTES = 5_000_000
MAX_DEPTH = 6  # folders below a student's own folder that are searched
MAX_ENTRIES = 10_000  # entries looked at in one student's folder
MAX_CLASS_ENTRIES = 200_000  # at the top of SUBMISSIONS: over this the folder is refused, never read in part
GRADABLE = (".py", ".ipynb")  # in any case: Windows and old editors write ATTENTION.PY
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path
    digest: str  # sha256 of the file's bytes: unchanged files are not regraded
    program: Optional[Program]  # what to run; None when the file cannot be graded
    status: str  # "ok" or why it cannot be graded: empty, binary, not_utf8, too_large, bad_notebook, missing, unreadable
    message: str
    seed: Optional[int] = None  # the attempt's seed of fresh numbers (grade/written_policy.py); None: the assignment's


@dataclass(frozen=True)
class IntakeNote:
    """Something intake saw and did not grade, or graded with a choice made: for the instructor."""

    where: str  # a display name, safe to print
    what: str


@dataclass(frozen=True)
class IntakeReport:
    submissions: tuple[Submission, ...]
    notes: tuple[IntakeNote, ...] = field(default_factory=tuple)


def display_name(path: Path | str, base: Optional[Path] = None) -> str:
    """A path as text that prints safely: undecodable bytes replaced, control characters escaped."""
    if base is not None:
        try:
            path = Path(path).relative_to(base)
        except ValueError:
            pass
    text = os.fsencode(str(path)).decode("utf-8", "replace")
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}"
                   for ch in clean_text(text, 300))


def safe_student_id(name: str) -> str:
    """The id of a file or folder name: the name itself when it is safe, else a cleaned name and a digest of it."""
    if _SAFE_ID.fullmatch(name) and name not in (".", ".."):
        return name
    raw = os.fsencode(name) if isinstance(name, str) else name
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", raw.decode("utf-8", "replace")).strip("._-")[:48] or "unnamed"
    return f"{cleaned}-{hashlib.sha256(raw).hexdigest()[:6]}"


def work_suffix(name: str) -> Optional[str]:
    """'.py' or '.ipynb' when `name` is a file to grade (in any case, even a bare '.py'), else None."""
    lower = name.lower()
    return next((suffix for suffix in GRADABLE if lower.endswith(suffix)), None)


# ---------------------------------------------------------------- reading one file


def read_submission(student: str, path: Path) -> Submission:
    """One student's file as a Submission; every failure is a status and a one-line message."""
    name = display_name(path.name)

    def rejected(status: str, message: str, digest: str = "") -> Submission:
        return Submission(student, path, digest, None, status, message)

    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            return rejected("unreadable", f"{name} is not a regular file")
        if info.st_size > MAX_SUBMISSION_BYTES:
            return rejected("too_large", f"{name} is {info.st_size:,} bytes; the limit is {MAX_SUBMISSION_BYTES:,}")
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW)) as handle:
            raw = handle.read(MAX_SUBMISSION_BYTES + 1)
    except OSError as err:
        return rejected("unreadable", f"cannot read {name}: {err.strerror or type(err).__name__}")
    return submission_from_bytes(student, path, raw)


def submission_from_bytes(student: str, path: Path, raw: bytes) -> Submission:
    """A file's bytes as a Submission (`path` names it: its suffix says .py or .ipynb); failures as in
    `read_submission`. `qkv serve` calls it on an uploaded file."""
    name = display_name(path.name)

    def rejected(status: str, message: str, digest: str = "") -> Submission:
        return Submission(student, path, digest, None, status, message)

    if len(raw) > MAX_SUBMISSION_BYTES:
        return rejected("too_large", f"{name} is larger than {MAX_SUBMISSION_BYTES:,} bytes")
    digest = hashlib.sha256(raw).hexdigest()
    if not raw.strip():
        return rejected("empty", f"{name} is empty", digest)
    if b"\x00" in raw:
        return rejected("binary", f"{name} is a binary file, not Python source or a notebook", digest)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return rejected("not_utf8", f"{name} is not UTF-8 text (byte {err.start}); save it as UTF-8", digest)
    if work_suffix(path.name) == ".ipynb":
        try:
            steps = program_steps(read_cells(text))
        except NotebookError as err:
            return rejected("bad_notebook", f"{name} is not a valid notebook: {err}", digest)
        return Submission(student, path, digest, Program(steps=tuple(steps)), "ok", "")
    return Submission(student, path, digest, Program(source=text), "ok", "")


# ---------------------------------------------------------------- finding the files


def _walk(folder: Path, notes: list[IntakeNote], base: Path) -> list[Path]:
    """Gradable files under a student's folder, breadth first, without recursion; skips are noted."""
    found: list[Path] = []
    level, seen = [(folder, 0)], 0
    while level:
        current, depth = level.pop(0)
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as err:
            notes.append(IntakeNote(display_name(current, base), f"not read: {err.strerror or err}"))
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                notes.append(IntakeNote(display_name(folder, base), f"more than {MAX_ENTRIES:,} entries: the rest not searched"))
                return found
            path = Path(entry.path)
            if entry.name.startswith(".") or entry.name == "__pycache__":
                continue
            if entry.is_symlink():
                notes.append(IntakeNote(display_name(path, base), "a symbolic link: not followed, not graded"))
            elif entry.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_DEPTH:
                    notes.append(IntakeNote(display_name(path, base), f"more than {MAX_DEPTH} folders deep: not searched"))
                else:
                    level.append((path, depth + 1))
            elif entry.is_file(follow_symlinks=False) and work_suffix(entry.name):
                found.append(path)
    return found


def _rank(path: Path, module: Optional[str]) -> tuple:
    """Which of a student's files is the work: the assignment's module, then .py before notebooks,
    then anything but an editor's default name, then the shallowest, then by name."""
    stem = path.stem.lower()
    return (module is None or stem != module.lower(), work_suffix(path.name) != ".py", stem.startswith(("untitled", "copy of")),
            len(path.parts), path.name)


def _pick(folder: Path, module: Optional[str], notes: list[IntakeNote], base: Path) -> Optional[Path]:
    candidates = sorted(_walk(folder, notes, base), key=lambda p: _rank(p, module))
    if len(candidates) > 1:
        others = ", ".join(display_name(p, folder) for p in candidates[1:4]) + (" ..." if len(candidates) > 4 else "")
        notes.append(IntakeNote(display_name(candidates[0], base), f"graded; also in the folder, not graded: {others}"))
    return candidates[0] if candidates else None


def class_entries(folder: Path) -> list[os.DirEntry]:
    """The top of SUBMISSIONS, sorted by name; a folder too large to read whole is refused, since reading part of
    it would list the students past the cut as having handed in nothing."""
    entries = []
    with os.scandir(folder) as scan:
        for entry in scan:
            entries.append(entry)
            if len(entries) > MAX_CLASS_ENTRIES:
                raise QkvError(display_name(folder), f"more than {MAX_CLASS_ENTRIES:,} entries: refused, not read in "
                                                     "part (split the class into several folders)")
    return sorted(entries, key=lambda e: e.name)


def _nbgrader_root(folder: Path) -> Optional[Path]:
    """nbgrader's `submitted/` when it is all the folder holds (a student's folder of that name is just a student)."""
    submitted = folder / "submitted"
    if not submitted.is_dir() or submitted.is_symlink():
        return None
    others = [e for e in os.scandir(folder) if not e.name.startswith(".") and e.name != "submitted"]
    return submitted if not others else None


def discover(folder: Path, module: Optional[str] = None) -> tuple[list[tuple[str, Optional[Path], Path]], list[IntakeNote]]:
    """(student id, the file to grade or None, the entry it came from) per student, and the notes."""
    notes: list[IntakeNote] = []
    base = folder
    root = _nbgrader_root(folder) or folder
    found: dict[str, tuple[Optional[Path], Path]] = {}
    try:
        entries = class_entries(root)
    except OSError as err:
        return [], [IntakeNote(display_name(root), f"not read: {err.strerror or err}")]
    work: Optional[Path]  # None: a student's folder that holds no work
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            notes.append(IntakeNote(display_name(path, base), "a symbolic link: not followed, not graded"))
            continue
        if entry.is_file(follow_symlinks=False):
            if not work_suffix(entry.name):
                notes.append(IntakeNote(display_name(path, base), "not a .py or .ipynb file: not graded"))
                continue
            student, work = safe_student_id(path.stem), path
        elif entry.is_dir(follow_symlinks=False):
            student, work = safe_student_id(entry.name), _pick(path, module, notes, base)
        else:
            notes.append(IntakeNote(display_name(path, base), "not a file or folder: not graded"))
            continue
        if student in found:
            # only two names equal but for case-insensitive file systems, or a digest collision, get here
            notes.append(IntakeNote(display_name(path, base), f"has the same id {student!r} as "
                                    f"{display_name(found[student][1], base)}: not graded, rename one of them"))
            continue
        found[student] = (work, path)
    return [(s, work, entry) for s, (work, entry) in found.items()], notes


def intake(folder: Path, module: Optional[str] = None) -> IntakeReport:
    students, notes = discover(folder, module)
    submissions = []
    for student, path, entry in students:
        if path is None:
            submissions.append(Submission(student, entry, "", None, "missing",
                                          "no .py or .ipynb file in the submission folder"))
        else:
            submissions.append(read_submission(student, path))
    return IntakeReport(tuple(submissions), tuple(notes))


# the rules above, for the class intake (autograder/classroom/layouts.py), which finds entries its own way
gradable_files = _walk
pick_work = _pick
nbgrader_root = _nbgrader_root
