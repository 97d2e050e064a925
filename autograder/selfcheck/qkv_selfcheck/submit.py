"""--submit: the student's file handed in to the course's service (`qkv serve`), then its score waited for.

The only part that uses the network, and only when asked: checking stays offline. Standard library only
(urllib), as the rest of the release. The personal sign-in link `qkv tokens` mails
(`https://HOST/signin?token=TOKEN&next=/a/NAME`) comes from QKV_TOKEN or qkv_token.txt beside qkv_check.py;
it gives the service's address, the token and the assignment. In a JupyterHub user's server, with neither, the
user's own hub token (JUPYTERHUB_API_TOKEN, which the hub gives every server) goes to the service at
QKV_SERVICE_URL (which the hub's configuration gives the servers, docs/jupyterhub.md): no link needed.
The token goes in the Authorization header
and nowhere else: never in a URL, never printed, and cut out of anything printed that came from elsewhere
(the server's messages, an exception's text), since a terminal's scrollback is shared and pasted.

Exit codes: 0 graded; 1 refused by the server (its one-line reason); 2 usage (no link, no file, an http://
link to another host without --insecure: nothing is sent); 3 the service could not be reached, or what
answered did not answer as it does; 4 handed in, but not graded within --wait seconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Dict, NamedTuple, Optional, Tuple

from .data import HERE, UsageError
from .exchange import Deadline, opener
from .reporting import say

LINK_VARIABLE = "QKV_TOKEN"
LINK_FILE = "qkv_token.txt"
REFUSED, UNREACHABLE, NOT_YET = 1, 3, 4
REQUEST_SECONDS = 30.0
POLL_SECONDS = 2.0
WAIT_SECONDS = 120.0
MOST_WAIT_SECONDS = 3600.0
REPLY_BYTES = 64 * 1024  # the service's replies are a few hundred bytes; more is not the service
LINK_BYTES = 64 * 1024
FILE_BYTES = 64 * 1024 * 1024  # far above any upload limit: the server's own limit says no in its words
MESSAGE_CHARS = 300
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# the token is a header value: anything else could split the header, or end up echoed in an exception
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]{1,512}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_ATTEMPT = re.compile(r"[A-Za-z0-9_-]{1,128}")
_PAGE = re.compile(r"/[A-Za-z0-9._~%/-]{0,500}")
LINK_SHAPE = "https://HOST/signin?token=...&next=/a/NAME"
HUB_TOKEN = "JUPYTERHUB_API_TOKEN"
SERVICE_VARIABLE = "QKV_SERVICE_URL"


class Link(NamedTuple):
    base: str  # scheme://host[:port][/prefix], the service's address
    host: str  # host[:port], for messages
    token: str
    assignment: str


class Failure(Exception):
    """One line for the student and the exit code that goes with it."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--submit", action="store_true",
                        help=f"hand the file in to the course's service and wait for the score (your link goes in "
                             f"{LINK_FILE} beside qkv_check.py, or in {LINK_VARIABLE})")
    parser.add_argument("--wait", type=float, default=WAIT_SECONDS, metavar="SECONDS",
                        help=f"with --submit: how long to wait for the score (default {WAIT_SECONDS:g})")
    parser.add_argument("--insecure", action="store_true",
                        help="with --submit: allow an http:// link to a host other than this computer")


def submit(parser: argparse.ArgumentParser, args: argparse.Namespace, data: Dict[str, Any], data_path: Path) -> int:
    """--submit: the action; usage problems raise UsageError (exit 2), the rest is said here, the token cut out."""
    if not 0 <= args.wait <= MOST_WAIT_SECONDS:  # NaN too
        raise UsageError(f"--wait takes a number of seconds from 0 to {MOST_WAIT_SECONDS:g}")
    module = data.get("module") or "assignment"
    path = Path(args.file) if args.file else HERE / f"{module}.py"  # the release's own file, as the stub names it
    shown = args.file or str(path)
    body = _file_bytes(path, shown, f"{module}.py")
    link = find_link(HERE / LINK_FILE, data.get("assignment", ""))
    if link.base.startswith("http:") and not args.insecure and not _loopback(link):
        raise UsageError(f"the link is http://{link.host}/...: the token would travel in clear text, so nothing was "
                         "sent; use the https:// link (--insecure sends it anyway, on a network you trust)")
    try:
        attempt, page = _hand_in(link, path.name, body)
        _say(f"handed in {shown} as attempt {attempt}; waiting for the score", link)
        return _wait_for_score(link, attempt, page, args.wait)
    except Failure as failure:
        print(_redact(f"qkv_check: {failure}", link), file=sys.stderr)
        return failure.code
    except Exception as err:  # noqa: BLE001 (a traceback could show the token; this line cannot)
        print(_redact(f"qkv_check: --submit stopped: {type(err).__name__}: {err}", link), file=sys.stderr)
        return UNREACHABLE


