"""docs/benchmarks.md, made from benchmarks/results/*.json: the only page that quotes the benchmarks' figures.

Each benchmark writes its results file and then calls `write()`, so the page changes with the figures and never by
hand; tests/benchmarks/test_benchmarks.py fails when the committed page is not what the committed results give. A
benchmark whose script has `report(figures) -> str` (`own_report`) is shown by it, its own tables; any other by its
figures flattened into a table, so a new results file needs no more than its entry in SECTIONS.

    .venv/bin/python benchmarks/summary.py [--check]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
FLAT_ROWS = 60  # a flattened results file is cut there: the JSON beside it has the rest


@dataclass(frozen=True)
class Section:
    results: str  # the file's stem in benchmarks/results/
    script: str  # the benchmark that writes it
    title: str
    what: str  # what it measures and how, in a sentence or two (the script's docstring says the rest)
    own_report: bool = False  # the script has report(figures) -> str, its own tables


SECTIONS = (
    Section("grade", "grade.py", "`qkv grade` beside `nbgrader autograde`",
            "1,000 copies each of attention-numpy's key, a loop-style solution, the mixed sample class and the key "
            "as notebooks, and 100 nbgrader notebooks graded by both tools in the same run; the CPU of each stage "
            "from `qkv grade --timings`.", own_report=True),
    Section("serve", "serve.py", "`qkv serve` on loopback",
            "A class handing in at once through the browser's forms, each client reading its attempt's page again "
            "when the page says; once more with `kill -9` of the server midway and a restart on the same store.", own_report=True),
    Section("serve_looping", "serve.py", "`qkv serve` with looping students in the class",
            "The same class with a fraction of looping students (`--looping`), whose every function never returns: "
            "what an honest student waits beside them, and what the looping ones wait.", own_report=True),
    Section("serve_without_work_f6e097c_did_not_do", "serve.py", "`qkv serve` against f6e097c for the same work",
            "The class served by f6e097c (before issue 46) and by this qkv's last commit less the work f6e097c did "
            "not do (`--patch benchmarks/patches/without_work_f6e097c_did_not_do.patch`: no fresh numbers on every "
            "attempt, no scan of requests for control characters, submissions compiled under the sandbox's own "
            "`from __future__ import annotations` again), in alternating rounds.", own_report=True),
    Section("practice", "practice.py", "`qkv serve`'s practice and mock exam on loopback",
            "A class signing in, then practising written problems at once (answer to feedback: the answer's POST and "
            "the verdict's page), then opening a mock exam in the same minute and saving its items, each student a "
            "session of its own from an address of its own; every acknowledged answer checked in the gradebook "
            "afterwards.", own_report=True),
    Section("serve_mix", "serve.py", "`qkv serve` with a realistic class",
            "The class as it comes (`--mix realistic`): the bundled samples mixed (right, classic mistakes, a syntax "
            "error, the stub), every tenth hand-in a notebook, 5% of the students looping; each client from a "
            "loopback address of its own.", own_report=True),
    Section("serve_mix_postgresql", "serve.py", "`qkv serve` on PostgreSQL with two web processes",
            "The realistic class (`--mix realistic --postgresql`) served as docs/serve.md sets up several web "
            "processes: two `qkv serve` processes on one PostgreSQL database (its commits synced), the clients split "
            "between them, the first killed (-9) midway.", own_report=True),
    Section("cluster", "cluster.py", "`qkv grade --cluster local:N` against the local grader",
            "The same class graded locally and on a local Dask cluster with as many workers, in one run."),
    Section("stats", "stats.py", "`qkv stats` on 10,000 graded submissions",
            "A gradebook written as `qkv grade` writes it, read and analysed, its page drawn."),
    Section("feedback", "feedback.py", "Feedback pages",
            "Feedback pages (feedback.html and results.json) from the sample class's real results, before and after "
            "the due date."),
    Section("copying", "copying.py", "Copying signals",
            "What each copying threshold flags on the sample class and on constructed honest students."),
    Section("selfcheck", "selfcheck.py", "The offline self-check",
            "What the sealed answers cost an attacker and a student, and a build of the release for a roster.",
            own_report=True),
    Section("install", "install_size.py", "Installed size",
            "The wheel installed into a fresh venv, alone and with each extra (MB in site-packages).", own_report=True),
)


def _script(name: str) -> ModuleType:
    # the scripts import one another (and this module) by name, as they do when run from benchmarks/
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    stem = Path(name).stem
    if stem in sys.modules:
        return sys.modules[stem]
    spec = importlib.util.spec_from_file_location(stem, ROOT / "benchmarks" / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module  # before it runs: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def flattened(figures: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(the figure's path, its value) for every number, string and flag; lists of numbers in one cell."""
    if isinstance(figures, dict):
        return [row for key, value in figures.items()
                for row in flattened(value, f"{prefix} / {key}" if prefix else str(key))]
    if isinstance(figures, list):
        if all(not isinstance(v, (dict, list)) for v in figures):
            return [(prefix, ", ".join(str(v) for v in figures))]
        return [(prefix, f"{len(figures)} entries: see the results file")]
    return [(prefix, str(figures))]


