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
