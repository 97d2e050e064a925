"""Sandbox tests with real bubblewrap and real processes, no mocks.

The hostile and broken submissions live in tests/fixtures/submissions/, one
attack per file (empty.py is deliberately 0 bytes). Most run once, together with
copies of an honest submission, as one batch through a two-worker pool (the
memory and size attacks through a second one, with time limits only memory can
beat); the tests below then check what each one earned. Tiny problems stand in
for the real ones: softmax_rows(S) and double(x).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from autograder.sandbox import Call, ProblemCalls, Program, SandboxError, SandboxPool, SubmissionRun
from autograder.sandbox import pool as pool_module
from autograder.sandbox.worker import proctools
from conftest import CORE, HOSTILE, MEMORY_TEST_LIMITS, ROOT, SANDBOX_LIMITS, S, X, needs_bwrap, require_bwrap, wait_for

SECRET_VARIABLE = "QKV_TEST_GRADER_SECRET"
# The batch's attacks whose tests check what the memory and size limits say: they run under MEMORY_TEST_LIMITS.
MEMORY_ATTACKS = frozenset({"memory_bomb.py", "memory_bomb_at_load.py", "bad_returns.py"})


def softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)




def probe(function: str, *args: object) -> ProblemCalls:
    return ProblemCalls(function, (Call(function, function, args),))


def source(name: str) -> str:
    return (HOSTILE / name).read_text()


def assert_good(run: SubmissionRun) -> None:
    assert run.status == "ok", run.message
    assert run.problems["softmax"].status == "ok"
    np.testing.assert_allclose(run.problems["softmax"].results["s1"].outputs[0], softmax(S))
    np.testing.assert_allclose(run.problems["softmax"].results["s2"].outputs[0], softmax(10 * S))
    assert_double_ok(run)


def assert_double_ok(run: SubmissionRun) -> None:
    double = run.problems["double"]
    assert double.status == "ok", double.message
    np.testing.assert_array_equal(double.results["d1"].outputs[0], 2 * X)
    assert double.results["d2"].outputs == (np.array(6),)


def batch_jobs(host_tmp: Path, port: int) -> list[tuple[str, str, tuple[ProblemCalls, ...]]]:
    escape_targets = "|".join(
        [
            str(host_tmp / "escaped-to-host-tmp.txt"),
            f"/tmp/qkv-escaped-{os.getpid()}.txt",
            str(ROOT / "escaped-into-project.txt"),
            "/etc/qkv-escaped.txt",
        ]
    )
    secret = host_tmp / "expected_values.json"
    secret.write_text('{"s1": "the hidden expected values"}')
    extra = {
        "rigged_returns.py": tuple(
            probe(f, X) for f in ("rigged_eq", "rigged_array", "rigged_interface", "ndarray_subclass")
        ),
        "bad_returns.py": tuple(
            probe(f, X)
            for f in (
                "returns_str",
                "returns_dict",
                "returns_object_array",
                "returns_none",
                "returns_huge",
                "returns_many",
                "returns_pair",
            )
        ),
        "file_escape.py": (probe("escape", escape_targets), probe("write_own", 0)),
        "snoop.py": (probe("snoop", f"{ROOT}|{secret}|{os.environ[SECRET_VARIABLE]}"),),
        "network.py": (probe("connect", port),),
    }
    names = sorted(p.name for p in HOSTILE.glob("*.py") if p.name != "good_torch.py")
    jobs = []
    for i, name in enumerate(names):
        text = (HOSTILE / name).read_bytes().decode("utf-8", "surrogateescape")
        jobs.append((name, text, CORE + extra.get(name, ())))
        if i % 4 == 0:  # honest submissions spread through the batch
            jobs.append((f"good#{i}", source("good.py"), CORE))
    return jobs


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> dict:
    require_bwrap()
    host_tmp = tmp_path_factory.mktemp("sandbox-host")
    with pytest.MonkeyPatch.context() as monkeypatch, socket.create_server(("127.0.0.1", 0)) as listener:
        monkeypatch.setenv(SECRET_VARIABLE, f"grader-secret-{os.getpid()}")
        listener.setblocking(False)
        jobs = batch_jobs(host_tmp, listener.getsockname()[1])
        with SandboxPool("numpy", jobs=2, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
            runs = dict(pool.map(job for job in jobs if job[0] not in MEMORY_ATTACKS))
        with SandboxPool("numpy", jobs=2, limits=MEMORY_TEST_LIMITS, isolation="bwrap") as pool:
            runs.update(pool.map(job for job in jobs if job[0] in MEMORY_ATTACKS))
        try:
            listener.accept()[0].close()
            connected = True
        except BlockingIOError:
            connected = False
    yield {"runs": runs, "jobs": jobs, "host_tmp": host_tmp, "connected": connected}
    (ROOT / "escaped-into-project.txt").unlink(missing_ok=True)
    Path(f"/tmp/qkv-escaped-{os.getpid()}.txt").unlink(missing_ok=True)


# ---------------------------------------------------------------- the batch


def test_batch_finishes_and_honest_submissions_are_unaffected(batch: dict) -> None:
    runs = batch["runs"]
    assert set(runs) == {key for key, _, _ in batch["jobs"]}
    goods = [run for key, run in runs.items() if key.startswith("good")]
    assert len(goods) >= 5
    for run in goods:
        assert_good(run)
        assert run.stdout == "loading good submission\n"
        assert run.defined == ("double", "softmax_rows")


def test_answers_come_back_as_plain_json(batch: dict) -> None:
    answers = batch["runs"]["good.py"].answers
    assert {k: v for k, v in answers.items() if k != "q7"} == {
        "q1": "b",
        "q2": 3,
        "q3": 0.5,
        "q4": [0, 1, 2],
        "q5": [1, [2.5, None]],
        "q6": {"nested": True},
    }
    assert isinstance(answers["q7"], str) and answers["q7"].startswith("<object object")


def test_hostile_answers_are_tamed(batch: dict) -> None:
    run = batch["runs"]["hostile_answers.py"]
    assert run.status == "ok", run.message
    answers = run.answers
    assert answers["ok"] == "b"
    assert isinstance(answers["evil"], str) and isinstance(answers["big"], str)
    assert len(answers["long"]) <= 10_000
    assert answers["1"] == "int key"
    assert isinstance(answers["nan"], str)
    depth, node = 0, answers["deep"]
    while isinstance(node, list) and node:
        depth, node = depth + 1, node[0]
    assert depth <= 25
    assert_double_ok(run)


def test_a_process_name_that_is_not_text_times_out_alone_and_the_supervisor_reads_past_it(batch: dict) -> None:
    run = batch["runs"]["undecodable_name.py"]
    assert run.status == "ok", run.message
    assert run.problems["softmax"].status == "timeout", run.problems["softmax"].message
    assert_double_ok(run)


def test_infinite_loop_in_a_function_times_out_alone(batch: dict) -> None:
    run = batch["runs"]["loop_in_function.py"]
    assert run.status == "ok"
    softmax_run = run.problems["softmax"]
    assert softmax_run.status == "timeout"
    assert "2 s (time limit)" in softmax_run.message and "softmax_rows()" in softmax_run.message
    assert softmax_run.results == {}
    assert_double_ok(run)


def test_infinite_loop_at_top_level_times_out_the_load(batch: dict) -> None:
    run = batch["runs"]["loop_at_top.py"]
    assert run.status == "timeout"
    assert "3 s (time limit) while loading" in run.message
    assert all(p.status == "not_run" and "did not load" in p.message for p in run.problems.values())
    assert run.defined == ()


def test_ignoring_sigterm_does_not_help(batch: dict) -> None:
    run = batch["runs"]["ignore_sigterm.py"]
    assert run.problems["softmax"].status == "timeout"
    assert_double_ok(run)


def test_memory_bomb_in_a_function(batch: dict) -> None:
    run = batch["runs"]["memory_bomb.py"]
    softmax_run = run.problems["softmax"]
    assert softmax_run.status == "memory", softmax_run.message
    assert "ran out of memory while running softmax_rows()" in softmax_run.message
    assert "512 MiB" in softmax_run.message
    assert softmax_run.results["s1"].error.startswith("MemoryError")
    assert_double_ok(run)


def test_memory_bomb_at_load(batch: dict) -> None:
    run = batch["runs"]["memory_bomb_at_load.py"]
    assert run.status == "memory"
    assert "ran out of memory while loading" in run.message


def test_fork_bomb_is_contained(batch: dict) -> None:
    run = batch["runs"]["fork_bomb.py"]
    assert run.problems["softmax"].status == "timeout"
    assert_double_ok(run)


def test_fork_and_exit(batch: dict) -> None:
    run = batch["runs"]["fork_exit.py"]
    assert run.status == "ok", run.message
    softmax_run = run.problems["softmax"]
    assert softmax_run.status == "exited"
    assert "exited with code 0 while running softmax_rows()" in softmax_run.message
    assert softmax_run.results == {}  # the forked copy's answer is not taken
    assert_double_ok(run)  # only the original process reports


def test_segfault_is_a_crash_of_that_problem_only(batch: dict) -> None:
    run = batch["runs"]["segfault.py"]
    assert run.problems["softmax"].status == "crashed"
    assert "SIGSEGV" in run.problems["softmax"].message
    assert "softmax_rows()" in run.problems["softmax"].message
    assert_double_ok(run)


def test_sys_exit_at_load(batch: dict) -> None:
    run = batch["runs"]["exit_at_load.py"]
    assert (run.status, run.message) == ("exited", "called sys.exit(3) while loading, line 9")
    assert all(p.status == "not_run" for p in run.problems.values())


def test_os_exit_at_load(batch: dict) -> None:
    run = batch["runs"]["os_exit_at_load.py"]
    assert run.status == "exited"
    assert "exited with code 7 while loading" in run.message


def test_exits_inside_functions(batch: dict) -> None:
    run = batch["runs"]["exit_in_function.py"]
    assert run.status == "ok"
    assert run.problems["softmax"].status == "exited"
    assert run.problems["softmax"].message == "called sys.exit(2) while running softmax_rows()"
    assert run.problems["double"].status == "exited"
    assert "exited with code 5 while running double()" in run.problems["double"].message


def test_stdout_flood_hits_the_output_limit(batch: dict) -> None:
    run = batch["runs"]["stdout_flood.py"]
    flood = run.problems["softmax"]
    assert flood.status == "output_limit"
    assert "printed more than 100,000 bytes while running softmax_rows()" in flood.message
    assert run.stdout.startswith("about to flood\n")
    assert len(run.stdout) <= 2000
    assert_double_ok(run)


def test_monkeypatched_numpy_does_not_reach_the_grader(batch: dict) -> None:
    run = batch["runs"]["monkeypatch_numpy.py"]
    assert run.status == "ok"
    out = run.problems["softmax"].results["s1"].outputs[0]
    assert type(out) is np.ndarray
    assert not np.allclose(out, softmax(S))
    assert not np.array_equal(run.problems["double"].results["d1"].outputs[0], 2 * X)


def test_rigged_return_values(batch: dict) -> None:
    problems = batch["runs"]["rigged_returns.py"].problems
    eq = problems["rigged_eq"].results["rigged_eq"]
    assert not eq.ok and "AlwaysEqual" in eq.error and "not a numeric array" in eq.error
    fake = problems["rigged_array"].results["rigged_array"]
    assert fake.ok and type(fake.outputs[0]) is np.ndarray
    np.testing.assert_array_equal(fake.outputs[0], np.full((2, 2), 7.0))  # just a (wrong) array
    interface = problems["rigged_interface"]
    assert interface.status in ("crashed", "ok"), interface.message
    if interface.status == "ok":
        assert not interface.results["rigged_interface"].ok
    sub = problems["ndarray_subclass"].results["ndarray_subclass"]
    assert sub.ok and type(sub.outputs[0]) is np.ndarray
    np.testing.assert_array_equal(sub.outputs[0], X)


def test_returns_that_are_not_numeric_arrays(batch: dict) -> None:
    problems = batch["runs"]["bad_returns.py"].problems

    def error(name: str) -> str:
        result = problems[name].results[name]
        assert not result.ok and result.outputs == ()
        return result.error

    assert error("returns_str") == "returned str, not an array"
    assert error("returns_dict") == "returned dict, not an array"
    assert "dtype object" in error("returns_object_array")
    assert error("returns_none") == "returned None, not an array (missing return?)"
    assert "the limit is 32 MiB" in error("returns_huge")
    assert "100 items" in error("returns_many")
    pair = problems["returns_pair"].results["returns_pair"]
    assert pair.ok and len(pair.outputs) == 2
    np.testing.assert_array_equal(pair.outputs[1], 2 * X)


def test_files_outside_the_sandbox_are_not_written(batch: dict) -> None:
    run = batch["runs"]["file_escape.py"]
    assert run.problems["escape"].status == "ok"
    np.testing.assert_array_equal(run.problems["escape"].results["escape"].outputs[0], [0, 0, 0, 0])
    assert run.problems["write_own"].results["write_own"].outputs[0].tolist() == [True]
    assert not (batch["host_tmp"] / "escaped-to-host-tmp.txt").exists()
    assert not Path(f"/tmp/qkv-escaped-{os.getpid()}.txt").exists()
    assert not (ROOT / "escaped-into-project.txt").exists()
    assert not Path("/etc/qkv-escaped.txt").exists()


def test_solutions_grader_and_project_are_out_of_reach(batch: dict) -> None:
    run = batch["runs"]["snoop.py"]
    result = run.problems["snoop"].results["snoop"]
    assert result.ok, result.error
    probes = ["import solutions", "import autograder", "list project", "read pyproject", "read secret", "environ"]
    assert dict(zip(probes, result.outputs[0].tolist(), strict=True)) == dict.fromkeys(probes, 0)


def test_no_network(batch: dict) -> None:
    run = batch["runs"]["network.py"]
    assert run.problems["connect"].results["connect"].outputs[0].tolist() == [0]
    assert not batch["connected"]


def test_fake_results_on_stdout_are_just_text(batch: dict) -> None:
    run = batch["runs"]["fake_output.py"]
    assert run.status == "ok"
    assert run.answers == {}
    assert "All tests passed! Score: 100/100" in run.stdout
    np.testing.assert_array_equal(run.problems["softmax"].results["s1"].outputs[0], np.zeros_like(S))
    np.testing.assert_array_equal(run.problems["double"].results["d1"].outputs[0], 3 * X)


def test_garbage_on_the_result_channel_spoils_only_that_problem(batch: dict) -> None:
    run = batch["runs"]["fd_garbage.py"]
    assert run.problems["softmax"].status == "crashed"
    assert "malformed results" in run.problems["softmax"].message
    assert "d1" not in run.problems["softmax"].results
    assert_double_ok(run)


def test_garbage_at_load_breaks_only_that_submission(batch: dict) -> None:
    run = batch["runs"]["fd_garbage_at_load.py"]
    assert run.status == "crashed"
    assert "result channel" in run.message
    assert run.answers == {}
    assert all(p.results == {} for p in run.problems.values())


def test_empty_file_defines_nothing(batch: dict) -> None:
    run = batch["runs"]["empty.py"]
    assert run.status == "ok" and run.defined == () and run.answers == {}
    result = run.problems["double"].results["d1"]
    assert not result.ok and result.error == "double is not defined"


def test_syntax_error_is_a_load_error(batch: dict) -> None:
    run = batch["runs"]["syntax_error.py"]
    assert run.status == "load_error"
    assert run.message.startswith("SyntaxError") and "line 4" in run.message
    assert all(p.status == "not_run" for p in run.problems.values())


def test_binary_garbage_is_a_load_error(batch: dict) -> None:
    run = batch["runs"]["binary_garbage.py"]
    assert run.status == "load_error", run.message
    assert "null bytes" in run.message or "surrogate" in run.message


def test_missing_functions_are_not_defined(batch: dict) -> None:
    run = batch["runs"]["no_functions.py"]
    assert run.status == "ok"
    assert run.defined == ("Helper", "doubled", "softmax_row")
    for problem in run.problems.values():
        assert problem.status == "ok"
        for result in problem.results.values():
            assert not result.ok and result.error.endswith("is not defined")


# ---------------------------------------------------------------- single pools


@needs_bwrap
def test_source_with_nul_bytes_is_a_load_error() -> None:
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        run = pool.run("def double(x):\n    return 2 * x\n\x00\n", CORE)
    assert run.status == "load_error"
    assert "null bytes" in run.message


# A module as Python compiles it: an annotation is evaluated when its function is defined (a name it uses must
# exist, as in the student's own Python), not kept as text as under the sandbox's own `from __future__ import
# annotations`
ANNOTATED = "def double(x: int) -> int:\n    return 2 * x\nANSWERS = {'kind': type(double.__annotations__['x']).__name__}\n"


@needs_bwrap
def test_a_submission_is_compiled_without_the_sandbox_s_future_imports() -> None:
    from qkv_runtime.notebook import Step

    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        module = pool.run(ANNOTATED, CORE)
        cell = pool.run(Program(steps=(Step(1, "python", ANNOTATED),)), CORE)
        undefined = pool.run("def double(x: Undefined):\n    return 2 * x\n", CORE)
    assert module.status == "ok" and module.answers == {"kind": "type"}, module.message
    assert cell.status == "ok" and cell.answers == {"kind": "type"}, cell.message
    assert undefined.status == "load_error" and "NameError" in undefined.message, undefined.message


@needs_bwrap
def test_killed_worker_is_restarted() -> None:
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        assert_good(pool.run(source("good.py"), CORE))
        kill_worker(only_worker_process())
        assert_good(pool.run(source("good.py"), CORE))

        outcome: dict[str, SubmissionRun] = {}
        thread = threading.Thread(target=lambda: outcome.update(run=pool.run(source("loop_in_function.py"), CORE)))
        thread.start()
        worker = only_worker_process()
        # killed once the job is inside (a fixed sleep lost the race on a busy machine: killed before the job was
        # written, the worker was restarted and ran it)
        wait_for(lambda: len(descendants(worker)) > 2, "the job's processes", every=0.05)
        kill_worker(worker)
        thread.join(timeout=30)
        run = outcome["run"]
        assert run.status == "crashed"
        assert "worker died" in run.message and "signal 9" in run.message
        assert all(p.status == "not_run" for p in run.problems.values())
        assert_good(pool.run(source("good.py"), CORE))


@needs_bwrap
def test_a_worker_is_sent_the_class_problem_set_once_and_again_only_when_it_changes(monkeypatch) -> None:
    """A job carries the program alone; the calls and their inputs go to a worker once, and again when a job
    comes with other calls (a rerun, another assignment), after which each job gets its own calls' results."""
    other = (ProblemCalls("double", (Call("d1", "double", (3 * X,)),)),)
    sets_sent = []
    write = os.write

    def counting_write(fd: int, data: bytes) -> int:
        if bytes(data[8:26]) == b'{"kind":"problems"':
            sets_sent.append(fd)
        return write(fd, data)

    monkeypatch.setattr(pool_module.os, "write", counting_write)
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        assert_good(pool.run(source("good.py"), CORE))
        assert_good(pool.run(source("good.py"), CORE))
        assert len(sets_sent) == 1
        run = pool.run(source("good.py"), other)
        assert set(run.problems) == {"double"} and run.problems["double"].status == "ok"
        np.testing.assert_array_equal(run.problems["double"].results["d1"].outputs[0], 6 * X)
        assert_good(pool.run(source("good.py"), CORE))
        assert len(sets_sent) == 3
        kill_worker(only_worker_process())  # a fresh worker holds nothing yet
        assert_good(pool.run(source("good.py"), CORE))
        assert len(sets_sent) == 4


