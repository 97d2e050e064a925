"""qkv grade end to end: real sandbox, real SQLite, real files; scores, diagnosis, statuses, resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from autograder.kinds.model import Tolerance
from autograder.bundle import CodeProblem, GradedTest
from autograder.routes.class_grading import GRADEBOOK_FILE, grade_class
from autograder.grade.gradebook import FORMAT, Gradebook
from autograder.grade.score import score_test
from autograder.sandbox import CallResult, ProblemRun
from autograder.references import misconceptions
from conftest import QKV, gradebook_rows, graded_so_far, key_module, key_notebook, replace_function, said

def results(out: Path, student: str) -> dict:
    return json.loads((out / "feedback" / student / "results.json").read_text())


@pytest.fixture(scope="module")
def graded(built_numpy_same, tmp_path_factory):
    """One batch with a perfect .py, a perfect notebook, the stub, classic mistakes and broken files."""
    subs = tmp_path_factory.mktemp("subs")
    assignment = built_numpy_same.assignment
    key = key_module(assignment)
    module = assignment.module_name
    (subs / "perfect.py").write_text(key)
    (subs / "notebook.ipynb").write_text(key_notebook(assignment, built_numpy_same.out / "student" / f"{module}.ipynb"))
    (subs / "stub.py").write_bytes((built_numpy_same.out / "student" / f"{module}.py").read_bytes())
    (subs / "columns.py").write_text(replace_function(key, "softmax_rows", misconceptions.softmax_over_columns))
    (subs / "zeroafter.py").write_text(replace_function(key, "softmax_rows", misconceptions.softmax_zero_after))
    (subs / "empty.py").write_text("")
    (subs / "binary.py").write_bytes(b"\x7fELF\x00\x01\x02")
    (subs / "latin1.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    (subs / "syntax.py").write_text("def softmax_rows(S:\n")
    (subs / "nothing.py").write_text("x = 1\n")
    (subs / "badnb.ipynb").write_text("{ not json")
    (subs / "huge.py").write_text("#" * 6_000_000)
    (subs / "looping.py").write_text(key + "\nwhile True:\n    pass\n")
    nested = subs / "folder-student"
    nested.mkdir()
    (nested / "work.py").write_text(key)
    out = tmp_path_factory.mktemp("grades")
    run = grade_class(built_numpy_same.out / "autograder", subs, out, jobs=2, timeout=3.0)
    return run, out, subs


def test_perfect_submissions_get_full_marks(graded):
    run, out, _ = graded
    table = gradebook_rows(out)
    for student in ("perfect", "notebook", "folder-student"):
        assert table[student]["status"] == "graded", table[student]
        assert float(table[student]["total"]) == pytest.approx(run.bundle.max_points), results(out, student)


def test_stub_gets_zero_and_says_not_implemented(graded):
    _, out, _ = graded
    assert float(gradebook_rows(out)["stub"]["total"]) == 0
    outputs = [t["output"] for t in results(out, "stub")["tests"] if t["name"].startswith("softmax-rows")]
    assert outputs and all("NotImplementedError" in o for o in outputs)


@pytest.mark.parametrize("student, mistake", [("columns", "column-softmax"), ("zeroafter", "zero-after-softmax")])
def test_feedback_names_the_mistake(graded, student, mistake):
    run, out, _ = graded
    problem = next(p for p in run.bundle.code if p.id == "softmax-rows")
    table = gradebook_rows(out)
    assert float(table[student]["softmax-rows"]) < problem.points
    others = [pid for pid in run.bundle.problem_order if pid != "softmax-rows"]
    assert all(float(table[student][pid]) == float(gradebook_rows(out)["perfect"][pid]) for pid in others)
    messages = [t["output"] for t in results(out, student)["tests"] if t["score"] == 0]
    # results.json names it once, in its summary, and the tests it explains point there
    assert problem.misconceptions[mistake] in results(out, student)["output"]
    assert messages and all(m.startswith("mistake 1 of what to fix first") for m in messages)
    html = (out / "feedback" / student / "feedback.html").read_text()
    fix_first = html.split('id="fix-first"', 1)[1].split('id="by-problem"', 1)[0]
    assert fix_first.count(problem.misconceptions[mistake]) == 1 and html.count(problem.misconceptions[mistake]) == 1


def test_attention_feedback_draws_heatmaps(graded):
    _, out, _ = graded
    html = (out / "feedback" / "columns" / "feedback.html").read_text()
    assert html.count('class="matrix"') >= 2 and html.count('class="scale"') >= 1


@pytest.mark.parametrize("student, status", [
    ("empty", "empty"), ("binary", "binary"), ("latin1", "not_utf8"), ("syntax", "load_error"),
    ("nothing", "no_functions"), ("badnb", "bad_notebook"), ("huge", "too_large"),
])
def test_broken_files_get_a_row_with_a_clear_status(graded, student, status):
    _, out, _ = graded
    row = gradebook_rows(out)[student]
    assert row["status"] == status
    assert float(row["total"]) == 0
    assert results(out, student)["output"].startswith(f"status: {status}")


def test_a_looping_module_does_not_stop_the_batch(graded):
    run, out, _ = graded
    assert gradebook_rows(out)["looping"]["status"] == "timeout"
    assert len(gradebook_rows(out)) == 14


def test_results_json_follows_gradescope_schema(graded):
    run, out, _ = graded
    data = results(out, "columns")
    assert set(data) >= {"score", "tests"}
    for test in data["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility"}
        assert test["visibility"] in {"visible", "after_due_date"}
        assert 0 <= test["score"] <= test["max_score"] + 1e-9
    assert sum(t["score"] for t in data["tests"]) == pytest.approx(data["score"], abs=1e-3)
    hidden = [t for t in data["tests"] if t["visibility"] == "after_due_date" and "expected" in t["output"]]
    assert not hidden, "a hidden test's expected values were shown"


def test_gradebook_is_sqlite_with_one_row_per_student_and_test_scores(graded):
    run, out, _ = graded
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        count, distinct = db.execute("SELECT COUNT(*), COUNT(DISTINCT student) FROM submissions").fetchone()
        assert count == distinct == 14
        total = db.execute("SELECT SUM(score) FROM test_scores WHERE student = 'perfect'").fetchone()[0]
        assert total == pytest.approx(run.bundle.max_points)
        assert {r[0] for r in db.execute("SELECT isolation FROM submissions")} == {run.isolation}


@pytest.mark.slow
def test_unchanged_submissions_are_not_regraded(graded, built_numpy_same, tmp_path):
    # on copies: the other tests read the class as the fixture graded it
    out, subs = tmp_path / "out", tmp_path / "subs"
    shutil.copytree(graded[1], out)
    shutil.copytree(graded[2], subs)
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        before = dict(db.execute("SELECT student, graded_at FROM submissions"))
    (subs / "stub.py").write_text(key_module(built_numpy_same.assignment))
    run = grade_class(built_numpy_same.out / "autograder", subs, out, jobs=2, timeout=3.0)
    assert run.graded_now == 1 and run.skipped == 13
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        after = dict(db.execute("SELECT student, graded_at FROM submissions"))
    assert after["stub"] > before["stub"]
    assert all(after[s] == before[s] for s in before if s != "stub")
    assert float(gradebook_rows(out)["stub"]["total"]) == pytest.approx(run.bundle.max_points)
    again = grade_class(built_numpy_same.out / "autograder", subs, out, jobs=2, timeout=3.0, regrade=True)
    assert again.graded_now == 14
    # this run's results are reported from memory, not read back: they must be what the gradebook holds
    with Gradebook(out / GRADEBOOK_FILE) as gradebook:
        stored = [json.dumps(r.to_json()) for r, _ in gradebook.results()]
    assert [json.dumps(r.to_json()) for r in again.results] == stored


@pytest.mark.slow
def test_killed_run_resumes_and_grades_everyone_exactly_once(built_numpy_same, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    key = key_module(built_numpy_same.assignment)
    for i in range(30):
        (subs / f"s{i:02d}.py").write_text(f"import time\ntime.sleep(0.25)\n{key}\n# {i}\n")
    out = tmp_path / "out"
    command = [str(QKV), "grade", "attention-numpy", str(subs), "--dist", str(built_numpy_same.out), "--out", str(out), "--jobs", "2"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60
    graded_before_kill = 0
    while time.time() < deadline:
        time.sleep(0.2)
        graded_before_kill = graded_so_far(out / GRADEBOOK_FILE)
        if graded_before_kill >= 5:
            break
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert 5 <= graded_before_kill < 30, "the run must be killed part-way"
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        survived = dict(db.execute("SELECT student, graded_at FROM submissions"))
    finish = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert finish.returncode == 0, finish.stderr
    assert f"skipped {len(survived)}" in finish.stdout.replace("\n", " ")
    with sqlite3.connect(out / GRADEBOOK_FILE) as db:
        final = dict(db.execute("SELECT student, graded_at FROM submissions"))
        assert db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0] == 30
    assert all(final[s] == t for s, t in survived.items()), "a submission was graded twice"
    table = gradebook_rows(out)
    assert len(table) == 30
    assert all(float(r["total"]) == pytest.approx(float(r["max"])) for r in table.values())


@pytest.mark.slow
def test_cli_errors_are_one_line_and_leave_no_gradebook(built_numpy_same, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada.py").write_text("x = 1\n")
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    damaged_gradebook = tmp_path / "damaged"
    damaged_gradebook.mkdir()
    (damaged_gradebook / GRADEBOOK_FILE).write_text("not sqlite")
    earlier_gradebook = tmp_path / "earlier"
    earlier_gradebook.mkdir()
    with sqlite3.connect(earlier_gradebook / GRADEBOOK_FILE) as db:  # format 1 kept test_scores as a table
        db.executescript("CREATE TABLE submissions (student TEXT PRIMARY KEY, result TEXT);"
                         "CREATE TABLE test_scores (student TEXT, problem TEXT, test TEXT, score REAL);")
    damaged_bundle = tmp_path / "dist"
    shutil.copytree(built_numpy_same.out, damaged_bundle)
    next((damaged_bundle / "autograder" / "problems").glob("*.yaml")).unlink()
    dist = ["--dist", str(built_numpy_same.out)]
    no_bwrap = {**os.environ, "PATH": "/nonexistent"}
    for args, expected, env in (
        (["no-such-assignment", str(tmp_path)], "unknown assignment", None),
        (["attention-numpy", str(tmp_path / "missing"), *dist], "no such folder", None),
        (["attention-numpy", str(a_file), *dist], "is a file, not a folder of submissions", None),
        (["attention-numpy", str(subs), *dist, "--out", str(a_file)], f"{a_file}: exists and is not a folder", None),
        (["attention-numpy", str(subs), *dist, "--out", str(damaged_gradebook)], "not a gradebook qkv can use", None),
        (["attention-numpy", str(subs), *dist, "--out", str(earlier_gradebook)],
         f"a gradebook of format 0, this qkv writes format {FORMAT}", None),
        (["attention-numpy", str(subs), "--dist", str(damaged_bundle)], "damaged grading bundle", None),
        (["attention-numpy", str(subs), *dist, "--out", str(tmp_path / "new"), "--isolation", "bwrap"],
         "--isolation: bwrap isolation was requested but is not usable here", no_bwrap),
    ):
        run = subprocess.run([str(QKV), "grade", *args], capture_output=True, text=True, env=env)
        assert run.returncode == 1, args
        assert expected in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert len(said(run.stderr)) == 1, run.stderr
    assert not (tmp_path / "new").exists(), "a refused option must leave no gradebook behind"


def test_what_a_failed_test_draws():
    from autograder.grade.matrices import picture

    weights = np.full((2, 3, 3), 1 / 3)
    drawn = picture((weights * 0,), (weights,), (), {"mask": np.tril(np.ones((3, 3), dtype=bool))})
    assert drawn["kind"] == "weights" and drawn["of"] == 2 and len(drawn["want"]) == 3
    assert drawn["mask"] == np.tril(np.ones((3, 3), dtype=bool)).tolist()
    # of a pair (output, weights), the weights; other matrices as values; vectors and huge matrices not at all
    assert picture((np.ones((3, 2)), weights[0] * 0), (np.ones((3, 2)), weights[0]), (), {})["want"][0][0] == 0.3333
    assert picture((weights[0],), (np.arange(9.0).reshape(3, 3),), (), {})["kind"] == "values"
    assert picture((np.ones(3),), (np.zeros(3),), (), {}) is None
    assert picture((np.ones((13, 3)),), (np.zeros((13, 3)),), (), {}) is None
    assert picture((np.full((2, 2), np.nan),), (np.eye(2),), (), {})["got"] == [[None, None], [None, None]]


@pytest.mark.parametrize("error, passed", [
    ("ValueError: number of heads h=3 must divide d=8 (line 4)", True),
    ("ValueError (line 2)", True),  # `raise ValueError` with no message
    ("ValueError", True),
    ("TypeError: bad operand (line 2)", False),
    ("ValueErrorX: close but not it", False),
])
def test_a_required_exception_is_recognised_by_its_type(error, passed):
    test = GradedTest("split-heads", "bad width", "hidden", 1.0, Tolerance(), (), {}, None, expect_error="ValueError")
    problem = CodeProblem("split-heads", "split heads", 2.0, "split_heads", (test,), {})
    run = ProblemRun("ok", "ran 1 call", {test.call_id: CallResult(ok=False, error=error)})
    assert score_test(problem, test, run).passed is passed


TORCH_MASK_HABITS = '''

def softmax_rows(S, mask=None):
    # PyTorch's habit: masked_fill fills where the mask is True, as if True meant "blocked"
    logits = S if mask is None else S.masked_fill(mask, float("-inf"))
    row_max = logits.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(logits - row_max)
    total = e.sum(dim=-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


def attention_scores(Q, K, scale=True):
    S = Q @ K.T  # fine for one matrix; on a batch .T reverses every axis
    return S / Q.shape[-1] ** 0.5 if scale else S


def padding_mask(lengths, n):
    return torch.arange(n) >= lengths[..., None]  # key_padding_mask's convention: True = ignore
'''


@pytest.mark.slow
def test_torch_track_names_pytorch_habits(bank, tmp_path):
    """On the torch track, tensors in: the key earns full marks, and PyTorch's own conventions
    (True = blocked masks, K.T) are named although the misconceptions are NumPy twins."""
    from autograder.assemble import build

    built = build("attention-torch", tmp_path / "dist", bank=bank)
    subs = tmp_path / "subs"
    subs.mkdir()
    # the track gives each student their own numbers: each file answers for the student it is
    (subs / "key.py").write_text(key_module(built.assignment, student="key"))
    (subs / "habits.py").write_text(key_module(built.assignment, student="habits") + TORCH_MASK_HABITS)
    run = grade_class(built.out / "autograder", subs, tmp_path / "out", jobs=2, timeout=10.0)
    by_student = {r.student: r for r in run.results}
    assert by_student["key"].score == pytest.approx(by_student["key"].max_score)
    habits = by_student["habits"]
    lost = {p.problem_id for p in habits.problems if p.score < p.max_score - 1e-9}
    assert lost == {"softmax-rows", "attention-scores", "padding-mask"}
    named = {(p.problem_id, t.misconception) for p in habits.problems for t in p.tests if t.misconception}
    assert {("softmax-rows", "mask-polarity-inverted"), ("attention-scores", "k-dot-t-on-a-batch"),
            ("padding-mask", "true-on-padding")} <= named


EXACT_ANSWERS = '''
from decimal import Decimal
from fractions import Fraction


def _exact(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return Fraction(value)
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, dict):
        return {key: _exact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_exact(item) for item in value]
    return value


ANSWERS = _exact(ANSWERS)
'''


def test_fraction_and_decimal_answers_are_numbers(built_numpy_same, tmp_path):
    """ANSWERS written with fractions.Fraction and decimal.Decimal objects, as earlier releases took them."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "exact.py").write_text(key_module(built_numpy_same.assignment) + EXACT_ANSWERS)
    run = grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", jobs=1, timeout=5.0)
    (result,) = run.results
    written_ids = {w.problem.id for w in built_numpy_same.assignment.written}
    written = [p for p in result.problems if p.problem_id in written_ids]
    assert len(written) == len(written_ids) and all(p.score == p.max_score for p in written), [
        t.message for p in written for t in p.tests if not t.passed]
    assert result.score == pytest.approx(built_numpy_same.assignment.max_points)


