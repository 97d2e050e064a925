"""A whole-class zip (as an LMS hands it out) in, a folder of its members out, with a note for each one refused.

Only what grading can use is written: `.py` and `.ipynb` files (any case), the layouts' metadata
(`submission_metadata.yml`, `timestamp.txt`) and, in the class zip itself, `.git/HEAD` (a repository's marker);
a student's own zip inside is opened in place (at most MAX_ZIP_DEPTH deep). Hidden folders, `__pycache__`,
`site-packages` and `node_modules` are passed over: a project zipped with its virtual environment is still
one student's work. Every member name is checked one part at a time: absolute paths, `..`, drive letters, NUL
or control bytes, over-long names and symbolic links are refused and never written; a duplicate keeps its first
copy.

Limits fall on whom they concern. A member over its size or compression-ratio limit is refused as that
member's own row; a student's zip with too many members, or whose members write past their budget, is that
student's row. Only what the class zip itself cannot be (more members than any class hands in, more bytes
written than a class could need) refuses the whole zip, with a one-line `QkvError`.

Times are the LMS's, never the student's: a file of the class zip has its zip entry time (read in `zone`, as
zip times have none); a file from inside a student's zip has the class zip's time of that student's zip, since
the times inside it are whatever the student's machine said. A damaged time is no time (`None`), never the
time of unpacking.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Optional

from autograder.errors import QkvError
from autograder.grade.intake import GRADABLE, MAX_SUBMISSION_BYTES, display_name

MAX_MEMBERS = 20_000  # in the class zip: a class of 1,000 handing in 20 files each
MAX_STUDENT_MEMBERS = 100_000  # in a student's zip, read from its end record before it is parsed
MAX_WRITTEN_BYTES = 2_000_000_000  # what is written out of the class zip, all together
MAX_STUDENT_WRITTEN = 20 * MAX_SUBMISSION_BYTES  # what one student's zip may write
MAX_RATIO = 200  # inflated / compressed, for any member over 1 MB inflated
MAX_ZIP_DEPTH = 2  # the class zip, and a student's zip inside it
MAX_NAME_BYTES = 255
MAX_PATH_PARTS = 12
METADATA = ("submission_metadata.yml", "timestamp.txt")
WANTED = (*GRADABLE, ".zip")
PASSED_OVER = ("__pycache__", "site-packages", "node_modules")
SKIPPED_SHOWN = 3  # examples named in a student's zip's one row of members passed over


@dataclass(frozen=True)
class Unpacked:
    folder: Path
    notes: tuple[tuple[str, str, str], ...]  # (member, "rejected" or "skipped", what happened), for the intake report
    times: dict[Path, tuple[Optional[dt.datetime], str]]  # each written file: (its time, aware, or None; whence)


def _member_parts(name: str) -> tuple[Optional[tuple[str, ...]], str]:
    """The member's path as safe parts, or None and why not."""
    text = name.replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        return None, "an absolute path: refused"
    parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None, "a path with '..': refused"
    if any(ord(ch) < 32 or ch == "\x7f" for p in parts for ch in p):
        return None, "a name with control characters: refused"
    if any(len(os.fsencode(p)) > MAX_NAME_BYTES for p in parts):
        return None, f"a name part longer than {MAX_NAME_BYTES} bytes: refused"
    if len(parts) > MAX_PATH_PARTS:
        return None, f"more than {MAX_PATH_PARTS} folders deep: refused"
    if not parts:
        return None, "an empty name: refused"
    return tuple(parts), ""


def _wanted(parts: tuple[str, ...], depth: int) -> bool:
    if depth == 0 and tuple(parts[-2:]) == (".git", "HEAD"):
        return True
    if any(p.startswith(".") or p.lower() in PASSED_OVER for p in parts):
        return False
    name = parts[-1].lower()
    return name.endswith(WANTED) or name in METADATA


def zip_time(info: zipfile.ZipInfo, zone: dt.tzinfo) -> Optional[dt.datetime]:
    """The member's DOS time in `zone`; None when it is no date (1980-00-00, a 30 February)."""
    try:
        return dt.datetime(*info.date_time, tzinfo=zone)
    except (ValueError, TypeError):
        return None


