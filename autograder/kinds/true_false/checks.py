"""`qkv validate`'s checks that a true/false problem does not give its verdict away: a problem in, findings out.

A student who knows nothing reads every word around the statement, so:
- the prompt is the kind's own, one text for every statement (`NEUTRAL_PROMPT`); a file that
  brings another is refused;
- everything a student is shown of the problem (the release, a student's own text, the notebook
  cell and its hints, the exam paper and its blanks, the drill, the quiz) is rendered twice, as
  the problem is and with its verdict flipped, and must be the same text (`student_texts`);
- a statement without a follow-up can only be true (a false one must have one), so every
  statement has one;
- a follow-up question or a title must not take the verdict for granted: `presupposing` finds
  the usual slips ("why ...", "then ...", "actually", "however small", "which change makes it
  true"). A word list catches wording, not meaning: the follow-up must be a question that a
  student who believes the statement and one who doubts it both have to answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

NEUTRAL_PROMPT = ("Decide whether the statement is true or false, then answer the follow-up question: "
                  "the same question, whichever you decide.")

# each: a pattern (matched without regard to case) and why it tells the verdict
PRESUPPOSING: tuple[tuple[str, str], ...] = (
    (r"^\W*(?:and\s+|so\s+|then\s+)?why\b", "a question asking why takes its premise as given"),
    (r"^\W*then\b", "'then' goes on from the statement as if it held"),
    (r"\bactually\b|\breally\b|\bin fact\b|\bindeed\b", "it sets the truth against the statement"),
    (r"\bhowever\b|\beven though\b|\bdespite\b|\bnevertheless\b|\bstill\b", "it concedes the statement's point"),
    (r"\bmakes?\s+(?:it|this|that|the\s+statement)\s+(?:true|false|right|wrong|correct)\b",
     "it says which way the statement must be changed"),
    (r"\bcorrect(?:ed)?\s+(?:statement|version)\b|\b(?:error|mistake|flaw)\s+in\s+the\s+statement\b",
     "it says the statement needs correcting"),
)


def presupposing(text: str) -> tuple[str, str] | None:
    """(the words, why they tell the verdict) of the first presupposing phrase in `text`, or None."""
    for pattern, why in PRESUPPOSING:
        found = re.search(pattern, text, flags=re.IGNORECASE)
        if found:
            return found.group(0).strip(" ,.?"), why
    return None


@dataclass(frozen=True)
class _Release:
    """What `release_prompt` reads of a manifest: the kinds never import the build stage."""

    variants: str
    seed: int = 0


def _quiz_texts(kind, problem) -> list[str]:
    out = []
    for group in kind.lms_groups(problem, problem.points, 0, 1):
        for question in group.questions:
            # the feedback and which choice is marked right are shown after the attempt, with the key
            for part in (question, *question.parts):
                out += [part.title, part.text, *(c.text for c in part.choices), *(b.label for b in part.blanks)]
    return out


def student_texts(kind, problem) -> dict[str, str]:
    """Route -> everything a student reads of the problem there, before answering."""
    same = kind.variant(problem, 0, "same", None)
    own = kind.variant(problem, 0, "per_student", "a-student")
    paper, blanks = kind.paper_question(problem, own)
    drill = [kind.drill_text(problem, own), *(q.label for q in kind.drill_questions(problem, own))]
    return {
        "title": problem.title,
        "release": kind.release_prompt(problem, _Release("same")),
        "per-student release": kind.release_prompt(problem, _Release("per_student")),
        "class text": kind.question_markdown(problem, same),
        "student's own text": kind.question_markdown(problem, own),
        "notebook cell": "\n".join([kind.student_cell(problem), kind.answer_hint(problem), *kind.answer_notes(problem)]),
        "exam paper": "\n".join([paper, *(b.label for b in blanks)]),
        "drill": "\n".join(drill),
        "quiz": "\n".join(_quiz_texts(kind, problem)),
    }


def flipped(problem: Any) -> Any:
    """The problem with the other verdict, carrying what that verdict needs (a correction); not re-validated, so
    that a true statement without a follow-up can be flipped too."""
    return problem.model_copy(update={"answer": not problem.answer,
                                      "correction": problem.correction or problem.reason})


def verdict_findings(kind, problem) -> list[str]:
    """Everything that lets a student read the verdict off the problem instead of judging the statement."""
    out = []
    if problem.prompt != NEUTRAL_PROMPT:
        out.append(f"prompt: a true/false prompt is the kind's own, the same for every statement "
                   f"(\"{NEUTRAL_PROMPT}\"); remove this one: a prompt of its own can say which verdict is expected, "
                   "and what the student must know belongs in the statement")
    if problem.follow_up is None:
        out.append("follow_up: a statement without a follow-up can only be true (a false one needs a follow-up), "
                   "which gives its verdict away; give it a follow-up")
    for field, text in (("title", problem.title), ("follow_up.question", getattr(problem.follow_up, "question", ""))):
        found = presupposing(text)
        if found:
            out.append(f"{field}: '{found[0]}' takes the verdict for granted ({found[1]}); ask what a student who "
                       "believes the statement and one who doubts it both have to answer")
    shown, other = student_texts(kind, problem), student_texts(kind, flipped(problem))
    changed = [route for route in shown if shown[route] != other[route]]
    if changed:
        out.append(f"statement: what a student reads changes when the verdict is flipped ({', '.join(changed)}); "
                   "it must read the same for a true and a false statement")
    return out
