"""Benchmark of the feedback pages: how large a page is, and how long 1,000 of them take to write.

`qkv grade` writes each student's feedback.html (and results.json) while the sandbox grades the next
submissions, so a page must stay cheap. The results are real: the sample class
(examples/submissions/attention-numpy, with a file that exits while loading) graded by `qkv grade`
(not timed). Then 1,000 pages are written as `qkv grade` writes them (results.json and feedback.html,
atomically, as write_student_reports does), cycling through those results under new student ids, with every
student's own matrices made distinct (a ten-thousandth added per student) so that only the expected
matrices, the same for the whole class, come from the picture cache, as in a real class. Timed twice:
before the due date (public tests' pictures only) and after it (hidden tests' too, and every written
answer's key and worked solution). Writes benchmarks/results/feedback.json.
Run: `.venv/bin/python benchmarks/feedback.py [--pages N]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import summary

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SAMPLES = ROOT / "examples" / "submissions" / "attention-numpy"


def distinct(result, n: int):
    """`result` as student n's: their own id, and their own matrices (each a little different)."""
    from autograder.results import ProblemResult, TestResult

    def shifted(test: TestResult) -> TestResult:
        if not test.heatmap:
            return test
        got = [[None if x is None else round(x + n * 1e-4, 4) for x in row] for row in test.heatmap["got"]]
        return dataclasses.replace(test, heatmap={**test.heatmap, "got": got})

    problems = tuple(ProblemResult(**{**p.__dict__, "tests": tuple(shifted(t) for t in p.tests)})
                     for p in result.problems)
    return dataclasses.replace(result, student=f"s{n:05d}", problems=problems)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=1000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from autograder.assemble import build
    from autograder.bundle import read_bundle
    from autograder.report.feedback import write_feedback
    from autograder.report.results_json import write_results_json
    from autograder.routes.class_grading import grade_class

    with tempfile.TemporaryDirectory(prefix="qkv-bench-feedback-") as tmp:
        tmp_path = Path(tmp)
        built = build("attention-numpy", tmp_path / "dist" / "attention-numpy")
        subs = tmp_path / "subs"
        shutil.copytree(SAMPLES, subs)
        shutil.copy(ROOT / "tests" / "fixtures" / "submissions" / "exit_at_load.py", subs / "zed.py")
        run = grade_class(built.out / "autograder", subs, tmp_path / "graded", jobs=2, timeout=3)
        bundle = read_bundle(built.out / "autograder")
        results = sorted(run.results, key=lambda r: r.student)
        report: dict = {"machine": f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores",
                        "python": platform.python_version(), "pages": args.pages,
                        "sample_students": [r.student for r in results]}
        for when, moment in (("before_due", dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)),
                             ("after_due", dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc))):
            out = tmp_path / when
            students = [distinct(results[n % len(results)], n) for n in range(args.pages)]
            start = time.perf_counter()
            times = []
            for result in students:
                one = time.perf_counter()
                folder = out / "feedback" / result.student  # as class_grading.write_student_reports, clock fixed
                write_results_json(folder / "results.json", result, run.isolation, bundle)
                write_feedback(folder / "feedback.html", result, bundle.title, bundle.due, run.isolation, None, bundle,
                               moment)
                times.append(time.perf_counter() - one)
            total = time.perf_counter() - start
            sizes = {r.student: (out / "feedback" / r.student / "feedback.html").stat().st_size for r in students}
            by_sample = {results[n % len(results)].student: sizes[s.student] for n, s in enumerate(students[:len(results)])}
            report[when] = {
                "write_s": round(total, 3),
                "per_page_ms_mean": round(1000 * total / args.pages, 2),
                "per_page_ms_max": round(1000 * max(times), 2),
                "per_page_ms_median": round(1000 * statistics.median(times), 2),
                "page_bytes_mean": round(statistics.fmean(sizes.values())),
                "page_bytes_max": max(sizes.values()),
                "page_bytes_by_sample": by_sample,
            }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "feedback.json").write_text(json.dumps(report, indent=1) + "\n")
    summary.write()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
