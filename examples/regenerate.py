"""Regenerate the sample class in examples/submissions/attention-numpy/ from the answer key.

Run after the bank or the manifest changes (`.venv/bin/python examples/regenerate.py`, then
examples/canvas/regenerate.py); tests/routes/test_examples.py checks that every sample still earns what its name says.
Each sample is its own student's key (attention-numpy draws numbers per student: the file stem, ada, ben, ..., is
the student `qkv grade` names for a folder of files, and is on the manifest's roster) with hand-written student code
swapped in, so the demo shows the classic mistakes as students write them.
"""

from __future__ import annotations

import pprint
from pathlib import Path
from typing import Callable

import nbformat

from autograder.bank.load import load_bank_strict
from autograder.assemble.manifest import find_manifest, resolve_assignment
from autograder.assemble.notebook import student_notebook
from autograder.assemble.solution_key import key_answer, key_function, key_module
from autograder.assemble.student_text import stub_module
from autograder.kinds import kind_of
from autograder.kinds.choices import letter_of, order_in

HERE = Path(__file__).resolve().parent / "submissions" / "attention-numpy"

# the wrong one of the last two axes; the attention functions below build on it, as students write them,
# so one mistake costs three problems (the feedback page says to fix softmax_rows first)
COLUMN_SOFTMAX = '''
def softmax_rows(S, mask=None):
    S = np.asarray(S, dtype=float)
    e = np.exp(S - S.max(axis=-2, keepdims=True))
    if mask is not None:
        e = np.where(mask, e, 0.0)
    total = e.sum(axis=-2, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def scaled_dot_product_attention(Q, K, V, mask=None, scale=True):
    weights = softmax_rows(attention_scores(Q, K, scale=scale), mask)
    return attention_output(weights, V), weights


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, mask=None):
    X = np.asarray(X, dtype=float)
    Q, K, V = (split_heads(X @ np.asarray(W, dtype=float), h) for W in (Wq, Wk, Wv))
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]  # one mask for every head
    heads, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    return merge_heads(heads) @ np.asarray(Wo, dtype=float)
'''

ZERO_AFTER_SOFTMAX = '''
def softmax_rows(S, mask=None):
    S = np.asarray(S, dtype=float)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    if mask is not None:
        weights = weights * mask
    return weights
'''

UNBIASED_LAYER_NORM = '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, ddof=1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta
'''

UNSCALED_SCORES = '''
def attention_scores(Q, K, scale=True):
    return np.asarray(Q, dtype=float) @ np.swapaxes(np.asarray(K, dtype=float), -1, -2)
'''

HOSTILE = '''
import os, subprocess


def feed_forward(x, W1, b1, W2, b2):
    while True:  # never returns
        pass


def layer_norm(x, gamma, beta, eps=1e-5):
    secrets = open("/etc/shadow").read()  # not readable in the sandbox
    return secrets


try:
    subprocess.run(["curl", "http://example.com"], timeout=1)  # no network, no curl
except Exception:
    pass
print("All tests passed! Score: 100/100")  # printed results are ignored
'''


def swap(source: str, replacement: str) -> str:
    """The key with one function replaced by `replacement` (defined later, so it wins)."""
    return source + "\n" + replacement


def believes_heads_cut_the_cost(assignment, student: str | None) -> str:
    """dan's answer to heads-reduce-cost, after his ANSWERS: True, and the follow-up choice that says heads
    compare fewer pairs (its letter in `student`'s own order of the choices), with no correction written."""
    problem = next(a.problem for a in assignment.problems if a.problem.id == "heads-reduce-cost")
    variant = kind_of(problem).variant(problem, assignment.manifest.seed, assignment.manifest.variants, student)
    letter = letter_of(order_in(variant, problem.id, problem.follow_up.ids), "fewer-pairs")
    answer = {"answer": True, "follow_up": letter, "correction": ""}
    return f"# heads make attention cheaper, I think\nANSWERS['heads-reduce-cost'] = {answer!r}\n"


def samples(assignment, student: Callable[[str], str | None]) -> dict[str, str]:
    """Each sample .py file's text, keyed to the student `student(name)` it is handed in as (name: ada, ben, ...;
    None: the class's numbers, STUDENT_ID empty)."""
    return {
        "ada.py": key_module(assignment, student("ada")),
        "ben.py": swap(key_module(assignment, student("ben")), COLUMN_SOFTMAX),
        "cho.py": swap(swap(key_module(assignment, student("cho")), ZERO_AFTER_SOFTMAX), UNBIASED_LAYER_NORM),
        "dan.py": swap(swap(key_module(assignment, student("dan")), UNSCALED_SCORES),
                       believes_heads_cut_the_cost(assignment, student("dan"))),
        "eve.py": "def softmax_rows(S, mask=None)\n    return S\n",
        "fox.py": swap(key_module(assignment, student("fox")), HOSTILE),
        "gil.py": stub_module(assignment),
    }


def key_notebook(assignment, student: str | None) -> str:
    """The student notebook with every work cell filled from `student`'s own key (None: the class's), STUDENT_ID set
    to them."""
    notebook = nbformat.reads(student_notebook(assignment), as_version=4)
    for cell in notebook.cells:
        meta = cell.metadata.get("qkv", {})
        if meta.get("role") == "setup" and student:
            cell.source = cell.source.replace('STUDENT_ID = ""', f"STUDENT_ID = {student!r}", 1)
        if meta.get("role") != "work":
            continue
        problem = next(a.problem for a in assignment.problems if a.problem.id == meta["problem"])
        if problem.kind == "implement":
            cell.source = key_function(problem, assignment.track)
        else:
            cell.source = f"ANSWERS[{problem.id!r}] = {pprint.pformat(key_answer(problem, assignment, student))}"
    text = nbformat.writes(notebook)
    return text if text.endswith("\n") else text + "\n"


def load_assignment():
    return resolve_assignment(find_manifest("attention-numpy"), load_bank_strict())


def main() -> None:
    assignment = load_assignment()
    written = samples(assignment, lambda name: name)
    for name, text in written.items():
        (HERE / name).write_text(text if text.endswith("\n") else text + "\n")
    (HERE / "hua.ipynb").write_text(key_notebook(assignment, "hua"), encoding="utf-8")
    print(f"wrote {len(written) + 1} samples to {HERE}")


if __name__ == "__main__":
    main()
