"""Benchmark of `qkv grade`: a class of .py files, a class of notebooks, and real nbgrader side by side.

Writes benchmarks/results/grade.json and prints two Markdown tables for the README.
Every figure is of the `qkv grade` command, run as a user runs it. Figures: wall
seconds and peak memory (RSS of the whole process tree, sampled)
for 1,000 .py submissions of attention-numpy that are copies of the answer key, 1,000 that are
copies of benchmarks/loop_solution.py (an independent correct solution in explicit loops, with the
key's ANSWERS), 1,000 notebooks of the key, 1,000 .py files of a mixed class (the bundled samples in turn:
perfect, classic mistakes, a syntax error, the untouched stub; not the hostile
one, whose endless loop would make this a benchmark of the time limit), and,
in the same run, the same 100 notebooks graded by `nbgrader autograde` and by
`qkv grade`, as a ratio; run as root, the class of keys once more as the unprivileged user of the tests
(benchmarks/as_user.py), as most instructors run it. No two submissions of a class are the same file: each
starts with `# submission N` (a notebook, in its first work cell).

The results file's keys: one figure per class, `qkv_py` (the key), `qkv_py_loops`, `qkv_py_mixed`,
`qkv_notebooks`, `qkv_py_as_user` (the key as the user; where this run could not, `{"not_measured": why}`),
`qkv_same_notebooks` (nbgrader's notebooks) and `nbgrader_autograde`, each with
`submissions`, `wall_s`, `ms_per_submission` (wall / submissions * 1000) and `per_second`; qkv's also
`peak_memory_mb`, `isolation`, `grader_cpu_s` (the trusted process's CPU seconds), `tree_cpu_s` (its whole
process tree's, the sandbox's included, where a control group could be made: benchmarks/tree_cpu.py), and, when the nbgrader
comparison ran, `nbgrader_ratio_per_submission` (nbgrader's ms per notebook over this class's ms per
submission: issue 23's "250x below nbgrader" is this figure); `nbgrader_over_qkv` is nbgrader's wall over
qkv's on the same notebooks. Where `qkv grade` has `--timings FILE`, each qkv figure has `stages`:
`{"grader": {STAGE: ms}, "sandbox": {STAGE: ms}}`, CPU milliseconds per submission, the grader process's
stages as the file names them, the sandbox's from its `NAME_cpu_s` entries (`handler`, `load`, `calls`),
summed over its jobs; the second table prints them, stage by class.

With `--baseline REV`, the same run also grades 1,000 .py files,
1,000 notebooks and the mixed class (REV's samples) with qkv as it was at git revision REV
and with the working tree's qkv, on REV's attention-numpy problems (so both do the same
work), alternating (the version that goes first takes turns), `--rounds` times each, to say
what this version costs over that one, in wall seconds and in CPU seconds of the trusted
grader process, and whether both gave every student the same total. REV is unpacked with
`git archive` (nothing of the repository changes) and run with PYTHONPATH pointing there
(benchmarks/baseline.py, which benchmarks/serve.py --baseline shares).
`--baseline-only` measures that comparison alone and keeps the other figures of the results
file. A measured baseline becomes `baseline`; the one it replaces, of another revision, moves
to `earlier_baselines` (by revision), where the figures quoted for it stay.
qkv is started through the console script's own entry point (`autograder.cli.main`) under
`python -c`, so that process can report its CPU time as it exits.
Run: `.venv/bin/python benchmarks/grade.py [--class-size N] [--nbgrader N] [--baseline REV [--rounds K]
[--baseline-only]] [--results FILE]`; `--nbgrader 0` leaves nbgrader out, and `--results` writes the figures
elsewhere than benchmarks/results/grade.json (a trial run's figures are no benchmark).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))  # as_user, when this file is loaded as a module

from autograder.bank.load import load_bank_strict  # noqa: E402
from autograder.assemble.manifest import find_manifest, resolve_assignment  # noqa: E402
from autograder.course.bank import load_course_bank_strict  # noqa: E402
from autograder.course.find import read_course  # noqa: E402
from conftest import key_module, key_notebook  # noqa: E402

import as_user  # noqa: E402
from tree_cpu import CgroupCpu  # noqa: E402
from baseline import BASELINE, THIS, alternating, commit_of, kept_baselines, medians, ratios, unpacked  # noqa: E402
import summary  # noqa: E402

VENV_BIN = Path(sys.executable).parent
RESULTS = ROOT / "benchmarks" / "results"
SAMPLES = ROOT / "examples" / "submissions" / "attention-numpy"
LOOP_SOLUTION = Path(__file__).resolve().with_name("loop_solution.py")
WRITTEN_PART = 'STUDENT_ID = ""'  # where the key's written answers start
HOSTILE_SAMPLE = "fox.py"
MACHINE = f"{platform.machine()}, {os.cpu_count()} cores"


class PeakMemory:
    """Samples the summed RSS of this process and all its descendants every 50 ms."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _tree_rss(root: int) -> int:
        children: dict[int, list[int]] = {}
        rss: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                status = Path(f"/proc/{entry}/status").read_text(errors="replace")  # a name need not be text
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            pid, ppid = int(entry), int(fields.get("PPid", "0").strip())
            children.setdefault(ppid, []).append(pid)
            rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
        total, stack = 0, [root]
        while stack:
            pid = stack.pop()
            total += rss.get(pid, 0)
            stack.extend(children.get(pid, []))
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._tree_rss(os.getpid()))
            time.sleep(0.05)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# the console script's own entry point, run so that the trusted process reports its CPU time as it exits:
