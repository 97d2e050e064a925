"""The service's trust boundary, channel by channel (docs/serve.md says the same for operators):

- connections (connections.py, the server's own h11 protocol): a request line and headers must arrive within
  HEADER_SECONDS of the connection opening or of the last reply (else it is closed), and one client (an address;
  IPv6: a /64) holds at most CONNECTIONS_PER_CLIENT connections at once (one more: 503), so no client fills the
  server's limit; behind --proxy the cap is the proxy's;
- request bodies: a declared length over the limit is refused before it is read (413), and any body is
  read whole, up to the limit and within 30 seconds, before a route sees it (past the limit: 413; too slow:
  408), and held once; a request line and headers over
  HEADER_BYTES are refused (431), however they arrived (h11's incomplete-event limit, set in command.py, bounds
  only what it buffers before a request is whole);
- text: a control character (a NUL, an escape; not tab or a line break) in the path, the query, a header, a
  cookie or a form field, as the routes would decode them, is refused here for every route (400, one line) before
  any route or database sees it;
- file names: a plain name ending .py or .ipynb, never a path; the bytes go to the gradebook, never to
  a path made from the name;
- cookies: the session cookie is random, HttpOnly, SameSite=Lax, Secure behind HTTPS, and only its
  SHA-256 is stored; a cookie the gradebook does not know is no session;
- forms: every POST carries the session's CSRF token (the sign-in form, before any session, a token
  that must match a cookie set with the form), compared in constant time; a cross-site Origin is refused;
- sign-ins (signin.py): each try is counted by client address (IPv6: its /64) and by the account the token names
  as the check looks it up, before its slow hash and in one transaction; past the limit refused (429); hashes
  run two at a time; so are LTI login initiations counted, by client address;
- responses: a Content-Security-Policy that allows no script but the service's own file, nosniff,
  frame-ancestors 'none' (as an LTI tool: the configured platforms' origins only), no referrer, no caching.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
from typing import Any, Callable, Optional

import anyio
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SESSION_COOKIE = "qkv_session"
SIGNIN_COOKIE = "qkv_signin"
SESSION_SECONDS = 12 * 3600
FAILURE_WINDOW = 15 * 60
FAILURES_ALLOWED = 10  # per client address, and per account, in the window
# LTI login initiations per client address in FAILURE_WINDOW: anyone may start one, and each is kept for minutes
# in the database; a class behind one campus address all clicking a link at once stays well under it
LTI_LOGINS_ALLOWED = 600
FORM_BYTES = 64 * 1024  # any request that is not an upload
BODY_SECONDS = 30.0  # the longest a request's body may take to arrive
HEADER_BYTES = 16 * 1024  # the most a request line and its headers may take

# connect-src: the refresh script fetches its own page again (templates/refresh.js)
CSP = ("default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; form-action 'self'{forms}; frame-ancestors {ancestors}; base-uri 'none'")
_COMMON = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
           (b"cache-control", b"no-store")]

_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._ -]{0,99}")
# C0 controls but tab, line feed and carriage return (text's own whitespace), and DEL: no text a route takes holds
# one, and PostgreSQL refuses a NUL in any text it is given
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_filename(name: str) -> tuple[Optional[str], str]:
    """(the name to keep, '') for a plain .py or .ipynb file name; (None, why) for anything else."""
    if not name:
        return None, "the upload has no file name"
    if "/" in name or "\\" in name or "\x00" in name or name.startswith("."):
        return None, "the file name is a path; upload the file itself (a name like attention_numpy.py)"
    if not _PLAIN_NAME.fullmatch(name):
        return None, "the file name holds characters other than letters, digits, '.', '_', '-' and spaces"
    if not name.lower().endswith((".py", ".ipynb")):
        return None, "only a .py or .ipynb file can be graded"
    return name, ""


def client_address(request: Any) -> str:
    """Whom sign-ins are counted against: the client's key."""
    return client_key(request.client.host if request.client else "unknown")


