"""The trusted side of the wire (autograder/sandbox/protocol.py), fed frames directly: what a job looks like, and
what `RunCollector` takes from a batch's "calls" frames and the handler's CPU accounting. No sandbox runs here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from autograder.sandbox.protocol import (
    Call,
    Limits,
    ProblemCalls,
    Program,
    ProtocolError,
    RunCollector,
    SandboxCpu,
    encode_job,
    encode_problem_set,
)
from qkv_runtime.wire import MAX_CALLS_PER_FRAME, FrameBuffer, pack_arrays

PROBLEMS = [ProblemCalls("all", (Call("a", "f", (np.arange(3.0),)), Call("b", "f", (2,)), Call("c", "g")),
                         batched=True)]


def calls_frame(*entries: tuple[str, np.ndarray | None]) -> tuple[dict, bytes]:
    results, blobs = [], []
    for call_id, value in entries:
        if value is None:
            results.append({"call_id": call_id, "ok": False, "error": "boom", "arrays": [], "bytes": 0})
        else:
            layout, blob = pack_arrays([value])
            results.append({"call_id": call_id, "ok": True, "error": None, "arrays": layout, "bytes": len(blob)})
            blobs.append(blob)
    return {"kind": "calls", "problem": "all", "results": results}, b"".join(blobs)


def closing(collector: RunCollector, **submission) -> object:
    collector.add({"kind": "problem", "problem": "all", "status": "ok", "message": "ran"}, b"")
    return collector.add({"kind": "submission", "status": "ok", "message": "", **submission}, b"")


def test_a_calls_frame_gives_each_call_its_own_arrays():
    collector = RunCollector(PROBLEMS)
    collector.add(*calls_frame(("a", np.arange(3.0)), ("b", np.eye(2, dtype=np.float32))))
    collector.add(*calls_frame(("c", None)))
    results = closing(collector).problems["all"].results
    assert results["a"].ok and results["a"].outputs[0].tolist() == [0.0, 1.0, 2.0]
    assert results["b"].outputs[0].dtype == np.float32 and results["b"].outputs[0].tolist() == [[1, 0], [0, 1]]
    assert not results["c"].ok and results["c"].error == "boom"


@pytest.mark.parametrize("forgery", ["bytes beyond", "bytes left over", "unknown call", "twice", "too many", "no list"])
def test_a_calls_frame_that_does_not_add_up_is_a_protocol_error(forgery):
    header, blob = calls_frame(("a", np.arange(3.0)), ("b", np.ones(2)))
    if forgery == "bytes beyond":
        header["results"][1]["bytes"] = 999
    elif forgery == "bytes left over":
        blob += b"\0"
    elif forgery == "unknown call":
        header["results"][1]["call_id"] = "zz"
    elif forgery == "twice":
        header["results"][1]["call_id"] = "a"
    elif forgery == "too many":
        header["results"] = header["results"] * (MAX_CALLS_PER_FRAME // 2 + 1)
    else:
        header["results"] = "a"
    with pytest.raises(ProtocolError):
        RunCollector(PROBLEMS).add(header, blob)


def test_a_layout_that_lies_costs_only_its_own_call():
    header, blob = calls_frame(("a", np.arange(3.0)), ("b", np.ones(2)))
    header["results"][0]["arrays"] = [["<f8", [4]]]  # 32 bytes declared, 24 sent
    collector = RunCollector(PROBLEMS)
    collector.add(header, blob)
    results = closing(collector).problems["all"].results
    assert "cannot read" in results["a"].error and results["b"].ok


@pytest.mark.parametrize("cpu, expected", [
    ({"handler": 0.5, "load": 1, "calls": 2.25}, SandboxCpu(0.5, 1.0, 2.25)),
    ({"handler": -1, "load": float("inf"), "calls": "2"}, SandboxCpu()),
    ({"handler": True, "load": 1e9, "calls": [1]}, SandboxCpu()),
    ("lots", SandboxCpu()),
    (None, SandboxCpu()),
])
def test_the_handlers_cpu_figures_are_kept_only_when_they_are_plain_seconds(cpu, expected):
    run = closing(RunCollector(PROBLEMS), cpu=cpu)
    assert run.cpu == expected


def test_a_job_is_the_program_alone_and_the_class_calls_travel_as_a_problem_set_of_their_own():
    """The calls, their inputs and the limits are the class's, the same for each submission: a worker holds the
    set it was last sent, so a job frame carries nothing but the student's program and what is left of its
    attempt's budget."""
    job = encode_job(Program(source="def f(x):\n    return x  # é\n"), 12.5)
    (header, blob), = FrameBuffer(1 << 24).feed(job)
    assert header == {"kind": "job", "seconds": 12.5, "program": {"source": "def f(x):\n    return x  # é\n"}}
    assert blob == b""
    problem_set = encode_problem_set(PROBLEMS, Limits())
    (header, blob), = FrameBuffer(1 << 24).feed(problem_set)
    assert header["kind"] == "problems" and "program" not in header
    assert [c["id"] for c in header["problems"][0]["calls"]] == ["a", "b", "c"]
    assert header["problems"][0]["calls"][1]["args"] == [{"v": 2}] and header["limits"] == Limits().to_json()
    assert header["arrays"] == [["<f8", [3]]] and np.frombuffer(blob).tolist() == [0.0, 1.0, 2.0]
    assert encode_problem_set(PROBLEMS, Limits()) is problem_set  # kept per call list
    assert encode_problem_set(PROBLEMS, Limits(cpu_seconds=3)) != problem_set  # but not across limits
    for frame in (job, problem_set):
        json.loads(frame[8:8 + int.from_bytes(frame[:4], "big")])  # plain JSON, ASCII