# unlike wall time on a shared machine, that figure hardly moves with the load
QKV = [sys.executable, "-c", "import atexit, resource, sys; atexit.register(lambda: print('QKV-GRADER-CPU',"
       " sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), file=sys.stderr)); from autograder.cli import main;"
       " sys.argv[0] = 'qkv'; main()"]


def ms_per(wall: float, count: int) -> float:
    return round(wall / count * 1000, 2)


def timed_grade(dist: Path, subs: Path, out: Path, qkv: list[str] = QKV, env: dict | None = None,
                cwd: Path | None = None, timings: bool = False,
                wrap: Callable[[list[str]], list[str]] = lambda command: command) -> dict:
    """`qkv grade` as a user runs it, in a process of its own: wall time, and the peak memory of its tree; with
    `timings`, its own CPU time by stage (`--timings`), as `stages`; `wrap` makes the command another's (as_user)."""
    # no --jobs: each version grades with the workers it chooses by itself, as a user's command does
    command = [*qkv, "grade", "attention-numpy", str(subs), "--dist", str(dist), "--out", str(out)]
    stages_file = out.with_name(f"{out.name}-timings.json")
    if timings:
        command += ["--timings", str(stages_file)]
    with CgroupCpu(out.name) as tree, PeakMemory() as memory:
        start = time.perf_counter()
        done = subprocess.run(tree.wrap(wrap(command)), capture_output=True, text=True, env=env, cwd=cwd)
        wall = time.perf_counter() - start
        tree_cpu = tree.seconds()
    assert done.returncode == 0, done.stderr[-2000:]
    grader_cpu = float(done.stderr.rsplit("QKV-GRADER-CPU", 1)[1].split()[0])
    with open(out / "gradebook.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(list(subs.iterdir())), "every submission must be graded"
    isolation = {r["isolation"] for r in rows}
    figure = {"submissions": len(rows), "wall_s": round(wall, 2), "ms_per_submission": ms_per(wall, len(rows)),
              "per_second": round(len(rows) / wall, 1), "peak_memory_mb": round(memory.peak / 2**20),
              "isolation": ",".join(sorted(isolation)),
              # CPU seconds of the trusted grader process alone (a sandbox's processes are not all reaped by
              # their parents, so RUSAGE_CHILDREN would undercount them, and differently in each version)
              "grader_cpu_s": round(grader_cpu, 2),
              # the whole tree's, sandbox included, where a control group could be made (benchmarks/tree_cpu.py)
              **({"tree_cpu_s": round(tree_cpu, 2)} if tree_cpu is not None else {})}
    return {**figure, "stages": read_stages(stages_file)} if timings else figure


def read_stages(path: Path) -> dict[str, dict[str, float]]:
    """A `qkv grade --timings` file as milliseconds per submission of each stage (the module docstring's `stages`)."""
    try:
        timings = json.loads(path.read_text())
        count = timings["submissions"]
        grader = {name: ms_per(float(seconds), count) for name, seconds in timings["grader"].items()}
        # the sandbox's entries other than CPU seconds (its count of jobs) are no stage
        sandbox = {name.removesuffix("_cpu_s"): ms_per(float(seconds), count)
                   for name, seconds in timings["sandbox"].items() if name.endswith("_cpu_s")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError) as err:
        raise SystemExit(f"{path}: not the timings `qkv grade --timings` writes ({err!r})") from None
    return {"grader": grader, "sandbox": sandbox}


def grade_has_timings(qkv: list[str] = QKV) -> bool:
    """Whether this `qkv grade` can report its stages (an engine without `--timings` is still measured)."""
    done = subprocess.run([*qkv, "grade", "--help"], capture_output=True, text=True, check=True)
    return "--timings" in done.stdout


def nbgrader_autograde(course_src: Path, name: str, notebooks: list[str], work: Path) -> dict:
    course = work / "course"
    shutil.copytree(course_src, course)
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", "JUPYTER_RUNTIME_DIR": str(work / "rt")}
    env.pop("PYTEST_CURRENT_TEST", None)
    subprocess.run([str(VENV_BIN / "nbgrader"), "generate_assignment", name, "--force"], cwd=course, env=env,
                   check=True, capture_output=True)
    for i, notebook in enumerate(notebooks):
        folder = course / "submitted" / f"s{i:03d}" / name
        folder.mkdir(parents=True)
        (folder / f"{name}.ipynb").write_text(notebook)
    start = time.perf_counter()
    subprocess.run([str(VENV_BIN / "nbgrader"), "autograde", name, "--create"], cwd=course, env=env,
                   check=True, capture_output=True)
    wall = time.perf_counter() - start
    count = len(notebooks)
    return {"submissions": count, "wall_s": round(wall, 2), "ms_per_submission": ms_per(wall, count),
            "per_second": round(count / wall, 2)}


def marked_py(text: str, i: int) -> str:
    return f"# submission {i}\n{text}"


def notebook_marker(text: str) -> Callable[[int], str]:
    """A function of N giving the notebook `text` with `# submission N` atop its first work cell."""
    notebook = json.loads(text)
    cell = next(c for c in notebook["cells"] if c.get("metadata", {}).get("qkv", {}).get("role") == "work")
    source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])

    def marked(i: int) -> str:
        cell["source"] = f"# submission {i}\n{source}"
        return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"  # as nbformat writes
    return marked


