"""The client side of the service's tests (tests/serve/test_serve.py): a browser without JavaScript, the API of
`qkv_check.py --submit`, raw requests for what no polite client sends, pages read by their ids, forms and tables,
the gradebook read behind the service's back, and `qkv serve` itself as a process, with the tokens `qkv tokens`
issued for it."""

from __future__ import annotations

import csv
import secrets
import select
import socket
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Optional

import httpx

from autograder.grade.gradebook import GRADEBOOK_FILE
from autograder.grade.gradebook.database import is_postgres, open_postgres, open_sqlite, schema_name
from conftest import QKV, wait_for
from servers import ServerProcess



# ------------------------------------------------------------------ reading pages

class Page(HTMLParser):
    """What the tests read of a page: each element's text by id and by class, its attributes by id, the fields of
    each form, the rows of its tables, and its whole text (scripts and styles left out)."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.by_id: dict[str, str] = {}
        self.by_class: dict[str, list[str]] = {}
        self.attrs: dict[str, dict[str, str]] = {}
        self.forms: list[tuple[str, dict[str, str]]] = []
        self.rows: list[list[str]] = []
        self._open: list[tuple[str, dict[str, str], list[str]]] = []
        self._row: Optional[list[str]] = None
        self._all: list[str] = []
        self.feed(html)
        self.close()
        self.text = " ".join(" ".join(self._all).split())

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append((attrs.get("action", ""), {}))
        if tag in ("input", "textarea") and self.forms and attrs.get("name"):
            self.forms[-1][1][attrs["name"]] = attrs.get("value", "")
        if "id" in attrs:
            self.attrs[attrs["id"]] = attrs
        if tag == "tr":
            self._row = []
        if tag not in self.VOID:
            self._open.append((tag, attrs, []))

    def handle_endtag(self, tag: str) -> None:
        if tag not in {t for t, _, _ in self._open}:
            return
        while self._open:
            opened, attrs, parts = self._open.pop()
            text = " ".join(" ".join(parts).split())
            if "id" in attrs:
                self.by_id[attrs["id"]] = text
            for name in attrs.get("class", "").split():
                self.by_class.setdefault(name, []).append(text)
            if opened in ("td", "th") and self._row is not None:
                self._row.append(text)
            if opened == "tr" and self._row is not None:
                self.rows.append(self._row)
                self._row = None
            if opened == tag:
                break

    def handle_data(self, data: str) -> None:
        if any(t in ("script", "style", "title") for t, _, _ in self._open):
            return
        self._all.append(data)
        for _, _, parts in self._open:
            parts.append(data)

    def form(self, action: str) -> dict[str, str]:
        found = [fields for to, fields in self.forms if to == action]
        assert found, f"no form posting to {action} on the page: {self.text[:500]}"
        return dict(found[0])

    def refusal(self) -> str:
        return " ".join(self.by_class.get("refusal", []))

    def table(self) -> dict[str, dict[str, str]]:
        """The page's table as rows by their first cell, each by the column headings."""
        heading, *rows = self.rows
        return {row[0]: dict(zip(heading, row)) for row in rows}


# ------------------------------------------------------------------ a browser, the API, the gradebook

class Browser:
    """A browser without JavaScript: it keeps its cookies and sends each form with its hidden fields; it follows no
    redirect by itself, so every 303 is seen."""

    def __init__(self, url: str, address: Optional[str] = None):
        transport = httpx.HTTPTransport(local_address=address) if address else None
        self.http = httpx.Client(base_url=url, timeout=120, transport=transport)

    def get(self, path: str, **kwargs) -> httpx.Response:
        return self.http.get(path, **kwargs)

    def post(self, path: str, **kwargs) -> httpx.Response:
        return self.http.post(path, **kwargs)

    def sign_in(self, token: str, next_path: str = "/") -> httpx.Response:
        fields = Page(self.get("/signin", params={"next": next_path}).text).form("/signin")
        return self.post("/signin", data={**fields, "token": token})

    def csrf(self) -> str:
        """The session's form token, from the sign-out form every signed-in page carries."""
        return Page(self.get("/").text).form("/signout")["csrf"]

    def hand_in(self, name: str, filename: str, body: bytes, csrf: Optional[str] = None,
                headers: Optional[dict[str, str]] = None) -> httpx.Response:
        token = self.csrf() if csrf is None else csrf
        return self.post(f"/a/{name}/attempts", data={"csrf": token} if token else {},
                         files={"file": (filename, body, "text/x-python")}, headers=headers or {})

    def graded(self, path: str) -> Page:
        """The attempt page at `path` once it shows a score."""
        pages: list[Page] = []

        def scored() -> bool:
            pages.append(Page(self.get(path).text))
            return "score" in pages[-1].by_id

        wait_for(scored, f"score at {path}", lambda: pages[-1].text[:1000] if pages else "")
        return pages[-1]


