"""The parts of qkv_check.py, the offline self-check; it re-exports what this package's `__all__` names.

In a student release this folder lies beside qkv_check.py, qkv_runtime/ and selfcheck.json, and needs
only numpy (torch on a torch track) and the standard library; it never imports the grader's own
packages. One job per part:

    data.py        selfcheck.json: read, refused when it is not this checker's; rosters and student keys
    outcomes.py    verdicts: one check's Outcome, one problem's ProblemResult
    loading.py     a student's .py or .ipynb run in this Python (Submission), under an alarm
    public.py      code problems: the public tests, the grader's comparison and its names for mistakes
    written.py     written problems: answers judged by opening the sealed ones (scrypt keys)
    reporting.py   the report of every route, its summary, a student's own numbers
    notebook.py    check(), show() and hand_in() in the student's notebook
    worker.py      the supervised child: loads the file, runs the tests, says what happened on a pipe
    child.py       one child seen from its parent: events, stderr, where it hung, how it ended
    supervisor.py  the parent: the grader's time limits held over children, killed when they run over
    history.py     what a check remembers: each run's results in a file of the student's folder, replayed by the
                   practice rule (qkv_runtime.practice) into mastery, misconceptions held and what to work on next
    cli.py         the command line: one action per option (check a file, --show, --submit)
    submit.py      --submit: the file handed in to the course's service (`qkv serve`), the score waited for;
                   the only part that uses the network, and only when asked
"""

from .cli import main
from .data import CLASS, DATA_FILE, DATA_FORMAT, HERE, USAGE_ERROR, UsageError, limits_of, load_data, roster, \
    student_key
from .loading import LOAD_SECONDS, Submission, load_message, load_submission, where_text as _where
from .notebook import check, hand_in, show
from .outcomes import FAIL, PASS, TODO, Outcome, ProblemResult
from .public import TEST_SECONDS, PublicCheck, code_result, decode as _decode, public_checks, run_code_problem
from .reporting import check_problem, prompt_text, report, run_checks, student_id_warning, summary_lines
from .supervisor import supervise
from .worker import WORKER
from .written import NO_KDF, WRITTEN, check_written, match_numbers

# what `from qkv_check import ...` finds, as when it was one file (its _where and _decode included)
__all__ = [
    "CLASS", "DATA_FILE", "DATA_FORMAT", "FAIL", "HERE", "LOAD_SECONDS", "NO_KDF", "PASS", "TEST_SECONDS", "TODO",
    "USAGE_ERROR", "WORKER", "WRITTEN", "Outcome", "ProblemResult", "PublicCheck", "Submission", "UsageError",
    "_decode", "_where", "check", "check_problem", "check_written", "code_result", "hand_in", "limits_of", "load_data",
    "load_message", "load_submission", "main", "match_numbers", "prompt_text", "public_checks", "report", "roster",
    "run_checks", "run_code_problem", "show", "student_id_warning", "student_key", "summary_lines", "supervise",
]
