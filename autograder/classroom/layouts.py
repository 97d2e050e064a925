"""LMS download layouts: a folder as Canvas, Moodle, GitHub Classroom, nbgrader or Gradescope hands it out in,
one `Entry` per hand-in out (the file to grade, who the LMS says handed it in, when), and notes.

Recognised, entry by entry at the top of the folder:

- Canvas "Download Submissions": `name[_LATE]_userid_submissionid_file` (files, or folders from a zip
  the student uploaded); the user id is the claim, `_LATE` is kept as a marker.
- Moodle "Download all submissions": `Full Name_participantid_assignsubmission_file_/...` folders, or the
  same prefix on flat files; the participant id, then the full name, are the claims. A full name is the
  student's to choose: when it (or a flat file's own name) holds another `_id_assignsubmission_` the name
  can be read more than one way, and every reading is a claim, so that one naming a classmate is a conflict.
- GitHub Classroom: repositories (`.git` inside) named `assignment-username`; the username is the claim,
  found as the longest roster username the name ends with (usernames have hyphens of their own), else after
  the prefix all repositories share; the time is that of the commit HEAD names (`commits`).
- An LMS's naming is asked before `.git`: a student's upload that holds a repository is still that
  student's Canvas or Moodle hand-in.
- nbgrader: `submitted/<student>/<assignment>/...` when `submitted/` is all there is, with the time of
  `timestamp.txt`.
- Gradescope export: `submission_metadata.yml` beside `submission_<id>/` folders; each submitter's SID
  and email are claims, `:created_at:` the time. A group submission gives one entry per submitter.
- Anything else is plain: a file, a student's folder, or (with a roster) a folder of several students' files.

File names are read as bytes and shown with `display_name`; metadata files are read bounded and a
damaged one is a note, never an exception. Nothing here opens a student's file.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Optional

import yaml

from autograder.classroom.roster import IdKind
from autograder.classroom.commits import commit_time
from autograder.grade.intake import (
    MAX_ENTRIES,
    IntakeNote,
    class_entries,
    display_name,
    gradable_files,
    nbgrader_root,
    pick_work,
    work_suffix,
)

MAX_METADATA_BYTES = 5_000_000
MAX_METADATA_NODES = 200_000
CANVAS = re.compile(r"(?P<name>[^_]+?)(?P<late>_LATE)?_(?P<uid>\d+)_(?P<sub>\d+)_(?P<file>.+)", re.S)
_MOODLE_MARK = re.compile(r"(?=(_(\d+)_assignsubmission_([a-z]+)_))")
GRADESCOPE_FOLDER = re.compile(r"submission_\d+")


@dataclass(frozen=True)
class Claim:
    """What the LMS says about who handed an entry in: matched to the roster by `key`."""

    source: str  # e.g. "Canvas user id"
    value: str
    key: str  # an IdKind's column ("canvas_user_id", "moodle_participant_id": Moodle's, per assignment, never
    # compared), "name", "email", "id" or "github"


@dataclass(frozen=True)
class MoodleName:
    """One reading of a Moodle download's name."""

    name: str  # the full name
    pid: str  # the participant id
    plugin: str  # file, onlinetext, ...
    rest: str  # a flat file's own name ('' for a folder)


@dataclass(frozen=True)
class Entry:
    layout: str  # canvas, moodle, github-classroom, nbgrader, gradescope, plain
    origin: Path  # what at the top of SUBMISSIONS it came from
    work: Optional[Path]  # the file to grade; None when the entry holds none
    claims: tuple[Claim, ...] = ()
    names: tuple[str, ...] = ()  # file and folder names that may be ids (the last resort)
    time: Optional[dt.datetime] = None
    time_source: str = ""
    late_marker: bool = False
    note: str = ""


@dataclass
class Found:
    entries: list[Entry] = field(default_factory=list)
    notes: list[IntakeNote] = field(default_factory=list)


# ------------------------------------------------------------------ bounded metadata