def distinct_copies(texts: list[str], count: int, suffix: str = ".py") -> list[str]:
    """`count` submissions that take `texts` in turn, each marked with its number: no two files the same, so no
    cache of identical files could flatter a figure."""
    markers = [notebook_marker(t) if suffix == ".ipynb" else functools.partial(marked_py, t) for t in texts]
    return [markers[i % len(markers)](i) for i in range(count)]


def write_class(folder: Path, texts: list[str], count: int, suffix: str = ".py") -> Path:
    """The class of `distinct_copies` in `folder`, one file a student."""
    folder.mkdir()
    for i, text in enumerate(distinct_copies(texts, count, suffix)):
        (folder / f"s{i:04d}{suffix}").write_text(text)
    return folder


def loop_submission(key: str) -> str:
    """benchmarks/loop_solution.py with the written part of `key` (its ANSWERS) after it."""
    if WRITTEN_PART not in key:
        raise SystemExit(f"the answer key has no line {WRITTEN_PART!r} to take its ANSWERS from")
    return f"{LOOP_SOLUTION.read_text()}\n\n{key[key.index(WRITTEN_PART):]}"


def mixed_samples(folder: Path) -> list[str]:
    """The bundled samples of the mixed class: all the .py ones but the hostile one."""
    return [p.read_text() for p in sorted(folder.glob("*.py")) if p.name != HOSTILE_SAMPLE]


def graded_totals(out: Path) -> dict[str, str]:
    """Each student's total in a grading's gradebook.csv."""
    with open(out / "gradebook.csv", newline="") as handle:
        return {row["student"]: row["total"] for row in csv.DictReader(handle)}


def course_of(folder: Path, manifest: dict) -> Path:
    """A course in `folder` whose one assignment is `manifest` as attention-numpy, on the bundled problems it names."""
    (folder / "assignments").mkdir(parents=True)
    (folder / "course.yaml").write_text(yaml.safe_dump(
        {"title": "benchmark", "bank": {"folders": [], "bundled": {"ids": manifest["problems"]}}}))
    (folder / "assignments" / "attention-numpy.yaml").write_text(yaml.safe_dump(manifest))
    return folder


