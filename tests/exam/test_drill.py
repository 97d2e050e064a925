"""`qkv practice`, driven as a student would: answers typed into a pseudo-terminal or piped through stdin, and what
the drill prints read back (verdicts, misconceptions, worked solutions, score, topics to review).
"""

from __future__ import annotations

import re
import signal
import subprocess

import pexpect
import pytest

from autograder.kinds.numeric.render import fmt
from autograder.kinds.resolve import resolve
from autograder.exam.drill import questions, run_drill
from autograder.exam.select import DEFAULT_KINDS, ExamItem, ExamSpec, draw_exam, instantiate
from autograder.kinds import MultipleChoiceProblem, NumericProblem, ShapeProblem, TrueFalseProblem, kind_of
from autograder.kinds.numeric.parts import part_answer
from autograder.kinds.shape import expected_shape
from conftest import QKV, said

pytestmark = pytest.mark.slow  # the drill driven through a pseudo-terminal


def right_answers(item: ExamItem) -> list[str]:
    problem = item.problem
    if isinstance(problem, NumericProblem):
        return [part_answer(part, item.variant.answers[part.name]) for part in problem.parts]
    if isinstance(problem, ShapeProblem):
        return ["(" + ", ".join(expected_shape(problem, item.variant)) + ")"]
    if isinstance(problem, TrueFalseProblem):
        verdict = ["true" if problem.answer else "f"]
        if problem.follow_up is None:
            return verdict
        return verdict + [str(kind_of(problem).answer(problem, item.variant)["follow_up"])]
    assert isinstance(problem, MultipleChoiceProblem)
    return [kind_of(problem).answer(problem, item.variant).lower()]


def scripted(answers: list[str]):
    """An `ask` that types the given answers, then ends the input like Ctrl-D; and a `say` that records."""
    typed, said = list(answers), []

    def ask(prompt: str) -> str:
        said.append(prompt)
        if not typed:
            raise EOFError
        return typed.pop(0)

    return ask, said.append, said


def item_of(bank, problem_id: str, seed: int = 1) -> ExamItem:
    problem = bank.get(problem_id)
    return ExamItem(1, problem, instantiate(problem, seed, None), problem.topic.split("/")[0])


# ------------------------------------------------------------------- in-process


def test_all_right_answers_score_full_marks(bank):
    drill = draw_exam(bank, ExamSpec(count=12, seed=21))
    ask, say, said = scripted([a for item in drill.items for a in right_answers(item)])
    summary = run_drill(list(drill.items), ask, say)
    assert summary.earned == summary.possible == drill.points and not summary.stopped_early
    assert "Nothing to review" in said[-1] and "Worked solution" not in "\n".join(said)


def test_full_marks_whatever_the_parts_shares_add_up_to(bank):
    """4 points over the 6 parts of kv-cache-memory: shares of 4/6 add up to 3.9999... in floating point."""
    item = item_of(bank, "kv-cache-memory")
    problem = item.problem.model_copy(update={"points": 4})
    assert len(problem.parts) == 6 and sum([4 / 6] * 6) != 4
    item = ExamItem(1, problem, item.variant, item.group)
    ask, say, said = scripted(right_answers(item))
    summary = run_drill([item], ask, say)
    assert summary.earned == summary.possible == 4 and summary.topics_to_review() == []
    assert "Nothing to review" in said[-1]


def test_numeric_misconception_is_named_and_the_solution_shown(bank):
    item = item_of(bank, "masked-renormalisation")
    problem, variant = item.problem, item.variant
    wrong = resolve(problem.misconceptions[0].compute)(**variant.params)
    answers = [part_answer(p, variant.answers[p.name]) for p in problem.parts[:2]]
    answers += [fmt(wrong["masked_weights"]), "1e9"]
    ask, say, said = scripted(answers)
    summary = run_drill([item], ask, say)
    text = "\n".join(said)
    assert f"Misconception: {problem.misconceptions[0].message}" in text
    assert "Worked solution" in text and part_answer(problem.parts[3], variant.answers["masked_output"]) in text
    assert summary.earned == pytest.approx(problem.points / 2)
    assert summary.topics_to_review() == [(problem.topic, problem.points / 2, problem.points)]


