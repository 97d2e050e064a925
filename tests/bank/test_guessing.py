"""Scores that only understanding earns (issue 24, items 1 and 2; issue 47, item 3): the guessing strategies,
played through the grader's own judging on the whole bank, on each shipped assignment and on drawn exams, earn
what chance does.

A student who knows nothing reads the prompt for a cue, answers all true or all false, and picks the longest
or the shortest choice; or reads the form of the text: explanation punctuation, hedging or absolute words, the
follow-up's form, the words a choice shares with its question. None may earn more than chance plus 5 points (of
100) on the verdicts or on the choices, nor any combination of them, and the prompt's cue no more than one verdict
for everything. Then what enforces it: `qkv build` refuses an assignment whose verdicts are unbalanced,
`qkv validate` a topic whose right choices sit at one end of the lengths or differ in form from their
distractors, and no student text shows a statement's correction or reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from autograder.assemble.manifest import find_manifest, resolve_assignment
from autograder.bank import cues, guessing, measures
from autograder.bank.guessing import Guesser, Sitting
from autograder.bank.load import Bank, load_bank
from autograder.bank.validate import bank_warnings, validate_bank
from autograder.cli import main
from autograder.errors import QkvError
from autograder.exam.select import ExamSpec, draw_exam, instantiate
from autograder.kinds import kind_of
from autograder.kinds.true_false.checks import student_texts
from conftest import said

STUDENTS = [f"s{n:04d}" for n in range(200)]
MARGIN = 0.05  # above chance, of the part's points
ASSIGNMENTS = ("attention-numpy", "attention-torch", "exam-prep")
EXAMS = {  # drawn exams that hold both statements and choice questions
    "default count 20 seed 0": ExamSpec(count=20, seed=0),
    "default count 20 seed 1": ExamSpec(count=20, seed=1),
    "statements and choices, 8, seed 3": ExamSpec(count=8, seed=3, kinds=("true_false", "multiple_choice")),
    "statements and choices, 12, seed 4": ExamSpec(count=12, seed=4, kinds=("true_false", "multiple_choice")),
}


def _bank_paper(bank: Bank) -> list[list[Sitting]]:
    written = [p for _, p in sorted(bank.problems.items()) if not kind_of(p).code]
    return [[Sitting(p, p.points, kind_of(p).variant(p, 0, "per_student", s)) for p in written] for s in STUDENTS]


def _assignment_paper(bank: Bank, name: str) -> list[list[Sitting]]:
    assignment = resolve_assignment(find_manifest(name), bank)
    seed, mode = assignment.manifest.seed, assignment.manifest.variants
    return [[Sitting(a.problem, a.points, kind_of(a.problem).variant(a.problem, seed, mode, s))
             for a in assignment.written] for s in STUDENTS]


def _exam_paper(bank: Bank, spec: ExamSpec) -> list[list[Sitting]]:
    problems = [item.problem for item in draw_exam(bank, spec).items]  # the same problems for every student
    return [[Sitting(p, p.points, instantiate(p, spec.seed, s)) for p in problems] for s in STUDENTS]


@pytest.fixture(scope="module")
def papers(bank: Bank) -> dict[str, list[list[Sitting]]]:
    out = {"the whole bank": _bank_paper(bank)}
    out.update({name: _assignment_paper(bank, name) for name in ASSIGNMENTS})
    out.update({f"exam: {name}": _exam_paper(bank, spec) for name, spec in EXAMS.items()})
    return out


VERDICTS = {"all true": guessing.always(True), "all false": guessing.always(False)}
PICKS = {"the longest": guessing.longest, "the shortest": guessing.shortest, "the first shown": guessing.first,
         "the last shown": guessing.last, "the first shown between the length ends": guessing.between_ends,
         # issue 47: the form of the text and its overlap with the question
         **{f"the first shown {'with' if prefer else 'without'} {form.name}": guessing.by_form(form.has, prefer)
            for form in cues.FORMS for prefer in (True, False)},
         "the most words shared with the question": guessing.most_overlap,
         "the fewest words shared with the question": guessing.least_overlap}


def cue_verdicts(bank: Bank) -> dict:
    """Issue 47's verdict cues: each cue of the statement learned from the bank's key, all of them read together,
    and the test-wise rules about hedging and absolute words."""
    return {**{f"the usual verdict of {name}": guessing.learned_cue(bank, cue) for name, cue in cues.VERDICT_CUES.items()},
            "the verdict most of those cues give": guessing.cues_together(bank),
            "true when hedged": guessing.hedged_true, "false when absolute": guessing.absolute_false}
NUMBERS = (0, 1, 2, 0.5, 4)  # typed into every numeric part and follow-up
SHAPES = ("n x d", "n x n", "n x d_k", "d x d")  # typed for every shape


def _slack(paper, part: str, total: float) -> float:
    """5 points of the part, or one question where a paper holds so few that one is worth more (`total` is the
    part's points summed over the students)."""
    return max(MARGIN, guessing.largest_question(paper, part) * len(paper) / total)


@pytest.mark.slow
@pytest.mark.parametrize("scope", ["the whole bank", *ASSIGNMENTS, *(f"exam: {name}" for name in EXAMS)])
def test_no_guessing_strategy_earns_more_than_chance_and_five_points(bank: Bank, papers, scope: str) -> None:
    """Every strategy of issue 24 through the grader: the verdicts (all true, all false, the cue), the picks (by
    length at either end, by place, between the ends), constants (numbers, shapes) and the strongest combination
    of them; each earns at most chance plus 5 points of what it answers, or one question more where a paper is
    too small for 5 points to hold one."""
    paper = papers[scope]
    verdicts = {**VERDICTS, "the cue": guessing.cue_guess(bank)}
    scores = {name: guessing.verdict_score(paper, guess) for name, guess in verdicts.items()}
    assert scores["all true"].total > 0, f"{scope} holds no true/false statement to guess"
    for name, score in scores.items():
        assert score.share <= 0.5 + _slack(paper, "verdicts", score.total), \
            f"{scope}: answering {name} earns {score.share:.1%} of the verdicts"
    best_single = max(scores["all true"].earned, scores["all false"].earned)
    assert scores["the cue"].earned <= best_single + 1e-9, f"{scope}: the wording tells the verdict"
    for name, guess in cue_verdicts(bank).items():
        score = guessing.verdict_score(paper, guess)
        assert score.share <= 0.5 + _slack(paper, "verdicts", score.total), \
            f"{scope}: answering {name} earns {score.share:.1%} of the verdicts"
    for name, pick in PICKS.items():
        score = guessing.choice_score(paper, pick)
        assert score.total > 0, f"{scope} holds no choice question to guess"
        assert score.share <= score.chance_share + _slack(paper, "choices", score.total), \
            f"{scope}: picking {name} choice earns {score.share:.1%} against {score.chance_share:.1%} by chance"
    constants = [Guesser(number=x) for x in NUMBERS] + [Guesser(shape=x) for x in SHAPES]
    for guesser in constants:
        score = guessing.paper_score(paper, guesser)
        assert score.share <= _slack(paper, "all", score.total), \
            f"{scope}: typing {guesser.number if guesser.shape is None else guesser.shape} everywhere earns " \
            f"{score.share:.1%} of the written points"
    combined = guessing.best_combination(paper, [*verdicts.values(), *cue_verdicts(bank).values()], PICKS.values(),
                                         NUMBERS, SHAPES)
    score = guessing.paper_score(paper, combined)
    assert score.share <= score.chance_share + _slack(paper, "all", score.total), \
        f"{scope}: the best combination earns {score.share:.1%} of the written points against " \
        f"{score.chance_share:.1%} by chance"


def test_the_guessers_are_scored_by_the_grader(bank: Bank) -> None:
    """The scores are real points: a statement's verdict alone earns half of it, a follow-up's letter the other
    half; and a prompt of a file's own, such as the bank's "if false, correct it", is not what students read."""
    statement = bank.get("ffn-quadratic")  # false, 2 points
    paper = [[Sitting(statement, 2.0, None)]]
    assert guessing.verdict_score(paper, guessing.always(False)).earned == 1.0
    assert guessing.verdict_score(paper, guessing.always(True)).earned == 0.0
    right = bank.get("heads-reduce-cost")
    order = kind_of(right).variant(right, 0, "same", None)
    score = guessing.choice_score([[Sitting(right, 2.0, order)]], lambda shown, asked: right.follow_up.answer)
    assert (score.earned, score.total, score.chance) == (1.0, 1.0, 0.25)
    leaky = {pid: p.model_copy(update={"prompt": "If it is false, correct it." if not p.answer else "Say why."})
             for pid, p in bank.problems.items() if kind_of(p).truth(p) is not None}
    cue = guessing.cue_guess(Bank(leaky, {pid: bank.paths[pid] for pid in leaky}, bank.root))
    old_paper = [[Sitting(p, p.points, None) for p in leaky.values()]]
    assert guessing.verdict_score(old_paper, cue).earned == max(
        guessing.verdict_score(old_paper, guessing.always(v)).earned for v in (True, False))


def test_no_student_text_shows_a_correction_or_a_reason(bank: Bank) -> None:
    """`correction` and `reason` are the key's: the release, the notebook, papers, the drill and quizzes never
    show them before the answer is in."""
    checked = 0
    for problem in bank.problems.values():
        if kind_of(problem).truth(problem) is None:
            continue
        for route, text in student_texts(kind_of(problem), problem).items():
            for key_only in (problem.correction, problem.reason):
                assert not key_only or key_only not in text, (problem.id, route)
            checked += 1
    assert checked >= 28 * 8


def test_the_built_release_holds_no_correction_or_reason(bank: Bank, built_numpy) -> None:
    student = built_numpy.out / "student"
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in student.rglob("*") if p.is_file()}
    statements = [a.problem for a in built_numpy.assignment.written if kind_of(a.problem).truth(a.problem) is not None]
    assert len(statements) >= 6
    for problem in statements:
        for key_only in filter(None, (problem.correction, problem.reason)):
            leaked = [str(p.relative_to(student)) for p, text in texts.items() if key_only in text]
            assert leaked == [], (problem.id, leaked)
        assert any(problem.statement in text for text in texts.values()), problem.id  # the statement is there


