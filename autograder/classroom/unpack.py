"""A whole-class zip (as an LMS hands it out) in, a folder of its members out, with a note for each one refused.

Only what grading can use is written: `.py` and `.ipynb` files, the layouts' metadata
(`submission_metadata.yml`, `timestamp.txt`) and `.git/HEAD` (a repository's marker); a student's own zip inside is
opened in place (at most MAX_ZIP_DEPTH deep). Every member name is checked one part at a time:
absolute paths, `..`, drive letters, NUL or control bytes, over-long names and symbolic links are
refused and never written; a duplicate keeps its first copy. Bounded: members, bytes per member,
bytes in all, and the compression ratio; a zip that would inflate past the limits is refused as a
whole with a one-line `QkvError`. Each written file's mtime is its zip entry's time (read in `zone`,
as zip times have none).
"""

from __future__ import annotations

import datetime as dt
import io
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional

from autograder.errors import QkvError
from autograder.grade.intake import MAX_SUBMISSION_BYTES, display_name

MAX_MEMBERS = 20_000
MAX_TOTAL_BYTES = 2_000_000_000  # what the members of one class zip may inflate to, all together
MAX_WRITTEN_BYTES = 500_000_000  # what is written out of it
MAX_RATIO = 200  # inflated / compressed, for any member over 1 MB inflated
MAX_ZIP_DEPTH = 2  # the class zip, and a student's zip inside it
MAX_NAME_BYTES = 255
MAX_PATH_PARTS = 12
METADATA = ("submission_metadata.yml", "timestamp.txt")
WANTED = (".py", ".ipynb", ".zip")


@dataclass(frozen=True)
class Unpacked:
    folder: Path
    notes: tuple[tuple[str, str, str], ...]  # (member, "rejected" or "skipped", what happened), for the intake report
    times: dict[Path, dt.datetime]  # each written file's zip entry time (aware)


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


def _wanted(parts: tuple[str, ...]) -> bool:
    name = parts[-1].lower()
    return name.endswith(WANTED) or name in METADATA or tuple(parts[-2:]) == (".git", "HEAD")


def _zip_time(info: zipfile.ZipInfo, zone: dt.tzinfo) -> Optional[dt.datetime]:
    try:
        return dt.datetime(*info.date_time, tzinfo=zone)
    except ValueError:
        return None


class _Budget:
    def __init__(self) -> None:
        self.members = 0
        self.declared = 0
        self.written = 0


def _check_sizes(source: str, infos: list[zipfile.ZipInfo], budget: _Budget) -> None:
    budget.members += len(infos)
    if budget.members > MAX_MEMBERS:
        raise QkvError(source, f"more than {MAX_MEMBERS:,} members: refused")
    for info in infos:
        budget.declared += info.file_size
        if budget.declared > MAX_TOTAL_BYTES:
            raise QkvError(source, f"its members inflate past {MAX_TOTAL_BYTES:,} bytes: refused (a zip bomb?)")
        if info.file_size > 1_000_000 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise QkvError(source, f"{display_name(info.filename)} inflates {info.file_size // max(info.compress_size, 1):,} "
                                   f"times (the limit is {MAX_RATIO}): refused (a zip bomb?)")


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


def _extract(archive: zipfile.ZipFile, source: str, into: Path, depth: int, zone: dt.tzinfo, budget: _Budget,
             notes: list[tuple[str, str, str]], times: dict[Path, dt.datetime], prefix: str) -> None:
    infos = archive.infolist()
    _check_sizes(source, infos, budget)
    written: set[tuple[str, ...]] = set()
    for info in infos:
        shown = prefix + display_name(info.filename)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            notes.append((shown, "rejected", "a symbolic link: refused"))
            continue
        if info.is_dir():
            continue
        parts, why = _member_parts(info.filename)
        if parts is None:
            notes.append((shown, "rejected", why))
            continue
        if not _wanted(parts):
            notes.append((shown, "skipped", "not a .py, .ipynb or .zip file: not extracted"))
            continue
        key = tuple(p.casefold() for p in parts)
        if key in written:
            notes.append((shown, "rejected", "a second member of the same name: the first one is kept"))
            continue
        nested = parts[-1].lower().endswith(".zip")
        limit = MAX_SUBMISSION_BYTES * (20 if nested else 1)
        if info.file_size > limit:
            notes.append((shown, "rejected", f"{info.file_size:,} bytes; the limit is {limit:,}: not extracted"))
            continue
        try:
            data = _read_member(archive, info, limit)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError) as err:
            notes.append((shown, "rejected", f"cannot be read from the zip ({type(err).__name__}: {str(err)[:80]}): not extracted"))
            continue
        if data is None:
            notes.append((shown, "rejected", f"inflates past {limit:,} bytes: not extracted"))
            continue
        budget.written += len(data)
        if budget.written > MAX_WRITTEN_BYTES:
            raise QkvError(source, f"its members inflate past {MAX_WRITTEN_BYTES:,} bytes: refused")
        target = into.joinpath(*parts)
        try:
            folder = into
            for part in parts[:-1]:  # made one by one: no part may be anything but a folder this made
                folder = folder / part
                if not folder.is_dir() or folder.is_symlink():
                    folder.mkdir(mode=0o700)
            when = _zip_time(info, zone)
            if nested:
                if depth + 1 >= MAX_ZIP_DEPTH:
                    notes.append((shown, "rejected", f"a zip inside a zip {MAX_ZIP_DEPTH} deep: not opened"))
                    continue
                inner = target.with_name(target.name[:-4] or "unnamed")
                inner.mkdir(mode=0o700)
                try:
                    with zipfile.ZipFile(io.BytesIO(data)) as nested_zip:
                        _extract(nested_zip, source, inner, depth + 1, zone, budget, notes, times,
                                 prefix=f"{shown}/")
                except zipfile.BadZipFile as err:
                    notes.append((shown, "rejected", f"not a zip file ({err}): not opened"))
            else:
                _write_new(target, data, when)
                if when is not None:
                    times[target] = when
            written.add(key)
        except FileExistsError:
            notes.append((shown, "rejected", "clashes with another member's path: not extracted"))
        except OSError as err:
            notes.append((shown, "rejected", f"cannot be written ({err.strerror or err}): not extracted"))


def unpack_class_zip(path: Path, into: Path, zone: dt.tzinfo = dt.timezone.utc) -> Unpacked:
    """Extract the gradable members of the class zip `path` into the empty folder `into`."""
    source = str(path)
    notes: list[tuple[str, str, str]] = []
    times: dict[Path, dt.datetime] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            _extract(archive, source, into, 0, zone, _Budget(), notes, times, prefix="")
    except zipfile.BadZipFile as err:
        raise QkvError(source, f"not a zip file the LMS made: {err}") from None
    except OSError as err:
        raise QkvError(source, f"cannot read the zip: {err.strerror or err}") from None
    return Unpacked(into, tuple(notes), times)
