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
from autograder.exam.lms.quiz import Question, QuestionGroup, Quiz
from autograder.exam.markup import lms_html

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


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, attrs)
    if text is not None:
        element.text = text
    return element


def _number(x: float) -> str:
    return f"{float(x):.10g}"


def _material(parent: ET.Element, markdown: str) -> None:
    _sub(_sub(parent, "material"), "mattext", lms_html(markdown), texttype="text/html")


def _metadata(item: ET.Element, fields: dict[str, str]) -> None:
    meta = _sub(_sub(item, "itemmetadata"), "qtimetadata")
    for label, entry in fields.items():
        field = _sub(meta, "qtimetadatafield")
        _sub(field, "fieldlabel", label)
        _sub(field, "fieldentry", entry)


def _score(resprocessing: ET.Element, condition: ET.Element) -> None:
    rule = _sub(resprocessing, "respcondition", continue_="No")
    rule.append(condition)
    _sub(rule, "setvar", "100", action="Set", varname="SCORE")


def _feedback(item: ET.Element, ident: str, markdown: str) -> None:
    feedback = _sub(item, "itemfeedback", ident=ident)
    _material(_sub(feedback, "flow_mat"), markdown)


def qti_item(question: Question) -> ET.Element:
    item = ET.Element("item", ident=question.ident, title=question.title)
    answers = {"multichoice": len(question.choices), "truefalse": 2}.get(question.kind, 1)
    answer_ids = [f"{question.ident}-a{i + 1}" for i in range(answers)]
    _metadata(item, {"question_type": QUESTION_TYPES[question.kind], "points_possible": f"{question.points:g}",
                     "original_answer_ids": ",".join(answer_ids), "assessment_question_identifierref": f"{question.ident}-q"})
    presentation = _sub(item, "presentation")
    _material(presentation, question.text)
    processing = ET.Element("resprocessing")
    outcomes = _sub(processing, "outcomes")
    _sub(outcomes, "decvar", maxvalue="100", minvalue="0", varname="SCORE", vartype="Decimal")
    general = _sub(processing, "respcondition", continue_="Yes")
    _sub(_sub(general, "conditionvar"), "other")
    _sub(general, "displayfeedback", feedbacktype="Response", linkrefid="general_fb")
    if question.kind in ("multichoice", "truefalse"):
        response = _sub(presentation, "response_lid", ident="response1", rcardinality="Single")
        choices = _sub(response, "render_choice")
        options = ([(c.text, c.correct, c.feedback) for c in question.choices] if question.kind == "multichoice"
                   else [("True", question.truth is True, ""), ("False", question.truth is False, "")])
        for answer_id, (text, correct, feedback) in zip(answer_ids, options):
            _material(_sub(choices, "response_label", ident=answer_id), text)
            if feedback:
                rule = _sub(processing, "respcondition", continue_="Yes")
                _sub(_sub(rule, "conditionvar"), "varequal", answer_id, respident="response1")
                _sub(rule, "displayfeedback", feedbacktype="Response", linkrefid=f"{answer_id}_fb")
        right = next(a for a, (_, correct, _) in zip(answer_ids, options) if correct)
        condition = ET.Element("conditionvar")
        _sub(condition, "varequal", right, respident="response1")
        _score(processing, condition)
        feedbacks = [(a, f) for a, (_, _, f) in zip(answer_ids, options) if f]
    else:
        response = _sub(presentation, "response_str", ident="response1", rcardinality="Single")
        fib = _sub(response, "render_fib", fibtype="Decimal" if question.kind == "numerical" else "String")
        _sub(fib, "response_label", ident=answer_ids[0])
        condition = ET.Element("conditionvar")
        if question.kind == "numerical":
            blank = question.blanks[0]
            either = _sub(condition, "or")
            _sub(either, "varequal", _number(blank.value), respident="response1")
            window = _sub(either, "and")
            _sub(window, "vargte", _number(blank.value - blank.tolerance), respident="response1")
            _sub(window, "varlte", _number(blank.value + blank.tolerance), respident="response1")
        else:
            for text in question.accepted:
                _sub(condition, "varequal", text, respident="response1")
        _score(processing, condition)
        feedbacks = []
    item.append(processing)
    _feedback(item, "general_fb", question.feedback)
    for answer_id, feedback in feedbacks:
        _feedback(item, f"{answer_id}_fb", feedback)
    return item


def group_section(group: QuestionGroup) -> ET.Element:
    section = ET.Element("section", ident=group.ident, title=group.title)
    selection = _sub(_sub(section, "selection_ordering"), "selection")
    _sub(selection, "selection_number", "1")
    _sub(_sub(selection, "selection_extension"), "points_per_item", f"{group.points:g}")
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
    assessment = _sub(root, "assessment", ident=quiz.ident, title=quiz.title)
    meta = _sub(assessment, "qtimetadata")
    field = _sub(meta, "qtimetadatafield")
    _sub(field, "fieldlabel", "cc_maxattempts")
    _sub(field, "fieldentry", "1")
    root_section = _sub(assessment, "section", ident="root_section")
    for group in quiz.groups:
        root_section.append(group_section(group))
    return _xml(root)


def assessment_meta_xml(quiz: Quiz) -> bytes:
    root = ET.Element("quiz", {"identifier": quiz.ident, "xmlns": CANVAS_NS})
    _sub(root, "title", quiz.title)
    _sub(root, "description", "Exported by qkv: each question group gives every student one variant.")
    _sub(root, "shuffle_answers", "false")
    _sub(root, "quiz_type", "assignment")
    _sub(root, "points_possible", f"{sum(g.points for g in quiz.groups):g}")
    _sub(root, "allowed_attempts", "1")
    return _xml(root)


def manifest_xml(quiz: Quiz) -> bytes:
    root = ET.Element("manifest", {"identifier": f"{quiz.ident}-manifest", "xmlns": CP_NS})
    metadata = _sub(root, "metadata")
    _sub(metadata, "schema", "IMS Content")
    _sub(metadata, "schemaversion", "1.1.3")
    _sub(root, "organizations")
    resources = _sub(root, "resources")
    quiz_resource = _sub(resources, "resource", identifier=quiz.ident, type="imsqti_xmlv1p2")
    _sub(quiz_resource, "file", href=f"{quiz.ident}/{quiz.ident}.xml")
    _sub(quiz_resource, "dependency", identifierref=f"{quiz.ident}-meta")
    meta_resource = _sub(resources, "resource", identifier=f"{quiz.ident}-meta",
                         type="associatedcontent/imscc_xmlv1p1/learning-application-resource",
                         href=f"{quiz.ident}/assessment_meta.xml")
    _sub(meta_resource, "file", href=f"{quiz.ident}/assessment_meta.xml")
    return _xml(root)


def qti_zip(quiz: Quiz) -> bytes:
    return zip_bytes({
        "imsmanifest.xml": manifest_xml(quiz),
        f"{quiz.ident}/{quiz.ident}.xml": assessment_xml(quiz),
        f"{quiz.ident}/assessment_meta.xml": assessment_meta_xml(quiz),
    })
