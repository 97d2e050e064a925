"""`implement`: the student writes a function; the grader runs it on the tests and compares with the reference.

Takes an `ImplementProblem` (the schema of docs/question-bank.md); gives its stub
and prompt, nbgrader's solution cell (the track's reference) and test cell (the
bundle's exact arrays), its self-check data (public tests only), validate's
proof that the references pass, the stub fails and each misconception is caught,
and its exam texts. It asks no drill or quiz questions: those cannot run code.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from autograder import extras
from autograder.kinds.model import DottedRef, ProblemBase, ProblemId, Strict, TestCase, Track
from autograder.kinds.implement.outputs import Outputs, literal_outputs, run_trusted
from autograder.kinds.implement.reference_source import reference_body
from autograder.kinds.resolve import resolve
from autograder.kinds.base import Kind
from autograder.kinds.cells import array_literal, value_literal
from autograder.kinds.items import Blank, KeyLine, Mistake, ProblemKey
from qkv_runtime import sealed
from qkv_runtime.compare import compare, select


class Misconception(Strict):
    """A named wrong implementation, run by the trusted grader to recognise a student's mistake."""

    id: ProblemId
    message: str = Field(min_length=10)
    implementation: DottedRef | None = None


class ImplementProblem(ProblemBase):
    kind: Literal["implement"]
    function: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")]
    signature: str
    returns: str
    example: str = ""
    references: dict[Track, DottedRef] = Field(min_length=1, description="one or both tracks")
    stub: DottedRef = Field(
        default="solutions.stubs.not_implemented",
        description="what the stub does: validate checks that it fails every test",
    )
    public_tests: list[TestCase] = Field(min_length=1)
    hidden_tests: list[TestCase] = Field(min_length=1)
    misconceptions: list[Misconception] = []
    builds_on: list[ProblemId] | None = Field(
        default=None,
        description="the problems whose functions this one calls (their mistakes are named here too); "
                    "default: found in the numpy reference's code",
    )

    @field_validator("signature")
    @classmethod
    def _signature_names_function(cls, value: str, info: Any) -> str:
        function = info.data.get("function")
        if function and not value.startswith(f"{function}("):
            raise ValueError(f"must start with '{function}('")
        try:  # stubs, notebooks and keys are written from it: it must be a Python def line
            ast.parse(f"def {value}:\n    pass\n")
        except SyntaxError as err:
            raise ValueError(f"is not a Python signature ({err.msg})") from None
        return value

    @model_validator(mode="after")
    def _unique_test_names(self) -> "ImplementProblem":
        names = [t.name for t in self.public_tests + self.hidden_tests]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"test names must be unique, repeated: {', '.join(dupes)}")
        return self


# ------------------------------------------------------------------ validate


def _run(function, test: TestCase, track: Track) -> Outputs | Exception:
    """The function's outputs on the test, or the error it raised."""
    try:
        return run_trusted(function, test, track)
    except Exception as err:  # noqa: BLE001 - any failure of the code under test is a finding, not a crash
        return err


def _passes(function, test: TestCase, track: Track, want: Outputs | None) -> bool:
    got = _run(function, test, track)
    if test.expect_error:
        return isinstance(got, Exception) and type(got).__name__ == test.expect_error
    return (not isinstance(got, Exception) and want is not None
            and compare(select(got, test.output), want, test.tolerance.abs, test.tolerance.rel) is None)


def runnable_references(problem: ImplementProblem) -> dict[Track, Any]:
    """{track: reference} of the references that can run here, the one that gives the right outputs first."""
    # without the torch extra the torch references cannot run here; `qkv validate` says so once
    reference = {track: resolve(ref) for track, ref in problem.references.items()
                 if track != "torch" or extras.available("torch")}
    return dict(sorted(reference.items(), key=lambda item: item[0] != "numpy"))


def check_implement(problem: ImplementProblem) -> list[str]:
    problems: list[str] = []
    tests = problem.public_tests + problem.hidden_tests
    reference = runnable_references(problem)
    if not reference:
        return []
    main_track, numpy_ref = next(iter(reference.items()))
    expected: dict[str, Outputs | None] = {}
    for test in tests:
        want = _run(numpy_ref, test, main_track)
        if test.expect_error:
            if not isinstance(want, Exception) or type(want).__name__ != test.expect_error:
                problems.append(f"test '{test.name}': the reference does not raise {test.expect_error}")
            expected[test.name] = None
            continue
        if isinstance(want, Exception):
            problems.append(f"test '{test.name}': the reference raised {type(want).__name__}: {want}")
            expected[test.name] = None
            continue
        expected[test.name] = selected = select(want, test.output)
        if test.expect is not None:
            mismatch = compare(selected, literal_outputs(test.expect), test.tolerance.abs, test.tolerance.rel)
            if mismatch:
                problems.append(f"test '{test.name}': expect: the reference gives other numbers ({mismatch.reason})")
        for track, function in reference.items():
            if function is not numpy_ref and not _passes(function, test, track, expected[test.name]):
                problems.append(f"test '{test.name}': the {track} reference disagrees with the numpy one")
    stub = resolve(problem.stub)
    passing_stub = [t.name for t in tests if _passes(stub, t, "numpy", expected[t.name])]
    if passing_stub:
        problems.append(f"stub: passes test(s) {', '.join(passing_stub)}; a stub must fail every test")
    for wrong in problem.misconceptions:
        if not wrong.implementation:
            continue
        mutant = resolve(wrong.implementation)
        if all(_passes(mutant, t, "numpy", expected[t.name]) for t in problem.hidden_tests):
            problems.append(f"misconceptions.{wrong.id}: passes every hidden test; the hidden tests are too weak to catch it")
    return problems