def client_key(host: str) -> str:
    """Whom a client is, for sign-ins and connections: its address, or for IPv6 its /64 (one host holds them all)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    return str(ipaddress.ip_network(f"{host}/64", strict=False)) if address.version == 6 else host


async def control_character_in(scope: Scope, body: bytes) -> str:
    """Where a request holds a control character, as the routes would decode it: its path, its query, a header, a
    cookie, a form field's name or value ('' for none). An uploaded file's bytes are the file's own, and its name is
    clean_filename's to refuse (with a message that says what a name may be)."""
    request = Request(scope, _once(body))
    if _CONTROL.search(scope.get("path", "")):
        return "its path"
    if any(_CONTROL.search(text) for item in request.query_params.multi_items() for text in item):
        return "its query"
    if any(_CONTROL.search(value.decode("latin-1")) for _, value in scope.get("headers", [])):
        return "a header"
    if any(_CONTROL.search(text) for item in request.cookies.items() for text in item):
        return "a cookie"
    if request.method == "POST":
        try:  # the routes' own parser, bounded by the body already read; a form it cannot parse is the route's
            form = await request.form(max_files=100, max_fields=1000, max_part_size=len(body) + 1)
        except MultiPartException:
            return ""
        try:
            for name, value in form.multi_items():
                if _CONTROL.search(name) or (isinstance(value, str) and _CONTROL.search(value)):
                    return "a form field"
        finally:
            await form.close()
    return ""


def _once(body: bytes) -> Receive:
    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}
    return receive


def same_token(given: Any, expected: str) -> bool:
    return isinstance(given, str) and bool(expected) and hmac.compare_digest(given.encode(), expected.encode())


def upload_limit(path: str, upload_bytes: int) -> int:
    """The most body bytes a request to `path` may send: an upload's file and its form, else a form's."""
    return upload_bytes + FORM_BYTES if path.endswith("/attempts") else FORM_BYTES


def security_headers(frame_ancestors: tuple[str, ...] = ()) -> list[tuple[bytes, bytes]]:
    """The headers of every response. Framing is refused, unless the service is an LMS's tool: then the LMS's
    origins (and only they) may frame it, which X-Frame-Options cannot say for more than none, so it is left out,
    and a form may post to them (a deep link's answer goes back to the LMS)."""
    if not frame_ancestors:
        return [(b"content-security-policy", CSP.format(forms="", ancestors="'none'").encode()),
                (b"x-frame-options", b"DENY"), *_COMMON]
    origins = " ".join(frame_ancestors)
    return [(b"content-security-policy", CSP.format(forms=f" {origins}", ancestors=origins).encode()), *_COMMON]


class Guard:
    """ASGI middleware: security headers on every response, and bounded request headers and bodies."""

    def __init__(self, app: ASGIApp, limit: Callable[[str], int], frame_ancestors: tuple[str, ...] = ()):
        self.app = app
        self.limit = limit
        self.headers = security_headers(frame_ancestors)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit(scope.get("path", ""))

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message, headers=[*message.get("headers", []), *self.headers])
            await send(message)

        async def refuse(status: int, text: str) -> None:
            """`text` as the route would answer: JSON for the API, else plain text; the connection closed, as the
            body may be unread."""
            kind, content = ((b"application/json", json.dumps({"error": text}).encode())
                             if scope.get("path", "").startswith("/api/") else
                             (b"text/plain; charset=utf-8", text.encode()))
            await send_guarded({"type": "http.response.start", "status": status,
                                "headers": [(b"content-type", kind), (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": content})

        head = len(scope.get("raw_path") or b"") + len(scope.get("query_string", b"")) \
            + sum(len(name) + len(value) + 4 for name, value in scope.get("headers", []))
        if head > HEADER_BYTES:
            await refuse(431, f"the request's headers are larger than {HEADER_BYTES:,} bytes")
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                await refuse(400, "a Content-Length that is not a number")
                return
            if int(declared) > limit:
                await refuse(413, f"the request is larger than {limit:,} bytes")
                return
        # the body is read here, whole and bounded, before the app sees any of it: a body over the limit
        # (declared or not) is refused before the app starts, so no half-read form reaches a route
        parts: list[bytes] = []
        size = 0
        try:
            with anyio.fail_after(BODY_SECONDS):  # a client that drips its body holds no connection for long
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    parts.append(message.get("body", b""))
                    size += len(parts[-1])
                    if size > limit:
                        await refuse(413, f"the request is larger than {limit:,} bytes")
                        return
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            await refuse(408, f"the request's body took more than {BODY_SECONDS:g} seconds to arrive")
            return
        body = b"".join(parts)
        del parts
        where = await control_character_in(scope, body)
        if where:  # text no route takes: one line here, never a route's error (PostgreSQL refuses a NUL, say)
            await refuse(400, f"the request holds a control character (a NUL byte, say) in {where}")
            return

        unread: Optional[bytes] = body  # the body goes to the app once, then the server's own messages
        del body

        async def replay() -> Message:
            nonlocal unread
            if unread is not None:
                message, unread = {"type": "http.request", "body": unread, "more_body": False}, None
                return message
            return await receive()

        await self.app(scope, replay, send_guarded)
