"""`qkv serve` and `qkv tokens`: the service's two commands, added to the CLI's group (cli.py).

The web stack (Starlette, uvicorn) is imported only when `qkv serve` runs, so every other command
starts as fast as before and works where the serve extra is not installed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

import click

from autograder.isolation_modes import IsolationRequest
from autograder import extras
from autograder.errors import QkvError
from autograder.private import private_folder, write_private



def _store(db: Optional[str]):
    from autograder.course.find import find_course
    from autograder.serve.course import parse_store

    store = parse_store(db) if db else find_course().output("grades", "serve")
    if isinstance(store, Path) and not store.exists():
        try:
            private_folder(store)  # it holds every student's files and the token hashes
        except OSError as err:
            raise QkvError(str(store), f"cannot make the folder: {err.strerror or err}") from None
    return store


def _roster(given: Optional[Path]):
    from autograder.classroom.roster import load_roster
    from autograder.course.find import find_course

    path, which = find_course().grading_roster(given)
    roster = load_roster(path) if path else None
    return roster, "\n".join((which, *(roster.notes if roster else ())))


@click.command()
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on (behind a TLS proxy: 127.0.0.1)")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--roster", type=click.Path(path_type=Path), metavar="FILE", help="roster CSV (default: the course's)")
@click.option("--db", metavar="FOLDER|URL",
              help="a folder of SQLite gradebooks (default: grades/serve) or postgresql://USER@HOST/DATABASE")
@click.option("--cluster", metavar="ADDRESS", help="grade on a Dask cluster, as qkv grade --cluster")
@click.option("--jobs", type=click.IntRange(1, 256), help="attempts graded at once (default: CPU cores + 1)")
@click.option("--isolation", type=click.Choice([r.value for r in IsolationRequest]),
              help="override the manifests' isolation policy (as qkv grade)")
@click.option("--secure-cookies", is_flag=True, help="mark cookies Secure (set it when a TLS proxy is in front)")
@click.option("--proxy", is_flag=True,
              help="a reverse proxy on this machine sets X-Forwarded-For: trust it from 127.0.0.1 (else it is ignored)")
@click.option("--lti-sync-hours", type=float, metavar="H",
              help="pull the LMS's class list every H hours, 0 for never (default: course.yaml's lti.sync_hours)")
def serve(names: tuple[str, ...], host: str, port: int, roster: Optional[Path], db: Optional[str],
          cluster: Optional[str], jobs: Optional[int], isolation: Optional[str], secure_cookies: bool,
          proxy: bool, lti_sync_hours: Optional[float]) -> None:
    """Serve NAME's built assignments: students sign in with their token, hand in and see their score at once."""
    extras.require("serve", "qkv serve")
    import uvicorn

    os.umask(0o077)  # the gradebooks hold every student's files: nothing the service makes is for other users

    from autograder.course.find import find_course
    from autograder.grade.route import open_route, tune_for_grading
    from autograder.serve.connections import CONNECTIONS_PER_CLIENT, bounded_h11
    from autograder.grade.gradebook import GRADEBOOK_FILE
    from autograder.serve.course import open_accounts, open_gradebook, served_assignment
    from autograder.serve.grader import Grader
    from autograder.serve.guard import HEADER_BYTES
    from autograder.serve.instructor import settle_class
    from autograder.serve.app.state import ServiceState
    from autograder.serve.web import make_app, stop_graders

    course = find_course()
    sync_s = _sync_period(course.config.lti, lti_sync_hours)
    assignments = {name: served_assignment(name, course.output("dist", name), course.assignments)
                   for name in names}
    class_roster, which = _roster(roster)
    store = _store(db)
    books, notes = {}, {}
    for name, a in assignments.items():
        books[name], note = open_gradebook(store, a)
        if note:
            notes[name] = note
        if isinstance(store, Path):
            books[name].requeue_claimed()  # SQLite: one process serves it, so no grader of another still runs
    state = ServiceState(assignments, open_accounts(store), class_roster, secure_cookies, books=books, notes=notes,
                         lti=_lti_tool(course, store), hub=_hub(course),
                         practice=_practice_space(course, store, assignments), exams=_exam_rooms(course, class_roster, store))
    protect = protected(assignments, store, course)

    def report(line: str) -> None:
        click.echo(f"qkv serve: {line}", err=True)

    tune_for_grading()  # after the assignments are read: each bundle is frozen with the modules
    for name, a in assignments.items():
        limits = a.bundle.limits

        def route(a=a, limits=limits):
            return open_route(a.bundle, a.bundle_dir, jobs, limits, isolation or a.bundle.isolation, cluster,
                              protect=protect)
        state.graders[name] = Grader(a, books[name], class_roster, route, report,
                                      state.results.recorded)  # started in the app's lifespan
        settle_class(state.graders[name].service, a)
    # started and stopped in the app's lifespan, after the graders and before them
    if state.practice is not None:
        state.background.extend(state.practice.code_graders(
            lambda a: open_route(a.bundle, a.bundle_dir, None if cluster else 1, a.bundle.limits,
                                 isolation or a.bundle.isolation, cluster, protect=protect), report,
            state.results.recorded))
    if state.lti is not None:
        from autograder.serve.lti.grades import ScorePoster

        state.background.append(ScorePoster(state.lti, assignments, books, report, class_roster))
    if state.lti is not None and sync_s:
        from autograder.serve.lti.roster_sync import RosterPuller

        state.background.append(RosterPuller(state.lti, names, class_roster, sync_s, report))
    if state.hub is not None:
        from autograder.serve.hub.exchange import exchange_intake

        intake = exchange_intake(course.config.jupyterhub, state, report)
        if intake is not None:
            state.background.append(intake)
    click.echo(f"{which}", err=True)
    for note in notes.values():
        click.echo(f"note: {note}", err=True)
    where = store if isinstance(store, str) else ", ".join(str(store / name / GRADEBOOK_FILE) for name in names)
    click.echo(f"serving {', '.join(names)} on http://{host}:{port}/ (gradebook: {where}); students sign in with "
               + (f"the hub, at its {state.hub.prefix}" if state.hub is not None else
                  f"the links `qkv tokens {names[0]} --out tokens.csv` writes"), err=True)
    try:
        uvicorn.run(make_app(state), host=host, port=port, log_level="warning", access_log=False,
                    # h11 always: its bound on a header still arriving is the one HEADER_BYTES is set on; with
                    # a deadline on headers and a cap on each client's connections (behind a proxy: the proxy's)
                    http=bounded_h11(None if proxy else CONNECTIONS_PER_CLIENT),
                    h11_max_incomplete_event_size=HEADER_BYTES, timeout_keep_alive=5, limit_concurrency=500,
                    # without a proxy, any local user could name another address and dodge the sign-in limits
                    proxy_headers=proxy, forwarded_allow_ips="127.0.0.1" if proxy else "")
    finally:
        stop_graders(state)  # the lifespan's end stopped them, unless the app never started (a port taken)
        for book in books.values():
            book.close()
        state.accounts.close()
        if state.practice is not None:
            state.practice.stop_graders()
            state.practice.store.close()
        if state.exams is not None:
            state.exams.store.close()
        if state.lti is not None:
            state.lti.close()


