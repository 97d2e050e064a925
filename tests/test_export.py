"""`qkv export`: Canvas QTI, Moodle XML and GIFT parsed back and checked: every question has a right answer, numeric
tolerances are those of the bank, and each parameterised problem's variants share one group so each student draws one.

No schema for these formats ships in a Python package, so the structure Canvas and
Moodle read is checked with xml.etree, and GIFT with a small reader below.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest

from conftest import said
from click.testing import CliRunner

from autograder.kinds import NumericProblem
from autograder.cli import main
from autograder.errors import QkvError
from autograder.exam.lms import export
from autograder.bank.variants import distinct_variants
from autograder.exam.markup import lms_html

VARIANTS = 4
QTI = "{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}"
CP = "{http://www.imsglobal.org/xsd/imsccv1p1/imscp_v1p1}"


@pytest.fixture(scope="module")
def exports(bank):
    return {fmt: export("exam-prep", fmt, VARIANTS, bank=bank) for fmt in ("qti", "moodle", "gift")}


def bank_window(problem: NumericProblem, value: float, part_index: int) -> float:
    tolerance = problem.parts[part_index].tolerance
    return tolerance.abs + tolerance.rel * abs(value)


def numeric_truth(bank, problem_id: str, seed: int) -> list[np.ndarray]:
    """Every variant's answers as one flat vector, in part order."""
    problem = bank.get(problem_id)
    return [np.concatenate([np.ravel(v.answers[p.name]) for p in problem.parts])
            for v in distinct_variants(problem, seed, VARIANTS)]


def part_of_entry(problem: NumericProblem, seed: int) -> list[int]:
    variant = distinct_variants(problem, seed, 1)[0]
    return [i for i, p in enumerate(problem.parts) for _ in range(np.size(variant.answers[p.name]))]


# ----------------------------------------------------------------------- QTI


def qti_assessment(data: bytes) -> tuple[ET.Element, zipfile.ZipFile]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    manifest = ET.fromstring(archive.read("imsmanifest.xml"))
    files = [f.get("href") for f in manifest.iter(f"{CP}file")]
    assert files and all(name in archive.namelist() for name in files)
    qti_resources = [r for r in manifest.iter(f"{CP}resource") if r.get("type") == "imsqti_xmlv1p2"]
    assert len(qti_resources) == 1
    return ET.fromstring(archive.read(qti_resources[0].find(f"{CP}file").get("href"))), archive


def qti_field(item: ET.Element, label: str) -> str:
    for field in item.iter(f"{QTI}qtimetadatafield"):
        if field.findtext(f"{QTI}fieldlabel") == label:
            return field.findtext(f"{QTI}fieldentry")
    raise AssertionError(f"{item.get('ident')}: no {label}")


def test_qti_every_item_has_a_right_answer_and_variants_are_grouped(bank, exports):
    root, archive = qti_assessment(exports["qti"].data)
    assert root.tag == f"{QTI}questestinterop" and "exam-prep/assessment_meta.xml" in archive.namelist()
    sections = root.find(f"{QTI}assessment").find(f"{QTI}section").findall(f"{QTI}section")
    assert len(sections) == len(exports["qti"].quiz.groups)
    seed = 2026  # the assignment's seed
    numeric_checked = 0
    for section in sections:
        items = section.findall(f"{QTI}item")
        assert section.findtext(f"{QTI}selection_ordering/{QTI}selection/{QTI}selection_number") == "1"
        per_item = float(section.findtext(f".//{QTI}points_per_item"))
        assert per_item > 0 and all(float(qti_field(i, "points_possible")) == per_item for i in items)
        texts = [i.findtext(f"{QTI}presentation/{QTI}material/{QTI}mattext") for i in items]
        assert len(set(texts)) == len(texts), f"{section.get('ident')}: variants repeat"
        for item in items:
            kind = qti_field(item, "question_type")
            scoring = [r for r in item.iter(f"{QTI}respcondition") if r.findtext(f"{QTI}setvar") == "100"]
            assert len(scoring) == 1, item.get("ident")
            condition = scoring[0].find(f"{QTI}conditionvar")
            if kind in ("multiple_choice_question", "true_false_question"):
                labels = [l.get("ident") for l in item.iter(f"{QTI}response_label")]
                assert [v.text for v in condition.iter(f"{QTI}varequal")][0] in labels
                assert len(labels) == (2 if kind == "true_false_question" else len(labels)) >= 2
            elif kind == "short_answer_question":
                assert len(list(condition.iter(f"{QTI}varequal"))) >= 4
            else:
                assert kind == "numerical_question"
                value = float(condition.findtext(f".//{QTI}varequal"))
                low, high = float(condition.findtext(f".//{QTI}vargte")), float(condition.findtext(f".//{QTI}varlte"))
                problem_id, entry = re.fullmatch(r"(.+)-e(\d+)", section.get("ident")).groups()
                problem = bank.get(problem_id)
                variant = int(re.search(r"-v(\d+)$", item.get("ident")).group(1))
                truth = numeric_truth(bank, problem_id, seed)[variant - 1][int(entry) - 1]
                window = bank_window(problem, truth, part_of_entry(problem, seed)[int(entry) - 1])
                assert value == pytest.approx(truth, rel=1e-9, abs=1e-12)
                assert high - value == pytest.approx(window, rel=1e-3) and value - low == pytest.approx(window, rel=1e-3)
                numeric_checked += 1
    assert numeric_checked > 100