@needs_bwrap
def test_nothing_survives_into_the_next_submission() -> None:
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        planted = pool.run(source("leave_traces.py"), (probe("leave", 0),))
        found = pool.run(source("leave_traces.py"), (probe("find", 0),))
    assert planted.problems["leave"].results["leave"].ok
    files_beside, tmp_file, daemons = found.problems["find"].results["find"].outputs[0].tolist()
    assert (files_beside, tmp_file, daemons) == (0, 0, 0)


def only_worker_process() -> int:
    """The pool's one worker process (bwrap), found as a child of this process."""
    mine = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()  # a name need not be text
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(b")", 1)[1].split()[1]) == os.getpid() and b"qkv_worker.zygote" in cmdline:
                mine.append(int(entry))
    assert len(mine) == 1, mine
    return mine[0]


def kill_worker(pid: int) -> None:
    """SIGKILL a worker and wait until it is dead (or a zombie its pool has not reaped yet), so that the next job
    finds it dead rather than racing its death."""
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: dead(pid), f"worker {pid} to die", every=0.05)


def dead(pid: int) -> bool:
    try:
        return proctools.stat_fields(str(pid))[0] == b"Z"
    except OSError:
        return True  # already reaped


def process_limit(pid: int) -> bytes | None:
    """A process's RLIMIT_NPROC line as /proc shows it (None once it is gone)."""
    try:
        return next(line for line in Path(f"/proc/{pid}/limits").read_bytes().splitlines()
                    if line.startswith(b"Max processes"))
    except (FileNotFoundError, ProcessLookupError):
        return None


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (bwrap's init, the zygote, and during a job its handler and child)."""
    parent = {process: proctools.parent_of(process) for process in map(int, filter(str.isdigit, os.listdir("/proc")))}
    found, front = [], {pid}
    while front:
        front = {child for child, above in parent.items() if above in front}
        found += front
    return found


@pytest.fixture
def shared_folder():
    """A folder of /tmp that every user may read (pytest's own tmp_path is its owner's only), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="qkv-test-shared-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_rlimits_only_isolation(shared_folder: Path) -> None:
    # A file of the grader's that anyone may read (a bundle on a shared machine) rules out even a uid of its own, as
    # root too, whatever the modes of the folders this checkout sits in.
    exposed = shared_folder / "bundle.json"
    exposed.write_text("{}")
    exposed.chmod(0o644)
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="rlimits", protect=[exposed]) as pool:
        assert pool.isolation == "rlimits-only"
        runs = {name: pool.run(source(name), CORE)
                for name in ("good.py", "loop_in_function.py", "segfault.py", "exit_at_load.py")}
    with SandboxPool("numpy", jobs=1, limits=MEMORY_TEST_LIMITS, isolation="rlimits", protect=[exposed]) as pool:
        runs["memory_bomb.py"] = pool.run(source("memory_bomb.py"), CORE)
    assert_good(runs["good.py"])
    for name in ("loop_in_function.py", "segfault.py", "memory_bomb.py"):
        assert_double_ok(runs[name])
    assert runs["loop_in_function.py"].problems["softmax"].status == "timeout"
    assert runs["segfault.py"].problems["softmax"].status == "crashed"
    assert runs["memory_bomb.py"].problems["softmax"].status == "memory"
    assert runs["exit_at_load.py"].status == "exited"


@pytest.mark.parametrize("readable_by_all", [True, False], ids=["engine readable by all", "engine owner-only"])
def test_isolation_choice_without_bwrap(shared_folder: Path, readable_by_all: bool) -> None:
    """Without bubblewrap, a copy of the engine that any user can read leaves resource limits only; an owner-only one
    lets root give student code a uid of its own. The test makes both copies: the checkout's own modes do not count."""
    where = shared_folder / "engine"
    for package in ("autograder", "qkv_runtime"):
        shutil.copytree(ROOT / package, where / package, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["chmod", "-R", "go+rX" if readable_by_all else "go-rwx", str(where)], check=True)
    expected = "uid" if os.geteuid() == 0 and not readable_by_all else "rlimits-only"
    script = """
import os, sys, warnings
import autograder
from autograder.sandbox import SandboxPool, isolation_available
expected, where = sys.argv[1:]
assert autograder.__file__.startswith(where + os.sep), autograder.__file__
assert isolation_available() == "rlimits-only"
try:
    SandboxPool("numpy", isolation="bwrap")
except RuntimeError as exc:
    assert "bwrap" in str(exc)
else:
    raise AssertionError("isolation='bwrap' must fail without bwrap")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    pool = SandboxPool("numpy", isolation="allow-rlimits")
assert pool.isolation == expected, pool.isolation
warned = [str(w.message) for w in caught if "resource limits ONLY" in str(w.message)]
if expected == "uid":
    assert not warned, warned
    assert SandboxPool("numpy", isolation="require").isolation == "uid"
else:
    why = "readable by other users" if os.geteuid() == 0 else "runs as a normal user"
    assert any(why in w for w in warned), warned
    try:
        SandboxPool("numpy", isolation="require")
    except RuntimeError as exc:
        assert "requires isolation" in str(exc), exc
    else:
        raise AssertionError("isolation='require' must refuse rlimits-only")
"""
    env = {**os.environ, "PATH": "/nonexistent", "PYTHONPATH": str(where)}
    done = subprocess.run([sys.executable, "-c", script, expected, str(where)], cwd=where, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@needs_bwrap
def test_a_batched_problem_runs_in_the_submissions_own_process() -> None:
    source = ("import os\nimport numpy as np\nLOADED_IN = os.getpid()\n\n"
              "def where(x):\n    return np.array([LOADED_IN, os.getpid()])\n")
    calls = (Call("w1", "where", (X,)), Call("w2", "where", (X,)))
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        apart = pool.run(source, (ProblemCalls("p", calls),)).problems["p"]
        batched = pool.run(source, (ProblemCalls("p", calls, batched=True),)).problems["p"]
    assert apart.status == batched.status == "ok"
    assert apart.results.keys() == batched.results.keys() == {"w1", "w2"}
    assert all(r.outputs[0][0] != r.outputs[0][1] for r in apart.results.values())
    assert all(r.outputs[0][0] == r.outputs[0][1] for r in batched.results.values())


@needs_bwrap
@pytest.mark.slow
def test_torch_track() -> None:
    calls = CORE + (probe("split_heads", X),)
    with SandboxPool("torch", jobs=1, limits=MEMORY_TEST_LIMITS, isolation="bwrap") as pool:  # the memory bomb too
        good = pool.run(source("good_torch.py"), calls)
        bomb = pool.run(source("memory_bomb.py"), CORE)
    assert_good(good)
    pair = good.problems["split_heads"].results["split_heads"]
    assert pair.ok and len(pair.outputs) == 2
    np.testing.assert_array_equal(pair.outputs[0], X)
    assert pair.outputs[1] == np.array(4)
    assert bomb.problems["softmax"].status == "memory"
    assert_double_ok(bomb)


def _background_starts() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "qkv-sandbox-start"]


def test_a_pool_left_to_choose_has_a_worker_more_than_the_cpus_it_may_use(monkeypatch) -> None:
    # the grader's own process needs a share of the CPUs: as many workers as CPUs would leave them idle between jobs
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert SandboxPool("numpy", limits=SANDBOX_LIMITS, isolation="rlimits").jobs == 4
    assert SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="rlimits").jobs == 1


