"""Offline self-check of a qkv assignment: your file in, a verdict on every problem out.

    python qkv_check.py attention_numpy.py               # a .py submission
    python qkv_check.py attention_numpy.ipynb            # a notebook (no Jupyter needed)
    python qkv_check.py --student s1234567 --show        # your own numbers (per-student assignments)
    python qkv_check.py --submit [attention_numpy.py]    # hand it in to the course's service, get the score

In a notebook: `from qkv_check import check, show`, then `check("problem-id")`,
`check()` for everything, `show("problem-id")` for your numbers; `qkv_check.hand_in()` hands
the saved notebook in (as --submit).

Needs only numpy (and torch for a torch-track assignment), `qkv_selfcheck/`, `qkv_runtime/`
and `selfcheck.json` beside this file. No network, but for --submit (your sign-in link in
qkv_token.txt beside this file, or in QKV_TOKEN; in a JupyterHub server, your hub token). Your
code runs here, in your own Python, exactly as you wrote it.

Code problems: the public tests, with the messages the grader gives (the input,
expected vs your output, the largest error, the name of a common mistake when your
output is that mistake's). Written problems: right or wrong, decided by opening
answers sealed under scrypt keys (slow to derive on purpose, so guessing them one
by one takes hours), so the answers are not in this folder in clear. Hidden tests are run only when you
are graded: passing here is necessary, not sufficient.

Each check is remembered in qkv-selfcheck-history.json beside this file (only yours to read; --no-history
leaves it alone): your mastery of each problem and topic, the misconceptions your answers keep showing,
and which problem to work on next, chosen by the same rule as `qkv practice` and the course's practice pages.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.dirname(
        os.path.realpath(__file__)):
    # Python puts this script's folder first: a student's numbers.py or random.py there would stand in for the
    # standard library's (numpy imports both); last, the folder still holds qkv_selfcheck and qkv_runtime
    sys.path.append(sys.path.pop(0))

_FOLDER = os.path.dirname(os.path.realpath(__file__))
if not __package__ and _FOLDER not in sys.path:  # in a student release, the parts lie beside this file
    sys.path.insert(0, _FOLDER)

# The checker is the package beside this file (qkv_selfcheck/__init__.py says which part does what);
# this file is what students run and what their notebook imports.
if __package__:  # the grader's own copy, autograder.selfcheck.qkv_check
    from .qkv_selfcheck import *  # noqa: E402,F401,F403
else:
    # the student's copy, beside its qkv_selfcheck/ folder (not a module of the engine's, for the type checker)
    from qkv_selfcheck import *  # type: ignore[import-not-found]  # noqa: E402,F401,F403

if __name__ == "__main__":
    sys.modules.setdefault("qkv_check", sys.modules["__main__"])  # a notebook's `import qkv_check` finds this one
    try:
        code = main()  # noqa: F405
        sys.stdout.flush()
    except BrokenPipeError:  # output piped into `head` and the like
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
