"""The registry of problem kinds: every registered kind gives every behaviour, and a new kind is one module.

Parametrised over autograder.kinds.KINDS, so a kind is tested here as soon as it
is registered. The last tests register a kind defined in this file (`yes_no`)
and follow it through the schema's union, the tables of kinds, `qkv build`,
grading, exam papers, the drill and a quiz export: no stage is told about it.
"""

from __future__ import annotations

import inspect
import json
import typing
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from autograder.bank.load import Bank, parse_problem
from autograder.kinds.model import ProblemBase
from autograder.assemble import build
from autograder.bundle import read_bundle
from autograder.cli import main
from autograder.errors import QkvError
from autograder.exam import exam_files
from autograder.exam.drill import run_drill
from autograder.exam.lms import export
from autograder.exam.select import ExamSpec, draw_exam
from autograder.grade.score import score_written
from autograder.kinds import KINDS, AllOrNothingKind, Kind, WrittenKind, kind_of, problem_adapter
from autograder.kinds.sealing import class_answer
from autograder.kinds.items import Blank, KeyLine, ProblemKey, Question, Verdict
from conftest import ROOT
from qkv_runtime.answers import AnswerFormatError, parse_bool

BEHAVIOURS = sorted(name for name, _ in inspect.getmembers(Kind, inspect.isfunction) if not name.startswith("_"))
WRITTEN_BEHAVIOURS = sorted(name for name, _ in inspect.getmembers(WrittenKind, inspect.isfunction)
                            if not name.startswith("_"))


# ----------------------------------------------------------- every kind


@pytest.mark.parametrize("name", list(KINDS))
def test_every_kind_gives_every_behaviour(name: str) -> None:
    kind = KINDS[name]
    assert kind.name == name
    assert not type(kind).__abstractmethods__
    assert issubclass(kind.model, ProblemBase)
    assert typing.get_args(kind.model.model_fields["kind"].annotation) == (name,), "the model's kind is its name"
    assert kind.code != isinstance(kind, WrittenKind), "a kind is answered either with code or in ANSWERS"
    for behaviour in BEHAVIOURS + (WRITTEN_BEHAVIOURS if not kind.code else []):
        assert callable(getattr(kind, behaviour)), behaviour


@pytest.mark.parametrize("name", list(KINDS))
def test_the_bank_has_problems_of_every_kind_and_each_knows_its_kind(bank: Bank, name: str) -> None:
    problems = [p for p in bank.problems.values() if p.kind == name]
    assert problems
    assert all(kind_of(p) is KINDS[name] and isinstance(p, KINDS[name].model) for p in problems)


@pytest.mark.parametrize("name", list(KINDS))
def test_the_schema_page_has_a_section_on_every_kind(name: str) -> None:
    # its example is checked by test_bank.py's test_the_schema_page_has_a_valid_example_of_every_kind
    assert f"\n## `{name}`" in (ROOT / "docs" / "question-bank.md").read_text(encoding="utf-8")


def test_an_unknown_kind_is_answered_with_every_registered_kind() -> None:
    with pytest.raises(QkvError) as caught:
        parse_problem("id: x1\nkind: essay\n", "x1.yaml")
    assert f"must be one of {', '.join(KINDS)}, got 'essay'" in str(caught.value)


def _validate_header(path: Path, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "250")  # so that no column name is wrapped
    result = CliRunner().invoke(main, ["validate", "--tables", str(path)])
    return next(line for line in result.output.splitlines() if " topic " in line)


def test_the_validate_table_has_a_column_per_kind(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "empty").mkdir()
    header = _validate_header(tmp_path / "empty", monkeypatch)
    assert [cell.strip() for cell in header.strip("┃ ").split("┃")] == ["topic", *KINDS, "points"]


# ----------------------------------------------- a kind of this file's own


class YesNoProblem(ProblemBase):
    kind: typing.Literal["yes_no"]
    answer: bool


class YesNoKind(AllOrNothingKind):
    """A question answered yes or no: the smallest kind, registered only by the tests below."""

    name = "yes_no"
    model = YesNoProblem
    selfcheck_judge = "verdict"  # its self-check data is true/false's, so the self-check judges it as one

    def answer(self, problem, variant) -> object:
        return "yes" if problem.answer else "no"

    def nbgrader_checks(self, problem, variant) -> list[str]:
        return [f"_w.truth({problem.answer!r})"]

    def selfcheck_data(self, assigned, assignment, bundle, students) -> dict:
        canonical = "true" if assigned.problem.answer else "false"
        return {"digests": class_answer(assignment.name, assigned.problem.id, canonical), "misconceptions": {}}

    def read(self, problem, typed, variant) -> object:
        return parse_bool(typed)

    def judge(self, problem, typed, variant) -> Verdict:
        try:
            right = parse_bool(typed) == problem.answer
        except AnswerFormatError as err:
            return Verdict(False, str(err))
        return Verdict(right, "correct" if right else f"the answer is {self.answer(problem, None)}")

    def blanks(self, problem, variant) -> tuple[Blank, ...]:
        return (Blank("yes or no"),)

    def key(self, problem, variant) -> ProblemKey:
        return ProblemKey((KeyLine("answer", self.answer(problem, None)),), problem.solution, ())

    def drill_label(self, problem) -> str:
        return "yes or no"

    def lms_question(self, problem, points: float, variant) -> Question:
        return Question(problem.id, problem.title, "truefalse", problem.prompt, points, problem.solution,
                        truth=problem.answer)