def test_a_cgroup_cpu_quota_caps_the_workers_a_pool_chooses(tmp_path: Path, monkeypatch) -> None:
    # a container given 2 CPUs of a 64-core host (docker --cpus 2) sees 64 in its affinity
    v2 = tmp_path / "v2"
    (v2 / "box" / "inner").mkdir(parents=True)
    (v2 / "box" / "cpu.max").write_text("150000 100000\n")
    (v2 / "box" / "inner" / "cpu.max").write_text("max 100000\n")
    assert pool_module.cgroup_cpus("0::/box/inner\n", v2) == 1.5  # the limit of a cgroup above counts
    v1 = tmp_path / "v1"
    (v1 / "cpu" / "job").mkdir(parents=True)
    for folder, quota in ((v1 / "cpu", "-1"), (v1 / "cpu" / "job", "200000")):
        (folder / "cpu.cfs_quota_us").write_text(quota)
        (folder / "cpu.cfs_period_us").write_text("100000")
    assert pool_module.cgroup_cpus("5:memory:/elsewhere\n4:cpu,cpuacct:/job\n0::/\n", v1) == 2.0
    assert pool_module.cgroup_cpus("0::/\n4:cpu,cpuacct:/\n", tmp_path / "no-cgroup-files") is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setattr(pool_module, "cgroup_cpus", lambda membership: 1.5)
    assert SandboxPool("numpy", limits=SANDBOX_LIMITS, isolation="rlimits").jobs == 3