def test_qti_groups_hold_the_variants_of_parameterised_problems(exports):
    root, _ = qti_assessment(exports["qti"].data)
    sizes = {s.get("ident"): len(s.findall(f"{QTI}item")) for s in root.iter(f"{QTI}section")
             if s.get("ident") != "root_section"}
    assert sizes["one-query-by-hand-e1"] == VARIANTS and sizes["one-query-by-hand-e12"] == VARIANTS
    assert "one-query-by-hand-e13" not in sizes
    assert sizes["qkv-roles"] == 1 and sizes["causal-mask-shape"] == 1


# -------------------------------------------------------------------- Moodle


def test_moodle_xml_parses_back_with_tolerances_and_categories(bank, exports):
    root = ET.fromstring(exports["moodle"].data)
    assert root.tag == "quiz"
    category, per_category, seed = None, {}, 2026
    for question in root.findall("question"):
        kind = question.get("type")
        if kind == "category":
            category = question.findtext("category/text")
            assert category.startswith("$course$/top/qkv/exam-prep/")
            per_category[category] = []
            continue
        assert category is not None, "a question before any category"
        per_category[category].append(question)
        assert float(question.findtext("defaultgrade")) > 0 and question.findtext("questiontext/text")
        answers = question.findall("answer")
        if kind in ("multichoice", "truefalse"):
            assert [a.get("fraction") for a in answers].count("100") == 1
        elif kind == "shortanswer":
            assert answers and all(a.get("fraction") == "100" for a in answers)
        elif kind == "numerical":
            assert len(answers) == 1 and float(answers[0].findtext("tolerance")) >= 0
        else:
            assert kind == "multianswer", kind
            problem = bank.get(category.rsplit("/", 1)[1])
            blanks = re.findall(r"\{(\d+):NUMERICAL:=([^:}]+):([^}]+)\}", question.findtext("questiontext/text"))
            variant = int(re.search(r"-v(\d+)$", question.findtext("idnumber")).group(1))
            truth = numeric_truth(bank, problem.id, seed)[variant - 1]
            parts = part_of_entry(problem, seed)
            assert len(blanks) == len(truth) == len(parts)
            for (weight, value, tolerance), want, part in zip(blanks, truth, parts):
                assert float(value) == pytest.approx(want, rel=1e-9, abs=1e-12)
                assert float(tolerance) == pytest.approx(bank_window(problem, want, part), rel=1e-3)
            # each part weighs the same, as the grader splits a problem's points
            weights = [sum(int(w) for (w, _, _), p in zip(blanks, parts) if p == i) for i in set(parts)]
            assert len(set(weights)) == 1
    parameterised = [p.id for p in bank.by_kind("numeric") if p.parameters]
    for category, questions in per_category.items():
        problem_id = category.rsplit("/", 1)[1]
        expected = VARIANTS if problem_id in parameterised else 1
        assert len(questions) == expected, category
        assert len({q.findtext("questiontext/text") for q in questions}) == expected


def test_moodle_single_number_is_a_numerical_question_with_its_tolerance():
    from autograder.exam.lms.moodle import moodle_question
    from autograder.kinds.items import NumericBlank, Question

    question = Question("q-v1", "One number", "numerical", "What is $1/3$?", 2, "It is $0.3333$.",
                        (NumericBlank("value", 1 / 3, 5e-4, "0.3333"),))
    element = moodle_question(question)
    assert element.get("type") == "numerical" and element.findtext("defaultgrade") == "2"
    assert float(element.findtext("answer/text")) == pytest.approx(1 / 3)
    assert element.findtext("answer/tolerance") == "0.0005" and element.find("answer").get("fraction") == "100"
    assert "\\(1/3\\)" in element.findtext("questiontext/text")


