"""Benchmark: the same class graded by the local grader and on `--cluster local:N`, in one run.

Takes a number of submissions (default 1,000 of attention-numpy: copies of the answer key,
each with its own comment, and every tenth one the unimplemented stub) and a number of
workers N (default 2); gives benchmarks/results/cluster.json (wall seconds, submissions per
second, seconds to the first result, the cluster/local ratio, whether the two gradebooks are
byte-identical) and one Markdown table row on stdout. The local grader gets N sandbox slots,
the cluster N one-thread workers, so both use the same parallelism; the cluster's wall time
includes starting it. Each is timed twice, in the order local, cluster, cluster, local, and
the two times averaged, so that a load that rises or falls during the run (a shared
machine) weighs on both alike. Target: the cluster within 2x of local on one machine.

    .venv/bin/python benchmarks/cluster.py [--submissions 1000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import summary

import distributed

from autograder.assemble import build
from autograder.assemble.solution_key import key_module
from autograder.routes.class_grading import grade_class

RESULTS = Path(__file__).resolve().parent / "results" / "cluster.json"
STUB_EVERY = 10
TARGET_RATIO = 2.0


@dataclass(frozen=True)
class Timing:
    wall_s: float
    per_s: float
    first_result_s: float
    isolation: str


@dataclass(frozen=True)
class RouteFigures:
    """One route's two runs and their mean."""

    wall_s: float
    per_s: float
    first_result_s: float
    isolation: str
    runs: tuple[Timing, ...]


def mean_figures(runs: list[Timing], count: int) -> RouteFigures:
    wall = sum(r.wall_s for r in runs) / len(runs)
    first = sum(r.first_result_s for r in runs) / len(runs)
    return RouteFigures(round(wall, 2), round(count / wall, 2), round(first, 2), runs[0].isolation, tuple(runs))


def write_class(folder: Path, key: str, stub: str, count: int) -> None:
    folder.mkdir(parents=True)
    for i in range(count):
        source = stub if i % STUB_EVERY == STUB_EVERY - 1 else key
        (folder / f"student{i:05d}.py").write_text(f"{source}\n# submission {i}\n")


def timed_grade(bundle: Path, submissions: Path, out: Path, count: int, **route: object) -> Timing:
    start = time.perf_counter()
    first: list[float] = []

    def progress(done: int, total: int, student: str) -> None:
        if not first:
            first.append(time.perf_counter() - start)

    run = grade_class(bundle, submissions, out, progress=progress, **route)
    wall = time.perf_counter() - start
    assert run.graded_now == count, f"graded {run.graded_now} of {count}"
    return Timing(round(wall, 2), round(count / wall, 2), round(first[0], 2), run.isolation)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="qkv-bench-cluster-") as scratch:
        root = Path(scratch)
        built = build("attention-numpy", root / "dist")
        stub = (built.out / "student" / f"{built.assignment.module_name}.py").read_text()
        write_class(root / "subs", key_module(built.assignment), stub, args.submissions)
        bundle = built.out / "autograder"
        load_before = os.getloadavg()[0]
        routes = {"local": {"jobs": args.workers}, "cluster": {"cluster": f"local:{args.workers}"}}
        timings: dict[str, list[Timing]] = {"local": [], "cluster": []}
        outs = [root / f"{i}-{name}" for i, name in enumerate(("local", "cluster", "cluster", "local"))]
        for out in outs:
            name = out.name.split("-")[1]
            timings[name].append(timed_grade(bundle, root / "subs", out, args.submissions, **routes[name]))
        identical = len({(out / "gradebook.csv").read_bytes() for out in outs}) == 1
    local, cluster = (mean_figures(timings[name], args.submissions) for name in ("local", "cluster"))
    ratio = round(cluster.wall_s / local.wall_s, 2)
    figures = {
        "submissions": args.submissions,
        "stubs": args.submissions // STUB_EVERY,
        "workers": args.workers,
        "local": asdict(local),
        f"cluster local:{args.workers}": asdict(cluster),
        "ratio_cluster_to_local": ratio,
        "target_ratio": TARGET_RATIO,
        "within_target": ratio <= TARGET_RATIO,
        "identical_gradebooks": identical,
        "machine": {"cpus": os.cpu_count(), "load_average_before": round(load_before, 2),
                    "load_average_after": round(os.getloadavg()[0], 2),
                    "python": platform.python_version(), "distributed": distributed.__version__},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=1) + "\n")
    summary.write()
    print(f"| {args.submissions:,} submissions, {args.workers} workers | local {local.wall_s:.1f} s "
          f"({local.per_s:.2f}/s) | local:{args.workers} {cluster.wall_s:.1f} s ({cluster.per_s:.2f}/s, "
          f"first result at {cluster.first_result_s:.1f} s) | {ratio:.2f}x (target <= {TARGET_RATIO:g}x) "
          f"| gradebooks {'identical' if identical else 'DIFFER'} |")


if __name__ == "__main__":  # Dask's worker processes are spawned: they import this file without running it
    main()
