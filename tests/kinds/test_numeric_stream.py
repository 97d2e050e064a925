"""The integers a variant's seed draws (kinds/numeric/stream.py) are NumPy's `default_rng(seed).integers`, call
after call: every release and gradebook made before lists numbers NumPy drew."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.kinds.numeric.stream import IntegerStream

# small ranges as problems draw them; ranges that reject often (Lemire's threshold); 32 bits exactly, and wider ones
# that take whole 64-bit outputs between 32-bit draws (PCG64 keeps a 32-bit draw's leftover half across them)
RANGES = st.one_of(
    st.tuples(st.integers(-60, 60), st.integers(0, 60)),
    st.tuples(st.integers(-3, 0), st.sampled_from([2**31 + 5, 3 * 2**30, 2**32 - 2, 2**32 - 1, 2**32, 2**40,
                                                    2**63 - 1])),
)
SHAPES = st.lists(st.integers(1, 4), max_size=3) | st.builds(lambda n: [n], st.integers(100, 700))
CALLS = st.lists(st.tuples(RANGES, SHAPES, st.booleans()), min_size=1, max_size=40)


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), calls=CALLS)
def test_the_stream_draws_what_numpy_draws(seed: int, calls) -> None:
    numpy_draws, stream = np.random.default_rng(seed), IntegerStream(seed)
    for (low, span), shape, scalar in calls:
        high = low + span
        if scalar and not shape:
            assert stream.integer(low, high) == int(numpy_draws.integers(low, high + 1))
        else:
            assert stream.integers(low, high, shape) == numpy_draws.integers(low, high + 1, tuple(shape)).tolist()


def test_a_long_run_of_small_draws_matches_across_many_blocks() -> None:
    numpy_draws, stream = np.random.default_rng(2026), IntegerStream(2026)
    for n in range(20_000):
        low, high = -4 - n % 7, 8 + n % 11
        assert stream.integers(low, high, [4]) == numpy_draws.integers(low, high + 1, (4,)).tolist()
        assert stream.integer(0, n % 5) == int(numpy_draws.integers(0, n % 5 + 1))
