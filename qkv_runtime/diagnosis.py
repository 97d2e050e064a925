"""Which mistake a failed test's output shows, and the sentence that names it: the same in every route.

`qkv grade` (grade/score.py, on plain arrays in its trusted process), nbgrader's test
cells (nbcells.py), and the self-check name a mistake with these functions, so a
student reads one sentence for one mistake whichever route ran the test.

A failed output is matched against two sets of outputs computed at build time: the
problem's own misconceptions (`own`), and, for each function the problem builds on,
the reference with one of that function's misconceptions put inside (`upstream`,
e.g. multi_head_attention with the column softmax in place of softmax_rows). The
order says what to fix first:

1. an upstream mistake that the function it belongs to shows itself (`confirmed`):
   the student's own softmax_rows has it, so fixing softmax_rows fixes this test too;
2. the problem's own misconceptions;
3. an upstream mistake the upstream function does not show: the same mistake,
   written inside this function (e.g. a column softmax inlined in attention).

Nothing here sees a reference: only the outputs, or digests of them, that the
build precomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Tuple

CONFIRMED, OWN, INSIDE = "upstream", "own", "inside"


@dataclass(frozen=True)
class Named:
    """A recognised mistake: its id, the problem it belongs to (None: this one) and how it was found."""

    mistake: str
    cause: Optional[str] = None
    how: str = OWN


def name_mistake(matches: Callable[[Any], bool], own: Mapping[str, Any],
                 upstream: Sequence[Tuple[str, Mapping[str, Any]]],
                 confirmed: Callable[[str, str], bool], shown_here: Iterable[str] = ()) -> Optional[Named]:
    """The mistake a failed output shows, or None. `matches(outputs)` compares the student's output with
    precomputed outputs (arrays, or a digest); `upstream` lists (problem id, {mistake: outputs}) in the
    assignment's order, most basic first; `confirmed(problem, mistake)`: that problem shows the mistake;
    `shown_here`: the mistakes earlier tests of this problem showed, in the same run.

    Two mistakes can give the same output on one input (a softmax over axis 0 and one over axis -2 agree on a
    single matrix): a mistake this problem already showed wins such a tie, so one wrong line is named once, by
    the test that told the two apart (run first: see softmax-rows' public tests), not under two names."""
    for problem, mistakes in upstream:
        for mistake in sorted(mistakes):
            if confirmed(problem, mistake) and matches(mistakes[mistake]):
                return Named(mistake, problem, CONFIRMED)
    earlier = frozenset(shown_here)
    for mistake in sorted(own, key=lambda m: (m not in earlier, m)):
        if matches(own[mistake]):
            return Named(mistake, None, OWN)
    for problem, mistakes in upstream:
        for mistake in sorted(mistakes):
            if matches(mistakes[mistake]):
                return Named(mistake, problem, INSIDE)
    return None


def mistake_text(named: Named, function: str, message: str, reason: str, upstream_function: str = "") -> str:
    """The sentence of a failed test that shows `named`: `message` is the mistake's own (the bank's),
    `reason` what differs (compare's Mismatch.reason), `upstream_function` the function it belongs to."""
    if named.how == CONFIRMED:
        return (f"fix {upstream_function} first: your {function} matches the reference with that same mistake "
                f"inside; {upstream_function}: {message} ({reason})")
    if named.how == INSIDE:
        return f"your {function} has the mistake of a wrong {upstream_function} inside it: {message} ({reason})"
    return f"{message} ({reason})"


def written_mistake_text(message: str) -> str:
    """A written answer's named mistake (`message`, the bank's), as the grader and the self-check both add it."""
    return f"common mistake: {message}"


def shown(results: Iterable[Tuple[Optional[str], Optional[str]]]) -> frozenset:
    """The mistakes a problem shows itself, from its tests' (mistake, cause) pairs: what confirms it upstream."""
    return frozenset(mistake for mistake, cause in results if mistake and cause is None)


def written_mistakes(matched: Iterable[Tuple[str, str]]) -> list:
    """The mistakes a written answer is, to name in this order, from (message, part) pairs: each misconception
    whose wrong-method answer to that part the student's equals, in the bank's order.

    Two misconceptions can share a part's wrong value (a b_1 left out and a b_1 added after the ReLU give the
    same pre-activation), so the one that explains the most parts comes first, and one whose parts are a strict
    subset of another's is not named at all: it explains nothing the other does not."""
    parts: dict = {}
    for message, part in matched:
        parts.setdefault(message, set()).add(part)
    kept = [m for m, mine in parts.items() if not any(mine < theirs for theirs in parts.values())]
    return sorted(kept, key=lambda m: -len(parts[m]))  # sorted is stable: the bank's order among equals
