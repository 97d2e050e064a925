"""Benchmark of the self-check's sealed answers: what a brute-force search costs, and what the build pays.

Writes benchmarks/results/selfcheck.json and prints a Markdown table. Figures:

- candidates per second for an attacker: scrypt keys/s with the release's parameters, in 1 process
  and in 2 (and in 2 threads of one process: hashlib.scrypt releases the GIL, which the build uses),
  against sha256 digests/s of the old scheme (format 1); the time to try 10^6 candidates;
- a search actually run: an integer part (a parameter count) recovered from an old release by
  counting up, and a sine value in [-1, 1] (tolerance 5e-4) recovered from a new one cell by cell;
  the integer's search in a new release is projected from the keys/s;
- the build of exam-prep with a roster of 400 students, per-student numbers: before (the code at
  --before, a git ref, run from a `git archive` of it) and after (this tree), wall and CPU seconds;
- one student's `python qkv_check.py FILE` (a right file of theirs), before and after, and the number
  of keys it derives;
- a sweep of scrypt parameters (ms per key on one core), from which KDF_N and KDF_R were chosen.

The machine's load average is recorded with every timing: on a shared machine the wall times
include other people's work; CPU seconds do not.

    .venv/bin/python benchmarks/selfcheck.py [--students 400] [--before 1e0577d] [--builds 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import summary

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "selfcheck.json"
BEFORE = "1e0577d"  # the last commit with format-1 self-check data (sha256 of grid points)
MANIFEST = "exam-prep"
SECONDS = 3.0  # each key rate is measured for about this long


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ------------------------------------------------------------------ key rates


def _keys_for(seconds: float, params: dict, offset: int = 0) -> int:
    sys.path.insert(0, str(ROOT))
    from qkv_runtime import sealed

    count, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        sealed.derive_key(f"cells|0.001953125||{offset + count}", "exam-prep|s1|p|x", params)
        count += 1
    return count


def _old_digest_rate(seconds: float = 1.0) -> float:
    """Digests per second of the old scheme: sha256("qkv1|salt|grid():k"), one candidate each."""
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        for k in range(1000):
            hashlib.sha256(f"qkv1|exam-prep|s1|p|x|grid():{n + k}".encode()).hexdigest()
        n += 1000
    return n / (time.perf_counter() - start)


def _rate_1(params: dict) -> tuple[float, float]:
    """(keys per wall second, CPU ms per key) in this process."""
    start, cpu = time.perf_counter(), time.thread_time()
    count = _keys_for(SECONDS, params)
    return count / (time.perf_counter() - start), (time.thread_time() - cpu) * 1000 / count


def _rate_2(pool, params: dict) -> float:
    start = time.perf_counter()
    counts = pool.starmap(_keys_for, [(SECONDS, params, 0), (SECONDS, params, 10**6)])
    return sum(counts) / (time.perf_counter() - start)


def _rate_threads(params: dict) -> float:
    with ThreadPoolExecutor(2) as threads:
        start = time.perf_counter()
        counts = list(threads.map(lambda k: _keys_for(SECONDS, params, k), (0, 10**6)))
        return sum(counts) / (time.perf_counter() - start)


def key_rates(params: dict, repeats: int = 3) -> dict:
    """Best of `repeats` for each rate (on a shared machine the best is the least disturbed)."""
    from qkv_runtime import sealed

    ones, twos, threads = [], [], []
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.starmap(_keys_for, [(0.2, params, 0), (0.2, params, 1)])  # warm the workers up
        for _ in range(repeats):
            ones.append(_rate_1(params))
            twos.append(_rate_2(pool, params))
            threads.append(_rate_threads(params))
    one_rate, cpu_ms = max(r for r, _ in ones), min(c for _, c in ones)
    two_rate, threads_rate = max(twos), max(threads)
    sha_rate = max(_old_digest_rate() for _ in range(repeats))
    return {
        "scrypt": {**params, "memory_bytes": sealed.kdf_memory(params)},
        "keys_per_s_1_process": round(one_rate, 1),
        "keys_per_s_2_processes": round(two_rate, 1),
        "keys_per_s_2_threads": round(threads_rate, 1),
        "ms_per_key_1_process": round(1000 / one_rate, 2),
        "cpu_ms_per_key": round(cpu_ms, 2),
        "keys_per_cpu_second": round(1000 / cpu_ms, 1),
        "cpu_hours_for_1e6_candidates": round(1e6 * cpu_ms / 1000 / 3600, 2),
        "old_sha256_digests_per_s_1_process": round(sha_rate),
        "hours_for_1e6_candidates_1_process": round(1e6 / one_rate / 3600, 2),
        "hours_for_1e6_candidates_2_processes": round(1e6 / two_rate / 3600, 2),
        "old_seconds_for_1e6_candidates": round(1e6 / sha_rate, 2),
        "slowdown_per_candidate": round(sha_rate / one_rate),
        "load_average": load(),
    }


def parameter_sweep() -> list[dict]:
    rows = []
    for n, r in ((2**11, 8), (2**12, 6), (2**12, 7), (2**12, 8), (2**13, 8), (2**14, 8)):
        best = float("inf")
        for _ in range(3):
            start = time.thread_time()
            for i in range(10):
                hashlib.scrypt(f"x{i}".encode(), salt=b"s", n=n, r=r, p=1, maxmem=2**28, dklen=32)
            best = min(best, (time.thread_time() - start) / 10)
        rows.append({"n": n, "r": r, "memory_mib": n * r * 128 / 2**20, "cpu_ms_per_key": round(best * 1000, 2)})
    return rows


# ------------------------------------------------------------------ builds and checks


def tree_of(ref: str, into: Path) -> Path:
    """The repository at `ref`, as files (git archive), to run the old code beside the new."""
    archive = into / "before.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), ref], check=True)
    tree = into / "before"
    tree.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(tree)
    return tree


def roster_manifest(tree: Path, students: list[str], into: Path) -> Path:
    text = (tree / "assignments" / f"{MANIFEST}.yaml").read_text()
    text = re.sub(r"^roster: .*$", "roster: [" + ", ".join(students) + "]", text, flags=re.M)
    into.mkdir(parents=True, exist_ok=True)
    path = into / f"{MANIFEST}.yaml"
    path.write_text(text)
    return path


def run_qkv(tree: Path, *args: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `qkv ARGS` with the code of `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from autograder.cli import main; main()", *args], check=True, env=env,
                   cwd=tree, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def build_figures(tree: Path, manifest: Path, out: Path, repeats: int) -> dict:
    """The fastest of `repeats` builds (wall), with its CPU seconds and the load around it."""
    runs = []
    for _ in range(repeats):
        loads = load()
        wall, cpu = run_qkv(tree, "build", str(manifest), "--out", str(out))
        runs.append({"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load_average_before": loads,
                     "load_average_after": load()})
    return {**min(runs, key=lambda r: r["wall_s"]), "runs": runs}


def student_check(tree: Path, release: Path, student: str, source: str) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="qkv-check-"))
    shutil.copytree(release / "student", folder / "student")
    path = folder / "student" / f"{student}.py"
    path.write_text(source)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "qkv_check.py", path.name], cwd=folder / "student",
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
        times.append(time.perf_counter() - start)
        assert done.returncode == 0 and " 0 fail," in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    shutil.rmtree(folder)
    return {"wall_s_median_of_3": round(statistics.median(times), 2), "load_average": load()}


def keys_of_one_check(release: Path, source: str) -> dict:
    """The keys one student's written answers cost, counted in this process (after only)."""
    sys.path.insert(0, str(ROOT))
    from autograder.selfcheck import qkv_check
    from qkv_runtime import sealed

    data = qkv_check.load_data(release / "student" / "selfcheck.json")
    namespace: dict = {}
    exec(compile(source, "student.py", "exec"), namespace)
    submission = qkv_check.Submission.from_namespace(namespace)
    calls = []
    real = sealed.derive_key
    sealed.derive_key = lambda *a: calls.append(a) or real(*a)
    try:
        start = time.perf_counter()
        results = qkv_check.run_checks(data, submission)
        seconds = time.perf_counter() - start
    finally:
        sealed.derive_key = real
    assert all(r.status == "pass" for r in results)
    return {"keys": len(calls), "written_answers": sum(r.problem["kind"] != "implement" for r in results),
            "seconds_in_process": round(seconds, 2)}


