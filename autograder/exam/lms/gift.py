"""Moodle's GIFT text format: a `Quiz` in; GIFT text out.

GIFT takes one answer per question and has no cloze. A problem whose variants
are each one answer gets one `$CATEGORY:` of its variants, from which a quiz
adds one random question, as in moodle.py. A problem whose variants have several
answers (the entries of a hand calculation, a verdict and its follow-up) gets one
category per variant, `.../<group>/v<n>`, holding that variant's answers as
questions: a quiz adds every question of one such category, so a student's
answers all come from one draw (the comment above each says so). Text is HTML;
GIFT's special characters, the backslash first, are escaped, and newlines written
as `\\n`, because a blank line ends a question. GIFT has no shuffle flag: Moodle's
quiz setting "shuffle within questions" shuffles the choices.
"""

from __future__ import annotations

from autograder.exam.lms.quiz import Quiz, number_text
from autograder.exam.markup import lms_html
from autograder.kinds.items import Answerable, Question, answerables

_SPECIAL = "~=#{}:"


def escape(text: str) -> str:
    text = text.replace("\\", "\\\\")
    for char in _SPECIAL:
        text = text.replace(char, "\\" + char)
    return text.replace("\r", "").replace("\n", "\\n")


def _html(markdown: str) -> str:
    return escape(lms_html(markdown))


def answer_block(answer: Answerable, feedback: str) -> str:
    part = answer.question
    general = f"####{_html(feedback)}"
    if part.kind == "numerical":
        blank = answer.entry
        return f"{{#{number_text(blank.value)}:{number_text(blank.tolerance)}{general}}}"
    if part.kind == "truefalse":
        return f"{{{'TRUE' if part.truth else 'FALSE'}{general}}}"
    if part.kind == "shortanswer":
        return "{" + " ".join(f"={escape(text)}" for text in part.accepted) + general + "}"
    assert part.kind == "multichoice", f"GIFT has no {part.kind} questions"
    choices = " ".join(("=" if c.correct else "~") + _html(c.text) + (f"#{_html(c.feedback)}" if c.feedback else "")
                       for c in part.choices)
    return f"{{{choices}{general}}}"


def gift_question(question: Question) -> str:
    (answer,) = answerables(question)
    return f"::{escape(question.title)}::[html]{_html(question.text)}{answer_block(answer, question.feedback)}"


def gift_parts(question: Question) -> list[str]:
    """The answers of one variant, each a question that repeats the prompt and says which answer it asks for."""
    out = []
    found = answerables(question)
    for n, answer in enumerate(found, 1):
        label = answer.blank.label if answer.blank is not None else answer.question.text
        text = f"{question.text.strip()}\n\n**Give:** {label}"
        feedback = question.feedback if n == len(found) else ""
        out.append(f"::{escape(question.title + ': ' + label)}::[html]{_html(text)}{answer_block(answer, feedback)}")
    return out


def gift_text(quiz: Quiz) -> str:
    lines = [f"// qkv export of {quiz.title}: add one random question from each category, or, where a comment says so,",
             "// every question of one category per problem (its answers are one draw)"]
    for group in quiz.groups:
        base = f"$course$/top/qkv/{quiz.ident}/{group.ident}"
        if all(len(answerables(q)) == 1 for q in group.questions):
            lines += ["", f"$CATEGORY: {base}"]
            lines += [line for q in group.questions for line in ("", gift_question(q))]
            continue
        for n, question in enumerate(group.questions, 1):
            lines += ["", f"// {group.title}: variant {n} of {len(group.questions)}; add every question of ONE "
                          f"of the categories {base}/v1 ... /v{len(group.questions)}",
                      f"$CATEGORY: {base}/v{n}"]
            lines += [line for text in gift_parts(question) for line in ("", text)]
    return "\n".join(lines) + "\n"
