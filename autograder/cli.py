"""The `qkv` command: parses arguments, calls one stage, prints its result.

No stage logic lives here; every user error arrives as a QkvError and leaves as
one line on stderr with exit code 1, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from autograder.classroom.grade_formats import GRADE_FORMATS
from autograder.errors import QkvError
from autograder.isolation_modes import IsolationMode, IsolationRequest
from autograder.exam_formats import PAPER_FORMATS, QUIZ_FORMATS
from autograder.report.summary import terminal_safe
from autograder.wording import counted
from autograder.serve.command import serve, tokens
from autograder.serve.lti.command import lti

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


def read_roster(path: Path):
    """The roster at `path`, its notes (an old column read as what) said on stderr."""
    from autograder.classroom.roster import load_roster

    roster = load_roster(path)
    for note in roster.notes:
        err_console.print(f"note: {escape(terminal_safe(note))}", highlight=False, soft_wrap=True)
    return roster


def current_course():
    from autograder.course.find import find_course

    return find_course()


@main.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--title", default="My Transformers course", show_default=True, help="the course's title")
@click.option("--term", default="", help="e.g. 2027 spring")
def init(folder: Path, title: str, term: str) -> None:
    """Start a course of your own in FOLDER: course.yaml, a bank, an assignment that builds, an example roster."""
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
@click.option("--tables", is_flag=True,
              help="also print the bank by topic and kind, its true/false and choice balance per topic, and the "
                   "variants of each hand calculation")
def validate(path: Path | None, tables: bool) -> None:
    """Check every problem file under PATH (default: the course's bank, with the bundled problems it takes).

    What is wrong comes last, where the terminal leaves it in view; the tables only with --tables."""
    from autograder.bank.load import load_bank
    from autograder.bank.validate import validate_report
    from autograder.course.bank import load_course_bank

    report = load_bank(path) if path is not None else load_course_bank(current_course())
    bank, findings = report.bank, validate_report(report)
    from autograder.bank.validate import bank_warnings

    warnings = bank_warnings(bank)
    for problem_id, replaced in sorted(bank.overrides.items()):
        err_console.print(f"[yellow]note:[/] {escape(str(bank.paths[problem_id]))} overrides the bundled "
                          f"{escape(problem_id)} ({escape(str(replaced))})", highlight=False, soft_wrap=True)
    if tables:
        _print_tables(bank)
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/] {escape(str(warning))}", highlight=False, soft_wrap=True)
    for finding in findings:
        err_console.print(f"[red]{escape(str(finding))}[/]", highlight=False, soft_wrap=True)
    if findings:
        files = len({finding.where.split(":")[0] for finding in findings})
        fail(f"{counted(len(findings), 'problem')} found in {counted(files, 'file')}")
    from autograder import extras

    if not extras.available("torch"):
        err_console.print(f"[yellow]note:[/] torch references were not checked ({escape(extras.install_hint('torch'))})",
                          highlight=False, soft_wrap=True)
    console.print(f"[green]{counted(len(bank.problems), 'problem')} valid[/]"
                  + ("" if tables else " (--tables shows the bank by topic, its guessing balance and hand calculations)"),
                  highlight=False)


def _print_tables(bank) -> None:
    """The bank by topic and kind, then its measures."""
    from autograder.kinds import KINDS

    table = Table(title=f"Question bank: {escape(str(bank.root))}")
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
    _print_measures(bank)


def _print_measures(bank) -> None:
    """What guessing and hand work look like on this bank: true/false balance and longest choices per
    topic, and the 200 checked variants of each hand calculation."""
    from autograder.bank import measures
    from autograder.kinds import kind_of
    from autograder.kinds.numeric.checks import VARIANTS_CHECKED

    guess = Table(title="Guessing, per topic")
    for column in ("topic", "true", "false", "right choice clearly longest"):
        guess.add_column(column, justify="left" if column == "topic" else "right")
    balance, longest = measures.balance(bank), measures.longest_by_topic(bank)
    for topic in sorted(set(balance) | set(longest)):
        true, false = balance.get(topic, (0, 0))
        clearly, total = longest.get(topic, (0, 0))
        guess.add_row(topic, str(true or ""), str(false or ""), f"{clearly} of {total}" if total else "")
    if balance or longest:
        console.print(guess)
    summaries = [s for s in (kind_of(p).draw_summary(p) for _, p in sorted(bank.problems.items())) if s]
    if summaries:
        hand = Table(title=f"Hand calculations: {VARIANTS_CHECKED} variants each")
        for column in ("problem", "different answers", "by hand", "spread"):
            hand.add_column(column, justify="right" if column == "different answers" else "left")
        for found in summaries:
            hand.add_row(found.problem_id, str(found.answers), escape(found.rules), escape(found.spread))
        console.print(hand)


@main.command()
@click.argument("name")
@click.option("--out", type=click.Path(path_type=Path), help="output folder (default: dist/NAME)")
def build(name: str, out: Path | None) -> None:
    """Build assignment NAME (assignments/NAME.yaml): student release, nbgrader source, grading bundle."""
    from autograder.assemble import PRIVATE, build as build_assignment

    result = build_assignment(name, out)
    table = Table(title=f"{escape(terminal_safe(result.assignment.manifest.title))}: {escape(str(result.out))}/")
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
    console.print(f"students get [bold]{out}/student/[/]; the rest holds the answers and is readable by you only "
                  f"({', '.join(PRIVATE)}): keep it so")


@main.command()
@click.argument("name")
@click.argument("submissions", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="output folder (default: grades/NAME)")
@click.option("--dist", type=click.Path(path_type=Path), help="the build of NAME (default: dist/NAME)")
@click.option("--jobs", type=click.IntRange(1, 256), help="submissions graded at once (default: CPU cores + 1)")
@click.option("--timeout", type=click.FloatRange(0.1, 3600),
              help="wall seconds for loading a submission, and again for each problem (default: the assignment's)")
@click.option("--regrade", is_flag=False, flag_value="*", default=None, metavar="[STUDENT,...]",
              help="grade again submissions already in the gradebook: all of them, or only these students")
@click.option("--roster", type=click.Path(path_type=Path), metavar="FILE",
              help="roster CSV (id,name,email,canvas_user_id,sis_id,moodle_participant_id,section,extension,...: docs/class.md): every hand-in is matched to its ids")
@click.option("--strict", is_flag=True, help="grade nothing while intake has conflicts, off-roster or unmatched hand-ins")
@click.option("--isolation", type=click.Choice([r.value for r in IsolationRequest]),
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
@click.option("--timings", "timings_file", type=click.Path(path_type=Path), metavar="FILE",
              help="write where the CPU went, stage by stage, to FILE (JSON; docs/architecture.md: the budget)")
def grade(name: str, submissions: Path, out: Path | None, dist: Path | None, jobs: int | None,
          timeout: float | None, regrade: str | None, roster: Path | None, strict: bool, isolation: str | None,
          cluster: str | None, tls_ca: Path | None, tls_cert: Path | None, tls_key: Path | None,
          timings_file: Path | None) -> None:
    """Grade every submission in SUBMISSIONS (a folder, or the LMS's zip of the class) for assignment NAME
    (resumable; unchanged work is not regraded)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from autograder.assemble.manifest import find_manifest
    from autograder.classroom.terminal import changes_table, intake_counts, intake_table, late_table
    from autograder.grade.cluster_security import PlaintextClusterWarning, TlsFiles
    from autograder.grade.route import tune_for_grading
    from autograder.grade.timings import Timings
    from autograder.private import write_private
    from autograder.report.summary import gradebook_table, summary_table
    from autograder.routes.class_grading import grade_class

    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, PlaintextClusterWarning):
            err_console.print(f"[bold red]WARNING:[/] {escape(terminal_safe(str(message)))}",
                              highlight=False, soft_wrap=True)
        else:
            shown(message, category, filename, lineno, file, line)

    course = current_course()
    roster, which_roster = course.grading_roster(roster)
    class_roster = read_roster(roster) if roster else None
    dist = dist or course.output("dist", name)
    if not (dist / "autograder").is_dir():
        find_manifest(name, course.assignments)  # an unknown assignment is the clearer error
        raise QkvError(str(dist), f"no build of '{name}' here: run `qkv build {name}` first")
    console.print(escape(terminal_safe(which_roster)), highlight=False, soft_wrap=True)  # what intake matched against
    out = out or course.output("grades", name)
    only = None if regrade in (None, "*") else [s.strip() for s in regrade.split(",") if s.strip()]
    timings = Timings() if timings_file else None
    tune_for_grading()
    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=err_console, transient=True) as bar, \
            warnings.catch_warnings():
        shown = warnings.showwarning
        warnings.showwarning = show_warning  # the plaintext-cluster warning as one line, when it is raised
        task = bar.add_task("", total=None)
        run = grade_class(dist / "autograder", submissions, out, jobs=jobs, timeout=timeout, regrade=regrade == "*",
                          isolation=isolation, cluster=cluster, tls=TlsFiles(tls_ca, tls_cert, tls_key),
                          roster=class_roster, strict=strict, only=only, timings=timings,
                          progress=lambda done, total, student: bar.update(task, completed=done, total=total,
                                                                          description=escape(terminal_safe(student))))
    if timings is not None and timings_file is not None:
        try:
            write_private(timings_file, (json.dumps(timings.to_json(run.graded_now, cluster is None), indent=1)
                                        + "\n").encode())
        except QkvError as err:
            raise QkvError(err.where, f"{err.what}; the grades are written in {run.out}") from None
    for note in run.notes:
        err_console.print(f"[yellow]note:[/] {escape(terminal_safe(note))}")
    if class_roster is not None or any(r.layout not in ("", "plain") or r.status != "graded" for r in run.rows
                                       if r.status != "skipped"):
        needing_a_look = intake_table(run.rows)
        if needing_a_look is not None:
            console.print(needing_a_look)
        console.print(f"intake: {intake_counts(run.rows)}; every row is in [bold]{escape(str(run.out))}/intake.csv[/]")
    else:
        for item in run.intake:
            err_console.print(f"[yellow]intake:[/] {escape(terminal_safe(item.where))}: {escape(terminal_safe(item.what))}",
                              highlight=False, soft_wrap=True)
    if run.isolation == IsolationMode.RLIMITS_ONLY:
        err_console.print("[bold red]WARNING: student code ran under resource limits ONLY, without namespaces or a "
                          "uid of its own: it could read your files. Install bubblewrap (apt-get install bubblewrap).[/]")
    elif run.isolation == IsolationMode.UID:
        err_console.print("[yellow]note:[/] bubblewrap is not usable here: student code ran as a uid of its own, "
                          "with the grader's files checked unreadable to it, but without namespaces.")
    console.print(gradebook_table(run.results))
    console.print(summary_table(run.results, run.bundle.title, run.isolation))
    if run.bundle.due and run.late:
        late = late_table(run.late)
        console.print(late if late.row_count else f"late penalties: none; all {len(run.late)} on time")
    if run.changes:
        console.print(changes_table(run.changes))
        console.print(f"changes: [bold]{escape(str(run.out))}/changes.csv[/]")
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
        from autograder.assemble.manifest import find_manifest

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
@click.option("--format", "fmt", type=click.Choice(list(PAPER_FORMATS)), default="md", show_default=True)
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
@click.option("--count", type=click.IntRange(1, 200), default=10, show_default=True,
              help="problems this run (a drawn drill: at most the topics hold)")