# --------------------------------------------------------------- source text


def docstring(problem: ImplementProblem) -> str:
    """The text of the stub's docstring, which is a raw string (r\"\"\"): its TeX reads in an editor as in the
    problem file, one backslash each."""
    parts = [problem.prompt.strip(), f"Returns: {problem.returns}"]
    if problem.example.strip():
        parts.append("Example:\n" + textwrap.indent(problem.example.strip(), "    "))
    return textwrap.indent("\n\n".join(parts).replace('"""', "'''"), "    ").lstrip()


def stub_function(problem: ImplementProblem) -> str:
    return f'def {problem.signature}:\n    r"""{docstring(problem)}\n    """\n    raise NotImplementedError("{problem.function}")\n'


def key_function(problem: ImplementProblem, track: Track) -> str:
    """The problem's function with the track's reference as its body."""
    body = reference_body(problem.signature, resolve(problem.references[track]))
    return f"def {problem.signature}:\n{textwrap.indent(body, '    ')}\n"


def _solution_cell_source(problem: ImplementProblem, track: Track) -> str:
    body = reference_body(problem.signature, resolve(problem.references[track]))
    return (
        f'def {problem.signature}:\n    r"""{docstring(problem)}\n    """\n'
        "    ### BEGIN SOLUTION\n"
        f"{textwrap.indent(body, '    ')}\n"
        "    ### END SOLUTION\n"
    )


def _check_line(test) -> str:
    args = "[" + ", ".join(value_literal(a) for a in test.args) + "]"
    kwargs = "{" + ", ".join(f"{k!r}: {value_literal(v)}" for k, v in sorted(test.kwargs.items())) + "}"
    parts = [repr(test.name), repr(float(test.weight)), args, kwargs]
    if test.expect_error:
        parts.append(f"error={test.expect_error!r}")
    else:
        assert test.expected is not None
        parts.append("want=[" + ", ".join(array_literal(np.asarray(e)) for e in test.expected) + "]")
        parts.append(f"tol=({float(test.tolerance.abs)!r}, {float(test.tolerance.rel)!r})")
        if test.output != "all":
            parts.append(f"output={test.output!r}")
        if test.mutant_outputs:  # so a failed test names the mistake, as qkv grade does
            mutants = ", ".join(f"{m!r}: [" + ", ".join(array_literal(np.asarray(o)) for o in outputs) + "]"
                                for m, outputs in sorted(test.mutant_outputs.items()))
            parts.append("mutants={" + mutants + "}")
        if test.upstream_outputs:  # and the mistakes of the functions it builds on
            upstream = ", ".join(
                f"{u!r}: {{" + ", ".join(f"{m!r}: [" + ", ".join(array_literal(np.asarray(o)) for o in outputs) + "]"
                                         for m, outputs in sorted(found.items())) + "}"
                for u, found in sorted(test.upstream_outputs.items()))
            parts.append("upstream={" + upstream + "}")
    return f"_t.check({', '.join(parts)})"


def _builds_on(code, bundle) -> list:
    """[problem id, function, {mistake: message}] of each problem `code` builds on, as nbcells.CodeTests takes them."""
    others = {p.id: p for p in bundle.code}
    return [[u, others[u].function, dict(sorted(others[u].misconceptions.items()))] for u in code.builds_on if u in others]


def _code_tests_source(code, track: str, bundle=None) -> str:
    public = [t for t in code.tests if t.visibility == "public"]
    hidden = [t for t in code.tests if t.visibility == "hidden"]
    lines = [
        f"# Tests of {code.function} (locked): {len(public)} public test(s) here, {len(hidden)} hidden when graded.",
        f"_t = _QkvTests(globals(), {code.id!r}, {code.function!r}, points={float(code.points)!r}, "
        f"tests={len(code.tests)}, total_weight={float(code.total_weight)!r}, track={track!r}, "
        f"mistakes={dict(sorted(code.misconceptions.items()))!r}"
        + (f", builds_on={_builds_on(code, bundle)!r})" if bundle is not None and code.builds_on else ")"),
        *(_check_line(t) for t in public),
    ]
    if hidden:
        lines += ["### BEGIN HIDDEN TESTS", *(_check_line(t) for t in hidden), "### END HIDDEN TESTS"]
    lines.append("_t.score()")
    return "\n".join(lines)


