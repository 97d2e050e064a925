"""`qkv copying`'s run: SUBMISSIONS (as `qkv grade` takes them), the build and the gradebook in; the answer
flags, the code report and the two files written beside the gradebook (copying.html, copying.csv) out.
`class_signals` is the part the service's copying page shares (its code: each student's counted attempt).

The written answers come from the gradebook (what grading saw), the code from SUBMISSIONS (read by the
same intake, so ids are the roster's), the stub from the student release (module and notebook).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from autograder.bundle import read_bundle
from autograder.classroom.classbook import open_gradebook
from autograder.classroom.collect import collect, program_text
from autograder.classroom.copying import CODE_THRESHOLD, AnswerFlag, CodeReport, answer_flags, code_pairs
from autograder.classroom.copying_page import copying_csv, copying_html
from autograder.classroom.roster import Roster
from autograder.classroom.stats import load_scores
from autograder.kinds import kind_of
from autograder.grade.intake import read_submission
from autograder.private import write_private


@dataclass(frozen=True)
class Signals:
    per_student: bool
    answers: list[AnswerFlag]
    code: CodeReport
    files: tuple[Path, ...]


def stub_text(release: Path, module: str) -> str:
    return "\n".join(program_text(read_submission("stub", release / f"{module}{suffix}").program)
                     for suffix in (".py", ".ipynb"))


def class_signals(bundle, release: Path, scores, codes: dict[str, str],
                  threshold: Optional[float] = None) -> tuple[bool, list[AnswerFlag], CodeReport]:
    """(per-student numbers?, the answer flags, the code report) of a class: its scores from the gradebook and
    each student's code as text; `qkv copying` and the service's copying page both come here."""
    per_student = bundle.variants == "per_student"
    # problems whose numbers are each student's own: a student who hands in another's numbers stands out
    numeric = [w.problem for w in bundle.written if kind_of(w.problem).own_numbers(w.problem)]
    flags = answer_flags(list(scores.students), scores.answers, numeric, bundle.seed) if per_student else []
    return per_student, flags, code_pairs(codes, stub_text(release, bundle.module), threshold or CODE_THRESHOLD)


def copying_signals(name: str, submissions: Path, dist: Path, grades: Path, roster: Optional[Roster],
                    threshold: Optional[float] = None) -> Signals:
    bundle = read_bundle(dist / "autograder")
    with open_gradebook(grades, name) as db:
        scores = load_scores(db)
    with tempfile.TemporaryDirectory(prefix="qkv-copying-") as work:
        handed = collect(submissions, bundle.module, bundle.name, roster, Path(work))
        codes = {s.student: program_text(s.program) for s in handed.submissions if s.program is not None}
    per_student, flags, report = class_signals(bundle, dist / "student", scores, codes, threshold)
    page, table = grades / "copying.html", grades / "copying.csv"
    write_private(page, copying_html(bundle.title, per_student, flags, report).encode())
    write_private(table, copying_csv(flags, report).encode())
    return Signals(per_student, flags, report, (page, table))