@click.option("--seed", type=click.IntRange(0),
              help="repeat a drawn drill: the same seed gives the same problems (default: chosen by your history)")
@click.option("--history", "history_file", type=click.Path(path_type=Path), default="qkv-practice-history.json",
              show_default=True, help="your practice history, kept owner-only")
def practice(topics: str | None, kinds: str | None, count: int, seed: int | None, history_file: Path) -> None:
    """Drill in the terminal: one problem at a time, checked as you type, remembered between runs; the next problem
    is chosen for you (a misconception you hold, a review due, your weakest topic), each try on fresh numbers."""
    import secrets
    from datetime import datetime, timezone

    from autograder.course.bank import load_course_bank_strict
    from autograder.exam.drill import by_the_rule, in_order, run_practice
    from autograder.exam.select import DEFAULT_KINDS, ExamSpec, draw_exam, parse_list, topic_groups
    from autograder.kinds import KINDS
    from autograder.practice.catalogue import catalogue
    from autograder.practice.history import load_history, save_history

    chosen_kinds = parse_list(kinds) or DEFAULT_KINDS
    if any(KINDS[k].code for k in chosen_kinds if k in KINDS):
        raise QkvError("--kinds", "the drill cannot run code: practise implement problems with `qkv build` and `qkv check`")
    bank = load_course_bank_strict(current_course())
    pool = {p.id: p for ps in topic_groups(bank, parse_list(topics), chosen_kinds).values() for p in ps}
    problems = catalogue(pool.values())
    loaded = load_history(history_file)
    if loaded.message:
        click.echo(f"qkv practice: {loaded.message}", err=True)
    if seed is None:
        plan = by_the_rule(problems, lambda: secrets.randbelow(2**31))
        click.echo(f"qkv practice: {count} problem(s) chosen for you from {len(pool)}, each on fresh numbers "
                   f"(history: {history_file})")
    else:
        drill = draw_exam(bank, ExamSpec(parse_list(topics), chosen_kinds, min(count, len(pool)), seed))
        plan, count = in_order(list(drill.items), seed), len(drill.items)
        click.echo(f"qkv practice: {count} problems, seed {seed} (run with --seed {seed} to repeat)")

    def ask(prompt: str) -> str:
        typed = input(prompt)
        if not sys.stdin.isatty():  # piped answers are not echoed by a terminal: show them in the transcript
            click.echo(typed)
        return typed

    run_practice(pool, problems, count, loaded.history, plan, lambda h: save_history(history_file, h),
                 ask=ask, say=click.echo, now=lambda: datetime.now(timezone.utc))


