"""A loop the service runs beside its web app (the score poster, the class-list puller): a daemon thread of its own
from `start` until `stop`, which sets `_stop` and waits up to 30 s for the round under way to end."""

from __future__ import annotations

import threading
from typing import TypeVar

Self = TypeVar("Self", bound="BackgroundLoop")


class BackgroundLoop:
    thread_name = "qkv-lti"

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def start(self: Self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._interrupt()
        self._thread.join(timeout=30)

    def _interrupt(self) -> None:
        """Ends at once a wait of the loop's on anything but `_stop`."""

    def _run(self) -> None:
        raise NotImplementedError
