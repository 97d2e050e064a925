"""`qkv export`: Canvas QTI, Moodle XML and GIFT parsed back and checked: every question has a right answer, numeric
tolerances are those of the bank, and every answer a student gives for one problem comes from one and the same
variant (a quiz that mixed the entries of two draws would grade a student against numbers they were never shown).

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
from autograder.kinds.numeric.variants import distinct_variants
from autograder.exam.markup import lms_html

VARIANTS = 4
SEED = 2026  # the exam-prep assignment's seed
QTI = "{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}"
CP = "{http://www.imsglobal.org/xsd/imsccv1p1/imscp_v1p1}"


@pytest.fixture(scope="module")
def exports(bank):
    return {fmt: export("exam-prep", fmt, VARIANTS, bank=bank) for fmt in ("qti", "moodle", "gift")}


def bank_window(problem: NumericProblem, value: float, part_index: int) -> float:
    tolerance = problem.parts[part_index].tolerance
    return tolerance.abs + tolerance.rel * abs(value)


def numeric_truth(bank, problem_id: str) -> list[np.ndarray]:
    """Every variant's answers as one flat vector, in part order."""
    problem = bank.get(problem_id)
    return [np.concatenate([np.ravel(v.answers[p.name]) for p in problem.parts])
            for v in distinct_variants(problem, SEED, VARIANTS)]


def part_of_entry(problem: NumericProblem) -> list[int]:
    variant = distinct_variants(problem, SEED, 1)[0]
    return [i for i, p in enumerate(problem.parts) for _ in range(np.size(variant.answers[p.name]))]


def one_variant(bank, problem_id: str, values: list[float], claimed: int) -> None:
    """The values a student is asked for are, in order, exactly those of the variant the question claims,
    and of no other: one draw, kept together."""
    truth = numeric_truth(bank, problem_id)
    assert len(values) == len(truth[claimed - 1]), (problem_id, values)
    matching = [n for n, t in enumerate(truth, 1) if np.allclose(values, t, rtol=1e-9, atol=1e-12)]
    assert matching == [claimed] or (claimed in matching and len({tuple(np.round(t, 9)) for t in truth}) < len(truth)), \
        f"{problem_id}: answers {values} are not all of variant {claimed}"


# ----------------------------------------------------------------------- QTI


def qti_assessments(data: bytes) -> list[ET.Element]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    manifest = ET.fromstring(archive.read("imsmanifest.xml"))
    files = [f.get("href") for f in manifest.iter(f"{CP}file")]
    assert files and all(name in archive.namelist() for name in files)
    qti = [r for r in manifest.iter(f"{CP}resource") if r.get("type") == "imsqti_xmlv1p2"]
    for resource in qti:
        meta = archive.read(resource.find(f"{CP}file").get("href").rsplit("/", 1)[0] + "/assessment_meta.xml").decode()
        assert "<shuffle_answers>true</shuffle_answers>" in meta  # Canvas shuffles the choices itself too
    return [ET.fromstring(archive.read(r.find(f"{CP}file").get("href"))) for r in qti]


def qti_field(item: ET.Element, label: str) -> str:
    for field in item.iter(f"{QTI}qtimetadatafield"):
        if field.findtext(f"{QTI}fieldlabel") == label:
            return field.findtext(f"{QTI}fieldentry")
    raise AssertionError(f"{item.get('ident')}: no {label}")


