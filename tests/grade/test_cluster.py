"""qkv grade --cluster on real Dask LocalClusters (worker processes, real sandbox, real SQLite): same gradebook
as a local run, a worker killed mid-run, a submission whose grading keeps killing workers, the CLI killed and resumed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster, WorkerPlugin

from autograder.bundle import read_bundle
from autograder.grade.intake import submission_from_bytes
from autograder.grade.route import open_route
from autograder.routes.class_grading import GRADEBOOK_FILE, grade_class
from autograder.references import misconceptions
from conftest import QKV, gradebook_rows, graded_so_far, key_module, key_notebook, replace_function, said

pytestmark = pytest.mark.slow  # real Dask clusters

def sleepy_class(folder: Path, key: str, count: int, seconds: float) -> list[str]:
    """`count` perfect submissions that each take at least `seconds` to load, so workers are busy when killed."""
    folder.mkdir()
    for i in range(count):
        (folder / f"s{i:02d}.py").write_text(f"import time\ntime.sleep({seconds})\n{key}\n# {i}\n")
    return [f"s{i:02d}" for i in range(count)]


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """Two one-thread worker processes behind a scheduler reached by its tcp:// address, as a real cluster is.
    allowed-failures 1 (default 3) keeps the poison test to two worker deaths; saturation 1.0, as `local:N`
    has, hands a worker only the task it runs. Their scratch is a folder of the test's own, as docs/cluster.md
    asks of a worker's operator (qkv refuses Dask's shared default when another user made it)."""
    settings = {"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(settings):
        scratch = str(tmp_path_factory.mktemp("dask-scratch"))
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               local_directory=scratch, scheduler_kwargs={"local_directory": scratch})
    with cluster, Client(cluster) as client:
        yield cluster, client


def test_cluster_gradebook_is_identical_to_local(built_numpy_same, tmp_path):
    assignment = built_numpy_same.assignment
    key = key_module(assignment)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "perfect.py").write_text(key)
    (subs / "notebook.ipynb").write_text(key_notebook(assignment, built_numpy_same.out / "student" / f"{assignment.module_name}.ipynb"))
    (subs / "stub.py").write_bytes((built_numpy_same.out / "student" / f"{assignment.module_name}.py").read_bytes())
    (subs / "columns.py").write_text(replace_function(key, "softmax_rows", misconceptions.softmax_over_columns))
    (subs / "empty.py").write_text("")
    (subs / "syntax.py").write_text("def softmax_rows(S:\n")
    (subs / "looping.py").write_text(key + "\nwhile True:\n    pass\n")
    # a student trying to take its grader down: the sandbox's pid namespace and uid stop it
    (subs / "killer.py").write_text("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + key)
    bundle = built_numpy_same.out / "autograder"
    local = grade_class(bundle, subs, tmp_path / "local", jobs=2, timeout=3.0)
    remote = grade_class(bundle, subs, tmp_path / "cluster", timeout=3.0, cluster="local:2")

    assert remote.graded_now == local.graded_now == 8
    statuses = {r.student: r.status for r in remote.results}
    assert statuses["perfect"] == statuses["notebook"] == "graded"
    assert (statuses["empty"], statuses["syntax"], statuses["looping"]) == ("empty", "load_error", "timeout")
    assert statuses["killer"] != "worker_lost"
    assert (tmp_path / "cluster" / "gradebook.csv").read_bytes() == (tmp_path / "local" / "gradebook.csv").read_bytes()
    for student in statuses:
        for name in ("results.json", "feedback.html"):
            made_here = (tmp_path / "local" / "feedback" / student / name).read_bytes()
            assert (tmp_path / "cluster" / "feedback" / student / name).read_bytes() == made_here, (student, name)
    query = ("SELECT student, digest, status, score, max_score, isolation, result FROM submissions ORDER BY student",
             "SELECT * FROM test_scores ORDER BY student, problem, test")
    for sql in query:
        with sqlite3.connect(tmp_path / "local" / GRADEBOOK_FILE) as here, \
                sqlite3.connect(tmp_path / "cluster" / GRADEBOOK_FILE) as there:
            assert there.execute(sql).fetchall() == here.execute(sql).fetchall()


def test_a_worker_killed_mid_run_has_its_submission_graded_elsewhere_exactly_once(built_numpy_same, dask_cluster, tmp_path):
    cluster, client = dask_cluster
    client.wait_for_workers(2)
    students = sleepy_class(tmp_path / "subs", key_module(built_numpy_same.assignment), 12, 0.5)
    victim_address, victim_pid = sorted(client.run(os.getpid).items())[0]
    recorded: list[str] = []
    interrupted: list[str] = []

    def running_on_victim(dask_worker) -> list[str]:
        return [ts.key[1] for ts in dask_worker.state.tasks.values() if ts.state == "executing"]

    def progress(done: int, total: int, student: str) -> None:
        recorded.append(student)
        while done == 3 and not interrupted:  # wait for the victim to be mid-task, then kill it
            interrupted.extend(client.run(running_on_victim, workers=[victim_address])[victim_address])
            if interrupted:
                os.kill(victim_pid, signal.SIGKILL)
            time.sleep(0.05)

    run = grade_class(built_numpy_same.out / "autograder", tmp_path / "subs", tmp_path / "out", timeout=10.0,
                      cluster=cluster.scheduler_address, progress=progress)
    assert len(interrupted) == 1, "the worker must die while grading a submission"
    assert sorted(recorded) == students, "every submission recorded exactly once"
    table = gradebook_rows(tmp_path / "out")
    assert sorted(table) == students and run.graded_now == 12
    assert all(r["status"] == "graded" and float(r["total"]) == float(r["max"]) for r in table.values())
    client.wait_for_workers(2)
    assert victim_pid not in client.run(os.getpid).values(), "the killed worker was restarted, not reused"


def test_a_stream_that_has_nothing_yet_is_asked_again_while_the_cluster_grades(built_numpy_same, dask_cluster):
    # qkv serve --cluster hands the route a stream of what students hand in, where None is "nothing yet": what is
    # handed in while a slow submission is graded goes to a free worker, not after the slow one
    cluster, client = dask_cluster
    client.wait_for_workers(2)
    key = key_module(built_numpy_same.assignment)
    bundle_dir = built_numpy_same.out / "autograder"
    bundle = read_bundle(bundle_dir)
    slow = submission_from_bytes("slow", Path("slow.py"), f"import time\ntime.sleep(4)\n{key}".encode())
    quick = submission_from_bytes("quick", Path("quick.py"), key.encode())

    def stream():
        yield slow
        began = time.monotonic()
        while time.monotonic() - began < 0.5:
            yield None
        yield quick

    limits = replace(bundle.limits, load_seconds=20.0)
    with open_route(bundle, bundle_dir, None, limits, "allow-rlimits", cluster.scheduler_address) as route:
        graded = [(submission.student, result.status) for submission, result, _ in route.grade(stream())]
    assert graded == [("quick", "graded"), ("slow", "graded")]


def test_a_file_with_nothing_to_run_comes_back_from_the_cluster_as_intake_left_it(built_numpy_same, dask_cluster):
    # a worker handed a submission without a program scored it as intake left it; it used to run None and
    # fail the task, and with it the whole batch
    cluster, client = dask_cluster
    key = key_module(built_numpy_same.assignment)
    bundle_dir = built_numpy_same.out / "autograder"
    bundle = read_bundle(bundle_dir)
    empty = submission_from_bytes("empty", Path("empty.py"), b"  \n")
    honest = submission_from_bytes("honest", Path("honest.py"), key.encode())
    with open_route(bundle, bundle_dir, None, bundle.limits, "allow-rlimits", cluster.scheduler_address) as route:
        graded = {submission.student: result for submission, result, _ in route.grade([empty, honest])}
    assert (graded["empty"].status, graded["empty"].message, graded["empty"].score) == ("empty", "empty.py is empty", 0.0)
    assert graded["honest"].status == "graded" and graded["honest"].score == bundle.max_points


class DieWhenGrading(WorkerPlugin):
    """Test only: the worker process dies (SIGKILL, nothing cleaned up) whenever it starts grading `student`."""

    name = "die-when-grading"

    def __init__(self, student: str) -> None:
        self.student = student

    def transition(self, key, start, finish, **kwargs) -> None:
        if finish == "executing" and isinstance(key, tuple) and key[1] == self.student:
            os.kill(os.getpid(), signal.SIGKILL)


def test_a_submission_that_keeps_killing_its_worker_is_marked_and_the_batch_finishes(built_numpy_same, dask_cluster, tmp_path):
    """Student code cannot kill a Dask worker (it runs in the sandbox's children; see `killer` above). What can is
    a fault of the worker itself whenever it grades one submission: the OOM killer, a crash in a native library.
    A worker plugin makes that fault real: the worker process is SIGKILLed as it starts grading `poison`."""
    cluster, client = dask_cluster
    client.wait_for_workers(2)
    key = key_module(built_numpy_same.assignment)
    subs = tmp_path / "subs"
    subs.mkdir()
    for student in ("a", "b", "poison", "c", "d", "e"):
        (subs / f"{student}.py").write_text(f"{key}\n# {student}\n")
    client.register_plugin(DieWhenGrading("poison"))
    try:
        run = grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", timeout=10.0,
                          cluster=cluster.scheduler_address)
    finally:
        client.unregister_worker_plugin(DieWhenGrading.name)
    table = gradebook_rows(tmp_path / "out")
    assert len(table) == 6 and run.graded_now == 6
    assert table["poison"]["status"] == "worker_lost" and float(table["poison"]["total"]) == 0
    lost = next(r for r in run.results if r.student == "poison")
    assert "2 Dask workers died while grading this submission" in lost.message
    others = [r for s, r in table.items() if s != "poison"]
    assert all(r["status"] == "graded" and float(r["total"]) == float(r["max"]) for r in others)


def test_cli_on_local_cluster_killed_midway_resumes_from_the_gradebook(built_numpy_same, tmp_path):
    students = sleepy_class(tmp_path / "subs", key_module(built_numpy_same.assignment), 16, 0.3)
    out = tmp_path / "out"
    command = [str(QKV), "grade", "attention-numpy", str(tmp_path / "subs"), "--dist", str(built_numpy_same.out),
               "--out", str(out), "--cluster", "local:2"]
    # the killed run leaves its private scratch folder behind: in the test's own folder, not in /tmp
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               env=env)
    deadline = time.time() + 120
    graded_before_kill = 0
    while time.time() < deadline and graded_before_kill < 3:
        time.sleep(0.2)
        graded_before_kill = graded_so_far(out / GRADEBOOK_FILE)
    os.killpg(process.pid, signal.SIGKILL)  # the client, its scheduler and its workers
    process.wait()
    assert 3 <= graded_before_kill < 16, "the run must be killed part-way"
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        survived = dict(db.execute("SELECT student, graded_at FROM submissions"))
    finish = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert finish.returncode == 0, finish.stderr
    assert f"graded {16 - len(survived)}, unchanged and skipped {len(survived)}" in finish.stdout.replace("\n", " ")
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        final = dict(db.execute("SELECT student, graded_at FROM submissions"))
    assert sorted(final) == students
    assert all(final[s] == t for s, t in survived.items()), "a submission was graded twice"
    assert all(float(r["total"]) == float(r["max"]) for r in gradebook_rows(out).values())


@pytest.mark.parametrize("extra, expected", [
    (["--cluster", "somewhere"], "neither a scheduler address"),
    (["--cluster", "local:0"], "local:N needs 1 <= N"),
    (["--cluster", "local:2", "--jobs", "2"], "drop --jobs"),
])
def test_cli_cluster_errors_are_one_line_and_leave_no_gradebook(built_numpy_same, tmp_path, extra, expected):
    (tmp_path / "subs").mkdir()
    command = [str(QKV), "grade", "attention-numpy", str(tmp_path / "subs"), "--dist", str(built_numpy_same.out),
               "--out", str(tmp_path / "out"), *extra]
    run = subprocess.run(command, capture_output=True, text=True)
    assert run.returncode == 1
    assert expected in run.stderr and "Traceback" not in run.stderr
    assert len(said(run.stderr)) == 1
    assert not (tmp_path / "out").exists()
