"""The Gradescope zip: unpacked as Gradescope would, its run_autograder grades a submission into results.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import key_module, replace_function
from solutions import misconceptions


def run_autograder(zip_path: Path, root: Path, submission: str, name: str = "submission.py", sid: str = "s1") -> dict:
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source_zip")
    (root / "submission").mkdir(parents=True)
    (root / "submission" / name).write_text(submission)
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"sid": sid, "email": "x@y.z"}]}))
    script = root / "source_zip" / "run_autograder"
    script.chmod(0o755)
    env = {**os.environ, "QKV_GRADESCOPE_ROOT": str(root),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads((root / "results" / "results.json").read_text())


def test_zip_has_gradescope_layout(built_numpy):
    with zipfile.ZipFile(built_numpy.out / "gradescope.zip") as archive:
        names = set(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
    assert {"setup.sh", "run_autograder", "source/bundle/assignment.json", "source/bundle/arrays.npz"} <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111


def test_key_scores_full_marks_and_schema_holds(built_numpy, tmp_path):
    results = run_autograder(built_numpy.out / "gradescope.zip", tmp_path, key_module(built_numpy.assignment))
    assert results["score"] == pytest.approx(built_numpy.assignment.max_points)
    for test in results["tests"]:
        assert {"name", "score", "max_score", "output", "visibility"} <= set(test)
        assert test["visibility"] in {"visible", "after_due_date"}
    assert {t["visibility"] for t in results["tests"]} == {"visible", "after_due_date"}


def test_mistake_loses_points_and_is_named(built_numpy, tmp_path):
    source = replace_function(key_module(built_numpy.assignment), "softmax_rows", misconceptions.softmax_over_columns)
    results = run_autograder(built_numpy.out / "gradescope.zip", tmp_path, source)
    assert results["score"] < built_numpy.assignment.max_points
    failed = [t for t in results["tests"] if t["score"] < t["max_score"]]
    assert failed and all(t["name"].startswith("softmax-rows") for t in failed)
    assert any("columns" in t["output"] for t in failed)


def test_empty_submission_folder_scores_zero_with_a_reason(built_numpy, tmp_path):
    results = run_autograder(built_numpy.out / "gradescope.zip", tmp_path, "", name="notes.txt")
    assert results["score"] == 0 and "missing" in results["output"]
