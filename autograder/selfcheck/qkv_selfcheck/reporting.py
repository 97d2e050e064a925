"""Every route's report: a submission's verdicts problem by problem, the summary, and a student's own numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .data import UsageError, find_problem, roster, student_key
from .loading import Submission
from .outcomes import FAIL, PASS, TODO, Outcome, ProblemResult
from .public import run_code_problem
from .written import check_written


def check_problem(data: Dict[str, Any], problem: Dict[str, Any], submission: Submission,
                  student: str = "", code_results: Optional[Dict[str, ProblemResult]] = None) -> ProblemResult:
    """One problem's verdicts. Code problems come from `code_results` when given (the supervised child
    ran them), else run here under an alarm."""
    if problem["code"]:
        if code_results is not None:
            return code_results.get(problem["id"]) or ProblemResult(
                problem, [Outcome(FAIL, "not checked: the check stopped before this problem")])
        return run_code_problem(data, problem, submission)
    answers = submission.answers
    return ProblemResult(problem, check_written(data, problem, answers.get(problem["id"]), student))


def run_checks(data: Dict[str, Any], submission: Submission, student: str = "",
               only: Optional[str] = None, code_results: Optional[Dict[str, ProblemResult]] = None
               ) -> List[ProblemResult]:
    problems = [find_problem(data, only)] if only else data["problems"]
    student = student or submission.student_id
    return [check_problem(data, p, submission, student, code_results) for p in problems]


def summary_lines(data: Dict[str, Any], results: List[ProblemResult]) -> List[str]:
    width = max([len(r.problem["id"]) for r in results] + [7])
    lines = ["", "Summary", f"  {'problem':<{width}}  {'kind':<15}  {'points':>6}  result"]
    for r in results:
        p = r.problem
        lines.append(f"  {p['id']:<{width}}  {p['kind']:<15}  {p['points']:>6g}  {r.summary()}")
    counts = {s: sum(r.status == s for r in results) for s in (PASS, FAIL, TODO)}
    points = sum(r.problem["points"] for r in results if r.status == PASS)
    total = sum(r.problem["points"] for r in results)
    lines.append(f"  {counts[PASS]} pass, {counts[FAIL]} fail, {counts[TODO]} not answered; "
                 f"problems that pass here are worth {points:g} of {total:g} points")
    code = [p for p in data["problems"] if p["code"]]
    hidden = sum(p.get("hidden_tests", 0) for p in code)
    if code:
        lines.append(f"Hidden tests exist for {len(code)} function{'s' if len(code) != 1 else ''} ({hidden} tests) and "
                     "will be run at grading: passing here is necessary, not sufficient.")
    return lines


def student_id_warning(data: Dict[str, Any], submission: Submission) -> str:
    """A warning when the file does not say whose it is ('' when it does): nothing fails for it here, but
    at grading a file left with the stub's name and no STUDENT_ID is matched to no student."""
    if submission.student_id or submission.load_error:
        return ""
    if data["variants"] == "per_student" and Path(submission.source).stem in roster(data):
        return ""  # named after a roster id, which names the student at grading
    where = "this notebook" if submission.kind == "namespace" else submission.source
    return (f"warning: STUDENT_ID is empty in {where}: unless your hand-in names you, the grader will not know "
            'whose file it is; set STUDENT_ID = "your id" (e.g. "s1234567") and check again')


def report(data: Dict[str, Any], submission: Submission, student: str = "", only: Optional[str] = None,
           summary: bool = True, code_results: Optional[Dict[str, ProblemResult]] = None
           ) -> Tuple[str, List[ProblemResult]]:
    lines: List[str] = []
    warning = student_id_warning(data, submission) if summary else ""  # once, atop the whole report
    if warning:
        lines += [warning, ""]
    if submission.load_error:
        lines += [f"Your file does not load: {submission.load_error}",
                  "The grader cannot load it either, so nothing in it would be graded. Fix this first.", ""]
    if submission.cell_errors:
        lines.append("These cells failed when the notebook ran from the top (they fail at grading too, and what "
                     "they should define is missing there):")
        lines += [f"  {e}" for e in submission.cell_errors] + [""]
    if submission.skipped:
        lines += [f"  {s}" for s in submission.skipped] + [""]
    if submission.load_error:
        results = []
    else:
        results = run_checks(data, submission, student, only, code_results)
        for result in results:
            lines += result.lines()
    if summary:
        lines += summary_lines(data, results) if results else []
    if submission.printed.strip():
        count = len(submission.printed.strip().splitlines())
        lines.append(f"(your {'file' if submission.kind == 'py' else 'notebook'} printed {count} line"
                     f"{'s' if count != 1 else ''} while loading; not shown here)")
    return "\n".join(lines), results


def say(text: str) -> None:
    try:
        print(text)
    except UnicodeEncodeError:  # a console that cannot show every character
        print(text.encode("ascii", "replace").decode("ascii"))


def prompt_text(data: Dict[str, Any], student: str, problem: Optional[str] = None) -> str:
    if data["variants"] != "per_student":
        return "Everyone has the same numbers in this assignment: the prompts are in PROBLEMS.md and the notebook."
    key, why = student_key(data, student)
    if key is None:
        raise UsageError(why)
    prompts = data.get("prompts", {}).get(key, {})
    if problem is not None:
        find_problem(data, problem)
        if problem not in prompts:
            return f"{problem} is the same for everyone: see PROBLEMS.md."
        prompts = {problem: prompts[problem]}
    return "\n\n".join(f"## {pid} (for {key})\n\n{text.strip()}" for pid, text in prompts.items())

