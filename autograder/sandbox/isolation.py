"""Which isolation this machine gives, checked against what the grading policy requires.

Modes, strongest first:

- `bwrap`: bubblewrap namespaces (policy.py), plus the child's own confinement;
- `uid`: no namespaces (bubblewrap cannot start, as in Gradescope's Docker image), but
  the grader runs as root, student code as a uid of its own, and every secret path
  (the grader's code, references, bundle, other students' work and results) was
  checked to be unreadable by such a uid;
- `rlimits-only`: resource limits only; student code runs as the grader's user and
  can read whatever that user can.

Requests: `require` (bwrap, else uid; anything weaker is refused), `allow-rlimits`
(the best there is, with a warning when it is rlimits-only), `bwrap` (bwrap or
nothing), `rlimits` (do not try bwrap: tests of the fallback).
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from autograder.isolation_modes import IsolationMode, IsolationRequest

PROBE_UID = 999_999  # an unused uid with no groups: what "others" may read
ENGINE_PACKAGES = ("autograder",)  # the references are autograder.references


class SandboxError(RuntimeError):
    """The sandbox itself cannot run here (no usable isolation when asked for, workers that do not start)."""


@dataclass(frozen=True)
class Isolation:
    mode: IsolationMode
    warning: Optional[str] = None  # for the terminal, the gradebook and every feedback page


def engine_paths() -> list[Path]:
    """The folders of the installed engine and references (secret from student code)."""
    import importlib.util

    paths: list[Path] = []
    for name in ENGINE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            paths.extend(Path(p) for p in spec.submodule_search_locations)
    return paths


def readable_by_others(paths: Sequence[Path]) -> Optional[Path]:
    """The first of `paths` (or something in a folder among them) that an unprivileged uid can read; root only.

    Asked of the kernel itself: a forked process drops to PROBE_UID and tries to open each.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        found = b""
        try:
            os.setgroups([])
            os.setresgid(PROBE_UID, PROBE_UID, PROBE_UID)
            os.setresuid(PROBE_UID, PROBE_UID, PROBE_UID)
            for path in paths:
                try:
                    if path.is_dir():
                        names = os.listdir(path)
                        for name in names[:50]:
                            child = path / name
                            if child.is_file():
                                with open(child, "rb"):
                                    pass
                                found = str(child).encode()
                                break
                        else:
                            found = str(path).encode() if names else b""
                    elif path.exists():
                        with open(path, "rb"):
                            pass
                        found = str(path).encode()
                except OSError:
                    continue
                if found:
                    break
        finally:
            os.write(write_fd, found[:4000])
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    return Path(os.fsdecode(answer)) if answer else None


def choose(request: str, bwrap_problem: Callable[[], Optional[str]], protect: Sequence[Path] = ()) -> Isolation:
    """The isolation to grade with, or SandboxError saying why the request cannot be met here."""
    if request not in set(IsolationRequest):
        raise ValueError(f"unknown isolation request {request!r}")
    problem = None
    if request != IsolationRequest.RLIMITS:
        problem = bwrap_problem()
        if problem is None:
            return Isolation(IsolationMode.BWRAP)
        if request == IsolationRequest.BWRAP:
            raise SandboxError(f"bwrap isolation was requested but is not usable here: {problem}")
    why = f"bubblewrap is not usable ({problem})" if problem else "bubblewrap was not asked for"
    if os.geteuid() == 0:
        exposed = readable_by_others([*engine_paths(), *protect])
        if exposed is None:
            return Isolation(IsolationMode.UID)
        unsafe = (f"{why}, and {exposed} is readable by other users, so student code could read it: "
                  "install bubblewrap, or make the grader's files readable by their owner only (chmod -R go-rwx)")
    else:
        unsafe = (f"{why}, and qkv runs as a normal user: student code would run as you and could read "
                  "your files (solutions included) and use the network")
    if request == IsolationRequest.REQUIRE:
        raise SandboxError(f"{unsafe}; this assignment's grading policy requires isolation "
                           "(to grade anyway: --isolation allow-rlimits)")
    return Isolation(IsolationMode.RLIMITS_ONLY, f"student code runs with resource limits ONLY: {unsafe}")


@functools.lru_cache(maxsize=4)
def probe_bwrap(command: tuple[str, ...]) -> Optional[str]:
    """Why `command` (a sandboxed `python -c pass`) fails, or None when it runs."""
    try:
        done = subprocess.run(list(command), capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return None
