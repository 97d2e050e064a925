"""Counts in words, for every message and page: a number and its noun in the number's form ("1 student",
"2 students"), so that no message says "1 students" or hedges with "student(s)"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, the noun plural unless the count is one (`plural`, or the noun and "s")."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