def test_shape_and_choice_misconceptions_are_named(bank):
    shape, choice = item_of(bank, "concat-shape"), item_of(bank, "why-scale")
    letter = "ABCD"[choice.variant.params["order"].index("rows-sum-to-one")]  # the letter this order gives it
    ask, say, said = scripted(["(h*n, d/h)", letter])
    summary = run_drill([shape, choice], ask, say)
    text = "\n".join(said)
    assert shape.problem.misconceptions[0].message in text
    assert next(c for c in choice.problem.choices if c.id == "rows-sum-to-one").misconception in text
    assert summary.earned == 0 and len(summary.topics_to_review()) == 2


def test_malformed_answers_are_asked_again_not_marked(bank):
    item = item_of(bank, "one-query-by-hand")
    right = right_answers(item)
    ask, say, said = scripted(["hello", "1, 2", right[0], right[1], "skip"])
    summary = run_drill([item], ask, say)
    text = "\n".join(said)
    assert "could not read 'hello'" in text and 'expected 3 number(s), got 2 in "1, 2"' in text
    assert "skipped" in text and summary.earned == pytest.approx(sum(q.points for q in questions(item)[:2]))


def test_skip_leaves_the_whole_problem_for_the_next(bank):
    """'skip' at a problem's first part asks none of its other parts: the next answer typed is the next problem's."""
    first, second = item_of(bank, "one-query-by-hand"), item_of(bank, "concat-shape")
    second = ExamItem(2, second.problem, second.variant, second.group)
    assert len(questions(first)) == len(first.problem.parts) > 1
    ask, say, said = scripted(["skip", *right_answers(second)])
    summary = run_drill([first, second], ask, say)
    text = "\n".join(said)
    assert text.count("skipped") == 1 and "Worked solution" in text
    assert [s.earned for s in summary.scores] == [0, second.problem.points] and not summary.stopped_early
    asked = [line for line in said if line.startswith("  ") and line.endswith("> ")]
    assert len(asked) == 1 + len(questions(second))


def test_end_of_input_gives_the_summary_so_far(bank):
    drill = draw_exam(bank, ExamSpec(count=5, seed=2, kinds=("true_false", "multiple_choice")))
    ask, say, said = scripted(right_answers(drill.items[0]))
    summary = run_drill(list(drill.items), ask, say)
    assert summary.stopped_early and len(summary.scores) == 1
    assert "Stopped early." in said[-1] and "over 1 problem(s)" in said[-1]


def test_the_whole_bank_reads_without_tex_commands(bank):
    """Every drillable problem, skipped so its worked solution shows too: the terminal gets γ, β, ε, not TeX."""
    pool = [p for p in bank.problems.values() if p.kind in DEFAULT_KINDS]
    drill = draw_exam(bank, ExamSpec(count=len(pool), seed=5))
    assert len(drill.items) == len(pool)
    ask, say, said = scripted(["skip"] * 1000)
    run_drill(list(drill.items), ask, say)
    text = "\n".join(said)
    assert re.findall(r"\\[A-Za-z]+|\\[,;:! ]", text) == []
    for letter in "γβεμσ":  # LayerNorm's and its statistics' letters, which the bank writes as TeX
        assert letter in text


@pytest.mark.parametrize("tex, shown", [
    (r"\gamma = 1, \beta = 0, \varepsilon > 0", "γ = 1, β = 0, ε > 0"),
    (r"0.0634\,v_1 + 0.4683\,v_2", "0.0634 v₁ + 0.4683 v₂"),  # a thin space before a letter, digit subscripts
    (r"\sigma^2 = \frac12 \sum_k x_k", "σ² = 1/2 Σ_k x_k"),  # \frac12 without braces; no subscript k exists
    (r"\frac{QK^\top}{\sqrt{d_k}}", "QKᵀ/√d_k"),
    (r"(x - \mu)/\sqrt{\sigma^2 + \varepsilon}", "(x - μ)/√(σ² + ε)"),
    (r"\frac{d}{dx}\big(x + F(x)\big)", "(d/dx)(x + F(x))"),
    (r"10^{-4},\ 2^{d/h},\ x_{i+1}", "10⁻⁴, 2^(d/h), x_(i+1)"),
    (r"J_{ij} = \partial a_i / \partial s_j,\ i \ne j,\ \pm 1", "J_ij = ∂ a_i / ∂ s_j, i ≠ j, ± 1"),  # spaces kept as typed
    (r"\infty \in \mathbb{R}, \Delta", "∞ ∈ ℝ, Δ"),
])
def test_tex_reads_as_unicode_in_a_terminal(tex, shown):
    from autograder.exam.markup import tex_text

    assert tex_text(tex) == shown


