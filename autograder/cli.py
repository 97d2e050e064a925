"""The `qkv` command: parses arguments, calls one stage, prints its result.

No stage logic lives here; every user error arrives as a QkvError and leaves as
one line on stderr with exit code 1, never a traceback.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from autograder.errors import QkvError
from autograder.report.summary import terminal_safe

console = Console()
err_console = Console(stderr=True)


def fail(message: str) -> None:
    # escaped twice: messages quote user input, which may hold patterns such as [a-z0-9] (rich markup)
    # and escape sequences (a terminal's)
    err_console.print(f"[bold red]error:[/] {escape(terminal_safe(message))}", highlight=False, soft_wrap=True)
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
@click.option("--course", "course_dir", metavar="DIR", envvar="QKV_COURSE",
              help="the course folder (default: the one holding the current folder, else the bundled course)")
@click.pass_context
def main(ctx: click.Context, course_dir: str | None) -> None:
    """qkv: autograded exercises and exam prep for Transformer fundamentals."""
    if course_dir:
        os.environ["QKV_COURSE"] = course_dir  # every stage finds the course the same way (course/find.py)
    if ctx.invoked_subcommand not in (None, "init"):
        from autograder.course.find import find_course

        # the first line of every command: which course it works in
        err_console.print(f"[dim]{escape(terminal_safe(find_course().describe()))}[/]", highlight=False,
                          soft_wrap=True)


def current_course():
    from autograder.course.find import find_course

    return find_course()


@main.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--title", default="My Transformers course", show_default=True, help="the course's title")
@click.option("--term", default="", help="e.g. 2027 spring")
def init(folder: Path, title: str, term: str) -> None:
    """Start a course of your own in FOLDER: course.yaml, a bank, an assignment that builds, a roster."""
    from autograder.course.scaffold import init_course

    written = init_course(folder, title, term)
    console.print(f"course [bold]{escape(title)}[/] in {escape(str(folder))}/ ({len(written)} files)")
    console.print(f"next: cd {escape(str(folder))} && qkv validate && qkv build first-assignment")


@main.command()
@click.argument("name")
@click.option("--kind", required=True, help="implement, numeric, shape, true_false or multiple_choice")
@click.option("--topic", default="my-course/week-1", show_default=True, help="the problem's topic")
def new(name: str, kind: str, topic: str) -> None:
    """Write the skeleton of a new problem NAME of the course's own, to fill in."""
    from autograder.course.scaffold import new_problem

    written = new_problem(current_course(), name, kind, topic)
    for path in written:
        console.print(f"  {escape(str(path))}")
    console.print("fill in every TODO, then run [bold]qkv validate[/]")


@main.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
def validate(path: Path | None) -> None:
    """Check every problem file under PATH (default: the course's bank, with the bundled problems it takes)."""
    from autograder.bank.load import load_bank
    from autograder.bank.validate import validate_report
    from autograder.course.bank import load_course_bank
    from autograder.kinds import KINDS

    report = load_bank(path) if path is not None else load_course_bank(current_course())
    bank, findings = report.bank, validate_report(report)
    for problem_id, replaced in sorted(bank.overrides.items()):
        err_console.print(f"[yellow]note:[/] {escape(str(bank.paths[problem_id]))} overrides the bundled "
                          f"{escape(problem_id)} ({escape(str(replaced))})", highlight=False, soft_wrap=True)
    for finding in findings:
        err_console.print(f"[red]{escape(str(finding))}[/]", highlight=False, soft_wrap=True)
    table = Table(title=f"Question bank: {bank.root}")
    table.add_column("topic")
    for kind in KINDS:
        table.add_column(kind, justify="right")
    table.add_column("points", justify="right")
    by_topic: dict[str, Counter] = {}
    for problem in bank.problems.values():
        counts = by_topic.setdefault(problem.topic.split("/")[0], Counter())
        counts[problem.kind] += 1
        counts["points"] += problem.points
    for topic, counts in sorted(by_topic.items()):
        table.add_row(topic, *[str(counts[k] or "") for k in KINDS], f"{counts['points']:g}")
    console.print(table)
    if findings:
        files = len({finding.where.split(":")[0] for finding in findings})
        fail(f"{len(findings)} problem(s) found in {files} file(s)")
    from autograder import extras

    if not extras.available("torch"):
        err_console.print(f"[yellow]note:[/] torch references were not checked ({extras.install_hint('torch')})")
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
    out = escape(str(result.out))
    console.print(f"students get [bold]{out}/student/[/]; keep [bold]{out}/autograder/[/] private")


@main.command()
@click.argument("name")
@click.argument("submissions", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="output folder (default: grades/NAME)")
@click.option("--dist", type=click.Path(path_type=Path), help="the build of NAME (default: dist/NAME)")
@click.option("--jobs", type=click.IntRange(1, 256), help="submissions graded at once (default: CPU cores)")
@click.option("--timeout", type=click.FloatRange(0.1, 3600),
              help="wall seconds for loading a submission, and again for each problem (default: the assignment's)")
