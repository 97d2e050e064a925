"""Benchmark of `qkv serve`'s exam prep on loopback: a class practising written problems at once, the same class
opening a mock exam in the same minute, and nothing they were told was kept lost.

Everything runs as a user runs it: `qkv init` and `qkv build` make a course (attention-numpy, its dates moved to the
future, as benchmarks/serve.py makes it), its course.yaml given a `practice:` section (tests/practice_client.py's
topics and kinds) and a mock exam open now (`exams:`, written kinds, --exam-items items, a roster column giving
every tenth student half as much time again); `qkv tokens` issues each student's link and `qkv serve` runs as a
process of its own, on SQLite files, or with --postgres on a PostgreSQL server of the run's own (tests/servers.py's).

The students are clients in --client-processes processes of their own (an asyncio loop each, a session per
student, each from a loopback address of its own, 127.0.x.y, as a class comes from many addresses: the service
counts sign-ins and connections per address). They take the browser's route, forms without JavaScript, in three
phases the benchmark starts one after the other, so that the server's CPU (its process tree, from /proc, as
serve.py reads it) is known phase by phase:
1. sign-in: every student at a random moment of the same --spread seconds, through the personal link's form (a
   slow hash on the server, measured here and so kept apart from answering);
2. practice: each student, coming at a random moment of a think's time, asks for the next problem ("what I need most"), reads it, thinks (a random time around
   --think seconds), answers (--answers problems each; every third answer wrong, naming the key's first
   misconception, the others right) and follows the 303 to the page with the verdict: answer to feedback is that
   POST and that page, as a student waits for them. The verdict shown is checked (100% for a right answer, the
   misconception named for a wrong one). What a student works out from the question (the right answer and the
   wrong one) the client reads from the store behind the service's back, the variant's seed, outside any timing;
3. the mock exam: each student, at a random moment of the same --spread seconds, opens the exams page, starts
   the exam and reads the paper (the exam page), then saves each item in turn (a short think between), following
   each save's 303 to the paper again. Figures: the paper's load (every load) and the save's POST, p50/p95/max.

Then, once the server has stopped, nothing lost: the gradebook read through its own stores (PracticeStore,
ExamStore: the service's read API, no SQL of ours) and checked against what the clients were told was kept (an
answer answered 303, a save answered 303): each acknowledged practice answer stored once, answered, with the answers
typed and the verdict's score, under its own student; each acknowledged exam save stored with what was typed in
the student's own sitting, one sitting per student.
A request whose connection closed under it before any answer (the server closes a kept-alive connection it finds
idle, and a request may cross that close) is sent once more, as a browser does, and counted (`requests_sent_again`).
Figures in milliseconds; the server's CPU per phase (`qkv serve`'s process tree; with --postgres not the PostgreSQL
server's own), per sign-in, per judged answer and per exam request; the
clients' CPU (their processes' own getrusage) apart, as a real class's browsers spend it elsewhere; the load average
before and after each phase (the machine is shared: say how loaded it was). Goals (issue 48): p95 under 150 ms from
answer to feedback, under 300 ms for the exam page, on two cores. Written to benchmarks/results/practice.json and
docs/benchmarks.md; a table on stdout. A quick run: --students 8 --answers 3 --think 0.5 --spread 2
--results /tmp/practice.json.

    .venv/bin/python benchmarks/practice.py [--students 400] [--answers 6] [--think 10] [--spread 60]
                                            [--exam-items 5] [--client-processes 4] [--postgres] [--results FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import multiprocessing
import os
import platform
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import httpx
import yaml
from markupsafe import escape

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import summary  # noqa: E402
from practice_client import PRACTICE, right_answer, wrong_answer  # noqa: E402
from served_course import issue_tokens, make_course, serve_command  # noqa: E402
from servers import PostgresServer, ServerProcess, fresh_database  # noqa: E402
from serve import TreeCpu  # noqa: E402

from autograder.course.bank import load_course_bank_strict  # noqa: E402
from autograder.course.find import find_course  # noqa: E402
from autograder.grade.gradebook.accounts import ACCOUNTS_FILE  # noqa: E402
from autograder.grade.gradebook.exams import ExamStore  # noqa: E402
from autograder.grade.gradebook.practice import PracticeStore  # noqa: E402
from autograder.kinds import Problem  # noqa: E402
from autograder.practice.answers import key_of, questions  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "practice.json"
ANSWER_GOAL_MS = 150.0
EXAM_PAGE_GOAL_MS = 300.0
EXAM = "mock-bench"
EXAM_SEED = 7
EXAM_MINUTES = 90
EXTRA_EVERY = 10  # every tenth student has half as much time again (the roster's extra_time column)
WRONG_EVERY = 3  # every third practice answer is wrong
EXAM_THINK_S = (0.2, 1.0)  # between two saves of an item: the exam's figures are of the rush, not of thinking
KEEP_ALIVE_S = 4.0
TIMEOUT_S = 300.0  # one request's bound: a swamped server answers late, it is not a failure to wait
PHASES = ("signin", "practice", "exam")
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
TOKEN = re.compile(r'id="token"[^>]* value="([^"]+)"')
VERDICT = re.compile(r'<p id="verdict">([^<]*)</p>')
STARTED = re.compile(r"/exams/s/([A-Za-z0-9_-]+)")


class Failure(Exception):
    """A client saw something the service must not do (counted and reported; the run goes on)."""


# --- what the clients saw, and what the gradebook holds ---------------------------------------------------------------

@dataclass
class Seen:
    """One client process's account: timings in ms by what was timed, and every answer the service acknowledged."""

    timings: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in (
        "signin", "next_problem", "answer_to_feedback", "exam_start", "exam_page", "exam_save")})
    practice: dict[str, tuple[str, dict[str, str], bool]] = field(default_factory=dict)  # variant -> student, typed, right
    saves: dict[tuple[str, int], tuple[str, dict[str, str]]] = field(default_factory=dict)  # (sitting, item) -> ...
    sittings: dict[str, str] = field(default_factory=dict)  # sitting -> student
    retried: int = 0  # requests sent again after their connection closed before any answer
    wrong_verdicts: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    cpu_s: dict[str, float] = field(default_factory=dict)  # by phase: this process's own

    def merge(self, other: "Seen") -> None:
        for key, values in other.timings.items():
            self.timings.setdefault(key, []).extend(values)
        self.practice.update(other.practice)
        self.saves.update(other.saves)
        self.sittings.update(other.sittings)
        self.retried += other.retried
        self.wrong_verdicts += other.wrong_verdicts
        self.failures += other.failures
        for phase, spent in other.cpu_s.items():
            self.cpu_s[phase] = self.cpu_s.get(phase, 0.0) + spent