def flat_table(figures: dict) -> str:
    rows = [(k, v) for k, v in flattened({k: v for k, v in figures.items() if k != "machine"})]
    lines = ["| figure | value |", "|---|---|"]
    lines += [f"| {key} | {value.replace('|', '/')} |" for key, value in rows[:FLAT_ROWS]]
    if len(rows) > FLAT_ROWS:
        lines.append(f"| ... | {len(rows) - FLAT_ROWS} more in the results file |")
    return "\n".join(lines)


def machine_line(figures: dict) -> str:
    machine = figures.get("machine")
    if isinstance(machine, dict):
        return "Machine: " + ", ".join(f"{k} {v}" for k, v in machine.items() if not isinstance(v, (dict, list)))
    return f"Machine: {machine}" if machine else ""


def section(entry: Section, figures: dict, report: Callable[[dict], str] | None) -> str:
    parts = [f"## {entry.title}", "",
             f"{entry.what} `benchmarks/{entry.script}`, figures in `benchmarks/results/{entry.results}.json`.", ""]
    parts += [report(figures) if report is not None else flat_table(figures), ""]
    machine = machine_line(figures)
    return "\n".join(parts + ([machine, ""] if machine else []))


def render(results: Path = RESULTS) -> str:
    out = ["# Benchmarks", "",
           "Made by `benchmarks/summary.py` from the results the benchmarks wrote (each benchmark rewrites this page "
           "when it writes its results): do not edit it by hand. The machine is 2 cores and 24 GiB; its speed drifts "
           "by a fifth from day to day, so compare figures of one run, and changes only in alternating rounds "
           "(`benchmarks/grade.py --baseline REV`). What each stage of grading is: [architecture](architecture.md).",
           ""]
    for entry in SECTIONS:
        path = results / f"{entry.results}.json"
        if not path.exists():
            continue
        figures = json.loads(path.read_text(encoding="utf-8"))
        out.append(section(entry, figures, _script(entry.script).report if entry.own_report else None))
    return "\n".join(out).rstrip() + "\n"


def write(results: Path = RESULTS, page: Path = PAGE) -> Path:
    page.write_text(render(results), encoding="utf-8")
    return page


def write_for(results_file: Path) -> None:
    """The page again after a benchmark wrote `results_file`, unless that is a trial run's file elsewhere."""
    if results_file.resolve().parent == RESULTS.resolve():
        write()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is not what the results give")
    args = parser.parse_args(argv)
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != render():
            print(f"{PAGE.relative_to(ROOT)} is not what benchmarks/results/ gives: run benchmarks/summary.py",
                  file=sys.stderr)
            return 1
        return 0
    print(write())
    return 0


if __name__ == "__main__":
    sys.exit(main())