def against_baseline(rev: str, rounds: int, class_size: int, work: Path) -> dict:
    """This qkv and qkv at `rev`, on the same problems and the same files, alternating; medians of `rounds` runs."""
    base = work / "baseline"
    # the old engine run from its own checkout (it finds its bank there; `python -c` puts the working folder first
    # on sys.path)
    commit = commit_of(rev)
    old_env = unpacked(commit, base)
    subprocess.run([*QKV, "build", "attention-numpy", "--out", str(work / "old-dist")], cwd=base, env=old_env,
                   check=True, capture_output=True)
    manifest = yaml.safe_load((base / "assignments" / "attention-numpy.yaml").read_text())
    course = course_of(work / "same-problems", manifest)
    new_qkv = [*QKV, "--course", str(course)]
    subprocess.run([*new_qkv, "build", "attention-numpy", "--out", str(work / "new-dist")], check=True,
                   capture_output=True)
    assignment = resolve_assignment(course / "assignments" / "attention-numpy.yaml",
                                    load_course_bank_strict(read_course(course)))
    key = key_module(assignment)
    notebook = key_notebook(assignment, work / "new-dist" / "student" / f"{assignment.module_name}.ipynb")
    folders = {"py": write_class(work / "base-py", [key], class_size),
               "nb": write_class(work / "base-nb", [notebook], class_size, ".ipynb")}
    samples = mixed_samples(base / SAMPLES.relative_to(ROOT))  # rev's own, written for its problems
    if samples:
        folders["mixed"] = write_class(work / "base-mixed", samples, class_size)
    versions = {BASELINE: (QKV, work / "old-dist", old_env, base), THIS: (new_qkv, work / "new-dist", None, None)}
    totals: dict[str, list[dict[str, str]]] = {}

    def graded(label: str, name: str, round_: int) -> dict[str, float]:
        qkv, dist, env, cwd = versions[label]
        out = work / f"out-{label}-{name}-{round_}"
        timing = timed_grade(dist, folders[name], out, qkv, env, cwd)
        totals.setdefault(f"{label}_{name}", []).append(graded_totals(out))
        return {measure: timing[measure] for measure in ("wall_s", "grader_cpu_s", "tree_cpu_s") if measure in timing}

    runs = alternating(rounds, list(folders), graded)
    middle = medians(runs)
    same = {name: totals[f"{THIS}_{name}"] == totals[f"{BASELINE}_{name}"] for name in folders}
    return {"rev": rev, "commit": commit, "problems": len(manifest["problems"]), "submissions": class_size,
            "rounds": rounds, "machine": MACHINE, "python": platform.python_version(),
            "date": datetime.date.today().isoformat(), "runs": runs, "medians": middle,
            "ratios": ratios(middle, list(folders)),
            "same_totals": same}


def at_least(low: int):
    def number(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"at least {low}")
        return value
    return number


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class-size", type=at_least(1), default=1000)
    parser.add_argument("--nbgrader", type=at_least(0), default=100, help="notebooks for the nbgrader comparison (0: none)")
    parser.add_argument("--baseline", metavar="REV", help="also time qkv at this git revision, on its problems")
    parser.add_argument("--rounds", type=at_least(1), default=3)
    parser.add_argument("--baseline-only", action="store_true",
                        help="measure the --baseline comparison alone; the results file keeps its other figures")
    parser.add_argument("--results", type=Path, default=RESULTS / "grade.json", metavar="FILE")
    args = parser.parse_args(argv)
    if args.baseline_only and not args.baseline:
        parser.error("--baseline-only needs --baseline REV")
    return args


def nbgrader_figures(dist: Path, count: int, work: Path, timings: bool = False) -> dict:
    """`qkv grade` and `nbgrader autograde` on the same `count` notebooks of nbgrader's source, and the ratio; none
    for 0, which is no comparison (and qkv grade refuses a folder with nothing to grade)."""
    if not count:
        return {}
    name = "attention-numpy"
    source = (dist / "nbgrader" / "source" / name / f"{name}.ipynb").read_text()
    nbformat.reads(source, as_version=4)
    notebooks = distinct_copies([source], count, ".ipynb")
    same = work / "same"
    same.mkdir()
    for i, notebook in enumerate(notebooks):
        (same / f"s{i:03d}.ipynb").write_text(notebook)
    qkv = timed_grade(dist, same, work / "out-same", timings=timings)
    nbgrader = nbgrader_autograde(dist / "nbgrader", name, notebooks, work)
    return {"qkv_same_notebooks": qkv, "nbgrader_autograde": nbgrader,
            "nbgrader_over_qkv": round(nbgrader["wall_s"] / qkv["wall_s"], 1)}


