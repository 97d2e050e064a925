"""Submission intake: a folder of student files in, one `Submission` per student out (never an exception).

Accepted layouts: `<student>.py`, `<student>.ipynb`, `<student>/` holding one
of them, and nbgrader's `submitted/<student>/<NAME>/<file>`. Student ids come
from names, made safe for file paths. Files that cannot be graded (empty,
binary, not UTF-8, too large, not a notebook) become a `Submission` with a
status and a message, so they get a gradebook row instead of crashing the
batch. Notebooks are turned into plain source here, in the trusted process,
by parsing JSON with nbformat; their code is never run here.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

MAX_SUBMISSION_BYTES = 5_000_000
SKIP_ROLES = {"selfcheck", "intro", "prompt"}


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path
    digest: str  # sha256 of the file's bytes: unchanged files are not regraded
    source: str | None  # Python source to run, None when the file cannot be graded
    status: str  # "ok" or why it cannot be graded: empty, binary, not_utf8, too_large, bad_notebook, missing
    message: str


def safe_student_id(name: str) -> str:
    """A file-safe id: letters, digits, dot, dash, underscore; no leading dot; at most 64 chars."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip("._-")[:64]
    return cleaned or "unnamed"


def _notebook_source(text: str) -> str:
    """Code cells of a notebook as one program; each cell runs on its own, so a failing cell
    (e.g. the self-check import, absent in the sandbox) does not stop the cells after it."""
    import nbformat  # costs ~1.8 s to import (its JSON-schema stack); a class of .py files never needs it

    notebook = nbformat.reads(text, as_version=4)
    cells = []
    for cell in notebook.cells:
        if cell.get("cell_type") != "code":
            continue
        role = (cell.get("metadata", {}).get("qkv") or {}).get("role")
        if role in SKIP_ROLES:
            continue
        lines = [("# " + line) if line.lstrip().startswith(("%", "!")) else line
                 for line in str(cell.get("source", "")).splitlines()]
        cells.append("\n".join(lines))
    return (
        "import sys as _qkv_sys, traceback as _qkv_tb\n"
        f"_qkv_cells = {json.dumps(cells)}\n"
        "for _qkv_i, _qkv_cell in enumerate(_qkv_cells):\n"
        "    try:\n"
        "        exec(compile(_qkv_cell, f'<cell {_qkv_i + 1}>', 'exec'), globals())\n"
        "    except Exception:\n"
        "        _qkv_tb.print_exc()\n"
        "del _qkv_i, _qkv_cell, _qkv_cells, _qkv_sys, _qkv_tb\n"
    )


def read_submission(student: str, path: Path) -> Submission:
    def rejected(status: str, message: str, digest: str = "") -> Submission:
        return Submission(student, path, digest, None, status, message)

    try:
        size = path.stat().st_size
        if size > MAX_SUBMISSION_BYTES:
            return rejected("too_large", f"{path.name} is {size:,} bytes; the limit is {MAX_SUBMISSION_BYTES:,}")
        raw = path.read_bytes()
    except OSError as err:
        return rejected("unreadable", f"cannot read {path.name}: {err.strerror}")
    digest = hashlib.sha256(raw).hexdigest()
    if not raw.strip():
        return rejected("empty", f"{path.name} is empty", digest)
    if b"\x00" in raw:
        return rejected("binary", f"{path.name} is a binary file, not Python source or a notebook", digest)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return rejected("not_utf8", f"{path.name} is not UTF-8 text (byte {err.start}); save it as UTF-8", digest)
    if path.suffix == ".ipynb":
        try:
            return Submission(student, path, digest, _notebook_source(text), "ok", "")
        except Exception as err:  # noqa: BLE001 - nbformat raises many types for broken JSON
            reason = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
            return rejected("bad_notebook", f"{path.name} is not a valid notebook: {reason}", digest)
    return Submission(student, path, digest, text, "ok", "")


def _pick_file(folder: Path) -> Path | None:
    candidates = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and p.suffix in (".py", ".ipynb")
                        and ".ipynb_checkpoints" not in p.parts and not p.name.startswith("."))
    # a notebook is the richer form of the same work; prefer it when both are present
    notebooks = [p for p in candidates if p.suffix == ".ipynb"]
    return (notebooks or candidates or [None])[0]


def discover(folder: Path) -> list[tuple[str, Path | None]]:
    """(student id, file) pairs; file is None when a student's folder holds nothing gradable."""
    root = folder / "submitted" if (folder / "submitted").is_dir() else folder
    found: dict[str, Path | None] = {}
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_file() and entry.suffix in (".py", ".ipynb"):
            student, path = safe_student_id(entry.stem), entry
        elif entry.is_dir():
            student, path = safe_student_id(entry.name), _pick_file(entry)
        else:
            continue
        while student in found:  # two names that clean to the same id must not overwrite each other
            student += "_"
        found[student] = path
    return list(found.items())


def intake(folder: Path) -> list[Submission]:
    submissions = []
    for student, path in discover(folder):
        if path is None:
            submissions.append(Submission(student, folder / student, "", None, "missing",
                                          "no .py or .ipynb file in the submission folder"))
        else:
            submissions.append(read_submission(student, path))
    return submissions
