"""benchmarks/practice.py: its arguments, its nothing-lost check against a gradebook written through the service's own
stores (and fooled by none of a lost, a duplicated, a misplaced or a misjudged answer), and a tiny run through
`qkv serve` itself (marked slow: a build and a server) whose figures have the shape docs/benchmarks.md shows.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grade.gradebook.exams import ExamStore
from autograder.grade.gradebook.practice import PracticeStore
from conftest import ROOT


@pytest.fixture(scope="module")
def practice_benchmark():
    spec = importlib.util.spec_from_file_location("benchmark_practice", ROOT / "benchmarks" / "practice.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("argv, said", [(["--students", "0"], "--students must be at least 1"),
                                        (["--answers", "0"], "--answers must be at least 1"),
                                        (["--exam-items", "0"], "--exam-items must be at least 1"),
                                        (["--client-processes", "0"], "--client-processes must be at least 1"),
                                        (["--think", "-1"], "--think must not be negative"),
                                        (["--students", "70000"], "--students must be at most 63500")])
def test_a_practice_benchmark_that_would_measure_nothing_is_refused_before_anything_runs(practice_benchmark, argv,
                                                                                         said, capsys):
    with pytest.raises(SystemExit) as stop:
        practice_benchmark.parse_args(argv)
    assert stop.value.code == 2 and said in capsys.readouterr().err


def test_each_student_comes_from_a_loopback_address_of_their_own(practice_benchmark):
    addresses = [practice_benchmark.address(i) for i in range(600)]
    assert len(set(addresses)) == 600 and all(a.startswith("127.0.") for a in addresses)
    assert "127.0.0.1" not in addresses  # the server's own


def a_class(where: Path, benchmark) -> tuple:
    """Two students' practice answers and exam saves, kept through the stores as the service keeps them, and what
    the clients were told: (the ledger, the store's place)."""
    seen = benchmark.Seen()
    practice, exams = PracticeStore(where), ExamStore(where)
    try:
        for student, right in (("ada", True), ("ben", False)):
            for k in range(2):
                variant = practice.give(student, "some-problem", 10 + k, "chosen", 1000.0 + k)
                typed = {"the answer": "3" if right else "4"}
                assert practice.answer(variant, student, 1001.0 + k, 1.0 if right else 0.0, (), typed)
                seen.practice[variant] = (student, typed, right)
            sitting = exams.start(benchmark.EXAM, student, ("p1", "p2"), 1000.0, 9000.0)
            seen.sittings[sitting.id] = student
            for item in (1, 2):
                typed = {"x": f"{student}-{item}"}
                assert exams.save(sitting.id, student, item, typed, 1100.0)
                seen.saves[(sitting.id, item)] = (student, typed)
    finally:
        practice.close()
        exams.close()
    return seen


def test_every_acknowledged_answer_found_stored_once_for_its_own_student_is_nothing_lost(practice_benchmark,
                                                                                        tmp_path):
    where = str(tmp_path / "accounts.sqlite")
    seen = a_class(Path(where), practice_benchmark)
    found = practice_benchmark.checked(seen, practice_benchmark.read_gradebook(where))
    assert (found["practice_answers_acknowledged"], found["practice_answers_stored"],
            found["exam_sittings_stored"], found["exam_saves_acknowledged"], found["exam_saves_stored"]) == (4, 4, 2, 4, 4)
    assert [found[k] for k in ("lost", "duplicated", "wrong_student", "misjudged")] == [0, 0, 0, 0], found["examples"]


def test_a_lost_a_misplaced_a_changed_a_duplicated_or_a_misjudged_answer_is_each_counted(practice_benchmark,
                                                                                        tmp_path):
    where = str(tmp_path / "accounts.sqlite")
    seen = a_class(Path(where), practice_benchmark)
    stored = practice_benchmark.read_gradebook(where)
    check = practice_benchmark.checked
    variants = sorted(seen.practice)
    ada = next(v for v in variants if seen.practice[v][0] == "ada")
    ben = next(v for v in variants if seen.practice[v][0] == "ben")
    sitting, item = sorted(seen.saves)[0]

    # an answer the client was told was kept, that the gradebook does not hold
    lost = stored.__class__([row for row in stored.practice if row[0] != ada], stored.sittings, stored.saved)
    assert check(seen, lost)["lost"] == 1
    # a save the gradebook lost
    saved = {s: {i: a for i, a in items.items() if (s, i) != (sitting, item)} for s, items in stored.saved.items()}
    assert check(seen, stored.__class__(stored.practice, stored.sittings, saved))["lost"] == 1
    # a save whose answers are not those typed
    changed = {s: {i: ({"x": "else"} if (s, i) == (sitting, item) else a) for i, a in items.items()}
               for s, items in stored.saved.items()}
    assert check(seen, stored.__class__(stored.practice, stored.sittings, changed))["lost"] == 1
    # an answer stored under another student
    moved = [(r[0], "ben" if r[0] == ada else r[1], *r[2:]) for r in stored.practice]
    assert check(seen, stored.__class__(moved, stored.sittings, stored.saved))["wrong_student"] == 1
    # the same answer stored twice, and a student with two sittings
    twice = stored.__class__(stored.practice + [r for r in stored.practice if r[0] == ben],
                             stored.sittings + [("another", "ada")], stored.saved)
    assert check(seen, twice)["duplicated"] == 2
    # a right answer stored with less than every point
    misjudged = [(*r[:3], 0.5 if r[0] == ada else r[3], r[4]) for r in stored.practice]
    assert check(seen, stored.__class__(misjudged, stored.sittings, stored.saved))["misjudged"] == 1
    # a sitting under another student: its saves are not counted lost on top
    swapped = [(s, "ben" if who == "ada" else "ada") for s, who in stored.sittings]
    found = check(seen, stored.__class__(stored.practice, swapped, stored.saved))
    assert (found["wrong_student"], found["lost"]) == (2, 0)


@pytest.mark.slow  # a build, `qkv tokens` and `qkv serve` once, four students through the three phases
def test_the_practice_benchmark_in_small_keeps_every_answer_and_reports_each_figure(tmp_path):
    results = tmp_path / "practice.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "practice.py"), "--students", "4", "--answers",
                           "3", "--think", "0.2", "--spread", "1", "--exam-items", "2", "--client-processes",
                           "2", "--results", str(results)], capture_output=True, text=True, timeout=1800,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(results.read_text())
    c = figures["checked"]
    assert [c[k] for k in ("lost", "duplicated", "wrong_student", "misjudged", "wrong_verdict_shown",
                           "client_failures")] == [0] * 6, c["examples"]
    # every answer and save the clients were told was kept is in the gradebook, and nothing more
    assert (c["practice_answers_acknowledged"], c["practice_answers_stored"],
            c["practice_answers_stored_unacknowledged"]) == (12, 12, 0)
    assert (c["exam_sittings_stored"], c["exam_saves_acknowledged"], c["exam_saves_stored"]) == (4, 8, 8)
    assert figures["signin_ms"]["count"] == 4
    assert figures["practice"]["answer_to_feedback_ms"]["count"] == figures["practice"]["next_problem_ms"]["count"] == 12
    # the exams page and the paper once each, and the paper after each of the two saves: 4 pages a student
    assert (figures["exam"]["page_ms"]["count"], figures["exam"]["save_ms"]["count"]) == (16, 8)
    for timed in (figures["signin_ms"], figures["practice"]["answer_to_feedback_ms"], figures["exam"]["page_ms"]):
        assert 0 < timed["p50"] <= timed["p95"] <= timed["max"], timed
    cpu = figures["cpu"]
    assert cpu["server_ms_per_judged_answer"] > 0 and cpu["server_ms_per_signin"] > 0 and cpu["clients_s"]["practice"] > 0
    assert set(figures["phases"]) == {"signin", "practice", "exam"}
    assert "| practice: answer to feedback (POST and the verdict's page) | 12 |" in done.stdout