# every class qkv grades: its key in the results file, its row in the first table, its column in the second
QKV_CLASSES = (("qkv_py", "qkv grade, .py files, answer key", ".py keys"),
               ("qkv_py_loops", "qkv grade, .py files, loop solution", ".py loops"),
               ("qkv_py_mixed", "qkv grade, .py files, mixed class", "mixed class"),
               ("qkv_py_as_user", "qkv grade, .py files, answer key, as a normal user", ".py keys as a user"),
               ("qkv_notebooks", "qkv grade, notebooks", "notebooks"),
               ("qkv_same_notebooks", "qkv grade, nbgrader notebooks", "nbgrader's notebooks"))


def with_nbgrader_ratios(figures: dict) -> dict:
    """`figures` with each qkv class's `nbgrader_ratio_per_submission`, where nbgrader ran beside them."""
    nbgrader = figures.get("nbgrader_autograde")
    if nbgrader is None:
        return figures
    rated = dict(figures)
    for key, _, _ in QKV_CLASSES:
        if "ms_per_submission" in figures.get(key, {}):  # not a class this run could not measure
            ratio = nbgrader["ms_per_submission"] / figures[key]["ms_per_submission"]
            rated[key] = {**figures[key], "nbgrader_ratio_per_submission": round(ratio, 1)}
    return rated


def stage_table(figures: dict) -> list[str]:
    """Milliseconds per submission of each stage (rows) in each class that has them (columns); none without."""
    classes = [(key, column) for key, _, column in QKV_CLASSES if "stages" in figures.get(key, {})]
    if not classes:
        return []
    rows: dict[tuple[str, str], None] = {}  # every stage any class has, in the order they first come
    for key, _ in classes:
        for part, stages in figures[key]["stages"].items():
            rows.update(dict.fromkeys((part, stage) for stage in stages))
    lines = ["\n| stage, CPU ms per submission | " + " | ".join(column for _, column in classes) + " |",
             "|---|" + "---|" * len(classes)]
    for part, stage in rows:
        cells = [figures[key]["stages"].get(part, {}).get(stage, "-") for key, _ in classes]
        lines.append(f"| {part}: {stage} | " + " | ".join(str(c) for c in cells) + " |")
    return lines


def report(figures: dict) -> str:
    """The Markdown tables for the README, and the sentences under them, of the figures measured."""
    rows = [(key, label) for key, label, _ in QKV_CLASSES] + [("nbgrader_autograde",
                                                              "nbgrader autograde, same notebooks")]
    lines = ["| what | submissions | wall s | ms per submission | per second | peak memory MB | "
             "nbgrader's ms over qkv's |", "|---|---|---|---|---|---|---|"]
    for key, label in rows:
        if "not_measured" in figures.get(key, {}):
            lines.append(f"| {label} | not measured: {figures[key]['not_measured']} | | | | | |")
        elif key in figures:
            f = figures[key]
            lines.append(f"| {label} | {f['submissions']} | {f['wall_s']} | {f.get('ms_per_submission', '-')} | "
                         f"{f['per_second']} | {f.get('peak_memory_mb', '-')} | "
                         f"{f.get('nbgrader_ratio_per_submission', '-')} |")
    if "nbgrader_over_qkv" in figures:
        lines.append(f"\nnbgrader autograde takes {figures['nbgrader_over_qkv']}x as long as qkv grade on the same "
                     "notebooks.")
    lines += stage_table(figures)
    if "baseline" in figures:
        b = figures["baseline"]
        lines.append(f"\nOn the {b['problems']} problems of {b['rev']}'s attention-numpy, {b['submissions']} "
                     f"submissions, medians of {b['rounds']} (then -> now, ratio):")
        classes = [(name, label) for name, label in (("py", ".py"), ("nb", "notebooks"), ("mixed", "mixed class"))
                   if name in b["ratios"]["wall_s"]]
        for measure, what in (("wall_s", "wall s"), ("grader_cpu_s", "CPU s, the grader process"),
                              ("tree_cpu_s", "CPU s, its whole process tree (the sandbox's too)")):
            if measure not in b["medians"]:  # no control group where it ran, or results of before
                continue
            m, r = b["medians"][measure], b["ratios"][measure]
            lines.append(f"  {what}: " + "; ".join(f"{label} {m[f'baseline_{name}']} -> {m[f'this_{name}']} "
                                                   f"({r[name]}x)" for name, label in classes))
        if "same_totals" in b:
            lines.append("  every student's total the same in both: " + "; ".join(
                f"{label} {'yes' if b['same_totals'][name] else 'NO'}" for name, label in classes))
    return "\n".join(lines)