def test_take_gives_what_a_stream_has_and_says_whether_it_had_nothing_yet_or_ended() -> None:
    stream = iter([1, 2, None, 3])
    assert pool_module.take(stream, 5) == ([1, 2], True, False)
    assert pool_module.take(stream, 0) == ([], False, False)
    assert pool_module.take(stream, 5) == ([3], False, True)
    assert pool_module.take(stream, 5) == ([], False, True)


@pytest.mark.slow
def test_a_stream_that_has_nothing_yet_is_asked_again_while_its_jobs_run() -> None:
    # qkv serve's graders hand the pool a stream of what students hand in, where None is "nothing yet": what is
    # handed in while a slow submission runs goes on through a free worker, not after the slow one
    slow = "import time\ntime.sleep(4)\n" + source("good.py")

    def stream():
        yield "slow", slow, CORE
        began = time.monotonic()
        while time.monotonic() - began < 0.3:
            yield None
        yield "quick", source("good.py"), CORE

    limits = dataclasses.replace(SANDBOX_LIMITS, load_seconds=20.0)
    with SandboxPool("numpy", jobs=2, limits=limits, isolation="rlimits") as pool:
        done = list(pool.map(stream()))
    for _, run in done:
        assert_good(run)
    assert [key for key, _ in done] == ["quick", "slow"]


