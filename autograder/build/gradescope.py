"""The Gradescope autograder zip: an `Assignment` and its grading-bundle files in, the zip's bytes out.

At the zip's root: `setup.sh` (installs the pinned packages the grader needs),
`run_autograder` (grades /autograder/submission into
/autograder/results/results.json), and `source/`: the qkv engine, the
reference package (per-student answers are computed from it) and the bundle.
Instructors only: it holds expected values and references.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from autograder.archive import zip_bytes
from autograder.build.manifest import Assignment

PACKAGES = ("autograder", "solutions")
RUNTIME_REQUIREMENTS = ("numpy", "pyyaml", "pydantic", "jinja2", "nbformat", "matplotlib")


def _package_files(root: Path, package: str) -> dict[str, bytes]:
    base = root / package
    return {
        f"source/{package}/{path.relative_to(base)}": path.read_bytes()
        for path in sorted(base.rglob("*"))
        if path.is_file() and path.suffix in (".py", ".j2") and "__pycache__" not in path.parts
    }


def _pins(track: str) -> list[str]:
    pins = [f"{name}=={metadata.version(name)}" for name in RUNTIME_REQUIREMENTS]
    return pins + ([f"torch=={metadata.version('torch').split('+')[0]}"] if track == "torch" else [])


def gradescope_zip(assignment: Assignment, bundle_files: dict[str, bytes]) -> bytes:
    root = Path(__file__).resolve().parents[2]
    setup = (
        "#!/usr/bin/env bash\n"
        "# Gradescope runs this once when the autograder image is built.\n"
        "set -euo pipefail\n"
        "apt-get update -qq && apt-get install -y -qq bubblewrap python3-pip || true\n"
        f"python3 -m pip install --quiet {' '.join(_pins(assignment.track))}\n"
    )
    run = (
        "#!/usr/bin/env bash\n"
        "# Gradescope runs this for every submission.\n"
        "set -euo pipefail\n"
        'cd "$(dirname "$0")/source"\n'
        "PYTHONPATH=. exec python3 -m autograder.grade.gradescope\n"
    )
    members = {"setup.sh": setup.encode(), "run_autograder": run.encode()}
    for package in PACKAGES:
        members.update(_package_files(root, package))
    members.update({f"source/bundle/{path}": data for path, data in bundle_files.items()})
    return zip_bytes(members, executable=frozenset({"setup.sh", "run_autograder"}))
