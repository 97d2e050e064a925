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
from served_course import COMMAND_S, NAME, QKV, ROOT, ROSTER, class_sample
from servers import ServerProcess, fresh_database

pytestmark = pytest.mark.slow  # class runs graded in sandboxes, servers started

CLASS_ZIP = ROOT / "examples" / "canvas" / "attention-numpy-submissions.zip"
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
                            content=class_sample("ada.py").read_bytes(),
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


# ------------------------------------------------------------------ item 10: `qkv tokens` run again

@pytest.fixture(params=["sqlite", "postgresql"])
def accounts(request, tmp_path) -> str:
    """Where the service's accounts are: a folder of SQLite files, or a PostgreSQL database of the test's own."""
    return request.getfixturevalue("postgres_db") if request.param == "postgresql" else str(tmp_path / "store")


@pytest.fixture
def bare_course(tmp_path) -> Path:
    """A course of `qkv init`'s, which is all `qkv tokens` needs."""
    done = subprocess.run([str(QKV), "init", str(tmp_path / "course")], capture_output=True, text=True,
                          timeout=COMMAND_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return tmp_path / "course"


def roster_of(folder: Path, count: int) -> Path:
    """The first `count` students of examples/canvas's roster, as a roster of their own."""
    lines = ROSTER.read_text(encoding="utf-8").splitlines(keepends=True)
    path = folder / f"roster-{count}.csv"
    path.write_text("".join(lines[:count + 1]), encoding="utf-8")
    return path


def tokens(course: Path, store: str, *args: object) -> subprocess.CompletedProcess:
    """`qkv tokens` as the instructor runs it in the course folder (the default --out is relative to it)."""
    return subprocess.run([str(QKV), "--course", str(course), "tokens", NAME, "--db", store, *map(str, args)],
                          cwd=course, capture_output=True, text=True, timeout=COMMAND_S, stdin=subprocess.DEVNULL)


def issued(path: Path) -> dict[str, str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["id"]: row["token"] for row in csv.DictReader(handle)}


def signs_in(store: str, token: str) -> str | None:
    """Whose account the token opens (read from the store itself, as the service checks it), or None."""
    where = store if store.startswith("postgresql://") else Path(store) / "accounts.sqlite"
    with AccountBook(where) as book:
        found = book.check(token)
    return None if found is None else f"{found.person}/{found.role.value}"


def test_tokens_run_again_never_writes_over_the_links_it_wrote_before(bare_course, accounts):
    """The second run after students were added writes a new file beside the first; an existing --out is refused
    before any token is issued, and written over only with --force; every link written stays on disk and works."""
    first = tokens(bare_course, accounts, "--roster", roster_of(bare_course, 2), "--instructor", "prof")
    assert first.returncode == 0, first.stderr
    written = (bare_course / "tokens.csv").read_bytes()
    before = issued(bare_course / "tokens.csv")
    assert set(before) == {"s2026001", "s2026002", "prof"}

    again = tokens(bare_course, accounts, "--roster", roster_of(bare_course, 3))
    assert again.returncode == 0, again.stderr
    assert (bare_course / "tokens.csv").read_bytes() == written
    assert set(issued(bare_course / "tokens-2.csv")) == {"s2026003"} and "wrote tokens-2.csv" in again.stdout

    refused = tokens(bare_course, accounts, "--roster", roster_of(bare_course, 4), "--out", "tokens.csv")
    assert refused.returncode == 1 and (bare_course / "tokens.csv").read_bytes() == written
    assert refused.stderr.strip().splitlines()[-1].startswith("error: tokens.csv: exists"), refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (bare_course / "tokens-3.csv").exists()
    with AccountBook(accounts if accounts.startswith("postgresql://") else Path(accounts) / "accounts.sqlite") as book:
        assert "s2026004" not in book.people()  # refused before anything was issued

    forced = tokens(bare_course, accounts, "--roster", roster_of(bare_course, 4), "--out", "tokens.csv", "--force")
    assert forced.returncode == 0, forced.stderr
    assert set(issued(bare_course / "tokens.csv")) == {"s2026004"}
    for person, token in {**before, **issued(bare_course / "tokens-2.csv")}.items():
        assert signs_in(accounts, token) is not None, person


def test_a_revoked_student_gets_no_token_unless_reinstated_by_name(bare_course, accounts):
    roster = roster_of(bare_course, 3)
    assert tokens(bare_course, accounts, "--roster", roster, "--instructor", "prof", "--out", "first.csv"
                  ).returncode == 0
    for person in ("s2026002", "prof"):
        assert tokens(bare_course, accounts, "--revoke", person).stdout.strip() == f"{person}: 1 token(s) revoked"

    quiet = tokens(bare_course, accounts, "--roster", roster)  # the run after adding no one
    assert quiet.returncode == 0, quiet.stderr
    assert "every roster student has a token already" in quiet.stdout and not (bare_course / "tokens.csv").exists()
    everyone = tokens(bare_course, accounts, "--roster", roster, "--reissue", "--out", "everyone.csv")
    assert everyone.returncode == 0, everyone.stderr
    assert set(issued(bare_course / "everyone.csv")) == {"s2026001", "s2026003"}
    assert "1 revoked student(s) get no token" in everyone.stderr
    for named in (("--student", "s2026002"), ("--instructor", "prof"), ("--reinstate", "s2026001")):
        refused = tokens(bare_course, accounts, "--roster", roster, *named, "--out", "named.csv")
        assert refused.returncode == 1 and not (bare_course / "named.csv").exists(), refused.stdout
        assert refused.stderr.strip().splitlines()[-1].startswith(f"error: {named[0]}: "), refused.stderr

    back = tokens(bare_course, accounts, "--roster", roster, "--reinstate", "s2026002", "--reinstate", "prof",
                  "--out", "back.csv")
    assert back.returncode == 0, back.stderr
    again = issued(bare_course / "back.csv")
    assert set(again) == {"s2026002", "prof"}
    assert signs_in(accounts, again["s2026002"]) == "s2026002/student"
    assert signs_in(accounts, again["prof"]) == "prof/instructor"  # the role they had
    assert signs_in(accounts, issued(bare_course / "first.csv")["s2026002"]) is None


def test_qkv_inits_gitignore_keeps_tokens_and_grades_out_of_git(bare_course):
    """Asked of git itself: `git add .` in a new course would commit none of what names students or signs in."""
    private = ["tokens.csv", "tokens-2.csv", "grades/attention-numpy/gradebook.sqlite",
               "grades/attention-numpy/feedback/s2026001/feedback.html", "grades/serve/accounts.sqlite"]
    for name in private:
        (bare_course / name).parent.mkdir(parents=True, exist_ok=True)
        (bare_course / name).write_text("x")
    git = ["git", "-c", "init.defaultBranch=main", "-c", f"safe.directory={bare_course}"]
    subprocess.run([*git, "init", "-q"], cwd=bare_course, check=True, timeout=60)
    listed = subprocess.run([*git, "add", "--dry-run", "."], cwd=bare_course, capture_output=True, text=True,
                            check=True, timeout=60).stdout
    assert "add 'course.yaml'" in listed
    assert [name for name in private if name in listed] == []
