"""The sandbox and grading tests once more, as an unprivileged user: how most instructors run qkv.

CI runs as root, where the grader drops each submission to a uid of its own; a
normal user's qkv has no second uid, and bubblewrap makes a user namespace
instead, so the sandbox's pid 1, its pipes, signals and keyrings are a different
problem there. This test runs those modules again under `runuser` as the user
`make test` creates (qkv-tester), and fails (never skips) in CI when it cannot.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # reruns the sandbox and grading modules as another user

USER = "qkv-tester"
MODULES = ("test_runtime.py", "test_supervisor.py", "test_intake.py", "test_sandbox.py", "test_execute.py",
           "test_grade.py", "test_examples.py", "test_pytest_plugin.py", "test_hostile_class.py",
           "test_class_intake.py", "test_class_attacks.py", "test_class_grading.py", "test_spreadsheet.py")


def unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the unprivileged run cannot happen on this CI machine: {why}")
    pytest.skip(why)


def ancestors(path: Path) -> list[Path]:
    path = path.resolve()
    return [*reversed(path.parents), path]


def test_sandbox_and_grading_tests_pass_as_an_unprivileged_user():
    if os.geteuid() != 0:
        unavailable("this run is already unprivileged (the root run is CI's)")
    try:
        user = pwd.getpwnam(USER)
    except KeyError:
        unavailable(f"no user {USER} (make test creates it when run as root)")
    runuser = shutil.which("runuser", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if runuser is None:
        unavailable("no runuser (util-linux) here")
    interpreter = Path(os.path.realpath(sys.executable))
    # The user must be able to walk to the checkout, its venv and the interpreter (a pyenv Python under a
    # 0700 /root, say): those folders get o+x, search only, for this test, and get their modes back after.
    changed: dict[Path, int] = {}
    try:
        for path in {p for target in (ROOT, Path(sys.prefix), interpreter.parent) for p in ancestors(target)}:
            mode = path.stat().st_mode
            if not mode & stat.S_IXOTH:
                changed[path] = stat.S_IMODE(mode)
                path.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
        home = Path(tempfile.mkdtemp(prefix="qkv-user-home-", dir="/tmp"))  # pytest's own tmp is root's, 0700
        os.chown(home, user.pw_uid, user.pw_gid)
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C.UTF-8",
               **({"CI": os.environ["CI"]} if "CI" in os.environ else {})}
        command = [runuser, "-u", USER, "--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "--basetemp", str(home / "pytest"), *(str(ROOT / "tests" / m) for m in MODULES)]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    finally:
        for path, mode in changed.items():
            path.chmod(mode)
        if "home" in locals():
            subprocess.run(["rm", "-rf", str(home)], check=False)
    summary = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"as {USER}:\n{summary}"
    assert " passed" in done.stdout and " skipped" not in done.stdout.splitlines()[-1], summary
