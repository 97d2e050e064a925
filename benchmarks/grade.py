"""Benchmark of `qkv grade`: a class of .py files, a class of notebooks, and real nbgrader side by side.

Writes benchmarks/results/grade.json and prints a Markdown table for the README.
Every figure is of the `qkv grade` command, run as a user runs it. Figures: wall
seconds and peak memory (RSS of the whole process tree, sampled)
for 1,000 .py submissions and 1,000 notebooks of attention-numpy (copies of the
answer key), 1,000 .py files of a mixed class (the bundled samples in turn:
perfect, classic mistakes, a syntax error, the untouched stub; not the hostile
one, whose endless loop would make this a benchmark of the time limit), and,
in the same run, the same 100 notebooks graded by `nbgrader autograde` and by
`qkv grade`, as a ratio. With `--baseline REV`, the same run also grades 1,000 .py files,
1,000 notebooks and the mixed class (REV's samples) with qkv as it was at git revision REV
and with the working tree's qkv, on REV's attention-numpy problems (so both do the same
work), alternating (the version that goes first takes turns), `--rounds` times each, to say
what this version costs over that one, in wall seconds and in CPU seconds of the trusted
grader process, and whether both gave every student the same total. REV is unpacked with
`git archive` (nothing of the repository changes) and run with PYTHONPATH pointing there.
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
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from autograder.bank.load import load_bank_strict  # noqa: E402
from autograder.assemble.manifest import find_manifest, resolve_assignment  # noqa: E402
from autograder.course.bank import load_course_bank_strict  # noqa: E402
from autograder.course.find import read_course  # noqa: E402
from conftest import key_module, key_notebook  # noqa: E402

VENV_BIN = Path(sys.executable).parent
RESULTS = ROOT / "benchmarks" / "results"
SAMPLES = ROOT / "examples" / "submissions" / "attention-numpy"
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
                status = Path(f"/proc/{entry}/status").read_text()
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


def timed_grade(dist: Path, subs: Path, out: Path, qkv: list[str] = QKV, env: dict | None = None,
                cwd: Path | None = None) -> dict:
    """`qkv grade` as a user runs it, in a process of its own: wall time, and the peak memory of its tree."""
    command = [*qkv, "grade", "attention-numpy", str(subs), "--dist", str(dist), "--out", str(out),
               "--jobs", str(os.cpu_count())]
    with PeakMemory() as memory:
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
        wall = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-2000:]
    grader_cpu = float(done.stderr.rsplit("QKV-GRADER-CPU", 1)[1].split()[0])
    with open(out / "gradebook.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(list(subs.iterdir())), "every submission must be graded"
    isolation = {r["isolation"] for r in rows}
    return {"submissions": len(rows), "wall_s": round(wall, 2), "per_second": round(len(rows) / wall, 1),
            "peak_memory_mb": round(memory.peak / 2**20), "isolation": ",".join(sorted(isolation)),
            # CPU seconds of the trusted grader process alone (a sandbox's processes are not all reaped by
            # their parents, so RUSAGE_CHILDREN would undercount them, and differently in each version)
            "grader_cpu_s": round(grader_cpu, 2)}


def nbgrader_autograde(course_src: Path, name: str, notebook: str, count: int, work: Path) -> dict:
    course = work / "course"
    shutil.copytree(course_src, course)
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", "JUPYTER_RUNTIME_DIR": str(work / "rt")}
    env.pop("PYTEST_CURRENT_TEST", None)
    subprocess.run([str(VENV_BIN / "nbgrader"), "generate_assignment", name, "--force"], cwd=course, env=env,
                   check=True, capture_output=True)
    for i in range(count):
        folder = course / "submitted" / f"s{i:03d}" / name
        folder.mkdir(parents=True)
        (folder / f"{name}.ipynb").write_text(notebook)
    start = time.perf_counter()
    subprocess.run([str(VENV_BIN / "nbgrader"), "autograde", name, "--create"], cwd=course, env=env,
                   check=True, capture_output=True)
    wall = time.perf_counter() - start
    return {"submissions": count, "wall_s": round(wall, 2), "per_second": round(count / wall, 2)}


def write_class(folder: Path, texts: list[str], count: int, suffix: str = ".py") -> Path:
    """`count` submissions that take `texts` in turn; a .py file ends with a comment of its own (no two the same)."""
    folder.mkdir()
    for i in range(count):
        text = texts[i % len(texts)]
        (folder / f"s{i:04d}{suffix}").write_text(f"{text}\n# student {i}\n" if suffix == ".py" else text)
    return folder


def mixed_samples(folder: Path) -> list[str]:
    """The bundled samples of the mixed class: all the .py ones but the hostile one."""
    return [p.read_text() for p in sorted(folder.glob("*.py")) if p.name != HOSTILE_SAMPLE]


def graded_totals(out: Path) -> dict[str, str]:
    """Each student's total in a grading's gradebook.csv."""
    with open(out / "gradebook.csv", newline="") as handle:
        return {row["student"]: row["total"] for row in csv.DictReader(handle)}


def commit_of(rev: str) -> str:
    """The commit `rev` names in this repository; a user-facing error where it names none."""
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        raise SystemExit(f"--baseline {rev}: no such commit in {ROOT}")
    return found.stdout.strip()


def unpacked(commit: str, base: Path) -> dict:
    """qkv at `commit` in `base`, and the environment that runs it there with this venv's libraries."""
    base.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    env = {**os.environ, "PYTHONPATH": str(base)}
    # an editable install that won over PYTHONPATH would compare this qkv with itself
    probe = ("import autograder, qkv_runtime, autograder.references as r\n"
             "print(autograder.__file__, qkv_runtime.__file__, r.__file__)")
    found = subprocess.run([sys.executable, "-c", probe], cwd=base, env=env, capture_output=True, text=True, check=True)
    strays = [f for f in found.stdout.split() if not Path(f).resolve().is_relative_to(base.resolve())]
    if strays:
        raise SystemExit(f"--baseline {commit}: its engine would be loaded from {strays[0]}, not from {base}")
    return env


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
    course = work / "same-problems"
    (course / "assignments").mkdir(parents=True)
    (course / "course.yaml").write_text(yaml.safe_dump(
        {"title": "benchmark", "bank": {"folders": [], "bundled": {"ids": manifest["problems"]}}}))
    (course / "assignments" / "attention-numpy.yaml").write_text(yaml.safe_dump(manifest))
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
    versions = (("baseline", QKV, work / "old-dist", old_env, base), ("this", new_qkv, work / "new-dist", None, None))
    runs: dict[str, dict[str, list[float]]] = {}
    totals: dict[str, list[dict[str, str]]] = {}
    for round_ in range(rounds):
        for name, files in folders.items():
            for label, qkv, dist, env, cwd in (versions if round_ % 2 == 0 else versions[::-1]):
                out = work / f"out-{label}-{name}-{round_}"
                timing = timed_grade(dist, files, out, qkv, env, cwd)
                for measure in ("wall_s", "grader_cpu_s"):
                    runs.setdefault(measure, {}).setdefault(f"{label}_{name}", []).append(timing[measure])
                totals.setdefault(f"{label}_{name}", []).append(graded_totals(out))
    medians = {measure: {name: round(statistics.median(values), 2) for name, values in by_name.items()}
               for measure, by_name in runs.items()}
    ratios = {measure: {name: round(m[f"this_{name}"] / m[f"baseline_{name}"], 3) for name in folders}
              for measure, m in medians.items()}
    same = {name: totals[f"this_{name}"] == totals[f"baseline_{name}"] for name in folders}
    return {"rev": rev, "commit": commit, "problems": len(manifest["problems"]), "submissions": class_size,
            "rounds": rounds, "machine": MACHINE, "python": platform.python_version(),
            "date": datetime.date.today().isoformat(), "runs": runs, "medians": medians, "ratios": ratios,
            "same_totals": same}


