"""The gradebook on both of its databases: SQLite (a file) and a real PostgreSQL server (tests/servers.py starts one).

The same statements run on both: attempts are stored whole and claimed once, a second grading of a graded
attempt is refused, the counted grading follows the manifest's `counts`, a stale claim is taken over, the
reads `qkv grade`'s reports use give the same records, and the accounts keep only slow hashes.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from autograder.errors import QkvError
from autograder.grade.gradebook import FORMAT, Gradebook, NewAttempt
from autograder.grade.gradebook.accounts import AccountBook, Role
from autograder.grade.gradebook.database import schema_name, shown_url
from autograder.grade.gradebook.records import AttemptState, Counting
from autograder.results import ProblemResult, SubmissionResult, TestResult


def result(student: str, score: float, digest: str = "") -> SubmissionResult:
    tests = (TestResult("p1", "t1", "public", score, 2.0, score == 2.0, "checked", "mistake" if score < 2 else None),)
    return SubmissionResult(student, digest or f"d{score}", "graded", "", score, 2.0,
                            (ProblemResult("p1", "numeric", score, 2.0, "", tests),), answers={"p1": score})


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request, tmp_path):
    if request.param == "sqlite":
        return tmp_path / "gradebook.sqlite"
    return request.getfixturevalue("postgres_db")


@pytest.fixture
def book(where):
    with Gradebook(where, assignment="hw-1") as opened:
        opened.check_assignment("hw-1", "build-1")
        yield opened


def accept(book: Gradebook, student: str, at: float, body: bytes = b"x = 1\n", most: int = 100, hour: int = 100):
    attempt = f"{student}-{at}"
    return attempt, book.accept(NewAttempt(attempt, student, at, "hw.py", "digest", body), most, hour)


def test_an_attempt_is_stored_whole_and_claimed_by_one_grader_only(book):
    body = bytes(range(256)) * 4  # every byte value survives both databases
    attempt, refused = accept(book, "ada", 1000.0, body)
    assert refused is None and book.attempt_body(attempt) == body
    claims: list = []

    def grader() -> None:
        claims.append(book.claim(2000.0, 30))

    threads = [threading.Thread(target=grader) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken = [c for c in claims if c is not None]
    assert len(taken) == 1 and taken[0].id == attempt and taken[0].state is AttemptState.GRADING


def test_a_graded_attempt_is_not_graded_twice(book):
    attempt, _ = accept(book, "ada", 1000.0)
    book.claim(1001.0, 30)
    first = book.record(result("ada", 2.0), "bwrap", attempt=attempt)
    assert first is not None
    assert book.record(result("ada", 1.0), "bwrap", attempt=attempt) is None  # a grader that lost its claim
    assert [g.score for g in book.gradings_of("ada")] == [2.0]
    assert book.attempt(attempt).state is AttemptState.GRADED and book.waiting() == 0


def test_a_stale_claim_is_taken_over_and_a_live_one_is_not(book):
    attempt, _ = accept(book, "ada", 1000.0)
    assert book.claim(1000.0, 30).id == attempt
    assert book.claim(1020.0, 30) is None  # renewed 20 s ago: its grader is alive
    book.renew_claims([attempt], 1040.0)
    assert book.claim(1060.0, 30) is None
    assert book.claim(1080.0, 30).id == attempt  # 40 s without renewal: its grader died


@pytest.mark.parametrize("counting, counted", [(Counting.LATEST, 0.5), (Counting.BEST, 2.0)])
def test_the_counted_attempt_follows_the_manifest(book, counting, counted):
    # received in this order; graded in another (several graders), so "latest" is by receipt, not by grading
    ids = [accept(book, "ada", at)[0] for at in (1000.0, 1001.0, 1002.0)]
    for attempt, score in [(ids[2], 0.5), (ids[0], 1.0), (ids[1], 2.0)]:
        book.record(result("ada", score), "bwrap", attempt=attempt, counting=counting)
    assert book.results()[0][0].score == counted
    assert [a.score for a in book.attempts_of("ada") if a.counted] == [counted]
    assert book.latest_scores().scores.tolist() == [[counted]]


def test_the_limits_are_counted_in_the_same_transaction_as_the_insert(book):
    outcomes = []

    def send(i: int) -> None:
        outcomes.append(accept(book, "ada", 5000.0 + i, most=100, hour=3)[1])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count(None) == 3
    assert all("in the last hour" in o for o in outcomes if o)
    assert accept(book, "ada", 5000.0 + 3600 + 10, most=4, hour=3)[1] is None  # an hour later: one more
    assert "all 4 attempts" in accept(book, "ada", 5000.0 + 7200, most=4, hour=3)[1]


def test_regrading_queues_every_graded_attempt_and_counts_again(book):
    ids = [accept(book, "ada", at)[0] for at in (1000.0, 1001.0)]
    for attempt in ids:
        book.record(result("ada", 1.0), "bwrap", attempt=attempt, counting=Counting.BEST)
    assert book.regrade_attempts("nobody") == 0
    assert book.regrade_attempts("ada") == 2 and book.waiting() == 2
    book.record(result("ada", 2.0), "bwrap", attempt=ids[0], counting=Counting.BEST)
    assert [a.id for a in book.attempts_of("ada") if a.counted] == [ids[0]]


def test_qkv_grade_gradings_and_the_reports_reads_agree_on_both(book):
    book.record(result("ben", 1.0, "a"), "bwrap")
    book.record(result("ben", 2.0, "b"), "bwrap")
    book.record(result("cho", 0.0, "c"), "rlimits")
    assert book.graded_digests() == {"ben": "b", "cho": "c"}
    assert [(r.student, iso) for r, iso in book.results()] == [("ben", "bwrap"), ("cho", "rlimits")]
    assert {s: [g.score for g in gs] for s, gs in book.last_two_gradings(["ben", "cho"]).items()} == {"ben": [1.0, 2.0]}
    assert book.latest_scores().scores.tolist() == [[2.0], [0.0]]
    assert book.latest_graded_count() == 2
    assert {(h.problem, h.misconception) for h in book.latest_mistakes()} == {("p1", "mistake")}


def test_another_format_is_refused_on_postgresql_too(postgres_db):
    with Gradebook(postgres_db, assignment="hw-1") as made:
        made._db.set_format(3)  # format 4 is migrated (test_written_policy.py); 3 had no migration
    with pytest.raises(QkvError, match=f"format 3, this qkv writes format {FORMAT}"):
        Gradebook(postgres_db, assignment="hw-1")
    with Gradebook(postgres_db, assignment="hw-2") as other:  # another assignment: a schema of its own
        assert other.assignment() is None


def test_a_database_that_cannot_be_reached_is_one_line_without_the_password():
    with pytest.raises(QkvError) as caught:
        Gradebook("postgresql://qkv:sekrit@127.0.0.1:1/qkv", assignment="hw-1")
    assert "sekrit" not in str(caught.value) and "cannot connect to PostgreSQL" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert shown_url("postgresql://u:p@h/db") == "postgresql://u:***@h/db"


def test_schema_names_are_safe_and_distinct():
    names = {schema_name(n) for n in ("hw-1", "hw_1", 'a"; DROP SCHEMA x; --', "x" * 300)}
    assert len(names) == 4 and all(len(n) < 63 and n.replace("_", "").isalnum() for n in names)


@pytest.fixture(params=["sqlite", "postgresql"])
def accounts(request, tmp_path):
    where = tmp_path / "accounts.sqlite" if request.param == "sqlite" else request.getfixturevalue("postgres_db")
    with AccountBook(where) as book:
        yield book, where


def test_tokens_are_kept_only_as_slow_hashes(accounts):
    book, where = accounts
    token = book.issue("ada", Role.STUDENT, 1000.0)
    account, _, secret = token.partition(".")
    assert book.check(token).person == "ada"
    assert book.check(f"{account}.{secret[:-1]}{'0' if secret[-1] != '0' else '1'}") is None
    assert book.check(f"nosuch.{secret}") is None and book.check("") is None and book.check("." * 500) is None
    if isinstance(where, Path):
        with sqlite3.connect(where) as raw:
            stored = b"".join(bytes(v) if isinstance(v, bytes) else str(v).encode()
                              for row in raw.execute("SELECT * FROM accounts") for v in row)
        assert secret.encode() not in stored and token.encode() not in stored


def test_a_reissued_token_revokes_the_old_one_and_its_sessions(accounts):
    book, _ = accounts
    old = book.issue("ada", Role.STUDENT, 1000.0)
    cookie, _ = book.open_session(book.check(old), 1000.0, 3600)
    assert book.session(cookie, 1001.0).account.person == "ada"
    new = book.issue("ada", Role.STUDENT, 1002.0)
    assert book.check(old) is None and book.session(cookie, 1003.0) is None
    assert book.check(new).role is Role.STUDENT
    assert book.revoke("ada", 1004.0) == 1 and book.check(new) is None
    assert book.people() == {}


def test_sessions_expire_and_failed_sign_ins_are_counted(accounts):
    book, _ = accounts
    cookie, session = book.open_session(book.check(book.issue("prof", Role.INSTRUCTOR, 0.0)), 1000.0, 60)
    assert book.session(cookie, 1059.0).account.role.sees_class
    assert book.session(cookie, 1061.0) is None and book.session("forged", 1000.0) is None
    assert [book.take_turn("ip:1.2.3.4", 2000.0 + at, 900, 5) for at in range(6)] == [True] * 5 + [False]
    assert book.take_turn("ip:5.6.7.8", 2000.0, 900, 5)  # another address has its own count
    assert book.take_turn("ip:1.2.3.4", 2000.0 + 901, 900, 5)  # the first turn has left the window


def test_turns_are_counted_in_the_same_transaction_as_they_are_taken(accounts):
    """A burst of LTI login initiations from one address, from many threads at once (as web processes and the
    thread pool send them), gets the allowed turns and not one more: read-then-write in two steps let each
    thread read the count before any wrote."""
    book, where = accounts
    taken, start = [], threading.Barrier(24)

    def burst(book: AccountBook) -> None:
        start.wait()
        taken.append(book.take_turn("lti-login:10.0.0.9", 3000.0, 300, 5))

    books = [AccountBook(where) for _ in range(3)]  # three handles: as three web processes
    threads = [threading.Thread(target=burst, args=(books[i % 3],)) for i in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for other in books:
        other.close()
    assert taken.count(True) == 5 and len(taken) == 24


def test_a_token_checked_lately_skips_the_slow_hash_but_never_outlives_its_account(accounts, monkeypatch):
    from autograder.grade.gradebook import accounts as module

    book, where = accounts
    token = book.issue("ada", Role.STUDENT, 1000.0)
    slow = []
    real = module._hash
    monkeypatch.setattr(module, "_hash", lambda secret, salt: slow.append(1) or real(secret, salt))
    assert book.check(token, now=1000.0).person == "ada" and len(slow) == 1
    assert book.check(token, now=1100.0).person == "ada" and len(slow) == 1  # a poll of --submit: no scrypt
    assert book.check(token + "0", now=1100.0) is None and len(slow) == 2  # another token is checked slowly
    book.revoke("ada", 1200.0)
    assert book.check(token, now=1201.0) is None  # revoked elsewhere (qkv tokens --revoke): refused at once
    assert book.check(book.issue("ben", Role.STUDENT, 0.0), now=0.0) is not None
    assert book.check(token, now=1000.0 + module.CHECKED_SECONDS + 1) is None
    if isinstance(where, Path):  # the file holds the hashes: its owner's only, whatever the umask
        assert where.stat().st_mode & 0o777 == 0o600


def test_the_services_reads_do_not_wait_for_a_write_to_commit(tmp_path):
    # the service's pages read while a grader's synced commit is under way: they read the last commit, at once
    from autograder.grade.gradebook.database import open_sqlite

    db = open_sqlite(tmp_path / "book.sqlite", durable=True)
    db.script("CREATE TABLE marks (student TEXT, points REAL)")
    with db.write():
        db.execute("INSERT INTO marks VALUES ('ada', 1)")
    seen: list[list[tuple[str, float]]] = []
    read_done = threading.Event()

    def read() -> None:
        seen.append(list(db.execute("SELECT student, points FROM marks ORDER BY student")))
        read_done.set()

    with db.write():
        db.execute("INSERT INTO marks VALUES ('bo', 2)")
        assert db.execute("SELECT COUNT(*) FROM marks").fetchone()[0] == 2  # the write reads its own rows
        reader = threading.Thread(target=read)
        reader.start()
        # a read that waited for this write would never finish while the write waits for it
        finished = read_done.wait(timeout=120)
    reader.join()
    assert finished, "a read waited for the write's commit"
    assert seen == [[("ada", 1.0)]]  # the last commit, not the write under way
    assert list(db.execute("SELECT student FROM marks ORDER BY student")) == [("ada",), ("bo",)]
    db.close()


def test_qkv_grades_own_gradebook_keeps_one_connection(tmp_path):
    from autograder.grade.gradebook.database import open_sqlite

    db = open_sqlite(tmp_path / "book.sqlite")
    db.script("CREATE TABLE marks (student TEXT)")
    with db.write():
        db.execute("INSERT INTO marks VALUES ('ada')")
        # not the service's: a read from another thread waits for the commit and then sees it
        seen: list[int] = []
        reader = threading.Thread(target=lambda: seen.append(db.execute("SELECT COUNT(*) FROM marks").fetchone()[0]))
        reader.start()
    reader.join()
    assert seen == [1]
    db.close()
