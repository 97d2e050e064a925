"""The `qkv` command: parses arguments, calls one stage, prints its result.

No stage logic lives here; every user error arrives as a QkvError and leaves as
one line on stderr with exit code 1, never a traceback.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from autograder.errors import QkvError

console = Console()
err_console = Console(stderr=True)


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    sys.exit(1)


class QkvGroup(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except QkvError as err:
            fail(str(err))
        except KeyboardInterrupt:
            fail("interrupted")


@click.group(cls=QkvGroup)
@click.version_option(package_name="qkv")
def main() -> None:
    """qkv: autograded exercises and exam prep for Transformer fundamentals."""


@main.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
def validate(path: Path | None) -> None:
    """Check every problem file under PATH (default: the bundled bank)."""
    from autograder.bank.validate import validate_path

    bank, findings = validate_path(path)
    for finding in findings:
        err_console.print(f"[red]{finding}[/]", highlight=False, soft_wrap=True)
    table = Table(title=f"Question bank: {bank.root}")
    kinds = ["implement", "numeric", "shape", "true_false", "multiple_choice"]
    table.add_column("topic")
    for kind in kinds:
        table.add_column(kind, justify="right")
    table.add_column("points", justify="right")
    by_topic: dict[str, Counter] = {}
    for problem in bank.problems.values():
        counts = by_topic.setdefault(problem.topic.split("/")[0], Counter())
        counts[problem.kind] += 1
        counts["points"] += problem.points
    for topic, counts in sorted(by_topic.items()):
        table.add_row(topic, *[str(counts[k] or "") for k in kinds], f"{counts['points']:g}")
    console.print(table)
    if findings:
        fail(f"{len(findings)} problem(s) found in {len(bank.problems) + len(findings)} file(s)")
    console.print(f"[green]{len(bank.problems)} problems valid[/]")


@main.command()
@click.argument("name")
@click.option("--out", type=click.Path(path_type=Path), help="output folder (default: dist/NAME)")
def build(name: str, out: Path | None) -> None:
    """Build assignment NAME (assignments/NAME.yaml): student release, nbgrader source, grading bundle."""
    from autograder.build import build as build_assignment

    result = build_assignment(name, out)
    table = Table(title=f"{result.assignment.manifest.title}: {result.out}/")
    table.add_column("part")
    table.add_column("files", justify="right")
    table.add_column("bytes", justify="right")
    parts: dict[str, list[int]] = {}
    for path, size in result.files.items():
        parts.setdefault(path.split("/")[0], []).append(size)
    for part, sizes in parts.items():
        table.add_row(part, str(len(sizes)), f"{sum(sizes):,}")
    console.print(table)
    console.print(f"students get [bold]{result.out}/student/[/]; keep [bold]{result.out}/autograder/[/] private")


@main.command()
@click.argument("name")
@click.argument("submissions", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="output folder (default: grades/NAME)")
@click.option("--dist", type=click.Path(path_type=Path), help="the build of NAME (default: dist/NAME)")
@click.option("--jobs", type=click.IntRange(1, 256), help="submissions graded at once (default: CPU cores)")
@click.option("--timeout", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True,
              help="wall seconds for loading a submission, and again for each problem")
@click.option("--regrade", is_flag=True, help="grade again submissions already in the gradebook")
@click.option("--isolation", type=click.Choice(["auto", "bwrap", "rlimits"]), default="auto", show_default=True)
@click.option("--cluster", metavar="ADDRESS",
              help="grade on Dask: a scheduler's tcp://HOST:8786, or local:N to start N worker processes here")
def grade(name: str, submissions: Path, out: Path | None, dist: Path | None, jobs: int | None,
          timeout: float, regrade: bool, isolation: str, cluster: str | None) -> None:
    """Grade every submission in SUBMISSIONS for assignment NAME (resumable; unchanged work is not regraded)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from autograder.build.manifest import find_manifest
    from autograder.grade import grade_class
    from autograder.report.summary import gradebook_table, summary_table

    dist = dist or Path("dist") / name
    if not (dist / "autograder").is_dir():
        find_manifest(name)  # an unknown assignment is the clearer error
        raise QkvError(str(dist), f"no build of '{name}' here: run `qkv build {name}` first")
    out = out or Path("grades") / name
    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=err_console, transient=True) as bar:
        task = bar.add_task("", total=None)
        run = grade_class(dist / "autograder", submissions, out, jobs=jobs, timeout=timeout, regrade=regrade,
                          isolation=isolation, cluster=cluster,
                          progress=lambda done, total, student: bar.update(task, completed=done, total=total,
                                                                          description=student))
    for note in run.notes:
        err_console.print(f"[yellow]note:[/] {note}")
    if run.isolation != "bwrap":
        err_console.print("[bold red]WARNING: bubblewrap is not available: student code ran under rlimits only, "
                          "without namespace isolation. Install bubblewrap (apt-get install bubblewrap).[/]")
    console.print(gradebook_table(run.results))
    console.print(summary_table(run.results, run.bundle.title, run.isolation))
    console.print(f"graded {run.graded_now}, unchanged and skipped {run.skipped}; "
                  f"gradebook: [bold]{run.out}/gradebook.csv[/], feedback: [bold]{run.out}/feedback/<student>/feedback.html[/]")


@main.command()
@click.argument("name")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--student", default="", metavar="ID", help="student id (default: STUDENT_ID in FILE, or its name)")
@click.option("--dist", type=click.Path(path_type=Path), help="build folder of NAME (default: dist/NAME)")
def check(name: str, file: Path, student: str, dist: Path | None) -> None:
    """Self-check FILE (.py or .ipynb) as a student would, offline, with NAME's student release."""
    from autograder.selfcheck import qkv_check

    dist = dist or Path("dist") / name
    data = next((p for p in (dist / "student" / "selfcheck.json", dist / name / "student" / "selfcheck.json")
                 if p.is_file()), None)
    if data is None:
        from autograder.build.manifest import find_manifest

        find_manifest(name)  # an unknown assignment is the clearer error
        raise QkvError(str(dist / "student"), f"no student release of '{name}' here: run `qkv build {name}` first")
    args = [str(file), "--data", str(data)] + (["--student", student] if student else [])
    sys.exit(qkv_check.main(args))
