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


# an asterisk of arithmetic, between operands with no space (4*512, a*2, (1-a)*10, n**2): Markdown would pair two
# of them as emphasis and drop them ("4*512^2 + 4*512" printed as 4512^2 + 4512 in italics)
_ARITHMETIC_ASTERISK = re.compile(r"(?<=[\w)\]])\*{1,2}(?=[\w(\[])")


def literal_asterisks(text: str) -> str:
    """Markdown whose asterisks of arithmetic are escaped, so that they print as typed; code spans and formulas,
    which Markdown does not read, are left as they are."""
    out, last = [], 0
    for match in _SEGMENT.finditer(text):
        out += [_ARITHMETIC_ASTERISK.sub(lambda m: "\\*" * len(m.group(0)), text[last:match.start()]), match.group(0)]
        last = match.end()
    return "".join(out) + _ARITHMETIC_ASTERISK.sub(lambda m: "\\*" * len(m.group(0)), text[last:])


def _markdown_with(text: str, render_math) -> str:
    stripped, found = split_math(literal_asterisks(text))
    body = _MARKDOWN.render(stripped)
    return _PLACEHOLDER.sub(lambda m: render_math(found[int(m.group(1))]), body)


def page_html(text: str) -> str:
    """HTML for the exam pages: each formula in a `.math` element that KaTeX renders in the browser; a table
    focusable, since on a phone it scrolls in its own box, which a keyboard must reach."""
    return _markdown_with(
        text, lambda m: f'<span class="math{" display" if m.display else ""}">{html.escape(m.tex, quote=False)}</span>'
    ).replace("<table>", '<table tabindex="0">')


def lms_html(text: str) -> str:
    """HTML for Canvas and Moodle, whose MathJax filters render `\\(...\\)` and `\\[...\\]`."""
    return _markdown_with(
        text, lambda m: html.escape(f"\\[{m.tex}\\]" if m.display else f"\\({m.tex}\\)", quote=False)).strip()


# --------------------------------------------------------------- terminal text

_GREEK = dict(zip(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho sigma tau "
    "upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Phi Psi Omega".split(),
    "αβγδεεζηθθικλμνξπρστυφφχψωΓΔΘΛΞΠΣΦΨΩ"))
_TEX_WORDS = {
    **{f"\\{name}": letter for name, letter in _GREEK.items()},
    r"\cdot": "·", r"\times": "×", r"\infty": "∞", r"\top": "ᵀ", r"\sum": "Σ", r"\prod": "∏", r"\ln": "ln",
    r"\log": "log", r"\exp": "exp", r"\sin": "sin", r"\cos": "cos", r"\tanh": "tanh", r"\min": "min",
    r"\max": "max", r"\arg": "arg", r"\dots": "...", r"\ldots": "...", r"\cdots": "⋯", r"\vdots": "⋮",
    r"\qquad": "    ", r"\quad": "  ", r"\le": "≤", r"\leq": "≤", r"\ge": "≥", r"\geq": "≥", r"\ne": "≠",
    r"\neq": "≠", r"\in": "∈", r"\to": "→", r"\rightarrow": "→", r"\Rightarrow": "⇒", r"\mapsto": "↦",
    r"\approx": "≈", r"\sim": "~", r"\propto": "∝", r"\equiv": "≡", r"\pm": "±", r"\mp": "∓", r"\partial": "∂",
    r"\nabla": "∇", r"\odot": "⊙", r"\otimes": "⊗", r"\circ": "∘", r"\ell": "ℓ", r"\mid": "|", r"\lvert": "|",
    r"\rvert": "|", r"\lVert": "‖", r"\rVert": "‖", r"\langle": "⟨", r"\rangle": "⟩", r"\lfloor": "⌊",
    r"\rfloor": "⌋", r"\lceil": "⌈", r"\rceil": "⌉", r"\forall": "∀", r"\exists": "∃", r"\cap": "∩",
    r"\cup": "∪", r"\emptyset": "∅", r"\mathbb{R}": "ℝ", r"\left": "", r"\right": "", r"\displaystyle": "",
    **{f"\\{size}": "" for size in ("big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr")},
    r"\,": " ", r"\ ": " ", r"\;": " ", r"\:": " ", r"\!": "", r"\{": "{", r"\}": "}", r"\|": "‖",
}
# a command made of letters ends where the letters do (\in is not \infty); one of a sign ends at once (\,x)
_WORD = re.compile("|".join(re.escape(w) + (r"(?![A-Za-z])" if w[-1].isalpha() else "")
                            for w in sorted(_TEX_WORDS, key=len, reverse=True)))
_SUPERSCRIPTS = dict(zip("0123456789+-=()Tᵀ", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵀᵀ"))
_SUBSCRIPTS = dict(zip("0123456789+-=()", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎"))
_SCRIPT = re.compile(r"([_^])(?:\{([^{}]*)\}|([0-9A-Za-zᵀ]))")
_FRAC = re.compile(r"\\[td]?frac(?:\{([^{}]*)\}|([0-9A-Za-z]))(?:\{([^{}]*)\}|([0-9A-Za-z]))")
_SQRT = re.compile(r"\\sqrt\{([^{}]*)\}")
_UNWRAPPED = re.compile(r"\\(?:text|texttt|textbf|textit|mathrm|mathbf|mathit|operatorname)\{([^{}]*)\}")
_MATRIX = re.compile(r"\\begin\{[pb]matrix\}(.*?)\\end\{[pb]matrix\}", re.S)


def _matrix_text(match: re.Match) -> str:
    rows = [r.strip() for r in match.group(1).split(r"\\") if r.strip()]
    cells = [" ".join(c.strip() for c in row.split("&")) for row in rows]
    return "[" + "; ".join(cells) + "]"


def _grouped(text: str) -> str:
    """`text` as one factor: bare when it is a single term (d_k, 2, √d), else in parentheses."""
    return text if re.fullmatch(r"[^\s+\-*/·×=<>≤≥,]+", text) else f"({text})"


def _script(match: re.Match) -> str:
    mark, body = match.group(1), match.group(2) if match.group(2) is not None else match.group(3)
    table = _SUPERSCRIPTS if mark == "^" else _SUBSCRIPTS
    if body and all(c in table for c in body):  # 10^{-4}, x_1, Q^\top: the characters a terminal has
        return "".join(table[c] for c in body)
    return mark + (_grouped(body) if body else "")


def _fraction(match: re.Match) -> str:
    text = f"{_grouped(match.group(1) or match.group(2))}/{_grouped(match.group(3) or match.group(4))}"
    after = match.string[match.end():match.end() + 1]
    return text if after in ("", " ", ",", ".", ";", ":", ")", "]", "=", "+", "-") else f"({text})"  # (1/d)Σ


def tex_text(tex: str) -> str:
    """A formula as a terminal can show it: matrices as [1 2; 3 4], Greek letters and common symbols as Unicode,
    digits and signs raised or lowered, fractions on one line (1/√d_k, (a+b)/2)."""
    text = _WORD.sub(lambda m: _TEX_WORDS[m.group(0)], _MATRIX.sub(_matrix_text, tex))
    for _ in range(tex.count("{") + 1):  # innermost braces first: each round removes a level
        before = text
        text = _UNWRAPPED.sub(r"\1", text)
        text = _SCRIPT.sub(_script, text)
        text = _SQRT.sub(lambda m: "√" + _grouped(m.group(1)), text)
        text = _FRAC.sub(_fraction, text)
        if text == before:
            break
    return text.replace(r"\sqrt", "√")


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
