"""The release's self-check data (selfcheck.json): read and refused in one line when it is not this checker's,
and what it says about whose numbers are whose."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from qkv_runtime import sealed
from qkv_runtime.limits import Limits

HERE = Path(__file__).resolve().parent.parent  # the folder of qkv_check.py, and in a release of selfcheck.json
DATA_FILE = "selfcheck.json"
DATA_FORMAT = sealed.FORMAT
CLASS = "*"  # the student key of class-wide variants
USAGE_ERROR = 2


class UsageError(Exception):
    """Bad command line or missing file: one line for the user, exit code 2."""


def load_data(path: Any = None) -> Dict[str, Any]:
    """The release's self-check data (selfcheck.json)."""
    path = Path(path) if path else HERE / DATA_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: not found; {DATA_FILE} comes with the assignment's release") from None
    except ValueError as err:
        raise UsageError(f"{path}: damaged ({err}); download the release again") from None
    if not isinstance(data, dict) or data.get("format") != DATA_FORMAT:
        raise UsageError(f"{path}: format {data.get('format') if isinstance(data, dict) else '?'} is not "
                         f"{DATA_FORMAT}; this qkv_check.py belongs to another release")
    wrong = sealed.kdf_problem(data.get("kdf"))
    if wrong:
        raise UsageError(f"{path}: damaged ({wrong}); download the release again")
    return data


def limits_of(data: Dict[str, Any]) -> Limits:
    """The grader's limits for this assignment (selfcheck.json carries the bundle's)."""
    return Limits.from_json(data.get("limits"))


def find_problem(data: Dict[str, Any], problem_id: str) -> Dict[str, Any]:
    for problem in data["problems"]:
        if problem["id"] == problem_id:
            return problem
    known = ", ".join(p["id"] for p in data["problems"])
    raise UsageError(f"no problem {problem_id!r} in this assignment (problems: {known})")


def roster(data: Dict[str, Any]) -> set:
    """The student ids this release has digests for (per-student assignments)."""
    ids = set(data.get("prompts", {})) | set(data.get("roster", []))
    for problem in data["problems"]:
        ids.update(k for k in problem.get("digests", {}) if k != CLASS)
    return ids


def student_key(data: Dict[str, Any], student: str) -> Tuple[Optional[str], str]:
    """(the key of this student's digests, or None, and why not)."""
    if data["variants"] != "per_student":
        return CLASS, ""
    if not student:
        return None, 'set STUDENT_ID = "your id" in your file (or pass --student ID): your numbers depend on it'
    if student not in roster(data):
        return None, (f"student id {student!r} is not on this assignment's roster: check STUDENT_ID "
                      "(ask your instructor if it is right)")
    return student, ""
