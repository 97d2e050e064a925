"""What a class shares, made once: values kept per object (a bundle, a problem, a test, a shared result) and key.

Grading repeats the same work for every student of a bundle: its calls, its order of problems, a passed test's
result and text, a written answer judged against one variant. A `Memo` keeps each such value by the identity of
the objects it was made from (most are not hashable) and holds those objects: while an entry lives, its ids
belong to the objects it holds, so an id found is that object's (two live objects never share an id). Full, it
empties rather than evicting: it is never iterated, so the service's grader threads may share one.
(autograder/sandbox/protocol.py keeps its own for a call list's encoding: the sandbox package imports nothing of
the engine.)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._entries: dict[tuple, tuple[tuple[object, ...], V]] = {}

    def get(self, owners: tuple[object, ...], make: Callable[[], V], key: Hashable = ()) -> V:
        """The value made by `make` for these objects (and `key`), made now if it is not kept."""
        ident = (tuple(map(id, owners)), key)
        hit = self._entries.get(ident)
        if hit is not None:
            return hit[1]
        value = make()
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[ident] = (owners, value)
        return value