# ------------------------------------------------------------------ as a person


def test_piped_answers_through_stdin(tmp_path):
    from autograder.bank.load import load_bank_strict

    spec = ExamSpec(topics=("masking",), kinds=DEFAULT_KINDS, count=3, seed=13)
    drill = draw_exam(load_bank_strict(), spec)
    answers = [a for item in drill.items for a in right_answers(item)]
    answers[-1] = "quit" if len(answers) > 1 else answers[-1]
    run = subprocess.run([str(QKV), "practice", "--topics", "masking", "--count", "3", "--seed", "13"],
                         input="\n".join(answers) + "\n", capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "3 problems, seed 13" in run.stdout and run.stdout.count("✓ correct") == len(answers) - 1
    assert "Stopped early." in run.stdout and "Score:" in run.stdout


def spawn(*args: str, cwd) -> pexpect.spawn:
    """qkv practice at a terminal of its own (in `cwd`, where it keeps its history), with Ctrl-C as a terminal gives it: a test run started in the background
    by a shell without job control inherits SIGINT ignored, and so would the drill (and no Ctrl-C would reach it)."""
    child = pexpect.spawn(str(QKV), ["practice", *args], encoding="utf-8", timeout=30, dimensions=(50, 200), cwd=cwd,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    child.expect_exact("problems, seed")
    return child


def test_a_student_at_a_terminal(bank, tmp_path):
    spec = ExamSpec(topics=("attention/softmax",), kinds=("numeric",), count=1, seed=7)
    item = draw_exam(bank, spec).items[0]
    problem, variant = item.problem, item.variant
    wrong = resolve(problem.misconceptions[0].compute)(**variant.params)
    child = spawn("--topics", "attention/softmax", "--kinds", "numeric", "--count", "1", "--seed", "7", cwd=tmp_path)
    child.expect_exact(problem.title)
    child.expect_exact(f"{problem.parts[0].label} [3 numbers]> ")
    child.sendline(fmt(wrong["weights"], 3))
    child.expect_exact("Misconception:")
    child.expect_exact(f"{problem.parts[1].label} [2 numbers]> ")
    child.sendline(part_answer(problem.parts[1], variant.answers["output"]))
    child.expect_exact("✓ correct")
    child.expect_exact("Worked solution:")
    child.expect_exact("Score: 1.5 / 3 points (50%) over 1 problem(s)")
    child.expect_exact("Topics to review:")
    child.expect_exact("attention/softmax: 1.5 / 3 points")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.parametrize("stop", ["eof", "ctrl-c"])
def test_ctrl_d_and_ctrl_c_end_with_the_summary(stop, tmp_path):
    child = spawn("--kinds", "true_false", "--count", "3", "--seed", "1", cwd=tmp_path)
    child.expect_exact("true or false> ")
    child.sendline("maybe")
    child.expect_exact("expected True or False")
    child.expect_exact("true or false> ")
    if stop == "eof":
        child.sendeof()
    else:
        child.sendintr()
    child.expect_exact("Stopped early.")
    child.expect_exact("No problem finished, so no score yet.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and "Traceback" not in (child.before or "")


def test_code_problems_are_refused_in_one_line():
    run = subprocess.run([str(QKV), "practice", "--kinds", "implement"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=60)
    assert run.returncode == 1 and said(run.stderr)[0].startswith("error: --kinds:")
    assert len(said(run.stderr)) == 1
    assert "Traceback" not in run.stdout + run.stderr
