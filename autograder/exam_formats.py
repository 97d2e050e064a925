"""What the exam side writes, two registries: the learning platforms' question-bank files of `qkv export`
(`QUIZ_FORMATS`) and the papers of `qkv exam` (`PAPER_FORMATS`), each entry its `--format` name, its file's ending
and its writer. Here, not in exam/lms/ (whose package
imports the bank), and each writer importing its module when it runs: the command line reads the names before any
command runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from autograder.exam.lms.quiz import Quiz
    from autograder.exam.paper import Paper


def _qti(quiz: Quiz) -> tuple[bytes, str | None]:
    from autograder.exam.lms.qti import qti_summary, qti_zip

    return qti_zip(quiz), qti_summary(quiz)


def _moodle(quiz: Quiz) -> tuple[bytes, str | None]:
    from autograder.exam.lms.moodle import moodle_xml

    return moodle_xml(quiz), None


def _gift(quiz: Quiz) -> tuple[bytes, str | None]:
    from autograder.exam.lms.gift import gift_text

    return gift_text(quiz).encode(), None


@dataclass(frozen=True)
class QuizFormat:
    """A learning platform's question-bank file: its `--format` name, the file's ending, and its writer (the
    bytes, and a summary of what went in when the format says more than the counts)."""

    name: str
    label: str
    suffix: str
    write: Callable[[Quiz], tuple[bytes, str | None]]


# The registry of quiz exports: `qkv export --format` and `export` read it; a platform is added here alone.
QUIZ_FORMATS: dict[str, QuizFormat] = {f.name: f for f in (
    QuizFormat("qti", "Canvas quiz zip (QTI 1.2)", ".zip", _qti),
    QuizFormat("moodle", "Moodle XML", ".xml", _moodle),
    QuizFormat("gift", "Moodle GIFT text", ".gift.txt", _gift))}


def _markdown(papers: dict[str, Paper]) -> dict[str, bytes]:
    from autograder.exam.paper import paper_markdown

    return {name: paper_markdown(paper).encode() for name, paper in papers.items()}


def _pages(papers: dict[str, Paper], fmt: str) -> dict[str, str]:
    from autograder.exam.katex import load_katex
    from autograder.exam.paper import paper_html

    katex = load_katex(f"--format {fmt}")
    return {name: paper_html(paper, katex) for name, paper in papers.items()}


def _html(papers: dict[str, Paper]) -> dict[str, bytes]:
    return {name: page.encode() for name, page in _pages(papers, "html").items()}


def _pdf(papers: dict[str, Paper]) -> dict[str, bytes]:
    from autograder.exam.pdf import print_pdf

    return {name: print_pdf(page) for name, page in _pages(papers, "pdf").items()}


@dataclass(frozen=True)
class PaperFormat:
    """An exam and its key as files: the `--format` name, the files' ending, and the writer ({paper name: bytes})."""

    name: str
    suffix: str
    write: Callable[[dict[str, Paper]], dict[str, bytes]]


# The registry of exam papers: `qkv exam --format` and exam.exam_files read it.
PAPER_FORMATS: dict[str, PaperFormat] = {f.name: f for f in (
    PaperFormat("md", ".md", _markdown), PaperFormat("html", ".html", _html), PaperFormat("pdf", ".pdf", _pdf))}
