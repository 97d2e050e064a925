"""The feedback page teaches: each mistake once with where it leads, statuses collapsed, written answers explained.

Graded for real: the sample class (examples/submissions/attention-numpy) and a
file that calls sys.exit while loading, through `qkv grade`'s sandbox; pages
are read as text, as a student (or a screen reader) reads them. The browser's
view (sizes, colours, accessibility) is tests/report/test_feedback_browser.py.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from html.parser import HTMLParser

import numpy as np
import pytest

from autograder.assemble import build
from autograder.assemble.compose import builds_on, calls, with_replaced
from autograder.bundle import bundle_files, read_bundle
from autograder.grade.score import score_written
from autograder.kinds.numeric.model import AnswerPart
from autograder.kinds.numeric.parts import check_part
from autograder.references import misconceptions, numpy_ref
from autograder.report.feedback import feedback_html
from autograder.report.lessons import summarise
from autograder.results import ProblemResult, SubmissionResult
from autograder.routes.class_grading import grade_class
from conftest import HOSTILE, ROOT

pytestmark = pytest.mark.slow  # grades the sample class

SAMPLES = ROOT / "examples" / "submissions" / "attention-numpy"
FIXTURES = ROOT / "tests" / "fixtures" / "nbgrader" / "assignments"
BEFORE = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
AFTER = dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc)
COLUMN = "your weights are normalised down the columns: softmax must run along each row, across the keys of one query"


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("style", "script")
        if tag in ("p", "li", "td", "th", "tr", "div", "h1", "h2", "h3", "h4", "figcaption", "br"):
            self.parts.append(" ")  # where a browser breaks the line

    def handle_endtag(self, tag):
        self._skip -= tag in ("style", "script")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def text_of(html: str) -> str:
    """What a reader reads: the page's text, without markup, styles or image data, whitespace collapsed."""
    parser = _Text()
    parser.feed(html)
    return re.sub(r"\s+", " ", "".join(parser.parts))


def section(html: str, heading_id: str) -> str:
    start = html.index(f'id="{heading_id}"')
    end = html.find("<h2 ", start)
    return html[start:end if end >= 0 else None]


@pytest.fixture(scope="module")
def graded(built_numpy, tmp_path_factory):
    """The sample class and a file that exits while loading, graded by `qkv grade`."""
    subs = tmp_path_factory.mktemp("class")
    for path in SAMPLES.iterdir():
        shutil.copy(path, subs / path.name)
    shutil.copy(HOSTILE / "exit_at_load.py", subs / "zed.py")
    out = tmp_path_factory.mktemp("grades")
    run = grade_class(built_numpy.out / "autograder", subs, out, jobs=2, timeout=3)
    return run, out, {r.student: r for r in run.results}


def page(graded, student: str) -> str:
    return (graded[1] / "feedback" / student / "feedback.html").read_text(encoding="utf-8")


def test_the_column_softmax_is_named_once_with_the_problems_it_costs(graded):
    """ben's softmax_rows normalises down the columns and his attention functions call it: the summary names the
    mistake once, with its 17 points over three problems, and says the dependents fail because of softmax_rows."""
    html = page(graded, "ben")
    text, summary = text_of(html), text_of(section(html, "fix-first"))
    assert text.count(COLUMN) == 1 and COLUMN in summary
    assert "column softmax in softmax_rows: -17 points" in summary
    assert ("It costs points in 3 problems: softmax-rows (-4), scaled-dot-product-attention (-6), "
            "multi-head-attention (-7).") in summary
    assert ("Fix softmax_rows first: your scaled_dot_product_attention and multi_head_attention match the reference "
            "with that same mistake inside, so they fail because of softmax_rows.") in summary
    assert "You lost 17 points. This mistake explains 17 of them." in summary
    # problem by problem, the failures point back at it instead of repeating it
    assert text.count("explained by mistake 1 (column softmax in softmax_rows)") == 3
    assert "Likely mistake" not in text


def test_a_page_of_many_failures_has_one_box_per_mistake(graded):
    ben = graded[2]["ben"]
    failed = [t for p in ben.problems for t in p.tests if not t.passed]
    assert len(failed) > 15  # the premise: a page of many failures, all from one mistake
    html = page(graded, "ben")
    assert html.count('class="lesson"') == 1 and html.count('class="mistake"') == 1
    assert text_of(html).count(f"The {len(failed)} failed tests it explains") == 1
    cho = page(graded, "cho")  # two mistakes in two functions: two boxes, the larger first
    boxes = re.findall(r'data-mistake="([^"]+)"', cho)
    assert boxes == ["layer-norm/unbiased-variance", "softmax-rows/zero-after-softmax"]


