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

import numpy as np
import pytest

from autograder.bundle import read_bundle
from autograder.grade.score import Upstream, diagnose, score_code_problem
from autograder.references import misconceptions
from autograder.sandbox import ProblemRun, SubmissionRun
from autograder.sandbox.protocol import CallResult
from conftest import ROOT
from qkv_runtime.compare import compare
from qkv_runtime.diagnosis import name_mistake

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


# ------------------------------------------------------------------ detectors that the tests prove

# mistakes students make (and the lectures warn about), each in the problem where it starts
DETECTORS = [
    ("softmax-rows", "softmax-over-axis-0"),
    ("softmax-rows", "softmax-over-axis-1"),
    ("softmax-rows", "softmax-over-whole-table"),
    ("feed-forward", "relu-after-second-layer"),
    ("scaled-dot-product-attention", "keys-as-values"),
    ("scaled-dot-product-attention", "reads-only-itself"),
]


def _alone(test, mistake: str) -> bool:
    """This test fails with the mistake, and no other misconception of its problem gives the same output there."""
    wrong = test.mutant_outputs.get(mistake)
    if wrong is None:
        return False
    tol = test.tolerance
    others = [o for m, o in test.mutant_outputs.items() if m != mistake]
    return compare(wrong, test.expected, tol.abs, tol.rel) is not None and all(
        compare(wrong, o, tol.abs, tol.rel) is not None for o in others)


@pytest.mark.parametrize("problem, mistake", DETECTORS)
def test_each_detector_is_proved_by_a_hidden_test_that_only_it_explains(built_numpy, problem, mistake):
    code = next(p for p in read_bundle(built_numpy.out / "autograder").code if p.id == problem)
    assert mistake in code.misconceptions
    hidden = [t.name for t in code.tests if t.visibility == "hidden" and _alone(t, mistake)]
    shown = [t.name for t in code.tests if t.visibility == "public" and _alone(t, mistake)]
    assert hidden, f"no hidden test of {problem} tells {mistake} from the others"
    assert shown, f"no public test of {problem} shows {mistake}: the self-check would not see it"
    for test in (t for t in code.tests if _alone(t, mistake)):  # and the grader names it there
        got = test.mutant_outputs[mistake]
        assert diagnose(test, tuple(np.asarray(g) for g in got)).mistake == mistake


def test_the_axis_mistakes_are_named_once_each_by_the_test_that_tells_them_apart(built_numpy):
    """axis=0, axis=1 and axis=-2 agree on some inputs (one matrix; a batch of matrices): the first public test, a
    4-D one, tells all three apart, and every later test the student fails keeps the name it gave."""
    bundle = read_bundle(built_numpy.out / "autograder")
    code = next(p for p in bundle.code if p.id == "softmax-rows")
    first = code.tests[0]
    assert first.visibility == "public" and all(
        _alone(first, m) for m in ("softmax-over-axis-0", "softmax-over-axis-1", "column-softmax"))
    for mistake in ("softmax-over-axis-0", "softmax-over-axis-1", "column-softmax"):
        upstream = Upstream.of(bundle)
        calls = {t.call_id: CallResult(True, tuple(t.mutant_outputs[mistake])) for t in code.tests}
        scored = score_code_problem(code, SubmissionRun("ok", "", {code.id: ProblemRun("ok", "", calls)}, {},
                                                        (code.function,), ""), upstream)
        named = {t.misconception for t in scored.tests if not t.passed}
        assert named == {mistake}, (mistake, named)
        assert mistake == "column-softmax" or "axis=-1" in code.misconceptions[mistake]  # the advice says the fix


def test_a_tie_goes_to_the_mistake_this_problem_already_showed():
    same = {"a-first": "out", "b-second": "out"}
    assert name_mistake(lambda o: o == "out", same, [], lambda p, m: False).mistake == "a-first"
    assert name_mistake(lambda o: o == "out", same, [], lambda p, m: False, ["b-second"]).mistake == "b-second"
    # what a problem built on shows itself still comes first
    upstream = [("softmax-rows", {"c": "out"})]
    named = name_mistake(lambda o: o == "out", same, upstream, lambda p, m: True, ["b-second"])
    assert (named.mistake, named.cause) == ("c", "softmax-rows")
