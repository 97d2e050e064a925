"""Private at rest (issue 45, items 9 and 10): what qkv leaves on disk names students, so no other user may read it,
and the sign-in links `qkv tokens` writes are never lost or handed to a revoked student.

A class run (`qkv grade` of the Canvas zip with its roster, `qkv stats`, `qkv export-grades` in each format, `qkv
copying`) and a service run (`qkv tokens`, `qkv serve`, a hand-in graded, the staff pages and the export fetched) are
made under umask 022 and 000 with the installed command, and every file and folder they leave under grades/ (the
gradebooks with their -wal and -shm, the service's store) and every token file is checked for a group or other bit.
`qkv tokens` is run again as an instructor does, after students were added or revoked, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import stat
import subprocess
from pathlib import Path

import httpx
import pytest

from autograder.grade.gradebook.accounts import AccountBook
from conftest import wait_for
from serve_client import Browser
from served_course import COMMAND_S, NAME, QKV, ROOT, ROSTER
from servers import ServerProcess, fresh_database

pytestmark = pytest.mark.slow  # class runs graded in sandboxes, servers started

CLASS_ZIP = ROOT / "examples" / "canvas" / "attention-numpy-submissions.zip"
SAMPLES = ROOT / "examples" / "submissions" / NAME
UMASKS = (0o022, 0o000)


def under_umask(mask: int, *command: object) -> list[str]:
    """`command` run with `mask` as its umask, as a shell or a service manager would start it."""
    return ["sh", "-c", f'umask {mask:03o} && exec "$0" "$@"', *map(str, command)]


def qkv(course: Path, mask: int, *args: object) -> str:
    done = subprocess.run(under_umask(mask, QKV, "--course", course, *args), cwd=course, capture_output=True,
                          text=True, timeout=COMMAND_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"qkv {' '.join(map(str, args))}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def open_to_others(*tops: Path) -> tuple[list[Path], list[str]]:
    """(every path at or under `tops`, those with any group or other permission bit, with their mode)."""
    seen: list[Path] = []
    for top in tops:
        seen.append(top)
        for folder, folders, files in os.walk(top):
            seen += [Path(folder) / name for name in folders + files]
    return seen, [f"{stat.S_IMODE(p.lstat().st_mode):04o} {p}" for p in seen if p.lstat().st_mode & 0o077]


@pytest.fixture
def course(served_numpy, tmp_path) -> Path:
    """A copy of the run's course with attention-numpy built, nothing graded or served in it yet."""
    root = tmp_path / "course"
    shutil.copytree(served_numpy.folder, root, symlinks=True)
    assert not (root / "grades").exists()
    return root


# ------------------------------------------------------------------ item 9: nothing under grades/ for other users

@pytest.mark.parametrize("mask", UMASKS, ids=lambda m: f"umask{m:03o}")
def test_a_class_run_leaves_nothing_another_user_may_read(course, mask):
    qkv(course, mask, "grade", NAME, CLASS_ZIP, "--roster", ROSTER, "--timeout", 3)
    qkv(course, mask, "stats", NAME)
    for fmt in ("canvas", "moodle", "csv"):
        qkv(course, mask, "export-grades", NAME, "--format", fmt)
    qkv(course, mask, "copying", NAME, CLASS_ZIP, "--roster", ROSTER)
    seen, open_ones = open_to_others(course / "grades")
    names = {p.name for p in seen}
    assert {"gradebook.sqlite", "gradebook.csv", "intake.csv", "feedback.html", "results.json", "stats.html",
            "copying.html", "copying.csv", f"{NAME}-canvas.csv", f"{NAME}-moodle-comments.csv"} <= names, names
    assert "s2026001" in names  # a student's feedback folder, whose name alone says who handed in
    assert open_ones == []


@pytest.mark.parametrize("store, mask", [("sqlite", 0o022), ("sqlite", 0o000), ("postgresql", 0o000)],
                         ids=["sqlite-umask022", "sqlite-umask000", "postgresql-umask000"])
def test_a_service_run_leaves_nothing_another_user_may_read(course, request, store, mask):
    """The store by default (grades/serve, made by `qkv tokens`) or on PostgreSQL; scanned while the service runs,
    when SQLite's -wal and -shm are there, and again after it stopped."""
    with contextlib.ExitStack() as stack:
        db = ("--db", stack.enter_context(fresh_database(request.getfixturevalue("postgres_url")))) \
            if store == "postgresql" else ()
        qkv(course, mask, "tokens", NAME, "--roster", ROSTER, *db, "--instructor", "prof")
        with open(course / "tokens.csv", newline="", encoding="utf-8") as handle:
            issued = {row["id"]: row["token"] for row in csv.DictReader(handle)}
        server = stack.enter_context(ServerProcess(
            lambda port: under_umask(mask, QKV, "--course", course, "serve", NAME, "--roster", ROSTER, *db,
                                     "--port", port, "--jobs", 1), cwd=course))
        answer = httpx.post(f"{server.url}/api/a/{NAME}/attempts", params={"filename": "ada.py"},
                            content=(SAMPLES / "ada.py").read_bytes(),
                            headers={"authorization": f"Bearer {issued['s2026001']}"}, timeout=120)
        assert answer.status_code == 202, answer.text
        attempt = answer.json()["attempt"]
        wait_for(lambda: httpx.get(f"{server.url}/api/a/{NAME}/attempts/{attempt}", timeout=120,
                                   headers={"authorization": f"Bearer {issued['s2026001']}"}
                                   ).json().get("state") == "graded", f"grading of {attempt}")
        prof = Browser(server.url)
        assert prof.sign_in(issued["prof"]).status_code == 303
        for page in ("class", "stats", "copying", "export/canvas", "export/csv"):
            assert prof.get(f"/a/{NAME}/{page}").status_code == 200, page
        tops = [course / "tokens.csv"] + ([course / "grades"] if store == "sqlite" else [])
        seen, open_ones = open_to_others(*tops)
        if store == "sqlite":
            names = {p.name for p in seen}
            assert {"accounts.sqlite", "accounts.sqlite-wal", "accounts.sqlite-shm", "gradebook.sqlite",
                    "gradebook.sqlite-wal", "gradebook.sqlite-shm"} <= names, names
        else:
            assert not (course / "grades").exists()  # nothing of the store on this disk
        assert open_ones == [], "while serving"
    assert open_to_others(*tops)[1] == [], "after the service stopped"