def find_link(file: Path, default_assignment: str) -> Link:
    """The link from QKV_TOKEN, else from the first non-blank line of `file`; UsageError when there is none."""
    given, where = os.environ.get(LINK_VARIABLE, "").strip(), LINK_VARIABLE
    if not given:
        given, where = _first_line(file), str(file)
    if not given and os.environ.get(HUB_TOKEN, "").strip():
        return hub_link(default_assignment)
    if not given:
        raise UsageError(f"no sign-in link: put the link from your instructor's mail ({LINK_SHAPE}) in {file} "
                         f"(its first line), or in the environment variable {LINK_VARIABLE}")
    link = parse_link(given.strip("'\"<>"), default_assignment)
    if link is None:  # never the text itself: it may be a token with a typo
        raise UsageError(f"{where}: not a sign-in link; copy the whole link from your instructor's mail "
                         f"({LINK_SHAPE})")
    return link


def hub_link(default_assignment: str) -> Link:
    """In a hub user's server: the service at QKV_SERVICE_URL, the user's own hub token, this release's assignment."""
    token, address = os.environ.get(HUB_TOKEN, "").strip(), os.environ.get(SERVICE_VARIABLE, "").strip()
    if not address:
        raise UsageError(f"this is a JupyterHub server, but {SERVICE_VARIABLE} (the course service's address) is not "
                         "set: ask your instructor, or put your sign-in link in " + LINK_FILE)
    try:
        parts = urllib.parse.urlsplit(address)
        parts.port  # noqa: B018 (as parse_link)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc \
            or parts.query or parts.fragment:
        raise UsageError(f"{SERVICE_VARIABLE}: not the address of a service (http(s)://HOST/PATH)")
    if not _TOKEN.fullmatch(token) or not _NAME.fullmatch(default_assignment or ""):
        raise UsageError(f"{HUB_TOKEN} is not a token, or this release names no assignment")
    return Link(f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}", parts.netloc, token, default_assignment)


def _first_line(file: Path) -> str:
    """The first non-blank line of the link file, '' when there is none."""
    try:
        with open(file, "rb") as handle:
            text = handle.read(LINK_BYTES).decode("utf-8-sig")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError:
        raise UsageError(f"{file}: not text; its first line must be your sign-in link ({LINK_SHAPE})") from None
    except OSError as err:
        raise UsageError(f"{file}: cannot read it ({err.strerror or type(err).__name__})") from None
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def parse_link(text: str, default_assignment: str) -> Optional[Link]:
    """The service's address, the token and the assignment in a sign-in link; None for anything else."""
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 (a port that is not a number raises here, not later in a message)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc \
            or not parts.path.endswith("/signin"):
        return None
    query = urllib.parse.parse_qs(parts.query)
    tokens = query.get("token", [])
    if len(tokens) != 1 or not _TOKEN.fullmatch(tokens[0]):
        return None
    token = tokens[0]
    base = f"{parts.scheme}://{parts.netloc}{parts.path[:-len('/signin')]}"
    if token in base:
        return None
    goes_to = query.get("next", [""])[0]
    named = goes_to[len("/a/"):] if goes_to.startswith("/a/") else ""
    assignment = named if _NAME.fullmatch(named) else default_assignment
    if not _NAME.fullmatch(assignment or ""):
        return None
    return Link(base, parts.netloc, token, assignment)


