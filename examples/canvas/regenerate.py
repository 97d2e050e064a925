"""Regenerate the demo's Canvas download (attention-numpy-submissions.zip) and its roster from the sample class.

Run after examples/regenerate.py (`.venv/bin/python examples/canvas/regenerate.py`); the output is the same
bytes on every run (fixed entry times and order). It is the sample class as Canvas's "Download Submissions"
hands it out, `name[_LATE]_userid_submissionid_file`, each file written with the key of the roster student it is
filed under (attention-numpy draws numbers per student, and `qkv grade` names a Canvas hand-in by the roster id its
Canvas user id has: ada's file holds s2026001's numbers, not ada's), with the cases the demo shows:

- ada on time; ben 1.5 days late (two started days: -20%); cho late but within her 48-hour extension;
  dan 10 minutes late (within the grace; Canvas marks it LATE anyway) and his file says another student's
  STUDENT_ID (a conflict: graded as dan, by his Canvas user id); fox six days late (the 50% cap);
- gil handed in twice (the later file counts); hua a notebook; ivy nothing (missing);
- a Canvas user who is not on the roster (off roster, not graded).
Entry times are local times of the due date's zone (+08:00), as qkv reads zip entry times.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import re
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent / "submissions" / "attention-numpy"
ZIP = HERE / "attention-numpy-submissions.zip"
ROSTER = HERE / "roster.csv"

STUDENTS = [  # id, name, email, Canvas user id, section, extension, sample, Canvas name, hand-ins
    ("s2026001", "Ada Lovelace", "ada@uni.example", "1001", "A", "", "ada.py", "lovelaceada",
     [("", (2026, 12, 18, 20, 0, 0))]),
    ("s2026002", "Ben Okafor", "ben@uni.example", "1002", "A", "", "ben.py", "okaforben",
     [("_LATE", (2026, 12, 20, 11, 30, 0))]),
    ("s2026003", "Cho Min-jun", "cho@uni.example", "1003", "B", "48", "cho.py", "minjuncho",
     [("", (2026, 12, 20, 9, 0, 0))]),
    ("s2026004", "Dan Novak", "dan@uni.example", "1004", "B", "", "dan.py", "novakdan",
     [("_LATE", (2026, 12, 19, 0, 9, 0))]),
    ("s2026005", "Eve Adams", "eve@uni.example", "1005", "A", "", "eve.py", "adamseve",
     [("", (2026, 12, 17, 12, 0, 0))]),
    ("s2026006", "Fox Mulder", "fox@uni.example", "1006", "B", "", "fox.py", "mulderfox",
     [("_LATE", (2026, 12, 24, 22, 0, 0))]),
    ("s2026007", "Gil Santos", "gil@uni.example", "1007", "A", "", "gil.py", "santosgil",
     [("", (2026, 12, 15, 9, 0, 0)), ("", (2026, 12, 18, 21, 0, 0))]),
    ("s2026008", "Hua Chen", "hua@uni.example", "1008", "B", "", "hua.ipynb", "chenhua",
     [("", (2026, 12, 18, 23, 0, 0))]),
    ("s2026009", "Ivy Park", "ivy@uni.example", "1009", "A", "", None, "parkivy", []),
]
OFF_ROSTER = ("zhangwei", "1010", "ada.py", (2026, 12, 18, 22, 0, 0))
CONFLICT = {"s2026004": "s2026002"}  # dan's file says ben's id


def sample_class():
    """examples/regenerate.py, the sample class's maker (a script, not a package)."""
    spec = importlib.util.spec_from_file_location("regenerate", HERE.parent / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def with_student_id(text: str, student: str) -> str:
    """`text` saying STUDENT_ID `student` (the key's line says the student it was written for; the stub's is empty)."""
    return re.sub(r'^STUDENT_ID = ".*"$', f'STUDENT_ID = "{student}"', text, count=1, flags=re.MULTILINE)


def member(archive: zipfile.ZipFile, name: str, when: tuple, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=when)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    archive.writestr(info, data, compresslevel=9)


def main() -> None:
    regenerate = sample_class()
    assignment = regenerate.load_assignment()
    sample_of = {sample: sid for sid, *_, sample, _, _ in STUDENTS}
    keyed = regenerate.samples(assignment, lambda name: sample_of[f"{name}.py"])
    keyed["hua.ipynb"] = regenerate.key_notebook(assignment, sample_of["hua.ipynb"])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        submission = 90001
        for sid, _, _, uid, _, _, sample, canvas_name, handins in STUDENTS:
            for attempt, (late, when) in enumerate(handins):
                text = keyed[sample]
                if sample.endswith(".py"):
                    text = with_student_id(text, CONFLICT.get(sid, sid))
                stem, suffix = "attention_numpy", Path(sample).suffix
                filename = f"{stem}{'-' + str(attempt) if attempt else ''}{suffix}"
                member(archive, f"{canvas_name}{late}_{uid}_{submission}_{filename}", when, text.encode())
                submission += 1
        # someone not on the roster hands in ada's folder sample (her numbers, her STUDENT_ID): not graded
        name, uid, sample, when = OFF_ROSTER
        member(archive, f"{name}_{uid}_{submission}_attention_numpy.py", when, (SAMPLES / sample).read_bytes())
    ZIP.write_bytes(buffer.getvalue())
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "name", "email", "lms_id", "section", "extension"])
    for sid, full, email, uid, section, extension, *_ in STUDENTS:
        writer.writerow([sid, full, email, uid, section, extension])
    ROSTER.write_text(out.getvalue(), encoding="utf-8")
    print(f"wrote {ZIP.relative_to(HERE.parent.parent)} and {ROSTER.relative_to(HERE.parent.parent)}")


if __name__ == "__main__":
    main()
