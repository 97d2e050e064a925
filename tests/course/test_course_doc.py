"""docs/course.md, followed literally by a user who is not root, with qkv installed from its wheel into a fresh venv
outside the checkout.

The page's `sh` blocks are run line by line (`$ cd DIR` changes folder), its `file=PATH` blocks are written
where they say, in order; the page's first command installs the wheel, which lies in the folder the page
starts in. Then what the page promises is checked. The same install builds and grades the bundled
attention-numpy from a folder outside any course.

As root, every command runs as the user `make test` creates (tests/test_as_user.py), in a folder of its own
under /tmp. The venv gets the pinned dependencies beforehand, as root (this machine's pip configuration and
cache: nothing is fetched as the user), and belongs to the user from then on.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.assemble.manifest import find_manifest, resolve_assignment
from autograder.bank.load import load_bank_strict
from conftest import ROOT, key_module
from test_as_user import USER, ancestors, unavailable

pytestmark = pytest.mark.slow  # a fresh venv with qkv installed from its wheel

DOC = ROOT / "docs" / "course.md"
BLOCK = re.compile(r"^```(\w+)(?: file=(\S+))?\n(.*?)^```\n", re.M | re.S)


@dataclass(frozen=True)
class Machine:
    """Where the page is followed: the venv's bin folder, the wheel, a folder of the user's own, the user
    (None: this run is unprivileged already)."""

    bin: Path
    wheel: Path
    home: Path
    user: pwd.struct_passwd | None

    def environment(self) -> dict[str, str]:
        # no PYTHONPATH, no checkout: only what the wheel installed
        return {"PATH": f"{self.bin}:/usr/bin:/bin", "HOME": str(self.home), "LC_ALL": "C.UTF-8"}

    def run(self, command: str, cwd: Path, timeout: float = 900, given: str | None = None
            ) -> subprocess.CompletedProcess:
        """A shell line run as the user, with exactly `environment()` (and `given` on its stdin)."""
        argv = ["/bin/sh", "-c", command]
        if self.user is not None:
            runuser = shutil.which("runuser", path="/usr/sbin:/sbin:/usr/bin:/bin")
            argv = [runuser, "-u", self.user.pw_name, "--", "env", "-i",
                    *(f"{k}={v}" for k, v in self.environment().items()), *argv]
        return subprocess.run(argv, cwd=cwd, env=self.environment(), capture_output=True, text=True, timeout=timeout,
                              input=given)

    def write(self, path: Path, text: str) -> None:
        """A file written by the user, as an editor would."""
        done = self.run(f"mkdir -p {shlex.quote(str(path.parent))} && cat > {shlex.quote(str(path))}", self.home,
                        given=text)
        assert done.returncode == 0, done.stderr

    def folder(self, name: str) -> Path:
        path = self.home / name
        path.mkdir()
        if self.user is not None:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)
        return path


def _interpreter(user: pwd.struct_passwd | None) -> tuple[Path, dict[Path, int]]:
    """A Python of this version that the user can run, and the folder modes changed to let them reach it.

    The machine's own python3.X serves as it is; this one (a pyenv Python under a 0700 /root, say) gets its
    folders o+x, search only, as tests/test_as_user.py does, and their modes back at the end."""
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    ours = Path(os.path.realpath(sys.executable))
    if user is None:
        return ours, {}
    runuser = shutil.which("runuser", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if runuser is None:
        unavailable("no runuser (util-linux) here")
    for candidate in (ours, *(Path(d) / name for d in ("/usr/local/bin", "/usr/bin"))):
        probe = [runuser, "-u", user.pw_name, "--", str(candidate), "-c", "import ensurepip, venv"]
        if candidate.is_file() and subprocess.run(probe, capture_output=True, timeout=60).returncode == 0:
            return candidate, {}
    changed: dict[Path, int] = {}
    for path in {p for target in (ours.parent, Path(sys.base_prefix)) for p in ancestors(target)}:
        mode = path.stat().st_mode
        if not mode & stat.S_IXOTH:
            changed[path] = stat.S_IMODE(mode)
            path.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    return ours, changed


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> Machine:
    user = None
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam(USER)
        except KeyError:
            unavailable(f"no user {USER} (make test creates it when run as root)")
    dist = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            str(ROOT), "-w", str(dist)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = dist.glob("qkv-*.whl")
    home = Path(tempfile.mkdtemp(prefix="qkv-doc-", dir="/tmp"))  # pytest's own tmp is root's, 0700
    interpreter, changed = _interpreter(user)
    try:
        shutil.copy(wheel, home / wheel.name)
        venv = home / "venv"
        subprocess.run([str(interpreter), "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
        # the dependencies, pinned, from this machine's pip configuration; then qkv goes again: the page installs it
        pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
        # a PYTHONPATH naming a checkout would make pip think qkv is installed already
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        installed = subprocess.run([*pip, "install", "--quiet", "-c", str(ROOT / "requirements.lock"), str(wheel)],
                                   capture_output=True, text=True, timeout=1200, cwd=home, env=env)
        assert installed.returncode == 0, installed.stderr[-3000:]
        subprocess.run([*pip, "uninstall", "--quiet", "--yes", "qkv"], check=True, capture_output=True, env=env)
        if user is not None:
            subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(home)], check=True)
        yield Machine(venv / "bin", home / wheel.name, home, user)
    finally:
        for path, mode in changed.items():
            path.chmod(mode)
        subprocess.run(["rm", "-rf", str(home)], check=False)


def installed(machine: Machine) -> None:
    """qkv in the venv, from the wheel (kept as it is when the page installed it already)."""
    done = machine.run(f"pip install --quiet --no-deps {shlex.quote(str(machine.wheel))}", machine.home)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_core_install_has_no_checkout_and_no_heavy_extras(machine):
    installed(machine)
    probe = ("import importlib.util as u, autograder, qkv_runtime; "
             "print(autograder.__file__); print([m for m in ('torch', 'distributed', 'nbgrader', 'solutions') "
             "if u.find_spec(m)])")
    done = machine.run(f"python -c {shlex.quote(probe)}", machine.home)
    location, missing = done.stdout.splitlines()
    assert "site-packages" in location and str(ROOT) not in location
    assert missing == "[]"


def follow(machine: Machine, cwd: Path) -> tuple[list[tuple[str, subprocess.CompletedProcess]], Path]:
    """Every command of the page, as written, and the folder the page ends in."""
    ran = []
    for kind, path, body in BLOCK.findall(DOC.read_text(encoding="utf-8")):
        if path:
            machine.write(cwd / path, body)
            continue
        if kind != "sh":
            continue
        for line in body.splitlines():
            if not line.startswith("$ "):
                continue
            command = line[2:]
            if command.startswith("cd "):
                cwd = cwd / command[3:].strip()
                continue
            done = machine.run(command, cwd)
            assert done.returncode == 0, f"$ {command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            ran.append((command, done))
    return ran, cwd


def test_the_course_page_runs_as_written(machine):
    uninstalled = machine.run("pip uninstall --quiet --yes qkv", machine.home)  # the page installs it
    assert uninstalled.returncode == 0, uninstalled.stderr
    start = machine.folder("work")
    copied = machine.run(f"cp {shlex.quote(str(machine.wheel))} .", start)  # "with the wheel in the current folder"
    assert copied.returncode == 0, copied.stderr
    assert f"$ pip install {machine.wheel.name}\n" in DOC.read_text(encoding="utf-8")  # the page names this wheel
    ran, cwd = follow(machine, start)
    commands = [c for c, _ in ran]
    assert commands[0] == f"pip install {machine.wheel.name}"
    validate = next(d for c, d in ran if c.startswith("qkv validate"))
    assert validate.stderr.startswith("course: Transformers 101 (")  # the first line names the course
    # the core has no torch: the note names the install line for this wheel, [torch] and all
    hint = f"pip install {shlex.quote(str(start / machine.wheel.name) + '[torch]')}"
    assert f"torch references were not checked (the torch track needs PyTorch: {hint})" in validate.stderr

    with open(cwd / "grades" / "week-2" / "gradebook.csv", newline="") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    assert set(rows) == {"s001", "s002", "s003"}
    assert float(rows["s001"]["total"]) == float(rows["s001"]["max"])  # the key, with attend's softmax inside
    assert rows["s002"]["status"] == "graded" and 0 < float(rows["s002"]["mean-pool"]) < 4  # the unpadded test passes
    assert float(rows["s002"]["kv-cache-size"]) == 0 and float(rows["s002"]["attend"]) == 0
    feedback = cwd / "grades" / "week-2" / "feedback"
    page = (feedback / "s002" / "feedback.html").read_text()
    assert "you averaged over every position, padding included" in page
    assert "Fix softmax_rows first" in page  # attend's failures are softmax_rows's mistake
    output = json.loads((feedback / "s002" / "results.json").read_text())["output"]
    assert "fix softmax_rows first: your attend matches the reference with that same mistake inside" in output
    assert rows["s003"]["status"] == "load_error"
    results = json.loads((feedback / "s003" / "results.json").read_text())
    assert "SyntaxError" in results["output"] and "line 1" in results["output"]

    key = (cwd / "dist" / "week-2" / "key" / "week_2.py").read_text()
    assert "solutions" not in key  # the bundled softmax_rows is copied in: a sandbox has no solutions to import
    release = cwd / "dist" / "week-2" / "student"
    stub = (release / "week_2.py").read_text()
    assert 'r"""Implement `attend(S, V)`' in stub and r"(shape $(\dots, n_q, n_k)$)" in stub  # TeX as written
    everything = "\n".join(p.read_text(errors="replace") for p in release.rglob("*") if p.is_file())
    for secret in ("(H * mask[..., None]).sum(axis=-2) / mask.sum", "entries = 2 * layers * tokens * d_model",
                   "np.asarray(H, dtype=float).mean(axis=-2)", "softmax_rows(S) @ np.asarray(V",
                   "np.isfinite(row_max)"):
        assert secret not in everything, f"a reference of the course leaked into the release: {secret}"


