"""How a notebook becomes a program: notebook JSON in, the steps Jupyter would take out, and a runner for them.

One reader for every route (the grader's intake, the sandbox, the self-check), so a
notebook means the same thing wherever it is read. It follows what Jupyter does when
the cells run from the top:

- each code cell runs on its own: an exception, `sys.exit()` included, ends that cell
  and is reported, and the next cell runs (IPython catches SystemExit too);
- a cell magic decides what its body is: `%%time`, `%%capture`, `%%prun` bodies are
  Python; `%%writefile NAME` writes the body to a file; `%%bash`, `%%script false`,
  `%%html` and the like are not Python and are skipped, as their bodies never reach
  the kernel's namespace; an unknown cell magic fails its cell, as in Jupyter;
- line magics and shell lines (`%matplotlib inline`, `!pip install x`) do nothing here,
  at any indentation, except `%time STATEMENT`, which runs the statement; lines inside
  strings or inside brackets are Python, never magics.

Reading is bounded: the text's size, its JSON nesting, the number of cells.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .judge import cell_file
from .values import clean_text, exception_text, exit_code_text
from .wire import MAX_JSON_DEPTH, json_depth_ok

MAX_NOTEBOOK_BYTES = 5_000_000
MAX_CELLS = 2000
MAX_CELL_ERRORS = 50
SKIP_ROLES = frozenset({"selfcheck", "intro", "prompt"})  # our locked cells: a submission's copy is never run

PYTHON_CELL_MAGICS = frozenset({"time", "capture", "prun", "debug"})
FILE_CELL_MAGICS = frozenset({"writefile", "file"})
OTHER_LANGUAGE_MAGICS = frozenset({
    "bash", "sh", "script", "html", "HTML", "javascript", "js", "latex", "markdown", "svg", "perl", "ruby",
    "python", "python2", "python3", "pypy", "system", "sx", "timeit",
})


class NotebookError(ValueError):
    """The text is not a notebook we can read; the message says why, in one line."""


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based position among all the notebook's cells, as Jupyter shows them
    source: str
    role: Optional[str] = None  # metadata.qkv.role of cells our builds write
    problem: Optional[str] = None


@dataclass(frozen=True)
class Step:
    """What running one code cell does: Python to run, a file to write, or nothing (and why)."""

    cell: int
    action: str  # "python" | "writefile" | "skip" | "fail"
    text: str = ""  # the Python code, or the file's content
    target: str = ""  # writefile: the file name
    append: bool = False
    note: str = ""  # skip/fail: why, for the student

    def to_json(self) -> Dict[str, Any]:
        return {"cell": self.cell, "action": self.action, "text": self.text, "target": self.target,
                "append": self.append, "note": self.note}

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Step":
        return cls(int(data["cell"]), str(data["action"]), str(data["text"]), str(data["target"]),
                   bool(data["append"]), str(data["note"]))


# ---------------------------------------------------------------- reading


def _text(value: Any) -> str:
    if isinstance(value, list):
        try:
            return "".join(value)
        except TypeError:  # something other than strings among the lines: those are left out
            return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def read_cells(text: str, max_bytes: int = MAX_NOTEBOOK_BYTES) -> List[Cell]:
    """The code cells of a notebook's JSON text (nbformat 4, or 3's worksheets)."""
    if len(text) > max_bytes:
        raise NotebookError(f"the notebook is larger than {max_bytes:,} characters")
    if not json_depth_ok(text.encode("utf-8", "replace")):
        raise NotebookError(f"the notebook's JSON nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError, MemoryError) as exc:
        reason = str(exc).splitlines()[0][:120] if isinstance(exc, ValueError) else type(exc).__name__
        raise NotebookError(f"not JSON ({reason})") from None
    if not isinstance(data, dict):
        raise NotebookError("not a notebook (the JSON is not an object)")
    cells = data.get("cells")
    if cells is None and isinstance(data.get("worksheets"), list):
        cells = [c for w in data["worksheets"] if isinstance(w, dict) for c in (w.get("cells") or [])]
    if not isinstance(cells, list):
        raise NotebookError("not a notebook (no list of cells)")
    if len(cells) > MAX_CELLS:
        raise NotebookError(f"the notebook has {len(cells):,} cells; the limit is {MAX_CELLS:,}")
    out = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        metadata = cell.get("metadata")
        qkv = metadata.get("qkv") if isinstance(metadata, dict) else None
        qkv = qkv if isinstance(qkv, dict) else {}
        role, problem = qkv.get("role"), qkv.get("problem")
        source = _text(cell.get("source", cell.get("input", "")))
        out.append(Cell(number, source, role if isinstance(role, str) else None,
                        problem if isinstance(problem, str) else None))
    return out


# ---------------------------------------------------------------- magics


_SIGNIFICANT = re.compile(r"[\\\"'#()\[\]{}]")  # the only characters that change a line's state


def _logical_line_starts(lines: Sequence[str]) -> List[bool]:
    """For each line: does it start a logical line (not inside a string, brackets or a continuation)?"""
    starts = []
    depth, quote, continued = 0, "", False
    for line in lines:
        starts.append(depth == 0 and not quote and not continued)
        n = len(line)
        continued = False
        # jump from one significant character to the next: the intake reads every cell of every notebook
        match = _SIGNIFICANT.search(line)
        while match is not None:
            i = match.start()
            ch = line[i]
            if quote:
                if ch == "\\":
                    i += 2
                elif line.startswith(quote, i):
                    i += len(quote)
                    quote = ""
                else:
                    i += 1
            elif ch == "#":
                break
            elif ch in "\"'":
                quote = ch * 3 if line.startswith(ch * 3, i) else ch
                i += len(quote)
            else:
                if ch in "([{":
                    depth += 1
                elif ch in ")]}":
                    depth = max(0, depth - 1)
                elif ch == "\\" and i == n - 1:
                    continued = True
                i += 1
            match = _SIGNIFICANT.search(line, i)
        if len(quote) == 1 and not continued:
            quote = ""  # an unterminated one-line string ends at the line's end (a SyntaxError later, not ours)
    return starts


_ASSIGNED_MAGIC = re.compile(r"^([A-Za-z_][\w, ]*)=\s*[!%]")
_HELP = re.compile(r"^(\?\??[\w.]+|[\w.]+\?\??)$")


def _line_magic(stripped: str) -> Optional[str]:
    """The Python a magic line stands for ("pass" for most), or None when the line is Python."""
    if stripped.startswith("%%"):
        return "pass"
    if stripped.startswith("%"):
        name, _, rest = stripped[1:].partition(" ")
        if name == "time" and rest.strip():
            return rest.strip()
        return "pass"
    if stripped.startswith("!"):
        return "pass"
    assigned = _ASSIGNED_MAGIC.match(stripped)
    if assigned:
        return f"{assigned.group(1).strip()} = None"
    if _HELP.match(stripped):
        return "pass"
    return None


# every line _line_magic rewrites matches this (it may match more): a cell without one is Python as it stands.
# Within one line ([^\S\n]: whitespace but a newline): a `\s*` at each line start that could run on over the
# next lines made a cell of blank lines quadratic (32,000 of them and a "%": 24 s of the grader's time)
_MAYBE_MAGIC = re.compile(r"^[^\S\n]*[%!?]|^[^\S\n]*[A-Za-z_][\w, ]*=[^\S\n]*[!%]|\?[^\S\n]*$", re.MULTILINE)


def python_of(source: str) -> str:
    """A code cell's Python with its line magics and shell lines made inert (indentation kept)."""
    lines = source.splitlines()
    joined = "\n".join(lines)
    if not any(_MAYBE_MAGIC.search(line) for line in lines if "%" in line or "!" in line or "?" in line):
        return joined  # most cells: `%` and `!=` are rare enough that looking at their lines alone is cheap
    out = []
    for line, starts in zip(lines, _logical_line_starts(lines)):
        stripped = line.lstrip()
        replacement = _line_magic(stripped) if starts and stripped else None
        out.append(line if replacement is None else line[: len(line) - len(stripped)] + replacement)
    return "\n".join(out)