def _sync_period(settings, hours: Optional[float]) -> float:
    """Checked before anything starts, so a bad --lti-sync-hours is one line, not a half-started service."""
    if settings is None and hours is None:
        return 0.0
    from autograder.serve.lti.roster_sync import sync_period

    return sync_period(settings, hours)


def _lti_tool(course, store):
    """The LTI tool course.yaml's `lti:` section describes (its launch values beside the accounts), else None."""
    if course.config.lti is None:
        return None
    from autograder.grade.gradebook.accounts import ACCOUNTS_FILE
    from autograder.serve.lti.launch import LtiTool

    return LtiTool.open(course.config.lti, lti_keys(course),
                        store if isinstance(store, str) else store / ACCOUNTS_FILE)


def _hub(course):
    """The hub course.yaml's `jupyterhub:` section names, as the hub's environment describes it, else None."""
    if course.config.jupyterhub is None:
        return None
    from autograder.serve.hub.signin import Hub

    return Hub.from_environ(course.config.jupyterhub)


def _practice_space(course, store, assignments):
    """The practice space course.yaml's `practice:` section describes (its tries beside the accounts), else None."""
    if course.config.practice is None:
        return None
    from autograder.course.bank import load_course_bank_strict
    from autograder.exam.select import DEFAULT_KINDS, topic_groups
    from autograder.grade.gradebook.accounts import ACCOUNTS_FILE
    from autograder.kinds import KINDS, kind_of
    from autograder.serve.practice import PracticeSpace

    from autograder.serve.practice_code import code_homes

    settings = course.config.practice
    kinds = tuple(settings.kinds) or DEFAULT_KINDS
    try:
        groups = topic_groups(load_course_bank_strict(course), tuple(settings.topics), kinds)
    except QkvError as err:
        raise QkvError("course.yaml", f"practice: {err.what}") from None
    # a code problem is practised where a served assignment grades it (its bundle holds its tests)
    homes = code_homes(assignments.values())
    problems = [p for ps in groups.values() for p in ps if not kind_of(p).code or p.id in homes]
    code = [k for k in kinds if k in KINDS and KINDS[k].code]
    if code and not any(kind_of(p).code for p in problems):
        raise QkvError("course.yaml", f"practice.kinds: {', '.join(code)}: no served assignment grades a code "
                                      "problem of practice's topics; serve one that does")
    return PracticeSpace.open(problems, store if isinstance(store, str) else store / ACCOUNTS_FILE,
                              {p.id: homes[p.id] for p in problems if kind_of(p).code})


