"""In the student's notebook: `check()` and `show()`, which read the kernel's own variables."""

from __future__ import annotations

import sys
from typing import Optional

from .data import UsageError, load_data
from .loading import Submission, loading_now
from .reporting import prompt_text, report, say


def check(problem: Optional[str] = None, student: Optional[str] = None) -> None:
    """In a notebook: self-check one problem ("problem-id") or, with no argument, all of them with a summary."""
    if loading_now():
        return None  # qkv_check itself is running this notebook
    namespace = sys._getframe(1).f_globals
    try:
        data = load_data()
        submission = Submission.from_namespace(namespace)
        text, _ = report(data, submission, student or "", problem, summary=problem is None)
    except UsageError as err:
        text = f"qkv_check: {err}"
    say(text)
    return None


def show(problem: Optional[str] = None, student: Optional[str] = None) -> None:
    """In a notebook: print your own numbers for a per-student problem (all of them with no argument)."""
    if loading_now():
        return None
    namespace = sys._getframe(1).f_globals
    student = student or Submission.from_namespace(namespace).student_id
    try:
        data = load_data()
        text = prompt_text(data, student, problem)
    except UsageError as err:
        say(f"qkv_check: {err}")
        return None
    if data["variants"] != "per_student":
        say(text)
        return None
    try:  # rendered Markdown in Jupyter, plain text elsewhere
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(text))
            return None
    except ImportError:
        pass
    say(text)
    return None
