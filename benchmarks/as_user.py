"""A benchmark's `qkv grade` as an unprivileged user, as most instructors run it: root's benchmark run only.

The command runs under `runuser` in a mount namespace of its own, where the checkout, the virtual environment
and the interpreter are reachable through folders the user may not search (tests/test_as_user.py's `way_in`,
the same way the test suite reruns its modules as that user); the class, its build and the output folder are
the user's own. Nothing outside the namespace changes.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from servers import TEST_USER as USER
from test_as_user import way_in

ROOT = Path(__file__).resolve().parents[1]


def why_not() -> Optional[str]:
    """Why this run cannot grade as the unprivileged user (None: it can)."""
    if os.geteuid() != 0:
        return "the benchmark runs as a user already (the run as root measures both)"
    try:
        pwd.getpwnam(USER)
    except KeyError:
        return f"no user {USER} (`make setup` creates it when run as root)"
    missing = [name for name in TOOLS if tool(name) is None]
    if missing:
        return f"no {' or '.join(missing)} (util-linux) here"
    if subprocess.run([tool("unshare"), "--mount", "true"], capture_output=True).returncode != 0:
        return "no mount namespace of its own for the run"
    return None


TOOLS = ("runuser", "unshare", "env")


def tool(name: str) -> Optional[str]:
    """Where `name` is, looked for where util-linux puts it whatever root's PATH."""
    return shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")


def hand_over(folder: Path) -> None:
    """Make `folder` (root's own, 0700) and everything in it the user's: the inside first, so that no process of
    the user's can reach it, and swap a folder for a link, before the last chown opens it to them."""
    user = pwd.getpwnam(USER)
    for path in (*sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True), folder):
        os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


def as_user(command: list[str], home: Path, stage: Path) -> list[str]:
    """`command`, run as the user with `home` as its home and an environment of its own (none of root's), in a
    mount namespace where it can reach the code; `stage` is an empty folder of root's for the namespace's
    mounts. The wall time measured around it also holds the namespace's mounts and runuser's start: some ms."""
    interpreter = Path(os.path.realpath(sys.executable))
    mounts = way_in([ROOT, Path(sys.prefix), interpreter.parent], stage)
    script = "set -e\n" + "".join(shlex.join(c) + "\n" for c in mounts)
    run = [tool("runuser"), "-u", USER, "--", tool("env"), "-i", f"HOME={home}", f"USER={USER}", "LC_ALL=C.UTF-8",
           f"PATH={Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", *command]
    return [tool("unshare"), "--mount", "--propagation", "private", "--", "sh", "-c",
            script + "exec " + shlex.join(run)]
