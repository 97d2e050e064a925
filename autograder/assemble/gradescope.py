"""The Gradescope autograder zip: an `Assignment` and its grading-bundle files in, the zip's bytes out.

Gradescope unpacks the zip into /autograder/source and runs, once, `setup.sh`
(as root, on Ubuntu 22.04's Python 3.10 by default): it makes a virtual
environment of its own (newer images refuse a system-wide pip, PEP 668) with
exactly the pins of `requirements.txt`, which are proven to install on Python
3.10 and newer (tests/routes/test_gradescope.py), and installs bubblewrap where apt
can. Then per submission `run_autograder` grades /autograder/submission into
/autograder/results/results.json (autograder/routes/gradescope.py).

At the zip's root beside the two scripts: the engine (`autograder/`, with the
bundled references as `autograder/references/`: per-student answers are computed
from them), the portable runtime and `bundle/`. Instructors only: it holds expected values and references,
and the route makes all of it readable by root alone before student code runs.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from autograder.archive import zip_bytes
from autograder.assemble.manifest import Assignment

PACKAGES = ("autograder", "qkv_runtime")  # autograder.references are the bundled references
# What grading imports, for Python 3.10 to 3.13: numpy 2.2 is the last minor release for 3.10.
REQUIREMENTS = ("numpy==2.2.6", "pyyaml==6.0.3", "pydantic==2.12.5")
TORCH = "torch==2.13.0"

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${QKV_VENV:-${QKV_GRADESCOPE_ROOT:-/autograder}/qkv-venv}"
if [ -z "${QKV_SKIP_APT:-}" ] && command -v apt-get >/dev/null 2>&1; then
  # bubblewrap often cannot make namespaces inside Gradescope's containers; where it can, grading uses it
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap python3-venv >/dev/null) \\
    || echo "qkv setup: apt-get could not install bubblewrap and python3-venv" >&2
fi
"${QKV_PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$here/requirements.txt"
"$venv/bin/python" -c "import numpy, yaml, pydantic" && echo "qkv setup: ready in $venv"
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission, as root.
set -euo pipefail
root="${QKV_GRADESCOPE_ROOT:-/autograder}"
venv="${QKV_VENV:-$root/qkv-venv}"
cd "$root/source"
PYTHONPATH="$root/source" exec "$venv/bin/python" -m autograder.routes.gradescope
"""


def requirements(track: str) -> str:
    pins = list(REQUIREMENTS) + ([TORCH] if track == "torch" else [])
    return "# installed by setup.sh into the grader's own virtual environment\n" + "\n".join(pins) + "\n"


def _package_files(package: str) -> dict[str, bytes]:
    base = Path(str(resources.files(package)))
    files = {}
    # followlinks: in a checkout, autograder/references is a link to the repository's solutions/
    for folder, dirs, names in os.walk(base, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            path = Path(folder) / name
            if path.suffix in (".py", ".j2"):
                files[f"{package}/{path.relative_to(base).as_posix()}"] = path.read_bytes()
    return dict(sorted(files.items()))


def gradescope_zip(assignment: Assignment, bundle_files: dict[str, bytes]) -> bytes:
    members = {"setup.sh": SETUP.encode(), "run_autograder": RUN.encode(),
               "requirements.txt": requirements(assignment.track).encode()}
    for package in PACKAGES:
        members.update(_package_files(package))
    members.update({f"bundle/{path}": data for path, data in bundle_files.items()})
    return zip_bytes(members, executable=frozenset({"setup.sh", "run_autograder"}))
