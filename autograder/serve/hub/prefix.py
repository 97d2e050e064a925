"""The service mounted under JUPYTERHUB_SERVICE_PREFIX: the hub's proxy passes /services/NAME/... on whole.

The app's routes, its redirects, its cookies' paths and its pages' links are paths from "/" (the service alone on
its address). Here each request's path loses the prefix on the way in, and on the way out each redirect to a path,
each cookie's Path=/ and each href, action and src to a path in an HTML page gains it: the app stays as it is in
both modes. A request outside the prefix is not the service's (404). Pages are rendered through Jinja2 with
autoescape, so a quote in anything a student wrote is never the `"` these attributes start with.
"""

from __future__ import annotations

import re
from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
ASGI = Callable[[Scope, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]

_ATTRIBUTE = re.compile(rb'\b(href|action|src)="/(?!/)')
_COOKIE_PATH = re.compile(rb"(;\s*[Pp]ath=)/(?=;|$)")


class PrefixMount:
    def __init__(self, app: ASGI, prefix: str):
        self.app, self.prefix = app, "/" + prefix.strip("/") + "/"
        self.base = self.prefix.rstrip("/").encode()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if path + "/" == self.prefix:
            return await _plain(send, 307, b"", [(b"location", self.prefix.encode())])
        if not path.startswith(self.prefix):
            return await _plain(send, 404, b"not this service's address\n", [])
        inner = dict(scope, path=path[len(self.prefix) - 1:],
                     raw_path=scope.get("raw_path", path.encode())[len(self.prefix) - 1:])
        await self.app(inner, receive, self._rewriting(send))

    def _rewriting(self, send: Any) -> Any:
        held: dict[str, Any] = {}

        async def rewrite(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, self._header(k, v)) for k, v in message.get("headers", [])]
                html = any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers)
                if not html:
                    return await send(dict(message, headers=headers))
                held.update(start=dict(message, headers=headers), body=bytearray())
                return None
            if message["type"] == "http.response.body" and "start" in held:
                held["body"] += message.get("body", b"")
                if message.get("more_body"):
                    return None
                body = _ATTRIBUTE.sub(rb'\1="' + self.base + b"/", bytes(held["body"]))
                start = held.pop("start")
                start["headers"] = [(k, str(len(body)).encode() if k.lower() == b"content-length" else v)
                                    for k, v in start["headers"]]
                await send(start)
                return await send({"type": "http.response.body", "body": body})
            return await send(message)
        return rewrite

    def _header(self, key: bytes, value: bytes) -> bytes:
        key = key.lower()
        if key == b"location" and value.startswith(b"/") and not value.startswith(b"//"):
            return self.base + value
        if key == b"set-cookie":
            return _COOKIE_PATH.sub(rb"\1" + self.prefix.encode(), value)
        return value


async def _plain(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})