# ----------------------------------------------------------- the rules that keep it so


THREE_FALSE = "title: All false\ntrack: numpy\nseed: 1\nproblems: [rnn-sequential, heads-reduce-cost, ffn-quadratic]\n"


def test_build_refuses_an_assignment_whose_statements_are_all_false(bank: Bank, tmp_path: Path) -> None:
    manifest = tmp_path / "all-false.yaml"
    manifest.write_text(THREE_FALSE)
    with pytest.raises(QkvError) as err:
        resolve_assignment(manifest, bank)
    assert err.value.where == str(manifest) and "\n" not in str(err.value)
    assert "0 true (0 points) and 3 false (6 points), so answering all false earns 100%" in str(err.value)
    result = CliRunner().invoke(main, ["build", str(manifest), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = said(result.stderr)
    assert len(lines) == 1 and str(manifest) in lines[0] and "unbalanced" in lines[0], lines
    assert not (tmp_path / "out").exists()
    # one more true statement than false ones is as near half as three can be
    manifest.write_text(THREE_FALSE.replace("heads-reduce-cost, ffn-quadratic", "rnn-batch-parallel, head-roles"))
    assert resolve_assignment(manifest, bank).max_points == 5


@pytest.mark.parametrize("true, false, balanced", [
    ([2.0], [], True),  # one statement cannot be balanced further
    ([2.0], [2.0, 2.0], True),
    ([], [2.0, 2.0], False),
    ([1.0] * 11, [1.0] * 9, True),  # 55% true
    ([1.0] * 12, [1.0] * 8, False),  # 60% true
    ([2.0, 2.0], [1.0, 1.0], True),  # one statement's points apart
    ([2.0, 2.0, 2.0], [1.0, 1.0], False),  # true holds three quarters of the points
])
def test_the_paper_rule_weighs_statements_by_their_points(bank: Bank, true, false, balanced) -> None:
    yes, no = bank.get("rnn-batch-parallel"), bank.get("rnn-sequential")
    items = [(yes, p) for p in true] + [(no, p) for p in false]
    assert (measures.paper_balance_finding(items) is None) == balanced


def _choice_problem(pid: str, topic: str, right: str, others: list[str]) -> str:
    choices = "\n".join([f"  - {{id: idea-{pid}, text: \"{right}\"}}"] +
                        [f"  - {{id: other-{i}, text: \"{t}\", misconception: \"not it\"}}" for i, t in enumerate(others)])
    return (f"id: {pid}\ntitle: Lengths {pid}\nkind: multiple_choice\ntopic: {topic}\npoints: 1\ndifficulty: 1\n"
            f"source: \"test\"\nprompt: \"Which of these is the one?\"\nchoices:\n{choices}\nanswer: idea-{pid}\n"
            "solution: \"The one is the one.\"\n")


@pytest.mark.parametrize("end, right", [("shortest", "Short."), ("longest", "The right one, far longer than the rest.")])
def test_validate_refuses_a_topic_whose_right_choices_sit_at_one_end(tmp_path: Path, end: str, right: str) -> None:
    for n in range(3):
        (tmp_path / f"pick-{n}.yaml").write_text(_choice_problem(f"pick-{n}", "lengths/ends", right,
                                                                 ["A wrong one of middle size.", "Another wrong one."]))
    report = load_bank(tmp_path)
    assert report.errors == []
    found = [str(f) for f in validate_bank(report.bank)]
    assert len(found) == 1 and f"the right choice is the {end} (or ties for it) in 3 of the 3 choice questions" \
        in found[0] and found[0].startswith(str(tmp_path / "pick-0.yaml")), found
    warned = [str(w) for w in bank_warnings(report.bank)]
    assert any(f"the {end}" in w and "pick-2" in w for w in warned), warned
    # one of three at an end is what chance gives: neither refused nor warned about
    for n in (1, 2):
        (tmp_path / f"pick-{n}.yaml").write_text(_choice_problem(
            f"pick-{n}", "lengths/ends", "A right one of middle size.", ["Wrong, short.", "A wrong one, the longest of all."]))
    assert validate_bank(load_bank(tmp_path).bank) == []
    assert measures.length_warnings(load_bank(tmp_path).bank) == []


@pytest.mark.parametrize("texts, end", [
    ({"renormalised": "40/3", "zeroed-after": "20/3", "unmasked": "170/3", "undefined": "undefined (0/0)"}, "shortest"),
    ({"renormalised": "40/3", "zeroed-after": "20/3", "unmasked": "170/3", "undefined": "0/0"}, None),
    ({"renormalised": "40/3 (13.3)", "zeroed-after": "20/3", "unmasked": "170/3", "undefined": "0/0"}, "longest"),
])
def test_a_right_choice_at_either_end_of_the_lengths_is_found_ties_included(texts, end) -> None:
    """Both ends, ties included: mask-before-softmax's right choice tied for the shortest, which the old check
    (the longest by a clear margin) never named."""
    assert measures.length_end(measures.ChoiceSet("mask-before-softmax", "choices", texts, "renormalised")) == end


def test_the_right_choices_sit_at_each_end_about_as_often_as_chance_puts_them(bank: Bank) -> None:
    """About a quarter of the right choices at each end and half between them, as among 4 choices by chance: a
    bank that kept every right choice between the ends (as this one did) gave a guesser who drops the longest and
    the shortest half of every four-choice question."""
    sets = list(measures.choice_sets(bank))
    assert len(sets) >= 36
    where = {end: sum(measures.length_end(c) == end for c in sets) / len(sets) for end in ("longest", "shortest")}
    assert all(0.2 <= share <= 0.3 for share in where.values()), where
    assert measures.length_warnings(bank) == []


def test_dropping_the_length_ends_is_played_and_scored(bank: Bank) -> None:
    """The guesser who drops both ends earns half of a four-choice question whose right choice sits between them,
    and nothing where it sits at an end; first and last are read in each student's own order."""
    ends = {c.problem_id: measures.length_end(c) for c in measures.choice_sets(bank)
            if c.field == "choices" and len(c.texts) == 4}
    middle, end = (bank.get(next(pid for pid, where in ends.items() if where == wanted)) for wanted in (None, "longest"))
    paper = [[Sitting(p, p.points, kind_of(p).variant(p, 0, "per_student", s)) for p in (middle, end)]
             for s in STUDENTS]
    one = lambda p: [[row[i]] for row in paper for i in range(2) if row[i].problem is p]  # noqa: E731
    assert 0.4 <= guessing.choice_score(one(middle), guessing.between_ends).share <= 0.6
    assert guessing.choice_score(one(end), guessing.between_ends).earned == 0
    assert guessing.choice_score(one(end), guessing.longest).share == 1.0
    for pick in (guessing.first, guessing.last):
        assert 0.15 <= guessing.choice_score(paper, pick).share <= 0.35


def test_constants_are_typed_in_every_blank_and_scored_by_the_grader(bank: Bank) -> None:
    """A constant fills every numeric part (a vector or matrix of it where one is asked), every follow-up number
    and every shape, and earns what the grader gives it."""
    shape, follow, numeric = bank.get("output-shape"), bank.get("attention-op-parameters"), bank.get("layer-norm-by-hand")
    variant = kind_of(numeric).variant(numeric, 0, "same", None)
    typed = guessing.typed_by(Sitting(numeric, 3.0, variant), Guesser(number=1))
    assert typed["normalised"] == [1.0] * len(variant.answers["normalised"]) and typed["mean"] == 1
    paper = [[Sitting(shape, shape.points, None), Sitting(follow, follow.points, None)]]
    assert guessing.paper_score(paper, Guesser(shape="n x d_v")).earned == shape.points
    assert guessing.paper_score(paper, Guesser(number=0)).earned == follow.points / 2  # the follow-up's half
    assert guessing.paper_score(paper, Guesser(number=1, shape="n x n")).earned == 0
    both = guessing.best_combination(paper, [guessing.always(not follow.answer), guessing.always(follow.answer)],
                                     [guessing.first], [1, 0], ["n x n", "n x d_v"])
    assert guessing.paper_score(paper, both).earned == shape.points + follow.points


# ------------------------------------------------------ cues of form (issue 47, item 3)


FORM_CUES = {  # a form -> a right choice written in it, two distractors without it, two with it
    "explanation punctuation": ("Rows: the keys of one query.", ["Columns, one key's queries.", "The whole grid."],
                                ["Columns: one key's queries.", "The grid; all of it."]),
    "a hedging word": ("It may differ by the row.", ["It is the same for rows.", "It is set by row size."],
                       ["It may be fixed by rows.", "It often equals one."]),
    "an absolute word": ("It always sums to one.", ["It sums to what it is.", "It sums to n by rows."],
                         ["It never sums to one.", "It is every row's sum."]),
    "word overlap": ("The softmax axis of the score table.", ["The columns of the keys.", "The features of a value."],
                     ["The score table's softmax axis.", "The axis of the softmax score table."]),
}
LONG_PLAIN = "The diagonal of the grid, from its top left to its bottom right."  # keeps the right one off the ends
PROMPT = "Which axis of the score table does the softmax run along?"


def _form_problem(n: int, right: str, others: list[str]) -> str:
    return _choice_problem(f"form-{n}", "cues/form", right, [*others, LONG_PLAIN]).replace(
        "Which of these is the one?", PROMPT)


@pytest.mark.parametrize("form", sorted(FORM_CUES))
def test_validate_refuses_a_topic_whose_right_choices_differ_in_form(tmp_path: Path, form: str) -> None:
    """Three questions whose right choice alone has the form: a guesser who prefers it earns 75 points above
    chance, and validate names the form; with the form on two distractors too, nothing is refused."""
    right, plain, formed = FORM_CUES[form]
    for n in range(3):
        (tmp_path / f"form-{n}.yaml").write_text(_form_problem(n, right, plain))
    found = [str(f) for f in validate_bank(load_bank(tmp_path).bank)]
    assert len(found) == 1 and found[0].startswith(str(tmp_path / "form-0.yaml")), found
    assert "earns 75% of the 3 choice questions of the topic cues above chance" in found[0], found
    assert form in found[0], found
    for n in range(3):
        (tmp_path / f"form-{n}.yaml").write_text(_form_problem(n, right, formed))
    assert [str(f) for f in validate_bank(load_bank(tmp_path).bank)] == []


def test_validate_refuses_a_bank_whose_follow_up_form_tells_the_verdict(bank: Bank) -> None:
    """The review's cue (a number follow-up meaning true) made total: every number follow-up true, every other
    false. The shipped bank's statements pass."""
    statements = {pid: p for pid, p in bank.problems.items() if kind_of(p).truth(p) is not None}
    assert cues.verdict_findings(Bank(statements, {pid: bank.paths[pid] for pid in statements}, bank.root)) == []
    told = {pid: p.model_copy(update={"answer": p.follow_up.form == "number"}) for pid, p in statements.items()}
    found = cues.verdict_findings(Bank(told, {pid: bank.paths[pid] for pid in told}, bank.root))
    assert len(found) == 1 and found[0].startswith(
        f"true_false: the follow-up's form tells the verdict of {len(told)} of {len(told)} statements"), found


def test_the_shipped_choices_show_no_form_cue(bank: Bank) -> None:
    """Over the bank's choice questions each form earns at most 5 points above chance, by the expected share (the
    review found the right choice alone written as "claim: reason" in 11 of 36 sets: 25 points above chance)."""
    questions = cues.questions(bank)
    assert len(questions) >= 36
    for strategy in cues.strategies():
        gain, _ = cues.lean(questions, strategy)
        assert gain <= cues.BANK_MARGIN, (strategy.name, gain)
    assert cues.choice_findings(bank) == {}
