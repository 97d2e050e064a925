"""`python qkv_check.py --submit` as a student runs it: the release's own qkv_check.py, copied alone into a folder with
the sign-in link beside it, run in a Python of its own against a real `qkv serve` started here (attention-numpy of the
run's own course, due in 30 days: the `served_numpy` fixture; tokens from `qkv tokens`). The score it prints is the
server's; the token is never printed; each kind of failure is one line with its exit code. Where the test needs a
server that misbehaves (echoes the token, sends too much, redirects) or must see that nothing was sent, a plain HTTP
server of the standard library's stands in and records every request.
"""

from __future__ import annotations

import csv
import datetime
import http.server
import ipaddress
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from autograder.grade.gradebook import GRADEBOOK_FILE
from autograder.grade.gradebook.database import open_sqlite
from autograder.serve.guard import upload_limit
from conftest import QKV, ROOT
from served_course import class_sample
from servers import ServerProcess, free_port

NAME = "attention-numpy"
ROSTER = ROOT / "examples" / "canvas" / "roster.csv"
RUN_S = 900  # a bound on one run of the checker on a loaded 2-core machine, not an expected time
WAIT = ("--wait", "600")  # long enough for any grading here: no test depends on how fast the server grades
HINT = "put the link from your instructor's mail"


# ------------------------------------------------------------------ the release and its runs

@pytest.fixture
def release(served_numpy, tmp_path) -> Path:
    """A copy of the release's student folder, alone in a temporary folder."""
    folder = tmp_path / "release"
    shutil.copytree(served_numpy.dist / "student", folder)
    return folder