def declared_members(data: bytes) -> Optional[int]:
    """How many members a zip's end record declares, read before the zip is parsed (None: no end record)."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if end < 0 or end + 22 > len(data):
        return None
    count = int.from_bytes(data[end + 10:end + 12], "little")
    locator = data.rfind(b"PK\x06\x07", max(0, end - 20), end)
    if count == 0xFFFF and locator >= 0:  # zip64: the count is in the zip64 end record the locator points at
        record = int.from_bytes(data[locator + 8:locator + 16], "little")
        if data[record:record + 4] == b"PK\x06\x06" and record + 40 <= len(data):
            count = int.from_bytes(data[record + 32:record + 40], "little")
    return count


class _ClassTooLarge(Exception):
    """The class zip writes more than any class could need: refused as a whole."""


@dataclass
class _Budget:
    """What one zip may still write: the class zip's, and inside it each student's zip's own."""

    limit: int
    written: int = 0


@dataclass
class _Zip:
    """One zip being extracted: where its files go, the class zip's time of it, and its passed-over members."""

    archive: zipfile.ZipFile
    into: Path
    depth: int
    prefix: str  # shown before its members' names
    budget: _Budget
    inherited: Optional[tuple[Optional[dt.datetime], str]] = None  # the time of a student's zip, for its files
    passed_over: list[str] = field(default_factory=list)


def _size_problem(info: zipfile.ZipInfo, limit: int) -> str:
    if info.file_size > limit:
        return f"{info.file_size:,} bytes; the limit is {limit:,}: not extracted"
    if info.file_size > 1_000_000 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        return (f"inflates {info.file_size // max(info.compress_size, 1):,} times (the limit is {MAX_RATIO}): "
                "not extracted (a zip bomb?)")
    return ""


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> Optional[bytes]:
    """The member's bytes, read in chunks and never more than `limit` (None when it is larger)."""
    out = io.BytesIO()
    with archive.open(info) as handle:
        while True:
            chunk = handle.read(65536)
            if not chunk:
                return out.getvalue()
            if out.tell() + len(chunk) > limit:
                return None
            out.write(chunk)


def _write_new(path: Path, data: bytes, when: Optional[dt.datetime]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    if when is not None:
        stamp = when.timestamp()
        os.utime(path, (stamp, stamp), follow_symlinks=False)


def _folder_for(into: Path, parts: tuple[str, ...]) -> Path:
    folder = into
    for part in parts[:-1]:  # made one by one: no part may be anything but a folder this made
        folder = folder / part
        if not folder.is_dir() or folder.is_symlink():
            folder.mkdir(mode=0o700)
    return folder


def _extract(job: _Zip, class_budget: _Budget, zone: dt.tzinfo, notes: list[tuple[str, str, str]],
             times: dict[Path, tuple[Optional[dt.datetime], str]]) -> None:
    written: set[tuple[str, ...]] = set()
    for info in job.archive.infolist():
        shown = job.prefix + display_name(info.filename)
        if stat.S_ISLNK(info.external_attr >> 16):
            notes.append((shown, "rejected", "a symbolic link: refused"))
            continue
        if info.is_dir():
            continue
        parts, why = _member_parts(info.filename)
        if parts is None:
            notes.append((shown, "rejected", why))
            continue
        if not _wanted(parts, job.depth):
            if job.depth:
                job.passed_over.append(shown)
            else:
                notes.append((shown, "skipped", "not a .py, .ipynb or .zip file: not extracted"))
            continue
        key = tuple(p.casefold() for p in parts)
        if key in written:
            notes.append((shown, "rejected", "a second member of the same name: the first one is kept"))
            continue
        nested = parts[-1].lower().endswith(".zip")
        limit = MAX_STUDENT_WRITTEN if nested else MAX_SUBMISSION_BYTES
        problem = _size_problem(info, limit)
        if problem:
            notes.append((shown, "rejected", problem))
            continue
        try:
            data = _read_member(job.archive, info, limit)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError) as err:
            notes.append((shown, "rejected", f"cannot be read from the zip ({type(err).__name__}: {str(err)[:80]}): not extracted"))
            continue
        if data is None:
            notes.append((shown, "rejected", f"inflates past {limit:,} bytes: not extracted"))
            continue
        if job.budget.written + len(data) > job.budget.limit:
            notes.append((shown, "rejected", f"its zip has written {job.budget.limit:,} bytes already: not extracted"))
            continue
        job.budget.written += len(data)
        if job.budget is not class_budget:
            class_budget.written += len(data)
        if class_budget.written > MAX_WRITTEN_BYTES:
            raise _ClassTooLarge()
        when = job.inherited or (zip_time(info, zone), "zip entry time")
        if when[0] is None and job.inherited is None:
            when = (None, f"zip entry time damaged ({'-'.join(map(str, info.date_time[:3]))}): no time known")
        target = job.into.joinpath(*parts)
        try:
            _folder_for(job.into, parts)
            if nested:
                _open_student_zip(job, target, shown, data, when, class_budget, zone, notes, times)
            else:
                _write_new(target, data, when[0])
                times[target] = when
            written.add(key)
        except FileExistsError:
            notes.append((shown, "rejected", "clashes with another member's path: not extracted"))
        except OSError as err:
            notes.append((shown, "rejected", f"cannot be written ({err.strerror or err}): not extracted"))
    if job.passed_over:
        examples = ", ".join(name.removeprefix(job.prefix) for name in job.passed_over[:SKIPPED_SHOWN])
        more = " ..." if len(job.passed_over) > SKIPPED_SHOWN else ""
        notes.append((job.prefix.rstrip("/"), "skipped",
                      f"{len(job.passed_over):,} member(s) not extracted (not .py or .ipynb, or in a hidden folder, "
                      f"__pycache__, site-packages or node_modules): {examples}{more}"))


