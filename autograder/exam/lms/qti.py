"""Canvas quiz import: a `Quiz` in; a QTI 1.2 zip (imsmanifest.xml, one assessment per variant, Canvas's
assessment_meta.xml for each) as bytes out.

Canvas takes one answer per question, and a question group draws each question on
its own, so groups could hand one student the entries of two different draws.
Instead every variant is a quiz of its own: quiz n holds variant n of every
problem (a problem with fewer variants repeats them), each problem in a section
whose items are its answers: a text-only item with the prompt when there are
several, then one item per answer. Import the zip once (Settings > Import Course
Content > QTI .zip file): Canvas makes one quiz per variant, "TITLE (variant n of
N)", and each is assigned to its own section or group of students (docs/exam-prep.md).
Written with xml.etree in the dialect Canvas exports and imports; numeric answers
as an exact value or a [low, high] range; answers shuffled by Canvas
(`shuffle_answers`); formulas as `\\(...\\)`, which Canvas renders with MathJax.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from autograder.archive import zip_bytes
from autograder.exam.lms.quiz import Quiz, number_text, question_of_variant
from autograder.exam.lms.xml_elements import sub_element
from autograder.exam.markup import lms_html
from autograder.kinds.items import Answerable, Question, QuestionGroup, answerables

QTI_NS = "http://www.imsglobal.org/xsd/ims_qtiasiv1p2"
CP_NS = "http://www.imsglobal.org/xsd/imsccv1p1/imscp_v1p1"
CANVAS_NS = "http://canvas.instructure.com/xsd/cccv1p0"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
QUESTION_TYPES = {
    "numerical": "numerical_question",
    "multichoice": "multiple_choice_question",
    "truefalse": "true_false_question",
    "shortanswer": "short_answer_question",
}


def _material(parent: ET.Element, markdown: str) -> None:
    sub_element(sub_element(parent, "material"), "mattext", lms_html(markdown), texttype="text/html")


def _metadata(item: ET.Element, fields: dict[str, str]) -> None:
    meta = sub_element(sub_element(item, "itemmetadata"), "qtimetadata")
    for label, entry in fields.items():
        field = sub_element(meta, "qtimetadatafield")
        sub_element(field, "fieldlabel", label)
        sub_element(field, "fieldentry", entry)


def _score(resprocessing: ET.Element, condition: ET.Element) -> None:
    rule = sub_element(resprocessing, "respcondition", continue_="No")
    rule.append(condition)
    sub_element(rule, "setvar", "100", action="Set", varname="SCORE")


def _feedback(item: ET.Element, ident: str, markdown: str) -> None:
    feedback = sub_element(item, "itemfeedback", ident=ident)
    _material(sub_element(feedback, "flow_mat"), markdown)


def stem_item(ident: str, title: str, text: str) -> ET.Element:
    """A text-only item: the prompt that the answers after it share."""
    item = ET.Element("item", ident=ident, title=title)
    _metadata(item, {"question_type": "text_only_question", "points_possible": "0",
                     "assessment_question_identifierref": f"{ident}-q"})
    _material(sub_element(item, "presentation"), text)
    return item


def qti_item(ident: str, title: str, text: str, answer: Answerable, feedback: str) -> ET.Element:
    part = answer.question
    item = ET.Element("item", ident=ident, title=title)
    answers = {"multichoice": len(part.choices), "truefalse": 2}.get(part.kind, 1)
    answer_ids = [f"{ident}-a{i + 1}" for i in range(answers)]
    _metadata(item, {"question_type": QUESTION_TYPES[part.kind], "points_possible": f"{answer.points:g}",
                     "original_answer_ids": ",".join(answer_ids), "assessment_question_identifierref": f"{ident}-q"})
    presentation = sub_element(item, "presentation")
    _material(presentation, text)
    processing = ET.Element("resprocessing")
    outcomes = sub_element(processing, "outcomes")
    sub_element(outcomes, "decvar", maxvalue="100", minvalue="0", varname="SCORE", vartype="Decimal")
    general = sub_element(processing, "respcondition", continue_="Yes")
    sub_element(sub_element(general, "conditionvar"), "other")
    sub_element(general, "displayfeedback", feedbacktype="Response", linkrefid="general_fb")
    feedbacks: list[tuple[str, str]] = []
    if part.kind in ("multichoice", "truefalse"):
        response = sub_element(presentation, "response_lid", ident="response1", rcardinality="Single")
        choices = sub_element(response, "render_choice", shuffle="Yes" if part.kind == "multichoice" else "No")
        options = ([(c.text, c.correct, c.feedback) for c in part.choices] if part.kind == "multichoice"
                   else [("True", part.truth is True, ""), ("False", part.truth is False, "")])
        for answer_id, (option, correct, note) in zip(answer_ids, options):
            _material(sub_element(choices, "response_label", ident=answer_id), option)
            if note:
                rule = sub_element(processing, "respcondition", continue_="Yes")
                sub_element(sub_element(rule, "conditionvar"), "varequal", answer_id, respident="response1")
                sub_element(rule, "displayfeedback", feedbacktype="Response", linkrefid=f"{answer_id}_fb")
                feedbacks.append((answer_id, note))
        right = next(a for a, (_, correct, _) in zip(answer_ids, options) if correct)
        condition = ET.Element("conditionvar")
        sub_element(condition, "varequal", right, respident="response1")
        _score(processing, condition)
    else:
        response = sub_element(presentation, "response_str", ident="response1", rcardinality="Single")
        fib = sub_element(response, "render_fib", fibtype="Decimal" if part.kind == "numerical" else "String")
        sub_element(fib, "response_label", ident=answer_ids[0])
        condition = ET.Element("conditionvar")
        if part.kind == "numerical":
            blank = answer.entry
            either = sub_element(condition, "or")
            sub_element(either, "varequal", number_text(blank.value), respident="response1")
            window = sub_element(either, "and")
            sub_element(window, "vargte", number_text(blank.value - blank.tolerance), respident="response1")
            sub_element(window, "varlte", number_text(blank.value + blank.tolerance), respident="response1")
        else:
            for text_ in part.accepted:
                sub_element(condition, "varequal", text_, respident="response1")
        _score(processing, condition)
    item.append(processing)
    _feedback(item, "general_fb", feedback)
    for answer_id, note in feedbacks:
        _feedback(item, f"{answer_id}_fb", note)
    return item


def problem_section(group: QuestionGroup, question: Question) -> ET.Element:
    """One problem's variant: its answers, all from this one question."""
    section = ET.Element("section", ident=question.ident, title=group.title)
    found = answerables(question)
    if len(found) == 1:
        section.append(qti_item(question.ident, question.title, question.text, found[0], question.feedback))
        return section
    section.append(stem_item(f"{question.ident}-stem", question.title, question.text))
    for n, answer in enumerate(found, 1):
        label = answer.blank.label if answer.blank is not None else answer.question.text
        section.append(qti_item(f"{question.ident}-p{n}", f"{question.title}: {label}", label, answer,
                                question.feedback if n == len(found) else ""))
    return section