def test_repeated_statuses_collapse_into_one_line_with_the_cause(graded):
    text = text_of(page(graded, "zed"))
    bundle = graded[0].bundle  # every test of the assignment, and every written problem, left out once
    tests, written = sum(len(p.tests) for p in bundle.code), len(bundle.written)
    assert (f"{tests} tests not run and {written} written answers not read: the file never finished loading "
            "(called sys.exit(3) while loading, line 9)") in text
    assert text.count("not run") == 1
    fox = text_of(page(graded, "fox"))  # an endless loop in one function: its four tests say so once
    feed_forward = next(p for p in graded[0].bundle.code if p.id == "feed-forward")
    assert re.search(rf"feed-forward: {len(feed_forward.tests)} tests not run: stopped after \d+ s \(time limit\)",
                     fox), fox[:3000]


def test_results_json_opens_with_what_to_fix_first(graded):
    data = json.loads((graded[1] / "feedback" / "ben" / "results.json").read_text())
    lines = data["output"].splitlines()
    at = lines.index("what to fix first:")
    assert lines[at + 1] == ("1. column softmax in softmax_rows (-17 points: softmax-rows -4, "
                             f"scaled-dot-product-attention -6, multi-head-attention -7): {COLUMN}")
    assert "fix softmax_rows first: your scaled_dot_product_attention and multi_head_attention match" in lines[at + 2]
    # named once, there: each test it explains points to it and says only what differs
    assert json.dumps(data).count(COLUMN) == 1
    outputs = {t["name"]: t["output"] for t in data["tests"]}
    assert re.match(r"mistake 1 of what to fix first \(column softmax in softmax_rows\): \d+ of 12 entries differ",
                    outputs["multi-head-attention: lecture X, identity projections, two heads"]), outputs


# ------------------------------------------------------------------ written answers


def test_written_answers_only_say_right_or_wrong_before_the_due_date(graded, built_numpy):
    dan = graded[2]["dan"]  # says heads reduce the cost: true, which is false, and picks the O(n^2/h) follow-up
    bundle = read_bundle(built_numpy.out / "autograder")
    html_before = feedback_html(dan, "A", bundle.due, "bwrap", bundle=bundle, now=BEFORE)
    html_after = feedback_html(dan, "A", bundle.due, "bwrap", bundle=bundle, now=AFTER)
    before, after = text_of(section(html_before, "heads-reduce-cost-title")), text_of(section(html_after,
                                                                                           "heads-reduce-cost-title"))
    assert "Your answer is wrong." in before and "Answer in this form: true or false" in before
    assert "you wrote" not in before and "accepted" not in before and "Worked solution" not in before
    assert "the statement is false" not in text_of(html_before)
    assert "What you wrote answer: true follow_up: " in after and "See mistake" in after
    assert "true or false: the statement is false; follow-up: every head compares all n tokens" in text_of(html_after)
    assert "What was accepted answer False follow-up " in after
    assert "corrected statement The advantage of multiple heads is what they can represent" in after
    assert "Worked solution, with your numbers" in after


def test_a_hand_calculation_shows_what_was_typed_and_the_worked_numbers(graded, built_numpy):
    bundle = read_bundle(built_numpy.out / "autograder")
    ada = graded[2]["ada"]
    wrong = dict(ada.answers)
    right = ada.answers["score-growth"]  # the key's, for the class's draw
    wrong["score-growth"] = {**right, "scores_new": right["scores_new"] + 1}
    written = next(w for w in bundle.written if w.id == "score-growth")
    marked = score_written(written, wrong["score-growth"], bundle, "ada")
    problems = tuple(marked if p.problem_id == "score-growth" else p for p in ada.problems)
    result = SubmissionResult(**{**ada.__dict__, "problems": problems, "answers": wrong})
    text = text_of(section(feedback_html(result, "A", None, "bwrap", bundle=bundle, now=AFTER), "score-growth-title"))
    assert "Your answer is partly right" in text and repr(right["scores_new"] + 1) in text
    assert "What was accepted" in text and str(int(right["scores_new"])) in text and "Worked solution" in text