def test_start_soon_starts_the_workers_while_the_caller_goes_on() -> None:
    pool = SandboxPool("numpy", jobs=2, limits=SANDBOX_LIMITS, isolation="rlimits")
    try:
        pool.start_soon()
        for thread in _background_starts():
            thread.join(60)
        # started with no job asked for: the workers are up, and the first job finds them
        assert len(pool._workers) == 2 and all(w.alive() for w in pool._workers)
        assert_good(pool.run(source("good.py"), CORE))
    finally:
        pool.close()
    assert pool._workers == []


def test_a_pool_closed_before_its_background_start_keeps_no_worker() -> None:
    pool = SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="rlimits")
    with pool._lock:  # the background thread cannot start before close has been and gone
        pool.start_soon()
        pool.close()
    for thread in _background_starts():
        thread.join(60)
    assert pool._workers == [] and pool._spawner is None


def test_a_worker_started_after_its_pool_closed_says_the_pool_is_closed_and_makes_nothing(tmp_path, monkeypatch):
    # a job that took its worker before another thread closed the pool starts it again (it is not alive): it used
    # to make its scratch folder in the process's folder (the closed pool's scratch is "") and then fail on the
    # closed pool's missing spawner (AttributeError)
    pool = SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="rlimits")
    with pool:
        worker = pool._workers[0]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SandboxError, match="the sandbox pool is closed"):
        worker.start()
    assert list(tmp_path.iterdir()) == [] and not worker.alive()


