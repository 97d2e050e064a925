"""The nbgrader course folder: an `Assignment` and its `GradingBundle` in, {path: bytes} of `nbgrader/` out.

`nbgrader_config.py` (course id, root, gradebook in the course folder) and
`source/NAME/NAME.ipynb`, an nbgrader source notebook (cell metadata schema 3):
locked prompts, a locked setup cell, a locked cell of grading helpers, and per
problem a solution cell (the reference between BEGIN/END SOLUTION, or the right
`ANSWERS` entry) and an autograded test cell. A test cell holds the public tests
in the open and the hidden ones between BEGIN/END HIDDEN TESTS; its last line's
value is the points earned, which nbgrader reads as partial credit, weighted per
test as `qkv grade` does.

Test inputs and expected outputs are the bundle's exact arrays, base64-encoded.
Student calls run with warnings, NumPy floating-point warnings and stderr
(Python and file-descriptor level) captured, because nbgrader scores 0 any test
cell that writes to stderr. Our own metadata lives in `metadata.qkv` (nbgrader's
schema rejects unknown keys in `metadata.nbgrader`). Cell ids are derived from
problem ids and nothing depends on the clock, so builds are byte-identical.
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import inspect
import math
import textwrap
from typing import Any

import nbformat
import numpy as np
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import answer_forms
from autograder.bank.answers import expected_shape
from autograder.bank.model import (
    ImplementProblem,
    MultipleChoiceProblem,
    NumericProblem,
    ShapeProblem,
    TrueFalseProblem,
)
from autograder.bank.resolve import resolve
from autograder.bank.variants import variant_for
from autograder.build.manifest import AssignedProblem, Assignment
from autograder.build.notebook import KERNELSPEC
from autograder.build.reference_source import reference_body, reference_source
from autograder.build.solution_key import written_answer
from autograder.build.student_text import TRACK_IMPORTS, docstring, placeholder, problem_markdown
from autograder.bundle import CodeProblem, GradedTest, GradingBundle

COURSE_ID = "qkv"
SCHEMA_VERSION = 3
FORM_FUNCTIONS = (answer_forms.parse_numbers, answer_forms.parse_shape, answer_forms.evaluate_dim,
                  answer_forms.parse_bool, answer_forms.parse_choice)

CONFIG = '''\
"""nbgrader configuration of this course folder (written by `qkv build`).

Run nbgrader from this folder with the virtual environment's bin/ first on PATH
(nbgrader runs `alembic` from PATH when it creates the gradebook):

    nbgrader generate_assignment {name} --force
    nbgrader autograde {name}
