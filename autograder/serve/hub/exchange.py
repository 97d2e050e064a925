"""nbgrader's exchange, graded as it fills: each new folder of the course's inbound/ an attempt of its hub user.

Takes course.yaml's `jupyterhub.exchange` and `course_id`, the served assignments and their gradebooks; gives
attempts (hand_in, as an upload) and one row per submission folder, accepted or refused in one line.

nbgrader submit copies a student's assignment folder to EXCHANGE/COURSE/inbound/USER+ASSIGNMENT+TIMESTAMP[+RANDOM]/.
That folder is the students': anyone on the hub may write there, under any name. So it is read as untrusted: every
open relative to a descriptor of the folder above, with O_NOFOLLOW (a symlink anywhere in a submission refuses it:
nothing is followed out of the exchange), counts and sizes bounded, and a submission that holds a file named for
another student on the roster is refused in its own row, as is one whose folder belongs to another local user than
the one it names. The notebook graded is ASSIGNMENT.ipynb (else the folder's only notebook), through the intake
guards of every upload (handin.hand_in). Its attempt id is derived from the folder's name, so a restart that reads
the folder again stores nothing twice.
"""

from __future__ import annotations

import base64
import hashlib
import os
import pwd
import re
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from autograder.classroom.roster import IdKind, Roster
from autograder.serve.handin import Accepted, hand_in
from autograder.serve.hub.people import NotOnRoster, student_of

MAX_FOLDERS = 200  # new submission folders taken in one pass; the rest on the next
MAX_FILES = 200  # entries in one submission folder
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,254}")
_REST = re.compile(r"[A-Za-z0-9 :._+=-]{1,120}")  # nbgrader's timestamp ("2026-12-06 16:42:00.123456 UTC") and more
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


@dataclass(frozen=True)
class Row:
    """One submission folder: an attempt of `student`, or why it was refused."""

    folder: str
    student: str = ""
    attempt: str = ""
    refused: str = ""


class Refuse(Exception):
    pass