def _exam_rooms(course, roster, store):
    """The mock exams course.yaml's `exams:` section describes (their sittings beside the accounts), else None."""
    if not course.config.exams:
        return None
    from autograder.course.bank import load_course_bank_strict
    from autograder.grade.gradebook.accounts import ACCOUNTS_FILE
    from autograder.serve.exams import ExamRooms

    return ExamRooms.open(course.config.exams, load_course_bank_strict(course), roster,
                          store if isinstance(store, str) else store / ACCOUNTS_FILE)


def lti_keys(course) -> Optional[Path]:
    """The folder of the tool's key pair (course.yaml's `lti.keys`, which may lie outside the course), or None."""
    return None if course.config.lti is None else (course.root / course.config.lti.keys).resolve()


def protected(assignments, store, course) -> tuple[Path, ...]:
    """What a submission's sandbox may not read: the bundles, the gradebooks, the course's sources (unless it is
    a bundle), and the tool's LTI private key, wherever course.yaml puts it."""
    keys = lti_keys(course)
    return tuple(a.bundle_dir for a in assignments.values()) + ((store,) if isinstance(store, Path) else ()) \
        + (() if course.bundled else (course.root,)) + ((keys,) if keys is not None else ())


@click.command()
@click.argument("name")
@click.option("--out", type=click.Path(path_type=Path), metavar="FILE",
              help="the CSV of new tokens and sign-in links, for a mail merge (owner-only; never written over without "
                   "--force; default: tokens.csv, else the first free tokens-N.csv)")
@click.option("--force", is_flag=True, help="write over an existing --out FILE (its links are then on no disk)")
@click.option("--roster", type=click.Path(path_type=Path), metavar="FILE", help="roster CSV (default: the course's)")
@click.option("--db", metavar="FOLDER|URL", help="as qkv serve --db (default: grades/serve)")
@click.option("--url", default="http://127.0.0.1:8000", show_default=True, help="the service's address, for the links")
@click.option("--student", "students", multiple=True, metavar="ID", help="(re)issue only these students' tokens")
@click.option("--reissue", is_flag=True,
              help="issue every roster student a new token (the old ones stop working; revoked students get none)")
@click.option("--revoke", "revoked", multiple=True, metavar="ID", help="revoke this person's token; issue nothing")
@click.option("--reinstate", "reinstated", multiple=True, metavar="ID",
              help="issue a revoked person a token again (in their former role); nothing else gives them one")
@click.option("--staff", "staff", multiple=True, metavar="PERSON", help="issue a staff token (sees the class)")
@click.option("--instructor", "instructors", multiple=True, metavar="PERSON",
              help="issue an instructor token (also regrades and exports)")
