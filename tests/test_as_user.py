"""The sandbox and grading tests once more, as an unprivileged user: how most instructors run qkv.

CI runs as root, where the grader drops each submission to a uid of its own; a
normal user's qkv has no second uid, and bubblewrap makes a user namespace
instead, so the sandbox's pid 1, its pipes, signals and keyrings are a different
problem there. This test runs those modules again under `runuser` as the user
`make test` creates (qkv-tester), and fails (never skips) in CI when it cannot.

The user must walk to the checkout, its venv and the interpreter (a pyenv Python
under a 0700 /root, a clone in a 0700 temporary folder). No mode is changed for
that: the run gets a mount namespace of its own, where each folder on the way
that others may not search is covered by one they may, holding only the way on.
Other test workers, and other runs on the machine, see every folder as it was.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT
from servers import TEST_USER as USER

# The rerun takes minutes, so the module is slow as a whole: tests/conftest.py starts such modules first.
pytestmark = pytest.mark.slow

@dataclass(frozen=True)
class Rerun:
    modules: tuple[str, ...]  # paths under tests/
    select: str = ""  # pytest's -k: which of their tests


# The modules rerun, in groups of about equal length: each group is a class, so xdist's loadscope gives each its
# own worker and the rerun is not one long pole at the end of `make test`. Not rerun: the modules of pure code,
# whoever runs it (test_runtime.py: the decoders and parsers; test_supervisor.py: the supervisor's state machine);
# the sandbox that runs them in each student's process is test_sandbox.py's.
GROUPS = {
    "sandbox": Rerun(("sandbox/test_sandbox.py", "grade/test_execute.py", "sandbox/test_handler.py",
                      "sandbox/test_confine.py", "sandbox/test_proctools.py", "sandbox/test_attempt_budget.py",
                      "sandbox/test_fair.py")),
    "grading": Rerun(("grade/test_intake.py", "grade/test_grade.py", "routes/test_examples.py",
                      "routes/test_pytest_plugin.py", "routes/test_hostile_class.py")),
    "class": Rerun(("classroom/test_class_intake.py", "classroom/test_class_attacks.py",
                    "classroom/test_class_grading.py", "report/test_spreadsheet.py")),
    # with the files a class and a service leave, as this user's own umask makes them (SQLite and PostgreSQL)
    "servers": Rerun(("serve/test_servers.py", "selfcheck/test_selfcheck_submit.py", "serve/test_serve_grader.py",
                      "engine/test_private_at_rest.py")),
    # the service on SQLite only: which database holds the attempts is the same code whoever runs the service, and
    # the root run tries both; what changes with the user (the service's sandbox, its files) is the same on either
    "service": Rerun(("serve/test_serve.py", "serve/test_serve_abuse.py", "serve/test_lti.py",
                      "serve/test_practice_serve.py"),
                     select="not postgresql"),
    # a real JupyterHub whose spawner starts each hub user's server as this same user; the drill's history file
    "hub": Rerun(("serve/test_hub.py", "practice/test_practice_drill.py")),
}


def unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the unprivileged run cannot happen on this CI machine: {why}")
    pytest.skip(why)


def ancestors(path: Path) -> list[Path]:
    path = path.resolve()
    return [*reversed(path.parents), path]


def searchable_by_all(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXOTH)


def way_in(targets: list[Path], stage: Path) -> list[list[str]]:
    """Commands (for root, in a mount namespace of its own) after which any user may walk to each of `targets`:
    every folder on the way that others may not search is covered by a tmpfs that they may, holding the entries on
    the way on (all of a target's own), each bind-mounted from the original, whose modes stay as they are. `stage`
    (root's only) keeps each covered folder reachable for those binds. Outer folders first: a folder below one
    covered is reached through its bind."""
    targets = [t.resolve() for t in targets]
    covered = sorted({p for t in targets for p in ancestors(t) if not searchable_by_all(p)}, key=lambda p: len(p.parts))
    commands: list[list[str]] = []
    for number, folder in enumerate(covered):
        if folder == Path("/"):
            unavailable("/ is not searchable by other users")
        names = sorted(os.listdir(folder) if folder in targets
                       else {t.relative_to(folder).parts[0] for t in targets if folder in t.parents})
        saved = stage / str(number)
        commands += [["mkdir", str(saved)], ["mount", "--rbind", str(folder), str(saved)],
                     ["mount", "-t", "tmpfs", "-o", "mode=0755", "qkv-way-in", str(folder)]]
        for name in names:
            original, there = folder / name, str(folder / name)
            if original.is_symlink():
                commands.append(["ln", "-s", os.readlink(original), there])
                continue
            commands += [["mkdir" if original.is_dir() else "touch", there],
                         ["mount", "--rbind", str(saved / name), there]]
    return commands


def test_way_in_covers_only_the_folders_others_may_not_search(tmp_path):
    """On folders made for it: a 0700 folder on the way to the target is covered and only the way on bound back,
    the 0700 target itself with all its entries; a 0755 folder is left alone."""
    (tmp_path / "shut" / "open" / "target" / "inner").mkdir(parents=True)
    (tmp_path / "shut" / "beside").mkdir()
    target = tmp_path / "shut" / "open" / "target"
    (target / "file").write_text("x")
    (target / "link").symlink_to("file")
    for folder, mode in ((tmp_path / "shut", 0o700), (tmp_path / "shut" / "open", 0o755), (target, 0o700)):
        folder.chmod(mode)
    commands = way_in([target], Path("/stage"))
    covered = [c[-1] for c in commands if c[:2] == ["mount", "-t"]]
    outer = [p for p in ancestors(tmp_path) if not searchable_by_all(p)]  # pytest's own 0700 folders
    assert covered == [str(p) for p in outer] + [str(tmp_path / "shut"), str(target)]
    bound = [c[-1] for c in commands if c[:2] == ["mount", "--rbind"] and not c[-1].startswith("/stage")]
    assert str(tmp_path / "shut" / "open") in bound and str(tmp_path / "shut" / "beside") not in bound
    assert {str(target / "inner"), str(target / "file")} <= set(bound)
    assert ["ln", "-s", "file", str(target / "link")] in commands
    assert oct(target.stat().st_mode & 0o777) == "0o700"  # planned, not done: nothing changed out here


def rerun_as_user(rerun: Rerun) -> None:
    """Runs `rerun` under pytest as USER in a mount namespace of its own; fails with the run's tail."""
    if os.geteuid() != 0:
        unavailable("this run is already unprivileged (the root run is CI's)")
    try:
        user = pwd.getpwnam(USER)
    except KeyError:
        unavailable(f"no user {USER} (make test creates it when run as root)")
    tools = {name: shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin") for name in ("runuser", "unshare")}
    if None in tools.values():
        unavailable(f"no {' or '.join(n for n, found in tools.items() if found is None)} (util-linux) here")
    probe = subprocess.run([tools["unshare"], "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        unavailable(f"no mount namespace of its own for the run: {probe.stderr.strip()}")
    interpreter = Path(os.path.realpath(sys.executable))
    home = Path(tempfile.mkdtemp(prefix="qkv-user-home-", dir="/tmp"))  # pytest's own tmp is root's, 0700
    stage = Path(tempfile.mkdtemp(prefix="qkv-user-stage-", dir="/tmp"))
    try:
        os.chown(home, user.pw_uid, user.pw_gid)
        # the same code as this run's, where PYTHONPATH points at another copy of it
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C.UTF-8",
               **{name: os.environ[name] for name in ("CI", "PYTHONPATH") if name in os.environ}}
        tests = [tools["runuser"], "-u", USER, "--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "--basetemp", str(home / "pytest"), *(["-k", rerun.select] if rerun.select else []),
                 *(str(ROOT / "tests" / m) for m in rerun.modules)]
        script = "set -e\n" + "".join(shlex.join(c) + "\n" for c in way_in([ROOT, Path(sys.prefix),
                                                                             interpreter.parent], stage))
        command = [tools["unshare"], "--mount", "--propagation", "private", "--", "sh", "-c",
                   script + "exec " + shlex.join(tests)]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    finally:
        subprocess.run(["rm", "-rf", str(home)], check=False)
        shutil.rmtree(stage, ignore_errors=True)  # its mount points, empty out here
    summary = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"as {USER}:\n{summary}"
    assert " passed" in done.stdout and " skipped" not in done.stdout.splitlines()[-1], summary


class TestSandboxAsUser:
    def test_the_sandbox_tests_pass_as_an_unprivileged_user(self):
        rerun_as_user(GROUPS["sandbox"])


class TestGradingAsUser:
    def test_the_grading_tests_pass_as_an_unprivileged_user(self):
        rerun_as_user(GROUPS["grading"])


class TestClassAsUser:
    def test_the_class_tests_pass_as_an_unprivileged_user(self):
        rerun_as_user(GROUPS["class"])


class TestServersAsUser:
    def test_the_server_tests_pass_as_an_unprivileged_user(self):
        rerun_as_user(GROUPS["servers"])


class TestServiceAsUser:
    def test_the_service_tests_pass_as_an_unprivileged_user(self):
        rerun_as_user(GROUPS["service"])


class TestHubAsUser:
    def test_the_hub_tests_pass_as_an_unprivileged_user(self):
        rerun_as_user(GROUPS["hub"])


def test_each_module_is_rerun_once_and_exists():
    """A module named twice would run twice as the user; one renamed would fail only in the unprivileged run."""
    rerun = [module for group in GROUPS.values() for module in group.modules]
    assert len(rerun) == len(set(rerun))
    assert [module for module in rerun if not (ROOT / "tests" / module).is_file()] == []