def kept_baselines(previous: dict, figures: dict) -> dict:
    """The baseline figures to write: the one measured now (else the file's), and every other revision's under
    earlier_baselines, so that what the README quotes of an earlier comparison stays in the file."""
    earlier = dict(previous.get("earlier_baselines", {}))
    if "baseline" in previous:
        earlier[previous["baseline"]["rev"]] = previous["baseline"]
    current = figures.get("baseline", previous.get("baseline"))
    if current is None:
        return {}
    earlier.pop(current["rev"], None)
    return {"baseline": current, **({"earlier_baselines": earlier} if earlier else {})}


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


def nbgrader_figures(dist: Path, count: int, work: Path) -> dict:
    """`qkv grade` and `nbgrader autograde` on the same `count` notebooks of nbgrader's source, and the ratio; none
    for 0, which is no comparison (and qkv grade refuses a folder with nothing to grade)."""
    if not count:
        return {}
    name = "attention-numpy"
    source = (dist / "nbgrader" / "source" / name / f"{name}.ipynb").read_text()
    nbformat.reads(source, as_version=4)
    same = work / "same"
    same.mkdir()
    for i in range(count):
        (same / f"s{i:03d}.ipynb").write_text(source)
    qkv = timed_grade(dist, same, work / "out-same")
    nbgrader = nbgrader_autograde(dist / "nbgrader", name, source, count, work)
    return {"qkv_same_notebooks": qkv, "nbgrader_autograde": nbgrader,
            "nbgrader_over_qkv": round(nbgrader["wall_s"] / qkv["wall_s"], 1)}