@click.option("--regrade", is_flag=True, help="grade again submissions already in the gradebook")
@click.option("--isolation", type=click.Choice(["require", "allow-rlimits", "bwrap", "rlimits"]),
              help="require: bubblewrap, or root with the grader's files unreadable; allow-rlimits: fall back to "
                   "resource limits only (student code can read your files); default: the assignment's policy")
@click.option("--cluster", metavar="ADDRESS",
              help="grade on Dask: a scheduler's tls://HOST:8786 (or tcp://, unencrypted: trusted networks only), "
                   "local:N to start N worker processes here, local-tls:N the same encrypted")
@click.option("--tls-ca", type=click.Path(path_type=Path), metavar="FILE",
              help="with a tls:// --cluster: the cluster's CA certificate "
                   "(default: Dask's distributed.comm.tls.ca-file)")
@click.option("--tls-cert", type=click.Path(path_type=Path), metavar="FILE",
              help="with a tls:// --cluster: this client's certificate (default: distributed.comm.tls.client.cert)")
@click.option("--tls-key", type=click.Path(path_type=Path), metavar="FILE",
              help="with a tls:// --cluster: this client's private key (default: distributed.comm.tls.client.key, "
                   "or the key in the --tls-cert file)")
def grade(name: str, submissions: Path, out: Path | None, dist: Path | None, jobs: int | None,
          timeout: float | None, regrade: bool, isolation: str | None, cluster: str | None,
          tls_ca: Path | None, tls_cert: Path | None, tls_key: Path | None) -> None:
    """Grade every submission in SUBMISSIONS for assignment NAME (resumable; unchanged work is not regraded)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from autograder.build.manifest import find_manifest
    from autograder.grade.cluster_security import PlaintextClusterWarning, TlsFiles
    from autograder.report.summary import gradebook_table, summary_table
    from autograder.routes.class_grading import grade_class

    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, PlaintextClusterWarning):
            err_console.print(f"[bold red]WARNING:[/] {escape(terminal_safe(str(message)))}",
                              highlight=False, soft_wrap=True)
        else:
            shown(message, category, filename, lineno, file, line)

    course = current_course()
    dist = dist or course.output("dist", name)
    if not (dist / "autograder").is_dir():
        find_manifest(name, course.assignments)  # an unknown assignment is the clearer error
        raise QkvError(str(dist), f"no build of '{name}' here: run `qkv build {name}` first")
    out = out or course.output("grades", name)
    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=err_console, transient=True) as bar, \
            warnings.catch_warnings():
        shown = warnings.showwarning
        warnings.showwarning = show_warning  # the plaintext-cluster warning as one line, when it is raised
        task = bar.add_task("", total=None)
        run = grade_class(dist / "autograder", submissions, out, jobs=jobs, timeout=timeout, regrade=regrade,
                          isolation=isolation, cluster=cluster, tls=TlsFiles(tls_ca, tls_cert, tls_key),
                          progress=lambda done, total, student: bar.update(task, completed=done, total=total,
                                                                          description=student))
    for note in run.notes:
        err_console.print(f"[yellow]note:[/] {escape(terminal_safe(note))}")
    for item in run.intake:
        err_console.print(f"[yellow]intake:[/] {escape(terminal_safe(item.where))}: {escape(terminal_safe(item.what))}",
                          highlight=False, soft_wrap=True)
    if run.isolation == "rlimits-only":
        err_console.print("[bold red]WARNING: student code ran under resource limits ONLY, without namespaces or a "
                          "uid of its own: it could read your files. Install bubblewrap (apt-get install bubblewrap).[/]")
    elif run.isolation == "uid":
        err_console.print("[yellow]note:[/] bubblewrap is not usable here: student code ran as a uid of its own, "
                          "with the grader's files checked unreadable to it, but without namespaces.")
    console.print(gradebook_table(run.results))
    console.print(summary_table(run.results, run.bundle.title, run.isolation))
    console.print(f"graded {run.graded_now}, unchanged and skipped {run.skipped}; "
                  f"gradebook: [bold]{escape(str(run.out))}/gradebook.csv[/], "
                  f"feedback: [bold]{escape(str(run.out))}/feedback/<student>/feedback.html[/]")


@main.command()
@click.argument("name")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--student", default="", metavar="ID", help="student id (default: STUDENT_ID in FILE, or its name)")
@click.option("--dist", type=click.Path(path_type=Path), help="build folder of NAME (default: dist/NAME)")
def check(name: str, file: Path, student: str, dist: Path | None) -> None:
    """Self-check FILE (.py or .ipynb) as a student would, offline, with NAME's student release."""
    from autograder.selfcheck import qkv_check

    if not file.is_file():
        raise QkvError(str(file), "no such file to check")
    course = current_course()
    dist = dist or course.output("dist", name)
    data = next((p for p in (dist / "student" / "selfcheck.json", dist / name / "student" / "selfcheck.json")
                 if p.is_file()), None)
    if data is None:
        from autograder.build.manifest import find_manifest

        find_manifest(name, course.assignments)  # an unknown assignment is the clearer error
        raise QkvError(str(dist / "student"), f"no student release of '{name}' here: run `qkv build {name}` first")
    args = [str(file), "--data", str(data)] + (["--student", student] if student else [])
    sys.exit(qkv_check.main(args))


