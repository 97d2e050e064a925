"""Moodle's GIFT text format: a `Quiz` in; GIFT text out.

One `$CATEGORY:` per question group, as in moodle.py, so a random question from
each category gives every student one variant. GIFT takes one answer per
question, so numbers come one entry per group (the quiz is built with
`split_entries`). Text is HTML; GIFT's special characters, the backslash
first, are escaped, and newlines written as `\\n`, because a blank line ends a question.
"""

from __future__ import annotations

from autograder.exam.lms.quiz import Quiz, number_text
from autograder.exam.markup import lms_html
from autograder.kinds.items import Question

_SPECIAL = "~=#{}:"


def escape(text: str) -> str:
    text = text.replace("\\", "\\\\")
    for char in _SPECIAL:
        text = text.replace(char, "\\" + char)
    return text.replace("\r", "").replace("\n", "\\n")


def _html(markdown: str) -> str:
    return escape(lms_html(markdown))


def answer_block(question: Question) -> str:
    general = f"####{_html(question.feedback)}"
    if question.kind == "numerical":
        blank = question.blanks[0]
        return f"{{#{number_text(blank.value)}:{number_text(blank.tolerance)}{general}}}"
    if question.kind == "truefalse":
        return f"{{{'TRUE' if question.truth else 'FALSE'}{general}}}"
    if question.kind == "shortanswer":
        return "{" + " ".join(f"={escape(text)}" for text in question.accepted) + general + "}"
    assert question.kind == "multichoice", f"GIFT has no {question.kind} questions"
    choices = " ".join(("=" if c.correct else "~") + _html(c.text) + (f"#{_html(c.feedback)}" if c.feedback else "")
                       for c in question.choices)
    return f"{{{choices}{general}}}"


def gift_question(question: Question) -> str:
    return f"::{escape(question.title)}::[html]{_html(question.text)}{answer_block(question)}"


def gift_text(quiz: Quiz) -> str:
    lines = [f"// qkv export of {quiz.title}: add one random question from each category"]
    for group in quiz.groups:
        lines += ["", f"$CATEGORY: $course$/top/qkv/{quiz.ident}/{group.ident}"]
        for question in group.questions:
            lines += ["", gift_question(question)]
    return "\n".join(lines) + "\n"
