"""Who may sign in to `qkv serve`: tokens, sessions and failed sign-ins, kept beside the course's gradebooks.

A token is `ACCOUNT.SECRET`: the account part finds the one row to check, the secret is kept only as a
salted scrypt hash and compared in constant time, so a stolen database gives no token and a wrong guess
costs the guesser a slow hash. The hashes run on a pool of SCRYPTS_AT_ONCE threads of their own, whoever asks: a burst
of sign-ins costs no more memory than that many (a hash's 16 MiB is kept by the C library's allocator of the thread
that made it, so hashes spread over a web server's many threads would each keep one). Issuing a person's token revokes their older ones and ends their
sessions. A session is known by the SHA-256 of its cookie, so the table holds no usable cookie either.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import hmac
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

from autograder.grade.gradebook.database import Database, is_postgres, open_postgres, open_sqlite, shown_url

ACCOUNTS_FILE = "accounts.sqlite"
SCHEMA_NAME = "qkv_service"
_SCRYPT = dict(n=2 ** 14, r=8, p=1, dklen=32)  # about 16 MiB and tens of milliseconds a check
CHECKED_SECONDS = 300.0
LAUNCHED = "lti-"  # the id prefix of an account an LMS launch opened: it has no token (token ids are plain hex)
TOKEN_CHARS = 200  # far above a token's 53: a longer one is no token, refused before any lookup
SCRYPTS_AT_ONCE = 2  # 16 MiB each: the server's memory, whatever a burst of sign-ins asks
_SCRYPTS = ThreadPoolExecutor(SCRYPTS_AT_ONCE, thread_name_prefix="qkv-scrypt")
# a try still open after this long was cut off (its process killed mid-check): it counts as a failure
OPEN_TRY_SECONDS = 120.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS accounts (
    id         TEXT PRIMARY KEY,
    person     TEXT NOT NULL,
    role       TEXT NOT NULL,
    salt       BLOB NOT NULL,
    hash       BLOB NOT NULL,
    issued_at  REAL NOT NULL,
    revoked_at REAL
);
CREATE INDEX IF NOT EXISTS accounts_by_person ON accounts (person);
CREATE TABLE IF NOT EXISTS sessions (
    key     TEXT PRIMARY KEY,
    account TEXT NOT NULL REFERENCES accounts(id),
    csrf    TEXT NOT NULL,
    expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS signin_tries (
    ticket TEXT NOT NULL,  -- one sign-in's rows: one per key it is counted against
    who    TEXT NOT NULL,  -- the key: ip:ADDRESS (an IPv6 /64), account:ID, lti-login:ADDRESS
    at     REAL NOT NULL,
    open   INTEGER NOT NULL  -- 1 while its token is being checked; a failure once 0
);
CREATE INDEX IF NOT EXISTS signin_tries_by_who ON signin_tries (who, at);
DROP TABLE IF EXISTS signin_failures;
"""
# signin_failures (before issue 45) counted a failure after its slow check: its rows are minutes old at most


class Try(enum.Enum):
    """What a sign-in may do, asked before its token is checked (AccountBook.reserve_try)."""

    GO = "go"  # counted: check the token, then settle the try
    BUSY = "busy"  # tries in progress fill the limit: ask again once one has settled
    REFUSED = "refused"  # the failures alone fill it


class Role(enum.Enum):
    STUDENT = "student"
    STAFF = "staff"  # sees the class; changes nothing
    INSTRUCTOR = "instructor"  # also regrades, exports and pushes grades

    @property
    def sees_class(self) -> bool:
        return self is not Role.STUDENT


@dataclass(frozen=True)
class Account:
    id: str
    person: str  # a roster id for a student; a name for staff
    role: Role


@dataclass(frozen=True)
class Session:
    account: Account
    csrf: str
    expires: float


def _hash(secret: str, salt: bytes) -> bytes:
    return _SCRYPTS.submit(functools.partial(hashlib.scrypt, secret.encode(), salt=salt, **_SCRYPT)).result()


def token_account(token: str) -> Optional[str]:
    """The account a token names, as the check looks it up (so also the key its failures are counted against); None
    for what has no token's shape."""
    account, _, secret = token.strip().partition(".")
    return account if account and secret and len(token) <= TOKEN_CHARS else None


def open_service_database(where: Union[Path, str], schema: str) -> tuple[str, Database]:
    """(where it is, for messages; the database) of the service's own tables: the accounts file, owner-only,
    or the PostgreSQL schema SCHEMA_NAME; `schema`'s tables made."""
    db: Database
    if isinstance(where, str) and is_postgres(where):
        shown, db = shown_url(where), open_postgres(where, SCHEMA_NAME)
    else:  # open_sqlite makes the file owner-only: it holds the hashes
        shown, db = str(where), open_sqlite(Path(where), durable=True)
    db.script(schema)
    return shown, db


