"""--submit's side of HTTP: urllib with one deadline over each whole exchange, no redirect followed, and a refusal
heard even when the server stopped reading the request. Standard library only, as the rest of the release."""

from __future__ import annotations

import contextlib
import functools
import http.client
import socket
import threading
import time
import urllib.request
from typing import Any, List


class Deadline:
    """One deadline over an exchange: a socket's own timeout bounds each wait alone, so a server that drips a byte
    at a time would hold the client for ever. When it passes, every socket the exchange opened is shut, and whatever
    waits on one (connecting, sending, reading) returns at once."""

    def __init__(self, seconds: float):
        self.ends = time.monotonic() + seconds
        self.passed = False
        self._sockets: List[int] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._pass)
        self._timer.daemon = True
        self._timer.start()

    def connect(self, address: Any, timeout: Any = None, source_address: Any = None) -> socket.socket:
        """socket.create_connection within what is left, the socket watched from then on (TLS is set up over it)."""
        left = self.ends - time.monotonic()
        if left <= 0:
            self.passed = True
            raise TimeoutError("no time left")
        sock = socket.create_connection(address, left, source_address)
        with self._lock:
            self._sockets.append(sock.fileno())
            if self.passed:
                self._shut(sock.fileno())
        return sock

    def _pass(self) -> None:
        with self._lock:
            self.passed = True
            for fd in self._sockets:
                self._shut(fd)

    @staticmethod
    def _shut(fd: int) -> None:
        # by its descriptor: a TLS socket took the place of the one made, on the same descriptor
        with contextlib.suppress(OSError):
            sock = socket.socket(fileno=fd)
            try:
                sock.shutdown(socket.SHUT_RDWR)
            finally:
                sock.detach()

    def cancel(self) -> None:
        with self._lock:
            self._timer.cancel()
            self._sockets.clear()


def opener(loopback: bool, deadline: Deadline) -> urllib.request.OpenerDirector:
    """urllib's, but every reply as it is, each connection under `deadline`, and no proxy for `loopback` (http_proxy
    would see the token in clear)."""
    proxies = [urllib.request.ProxyHandler({})] if loopback else []
    return urllib.request.build_opener(_EveryReply, *(handler(deadline) for handler in _HANDLERS), *proxies)


class _EveryReply(urllib.request.HTTPErrorProcessor):
    """Every reply comes back as it is: a redirect is never followed (it would be a request the link did not
    name, perhaps in clear), and a refusal is read like any other reply."""

    def http_response(self, request: Any, response: Any) -> Any:
        return response

    https_response = http_response


class _HearsRefusals:
    """A connection that reads the answer of a server that stopped reading the request: the service refuses a body
    over its limit before reading it and closes, and its answer says why (the file is too large) where the broken
    pipe of the sending would not. A server that went away has no answer either, and that is said then. Its socket
    is made by the exchange's deadline."""

    def __init__(self, *args: Any, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = deadline.connect

    def send(self, data: Any) -> None:
        try:
            super().send(data)  # type: ignore[misc]
        except (BrokenPipeError, ConnectionResetError):
            pass


class _HTTPConnection(_HearsRefusals, http.client.HTTPConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline):
        super().__init__()
        self.deadline = deadline

    def http_open(self, request: Any) -> Any:
        return self.do_open(functools.partial(_HTTPConnection, deadline=self.deadline), request)


_HANDLERS: List[type] = [_HTTPHandler]
if hasattr(http.client, "HTTPSConnection"):  # a Python built without ssl still checks offline, and says why not here
    class _HTTPSConnection(_HearsRefusals, http.client.HTTPSConnection):
        pass

    class _HTTPSHandler(urllib.request.HTTPSHandler):
        def __init__(self, deadline: Deadline):
            super().__init__()
            self.deadline = deadline

        def https_open(self, request: Any) -> Any:  # the default context: certificates and host names checked
            return self.do_open(functools.partial(_HTTPSConnection, deadline=self.deadline), request)

    _HANDLERS.append(_HTTPSHandler)
