"""Practice that remembers: a student's tries in; their mastery, the misconceptions they hold, the reviews due and
the next problem to give them out.

One rule for every route that practises (the offline drill, `qkv practice`, and the service's /practice pages,
serve/practice.py), so that a student sees the same choice whichever they use:

    rule.py       pure: the tries replayed into a Memory (mastery per problem and per topic, misconceptions held:
                  qkv_runtime/practice.py, the rule the release's offline self-check shares; and here the fsrs
                  review cards) and the next problem chosen from it
    catalogue.py  the bank's problems as the rule sees them: id, topic, the misconceptions each can name
    answers.py    a written variant's typed answers judged by the kinds' own code: each part's verdict, the
                  misconception named, the share of the points (the service's judge; no student code runs)
    history.py    the edge: a student's tries kept in a file of their own (owner-only), read bounded; a damaged or
                  foreign file is put aside with a one-line message and practice starts afresh

docs/exam-prep.md states the rules for students and instructors.
"""

from autograder.practice.rule import (
    CLEARED_AFTER, FALL_BACK, STREAK_STEP, HeldMisconception, Memory, NextProblem, PracticeProblem, ProblemMemory,
    Reason, Try, after, next_problem, rating_of, remember,
)

__all__ = [
    "CLEARED_AFTER", "FALL_BACK", "STREAK_STEP", "HeldMisconception", "Memory", "NextProblem", "PracticeProblem",
    "ProblemMemory", "Reason", "Try", "after", "next_problem", "rating_of", "remember",
]
