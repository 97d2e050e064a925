"""The command line, `python qkv_check.py ...` (and `qkv check NAME FILE`, which calls `main`).

Exit code 0 when the check ran, whatever the verdicts; 2 for usage errors. Each thing the command line
does is one action below, chosen from the options in `main`; --submit, which sends the file to a course's
server, is the action of a part of its own (submit.py, with its own exit codes), so that checking stays
offline. A release's own checker remembers each check in the student's folder (history.py; not with --data,
the engine's `qkv check`, whose release folder is the instructor's, nor with --no-history).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional

from .data import DATA_FILE, HERE, USAGE_ERROR, UsageError, load_data, roster, student_key
from .history import FILE as HISTORY_FILE, remember_run
from .reporting import prompt_text, report, say
from .submit import add_arguments as add_submit_arguments, submit
from .supervisor import supervise
from .worker import WORKER, worker_main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python qkv_check.py",
        description="Self-check your assignment offline: public tests for your functions, right/wrong for your "
                    "written answers. Hidden tests are run only at grading.")
    parser.add_argument("file", nargs="?", help="your .py file or .ipynb notebook (--submit: default the "
                                                "assignment's .py beside qkv_check.py)")
    parser.add_argument("--student", default="", metavar="ID",
                        help="your student id (default: STUDENT_ID in your file)")
    parser.add_argument("--show", nargs="?", const="", default=None, metavar="PROBLEM",
                        help="print your own numbers (per-student assignments), for one problem or all")
    add_submit_arguments(parser)
    parser.add_argument("--no-history", action="store_true",
                        help=f"do not remember this run in {HISTORY_FILE} (kept beside qkv_check.py)")
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)
    return parser


def _show(parser: argparse.ArgumentParser, args: argparse.Namespace, data: Dict[str, Any], data_path: Path) -> int:
    """--show: a student's own numbers, whose they are from --student or the file's STUDENT_ID."""
    student = args.student
    if not student and args.file:
        student = supervise(data, data_path, args.file, run_code=False)[0].student_id
    say(prompt_text(data, student, args.show or None))
    return 0


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace, data: Dict[str, Any], data_path: Path) -> int:
    """The file's report, its code run in supervised children under the grader's time limits (`supervise`)."""
    if not args.file:
        parser.print_usage(sys.stderr)
        raise UsageError("give the file to check, e.g. python qkv_check.py "
                         f"{data.get('module', 'assignment')}.py")
    if args.student:
        key, why = student_key(data, args.student)
        if key is None:
            raise UsageError(why)
    submission, code_results = supervise(data, data_path, args.file)
    student = args.student or submission.student_id
    title = f"qkv self-check: {data.get('title', data['assignment'])} | {submission.source}"
    note = ""
    if data["variants"] == "per_student":
        # At grading your id is the submitted file's name; warn when the two disagree.
        named = Path(args.file).stem
        if not student and named in roster(data):
            student = named
        elif student and named in roster(data) and named != student:
            note = (f"note: this file is named {named!r} but says STUDENT_ID = {student!r}; at grading "
                    "your numbers are those of the id in the file's name\n")
        title += f" | student {student or '(STUDENT_ID not set)'}"
    text, results = report(data, submission, student, code_results=code_results)
    say(title + "\n" + "=" * min(len(title), 100) + "\n" + note + text)
    if args.data is None and not args.no_history:  # a release's own checker: the student's folder remembers
        key, why = student_key(data, student)
        lines = remember_run(data, key, results, HERE, datetime.now(timezone.utc)) if key is not None else \
            ["", f"This run is not remembered: {why}"]
        say("\n".join(lines))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Exit code 0 when the check ran, whatever the verdicts; 2 for usage errors.

    The file is run in a supervised child under the grader's time limits (`supervise`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == [WORKER]:
        return worker_main(argv[1:])
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and USAGE_ERROR
    try:
        data_path = Path(args.data) if args.data else HERE / DATA_FILE
        data = load_data(data_path)
        action = submit if args.submit else _show if args.show is not None else _check
        return action(parser, args, data, data_path)
    except UsageError as err:
        print(f"qkv_check: error: {err}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print("qkv_check: interrupted", file=sys.stderr)
        return 130