def check(release: Path, *args: str, link: str | None = None, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python RELEASE/qkv_check.py ARGS` from `cwd` (the release's parent: the link and the default file must be
    found beside qkv_check.py, not in the working folder), QKV_TOKEN set to `link` or unset, and `env` added."""
    env = {**{k: v for k, v in os.environ.items() if k not in ("QKV_TOKEN", "SSL_CERT_FILE")}, **(env or {})}
    if link is not None:
        env["QKV_TOKEN"] = link
    return subprocess.run([sys.executable, str(release / "qkv_check.py"), *args], cwd=cwd or release.parent,
                          env=env, capture_output=True, text=True, timeout=RUN_S, stdin=subprocess.DEVNULL)


def output(done: subprocess.CompletedProcess) -> str:
    return done.stdout + done.stderr


def one_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text[-3000:]
    return lines[0]


def token_of(link: str) -> str:
    return link.split("token=", 1)[1].split("&", 1)[0]


def assert_hidden(token: str, text: str) -> None:
    """No piece of the token's secret part (after the account's id) of 10 characters anywhere in `text`."""
    secret = token.partition(".")[2] or token
    pieces = {secret[i:i + 10] for i in range(max(len(secret) - 9, 1))}
    assert not [p for p in pieces if p in text], text[-3000:]


def link_to(base: str, token: str = "abc123.0123456789abcdef0123456789abcdef01234567") -> str:
    return f"{base}/signin?token={token}&next=/a/{NAME}"


# ------------------------------------------------------------------ a real service

@dataclass
class Service:
    url: str
    store: Path
    links: dict[str, str]  # by student id, as `qkv tokens` wrote them

    def attempt(self, attempt: str) -> tuple[str, str, str] | None:
        """(student, filename, state) of an attempt, read from the gradebook itself."""
        return self._one("SELECT student, filename, state FROM attempts WHERE id = ?", attempt)

    def attempts_of(self, student: str) -> int:
        return self._one("SELECT COUNT(*) FROM attempts WHERE student = ?", student)[0]

    def _one(self, query: str, *values: str) -> tuple | None:
        db = open_sqlite(self.store / NAME / GRADEBOOK_FILE, read_only=True)
        try:
            return db.execute(query, values).fetchone()
        finally:
            db.close()

    def status(self, student: str, attempt: str) -> dict:
        """The service's own API answer for an attempt (the score the checker must have printed)."""
        answer = httpx.get(f"{self.url}/api/a/{NAME}/attempts/{attempt}", timeout=120,
                           headers={"authorization": f"Bearer {token_of(self.links[student])}"})
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture(scope="module")
def service(served_numpy, tmp_path_factory) -> Iterator[Service]:
    """`qkv serve` on a copy of the run's course, with the class of examples/canvas and the links `qkv tokens` made
    for it."""
    root = tmp_path_factory.mktemp("submit-service")
    course = root / "course"
    shutil.copytree(served_numpy.folder, course, symlinks=True)
    store = root / "store"
    server = ServerProcess(lambda port: [QKV, "--course", course, "serve", NAME, "--roster", ROSTER, "--db", store,
                                         "--port", port, "--jobs", "1"], cwd=root)
    server.start()
    try:
        out = root / "tokens.csv"
        done = subprocess.run([str(QKV), "--course", str(course), "tokens", NAME, "--roster", str(ROSTER), "--db",
                               str(store), "--out", str(out), "--url", server.url], cwd=root, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        with open(out, newline="", encoding="utf-8") as handle:
            links = {row["id"]: row["link"] for row in csv.DictReader(handle)}
        yield Service(server.url, store, links)
    finally:
        server.close()


HANDED_IN = re.compile(r"handed in (.+) as attempt ([A-Za-z0-9_-]+); waiting for the score")


@pytest.mark.slow  # a server started, files graded in sandboxes
def test_a_right_file_is_handed_in_and_gets_its_score(service, release, served_numpy):
    """The release's own file (ada.py's code, full marks) and the link in qkv_token.txt beside qkv_check.py: the
    checker hands it in, waits, and prints the score the service gives and the attempt's page; the token nowhere."""
    module = served_numpy.assignment.bundle.module
    shutil.copy(class_sample("ada.py"), release / f"{module}.py")
    link = service.links["s2026001"]
    (release / "qkv_token.txt").write_text(f"\n  {link}\n", encoding="utf-8")
    done = check(release, "--submit", *WAIT)
    assert done.returncode == 0, output(done)[-3000:]
    first, score, page = done.stdout.splitlines()
    handed = HANDED_IN.fullmatch(first)
    assert handed and handed[1] == str(release / f"{module}.py"), first
    attempt = handed[2]
    most = served_numpy.assignment.bundle.max_points
    assert score == f"score {most:g} / {most:g} (final {most:g} after the late policy)"
    assert page == f"feedback: {service.url}/a/{NAME}/attempts/{attempt}"
    assert service.attempt(attempt) == ("s2026001", f"{module}.py", "graded")
    assert service.status("s2026001", attempt)["score"] == most
    assert_hidden(token_of(link), output(done))


@pytest.mark.slow
def test_the_link_in_QKV_TOKEN_comes_first_and_the_file_named_is_the_one_sent(service, release):
    """QKV_TOKEN over qkv_token.txt (which holds another student's link here), and a file named on the command line
    (ben.py, not full marks): the attempt is Ben's, named ben.py, and the score printed is the service's."""
    (release / "qkv_token.txt").write_text(service.links["s2026009"], encoding="utf-8")
    shutil.copy(class_sample("ben.py"), release.parent / "ben.py")
    link = service.links["s2026002"]
    done = check(release, "--submit", "ben.py", *WAIT, link=link)
    assert done.returncode == 0, output(done)[-3000:]
    handed = HANDED_IN.fullmatch(done.stdout.splitlines()[0])
    assert handed and handed[1] == "ben.py", done.stdout
    assert service.attempt(handed[2])[:2] == ("s2026002", "ben.py") and service.attempts_of("s2026009") == 0
    status = service.status("s2026002", handed[2])
    assert status["score"] < status["max_score"]
    assert f"score {status['score']:g} / {status['max_score']:g} (final {status['final']:g} after" in done.stdout
    assert_hidden(token_of(link), output(done))


@pytest.mark.slow
def test_a_wrong_token_is_refused_in_the_servers_words_without_the_token(service, release):
    link = service.links["s2026003"]
    token = token_of(link)
    wrong = token[:-1] + ("0" if token[-1] != "0" else "1")
    done = check(release, "--submit", link=link.replace(token, wrong))
    assert done.returncode == 1 and done.stdout == "", output(done)
    line = one_line(done.stderr)
    port = service.url.rsplit(":", 1)[1]
    assert line.startswith(f"qkv_check: refused by 127.0.0.1:{port}: that token is not valid"), line
    assert_hidden(wrong, output(done))
    assert_hidden(token, output(done))
    assert service.attempts_of("s2026003") == 0


@pytest.mark.slow
@pytest.mark.parametrize("over, said", [
    (18, "the file is {size:,} bytes; the most this assignment takes is {limit:,}"),  # read, then refused
    (20_000, "the request is larger than {body_limit:,} bytes"),  # refused unread, closed while the file is sent
], ids=["over-upload_kb", "refused-unread"])
def test_a_file_over_the_upload_limit_is_refused_in_the_servers_words(service, release, served_numpy, over, said):
    """`over` KiB past the manifest's upload_kb: the service's own sentence, exit 1, nothing stored; also when the
    service refuses the body before reading it (past the upload and its form's 64 KiB) and closes the connection
    while the file is still being sent."""
    limit = served_numpy.assignment.settings.upload_kb * 1024
    body = b"x = 1\n" + b"#" * (limit + over * 1024) + b"\n"
    (release.parent / "big.py").write_bytes(body)
    done = check(release, "--submit", "big.py", link=service.links["s2026004"])
    assert done.returncode == 1 and done.stdout == "", output(done)
    port = service.url.rsplit(":", 1)[1]
    expected = said.format(size=len(body), limit=limit, body_limit=upload_limit(f"/api/a/{NAME}/attempts", limit))
    assert one_line(done.stderr) == f"qkv_check: refused by 127.0.0.1:{port}: {expected}"
    assert service.attempts_of("s2026004") == 0


# ------------------------------------------------------------------ no service needed

@pytest.mark.parametrize("written", [None, "", "not a link at all s3cr3t-token-value",
                                     "https://qkv.example.edu/signin?next=/a/attention-numpy",
                                     "ftp://qkv.example.edu/signin?token=s3cr3t-token-value"])
def test_no_usable_link_is_a_usage_error_saying_where_it_goes(release, written):
    """No qkv_token.txt (or a blank one) and no QKV_TOKEN: exit 2 and where the link goes. A file holding something
    else: exit 2, naming the file, never echoing what it holds (a token with a typo is still a secret)."""
    if written is not None:
        (release / "qkv_token.txt").write_text(written, encoding="utf-8")
    done = check(release, "--submit")
    assert done.returncode == 2 and done.stdout == "", output(done)
    line = one_line(done.stderr)
    if written and written.strip():
        assert line.startswith(f"qkv_check: error: {release / 'qkv_token.txt'}: not a sign-in link"), line
        assert "s3cr3t" not in line
    else:
        assert HINT in line and str(release / "qkv_token.txt") in line and "QKV_TOKEN" in line, line


def test_a_file_that_does_not_exist_is_a_usage_error(release):
    done = check(release, "--submit", "no_such_file.py", link=link_to("https://qkv.example.edu"))
    assert done.returncode == 2 and done.stdout == "", output(done)
    assert one_line(done.stderr) == ("qkv_check: error: no_such_file.py: no such file; name the file to hand in, "
                                     "e.g. python qkv_check.py --submit attention_numpy.py")


def test_a_service_that_is_not_running_is_a_network_failure(release):
    port = free_port()
    link = link_to(f"http://127.0.0.1:{port}")
    done = check(release, "--submit", link=link)
    assert done.returncode == 3 and done.stdout == "", output(done)
    assert one_line(done.stderr).startswith(f"qkv_check: cannot reach 127.0.0.1:{port}: "), done.stderr
    assert_hidden(token_of(link), output(done))


# ------------------------------------------------------------------ a server that records, or misbehaves

@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Recorder:
    """A plain HTTP server that records each request and answers with `reply(request)`: (status, headers, body)."""

    host: str
    reply: object
    tls: tuple[Path, Path] | None = None  # (certificate, key): HTTPS
    seen: list[Seen] = field(default_factory=list)
    server: http.server.ThreadingHTTPServer | None = None

    @property
    def base(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.server.server_address[1]}"

    def __enter__(self) -> Recorder:
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                recorder.seen.append(seen)
                status, headers, content = recorder.reply(seen)
                self.send_response(status)
                for name, value in {"content-length": str(len(content)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = answer

            def log_message(self, *args) -> None:  # quiet: the test reads what was seen
                pass

        self.server = http.server.ThreadingHTTPServer((self.host, 0), Handler)
        self.server.handle_error = lambda request, address: None  # a refused handshake is what a test looks for
        if self.tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*self.tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def as_json(status: int, value: object) -> tuple[int, dict[str, str], bytes]:
    return status, {"content-type": "application/json"}, json.dumps(value).encode()


def graded_service(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    """What the service answers a hand-in that is graded at once: 3 of 5."""
    if seen.method == "POST":
        return as_json(202, {"attempt": "a1", "page": f"/a/{NAME}/attempts/a1"})
    return as_json(200, {"attempt": "a1", "state": "graded", "score": 3, "max_score": 5, "final": 3,
                         "counted": True, "page": f"/a/{NAME}/attempts/a1"})


def test_an_http_link_to_another_host_sends_nothing_unless_insecure(release):
    """127.0.0.2 is this machine, but not a name the checker takes for it: without --insecure nothing reaches the
    server there; with it, the request carries the token in the Authorization header only, and the file as it is."""
    (release / "mine.py").write_bytes(b"x = 1  # my file\n")
    with Recorder("127.0.0.2", graded_service) as recorder:
        link = link_to(recorder.base)
        refused = check(release, "--submit", "mine.py", link=link, cwd=release)
        assert refused.returncode == 2 and refused.stdout == "", output(refused)
        line = one_line(refused.stderr)
        assert "clear text" in line and "nothing was sent" in line and "--insecure" in line, line
        assert recorder.seen == []
        sent = check(release, "--submit", "mine.py", "--insecure", link=link, cwd=release)
        assert sent.returncode == 0 and "score 3 / 5 (final 3 after the late policy)" in sent.stdout, output(sent)
    token = token_of(link)
    post, *polls = recorder.seen
    assert (post.method, post.path) == ("POST", f"/api/a/{NAME}/attempts?filename=mine.py")
    assert post.headers["authorization"] == f"Bearer {token}"
    assert post.headers["content-type"] == "application/octet-stream" and post.body == b"x = 1  # my file\n"
    assert polls and all(p.path == f"/api/a/{NAME}/attempts/a1" for p in polls)
    assert all(token not in p.path for p in recorder.seen)
    assert_hidden(token, output(sent))


def certificates(folder: Path) -> tuple[Path, Path, Path]:
    """(a CA's certificate, a certificate it signed for 127.0.0.1, that one's key), as PEM files."""
    now = datetime.datetime.now(datetime.timezone.utc)

    def signed(subject: str, key, issuer: x509.Name, issuer_key, ca: bool) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(issuer).public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = signed("qkv test CA", ca_key, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "qkv test CA")]), ca_key,
                True)
    server = signed("127.0.0.1", key, ca.subject, ca_key, False)
    files = (folder / "ca.pem", folder / "server.pem", folder / "server-key.pem")
    files[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    files[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return files


def test_the_token_goes_only_to_a_server_whose_certificate_checks_out(release, tmp_path):
    """An https:// link to a server whose certificate no trusted CA signed: nothing is sent (the handshake fails),
    one line says why. Trusting its CA (SSL_CERT_FILE, as a course's own CA would be installed) hands the file in."""
    ca, certificate, key = certificates(tmp_path)
    with Recorder("127.0.0.1", graded_service, tls=(certificate, key)) as recorder:
        link = link_to(recorder.base)
        untrusted = check(release, "--submit", link=link)
        assert untrusted.returncode == 3 and untrusted.stdout == "", output(untrusted)
        line = one_line(untrusted.stderr)
        assert line.startswith(f"qkv_check: cannot reach {recorder.base[len('https://'):]}: ") \
            and "certificate verify failed" in line, line
        assert recorder.seen == []
        trusted = check(release, "--submit", link=link, env={"SSL_CERT_FILE": str(ca)})
        assert trusted.returncode == 0 and "score 3 / 5" in trusted.stdout, output(trusted)
    assert recorder.seen[0].headers["authorization"] == f"Bearer {token_of(link)}"
    assert_hidden(token_of(link), output(untrusted) + output(trusted))


def echoing(before: int):
    """A server that says the token back after `before` characters, with a terminal escape and a line break."""
    def reply(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        token = seen.headers.get("authorization", "").removeprefix("Bearer ")
        return as_json(401, {"error": f"\x1b[2J{'x' * before} the token {token} is not\nvalid"})
    return reply


@pytest.mark.parametrize("before", [0, 256], ids=["whole", "at-the-cut"])
def test_the_token_is_cut_out_of_what_the_server_says(release, before):
    """Also where the one-line message is cut to length (300 characters) in the middle of the token."""
    with Recorder("127.0.0.1", echoing(before)) as recorder:
        link = link_to(recorder.base)
        done = check(release, "--submit", link=link)
    assert done.returncode == 1 and done.stdout == "", output(done)
    line = one_line(done.stderr)
    assert "\x1b" not in line and "the token <your token> is not" in line, line
    assert_hidden(token_of(link), output(done))


def never_graded(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    if seen.method == "POST":
        return as_json(202, {"attempt": "a1", "page": f"/a/{NAME}/attempts/a1"})
    return as_json(200, {"attempt": "a1", "state": "queued", "page": f"/a/{NAME}/attempts/a1"})


def test_an_attempt_not_graded_within_the_wait_says_where_its_score_will_be(release):
    with Recorder("127.0.0.1", never_graded) as recorder:
        done = check(release, "--submit", "--wait", "0", link=link_to(recorder.base))
    assert done.returncode == 4, output(done)
    handed, waited = done.stdout.splitlines()
    assert HANDED_IN.fullmatch(handed)
    assert waited == f"not graded within 0 s; the score will be on {recorder.base}/a/{NAME}/attempts/a1"


@pytest.mark.parametrize("reply, said", [
    (lambda seen: (202, {"content-type": "application/json"}, b'{"attempt": "' + b"a" * 70_000 + b'"}'),
     "a reply over 64 KiB"),
    (lambda seen: (200, {"content-type": "text/html"}, b"<html>a captive portal</html>"), "HTTP 200, not JSON"),
    (lambda seen: (502, {"content-type": "text/html"}, b"<html>bad gateway</html>"), "HTTP 502, not JSON"),
    (lambda seen: (302, {"location": "https://elsewhere.example/signin"}, b""), "HTTP 302, not JSON"),
    (lambda seen: (202, {"content-type": "application/json"}, b"[" * 60_000), "not JSON"),
    (lambda seen: as_json(202, {"attempt": "../../x", "page": "/x"}), "a reply without the attempt"),
], ids=["oversized", "html", "bad-gateway", "redirect", "nested", "bad-attempt"])
def test_a_reply_that_is_not_the_services_is_one_line_and_followed_nowhere(release, reply, said):
    with Recorder("127.0.0.1", reply) as recorder:
        link = link_to(recorder.base)
        done = check(release, "--submit", link=link)
    assert done.returncode == 3 and done.stdout == "", output(done)
    line = one_line(done.stderr)
    assert "did not answer as the course's service does" in line and said in line, line
    assert len(recorder.seen) == 1  # no redirect followed, no poll of an attempt that was not accepted
    assert_hidden(token_of(link), output(done))


@pytest.mark.parametrize("wait", ["-1", "nan"])
def test_a_wait_that_is_not_a_number_of_seconds_is_a_usage_error(release, wait):
    done = check(release, "--submit", "--wait", wait, link=link_to("https://qkv.example.edu"))
    assert done.returncode == 2 and "--wait takes a number of seconds" in one_line(done.stderr), output(done)



@dataclass
class Dripper:
    """A server that answers a hand-in at once and then drips the headers of its reply to every poll, a byte at a
    time, until the client hangs up (or DRIP_BYTES are sent: a bound on the test, far past any deadline)."""

    DRIP_BYTES = 3000
    hung_up: bool = False
    dripped: threading.Event = field(default_factory=threading.Event)  # a poll's drip ended, either way
    stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Dripper:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()
        return self

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(client,), daemon=True).start()

    def answer(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                head += client.recv(65536)
            length = re.search(rb"(?i)content-length: *(\d+)", head)
            body = head.split(b"\r\n\r\n", 1)[1]
            while length and len(body) < int(length.group(1)):
                body += client.recv(65536)
            if head.startswith(b"POST "):
                reply = json.dumps({"attempt": "a1", "page": f"/a/{NAME}/attempts/a1"}).encode()
                client.sendall(b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                               b"connection: close\r\n\r\n%s" % (len(reply), reply))
                return
            try:
                client.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
                for _ in range(self.DRIP_BYTES):
                    if self.stop.wait(0.1):
                        break
                    client.sendall(b"a")
            except OSError:
                self.hung_up = True
            self.dripped.set()

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.listener.close()


def test_a_server_that_drips_its_reply_is_given_up_on_at_the_deadline(release):
    """The poll for the score gets its reply's headers a byte every 0.1 s: each byte within any socket timeout, so
    only one deadline over the whole exchange ends it. With --wait 1 the poll has about a second (the hand-in 30);
    the checker gives up, says so in one line and where the score will be, and hangs up on the server. Before issue 45
    it waited as long as the server went on (a hundred seconds and more)."""
    with Dripper() as dripper:
        link = link_to(dripper.base)
        done = check(release, "--submit", "--wait", "1", link=link)
        dripper.dripped.wait(RUN_S)
    assert done.returncode == 3 and dripper.hung_up, output(done)
    assert re.fullmatch(rf"qkv_check: cannot reach 127\.0\.0\.1:\d+: it did not answer within \d+(\.\d+)? s; your "
                        rf"attempt was handed in: its score will be on {re.escape(dripper.base)}/a/{NAME}/attempts/a1",
                        one_line(done.stderr)), done.stderr
    assert_hidden(token_of(link), output(done))
