"""Benchmark of `qkv stats`: a gradebook of 10,000 graded submissions of attention-numpy, analysed.

The gradebook is written the way `qkv grade` writes it (Gradebook.record, one transaction per
submission), with results shaped like the real bundle's: every problem and test of attention-numpy,
each test passed with a probability that rises with the student's ability (a 2-parameter logistic
model, seeded), failed tests sometimes matching one of the problem's named misconceptions, and
choice answers drawn the same way. Making it is not timed. Timed: reading the gradebook
(`load_scores`), the analysis (`analyse`), the mistakes across the class (`class_mistakes`), the HTML
page with its plots (`stats_html`), and the whole `qkv stats` command as a user runs it (a fresh process: imports included).
Writes benchmarks/results/stats.json. Run: `.venv/bin/python benchmarks/stats.py [--students N]`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import summary

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
VENV_BIN = Path(sys.executable).parent


def synthetic_result(bundle, student: str, rng: random.Random, difficulty: dict):
    from autograder.results import ProblemResult, SubmissionResult, TestResult

    ability = rng.gauss(0, 1)
    problems, answers = [], {}
    for code in bundle.code:
        tests = []
        for test in code.tests:
            p = 1 / (1 + math.exp(-(1.7 * ability - difficulty[code.id, test.name])))
            passed = rng.random() < p
            mistake = None if passed or not code.misconceptions or rng.random() < 0.5 else rng.choice(sorted(code.misconceptions))
            points = code.test_points(test)
            tests.append(TestResult(code.id, test.name, test.visibility, points if passed else 0.0, points, passed,
                                    "passed" if passed else "wrong", misconception=mistake))
        problems.append(ProblemResult(code.id, "implement", round(sum(t.score for t in tests), 4), code.points, "",
                                      tuple(tests)))
    for written in bundle.written:
        p = 1 / (1 + math.exp(-(1.7 * ability - difficulty[written.id, "answer"])))
        passed = rng.random() < p
        kind = written.problem.kind
        if kind == "multiple_choice":
            letters = "ABCDEFGH"[:len(written.problem.choices)]
            answers[written.id] = written.problem.answer if passed else rng.choice(letters.replace(written.problem.answer, ""))
        elif kind == "true_false":
            answers[written.id] = {"answer": written.problem.answer if passed else not written.problem.answer}
        score = written.points if passed else 0.0
        test = TestResult(written.id, "answer", "hidden", score, written.points, passed, "")
        problems.append(ProblemResult(written.id, kind, score, written.points, "", (test,)))
    order = {pid: i for i, pid in enumerate(bundle.problem_order)}
    problems.sort(key=lambda p: order[p.problem_id])
    total = round(sum(p.score for p in problems), 4)
    return SubmissionResult(student, f"{rng.getrandbits(128):032x}", "graded", "", total, bundle.max_points,
                            tuple(problems), answers=answers)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=10_000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from autograder.bank.load import load_bank_strict
    from autograder.assemble import build
    from autograder.bundle import read_bundle
    from autograder.classroom.classbook import open_gradebook
    from autograder.classroom.mistakes import class_mistakes
    from autograder.classroom.stats import analyse, bundle_info, load_scores
    from autograder.classroom.stats_page import stats_html
    from autograder.grade.gradebook import Gradebook
    from autograder.routes.class_grading import bundle_fingerprint

    with tempfile.TemporaryDirectory(prefix="qkv-bench-stats-") as tmp:
        tmp = Path(tmp)
        dist = build("attention-numpy", tmp / "dist", bank=load_bank_strict()).out
        bundle = read_bundle(dist / "autograder")
        rng = random.Random(2026)
        difficulty = {(c.id, t.name): rng.gauss(-0.5, 1) for c in bundle.code for t in c.tests}
        difficulty.update({(w.id, "answer"): rng.gauss(-0.5, 1) for w in bundle.written})
        grades = tmp / "grades"
        started = time.perf_counter()
        with Gradebook(grades / "gradebook.sqlite") as book:
            book.check_assignment(bundle.name, bundle_fingerprint(dist / "autograder"))
            for i in range(args.students):
                book.record(synthetic_result(bundle, f"s{i:06d}", rng, difficulty), "bwrap")
        made = time.perf_counter() - started
        with sqlite3.connect(grades / "gradebook.sqlite") as raw:  # its size, read beside the gradebook's own reads
            tests = raw.execute("SELECT COUNT(*) FROM grading_tests").fetchone()[0]
        raw.close()
        with open_gradebook(grades, bundle.name) as db:
            t0 = time.perf_counter()
            scores = load_scores(db)
            t1 = time.perf_counter()
            mistakes = class_mistakes(db, bundle_info(bundle)[3], bundle_info(bundle)[0])
            m1 = time.perf_counter()
        analysis = analyse(scores, *bundle_info(bundle))
        t2 = time.perf_counter()
        page = stats_html(analysis, bundle.title, mistakes)
        t3 = time.perf_counter()
        command = [str(VENV_BIN / "qkv"), "stats", bundle.name, "--grades", str(grades), "--dist", str(dist)]
        c0 = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "120"})
        c1 = time.perf_counter()
        assert done.returncode == 0, done.stderr
        figures = {
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "python": platform.python_version(),
            "submissions": args.students,
            "test_rows": tests,
            "items": len(analysis.problems) + len(analysis.hidden_tests),
            "making_the_gradebook_s": round(made, 1),
            "load_s": round(t1 - t0, 3),
            "analyse_s": round(t2 - m1, 3),
            "analysed_s": round((t1 - t0) + (t2 - m1), 3),
            "mistakes_s": round(m1 - t1, 3),  # classroom.mistakes: each mistake's prevalence and example
            "page_s": round(t3 - t2, 3),
            "page_bytes": len(page.encode()),
            "qkv_stats_command_wall_s": round(c1 - c0, 3),
            "alpha": round(analysis.alpha, 4) if analysis.alpha is not None else None,
            "flagged": len(analysis.flagged),
        }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "stats.json").write_text(json.dumps(figures, indent=1) + "\n")
    summary.write()
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
