"""`qkv export`: an assignment (assignments/NAME.yaml) or a topic (`topic:PREFIX`) in; its non-code problems as a
Canvas QTI zip, Moodle XML or GIFT text (bytes) out.

quiz.py builds the neutral quiz (groups of variants, every part of a variant in
one question); qti.py, moodle.py and gift.py write it, each keeping a variant's
parts together as its platform allows; `write_export` here writes the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.bank.load import Bank
from autograder.course.bank import load_course_bank_strict
from autograder.course.find import find_course
from autograder.errors import QkvError
from autograder.exam_formats import QUIZ_FORMATS
from autograder.exam.lms.quiz import Quiz, build_quiz
from autograder.kinds import Problem, kind_of


TOPIC_PREFIX = "topic:"


@dataclass(frozen=True)
class Export:
    quiz: Quiz
    data: bytes
    default_name: str  # file name when --out is not given
    skipped_code: int  # implement problems left out
    summary: str  # what the file holds, in the platform's terms


def export_problems(name: str, bank: Bank, seed: int | None) -> tuple[str, str, list[tuple[Problem, float]], int]:
    """(quiz id, title, [(problem, points)], seed) of an assignment or a topic."""
    if name.startswith(TOPIC_PREFIX):
        prefix = name[len(TOPIC_PREFIX):].strip("/")
        chosen = sorted((p for p in bank.problems.values()
                         if p.topic == prefix or p.topic.startswith(prefix + "/")), key=lambda p: (p.topic, p.id))
        if not prefix or not chosen:
            known = ", ".join(sorted({p.topic.split("/")[0] for p in bank.problems.values()}))
            raise QkvError("NAME", f"'{name}': no problem has the topic '{prefix}' (topics: {known})")
        ident = "topic-" + prefix.replace("/", "-")
        return ident, f"Transformer fundamentals: {prefix}", [(p, p.points) for p in chosen], seed or 0
    from autograder.assemble.manifest import find_manifest, resolve_assignment

    course = find_course()
    assignment = resolve_assignment(find_manifest(name, course.assignments), bank, course.config.grading)
    problems = [(a.problem, a.points) for a in assignment.problems]
    return assignment.name, assignment.manifest.title, problems, assignment.manifest.seed if seed is None else seed


def export(name: str, fmt: str, variants: int = 5, seed: int | None = None, bank: Bank | None = None) -> Export:
    if fmt not in QUIZ_FORMATS:
        raise QkvError("--format", f"unknown format '{fmt}' (formats: {', '.join(QUIZ_FORMATS)})")
    ident, title, problems, seed = export_problems(name, bank or load_course_bank_strict(find_course()), seed)
    code = sum(kind_of(p).code for p, _ in problems)
    if code == len(problems):
        raise QkvError("NAME", f"'{name}' has only code problems, which learning platforms cannot grade: use `qkv build`")
    quiz = build_quiz(ident, title, problems, seed, variants)
    summary = f"{len(quiz.groups)} question groups, {sum(len(g.questions) for g in quiz.groups)} questions"
    data, said = QUIZ_FORMATS[fmt].write(quiz)
    return Export(quiz, data, f"{ident}-{fmt}{QUIZ_FORMATS[fmt].suffix}", code, said or summary)


def write_export(result: Export, out: Path | None) -> Path:
    path = out or find_course().output("dist", result.default_name)
    if path.is_dir():
        raise QkvError(str(path), "is a folder; --out takes a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(result.data)
    except OSError as err:
        raise QkvError(str(path), f"cannot write: {err.strerror}") from None
    return path
