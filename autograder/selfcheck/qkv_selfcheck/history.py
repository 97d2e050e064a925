"""What the self-check remembers between runs: each run's per-problem results in a history file of the student's
release folder (owner-only, written whole and atomically), replayed by the practice rule (qkv_runtime.practice, the
one the service and `qkv practice` use) into mastery per problem and topic, the misconceptions held and the problem
to work on next. The release has no review scheduler, so no review is ever due here: the next problem targets a
held misconception, else the weakest topic.

Only facts are kept (the problem, when, the share of its checks passed, the misconceptions named), never an answer.
The reader is bounded (MAX_BYTES, MAX_TRIES, each field's type and length); a file that is too large, damaged, not a
self-check history, or another assignment's or student's is put aside (renamed, never deleted) with one line, and
the history starts afresh.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from qkv_runtime import practice
from qkv_runtime.files import Unusable, read_bounded

from .data import CLASS
from .outcomes import PASS, TODO, ProblemResult

FILE = "qkv-selfcheck-history.json"
FORMAT = "qkv-selfcheck-history"
VERSION = 1
MAX_BYTES = 2 * 1024 * 1024
MAX_TRIES = 10_000  # hundreds of runs of a whole assignment; a file with more is not one this checker wrote
_MAX_TEXT = 2000
_MAX_NAMED = 50


@dataclass(frozen=True)
class Loaded:
    tries: Tuple[practice.Try, ...]
    message: Optional[str] = None  # one line when the file could not be used and was put aside


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= _MAX_TEXT:
        raise Unusable(f"is damaged ({where}: not a text of 1 to {_MAX_TEXT} characters)")
    return value


def _try_of(raw: Any, n: int) -> practice.Try:
    where = f"tries.{n}"
    if not isinstance(raw, dict) or set(raw) != {"problem", "at", "score", "misconceptions"}:
        raise Unusable(f"is damaged ({where}: not a try)")
    score = raw["score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not (0.0 <= score <= 1.0):
        raise Unusable(f"is damaged ({where}.score: not a share from 0 to 1)")
    try:
        at = datetime.fromisoformat(_text(raw["at"], where + ".at"))
    except ValueError:
        raise Unusable(f"is damaged ({where}.at: not a time)") from None
    if at.tzinfo is None:
        raise Unusable(f"is damaged ({where}.at: a time without its zone)")
    named = raw["misconceptions"]
    if not isinstance(named, list) or len(named) > _MAX_NAMED:
        raise Unusable(f"is damaged ({where}.misconceptions: not a list of at most {_MAX_NAMED})")
    return practice.Try(_text(raw["problem"], where + ".problem"), 0, at, float(score),
                        tuple(_text(m, f"{where}.misconceptions") for m in named))


def _decode(data: bytes, assignment: str, student: str) -> Tuple[practice.Try, ...]:
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Unusable("is damaged (not JSON)") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or raw.get("version") != VERSION:
        raise Unusable("is not a qkv self-check history (or one of a newer qkv)")
    if raw.get("assignment") != assignment:
        raise Unusable("is the history of another assignment")
    if raw.get("student") != student:
        raise Unusable("is the history of another student id")
    tries = raw.get("tries")
    if not isinstance(tries, list) or len(tries) > MAX_TRIES:
        raise Unusable(f"is damaged (tries: not a list of at most {MAX_TRIES})")
    return tuple(_try_of(t, n) for n, t in enumerate(tries))


def _put_aside(path: Path) -> Path:
    aside = path.with_name(f"{path.name}.aside-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%f')}")
    os.replace(str(path), str(aside))
    return aside


def load(path: Path, assignment: str, student: str) -> Loaded:
    """The tries kept in `path`; none when there is no file, or (with a one-line message) when it is unusable."""
    try:
        data = read_bounded(path, MAX_BYTES, "a self-check history")
        return Loaded(() if data is None else _decode(data, assignment, student))
    except Unusable as why:
        try:
            kept = f"kept as {_put_aside(path).name}"
        except OSError as err:
            kept = f"left where it is ({err.strerror or err})"
        return Loaded((), f"{path}: {why}; {kept}; starting a fresh history")


def save(path: Path, assignment: str, student: str, tries: Sequence[practice.Try]) -> Optional[str]:
    """Write the history whole: owner-only whatever the umask, and atomically (a temporary file renamed over it),
    so a crash leaves the old history or the new one. None, or one line saying why it could not be written."""
    body = json.dumps({"format": FORMAT, "version": VERSION, "assignment": assignment, "student": student,
                       "tries": [{"problem": t.problem_id, "at": t.at.isoformat(), "score": t.score,
                                  "misconceptions": list(t.misconceptions)} for t in list(tries)[-MAX_TRIES:]]},
                      indent=1).encode("utf-8")
    temporary = None
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))  # mode 0600
        with os.fdopen(fd, "wb") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, str(path))
    except OSError as err:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        return f"{path}: cannot be written ({err.strerror or err}); this run is not remembered"
    return None


# ------------------------------------------------------------ the rule's view of the release


def detects(problem: Dict[str, Any], key: str) -> frozenset:
    """The misconceptions a wrong answer to `problem` can name here: the bank's messages, as the checks name them."""
    if problem["code"]:
        messages = list(problem.get("misconceptions", {}).values())
        for _, _, upstream in problem.get("builds_on", []):
            messages += list(upstream.values())
        return frozenset(messages)
    entries = [problem, problem.get("follow_up") or {}]
    return frozenset(m["message"] for entry in entries for who in (key, CLASS)
                     for m in entry.get("misconceptions", {}).get(who, []))


