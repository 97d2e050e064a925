"""The service's trust boundary, channel by channel (docs/serve.md says the same for operators):

- request bodies: a declared length over the limit is refused before it is read (413), and any body is
  read whole, up to the limit and within 30 seconds, before a route sees it (past the limit: 413; too slow:
  408), and held once; a request line and headers over
  HEADER_BYTES are refused (431), however they arrived (h11's incomplete-event limit, set in command.py, bounds
  only what it buffers before a request is whole);
- file names: a plain name ending .py or .ipynb, never a path; the bytes go to the gradebook, never to
  a path made from the name;
- cookies: the session cookie is random, HttpOnly, SameSite=Lax, Secure behind HTTPS, and only its
  SHA-256 is stored; a cookie the gradebook does not know is no session;
- forms: every POST carries the session's CSRF token (the sign-in form, before any session, a token
  that must match a cookie set with the form), compared in constant time; a cross-site Origin is refused;
- sign-ins: failures are counted by client address and by account, and past the limit refused (429); so are
  LTI login initiations, by client address;
- responses: a Content-Security-Policy that allows no script but the service's own file, nosniff,
  frame-ancestors 'none' (as an LTI tool: the configured platforms' origins only), no referrer, no caching.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from typing import Any, Awaitable, Callable, Optional

import anyio

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

ASGIApp = Callable[[dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]


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
    """Whom sign-ins are counted against: the address, or for IPv6 its /64 (one host holds them all)."""
    host = request.client.host if request.client else "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    return str(ipaddress.ip_network(f"{host}/64", strict=False)) if address.version == 6 else host


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

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]],
                       send: Callable[[dict], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit(scope.get("path", ""))

        async def send_guarded(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = dict(message, headers=[*message.get("headers", []), *self.headers])
            await send(message)

        async def refuse(status: int, text: str) -> None:
            await send_guarded({"type": "http.response.start", "status": status,
                                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                            (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": text.encode()})

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
        body: Optional[bytes] = b"".join(parts)
        del parts

        async def replay() -> dict:
            nonlocal body
            if body is not None:
                message, body = {"type": "http.request", "body": body, "more_body": False}, None
                return message
            return await receive()

        await self.app(scope, replay, send_guarded)
