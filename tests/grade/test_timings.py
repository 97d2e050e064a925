"""`qkv grade --timings FILE`: where a run's CPU went, stage by stage (autograder/grade/timings.py), as the benchmark
reads it: the grader's stages from its threads' CPU clocks, the sandbox's from the handler's accounting."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from autograder.grade.timings import GRADER_STAGES, Timings
from autograder.sandbox import SandboxCpu
from conftest import QKV, key_module


def test_stages_count_cpu_not_waiting_and_other_is_the_rest():
    timings = Timings()
    with timings.stage("score"):
        sum(range(3 * 10**6))
    with timings.stage("pages"):
        time.sleep(0.2)
    timings.job(SandboxCpu(0.25, 1.0, 2.0))
    timings.job(SandboxCpu(0.25, 0.5, 0.0))
    figures = timings.to_json(2, sandboxed=True)
    assert set(figures["grader"]) == set(GRADER_STAGES)
    assert figures["grader"]["score"] > 0.02 and figures["grader"]["pages"] < 0.05  # asleep is not CPU
    assert sum(figures["grader"].values()) == pytest.approx(figures["cpu_s"], abs=0.01)
    assert figures["sandbox"] == {"jobs": 2, "handler_cpu_s": 0.5, "load_cpu_s": 1.5, "calls_cpu_s": 2.0}
    assert Timings().to_json(0, sandboxed=False)["sandbox"] is None


@pytest.mark.slow
def test_qkv_grade_writes_each_stage_and_the_sandboxs_cpu(built_numpy_same, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    key = key_module(built_numpy_same.assignment)
    (subs / "ada.py").write_text(key)
    # 0.6 s of CPU while loading, by the process's own clock: the same on a fast, a slow or a busy machine
    (subs / "ben.py").write_text("import time as _t\n_start = _t.process_time()\n"
                                 "while _t.process_time() - _start < 0.6:\n    pass\n" + key)
    (subs / "cho.py").write_text("x = 1\n")
    done = subprocess.run([str(QKV), "grade", "attention-numpy", str(subs), "--dist", str(built_numpy_same.out),
                           "--out", str(tmp_path / "out"), "--jobs", "2", "--timings", str(tmp_path / "t.json")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads((tmp_path / "t.json").read_text())
    assert figures["submissions"] == 3 and figures["wall_s"] > 0
    grader, sandbox = figures["grader"], figures["sandbox"]
    assert set(grader) == set(GRADER_STAGES) and all(v >= 0 for v in grader.values())
    assert grader["start"] > 0 and grader["score"] > 0 and grader["pages"] > 0
    assert sum(grader.values()) == pytest.approx(figures["cpu_s"], abs=0.01)
    assert sandbox["jobs"] == 3 and sandbox["handler_cpu_s"] > 0
    # loading's CPU is the child's own clock as its loading ended, so ben's 0.6 s are all in it
    assert sandbox["load_cpu_s"] >= 0.6 and sandbox["calls_cpu_s"] >= 0


@pytest.mark.slow
def test_a_timings_file_that_cannot_be_written_is_one_line_and_the_grades_stay(built_numpy_same, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "cho.py").write_text("x = 1\n")
    (tmp_path / "file").write_text("")
    done = subprocess.run([str(QKV), "grade", "attention-numpy", str(subs), "--dist", str(built_numpy_same.out),
                           "--out", str(tmp_path / "out"), "--timings", str(tmp_path / "file" / "t.json")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"error: {tmp_path / 'file' / 't.json'}: cannot write")
    assert (tmp_path / "out" / "gradebook.csv").is_file()