@main.command()
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(list(QUIZ_FORMATS)), required=True,
              help="; ".join(f"{f.name}: {f.label}" for f in QUIZ_FORMATS.values()))
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
    console.print(f"[bold]{escape(str(path))}[/] ({len(result.data):,} bytes): {escape(result.summary)}")
    if result.skipped_code:
        console.print(f"left out {result.skipped_code} code problem(s): platforms cannot grade them (use `qkv build`)")


def _grades_folder(name: str, grades: Path | None) -> Path:
    return grades or current_course().output("grades", name)


@main.command()
@click.argument("name")
@click.argument("student")
@click.option("--grades", type=click.Path(path_type=Path), metavar="DIR",
              help="the grading folder (qkv grade's --out; default: grades/NAME)")
def history(name: str, student: str, grades: Path | None) -> None:
    """Every grading of STUDENT for assignment NAME: file, time, bundle, score (the final one, after a late
    penalty), and what changed each time."""
    from autograder.classroom.classbook import open_gradebook
    from autograder.classroom.history import late_outcomes, trail
    from autograder.classroom.terminal import history_table

    folder = _grades_folder(name, grades)
    with open_gradebook(folder, name) as db:
        found = trail(db, student)
        late = late_outcomes(db, found)
    if not found:
        raise QkvError(student, f"no grading of this student in {folder / 'gradebook.sqlite'}")
    console.print(history_table(student, found, late))