def broken_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's workers from now on: a zygote that exits at once."""
    broken = tmp_path / "worker"
    broken.mkdir()
    (broken / "__init__.py").write_text("")
    (broken / "zygote.py").write_text("raise SystemExit(3)\n")
    monkeypatch.setattr(pool_module, "WORKER_DIR", broken)


def test_a_background_start_that_fails_is_reported_by_the_first_job_not_tried_again(tmp_path, monkeypatch):
    broken_worker(tmp_path, monkeypatch)
    starts: list[int] = []
    start = pool_module._Worker.start
    monkeypatch.setattr(pool_module._Worker, "start", lambda worker: (starts.append(worker.slot), start(worker)))
    pool = SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="rlimits")
    try:
        pool.start_soon()
        for thread in _background_starts():
            thread.join(60)
        with pytest.raises(SandboxError, match="did not start"):
            pool.run("x = 1\n", CORE)
        assert starts == [0]  # the job raised what the background start met, without a second 120 s try
        with pytest.raises(SandboxError, match="did not start"):
            pool.run("x = 1\n", CORE)  # the job after it tries afresh
        assert starts == [0, 0]
    finally:
        pool.close()


def test_a_pool_whose_workers_do_not_start_says_so_each_time(tmp_path, monkeypatch):
    broken_worker(tmp_path, monkeypatch)
    pool = SandboxPool("numpy", jobs=2, limits=SANDBOX_LIMITS, isolation="rlimits")
    for _ in range(2):  # the second try used to wait for ever for a worker that never came
        errors: list[BaseException] = []
        attempt = threading.Thread(target=lambda: errors.append(pytest.raises(SandboxError, pool.run, "x = 1\n", CORE).value),
                                   daemon=True)
        attempt.start()
        attempt.join(60)
        assert not attempt.is_alive(), "pool.run hangs after a failed start"
        assert errors and "did not start" in str(errors[0])
    pool.close()



