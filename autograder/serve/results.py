"""Who waits, in this web process, for an attempt's grading to be stored: a held look at a waiting attempt's page
(serve/app/student.py) is told by the grader (serve/grader.py) the moment the grading is recorded, instead of the
page being fetched again and again while the attempt waits.

Takes the attempt ids the grader has recorded (from its thread) and gives each held look an asyncio event set on
its own event loop. A grading stored by another web process is not told here: the held look checks the gradebook
itself now and then as well (student.CHECK_S).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator


class ResultWatch:
    """The held looks of one web process, by attempt id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    @contextlib.contextmanager
    def watching(self, attempt_id: str) -> Iterator[asyncio.Event]:
        """An event set once `recorded(attempt_id)` is called, while the block runs (on the running event loop)."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiting.setdefault(attempt_id, []).append(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                held = self._waiting.get(attempt_id, [])
                if entry in held:
                    held.remove(entry)
                if not held:
                    self._waiting.pop(attempt_id, None)

    def recorded(self, attempt_id: str) -> None:
        """The attempt's grading is stored: wake its held looks. Safe from any thread."""
        with self._lock:
            held = list(self._waiting.get(attempt_id, ()))
        for loop, event in held:
            with contextlib.suppress(RuntimeError):  # a loop that has closed (the server stopping)
                loop.call_soon_threadsafe(event.set)

    def held(self) -> int:
        """How many looks are held now."""
        with self._lock:
            return sum(len(entries) for entries in self._waiting.values())
