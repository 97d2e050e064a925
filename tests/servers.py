"""Real servers for the tests: a PostgreSQL server of the test session's own, headless Chromium driven by Playwright,
and ServerProcess, which runs a server command (uvicorn, say) on a loopback port until it is stopped or killed -9.

Nothing is mocked or downloaded: PostgreSQL is Debian's `postgresql` package and Chromium Debian's `chromium`, both
installed by `make setup` when it runs as root (Playwright only drives the browser it is given). Where one is missing
the test that needs it fails with one line saying how to install it, on a laptop as in CI: a skip would let a suite
"pass" against no database at all. Under pytest-xdist each worker starts its own servers, each on a port of its own.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from autograder.exam.pdf import HEADLESS_FLAGS, INSTALL_HINT, find_browser

TEST_USER = "qkv-tester"  # the unprivileged user `make setup` creates (tests/test_as_user.py reruns modules as it)
PG_MISSING = "PostgreSQL is not installed: run `make setup` as root or apt-get install postgresql"
PG_DEBIAN = "/usr/lib/postgresql/*/bin/initdb"
PG_ROLE = PG_DATABASE = "qkv"
# Bounds on waiting, not expected durations: a loaded 2-core machine may take many seconds to start a server.
WAIT_S = 120.0
STOP_S = 15.0
# How often a port is picked again when another process binds it between our probe and the server's own bind.
PORT_ATTEMPTS = 5


def free_port() -> int:
    """A loopback TCP port that nothing listens on now (the kernel's pick); it may be taken before it is used."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_taken(port: int) -> bool:
    """Whether some process listens on the port (bound as servers bind, so a connection in TIME_WAIT does not count)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
        return False


def tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no output)"
    return "\n".join(text.splitlines()[-lines:]) or "(no output)"


# --- PostgreSQL ------------------------------------------------------------------------------------------------------

def postgres_bin(search_path: str | None = None, debian: str = PG_DEBIAN) -> Path | None:
    """The folder holding initdb, pg_ctl and postgres together: initdb's on PATH, else Debian's newest version's
    (Debian keeps them off PATH, in /usr/lib/postgresql/N/bin)."""
    on_path = shutil.which("initdb", path=search_path)
    candidates = [Path(on_path).resolve().parent] if on_path else []
    version = lambda folder: int(folder.parent.name) if folder.parent.name.isdigit() else 0  # noqa: E731
    candidates += sorted((Path(found).parent for found in glob.glob(debian)), key=version, reverse=True)
    return next((folder for folder in candidates
                 if all((folder / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres"))), None)


def require_postgres(search_path: str | None = None, debian: str = PG_DEBIAN) -> Path:
    found = postgres_bin(search_path, debian)
    if found is None:
        pytest.fail(PG_MISSING, pytrace=False)
    return found


def server_user() -> pwd.struct_passwd | None:
    """Who runs the server: postgres refuses to run as root, so root hands it to an unprivileged user; anyone else
    runs it as themselves."""
    if os.geteuid() != 0:
        return None
    for name in (TEST_USER, "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    pytest.fail(f"PostgreSQL refuses to run as root and there is no user {TEST_USER} or nobody to run it "
                "(`make setup` as root creates it)", pytrace=False)


def with_database(url: str, name: str) -> str:
    return f"{url.rsplit('/', 1)[0]}/{name}"


class PostgresServer:
    """initdb into a private folder, a server on 127.0.0.1 (a free port; its socket in that folder; trust for local
    connections), one database; stop() ends it at once (-m immediate: nothing of it is kept) and removes the folder."""

    def __init__(self) -> None:
        self.bin = require_postgres()
        self.user = server_user()
        # /tmp, not pytest's folder: that one is root's and 0700 when the server runs as another user, and a unix
        # socket's path must stay under about 100 bytes
        self.folder = Path(tempfile.mkdtemp(prefix="qkv-pg-", dir="/tmp" if self.user else None))
        self.data, self.log = self.folder / "data", self.folder / "server.log"
        self.port = 0

    def run(self, *command: str) -> subprocess.CompletedProcess:
        ids = {} if self.user is None else {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "HOME": str(self.folder), "LC_ALL": "C", "TZ": "UTC"}
        # pg_ctl start hands the server's output to -l's file, so no pipe here is held open by the server
        return subprocess.run(command, cwd=self.folder, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=WAIT_S + 30, **ids)  # pg_ctl's own -t ends first

    def start(self) -> str:
        if self.user is not None:
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
        made = self.run(str(self.bin / "initdb"), "-D", str(self.data), "-U", PG_ROLE, "--auth=trust",
                        "--encoding=UTF8", "--no-locale", "--no-sync")
        if made.returncode != 0:
            pytest.fail(f"initdb failed: {(made.stderr or made.stdout).strip()[-2000:]}", pytrace=False)
        # fsync off: a test database need not outlive a power cut, and a CREATE DATABASE per test stays cheap
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(f"\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{self.folder}'\n"
                       "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
        for _ in range(PORT_ATTEMPTS):
            port = free_port()
            before = self.log.stat().st_size if self.log.exists() else 0
            done = self.run(str(self.bin / "pg_ctl"), "start", "-D", str(self.data), "-l", str(self.log), "-w",
                            "-t", str(int(WAIT_S)), "-o", f"-p {port}")
            if done.returncode == 0:
                self.port = port
                break
            said = self.log.read_text(encoding="utf-8", errors="replace")[before:] if self.log.exists() else ""
            if "already in use" not in said:
                pytest.fail(f"PostgreSQL did not start ({self.bin / 'pg_ctl'}): {done.stderr.strip()}\n"
                            f"{tail(self.log)}", pytrace=False)
        else:
            pytest.fail(f"PostgreSQL found each of {PORT_ATTEMPTS} free ports taken before it could listen",
                        pytrace=False)
        url = f"postgresql://{PG_ROLE}@127.0.0.1:{self.port}/{PG_DATABASE}"
        execute(with_database(url, "postgres"), f'CREATE DATABASE "{PG_DATABASE}"')
        return url

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():  # also a server that started too late for pg_ctl -w
                self.run(str(self.bin / "pg_ctl"), "stop", "-D", str(self.data), "-m", "immediate", "-w")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def execute(url: str, statement) -> None:
    """One statement outside a transaction (CREATE and DROP DATABASE refuse to run in one)."""
    import psycopg  # the postgres extra: imported here so that modules without a database need not have it

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(statement)


@contextlib.contextmanager
def fresh_database(server_url: str) -> Iterator[str]:
    """A new, empty database on the server of `server_url` (its URL), dropped after, even with connections open."""
    from psycopg import sql

    name = f"t_{secrets.token_hex(8)}"
    admin = with_database(server_url, "postgres")
    execute(admin, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(server_url, name)
    finally:
        execute(admin, sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """postgresql://qkv@127.0.0.1:PORT/qkv: a real server of this session (of this xdist worker) and its database."""
    server = PostgresServer()
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def postgres_db(postgres_url) -> Iterator[str]:
    """The URL of a database of its own for one test, on the session's server."""
    with fresh_database(postgres_url) as url:
        yield url


# --- Chromium --------------------------------------------------------------------------------------------------------

def require_chromium() -> str:
    found = find_browser()
    if found is None:
        pytest.fail(f"headless Chromium is not installed: {INSTALL_HINT}", pytrace=False)
    return found


@pytest.fixture(scope="session")
def chromium_browser():
    """A Playwright (sync API) Browser: the system's Chromium, headless, with the flags exam PDFs print with
    (no sandbox, which Chromium refuses as root; no calls home). Playwright's own browsers are never downloaded."""
    from playwright.sync_api import sync_playwright

    executable = require_chromium()
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=list(HEADLESS_FLAGS))
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()


