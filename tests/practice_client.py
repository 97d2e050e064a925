"""What the practice tests know that a student would work out: a variant's right and wrong answers, read from the
store behind the service's back (its seed) and the bank (its key), typed into the form as a student types them."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from autograder.grade.gradebook.accounts import ACCOUNTS_FILE
from autograder.grade.gradebook.practice import PracticeStore, PracticeVariant
from autograder.kinds import Problem
from autograder.practice.answers import key_of, questions

# course.yaml's practice: problems with misconceptions to name, under two topics
PRACTICE = {"topics": ["masking", "attention/softmax"], "kinds": ["numeric", "multiple_choice"]}


def practice_course(served_numpy, folder: Path) -> Path:
    """A copy of the run's served course (tests/served_course.py) whose course.yaml offers practice."""
    root = folder / "course"
    shutil.copytree(served_numpy.folder, root, symlinks=True)
    config = yaml.safe_load((root / "course.yaml").read_text(encoding="utf-8"))
    config["practice"] = PRACTICE
    (root / "course.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root


def stored_variant(store: str, variant: str, student: str) -> PracticeVariant:
    """The variant as the service stored it (not through the service)."""
    book = PracticeStore(store if store.startswith("postgres") else Path(store) / ACCOUNTS_FILE)
    try:
        found = book.variant(variant, student)
    finally:
        book.close()
    assert found is not None, f"no variant {variant} of {student} stored"
    return found


def _as_typed(value: str) -> str:
    """A choice as a student types it: "C: The formula gives ..." is "C"."""
    letter, sep, _ = value.partition(": ")
    return letter if sep and len(letter) == 1 and letter.isalpha() else value


def _part(labels: list[str], label: str) -> int:
    """The form's part a key's label is (the form may add the count of numbers: "weights [3 numbers]")."""
    return next(n for n, asked in enumerate(labels) if asked == label or asked.startswith(label + " ["))


def _fields(problem: Problem, seed: int, by_label: dict[str, str]) -> dict[str, str]:
    labels = [q.label for q in questions(problem, seed)]
    fields = {f"part-{n}": "" for n in range(len(labels))}
    for label, value in by_label.items():
        fields[f"part-{_part(labels, label)}"] = value
    return fields


def right_answer(problem: Problem, seed: int) -> dict[str, str]:
    labels, lines = [q.label for q in questions(problem, seed)], key_of(problem, seed).lines
    if len(labels) == 1:
        return _fields(problem, seed, {labels[0]: _as_typed(lines[0].answer)})
    return _fields(problem, seed, {line.label: line.answer for line in lines})


def wrong_answer(problem: Problem, seed: int) -> tuple[dict[str, str], str]:
    """A wrong answer that names a misconception (the key's first; the parts it leaves out answered right), and
    the misconception."""
    labels, mistake = [q.label for q in questions(problem, seed)], key_of(problem, seed).mistakes[0]
    fields = right_answer(problem, seed)
    if len(labels) == 1:
        return {"part-0": _as_typed(mistake.answer)}, mistake.message
    for piece in mistake.answer.split("; "):
        label, _, value = piece.partition(": ")
        fields[f"part-{_part(labels, label)}"] = value
    return fields, mistake.message