@main.command("export-grades")
@click.argument("name")
@click.option("--format", "fmt", required=True, metavar="|".join(GRADE_FORMATS),
              help="; ".join(f"{f.name}: {f.label}" for f in GRADE_FORMATS.values()))
@click.option("--grades", type=click.Path(path_type=Path), metavar="DIR",
              help="the grading folder (qkv grade's --out; default: grades/NAME)")
@click.option("--out", type=click.Path(path_type=Path), metavar="FILE", help="default: DIR/NAME-FORMAT.csv")
@click.option("--roster", type=click.Path(path_type=Path), metavar="FILE",
              help="roster CSV (default: the one the last qkv grade used)")
@click.option("--column", metavar="TEXT",
              help="the grade column's header (Canvas: 'Name (assignment id)' updates that assignment; "
                   "default: the assignment's title, for Canvas with the manifest's lms.canvas_assignment_id)")
def export_grades(name: str, fmt: str, grades: Path | None, out: Path | None, roster: Path | None,
                  column: str | None) -> None:
    """Write NAME's final grades (after late penalties) as an LMS import file, and a file of feedback comments."""
    from autograder.assemble.manifest import lms_links
    from autograder.classroom.classbook import open_gradebook, stored_title
    from autograder.classroom.grades_export import comments_path, export_files, export_notes, grade_column
    from autograder.private import write_private

    if fmt not in GRADE_FORMATS:
        raise QkvError("--format", f"unknown format {fmt!r}: choose {', '.join(GRADE_FORMATS)}")
    folder = _grades_folder(name, grades)
    class_roster = read_roster(roster) if roster else None
    out = out or folder / f"{name}-{fmt}.csv"
    with open_gradebook(folder, name) as db:
        column = column or grade_column(fmt, stored_title(db) or name,
                                        lms_links(name, current_course().assignments).canvas_assignment_id)
        files, lines = export_files(db, fmt, out, column, class_roster)
    for path, data in files.items():
        write_private(path, data)
    graded = sum(1 for line in lines if line.final is not None)
    console.print(f"{graded} grade(s), {len(lines) - graded} left blank (nothing graded); wrote "
                  + ", ".join(f"[bold]{escape(str(p))}[/]" for p in files))
    for level, note in export_notes(fmt, name, lines, column, comments_path(out)):
        err_console.print(f"[yellow]{level}:[/] {escape(terminal_safe(note))}", highlight=False, soft_wrap=True)