def test_a_part_of_the_page_the_class_shares_still_follows_each_page(graded, built_numpy):
    """A problem's part of the page is rendered once for the class when nothing of the page's own explains it:
    it still shows each student what they typed, and the solution only after the due date."""
    bundle = read_bundle(built_numpy.out / "autograder")
    ada = graded[2]["ada"]
    right = ada.answers["layer-norm-by-hand"]
    assert next(p for p in ada.problems if p.problem_id == "layer-norm-by-hand").score == 3.0
    # the same (shared) result of each problem, the same numbers typed another way (ada's own numbers: the
    # assignment draws them per student)
    wrote = str(right["mean"])  # ada's draw: what she typed
    again_typed = wrote + "0" if "." in wrote else wrote + ".0"  # the same number, typed another way
    typed_again = SubmissionResult(**{**ada.__dict__,
                                      "answers": {**ada.answers, "layer-norm-by-hand": {**right, "mean": again_typed}}})

    def part(result: SubmissionResult, now: dt.datetime) -> str:
        return text_of(section(feedback_html(result, "A", bundle.due, "bwrap", bundle=bundle, now=now),
                               "layer-norm-by-hand-title"))

    before, after, again, amy = part(ada, BEFORE), part(ada, AFTER), part(ada, BEFORE), part(typed_again, AFTER)
    assert before == again and "Your answer is right." in before and "What you wrote" not in before
    assert f"What you wrote mean: {wrote} " in after and "Worked solution" in after
    assert f"What you wrote mean: {again_typed} " in amy and amy.replace(again_typed, wrote, 1) == after


def test_a_part_showing_a_long_typed_answer_is_not_kept_for_the_class(graded, built_numpy):
    """The class's memo of shared parts stays small whatever students type: a part that shows a long answer is
    rendered afresh, not kept."""
    from autograder.report import feedback

    bundle = read_bundle(built_numpy.out / "autograder")
    ada = graded[2]["ada"]
    long = "the heads run in parallel " * 2000
    wordy = SubmissionResult(**{**ada.__dict__, "student": "wes", "answers": {
        **ada.answers, "rnn-sequential": {**ada.answers["rnn-sequential"], "correction": long}}})
    html = feedback_html(wordy, "A", bundle.due, "bwrap", bundle=bundle, now=AFTER)
    assert long.strip() in text_of(section(html, "rnn-sequential-title"))
    assert not any(long in value for _, value in feedback._SECTIONS._entries.values())


def test_an_exact_integer_off_by_one_reads_as_not_exact():
    part = AnswerPart(name="n", label="count", form="integer", tolerance={"abs": 0})
    assert check_part(part, np.asarray(12.0), "13").message == "count: not the answer (it must be exact)"
    assert "within 0.0005" in check_part(AnswerPart(name="x", label="x"), np.asarray(1.0), "2").message


def test_worked_solutions_use_the_students_own_numbers(tmp_path):
    built = build("torch-per-student", out=tmp_path / "dist", assignments_root=FIXTURES)
    bundle = read_bundle(built.out / "autograder")
    numeric = next(w for w in bundle.written if w.problem.kind == "numeric")
    solutions = {}
    for student in ("s001", "s002"):
        problem = ProblemResult(numeric.id, "numeric", 0.0, numeric.points, "not answered")
        result = SubmissionResult(student, "d", "graded", "", 0.0, numeric.points, (problem,))
        html = feedback_html(result, "A", None, "bwrap", bundle=bundle, now=AFTER)
        solutions[student] = text_of(section(html, f"{numeric.id}-title"))
        assert "Worked solution, with your numbers" in solutions[student]
    assert solutions["s001"] != solutions["s002"]


# ------------------------------------------------------------------ data


def test_what_a_problem_builds_on_is_found_in_its_reference(bank):
    implement = [p for p in bank.problems.values() if p.kind == "implement"]
    by_id = {p.id: p for p in implement}
    assert set(builds_on(by_id["multi-head-attention"], implement)) >= {
        "softmax-rows", "scaled-dot-product-attention", "split-heads", "merge-heads"}
    assert builds_on(by_id["add-and-norm"], implement) == ("layer-norm",)
    assert builds_on(by_id["softmax-rows"], implement) == ()
    assert "softmax_rows" in calls(numpy_ref.multi_head_attention)
    declared = by_id["add-and-norm"].model_copy(update={"builds_on": []})
    assert builds_on(declared, implement) == ()  # an explicit list wins, even an empty one


