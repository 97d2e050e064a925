"""The written-answer policy for repeated attempts (grade/written_policy.py): the rule on one item, fresh numbers per
attempt graded on their own seed, the rule applied over a student's attempts, what a student is shown, the manifest's
word for it, and the gradebook of format 4 that kept no seed, migrated on SQLite and PostgreSQL and read as it is."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.assemble.manifest import Manifest
from autograder.bundle import GradingBundle, WrittenProblem
from autograder.grade.gradebook import FORMAT, GRADEBOOK_FILE, Gradebook, NewAttempt
from autograder.grade.score import grade_submission, score_written
from autograder.grade.written_policy import (HIDDEN_MESSAGE, Try, WrittenPolicy, WrittenRule, applied, attempt_seed,
                                             fresh_numbers, item_fraction, masked, shown_score)
from autograder.kinds import choices as ch
from autograder.kinds import kind_of
from autograder.grade.intake import Submission
from autograder.sandbox import SubmissionRun
from qkv_runtime.judge import letter_of

FIRST, PENALTY, HIDDEN = (WrittenPolicy(rule=r) for r in WrittenRule)
OLD = Path(__file__).parents[1] / "fixtures" / "gradebooks" / "format4-before-one-path"  # write_format4.py says how

tries = st.lists(st.builds(Try, st.booleans(), st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from("abcd")),
                 min_size=1, max_size=12)


# ------------------------------------------------------------------ the rule on one item


@given(tries, tries)
def test_first_counts_the_first_answer_whatever_comes_after(before, after):
    answered = [t for t in before if t.answered]
    want = answered[0].fraction if answered else before[-1].fraction
    assert item_fraction(FIRST, before) == want
    if answered:
        assert item_fraction(FIRST, before + after) == want


@given(tries)
def test_hidden_counts_the_latest_answer(history):
    assert item_fraction(HIDDEN, history) == history[-1].fraction


@given(tries, st.floats(0, 100))
def test_penalty_takes_its_share_per_different_wrong_answer_before(history, percent):
    policy = WrittenPolicy(rule=WrittenRule.PENALTY, penalty_percent=percent)
    current = history[-1]
    wrong = {t.answer for t in history[:-1] if t.answered and t.fraction < 1 and t.answer != current.answer}
    got = item_fraction(policy, history)
    assert 0.0 <= got <= current.fraction
    if current.answered:
        assert got == pytest.approx(max(0.0, current.fraction - percent / 100 * len(wrong)))
    else:
        assert got == current.fraction


@settings(max_examples=50)
@given(st.integers(2, 5), st.data())
def test_elimination_earns_chance_under_first_and_what_the_penalty_leaves_under_penalty(n, data):
    """A student who knows nothing tries the choices of an n-choice item one by one, told each time whether the
    last was right: under `first` every order earns what its first try did (on average 1/n, chance); under
    `penalty` the right one, found at try k, earns 1 - share * (k - 1)."""
    order = data.draw(st.permutations(range(n)))
    right = data.draw(st.integers(0, n - 1))
    played: list[Try] = []
    for choice in order:
        played.append(Try(True, 1.0 if choice == right else 0.0, str(choice)))
        if choice == right:
            break
    assert item_fraction(FIRST, played) == (1.0 if order[0] == right else 0.0)
    assert item_fraction(PENALTY, played) == pytest.approx(max(0.0, 1 - 0.5 * (len(played) - 1)))


def test_the_default_is_hidden_and_the_manifest_takes_a_word_or_the_penalty_share():
    base = {"title": "Tiny", "track": "numpy", "seed": 1, "problems": ["kv-cache-memory"]}
    assert Manifest.model_validate(base).written_attempts.rule is WrittenRule.HIDDEN
    assert Manifest.model_validate({**base, "written_attempts": "first"}).written_attempts == FIRST
    taken = Manifest.model_validate({**base, "written_attempts": {"rule": "penalty", "penalty_percent": 25}})
    assert taken.written_attempts == WrittenPolicy(rule=WrittenRule.PENALTY, penalty_percent=25)
    for bad in ("sometimes", {"rule": "penalty", "penalty_percent": 120}, {"rule": "first", "share": 3}):
        with pytest.raises(ValueError, match="written_attempts"):
            Manifest.model_validate({**base, "written_attempts": bad})
    for policy in (FIRST, PENALTY, HIDDEN):  # one sentence each, as the assignment page says it
        assert policy.sentence().count(". ") == 0 and policy.sentence().endswith(".")


# ------------------------------------------------------------------ fresh numbers


def test_attempt_seeds_start_at_the_assignments_and_differ_after():
    seeds = [attempt_seed(7, "s1", n) for n in range(20)]
    assert seeds[0] == 7 and len(set(seeds)) == 20 and all(0 <= s < 2 ** 31 for s in seeds)
    assert attempt_seed(7, "s2", 3) != seeds[3]


@pytest.fixture(scope="module")
def tiny(bank) -> GradingBundle:
    """A numeric problem with numbers of its own (kv-cache-memory) and a true/false statement (a fixed item)."""
    written = (WrittenProblem("kv-cache-memory", 3.0, bank.get("kv-cache-memory")),
               WrittenProblem("training-vs-generation", 2.0, bank.get("training-vs-generation")))
    return GradingBundle("tiny", "Tiny", "numpy", 1, "same", None, (), written, tuple(w.id for w in written))


def right_answer(bundle: GradingBundle, written: WrittenProblem, seed: int, student: str):
    """The key's answer of the variant `seed` draws, as a student types it."""
    problem = written.problem
    kind = kind_of(problem)
    variant = kind.variant(problem, seed, bundle.variants, student)
    if problem.kind == "numeric":
        return {part.name: np.asarray(variant.answers[part.name]).tolist() for part in problem.parts}
    follow = problem.follow_up
    order = [c.id for c in follow.choices]
    shown = ch.order_in(variant, problem.id, order)
    right = next(c.id for c in follow.choices if not c.misconception)
    return {"answer": "true" if problem.answer else "false", "follow_up": letter_of(shown, right)}