@main.command()
@click.argument("name")
@click.option("--grades", type=click.Path(path_type=Path), metavar="DIR",
              help="the grading folder (qkv grade's --out; default: grades/NAME)")
@click.option("--dist", type=click.Path(path_type=Path), help="the build of NAME, for choice texts (default: dist/NAME)")
def stats(name: str, grades: Path | None, dist: Path | None) -> None:
    """Item analysis of NAME's gradebook: facility, discrimination, alpha, distractors, misconceptions; DIR/stats.html."""
    from autograder.bundle import read_bundle
    from autograder.classroom.classbook import open_gradebook
    from autograder.classroom.stats_page import class_report, stats_table
    from autograder.private import write_private

    folder = _grades_folder(name, grades)
    bundle_dir = (dist or current_course().output("dist", name)) / "autograder"
    bundle = read_bundle(bundle_dir) if (bundle_dir / "assignment.json").is_file() else None
    with open_gradebook(folder, name) as db:
        analysis, page, corrections = class_report(db, bundle, name, str(folder))
    if bundle is None:
        err_console.print(f"[yellow]note:[/] no build of {escape(name)} at {escape(str(bundle_dir))}: "
                          "choice items are shown without their texts")
    write_private(folder / "stats.html", page.encode())
    console.print(stats_table(analysis))
    alpha = "-" if analysis.alpha is None else f"{analysis.alpha:.2f}"
    console.print(f"Cronbach's alpha {alpha}; {len(analysis.flagged)} item(s) flagged; "
                  f"{len(corrections)} written correction(s) to read; "
                  f"report: [bold]{escape(str(folder / 'stats.html'))}[/]")


@main.command()
@click.argument("name")
@click.argument("submissions", type=click.Path(path_type=Path))
@click.option("--roster", type=click.Path(path_type=Path), metavar="FILE", help="roster CSV, as given to qkv grade")
@click.option("--grades", type=click.Path(path_type=Path), metavar="DIR",
              help="the grading folder, for the written answers (default: grades/NAME)")
@click.option("--dist", type=click.Path(path_type=Path), help="the build of NAME (default: dist/NAME)")
@click.option("--threshold", type=click.FloatRange(0.05, 1.0), default=None,
              help="code similarity at which a pair is flagged (default: 0.9)")
def copying(name: str, submissions: Path, roster: Path | None, grades: Path | None, dist: Path | None,
            threshold: float | None) -> None:
    """Copying signals for the instructor: numbers that fit another student's variant, and code pairs unusually
    similar once the stub is ignored; DIR/copying.html (never shown to students)."""
    from autograder import extras
    from autograder.classroom.signals import copying_signals
    from autograder.routes.class_grading import check_submissions

    extras.require("copying", "qkv copying")

    class_roster = read_roster(roster) if roster else None
    check_submissions(submissions)
    found = copying_signals(name, submissions, dist or current_course().output("dist", name), _grades_folder(name, grades), class_roster,
                            threshold)
    flags, report, per_student = found.answers, found.code, found.per_student
    table = Table(title="Copying signals (instructors only)")
    for column in ("signal", "students", "evidence"):
        table.add_column(column, overflow="fold")
    for f in flags:
        table.add_row("numbers", Text(terminal_safe(f"{f.student} has {f.other}'s")),
                      f"{f.fits_other} part(s) fit {escape(terminal_safe(f.other))}'s numbers only, {f.fits_own} their own only")
    for p in report.pairs:
        table.add_row("code", Text(terminal_safe(f"{p.a} and {p.b}")), f"similarity {p.similarity:.3f}")
    for c in report.containers:
        table.add_row("contains", Text(terminal_safe(f"{c.student} holds {', '.join(c.holds)}")),
                      f"at least {min(c.shares):.3f} of each one's code; no pair flagged")
    console.print(table)
    levels = ", ".join(f">= {level}: {count}" for level, count in report.above.items())
    console.print(f"{report.compared} code pairs compared ({levels}); threshold {report.threshold}"
                  + ("" if per_student else "; numbers: not applicable, every student has the same numbers"))
    console.print(f"report: [bold]{escape(str(found.files[0]))}[/]")