def test_a_mistake_composed_in_reaches_every_depth_and_leaves_the_module_alone():
    X = np.array([[1.0, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]])
    eye = np.eye(4)
    right = numpy_ref.multi_head_attention(X, eye, eye, eye, eye, 2)
    wrong = with_replaced(numpy_ref.multi_head_attention, "softmax_rows", misconceptions.softmax_over_columns)
    assert not np.allclose(wrong(X, eye, eye, eye, eye, 2), right)
    assert np.allclose(numpy_ref.multi_head_attention(X, eye, eye, eye, eye, 2), right)


def test_the_bundle_keeps_upstream_outputs_and_reads_older_bundles(built_numpy, tmp_path):
    bundle = read_bundle(built_numpy.out / "autograder")
    sdpa = next(p for p in bundle.code if p.id == "scaled-dot-product-attention")
    assert "softmax-rows" in sdpa.builds_on
    assert any("column-softmax" in t.upstream_outputs.get("softmax-rows", {}) for t in sdpa.tests)
    shutil.copytree(built_numpy.out / "autograder", tmp_path, dirs_exist_ok=True)
    files = bundle_files(bundle, {})
    meta = json.loads(files["assignment.json"])
    for problem in meta["code"]:  # as a bundle built before upstream outputs were kept
        problem.pop("builds_on")
        for test in problem["tests"]:
            test.pop("upstream")
    (tmp_path / "assignment.json").write_text(json.dumps(meta))
    (tmp_path / "arrays.npz").write_bytes(files["arrays.npz"])
    old = read_bundle(tmp_path)
    assert all(p.builds_on == () and all(t.upstream_outputs == {} for t in p.tests) for p in old.code)


def test_gradebooks_of_earlier_versions_still_read(graded):
    data = graded[2]["ben"].to_json()
    for problem in data["problems"]:
        for test in problem["tests"]:
            test.pop("cause")
    old = SubmissionResult.from_json(json.loads(json.dumps(data)))
    assert all(t.cause is None for p in old.problems for t in p.tests)
    assert summarise(old, {}, {}).lessons  # an old result still gets a summary, in its tests' own words


# ------------------------------------------------------------------ the instructor's view


def test_the_class_page_counts_each_mistake_where_it_starts_with_an_anonymous_example(graded, built_numpy):
    from autograder.classroom.classbook import open_gradebook
    from autograder.classroom.mistakes import class_mistakes
    from autograder.classroom.stats import analyse, bundle_info, load_scores
    from autograder.classroom.stats_page import stats_html

    run, out, _ = graded
    info = bundle_info(read_bundle(built_numpy.out / "autograder"))
    with open_gradebook(out, "attention-numpy") as db:
        mistakes = {(m.problem, m.mistake): m for m in class_mistakes(db, info[3], info[0])}
        analysis = analyse(load_scores(db), *info)
    column = mistakes[("softmax-rows", "column-softmax")]
    assert (column.students, column.points, column.message) == (1, 17.0, COLUMN)
    assert column.touches == ("softmax-rows", "scaled-dot-product-attention", "multi-head-attention")
    assert column.example.visibility == "public" and column.example.problem == "softmax-rows"
    first = next(p for p in run.bundle.code if p.id == "softmax-rows").tests[0]  # its first public test
    assert column.example.test == first.name and column.example.message.startswith(COLUMN)
    assert column.example.got.startswith(f"shape {tuple(first.args[0].shape)}: ["), column.example.got
    assert ("layer-norm", "unbiased-variance") in mistakes and ("attention-scores", "missing-scale") in mistakes
    html = stats_html(analysis, "A", tuple(mistakes.values()))
    table = html[html.index('id="class-mistakes"'):html.index("Named misconceptions</h2>")]
    assert 'data-mistake="softmax-rows/column-softmax"' in table and "17.00" in table
    assert not any(student in table for student in ("ben", "cho", "dan", "zed"))


def test_validate_names_a_builds_on_that_is_not_a_function_of_the_bank(bank):
    from autograder.bank.load import Bank
    from autograder.bank.validate import validate_bank

    problem = bank.get("add-and-norm").model_copy(update={"builds_on": ["layer-norm", "why-scale", "no-such"]})
    small = Bank({"add-and-norm": problem, "layer-norm": bank.get("layer-norm"), "why-scale": bank.get("why-scale")},
                 {k: bank.paths[k] for k in ("add-and-norm", "layer-norm", "why-scale")}, bank.root)
    found = [f.what for f in validate_bank(small) if "builds_on" in f.what]
    assert found == ["builds_on: why-scale is not another implement problem of the bank",
                     "builds_on: no-such is not another implement problem of the bank"]