@dataclass(frozen=True)
class Stored:
    """What the gradebook holds, read through its stores: practice variants and exam sittings with their answers."""

    practice: list[tuple[str, str, Optional[float], Optional[float], Optional[dict[str, str]]]]  # id, student,
    # answered, score, answers: every answered variant, as PracticeStore.everyone() lists them
    sittings: list[tuple[str, str]]  # (sitting, student) of the exam, as ExamStore.everyone() lists them
    saved: dict[str, dict[int, dict[str, str]]]  # sitting -> item -> answers, as ExamStore.answers() gives them


def read_gradebook(where: str) -> Stored:
    practice, exams = PracticeStore(where), ExamStore(where)
    try:
        variants = [(v.id, v.student, v.answered, v.score, v.answers)
                    for vs in practice.everyone().values() for v in vs]
        sittings = exams.everyone(EXAM)
        return Stored(variants, [(s.id, s.student) for s in sittings], {s.id: exams.answers(s.id) for s in sittings})
    finally:
        practice.close()
        exams.close()


def checked(seen: Seen, stored: Stored) -> dict:
    """Nothing lost, duplicated or under another student: every acknowledged answer against the gradebook."""
    lost, duplicated, foreign, misjudged = [], [], [], []
    by_id: dict[str, list[tuple]] = {}
    for row in stored.practice:
        by_id.setdefault(row[0], []).append(row)
    duplicated += [f"practice variant {v} stored {len(rows)} times" for v, rows in by_id.items() if len(rows) > 1]
    for variant, (student, typed, right) in seen.practice.items():
        rows = by_id.get(variant)
        if not rows:
            lost.append(f"practice variant {variant} of {student}: not stored as answered")
            continue
        _, owner, answered, score, answers = rows[0]
        if owner != student:
            foreign.append(f"practice variant {variant} of {student} is stored as {owner}'s")
        elif answered is None or answers != typed:
            lost.append(f"practice variant {variant} of {student}: stored {answers!r}, typed {typed!r}")
        elif (score == 1.0) != right:
            misjudged.append(f"practice variant {variant} of {student}: scored {score}, typed {'right' if right else 'wrong'}")
    owners: dict[str, list[str]] = {}
    for sitting, student in stored.sittings:
        owners.setdefault(sitting, []).append(student)
    students = [s for _, s in stored.sittings]
    duplicated += [f"{s} has {students.count(s)} sittings" for s in sorted(set(students)) if students.count(s) > 1]
    for sitting, student in seen.sittings.items():
        if sitting not in owners:
            lost.append(f"exam sitting {sitting} of {student}: not stored")
        elif owners[sitting] != [student]:
            foreign.append(f"exam sitting {sitting} of {student} is stored as {owners[sitting]}'s")
    for (sitting, item), (student, typed) in seen.saves.items():
        kept = stored.saved.get(sitting, {}).get(item)
        if owners.get(sitting, [student]) != [student]:
            continue  # counted above
        if kept != typed:
            lost.append(f"exam sitting {sitting} of {student}, item {item}: stored {kept!r}, saved {typed!r}")
    acknowledged = set(seen.practice)
    return {"practice_answers_acknowledged": len(seen.practice),
            "practice_answers_stored": len(stored.practice),
            "practice_answers_stored_unacknowledged": sum(1 for v in by_id if v not in acknowledged),
            "exam_sittings_stored": len(stored.sittings), "exam_saves_acknowledged": len(seen.saves),
            "exam_saves_stored": sum(len(items) for items in stored.saved.values()),
            "lost": len(lost), "duplicated": len(duplicated), "wrong_student": len(foreign),
            "misjudged": len(misjudged), "wrong_verdict_shown": len(seen.wrong_verdicts),
            "client_failures": len(seen.failures), "requests_sent_again": seen.retried,
            "examples": {"lost": lost[:5], "duplicated": duplicated[:5], "wrong_student": foreign[:5],
                         "misjudged": misjudged[:5], "wrong_verdict_shown": seen.wrong_verdicts[:5],
                         "failures": seen.failures[:5]}}