def report(figures: dict) -> str:
    """The Markdown table for the README, and the sentences under it, of the figures measured."""
    rows = [
        ("qkv grade, .py files", "qkv_py"),
        ("qkv grade, .py files, mixed class", "qkv_py_mixed"),
        ("qkv grade, notebooks", "qkv_notebooks"),
        ("qkv grade, nbgrader notebooks", "qkv_same_notebooks"),
        ("nbgrader autograde, same notebooks", "nbgrader_autograde"),
    ]
    lines = ["| what | submissions | wall s | per second | peak memory MB |", "|---|---|---|---|---|"]
    for label, key in rows:
        if key in figures:
            f = figures[key]
            lines.append(f"| {label} | {f['submissions']} | {f['wall_s']} | {f['per_second']} | "
                         f"{f.get('peak_memory_mb', '-')} |")
    if "nbgrader_over_qkv" in figures:
        lines.append(f"\nnbgrader autograde takes {figures['nbgrader_over_qkv']}x as long as qkv grade on the same "
                     "notebooks.")
    if "baseline" in figures:
        b = figures["baseline"]
        lines.append(f"\nOn the {b['problems']} problems of {b['rev']}'s attention-numpy, {b['submissions']} "
                     f"submissions, medians of {b['rounds']} (then -> now, ratio):")
        classes = [(name, label) for name, label in (("py", ".py"), ("nb", "notebooks"), ("mixed", "mixed class"))
                   if name in b["ratios"]["wall_s"]]
        for measure, what in (("wall_s", "wall s"), ("grader_cpu_s", "CPU s, the grader process")):
            m, r = b["medians"][measure], b["ratios"][measure]
            lines.append(f"  {what}: " + "; ".join(f"{label} {m[f'baseline_{name}']} -> {m[f'this_{name}']} "
                                                   f"({r[name]}x)" for name, label in classes))
        if "same_totals" in b:
            lines.append("  every student's total the same in both: " + "; ".join(
                f"{label} {'yes' if b['same_totals'][name] else 'NO'}" for name, label in classes))
    return "\n".join(lines)


def class_figures(args: argparse.Namespace, work: Path) -> dict:
    """`qkv grade` on the classes of the working tree's attention-numpy, and nbgrader beside it."""
    figures = {}
    # built by the command, apart: the build runs the references (torch too), which `qkv grade` never loads
    dist = work / "dist"
    subprocess.run([str(VENV_BIN / "qkv"), "build", "attention-numpy", "--out", str(dist)], check=True,
                   capture_output=True)
    assignment = resolve_assignment(find_manifest("attention-numpy"), load_bank_strict())
    key = key_module(assignment)
    notebook = key_notebook(assignment, dist / "student" / f"{assignment.module_name}.ipynb")
    py = write_class(work / "py", [key], args.class_size)
    nb = write_class(work / "nb", [notebook], args.class_size, ".ipynb")
    figures["qkv_py"] = timed_grade(dist, py, work / "out-py")
    mixed = write_class(work / "mixed", mixed_samples(SAMPLES), args.class_size)
    figures["qkv_py_mixed"] = timed_grade(dist, mixed, work / "out-mixed")
    figures["qkv_notebooks"] = timed_grade(dist, nb, work / "out-nb")
    figures.update(nbgrader_figures(dist, args.nbgrader, work))
    return figures


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
    print(report(figures))


if __name__ == "__main__":
    main()
