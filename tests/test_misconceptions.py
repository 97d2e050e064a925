"""solutions/misconceptions.py and its parts by topic: every mutant under the name the bank gives it, one header for all.

The bank names each mutant `solutions.misconceptions.NAME` whichever part defines it, and tests paste a mutant into a
submission with the header of its own module (conftest.replace_function) or of solutions.misconceptions
(test_bank): both must run it.
"""

from __future__ import annotations

import importlib
import re
import types
from collections import Counter

from autograder.references import misconceptions
from conftest import ROOT

PARTS = sorted(p.stem for p in (ROOT / "solutions").glob("misconceptions_*.py"))


def defined(module: types.ModuleType) -> dict[str, types.FunctionType]:
    return {name: value for name, value in vars(module).items()
            if isinstance(value, types.FunctionType) and value.__module__ == module.__name__}


def header(module: types.ModuleType) -> str:
    """What a pasted mutant runs after: the module's code above its first `def` (docstring and comments aside)."""
    text = (ROOT / "solutions" / f"{module.__name__.rpartition('.')[2]}.py").read_text()
    above = re.sub(r'^""".*?"""\n', "", text.split("\ndef ", 1)[0], count=1, flags=re.DOTALL)
    return "\n".join(line for line in above.splitlines() if line.strip() and not line.startswith("#"))


def parts() -> list[types.ModuleType]:
    return [importlib.import_module(f"autograder.references.{name}") for name in PARTS]


def test_every_mutant_of_every_part_is_reached_by_its_bank_name_and_no_two_parts_define_one():
    modules = [misconceptions, *parts()]
    assert len(modules) > 1 and all(defined(m) for m in modules)
    counts = Counter(name for module in modules for name in defined(module))
    assert [name for name, count in counts.items() if count > 1] == []
    # what bank.resolve does with `solutions.misconceptions.NAME`: the module, then the name in it
    missing = [f"{module.__name__}.{name}" for module in modules for name, function in defined(module).items()
               if getattr(misconceptions, name, None) is not function]
    assert missing == []


def test_each_part_opens_with_the_header_that_runs_every_mutant():
    assert PARTS, "solutions/misconceptions.py is one module again"
    ours = header(misconceptions)
    assert "import numpy as np" in ours and "def " not in ours
    assert {part.__name__: header(part) for part in parts()} == {part.__name__: ours for part in parts()}
