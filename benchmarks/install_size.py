"""Installed size of qkv's core and of each extra, from the wheel, each in a fresh venv.

Writes benchmarks/results/install.json (and docs/benchmarks.md from it) and prints a Markdown table.
Sizes are of the venv's site-packages (what `pip install` added), in MB; an extra's
row is the core plus that extra. Run: `.venv/bin/python benchmarks/install_size.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import summary

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
VARIANTS = {"core": "", "torch": "[torch]", "cluster": "[cluster]", "nbgrader": "[nbgrader]"}


def site_packages_bytes(venv: Path) -> int:
    (site,) = (venv / "lib").glob("python3*/site-packages")
    total = 0
    for folder, _, files in os.walk(site):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                total += os.lstat(path).st_size
    return total


def report(figures: dict) -> str:
    lines = ["| install | MB in site-packages |", "|---|---|",
             f"| `pip install qkv` (core) | {figures['installed_mb']['core']} |"]
    lines += [f"| `qkv[{label}]` | + {mb} |" for label, mb in figures["extra_mb"].items()]
    return "\n".join(lines)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                        str(ROOT), "-w", str(work)], check=True)
        (wheel,) = work.glob("qkv-*.whl")
        empty = work / "empty"
        subprocess.run([sys.executable, "-m", "venv", str(empty)], check=True)
        baseline = site_packages_bytes(empty)  # pip and setuptools of a bare venv
        sizes = {}
        for label, extra in VARIANTS.items():
            venv = work / label
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "-c", str(ROOT / "requirements.lock"), f"{wheel}{extra}"], check=True, cwd=work)
            sizes[label] = round((site_packages_bytes(venv) - baseline) / 1e6, 1)
            print(f"{label}: {sizes[label]} MB", file=sys.stderr)
    figures = {"python": sys.version.split()[0], "installed_mb": sizes,
               "extra_mb": {k: round(v - sizes["core"], 1) for k, v in sizes.items() if k != "core"}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "install.json").write_text(json.dumps(figures, indent=1) + "\n")
    summary.write()
    print(report(figures))

if __name__ == "__main__":
    main()