YES_NO_FILE = """\
id: rows-sum-to-one
title: Do the weights sum to one?
kind: yes_no
topic: tiny/weights
points: 2
difficulty: 1
source: "L08 p.20"
prompt: "Does each row of softmax(S) sum to one?"
answer: true
solution: "Each exponential is divided by its row's sum."
"""

MANIFEST = """\
title: "A kind of its own"
track: numpy
seed: 7
problems:
  - rows-sum-to-one
  - output-shape
"""


@pytest.fixture
def yes_no(monkeypatch) -> YesNoKind:
    kind = YesNoKind()
    monkeypatch.setitem(KINDS, kind.name, kind)  # registered for this test only
    return kind


@pytest.fixture
def tiny_bank(yes_no, bank: Bank, tmp_path: Path) -> Bank:
    path = tmp_path / "bank" / "tiny" / "rows-sum-to-one.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(YES_NO_FILE, encoding="utf-8")
    problem = parse_problem(YES_NO_FILE, str(path))
    return Bank({**bank.problems, problem.id: problem}, {**bank.paths, problem.id: path}, bank.root)


def test_a_registered_kind_joins_the_union_and_the_tables(yes_no, tmp_path: Path, monkeypatch) -> None:
    problem = problem_adapter().validate_python(yaml.safe_load(YES_NO_FILE))
    assert isinstance(problem, YesNoProblem) and kind_of(problem) is yes_no
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "rows-sum-to-one.yaml").write_text(YES_NO_FILE, encoding="utf-8")
    assert "yes_no" in _validate_header(tmp_path, monkeypatch)
    with pytest.raises(QkvError, match="must be one of .*yes_no"):
        parse_problem("id: x1\nkind: essay\n", "x1.yaml")


def test_a_registered_kind_is_built_graded_examined_drilled_and_exported(tiny_bank: Bank, tmp_path: Path) -> None:
    (tmp_path / "assignments").mkdir()
    (tmp_path / "assignments" / "tiny.yaml").write_text(MANIFEST, encoding="utf-8")
    built = build("tiny", tmp_path / "dist" / "tiny", bank=tiny_bank, assignments_root=tmp_path / "assignments")

    student = built.out / "student"
    assert "Does each row of softmax(S) sum to one?" in (student / "PROBLEMS.md").read_text(encoding="utf-8")
    assert "ANSWERS['rows-sum-to-one'] = None" in (student / "tiny.ipynb").read_text(encoding="utf-8")
    entry = next(p for p in json.loads((student / "selfcheck.json").read_text(encoding="utf-8"))["problems"]
                 if p["id"] == "rows-sum-to-one")
    assert entry["kind"] == "yes_no" and entry["code"] is False  # the self-check judges it by its kind's entry
    assert entry["judge"] == "verdict"
    assert set(entry) == {"id", "kind", "code", "judge", "title", "points", "topic", "digests",
                          "misconceptions"}
    assert "_w.truth(True)" in (built.out / "nbgrader" / "source" / "tiny" / "tiny.ipynb").read_text(encoding="utf-8")
    assert "'rows-sum-to-one': 'yes'" in (built.out / "key" / "tiny.py").read_text(encoding="utf-8")

    bundle = read_bundle(built.out / "autograder")
    written = next(w for w in bundle.written if w.id == "rows-sum-to-one")
    assert score_written(written, "Yes", bundle, "ada").score == 2.0
    wrong = score_written(written, "no", bundle, "ada")
    assert (wrong.score, wrong.message) == (0.0, "the answer is yes")

    exam = draw_exam(tiny_bank, ExamSpec(topics=("tiny",), kinds=("yes_no",), count=1))
    papers = exam_files(exam, "md")
    assert "yes or no" in papers["exam.md"].decode() and "**answer:** yes" in papers["answer-key.md"].decode()

    typed, said = ["maybe", "yes"], []
    summary = run_drill(list(exam.items), ask=lambda prompt: typed.pop(0), say=said.append)
    assert summary.earned == summary.possible == 2.0
    assert any("try again" in line for line in said)

    quiz = export("topic:tiny", "gift", bank=tiny_bank)
    assert quiz.skipped_code == 0 and "{TRUE####" in quiz.data.decode()




# ------------------------------------- true_false: a verdict nobody can read off the page