def step_of(cell: Cell) -> Step:
    lines = cell.source.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    first = lines[0].strip() if lines else ""
    if not first.startswith("%%"):
        return Step(cell.number, "python", python_of(cell.source))
    words = first[2:].split()
    magic = words[0] if words else ""
    body = "\n".join(lines[1:])
    if magic in PYTHON_CELL_MAGICS:
        text = python_of(body)
        if magic == "capture" and len(words) > 1 and not words[-1].startswith("-") and words[-1].isidentifier():
            text = f"{words[-1]} = None\n{text}"
        return Step(cell.number, "python", text)
    if magic in FILE_CELL_MAGICS:
        args = words[1:]
        append = "-a" in args or "--append" in args
        names = [a for a in args if not a.startswith("-")]
        if len(names) != 1:
            return Step(cell.number, "fail", note=f"%%{magic} needs one file name")
        return Step(cell.number, "writefile", body + "\n" if body else "", names[0].strip("'\""), append)
    if magic in OTHER_LANGUAGE_MAGICS:
        what = "script " + words[1] if magic == "script" and len(words) > 1 else magic
        return Step(cell.number, "skip", note=f"a %%{clean_text(what, 40)} cell, not Python: skipped, as Jupyter "
                                               "does not run its body in the notebook's Python")
    return Step(cell.number, "fail", note=f"unknown cell magic %%{clean_text(magic, 40)} (Jupyter fails this cell)")


def program_steps(cells: Sequence[Cell], skip_roles: frozenset = SKIP_ROLES) -> List[Step]:
    """The steps of running the notebook from the top, leaving out our own locked cells."""
    return [step_of(cell) for cell in cells if cell.role not in skip_roles]


# ---------------------------------------------------------------- running


def _write_file(step: Step) -> None:
    name = step.target
    if not name or os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
        raise OSError(f"%%writefile {name}: only a file beside the notebook can be written here")
    with open(name, "a" if step.append else "w", encoding="utf-8") as handle:
        handle.write(step.text)


def run_steps(steps: Sequence[Step], namespace: Dict[str, Any],
              reraise: Tuple[type[BaseException], ...] = (), before: Optional[Callable[[Step], None]] = None) -> List[str]:
    """Run the steps in `namespace`; gives one message per cell that failed (at most MAX_CELL_ERRORS).

    Exceptions in `reraise` (the self-check's own Ctrl-C and time limit) are not a cell's failure.
    """
    errors: List[str] = []

    def failed(step: Step, text: str) -> None:
        if len(errors) < MAX_CELL_ERRORS:
            errors.append(f"cell {step.cell}: {text}")

    for step in steps:
        if before is not None:
            before(step)
        if step.action == "skip":
            continue
        if step.action == "fail":
            failed(step, step.note)
            continue
        try:
            if step.action == "writefile":
                _write_file(step)
            else:
                # a cell as Jupyter compiles it, not under this module's `from __future__ import annotations`
                exec(compile(step.text, cell_file(step.cell), "exec", dont_inherit=True), namespace)
        except reraise:
            raise
        except SystemExit as exc:
            failed(step, f"called sys.exit({exit_code_text(exc.code)}); the rest of this cell did not run")
        except BaseException as exc:  # noqa: BLE001 - a cell's failure is reported, as Jupyter shows it
            failed(step, exception_text(exc, cell_file(step.cell), limit=300))
    return errors
