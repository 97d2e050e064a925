"""Choices with ids, shown in an order of each student's own: what multiple_choice and true_false share.

A choice is named by its `id`, never by a position, so solutions speak of choices by
content and the order can be shuffled. The order is a keyed sort of the ids by
sha256(seed, student, problem): the same on every machine and in every route (release,
self-check, nbgrader, exam papers, the drill, quiz exports), different per student and
per assignment seed. A student answers with the letter their own order shows; the
grader, who knows that order, reads the letter back to an id, and seals and statistics
speak of ids, so a shuffle changes neither.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Sequence

from pydantic import Field

from autograder.kinds import items
from autograder.kinds.items import Variant, Verdict
from autograder.kinds.model import Strict
from qkv_runtime import judge
from qkv_runtime.answers import AnswerFormatError, not_the_choice, parse_choice
from qkv_runtime.judge import LETTERS, letter_of, letters  # noqa: F401 - letter_of: true_false reads it here

ChoiceId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=40)]
# an id is shown to nobody, but it travels in the self-check data: it must not say which choice is right
TELLING_IDS = ("right", "correct", "true", "false", "wrong", "answer", "yes", "no")


class Choice(Strict):
    id: ChoiceId
    text: str = Field(min_length=1)
    misconception: str | None = Field(default=None, description="for a wrong choice: the mistake it reflects")


def id_findings(choices: Sequence[Choice], answer: str, field: str) -> list[str]:
    """What is wrong with a list of choices and the id of the right one, as 'field: reason' strings."""
    ids = [c.id for c in choices]
    out = []
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        out.append(f"{field}: the id {repeated[0]} is used twice")
    if answer not in ids:
        out.append(f"{field}: the answer {answer!r} is none of the ids {', '.join(ids)}")
    telling = [i for i in ids if any(word in i.split("-") for word in TELLING_IDS)]
    if telling:
        out.append(f"{field}: the id {telling[0]} says whether it is right; name a choice by its content")
    return out


def shuffled(ids: Sequence[str], seed: int, student: str | None, key: str) -> list[str]:
    """The ids in the order one student (None: the whole class) sees them."""
    def rank(choice_id: str) -> bytes:
        return hashlib.sha256(f"{seed}\x1f{student or ''}\x1f{key}\x1f{choice_id}".encode()).digest()

    return sorted(ids, key=rank)


def read_choice(typed: Any, order: Sequence[str]) -> str:
    """The id of the choice whose letter (in this order) was typed; raises AnswerFormatError."""
    return judge.choice_at(order, parse_choice(typed, len(order)))


def judge_choice(choices: Sequence[Choice], answer: str, order: Sequence[str], typed: Any) -> Verdict:
    try:
        got = read_choice(typed, order)
    except AnswerFormatError as err:
        return Verdict(False, str(err))
    if got == answer:
        return Verdict(True, "correct")
    chosen = next(c for c in choices if c.id == got)
    return Verdict(False, chosen.misconception or not_the_choice(typed), misconception=chosen.misconception)


def by_id(choices: Sequence[Choice]) -> dict[str, Choice]:
    return {c.id: c for c in choices}


def markdown_list(choices: Sequence[Choice], order: Sequence[str] | None) -> str:
    """The choices under a prompt: lettered in a student's order, or (order None) as plain bullets."""
    named = by_id(choices)
    if order is None:
        return "\n".join(f"- {c.text}" for c in choices)
    return "\n".join(f"- **{LETTERS[i]}.** {named[cid].text}" for i, cid in enumerate(order))


def terminal_list(choices: Sequence[Choice], order: Sequence[str]) -> str:
    named = by_id(choices)
    return "\n".join(f"  {LETTERS[i]}. {named[cid].text}" for i, cid in enumerate(order))


def letters_hint(n: int) -> str:
    return "/".join(letters(n))


def quiz_choices(choices: Sequence[Choice], answer: str, order: Sequence[str]) -> tuple[items.Choice, ...]:
    named = by_id(choices)
    return tuple(items.Choice(named[cid].text, cid == answer, named[cid].misconception or "", cid) for cid in order)


def order_variant(problem_id: str, ids: Sequence[str], seed: int, mode: str, student: str | None):
    """The order a student gets under an assignment's `variants:` mode ("same": one order for the class)."""
    who = student if mode == "per_student" else None
    return Variant(problem_id, {"order": shuffled(ids, seed, who, problem_id)}, {}, f"seed:{seed}/{who or ''}")


def order_in(variant: Any, problem_id: str, ids: Sequence[str]) -> list[str]:
    """The order a variant holds; without one (a caller with no seed), the class-wide order of seed 0."""
    if variant is not None and "order" in variant.params:
        return list(variant.params["order"])
    return shuffled(ids, 0, None, problem_id)