def read_small(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file, never through a symbolic link; raises OSError or ValueError."""
    with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW)) as handle:
        if not os.path.isfile(path):
            raise ValueError("not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit:,} bytes")
    return data


def parse_time(value: Any) -> Optional[dt.datetime]:
    """An LMS's time stamp (a datetime, or text such as '2026-12-18 23:10:05.123456789 -0800' or '... UTC')."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    if not isinstance(value, str) or len(value) > 64:
        return None
    text = value.strip()
    zone = dt.timezone.utc
    if text.endswith((" UTC", " GMT", "Z")):
        text = text.rstrip("Z").removesuffix(" UTC").removesuffix(" GMT")
    else:
        match = re.fullmatch(r"(.*?)\s*([+-])(\d{2}):?(\d{2})", text)
        if match:
            text = match.group(1)
            sign = 1 if match.group(2) == "+" else -1
            zone = dt.timezone(sign * dt.timedelta(hours=int(match.group(3)), minutes=int(match.group(4))))
    text = re.sub(r"(\.\d{6})\d+$", r"\1", text)  # nanoseconds: Python keeps microseconds
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=zone)


def _plain(value: Any, budget: list[int], depth: int = 0) -> Any:
    """YAML data as plain dicts, lists and scalars with ':'-less keys; bounded in nodes and depth (aliases too)."""
    budget[0] -= 1
    if budget[0] < 0 or depth > 20:
        raise ValueError("too deeply nested or too large")
    if isinstance(value, dict):
        return {str(k).lstrip(":"): _plain(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, budget, depth + 1) for v in value]
    return value


def gradescope_metadata(path: Path) -> tuple[dict[str, Any], str]:
    """submission_metadata.yml as {folder: {submitters, created_at}}, and a note when it is damaged."""
    try:
        data = yaml.safe_load(read_small(path, MAX_METADATA_BYTES).decode("utf-8", "replace"))
        data = _plain(data, [MAX_METADATA_NODES])
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        return {}, "not valid YAML" + (f" (line {mark.line + 1})" if mark else "")
    except (OSError, ValueError, RecursionError) as err:
        return {}, f"not read: {err}"
    if not isinstance(data, dict):
        return {}, "not a mapping of submission folders"
    return {k: v for k, v in data.items() if isinstance(v, dict)}, ""


def _gradescope_claims(meta: dict[str, Any]) -> list[tuple[Claim, ...]]:
    """One tuple of claims per submitter (a group submission has several)."""
    submitters = meta.get("submitters")
    out = []
    for person in submitters if isinstance(submitters, list) else []:
        if not isinstance(person, dict):
            continue
        claims = []
        for key, source, roster_key in (("sid", "Gradescope SID", "id"), ("email", "Gradescope email", "email"),
                                        ("name", "Gradescope name", "name")):
            value = person.get(key)
            if isinstance(value, (str, int)) and str(value).strip():
                claims.append(Claim(source, str(value).strip()[:200], roster_key))
        if claims:
            out.append(tuple(claims))
    return out


