"""The supervised child (`qkv_check.py --qkv-worker FILE --data PATH [--skip ID]...`): it loads the student's file,
runs the public tests, and says on a pipe, one JSON line each, what it starts and what came of it.

The events, in order: load, loaded, then per code problem problem, (call, outcome)..., done; last end.
supervisor.py reads them; the child never decides a time limit, its parent does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any, Dict, List, Optional

from .data import USAGE_ERROR, UsageError, limits_of, load_data
from .loading import load_submission
from .outcomes import FAIL, PASS, TODO, Outcome
from .public import run_code_problem

WORKER = "--qkv-worker"
PRINTED_KEEP = 100 * 1024


def outcome_json(outcome: Outcome) -> Dict[str, Any]:
    return {"status": outcome.status, "message": outcome.message, "details": outcome.details, "named": outcome.named}


def outcome_from(event: Any) -> Optional[Outcome]:
    item = event.get("outcome") if isinstance(event, dict) else None
    if not isinstance(item, dict) or item.get("status") not in (PASS, FAIL, TODO):
        return None
    listed = item.get("details")
    details = listed if isinstance(listed, list) else []
    named = item.get("named")
    return Outcome(item["status"], str(item.get("message", "")), [str(d) for d in details],
                   [str(n) for n in named] if isinstance(named, list) else [])


def _worker(path: str, data_path: str, skip: List[str]) -> int:
    """Worker mode: load the file, run the public tests of the code problems not in `skip`, and say so."""
    import faulthandler

    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the pipe to the parent; not inheritable
    os.dup2(2, 1)  # whatever student code writes to fd 1 lands in stderr, never on the channel

    def send(event: Dict[str, Any]) -> None:
        channel.write(json.dumps(event) + "\n")
        channel.flush()

    data = load_data(data_path)
    limits = limits_of(data)
    if data.get("track") == "torch":  # imported before the clock runs, as the grader's worker does
        with contextlib.suppress(Exception):
            import torch  # noqa: F401
    send({"event": "load"})
    faulthandler.dump_traceback_later(limits.load_seconds, file=2)
    try:
        submission = load_submission(path, seconds=0)
        answers, student = submission.answers, submission.student_id
    finally:
        faulthandler.cancel_dump_traceback_later()
    send({"event": "loaded", "kind": submission.kind, "source": submission.source,
          "load_error": submission.load_error, "cell_errors": submission.cell_errors,
          "skipped": submission.skipped, "printed": submission.printed[:PRINTED_KEEP],
          "answers": answers, "student_id": student})
    if not submission.load_error:
        for problem in data["problems"]:
            if not problem["code"] or problem["id"] in skip:
                continue
            send({"event": "problem", "problem": problem["id"]})
            faulthandler.dump_traceback_later(limits.problem_seconds, file=2)
            try:
                run_code_problem(data, problem, submission, alarm=False,
                                 before=lambda c: send({"event": "call", "test": c.test["name"]}),
                                 after=lambda o: send({"event": "outcome", "outcome": outcome_json(o)}))
            finally:
                faulthandler.cancel_dump_traceback_later()
            send({"event": "done", "problem": problem["id"]})
    send({"event": "end"})
    channel.close()
    return 0


def worker_main(argv: List[str]) -> int:
    """`qkv_check.py --qkv-worker FILE --data PATH [--skip ID]...`: the supervised child (`supervise`)."""
    parser = argparse.ArgumentParser(prog="qkv_check.py " + WORKER)
    parser.add_argument("file")
    parser.add_argument("--data", required=True)
    parser.add_argument("--skip", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        return _worker(args.file, args.data, args.skip)
    except UsageError as err:
        print(f"qkv_check: error: {err}", file=sys.stderr)
        return USAGE_ERROR