def tokens(name: str, out: Optional[Path], force: bool, roster: Optional[Path], db: Optional[str], url: str,
           students: tuple[str, ...], reissue: bool, revoked: tuple[str, ...], reinstated: tuple[str, ...],
           staff: tuple[str, ...], instructors: tuple[str, ...]) -> None:
    """Issue sign-in tokens for NAME's service from the roster: only a slow hash of each is kept."""
    from autograder.grade.gradebook.accounts import Role
    from autograder.report.spreadsheet import csv_text
    from autograder.serve.course import open_accounts

    target = _tokens_file(out, force)  # before any token is issued: an existing file is refused now, not after
    store = _store(db)
    now = time.time()
    with open_accounts(store) as book:
        if revoked:
            for person in revoked:
                click.echo(f"{person}: {book.revoke(person, now)} token(s) revoked")
            return
        class_roster, which = _roster(roster)
        click.echo(which, err=True)
        gone = book.revoked()
        _refuse_revoked(gone, students, staff, instructors, reinstated)
        wanted: list[tuple[str, str, str, Role]] = []
        if class_roster is not None:
            live = book.people()
            unknown = [s for s in students if class_roster.by_id(s) is None]
            if unknown:
                raise QkvError("--student", f"not on the roster: {', '.join(unknown[:5])}")
            for s in class_roster.students:
                if s.id in reinstated:
                    wanted.append((s.id, s.name, s.email, Role.STUDENT))
                elif s.id not in gone and ((s.id in students) or (not students and (reissue or s.id not in live))):
                    wanted.append((s.id, s.name, s.email, Role.STUDENT))
            left_out = sum(1 for s in class_roster.students if s.id in gone and s.id not in reinstated)
            if left_out and not students:
                click.echo(f"{left_out} revoked student(s) get no token (--reinstate ID gives one again)", err=True)
        elif students:
            raise QkvError("--student", "no roster: name one with --roster FILE")
        listed = {person for person, *_ in wanted}
        wanted += [(p, p, "", gone[p]) for p in reinstated if p not in listed]
        wanted += [(p, p, "", Role.STAFF) for p in staff] + [(p, p, "", Role.INSTRUCTOR) for p in instructors]
        if not wanted:
            click.echo("every roster student has a token already (--reissue gives everyone a new one)")
            return
        base = url.rstrip("/")
        rows = [("id", "name", "email", "role", "token", "link")]
        for person, full_name, email, role in wanted:
            token = book.issue(person, role, now)
            rows.append((person, full_name, email, role.value, token, f"{base}/signin?token={token}&next=/a/{name}"))
        # written before the accounts close: a file that appeared meanwhile is refused, and the error says so
        write_private(target, csv_text(rows).encode(), replace=force)
    click.echo(f"{len(rows) - 1} token(s) issued; wrote {target} (owner-only: it holds the tokens, "
               "which are shown nowhere else)")


def _tokens_file(out: Optional[Path], force: bool) -> Path:
    """Where `qkv tokens` writes: --out, refused when it exists (it holds links that still work) unless --force;
    by default tokens.csv, or the first tokens-N.csv that does not exist."""
    if out is not None:
        if out.is_dir():
            raise QkvError(str(out), "is a folder; --out takes a file name")
        if os.path.lexists(out) and not force:
            raise QkvError(str(out), "exists: its sign-in links still work; name a new file with --out, or write "
                                     "over it with --force")
        return out
    if force:
        raise QkvError("--force", "writes over --out FILE only: name the file")
    candidates = (Path("tokens.csv" if n == 1 else f"tokens-{n}.csv") for n in range(1, 10_000))
    return next(path for path in candidates if not os.path.lexists(path))


def _refuse_revoked(gone, students: tuple[str, ...], staff: tuple[str, ...], instructors: tuple[str, ...],
                    reinstated: tuple[str, ...]) -> None:
    """A revoked person gets a token only through --reinstate; --reinstate names revoked people only."""
    for option, people in (("--student", students), ("--staff", staff), ("--instructor", instructors)):
        named = [p for p in people if p in gone and p not in reinstated]
        if named:
            raise QkvError(option, f"revoked: {', '.join(named[:5])} (--reinstate ID gives them a token again)")
    live = [p for p in reinstated if p not in gone]
    if live:
        raise QkvError("--reinstate", f"not revoked: {', '.join(live[:5])} (--student or --staff reissues a token)")


__all__ = ["serve", "tokens"]