def percentiles_ms(values: list[float]) -> dict[str, float]:
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    p95 = statistics.quantiles(ordered, n=100, method="inclusive")[94] if len(ordered) > 1 else ordered[0]
    return {"count": len(ordered), "p50": round(statistics.median(ordered), 1), "p95": round(p95, 1),
            "max": round(ordered[-1], 1)}


# --- a student, in a client process --------------------------------------------------------------------------------

def address(index: int) -> str:
    """Student `index`'s loopback address: 127.0.1.1 on, 250 to a block."""
    return f"127.0.{1 + index // 250}.{1 + index % 250}"


def found(pattern: re.Pattern, text: str, what: str) -> str:
    match = pattern.search(text)
    if match is None:
        raise Failure(f"no {what} on the page: {text[:300]!r}")
    return match.group(1)


@dataclass
class Student:
    index: int
    id: str
    link: str
    web: httpx.AsyncClient
    csrf: str = ""


def answer_of(problem: Problem, seed: int, student: Optional[str], right: bool) -> tuple[dict[str, str], Optional[str]]:
    """The form's fields of a right answer (and None), or of a wrong one and the misconception it names (a right
    answer when the key names no mistake to make)."""
    if not right and key_of(problem, seed, student).mistakes:
        return wrong_answer(problem, seed, student)
    return right_answer(problem, seed, student), None