def test_qti_is_one_quiz_per_variant_and_each_problem_takes_its_answers_from_one_draw(bank, exports):
    quizzes = qti_assessments(exports["qti"].data)
    quiz = exports["qti"].quiz
    assert len(quizzes) == quiz.variants == VARIANTS
    titles = [q.find(f"{QTI}assessment").get("title") for q in quizzes]
    assert titles == [f"{quiz.title} (variant {n} of {VARIANTS})" for n in range(1, VARIANTS + 1)]
    numeric_checked, variants_seen = 0, {}
    for n, root in enumerate(quizzes, 1):
        sections = root.find(f"{QTI}assessment").find(f"{QTI}section").findall(f"{QTI}section")
        assert len(sections) == len(quiz.groups)  # every problem once in every quiz
        points = sum(float(qti_field(i, "points_possible")) for s in sections for i in s.findall(f"{QTI}item"))
        assert points == pytest.approx(sum(g.points for g in quiz.groups))
        for section in sections:
            values, problem_id = [], section.get("ident")
            for item in section.findall(f"{QTI}item"):
                kind = qti_field(item, "question_type")
                if kind == "text_only_question":
                    continue
                scoring = [r for r in item.iter(f"{QTI}respcondition") if r.findtext(f"{QTI}setvar") == "100"]
                assert len(scoring) == 1, item.get("ident")
                condition = scoring[0].find(f"{QTI}conditionvar")
                if kind in ("multiple_choice_question", "true_false_question"):
                    labels = [label.get("ident") for label in item.iter(f"{QTI}response_label")]
                    assert [v.text for v in condition.iter(f"{QTI}varequal")][0] in labels
                    assert len(labels) == (2 if kind == "true_false_question" else len(labels)) >= 2
                elif kind == "short_answer_question":
                    assert len(list(condition.iter(f"{QTI}varequal"))) >= 4
                else:
                    assert kind == "numerical_question"
                    value = float(condition.findtext(f".//{QTI}varequal"))
                    low, high = float(condition.findtext(f".//{QTI}vargte")), float(condition.findtext(f".//{QTI}varlte"))
                    assert high - value == pytest.approx(value - low, rel=1e-6)
                    values.append(value)
            match = re.fullmatch(r"(.+)-v(\d+)", problem_id)
            if match and isinstance(bank.get(match.group(1)), NumericProblem):
                pid, claimed = match.group(1), int(match.group(2))
                one_variant(bank, pid, values, claimed)
                variants_seen.setdefault(pid, set()).add(claimed)
                numeric_checked += len(values)
    assert numeric_checked > 200
    # each quiz takes a different variant of a problem that has that many
    assert variants_seen["one-query-by-hand"] == set(range(1, VARIANTS + 1))


def test_qti_tolerances_are_the_banks(bank, exports):
    root = qti_assessments(exports["qti"].data)[0]
    problem = bank.get("one-query-by-hand")
    section = next(s for s in root.iter(f"{QTI}section") if s.get("ident") == "one-query-by-hand-v1")
    items = [i for i in section.findall(f"{QTI}item") if qti_field(i, "question_type") == "numerical_question"]
    truth = numeric_truth(bank, problem.id)[0]
    for item, want, part in zip(items, truth, part_of_entry(problem)):
        high = float(item.findtext(f".//{QTI}varlte"))
        assert high - want == pytest.approx(bank_window(problem, want, part), rel=1e-3)


# -------------------------------------------------------------------- Moodle


def _cloze_blanks(text: str) -> list[tuple[str, str, str]]:
    return re.findall(r"\{(\d+):(NUMERICAL|MULTICHOICE|MULTICHOICE_VS|SHORTANSWER):([^{}]*?(?:\\.[^{}]*?)*)\}", text)


def test_moodle_xml_keeps_each_variant_in_one_cloze_with_tolerances(bank, exports):
    root = ET.fromstring(exports["moodle"].data)
    assert root.tag == "quiz"
    category, per_category, clozes = None, {}, 0
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
        if kind == "multichoice":
            assert [a.get("fraction") for a in answers].count("100") == 1
            assert question.findtext("shuffleanswers") == "1"
        elif kind == "truefalse":
            assert [a.get("fraction") for a in answers].count("100") == 1
        elif kind == "shortanswer":
            assert answers and all(a.get("fraction") == "100" for a in answers)
        elif kind == "numerical":
            assert len(answers) == 1 and float(answers[0].findtext("tolerance")) >= 0
        else:
            assert kind == "multianswer", kind
            clozes += 1
            blanks = _cloze_blanks(question.findtext("questiontext/text"))
            assert blanks
            for _, sub, body in blanks:
                if sub != "NUMERICAL":
                    assert len(re.findall(r"(?<!\\)=", body)) >= 1, body  # a right answer marked
            problem = bank.get(category.rsplit("/", 1)[1])
            if isinstance(problem, NumericProblem):
                numbers = [b for b in blanks if b[1] == "NUMERICAL"]
                variant = int(re.search(r"-v(\d+)$", question.findtext("idnumber")).group(1))
                values = [float(body.split(":")[0].lstrip("=")) for _, _, body in numbers]
                one_variant(bank, problem.id, values, variant)
                parts = part_of_entry(problem)
                truth = numeric_truth(bank, problem.id)[variant - 1]
                for (weight, _, body), want, part in zip(numbers, truth, parts):
                    assert float(body.split(":")[1]) == pytest.approx(bank_window(problem, want, part), rel=1e-3)
                # each part weighs the same, as the grader splits a problem's points
                weights = [sum(int(w) for (w, _, _), p in zip(numbers, parts) if p == i) for i in set(parts)]
                assert len(set(weights)) == 1
    assert clozes > 10
    for category, questions in per_category.items():
        problem = bank.get(category.rsplit("/", 1)[1])
        expected = VARIANTS if isinstance(problem, NumericProblem) and problem.parameters else 1
        assert len(questions) == expected, category
        assert len({q.findtext("questiontext/text") for q in questions}) == expected


