"""autograder/memo.py: values a class shares, kept per object by identity (held, so an id is never reused) and key."""

from __future__ import annotations

from autograder.memo import Memo


class Owner:
    def __eq__(self, other: object) -> bool:  # equal to every other Owner: the memo must not care
        return isinstance(other, Owner)

    __hash__ = None  # not hashable, as problems and bundles are not


def test_each_object_and_key_gets_its_own_value_made_once():
    memo: Memo[list] = Memo(10)
    made = []
    a, b = Owner(), Owner()

    def make(tag):
        made.append(tag)
        return [tag]

    first = memo.get((a,), lambda: make("a"))
    assert memo.get((a,), lambda: make("again")) is first
    assert memo.get((b,), lambda: make("b")) == ["b"]  # equal, but another object
    assert memo.get((a,), lambda: make("a2"), key=("seed", 2)) == ["a2"]
    assert memo.get((a, b), lambda: make("ab")) == ["ab"] and memo.get((b, a), lambda: make("ba")) == ["ba"]
    assert made == ["a", "b", "a2", "ab", "ba"]


def test_it_holds_what_it_was_made_from_and_empties_when_full():
    memo: Memo[int] = Memo(2)
    owners = [Owner() for _ in range(3)]
    for number, owner in enumerate(owners):
        memo.get((owner,), lambda: number)
    # the first two filled it, the third emptied it: only the third is kept (and held: its id is not reused)
    assert memo.get((owners[2],), lambda: -1) == 2
    assert memo.get((owners[0],), lambda: -1) == -1