class Client:
    """One client process's students, their answers worked out from the store and the course's bank."""

    def __init__(self, base: str, where: str, course: Path, think: float, seen: Seen) -> None:
        self.base, self.think, self.seen = base, think, seen
        self.practice, self.exams = PracticeStore(where), ExamStore(where)
        self.bank = load_course_bank_strict(find_course(course))

    def close(self) -> None:
        self.practice.close()
        self.exams.close()

    async def send(self, student: Student, method: str, url: str, **kwargs) -> httpx.Response:
        """A request, sent again once when the connection closed under it before any answer, as a browser does
        (the server closes a kept-alive connection it finds idle; every form here may be sent twice: an answered
        variant keeps its first answer, a save replaces itself, a start gives the sitting begun)."""
        try:
            return await student.web.request(method, url, **kwargs)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            self.seen.retried += 1
            return await student.web.request(method, url, **kwargs)

    async def timed(self, what: str, student: Student, method: str, url: str, expect: int,
                    **kwargs) -> httpx.Response:
        started = time.perf_counter()
        answer = await self.send(student, method, url, **kwargs)
        self.seen.timings[what].append((time.perf_counter() - started) * 1000)
        if answer.status_code != expect:
            raise Failure(f"{method} {url} answered {answer.status_code}: {answer.text[:200]!r}")
        return answer

    async def sign_in(self, student: Student, delay: float) -> None:
        await asyncio.sleep(delay)
        started = time.perf_counter()
        form = await self.send(student, "GET", student.link)
        done = await self.send(student, "POST", "/signin", data={"token": found(TOKEN, form.text, "token"),
                                                      "csrf": found(CSRF, form.text, "CSRF"), "next": "/practice"})
        if done.status_code != 303:
            raise Failure(f"sign-in answered {done.status_code}: {done.text[:200]!r}")
        self.seen.timings["signin"].append((time.perf_counter() - started) * 1000)
        student.csrf = found(CSRF, (await self.send(student, "GET", "/practice")).text, "CSRF")

    async def practise(self, student: Student, answers: int, rng: random.Random) -> None:
        await asyncio.sleep(rng.uniform(0, self.think))  # the class comes to practise within a think's time
        for k in range(answers):
            # "what I need most", and the problem's page the 303 leads to
            started = time.perf_counter()
            given = await self.send(student, "POST", "/practice/next", data={"csrf": student.csrf, "topic": ""})
            if given.status_code != 303:
                raise Failure(f"the next problem answered {given.status_code}")
            path = given.headers["location"]
            if (await self.send(student, "GET", path)).status_code != 200:
                raise Failure(f"the student's own problem {path} is not shown")
            self.seen.timings["next_problem"].append((time.perf_counter() - started) * 1000)
            variant = self.practice.variant(path.rsplit("/", 1)[1], student.id)  # what the student works out
            if variant is None:
                raise Failure(f"variant {path} was given but is not stored as {student.id}'s")
            problem = self.bank.problems[variant.problem]
            fields, misconception = answer_of(problem, variant.seed, None, (student.index + k) % WRONG_EVERY != 0)
            right = misconception is None
            labels = [q.label for q in questions(problem, variant.seed)]
            typed = {label: fields.get(f"part-{n}", "") for n, label in enumerate(labels)}
            await asyncio.sleep(self.think * rng.uniform(0.5, 1.5))
            started = time.perf_counter()
            sent = await self.send(student, "POST", path, data={"csrf": student.csrf, "action": "answer", **{
                f"part-{n}": value for n, value in enumerate(typed.values())}})
            if sent.status_code != 303:
                raise Failure(f"the answer to {path} answered {sent.status_code}: {sent.text[:200]!r}")
            self.seen.practice[variant.id] = (student.id, typed, right)  # acknowledged: it must be kept
            page = await self.send(student, "GET", path)
            self.seen.timings["answer_to_feedback"].append((time.perf_counter() - started) * 1000)
            verdict = VERDICT.search(page.text)
            shown = verdict.group(1) if verdict else "no verdict"
            if right and shown != "100% of the points." or not right and (
                    shown == "100% of the points." or str(escape(misconception)) not in page.text):
                self.seen.wrong_verdicts.append(f"{student.id}: {path} ({'right' if right else 'wrong'}): {shown}")

    async def sit(self, student: Student, items: int, delay: float, rng: random.Random) -> None:
        await asyncio.sleep(delay)
        await self.timed("exam_page", student, "GET", "/exams", 200)
        started = await self.timed("exam_start", student, "POST", f"/exams/{EXAM}/start", 303,
                                   data={"csrf": student.csrf})
        paper = started.headers["location"]
        sitting_id = found(STARTED, paper, "sitting")
        await self.timed("exam_page", student, "GET", paper, 200)
        sitting = self.exams.sitting(sitting_id, student.id)
        if sitting is None:
            raise Failure(f"sitting {sitting_id} was started but is not stored as {student.id}'s")
        self.seen.sittings[sitting.id] = student.id
        for number, problem_id in enumerate(sitting.problems[:items], 1):
            problem = self.bank.problems[problem_id]
            fields, _ = answer_of(problem, EXAM_SEED, student.id, number % 2 == 1)
            asked = questions(problem, EXAM_SEED, student.id)
            typed = {q.label: fields.get(f"part-{n}", "").strip() for n, q in enumerate(asked)}
            await asyncio.sleep(rng.uniform(*EXAM_THINK_S))
            await self.timed("exam_save", student, "POST", paper, 303, data={
                "csrf": student.csrf, "item": str(number), "action": "save",
                **{f"part-{n}": value for n, value in enumerate(typed.values())}})
            self.seen.saves[(sitting.id, number)] = (student.id, typed)
            await self.timed("exam_page", student, "GET", paper, 200)


