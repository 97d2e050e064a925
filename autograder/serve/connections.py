"""The service's connections, bounded in the server itself: a deployment without a proxy stays up.

uvicorn's h11 protocol, with two bounds it lacks: a request's line and headers must arrive within HEADER_SECONDS of
the connection opening, or of the reply before them on a kept-alive connection (uvicorn's keep-alive timeout ends
only a connection that sends nothing: one byte of a next request stops it for good), else the connection is closed;
and one client (an address; an IPv6 client's /64) holds at most CONNECTIONS_PER_CLIENT connections at once: one
more is answered 503 and closed at once, so no client fills the server's own limit (uvicorn's limit_concurrency)
and turns every other away. Behind a proxy (`--proxy`) every connection is the proxy's, and the cap is its to keep.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Optional

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from autograder.serve.guard import client_key

HEADER_SECONDS = 20.0
CONNECTIONS_PER_CLIENT = 100  # a browser opens 6 at most; a class behind one campus address shares the rest
_WHY = b"too many connections from your address at once: close some, or wait"
TOO_MANY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(_WHY), _WHY))


def bounded_h11(per_client: Optional[int], header_seconds: float = HEADER_SECONDS) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the header deadline, and at most `per_client` connections a client (None: no cap),
    counted across the server's connections (one class per server)."""
    open_by_client: Counter[str] = Counter()

    class BoundedH11(H11Protocol):
        _client_key: Optional[str] = None
        _header_timer: Optional[asyncio.TimerHandle] = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if per_client is not None and self.client is not None:
                key = client_key(self.client[0])
                if open_by_client[key] >= per_client:
                    transport.write(TOO_MANY)
                    transport.close()
                    return
                open_by_client[key] += 1
                self._client_key = key
            self._await_headers()

        def connection_lost(self, exc: Optional[Exception]) -> None:
            self._headers_came()
            if self._client_key is not None:
                open_by_client[self._client_key] -= 1
                if open_by_client[self._client_key] <= 0:
                    del open_by_client[self._client_key]
                self._client_key = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # a request's head has come whole (or the client erred)
                self._headers_came()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._await_headers()  # the next request on a kept-alive connection

        def _await_headers(self) -> None:
            self._headers_came()
            self._header_timer = self.loop.call_later(header_seconds, self._headers_too_slow)

        def _headers_came(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return BoundedH11


__all__ = ["CONNECTIONS_PER_CLIENT", "HEADER_SECONDS", "bounded_h11"]