def catalogue(data: Dict[str, Any], key: str) -> Tuple[practice.PracticeProblem, ...]:
    return tuple(practice.PracticeProblem(p["id"], p.get("topic") or data["assignment"], detects(p, key))
                 for p in data["problems"])


def run_tries(results: Sequence[ProblemResult], at: datetime) -> List[practice.Try]:
    """One try per problem this run answered (a problem not answered at all is no try): the share of its checks
    passed, and the misconceptions its wrong answers named, in the order named."""
    tries = []
    for result in results:
        outcomes = result.outcomes
        if not outcomes or all(o.status == TODO for o in outcomes):
            continue
        share = 1.0 if result.status == PASS else sum(o.passed for o in outcomes) / len(outcomes)
        # what the reader accepts back: the names come from the child that ran the student's code
        named = tuple(dict.fromkeys(n for o in outcomes for n in o.named if 0 < len(n) <= _MAX_TEXT))[:_MAX_NAMED]
        tries.append(practice.Try(result.problem["id"], 0, at, round(share, 6), named))
    return tries


def _bar(mastery: float) -> str:
    filled = int(math.floor(10 * mastery + 0.5))
    return "#" * filled + "." * (10 - filled)


def memory_lines(problems: Sequence[practice.PracticeProblem], tries: Sequence[practice.Try], path: Path) -> List[str]:
    """What the history says now: mastery by problem and by topic, the misconceptions held, what to work on next."""
    memory = practice.remember(problems, tries)
    runs = len({t.at for t in tries})
    lines = ["", f"Your self-check history ({path.name} beside qkv_check.py: {runs} run{'s' if runs != 1 else ''}, "
                 f"{len(tries)} tr{'y' if len(tries) == 1 else 'ies'}; a run counts each problem you answered)"]
    width = max([len(p.id) for p in problems] + [7])
    lines.append("Mastery by problem (it grows with right answers in a row and falls back on a wrong one):")
    for problem in problems:
        memo = memory.of(problem.id)
        lines.append(f"  {_bar(memo.mastery)} {memo.mastery:4.0%}  {problem.id:<{width}}  "
                     f"({memo.tries} tr{'y' if memo.tries == 1 else 'ies'})")
    topics = memory.topic_mastery(problems)
    if len(topics) > 1:
        lines.append("Mastery by topic:")
        lines += [f"  {_bar(m)} {m:4.0%}  {topic}" for topic, m in topics.items()]
    lines += practice.held_lines(memory)
    chosen = practice.next_problem(problems, memory)  # no scheduler here: no review is ever due
    if chosen is not None:
        why = chosen.reason.value + (f": {chosen.misconception}" if chosen.misconception else "")
        lines.append(f"Work next on: {chosen.problem_id} (why: {why})")
    return lines


def remember_run(data: Dict[str, Any], key: str, results: Sequence[ProblemResult], folder: Path,
                 now: datetime) -> List[str]:
    """This run's results added to the history in `folder` (resumed from it, or started afresh with one line), and
    what the history says now."""
    path = folder / FILE
    loaded = load(path, data["assignment"], key)
    lines = [loaded.message] if loaded.message else []
    fresh = run_tries(results, now)
    tries = (loaded.tries + tuple(fresh))[-MAX_TRIES:]
    if fresh:
        unsaved = save(path, data["assignment"], key, tries)
        lines += [unsaved] if unsaved else []
    if tries:
        lines += memory_lines(catalogue(data, key), tries, path)
    return lines