def nbgrader_time(folder: Path) -> Optional[dt.datetime]:
    try:
        return parse_time(read_small(folder / "timestamp.txt", 200).decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------- the layouts


def _entries_of(root: Path, found: Found, top: bool = False) -> list[os.DirEntry]:
    """The entries of a folder; at the top of SUBMISSIONS all of them (or a refusal), below it at most MAX_ENTRIES."""
    try:
        entries = class_entries(root) if top else sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as err:
        found.notes.append(IntakeNote(display_name(root), f"not read: {err.strerror or err}"))
        return []
    if not top and len(entries) > MAX_ENTRIES:
        found.notes.append(IntakeNote(display_name(root), f"more than {MAX_ENTRIES:,} entries: the rest not read"))
        entries = entries[:MAX_ENTRIES]
    kept = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if entry.is_symlink():
            found.notes.append(IntakeNote(display_name(entry.path, root), "a symbolic link: not followed, not graded"))
            continue
        kept.append(entry)
    return kept


def _work_in(path: Path, is_dir: bool, module: Optional[str], found: Found, base: Path) -> Optional[Path]:
    return pick_work(path, module, found.notes, base) if is_dir else path


def _is_repo(entry: os.DirEntry) -> bool:
    return entry.is_dir(follow_symlinks=False) and os.path.lexists(os.path.join(entry.path, ".git"))


def _repo_prefix(names: list[str], assignment: str) -> str:
    if names and all(n.startswith(f"{assignment}-") for n in names):
        return f"{assignment}-"
    if len(names) >= 2:
        common = os.path.commonprefix(names)
        return common[: common.rfind("-") + 1] if "-" in common else ""
    return ""


def repo_user(name: str, prefix: str, usernames: Collection[str]) -> str:
    """The username a repository is named after: the longest known username the name ends with after a
    hyphen (or is), else what follows the prefix the class's repositories share."""
    folded = name.casefold()
    known = [u for u in usernames if u and (folded == u or folded.endswith(f"-{u}"))]
    if known:
        longest = max(known, key=len)
        return name[len(name) - len(longest):]
    return name[len(prefix):] or name


def _gradescope(root: Path, module: Optional[str], found: Found) -> None:
    meta, problem = gradescope_metadata(root / "submission_metadata.yml")
    if problem:
        found.notes.append(IntakeNote("submission_metadata.yml", f"{problem}: folders matched by name only"))
    for entry in _entries_of(root, found):
        path = Path(entry.path)
        if entry.name == "submission_metadata.yml":
            continue
        if not (entry.is_dir(follow_symlinks=False) and GRADESCOPE_FOLDER.fullmatch(entry.name)):
            _plain_entry(entry, root, module, None, found)
            continue
        work = _work_in(path, True, module, found, root)
        info = meta.get(entry.name, {})
        time = parse_time(info.get("created_at"))
        people = _gradescope_claims(info)
        if not people:
            note = "not in submission_metadata.yml" if not info else "no submitters in submission_metadata.yml"
            found.entries.append(Entry("gradescope", path, work, (), (), time, "Gradescope metadata" if time else "",
                                       note=note))
        for claims in people:
            note = f"a group submission of {len(people)} students" if len(people) > 1 else ""
            found.entries.append(Entry("gradescope", path, work, claims, (), time,
                                       "Gradescope metadata" if time else "", note=note))


def _nbgrader(submitted: Path, root: Path, module: Optional[str], assignment: str, found: Found) -> None:
    for entry in _entries_of(submitted, found):
        path = Path(entry.path)
        if not entry.is_dir(follow_symlinks=False):
            found.notes.append(IntakeNote(display_name(path, root), "not a student's folder in submitted/: not graded"))
            continue
        folders = [Path(e.path) for e in _entries_of(path, found) if e.is_dir(follow_symlinks=False)]
        chosen = next((f for f in folders if f.name == assignment), folders[0] if len(folders) == 1 else None)
        time = nbgrader_time(chosen) if chosen else None
        work = pick_work(chosen or path, module, found.notes, root)
        found.entries.append(Entry("nbgrader", path, work, (Claim("nbgrader student", entry.name, "id"),), (),
                                   time, "nbgrader timestamp.txt" if time else ""))


def _plain_entry(entry: os.DirEntry, root: Path, module: Optional[str],
                 is_student: Optional[Callable[[str], bool]], found: Found) -> None:
    path = Path(entry.path)
    if entry.is_file(follow_symlinks=False):
        if not work_suffix(entry.name):
            found.notes.append(IntakeNote(display_name(path, root), "not a .py or .ipynb file: not graded"))
            return
        found.entries.append(Entry("plain", path, path, (), (path.stem,)))
    elif entry.is_dir(follow_symlinks=False):
        if is_student is None or is_student(entry.name):
            found.entries.append(Entry("plain", path, pick_work(path, module, found.notes, root), (), (entry.name,)))
            return
        files = gradable_files(path, found.notes, root)  # a folder of several students' files
        if not files:
            found.entries.append(Entry("plain", path, None, (), (entry.name,)))
        for file in files:
            found.entries.append(Entry("plain", file, file, (), (file.stem, entry.name)))
    else:
        found.notes.append(IntakeNote(display_name(path, root), "not a file or folder: not graded"))


def find_entries(root: Path, module: Optional[str], assignment: str,
                 is_student: Optional[Callable[[str], bool]] = None, usernames: Collection[str] = ()) -> Found:
    """Every hand-in at the top of `root`; `is_student(name)` says whether a folder name is a roster id
    (None: no roster, every folder is one student's); `usernames`: the roster's GitHub usernames and ids, casefolded."""
    found = Found()
    if os.path.isfile(root / "submission_metadata.yml"):
        _gradescope(root, module, found)
        return found
    submitted = nbgrader_root(root)
    if submitted is not None:
        _nbgrader(submitted, root, module, assignment, found)
        return found
    entries = _entries_of(root, found, top=True)
    canvas: dict[str, list[tuple[os.DirEntry, re.Match]]] = {}
    moodle: list[tuple[os.DirEntry, list[MoodleName]]] = []
    repos: list[os.DirEntry] = []
    for entry in entries:
        name = entry.name
        readings = moodle_readings(name)
        if readings and entry.is_dir(follow_symlinks=False):
            # Moodle ends a folder's name with the marker: the reading that leaves nothing after it is the one
            readings = [r for r in readings if not r.rest][-1:] or readings
        if readings:
            moodle.append((entry, readings))
        elif (match := CANVAS.fullmatch(name)) is not None and (
                entry.is_dir(follow_symlinks=False) or work_suffix(match.group("file"))):
            canvas.setdefault(match.group("uid"), []).append((entry, match))
        elif _is_repo(entry):
            repos.append(entry)
        else:
            _plain_entry(entry, root, module, is_student, found)
    prefix = _repo_prefix([e.name for e in repos], assignment)
    for entry in repos:
        path = Path(entry.path)
        user = repo_user(entry.name, prefix, usernames)
        when, source = commit_time(path)
        found.entries.append(Entry("github-classroom", path, pick_work(path, module, found.notes, root),
                                   (Claim("GitHub username", user, "github"),), (user,), when, source))
    for items in canvas.values():
        _group("canvas", items, root, module, found, lambda m: (Claim("Canvas user id", m.group("uid"), IdKind.CANVAS_USER_ID.value),),
               late=lambda m: bool(m.group("late")))
    for entry, readings in moodle:
        plugin = readings[0].plugin
        if plugin != "file":
            found.notes.append(IntakeNote(display_name(entry.path, root), f"Moodle's {plugin} submission: not graded"))
            continue
        claims = tuple(dict.fromkeys(claim for m in readings for claim in (
            Claim("Moodle participant id", m.pid, IdKind.MOODLE_PARTICIPANT_ID.value), Claim("Moodle full name", m.name, "name"))))
        note = (f"its name reads {len(readings)} ways: " + ", ".join(f"{m.name!r} {m.pid}" for m in readings)
                if len(readings) > 1 else "")
        _group("moodle", [(entry, readings[0])], root, module, found, lambda _: claims, note=note)
    return found


def moodle_readings(name: str) -> list[MoodleName]:
    """Every way to read `name` as Moodle's `Full Name_participantid_assignsubmission_plugin_rest`."""
    readings = []
    for marker in _MOODLE_MARK.finditer(name):  # a lookahead: markers may share an underscore
        if marker.start() > 0:
            end = marker.start() + len(marker.group(1))
            readings.append(MoodleName(name[:marker.start()], marker.group(2), marker.group(3), name[end:]))
    return readings


def _group(layout: str, items: list[tuple[os.DirEntry, Any]], root: Path, module: Optional[str], found: Found,
           claims: Callable[[Any], tuple[Claim, ...]], late: Optional[Callable[[Any], bool]] = None,
           note: str = "") -> None:
    """An entry for each file (or folder) an LMS names after one student; which one counts is decided
    later, with every other student's duplicates (the latest by time)."""
    for entry, match in items:
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            work = pick_work(path, module, found.notes, root)
        elif work_suffix(entry.name):
            work = path
        else:
            found.notes.append(IntakeNote(display_name(path, root), "not a .py or .ipynb file: not graded"))
            continue
        found.entries.append(Entry(layout, path, work, claims(match), (), late_marker=bool(late and late(match)),
                                   note=note))
