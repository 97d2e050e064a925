"""`qkv practice` with a memory: the history file it keeps, the drill resuming from it and targeting a misconception
the student holds with the network off, and every damaged, foreign or huge history put aside in one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.exam.drill import by_the_rule, in_order, run_practice
from autograder.exam.select import ExamSpec, draw_exam, instantiate
from autograder.kinds.numeric.parts import part_answer
from autograder.kinds.resolve import resolve
from autograder.kinds.numeric.render import fmt
from autograder.practice.catalogue import catalogue
from autograder.practice.history import MAX_BYTES, History, Loaded, Pending, encode, load_history
from autograder.practice.rule import Try
from conftest import QKV, ROOT, no_network_prefix, said

FIXTURES = ROOT / "tests" / "fixtures" / "practice"
T0 = datetime(2027, 3, 1, 9, 0, tzinfo=timezone.utc)


def scripted(answers: list[str]):
    typed, said_lines = list(answers), []

    def ask(prompt: str) -> str:
        said_lines.append(prompt)
        if not typed:
            raise EOFError
        return typed.pop(0)

    return ask, said_lines.append, said_lines


def clock():
    ticks = iter(T0 + timedelta(minutes=i) for i in range(10_000))
    return lambda: next(ticks)


def letter_of(variant, choice_id: str) -> str:
    return "ABCD"[variant.params["order"].index(choice_id)]


# ------------------------------------------------------------------- in-process


def test_a_misconception_named_is_targeted_next_on_a_fresh_variant(bank):
    pool = {p.id: p for p in bank.problems.values() if p.topic.startswith("attention") and not p.kind == "implement"}
    problem = bank.get("why-scale")
    message = next(c.misconception for c in problem.choices if c.id == "rows-sum-to-one")
    seeds = iter(range(1001, 1100))
    kept: list[History] = []
    ask, say, said_lines = scripted([letter_of(instantiate(problem, 11, None), "rows-sum-to-one")])
    summary = run_practice(pool, catalogue(pool.values()), 3, History((), Pending("why-scale", 11)),
                           by_the_rule(catalogue(pool.values()), lambda: next(seeds)), kept.append, ask, say, clock())
    text = "\n".join(said_lines)
    assert "(resumed where you stopped)" in text and f"Misconception: {message}" in text
    assert f"(chosen for a misconception you hold: {message})" in text
    target = bank.get(kept[-1].pending.problem_id)
    assert message in catalogue([target])[0].detects and f"[2/3] {target.title}" in text
    assert summary.stopped_early and [s.misconceptions for s in summary.scores] == [(message,)]
    last = kept[-1]
    assert [(t.problem_id, t.seed, t.score, t.misconceptions) for t in last.tries] == [("why-scale", 11, 0.0, (message,))]
    assert last.pending == Pending(target.id, 1001)  # a new seed for the new try
    assert "Misconceptions you hold" in said_lines[-1] and message in said_lines[-1]


def test_right_answers_raise_mastery_and_clear_the_misconception(bank):
    pool = {"why-scale": bank.get("why-scale")}
    problem = pool["why-scale"]
    message = next(c.misconception for c in problem.choices if c.id == "rows-sum-to-one")
    history = History((Try("why-scale", 3, T0 - timedelta(days=1), 0.0, (message,)),), None)
    seeds = iter([21, 22, 23])
    answers = [letter_of(instantiate(problem, s, None), problem.answer) for s in (21, 22)]
    kept: list[History] = []
    ask, say, said_lines = scripted(answers)
    run_practice(pool, catalogue(pool.values()), 2, history, by_the_rule(catalogue(pool.values()), lambda: next(seeds)),
                 kept.append, ask, say, clock())
    text = "\n".join(said_lines)
    assert text.count(f"(chosen for a misconception you hold: {message})") == 2
    assert "mastery of this problem: 20%" in text and "mastery of this problem: 60%" in text
    assert [t.seed for t in kept[-1].tries] == [3, 21, 22] and kept[-1].pending is None
    assert "No misconception held." in said_lines[-1] and "60%  attention" in said_lines[-1]


def test_a_drawn_drill_keeps_its_order_and_its_tries(bank):
    drill = draw_exam(bank, ExamSpec(kinds=("true_false",), count=2, seed=4))
    pool = {item.problem.id: item.problem for item in drill.items}
    kept: list[History] = []
    ask, say, said_lines = scripted(["skip", "skip"])
    run_practice(pool, catalogue(pool.values()), 2, History(), in_order(list(drill.items), 4), kept.append, ask, say,
                 clock())
    assert [(t.problem_id, t.seed, t.score) for t in kept[-1].tries] == [(i.problem.id, 4, 0.0) for i in drill.items]


# ------------------------------------------------------- as a student, offline


@pytest.fixture(scope="module")
def netless() -> list[str]:
    """A command prefix that runs its command with no network."""
    prefix = no_network_prefix()
    if not prefix:
        pytest.fail("neither `unshare -n` nor bwrap can take the network away here")
    return prefix


def practise(folder: Path, *args: str, answers: list[str], prefix: list[str] = (), umask: int = 0o022
             ) -> subprocess.CompletedProcess:
    run = subprocess.run([*prefix, str(QKV), "practice", *args], input="\n".join(answers) + "\n", cwd=folder,
                         capture_output=True, text=True, timeout=120, umask=umask)
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr
    return run


def problem_block(stdout: str, title: str) -> str:
    """What the drill showed of a problem: its heading and its text, up to the first prompt."""
    start = stdout.index(title)
    return stdout[start:stdout.index("> ", start)]


@pytest.mark.slow
def test_offline_the_drill_resumes_from_its_history_and_targets_a_held_misconception(bank, netless, tmp_path):
    spec = ExamSpec(topics=("attention/softmax",), kinds=("numeric",), count=1, seed=7)
    item = draw_exam(bank, spec).items[0]
    problem, variant = item.problem, item.variant
    misconception = problem.misconceptions[0]
    wrong = resolve(misconception.compute)(**variant.params)
    first = practise(tmp_path, "--topics", "attention/softmax", "--kinds", "numeric", "--count", "1", "--seed", "7",
                     answers=[fmt(wrong["weights"], 3), part_answer(problem.parts[1], variant.answers["output"])])
    assert "Misconception:" in first.stdout
    history_file = tmp_path / "qkv-practice-history.json"
    assert stat.S_IMODE(history_file.stat().st_mode) == 0o600

    # the network off from here: the next problem is the one that can show the misconception, and quitting leaves it
    detectors = {p.id for p in catalogue(bank.problems.values()) if misconception.message in p.detects}
    assert problem.id in detectors
    offline = ("--topics", "attention/softmax", "--kinds", "numeric", "--count", "1")
    second = practise(tmp_path, *offline, answers=["quit"], prefix=netless)
    assert "Misconceptions you hold" in second.stdout and misconception.message in second.stdout
    assert f"(chosen for a misconception you hold: {misconception.message})" in second.stdout
    pending = json.loads(history_file.read_text())["pending"]
    target = bank.get(pending["problem"])
    assert target.id in detectors and pending["seed"] != 7  # a fresh variant
    shown = problem_block(second.stdout, f"[1/1] {target.title}")

    # again: the same problem on the same variant, where the student stopped; answered right this time
    fresh = instantiate(target, pending["seed"], None)
    third = practise(tmp_path, *offline, prefix=netless,
                     answers=[part_answer(part, fresh.answers[part.name]) for part in target.parts])
    assert "(resumed where you stopped)" in third.stdout
    assert problem_block(third.stdout, f"[1/1] {target.title}") == shown
    assert third.stdout.count("✓ correct") == len(target.parts) and "mastery of this problem: 20%" in third.stdout
    assert f"(named in {problem.id}; 1/2 right answers since)" in third.stdout  # still held: one right answer of the two that clear it
    kept = json.loads(history_file.read_text())
    assert [(t["problem"], t["seed"], t["score"]) for t in kept["tries"]] == [
        (problem.id, 7, 0.5), (target.id, pending["seed"], 1.0)]
    assert kept["pending"] is None and stat.S_IMODE(history_file.stat().st_mode) == 0o600


# -------------------------------------------------------- damaged histories


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_a_damaged_or_foreign_history_is_put_aside_for_a_fresh_one(fixture, tmp_path):
    path = tmp_path / fixture
    shutil.copy(FIXTURES / fixture, path)
    loaded = load_history(path)
    assert loaded.history == History() and loaded.message and "\n" not in loaded.message
    assert loaded.message.startswith(f"{path}: ") and loaded.message.endswith("starting a fresh history")
    aside = [p for p in tmp_path.iterdir() if p.name.startswith(fixture + ".aside-")]
    assert len(aside) == 1 and aside[0].read_bytes() == (FIXTURES / fixture).read_bytes() and not path.exists()


def test_a_huge_history_is_not_read_whole(tmp_path):
    path = tmp_path / "history.json"
    with open(path, "wb") as handle:
        handle.truncate(64 * MAX_BYTES)  # sparse: 256 MiB on paper, nothing on disk
    loaded = load_history(path)
    assert loaded.history == History() and "is larger than 4 MiB" in loaded.message
    assert not path.exists()


def test_a_history_that_is_a_folder_or_a_link_is_not_followed(tmp_path):
    (tmp_path / "folder.json").mkdir()
    assert "is not a file" in load_history(tmp_path / "folder.json").message
    target = tmp_path / "elsewhere.json"
    target.write_bytes(encode(History((Try("why-scale", 1, T0, 1.0),), None)))
    (tmp_path / "link.json").symlink_to(target)
    assert "cannot be read" in load_history(tmp_path / "link.json").message
    assert target.exists() and load_history(target).history.tries[0].problem_id == "why-scale"


def test_a_written_history_reads_back_the_same(tmp_path):
    history = History((Try("why-scale", 5, T0, 0.5, ("a", "b")), Try("concat-shape", 2**40, T0, 1.0)),
                      Pending("why-scale", 9))
    path = tmp_path / "h.json"
    path.write_bytes(encode(history))
    assert load_history(path) == Loaded(history)


valid_tries = st.builds(
    Try, st.text(min_size=1, max_size=40), st.integers(0, 2**63 - 1),
    st.datetimes(timezones=st.just(timezone.utc)), st.floats(0, 1),
    st.lists(st.text(min_size=1, max_size=60), max_size=3).map(tuple))


@settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(valid_tries, max_size=8), st.none() | st.builds(Pending, st.text(min_size=1, max_size=40),
                                                                  st.integers(0, 2**63 - 1)))
def test_any_history_written_reads_back(tmp_path, tries, pending):
    history = History(tuple(tries), pending)
    path = tmp_path / "h.json"
    path.write_bytes(encode(history))
    assert load_history(path) == Loaded(history)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode)
       | st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                          st.sampled_from(["format", "version", "tries", "pending", "problem", "seed", "at", "score"]),
                          inner, max_size=5)).map(lambda v: json.dumps(v).encode()))
def test_any_bytes_give_a_history_or_one_line(tmp_path, data):
    path = tmp_path / "any.json"
    path.write_bytes(data)
    loaded = load_history(path)
    if loaded.message is None:
        assert encode(loaded.history)  # what was read is a history that can be written again
    else:
        assert loaded.history == History() and "\n" not in loaded.message and not path.exists()
    for left in tmp_path.iterdir():
        left.unlink()


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["truncated.json", "foreign.json", "huge"])
def test_qkv_practice_says_one_line_and_starts_afresh(fixture, tmp_path):
    path = tmp_path / "qkv-practice-history.json"
    if fixture == "huge":
        path.write_bytes(b'{"format": "qkv-practice-history", "version": 1, "tries": [' + b" " * MAX_BYTES + b"]}")
    else:
        shutil.copy(FIXTURES / fixture, path)
    os.chmod(path, 0o644)
    run = practise(tmp_path, "--kinds", "true_false", "--count", "1", answers=["skip"], umask=0)  # as the guide asks
    lines = said(run.stderr)
    assert len(lines) == 1 and re.fullmatch(
        r"qkv practice: qkv-practice-history\.json: .+; kept as qkv-practice-history\.json\.aside-\d+T\d+; "
        r"starting a fresh history", lines[0]), lines
    assert "No practice kept yet" in run.stdout
    kept = json.loads(path.read_text())
    assert len(kept["tries"]) == 1 and stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.slow
def test_a_history_in_new_folders_is_owner_only_whatever_the_umask(tmp_path):
    practise(tmp_path, "--kinds", "true_false", "--count", "1", "--history", "mine/prep/history.json",
             answers=["skip"], umask=0)
    assert [stat.S_IMODE((tmp_path / p).stat().st_mode) for p in ("mine", "mine/prep", "mine/prep/history.json")] \
        == [0o700, 0o700, 0o600]
