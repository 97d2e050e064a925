"""The integers a variant's seed draws: a seed in, bounded integers out, the very ones NumPy's
`np.random.default_rng(seed).integers(low, high + 1, shape)` gives, call after call.

Why not NumPy's call itself: a problem workable by hand refuses most draws, and the service draws every such problem
again on each attempt (fresh numbers), so a variant costs hundreds of calls, each a NumPy call whose set-up costs
many times its draw. This takes PCG64's 64-bit outputs in blocks and bounds them in Python with the method NumPy
uses (Lemire's multiply-and-reject: on 32-bit halves, the low half first, for a range that fits in 32 bits; on whole
outputs above that), so the numbers are NumPy's, which every release and gradebook made so far lists, and stay so
whatever NumPy a student's machine has (PCG64's outputs are fixed by its specification).
tests/kinds/test_numeric_stream.py holds it to NumPy's calls over ranges, shapes and seeds.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

FIRST_BLOCK, LARGEST_BLOCK = 16, 1024  # 64-bit outputs taken from the generator at a time, doubling
MASK32 = 0xFFFF_FFFF
MASK64 = 0xFFFF_FFFF_FFFF_FFFF


class IntegerStream:
    """What `np.random.default_rng(seed).integers` would draw, for ranges of signed 64-bit integers."""

    def __init__(self, seed: int) -> None:
        self._bits = np.random.PCG64(seed)
        self._halves: list[int] = []  # the outputs not yet drawn from, as 32-bit halves, each output's low half first
        self._at = 0
        self._block = FIRST_BLOCK // 2

    def _have(self, count: int) -> None:
        """At least `count` halves at `_at`. An odd `_at` is a high half left over by a 32-bit draw (PCG64's own
        buffer), which the next 32-bit draw takes and a 64-bit one leaves: so the list keeps outputs at even places."""
        if self._at + count > len(self._halves):
            # most variants of a problem with few parameters need a few outputs, one workable by hand hundreds
            self._block = min(2 * self._block, LARGEST_BLOCK)
            outputs = self._bits.random_raw(max(self._block, count // 2 + 2))
            kept = self._at - self._at % 2
            self._halves = self._halves[kept:] + outputs.astype("<u8").view("<u4").tolist()  # low half first
            self._at -= kept

    def _next32(self) -> int:
        self._have(1)
        self._at += 1
        return self._halves[self._at - 1]

    def _next64(self) -> int:
        """A whole output; a high half left over by a 32-bit draw is kept for the next one, as PCG64 keeps it."""
        self._have(3)
        at, halves = self._at, self._halves
        if at % 2 == 0:
            self._at = at + 2
            return halves[at] | halves[at + 1] << 32
        whole = halves[at + 1] | halves[at + 2] << 32
        halves[at + 2] = halves[at]
        self._at = at + 2
        return whole

    def _wide(self, span: int) -> int:
        """A uniform integer in [0, span] for a span of 32 bits or more (Lemire's method on whole outputs)."""
        if span == MASK32:
            return self._next32()
        if span == MASK64:
            return self._next64()
        excl = span + 1
        m = self._next64() * excl
        if (m & MASK64) < excl:
            threshold = (MASK64 - span) % excl
            while (m & MASK64) < threshold:
                m = self._next64() * excl
        return m >> 64

    def _rejected(self, m: int, span: int) -> int:
        """Lemire's method past a first try `m` whose low half fell below `span + 1`: tries again while it is below
        the threshold (rare: a chance of span / 2**32 a draw)."""
        excl = span + 1
        threshold = (MASK32 - span) % excl
        while (m & MASK32) < threshold:
            m = self._next32() * excl
        return m

    def integer(self, low: int, high: int) -> int:
        """One integer in [low, high], as `integers(low, high + 1)` draws it."""
        span = high - low
        if not 0 < span < MASK32:
            return low + (self._wide(span) if span else 0)
        if self._at == len(self._halves):
            self._have(1)
        m = self._halves[self._at] * (span + 1)
        self._at += 1
        if (m & MASK32) <= span:
            m = self._rejected(m, span)
        return low + (m >> 32)

    def integers(self, low: int, high: int, shape: Sequence[int]) -> Any:
        """An array of `shape` in [low, high] as nested lists (an int for shape ()), as `integers(low, high + 1,
        shape).tolist()` draws it: in C order."""
        if not shape:
            return self.integer(low, high)
        span, count = high - low, math.prod(shape)
        values: list[Any]
        if 0 < span < MASK32:
            # this loop is most of a variant's drawing: each try is taken as it is unless it is to be rejected (a
            # chance of span / 2**32), where the rest is drawn one by one
            self._have(count)
            halves, at, excl, values = self._halves, self._at, span + 1, []
            for i in range(count):
                m = halves[at + i] * excl
                if (m & MASK32) <= span:
                    self._at = at + i
                    values += [self.integer(low, high) for _ in range(count - i)]
                    break
                values.append(low + (m >> 32))
            else:
                self._at = at + count
        else:
            values = [low + (self._wide(span) if span else 0) for _ in range(count)]
        for size in reversed(shape[1:]):
            values = [values[i:i + size] for i in range(0, len(values), size)]
        return values