# ------------------------------------------------------------------ searches


def old_integer_search(release: Path, student: str, problem: str, part: str, answer: int) -> dict:
    """Count up from 0 until the old digest of an integer part matches (format 1: sha256 of grid points)."""
    data = json.loads((release / "student" / "selfcheck.json").read_text())
    entry = next(p for p in data["problems"] if p["id"] == problem)["digests"][student][part]
    assert entry["mode"] == "whole" and entry["exact"] and entry["steps"] == [1.0]
    target = entry["digests"][0]
    prefix = f"qkv1|{data['assignment']}|{student}|{problem}|{part}|grid():"
    start, k = time.perf_counter(), 0
    while hashlib.sha256(f"{prefix}{k}".encode()).hexdigest() != target:
        k += 1
    assert k == answer
    return {"problem": f"{problem}/{part}", "answer": k, "candidates": k + 1,
            "seconds": round(time.perf_counter() - start, 2)}


def new_cell_search(release: Path, student: str, problem: str, part: str, low: float, high: float) -> dict:
    """Try every cell of [low, high] in turn, as a search of a new release must: one scrypt key each."""
    sys.path.insert(0, str(ROOT))
    from qkv_runtime import sealed

    data = json.loads((release / "student" / "selfcheck.json").read_text())
    entry = next(p for p in data["problems"] if p["id"] == problem)["digests"][student][part]
    assert entry["mode"] == "whole" and len(entry["cells"]) == 1
    size = entry["cells"][0]
    salt = sealed.digest_salt(data["assignment"], student, problem, part)
    start, tried = time.perf_counter(), 0
    for k in range(sealed.cell_index(low, size), sealed.cell_index(high, size) + 1):
        key = sealed.derive_key(sealed.cell_password([size], (), [k]), salt, data["kdf"])
        tried += 1
        if sealed.tag(key, "right") == entry["right"][0]["tag"]:
            value = sealed.unseal(key, "right", entry["right"][0]["sealed"])[0]
            break
    else:
        raise AssertionError("not found")
    return {"problem": f"{problem}/{part}", "range": [low, high], "cell": size,
            "cells_in_range": sealed.cell_index(high, size) - sealed.cell_index(low, size) + 1,
            "candidates": tried, "seconds": round(time.perf_counter() - start, 2), "found": value}