@main.command()
@click.option("--topics", metavar="T,...", help="topic prefixes, e.g. attention,masking/causal (default: all)")
@click.option("--kinds", metavar="K,...", help="problem kinds, as `qkv validate` lists them (default: every kind but code)")
@click.option("--count", type=click.IntRange(1, 200), default=10, show_default=True, help="number of problems")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True, help="picks the problems and their numbers")
@click.option("--student", metavar="ID", help="numbers of this student's own (the problems stay those of the seed)")
@click.option("--format", "fmt", type=click.Choice(["md", "html", "pdf"]), default="md", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), help="output folder (default: dist/exam-seedS[-ID])")
def exam(topics: str | None, kinds: str | None, count: int, seed: int, student: str | None, fmt: str,
         out: Path | None) -> None:
    """Write a practice exam and, separately, its answer key with worked solutions."""
    from autograder.exam import write_exam
    from autograder.exam.select import DEFAULT_KINDS, ExamSpec, parse_list

    spec = ExamSpec(parse_list(topics), parse_list(kinds) or DEFAULT_KINDS, count, seed, student)
    result = write_exam(spec, fmt, out)
    levels = Counter(item.problem.difficulty for item in result.exam.items)
    console.print(f"{len(result.exam.items)} problems, {result.exam.points:g} points, difficulty "
                  + ", ".join(f"{d}: {levels[d]}" for d in (1, 2, 3)))
    for name, size in result.files.items():
        console.print(f"  {escape(str(result.out / name))}  ({size:,} bytes)")
    console.print(f"give students [bold]exam.{fmt}[/]; keep [bold]answer-key.{fmt}[/] for yourself")


@main.command()
@click.option("--topics", metavar="T,...", help="topic prefixes, e.g. attention,masking (default: all)")
@click.option("--kinds", metavar="K,...", help="problem kinds, as `qkv validate` lists them (default: every kind but code)")
@click.option("--count", type=click.IntRange(1, 200), default=10, show_default=True, help="problems (at most the topic's)")
@click.option("--seed", type=click.IntRange(0), help="the same seed gives the same drill (default: a new one)")
def practice(topics: str | None, kinds: str | None, count: int, seed: int | None) -> None:
    """Drill in the terminal: one problem at a time, checked as you type, with the score at the end."""
    import secrets

    from autograder.course.bank import load_course_bank_strict
    from autograder.exam.drill import run_drill
    from autograder.exam.select import DEFAULT_KINDS, ExamSpec, draw_exam, parse_list, topic_groups
    from autograder.kinds import KINDS

    chosen_kinds = parse_list(kinds) or DEFAULT_KINDS
    if any(KINDS[k].code for k in chosen_kinds if k in KINDS):
        raise QkvError("--kinds", "the drill cannot run code: practise implement problems with `qkv build` and `qkv check`")
    seed = secrets.randbelow(1_000_000) if seed is None else seed
    bank = load_course_bank_strict(current_course())
    pool = sum(len(ps) for ps in topic_groups(bank, parse_list(topics), chosen_kinds).values())
    drill = draw_exam(bank, ExamSpec(parse_list(topics), chosen_kinds, min(count, pool), seed))
    click.echo(f"qkv practice: {len(drill.items)} problems, seed {seed} (run with --seed {seed} to repeat)")

    def ask(prompt: str) -> str:
        typed = input(prompt)
        if not sys.stdin.isatty():  # piped answers are not echoed by a terminal: show them in the transcript
            click.echo(typed)
        return typed

    run_drill(list(drill.items), ask=ask, say=click.echo)


@main.command()
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(["qti", "moodle", "gift"]), required=True,
              help="qti: Canvas quiz zip (QTI 1.2); moodle: Moodle XML; gift: Moodle GIFT text")
@click.option("--variants", type=click.IntRange(1, 50), default=5, show_default=True,
              help="variants of each parameterised problem; each student draws one")
@click.option("--seed", type=click.IntRange(0), help="numbers of the variants (default: the assignment's seed, or 0)")
@click.option("--out", type=click.Path(path_type=Path), help="output file (default: dist/NAME-FORMAT.EXT)")
def export(name: str, fmt: str, variants: int, seed: int | None, out: Path | None) -> None:
    """Export the non-code problems of assignment NAME (or topic:PREFIX) to a learning platform."""
    from autograder.exam.lms import export as export_quiz
    from autograder.exam.lms import write_export

    result = export_quiz(name, fmt, variants, seed)
    path = write_export(result, out)
    questions = sum(len(g.questions) for g in result.quiz.groups)
    console.print(f"{len(result.quiz.groups)} question groups, {questions} questions: [bold]{escape(str(path))}[/] ({len(result.data):,} bytes)")
    if result.skipped_code:
        console.print(f"left out {result.skipped_code} code problem(s): platforms cannot grade them (use `qkv build`)")