def test_the_bundled_assignment_builds_and_grades_from_the_same_install(machine):
    installed(machine)
    here = machine.folder("bundled")
    build = machine.run("qkv build attention-numpy", here, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    assert build.stderr.startswith("course: qkv's bundled course (bundled with qkv)")
    subs = here / "subs"
    # the bundled assignment draws numbers per student: s1's own key (the build's key/ holds the class's numbers)
    machine.write(subs / "s1.py", key_module(resolve_assignment(find_manifest("attention-numpy"), load_bank_strict()),
                                             "s1"))
    machine.write(subs / "s2.py", "def softmax_rows(S, mask=None):\n    return S\n")
    grade = machine.run(f"qkv grade attention-numpy {shlex.quote(str(subs))}", here, timeout=600)
    assert grade.returncode == 0, grade.stderr[-2000:]
    with open(here / "grades" / "attention-numpy" / "gradebook.csv", newline="") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    assert float(rows["s1"]["total"]) == float(rows["s1"]["max"]) and float(rows["s2"]["total"]) == 0
    torchless = machine.run("qkv build attention-torch", here, timeout=600)
    assert torchless.returncode == 1 and "Traceback" not in torchless.stderr
    assert len(torchless.stderr.strip().splitlines()) == 2
    # the line that installs the extra names the wheel qkv came from, one that is there
    wheel = re.search(r"the torch track needs PyTorch: pip install '(/\S+\.whl)\[torch\]'$", torchless.stderr, re.M)
    assert wheel is not None and Path(wheel.group(1)).is_file(), torchless.stderr