def _file_bytes(path: Path, shown: str, example: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            body = handle.read(FILE_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{shown}: no such file; name the file to hand in, e.g. python qkv_check.py --submit "
                         f"{example}") from None
    except OSError as err:
        raise UsageError(f"{shown}: cannot read it ({err.strerror or type(err).__name__})") from None
    if len(body) > FILE_BYTES:
        raise UsageError(f"{shown}: larger than {FILE_BYTES // 2**20} MiB; that is not an assignment's file")
    return body


def _hand_in(link: Link, filename: str, body: bytes) -> Tuple[str, str]:
    """POST the file; (the attempt's id, its page's path)."""
    path = f"/api/a/{urllib.parse.quote(link.assignment)}/attempts?" + urllib.parse.urlencode({"filename": filename})
    reply = _call(link, "POST", path, body, REQUEST_SECONDS)
    attempt, page = reply.get("attempt"), reply.get("page")
    if not isinstance(attempt, str) or not _ATTEMPT.fullmatch(attempt):
        raise _not_the_service(link, "a reply without the attempt")
    return attempt, _page_of(link, attempt, page)


def _wait_for_score(link: Link, attempt: str, page: str, wait: float) -> int:
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        try:
            reply = _call(link, "GET", f"/api/a/{urllib.parse.quote(link.assignment)}/attempts/{attempt}", None,
                          min(REQUEST_SECONDS, max(left, 1.0)))
        except Failure as failure:  # the attempt is in: say where its score will be
            raise Failure(failure.code, f"{failure}; your attempt was handed in: its score will be on "
                                        f"{link.base}{page}") from None
        if reply.get("state") == "graded":
            break
        left = deadline - time.monotonic()
        if left <= 0:
            _say(f"not graded within {wait:g} s; the score will be on {link.base}{page}", link)
            return NOT_YET
        time.sleep(min(POLL_SECONDS, left))
    score, most, final = (reply.get(k) for k in ("score", "max_score", "final"))
    if not all(_number(v) for v in (score, most)) or not (final is None or _number(final)):
        raise _not_the_service(link, "a grading without a score")
    late = "" if final is None else f" (final {final:g} after the late policy)"
    _say(f"score {score:g} / {most:g}{late}", link)
    _say(f"feedback: {link.base}{page}", link)
    return 0


def _call(link: Link, method: str, path: str, body: Optional[bytes], seconds: float) -> Dict[str, Any]:
    """One request to the service: its JSON reply (a dict), or Failure; the token only in the header. The whole
    exchange (connecting, sending, the reply's headers and body) has `seconds`, however slowly the other side drips."""
    request = urllib.request.Request(link.base + path, data=body, method=method)
    request.add_unredirected_header("Authorization", f"Bearer {link.token}")
    request.add_header("Accept", "application/json")
    request.add_header("User-Agent", "qkv_check")
    if body is not None:
        request.add_header("Content-Type", "application/octet-stream")
    deadline = Deadline(seconds)
    late = Failure(UNREACHABLE, f"cannot reach {link.host}: it did not answer within {seconds:g} s")
    try:
        with opener(_loopback(link), deadline).open(request, timeout=seconds) as response:
            status = response.status
            kind = response.headers.get("Content-Type", "")
            raw = _read_bounded(response, link)
            deadline.cancel()  # before the connection closes, so no descriptor is shut once another may hold it
            cut = deadline.passed  # a reply cut off by the deadline can look whole (headers end at the cut)
    except Failure:
        raise
    except (OSError, http.client.HTTPException, ValueError) as err:
        if deadline.passed:
            raise late from None
        raise Failure(UNREACHABLE, f"cannot reach {link.host}: {_reason(err)}") from None
    finally:
        deadline.cancel()
    if cut:
        raise late
    try:
        reply = json.loads(raw)
    except (ValueError, RecursionError):
        reply = None
    if 400 <= status < 500:
        message = reply.get("error") if isinstance(reply, dict) else None
        if not isinstance(message, str) and kind.startswith("text/plain"):
            message = raw.decode("utf-8", "replace").strip().split("\n", 1)[0]
        if isinstance(message, str) and message.strip():
            # cut to length only once the token is out: a cut through it would leave a piece to print
            raise Failure(REFUSED, f"refused by {link.host}: {_redact(message, link)[:MESSAGE_CHARS]}")
    if not 200 <= status < 300 or not isinstance(reply, dict):
        raise _not_the_service(link, f"HTTP {status}" + ("" if isinstance(reply, dict) else ", not JSON"))
    return reply


def _read_bounded(response: Any, link: Link) -> bytes:
    """At most REPLY_BYTES: a server that sends more is not the service."""
    raw = bytearray()
    while True:
        chunk = response.read1(REPLY_BYTES + 1 - len(raw))
        if not chunk:
            return bytes(raw)
        raw += chunk
        if len(raw) > REPLY_BYTES:
            raise _not_the_service(link, f"a reply over {REPLY_BYTES // 1024} KiB")


def _not_the_service(link: Link, what: str) -> Failure:
    return Failure(UNREACHABLE, f"{link.host} did not answer as the course's service does ({what}); "
                                "is the link from your instructor's mail?")


def _page_of(link: Link, attempt: str, page: Any) -> str:
    if isinstance(page, str) and _PAGE.fullmatch(page) and not page.startswith("//"):
        return page
    return f"/a/{link.assignment}/attempts/{attempt}"


def _loopback(link: Link) -> bool:
    return urllib.parse.urlsplit(link.base).hostname in LOOPBACK


def _reason(err: BaseException) -> str:
    reason = getattr(err, "reason", None) or err  # urllib's URLError wraps the socket's error
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _one_line(text: str) -> str:
    """Printable characters on one line: a server's text may hold terminal escapes or a page of HTML."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def _redact(text: str, link: Link) -> str:
    """`text` on one line with the token, and each long piece of it, cut out: whatever is printed passes here."""
    for piece in sorted({link.token, *link.token.split(".")}, key=len, reverse=True):
        if len(piece) >= 8:
            text = text.replace(piece, "<your token>")
    return _one_line(text)


def _say(text: str, link: Link) -> None:
    say(_redact(text, link))
    sys.stdout.flush()  # the first line before the wait, not after it
