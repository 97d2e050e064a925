"""The tests that run student code under time limits, once more with a CPU hog on every core beside them.

A test that passes only on an idle machine blocks whoever lands the next change on a busy one, so CI proves these do
not need one: a busy loop per core (what `stress --cpu N` does, without the package) runs for as long as the tests
do, beside as many test workers. Each loop also stops by itself after HOG_SECONDS, should this script die first.
Run after `make test` (.ci/run), with the virtualenv's Python: `.venv/bin/python .ci/under_load.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the sandbox, the supervisor's deadlines, grading whole classes of hostile code, the self-check's own time limits
MODULES = ("sandbox/test_sandbox.py", "sandbox/test_supervisor.py", "grade/test_execute.py", "grade/test_grade.py",
           "routes/test_hostile_class.py", "classroom/test_class_attacks.py", "selfcheck/test_selfcheck_limits.py")
TESTS_SECONDS = 1500
HOG_SECONDS = TESTS_SECONDS + 60
BUSY_LOOP = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def main() -> int:
    cores = os.cpu_count() or 1
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP.format(seconds=HOG_SECONDS)]) for _ in range(cores)]
    try:
        command = [sys.executable, "-m", "pytest", "-q", "-n", str(cores), "--dist", "loadscope",
                   *(f"tests/{name}" for name in MODULES)]
        try:
            code = subprocess.run(command, cwd=ROOT, timeout=TESTS_SECONDS).returncode
        except subprocess.TimeoutExpired:
            print(f"under load: the tests took longer than {TESTS_SECONDS} s", file=sys.stderr)
            code = 1
        load = os.getloadavg()[0]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    print(f"under load: {cores} busy loops beside {cores} test workers, load average {load:.1f} at the end")
    return code


if __name__ == "__main__":
    sys.exit(main())
