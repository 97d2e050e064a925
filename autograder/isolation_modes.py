"""The isolation axis, one registry: what a grading policy or a command may ask for (`IsolationRequest`) and what a
machine gave (`IsolationMode`), each with the words every route shows.

A leaf that imports nothing of qkv: the command line reads the choices before any command runs, the sandbox
chooses a mode for a request (sandbox/isolation.py says how), and the gradebook, results.json, the feedback pages
and the terminal name the mode. Both are string enums whose values are what gradebooks and bundles already hold
(not `StrEnum`: the Gradescope route runs the engine on Python 3.10).
"""

from __future__ import annotations

from enum import Enum


class _Named(str, Enum):
    """A string that is its value wherever it is printed, written or compared."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class IsolationRequest(_Named):
    REQUIRE = "require"  # bwrap, else a uid of its own with the grader's files proven unreadable; nothing weaker
    ALLOW_RLIMITS = "allow-rlimits"  # the best there is, with a warning when it is resource limits only
    BWRAP = "bwrap"  # bubblewrap or nothing
    RLIMITS = "rlimits"  # do not try bubblewrap (tests of the fallback, machines where it misbehaves)


class IsolationMode(_Named):
    """Strongest first (the order a cluster's workers are ranked in)."""

    BWRAP = "bwrap"
    UID = "uid"
    RLIMITS_ONLY = "rlimits-only"

    @property
    def text(self) -> str:
        """How results.json and the pages say it."""
        return _TEXT[self]


_TEXT = {
    IsolationMode.BWRAP: "isolated (bubblewrap namespaces)",
    IsolationMode.UID: "isolated by user id only (no namespaces; the grader's files unreadable)",
    IsolationMode.RLIMITS_ONLY: "NOT isolated: resource limits only",
}
