"""The two databases a gradebook can live in, behind one small connection type.

SQLite (a file in the output folder) is the default and what `qkv grade` writes; PostgreSQL
(`postgresql://...`) is for `qkv serve` with several web processes. Both get the same statements:
`?` placeholders, `INSERT ... ON CONFLICT`, `RETURNING` and window functions are common to both; what
differs (placeholders, column types, the format number, taking the write lock, where an
assignment's tables are) is translated here and nowhere else. An assignment's tables are a file of
their own in SQLite and a schema of their own in PostgreSQL, so one server holds a whole course.

A write transaction takes the database's single write lock first (SQLite's BEGIN IMMEDIATE, an
advisory lock in PostgreSQL), so read-then-write steps such as claiming the next attempt never
interleave between processes. Within a process, one connection serves every thread (the service's
request threads and its graders): a statement's rows are read whole under the connection's lock, and a
write transaction holds that lock to its end, so no thread's statement lands inside another's transaction.
The service's SQLite files (`durable`) also give each thread a read-only connection of its own for a plain
SELECT outside a write: in WAL mode it reads the last commit without waiting for a write's synced commit,
which otherwise holds every page of the service behind it.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

from autograder import extras
from autograder.errors import QkvError
from autograder.private import private_file

POSTGRES_PREFIXES = ("postgresql://", "postgres://")
_WRITE_LOCK = 0x716B76  # "qkv": the advisory lock a PostgreSQL write transaction holds
_READ = re.compile(r"\s*SELECT\b", re.IGNORECASE)  # a statement a read-only connection may take


def is_postgres(url: str) -> bool:
    return url.startswith(POSTGRES_PREFIXES)


def shown_url(url: str) -> str:
    """A database URL without its password, for messages."""
    return re.sub(r"//([^:/@]*):[^@]*@", r"//\1:***@", url)


def schema_name(assignment: str) -> str:
    """A PostgreSQL schema for one assignment: readable when short and plain, always under 63 bytes."""
    plain = re.sub(r"[^a-z0-9_]", "_", assignment.lower())
    digest = hashlib.sha256(assignment.encode()).hexdigest()[:10]
    return f"qkv_{plain[:40]}_{digest}"


class Rows(list):
    """A statement's rows, read whole; `fetchone` and `fetchall` as on a cursor."""

    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> "Rows":
        return self


class Database:
    """One connection: `execute` and `executemany` take `?` placeholders; `write()` is a locked transaction."""

    dialect: str
    lock: threading.RLock

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows:
        with self.lock:
            return Rows(self._run(sql, args))

    def _run(self, sql: str, args: Sequence[Any]) -> Iterable[Any]:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise NotImplementedError

    def write(self) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def script(self, ddl: str) -> None:
        raise NotImplementedError

    def format(self) -> tuple[bool, int]:
        """(whether any table exists yet, the stored format number)."""
        raise NotImplementedError

    def set_format(self, version: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class SqliteDatabase(Database):
    dialect = "sqlite"

    def __init__(self, db: sqlite3.Connection, readers_of: Optional[Path] = None):
        self._db = db
        self.lock = threading.RLock()
        self._readers_of = readers_of
        self._local = threading.local()  # this thread's reader, and whether it is inside a write
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows:
        # a write transaction reads through its own connection: it must see what it has written so far
        path = self._readers_of
        if path is None or getattr(self._local, "writing", False) or not _READ.match(sql):
            return super().execute(sql, args)
        return Rows(self._reader(path).execute(sql, tuple(args)).fetchall())

    def _reader(self, path: Path) -> sqlite3.Connection:
        reader: Optional[sqlite3.Connection] = getattr(self._local, "reader", None)
        if reader is None:
            reader = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                     isolation_level=None, check_same_thread=False, timeout=60)
            with self._readers_lock:
                self._readers.append(reader)
            self._local.reader = reader
        return reader

    def _run(self, sql: str, args: Sequence[Any]) -> Iterable[Any]:
        return self._db.execute(sql, tuple(args)).fetchall()

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.lock:
            self._db.executemany(sql, rows)

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        with self.lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._local.writing = True
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            finally:
                self._local.writing = False
            self._db.execute("COMMIT")

    def script(self, ddl: str) -> None:
        with self.lock:
            self._db.executescript(ddl)

    def format(self) -> tuple[bool, int]:
        made = self.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
        return bool(made), self.execute("PRAGMA user_version").fetchone()[0]

    def set_format(self, version: int) -> None:
        self.execute(f"PRAGMA user_version = {int(version)}")

    def close(self) -> None:
        with self._readers_lock:
            for reader in self._readers:
                reader.close()
            self._readers.clear()
            self._readers_of = None  # a thread still reading after this goes to the (closed) connection and fails
        self._db.close()


