"""Check a bank deeply: a folder of problem files in, a list of one-line findings out (empty = valid).

Beyond the schema (load.py) it proves each problem can be graded: no field still
holds the TODO text of `qkv new`'s skeleton, every dotted reference resolves, then
its kind's own checks pass (`Kind.check`): a lecture example reproduces the
lecture's figures; drawn variants are feasible; templates render; and for each
`implement` problem the reference passes every test on every track, the stub
fails every test, and each misconception fails at least one hidden test (the
hidden tests can catch it), and no hidden test worth points is passed by an answer
that ignores its input (kinds/implement/power.py); what an `implement` problem
`builds_on` must be other implement problems of the bank. Then what only the whole
bank shows (bank/measures.py): the balance of true and false statements, and numbers
that one problem's text quotes from another's answers; `bank_warnings` adds the
choice questions whose right choice is clearly the longest. A form of the text that tells
the answer (bank/cues.py) is an error too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autograder import extras
from autograder.bank.load import Bank, LoadReport
from autograder.kinds.resolve import UnresolvedReference, resolve
from autograder.kinds import Problem, kind_of
from autograder.kinds.implement.power import power_findings


@dataclass(frozen=True)
class Finding:
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


# what `qkv new`'s skeletons (course/templates/problems/) put in every field the instructor must write
TODO_MARKER = "TODO:"


def left_todo(value: Any, field: str = "") -> list[str]:
    """The fields of a problem's data (model_dump) that still hold a skeleton's TODO text, as findings."""
    if isinstance(value, str):
        return [f"{field}: still the skeleton's text ({value.strip()[:60]!r}): write it"] \
            if value.lstrip().startswith(TODO_MARKER) else []
    if isinstance(value, dict):
        return [f for key, item in value.items() for f in left_todo(item, f"{field}.{key}" if field else str(key))]
    if isinstance(value, (list, tuple)):
        return [f for i, item in enumerate(value) for f in left_todo(
            item, f"{field}.{item['id']}" if isinstance(item, dict) and isinstance(item.get("id"), str)
            else f"{field}[{i}]")]
    return []


def check_problem(problem: Problem) -> list[str]:
    """Everything wrong with one loaded problem, as 'field: reason' strings."""
    todo = left_todo(problem.model_dump())
    if todo:  # a skeleton's placeholders are not worth proving yet (its reference raises too)
        return todo
    kind = kind_of(problem)
    unresolved = []
    for field, ref in kind.refs(problem):
        if field == "references.torch" and not extras.available("torch"):
            continue  # not checkable here; `qkv validate` says so once
        try:
            resolve(ref)
        except UnresolvedReference as err:
            unresolved.append(f"{field}: unknown reference {err}")
    if unresolved:
        return unresolved
    try:
        return kind.check(problem)
    except Exception as err:  # noqa: BLE001 - a broken compute/feasible function is the bank's error
        return [f"checking failed: {type(err).__name__}: {err}"]


def validate_bank(bank: Bank) -> list[Finding]:
    from autograder.bank import cues, measures

    findings = []
    functions = {p.id for p in bank.problems.values() if kind_of(p).code}
    gradable = []
    for problem_id, problem in sorted(bank.problems.items()):
        where = str(bank.paths[problem_id])
        found = check_problem(problem)
        findings += [Finding(where, what) for what in found]
        if kind_of(problem).code and not found:
            gradable.append(problem)
        # the one field that names other problems: feedback composes their mistakes into this one's reference
        for other in getattr(problem, "builds_on", None) or ():
            if other not in functions or other == problem_id:
                findings.append(Finding(where, f"builds_on: {other} is not another implement problem of the bank"))
    # in one sandboxed run for the whole bank; a problem that failed its own checks has no right outputs to trust
    for problem_id, found in sorted(power_findings(gradable).items()):
        findings += [Finding(str(bank.paths[problem_id]), what) for what in found]
    # what only the whole bank shows: a guessable balance of true and false, answers quoted elsewhere
    findings += [Finding(str(bank.root), what) for what in measures.balance_findings(bank)]
    for problem_id, found in sorted(measures.topic_balance_findings(bank).items()):
        findings += [Finding(str(bank.paths[problem_id]), what) for what in found]
    for problem_id, found in sorted(measures.leaks(bank).items()):
        findings += [Finding(str(bank.paths[problem_id]), what) for what in found]
    # a form of the text that tells the answer: explanation punctuation, hedging or absolute words, word overlap
    for problem_id, found in sorted(cues.choice_findings(bank).items()):
        findings += [Finding(str(bank.paths[problem_id]), what) for what in found]
    findings += [Finding(str(bank.root), what) for what in cues.verdict_findings(bank)]
    return findings


def bank_warnings(bank: Bank) -> list[Finding]:
    """What weakens the bank without making it ungradable: right choices that are clearly the longest."""
    from autograder.bank import measures

    return [Finding(str(bank.root), what) for what in measures.length_warnings(bank)]


def validate_report(report: LoadReport) -> list[Finding]:
    """Every loading error and every finding of the problems that loaded."""
    return [Finding(e.where, e.what) for e in report.errors] + validate_bank(report.bank)

