"""A course's bank: its own folders in, one `Bank` out, with the bundled problems it takes as a library.

The course's own problems come from `bank.folders` (files or problem folders); the
bundled ones from the installed qkv (all, none, or by topic prefix and id). A
course file with a bundled problem's id replaces it, and the bank says so (validate
prints it); two of the course's own files with one id are an error, as in any bank.
"""

from __future__ import annotations

from autograder.bank.load import Bank, LoadReport, default_bank_root, load_bank
from autograder.course.find import BundledSelection, Course
from autograder.errors import QkvError


def _bundled_wanted(selection: object, problem_id: str, topic: str) -> bool:
    if selection == "all":
        return True
    if selection == "none":
        return False
    assert isinstance(selection, BundledSelection)
    return problem_id in selection.ids or any(topic == t or topic.startswith(t.rstrip("/") + "/")
                                              for t in selection.topics)


def load_course_bank(course: Course) -> LoadReport:
    problems, paths, errors = {}, {}, []
    selection = course.config.bank.bundled
    if selection != "none":
        bundled = load_bank(default_bank_root())
        errors += bundled.errors
        for pid, problem in bundled.bank.problems.items():
            if _bundled_wanted(selection, pid, problem.topic):
                problems[pid], paths[pid] = problem, bundled.bank.paths[pid]
        if isinstance(selection, BundledSelection):
            unknown = [i for i in selection.ids if i not in bundled.bank.problems]
            if unknown:
                errors.append(QkvError(str(course.root / "course.yaml"),
                                       f"bank.bundled.ids: no bundled problem {', '.join(unknown)}"))
    overrides = {}
    own_ids: dict[str, object] = {}
    for folder in course.bank_folders:
        if not folder.is_dir():
            errors.append(QkvError(str(folder), "bank.folders: no such folder (course.yaml)"))
            continue
        report = load_bank(folder)
        errors += report.errors
        for pid, problem in report.bank.problems.items():
            if pid in own_ids:
                errors.append(QkvError(str(report.bank.paths[pid]), f"id: '{pid}' is already used by {own_ids[pid]}"))
                continue
            own_ids[pid] = report.bank.paths[pid]
            if pid in problems:
                overrides[pid] = paths[pid]
            problems[pid], paths[pid] = problem, report.bank.paths[pid]
    return LoadReport(Bank(problems, paths, course.root, overrides), errors)


def load_course_bank_strict(course: Course) -> Bank:
    report = load_course_bank(course)
    if report.errors:
        raise report.errors[0]
    return report.bank
