"""`qkv serve` abused by its own users (issue 45): a burst of sign-in guesses, an account's limit dodged with
whitespace, control characters in every kind of request input, and idle connections held open by one client. A real
server process on loopback (tests/serve_client.py), on a folder of SQLite files and on PostgreSQL where the store is
touched; raw sockets where no polite client would send what is sent. Each client that guesses comes from a loopback
address of its own (127.0.0.0/8 is all this machine), so no test's count is another's.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import select
import shutil
import socket
from collections import Counter
from pathlib import Path

import httpx
import pytest

from autograder.serve.connections import CONNECTIONS_PER_CLIENT
from conftest import ROOT
from serve_client import Browser, Page, Service, serving, wait_for
from servers import fresh_database

pytestmark = pytest.mark.slow  # servers started

NAME = "attention-numpy"
ROSTER = ROOT / "examples" / "canvas" / "roster.csv"
MIB = 2 ** 20


@pytest.fixture(scope="module")
def course(served_numpy, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("serve-abuse") / "course"
    shutil.copytree(served_numpy.folder, root, symlinks=True)
    return root


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(request, course) -> Service:
    """The class of examples/canvas, a staff member (ta) and an instructor (prof), on SQLite, then PostgreSQL."""
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            store = stack.enter_context(fresh_database(request.getfixturevalue("postgres_url")))
        else:
            store = str(course / "store")
        service = Service(course, (NAME,), ROSTER, store).start()
        try:
            service.issue("--staff", "ta", "--instructor", "prof")
            yield service
        finally:
            service.close()


def connect_from(address: str, port: int) -> socket.socket:
    sock = socket.socket()
    sock.bind((address, 0))
    sock.settimeout(120)
    sock.connect(("127.0.0.1", port))
    return sock


def read_reply(sock: socket.socket) -> bytes:
    reply = b""
    with contextlib.suppress(OSError):
        while data := sock.recv(65536):
            reply += data
    sock.close()
    return reply


def status_of(reply: bytes) -> int:
    found = re.match(rb"HTTP/1.1 (\d{3}) ", reply)
    return int(found.group(1)) if found else 0


def peak_memory_since_reset(pid: int) -> int:
    """The process's peak resident memory (VmHWM) since the last reset_peak_memory, in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024


def reset_peak_memory(pid: int) -> int:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # the kernel's reset of VmHWM to the resident memory now
    return peak_memory_since_reset(pid)


# ------------------------------------------------------------------ sign-in guesses

