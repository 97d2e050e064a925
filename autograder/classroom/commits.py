"""A GitHub Classroom repository in, the time of the commit that is graded out: when the student committed the
work, not when the instructor cloned it (cloning after the deadline is the normal workflow).

The commit is the one HEAD names (a commit id, or a branch resolved from the loose ref or `packed-refs`), read
bounded, never through a symbolic link. The commit itself is read by `git cat-file` with a git folder of this
module's own: no configuration, hooks or attributes of the student's repository are ever read (its
`.git/config` could name programs for git to run), only its object store. The time is the committer's, which
the student's own git wrote: intake.csv says so, since it can be set by hand as an LMS's time cannot.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

MAX_REF_BYTES = 300
MAX_PACKED_REFS_BYTES = 5_000_000
MAX_COMMIT_BYTES = 1_000_000
GIT_SECONDS = 10
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REF = re.compile(r"refs/(?:[A-Za-z0-9._-]+/)*[A-Za-z0-9._-]+")
_COMMITTER = re.compile(rb"^committer .*> (\d{1,12}) ([+-])(\d{2})(\d{2})$", re.M)


def _read_small(path: Path, limit: int) -> Optional[str]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device would block or never end
            return None
        data = handle.read(limit + 1)
    return data.decode("ascii", "replace") if len(data) <= limit else None


def head_commit(gitdir: Path) -> tuple[Optional[str], str]:
    """(the commit id HEAD names, '') or (None, why not)."""
    head = _read_small(gitdir / "HEAD", MAX_REF_BYTES)
    if head is None:
        return None, "no readable .git/HEAD"
    head = head.strip()
    if _SHA.fullmatch(head):
        return head, ""
    ref = head.removeprefix("ref:").strip()
    if not head.startswith("ref:") or not _REF.fullmatch(ref) or ".." in ref:
        return None, "a .git/HEAD that names no branch"
    loose = _read_small(gitdir / ref, MAX_REF_BYTES)
    if loose is not None and _SHA.fullmatch(loose.strip()):
        return loose.strip(), ""
    packed = _read_small(gitdir / "packed-refs", MAX_PACKED_REFS_BYTES) or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and _SHA.fullmatch(sha):
            return sha, ""
    return None, f"the branch {ref.removeprefix('refs/heads/')} has no commit"


def commit_time(repo: Path) -> tuple[Optional[dt.datetime], str]:
    """(the committer time of the commit HEAD names, where it came from), or (None, why there is none)."""
    gitdir = repo / ".git"
    if gitdir.is_symlink() or not gitdir.is_dir():
        return None, "no commit time: .git is not a folder"
    sha, why = head_commit(gitdir)
    if sha is None:
        return None, f"no commit time: {why}"
    git = shutil.which("git")
    if git is None:
        return None, "no commit time: git is not installed here"
    objects = gitdir / "objects"
    if objects.is_symlink() or not objects.is_dir():
        return None, "no commit time: the repository holds no objects (a zip of .git/HEAD alone?)"
    with tempfile.TemporaryDirectory(prefix="qkv-git-") as private:
        own = Path(private)
        for folder in ("objects", "refs"):
            (own / folder).mkdir()
        (own / "HEAD").write_text("ref: refs/heads/none\n")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": private, "GIT_DIR": private,
               "GIT_OBJECT_DIRECTORY": str(objects), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
               "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        try:
            done = subprocess.run([git, "cat-file", "commit", sha], env=env, cwd=private, stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=GIT_SECONDS)
        except (OSError, subprocess.TimeoutExpired):
            return None, f"no commit time: git could not read commit {sha[:7]}"
    if done.returncode != 0 or len(done.stdout) > MAX_COMMIT_BYTES:
        return None, f"no commit time: commit {sha[:7]} is not in the repository"
    header = done.stdout.split(b"\n\n", 1)[0]
    match = _COMMITTER.search(header)
    if match is None:
        return None, f"no commit time: commit {sha[:7]} has no committer line"
    sign = 1 if match.group(2) == b"+" else -1
    try:
        zone = dt.timezone(sign * dt.timedelta(hours=int(match.group(3)), minutes=int(match.group(4))))
        when = dt.datetime.fromtimestamp(int(match.group(1)), zone)
    except (OverflowError, OSError, ValueError):
        return None, f"no commit time: commit {sha[:7]} has a time out of range"
    return when, f"commit time of HEAD {sha[:7]} (the student's git sets it)"