class PostgresDatabase(Database):
    dialect = "postgresql"

    def __init__(self, db: Any):
        self._db = db
        self.lock = threading.RLock()

    @staticmethod
    def _sql(sql: str) -> str:
        # the gradebook's statements hold no literal '?' or '%', so the placeholders translate one for one
        return sql.replace("%", "%%").replace("?", "%s").replace("group_concat(", "string_agg(")

    def _run(self, sql: str, args: Sequence[Any]) -> Iterable[Any]:
        cursor = self._db.execute(self._sql(sql), tuple(args))
        return cursor.fetchall() if cursor.description is not None else []

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            with self.lock, self._db.cursor() as cursor:
                cursor.executemany(self._sql(sql), rows)

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        with self.lock, self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
            yield

    def script(self, ddl: str) -> None:
        with self.lock, self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
            self._db.execute(postgres_ddl(ddl))

    def format(self) -> tuple[bool, int]:
        made = self.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()"
                            ).fetchone()[0]
        if not made:
            return False, 0
        self.execute("CREATE TABLE IF NOT EXISTS qkv_format (version INTEGER NOT NULL)")
        row = self.execute("SELECT version FROM qkv_format").fetchone()
        return True, row[0] if row else 0

    def set_format(self, version: int) -> None:
        with self.lock, self._db.transaction():
            self._db.execute("CREATE TABLE IF NOT EXISTS qkv_format (version INTEGER NOT NULL)")
            self._db.execute("DELETE FROM qkv_format")
            self._db.execute("INSERT INTO qkv_format VALUES (%s)", (int(version),))

    def close(self) -> None:
        self._db.close()


def postgres_ddl(ddl: str) -> str:
    """SQLite's table statements as PostgreSQL's: 8-byte floats, identity keys, bytea, views replaced."""
    ddl = re.sub(r"INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", ddl)
    ddl = re.sub(r"\bREAL\b", "DOUBLE PRECISION", ddl)
    ddl = re.sub(r"\bBLOB\b", "BYTEA", ddl)
    ddl = re.sub(r"\) WITHOUT ROWID", ")", ddl)
    ddl = ddl.replace("CREATE VIEW IF NOT EXISTS", "CREATE OR REPLACE VIEW")
    return "\n".join(line for line in ddl.splitlines() if not line.strip().upper().startswith("PRAGMA"))


def open_sqlite(path: Path, read_only: bool = False, durable: bool = False) -> SqliteDatabase:
    """A gradebook file: made (with its folder) unless `read_only`; errors name the file in one line. `durable`
    (the service's) syncs every commit to the disk, so an attempt a student was told is in survives a power cut;
    `qkv grade`'s loses at most the gradings of its last moments, which running it again redoes."""
    if read_only:
        try:
            return SqliteDatabase(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                                  isolation_level=None, check_same_thread=False))
        except sqlite3.Error as err:
            raise QkvError(str(path), f"cannot open the gradebook: {err}") from None
    try:
        private_file(path)  # owner-only before SQLite opens it, which gives its -wal and -shm the same mode
    except OSError as err:
        if path.parent.is_dir():
            raise QkvError(str(path), f"cannot make the gradebook: {err.strerror or err}") from None
        blocked = path.parent.exists() and not path.parent.is_dir()
        what = "exists and is not a folder" if blocked else f"cannot make the output folder: {err.strerror or err}"
        raise QkvError(str(path.parent), what) from None
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=60)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # WAL: a killed process loses no committed transaction either way
        db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        db.execute("PRAGMA foreign_keys=ON")
    except sqlite3.Error as err:
        db.close()
        raise QkvError(str(path), f"not a gradebook qkv can use ({err}); choose another --out") from None
    return SqliteDatabase(db, readers_of=path if durable else None)


def open_postgres(url: str, schema: Optional[str]) -> PostgresDatabase:
    """A PostgreSQL database, its search path set to `schema` (made when missing); one-line errors."""
    extras.require("postgres", "--db")
    import psycopg

    try:
        db = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise QkvError(shown_url(url), f"cannot connect to PostgreSQL: {first}") from None
    if schema:
        quoted = '"' + schema.replace('"', '""') + '"'
        db.execute(f"CREATE SCHEMA IF NOT EXISTS {quoted}")
        db.execute(f"SET search_path TO {quoted}")
    return PostgresDatabase(db)


def database_errors() -> tuple[type[BaseException], ...]:
    """The exceptions either database raises (psycopg's only where the postgres extra is installed)."""
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)