def _fix_continue(tree: ET.Element) -> None:
    # `continue` is a Python keyword, so it is passed as continue_ and renamed here
    for element in tree.iter():
        if "continue_" in element.attrib:
            element.set("continue", element.attrib.pop("continue_"))


def _xml(root: ET.Element) -> bytes:
    _fix_continue(root)
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True)


def variant_ident(quiz: Quiz, n: int) -> str:
    return quiz.ident if quiz.variants == 1 else f"{quiz.ident}-v{n}"


def variant_title(quiz: Quiz, n: int) -> str:
    return quiz.title if quiz.variants == 1 else f"{quiz.title} (variant {n} of {quiz.variants})"


def assessment_xml(quiz: Quiz, n: int) -> bytes:
    root = ET.Element("questestinterop", {"xmlns": QTI_NS, f"{{{XSI_NS}}}schemaLocation":
                                          f"{QTI_NS} http://www.imsglobal.org/xsd/ims_qtiasiv1p2p1.xsd"})
    assessment = sub_element(root, "assessment", ident=variant_ident(quiz, n), title=variant_title(quiz, n))
    meta = sub_element(assessment, "qtimetadata")
    field = sub_element(meta, "qtimetadatafield")
    sub_element(field, "fieldlabel", "cc_maxattempts")
    sub_element(field, "fieldentry", "1")
    root_section = sub_element(assessment, "section", ident="root_section")
    for group in quiz.groups:
        root_section.append(problem_section(group, question_of_variant(group, n)))
    return _xml(root)


def assessment_meta_xml(quiz: Quiz, n: int) -> bytes:
    root = ET.Element("quiz", {"identifier": variant_ident(quiz, n), "xmlns": CANVAS_NS})
    sub_element(root, "title", variant_title(quiz, n))
    sub_element(root, "description", f"Exported by qkv: variant {n} of {quiz.variants}; assign each variant's quiz "
                                     "to its own section or group of students.")
    sub_element(root, "shuffle_answers", "true")
    sub_element(root, "quiz_type", "assignment")
    sub_element(root, "points_possible", f"{sum(g.points for g in quiz.groups):g}")
    sub_element(root, "allowed_attempts", "1")
    return _xml(root)


def manifest_xml(quiz: Quiz) -> bytes:
    root = ET.Element("manifest", {"identifier": f"{quiz.ident}-manifest", "xmlns": CP_NS})
    metadata = sub_element(root, "metadata")
    sub_element(metadata, "schema", "IMS Content")
    sub_element(metadata, "schemaversion", "1.1.3")
    sub_element(root, "organizations")
    resources = sub_element(root, "resources")
    for n in range(1, quiz.variants + 1):
        ident = variant_ident(quiz, n)
        quiz_resource = sub_element(resources, "resource", identifier=ident, type="imsqti_xmlv1p2")
        sub_element(quiz_resource, "file", href=f"{ident}/{ident}.xml")
        sub_element(quiz_resource, "dependency", identifierref=f"{ident}-meta")
        meta_resource = sub_element(resources, "resource", identifier=f"{ident}-meta",
                                    type="associatedcontent/imscc_xmlv1p1/learning-application-resource",
                                    href=f"{ident}/assessment_meta.xml")
        sub_element(meta_resource, "file", href=f"{ident}/assessment_meta.xml")
    return _xml(root)


def qti_zip(quiz: Quiz) -> bytes:
    files = {"imsmanifest.xml": manifest_xml(quiz)}
    for n in range(1, quiz.variants + 1):
        ident = variant_ident(quiz, n)
        files[f"{ident}/{ident}.xml"] = assessment_xml(quiz, n)
        files[f"{ident}/assessment_meta.xml"] = assessment_meta_xml(quiz, n)
    return zip_bytes(files)


def qti_summary(quiz: Quiz) -> str:
    """What the zip holds, in Canvas's terms: its quizzes, which are not the quiz's groups."""
    items = sum(len(answerables(question_of_variant(g, 1))) for g in quiz.groups)
    each = f"{len(quiz.groups)} problems as {items} graded questions, {sum(g.points for g in quiz.groups):g} points"
    if quiz.variants == 1:
        return f"1 quiz, \"{variant_title(quiz, 1)}\": {each}"
    return (f"{quiz.variants} quizzes, one per variant (\"{variant_title(quiz, 1)}\" to variant {quiz.variants}), "
            f"each {each}; import the zip once, then assign each quiz to its own section or group of students")
