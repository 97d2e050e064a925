"""The classic mistakes named alike in every route: `qkv grade` (feedback.html, results.json, the gradebook),
nbgrader's test cells, the pytest route and the student's self-check.

Each submission is the answer key with one classic mistake put in (and the attention functions written as
students write them, calling their own softmax_rows and scaled_dot_product_attention, so a mistake reaches
the functions built on it). Every route must name the mistake by its bank message, in the same sentence as
the grader's, for every test it costs, with the function it starts in: once in a summary, never as "not
the answer" or under a second name.
"""

from __future__ import annotations

import contextlib
import html
import importlib.util
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder.bundle import read_bundle
from autograder.classroom.mistakes import class_mistakes
from autograder.classroom.stats import bundle_info
from autograder.grade.gradebook import Gradebook
from autograder.kinds import kind_of
from autograder.kinds.resolve import resolve
from autograder.references import misconceptions
from autograder.routes.class_grading import GRADEBOOK_FILE, grade_class
from autograder.selfcheck import qkv_check
from conftest import ROOT, key_module, replace_function
from test_nbgrader import keep_this_process_runtime  # noqa: F401 (a fixture: the cells install their runtime)

def _sample_attention() -> str:
    """The sample class's attention functions (examples/regenerate.py), written as students write them: each calls
    the student's own softmax_rows and scaled_dot_product_attention, so a mistake there reaches it."""
    spec = importlib.util.spec_from_file_location("regenerate", ROOT / "examples" / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return "\n\ndef scaled_dot_product_attention" + module.COLUMN_SOFTMAX.split("\ndef scaled_dot_product_attention", 1)[1]


BUILT_ON = _sample_attention() + '''

def cross_attention(X_dec, X_enc, Wq, Wk, Wv, mask=None):
    X_dec, X_enc = np.asarray(X_dec, dtype=float), np.asarray(X_enc, dtype=float)
    Q, K, V = X_dec @ np.asarray(Wq, dtype=float), X_enc @ np.asarray(Wk, dtype=float), X_enc @ np.asarray(Wv, dtype=float)
    return scaled_dot_product_attention(Q, K, V, mask=mask)
'''
ATTENTION = ("scaled-dot-product-attention", "multi-head-attention", "cross-attention")


@dataclass(frozen=True)
class Bug:
    problem: str  # where the mistake starts
    mistake: str  # its id in that problem's misconceptions
    replaced: tuple[str, str] | None = None  # (function, the name of its mutant in solutions.misconceptions)
    downstream: tuple[str, ...] = ()  # problems that fail because they build on it


BUGS = {
    "axis0": Bug("softmax-rows", "softmax-over-axis-0", ("softmax_rows", "softmax_over_axis_0"), ATTENTION),
    "axis1": Bug("softmax-rows", "softmax-over-axis-1", ("softmax_rows", "softmax_over_axis_1"), ATTENTION),
    "columns": Bug("softmax-rows", "column-softmax", ("softmax_rows", "softmax_over_columns"), ATTENTION),
    "reluw2": Bug("feed-forward", "relu-after-second-layer", ("feed_forward", "ffn_relu_after_second")),
    "keysvalues": Bug("scaled-dot-product-attention", "keys-as-values",
                      ("scaled_dot_product_attention", "sdpa_keys_as_values"), ATTENTION[1:]),
    "nowo": Bug("mha-parameter-count", "output-projection-forgotten"),
    "ddof": Bug("layer-norm-by-hand", "unbiased-variance"),
}


def _wrong_answers(assignment, problem_id: str, mistake: str) -> dict:
    """The class's variant of a numeric problem answered by the wrong method (its misconception's `compute`)."""
    problem = next(a.problem for a in assignment.written if a.problem.id == problem_id)
    kind = kind_of(problem)
    variant = kind.variant(problem, assignment.manifest.seed, assignment.manifest.variants, None)
    wrong = next(m for m in problem.misconceptions if m.id == mistake)
    answers = {name: value for name, value in variant.answers.items() if name in {p.name for p in problem.parts}}
    answers.update(resolve(wrong.compute)(**variant.params))
    return {name: [float(x) for x in value] if hasattr(value, "__len__") else float(value)
            for name, value in answers.items()}


def submission(assignment, bug: Bug) -> str:
    source = key_module(assignment) + BUILT_ON
    if bug.replaced is not None:
        function, mutant = bug.replaced
        return replace_function(source, function, getattr(misconceptions, mutant))
    return source + f"\nANSWERS[{bug.problem!r}] = {_wrong_answers(assignment, bug.problem, bug.mistake)!r}\n"


@dataclass
class Routes:
    bundle: object
    results: dict  # student -> SubmissionResult (qkv grade)
    out: Path  # qkv grade's folder
    selfcheck: dict  # student -> {problem: [outcome message and details]}
    cells: dict  # student -> {grade id: printed}


def _message(bundle, bug: Bug) -> str:
    code = {p.id: p for p in bundle.code}
    if bug.problem in code:
        return code[bug.problem].misconceptions[bug.mistake]
    written = next(w for w in bundle.written if w.id == bug.problem)
    return next(m.message for m in written.problem.misconceptions if m.id == bug.mistake)


def _nbgrader_cells(built, source: str) -> dict[str, str]:
    """The nbgrader source notebook run here with the student's code for its solution cells: each test cell's print."""
    path = next((built.out / "nbgrader" / "source").glob("*/*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    namespace = {"__name__": "__main__"}
    printed, placed = {}, False
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            if not placed:
                exec(source, namespace)  # noqa: S102 - a submission made of our own bank code
                placed = True
            continue
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(cell.source, namespace)  # noqa: S102 - our own notebook
        if meta.get("grade"):
            printed[meta["grade_id"]] = buffer.getvalue()
    return printed


@pytest.fixture(scope="module")
def routes(built_numpy_same, tmp_path_factory) -> Routes:
    subs = tmp_path_factory.mktemp("mistake-subs")
    sources = {student: submission(built_numpy_same.assignment, bug) for student, bug in BUGS.items()}
    for student, source in sources.items():
        (subs / f"{student}.py").write_text(source)
    out = tmp_path_factory.mktemp("mistake-grades")
    run = grade_class(built_numpy_same.out / "autograder", subs, out, jobs=2)
    data = qkv_check.load_data(built_numpy_same.out / "student" / "selfcheck.json")
    checked = {}
    for student in BUGS:
        loaded = qkv_check.load_submission(subs / f"{student}.py")
        checked[student] = {r.problem["id"]: [o.message for o in r.outcomes] + [d for o in r.outcomes for d in o.details
                                                                                  if isinstance(d, str)]
                            for r in qkv_check.run_checks(data, loaded)}
    return Routes(read_bundle(built_numpy_same.out / "autograder"), {r.student: r for r in run.results}, out, checked, {})


@pytest.fixture(scope="module")
def cells(built_numpy_same, routes) -> dict[str, dict[str, str]]:
    # the cells install their embedded qkv_runtime here, before keep_this_process_runtime (a test's) saves the
    # modules: this module's own back after, or a later build in this worker finds no files to copy
    runtime = {k: v for k, v in sys.modules.items() if k == "qkv_runtime" or k.startswith("qkv_runtime.")}
    finders = list(sys.meta_path)
    try:
        return {student: _nbgrader_cells(built_numpy_same, submission(built_numpy_same.assignment, bug))
                for student, bug in BUGS.items()}
    finally:
        for name in [k for k in sys.modules if k == "qkv_runtime" or k.startswith("qkv_runtime.")]:
            del sys.modules[name]
        sys.modules.update(runtime)
        sys.meta_path[:] = finders


def _text(page: str) -> str:
    """What a reader of the page reads: no tags or attributes, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", " ", page))


def _failed(routes: Routes, student: str, problems) -> list:
    return [t for p in routes.results[student].problems if p.problem_id in problems for t in p.tests if not t.passed]


@pytest.mark.parametrize("student", sorted(BUGS))
def test_qkv_grade_names_the_mistake_on_every_test_it_costs_with_where_it_starts(routes, student):
    bug = BUGS[student]
    failed = _failed(routes, student, (bug.problem, *bug.downstream))
    assert failed and {t.problem_id for t in failed} == {bug.problem, *bug.downstream}, failed
    for test in failed:  # named, by the one id, where it starts; nothing left to "not the answer"
        assert (test.misconception, test.cause) == ((bug.mistake, None) if test.problem_id == bug.problem
                                                    else (bug.mistake, bug.problem)) or (
            not test.cause and test.problem_id == bug.problem and test.misconception == _message(routes.bundle, bug)), \
            (test.problem_id, test.name, test.misconception, test.cause, test.message)
    message = _message(routes.bundle, bug)
    others = [t for p in routes.results[student].problems for t in p.tests
              if not t.passed and t.problem_id not in (bug.problem, *bug.downstream)]
    assert not others, [(t.problem_id, t.name, t.message) for t in others]
    assert all(message in t.message for t in failed)
    upstream = {t.problem_id for t in failed if t.cause}
    assert upstream == set(bug.downstream)
    for test in (t for t in failed if t.cause):
        assert test.message.startswith("fix "), test.message  # confirmed by the function it starts in


@pytest.mark.parametrize("student", sorted(BUGS))
def test_the_page_and_results_json_name_each_mistake_once_in_a_summary(routes, student):
    bug, message = BUGS[student], _message(routes.bundle, BUGS[student])
    page = (routes.out / "feedback" / student / "feedback.html").read_text()
    fix_first = _text(page.split('id="fix-first"', 1)[1].split('id="by-problem"', 1)[0])
    assert fix_first.count(message) == 1 and _text(page).count(message) == 1, fix_first
    results = json.loads((routes.out / "feedback" / student / "results.json").read_text())
    assert json.dumps(results).count(json.dumps(message)[1:-1]) == 1, results["output"]
    summary = results["output"].split("what to fix first:\n", 1)[1].splitlines()
    assert summary[0].startswith("1. ") and summary[0].endswith(f": {message}"), summary
    functions = {p.id: p.function for p in routes.bundle.code}
    if bug.downstream:  # the functions built on it are told to wait for it
        assert all(functions[d] in summary[1] for d in bug.downstream) and summary[1].strip().startswith(
            f"fix {functions[bug.problem]} first"), summary
    failed = {f"{t.problem_id}: {t.name}" for t in _failed(routes, student, (bug.problem, *bug.downstream))}
    outputs = {t["name"]: t["output"] for t in results["tests"] if t["name"] in failed}
    assert outputs.keys() == failed and all(o.startswith("mistake 1 of what to fix first") for o in outputs.values())


def test_the_class_stats_count_each_mistake_where_it_starts(routes):
    """qkv stats' "Mistakes across the class", from the gradebook: each bug one mistake, of one student, touching
    the problem it starts in and those built on it."""
    with Gradebook(routes.out / GRADEBOOK_FILE) as book:
        found = {(m.problem, m.mistake): m for m in class_mistakes(book, bundle_info(routes.bundle)[3])}
    for student, bug in BUGS.items():
        key = (bug.problem, bug.mistake if bug.problem in {p.id for p in routes.bundle.code}
               else _message(routes.bundle, bug))
        assert key in found, (student, sorted(found))
        assert found[key].students == 1 and set(found[key].touches) == {bug.problem, *bug.downstream}, found[key]
        assert found[key].message == _message(routes.bundle, bug)
    assert len(found) == len(BUGS), sorted(found)


@pytest.mark.parametrize("student", sorted(BUGS))
def test_the_self_check_says_the_graders_sentence(routes, student):
    bug, message = BUGS[student], _message(routes.bundle, BUGS[student])
    said = routes.selfcheck[student]
    if bug.problem not in {p.id for p in routes.bundle.code}:
        assert any(message in line for line in said[bug.problem]), said[bug.problem]
        assert message in routes.results[student].problems[routes.bundle.problem_order.index(bug.problem)].message
        return
    public = [t for t in _failed(routes, student, (bug.problem, *bug.downstream)) if t.visibility == "public"]
    assert bug.problem in {t.problem_id for t in public}, public  # its own public tests see it
    for test in public:
        assert f"{test.name}: {test.message}" in said[test.problem_id], (test.problem_id, said[test.problem_id])


@pytest.mark.parametrize("student", sorted(BUGS))
def test_nbgrader_cells_say_the_graders_sentence(routes, cells, student):
    bug, message = BUGS[student], _message(routes.bundle, BUGS[student])
    printed = cells[student]
    for test in _failed(routes, student, (bug.problem, *bug.downstream)):
        if test.name == "answer":
            assert message in printed[f"{test.problem_id}-tests"], printed[f"{test.problem_id}-tests"]
        else:
            assert f"failed {test.name}: {test.message}" in printed[f"{test.problem_id}-tests"], \
                printed[f"{test.problem_id}-tests"]


@pytest.mark.slow
def test_the_pytest_route_says_the_graders_sentence(built_numpy_same, routes, tmp_path):
    from test_pytest_plugin import pytest_route

    for student in ("axis0", "nowo"):
        bug = BUGS[student]
        path = tmp_path / f"{student}.py"
        path.write_text(submission(built_numpy_same.assignment, bug))
        _, _, output = pytest_route(tmp_path, built_numpy_same.out, path)
        for test in _failed(routes, student, (bug.problem, *bug.downstream)):
            assert test.message in output, (test.problem_id, test.name)


# ------------------------------------------ two misconceptions with a part in common (issue 24 follow-up)

# a student of the second mistake also gives the first one's answer on some parts: the second explains more
OVERLAPPING = [("ffn-with-biases", "bias-after-relu"), ("kv-cache-memory", "sharing-saves-nothing"),
               ("mask-cells-count", "causal-everywhere")]


def _named_in_cells(problem, variant, answer) -> list[str]:
    """The common mistakes nbgrader's test cell of the problem prints, in its order."""
    from qkv_runtime import nbcells

    helper = nbcells.WrittenAnswer({"ANSWERS": {problem.id: answer}}, problem.id, 1.0)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for line in kind_of(problem).nbgrader_checks(problem, variant):
            eval(line, {"_w": helper, "array": nbcells.array})  # noqa: S307 - our own cell's lines
        helper.score()
    return [line.strip().removeprefix("common mistake: ") for line in printed.getvalue().splitlines()
            if line.strip().startswith("common mistake: ")]


@pytest.mark.parametrize("problem_id, mistake", OVERLAPPING)
def test_the_mistake_that_explains_every_wrong_part_is_named_alone_in_grade_and_cells(bank, problem_id, mistake):
    from autograder.kinds.numeric.checks import checked_variants

    problem = bank.get(problem_id)
    kind, wrong = kind_of(problem), next(m for m in problem.misconceptions if m.id == mistake)
    shared = 0
    for variant in checked_variants(problem)[:60]:
        by_mistake = resolve(wrong.compute)(**variant.params)
        answer = {p.name: np.asarray(by_mistake.get(p.name, variant.answers[p.name]), dtype=float).tolist()
                  for p in problem.parts}
        marked = kind.grade(problem, answer, variant)
        others = [m.message for m in problem.misconceptions if m.id != mistake and m.message in marked.message]
        assert marked.misconception == wrong.message and not others, (variant.params, marked.message)
        assert _named_in_cells(problem, variant, answer) == [wrong.message], variant.params
        # the case that matters: another mistake's answer is this one's on some part
        right = {p.name: np.asarray(variant.answers[p.name]).tolist() for p in problem.parts}
        shared += any(kind.grade(problem, {**right, part: answer[part]}, variant).misconception
                      not in (None, wrong.message) for part in answer if answer[part] != right[part])
    assert shared, "no variant where another mistake shares a part's answer: the test tests nothing"


def test_a_mistake_whose_parts_another_explains_is_not_named():
    from qkv_runtime.diagnosis import written_mistakes

    assert written_mistakes([("no biases", "pre"), ("after relu", "pre"), ("after relu", "hidden"),
                             ("after relu", "output")]) == ["after relu"]
    # neither explains the other's parts: both are named, the one with more parts first
    assert written_mistakes([("a", "x"), ("b", "y"), ("b", "z")]) == ["b", "a"]
    assert written_mistakes([("a", "x"), ("b", "x")]) == ["a", "b"]  # a tie keeps the bank's order
    assert written_mistakes([]) == []


def test_the_self_check_names_the_mistake_that_explains_every_wrong_part_alone(bank):
    """The student's self-check, on the selfcheck.json entry the build writes, at a small scrypt cost: a b_1 added
    after the ReLU is named at every part, never the no-bias mistake its pre-activation also is."""
    from autograder.assemble.manifest import AssignedProblem, Assignment, Manifest
    from autograder.kinds.base import CLASS
    from autograder.kinds.sealing import derive_seals
    from qkv_runtime import sealed

    problem = bank.get("ffn-with-biases")
    manifest = Manifest(title="overlap", track="numpy", seed=5, variants="same", problems=[problem.id])
    assigned = AssignedProblem(problem, problem.points)
    assignment = Assignment("overlap", manifest, (assigned,), Path("overlap.yaml"), {})
    kdf = sealed.kdf_params(n=2**4, r=1, p=1)
    entry = derive_seals({"id": problem.id, "kind": "numeric", "judge": "numbers", "code": False,
                          "title": problem.title, "points": problem.points,
                          **kind_of(problem).selfcheck_data(assigned, assignment, None, [CLASS])}, kdf)
    data = {"format": sealed.FORMAT, "assignment": "overlap", "variants": "same", "track": "numpy",
            "problems": [entry], "kdf": kdf}
    variant = kind_of(problem).variant(problem, manifest.seed, manifest.variants, None)
    wrong = {m.id: m for m in problem.misconceptions}
    answer = {k: np.asarray(v, dtype=float).tolist()
              for k, v in resolve(wrong["bias-after-relu"].compute)(**variant.params).items()}
    assert np.array_equal(answer["pre"], resolve(wrong["biases-ignored"].compute)(**variant.params)["pre"])
    outcomes = qkv_check.check_written(data, entry, answer)
    details = [d for o in outcomes for d in o.details]
    assert not any(o.passed for o in outcomes) and len(details) == len(problem.parts), details
    assert all(wrong["bias-after-relu"].message in d for d in details), details