def _session_key(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


class AccountBook:
    """The service's accounts in a SQLite file (`where` a Path) or a PostgreSQL database (`where` its URL)."""

    def __init__(self, where: Union[Path, str]):
        self.where, self._db = open_service_database(where, SCHEMA)
        # tokens checked lately, by their SHA-256: the release's --submit polls with its token every few
        # seconds, and a slow hash per poll would spend the server's cores; a revoked account is still refused
        self._checked: dict[str, tuple[Account, float]] = {}

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "AccountBook":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ tokens

    def issue(self, person: str, role: Role, now: float) -> str:
        """A new token for `person` (their older ones revoked, their sessions ended); shown once, never stored."""
        # hex: a token never starts with a character a spreadsheet would read as a formula (the mail-merge CSV)
        account, secret, salt = secrets.token_hex(6), secrets.token_hex(20), secrets.token_bytes(16)
        with self._db.write():
            self._revoke(person, now)
            self._db.execute("INSERT INTO accounts VALUES (?, ?, ?, ?, ?, ?, NULL)",
                             (account, person, role.value, salt, _hash(secret, salt), now))
        return f"{account}.{secret}"

    def revoke(self, person: str, now: float) -> int:
        """Revoke every live token of `person` and end their sessions; returns how many tokens."""
        with self._db.write():
            return self._revoke(person, now)

    def _revoke(self, person: str, now: float) -> int:
        live = [r[0] for r in self._db.execute("SELECT id FROM accounts WHERE person = ? AND revoked_at IS NULL",
                                               (person,))]
        for account in live:
            self._db.execute("DELETE FROM sessions WHERE account = ?", (account,))
            self._db.execute("UPDATE accounts SET revoked_at = ? WHERE id = ?", (now, account))
        return len(live)

    def known(self, token: str, now: float) -> Optional[Account]:
        """The account of a token that passed the slow check lately and is still live, else None (no scrypt)."""
        found = self._checked.get(hashlib.sha256(token.strip().encode()).hexdigest())
        if found is None or found[1] <= now:
            return None
        live = self._db.execute("SELECT 1 FROM accounts WHERE id = ? AND revoked_at IS NULL", (found[0].id,)).fetchone()
        return found[0] if live else None

    def check(self, token: str, now: Optional[float] = None) -> Optional[Account]:
        """The live account a token belongs to, or None; the secret is compared in constant time. A token that
        passed the slow check within the last `CHECKED_SECONDS` is known by its SHA-256 (its account still live)."""
        account = token_account(token)
        if account is None:
            return None
        secret = token.strip().partition(".")[2]
        now = time.time() if now is None else now
        cached = self.known(token, now)
        if cached is not None:
            return cached
        found = self._slow_check(account, secret)
        if found is not None:
            if len(self._checked) > 10_000:
                self._checked.clear()
            self._checked[hashlib.sha256(token.strip().encode()).hexdigest()] = (found, now + CHECKED_SECONDS)
        return found

    def _slow_check(self, account: str, secret: str) -> Optional[Account]:
        row = self._db.execute("SELECT person, role, salt, hash FROM accounts WHERE id = ? AND revoked_at IS NULL",
                               (account,)).fetchone()
        if row is None:
            _hash(secret, b"\0" * 16)  # the same cost whether or not the account exists
            return None
        person, role, salt, stored = row
        if not hmac.compare_digest(_hash(secret, bytes(salt)), bytes(stored)):
            return None
        return Account(account, person, Role(role))

    def people(self) -> dict[str, Role]:
        """Everyone with a live token, and their role."""
        return {person: Role(role) for person, role in
                self._db.execute("SELECT person, role FROM accounts WHERE revoked_at IS NULL AND id NOT LIKE ?",
                                 (LAUNCHED + "%",))}

    def revoked(self) -> dict[str, Role]:
        """Everyone revoked (`revoke`: accounts, none live; a reissue keeps one live), and the role they last had."""
        return {person: Role(role) for person, role in self._db.execute(
            "SELECT person, role FROM accounts AS a WHERE NOT EXISTS (SELECT 1 FROM accounts AS b WHERE b.person = "
            "a.person AND b.revoked_at IS NULL) ORDER BY issued_at")}

    def is_revoked(self, person: str) -> bool:
        """Whether `person` is among `revoked()`: they have accounts, none of them live (`qkv tokens --reinstate`
        gives them one)."""
        row = self._db.execute("SELECT count(*), count(*) - count(revoked_at) FROM accounts WHERE person = ?",
                               (person,)).fetchone()
        return row[0] > 0 and row[1] == 0

    def launched(self, person: str, role: Role, now: float) -> Account:
        """The account an LMS launch signs `person` in to: made on their first launch, with an empty hash that no
        token matches, so it opens sessions only through a verified launch; `revoke` ends it like a token's."""
        account = LAUNCHED + hashlib.sha256(f"{person}\0{role.value}".encode()).hexdigest()[:20]
        with self._db.write():
            self._db.execute("INSERT INTO accounts VALUES (?, ?, ?, ?, ?, ?, NULL) ON CONFLICT (id) DO UPDATE "
                             "SET revoked_at = NULL", (account, person, role.value, b"", b"", now))
        return Account(account, person, role)

    # ------------------------------------------------------------------ sessions

    def open_session(self, account: Account, now: float, lifetime: float) -> tuple[str, Session]:
        """A new session: (the cookie's value, the session)."""
        cookie, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with self._db.write():
            self._db.execute("DELETE FROM sessions WHERE expires < ?", (now,))
            self._db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?)",
                             (_session_key(cookie), account.id, csrf, now + lifetime))
        return cookie, Session(account, csrf, now + lifetime)

    def session(self, cookie: str, now: float) -> Optional[Session]:
        if not cookie or len(cookie) > 100:
            return None
        row = self._db.execute(
            "SELECT a.id, a.person, a.role, s.csrf, s.expires FROM sessions AS s JOIN accounts AS a ON a.id = s.account"
            " WHERE s.key = ? AND s.expires >= ? AND a.revoked_at IS NULL", (_session_key(cookie), now)).fetchone()
        return Session(Account(row[0], row[1], Role(row[2])), row[3], row[4]) if row else None

    def close_session(self, cookie: str) -> None:
        with self._db.write():
            self._db.execute("DELETE FROM sessions WHERE key = ?", (_session_key(cookie),))

    # ------------------------------------------------------------------ failed sign-ins

    def reserve_try(self, keys: Sequence[str], now: float, window: float, allowed: int) -> tuple[Try, str]:
        """Count a sign-in against each of `keys` before its token is checked: (GO, the try's id) when every key has
        fewer than `allowed` tries in the last `window` seconds, failed or still open; (BUSY, '') when open ones fill
        a key (ask again once one settles); (REFUSED, '') when failures alone do. Read and counted in one write
        transaction (the database's write lock: threads and web processes count in turn), so a burst of guesses gets
        `allowed` slow checks, never more."""
        try_id = secrets.token_hex(8)
        marks = ", ".join("?" * len(keys))
        with self._db.write():
            self._db.execute("DELETE FROM signin_tries WHERE at < ?", (now - window,))
            counts = self._db.execute(
                f"SELECT COUNT(*), SUM(CASE WHEN open = 0 OR at < ? THEN 1 ELSE 0 END) FROM signin_tries "
                f"WHERE who IN ({marks}) GROUP BY who", (now - OPEN_TRY_SECONDS, *keys))
            if any(failed >= allowed for _, failed in counts):
                return Try.REFUSED, ""
            if any(tries >= allowed for tries, _ in counts):
                return Try.BUSY, ""
            self._db.executemany("INSERT INTO signin_tries VALUES (?, ?, ?, 1)", [(try_id, key, now) for key in keys])
        return Try.GO, try_id

    def settle_try(self, try_id: str, failed: bool) -> None:
        """A reserved try's end: a failure stays counted; a sign-in that passed is no failure and counts no more."""
        with self._db.write():
            if failed:
                self._db.execute("UPDATE signin_tries SET open = 0 WHERE ticket = ?", (try_id,))
            else:
                self._db.execute("DELETE FROM signin_tries WHERE ticket = ?", (try_id,))

    def take_turn(self, who: str, now: float, window: float, allowed: int) -> bool:
        """Whether `who` has had fewer than `allowed` turns in the last `window` seconds, counting this one if so.
        Counted and noted in one write transaction, as `reserve_try` is: a burst from many threads or web
        processes gets `allowed` turns, never more."""
        with self._db.write():
            self._db.execute("DELETE FROM signin_tries WHERE at < ?", (now - window,))
            taken = int(self._db.execute("SELECT COUNT(*) FROM signin_tries WHERE who = ?", (who,)).fetchone()[0])
            if taken >= allowed:
                return False
            self._db.execute("INSERT INTO signin_tries VALUES (?, ?, ?, 0)", (secrets.token_hex(8), who, now))
            return True
