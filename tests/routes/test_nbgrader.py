"""The nbgrader course folder of `qkv build`, run through the real nbgrader CLI and a real Jupyter kernel.

For each course: `nbgrader generate_assignment` must succeed and release no
reference body and no hidden test; then `nbgrader autograde` grades the
submissions, read back from nbgrader's gradebook: the source notebook itself
(full marks), the released stub (0), a correct solution whose functions warn and
write to stderr (still full marks), and one with a classic mistake in one
function and, in another, a mistake that passes some tests: each loses its own
problem's points only, exactly as many as `qkv grade`'s per-test weights say.
On the NumPy course also the stub with cell values switched off (0, not full
marks), and the stub whose cells redefine or patch the test cells' helpers, replace ANSWERS by
objects equal to any answer, or change the helpers' embedded text: each gets what its functions earn
(or nothing), never the points it claims. The two courses' nbgrader runs overlap in time.

Courses: the bundled `attention-numpy`, and `attention-torch` (or, without that
manifest, the fixture `torch-per-student`). The fixture (torch, per-student
numbers, every problem kind, a test that must raise) is also run in this process
without a kernel, where written answers are checked against `qkv grade`'s verdicts.
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
import numpy as np
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbgrader.api import Gradebook
from nbgrader.nbgraderformat import MetadataValidator

from autograder.bank.load import load_bank_strict
from autograder.kinds import KINDS, ImplementProblem, NumericProblem, kind_of
from autograder.kinds.implement.outputs import as_outputs, to_track
from qkv_runtime.compare import compare, select
from autograder.kinds.resolve import resolve
from autograder.kinds.numeric.variants import variant_for
from autograder.assemble import build
from autograder.assemble.manifest import Assignment, default_assignments_root, find_manifest, resolve_assignment
from autograder.kinds.implement.reference_source import solution_body
from autograder.assemble.student_text import CLASS, TRACK_IMPORTS, written_prompt
from autograder.bundle import CodeProblem, GradingBundle, read_bundle

pytestmark = pytest.mark.slow  # the real nbgrader and a Jupyter kernel

FIXTURES = Path(__file__).parents[1] / "fixtures" / "nbgrader" / "assignments"
HOSTILE = Path(__file__).parents[1] / "fixtures" / "nbgrader" / "hostile"  # one student's cell per attack
ATTACKS = ("redefine_helpers", "patch_helpers", "answers_equal_anything")  # each must leave the verdicts as they are
VENV_BIN = Path(sys.executable).parent
NOISE_MARK = "qkv-noise"


def nbgrader(course: Path, *args: str) -> None:
    """Run the nbgrader CLI in the course folder; the venv's bin/ first on PATH (nbgrader runs `alembic`)."""
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "JUPYTER_RUNTIME_DIR": str(course / ".runtime")}
    # ipykernel stops forwarding what is written to file descriptors 1 and 2 when it sees this
    # variable; nbgrader outside pytest forwards it, so the kernel must not see it here either
    env.pop("PYTEST_CURRENT_TEST", None)
    proc = subprocess.run([str(VENV_BIN / "nbgrader"), *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


# ------------------------------------------------------------- submissions


def _cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}


def _noise(track: str) -> str:
    """Code that warns and writes to stderr every way a student's function might."""
    lines = [
        "import os as _os, sys as _sys, warnings as _warnings",
        "import numpy as _np",
        f'print("{NOISE_MARK}: sys.stderr", file=_sys.stderr)',
        f'print("{NOISE_MARK}: sys.__stderr__", file=_sys.__stderr__)',
        f'_os.write(2, b"{NOISE_MARK}: file descriptor 2\\n")',
        f'_warnings.warn("{NOISE_MARK}: a warning of the student\'s own")',
        "_np.log(_np.zeros(1))  # RuntimeWarning: divide by zero",
        "_np.ones(1) / _np.zeros(1)",
    ]
    if track == "torch":
        lines += ["import torch as _torch", "_torch.tensor(_torch.ones(1))  # UserWarning: copy construct"]
    return "\n".join(lines)


def _with_noise(source: str, track: str) -> str:
    marker = "    ### BEGIN SOLUTION\n"
    assert marker in source
    return source.replace(marker, marker + textwrap.indent(_noise(track), "    ") + "\n", 1)


def _parameters(signature: str) -> list[str]:
    args = ast.parse(f"def {signature}: pass").body[0].args
    return [a.arg for a in args.posonlyargs + args.args]


def mistake_source(problem: ImplementProblem, mutant_ref: str, track: str) -> str | None:
    """A student's function built from a bank misconception (NumPy); on the torch track wrapped
    to take and return tensors. None when it needs our references package, which students lack."""
    body = "\n".join(line for line in solution_body(resolve(mutant_ref)).splitlines()
                     if not re.match(r"(from autograder\.references\b|from \.\w* import)", line))
    if re.search(r"\bref\.|\bautograder\b", body):
        return None
    if track == "numpy":
        return f"def {problem.signature}:\n{textwrap.indent(body, '    ')}\n"
    params = _parameters(problem.signature)
    inner = problem.signature.replace(f"{problem.function}(", "_mistake(", 1)
    return (
        f"def {problem.signature}:\n"
        "    import numpy as _np\n    import torch as _torch\n\n"
        f"    def {inner}:\n{textwrap.indent(body, '        ')}\n\n"
        "    _plain = lambda a: a.detach().cpu().numpy() if isinstance(a, _torch.Tensor) else a\n"
        f"    _out = _mistake(*[_plain(a) for a in ({', '.join(params)},)])\n"
        "    _tensor = lambda o: _torch.from_numpy(_np.array(o))\n"
        "    return tuple(_tensor(o) for o in _out) if isinstance(_out, tuple) else _tensor(_out)\n"
    )


def points_of(code: CodeProblem, function, track: str) -> float:
    """What `qkv grade` gives `function` on this problem: the weights of the tests it passes."""
    earned = 0.0
    for test in code.tests:
        try:
            with np.errstate(all="ignore"):
                result = function(*(to_track(a, track) for a in test.args),
                                  **{k: to_track(v, track) for k, v in test.kwargs.items()})
            error = None
        except Exception as err:  # noqa: BLE001 - a failing call is a failed test
            error = err
        if test.expect_error:
            ok = error is not None and type(error).__name__ == test.expect_error
        else:
            ok = error is None and compare(select(as_outputs(result), test.output), test.expected, test.tolerance.abs, test.tolerance.rel) is None
        earned += code.test_points(test) if ok else 0.0
    return round(earned, 4)


@dataclass(frozen=True)
class Mistake:
    problem: str
    misconception: str
    source: str  # the student's cell
    points: float  # what qkv grade's per-test weights give it
    full: float


def bank_mistakes(assignment: Assignment, bundle: GradingBundle) -> list[Mistake]:
    """Every misconception of the assignment's code problems as a student's function, with its points."""
    code = {p.id: p for p in bundle.code}
    found = []
    for assigned in assignment.implement:
        problem = assigned.problem
        for misconception in problem.misconceptions:
            if not misconception.implementation:
                continue
            source = mistake_source(problem, misconception.implementation, assignment.track)
            if source is None:
                continue
            namespace: dict = {}
            exec(TRACK_IMPORTS[assignment.track] + "\n" + source, namespace)  # noqa: S102 - our own bank code
            earned = points_of(code[problem.id], namespace[problem.function], assignment.track)
            found.append(Mistake(problem.id, misconception.id, source, earned, code[problem.id].points))
    return found


def choose_mistakes(assignment: Assignment, bundle: GradingBundle) -> tuple[Mistake, Mistake | None]:
    """The classic mistake (softmax over columns when the assignment has softmax-rows, else the first
    that loses points) and, in another problem, one that keeps some of its problem's points."""
    found = bank_mistakes(assignment, bundle)
    losing = sorted((m for m in found if m.points < m.full),
                    key=lambda m: (m.problem, m.misconception) != ("softmax-rows", "column-softmax"))
    assert losing, f"{assignment.name}: no misconception of its code problems loses points"
    partial = next((m for m in found if 0 < m.points < m.full and m.problem != losing[0].problem), None)
    return losing[0], partial


# ------------------------------------------------------------------ course


@dataclass
class Course:
    name: str
    root: Path
    assignment: Assignment
    bundle: GradingBundle
    source: nbformat.NotebookNode
    release: nbformat.NotebookNode
    release_text: str
    mistake: Mistake
    partial: Mistake | None

    def grades(self, student: str) -> tuple[float, float, dict[str, tuple[float, float]]]:
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            submission = gb.find_submission(self.name, student)
            per_cell = {g.name: (g.score, g.max_score) for nb in submission.notebooks for g in nb.grades}
            return submission.score, submission.max_score, per_cell

    def autograded(self, student: str) -> nbformat.NotebookNode:
        return nbformat.read(self.root / "autograded" / student / self.name / f"{self.name}.ipynb", as_version=4)


# CPython 3.11 keeps the ast module's recursion counter per interpreter, not per thread: two threads
# parsing at once can corrupt it ("AST constructor recursion depth mismatch"). The courses' nbgrader
# runs overlap; their Python-side work takes turns.
PYTHON_SIDE = threading.Lock()


def make_course(tmp: Path, name: str, assignments_root: Path | None = None) -> Course:
    with PYTHON_SIDE:
        result = build(name, out=tmp / "dist", assignments_root=assignments_root)
        root = tmp / "course"
        shutil.copytree(result.out / "nbgrader", root)
        bundle = read_bundle(result.out / "autograder")
    nbgrader(root, "generate_assignment", name, "--force")
    with PYTHON_SIDE:
        course = _submit_all(root, name, result, bundle)
    nbgrader(root, "autograde", name)
    return course


def _submit_all(root: Path, name: str, result, bundle) -> Course:
    source_path = root / "source" / name / f"{name}.ipynb"
    release_path = root / "release" / name / f"{name}.ipynb"
    source = nbformat.read(source_path, as_version=4)
    course = Course(name, root, result.assignment, bundle, source, nbformat.read(release_path, as_version=4),
                    release_path.read_text(encoding="utf-8"), *choose_mistakes(result.assignment, bundle))

    def submit(student: str, nb: nbformat.NotebookNode) -> None:
        folder = root / "submitted" / student / name
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{name}.ipynb")

    submit("reference", source)
    submit("stub", course.release)
    noisy = nbformat.from_dict(source)
    for cell in _cells(noisy).values():
        if cell.metadata["nbgrader"]["solution"] and cell.source.lstrip().startswith("def "):
            cell.source = _with_noise(cell.source, result.assignment.track)
    # the same noise in an ordinary cell at the end: proof that it does reach stderr in this kernel
    noisy.cells.append(nbformat.v4.new_code_cell(_noise(result.assignment.track)))
    submit("noisy", noisy)
    if result.assignment.track == "numpy":  # (the track does not matter here)
        # the stub, with the value of every later cell hidden: nbgrader would give a cell that shows
        # no value full marks, so the test cells must fail instead
        quiet = nbformat.from_dict(course.release)
        quiet.cells.insert(2, nbformat.v4.new_code_cell('get_ipython().ast_node_interactivity = "none"'))
        submit("display-off", quiet)
    if result.assignment.track == "numpy":  # (the track does not matter here)
        for attack in (*ATTACKS, "change_runtime"):
            submit(attack, hostile(course.release, attack))
    # one submission, two mistaken functions: the classic mistake, and one that passes some tests
    wrong = nbformat.from_dict(source)
    for mistake in (course.mistake, course.partial):
        if mistake is not None:
            _cells(wrong)[f"{mistake.problem}-solution"].source = mistake.source
    submit("mistakes", wrong)
    if result.assignment.track == "numpy" and course.mistake.misconception == "column-softmax":
        # the column softmax, and an attention that calls it, as students write it: its cell must say so
        upstream = nbformat.from_dict(source)
        _cells(upstream)["softmax-rows-solution"].source = course.mistake.source
        _cells(upstream)["scaled-dot-product-attention-solution"].source = BUILT_ON_SOFTMAX
        submit("upstream", upstream)
    return course


def returns_zero(*args, **kwargs) -> float:
    return 0.0


def hostile(release: nbformat.NotebookNode, attack: str) -> nbformat.NotebookNode:
    """The stub with functions that return 0.0 (so that a comparison that always matches would pass them),
    and the attack's code at the top of every function's cell: before the first test cell and between them."""
    nb = nbformat.from_dict(release)
    code = (HOSTILE / f"{attack}.py").read_text()
    cells = [c for c in _cells(nb).values() if c.metadata["nbgrader"]["solution"] and "def " in c.source]
    assert cells and all("raise NotImplementedError()" in c.source for c in cells)
    for cell in cells:
        cell.source = code + "\n\n" + cell.source.replace("raise NotImplementedError()", "return 0.0")
    return nb


BUILT_ON_SOFTMAX = """def scaled_dot_product_attention(Q, K, V, mask=None, scale=True):
    weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
    return attention_output(weights, V), weights
"""


def _torch_course() -> tuple[str, Path | None]:
    """The bundled torch assignment when there is one, else the fixture."""
    if (default_assignments_root() / "attention-torch.yaml").is_file():
        return "attention-torch", None
    return "torch-per-student", FIXTURES


COURSES = {"numpy": ("attention-numpy", None), "torch": _torch_course()}


@pytest.fixture(scope="module")
def courses(tmp_path_factory) -> dict[str, Course]:
    """Every course, built and graded; the courses' nbgrader runs overlap (they share nothing)."""
    with ThreadPoolExecutor(len(COURSES)) as pool:
        futures = {key: pool.submit(make_course, tmp_path_factory.mktemp(key), *COURSES[key]) for key in COURSES}
        return {key: future.result() for key, future in futures.items()}


@pytest.fixture(scope="module", params=sorted(COURSES))
def course(request, courses) -> Course:
    return courses[request.param]


@pytest.fixture(scope="module")
def numpy_course(courses) -> Course:
    return courses["numpy"]


# ------------------------------------------------------------------- tests


def test_source_notebook_is_valid_nbgrader_source(course: Course) -> None:
    nbformat.validate(course.source)
    MetadataValidator().validate_nb(course.source)  # schema 3: unknown keys are errors
    assert course.source.metadata.kernelspec.name == "python3"
    assert "python3" in KernelSpecManager().find_kernel_specs(), "the notebook's kernel is not installed"
    cells = _cells(course.source)
    assert all(set(c.metadata["nbgrader"]) <= {"grade", "grade_id", "locked", "points", "schema_version",
                                               "solution", "task"} for c in cells.values())
    assert all("qkv" in c.metadata for c in course.source.cells)
    for assigned in course.assignment.problems:
        pid = assigned.problem.id
        tests = cells[f"{pid}-tests"].metadata["nbgrader"]
        assert tests["grade"] and tests["locked"] and tests["points"] == assigned.points
        assert cells[f"{pid}-solution"].metadata["nbgrader"]["solution"]
        assert cells[f"{pid}-prompt"].metadata["nbgrader"]["locked"]
    graded = sum(c.metadata["nbgrader"].get("points", 0) for c in cells.values())
    assert graded == course.assignment.max_points


def test_release_hides_solutions_and_hidden_tests(course: Course) -> None:
    assert "BEGIN SOLUTION" not in course.release_text and "BEGIN HIDDEN TESTS" not in course.release_text
    text = "\n".join(cell.source for cell in course.release.cells)
    release_cells = _cells(course.release)
    # what the source shows outside its solution regions may be in the release (a def line, an import)
    outside = re.sub(r"### BEGIN SOLUTION\n.*?### END SOLUTION", "",
                     "\n".join(c.source for c in course.source.cells), flags=re.S)
    for assigned in course.assignment.implement:
        body = solution_body(resolve(assigned.problem.references[course.assignment.track]))
        secret = [line.strip() for line in body.splitlines()
                  if len(line.strip()) > 12 and line.strip() not in outside]
        assert secret, f"{assigned.problem.id}: nothing distinctive in the reference body to look for"
        leaked = [line for line in secret if line in text]
        assert not leaked, f"{assigned.problem.id}: the release shows the reference: {leaked[:3]}"
        assert "raise NotImplementedError()" in release_cells[f"{assigned.problem.id}-solution"].source
    for grade_id, cell in _cells(course.source).items():
        hidden = re.search(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", cell.source, re.S)
        if hidden:
            for line in hidden.group(1).splitlines():
                assert line not in text, f"{grade_id}: hidden test released: {line[:100]}"
            public = cell.source[: hidden.start()].strip()
            assert release_cells[grade_id].source.startswith(public), f"{grade_id}: public part changed"
    for code in course.bundle.code:
        for test in code.tests:
            if test.visibility == "hidden" and test.expected is not None:
                data = np.ascontiguousarray(test.expected[0])
                # the base64 of a few bytes (a 2-token mask is "AQA=") is no secret: it ends other arrays' encodings
                if data.nbytes >= 6:
                    assert base64.b64encode(data.tobytes()).decode() not in text
    for assigned in course.assignment.written:
        solution = _cells(course.source)[f"{assigned.problem.id}-solution"].source
        answer = re.search(r"### BEGIN SOLUTION\n(.*)\n### END SOLUTION", solution, re.S).group(1)
        assert answer not in text, f"{assigned.problem.id}: the answer is in the release"


def test_reference_gets_full_marks(course: Course) -> None:
    score, max_score, cells = course.grades("reference")
    assert max_score == course.assignment.max_points
    assert {k: v for k, v in cells.items() if v[0] != v[1]} == {}
    assert score == max_score


def test_released_stub_gets_zero(course: Course) -> None:
    score, max_score, cells = course.grades("stub")
    assert max_score == course.assignment.max_points
    assert {k: v for k, v in cells.items() if v[0] != 0} == {}
    assert score == 0


def test_a_cell_that_shows_no_value_gets_no_points(numpy_course: Course) -> None:
    score, _, cells = numpy_course.grades("display-off")
    assert {k: v for k, v in cells.items() if v[0] != 0} == {} and score == 0
    errors = [o for c in numpy_course.autograded("display-off").cells if c.metadata.get("nbgrader", {}).get("grade")
              for o in c.outputs if o.output_type == "error"]
    assert len(errors) == len(cells) and all("display is switched off" in o.evalue for o in errors)


@pytest.mark.parametrize("attack", ATTACKS)
def test_cells_that_change_the_helpers_get_what_their_functions_earn(numpy_course: Course, attack: str) -> None:
    """Per test cell exactly what qkv grade's weights give a function returning 0.0, and no written answer
    right: the helpers each test cell judges with are its own, whatever the student's cells did to theirs."""
    course = numpy_course
    deserved = {f"{c.id}-tests": points_of(c, returns_zero, course.assignment.track) for c in course.bundle.code}
    deserved.update({f"{a.problem.id}-tests": 0.0 for a in course.assignment.written})
    score, max_score, cells = course.grades(attack)
    assert max_score == course.assignment.max_points
    assert {k: v[0] for k, v in cells.items()} == pytest.approx(deserved, abs=1e-4)
    assert score == pytest.approx(sum(deserved.values()), abs=1e-4) and score < max_score


def test_a_changed_runtime_text_fails_every_test_cell(numpy_course: Course) -> None:
    score, _, cells = numpy_course.grades("change_runtime")
    assert score == 0 and {k: v for k, v in cells.items() if v[0] != 0} == {}
    errors = {c.metadata["nbgrader"]["grade_id"]: [o.evalue for o in c.outputs if o.output_type == "error"]
              for c in numpy_course.autograded("change_runtime").cells if c.metadata.get("nbgrader", {}).get("grade")}
    assert errors.keys() == cells.keys()
    assert all(e == ["the grading helpers cell has not run, or a cell changed it: run the notebook from the top"]
               for e in errors.values()), errors


def test_warnings_and_stderr_of_a_correct_solution_cost_nothing(course: Course) -> None:
    score, max_score, cells = course.grades("noisy")
    assert {k: v for k, v in cells.items() if v[0] != v[1]} == {}
    assert score == max_score
    graded = course.autograded("noisy")
    # the noise is real: in an ordinary cell it reaches stderr (what goes to file descriptor 2 directly is
    # forwarded by ipykernel from another thread, possibly after the cell has finished, so it is not awaited)
    demo = graded.cells[-1]
    stderr = "".join(o.get("text", "") for o in demo.outputs if o.get("name") == "stderr")
    for expected in [f"{NOISE_MARK}: sys.stderr", f"{NOISE_MARK}: a warning", "divide by zero"] + (
            ["To copy construct"] if course.assignment.track == "torch" else []):
        assert expected in stderr, f"the noise did not reach stderr: {expected!r} missing from {stderr[:500]!r}"
    # ... but no test cell has any stderr output, and the student is told what was ignored
    for cell in graded.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            assert not [o for o in cell.outputs if o.output_type == "error" or o.get("name") == "stderr"], cell.id
    code_tests = [c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-tests")
                  and c.metadata["qkv"]["problem"] in {p.id for p in course.bundle.code}]
    assert code_tests and all(NOISE_MARK in "".join(o.get("text", "") for o in c.outputs) for c in code_tests)


def test_mistakes_lose_their_problems_points_only(course: Course) -> None:
    """The classic mistake loses its problem's points (all of them for softmax over columns); the other
    mistaken function keeps exactly what `qkv grade`'s per-test weights give it; no other problem loses any."""
    score, max_score, cells = course.grades("mistakes")
    expected = dict(cells)
    for mistake in (course.mistake, course.partial):
        if mistake is not None:
            assert cells[f"{mistake.problem}-tests"][1] == mistake.full
            expected[f"{mistake.problem}-tests"] = (mistake.points, mistake.full)
    assert course.mistake.points < course.mistake.full
    if course.mistake.misconception == "column-softmax":
        assert course.mistake.points == 0
    assert {k: v[0] for k, v in cells.items()} == pytest.approx({k: v[0] for k, v in expected.items()}, abs=1e-4)
    assert {k: v for k, v in cells.items() if v[0] != v[1]}.keys() == {
        f"{m.problem}-tests" for m in (course.mistake, course.partial) if m is not None}
    assert score == pytest.approx(sum(v[0] for v in expected.values()), abs=1e-4) and score < max_score


def test_test_cells_name_the_mistake_and_what_it_breaks(numpy_course: Course) -> None:
    """nbgrader's output carries qkv grade's sentences: the misconception's message on softmax_rows, and on an
    attention that calls that softmax_rows, "fix softmax_rows first"."""
    code = {p.id: p for p in numpy_course.bundle.code}
    message = code["softmax-rows"].misconceptions["column-softmax"]

    def printed(student: str) -> dict[str, str]:
        return {c.metadata["nbgrader"]["grade_id"]: "".join(o.get("text", "") for o in c.outputs)
                for c in numpy_course.autograded(student).cells if c.metadata.get("nbgrader", {}).get("grade")}

    assert f"{message} (" in printed("mistakes")["softmax-rows-tests"]
    upstream = printed("upstream")
    assert upstream["softmax-rows-tests"].count(f"{message} (") == len(code["softmax-rows"].tests)
    sdpa = [line for line in upstream["scaled-dot-product-attention-tests"].splitlines() if "failed" in line]
    assert len(sdpa) == len(code["scaled-dot-product-attention"].tests)
    assert all(": fix softmax_rows first: your scaled_dot_product_attention matches the reference with that same "
               f"mistake inside; softmax_rows: {message} (" in line for line in sdpa)
    assert numpy_course.grades("upstream")[2]["scaled-dot-product-attention-tests"][0] == 0


def test_partial_credit_is_exercised(numpy_course: Course) -> None:
    partial = numpy_course.partial
    assert partial is not None, "no misconception of attention-numpy keeps some of its problem's points"
    assert 0 < partial.points < partial.full
    assert numpy_course.grades("mistakes")[2][f"{partial.problem}-tests"][0] == pytest.approx(partial.points, abs=1e-4)


def test_every_problem_kind_goes_through_nbgrader() -> None:
    kinds = set()
    for name, root in COURSES.values():
        assignment = resolve_assignment(find_manifest(name, root), load_bank_strict())
        kinds |= {p.problem.kind for p in assignment.problems}
    assert kinds == set(KINDS)


# --------------------------------------------------------- no nbgrader needed


@pytest.fixture(scope="module")
def fixture_build(tmp_path_factory):
    result = build("torch-per-student", out=tmp_path_factory.mktemp("fixture") / "dist", assignments_root=FIXTURES)
    name = result.assignment.name
    nb = nbformat.read(result.out / "nbgrader" / "source" / name / f"{name}.ipynb", as_version=4)
    return result, nb, read_bundle(result.out / "autograder")


def test_build_is_byte_identical(fixture_build, tmp_path: Path) -> None:
    first = fixture_build[0].out / "nbgrader"
    second = build("torch-per-student", out=tmp_path / "b", assignments_root=FIXTURES).out / "nbgrader"
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert [str(f) for f in files] == ["nbgrader_config.py", "source/torch-per-student/torch-per-student.ipynb"]
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel
    config = (first / "nbgrader_config.py").read_text()
    assert "c.CourseDirectory.course_id" in config and "gradebook.db" in config


def test_per_student_assignment_uses_class_wide_numbers(fixture_build) -> None:
    result, nb, _ = fixture_build
    assignment = result.assignment
    assert assignment.manifest.variants == "per_student"
    cells = _cells(nb)
    assert "class-wide numbers" in cells["qkv-intro"].source and "qkv grade" in cells["qkv-intro"].source
    numeric = [a for a in assignment.written if isinstance(a.problem, NumericProblem)]
    assert numeric
    for assigned in numeric:
        problem = assigned.problem
        prompt = cells[f"{problem.id}-prompt"].source
        assert written_prompt(assigned, assignment, CLASS).strip() in prompt
        assert "qkv grade" in prompt
        class_wide = variant_for(problem, assignment.manifest.seed, "same", None)
        per_student = variant_for(problem, assignment.manifest.seed, "per_student", "s001")
        tests = cells[f"{problem.id}-tests"].source
        for part in problem.parts:
            want = re.search(rf"_w\.number\('{part.name}', (.*?), [^,]+, [^,]+, single=\w+, symbols=.*\)$", tests,
                             re.M).group(1)
            assert np.allclose(np.asarray(ast.literal_eval(want)), class_wide.answers[part.name])
        assert any(not np.allclose(class_wide.answers[p.name], per_student.answers[p.name]) for p in problem.parts)


# ------------------------------------------- the notebook's cells, run in this process


@pytest.fixture(autouse=True)
def keep_this_process_runtime():
    """The helpers cell and each test cell install their embedded runtime in the process that runs them (a
    kernel, or this one here): afterwards this process gets its own modules back, as a new kernel would start
    without the cells'."""
    modules = {k: v for k, v in sys.modules.items() if k == "qkv_runtime" or k.startswith("qkv_runtime.")}
    finders = list(sys.meta_path)
    yield
    for name in [k for k in sys.modules if k == "qkv_runtime" or k.startswith("qkv_runtime.")]:
        del sys.modules[name]
    sys.modules.update(modules)
    sys.meta_path[:] = finders


def run_cells(nb: nbformat.NotebookNode, namespace: dict | None = None) -> dict[str, float]:
    """Every code cell run here (no kernel); the value of each test cell's last line, by grade id."""
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    scores = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            *body, last = cell.source.rstrip().splitlines()
            exec("\n".join(body), namespace)  # noqa: S102 - our own notebook
            scores[meta["grade_id"]] = eval(last, namespace)  # noqa: S307
        else:
            exec(cell.source, namespace)  # noqa: S102
    return scores


def test_source_notebook_scores_its_own_points_in_process(fixture_build) -> None:
    result, nb, _ = fixture_build
    scores = run_cells(nb)
    assert scores == {f"{a.problem.id}-tests": a.points for a in result.assignment.problems}
    assert any(t.expect_error for p in result.assignment.implement for t in p.problem.hidden_tests + p.problem.public_tests)


def bank_problem(result, problem_id: str):
    return next(a.problem for a in result.assignment.problems if a.problem.id == problem_id)


def test_written_answers_are_read_as_qkv_grade_reads_them(fixture_build) -> None:
    """The helper cell's verdicts equal `qkv grade`'s (autograder.grade.score.score_written) on typed answers."""
    from autograder.grade.score import score_written

    result, nb, bundle = fixture_build
    class_wide = dataclasses.replace(bundle, variants="same")  # nbgrader grades the class-wide numbers
    namespace = {"__name__": "__main__"}
    cells = _cells(nb)
    run_cells(nbformat.v4.new_notebook(cells=[cells["qkv-setup"], cells["qkv-helpers"]]), namespace)
    seed = result.assignment.manifest.seed
    heads = bank_problem(result, "heads-reduce-cost")
    right = kind_of(heads).answer(heads, kind_of(heads).variant(heads, seed, "same", None))["follow_up"]
    wrong = "ABCD"["ABCD".index(right) - 1]
    mha = bank_problem(result, "mha-heads-and-parameters")
    letter = kind_of(mha).answer(mha, kind_of(mha).variant(mha, seed, "same", None))
    other = "ABCD"["ABCD".index(letter) - 1]
    typed: dict[str, list] = {"split-heads-shape": ["n x d/h", "(n, d/h)", "N×d_/h", "n x (d/h)", "[n d/h]", "n x d",
                                                    "", "??", ["n", "d/h"]],
                              "heads-reduce-cost": [False, "false", "F", {"answer": "no", "correction": "x"}, True,
                                                    {"answer": False, "follow_up": right, "correction": ""},
                                                    {"answer": "F", "follow_up": right.lower()},
                                                    {"answer": True, "follow_up": right},
                                                    {"answer": False, "follow_up": wrong}, {"follow_up": right},
                                                    "maybe", {"answer": None, "correction": ""}],
                              "mha-heads-and-parameters": [letter, letter.lower(), f"({letter})", other, "Z", 3, None]}
    for assigned in result.assignment.written:
        problem = assigned.problem
        if isinstance(problem, NumericProblem):
            answers = variant_for(problem, result.assignment.manifest.seed, "same", None).answers
            right = {p.name: answers[p.name].tolist() for p in problem.parts}
            rounded = {k: ", ".join(f"{x:.4f}" for x in np.ravel(v)) for k, v in right.items()}
            first = problem.parts[0].name
            typed[problem.id] = [right, rounded, {**right, first: (np.asarray(right[first]) + 1).tolist()},
                                 {k: v for k, v in right.items() if k != first}, {first: "abc"}, None, {}]
    assert set(typed) == {a.problem.id for a in result.assignment.written}
    written = {w.id: w for w in bundle.written}
    for pid, answers in typed.items():
        test_cell = cells[f"{pid}-tests"].source.rstrip().splitlines()
        seen = set()
        for answer in answers:
            namespace["ANSWERS"] = {pid: answer}
            exec("\n".join(test_cell[:-1]), namespace)  # noqa: S102
            got = eval(test_cell[-1], namespace)  # noqa: S307
            want = score_written(written[pid], answer, class_wide, "s001").score
            assert got == pytest.approx(want, abs=1e-4), f"{pid}: {answer!r} scores {got} here, {want} in qkv grade"
            seen.add(got)
        assert min(seen) == 0 and max(seen) == written[pid].points, f"{pid}: {seen}"
