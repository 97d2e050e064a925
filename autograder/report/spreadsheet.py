"""Rows in, CSV text out that a spreadsheet opens as data: the one place every CSV qkv writes goes through.

Names, sections, emails, file names, zip members, LMS metadata and messages come from students and
rosters; a cell such as `=HYPERLINK("http://x","y")` is run as a formula by Excel, LibreOffice and
Google Sheets when the instructor opens the file (CSV or formula injection, CWE-1236). Per OWASP's
advice a cell is made text with a leading `'` when it starts with `=`, `+`, `-`, `@`, a tab, a carriage
return or NUL, or when its first character after blanks (spaces, newlines, zero-width and other
format characters, which some spreadsheets trim) is one of `=+-@` or a full-width or other
compatibility form of one (`＝＋－＠`, which some spreadsheets read as the ASCII character).

A plain decimal number (`-2.5`, `+3`, `-0`, `1e-3`) is left as it is: scores and deltas are written so,
and Canvas and Moodle must read them as numbers; a number cannot carry a formula. Ids go through the
same rule as every cell; the ids qkv grades under (a roster id, or `grade.intake.safe_student_id` of a
file name) start with a letter or digit, so the rule never changes one and LMS matching on ids holds.

Quoting (commas, quotes, newlines in a cell; RFC 4180) stays the csv module's. Not covered: a
spreadsheet told to split on another character (`;` in some locales) sees a cell's text after that
character as a cell of its own; the LMS import files must stay comma-separated.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from typing import Iterable, Sequence, Union

Cell = Union[str, int, float, None]

FORMULA_STARTS = frozenset("=+-@")
CONTROL_STARTS = frozenset("\t\r\0")  # OWASP and ASVS 1.2.10: prefixed whatever follows
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _blank(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) == "Cf"


def is_plain_number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


def needs_quote(text: str) -> bool:
    """True when a spreadsheet could read `text` as a formula (or a control character starts it)."""
    if not text or is_plain_number(text):
        return False
    if text[0] in CONTROL_STARTS:
        return True
    first = next((c for c in text if not _blank(c)), "")
    return bool(first) and unicodedata.normalize("NFKC", first)[:1] in FORMULA_STARTS


def safe_cell(value: Cell) -> str:
    text = "" if value is None else str(value)
    return "'" + text if needs_quote(text) else text


def csv_text(rows: Iterable[Sequence[Cell]], line_end: str = "\n") -> str:
    """The rows (a header is a row like any other) as CSV, every cell through `safe_cell`."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator=line_end).writerows([safe_cell(c) for c in row] for row in rows)
    return buffer.getvalue()