STATEMENT = """\
id: rows-sum-to-one
title: Does a softmax row sum to one?
kind: true_false
topic: tiny/softmax
points: 2
difficulty: 1
source: "L08 p.20"
statement: "Every row of softmax(S) sums to 1."
answer: true
reason: "Each exponential is divided by the sum of its row's exponentials."
follow_up:
  question: "What do the weights of one row of three finite scores add up to?"
  number: 1
  tolerance: {abs: 1.0e-6}
  decimals: 0
solution: "True: each exponential is divided by its row's sum."
"""


def _statement(**changes: object):
    data = yaml.safe_load(STATEMENT)
    data.update(changes)
    return problem_adapter().validate_python(data)


def test_a_statement_in_the_kinds_own_words_passes() -> None:
    from autograder.bank.validate import check_problem

    assert check_problem(_statement()) == []
    assert check_problem(_statement(answer=False, correction="Every row sums to 1.")) == []


def test_validate_fails_a_skeleton_whose_prompt_leaks_its_verdict(tmp_path: Path) -> None:
    leaky = STATEMENT.replace("answer: true\n", "answer: false\ncorrection: \"It sums to 1.\"\n").replace(
        "statement:", "prompt: Decide whether the statement is true or false; if false, correct it.\nstatement:")
    (tmp_path / "rows-sum-to-one.yaml").write_text(leaky, encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith(str(tmp_path))]
    assert len(lines) == 1 and ": prompt: a true/false prompt is the kind's own" in lines[0], lines
    problem = parse_problem(leaky, str(tmp_path / "rows-sum-to-one.yaml"))
    # whatever the file says, nobody reads it: every route shows the kind's prompt
    from autograder.kinds.true_false.checks import NEUTRAL_PROMPT, student_texts

    for route, text in student_texts(kind_of(problem), problem).items():
        assert "if false" not in text, route
    assert kind_of(problem).question_markdown(problem, None).startswith(NEUTRAL_PROMPT)


@pytest.mark.parametrize("question, words", [
    ("Why can no weight of an unmasked key be exactly 0?", "Why"),
    ("Then why does the same model generate text one token at a time?", "Then why"),
    ("Which change to the statement makes it true?", "makes it true"),
    ("What do multiple heads actually give a Transformer?", "actually"),
    ("How many scores does one head compute for n = 300 tokens, however small most of its weights are?", "however"),
])
def test_a_follow_up_that_takes_the_verdict_for_granted_is_refused(question: str, words: str) -> None:
    problem = _statement(follow_up={**yaml.safe_load(STATEMENT)["follow_up"], "question": question})
    found = [f for f in kind_of(problem).check(problem) if f.startswith("follow_up.question:")]
    assert len(found) == 1 and f"'{words}' takes the verdict for granted" in found[0], found


def test_a_true_statement_without_a_follow_up_is_refused() -> None:
    problem = _statement(follow_up=None)  # the model takes it: only a false statement must have one
    assert any(f.startswith("follow_up: a statement without a follow-up can only be true")
               for f in kind_of(problem).check(problem))


@pytest.mark.parametrize("method, routes", [
    ("question_markdown", ("release", "class text", "exam paper")),
    ("drill_text", ("drill",)),
    ("answer_notes", ("notebook cell",)),
])
def test_whatever_a_route_shows_is_rendered_with_the_verdict_flipped(method: str, routes: tuple[str, ...]) -> None:
    from autograder.kinds.true_false import TrueFalseKind
    from autograder.kinds.true_false.checks import verdict_findings

    def leaky(self, problem, *args):
        shown = getattr(TrueFalseKind, method)(self, problem, *args)
        cue = "" if problem.answer else "If it is false, correct it."
        return (*shown, cue) if isinstance(shown, tuple) else shown + cue

    kind = type("LeakyTrueFalse", (TrueFalseKind,), {method: leaky})()
    found = [f for f in verdict_findings(kind, _statement()) if "changes when the verdict is flipped" in f]
    assert len(found) == 1 and all(route in found[0] for route in routes), found
    assert verdict_findings(kind_of(_statement()), _statement()) == []


@pytest.mark.parametrize("problem_id, hidden, shown", [
    ("layer-norm-batch-axis", {"scale", "shift"}, set()),
    ("kv-cache-memory", set(), {"d", "h", "kv_heads", "layers", "n"}),
])
def test_selfcheck_json_names_in_clear_only_the_symbols_the_prompt_prints(bank: Bank, problem_id, hidden, shown):
    """A parameter the prompt only computes with (the second token's scale and shift, inside the matrix it
    prints) is the student's to work out: the release must not list it beside the answers' seals."""
    from autograder.assemble.manifest import AssignedProblem, Assignment, Manifest

    problem = bank.get(problem_id)
    manifest = Manifest(title="symbols", track="numpy", seed=7, variants="per_student", problems=[problem_id])
    assigned = AssignedProblem(problem, problem.points)
    assignment = Assignment("symbols", manifest, (assigned,), Path("symbols.yaml"), {})
    data = kind_of(problem).selfcheck_data(assigned, assignment, None, ["s1", "s2"])
    for student, symbols in data["symbols"].items():
        assert set(symbols) == shown and not hidden & set(symbols), (student, symbols)