def test_a_passed_test_is_one_result_that_every_student_shares():
    test = GradedTest("softmax-rows", "rows", "public", 1.0, Tolerance(), (np.eye(2),), {}, (np.eye(2),))
    problem = CodeProblem("softmax-rows", "softmax rows", 3.0, "softmax_rows", (test,), {})
    runs = [ProblemRun("ok", "ran 1 call", {test.call_id: CallResult(ok=True, outputs=(np.eye(2),))}) for _ in "ab"]
    first, second = (score_test(problem, test, run) for run in runs)
    assert first is second  # made once, not once per student
    assert (first.score, first.max_score, first.passed, first.message, first.input_shapes) == (
        3.0, 3.0, True, "passed", "(2, 2)")


def test_a_problem_all_of_whose_tests_passed_is_one_result_that_every_student_shares():
    from autograder.grade.score import score_code_problem
    from autograder.sandbox import SubmissionRun

    tests = tuple(GradedTest("softmax-rows", name, "public", 1.0, Tolerance(), (np.eye(2) * k,), {}, (np.eye(2) * k,))
                  for k, name in ((1, "rows"), (2, "doubled")))
    problem = CodeProblem("softmax-rows", "softmax rows", 3.0, "softmax_rows", tests, {})

    def run_of(second: np.ndarray) -> SubmissionRun:
        calls = {tests[0].call_id: CallResult(ok=True, outputs=(np.eye(2),)),
                 tests[1].call_id: CallResult(ok=True, outputs=(second,))}
        return SubmissionRun("ok", "", {"softmax-rows": ProblemRun("ok", "ran 2 calls", calls)}, {}, ("softmax_rows",), "")

    right = [score_code_problem(problem, run_of(np.eye(2) * 2)) for _ in "ab"]
    assert right[0] is right[1] and right[0].score == 3.0 and right[0].message == "2 of 2 tests passed"
    wrong = [score_code_problem(problem, run_of(np.eye(2))) for _ in "ab"]
    assert wrong[0] is not wrong[1]  # a failure is the student's own: its picture, numbers and mistake
    assert wrong[0].tests[0] is right[0].tests[0] and not wrong[0].tests[1].passed and wrong[0].score == 1.5


def _written_bundle(variants: str):
    from autograder.bank.load import load_problem
    from autograder.bundle import GradingBundle, WrittenProblem

    problem = load_problem(Path(__file__).parents[2] / "question_bank/attention/one-query-by-hand.yaml")
    written = WrittenProblem(problem.id, 4.0, problem)
    return written, GradingBundle("a", "A", "numpy", 7, variants, None, (), (written,), (problem.id,))


def test_an_answer_a_class_shares_is_judged_once_per_variant():
    from autograder.grade.score import score_written
    from autograder.kinds import kind_of

    written, same = _written_bundle("same")
    kind = kind_of(written.problem)
    right = kind.answer(written.problem, kind.variant(written.problem, 7, "same", None))
    assert score_written(written, right, same, "ada") is score_written(written, dict(right), same, "ben")
    assert score_written(written, right, same, "ada").score == 4.0
    # per student, one student's right answer is another's wrong one
    written, own = _written_bundle("per_student")
    ada = kind.answer(written.problem, kind.variant(written.problem, 7, "per_student", "ada"))
    assert score_written(written, ada, own, "ada").score == 4.0
    assert score_written(written, ada, own, "ben").score < 4.0
