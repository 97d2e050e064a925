"""Exam and answer-key documents: a drawn `Exam` in; a `Paper` (title, problems as Markdown, answer blanks) and its
Markdown or self-contained HTML text out.

The exam and its key are built from the same items and variants, so the key
always answers the numbers the student was given. HTML inlines KaTeX (script,
style and fonts), so a page is one file that renders its formulas offline.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from autograder.exam.katex import KatexAssets
from autograder.exam.markup import literal_asterisks, page_html
from autograder.exam.select import Exam, ExamItem
from autograder.kinds import kind_of
from autograder.kinds.items import Blank, ProblemKey
from autograder.page_style import page_style

# the paper's one rule for numbers: each blank says its decimals (those its key shows), and a fraction or,
# for a count, arithmetic is read as the number it is, by the grader's own answer reader
INSTRUCTIONS = (
    "Give each number to the decimals its blank asks for; an answer within the stated tolerance earns the marks, "
    "and an exact fraction such as 2/3 counts as the number it is. Counts may be written as arithmetic "
    "(4*512^2 + 4*512). Write vectors as (a, b, c), matrices row by row as [1 2; 3 4] and shapes as (n, d_v)."
)


@dataclass(frozen=True)
class PaperItem:
    number: int
    title: str
    meta: str
    body: str  # Markdown with LaTeX
    blanks: tuple[Blank, ...] = ()
    work_lines: int = 0  # room to work it out, in lines, between the question and the blanks


@dataclass(frozen=True)
class Paper:
    title: str
    version: str
    intro: str
    items: tuple[PaperItem, ...]


def version_line(exam: Exam) -> str:
    spec = exam.spec
    parts = [f"seed {spec.seed}"] + ([f"student {spec.student}"] if spec.student else [])
    parts += [f"{len(exam.items)} problems", f"{exam.points:g} points",
              "topics: " + (", ".join(spec.topics) if spec.topics else "all")]
    return " · ".join(parts)


def _points(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def item_meta(item: ExamItem) -> str:
    problem = item.problem
    return f"{problem.topic} · difficulty {'●' * problem.difficulty}{'○' * (3 - problem.difficulty)} · {_points(problem.points)}"


def question(item: ExamItem) -> tuple[str, tuple[Blank, ...]]:
    """What the student reads for one item, and the blanks they fill in."""
    return kind_of(item.problem).paper_question(item.problem, item.variant)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def key_markdown(key: ProblemKey) -> str:
    lines = "\n".join(f"- **{_one_line(line.label)}:** {_one_line(line.answer)}"
                       + (f" *({line.accepted})*" if line.accepted else "") for line in key.lines)
    parts = [lines, f"**Worked solution.** {key.solution.strip()}"]
    if key.mistakes:
        parts.append("**Common mistakes.**\n\n" + "\n".join(f"- {_one_line(m.answer)}: {_one_line(m.message)}"
                                                             for m in key.mistakes))
    return "\n\n".join(parts)


def exam_paper(exam: Exam) -> Paper:
    items = []
    for item in exam.items:
        body, blanks = question(item)
        items.append(PaperItem(item.number, item.problem.title, item_meta(item), body, blanks,
                               kind_of(item.problem).work_lines(item.problem)))
    return Paper("Practice exam: Transformer fundamentals", version_line(exam), INSTRUCTIONS, tuple(items))


def key_paper(exam: Exam) -> Paper:
    items = tuple(PaperItem(item.number, item.problem.title, f"{item_meta(item)} · `{item.problem.id}`",
                            key_markdown(kind_of(item.problem).key(item.problem, item.variant)))
                  for item in exam.items)
    intro = ("For instructors. Every number below was computed from the parameters printed in the exam of the "
             "same version; the tolerances are those the grader and `qkv practice` accept.")
    return Paper("Answer key: Transformer fundamentals", version_line(exam), intro, items)


_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("autograder.exam", "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=lambda name: name is not None and name.endswith(".html.j2"),
)
_TEMPLATES.filters["page_html"] = page_html
_TEMPLATES.globals["page_style"] = page_style()
_TEMPLATES.filters["markdown"] = literal_asterisks


def paper_markdown(paper: Paper) -> str:
    return _TEMPLATES.get_template("paper.md.j2").render(paper=paper)


def paper_html(paper: Paper, katex: KatexAssets) -> str:
    return _TEMPLATES.get_template("paper.html.j2").render(paper=paper, katex=katex)
