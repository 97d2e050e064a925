"""Calibration of the copying signals: how many pairs each threshold would flag, on the demo's sample class and on
a constructed class of honest students (tests/fixtures/classroom/honest.py), with a disguised copy among them,
and how long the comparison takes.

Writes benchmarks/results/copying.json. Run: `.venv/bin/python benchmarks/copying.py [--students N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import summary

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def pair_summary(report) -> dict:
    return {"pairs": report.compared, "at_or_above": {str(k): v for k, v in report.above.items()},
            "highest": [{"pair": f"{p.a}/{p.b}", "similarity": round(p.similarity, 3)} for p in report.highest[:5]]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=100)
    args = parser.parse_args()
    from autograder.bank.load import load_bank_strict
    from autograder.kinds import kind_of
    from autograder.assemble import build
    from autograder.assemble.manifest import find_manifest, resolve_assignment
    from autograder.assemble.solution_key import key_answer
    from autograder.classroom.collect import collect, program_text
    from autograder.classroom.copying import CODE_THRESHOLD, answer_flags, code_pairs
    from autograder.classroom.roster import load_roster
    from autograder.grade.intake import read_submission
    from fixtures.classroom.honest import disguise, honest_module

    bank = load_bank_strict()
    figures: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "python": platform.python_version(),
                     "threshold": CODE_THRESHOLD}
    with tempfile.TemporaryDirectory(prefix="qkv-bench-copying-") as tmp:
        dist = build("attention-numpy", Path(tmp) / "dist", bank=bank).out
        stub = "\n".join(program_text(read_submission("stub", dist / "student" / f"attention_numpy{s}").program)
                         for s in (".py", ".ipynb"))
        work = Path(tmp) / "work"
        work.mkdir()
        canvas = ROOT / "examples" / "canvas"
        handed = collect(canvas / "attention-numpy-submissions.zip", "attention_numpy", "attention-numpy",
                         load_roster(canvas / "roster.csv"), work)
        codes = {s.student: program_text(s.program) for s in handed.submissions if s.program is not None}
        figures["sample_class"] = pair_summary(code_pairs(codes, stub))
        figures["sample_class"]["note"] = "the samples are the answer key with a function or two swapped in"

        rng = random.Random(7)
        honest = {f"s{i:03d}": honest_module(rng) for i in range(args.students)}
        started = time.perf_counter()
        report = code_pairs(honest, stub)
        elapsed = time.perf_counter() - started
        figures["honest_class"] = {**pair_summary(report), "students": args.students, "seconds": round(elapsed, 2),
                                   "ms_per_pair": round(1000 * elapsed / max(report.compared, 1), 3)}
        honest["copier"] = disguise(honest["s042"], rng)
        copied = code_pairs(honest, stub)
        figures["disguised_copy"] = {"flagged": [f"{p.a}/{p.b}" for p in copied.pairs],
                                     "similarity": round(max(p.similarity for p in copied.pairs), 3) if copied.pairs else None}

    assignment = resolve_assignment(find_manifest("exam-prep"), bank)
    numeric = [a.problem for a in assignment.written if kind_of(a.problem).own_numbers(a.problem)]
    rng = random.Random(2026)
    students = [f"s{i:03d}" for i in range(args.students)]
    answers = {s: {p.id: key_answer(p, assignment, s) for p in numeric} for s in students}
    started = time.perf_counter()
    honest_flags = answer_flags(students, answers, numeric, assignment.manifest.seed)
    elapsed = time.perf_counter() - started
    answers["copier"] = {p.id: key_answer(p, assignment, "s042") for p in numeric}
    flags = answer_flags([*students, "copier"], answers, numeric, assignment.manifest.seed)
    figures["numbers"] = {"students": args.students, "parts": sum(len(p.parts) for p in numeric),
                          "honest_flagged": len(honest_flags), "seconds": round(elapsed, 2),
                          "copier": [(f.student, f.other, f.fits_other, f.fits_own) for f in flags]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "copying.json").write_text(json.dumps(figures, indent=1) + "\n")
    summary.write()
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
