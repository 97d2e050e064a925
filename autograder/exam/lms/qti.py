"""Canvas quiz import: a `Quiz` in; a QTI 1.2 zip (imsmanifest.xml, the assessment, Canvas's assessment_meta.xml)
as bytes out.

Written with xml.etree in the dialect Canvas exports and imports: one section
per question group with `selection_number` 1, so each student draws one variant;
numeric answers as an exact value or a [low, high] range; formulas as `\\(...\\)`,
which Canvas renders with MathJax.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from autograder.archive import zip_bytes
from autograder.exam.lms.quiz import Quiz, number_text
from autograder.exam.lms.xml_elements import sub_element
from autograder.exam.markup import lms_html
from autograder.kinds.items import Question, QuestionGroup

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


def qti_item(question: Question) -> ET.Element:
    item = ET.Element("item", ident=question.ident, title=question.title)
    answers = {"multichoice": len(question.choices), "truefalse": 2}.get(question.kind, 1)
    answer_ids = [f"{question.ident}-a{i + 1}" for i in range(answers)]
    _metadata(item, {"question_type": QUESTION_TYPES[question.kind], "points_possible": f"{question.points:g}",
                     "original_answer_ids": ",".join(answer_ids), "assessment_question_identifierref": f"{question.ident}-q"})
    presentation = sub_element(item, "presentation")
    _material(presentation, question.text)
    processing = ET.Element("resprocessing")
    outcomes = sub_element(processing, "outcomes")
    sub_element(outcomes, "decvar", maxvalue="100", minvalue="0", varname="SCORE", vartype="Decimal")
    general = sub_element(processing, "respcondition", continue_="Yes")
    sub_element(sub_element(general, "conditionvar"), "other")
    sub_element(general, "displayfeedback", feedbacktype="Response", linkrefid="general_fb")
    if question.kind in ("multichoice", "truefalse"):
        response = sub_element(presentation, "response_lid", ident="response1", rcardinality="Single")
        choices = sub_element(response, "render_choice")
        options = ([(c.text, c.correct, c.feedback) for c in question.choices] if question.kind == "multichoice"
                   else [("True", question.truth is True, ""), ("False", question.truth is False, "")])
        for answer_id, (text, correct, feedback) in zip(answer_ids, options):
            _material(sub_element(choices, "response_label", ident=answer_id), text)
            if feedback:
                rule = sub_element(processing, "respcondition", continue_="Yes")
                sub_element(sub_element(rule, "conditionvar"), "varequal", answer_id, respident="response1")
                sub_element(rule, "displayfeedback", feedbacktype="Response", linkrefid=f"{answer_id}_fb")
        right = next(a for a, (_, correct, _) in zip(answer_ids, options) if correct)
        condition = ET.Element("conditionvar")
        sub_element(condition, "varequal", right, respident="response1")
        _score(processing, condition)
        feedbacks = [(a, f) for a, (_, _, f) in zip(answer_ids, options) if f]
    else:
        response = sub_element(presentation, "response_str", ident="response1", rcardinality="Single")
        fib = sub_element(response, "render_fib", fibtype="Decimal" if question.kind == "numerical" else "String")
        sub_element(fib, "response_label", ident=answer_ids[0])
        condition = ET.Element("conditionvar")
        if question.kind == "numerical":
            blank = question.blanks[0]
            either = sub_element(condition, "or")
            sub_element(either, "varequal", number_text(blank.value), respident="response1")
            window = sub_element(either, "and")
            sub_element(window, "vargte", number_text(blank.value - blank.tolerance), respident="response1")
            sub_element(window, "varlte", number_text(blank.value + blank.tolerance), respident="response1")
        else:
            for text in question.accepted:
                sub_element(condition, "varequal", text, respident="response1")
        _score(processing, condition)
        feedbacks = []
    item.append(processing)
    _feedback(item, "general_fb", question.feedback)
    for answer_id, feedback in feedbacks:
        _feedback(item, f"{answer_id}_fb", feedback)
    return item


def group_section(group: QuestionGroup) -> ET.Element:
    section = ET.Element("section", ident=group.ident, title=group.title)
    selection = sub_element(sub_element(section, "selection_ordering"), "selection")
    sub_element(selection, "selection_number", "1")
    sub_element(sub_element(selection, "selection_extension"), "points_per_item", f"{group.points:g}")
    for question in group.questions:
        section.append(qti_item(question))
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


def assessment_xml(quiz: Quiz) -> bytes:
    root = ET.Element("questestinterop", {"xmlns": QTI_NS, f"{{{XSI_NS}}}schemaLocation":
                                          f"{QTI_NS} http://www.imsglobal.org/xsd/ims_qtiasiv1p2p1.xsd"})
    assessment = sub_element(root, "assessment", ident=quiz.ident, title=quiz.title)
    meta = sub_element(assessment, "qtimetadata")
    field = sub_element(meta, "qtimetadatafield")
    sub_element(field, "fieldlabel", "cc_maxattempts")
    sub_element(field, "fieldentry", "1")
    root_section = sub_element(assessment, "section", ident="root_section")
    for group in quiz.groups:
        root_section.append(group_section(group))
    return _xml(root)


def assessment_meta_xml(quiz: Quiz) -> bytes:
    root = ET.Element("quiz", {"identifier": quiz.ident, "xmlns": CANVAS_NS})
    sub_element(root, "title", quiz.title)
    sub_element(root, "description", "Exported by qkv: each question group gives every student one variant.")
    sub_element(root, "shuffle_answers", "false")
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
    quiz_resource = sub_element(resources, "resource", identifier=quiz.ident, type="imsqti_xmlv1p2")
    sub_element(quiz_resource, "file", href=f"{quiz.ident}/{quiz.ident}.xml")
    sub_element(quiz_resource, "dependency", identifierref=f"{quiz.ident}-meta")
    meta_resource = sub_element(resources, "resource", identifier=f"{quiz.ident}-meta",
                         type="associatedcontent/imscc_xmlv1p1/learning-application-resource",
                         href=f"{quiz.ident}/assessment_meta.xml")
    sub_element(meta_resource, "file", href=f"{quiz.ident}/assessment_meta.xml")
    return _xml(root)


def qti_zip(quiz: Quiz) -> bytes:
    return zip_bytes({
        "imsmanifest.xml": manifest_xml(quiz),
        f"{quiz.ident}/{quiz.ident}.xml": assessment_xml(quiz),
        f"{quiz.ident}/assessment_meta.xml": assessment_meta_xml(quiz),
    })