def test_a_problem_with_numbers_of_its_own_is_graded_on_the_attempts_numbers(tiny):
    numeric, statement = tiny.written
    assert fresh_numbers(numeric.problem) and not fresh_numbers(statement.problem)
    later = attempt_seed(tiny.seed, "s1", 4)
    answer = right_answer(tiny, numeric, later, "s1")
    assert score_written(numeric, answer, tiny, "s1", later).score == 3.0
    assert score_written(numeric, answer, tiny, "s1").score < 3.0  # the release's numbers are another variant
    first = right_answer(tiny, numeric, attempt_seed(tiny.seed, "s1", 0), "s1")
    assert score_written(numeric, first, tiny, "s1").score == 3.0
    # a fixed item is judged the same whatever the attempt's seed
    typed = right_answer(tiny, statement, tiny.seed, "s1")
    assert score_written(statement, typed, tiny, "s1", later).score == 2.0

    run = SubmissionRun("ok", "", {}, {"kv-cache-memory": answer}, (), "")
    handed = Submission("s1", Path("tiny.py"), "d", None, "ok", "", seed=later)
    graded = grade_submission(tiny, handed, run)
    assert graded.seed == later and graded.problems[0].score == 3.0


def graded_with(bundle: GradingBundle, verdict: str, student: str = "s1"):
    answers = {"training-vs-generation": {"answer": verdict, "follow_up": "a"}}
    run = SubmissionRun("ok", "", {}, answers, (), "")
    return grade_submission(bundle, Submission(student, Path("tiny.py"), verdict, None, "ok", ""), run)


def judge(bundle: GradingBundle):
    return lambda written, answer: score_written(written, answer, bundle, "s1")


