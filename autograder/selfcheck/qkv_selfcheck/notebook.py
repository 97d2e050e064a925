"""In the student's notebook: `check()` and `show()`, which read the kernel's own variables, and `hand_in()`,
which hands the saved notebook in to the course's service (`python qkv_check.py --submit`, from a cell)."""

from __future__ import annotations

import sys
from typing import Optional

from .data import HERE, UsageError, load_data
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


def hand_in(file: Optional[str] = None, wait: float = 120.0) -> None:
    """In a notebook: hand in `file` (default: this assignment's notebook beside qkv_check.py, as last saved) and
    print its score and its feedback page's link; in a hub, with your own hub token (submit.py)."""
    if loading_now():
        return None  # qkv_check is running this notebook: checking never hands in
    from .cli import main

    if file is None:
        try:
            module = load_data().get("module") or "assignment"
        except UsageError as err:
            say(f"qkv_check: {err}")
            return None
        notebook = HERE / f"{module}.ipynb"
        file = str(notebook if notebook.exists() else HERE / f"{module}.py")
    main(["--submit", str(file), "--wait", str(wait)])
    return None
