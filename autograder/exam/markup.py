"""Problem text converted for each medium: Markdown with `$...$` / `$$...$$` LaTeX in; HTML for pages (KaTeX's, or
with formulas as readable text), HTML for learning platforms and plain text for terminals out.

Math is cut out before the Markdown parser sees it, because Markdown would eat
the backslashes and underscores of the TeX (`\\`, `d_k`). Code spans are left
alone, so a `$` inside backticks is never taken for math.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

_SEGMENT = re.compile(r"(`+)(?:.+?)\1|\$\$(?P<display>.+?)\$\$|\$(?P<inline>(?:[^$\n]|\n(?!\s*\n))+?)\$", re.S)
_PLACEHOLDER = re.compile("\ue000(\\d+)\ue001")
# raw HTML in problem files is shown as text, never passed through
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


@dataclass(frozen=True)
class Math:
    tex: str
    display: bool


def split_math(text: str) -> tuple[str, list[Math]]:
    """The text with each formula replaced by a placeholder, and the formulas in order."""
    found: list[Math] = []

    def cut(match: re.Match) -> str:
        if match.group("display") is None and match.group("inline") is None:
            return match.group(0)  # a code span
        display = match.group("display") is not None
        found.append(Math((match.group("display") if display else match.group("inline")).strip(), display))
        return f"\ue000{len(found) - 1}\ue001"

    return _SEGMENT.sub(cut, text), found


def _markdown_with(text: str, render_math) -> str:
    stripped, found = split_math(text)
    body = _MARKDOWN.render(stripped)
    return _PLACEHOLDER.sub(lambda m: render_math(found[int(m.group(1))]), body)


def page_html(text: str) -> str:
    """HTML for the exam pages: each formula in a `.math` element that KaTeX renders in the browser."""
    return _markdown_with(
        text, lambda m: f'<span class="math{" display" if m.display else ""}">{html.escape(m.tex, quote=False)}</span>')


def lms_html(text: str) -> str:
    """HTML for Canvas and Moodle, whose MathJax filters render `\\(...\\)` and `\\[...\\]`."""
    return _markdown_with(
        text, lambda m: html.escape(f"\\[{m.tex}\\]" if m.display else f"\\({m.tex}\\)", quote=False)).strip()


# --------------------------------------------------------------- terminal text

_TEX_WORDS = {
    r"\cdot": "·", r"\times": "×", r"\infty": "∞", r"\top": "ᵀ", r"\sum": "Σ", r"\ln": "ln", r"\exp": "exp",
    r"\sin": "sin", r"\cos": "cos", r"\dots": "...", r"\ldots": "...", r"\qquad": "    ", r"\quad": "  ",
    r"\le": "≤", r"\ge": "≥", r"\in": "∈", r"\to": "→", r"\approx": "≈", r"\neq": "≠", r"\mathbb{R}": "R",
    r"\,": " ", r"\ ": " ", r"\;": " ", r"\!": "", r"\{": "{", r"\}": "}", r"\left": "", r"\right": "",
}
_MATRIX = re.compile(r"\\begin\{[pb]matrix\}(.*?)\\end\{[pb]matrix\}", re.S)


def _matrix_text(match: re.Match) -> str:
    rows = [r.strip() for r in match.group(1).split(r"\\") if r.strip()]
    cells = [" ".join(c.strip() for c in row.split("&")) for row in rows]
    return "[" + "; ".join(cells) + "]"


def tex_text(tex: str) -> str:
    """A formula as a terminal can show it: matrices as [1 2; 3 4], common symbols as Unicode."""
    text = _MATRIX.sub(_matrix_text, tex)
    text = re.sub(r"\\sqrt\{([^{}]*)\}", r"√\1", text).replace(r"\sqrt", "√")
    for word in sorted(_TEX_WORDS, key=len, reverse=True):
        text = re.sub(re.escape(word) + r"(?![A-Za-z])", _TEX_WORDS[word], text)
    text = re.sub(r"\\(?:text|texttt|mathrm|mathbf|operatorname)\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text)
    return re.sub(r"(?<=[_^])\{([^{}]*)\}", r"\1", text)


def terminal_text(text: str) -> str:
    """Problem Markdown for a terminal: the Markdown kept (it reads well as is), the TeX made readable."""
    stripped, found = split_math(text)
    return _PLACEHOLDER.sub(
        lambda m: ("    " + tex_text(found[int(m.group(1))].tex)) if found[int(m.group(1))].display
        else tex_text(found[int(m.group(1))].tex), stripped)


def readable_html(text: str) -> str:
    """HTML that needs no script: the Markdown rendered, each formula as readable text (`tex_text`) in a `.math` span.
    For pages that must work offline and light, such as a student's feedback."""
    return _markdown_with(text, lambda m: f'<span class="math{" display" if m.display else ""}">'
                                          f'{html.escape(tex_text(m.tex), quote=False)}</span>')
