"""Benchmark of `qkv serve` on loopback: a class handing in at once, and the same with the server killed (-9) midway.

Everything runs as a user runs it: `qkv init` and `qkv build` make a course of attention-numpy (the 36 problems, its
dates moved to the future), `qkv tokens` issues a token to each student of a generated roster, and `qkv serve` runs
as a process of its own (its default jobs: a grading slot per core and one more). Clients are threads of this process,
each with its own httpx session sent from a loopback address of its own (127.0.1.2, 127.0.1.3, ...: students come
from many addresses, and the server caps the connections of one address), and take the browser's route: GET the
personal link, POST the sign-in form, POST the upload form (multipart, with the session's CSRF token), follow the 303
to the attempt's page and read that page again when the page says (its `data-refresh`, what the browser's script
obeys), at its held look (`data-wait`, which the server answers once the result is stored), until it shows the
score. The API route (`qkv_check.py --submit`) checks the token, a slow hash, on each request, so it is the wrong
route to poll with.

Each student makes --attempts attempts, one after the other (each waits for its score, as a student reads it before
handing in again), each file one of the bundled samples (all the .py ones but the hostile one, whose loop would
measure the time limit) taken in turn and ending with a comment naming the student, so no two digests are the same.
With --mix realistic, every tenth hand-in is the bundled notebook (hua.ipynb, the comment in its first work cell)
and 5% of the students loop (below; --looping sets another fraction). With --looping F, a fraction F of the students
(spread evenly through the class) are looping students: each of their attempts is a module whose every function
loops for ever, so only the attempt's budget (the manifest's attempt_seconds, --attempt-seconds) ends it, and it
scores 0. The goal is then for the honest students: their
figures and the looping students' are kept apart.

With --postgresql, the service keeps its data on a PostgreSQL server of its own (tests/servers.py's, made to sync its
commits to the disk as the SQLite store's are) and runs as docs/serve.md sets it up for several web processes:
--web-processes (2) `qkv serve` processes on ports of their own and the one database, each grading; client c talks to
process c mod their number (a proxy keeping a client on one process), and the kill -9 is of the first. The
database's processes count in the server's CPU (`database_s`).

Three runs, each on a store of its own: one student alone (what grading one attempt takes when nothing waits), the
class (--students x --attempts from --clients clients), and the class again with `kill -9` of the server once half
the attempts were accepted and a restart on the same store; a client whose request died with the server waits for
it, looks at its attempts as a student would (the upload may have been stored before the reply was lost) and hands
in again only if it was not. Checked in each run, against the gradebook once the server has stopped:
- lost: an attempt the service accepted (a 303, or found stored after a lost reply) that has no grading;
- duplicated: an attempt with more than one grading;
- wrong student: a score that is not the sample's (graded once by `qkv grade` as the reference), a page that lists
  another's attempt or misses one of the student's own, another student's attempt id answering anything but 404,
  and a stored attempt whose student is not the one its comment names.
Figures: time from upload to score (the client's, to the look that saw it, as a student sees it; and the server's,
received to graded)
p50, p95 and max, and throughput; the looks at waiting pages after the first, per attempt. CPU (`cpu`): the server's
process tree (the `qkv serve` process, web and graders' threads, and its sandbox processes, what each reaped
included: TreeCpu, read from /proc every SAMPLE_S) from the clients' start to the last score (its start left out;
across kill -9, both servers' shares), per graded attempt, beside the clients' own (threads of this process:
its getrusage), which a real class's browsers would spend elsewhere; and `qkv grade`'s tree on the same assignment
in the same run (`qkv_grade`: the class's mix of samples, its cost beyond its start), with the ratio
(`over_qkv_grade`). The load average before and after each run is kept beside it. With --poll the waiting pages
look again on their timer alone, ignoring the held look, as they did before it: the before of a comparison. Goal
(issue 51): p95 at most 2.5 s, the server's CPU per attempt at most 1.3 times `qkv grade`'s. Each client hands in
again as soon as it is scored (no time to think), so a hand-in's round (upload to score and the pages before the
next) can take no less than clients x CPU per attempt / cores on average whatever the server does (`floor_s`,
Little's law). Written to benchmarks/results/serve.json (with
--looping, serve_looping.json; with --mix realistic, serve_mix.json; with --postgresql, `_postgresql` added to the
name); a Markdown table on stdout. A quick run: --students 10 --attempts 2 --clients 5 --results /tmp/serve.json.

With --baseline REV, only the class run (--students x --attempts from --clients, the samples, SQLite) is made, served
by qkv at git revision REV and by this qkv in alternating rounds (--rounds, the version that goes first taking turns;
benchmarks/baseline.py, shared with benchmarks/grade.py), each run on a store of its own, through the same clients on
the same files: REV's attention-numpy problems and REV's samples, each version's course made, built, issued tokens and
served by its own commands (REV's unpacked with `git archive` and run through this venv's console script with
PYTHONPATH pointing there). Each version's scores are checked against its own `qkv grade`. What differs is what REV
has: a page without a held look is looked at again on its timer (data-refresh), as --poll does; a manifest of before
`written_attempts` gets none. Figures: the medians of the server's CPU per attempt, upload to score p50 and p95, and
the run's wall time, and this version's over REV's, under `baseline` in the results file (its other figures and
earlier revisions' baselines, under `earlier_baselines`, kept).

With --patch FILE as well, "this qkv" is its last commit with FILE applied, unpacked as REV is: a comparison of the
same work, where FILE takes out what this qkv does that REV did not (benchmarks/patches/without_work_f6e097c_did_not_do
.patch: fresh numbers on every attempt, issue 47; the scan of every request for control characters, issue 45; and
compiling a submission as Python compiles it, issue 23, which works out the annotations REV's samples carry), so that
what is left is what the versions' code costs for the same work. Its figures go to serve_PATCH'S NAME.json.

    .venv/bin/python benchmarks/serve.py [--students 200] [--attempts 3] [--clients 50] [--looping 0.05]
                                         [--mix samples|realistic] [--postgresql [--web-processes 2]]
                                         [--attempt-seconds S] [--poll] [--results FILE]
    .venv/bin/python benchmarks/serve.py --baseline REV [--rounds 3] [--students ...] [--attempts ...] [--clients ...]
                                         [--patch FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import datetime as dt
import json
import os
import platform
import queue
import re
import resource
import subprocess
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import baseline  # noqa: E402
import summary  # noqa: E402
from grade import distinct_copies, graded_totals, mixed_samples, write_class  # noqa: E402
from served_course import NAME, QKV, class_samples, issue_tokens, make_course, qkv, serve_command  # noqa: E402
from servers import PostgresServer, ServerProcess, execute, fresh_database, with_database  # noqa: E402

from served_course import every_function_loops  # noqa: E402

from autograder.bundle import read_bundle  # noqa: E402
from autograder.grade.gradebook.database import open_postgres, open_sqlite, schema_name  # noqa: E402
from autograder.sandbox import default_slots  # noqa: E402
from qkv_runtime.limits import Limits  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "serve.json"
LOOPING_RESULTS = ROOT / "benchmarks" / "results" / "serve_looping.json"
NOTEBOOK_SAMPLE = "hua.ipynb"  # the bundled notebook hand-in
NOTEBOOK_EVERY = 10  # in the realistic mix, a tenth of the hand-ins are notebooks
REALISTIC_LOOPING = 0.05  # and 5% of the students loop
P95_GOAL_S = 2.5  # issue 51's goal for the class of 400 x 3 from 100 clients
UPLOAD_NAMES = {".py": ("attention_numpy.py", "text/x-python"),
                ".ipynb": ("attention_numpy.ipynb", "application/x-ipynb+json")}
RETRY_S = 300.0  # how long a client keeps trying while the server is down or swamped: a bound, not an expectation
TIMEOUT_S = 120.0
ALONE = (2, 3)  # students and attempts of the run with nothing waiting
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SCORE = re.compile(r'<strong id="score">([^<]*)</strong>')
LOOK_AGAIN = re.compile(r'id="result"[^>]* data-refresh="([0-9.]+)"(?: data-wait="([^"]+)")?')
SMALL_CLASS = 20  # `qkv grade` of this many as well: its cost to start, left out as the server's is
HELD_FLOOR_S = 0.25  # refresh.js's wait before a held look (the server spaces held looks by holding them)
LISTED = re.compile(rf'href="/a/{NAME}/attempts/([A-Za-z0-9_-]+)"')
SIGNED_IN = re.compile(r"signed in as <strong>([^<]+)</strong>")
NAMED = re.compile(rb"# student (\S+), attempt \d+")  # the last one in a body names its student


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.2  # a look at /proc costs some 3 ms of the benchmark's CPU


def proc_stats() -> dict[tuple[int, int], tuple[int, int, int]]:
    """Every process now: (pid, start time) -> (parent pid, its own CPU ticks, its reaped children's ticks)."""
    stats = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        # after the name: state ppid ... utime(12) stime(13) cutime(14) cstime(15) ... starttime(20)
        stats[(int(entry.name), int(fields[19]))] = (int(fields[1]), int(fields[11]) + int(fields[12]),
                                                     int(fields[13]) + int(fields[14]))
    return stats


class TreeCpu:
    """The CPU seconds of a process and all its descendants while it runs, from /proc, sampled every SAMPLE_S in a
    thread: each process's own time as last seen, plus what it reaped of its children (a sandbox's short-lived
    processes, most never seen). A process that ended before its parent is counted in its parent's reaped time, not
    twice; one that ended with or after its parent is counted as last seen. Split into
    the root process's own time and its descendants'."""

    def __init__(self, root: int) -> None:
        self.root = root
        self._seen: dict[tuple[int, int], tuple[int, int, int]] = {}  # last sample of each process of the tree
        self._first: dict[tuple[int, int], int] = {}  # own + reaped ticks when first seen
        self._first_reaped: dict[tuple[int, int], int] = {}
        self._last: dict[tuple[int, int], int] = {}  # the number of the last sample that saw it
        self._samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        stats = proc_stats()
        tree = {key for key in stats if key[0] == self.root}
        grew = True
        while grew:  # the descendants, generation by generation
            parents = {k[0] for k in tree}
            more = {key for key, (ppid, _, _) in stats.items() if ppid in parents and key not in tree}
            tree |= more
            grew = bool(more)
        self._samples += 1
        for key in tree:
            self._last[key] = self._samples
            if key not in self._first:  # a process born since the start: all its time is the run's
                born = self._samples > 1
                self._first[key] = 0 if born else stats[key][1] + stats[key][2]
                self._first_reaped[key] = 0 if born else stats[key][2]
            self._seen[key] = stats[key]

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample()

    def __enter__(self) -> "TreeCpu":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def stop(self) -> dict[str, float]:
        """Sample once more and stop: {"root": s, "descendants": s} spent since the start."""
        self._sample()
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        outlived = {}  # pid -> the last sample that saw a process of that pid
        for key, last in self._last.items():
            outlived[key[0]] = max(outlived.get(key[0], 0), last)
        root = descendants = 0
        for key, (ppid, own, reaped) in self._seen.items():
            if self._last[key] < outlived.get(ppid, 0):
                continue  # ended before its parent in the tree, which reaped it: counted in the parent's reaped time
            spent = own + reaped - self._first[key]
            if key[0] == self.root:  # what the root reaped is its descendants' time
                first_own = self._first[key] - self._first_reaped[key]
                root += own - first_own
                descendants += spent - (own - first_own)
            else:
                descendants += spent
        return {"root": root / CLOCK_TICKS, "descendants": descendants / CLOCK_TICKS}


class Failure(Exception):
    """A client saw something the service must not do (the run goes on; it is counted and reported)."""


@dataclass
class Ledger:
    """What the clients saw, shared by their threads."""

    acknowledged: dict[str, str] = field(default_factory=dict)  # attempt id -> student, answered with a 303
    adopted: dict[str, str] = field(default_factory=dict)  # stored, though the reply was lost with the server
    upload_to_score: list[float] = field(default_factory=list)  # the honest students'
    looping_upload_to_score: list[float] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    foreign_refused: int = 0
    looks: int = 0  # looks at waiting attempts' pages after the first
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def accepted(self) -> int:
        with self.lock:
            return len(self.acknowledged) + len(self.adopted)


def request(web: httpx.Client, method: str, url: str, **kwargs) -> httpx.Response:
    """A request that is safe to repeat, repeated while the server is away (killed, restarting)."""
    deadline = time.monotonic() + RETRY_S
    while True:
        try:
            return web.request(method, url, **kwargs)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def found(pattern: re.Pattern, text: str, what: str) -> str:
    match = pattern.search(text)
    if match is None:
        raise Failure(f"no {what} on the page: {text[:300]!r}")
    return match.group(1)


def sign_in(web: httpx.Client, link: str) -> str:
    """Sign in through the form the personal link opens; the session's CSRF token."""
    form = request(web, "GET", link)
    token = re.search(r'id="token"[^>]* value="([^"]+)"', form.text)
    if token is None:
        raise Failure("the sign-in form does not hold the link's token")
    done = request(web, "POST", "/signin", data={"token": token.group(1), "csrf": found(CSRF, form.text, "CSRF"),
                                                  "next": f"/a/{NAME}"})
    if done.status_code != 303:
        raise Failure(f"sign-in answered {done.status_code}")
    return found(CSRF, request(web, "GET", f"/a/{NAME}").text, "CSRF token")


def upload(web: httpx.Client, csrf: str, body: bytes, known: list[str], suffix: str = ".py") -> tuple[str, bool]:
    """Hand in through the form (a file ending `suffix`); (the attempt's id, whether its reply was lost and it was
    found stored)."""
    name, kind = UPLOAD_NAMES[suffix]
    deadline = time.monotonic() + RETRY_S
    while time.monotonic() < deadline:
        try:
            sent = web.post(f"/a/{NAME}/attempts", data={"csrf": csrf}, files={"file": (name, body, kind)})
        except httpx.TransportError:
            # the server went away before it answered: the attempt may be stored; look, as a student would
            new = [a for a in LISTED.findall(request(web, "GET", f"/a/{NAME}").text) if a not in known]
            if len(new) > 1:
                raise Failure(f"{len(new)} attempts appeared for one upload") from None
            if new:
                return new[0], True
            continue
        if sent.status_code != 303:
            raise Failure(f"the upload answered {sent.status_code}: {sent.text[:300]!r}")
        return sent.headers["location"].rsplit("/", 1)[1], False
    raise Failure(f"no upload got through in {RETRY_S:g} s")


def wait_for_score(web: httpx.Client, attempt: str, page: httpx.Response, poll: bool = False) -> tuple[str, int]:
    """The score, looking at the attempt's page again when `page` (its last look) says, as the browser's script
    does: at its data-wait (a look the server holds until the result is stored) where it gives one, unless `poll`
    (the page looked at again on its timer alone, as before the held look); and how many looks it took after the
    first."""
    looks = 0
    while True:
        if page.status_code != 200:
            raise Failure(f"the student's own attempt answered {page.status_code}")
        score = SCORE.search(page.text)
        if score:
            return score.group(1), looks
        again = LOOK_AGAIN.search(page.text)
        if again is None:
            raise Failure(f"attempt {attempt}'s page shows neither a score nor when to look again")
        held = None if poll else again.group(2)
        time.sleep(HELD_FLOOR_S if held else float(again.group(1)))
        page = request(web, "GET", held or f"/a/{NAME}/attempts/{attempt}")
        looks += 1


@dataclass(frozen=True)
class Mix:
    """The class's hand-ins: the .py samples in turn and, with `notebook`, every NOTEBOOK_EVERY-th hand-in the
    notebook instead. A sample's number is its place in `samples()`."""

    py: tuple[str, ...]
    notebook: str | None = None

    def samples(self) -> list[tuple[str, str]]:
        """Each sample's (text, suffix)."""
        return [(t, ".py") for t in self.py] + ([(self.notebook, ".ipynb")] if self.notebook is not None else [])

    def drawn(self, n: int) -> int:
        """The sample of a student's n-th hand-in, counted from the student's place in the class."""
        if self.notebook is not None and n % NOTEBOOK_EVERY == NOTEBOOK_EVERY - 1:
            return len(self.py)
        return n % len(self.py)


def signed(text: str, suffix: str, line: str) -> str:
    """`text` with the comment `line` at the end of its code (a notebook's: of its first work cell)."""
    if suffix == ".py":
        return f"{text}\n{line}\n"
    notebook = json.loads(text)
    cell = next(c for c in notebook["cells"] if c.get("metadata", {}).get("qkv", {}).get("role") == "work")
    source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    cell["source"] = f"{source}\n{line}\n"
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"  # as nbformat writes


def client_address(client: int) -> str:
    """The loopback address a client thread sends from: one a client, as students come from addresses of their own
    (Linux answers all of 127.0.0.0/8 on the loopback), so the server's cap on connections per address meets one
    student's browser, not the whole benchmark."""
    return f"127.0.{1 + client // 250}.{2 + client % 250}"


def one_student(base: str, row: dict, index: int, attempts: int, mix: Mix, expected: list[float],
                ledger: Ledger, done: dict[str, str], loops: str | None, poll: bool = False,
                address: str = "127.0.0.1") -> None:
    """One student's session, from `address`: sign in, hand in `attempts` times reading each score, read the
    attempts back, and try another student's attempt. `loops`: a looping student's module (every function loops),
    handed in each time."""
    student = row["id"]
    link = httpx.URL(row["link"])  # to this client's server: any web process serves any student
    with httpx.Client(base_url=base, timeout=TIMEOUT_S, transport=httpx.HTTPTransport(local_address=address)) as web:
        csrf = sign_in(web, link.raw_path.decode("ascii"))
        known: list[str] = []
        samples = mix.samples()
        for k in range(attempts):
            sample = mix.drawn(index + k)
            (text, suffix), earns = (samples[sample], expected[sample]) if loops is None else ((loops, ".py"), 0.0)
            body = signed(text, suffix, f"# student {student}, attempt {k + 1}").encode()
            started = time.perf_counter()
            attempt, adopted = upload(web, csrf, body, known, suffix)
            with ledger.lock:
                (ledger.adopted if adopted else ledger.acknowledged)[attempt] = student
            known.append(attempt)
            # the 303's page, as the browser follows it: the first look
            score, looks = wait_for_score(web, attempt, request(web, "GET", f"/a/{NAME}/attempts/{attempt}"), poll)
            with ledger.lock:
                ledger.looks += looks
                (ledger.upload_to_score if loops is None else ledger.looping_upload_to_score).append(
                    time.perf_counter() - started)
            # a later attempt draws fresh numbers for the written problems (issue 47), which the sample's answers,
            # keyed to the release's, do not fit: its score is checked against qkv grade's on the first attempt only
            if (k == 0 or loops is not None) and float(score.split("/")[0]) != earns:
                with ledger.lock:
                    ledger.wrong.append(f"{student}: attempt {attempt} scored {score}, "
                                        f"{'a loop' if loops else f'sample {sample}'} earns {earns:g}")
        page = request(web, "GET", f"/a/{NAME}").text
        shown, listed = found(SIGNED_IN, page, "account"), set(LISTED.findall(page))
        if shown != student or listed != set(known):
            with ledger.lock:
                ledger.wrong.append(f"{student}: the page is {shown}'s and lists {sorted(listed ^ set(known))} "
                                    "beyond or short of the student's own")
        with ledger.lock:
            others = [a for a, who in done.items() if who != student]
            done.update((a, student) for a in known)
        if others:
            foreign = request(web, "GET", f"/a/{NAME}/attempts/{others[index % len(others)]}")
            with ledger.lock:
                if foreign.status_code == 404:
                    ledger.foreign_refused += 1
                else:
                    ledger.wrong.append(f"{student}: another student's attempt answered {foreign.status_code}")


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    p95 = statistics.quantiles(ordered, n=100, method="inclusive")[94] if len(ordered) > 1 else ordered[0]
    return {"count": len(ordered), "p50": round(statistics.median(ordered), 2), "p95": round(p95, 2),
            "max": round(ordered[-1], 2)}


def stored(store: str) -> tuple[dict[str, tuple], dict[str, list[tuple]]]:
    """The attempts table (id -> student, received_at, body) and the gradings of each attempt (graded_at, student),
    from the store's gradebook (a folder's SQLite file, or the assignment's PostgreSQL schema)."""
    db = (open_postgres(store, schema_name(NAME)) if store.startswith("postgresql://")
          else open_sqlite(Path(store) / NAME / "gradebook.sqlite", read_only=True))
    try:
        attempts = {a: (s, r, bytes(b)) for a, s, r, b in db.execute(
            "SELECT id, student, received_at, body FROM attempts")}
        gradings: dict[str, list[tuple]] = {}
        for attempt, graded_at, student in db.execute("SELECT attempt, graded_at, student FROM gradings"
                                                       " WHERE attempt IS NOT NULL"):
            gradings.setdefault(attempt, []).append((graded_at, student))
    finally:
        db.close()
    return attempts, gradings


def checked(store: str, ledger: Ledger, killed_at: float | None, restarted_at: float | None,
            looping: frozenset[str]) -> dict:
    attempts, gradings = stored(store)
    seen = {**ledger.acknowledged, **ledger.adopted}
    lost = sorted(a for a in set(seen) | set(attempts) if not gradings.get(a))
    duplicated = sorted(a for a, g in gradings.items() if len(g) > 1)
    wrong = list(ledger.wrong)
    for attempt, (student, _, body) in attempts.items():
        named = NAMED.findall(body)
        if not named or named[-1].decode() != student or seen.get(attempt, student) != student:
            wrong.append(f"attempt {attempt} is stored as {student}'s")
        if any(who != student for _, who in gradings.get(attempt, [])):
            wrong.append(f"attempt {attempt} of {student} was graded as another's")
    figures = {
        "accepted": len(attempts), "acknowledged": len(ledger.acknowledged),
        "found_stored_after_a_lost_reply": len(ledger.adopted),
        "graded": sum(1 for a in attempts if gradings.get(a)), "lost": len(lost), "duplicated": len(duplicated),
        "notebooks": sum(1 for _, _, body in attempts.values() if body.lstrip().startswith(b"{")),
        "wrong_student": len(wrong), "other_students_attempts_refused": ledger.foreign_refused,
        "client_failures": len(ledger.failures),
        "upload_to_score_s": percentiles(ledger.upload_to_score),
        "received_to_graded_s": percentiles([g[0][0] - attempts[a][1] for a, g in gradings.items()
                                             if a in attempts and attempts[a][0] not in looping]),
        "examples": {"lost": lost[:5], "duplicated": duplicated[:5], "wrong": wrong[:5],
                     "failures": ledger.failures[:5]},
    }
    if looping:
        figures["looping_students"] = len(looping)
        figures["looping_upload_to_score_s"] = percentiles(ledger.looping_upload_to_score)
        figures["looping_received_to_graded_s"] = percentiles([g[0][0] - attempts[a][1] for a, g in gradings.items()
                                                             if a in attempts and attempts[a][0] in looping])
    if killed_at is not None:
        before = [a for a, (_, received, _) in attempts.items() if received < killed_at]
        figures["accepted_before_the_kill"] = len(before)
        figures["graded_after_the_restart"] = sum(1 for a in before if gradings.get(a)
                                                   and gradings[a][0][0] >= restarted_at)
        figures["graded_exactly_once"] = not lost and not duplicated
    return figures


@dataclass
class Service:
    """Where a run's service keeps its data (`store`: a folder, or a PostgreSQL database's URL), how many web
    processes serve it (each a `qkv serve` of its own on a port of its own, as docs/serve.md starts them on
    PostgreSQL: every one grades), and the PostgreSQL server's process (its postmaster), whose CPU is the service's
    too."""

    store: str
    web_processes: int = 1
    database_pid: int | None = None


def run(course: Path, folder: Path, service: Service, roster: Path, students: list[str], attempts: int,
        clients: int, mix: Mix, expected: list[float], jobs: list[str], kill: bool, everyone: bool,
        looping: frozenset[str] = frozenset(), loops: str = "", poll: bool = False) -> dict:
    """One run on a store of its own: the service's `qkv serve` processes started, `qkv tokens` for the roster
    (`everyone`) or for `students`, the clients (client c on process c mod their number), and, with `kill`, kill -9
    of the first process once half the attempts are in and its restart. The students of `looping` hand in `loops`.
    Logs and the tokens' CSV go to `folder`."""
    folder.mkdir()
    servers = [ServerProcess(serve_command(course, service.store, roster, *jobs), log=folder / f"serve{i}.log")
               for i in range(service.web_processes)]
    try:
        for server in servers:
            server.start()
        started = time.perf_counter()
        only = [] if everyone else [arg for s in students for arg in ("--student", s)]
        tokens = issue_tokens(course, service.store, roster, servers[0].url, folder / "tokens.csv", *only)
        tokens_s = time.perf_counter() - started
        ledger, done, work = Ledger(), {}, queue.Queue()
        for index, student in enumerate(students):
            work.put((index, tokens[student]))

        def client(number: int) -> None:
            while True:
                try:
                    index, row = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    one_student(servers[number % len(servers)].url, row, index, attempts, mix, expected, ledger,
                                done, loops if row["id"] in looping else None, poll, client_address(number))
                except (Failure, httpx.HTTPError) as err:
                    with ledger.lock:
                        ledger.failures.append(f"{row['id']}: {type(err).__name__}: {err}")

        def metered() -> list[TreeCpu]:
            return [TreeCpu(server.pid).__enter__() for server in servers]

        load_before = os.getloadavg()[0]
        meters = metered()
        database = TreeCpu(service.database_pid).__enter__() if service.database_pid else None
        spent: list[dict[str, float]] = []
        clients_before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(clients)]
        for thread in threads:
            thread.start()
        killed_at = restarted_at = None
        downtime = None
        if kill:
            half = len(students) * attempts // 2
            while ledger.accepted < half and any(t.is_alive() for t in threads):
                time.sleep(0.02)
            spent += [meter.stop() for meter in meters]
            killed_at = time.time()
            servers[0].kill9()
            servers[0].start()
            restarted_at = time.time()
            meters = metered()
            downtime = restarted_at - killed_at
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        spent += [meter.stop() for meter in meters]
        database_s = sum(database.stop().values()) if database else None
        clients_after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        for server in servers:
            server.stop()
    figures = checked(service.store, ledger, killed_at, restarted_at, looping)
    figures.update({"students": len(students), "attempts_each": attempts, "clients": clients,
                    "client_addresses": min(clients, len(students)), "web_processes": len(servers),
                    "tokens_issued_s": round(tokens_s, 1), "wall_s": round(wall, 1),
                    "attempts_per_s": round(figures["graded"] / wall, 2),
                    "load_average_before": round(load_before, 2), "load_average_after": round(os.getloadavg()[0], 2)})
    web, sandbox = sum(s["root"] for s in spent), sum(s["descendants"] for s in spent)
    clients = (clients_after.ru_utime + clients_after.ru_stime - clients_before.ru_utime - clients_before.ru_stime)
    graded = max(1, figures["graded"])
    server_s = web + sandbox + (database_s or 0.0)
    figures["looks_again_per_attempt"] = round(ledger.looks / graded, 2)
    figures["cpu"] = {"server_s": round(server_s, 2), "web_process_s": round(web, 2),
                      "sandbox_processes_s": round(sandbox, 2),
                      "server_ms_per_attempt": round(server_s / graded * 1000, 1),
                      "web_process_ms_per_attempt": round(web / graded * 1000, 1),
                      "sandbox_ms_per_attempt": round(sandbox / graded * 1000, 1),
                      "clients_s": round(clients, 2), "clients_ms_per_attempt": round(clients / graded * 1000, 1)}
    if database_s is not None:
        figures["cpu"].update({"database_s": round(database_s, 2),
                               "database_ms_per_attempt": round(database_s / graded * 1000, 1)})
    if kill:
        figures["killed_after_accepted"] = figures.pop("accepted_before_the_kill")
        figures["restart_s"] = round(downtime, 1)
    return figures


