"""What the mock exam tests share: a course of the run's whose course.yaml offers a timed mock exam, a roster with an
`extra_time` column, and `qkv serve` run with a clock the test sets (a file holding the server's time in seconds: the
server reads it wherever it would read its own clock, serve/exams.py's CLOCK), so the window and the end of a sitting
are reached without sleeping.

Run as a script (`python exam_client.py CLOCK_FILE qkv-arguments...`), it is that server: the real `qkv` command,
its clock read from the file.
"""

from __future__ import annotations

import csv
import datetime as dt
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
NAME = "attention-numpy"
OPENS = dt.datetime(2030, 3, 4, 9, 0, tzinfo=dt.timezone.utc)  # the exam's window, far from the real clock
CLOSES = OPENS + dt.timedelta(hours=4)
MINUTES = 40
EXAM = "mock-1"
SEED = 11
SETTINGS = {"title": "Mock exam 1", "topics": ["masking", "attention/softmax"], "kinds": ["numeric", "multiple_choice"],
            "count": 3, "seed": SEED, "opens": OPENS.isoformat(), "closes": CLOSES.isoformat(), "minutes": MINUTES}
EXTRA = {"s2026003": "50"}  # the roster's extra_time column: Cho has half as much time again


def at(minutes: float) -> float:
    """The moment `minutes` after the window opens (negative: before), in seconds."""
    return OPENS.timestamp() + 60 * minutes


def exam_course(served_numpy, folder: Path, extra: dict | None = None) -> tuple[Path, Path]:
    """A copy of the run's served course whose course.yaml offers the mock exam `EXAM` (SETTINGS), and the exams of
    `extra`, and a copy of the example roster with an `extra_time` column: (course folder, roster)."""
    root = folder / "course"
    shutil.copytree(served_numpy.folder, root, symlinks=True)
    config = yaml.safe_load((root / "course.yaml").read_text(encoding="utf-8"))
    config["exams"] = {EXAM: SETTINGS, **(extra or {})}
    (root / "course.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    roster = folder / "roster.csv"
    with open(ROOT / "examples" / "canvas" / "roster.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    with open(roster, "w", newline="") as handle:
        writer = csv.DictWriter(handle, [*rows[0], "extra_time"])
        writer.writeheader()
        writer.writerows({**row, "extra_time": EXTRA.get(row["id"], "")} for row in rows)
    return root, roster


@dataclass
class Clock:
    """The served course's clock: a file the server reads its time from."""

    path: Path

    def set(self, seconds: float) -> None:
        part = self.path.with_suffix(".part")
        part.write_text(repr(float(seconds)))
        part.replace(self.path)  # whole, never half-written, as the server reads it


def served_with_clock(service_class, root: Path, roster: Path, store: str, clock: Clock):
    """A `serve_client.Service` whose server reads `clock` (started by the caller)."""
    from servers import ServerProcess

    class ClockedService(service_class):
        def start(self):
            self.server = ServerProcess(lambda port: [sys.executable, HERE, clock.path, "--course", self.root, "serve",
                                                      *self.names, "--roster", self.roster, "--db", self.store,
                                                      "--port", port, "--jobs", self.jobs], cwd=self.root)
            self.server.start()
            return self

    return ClockedService(root, (NAME,), roster, store)


def _serve_with_clock_file(clock_file: Path, arguments: list[str]) -> None:
    from autograder import cli
    from autograder.serve import exams

    exams.CLOCK = lambda: float(clock_file.read_text())
    sys.argv = ["qkv", *arguments]
    cli.main()


if __name__ == "__main__":
    _serve_with_clock_file(Path(sys.argv[1]), sys.argv[2:])