# 0.2 s of CPU while loading, by its process's own clock, and in ANSWERS how much it had used when loading
# ended; its softmax_rows then uses 0.15 s a call. (Not a fixture file: the hostile classes would grade it twice
# and find two clocks.)
CLOCK_AT_LOAD = """
import time as _time

import numpy as np

_start = _time.process_time()
while _time.process_time() - _start < 0.2:
    pass


def softmax_rows(S):
    begun = _time.process_time()
    while _time.process_time() - begun < 0.15:
        pass
    e = np.exp(S - S.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def double(x):
    return 2 * x


ANSWERS = {"clock": _time.process_time()}
"""


def test_loadings_cpu_is_what_loading_took_not_the_calls_after_it() -> None:
    """The child's own clock as loading ended, not /proc's ticks (cut down to a hundredth) nor whatever the
    child did before the handler woke."""
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="allow-rlimits") as pool:
        run = pool.run(CLOCK_AT_LOAD, CORE)
    assert run.status == "ok", run.message
    clock = float(run.answers["clock"])
    assert clock >= 0.2 and clock <= run.cpu.load < clock + 0.01, (clock, run.cpu)
    assert run.cpu.calls >= 0.3, run.cpu  # two calls of softmax_rows, 0.15 s each

# ------------------------------------------- the sandbox's own processes, and what crosses between jobs
# Each attack runs with jobs=1, so the submission after it is on the same slot, with the same uid.


def one_slot(*names_and_calls: tuple[str, tuple]) -> list[SubmissionRun]:
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        return [pool.run(source(name), calls) for name, calls in names_and_calls]


def assert_honest(run: SubmissionRun) -> None:
    assert_good(run)
    assert "forged" not in run.answers and run.defined == ("double", "softmax_rows") and "forged" not in run.stdout


@needs_bwrap
def test_the_grader_pipes_are_out_of_reach_of_student_code() -> None:
    attack, victim, later = one_slot(("forge_via_pid1.py", CORE), ("good.py", CORE), ("good.py", CORE))
    assert attack.status == "ok", attack.message
    opened = attack.problems["softmax"].results["s1"].outputs[0]
    assert not opened.any(), "a pipe of the sandbox's own processes was opened"
    assert attack.problems["softmax"].message != "forged" and attack.answers == {}
    assert_honest(victim)
    assert_honest(later)


@needs_bwrap
def test_the_sandbox_processes_cannot_be_traced() -> None:
    (run,) = one_slot(("trace_supervisor.py", CORE))
    traced = run.problems["softmax"].results["s1"].outputs[0]
    assert traced.size == 4 and not traced.any(), traced
    assert_double_ok(run)


@needs_bwrap
def test_a_submission_cannot_stop_its_supervisor() -> None:
    attack, victim = one_slot(("stop_supervisor.py", CORE), ("good.py", CORE))
    assert attack.status == "ok", attack.message
    accepted = attack.problems["softmax"].results["s1"].outputs[0]
    assert accepted.size == 5 and not accepted.any(), accepted
    assert_double_ok(attack)
    assert_honest(victim)


