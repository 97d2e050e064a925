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
    missing = [name for name in ("runuser", "unshare") if shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin") is None]
    if missing:
        return f"no {' or '.join(missing)} (util-linux) here"
    if subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0:
        return "no mount namespace of its own for the run"
    return None


def hand_over(folder: Path) -> None:
    """Make `folder` and everything in it the user's, and the folders above it searchable as they are."""
    user = pwd.getpwnam(USER)
    for path in (folder, *folder.rglob("*")):
        os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


def as_user(command: list[str], home: Path, stage: Path) -> list[str]:
    """`command`, run as the user with `home` as its home, in a mount namespace where it can reach the code;
    `stage` is an empty folder of root's for the namespace's mounts."""
    interpreter = Path(os.path.realpath(sys.executable))
    mounts = way_in([ROOT, Path(sys.prefix), interpreter.parent], stage)
    script = "set -e\n" + "".join(shlex.join(c) + "\n" for c in mounts)
    run = ["runuser", "-u", USER, "--", "env", f"HOME={home}", f"PATH={Path(sys.executable).parent}:/usr/bin:/bin",
           "LC_ALL=C.UTF-8", *command]
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script + "exec " + shlex.join(run)]
