"""docs/course.md, followed literally, with qkv installed from its wheel into a fresh venv outside the checkout.

The page's `sh` blocks are run line by line (`$ pip install qkv` installs the wheel
built from this checkout, `$ cd DIR` changes folder), its `file=PATH` blocks are
written where they say, in order; then what the page promises is checked. The same
install builds and grades the bundled attention-numpy from a folder outside any course.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

DOC = ROOT / "docs" / "course.md"
BLOCK = re.compile(r"^```(\w+)(?: file=(\S+))?\n(.*?)^```\n", re.M | re.S)


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> tuple[Path, Path]:
    """(the venv's bin folder, the wheel): qkv's core from its wheel, and its dependencies, nothing of the checkout."""
    work = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            str(ROOT), "-w", str(work / "dist")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (work / "dist").glob("qkv-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                "--disable-pip-version-check", "-c", str(ROOT / "requirements.lock"), str(wheel)],
                               capture_output=True, text=True, timeout=1200, cwd=work,
                               # a PYTHONPATH naming a checkout would make pip think qkv is installed already
                               env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert installed.returncode == 0, installed.stderr[-3000:]
    return venv / "bin", wheel


def environment(bin_dir: Path, home: Path) -> dict[str, str]:
    # no PYTHONPATH, no checkout: only what the wheel installed
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C.UTF-8"}


def test_the_core_install_has_no_checkout_and_no_heavy_extras(wheel_venv, tmp_path):
    bin_dir, _ = wheel_venv
    probe = ("import importlib.util as u, autograder, qkv_runtime; "
             "print(autograder.__file__); print([m for m in ('torch', 'distributed', 'nbgrader', 'solutions') "
             "if u.find_spec(m)])")
    done = subprocess.run([str(bin_dir / "python"), "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          env=environment(bin_dir, tmp_path))
    location, missing = done.stdout.splitlines()
    assert "site-packages" in location and str(ROOT) not in location
    assert missing == "[]"


def test_the_course_page_runs_as_written(wheel_venv, tmp_path):
    bin_dir, wheel = wheel_venv
    env = environment(bin_dir, tmp_path)
    cwd = tmp_path / "work"
    cwd.mkdir()
    ran = []
    for kind, path, body in BLOCK.findall(DOC.read_text(encoding="utf-8")):
        if path:
            target = cwd / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
            continue
        if kind != "sh":
            continue
        for line in body.splitlines():
            if not line.startswith("$ "):
                continue
            command = line[2:]
            if command == "pip install qkv":
                command = f"pip install --quiet --no-deps {shlex.quote(str(wheel))}"  # already installed, with its deps
            if command.startswith("cd "):
                cwd = cwd / command[3:].strip()
                continue
            done = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, f"$ {command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            ran.append((command, done))
    assert any(c.startswith("qkv validate") for c, _ in ran) and any(c.startswith("qkv build") for c, _ in ran)
    validate = next(d for c, d in ran if c.startswith("qkv validate"))
    assert validate.stderr.startswith("course: Transformers 101 (")  # the first line names the course
    with open(cwd / "grades" / "week-2" / "gradebook.csv", newline="") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    assert set(rows) == {"s001", "s002", "s003"}
    assert float(rows["s001"]["total"]) == float(rows["s001"]["max"])
    assert rows["s002"]["status"] == "graded" and 0 < float(rows["s002"]["mean-pool"]) < 4  # the unpadded test passes
    assert float(rows["s002"]["kv-cache-size"]) == 0
    page = (cwd / "grades" / "week-2" / "feedback" / "s002" / "feedback.html").read_text()
    assert "you averaged over every position, padding included" in page
    assert rows["s003"]["status"] == "load_error"
    results = json.loads((cwd / "grades" / "week-2" / "feedback" / "s003" / "results.json").read_text())
    assert "SyntaxError" in results["output"] and "line 1" in results["output"]
    release = cwd / "dist" / "week-2" / "student"
    everything = "\n".join(p.read_text(errors="replace") for p in release.rglob("*") if p.is_file())
    for secret in ("(H * mask[..., None]).sum(axis=-2) / mask.sum", "entries = 2 * layers * tokens * d_model",
                   "np.asarray(H, dtype=float).mean(axis=-2)"):
        assert secret not in everything, f"a reference of the course leaked into the release: {secret}"


def test_the_bundled_assignment_builds_and_grades_from_the_same_install(wheel_venv, tmp_path):
    bin_dir, _ = wheel_venv
    env = environment(bin_dir, tmp_path)
    qkv = str(bin_dir / "qkv")
    build = subprocess.run([qkv, "build", "attention-numpy"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    assert build.stderr.startswith("course: qkv's bundled course (bundled with qkv)")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "s1.py").write_bytes((tmp_path / "dist" / "attention-numpy" / "key" / "attention_numpy.py").read_bytes())
    (subs / "s2.py").write_text("def softmax_rows(S, mask=None):\n    return S\n")
    grade = subprocess.run([qkv, "grade", "attention-numpy", str(subs)], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
    assert grade.returncode == 0, grade.stderr[-2000:]
    with open(tmp_path / "grades" / "attention-numpy" / "gradebook.csv", newline="") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    assert float(rows["s1"]["total"]) == float(rows["s1"]["max"]) and float(rows["s2"]["total"]) == 0
    torchless = subprocess.run([qkv, "build", "attention-torch"], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=600)
    assert torchless.returncode == 1 and "pip install 'qkv[torch]'" in torchless.stderr
    assert "Traceback" not in torchless.stderr and len(torchless.stderr.strip().splitlines()) == 2
    assert os.environ.get("PYTHONPATH") is None or "PYTHONPATH" not in env