# ---------------------------------------------------------------------- GIFT


_UNESCAPE = {"\\\\": "\\", "\\~": "~", "\\=": "=", "\\#": "#", "\\{": "{", "\\}": "}", "\\:": ":", "\\n": "\n"}


def unescape(text: str) -> str:
    return re.sub(r"\\[\\~=#{}:n]", lambda m: _UNESCAPE[m.group(0)], text)


def read_gift(text: str) -> list[dict]:
    """A small GIFT reader: categories, titles, [html] text and the answer block (the last unescaped {...})."""
    questions, category = [], None
    for block in text.split("\n\n"):
        block = "\n".join(line for line in block.splitlines() if not line.startswith("//")).strip()
        if not block:
            continue
        if block.startswith("$CATEGORY:"):
            category = block.split(":", 1)[1].strip()
            continue
        assert "\n" not in block, "a question spans lines"
        match = re.fullmatch(r"::((?:[^:\\]|\\.)*)::\[html\]((?:[^{\\]|\\.)*)\{((?:[^}\\]|\\.)*)\}", block)
        assert match, block[:200]
        title, body, answer = match.groups()
        answer, _, feedback = answer.partition("####")
        questions.append({"category": category, "title": unescape(title), "text": unescape(body),
                          "answer": answer, "feedback": unescape(feedback)})
    return questions


def test_gift_parses_back(bank, exports):
    questions = read_gift(exports["gift"].data.decode())
    quiz = exports["gift"].quiz
    assert len(questions) == sum(len(g.questions) for g in quiz.groups)
    flat = [q for g in quiz.groups for q in g.questions]
    for read, made in zip(questions, flat):
        assert read["text"] == lms_html(made.text) and read["title"] == made.title
        assert read["feedback"] == lms_html(made.feedback)
        answer = read["answer"]
        if made.kind == "numerical":
            value, tolerance = map(float, re.fullmatch(r"#([-\d.e+]+):([-\d.e+]+)", answer).groups())
            assert value == pytest.approx(made.blanks[0].value) and tolerance == made.blanks[0].tolerance
        elif made.kind == "truefalse":
            assert answer == ("TRUE" if made.truth else "FALSE")
        elif made.kind == "multichoice":
            marks = re.findall(r"(?<!\\)[=~]", answer)
            assert marks.count("=") == 1 and len(marks) == len(made.choices)
        else:
            assert made.kind == "shortanswer" and answer.startswith("=")
    categories = {q["category"] for q in questions}
    assert "$course$/top/qkv/exam-prep/one-query-by-hand-e1" in categories
    assert sum(q["category"].endswith("/one-query-by-hand-e1") for q in questions) == VARIANTS


def test_gift_escapes_what_would_break_it():
    from autograder.exam.lms.gift import escape

    tricky = "a: {b} = c ~ d # e \\sqrt{x}\nnext"
    assert "\n" not in escape(tricky) and unescape(escape(tricky)) == tricky


# ------------------------------------------------------------------- command


def test_same_arguments_same_bytes_and_different_seeds_differ(bank, exports):
    assert export("exam-prep", "qti", VARIANTS, bank=bank).data == exports["qti"].data
    assert export("exam-prep", "gift", VARIANTS, seed=1, bank=bank).data != exports["gift"].data


def test_topic_export_and_errors(bank, tmp_path):
    code = sum(p.kind == "implement" for p in bank.problems.values() if p.topic.split("/")[0] == "masking")
    runner = CliRunner()
    out = tmp_path / "masking.gift"
    result = runner.invoke(main, ["export", "topic:masking", "--format", "gift", "--variants", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert code and f"left out {code} code problem" in result.output and out.read_text().startswith("// qkv export")
    for args in (["export", "no-such", "--format", "gift"], ["export", "topic:nope", "--format", "qti"]):
        result = runner.invoke(main, args)
        assert result.exit_code == 1 and len(said(result.output)) == 1, result.output


def test_a_topic_of_code_problems_only_is_refused(bank):
    by_topic: dict[str, set[str]] = {}
    for problem in bank.problems.values():
        by_topic.setdefault(problem.topic, set()).add(problem.kind)
    code_only = sorted(t for t, kinds in by_topic.items() if kinds == {"implement"})
    assert code_only, "the bank should have a topic of code problems only"
    with pytest.raises(QkvError, match="only code problems"):
        export(f"topic:{code_only[0]}", "moodle", bank=bank)