@main.command("push-grades")
@click.argument("name")
@click.option("--canvas", "url", required=True, metavar="URL", help="your Canvas, e.g. https://canvas.example.edu")
@click.option("--course", "course_id", type=click.IntRange(1), required=True, help="the Canvas course id")
@click.option("--assignment", "assignment_id", type=click.IntRange(1),
              help="the Canvas assignment id (default: the manifest's lms.canvas_assignment_id)")
@click.option("--grades", type=click.Path(path_type=Path), metavar="DIR",
              help="the grading folder (qkv grade's --out; default: grades/NAME)")
@click.option("--roster", type=click.Path(path_type=Path), metavar="FILE",
              help="roster CSV (default: the one the last qkv grade used); canvas_user_id is the Canvas user id")
@click.option("--dry-run", is_flag=True, help="show what would change in Canvas, change nothing")
@click.option("--no-comments", is_flag=True, help="post the grades without the feedback comments")
def push_grades(name: str, url: str, course_id: int, assignment_id: int | None, grades: Path | None, roster: Path | None,
                dry_run: bool, no_comments: bool) -> None:
    """Post NAME's final grades (and comments) to a Canvas assignment through its API; the token is read from
    the environment variable CANVAS_API_TOKEN."""
    import os

    from autograder import extras
    from autograder.assemble.manifest import lms_links
    from autograder.classroom.canvas_push import push
    from autograder.classroom.classbook import open_gradebook
    from autograder.classroom.grades_export import grade_lines

    extras.require("canvas", "qkv push-grades")
    assignment_id = assignment_id or lms_links(name, current_course().assignments).canvas_assignment_id
    if assignment_id is None:
        raise QkvError("--assignment", f"which Canvas assignment? give --assignment ID, or set "
                                       f"lms: {{canvas_assignment_id: ID}} in {name}'s manifest")

    token = os.environ.get("CANVAS_API_TOKEN", "")
    if not token:
        raise QkvError("CANVAS_API_TOKEN", "not set: make a token in Canvas (Account, Settings, New access token) "
                                           "and export CANVAS_API_TOKEN=...")
    class_roster = read_roster(roster) if roster else None
    with open_gradebook(_grades_folder(name, grades), name) as db:
        lines, _ = grade_lines(db, class_roster)
    result = push(lines, url, token, course_id, assignment_id, dry_run, comments=not no_comments)
    console.print(("Would change in Canvas (dry run)" if dry_run else "Posted to Canvas")
                  + f": {len(result.changes)} grade(s)")
    table = Table()
    for column in ("student", "Canvas user", "now", "final"):
        table.add_column(column, justify="left" if column == "student" else "right")
    for change in result.changes:
        table.add_row(Text(terminal_safe(change.student)), str(change.user_id),
                      "-" if change.before is None else f"{change.before:g}", f"{change.after:g}")
    console.print(table)
    console.print(f"{result.unchanged} already right in Canvas"
                  + (f"; not in this Canvas assignment (no canvas_user_id, or not listed): {escape(terminal_safe(', '.join(result.not_in_canvas[:10])))}"
                     if result.not_in_canvas else "")
                  + (f"; Canvas job {result.progress}" if result.progress else ""))


# the service's commands live with the service (serve/command.py); they load its web stack only when run
main.add_command(serve)
main.add_command(tokens)
main.add_command(lti)