"""

import os

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

_here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = {course!r}
c.CourseDirectory.root = _here
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(_here, "gradebook.db")
c.Execute.timeout = 120  # seconds per cell
'''


# ------------------------------------------------------------------ cells


def _meta(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
          points: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"grade": grade, "grade_id": grade_id, "locked": locked,
                            "schema_version": SCHEMA_VERSION, "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return meta


def _cell(kind: str, source: str, cell_id: str, role: str, problem: str | None = None, **nbgrader: Any):
    make = new_markdown_cell if kind == "markdown" else new_code_cell
    cell = make(source.rstrip("\n"))
    cell.id = cell_id[-64:]
    cell.metadata["nbgrader"] = _meta(cell_id, **nbgrader)
    # role "selfcheck" for helpers and tests: `qkv grade` skips those cells of a submitted notebook
    cell.metadata["qkv"] = {"role": role, **({"problem": problem} if problem else {})}
    return cell


# ---------------------------------------------------------------- literals


def _array_literal(array: np.ndarray) -> str:
    array = np.asarray(array)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"cannot embed an array of {array.dtype} in a test cell")
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    data = base64.b64encode(little.tobytes()).decode("ascii")
    return f"_qkv_array({little.dtype.str!r}, {tuple(array.shape)!r}, {data!r})"


def _scalar_literal(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, np.generic):
        return _scalar_literal(value.item())
    raise TypeError(f"cannot embed {type(value).__name__} {value!r} in a test cell")


def _value_literal(value: Any) -> str:
    return _array_literal(value) if isinstance(value, np.ndarray) else _scalar_literal(value)


def _plain_literal(value: Any) -> str:
    """A Python literal for answers: numbers, lists, strings, booleans, dicts of them."""
    if isinstance(value, np.ndarray):
        return _plain_literal(value.tolist())
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_plain_literal(k)}: {_plain_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_plain_literal(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
            f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
    return _scalar_literal(value)


# ------------------------------------------------------------ fixed cells


def _intro(assignment: Assignment) -> str:
    text = (
        f"# {assignment.manifest.title}\n\n"
        "Write each function in the cell under its prompt (replace `raise NotImplementedError()`), "
        "set each `ANSWERS[...]` entry, then restart the kernel and run every cell from the top. "
        "The locked cell after each problem runs its public tests now; hidden tests are added when it is graded, "
        "and its result is the points earned."
    )
    if assignment.manifest.variants == "per_student":
        text += (
            "\n\n**Hand calculations:** this assignment gives every student their own numbers when it is graded "
            "with `qkv grade`. This nbgrader notebook uses the **class-wide numbers** shown in each prompt, "
            "and nbgrader grades those; per-student numbers are graded by `qkv grade`, not by nbgrader."
        )
    return text


def _setup(assignment: Assignment) -> str:
    return (
        'STUDENT_ID = ""  # your student id, e.g. "s1234567"\n\n'
        f"{TRACK_IMPORTS[assignment.track]}\n\n"
        "ANSWERS = {}"
    )


def _forms_source() -> str:
    """autograder/answer_forms.py's parsing functions with what they need, as the body of a function
    (so their imports and helpers stay out of the notebook's namespace)."""
    module_text = inspect.getsource(answer_forms)
    imports: list[str] = []
    segments: list[str] = []
    for function in FORM_FUNCTIONS:
        imported, body = reference_source(function)
        imports += [line for line in imported.splitlines() if line not in imports]
        segments += [s for s in body.split("\n\n\n") if s not in segments]
    segments.sort(key=module_text.index)
    names = ", ".join(f"{f.__name__}={f.__name__}" for f in FORM_FUNCTIONS)
    body = "\n".join(imports) + "\n\n" + "\n\n".join(segments) + (
        f"\n\nreturn _qkv_types.SimpleNamespace(AnswerFormatError=AnswerFormatError, {names})"
    )
    source = (
        "def _qkv_answer_forms():\n"
        '    """Answer parsing, the same as `qkv grade` (copied from autograder/answer_forms.py)."""\n'
        f"{textwrap.indent(body, '    ')}\n\n\n"
        "_qkv_forms = _qkv_answer_forms()"
    )
    ast.parse(source)  # fail at build time, not in a kernel
    return source


HELPERS = '''\
# Grading helpers for the test cells below (locked: nbgrader restores this cell when it grades).
# Student code runs with its warnings, NumPy floating-point warnings and stderr captured: nbgrader
# gives 0 to a test cell that writes to stderr, and a warning is not a mistake.
import base64 as _qkv_base64
import contextlib as _qkv_contextlib
import io as _qkv_io
import os as _qkv_os
import sys as _qkv_sys
import tempfile as _qkv_tempfile
import types as _qkv_types
import warnings as _qkv_warnings

import numpy as _qkv_np
{torch_import}
_QKV_TRACK = {track!r}


def _qkv_array(dtype, shape, data):
    """An array of a test: its exact bytes, base64-encoded."""
    return _qkv_np.frombuffer(_qkv_base64.b64decode(data), dtype=_qkv_np.dtype(dtype)).reshape(shape).copy()


@_qkv_contextlib.contextmanager
def _qkv_fd_stderr():
    """Send what is written straight to file descriptor 2 (C code, sys.__stderr__) to a scratch file."""
    try:
        saved = _qkv_os.dup(2)
    except OSError:
        yield
        return
    with _qkv_tempfile.TemporaryFile() as sink:
        _qkv_os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            try:
                if _qkv_sys.__stderr__ is not None:
                    _qkv_sys.__stderr__.flush()
            except Exception:
                pass
            _qkv_os.dup2(saved, 2)
            _qkv_os.close(saved)


@_qkv_contextlib.contextmanager
def _qkv_quiet(notes):
    """Warnings and stderr of the code inside become notes (shown on stdout), never stderr output."""
    captured = _qkv_io.StringIO()
    with _qkv_warnings.catch_warnings(record=True) as caught, _qkv_np.errstate(all="ignore"), \\
            _qkv_contextlib.redirect_stderr(captured), _qkv_fd_stderr():
        _qkv_warnings.simplefilter("always")
        try:
            yield
        finally:
            notes.extend(f"{{w.category.__name__}}: {{w.message}}" for w in caught)
            if captured.getvalue().strip():
                notes.append("wrote to stderr: " + captured.getvalue().strip()[:200])


def _qkv_to_track(value):
    if _QKV_TRACK == "torch" and isinstance(value, _qkv_np.ndarray):
        return _qkv_torch.from_numpy(value.copy())
    return value


def _qkv_outputs(value):
    """A returned value as a tuple of arrays (tensors detached, pairs split)."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    out = []
    for item in items:
        if hasattr(item, "detach"):
            item = item.detach().cpu().numpy()
        out.append(_qkv_np.asarray(item))
    return tuple(out)


def _qkv_compare(got, want, tol_abs, tol_rel):
    """None when every output matches within |got - want| <= abs + rel * |want|, else the reason."""
    if len(got) != len(want):
        return f"returned {{len(got)}} value(s), expected {{len(want)}}"
    for i, (g, w) in enumerate(zip(got, want)):
        which = f"value {{i + 1}}: " if len(want) > 1 else ""
        if g.dtype.kind not in "biuf" or w.dtype.kind not in "biuf":
            return f"{{which}}returned an array of {{g.dtype}}, expected numbers"
        if g.shape != w.shape:
            return f"{{which}}shape {{tuple(g.shape)}}, expected {{tuple(w.shape)}}"
        g64, w64 = g.astype(_qkv_np.float64), w.astype(_qkv_np.float64)
        if _qkv_np.isnan(g64).any() and not _qkv_np.isnan(w64).any():
            return f"{{which}}contains NaN"
        with _qkv_np.errstate(invalid="ignore", over="ignore"):  # an infinite expected entry must be met exactly
            err = _qkv_np.abs(g64 - w64)
            bad = ~((g64 == w64) | ((err <= tol_abs + tol_rel * _qkv_np.abs(w64)) & _qkv_np.isfinite(w64)))
        bad &= ~(_qkv_np.isnan(g64) & _qkv_np.isnan(w64))
        if bad.any():
            worst = float(_qkv_np.nanmax(_qkv_np.where(bad, err, 0.0)))
            return f"{{which}}{{int(bad.sum())}} of {{bad.size}} entries differ, largest error {{worst:.3g}}"
    return None


def _qkv_result(points):
    """The value of a test cell, which nbgrader reads as the points earned. A cell that shows no value
    would get full marks, so switched-off display is an error (0 points), not a silent pass."""
    shell = globals().get("get_ipython", lambda: None)()
    plain = shell.display_formatter.formatters.get("text/plain") if shell is not None else None
    if shell is not None and (shell.ast_node_interactivity == "none" or plain is None or not plain.enabled
                              or "text/plain" not in shell.display_formatter.active_types):
        raise RuntimeError("this cell's result cannot be shown (display is switched off), so it cannot be graded")
    return points


def _qkv_notes(notes):
    unique = list(dict.fromkeys(notes))
    if unique:
        print("  (ignored for grading) " + "; ".join(unique[:4]) + (" ..." if len(unique) > 4 else ""))


class _QkvTests:
    """The tests of one function. score() is the value of the test cell: the points earned,
    which nbgrader reads as partial credit (each test is worth points * weight / total weight)."""

    def __init__(self, problem, function, points, tests, total_weight):
        self.problem, self.function, self.points = problem, function, points
        self.tests, self.total_weight = tests, total_weight
        self.run, self.passed, self.earned = 0, 0, 0.0
        self.failures, self.notes = [], []

    def check(self, name, weight, args, kwargs, want=None, error=None, tol=(1e-6, 1e-6), output="all"):
        self.run += 1
        reason = self._judge(args, kwargs, want, error, tol, output)
        if reason is None:
            self.passed += 1
            self.earned += self.points * weight / self.total_weight
        else:
            self.failures.append(f"{{name}}: {{reason}}")

    def _judge(self, args, kwargs, want, error, tol, output):
        function = globals().get(self.function)
        if not callable(function):
            return f"{{self.function}} is not defined: run its cell first"
        with _qkv_quiet(self.notes):
            try:
                result = function(*[_qkv_to_track(a) for a in args],
                                  **{{k: _qkv_to_track(v) for k, v in kwargs.items()}})
            except Exception as err:
                if error is not None and type(err).__name__ == error:
                    return None
                return f"raised {{type(err).__name__}}: {{str(err)[:160]}}"
            if error is not None:
                return f"should raise {{error}}"
            try:
                got = _qkv_outputs(result)
                got = got[:1] if output == "first" else got[1:2] if output == "second" else got
                return _qkv_compare(got, want, *tol)
            except Exception as err:
                return f"the result cannot be read as arrays ({{type(err).__name__}}: {{str(err)[:120]}})"

    def score(self):
        earned = min(self.points, round(self.earned, 4))
        print(f"{{self.function}}: {{self.passed}} of {{self.run}} tests passed")
        for failure in self.failures:
            print("  failed " + failure)
        _qkv_notes(self.notes)
        if self.run < self.tests:
            print(f"  {{self.tests - self.run}} hidden test(s) run when this is graded")
        return _qkv_result(earned)


class _QkvAnswer:
    """A written answer, ANSWERS[problem], read with the same rules as `qkv grade`.
    score() is the value of the test cell: the points earned (numbers: a share per part)."""

    def __init__(self, problem, kind, points, parts=(), choices=0):
        answers = globals().get("ANSWERS")
        self.answer = answers.get(problem) if isinstance(answers, dict) else None
        self.problem, self.kind, self.points = problem, kind, points
        self.parts, self.choices = list(parts), choices
        self.checks, self.right, self.messages, self.notes = 0, 0, [], []
        if self._unanswered():
            print(f"ANSWERS[{{problem!r}}] is not set yet")
            return
        with _qkv_quiet(self.notes):
            for part in self.parts or [None]:
                try:
                    self._read(self._typed(part))
                except _qkv_forms.AnswerFormatError as err:
                    print((f"{{part}}: " if part else "") + str(err))

    def _unanswered(self):
        a = self.answer
        return a is None or a == "" or (isinstance(a, dict) and all(v is None or v == "" for v in a.values()))

    def _typed(self, part):
        a = self.answer
        if self.kind == "numeric":
            if len(self.parts) == 1 and not isinstance(a, dict):
                return a
            return a.get(part) if isinstance(a, dict) else None
        if self.kind == "true_false" and isinstance(a, dict):
            return a.get("answer")
        return a

    def _read(self, typed, symbols=None):
        if self.kind == "numeric":
            if typed is None:
                raise _qkv_forms.AnswerFormatError("not answered")
            return _qkv_forms.parse_numbers(typed)
        if self.kind == "shape":
            return tuple(_qkv_forms.evaluate_dim(d, symbols or {{}}) for d in _qkv_forms.parse_shape(typed))
        if self.kind == "true_false":
            return _qkv_forms.parse_bool(typed)
        return _qkv_forms.parse_choice(typed, self.choices)

    def _judge(self, label, check):
        self.checks += 1
        if self._unanswered():
            return
        with _qkv_quiet(self.notes):
            try:
                ok = check()
            except _qkv_forms.AnswerFormatError as err:
                self.messages.append(f"{{label}}: {{err}}")
                return
        if ok:
            self.right += 1
        else:
            self.messages.append(f"{{label}}: not the answer")

    def number(self, part, want, tol_abs, tol_rel):
        def check():
            got = self._read(self._typed(part))
            w = _qkv_np.asarray(want, dtype=float)
            if got.size == w.size and got.shape != w.shape:
                got = got.reshape(w.shape)
            return got.shape == w.shape and bool(_qkv_np.all(_qkv_np.abs(got - w) <= tol_abs + tol_rel * _qkv_np.abs(w)))
        self._judge(part, check)

    def shape(self, want, symbols):
        self._judge("shape", lambda: self._read(self.answer, symbols) == tuple(want))

    def truth(self, want):
        self._judge("answer", lambda: self._read(self._typed(None)) == want)

    def choice(self, want):
        self._judge("answer", lambda: self._read(self.answer) == want)

    def score(self):
        _qkv_notes(self.notes)
        if self.checks == 0:
            print("checked when this is graded")
            return _qkv_result(0.0)
        if self._unanswered():
            print(f"ANSWERS[{{self.problem!r}}] is not set")
            return _qkv_result(0.0)
        print(f"{{self.problem}}: {{self.right}} of {{self.checks}} correct")
        for message in self.messages:
            print("  " + message)
        return _qkv_result(min(self.points, round(self.points * self.right / self.checks, 4)))


{forms}
'''


def _helpers(assignment: Assignment) -> str:
    torch_import = "import torch as _qkv_torch\n" if assignment.track == "torch" else ""
    return HELPERS.format(torch_import=torch_import, track=assignment.track, forms=_forms_source())


# ------------------------------------------------------- implement problems


def _solution_cell_source(problem: ImplementProblem, track: str) -> str:
    body = reference_body(problem.signature, resolve(problem.references[track]))
    return (
        f'def {problem.signature}:\n    """{docstring(problem)}\n    """\n'
        "    ### BEGIN SOLUTION\n"
        f"{textwrap.indent(body, '    ')}\n"
        "    ### END SOLUTION\n"
    )


def _check_line(test: GradedTest) -> str:
    args = "[" + ", ".join(_value_literal(a) for a in test.args) + "]"
    kwargs = "{" + ", ".join(f"{k!r}: {_value_literal(v)}" for k, v in sorted(test.kwargs.items())) + "}"
    parts = [repr(test.name), repr(float(test.weight)), args, kwargs]
    if test.expect_error:
        parts.append(f"error={test.expect_error!r}")
    else:
        assert test.expected is not None
        parts.append("want=[" + ", ".join(_array_literal(np.asarray(e)) for e in test.expected) + "]")
        parts.append(f"tol=({float(test.tolerance.abs)!r}, {float(test.tolerance.rel)!r})")
        if test.output != "all":
            parts.append(f"output={test.output!r}")
    return f"_t.check({', '.join(parts)})"


def _code_tests_source(code: CodeProblem) -> str:
    public = [t for t in code.tests if t.visibility == "public"]
    hidden = [t for t in code.tests if t.visibility == "hidden"]
    lines = [
        f"# Tests of {code.function} (locked): {len(public)} public test(s) here, {len(hidden)} hidden when graded.",
        f"_t = _QkvTests({code.id!r}, {code.function!r}, points={float(code.points)!r}, "
        f"tests={len(code.tests)}, total_weight={float(code.total_weight)!r})",
        *(_check_line(t) for t in public),
    ]
    if hidden:
        lines += ["### BEGIN HIDDEN TESTS", *(_check_line(t) for t in hidden), "### END HIDDEN TESTS"]
    lines.append("_t.score()")
    return "\n".join(lines)


# --------------------------------------------------------- written problems


def _class_variant(problem: NumericProblem, assignment: Assignment):
    return variant_for(problem, assignment.manifest.seed, "same", None)


def right_answer(assigned: AssignedProblem, assignment: Assignment) -> Any:
    """What a student who is right writes in ANSWERS (the class-wide numbers for hand calculations)."""
    problem = assigned.problem
    return written_answer(problem, _class_variant(problem, assignment) if isinstance(problem, NumericProblem) else None)


def _written_solution_source(assigned: AssignedProblem, assignment: Assignment) -> str:
    problem = assigned.problem
    pid = problem.id
    if isinstance(problem, ShapeProblem):
        form = f'ANSWERS[{pid!r}] = "..."  # a shape such as "n x d_v" or (3, 4)'
    elif isinstance(problem, MultipleChoiceProblem):
        letters = ", ".join(chr(65 + i) for i in range(len(problem.choices)))
        form = f'ANSWERS[{pid!r}] = "..."  # one letter: {letters}'
    else:
        form = f"ANSWERS[{pid!r}] = {placeholder(problem)}"
    lines = [f"# your answer, in this form: {form}"]
    if isinstance(problem, TrueFalseProblem):
        lines.append("# (when false, also write the corrected statement under \"correction\")")
    lines += ["### BEGIN SOLUTION",
              f"ANSWERS[{pid!r}] = {_plain_literal(right_answer(assigned, assignment))}",
              "### END SOLUTION"]
    return "\n".join(lines)


def _written_tests_source(assigned: AssignedProblem, assignment: Assignment) -> str:
    problem = assigned.problem
    pid, points = problem.id, float(assigned.points)
    extra = ""
    hidden: list[str] = []
    if isinstance(problem, NumericProblem):
        extra = f", parts={[p.name for p in problem.parts]!r}"
        answers = _class_variant(problem, assignment).answers
        hidden = [f"_w.number({p.name!r}, {_plain_literal(np.asarray(answers[p.name], dtype=float))}, "
                  f"{float(p.tolerance.abs)!r}, {float(p.tolerance.rel)!r})" for p in problem.parts]
    elif isinstance(problem, ShapeProblem):
        hidden = [f"_w.shape({_plain_literal(tuple(expected_shape(problem)))}, {_plain_literal(dict(problem.parameters))})"]
    elif isinstance(problem, TrueFalseProblem):
        hidden = [f"_w.truth({problem.answer!r})"]
    elif isinstance(problem, MultipleChoiceProblem):
        extra = f", choices={len(problem.choices)}"
        hidden = [f"_w.choice({problem.answer!r})"]
    else:
        raise TypeError(f"no test cell for {problem.kind}")
    return "\n".join([
        f"# Checks ANSWERS[{pid!r}] (locked): the answer is compared when this is graded.",
        f"_w = _QkvAnswer({pid!r}, {problem.kind!r}, points={points!r}{extra})",
        "### BEGIN HIDDEN TESTS", *hidden, "### END HIDDEN TESTS",
        "_w.score()",
    ])


def _prompt(assigned: AssignedProblem, assignment: Assignment) -> str:
    if assignment.manifest.variants == "per_student" and isinstance(assigned.problem, NumericProblem):
        class_wide = dataclasses.replace(assignment, manifest=assignment.manifest.model_copy(update={"variants": "same"}))
        return (problem_markdown(assigned, class_wide).rstrip("\n")
                + "\n\n*nbgrader grades the class-wide numbers above; your own numbers are graded by `qkv grade`.*\n")
    return problem_markdown(assigned, assignment)


# ---------------------------------------------------------------- notebook


def source_notebook(assignment: Assignment, bundle: GradingBundle) -> str:
    code = {p.id: p for p in bundle.code}
    cells = [
        _cell("markdown", _intro(assignment), "qkv-intro", "intro", locked=True),
        _cell("code", _setup(assignment), "qkv-setup", "setup", locked=True),
        _cell("code", _helpers(assignment), "qkv-helpers", "selfcheck", locked=True),
    ]
    for assigned in assignment.problems:
        problem = assigned.problem
        pid = problem.id
        cells.append(_cell("markdown", _prompt(assigned, assignment), f"{pid}-prompt", "prompt", pid, locked=True))
        if isinstance(problem, ImplementProblem):
            solution = _solution_cell_source(problem, assignment.track)
            tests = _code_tests_source(code[pid])
        else:
            solution = _written_solution_source(assigned, assignment)
            tests = _written_tests_source(assigned, assignment)
        cells.append(_cell("code", solution, f"{pid}-solution", "work", pid, solution=True))
        cells.append(_cell("code", tests, f"{pid}-tests", "selfcheck", pid,
                           grade=True, locked=True, points=float(assigned.points)))
    notebook = new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    nbformat.validate(notebook)
    return nbformat.writes(notebook)


def nbgrader_files(assignment: Assignment, bundle: GradingBundle) -> dict[str, bytes]:
    name = assignment.name
    return {
        "nbgrader_config.py": CONFIG.format(name=name, course=COURSE_ID).encode(),
        f"source/{name}/{name}.ipynb": (source_notebook(assignment, bundle)).encode(),
    }


__all__ = ["COURSE_ID", "nbgrader_files", "right_answer", "source_notebook"]
