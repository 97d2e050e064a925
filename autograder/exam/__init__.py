"""Side stage, exam prep: the bank in; practice exams with answer keys, a terminal drill and quiz exports out.

select.py (balanced problems and their variants), paper.py (exam and key
documents: each problem's question, blanks and key come from its kind),
markup.py (Markdown + LaTeX for pages, platforms, terminals), katex.py (offline
formula rendering), pdf.py (printing through headless Chromium), drill.py
(`qkv practice`), lms/ (`qkv export`: QTI, Moodle XML, GIFT).
This module writes `exam.EXT` and `answer-key.EXT` (the key its owner's only, 0600); pdf.py's Chromium works in a
temporary folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder.bank.load import Bank
from autograder.course.bank import load_course_bank_strict
from autograder.course.find import find_course
from autograder.errors import QkvError
from autograder.exam_formats import PAPER_FORMATS
from autograder.exam.select import Exam, ExamSpec, draw_exam
from autograder.private import private_folder, write_private

KEY = "answer-key"
_STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class ExamResult:
    exam: Exam
    out: Path
    files: dict[str, int]  # file name -> size in bytes


def default_out(spec: ExamSpec) -> Path:
    return find_course().output("dist", f"exam-seed{spec.seed}" + (f"-{spec.student}" if spec.student else ""))


def exam_files(exam: Exam, fmt: str) -> dict[str, bytes]:
    """{file name: bytes} of the exam and its answer key in one format (exam_formats.PAPER_FORMATS)."""
    from autograder.exam.paper import exam_paper, key_paper

    paper_format = PAPER_FORMATS[fmt]
    written = paper_format.write({"exam": exam_paper(exam), KEY: key_paper(exam)})
    return {f"{name}{paper_format.suffix}": data for name, data in written.items()}


def write_exam(spec: ExamSpec, fmt: str = "md", out: Path | None = None, bank: Bank | None = None) -> ExamResult:
    if fmt not in PAPER_FORMATS:
        raise QkvError("--format", f"unknown format '{fmt}' (formats: {', '.join(PAPER_FORMATS)})")
    if spec.student is not None and not _STUDENT_ID.fullmatch(spec.student):
        raise QkvError("--student", "a student id is letters, digits, '.', '_' and '-' (at most 64)")
    exam = draw_exam(bank or load_course_bank_strict(find_course()), spec)
    files = exam_files(exam, fmt)  # everything is made before anything is written
    out = out or default_out(spec)
    if out.exists() and not out.is_dir():
        raise QkvError(str(out), "output path exists and is not a folder")
    try:
        if spec.student is not None:
            private_folder(out)  # its name says whose exam it is
        else:
            out.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            if not name.startswith(KEY):
                (out / name).write_bytes(data)
    except OSError as err:
        raise QkvError(str(out), f"cannot write: {err.strerror}") from None
    for name, data in files.items():
        if name.startswith(KEY):
            write_private(out / name, data)
    return ExamResult(exam, out, {name: len(data) for name, data in files.items()})