def stored(store: str, name: str) -> tuple[dict[str, tuple[str, str]], dict[str, list[float]]]:
    """Read from the gradebook itself, not through the service: each attempt's (student, state), and the score of
    each grading of each attempt, in the order they were made."""
    db = (open_postgres(store, schema_name(name)) if is_postgres(store)
          else open_sqlite(Path(store) / name / GRADEBOOK_FILE, read_only=True))
    try:
        attempts = {row[0]: (row[1], row[2]) for row in db.execute("SELECT id, student, state FROM attempts")}
        gradings: dict[str, list[float]] = {}
        for attempt, score in db.execute("SELECT attempt, score FROM gradings WHERE attempt IS NOT NULL ORDER BY id"):
            gradings.setdefault(attempt, []).append(score)
    finally:
        db.close()
    return attempts, gradings


def attempts_of(store: str, student: str, name: str) -> list[str]:
    return [a for a, (who, _) in stored(store, name)[0].items() if who == student]


@dataclass
class Service:
    """A course's built assignments served by a real `qkv serve` (every command given `--course root`), with the
    tokens `qkv tokens` issued for it."""

    root: Path
    names: tuple[str, ...]
    roster: Path
    store: str  # a folder of SQLite gradebooks, or a PostgreSQL URL
    jobs: int = 2
    tokens: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    server: Optional[ServerProcess] = None

    def qkv(self, *args: object) -> subprocess.CompletedProcess:
        done = subprocess.run([str(QKV), "--course", str(self.root), *map(str, args)], cwd=self.root,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"qkv {' '.join(map(str, args))}: {done.stderr[-3000:]}"
        return done

    def start(self) -> "Service":
        self.server = ServerProcess(lambda port: [QKV, "--course", self.root, "serve", *self.names, "--roster",
                                                  self.roster, "--db", self.store, "--port", port, "--jobs", self.jobs],
                                    cwd=self.root)
        self.server.start()
        return self

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    @property
    def url(self) -> str:
        return self.server.url

    def issue(self, *args: str) -> dict[str, str]:
        """`qkv tokens` for the service: the tokens of the CSV it wrote, by person (also kept, with the links)."""
        out = self.root / f"tokens-{secrets.token_hex(4)}.csv"
        self.qkv("tokens", self.names[0], "--roster", self.roster, "--db", self.store, "--out", out, "--url", self.url,
                 *args)
        with open(out, newline="") as handle:
            rows = list(csv.DictReader(handle))
        out.unlink()
        for row in rows:
            self.tokens[row["id"]], self.links[row["id"]] = row["token"], row["link"]
        return {row["id"]: row["token"] for row in rows}

    def signed_in(self, person: str, address: Optional[str] = None) -> Browser:
        browser = Browser(self.url, address)
        answer = browser.sign_in(self.tokens[person])
        assert answer.status_code == 303, f"{person} could not sign in: {answer.status_code} {answer.text[:500]}"
        return browser

    def api_hand_in(self, person: str, filename: str, body: bytes, name: str = "") -> httpx.Response:
        """`qkv_check.py --submit`'s request (to the first assignment served, unless `name` says another)."""
        return httpx.post(f"{self.url}/api/a/{name or self.names[0]}/attempts", params={"filename": filename},
                          content=body, headers={"authorization": f"Bearer {self.tokens[person]}"}, timeout=120)

    def api_status(self, token: str, attempt: str, name: str = "") -> httpx.Response:
        return httpx.get(f"{self.url}/api/a/{name or self.names[0]}/attempts/{attempt}",
                         headers={"authorization": f"Bearer {token}"}, timeout=120)

    def api_graded(self, person: str, attempt: str) -> dict:
        seen: list[dict] = []
        wait_for(lambda: seen.append(self.api_status(self.tokens[person], attempt).json())
                 or seen[-1].get("state") == "graded", f"grading of {attempt}", lambda: seen[-1:])
        return seen[-1]


def raw_request(port: int, head: bytes, chunks: tuple[bytes, ...] = ()) -> bytes:
    """Send a request on a connection of its own (the head whole, then each chunk, stopping as soon as the server
    answers) and read the reply: a bounded server answers before the body ends."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        try:
            sock.sendall(head)
            for chunk in chunks:
                if select.select([sock], [], [], 0)[0]:
                    break
                sock.sendall(chunk)
        except OSError:  # the server answered and closed while the body was still coming
            pass
        reply = b""
        try:
            while data := sock.recv(65536):
                reply += data
        except OSError:
            pass
    return reply


def serving(service: Service) -> bool:
    return httpx.get(f"{service.url}/signin", timeout=60).status_code == 200


__all__ = ["Browser", "Page", "Service", "attempts_of", "raw_request", "serving", "stored", "wait_for"]
