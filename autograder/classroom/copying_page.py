"""The copying signals for the instructor: `AnswerFlag`s and a `CodeReport` in; copying.html (tables, and each
flagged pair side by side) and copying.csv out. Written beside the gradebook, never under feedback/."""

from __future__ import annotations

import jinja2

from autograder.classroom.copying import MIN_PARTS, NOISE, AnswerFlag, CodeReport
from autograder.page_style import page_style
from autograder.report.spreadsheet import csv_text

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("autograder.classroom", "templates"), autoescape=True,
                          undefined=jinja2.StrictUndefined)
_ENV.globals["page_style"] = page_style()


def copying_html(title: str, per_student: bool, answer_flags: list[AnswerFlag], code: CodeReport) -> str:
    return _ENV.get_template("copying.html.j2").render(title=title, per_student=per_student, answer_flags=answer_flags,
                                                       code=code, min_parts=MIN_PARTS, noise=NOISE)


def copying_csv(answer_flags: list[AnswerFlag], code: CodeReport) -> str:
    rows = [["signal", "student", "other", "score", "evidence"]]
    for f in answer_flags:
        rows.append(["numbers", f.student, f.other, f"{f.fits_other}-{f.fits_own}",
                     f"{f.fits_other} part(s) right for {f.other}'s numbers only, {f.fits_own} for their own only: "
                     + ", ".join(f.evidence)])
    for p in code.pairs:
        rows.append(["code", p.a, p.b, f"{p.similarity:.3f}",
                     f"shares {p.shares[0]:.3f} / {p.shares[1]:.3f}, {p.tokens} filtered characters in common"])
    for c in code.containers:
        rows.extend(["contains", c.student, other, f"{share:.3f}",
                     f"{share:.3f} of {other}'s code is in {c.student}'s file, {own:.3f} of {c.student}'s is in {other}'s"]
                    for other, share, own in zip(c.holds, c.shares, c.own_shares))
    return csv_text(rows)
