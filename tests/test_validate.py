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

import pytest
import yaml
from click.testing import CliRunner

from autograder.cli import main
from autograder.course.find import find_course
from autograder.course.scaffold import init_course, new_problem
from autograder.kinds import KINDS
from conftest import QKV, ROOT

FIXTURES = Path(__file__).parent / "fixtures" / "bank"

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
    # an instructor's compute that raises on some draws: the problem's error, not validate's traceback
    "compute-raises": ("compute-raises.yaml", r"^: checking failed: ValueError: number of heads h=3 must divide"),
}
WARNINGS = Path(__file__).parent / "fixtures" / "warnings"


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
    run = subprocess.run([sys.executable, "-c", without_torch, "validate", str(bank)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert f"Questionbank:{bank}" in "".join(run.stdout.split())  # the title, however rich wrapped it
    from autograder import extras

    assert "[torch]" in extras.install_hint("torch")
    assert f"torch references were not checked ({extras.install_hint('torch')})" in run.stderr
