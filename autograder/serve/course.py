"""What `qkv serve` serves: each assignment's build, its `serve` settings, and where its gradebook lives.

The store is a folder (SQLite: `accounts.sqlite`, and `NAME/gradebook.sqlite` per assignment, the
same gradebook `qkv grade --out` writes, so `qkv stats --grades FOLDER/NAME` reads it) or a
PostgreSQL URL (one schema per assignment and one for the accounts).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Optional, Union

from autograder.assemble.manifest import LmsLinks, ServeSettings, lms_links
from autograder.bundle import GradingBundle, bundle_fingerprint, read_bundle
from autograder.classroom.deadlines import Deadline, policy_from, student_due
from autograder.classroom.roster import Roster
from autograder.errors import QkvError
from autograder.grade.gradebook import GRADEBOOK_FILE, Gradebook
from autograder.grade.gradebook.accounts import ACCOUNTS_FILE, AccountBook
from autograder.grade.gradebook.database import is_postgres
from autograder.grade.gradebook.records import Counting

Store = Union[Path, str]


@dataclass(frozen=True)
class ServedAssignment:
    name: str
    bundle: GradingBundle
    bundle_dir: Path  # dist/NAME/autograder
    release_dir: Path  # dist/NAME/student: what a student downloads
    settings: ServeSettings
    lms: LmsLinks = LmsLinks()  # the manifest's LMS links, read at start (the exports name the Canvas assignment)

    @property
    def counting(self) -> Counting:
        return Counting(self.settings.counts)

    @cached_property
    def policy(self) -> Deadline:
        return policy_from(self.bundle.due, self.bundle.late)

    def dates_of(self, student: str, roster: Optional[Roster]) -> tuple[Optional[dt.datetime], Optional[dt.datetime]]:
        """(the student's due date, their last date), with the roster's extension of them."""
        from autograder.classroom.classbook import extension_of

        return student_due(self.policy, extension_of(roster, student))


def closed_for_all(a: ServedAssignment, roster: Optional[Roster], now: dt.datetime) -> bool:
    """Whether nobody can hand in any more: every student's last date (their extension's) has passed. Only then
    do the service's feedback pages show hidden tests' details and worked solutions, and the written-answer policy
    `hidden` show fixed items' verdicts (pages, LTI scores): a student past their own due date may still hand in,
    and a classmate with an extension still works."""
    students = [s.id for s in roster.students] if roster else []
    lasts = [a.dates_of(student, roster)[1] for student in students] or [a.dates_of("", roster)[1]]
    return all(last is not None and now > last for last in lasts)


def served_assignment(name: str, dist: Path, manifests: Optional[Path] = None) -> ServedAssignment:
    """NAME's build under `dist`; `manifests`: the course's folder of manifests, for its LMS links."""
    bundle_dir = dist / "autograder"
    if not (bundle_dir / "assignment.json").is_file():
        raise QkvError(str(dist), f"no build of '{name}' here: run `qkv build {name}` first")
    bundle = read_bundle(bundle_dir)
    settings = ServeSettings.model_validate(bundle.serve) if bundle.serve else ServeSettings()
    return ServedAssignment(name, bundle, bundle_dir, dist / "student", settings,
                            lms_links(name, manifests) if manifests is not None else LmsLinks())


def open_gradebook(store: Store, assignment: ServedAssignment) -> tuple[Gradebook, Optional[str]]:
    """The assignment's gradebook, bound to this build; with a note when the build changed since it was last
    served (then every graded attempt is graded again, as `qkv grade` grades everyone again)."""
    where: Union[Path, str] = store if isinstance(store, str) else store / assignment.name / GRADEBOOK_FILE
    book = Gradebook(where, assignment=assignment.name, durable=True)
    mismatch = book.check_assignment(assignment.name, bundle_fingerprint(assignment.bundle_dir))
    if mismatch and "belongs to" in mismatch:
        book.close()
        raise QkvError(str(book.path), f"{mismatch}; choose another --db")
    if mismatch:
        book.rebind(bundle_fingerprint(assignment.bundle_dir))
        return book, f"{assignment.name}: {mismatch}: {book.regrade_attempts()} attempt(s) are graded again"
    return book, None


def open_accounts(store: Store) -> AccountBook:
    return AccountBook(store if isinstance(store, str) else store / ACCOUNTS_FILE)


def parse_store(value: str) -> Store:
    return value if is_postgres(value) else Path(value)