# ------------------------------------------------------------------ main


def report(figures: dict) -> str:
    rates, builds, c = figures["attacker"], figures["build"], figures["one_student_check"]
    b, a = builds["before"], builds["after"]
    return "\n".join([
        "| figure | before (sha256 of grid points) | after (scrypt keys) |", "|---|---|---|",
        f"| candidates/s, 1 process | {rates['old_sha256_digests_per_s_1_process']:,} | "
        f"{rates['keys_per_s_1_process']:,} |",
        f"| candidates/s, 2 processes | - | {rates['keys_per_s_2_processes']:,} |",
        f"| 10^6 candidates, 1 process | {rates['old_seconds_for_1e6_candidates']} s | "
        f"{rates['hours_for_1e6_candidates_1_process']} h ({rates['cpu_hours_for_1e6_candidates']} CPU-hours) |",
        f"| build, {figures['students']} students (wall / CPU) | {b['wall_s']} s / {b['cpu_s']} s | "
        f"{a['wall_s']} s / {a['cpu_s']} s |",
        f"| one student's check | {c['before']['wall_s_median_of_3']} s | {c['after']['wall_s_median_of_3']} s "
        f"({c['after']['keys']} keys) |"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=400)
    parser.add_argument("--before", default=BEFORE, help="git ref of the code before (format-1 self-check data)")
    parser.add_argument("--builds", type=int, default=1, help="builds of each, the fastest counts")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from qkv_runtime import sealed

    work = Path(tempfile.mkdtemp(prefix="qkv-bench-selfcheck-"))
    students = [f"s{1155000000 + i}" for i in range(args.students)]
    student = students[123]
    figures: dict = {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                                 "cpus": os.cpu_count(), "load_average_at_start": load()},
                     "students": args.students, "assignment": MANIFEST, "before_ref": args.before}
    figures["parameter_sweep"] = parameter_sweep()
    figures["attacker"] = key_rates(sealed.kdf_params())
    print("key rates:", json.dumps(figures["attacker"]), flush=True)

    before_tree = tree_of(args.before, work)
    manifest_before = roster_manifest(before_tree, students, work / "m-before")
    manifest_after = roster_manifest(ROOT, students, work / "m-after")
    builds = {}
    for name, tree, manifest in (("before", before_tree, manifest_before), ("after", ROOT, manifest_after)):
        builds[name] = build_figures(tree, manifest, work / f"dist-{name}", args.builds)
        print(f"build {name}:", builds[name], flush=True)
    figures["build"] = builds
    figures["sealed_numbers_in_the_release"] = sum(1 for _ in re.finditer(
        r'"tag"', (work / "dist-after" / "student" / "selfcheck.json").read_text()))

    from autograder.bank.load import load_bank_strict
    from autograder.assemble.manifest import find_manifest, resolve_assignment
    from autograder.assemble.solution_key import key_module

    assignment = resolve_assignment(find_manifest(str(manifest_after)), load_bank_strict())
    source = key_module(assignment, student)
    figures["one_student_check"] = {
        "before": student_check(before_tree, work / "dist-before", student, source),
        "after": {**student_check(ROOT, work / "dist-after", student, source),
                  **keys_of_one_check(work / "dist-after", source)},
    }
    print("one check:", figures["one_student_check"], flush=True)

    from autograder.kinds.numeric.variants import variant_for

    integers = []  # the student's whole-number answers with no tolerance (parameter counts and the like)
    for assigned in assignment.written:
        problem = assigned.problem
        if problem.kind == "numeric":
            answers = variant_for(problem, assignment.manifest.seed, "per_student", student).answers
            integers += [(float(answers[p.name]), problem.id, p.name) for p in problem.parts
                         if p.tolerance.abs == 0 and p.tolerance.rel == 0 and not p.decimals
                         and answers[p.name].shape == () and float(answers[p.name]).is_integer()]
    count, problem_id, part = max(integers)
    old = old_integer_search(work / "dist-before", student, problem_id, part, int(count))
    rates = figures["attacker"]
    figures["searches"] = {
        "old_integer": old,
        "new_integer_projected_cpu_hours": round((count + 1) * rates["cpu_ms_per_key"] / 1000 / 3600, 2),
        "new_integer_projected_hours_1_process": round((count + 1) / rates["keys_per_s_1_process"] / 3600, 2),
        "new_integer_projected_hours_2_processes": round((count + 1) / rates["keys_per_s_2_processes"] / 3600, 2),
        "new_sine_value": new_cell_search(work / "dist-after", student, "pe-entry", "value", -1.0, 1.0),
    }
    print("searches:", figures["searches"], flush=True)
    figures["machine"]["load_average_at_end"] = load()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)

    summary.write()
    print(report(figures))

if __name__ == "__main__":
    main()