async def _phase(students: list[Student], work) -> list[str]:
    """Run `work` for each student at once; the failures, one line each."""
    async def one(student: Student) -> Optional[str]:
        try:
            await work(student)
        except (Failure, httpx.HTTPError, KeyError) as err:
            return f"{student.id}: {type(err).__name__}: {err}"
        return None
    return [f for f in await asyncio.gather(*(one(s) for s in students)) if f]


def client_process(number: int, base: str, where: str, course: str, rows: list[tuple[int, str, str]], answers: int,
                   think: float, items: int, spread: float, go: dict, done) -> None:
    """A client process: its students through the three phases, each begun when the benchmark sets its event; what
    it saw put on `done` (a Seen's fields) once the last phase is over."""
    seen = Seen()
    client = Client(base, where, Path(course), think, seen)

    async def main() -> None:
        # a connection idle for KEEP_ALIVE_S is not used again: the server closes one idle for 5 s (command.py), and
        # a request sent on it as it closes is lost without an answer; a browser retries it, httpx does not
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=4, keepalive_expiry=KEEP_ALIVE_S)
        students = [Student(i, sid, link, httpx.AsyncClient(
            base_url=base, timeout=TIMEOUT_S, limits=limits,
            transport=httpx.AsyncHTTPTransport(local_address=address(i), limits=limits))) for i, sid, link in rows]
        try:
            for phase in PHASES:
                await asyncio.to_thread(go[phase].wait)
                before = resource.getrusage(resource.RUSAGE_SELF)
                rng = random.Random(f"{phase}-{rows[0][0] if rows else 0}")
                if phase == "signin":
                    failed = await _phase(students, lambda s: client.sign_in(s, rng.uniform(0, spread)))
                elif phase == "practice":
                    failed = await _phase(students, lambda s: client.practise(s, answers, random.Random(s.index)))
                else:
                    failed = await _phase(students, lambda s: client.sit(s, items, rng.uniform(0, spread),
                                                                          random.Random(s.index)))
                after = resource.getrusage(resource.RUSAGE_SELF)
                seen.cpu_s[phase] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                seen.failures += [f"{phase}: {f}" for f in failed]
                done.put(("phase", number, phase))
        finally:
            for student in students:
                await student.web.aclose()

    try:
        asyncio.run(main())
    finally:
        client.close()
        done.put(("seen", number, vars(seen)))  # plain values: the class is this script's, which the parent names otherwise


# --- the run -------------------------------------------------------------------------------------------------------