# --- any server command ----------------------------------------------------------------------------------------------

def _listening_sockets(port: int) -> set[str]:
    """The sockets listening on the TCP port (any address, v4 or v6), as /proc/PID/fd links name them."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                    found.add(f"socket:[{fields[9]}]")
    return found


def _group_listens(group: int, port: int) -> bool:
    """Whether a process of the process group holds a socket listening on the port: a port that answers may be
    another process's that took it first, and a test must not talk to that one."""
    sockets = _listening_sockets(port)
    if not sockets:
        return False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) != group:  # the field after state and ppid
                continue
            fds = stat.parent / "fd"
            if any(os.readlink(fd) in sockets for fd in fds.iterdir()):
                return True
    return False


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


class ServerProcess:
    """A server command on a loopback port: start() returns once the command's own process listens there and the
    port answers; stop() ends it (SIGTERM, then SIGKILL); kill9() crashes it. start() again restarts it on the same
    port, as a service is restarted after a crash.

    `command` maps the port to the command line. With no port given one is picked, and picked again when another
    process takes it first. The command runs in a process group of its own, and stop and kill9 reach the whole group,
    so no worker it forked keeps the port. Its output (stdout and stderr) goes to `log` (a pipe nobody reads would
    stall it once full); the tail of that is in every failure.
    """

    def __init__(self, command: Callable[[int], Sequence[str]], port: int | None = None, *, log: Path | None = None,
                 env: dict[str, str] | None = None, cwd: Path | None = None, wait_s: float = WAIT_S) -> None:
        self.command, self.port, self.env, self.cwd, self.wait_s = command, port, env, cwd, wait_s
        self._own_log = log is None
        if log is None:
            handle, name = tempfile.mkstemp(prefix="qkv-server-", suffix=".log")
            os.close(handle)
            log = Path(name)
        self.log = log
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None, "the server was never started"
        return self.process.pid

    def output_tail(self, lines: int = 20) -> str:
        return tail(self.log, lines)

    def running(self) -> bool:
        return self.process is not None and not self._exited()

    def _exited(self) -> bool:
        """Whether the process has ended, without reaping it: while it is a zombie its pid, which names its process
        group, cannot be reused, so killing the group still reaches only what it started."""
        if self.process.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def _end(self, first: signal.Signals) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, first)
        deadline = time.monotonic() + STOP_S
        while first != signal.SIGKILL and not self._exited() and time.monotonic() < deadline:
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):  # what ignored SIGTERM, and what the leader left behind
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        self._end(signal.SIGTERM)

    def kill9(self) -> None:
        """kill -9 of the server and everything it started: a crash, with no chance to clean up."""
        self._end(signal.SIGKILL)

    def start(self) -> ServerProcess:
        if self.running():
            pytest.fail(f"the server is already running (pid {self.pid})", pytrace=False)  # a test's own mistake
        fixed = self.port is not None
        for _ in range(1 if fixed else PORT_ATTEMPTS):
            port = self.port if fixed else free_port()
            argv = [str(part) for part in self.command(port)]
            with open(self.log, "ab") as out:
                out.write(f"--- {' '.join(argv)}\n".encode())
                out.flush()
                self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                                env={**os.environ, **(self.env or {})}, cwd=self.cwd,
                                                start_new_session=True)
            deadline = time.monotonic() + self.wait_s
            while not self._exited() and time.monotonic() < deadline:
                if _group_listens(self.process.pid, port) and _answers(port):
                    self.port = port
                    return self
                time.sleep(0.05)
            exited = self._exited()
            self.kill9()
            if exited and not fixed and port_taken(port):
                continue  # another process took the port first: pick another
            what = (f"exited with code {self.process.returncode}" if exited
                    else f"did not listen within {self.wait_s:g} s")
            self._fail(f"{argv[0]} on port {port} {what}; its output ends:\n{self.output_tail()}")
        self._fail(f"{argv[0]}: each of {PORT_ATTEMPTS} free ports was taken before it could listen")

    def _fail(self, message: str) -> None:
        if self._own_log:  # its tail is in the message; a start that failed is not closed by its caller
            self.log.unlink(missing_ok=True)
        pytest.fail(message, pytrace=False)

    def close(self) -> None:
        self.stop()
        if self._own_log:
            self.log.unlink(missing_ok=True)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["PG_MISSING", "TEST_USER", "ServerProcess", "chromium_browser", "free_port", "fresh_database",
           "port_taken", "postgres_bin", "postgres_db", "postgres_url", "require_chromium", "require_postgres"]