def _open_student_zip(job: _Zip, target: Path, shown: str, data: bytes, when: tuple[Optional[dt.datetime], str],
                      class_budget: _Budget, zone: dt.tzinfo, notes: list[tuple[str, str, str]],
                      times: dict[Path, tuple[Optional[dt.datetime], str]]) -> None:
    if job.depth + 1 >= MAX_ZIP_DEPTH:
        notes.append((shown, "rejected", f"a zip inside a zip {MAX_ZIP_DEPTH} deep: not opened"))
        return
    count = declared_members(data)
    if count is not None and count > MAX_STUDENT_MEMBERS:
        notes.append((shown, "rejected", f"a zip of {count:,} members; the limit is {MAX_STUDENT_MEMBERS:,}: not opened"))
        return
    inner = target.with_name(target.name[:-4] or "unnamed")
    inner.mkdir(mode=0o700)
    source = (when[0], when[1] if when[0] is None else "zip entry time of the student's zip")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            _extract(_Zip(archive, inner, job.depth + 1, f"{shown}/", _Budget(MAX_STUDENT_WRITTEN), source),
                     class_budget, zone, notes, times)
    except zipfile.BadZipFile as err:
        notes.append((shown, "rejected", f"not a zip file ({err}): not opened"))


def unpack_class_zip(path: Path, into: Path, zone: dt.tzinfo = dt.timezone.utc) -> Unpacked:
    """Extract the gradable members of the class zip `path` into the empty folder `into`."""
    source = str(path)
    notes: list[tuple[str, str, str]] = []
    times: dict[Path, tuple[Optional[dt.datetime], str]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            if len(archive.infolist()) > MAX_MEMBERS:
                raise QkvError(source, f"more than {MAX_MEMBERS:,} members: refused")
            budget = _Budget(MAX_WRITTEN_BYTES)
            _extract(_Zip(archive, into, 0, "", budget), budget, zone, notes, times)
    except _ClassTooLarge:
        raise QkvError(source, f"its members inflate past {MAX_WRITTEN_BYTES:,} bytes: refused") from None
    except zipfile.BadZipFile as err:
        raise QkvError(source, f"not a zip file the LMS made: {err}") from None
    except OSError as err:
        raise QkvError(source, f"cannot read the zip: {err.strerror or err}") from None
    return Unpacked(into, tuple(notes), times)