def write_roster(path: Path, count: int) -> list[str]:
    ids = [f"p{i:04d}" for i in range(1, count + 1)]
    lines = ["id,name,email,lms_id,section,extension,extra_time"]
    lines += [f"{s},Student {s},{s}@uni.example,{9000 + i},{'AB'[i % 2]},,{'50' if i % EXTRA_EVERY == 0 else ''}"
              for i, s in enumerate(ids)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ids


def offer_exam_prep(course: Path, items: int, now: dt.datetime) -> None:
    """course.yaml given practice (the practice tests' topics and kinds) and the mock exam, open from an hour ago."""
    config = yaml.safe_load((course / "course.yaml").read_text(encoding="utf-8"))
    config["practice"] = PRACTICE
    config["exams"] = {EXAM: {"title": "Benchmark mock exam", "topics": PRACTICE["topics"], "kinds": PRACTICE["kinds"],
                              "count": items, "seed": EXAM_SEED, "opens": (now - dt.timedelta(hours=1)).isoformat(),
                              "closes": (now + dt.timedelta(hours=6)).isoformat(), "minutes": EXAM_MINUTES}}
    (course / "course.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


@contextlib.contextmanager
def store_of(folder: Path, postgres: bool) -> Iterator[tuple[str, str]]:
    """(qkv serve --db, where the stores read it): a folder of SQLite files, or a database of a PostgreSQL server of
    the run's own."""
    if not postgres:
        yield str(folder / "store"), str(folder / "store" / ACCOUNTS_FILE)
        return
    server = PostgresServer()
    try:
        with fresh_database(server.start()) as url:
            yield url, url
    finally:
        server.stop()


def run(args: argparse.Namespace, course: Path, roster: Path, students: list[str], folder: Path) -> dict:
    figures: dict = {}
    with store_of(folder, args.postgres) as (db, where):
        server = ServerProcess(serve_command(course, db, roster), log=folder / "serve.log")  # type: ignore[arg-type]
        server.start()
        try:
            tokens = issue_tokens(course, db, roster, server.url, folder / "tokens.csv")  # type: ignore[arg-type]
            rows = [(i, s, tokens[s]["link"]) for i, s in enumerate(students)]
            context = multiprocessing.get_context("spawn")
            go = {phase: context.Event() for phase in PHASES}
            done = context.Queue()
            share = [rows[p::args.client_processes] for p in range(args.client_processes)]
            clients = [context.Process(target=client_process, args=(
                number, server.url, where, str(course), part, args.answers, args.think, args.exam_items,
                args.spread, go, done)) for number, part in enumerate(p for p in share if p)]
            for process in clients:
                process.start()
            seen, phases = Seen(), {}
            reported: dict[str, set[int]] = {phase: set() for phase in PHASES}
            ended: set[int] = set()  # the client processes whose account came (after the last phase, or early)

            def hear() -> None:
                kind, number, what = done.get(timeout=3600)
                if kind == "seen":
                    seen.merge(Seen(**what))
                    ended.add(number)
                else:
                    reported[what].add(number)
            everyone = set(range(len(clients)))
            for phase in PHASES:
                load_before = os.getloadavg()[0]
                meter = TreeCpu(server.pid).__enter__()
                started = time.perf_counter()
                go[phase].set()
                while not everyone <= reported[phase] | ended:
                    hear()
                wall = time.perf_counter() - started
                spent = meter.stop()
                phases[phase] = {"wall_s": round(wall, 1), "server_cpu_s": round(spent["root"] + spent["descendants"], 2),
                                 "load_average_before": round(load_before, 2),
                                 "load_average_after": round(os.getloadavg()[0], 2)}
            while ended != everyone:
                hear()
            for process in clients:
                process.join(timeout=60)
        finally:
            server.stop()
        stored = read_gradebook(where)
    figures["checked"] = checked(seen, stored)
    t = seen.timings
    answered = max(1, len(t["answer_to_feedback"]))
    exam_requests = max(1, len(t["exam_page"]) + len(t["exam_save"]) + len(t["exam_start"]))
    figures["signin_ms"] = percentiles_ms(t["signin"])
    figures["practice"] = {"next_problem_ms": percentiles_ms(t["next_problem"]),
                           "answer_to_feedback_ms": percentiles_ms(t["answer_to_feedback"])}
    figures["exam"] = {"page_ms": percentiles_ms(t["exam_page"]), "start_ms": percentiles_ms(t["exam_start"]),
                       "save_ms": percentiles_ms(t["exam_save"])}
    signed = max(1, len(t["signin"]))
    figures["cpu"] = {
        "server_ms_per_signin": round(phases["signin"]["server_cpu_s"] / signed * 1000, 1),
        "server_ms_per_judged_answer": round(phases["practice"]["server_cpu_s"] / answered * 1000, 1),
        "server_ms_per_exam_request": round(phases["exam"]["server_cpu_s"] / exam_requests * 1000, 1),
        "clients_s": {phase: round(seen.cpu_s.get(phase, 0.0), 2) for phase in PHASES},
        "clients_ms_per_judged_answer": round(seen.cpu_s.get("practice", 0.0) / answered * 1000, 1)}
    figures["phases"] = phases
    return figures


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=400)
    parser.add_argument("--answers", type=int, default=6, help="practice answers each student gives, one after the other")
    parser.add_argument("--think", type=float, default=10.0,
                        help="a student's mean seconds between reading a problem and answering it")
    parser.add_argument("--spread", type=float, default=60.0,
                        help="the seconds in which the class signs in, and again in which it opens the exam")
    parser.add_argument("--exam-items", type=int, default=5, help="the mock exam's items, each saved once")
    parser.add_argument("--client-processes", type=int, default=4)
    parser.add_argument("--postgres", action="store_true", help="the service on a PostgreSQL server, not SQLite")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="where the figures go (a trial run's figures are no benchmark: write them elsewhere)")
    args = parser.parse_args(argv)
    for name in ("students", "answers", "exam_items", "client_processes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.students > 250 * 254:
        parser.error("--students must be at most 63500 (a loopback address each)")
    for name in ("think", "spread"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must not be negative")
    return args


def report(figures: dict) -> str:
    c, p, e, cpu = figures["checked"], figures["practice"], figures["exam"], figures["cpu"]

    def row(label: str, f: dict, goal: str = "") -> str:
        return f"| {label} | {f.get('count', 0)} | {f.get('p50', '-')} | {f.get('p95', '-')} | {f.get('max', '-')} | {goal} |"
    phases = figures["phases"]
    return "\n".join([
        f"{figures['students']} students, {figures['store']}; load average before / after each phase: "
        + ", ".join(f"{k} {v['load_average_before']} / {v['load_average_after']}" for k, v in phases.items()) + ".",
        "",
        "| what | count | p50 ms | p95 ms | max ms | goal (p95) |", "|---|---|---|---|---|---|",
        row("sign-in (the link's form, a slow hash)", figures["signin_ms"]),
        row("practice: the next problem (POST and its page)", p["next_problem_ms"]),
        row("practice: answer to feedback (POST and the verdict's page)", p["answer_to_feedback_ms"],
            f"{figures['answer_goal_ms']:g} ms"),
        row("mock exam: a page (the exams list, the paper)", e["page_ms"], f"{figures['exam_page_goal_ms']:g} ms"),
        row("mock exam: start (POST)", e["start_ms"]),
        row("mock exam: save an item (POST)", e["save_ms"]),
        "",
        "| acknowledged: practice answers / exam saves | lost | duplicated | wrong student | misjudged | wrong verdict "
        "shown | client failures | requests sent again |", "|---|---|---|---|---|---|---|---|",
        f"| {c['practice_answers_acknowledged']} / {c['exam_saves_acknowledged']} | {c['lost']} | {c['duplicated']} "
        f"| {c['wrong_student']} | {c['misjudged']} | {c['wrong_verdict_shown']} | {c['client_failures']} "
        f"| {c.get('requests_sent_again', '-')} |",
        "",
        "| server CPU ms per sign-in | per judged answer (its practice cycle) | per exam request | clients' ms per "
        "judged answer |", "|---|---|---|---|",
        f"| {cpu['server_ms_per_signin']} | {cpu['server_ms_per_judged_answer']} | {cpu['server_ms_per_exam_request']} "
        f"| {cpu['clients_ms_per_judged_answer']} |"])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qkv-bench-practice-") as scratch:
        root = Path(scratch)
        now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        started = time.perf_counter()
        course = make_course(root / "course", {}, now + dt.timedelta(days=30))
        offer_exam_prep(course, args.exam_items, now)
        build_s = time.perf_counter() - started
        roster = root / "roster.csv"
        students = write_roster(roster, args.students)
        figures: dict = {
            "students": args.students, "answers_each": args.answers, "think_s": args.think,
            "spread_s": args.spread, "exam_items": args.exam_items,
            "client_processes": args.client_processes, "store": "PostgreSQL" if args.postgres else "SQLite",
            "route": "the browser's forms: sign-in by the personal link, /practice/next and the variant's page, the "
                     "answer's POST and the verdict's page; /exams, the start, the paper, each item's save and the "
                     "paper again",
            "answer_goal_ms": ANSWER_GOAL_MS, "exam_page_goal_ms": EXAM_PAGE_GOAL_MS, "build_s": round(build_s, 1)}
        figures.update(run(args, course, roster, students, root))
    figures["answer_p95_within_goal"] = figures["practice"]["answer_to_feedback_ms"].get("p95", float("inf")) \
        <= ANSWER_GOAL_MS
    figures["exam_page_p95_within_goal"] = figures["exam"]["page_ms"].get("p95", float("inf")) <= EXAM_PAGE_GOAL_MS
    figures["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=1) + "\n")
    summary.write_for(args.results)
    print(report(figures))
    c = figures["checked"]
    clean = all(c[k] == 0 for k in ("lost", "duplicated", "wrong_student", "misjudged", "wrong_verdict_shown",
                                    "client_failures"))
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