def test_eighty_guesses_at_once_from_one_address_get_ten_slow_checks_and_no_more_memory(service):
    """80 made-up tokens from one address sent together: ten are checked (401), every other is refused before its
    slow hash (429), and the server's peak memory rises by less than eight hashes' worth (each is 16 MiB), however
    many arrive at once. Before issue 45: 35-48 were checked, and memory rose by hundreds of MiB."""
    address, port = "127.0.0.3", service.server.port
    before = reset_peak_memory(service.server.pid)
    sockets = [connect_from(address, port) for _ in range(80)]
    for sock in sockets:  # every request whole on the wire before any reply is read
        token = f"{secrets.token_hex(6)}.{secrets.token_hex(20)}"
        sock.sendall(f"GET /api/a/{NAME}/attempts/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                     f"Connection: close\r\n\r\n".encode())
    statuses = Counter(status_of(read_reply(sock)) for sock in sockets)
    assert statuses == {401: 10, 429: 70}
    rise = peak_memory_since_reset(service.server.pid) - before
    assert rise < 8 * 16 * MIB, f"{rise / MIB:.0f} MiB"
    right = Browser(service.url, address).sign_in(service.tokens["s2026001"])
    assert right.status_code == 429  # the address is spent for the window, a right token included


def test_whitespace_before_a_token_counts_against_the_same_account(service):
    """Ten wrong secrets for one account, each from an address of its own and with blanks of its own before it (the
    check strips them): the account's right token is refused after them, as with no blanks."""
    token = service.issue("--staff", "padded")["padded"]
    account = token.split(".")[0]
    for i in range(10):
        padding = " " * (i // 2 + 1) + "\t" * (i % 2)
        wrong = Browser(service.url, f"127.0.0.{50 + i}").sign_in(f"{padding}{account}.{secrets.token_hex(20)}")
        assert wrong.status_code == 401
    assert Browser(service.url, "127.0.0.60").sign_in(token).status_code == 429


def test_a_class_behind_one_address_signing_in_at_once_is_queued_not_refused(service):
    """Twelve right tokens, none used before, from one address at once (more than the ten tries the address may
    have open): each signs in, as the ones before it pass and count no more."""
    address, port = "127.0.0.4", service.server.port
    tokens = service.issue(*(arg for n in range(12) for arg in ("--staff", f"queued-{n}"))).values()
    sockets = [connect_from(address, port) for _ in tokens]
    for sock, token in zip(sockets, tokens):
        sock.sendall(f"GET /api/a/{NAME}/attempts/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                     f"Connection: close\r\n\r\n".encode())
    assert [status_of(read_reply(sock)) for sock in sockets] == [404] * 12  # signed in: no attempt x


# ------------------------------------------------------------------ control characters

def test_a_control_character_in_any_request_input_is_a_one_line_400_and_no_traceback(service):
    """A NUL (or an escape) in an attempt id, a student id, the regrade field, the sign-in token, a query or a cookie:
    refused as bad input, in one line, before any route (signed in or not), and nothing in the server's log. Before
    issue 45 PostgreSQL answered 500, with its traceback in the log."""
    logged = service.server.log.stat().st_size
    student, ta, prof = (service.signed_in(who, f"127.0.0.{70 + i}") for i, who in enumerate(("s2026009", "ta",
                                                                                                "prof")))
    anyone = Browser(service.url, "127.0.0.73")
    signin_form = Page(anyone.get("/signin").text).form("/signin")
    api = {"authorization": f"Bearer {service.tokens['s2026009']}"}
    answers = {
        "attempt id": student.get(f"/a/{NAME}/attempts/x%00y"),
        "attempt id, escape": student.get(f"/a/{NAME}/attempts/x%1By"),
        "feedback's attempt id": student.get(f"/a/{NAME}/attempts/%00/feedback"),
        "held look's attempt id": student.get(f"/a/{NAME}/attempts/%00/result"),
        "attempt id, not signed in": anyone.get(f"/a/{NAME}/attempts/x%00y"),
        "attempt id, API": httpx.get(f"{service.url}/api/a/{NAME}/attempts/x%00y", headers=api, timeout=120),
        "student id": ta.get(f"/a/{NAME}/class/s2026001%00"),
        "regrade field": prof.post(f"/a/{NAME}/regrade", data={"csrf": prof.csrf(), "student": "s2026001\x00"}),
        "sign-in token": anyone.post("/signin", data={**signin_form, "token": "abc\x00.def"}),
        "sign-in token, multipart": anyone.post("/signin", files={"token": (None, "abc.d\x00ef")},
                                                data={k: v for k, v in signin_form.items() if k != "token"}),
        "query": anyone.get("/signin", params={"next": "/a/\x00"}),
        "cookie": httpx.get(f"{service.url}/a/{NAME}", headers={"cookie": 'qkv_session="\\000x"'}, timeout=120),
    }
    for what, answer in answers.items():
        assert answer.status_code == 400, f"{what}: {answer.status_code} {answer.text[:300]}"
        said = answer.json()["error"] if "/api/" in str(answer.url) else answer.text
        assert said.startswith("the request holds a control character") and "\n" not in said.strip(), what
    with open(service.server.log, "rb") as log:
        log.seek(logged)
        written = log.read().decode("utf-8", "replace")
    assert "Traceback" not in written and "Exception" not in written, written[-3000:]
    assert serving(service)


# ------------------------------------------------------------------ idle connections

def test_one_client_holding_half_sent_requests_shuts_no_one_else_out_and_is_cut_off(course, tmp_path):
    """510 connections from one address, each with half a request's headers (the server's own limit is 500): past
    its cap of connections the client is answered 503 at once; another client is served meanwhile; and the ones held
    are closed by the server once their headers are overdue (uvicorn alone waited for them for ever)."""
    service = Service(course, (NAME,), ROSTER, str(tmp_path / "store")).start()
    held: list[socket.socket] = []
    try:
        port = service.server.port
        held = [connect_from("127.0.0.5", port) for _ in range(510)]
        for sock in held:
            sock.sendall(b"GET /signin HTTP/1.1\r\nHost: x\r\nX-Half: ")
        refused: list[bytes] = []

        def answered_at_once() -> bool:
            for sock in [s for s in held if select.select([s], [], [], 0)[0]]:
                held.remove(sock)
                refused.append(read_reply(sock))
            return len(held) <= CONNECTIONS_PER_CLIENT

        wait_for(answered_at_once, "refusals past the client's cap", lambda: (len(held), len(refused)))
        assert len(held) == CONNECTIONS_PER_CLIENT
        assert {status_of(reply) for reply in refused} == {503}
        assert b"too many connections from your address" in refused[0]
        assert httpx.get(f"{service.url}/signin", timeout=120).status_code == 200  # another client, meanwhile

        def all_closed() -> bool:
            return all(select.select([s], [], [], 0)[0] and s.recv(1) == b"" for s in held)

        wait_for(all_closed, "the held connections closed by the server", seconds=300)
        again = connect_from("127.0.0.5", port)  # the client itself is served once it behaves
        again.sendall(b"GET /signin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert status_of(read_reply(again)) == 200
    finally:
        for sock in held:
            sock.close()
        service.close()