@dataclass
class ExchangeIntake:
    inbound: Path
    course_id: str
    assignments: dict[str, Any]  # ServedAssignment by name
    books: dict[str, Any]
    roster: Optional[Roster]
    wake: Callable[[str], None]  # the assignment's grader
    report: Callable[[str], None]
    poll_seconds: float = 2.0
    local_user_prefix: str = ""

    def __post_init__(self) -> None:
        self.seen: dict[str, Optional[Row]] = {}
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # ------------------------------------------------------------------ running

    def start(self) -> "ExchangeIntake":
        self._thread = threading.Thread(target=self._run, name="qkv-exchange", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for row in self.scan():
                    self.report(_said(row))
            except Exception as err:  # noqa: BLE001 (the service goes on; the next pass tries again)
                self.report(f"exchange: {self.inbound}: {type(err).__name__}: {err}")
            self._stop.wait(self.poll_seconds)

    # ------------------------------------------------------------------ one pass

    def scan(self) -> list[Row]:
        """The rows of the submission folders new since the last pass."""
        try:
            top = os.open(self.inbound, _FOLDER_FLAGS)
        except FileNotFoundError:
            return []
        try:
            names = sorted(n for n in os.listdir(top) if n not in self.seen)[:MAX_FOLDERS]
            rows = []
            for name in names:
                row = self._take(top, name)
                self.seen[name] = row
                if row is not None:
                    rows.append(row)
            return rows
        finally:
            os.close(top)

    def _take(self, top: int, name: str) -> Optional[Row]:
        user = name.split("+", 1)[0]  # nbgrader's name: the local user's (the hub's on a hub of one local user)
        try:
            assignment, attempt_id = self._assignment(name)
            if self.books[assignment.name].attempt(attempt_id) is not None:
                return None  # taken before a restart
            student = student_of(user.removeprefix(self.local_user_prefix), self.roster)
            if isinstance(student, NotOnRoster):
                raise Refuse(student.message)
            filename, body = self._read(top, name, user, student, assignment.name)
        except Refuse as refusal:
            return Row(name, refused=str(refusal))
        outcome = hand_in(assignment, self.books[assignment.name], self.roster, student, filename, body, time.time(),
                          attempt_id)
        if not isinstance(outcome, Accepted):
            return Row(name, student, refused=outcome.reason)
        self.wake(assignment.name)
        return Row(name, student, attempt=outcome.attempt_id)

    def _assignment(self, name: str) -> tuple[Any, str]:
        parts = name.split("+", 2)
        if len(parts) != 3 or not all(_PART.fullmatch(p) for p in parts[:2]) or not _REST.fullmatch(parts[2]):
            raise Refuse("not a submission folder nbgrader names (USER+ASSIGNMENT+TIMESTAMP[+RANDOM])")
        assignment = self.assignments.get(parts[1])
        if assignment is None:
            raise Refuse(f"assignment {parts[1]!r} is not served here")
        digest = hashlib.sha256(f"{self.course_id}/{name}".encode()).digest()[:16]
        return assignment, "x" + base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def _read(self, top: int, name: str, user: str, student: str, assignment: str) -> tuple[str, bytes]:
        """(the notebook's name, its bytes) from submission folder `name`, or Refuse."""
        try:
            folder = os.open(name, _FOLDER_FLAGS, dir_fd=top)
        except OSError:
            kind = os.stat(name, dir_fd=top, follow_symlinks=False).st_mode
            raise Refuse("is a symbolic link: nothing is followed out of the exchange" if stat.S_ISLNK(kind)
                         else "is not a folder") from None
        try:
            self._owner(os.fstat(folder), user)
            entries = os.listdir(folder)
            if len(entries) > MAX_FILES:
                raise Refuse(f"holds more than {MAX_FILES} files")
            files = []
            for entry in sorted(entries):
                mode = os.stat(entry, dir_fd=folder, follow_symlinks=False).st_mode
                if stat.S_ISLNK(mode):
                    raise Refuse(f"holds a symbolic link, {entry[:80]!r}: nothing is followed out of the exchange")
                if stat.S_ISREG(mode):
                    self._not_anothers(entry, student)
                    files.append(entry)
            notebooks = [f for f in files if f.endswith(".ipynb")]
            chosen = f"{assignment}.ipynb" if f"{assignment}.ipynb" in notebooks else \
                notebooks[0] if len(notebooks) == 1 else None
            if chosen is None:
                raise Refuse(f"holds no notebook {assignment}.ipynb")
            return chosen, self._bytes(folder, chosen, assignment)
        finally:
            os.close(folder)

    def _not_anothers(self, entry: str, student: str) -> None:
        if self.roster is None:
            return
        stem = entry.split(".", 1)[0]
        other = self.roster.match([(IdKind.HUB_USER, stem)]).student or self.roster.by_id(stem)
        if other is not None and other.id != student:
            raise Refuse(f"holds {entry[:80]!r}, a file named for another student: not graded")

    def _owner(self, info: os.stat_result, user: str) -> None:
        """Where hub users are local users (each their own uid), the folder is the named user's own."""
        try:
            uid = pwd.getpwnam(user).pw_uid
        except KeyError:
            return  # users without a local account (one uid for all, as in a container): the name alone
        if info.st_uid != uid:
            raise Refuse(f"belongs to uid {info.st_uid}, not to {user}")

    def _bytes(self, folder: int, name: str, assignment: str) -> bytes:
        limit = self.assignments[assignment].settings.upload_kb * 1024
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=folder)
        except OSError as err:
            raise Refuse(f"cannot open {name!r}: {err.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise Refuse(f"{name!r} is not a file")
            body = handle.read(limit + 1)
        if len(body) > limit:
            raise Refuse(f"{name!r} is over the {limit:,} bytes this assignment takes")
        return body


def _said(row: Row) -> str:
    if row.refused:
        return f"exchange: {row.folder[:120]}: refused: {row.refused}"
    return f"exchange: {row.folder[:120]}: attempt {row.attempt} of {row.student}"


def exchange_intake(settings: Any, state: Any, report: Callable[[str], None]) -> Optional[ExchangeIntake]:
    """The intake of course.yaml's `jupyterhub.exchange`, to be started with the app (ServiceState.background);
    None when there is none."""
    if settings is None or not settings.exchange:
        return None

    def wake(name: str) -> None:
        if name in state.graders:
            state.graders[name].wake()
    return ExchangeIntake(Path(settings.exchange) / settings.course_id / "inbound", settings.course_id,
                          state.assignments, state.books, state.roster, wake, report, settings.poll_seconds,
                          settings.local_user_prefix)