@contextlib.contextmanager
def durable_postgres() -> Iterator[tuple[str, int]]:
    """A PostgreSQL server (tests/servers.py's), its commits synced to the disk as the service's SQLite commits are
    (the tests' server skips that): its URL and its postmaster's pid, whose process tree is the database's CPU."""
    import psycopg

    server = PostgresServer()
    try:
        url = server.start()
        admin = with_database(url, "postgres")
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            execute(admin, f"ALTER SYSTEM SET {setting} = on")
        execute(admin, "SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30
        while True:  # the server rereads its configuration when it gets to it
            with psycopg.connect(admin) as db:
                if all(db.execute(f"SHOW {s}").fetchone()[0] == "on" for s in ("fsync", "synchronous_commit")):
                    break
            if time.monotonic() > deadline:
                raise SystemExit("PostgreSQL did not take fsync = on within 30 s")
            time.sleep(0.1)
        yield url, int((server.data / "postmaster.pid").read_text().split()[0])
    finally:
        server.stop()


def write_roster(path: Path, count: int) -> list[str]:
    ids = [f"b{i:04d}" for i in range(1, count + 1)]
    lines = ["id,name,email,lms_id,section,extension"]
    lines += [f"{s},Student {s},{s}@uni.example,{9000 + i},{'AB'[i % 2]}," for i, s in enumerate(ids)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ids


def expected_scores(course: Path, mix: Mix, folder: Path) -> list[float]:
    """Each sample's score as `qkv grade` gives it in this run: the reference the service's scores must equal."""
    subs = folder / "samples"
    subs.mkdir()
    for i, (text, suffix) in enumerate(mix.samples()):
        (subs / f"sample{i}{suffix}").write_text(text, encoding="utf-8")
    qkv(course, "grade", NAME, subs, "--out", folder / "reference")
    totals = graded_totals(folder / "reference")
    return [float(totals[f"sample{i}"]) for i in range(len(mix.samples()))]


def write_mixed_class(folder: Path, mix: Mix, count: int, loops: str = "", looping: float = 0.0) -> Path:
    """`count` distinct hand-ins of the mix in `folder`, in its proportions (a tenth notebooks, with one), and a
    `looping` share of them `loops`, as the service's class hands them in."""
    looping_count = round(looping * count)
    notebooks = (count - looping_count) // NOTEBOOK_EVERY if mix.notebook is not None else 0
    write_class(folder, list(mix.py), count - notebooks - looping_count)
    for i, text in enumerate(distinct_copies([mix.notebook] if notebooks else [], notebooks, ".ipynb")):
        (folder / f"n{i:04d}.ipynb").write_text(text)
    for i, text in enumerate(distinct_copies([loops] if looping_count else [], looping_count)):
        (folder / f"l{i:04d}.py").write_text(text)
    return folder


def grade_cpu(course: Path, mix: Mix, folder: Path, count: int, loops: str = "", looping: float = 0.0) -> dict:
    """`qkv grade` of `count` distinct copies of the samples (the class's mix, on the same assignment: its looping
    share too, each held to the same budget), its process tree's CPU measured as the server's is, and again of
    SMALL_CLASS copies: the batch grader's cost per submission beyond its start (the difference over the difference
    in submissions), this run's reference, as the server's figures leave out its own start."""
    def graded(size: int) -> tuple[float, dict[str, float], float]:
        subs = write_mixed_class(folder / f"batch{size}", mix, size, loops, looping if size > SMALL_CLASS else 0.0)
        command = [str(QKV), "--course", str(course), "grade", NAME, str(subs), "--out", str(folder / f"out{size}")]
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL)
        with TreeCpu(process.pid) as meter:
            _, err = process.communicate()
            spent = meter.stop()
        if process.returncode != 0:
            raise SystemExit(f"qkv grade failed: {err.decode(errors='replace')[-2000:]}")
        return time.perf_counter() - started, spent, spent["root"] + spent["descendants"]

    wall, spent, total = graded(count)
    _, small_spent, small_total = graded(SMALL_CLASS)
    more = count - SMALL_CLASS

    def per(seconds: float) -> float:
        return round(seconds / more * 1000, 1)
    return {"submissions": count, "looping_submissions": round(looping * count), "wall_s": round(wall, 1),
            "cpu_s": round(total, 2),
            "grader_process_s": round(spent["root"], 2), "sandbox_processes_s": round(spent["descendants"], 2),
            "cpu_ms_per_submission_with_its_start": round(total / count * 1000, 1),
            f"cpu_s_of_{SMALL_CLASS}": round(small_total, 2),
            "cpu_ms_per_submission": per(total - small_total),
            "grader_process_ms_per_submission": per(spent["root"] - small_spent["root"]),
            "sandbox_ms_per_submission": per(spent["descendants"] - small_spent["descendants"])}


def closed_loop_floor(run: dict, batch_ms: float) -> dict[str, float]:
    """The least mean time of a hand-in's round (its upload to score, most of it, and the pages before the next)
    any server could give this run's clients (Little's law: each client hands in again once scored, so `clients`
    rounds are always under way, and the cores finish at most cores / CPU per attempt of them a second): with a
    server as cheap as `qkv grade` per submission, and with that server and the clients' own CPU on the same cores,
    as here."""
    cores = os.cpu_count() or 1
    in_system = min(run["clients"], run["students"])
    return {"as_cheap_as_qkv_grade": round(in_system * batch_ms / 1000 / cores, 2),
            "and_the_clients_here": round(in_system * (batch_ms + run["cpu"]["clients_ms_per_attempt"]) / 1000 / cores,
                                          2)}


def results_file(args: argparse.Namespace) -> Path:
    """Each kind of run's figures a file of their own: serve.json (the samples), serve_looping.json (and looping
    students), serve_mix.json (the realistic mix); with `_postgresql` on PostgreSQL."""
    kind = "_mix" if args.mix == "realistic" else "_looping" if args.looping else ""
    return RESULTS.with_name(f"serve{kind}{'_postgresql' if args.postgresql else ''}.json")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--attempts", type=int, default=3, help="each student's, one after the other")
    parser.add_argument("--clients", type=int, default=50, help="students handing in at the same time")
    parser.add_argument("--jobs", type=int, help="qkv serve --jobs (default: its own, a slot per core and one more)")
    parser.add_argument("--looping", type=float,
                        help="the fraction of the students whose every attempt loops in every function (0 to 0.5; "
                             f"default 0, with --mix realistic {REALISTIC_LOOPING})")
    parser.add_argument("--mix", choices=("samples", "realistic"), default="samples",
                        help="samples: the bundled .py samples in turn (right, classic mistakes, a syntax error, the "
                             f"stub); realistic: the same with every {NOTEBOOK_EVERY}th hand-in the bundled notebook "
                             f"and {REALISTIC_LOOPING:g} of the students looping")
    parser.add_argument("--postgresql", action="store_true",
                        help="the service on a PostgreSQL server of its own (tests/servers.py's, its commits synced "
                             "to the disk as the SQLite store's are), in --web-processes processes")
    parser.add_argument("--web-processes", type=int, default=2,
                        help="with --postgresql: how many `qkv serve` processes serve the class at once (default 2)")
    parser.add_argument("--attempt-seconds", type=float,
                        help="the manifest's grading.limits.attempt_seconds (default: qkv's own)")
    parser.add_argument("--poll", action="store_true",
                        help="look at a waiting attempt's page again on its timer (data-refresh) alone, ignoring its "
                             "held look (data-wait): the waiting page as it was before, for comparison")
    parser.add_argument("--baseline", metavar="REV",
                        help="serve the class (--students, --attempts, --clients) with qkv at this git revision and "
                             "with this qkv in alternating rounds, and only that: the figures go under `baseline` in "
                             "the results file, whose other figures stay")
    parser.add_argument("--rounds", type=int, default=3, help="with --baseline: the rounds each version serves")
    parser.add_argument("--patch", type=Path,
                        help="with --baseline: serve this qkv's last commit with this patch applied (say, without "
                             "work REV did not do: benchmarks/patches/), not the working tree; figures by default in "
                             "serve_PATCH'S NAME.json")
    parser.add_argument("--results", type=Path, help="where the figures go (default: benchmarks/results/serve.json, "
                        "with --looping serve_looping.json; a trial run's figures are no benchmark: write them "
                        "elsewhere)")
    args = parser.parse_args(argv)
    if args.attempt_seconds is not None and not 0 < args.attempt_seconds <= 36000:
        parser.error("--attempt-seconds must be more than 0 and at most 36000")
    if args.looping is None:
        args.looping = REALISTIC_LOOPING if args.mix == "realistic" else 0.0
    if not 0 <= args.looping <= 0.5:
        parser.error("--looping must be a fraction from 0 to 0.5")
    if not args.postgresql:
        args.web_processes = 1
    if args.patch and not args.baseline:
        parser.error("--patch applies to this qkv in a comparison: give --baseline REV with it")
    if args.patch and not args.patch.is_file():
        parser.error(f"--patch {args.patch}: no such file")
    args.results = args.results or (RESULTS.with_name(f"serve_{args.patch.stem}.json") if args.patch else results_file(args))
    if args.baseline and (args.looping or args.mix != "samples" or args.postgresql or args.attempt_seconds):
        parser.error("--baseline serves the samples' class on SQLite: no --looping, --mix realistic, --postgresql "
                     "or --attempt-seconds with it")
    for name in ("students", "attempts", "clients", "jobs", "web_processes", "rounds"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def report(figures: dict) -> str:
    if "class" not in figures:  # a comparison alone (--baseline REV --patch FILE)
        return "\n".join(baseline_rows(figures["baseline"]))
    rows = ["| run | attempts | lost | duplicated | wrong student | upload to score p50 / p95 / max | per second "
            "| load average before / after |",
            "|---|---|---|---|---|---|---|---|"]
    for key, label in (("alone", "one student alone"), ("class", "the class"),
                       ("kill9", "the class, kill -9 midway and a restart")):
        f = figures[key]
        t = f["upload_to_score_s"]
        rows.append(f"| {label} | {f['graded']} of {f['accepted']} | {f['lost']} | {f['duplicated']} | "
                    f"{f['wrong_student']} | {t.get('p50', '-')} / {t.get('p95', '-')} / {t.get('max', '-')} s | "
                    f"{f['attempts_per_s']} | {f.get('load_average_before', '-')} / {f.get('load_average_after', '-')} |")
        if f.get("looping_students"):
            t = f["looping_upload_to_score_s"]
            rows.append(f"| {label}: its {f['looping_students']} looping students | {t.get('count', 0)} | | | | "
                        f"{t.get('p50', '-')} / {t.get('p95', '-')} / {t.get('max', '-')} s | | |")
    if "baseline" in figures:
        rows += ["", *baseline_rows(figures["baseline"])]
    batch = figures.get("qkv_grade")
    if batch is None:  # results of before the CPU was measured
        return "\n".join(rows)
    rows += ["", "| CPU ms per attempt | web process | sandbox | server | over `qkv grade` | clients |",
             "|---|---|---|---|---|---|",
             f"| `qkv grade`, {batch['submissions']} submissions (beyond its start) | {batch['grader_process_ms_per_submission']} | "
             f"{batch['sandbox_ms_per_submission']} | {batch['cpu_ms_per_submission']} | 1 | |"]
    for key, label in (("alone", "one student alone"), ("class", "the class"), ("kill9", "the class, kill -9")):
        c = figures[key]["cpu"]
        rows.append(f"| {label} | {c['web_process_ms_per_attempt']} | {c['sandbox_ms_per_attempt']} | "
                    f"{c['server_ms_per_attempt']} | {c.get('over_qkv_grade', '-')} | {c['clients_ms_per_attempt']} |")
    floor = figures["class"].get("floor_s")
    if floor:
        rows += ["", f"The least mean hand-in round (upload to score and the pages before the next) these "
                 f"{figures['class']['clients']} clients allow (each hands in again once scored; Little's law): "
                 f"{floor['as_cheap_as_qkv_grade']} s with a server as cheap as "
                 f"`qkv grade`, {floor['and_the_clients_here']} s with the clients' CPU on the same cores."]
    if "database_ms_per_attempt" in figures["class"]["cpu"]:
        rows += ["", "The server's CPU includes PostgreSQL's processes: " + ", ".join(
            f"{figures[k]['cpu']['database_ms_per_attempt']} ms per attempt ({k})" for k in ("alone", "class", "kill9"))
            + f"; {figures['class']['web_processes']} web processes."]
    return "\n".join(rows)

# ------------------------------------------------------------------ --baseline REV

# what each round of the class run gives the comparison, from run()'s figures
BASELINE_FIGURES = {"server_cpu_ms_per_attempt": ("cpu", "server_ms_per_attempt"),
                    "upload_to_score_p50_s": ("upload_to_score_s", "p50"),
                    "upload_to_score_p95_s": ("upload_to_score_s", "p95"), "wall_s": ("wall_s",)}
FAULTS = ("lost", "duplicated", "wrong_student", "client_failures")


@contextlib.contextmanager
def engine(env: dict | None) -> Iterator[None]:
    """Every `qkv` this process starts meanwhile (the venv's console script: init, build, grade, tokens, serve) runs
    the engine that `env`'s PYTHONPATH points at (baseline.unpacked's), or this one where `env` is None."""
    before = os.environ.get("PYTHONPATH")
    if env is not None:
        os.environ["PYTHONPATH"] = env["PYTHONPATH"]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def compared_with_baseline(args: argparse.Namespace, jobs: list[str]) -> int:
    """The class run served by qkv at --baseline and by this qkv, alternating, --rounds each, each run on a store of
    its own, through the same clients on the same files: both serve the revision's attention-numpy problems (its
    manifest, dates moved, each built by its own `qkv build`) and take its bundled samples, each version's scores
    checked against its own `qkv grade`. Written under `baseline` in the results file, its other figures kept."""
    commit = baseline.commit_of(args.baseline)
    try:
        previous = json.loads(args.results.read_text()) if args.results.exists() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SystemExit(f"{args.results}: not a results file this benchmark can add to ({err})") from None
    with tempfile.TemporaryDirectory(prefix="qkv-bench-serve-baseline-") as scratch:
        root = Path(scratch)
        base = root / "baseline"
        this = baseline.unpacked(baseline.commit_of("HEAD"), root / "this", args.patch) if args.patch else None
        envs = {baseline.BASELINE: baseline.unpacked(commit, base), baseline.THIS: this}
        manifest = base / "assignments" / f"{NAME}.yaml"
        mix = Mix(tuple(mixed_samples(base / "examples" / "submissions" / NAME)))  # the revision's, for its problems
        due = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(days=30)
        serve = {"attempts": max(20, args.attempts), "attempts_per_hour": max(6, args.attempts)}
        roster = root / "roster.csv"
        students = write_roster(roster, args.students)
        courses, expected = {}, {}
        for label, env in envs.items():
            with engine(env):
                # an engine of before `written_attempts` refuses the key, and shows written verdicts at once anyway
                courses[label] = make_course(root / f"course-{label}", serve, due, manifest_file=manifest,
                                             written_attempts="first" if label == baseline.THIS else None)
                (root / f"expected-{label}").mkdir()
                expected[label] = expected_scores(courses[label], mix, root / f"expected-{label}")
        faults: dict[str, dict[str, int]] = {label: dict.fromkeys(FAULTS, 0) for label in envs}

        def served(label: str, item: str, round_: int) -> dict[str, float]:
            folder = root / f"{label}-{round_}"
            with engine(envs[label]):
                figures = run(courses[label], folder, Service(str(folder / "store")), roster, students,
                              args.attempts, args.clients, mix, expected[label], jobs, kill=False, everyone=True,
                              poll=args.poll)
            for fault in FAULTS:
                faults[label][fault] += figures[fault]
            print(f"{label}, round {round_ + 1}: {json.dumps({k: v for k, v in figures.items() if k != 'examples'})}",
                  flush=True)
            return {name: functools.reduce(lambda f, key: f[key], path, figures)
                    for name, path in BASELINE_FIGURES.items()}

        problems = len(yaml.safe_load(manifest.read_text(encoding="utf-8"))["problems"])
        runs = baseline.alternating(args.rounds, ["class"], served)
    middle = baseline.medians(runs)
    figures = {"baseline": {
        "rev": args.baseline, "commit": commit, "assignment": NAME, "problems": problems, "students": args.students,
        "attempts_each": args.attempts, "clients": args.clients, "rounds": args.rounds,
        "server_jobs": args.jobs or default_slots(), "samples": len(mix.samples()),
        "route": "the browser's forms; a waiting page looked at again at its held look (data-wait) where the "
                 "version's page gives one, else on its timer (data-refresh)" if not args.poll else
                 "the browser's forms; a waiting page looked at again on its timer alone (--poll)",
        "sample_scores": expected, "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                               "python": platform.python_version()},
        "date": dt.date.today().isoformat(), "runs": runs, "medians": middle,
        "ratios": baseline.ratios(middle, ["class"]), "faults": faults,
        **({"this": {"commit": baseline.commit_of("HEAD"), "patch": str(args.patch)}} if args.patch else {})}}
    kept = {key: value for key, value in previous.items() if key not in ("baseline", "earlier_baselines")}
    figures = {**kept, **baseline.kept_baselines(previous, figures)}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=1) + "\n")
    summary.write_for(args.results)
    print("\n".join(baseline_rows(figures["baseline"])))
    return 0 if all(count == 0 for by_fault in faults.values() for count in by_fault.values()) else 1


