"""New courses and new problems: a folder and a title (or a name and a kind) in, files written out.

`init_course` writes a working course (course.yaml, an example problem folder of the
course's own, a sample assignment that builds, an example roster, .gitignore, README);
`new_problem` writes a problem folder skeleton of one kind, with comments that say
what each field does, which `qkv validate` accepts once its TODOs are filled in.
The templates are files under course/templates/, one folder per kind.
"""

from __future__ import annotations

import re
import shutil
from importlib import resources
from pathlib import Path

import jinja2

from autograder.kinds import KINDS
from autograder.course.find import COURSE_FILE, Course, qkv_version
from autograder.errors import QkvError

_ID = re.compile(r"[a-z0-9][a-z0-9-]*[a-z0-9]")


def _templates() -> Path:
    return Path(str(resources.files("autograder.course").joinpath("templates")))


def _render(path: Path, **context: object) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(path.read_text(encoding="utf-8")).render(**context)


def init_course(folder: Path, title: str, term: str = "") -> list[Path]:
    """Write a new course into `folder` (new, or empty); gives the files written."""
    if (folder / COURSE_FILE).exists():
        raise QkvError(str(folder / COURSE_FILE), "already a course: qkv init writes new courses only")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise QkvError(str(folder), "exists and is not an empty folder")
    source = _templates() / "course"
    context = {"title": title, "term": term, "version": qkv_version()}
    names = {"gitignore.j2": ".gitignore", "first-assignment.yaml.j2": "assignments/first-assignment.yaml"}
    files = {}
    for template in sorted(source.rglob("*.j2")):  # templates only: an install may add __pycache__ beside them
        relative = template.relative_to(source).as_posix()
        if relative.startswith("normalize-rows/"):
            relative = f"question_bank/{relative}"
        files[names.get(relative, relative.removesuffix(".j2"))] = _render(template, **context)
    staging = folder.with_name(f".{folder.name}.qkv-init")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for relative, text in files.items():
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        if folder.exists():
            folder.rmdir()
        staging.rename(folder)  # all of it or nothing
    except OSError as err:
        shutil.rmtree(staging, ignore_errors=True)
        raise QkvError(str(folder), f"cannot write the course: {err.strerror or err}") from None
    return [folder / relative for relative in files]


def new_problem(course: Course, name: str, kind: str, topic: str = "my-course/week-1") -> list[Path]:
    """Write the skeleton of a new problem folder `name` of `kind` into the course's first bank folder."""
    if course.bundled:
        raise QkvError("--course", "qkv new writes into a course of your own: run it inside one (qkv init DIR)")
    if kind not in KINDS:
        raise QkvError("--kind", f"unknown kind '{kind}' (kinds: {', '.join(KINDS)})")
    if not _ID.fullmatch(name) or len(name) > 80:
        raise QkvError("NAME", f"'{name}': a problem id is lower-case letters, digits and dashes")
    folder = course.bank_folders[0] / name
    if folder.exists():
        raise QkvError(str(folder), "already exists")
    context = {"id": name, "function": name.replace("-", "_"), "topic": topic}
    written = []
    folder.mkdir(parents=True)
    for template in sorted((_templates() / "problems" / kind).glob("*.j2")):
        target = folder / template.name.removesuffix(".j2")
        target.write_text(_render(template, **context), encoding="utf-8")
        written.append(target)
    return written
