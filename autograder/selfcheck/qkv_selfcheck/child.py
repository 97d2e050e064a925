"""One worker process, seen from its parent: its events in a queue, the tail of its stderr, where its traceback
dump says student code was, and how it ended. Subprocess and threads only (no fork, no signal handler in the
parent), so Linux, macOS and Windows alike."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from typing import Any, Dict, List

from .loading import where_text

STDERR_KEEP = 64 * 1024


class Child:
    """One worker process: its events in a queue, the tail of its stderr, a deadline to wait against."""

    TIMEOUT = object()

    def __init__(self, argv: List[str]) -> None:
        import queue
        import subprocess

        options: Dict[str, Any] = {}
        if os.name == "posix":
            options["start_new_session"] = True  # its own process group: what it starts dies with it
        else:
            options["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, **options)
        if self.process.stdout is None or self.process.stderr is None:  # both are pipes, asked for above
            raise OSError("the self-check's child has no output pipes")
        self._stdout, self._stderr = self.process.stdout, self.process.stderr
        self.events: "queue.Queue[Any]" = queue.Queue()
        self.stderr = bytearray()
        self._lock = threading.Lock()
        threading.Thread(target=self._read_events, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_events(self) -> None:
        for line in self._stdout:
            try:
                event = json.loads(line.decode("utf-8", "replace"))
            except ValueError:
                continue  # not ours: the channel carries only the worker's own lines
            if isinstance(event, dict) and isinstance(event.get("event"), str):
                self.events.put(event)
        self.events.put(None)

    def _read_stderr(self) -> None:
        while True:
            chunk = self._stderr.read1(65536) if hasattr(self._stderr, "read1") else self._stderr.read(65536)
            if not chunk:
                return
            with self._lock:
                self.stderr += chunk
                del self.stderr[:-STDERR_KEEP]

    def next(self, deadline: float) -> Any:
        """The next event; None when the child closed its channel; TIMEOUT when the deadline passed."""
        import queue

        try:
            return self.events.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return self.TIMEOUT

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                if os.name == "posix":
                    os.killpg(self.process.pid, signal.SIGKILL)
                else:
                    self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(timeout=10)
        self._stderr_reader.join(timeout=1)
        for stream in (self._stdout, self._stderr):
            with contextlib.suppress(Exception):
                stream.close()

    def where(self, filename: str) -> str:
        """Where the child's last traceback dump (faulthandler, at the time limit) says student code was."""
        with self._lock:
            text = bytes(self.stderr).decode("utf-8", "replace")
        dump = text.rsplit("Timeout (", 1)
        if len(dump) < 2:
            return ""
        frames = []
        for line in dump[1].splitlines():
            line = line.strip()
            if line.startswith('File "') and '", line ' in line:
                name, rest = line[6:].split('", line ', 1)
                number = rest.split(" ", 1)[0]
                if number.isdigit():
                    frames.append((name, int(number)))
            elif frames and not line.startswith("File"):
                break  # the end of the first thread's stack
        return where_text(list(reversed(frames)), filename)  # a dump lists the most recent call first

    def last_line(self) -> str:
        with self._lock:
            lines = bytes(self.stderr).decode("utf-8", "replace").strip().splitlines()
        return f"; {lines[-1][:300]}" if lines else ""

    def exit_text(self) -> str:
        with contextlib.suppress(Exception):
            self.process.wait(timeout=5)
        code = self.process.returncode
        if code is None:
            return "it stopped answering"
        if code < 0 and os.name == "posix":
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"