def baseline_rows(b: dict) -> list[str]:
    """The comparison as a table: each figure's medians and this version's over the revision's."""
    m, r = b["medians"], b["ratios"]
    patched = f" (this: {b['this']['commit'][:7]} with {b['this']['patch']} applied)" if "this" in b else ""
    rows = [f"Against {b['rev']} ({b['commit'][:7]}): {b['students']} students x {b['attempts_each']} attempts from "
            f"{b['clients']} clients, {b['rounds']} alternating rounds each{patched}, medians:", "",
            f"| figure | {b['rev']} | this | this over {b['rev']} |", "|---|---|---|---|"]
    for name in BASELINE_FIGURES:
        rows.append(f"| {name.replace('_', ' ')} | {m[name]['baseline_class']} | {m[name]['this_class']} | "
                    f"{r[name]['class']} |")
    faulty = {label: {k: v for k, v in by_fault.items() if v} for label, by_fault in b["faults"].items()}
    if any(faulty.values()):
        rows += ["", "Faults: " + "; ".join(f"{label}: {found}" for label, found in faulty.items() if found)]
    return rows

def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    if args.baseline:
        return compared_with_baseline(args, jobs)
    samples = class_samples()  # the course's numbers are the class's (tests/served_course.py)
    mix = Mix(tuple(mixed_samples(samples)),
              (samples / NOTEBOOK_SAMPLE).read_text() if args.mix == "realistic" else None)
    with tempfile.TemporaryDirectory(prefix="qkv-bench-serve-") as scratch, contextlib.ExitStack() as stack:
        root = Path(scratch)
        database = stack.enter_context(durable_postgres()) if args.postgresql else None
        due = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(days=30)
        started = time.perf_counter()
        grading = None if args.attempt_seconds is None else {"limits": {"attempt_seconds": args.attempt_seconds}}
        course = make_course(root / "course", {"attempts": max(20, args.attempts),
                                               "attempts_per_hour": max(6, args.attempts)}, due, grading=grading)
        build_s = time.perf_counter() - started
        expected = expected_scores(course, mix, root)
        roster = root / "roster.csv"
        students = write_roster(roster, args.students)
        count = round(args.looping * len(students))
        # spread through the class, and none of the students of the run alone (it measures nothing waiting)
        looping = frozenset(students[(2 * i + 1) * len(students) // (2 * count)] for i in range(count))
        loops = every_function_loops([p.function for p in read_bundle(course / "dist" / NAME / "autograder").code])
        runs = {"alone": (students[:ALONE[0]], ALONE[1], 1, False),
                "class": (students, args.attempts, args.clients, False),
                "kill9": (students, args.attempts, args.clients, True)}
        figures: dict = {"assignment": NAME, "problems": len(json.loads(
            (course / "dist" / NAME / "autograder" / "assignment.json").read_text())["problem_order"]),
            "route": "the browser's forms: sign-in, multipart upload with CSRF, the attempt page looked at again when "
                     "it says (data-refresh)" + (", on its timer alone" if args.poll else
                                                 ", at its held look (data-wait)"),
            "server_jobs": args.jobs or default_slots(), "mix": args.mix, "samples": len(mix.samples()),
            "notebooks_every": NOTEBOOK_EVERY if mix.notebook is not None else None,
            "database": "PostgreSQL (its commits synced)" if database else "SQLite", "web_processes": args.web_processes,
            "sample_scores": expected, "build_s": round(build_s, 1), "p95_goal_s": P95_GOAL_S,
            "looping_fraction": args.looping, "attempt_seconds": args.attempt_seconds or Limits().attempt_seconds}
        # a looping hand-in costs its budget in either: the batch grades the class's own mix, loops and all
        figures["qkv_grade"] = grade_cpu(course, mix, root,
                                         max(4 * SMALL_CLASS, min(1000, args.students * args.attempts)),
                                         loops, len(looping) / len(students))
        print(f"qkv grade: {json.dumps(figures['qkv_grade'])}", flush=True)
        for key, (who, attempts, clients, kill) in runs.items():
            with contextlib.ExitStack() as own:
                if database is None:
                    service = Service(str(root / key / "store"))
                else:  # a database of its own for each run, on the one server
                    service = Service(own.enter_context(fresh_database(database[0])), args.web_processes,
                                      database[1])
                figures[key] = run(course, root / key, service, roster, who, attempts, clients, mix, expected,
                                   jobs, kill, everyone=who == students,
                                   looping=looping if key != "alone" else frozenset(), loops=loops, poll=args.poll)
            print(f"{key}: {json.dumps({k: v for k, v in figures[key].items() if k != 'examples'})}", flush=True)
    batch = figures["qkv_grade"]["cpu_ms_per_submission"]
    for key in ("class", "kill9"):
        figures[key]["cpu"]["over_qkv_grade"] = round(figures[key]["cpu"]["server_ms_per_attempt"] / batch, 2)
        figures[key]["floor_s"] = closed_loop_floor(figures[key], batch)
    figures["p95_within_goal"] = figures["class"]["upload_to_score_s"].get("p95", float("inf")) <= P95_GOAL_S
    figures["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=1) + "\n")
    summary.write_for(args.results)
    print(report(figures))
    clean = all(figures[k][c] == 0 for k in ("alone", "class", "kill9")
                for c in ("lost", "duplicated", "wrong_student", "client_failures"))
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
