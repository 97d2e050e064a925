"""The servers the service's tests stand on (tests/servers.py), each for real: a PostgreSQL server of the session's
own and a fresh database per test, headless Chromium through Playwright, and a server command started on a free
port, found listening, killed -9 and restarted."""

from __future__ import annotations

import socket
import sys
import urllib.request

import psycopg
import pytest

import servers
from servers import PG_MISSING, ServerProcess, fresh_database, free_port, require_chromium, require_postgres


def query(url: str, statement: str, *args) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as db:
        cursor = db.execute(statement, args)
        return cursor.fetchall() if cursor.description else []


def test_postgres_url_is_a_real_server_on_loopback(postgres_url):
    [(version, database, address)] = query(postgres_url, "SELECT version(), current_database(), inet_server_addr()")
    assert version.startswith("PostgreSQL ")
    assert database == "qkv" and str(address) == "127.0.0.1"
    assert postgres_url.startswith("postgresql://qkv@127.0.0.1:")


def test_each_postgres_db_is_a_database_of_its_own(postgres_url, postgres_db):
    query(postgres_db, "CREATE TABLE attempts (student text)")
    query(postgres_db, "INSERT INTO attempts VALUES ('ada')")
    with fresh_database(postgres_url) as other:
        assert other != postgres_db
        assert query(other, "SELECT to_regclass('attempts')") == [(None,)]
        held = psycopg.connect(other)  # left open: the drop must not wait for it
        held.execute("SELECT 1")
    assert query(postgres_db, "SELECT student FROM attempts") == [("ada",)]
    name = other.rsplit("/", 1)[1]
    assert query(postgres_url, "SELECT count(*) FROM pg_database WHERE datname = %s", name) == [(0,)]
    held.close()


def test_a_missing_postgresql_fails_in_one_line(tmp_path):
    with pytest.raises(pytest.fail.Exception) as failed:
        require_postgres(search_path=str(tmp_path), debian=str(tmp_path / "*" / "bin" / "initdb"))
    assert str(failed.value) == PG_MISSING and "\n" not in PG_MISSING


def test_postgresql_tools_are_found_together(tmp_path):
    partial = tmp_path / "lib" / "99" / "bin"  # an initdb whose pg_ctl and postgres are missing is no server
    partial.mkdir(parents=True)
    (partial / "initdb").write_text("")
    debian = str(tmp_path / "lib" / "*" / "bin" / "initdb")
    assert servers.postgres_bin(search_path=str(tmp_path), debian=debian) is None
    found = require_postgres()
    assert all((found / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres"))


def test_chromium_browser_renders_a_page(chromium_browser):
    page = chromium_browser.new_page()
    try:
        page.goto("data:text/html,<title>qkv smoke</title><p id=x></p><script>x.textContent = 6 * 7</script>")
        assert page.title() == "qkv smoke"
        assert page.text_content("#x") == "42"  # its script ran
    finally:
        page.close()


def test_a_missing_chromium_fails_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception) as failed:
        require_chromium()
    assert str(failed.value).startswith("headless Chromium is not installed: ") and "\n" not in str(failed.value)


def http_server(folder):
    return lambda port: [sys.executable, "-m", "http.server", port, "--bind", "127.0.0.1", "--directory", folder]


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return reply.read().decode()


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_server_process_serves_dies_by_kill9_and_restarts_on_its_port(tmp_path):
    (tmp_path / "page.txt").write_text("hello from the server")
    with ServerProcess(http_server(tmp_path), log=tmp_path / "server.log") as server:
        port = server.port
        assert fetch(f"{server.url}/page.txt") == "hello from the server"
        server.kill9()
        assert not server.running() and server.process.returncode == -9
        assert refused(port)
        server.start()
        assert server.port == port and fetch(f"{server.url}/page.txt") == "hello from the server"
    assert not server.running() and refused(port)
    assert (tmp_path / "server.log").read_text().count("GET /page.txt") == 2  # both runs write to one log


def test_a_port_that_another_process_answers_is_not_the_servers(tmp_path):
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        # the command never listens: the port answers, but not from the server, so the server never started
        server = ServerProcess(lambda _: [sys.executable, "-c", "import time; time.sleep(60)"], port, wait_s=2)
        try:
            with pytest.raises(pytest.fail.Exception, match="did not listen within 2 s"):
                server.start()
            assert not server.running()
        finally:
            server.close()


def test_a_server_that_exits_fails_with_its_output(tmp_path):
    server = ServerProcess(lambda _: [sys.executable, "-c", "import sys; sys.exit('no such assignment: nope')"],
                           log=tmp_path / "server.log")
    with pytest.raises(pytest.fail.Exception, match="(?s)exited with code 1; its output ends:.*no such assignment"):
        server.start()


def test_a_port_taken_first_is_picked_again(tmp_path, monkeypatch):
    (tmp_path / "page.txt").write_text("second port")
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        picks = iter([taken, free_port()])  # as if another process bound the first pick before the server could
        monkeypatch.setattr(servers, "free_port", lambda: next(picks))
        with ServerProcess(http_server(tmp_path), log=tmp_path / "server.log") as server:
            assert server.port != taken and fetch(f"{server.url}/page.txt") == "second port"
    assert "Address already in use" in (tmp_path / "server.log").read_text()