@needs_bwrap
def test_nothing_crosses_to_the_next_job_through_ipc_or_keyrings() -> None:
    planted, found = one_slot(("ipc_traces.py", (probe("plant", X),)), ("ipc_traces.py", (probe("find", X),)))
    assert planted.problems["plant"].status == "ok" and found.problems["find"].status == "ok"
    assert not found.problems["find"].results["find"].outputs[0].any()
    assert not planted.problems["plant"].results["plant"].outputs[0].any(), "an IPC object or key was made"


@needs_bwrap
def test_the_graders_session_keyring_is_out_of_reach() -> None:
    import ctypes
    import platform

    libc = ctypes.CDLL(None, use_errno=True)
    add_key = {"x86_64": 248, "aarch64": 217}[platform.machine()]
    marker = f"grader-session-secret-{os.getpid()}".encode()
    # like pam_keyinit's session keyring of a login: a key this process (and so the pool) possesses
    if libc.syscall(add_key, b"user", b"qkv-test-secret", marker, len(marker), -3) <= 0:
        pytest.fail(f"cannot add a key to this session keyring (errno {ctypes.get_errno()})")
    (run,) = one_slot(("read_grader_keys.py", CORE))
    found = run.problems["softmax"].results["s1"].outputs[0].astype(np.uint8).tobytes()
    assert marker not in found


@needs_bwrap
def test_a_deep_tree_left_in_the_scratch_folder_retires_the_worker_cleanly(capfd) -> None:
    attack, victim = one_slot(("deep_scratch.py", CORE), ("good.py", CORE))
    assert attack.status == "ok", attack.message
    assert_double_ok(attack)
    assert_honest(victim)
    assert "Traceback" not in capfd.readouterr().err


@needs_bwrap
@pytest.mark.parametrize("batched", [False, True], ids=["problem by problem", "batched"])
def test_a_forged_absurd_layout_is_that_calls_failure(batched) -> None:
    calls = tuple(ProblemCalls(p.problem_id, p.calls, batched=batched) for p in CORE)
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        attack = pool.run(source("forged_layout.py"), calls)
        victim = pool.run(source("good.py"), CORE)
    forged = attack.problems["softmax"].results.get("s1")
    assert forged is not None and not forged.ok and "cannot read" in forged.error, forged
    assert attack.problems["softmax"].status == "crashed"
    assert_good(victim)


@needs_bwrap
def test_no_earlier_job_is_in_the_memory_of_the_next() -> None:
    marker = f"QKV-EARLIER-JOB-{os.urandom(16).hex()}"
    planter = source("memory_of_earlier_jobs.py") + f'\nMARKER = "{marker}"\n'
    calls = (probe("echo", 0), probe("find", 0))
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="bwrap") as pool:
        planted = pool.run(planter, calls)
        found = pool.run(source("memory_of_earlier_jobs.py"), calls)
    echoed = planted.problems["echo"].results["echo"].outputs[0]
    assert bytes(echoed.astype(np.uint8)) == marker.encode()
    assert planted.problems["find"].results["find"].outputs[0][0] >= 1, "the scan does not see this job's own memory"
    assert found.problems["find"].results["find"].outputs[0][0] == 0, "an earlier job's bytes are in this one's memory"


@needs_bwrap
def test_a_process_that_forks_and_exits_for_ever_is_gone_before_the_next_job() -> None:
    planted, found = one_slot(("fork_runner.py", (probe("leave", 0),)), ("fork_runner.py", (probe("find", 0),)))
    assert planted.problems["leave"].results["leave"].ok
    assert found.problems["find"].results["find"].outputs[0].tolist() == [0]


def test_threads_the_user_starts_during_a_job_leave_its_problems_room(shared_folder: Path) -> None:
    # Without a uid or a user namespace of its own (rlimits only: a file anyone may read rules out more) a
    # submission shares RLIMIT_NPROC, which counts threads, with everything its user runs, this test included. As
    # root nothing is counted (root is exempt); the unprivileged rerun (tests/test_as_user.py) is the test.
    exposed = shared_folder / "bundle.json"
    exposed.write_text("{}")
    exposed.chmod(0o644)
    release = threading.Event()
    with SandboxPool("numpy", jobs=1, limits=SANDBOX_LIMITS, isolation="rlimits", protect=[exposed]) as pool:
        assert pool.isolation == "rlimits-only"
        assert_good(pool.run(source("good.py"), CORE))  # the worker is up: the next job starts at once
        worker = only_worker_process()
        outcome: dict[str, SubmissionRun] = {}
        job = threading.Thread(target=lambda: outcome.update(run=pool.run(source("slow_first_problem.py"), CORE)))
        job.start()
        # the threads start once the job has counted the user's own (started before, they would be counted)
        wait_for(lambda: any(process_limit(p) not in (None, process_limit(os.getpid())) for p in descendants(worker)),
                 "the job's child to set its process limit", every=0.05)
        others = [threading.Thread(target=release.wait) for _ in range(40)]
        for thread in others:
            thread.start()
        job.join(timeout=60)
        release.set()
        for thread in others:
            thread.join()
    run = outcome["run"]
    assert run.problems["softmax"].status == "ok", run.problems["softmax"].message
    assert_double_ok(run)