def class_figures(args: argparse.Namespace, work: Path) -> dict:
    """`qkv grade` on the classes of the working tree's attention-numpy, and nbgrader beside it."""
    # built by the command, apart: the build runs the references (torch too), which `qkv grade` never loads
    dist = work / "dist"
    # its course gives the class one set of numbers (the bundled one draws them per student): one key is handed in as
    # every student of the generated class, grading costs the same, and every score can be checked against the key's
    manifest = yaml.safe_load(find_manifest("attention-numpy").read_text())
    manifest.update(variants="same", roster=[])
    course = course_of(work / "same-numbers", manifest)
    subprocess.run([str(VENV_BIN / "qkv"), "--course", str(course), "build", "attention-numpy", "--out", str(dist)],
                   check=True, capture_output=True)
    assignment = resolve_assignment(course / "assignments" / "attention-numpy.yaml", load_bank_strict())
    key = key_module(assignment)
    notebook = key_notebook(assignment, dist / "student" / f"{assignment.module_name}.ipynb")
    timings = grade_has_timings()
    classes = (("qkv_py", [key], ".py"), ("qkv_py_loops", [loop_submission(key)], ".py"),
               ("qkv_py_mixed", mixed_samples(SAMPLES), ".py"), ("qkv_notebooks", [notebook], ".ipynb"))
    figures = {}
    for name, texts, suffix in classes:
        files = write_class(work / name, texts, args.class_size, suffix)
        figures[name] = timed_grade(dist, files, work / f"out-{name}", timings=timings)
    figures.update(key_as_user(dist, key, args.class_size, work, timings))
    figures.update(nbgrader_figures(dist, args.nbgrader, work, timings))
    return with_nbgrader_ratios(figures)


def key_as_user(dist: Path, key: str, count: int, work: Path, timings: bool) -> dict:
    """The class of keys graded as the unprivileged user (benchmarks/as_user.py), in a folder of theirs: where
    this run cannot, `qkv_py_as_user` says why instead of giving figures."""
    why = as_user.why_not()
    if why:
        return {"qkv_py_as_user": {"not_measured": why}}
    theirs = Path(tempfile.mkdtemp(prefix="qkv-bench-user-", dir="/tmp"))
    try:
        shutil.copytree(dist, theirs / "dist")
        files = write_class(theirs / "class", [key], count)
        (theirs / "home").mkdir()
        as_user.hand_over(theirs)
        stage = work / "as-user-stage"
        stage.mkdir()
        return {"qkv_py_as_user": timed_grade(theirs / "dist", files, theirs / "out", timings=timings,
                                              wrap=lambda command: as_user.as_user(command, theirs / "home", stage))}
    except (AssertionError, OSError, pytest.skip.Exception, pytest.fail.Exception) as failed:
        # the other classes are measured already: a user's run that fails (no bubblewrap for users here, a mount
        # refused) is a reason in the results, not the end of the benchmark
        return {"qkv_py_as_user": {"not_measured": f"the run as {as_user.USER} failed: {str(failed)[-300:]}"}}
    finally:
        shutil.rmtree(theirs, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.baseline:
        commit_of(args.baseline)  # before the minutes of the other figures
    try:
        previous = json.loads(args.results.read_text()) if args.results.exists() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SystemExit(f"{args.results}: not a results file this benchmark can add to ({err})") from None
    figures: dict = {"machine": MACHINE, "python": platform.python_version()}
    if args.baseline_only:  # the figures measured before stay, with the machine they were measured on
        figures = {key: value for key, value in previous.items() if key not in ("baseline", "earlier_baselines")}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if not args.baseline_only:
            figures.update(class_figures(args, work))
        if args.baseline:
            figures["baseline"] = against_baseline(args.baseline, args.rounds, args.class_size, work)
    figures.update(kept_baselines(previous, figures))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=1) + "\n")
    summary.write_for(args.results)
    print(report(figures))


if __name__ == "__main__":
    main()