def test_moodle_true_false_with_its_follow_up_is_one_cloze(bank, exports):
    root = ET.fromstring(exports["moodle"].data)
    question = next(q for q in root.findall("question") if q.findtext("idnumber") == "head-roles")
    assert question.get("type") == "multianswer"
    (verdict, follow) = _cloze_blanks(question.findtext("questiontext/text"))
    assert verdict[1] == "MULTICHOICE" and verdict[2] == "True~=False"
    assert follow[1] == "MULTICHOICE_VS" and verdict[0] == follow[0]  # half the points each


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


def test_gift_parses_back_and_a_category_holds_one_draw(bank, exports):
    questions = read_gift(exports["gift"].data.decode())
    for read in questions:
        answer = read["answer"]
        if answer.startswith("#"):
            assert re.fullmatch(r"#([-\d.e+]+):([-\d.e+]+)", answer)
        elif answer in ("TRUE", "FALSE"):
            pass
        elif answer.startswith("="):
            pass  # a shape's accepted spellings
        else:
            marks = re.findall(r"(?<!\\)[=~]", answer)
            assert marks.count("=") == 1 and len(marks) >= 2, answer
    by_category: dict[str, list[dict]] = {}
    for read in questions:
        by_category.setdefault(read["category"], []).append(read)
    base = "$course$/top/qkv/exam-prep/"
    # a hand calculation of several answers: one category per variant, its answers that variant's
    for n in range(1, VARIANTS + 1):
        values = [float(re.match(r"#([-\d.e+]+):", q["answer"]).group(1))
                  for q in by_category[f"{base}one-query-by-hand/v{n}"]]
        one_variant(bank, "one-query-by-hand", values, n)
    # a single answer: one category of variants, from which a quiz draws one
    single = [p for p in bank.by_kind("numeric") if sum(np.size(v) for v in
                                                          distinct_variants(p, SEED, 1)[0].answers.values()) == 1]
    for problem in single:
        if f"{base}{problem.id}" in by_category:
            assert len(by_category[f"{base}{problem.id}"]) == len(distinct_variants(problem, SEED, VARIANTS))
    assert len(by_category[f"{base}qkv-roles"]) == 1
    assert all(q["text"] and q["title"] for q in questions)
    first = next(q for q in questions if q["category"] == f"{base}qkv-roles")
    assert first["text"] == lms_html(bank.get("qkv-roles").prompt)


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


@pytest.mark.parametrize("variants", [3, 1])
def test_qti_export_says_what_the_zip_holds_its_quizzes(tmp_path, variants):
    out = tmp_path / "quiz.zip"
    result = CliRunner().invoke(main, ["export", "exam-prep", "--format", "qti", "--variants", str(variants),
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # the terminal wraps long lines
    quizzes = qti_assessments(out.read_bytes())
    first = quizzes[0].find(f"{QTI}assessment")
    sections = first.find(f"{QTI}section").findall(f"{QTI}section")
    graded = [i for s in sections for i in s.findall(f"{QTI}item") if qti_field(i, "question_type") != "text_only_question"]
    points = sum(float(qti_field(i, "points_possible")) for i in graded)
    each = f"{len(sections)} problems as {len(graded)} graded questions, {points:g} points"
    if variants == 1:
        assert len(quizzes) == 1 and f': 1 quiz, "{first.get("title")}": {each}' in text
    else:
        assert len(quizzes) == variants
        assert (f': {variants} quizzes, one per variant ("{first.get("title")}" to variant {variants}), each {each}; '
                "import the zip once, then assign each quiz to its own section or group of students") in text
    assert "question groups" not in text  # the quiz's inner groups are not what Canvas shows
