"""Who may sign in to `qkv serve`: tokens, sessions and failed sign-ins, kept beside the course's gradebooks.

A token is `ACCOUNT.SECRET`: the account part finds the one row to check, the secret is kept only as a
salted scrypt hash and compared in constant time, so a stolen database gives no token and a wrong guess
costs the guesser a slow hash. Issuing a person's token revokes their older ones and ends their
sessions. A session is known by the SHA-256 of its cookie, so the table holds no usable cookie either.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from autograder.errors import QkvError
from autograder.grade.gradebook.database import Database, is_postgres, open_postgres, open_sqlite, shown_url

ACCOUNTS_FILE = "accounts.sqlite"
SCHEMA_NAME = "qkv_service"
_SCRYPT = dict(n=2 ** 14, r=8, p=1, dklen=32)  # about 16 MiB and tens of milliseconds a check
CHECKED_SECONDS = 300.0
LAUNCHED = "lti-"  # the id prefix of an account an LMS launch opened: it has no token (token ids are plain hex)

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
CREATE TABLE IF NOT EXISTS signin_failures (who TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS signin_failures_by_who ON signin_failures (who, at);
"""


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
    return hashlib.scrypt(secret.encode(), salt=salt, **_SCRYPT)


def _owner_only(path: Path) -> None:
    """Make the accounts file readable by its owner only before SQLite opens it (it holds the hashes)."""
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        except FileExistsError:
            pass
        except OSError as err:
            raise QkvError(str(path), f"cannot make the accounts file: {err.strerror or err}") from None


def open_service_database(where: Union[Path, str], schema: str) -> tuple[str, Database]:
    """(where it is, for messages; the database) of the service's own tables: the accounts file, owner-only,
    or the PostgreSQL schema SCHEMA_NAME; `schema`'s tables made."""
    if isinstance(where, str) and is_postgres(where):
        shown, db = shown_url(where), open_postgres(where, SCHEMA_NAME)
    else:
        _owner_only(Path(where))
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
        account, _, secret = token.strip().partition(".")
        if not account or not secret or len(token) > 200:
            return None
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

    def revoked(self, person: str) -> bool:
        """Whether `person` was revoked and not reinstated: they have accounts, none of them live (a new token
        reinstates them)."""
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

    def failures(self, who: str, since: float) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM signin_failures WHERE who = ? AND at >= ?",
                                    (who, since)).fetchone()[0])

    def note_failure(self, who: str, now: float, keep: float) -> None:
        with self._db.write():
            self._db.execute("DELETE FROM signin_failures WHERE at < ?", (now - keep,))
            self._db.execute("INSERT INTO signin_failures VALUES (?, ?)", (who, now))