# ----------------------------------------------------------- self-check data


def _json_value(value: Any) -> Any:
    # self-check data: moved verbatim from assemble/student.py
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype), "shape": list(value.shape)}
    return {"value": value}


def _public_test(test) -> dict[str, Any]:
    # self-check data: moved verbatim from assemble/student.py
    digits = sealed.OUTPUT_DIGITS
    return {
        "name": test.name,
        "args": [_json_value(a) for a in test.args],
        "kwargs": {k: _json_value(v) for k, v in sorted(test.kwargs.items())},
        "expected": None if test.expected is None else [_json_value(np.asarray(e)) for e in test.expected],
        "expect_error": test.expect_error,
        "output": test.output,
        "tolerance": test.tolerance.model_dump(),
        "mutants": {m: sealed.outputs_digest(o, digits) for m, o in sorted(test.mutant_outputs.items())},
        # qkv_runtime.diagnosis.name_mistake's `upstream`, as digests: {problem built on: {mistake: digest}}
        "upstream": {u: {m: sealed.outputs_digest(o, digits) for m, o in sorted(found.items())}
                     for u, found in sorted(test.upstream_outputs.items())},
    }


def _code_data(problem: ImplementProblem, code, bundle=None) -> dict[str, Any]:
    # self-check data: moved verbatim from assemble/student.py (the implement branch of `selfcheck_data`)
    data = dict(function=problem.function, public_tests=[_public_test(t) for t in code.tests if t.visibility == "public"],
                hidden_tests=sum(t.visibility == "hidden" for t in code.tests),
                misconceptions={m.id: m.message for m in problem.misconceptions})
    data["builds_on"] = _builds_on(code, bundle) if bundle is not None else []  # in the assignment's order
    return data


# ---------------------------------------------------------------------- kind


def _code_problem(bundle, problem_id: str):
    return next(p for p in bundle.code if p.id == problem_id)


class ImplementKind(Kind):
    name = "implement"
    model = ImplementProblem
    code = True

    def refs(self, problem: ImplementProblem) -> list[tuple[str, str]]:
        refs = [(f"references.{t}", r) for t, r in problem.references.items()] + [("stub", problem.stub)]
        return refs + [(f"misconceptions.{m.id}", m.implementation) for m in problem.misconceptions if m.implementation]

    def check(self, problem: ImplementProblem) -> list[str]:
        return check_implement(problem)

    def takes_track(self, problem: ImplementProblem, track: str) -> bool:
        return track in problem.references

    def release_prompt(self, problem: ImplementProblem, manifest) -> str:
        return f"{problem.prompt.strip()}\n\n**Write** `{problem.signature}`: returns {problem.returns}."

    def student_cell(self, problem: ImplementProblem) -> str:
        return "# your work\n" + stub_function(problem)

    def nbgrader_solution(self, assigned, assignment) -> str:
        return _solution_cell_source(assigned.problem, assignment.track)

    def nbgrader_tests(self, assigned, assignment, bundle) -> str:
        return _code_tests_source(_code_problem(bundle, assigned.problem.id), assignment.track, bundle)

    def selfcheck_data(self, assigned, assignment, bundle, students) -> dict[str, Any]:
        return _code_data(assigned.problem, _code_problem(bundle, assigned.problem.id), bundle)

    def paper_question(self, problem: ImplementProblem, variant) -> tuple[str, tuple[Blank, ...]]:
        example = f"\n\nExample:\n\n```python\n{problem.example.strip()}\n```" if problem.example.strip() else ""
        text = f"Write the function `{problem.signature}`; it returns {problem.returns}.\n\n{problem.prompt.strip()}{example}"
        return text, (Blank("your function", tall=True),)

    def key(self, problem: ImplementProblem, variant) -> ProblemKey:
        # the approach in the problem's `solution` text, never the reference's source
        line = KeyLine("function", f"`{problem.signature}`, returning {problem.returns}")
        mistakes = tuple(Mistake(m.id.replace("-", " "), m.message) for m in problem.misconceptions)
        return ProblemKey((line,), problem.solution, mistakes)

    def drill_questions(self, problem: ImplementProblem, variant) -> list:
        raise ValueError(f"{problem.id}: the drill asks no {problem.kind} problems")

    def lms_groups(self, problem: ImplementProblem, points, seed, variants) -> list:
        return []  # platforms cannot run code: `qkv export` counts what it left out


IMPLEMENT = ImplementKind()