def test_the_rule_over_a_students_attempts(tiny):
    right_word = "true" if tiny.written[1].problem.answer else "false"
    wrong_word = "false" if right_word == "true" else "true"
    wrong, right = graded_with(tiny, wrong_word), graded_with(tiny, right_word)
    fixed = {p.problem_id: p for p in right.problems}["training-vs-generation"]
    assert fixed.score > 0  # the verdict alone earns part of it
    earlier = [wrong.answers]
    assert applied(HIDDEN, tiny, right, earlier, judge(tiny)) == right
    first = applied(FIRST, tiny, right, earlier, judge(tiny))
    assert {p.problem_id: p.score for p in first.problems}["training-vs-generation"] == \
        {p.problem_id: p.score for p in wrong.problems}["training-vs-generation"]
    assert first.score == wrong.score
    penalised = applied(PENALTY, tiny, right, earlier, judge(tiny))
    got = {p.problem_id: p.score for p in penalised.problems}["training-vs-generation"]
    assert got == pytest.approx(max(0.0, fixed.score - 0.5 * 2.0))
    assert applied(FIRST, tiny, right, [], judge(tiny)) == right  # the first attempt is its own first answer


def test_a_student_is_shown_no_verdict_of_a_fixed_item_while_hidden(tiny):
    right_word = "true" if tiny.written[1].problem.answer else "false"
    result = graded_with(tiny, right_word)
    shown = masked(HIDDEN, tiny, result, closed=False)
    fixed = {p.problem_id: p for p in shown.problems}["training-vs-generation"]
    assert (fixed.score, fixed.max_score, fixed.message) == (0.0, 0.0, HIDDEN_MESSAGE)
    assert (shown.score, shown.max_score) == (shown_score(HIDDEN, tiny, result), 3.0)
    assert masked(HIDDEN, tiny, result, closed=True) == result
    assert masked(FIRST, tiny, result, closed=False) == result


# ------------------------------------------------------------------ the gradebook of format 4


def test_a_format_4_gradebook_is_read_as_it_is_and_migrated_when_opened_for_writing(tmp_path):
    for copy in ("read", "write"):
        shutil.copytree(OLD, tmp_path / copy)
    with Gradebook(tmp_path / "read" / GRADEBOOK_FILE, read_only=True) as book:
        assert book.format == 4
        kept = book.attempt("a" * 22)
        assert kept.final == 3.0 and kept.seed is None and kept.shown is None
    with Gradebook(tmp_path / "write" / GRADEBOOK_FILE) as book:
        assert book.format == FORMAT == 5
        assert book.attempt("a" * 22) == kept  # what was kept reads the same
        assert book.accept(NewAttempt("b" * 22, "s3", 1e9, "tiny.py", "d", b"x = 1\n"), 20, 20,
                           lambda made: attempt_seed(1, "s3", made)) is None
        assert book.attempt("b" * 22).seed == attempt_seed(1, "s3", 1)  # s3's second attempt
    with sqlite3.connect(tmp_path / "write" / GRADEBOOK_FILE) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 5
    db.close()


def test_a_format_4_gradebook_is_migrated_on_postgresql(postgres_db):
    with Gradebook(postgres_db, assignment="hw-1") as made:  # made as format 4 made it: no seed, no shown
        made.accept(NewAttempt("a" * 22, "s1", 1e9, "hw.py", "d", b"x = 1\n"), 20, 20)
        with made._db.write():
            made._db.execute("ALTER TABLE attempts DROP COLUMN seed")
            made._db.execute("ALTER TABLE gradings DROP COLUMN shown")
        made._db.set_format(4)
    with Gradebook(postgres_db, assignment="hw-1", read_only=True) as book:
        assert book.format == 4 and book.attempt("a" * 22).seed is None
    with Gradebook(postgres_db, assignment="hw-1") as book:
        assert book.format == 5
        assert book.accept(NewAttempt("b" * 22, "s1", 1e9 + 1, "hw.py", "d", b"x = 2\n"), 20, 20,
                           lambda made: attempt_seed(1, "s1", made)) is None
        assert (book.attempt("a" * 22).seed, book.attempt("b" * 22).seed) == (None, attempt_seed(1, "s1", 1))
    with Gradebook(postgres_db, assignment="hw-1") as book:  # opened again: nothing left to migrate
        assert book.format == 5
