"""The exam as a student holds it: its own text printed as typed (no Markdown eating the asterisks of arithmetic),
a paper shared among the kinds of problem, and ten problems on full pages with room to work.

The PDF is Chromium's print (`qkv exam --format pdf`), read back with poppler (pdfinfo, pdftotext, pdftoppm); the
page is the exam's HTML opened in Chromium through Playwright. Where chromium or poppler-utils are missing these
tests fail and say so (`make setup` installs them).
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from markdown_it import MarkdownIt
from PIL import Image

from autograder.exam import exam_files, write_exam
from autograder.exam.markup import lms_html, page_html
from autograder.exam.paper import INSTRUCTIONS, exam_paper
from autograder.exam.select import ExamSpec, draw_exam
from autograder.kinds import kind_of
from page_look import WIDTHS, looks_finished

SETUP_HINT = "run `make setup` as root (it installs chromium and poppler-utils)"
ARITHMETIC = "4*512^2 + 4*512"
TEN = ExamSpec(count=10, seed=0)


def poppler(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.fail(f"{tool} is missing: {SETUP_HINT}", pytrace=False)
    return found


@pytest.fixture(scope="module")
def ten_problems_pdf(bank, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("exam-pdf")
    (folder / "exam.pdf").write_bytes(exam_files(draw_exam(bank, TEN), "pdf")["exam.pdf"])
    return folder / "exam.pdf"


# ------------------------------------------------------------ item 9: the text as typed


def test_arithmetic_in_markdown_keeps_its_asterisks():
    assert ARITHMETIC in INSTRUCTIONS
    for render in (page_html, lms_html):
        shown = render(INSTRUCTIONS)
        assert ARITHMETIC in shown and "<em>" not in shown, shown
    text = "the output a*2 + (1-a)*10, n**2, `x*y*z` and $a*b*c$; **bold** and *emphasis* stay"
    shown = page_html(text)
    assert "a*2 + (1-a)*10" in shown and "n**2" in shown and "<code>x*y*z</code>" in shown
    assert '<span class="math">a*b*c</span>' in shown  # TeX is KaTeX's to read, untouched
    assert "<strong>bold</strong>" in shown and "<em>emphasis</em>" in shown


def test_the_markdown_exam_reads_as_typed_in_another_markdown_reader(bank):
    """The .md file rendered by a CommonMark reader of its own (a student's viewer), not by qkv's."""
    exam = draw_exam(bank, TEN)
    markdown = exam_files(exam, "md")["exam.md"].decode()
    shown = MarkdownIt("commonmark").render(markdown)
    assert ARITHMETIC in shown and f"<em>512^2 + 4</em>" not in shown


@pytest.mark.slow
def test_the_html_and_the_pdf_print_the_arithmetic_as_typed(bank, chromium_browser, ten_problems_pdf, tmp_path):
    write_exam(TEN, "html", tmp_path, bank=bank)
    page = chromium_browser.new_page()
    try:
        page.goto((tmp_path / "exam.html").as_uri())
        page.wait_for_selector("body[data-math=rendered]")
        intro = page.inner_text(".intro")
        assert ARITHMETIC in intro and page.locator(".intro em").count() == 0, intro
    finally:
        page.close()
    text = subprocess.run([poppler("pdftotext"), "-layout", str(ten_problems_pdf), "-"], capture_output=True,
                          text=True, check=True, timeout=60).stdout
    assert ARITHMETIC in " ".join(text.split()), text[:600]


# ------------------------------------------------------------ item 10: kinds shared, pages full, room to work


def test_a_draw_shares_the_paper_among_the_kinds(bank):
    """Ten problems of the four written kinds: none more than its share and one (which evens an odd number of
    true/false statements), and mostly all four; the bank holds 37 statements of 94 problems, which drew 6 or 8 of
    10 before."""
    drawn = 0
    for seed in range(20):
        exam = draw_exam(bank, ExamSpec(count=10, seed=seed))
        kinds = Counter(item.problem.kind for item in exam.items)
        assert len(kinds) >= 3 and max(kinds.values()) <= math.ceil(10 / 4) + 1, (seed, kinds)
        drawn += len(kinds) == 4
    assert drawn >= 18
    only_two = draw_exam(bank, ExamSpec(count=8, seed=3, kinds=("true_false", "multiple_choice")))
    assert max(Counter(item.problem.kind for item in only_two.items).values()) <= 5


def test_problems_worked_out_by_hand_leave_room_to_work(bank):
    exam = draw_exam(bank, TEN)
    paper = exam_paper(exam)
    computed = [item for item, drawn in zip(paper.items, exam.items) if kind_of(drawn.problem).own_numbers(drawn.problem)]
    assert computed and all(item.work_lines >= 4 for item in computed), [(i.title, i.work_lines) for i in computed]


@pytest.mark.slow
def test_ten_problems_print_on_few_full_pages(ten_problems_pdf, tmp_path):
    """The layout, looked at: the pages printed, each but the last inked at least 60% of the way down (a problem
    kept whole on its page left most pages half empty: 8 pages, 5 of them inked less than 60% down)."""
    info = subprocess.run([poppler("pdfinfo"), str(ten_problems_pdf)], capture_output=True, text=True, check=True,
                          timeout=60).stdout
    pages = int(next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")))
    assert pages <= 7, f"10 problems on {pages} pages"
    subprocess.run([poppler("pdftoppm"), "-r", "40", "-png", str(ten_problems_pdf), str(tmp_path / "page")],
                   check=True, timeout=120)
    shots = sorted(tmp_path.glob("page-*.png"))
    assert len(shots) == pages
    reach = []
    for shot in shots:
        ink = np.asarray(Image.open(shot).convert("L")) < 160
        rows = np.flatnonzero(ink.any(axis=1))
        reach.append(rows.max() / ink.shape[0] if rows.size else 0.0)
    assert all(r >= 0.6 for r in reach[:-1]), [f"{r:.0%}" for r in reach]


@pytest.mark.slow
def test_the_room_to_work_prints_as_tall_as_it_says(bank, chromium_browser, tmp_path):
    """In print, each problem's room to work is its lines high, and is never cut by a page break."""
    write_exam(TEN, "html", tmp_path, bank=bank)
    paper = exam_paper(draw_exam(bank, TEN))
    page = chromium_browser.new_page()
    try:
        page.emulate_media(media="print")
        page.goto((tmp_path / "exam.html").as_uri())
        page.wait_for_selector("body[data-math=rendered]")
        for item in paper.items:
            work = page.locator(f"#problem-{item.number} .work")
            if not item.work_lines:
                assert work.count() == 0
                continue
            line = page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")
            height = work.bounding_box()["height"]
            assert height >= item.work_lines * line * 1.5, (item.title, height, line)
            assert work.evaluate("e => getComputedStyle(e).breakInside") == "avoid"
    finally:
        page.close()


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_the_html_exam_looks_finished_on_a_laptop_and_a_phone(bank, chromium_browser, axe, width, tmp_path):
    """On screen the paper is in the service's style: nothing wider than the window (its tables and formulas scroll
    in their own box), a navigation bar to its problems, and axe-core clean."""
    write_exam(TEN, "html", tmp_path, bank=bank)
    page = chromium_browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto((tmp_path / "exam.html").as_uri())
        page.wait_for_selector("body[data-math=rendered]")
        looks_finished(page, axe, width, tmp_path / f"exam-{width}.png")
    finally:
        page.close()
