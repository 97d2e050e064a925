"""Moodle question bank import: a `Quiz` in; Moodle XML (bytes) out.

One category per question group (`$course$/top/qkv/<quiz>/<group>`), so a quiz
takes "a random question from the category" and each student draws one variant.
A single number is a `numerical` question with its tolerance; a variant of
several answers (the entries of a hand calculation, a verdict and its
follow-up) is one `multianswer` (cloze) question, so all its answers come from
the same draw: NUMERICAL blanks with their tolerances, MULTICHOICE for true or
false, MULTICHOICE_VS (choices shuffled by Moodle) for a choice, SHORTANSWER for
a shape. Multiple-choice questions shuffle their answers (`shuffleanswers`);
shapes are `shortanswer` with the usual spellings. Formulas stay `\\(...\\)`,
which Moodle's MathJax filter renders.
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET

from autograder.exam.lms.quiz import Quiz, number_text, weights
from autograder.exam.lms.xml_elements import sub_element
from autograder.exam.markup import lms_html
from autograder.kinds.items import Answerable, Question

PENALTY = "0.3333333"  # Moodle's default for a wrong try in adaptive mode
_CLOZE_SPECIAL = "\\}#~/\"{"


def _text(parent: ET.Element, tag: str, text: str, html: bool = True) -> ET.Element:
    element = sub_element(parent, tag, format="html") if html else sub_element(parent, tag)
    sub_element(element, "text", text)
    return element


def category(path: str, info: str) -> ET.Element:
    question = ET.Element("question", type="category")
    _text(question, "category", path, html=False)
    _text(question, "info", info)
    return question


def cloze_escape(text: str) -> str:
    """Plain text inside a cloze blank: HTML-escaped, and the cloze syntax's own characters escaped."""
    text = html.escape(" ".join(text.split()), quote=False)
    for char in _CLOZE_SPECIAL:
        text = text.replace(char, "\\" + char)
    return text


def cloze_blank(answer: Answerable, weight: int) -> str:
    part = answer.question
    if part.kind == "numerical":
        blank = answer.entry
        return f"{{{weight}:NUMERICAL:={number_text(blank.value)}:{number_text(blank.tolerance)}}}"
    if part.kind == "truefalse":
        options = [("True", part.truth is True), ("False", part.truth is False)]
        return f"{{{weight}:MULTICHOICE:" + "~".join(("=" if right else "") + text for text, right in options) + "}"
    if part.kind == "multichoice":
        listed = "~".join(("=" if c.correct else "") + cloze_escape(c.text)
                          + (f"#{cloze_escape(c.feedback)}" if c.feedback else "") for c in part.choices)
        return f"{{{weight}:MULTICHOICE_VS:{listed}}}"
    assert part.kind == "shortanswer", part.kind
    return f"{{{weight}:SHORTANSWER:" + "~".join(f"={cloze_escape(t)}" for t in part.accepted) + "}"


def cloze_text(question: Question) -> str:
    """The prompt, then each part's label (or question) with its blanks, in one question of one variant."""
    lines: dict[str, list[str]] = {}
    labels: dict[str, str] = {}
    for answer, weight in weights(question):
        part = answer.question
        lines.setdefault(part.ident, []).append(cloze_blank(answer, weight))
        labels[part.ident] = part.text
    body = "".join(f"<p>{lms_html(labels[ident]).removeprefix('<p>').removesuffix('</p>')}: {' '.join(blanks)}</p>"
                   for ident, blanks in lines.items())
    return lms_html(question.text) + body


def moodle_question(question: Question) -> ET.Element:
    kind = "multianswer" if question.kind == "cloze" else question.kind
    element = ET.Element("question", type=kind)
    _text(element, "name", question.title, html=False)
    _text(element, "questiontext", cloze_text(question) if question.kind == "cloze" else lms_html(question.text))
    _text(element, "generalfeedback", lms_html(question.feedback))
    sub_element(element, "defaultgrade", f"{question.points:g}")
    sub_element(element, "penalty", PENALTY)
    sub_element(element, "hidden", "0")
    sub_element(element, "idnumber", question.ident)
    if question.kind == "numerical":
        blank = question.blanks[0]
        answer = sub_element(element, "answer", fraction="100")
        sub_element(answer, "text", number_text(blank.value))
        sub_element(answer, "tolerance", number_text(blank.tolerance))
        _text(answer, "feedback", "")
        sub_element(element, "unitgradingtype", "0")
        sub_element(element, "unitpenalty", "0")
        sub_element(element, "showunits", "3")  # no units asked for
        sub_element(element, "unitsleft", "0")
    elif question.kind == "multichoice":
        sub_element(element, "single", "true")
        sub_element(element, "shuffleanswers", "1")  # solutions name choices by content, never by letter
        sub_element(element, "answernumbering", "ABCD")
        for choice in question.choices:
            answer = _text(element, "answer", lms_html(choice.text))
            answer.set("fraction", "100" if choice.correct else "0")
            _text(answer, "feedback", lms_html(choice.feedback) if choice.feedback else "")
    elif question.kind == "truefalse":
        for value in (True, False):
            answer = sub_element(element, "answer", fraction="100" if question.truth is value else "0", format="moodle_auto_format")
            sub_element(answer, "text", "true" if value else "false")
            _text(answer, "feedback", "")
    elif question.kind == "shortanswer":
        sub_element(element, "usecase", "0")
        for text in question.accepted:
            answer = sub_element(element, "answer", fraction="100", format="moodle_auto_format")
            sub_element(answer, "text", text.replace("*", "\\*"))  # * is Moodle's wildcard
            _text(answer, "feedback", "")
    return element


def moodle_xml(quiz: Quiz) -> bytes:
    root = ET.Element("quiz")
    root.append(ET.Comment(f" qkv export of {quiz.title}: add one random question from each category "))
    for group in quiz.groups:
        root.append(category(f"$course$/top/qkv/{quiz.ident}/{group.ident}",
                             f"{group.title}: {len(group.questions)} variant(s); a student answers one."))
        for question in group.questions:
            root.append(moodle_question(question))
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True)
