"""`qkv validate` as users run it: the bundled bank passes; each broken fixture fails cleanly.

Every case under tests/fixtures/bank/ is one folder holding one kind of mistake.
A broken bank must give exit code 1 and one line per error naming the file, the
field and the reason, and never a Python traceback.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from autograder.cli import main
from autograder.course.find import find_course
from autograder.course.scaffold import init_course, new_problem
from autograder.kinds import KINDS
from conftest import QKV, ROOT

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bank"

# case folder -> (file the error names, pattern the error line must match after "path: ")
CASES: dict[str, tuple[str, str]] = {
    "bad-yaml": ("bad-yaml.yaml", r"^:\d+:\d+: bad YAML: .+"),
    "missing-field": ("missing-field.yaml", r"^(:\d+)?: solution: Field required"),
    "wrong-type": ("wrong-type.yaml", r"^:5: points: Input should be a valid number"),
    "repeated-key": ("repeated-key.yaml", r"^:6: points: given twice in the same mapping"),
    # the pattern is printed as it is, not eaten as terminal markup
    "bad-topic": ("bad-topic.yaml", r"^:4: topic: String should match pattern '\^\[a-z0-9-\]\+\(/\[a-z0-9-\]\+\)\*\$'"),
    "unknown-kind": ("unknown-kind.yaml", r"^:3: kind: must be one of implement, .*got 'essay'"),
    "duplicate-id": ("same-id.yaml", r"^: id: 'same-id' is already used by .*same-id\.yaml"),
    "id-mismatch": ("id-mismatch.yaml", r"^: id: 'another-name' must match the file name 'id-mismatch'"),
    "unknown-reference": (
        "unknown-reference.yaml",
        r"^: references\.numpy: unknown reference 'solutions\.numpy_ref\.softmax_columns'.*no function softmax_columns",
    ),
    "wrong-fixed-answer": (
        "wrong-fixed-answer.yaml",
        r"^: lecture_example\.expected\.total: computed 1050624\.0 but the file says 1050000\.0",
    ),
    "weak-hidden-test": (
        "weak-hidden-test.yaml",
        r"^: misconceptions\.zero-after-softmax: passes every hidden test; the hidden tests are too weak",
    ),
    "passing-stub": ("passing-stub.yaml", r"^: stub: passes test\(s\) one row, batch; a stub must fail every test"),
    "reference-fails-expect": (
        "reference-fails-expect.yaml",
        r"^: test 'upper triangle typed by mistake': expect: the reference gives other numbers",
    ),
    "not-utf8": ("not-utf8.yaml", r"^: not UTF-8 text \(byte \d+\)"),
    "empty-file": ("empty-file.yaml", r"^: a problem file must be a YAML mapping"),
    "template-error": ("template-error.yaml", r"^: prompt: template does not render: 'width' is undefined"),
    # what makes a score measure knowledge (issue 14): guessing earns little, hand work is workable by hand
    "unbalanced-true-false": (
        "all-false-a.yaml", r"^: true_false: 0 of 4 statements of the topic guessing are true; keep between"),
    "false-without-follow-up": (
        "false-without-follow-up.yaml", r"^:1: \(top level\): a false statement needs a follow-up that grades its"),
    "telling-choice-id": ("telling-choice-id.yaml", r"^: choices: the id rows-right says whether it is right"),
    "leaked-answer": ("leak-quoter.yaml", r"^: choices\[0\]\.text: quotes 37,248, an answer of leak-source"),
    "infeasible-by-hand": (
        "infeasible-by-hand.yaml", r"^: parameters: no feasible parameters .*total has more than 3 digits"),
    "missing-by-hand": ("missing-by-hand.yaml", r"^: by_hand: a problem with parameters says what makes its variants"),
    "few-variants": ("few-variants.yaml", r"^: parameters: only 6 different answers in 200 draws; per-student numbers"),
    # an instructor's compute that raises on some draws: the problem's error, not validate's traceback
    "compute-raises": ("compute-raises.yaml", r"^: checking failed: ValueError: number of heads h=3 must divide"),
    # a hidden test a function returning zeros passes (issue 24): its points are earned without knowing anything
    "passed-by-zeros": (
        "passed-by-zeros.yaml", r"^: hidden test 'values all zero': passed by a function that returns zeros\b"),
    # a right choice written as "claim: reason" among plain distractors (issue 47): picking by form earns it
    "planted-cue": ("cue-axis.yaml", r"^: choices: a guesser who prefers explanation punctuation .* earns 75% of the 3 "
                    r"choice questions of the topic cues above chance \(it alone in cue-axis, cue-mask, cue-scale\)"),
    # two misconceptions with one answer on every part one gets wrong: the grader could name the wrong one
    "indistinct-mistakes": (
        "indistinct-mistakes.yaml",
        r"^: misconceptions\.positions-left-out: one-position-for-both gives the same answer on every part"),
}
WARNINGS = Path(__file__).parents[1] / "fixtures" / "warnings"


def _error_lines(stderr: str) -> list[str]:
    """The finding lines: those that start with a path inside the fixtures (or bank) folder."""
    return [line for line in stderr.splitlines() if line.startswith("/") and ".y" in line]


def test_every_fixture_folder_is_a_case() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == sorted(CASES)


@pytest.mark.slow
def test_bundled_bank_is_valid_in_a_subprocess() -> None:
    run = subprocess.run([str(QKV), "validate"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert _error_lines(run.stderr) == []
    assert re.search(r"\b\d+ problems valid", run.stdout)


@pytest.mark.slow
def test_all_broken_fixtures_in_one_subprocess() -> None:
    """One real run over every case at once: exit 1, one line per broken file, no traceback."""
    run = subprocess.run([str(QKV), "validate", str(FIXTURES)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode == 1
    assert "Traceback" not in output
    lines = _error_lines(run.stderr)
    assert len(lines) == len(CASES), "\n".join(lines)
    for case, (file_name, pattern) in CASES.items():
        matching = [line for line in lines if f"/{case}/" in line]
        assert len(matching) == 1, (case, matching)
        path, _, rest = matching[0].partition(file_name)
        assert path.startswith(str(FIXTURES / case)), matching[0]
        assert re.search(pattern, rest), (case, matching[0])
    assert run.stderr.strip().splitlines()[-1].startswith("error: ")


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_broken_fixture(case: str) -> None:
    file_name, pattern = CASES[case]
    result = CliRunner().invoke(main, ["validate", str(FIXTURES / case)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output + result.stderr
    lines = _error_lines(result.stderr)
    assert len(lines) == 1, lines
    where, _, rest = lines[0].partition(file_name)
    assert where.startswith(str(FIXTURES / case)), lines[0]
    assert re.search(pattern, rest), lines[0]


def test_missing_path_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "nowhere")])
    assert result.exit_code == 1
    assert "no such folder" in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_fixture_problems_do_not_leak_into_the_bundled_bank() -> None:
    from autograder.bank.load import load_bank

    ids = set(load_bank().bank.problems)
    assert not ids & {"same-id", "weak-hidden-test", "passing-stub", "template-error", "wrong-fixed-answer"}


def test_a_topic_whose_right_choices_are_the_longest_is_warned_about_but_valid() -> None:
    result = CliRunner().invoke(main, ["validate", str(WARNINGS / "longest-choice")])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "fixtures: the right choice is the longest by a clear margin in 1 of 1" in warnings[0]
    assert "(longest-is-right)" in warnings[0]


def test_a_bank_mostly_false_fails_even_when_no_topic_has_enough_statements(tmp_path: Path) -> None:
    template = (FIXTURES / "unbalanced-true-false" / "all-false-a.yaml").read_text()
    for n in range(12):  # 3 statements in each of 4 topics: below a topic's threshold, above the bank's
        text = template.replace("all-false-a", f"false-{n}").replace("guessing/balance", f"topic-{n % 4}")
        (tmp_path / f"false-{n}.yaml").write_text(text)
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith(str(tmp_path))]
    assert len(lines) == 1 and lines[0].endswith(
        "true_false: 0 of 12 statements are true; keep between 35% and 65% true, so that answering all true "
        "or all false earns little"), lines


def _todo_fields(value, field: str = "") -> set[str]:
    """The fields of a skeleton's YAML that hold its TODO text, read from the file itself."""
    if isinstance(value, str):
        return {field} if value.startswith("TODO:") else set()
    if isinstance(value, dict):
        return set().union(*(_todo_fields(v, f"{field}.{k}" if field else k) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(*(_todo_fields(v, f"{field}.{v['id']}" if isinstance(v, dict) and "id" in v else f"{field}[{i}]")
                             for i, v in enumerate(value)))
    return set()


@pytest.mark.parametrize("kind", KINDS)
def test_an_untouched_skeleton_fails_naming_every_todo_field(kind: str, tmp_path: Path) -> None:
    init_course(tmp_path / "c", "Course 101")
    written = new_problem(find_course(tmp_path / "c"), "untouched", kind)
    problem = written[0].parent / "problem.yaml"
    wanted = _todo_fields(yaml.safe_load(problem.read_text()))
    assert {"title", "source"} <= wanted
    result = CliRunner().invoke(main, ["validate", str(problem.parent)])
    assert result.exit_code == 1, result.output
    lines = _error_lines(result.stderr)
    assert all(line.startswith(f"{problem}: ") for line in lines), lines
    named = {line.removeprefix(f"{problem}: ").split(": ")[0] for line in lines}
    assert named == wanted
    assert all("still the skeleton's text ('TODO:" in line for line in lines)


def test_messages_keep_their_brackets_through_the_terminal_markup(tmp_path: Path) -> None:
    """rich reads [word] as markup: a folder named bank[v2], and the torch note's install line with its [torch],
    must reach the terminal as they are."""
    bank = tmp_path / "bank[v2]"
    bank.mkdir()
    shutil.copy(FIXTURES.parent / "warnings" / "longest-choice" / "longest-is-right.yaml", bank)
    without_torch = "import sys; sys.modules['torch'] = None; from autograder.cli import main; main()"  # as in the core
    run = subprocess.run([sys.executable, "-c", without_torch, "validate", "--tables", str(bank)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert f"Questionbank:{bank}" in "".join(run.stdout.split())  # the title, however rich wrapped it
    from autograder import extras

    assert "[torch]" in extras.install_hint("torch")
    assert f"torch references were not checked ({extras.install_hint('torch')})" in run.stderr


# ------------------------------------------------------------------ test power


def _with_hidden_test(tmp_path: Path, test: dict) -> Path:
    """The passed-by-zeros fixture with its zeros test replaced by `test`, in a bank of its own."""
    problem = yaml.safe_load((FIXTURES / "passed-by-zeros" / "passed-by-zeros.yaml").read_text())
    problem["hidden_tests"][1] = test
    (tmp_path / "passed-by-zeros.yaml").write_text(yaml.safe_dump(problem, sort_keys=False))
    return tmp_path


HALVES = [[0.5, 0.5, 0, 0], [0.25, 0.25, 0.25, 0.25], [1, 0, 0, 0]]  # rows summing to 1 exactly

# stand-in as the finding names it -> a hidden test of attention_output(weights, V) that only it (and those
# that coincide with it there) passes
STAND_INS = {
    "ones": {"name": "weights of rows summing to 1, values of ones", "args": [{"array": HALVES}, {"array": [[1, 1]] * 4}]},
    "its first argument": {"name": "identity values", "args": [
        {"random": "uniform", "shape": [3, 4], "seed": 3, "low": 0, "high": 1}, {"array": np.eye(4).tolist()}]},
    "a constant (its right output's mean)": {
        "name": "values that are all 2", "args": [{"array": HALVES}, {"array": [[2, 2]] * 4}]},
    # the public test's weights and values are [[0.5, 0.5], [1, 0]] and [[2, 4], [6, 8]]: output [[4, 6], [2, 4]]
    "a constant (the right output of test 'two queries')": {
        "name": "the public test's output, from other inputs", "args": [
            {"array": [[1, 0], [0, 1]]}, {"array": [[4, 6], [2, 4]]}]},
}


@pytest.mark.parametrize("what", sorted(STAND_INS))
def test_a_hidden_test_any_stand_in_passes_is_refused_naming_the_stand_in(what: str, tmp_path: Path) -> None:
    test = STAND_INS[what]
    result = CliRunner().invoke(main, ["validate", str(_with_hidden_test(tmp_path, test))])
    assert result.exit_code == 1, result.output
    lines = _error_lines(result.stderr)
    assert len(lines) == 1, lines
    where, _, rest = lines[0].partition(": ")
    assert where == str(tmp_path / "passed-by-zeros.yaml")
    assert rest.startswith(f"hidden test '{test['name']}': passed by a function that returns "), rest
    named = rest.split("returns ", 1)[1].split(", whatever its input")[0].split(" or ")
    assert what in named, rest


def test_a_hidden_test_worth_no_points_may_have_a_constant_answer(tmp_path: Path) -> None:
    """It earns nothing, so a stub earns nothing from it: an edge case kept for its feedback."""
    zeros = yaml.safe_load((FIXTURES / "passed-by-zeros" / "passed-by-zeros.yaml").read_text())["hidden_tests"][1]
    result = CliRunner().invoke(main, ["validate", str(_with_hidden_test(tmp_path, {**zeros, "points": 0}))])
    assert result.exit_code == 0, result.stderr
    assert _error_lines(result.stderr) == []


def test_no_hidden_test_of_the_bundled_bank_is_passed_by_a_stand_in() -> None:
    from autograder.bank.load import load_bank
    from autograder.kinds import kind_of
    from autograder.kinds.implement.power import power_findings, right_outputs, stand_ins

    code = [p for p in load_bank().bank.problems.values() if kind_of(p).code]
    assert len(code) >= 20
    assert power_findings(code) == {}
    # what it ran: every hidden test worth points that returns a value met zeros and ones at least
    hidden = {(p.id, t.name) for p in code for t in p.hidden_tests if t.points and not t.expect_error}
    met: dict[tuple[str, str], set[str]] = {}
    for stand_in in stand_ins(code, {p.id: right_outputs(p) for p in code}):
        met.setdefault((stand_in.problem, stand_in.test.name), set()).add(stand_in.what)
    assert set(met) == hidden
    assert all({"zeros", "ones"} <= whats for whats in met.values())


def test_errors_come_last_the_tables_on_request_and_the_numbers_agree(tmp_path: Path) -> None:
    """A bank with one problem whose 24 parameter sets give 6 answers: without --tables no table is drawn and the
    error is the last line before the summary; with --tables the hand calculations' table counts the same 6
    answers the error does (it said "distinct 24" beside "only 6 different answers")."""
    shutil.copy(FIXTURES / "few-variants" / "few-variants.yaml", tmp_path)
    plain = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert plain.exit_code == 1
    assert "┃" not in plain.output and "Hand calculations" not in plain.output
    errors = [line for line in plain.stderr.splitlines() if line.strip()]
    assert "only 6 different answers in 200 draws" in errors[-2] and errors[-1].startswith("error: 1 problem found in 1 file")
    tables = CliRunner().invoke(main, ["validate", "--tables", str(tmp_path)])
    assert tables.exit_code == 1 and "Hand calculations" in tables.stdout
    row = next(line for line in tables.stdout.splitlines() if "few-variants" in line)
    assert re.search(r"│\s*6\s*│", row), row
    assert "different answers" in tables.stdout and "distinct" not in tables.stdout
    # the error comes after every table, also where one output holds both streams
    assert tables.output.rindex("only 6 different answers") > tables.output.rindex("Hand calculations")


def test_a_valid_bank_says_so_in_one_line_without_tables() -> None:
    result = CliRunner().invoke(main, ["validate", str(WARNINGS / "longest-choice")])
    assert result.exit_code == 0
    assert "┃" not in result.stdout and re.fullmatch(r"1 problem valid \(--tables shows .*\)", " ".join(result.stdout.split()))
