"""What a benchmark's `--baseline REV` needs, whichever command it measures (benchmarks/grade.py, benchmarks/serve.py).

qkv at REV is unpacked with `git archive` into a folder (nothing of the repository changes) and run through this
venv's Python with PYTHONPATH pointing there; each trial is run by both versions in turn, the one that goes first
taking turns round by round (a machine that grows busier or quieter over the run then weighs on both alike); the
figures are the medians of the rounds and this version's over the baseline's. A results file keeps the baseline
measured last under `baseline` and every other revision's under `earlier_baselines`.

The two versions' labels: BASELINE (qkv at REV) and THIS (the working tree). Each figure of a trial ITEM measured by
version LABEL is kept under `LABEL_ITEM`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE, THIS = "baseline", "this"
VERSIONS = (BASELINE, THIS)

Runs = dict[str, dict[str, list[float]]]  # figure -> LABEL_ITEM -> its value in each round


def commit_of(rev: str) -> str:
    """The commit `rev` names in this repository; a user-facing error where it names none."""
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        raise SystemExit(f"--baseline {rev}: no such commit in {ROOT}")
    return found.stdout.strip()


def unpacked(commit: str, base: Path, patch: Path | None = None) -> dict:
    """qkv at `commit` in `base` (with `patch` applied, when given), and the environment that runs it there with
    this venv's libraries."""
    base.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    if patch is not None:
        applied = subprocess.run(["git", "apply", str(patch.resolve())], cwd=base, capture_output=True, text=True)
        if applied.returncode != 0:
            raise SystemExit(f"--patch {patch}: does not apply to {commit[:7]} ({applied.stderr.strip()[:300]})")
    env = {**os.environ, "PYTHONPATH": str(base)}
    # an editable install that won over PYTHONPATH would compare this qkv with itself
    probe = ("import autograder, qkv_runtime, autograder.references as r\n"
             "print(autograder.__file__, qkv_runtime.__file__, r.__file__)")
    # from beside `base`, not in it: `python -c` puts its working folder first, the console script does not
    found = subprocess.run([sys.executable, "-c", probe], cwd=base.parent, env=env, capture_output=True, text=True,
                           check=True)
    strays = [f for f in found.stdout.split() if not Path(f).resolve().is_relative_to(base.resolve())]
    if strays:
        raise SystemExit(f"--baseline {commit}: its engine would be loaded from {strays[0]}, not from {base}")
    return env


def alternating(rounds: int, items: Sequence[str], measure: Callable[[str, str, int], dict[str, float]]) -> Runs:
    """`measure(label, item, round)` of each item by both versions, `rounds` times: item by item, the baseline first
    in even rounds and this version first in odd ones. Each figure it gives, by LABEL_ITEM, a value a round."""
    runs: Runs = {}
    for round_ in range(rounds):
        for item in items:
            for label in (VERSIONS if round_ % 2 == 0 else VERSIONS[::-1]):
                for figure, value in measure(label, item, round_).items():
                    runs.setdefault(figure, {}).setdefault(f"{label}_{item}", []).append(value)
    return runs


def medians(runs: Runs) -> dict[str, dict[str, float]]:
    return {figure: {key: round(statistics.median(values), 2) for key, values in by_key.items()}
            for figure, by_key in runs.items()}


def ratios(middle: dict[str, dict[str, float]], items: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """This version's median over the baseline's, each figure and item (None where the baseline's is 0)."""
    return {figure: {item: (round(m[f"{THIS}_{item}"] / m[f"{BASELINE}_{item}"], 3) if m[f"{BASELINE}_{item}"]
                            else None) for item in items}
            for figure, m in middle.items()}


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
