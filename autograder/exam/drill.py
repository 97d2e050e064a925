"""The practice drill (`qkv practice`): drawn exam items, or a pool of problems and the student's history, in; one
question at a time through injected `ask` and `say` functions, verdicts with the misconception a wrong answer
matches, and a score with the topics to review out. With a history (`run_practice`) each finished problem is a
try kept through an injected `keep`, and what comes next is the practice rule's choice (autograder/practice/).

Answers are judged by their kind's own checkers (the grader's tolerances); a
numeric answer that equals a misconception's wrong-method answer is named by it.
A typo in the answer's form is asked again instead of being marked wrong. End of
input or Ctrl-C ends the drill with the summary of the problems finished so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from autograder.exam.markup import terminal_text
from autograder.exam.select import ExamItem, instantiate
from autograder.kinds import Problem, kind_of
from autograder.kinds.items import DrillQuestion
from autograder.practice.catalogue import topic_of
from autograder.practice.history import History, Pending
from autograder.practice.rule import Memory, PracticeProblem, Try, after, next_problem, remember
from qkv_runtime.answers import AnswerFormatError
from qkv_runtime.practice import held_lines

SKIP, QUIT = "skip", "quit"
HELP = ("Type your answer and press Enter; 'skip' leaves the problem (its parts still unanswered) and shows its "
        "solution, 'quit' (or Ctrl-D) ends with your score.")


@dataclass(frozen=True)
class ProblemScore:
    problem_id: str
    topic: str
    earned: float
    possible: float
    misconceptions: tuple[str, ...] = ()  # named by its wrong answers, in the order named


@dataclass
class DrillSummary:
    scores: list[ProblemScore] = field(default_factory=list)
    stopped_early: bool = False

    @property
    def earned(self) -> float:
        return sum(s.earned for s in self.scores)

    @property
    def possible(self) -> float:
        return sum(s.possible for s in self.scores)

    def topics_to_review(self) -> list[tuple[str, float, float]]:
        """(topic, earned, possible) of every topic where points were lost, weakest first."""
        totals: dict[str, list[float]] = {}
        for score in self.scores:
            earned_possible = totals.setdefault(score.topic, [0.0, 0.0])
            earned_possible[0] += score.earned
            earned_possible[1] += score.possible
        lost = [(topic, e, p) for topic, (e, p) in totals.items() if e < p]
        return sorted(lost, key=lambda t: (t[1] / t[2], t[0]))


def questions(item: ExamItem) -> list[DrillQuestion]:
    return kind_of(item.problem).drill_questions(item.problem, item.variant)


def question_text(item: ExamItem) -> str:
    return terminal_text(kind_of(item.problem).drill_text(item.problem, item.variant).strip())


def solution_text(item: ExamItem) -> str:
    key = kind_of(item.problem).key(item.problem, item.variant)
    answers = "\n".join(f"  {line.label}: {line.answer}" for line in key.lines)
    return f"{answers}\n\nWorked solution:\n{terminal_text(key.solution.strip())}"


class _Stop(Exception):
    pass


def _ask_until_readable(question: DrillQuestion, ask: Callable[[str], str], say: Callable[[str], None]) -> str | None:
    """The typed answer, or None when skipped; raises _Stop on quit, end of input or Ctrl-C."""
    while True:
        try:
            typed = ask(f"  {question.label}> ").strip()
        except (EOFError, KeyboardInterrupt):
            raise _Stop from None
        if typed.lower() in (QUIT, "q", "exit"):
            raise _Stop
        if typed.lower() == SKIP:
            return None
        if typed.lower() in ("help", "?") or not typed:
            say(HELP)
            continue
        try:
            question.read(typed)
            return typed
        except AnswerFormatError as err:
            say(f"  ? {err}; try again")


def drill_problem(item: ExamItem, total: int, ask: Callable[[str], str], say: Callable[[str], None]) -> ProblemScore:
    problem = item.problem
    say(f"\n[{item.number}/{total}] {problem.title}  ({problem.topic}, {problem.points:g} pt)\n")
    say(question_text(item) + "\n")
    earned, all_right, named = 0.0, True, []
    for question in questions(item):
        typed = _ask_until_readable(question, ask, say)
        if typed is None:  # a skip leaves the problem, not the part: the parts after it are not asked
            say("  - skipped")
            all_right = False
            break
        verdict = question.judge(typed)
        if verdict.correct:
            earned += question.points
            say("  ✓ correct")
        else:
            all_right = False
            if verdict.misconception:  # the bank's verdicts carry the misconception's explanation as their message
                say(f"  ✗ not right. Misconception: {verdict.message}")
                named.append(verdict.message)
            else:
                say(f"  ✗ not right: {verdict.message}")
    if not all_right:
        say("\n" + solution_text(item))
    # parts' shares of the points need not add up in floating point (6 x 4/6 is 3.9999...): all right is full marks
    return ProblemScore(problem.id, problem.topic, problem.points if all_right else round(earned, 6), problem.points,
                        tuple(dict.fromkeys(named)))


def run_drill(items: list[ExamItem], ask: Callable[[str], str], say: Callable[[str], None]) -> DrillSummary:
    summary = DrillSummary()
    say(HELP)
    for item in items:
        try:
            summary.scores.append(drill_problem(item, len(items), ask, say))
        except _Stop:
            summary.stopped_early = True
            break
    say(summary_text(summary))
    return summary


def summary_text(summary: DrillSummary) -> str:
    lines = ["", "=" * 60]
    if summary.stopped_early:
        lines.append("Stopped early.")
    if not summary.scores:
        return "\n".join(lines + ["No problem finished, so no score yet."])
    percent = 100 * summary.earned / summary.possible
    lines.append(f"Score: {summary.earned:g} / {summary.possible:g} points ({percent:.0f}%) "
                 f"over {len(summary.scores)} problem(s)")
    review = summary.topics_to_review()
    if review:
        lines.append("Topics to review:")
        lines += [f"  - {topic}: {earned:g} / {possible:g} points" for topic, earned, possible in review]
    else:
        lines.append("Nothing to review: every answer was right.")
    return "\n".join(lines)


# ------------------------------------------------------------- with a history


@dataclass(frozen=True)
class Pick:
    problem_id: str
    seed: int
    why: str


Plan = Callable[[Memory, History, datetime], Pick | None]


def by_the_rule(catalogue: tuple[PracticeProblem, ...], new_seed: Callable[[], int]) -> Plan:
    """The problem the student stopped in first (on its variant), then the practice rule's choice, each try on
    a variant of its own."""
    known = {p.id for p in catalogue}

    def plan(memory: Memory, history: History, now: datetime) -> Pick | None:
        if history.pending is not None and history.pending.problem_id in known:
            return Pick(history.pending.problem_id, history.pending.seed, "resumed where you stopped")
        chosen = next_problem(catalogue, memory, now)
        if chosen is None:
            return None
        why = "chosen for " + chosen.reason.value + (f": {chosen.misconception}" if chosen.misconception else "")
        return Pick(chosen.problem_id, new_seed(), why)

    return plan


def in_order(items: list[ExamItem], seed: int) -> Plan:
    """A drawn drill's problems in its order, on the variants its seed gives (repeatable)."""
    picks = iter([Pick(item.problem.id, seed, "") for item in items])
    return lambda memory, history, now: next(picks, None)


def run_practice(pool: dict[str, Problem], catalogue: tuple[PracticeProblem, ...], count: int, history: History,
                 plan: Plan, keep: Callable[[History], None], ask: Callable[[str], str], say: Callable[[str], None],
                 now: Callable[[], datetime]) -> DrillSummary:
    """Up to `count` problems from `plan`, each kept as a try (and, while on screen, as the problem to resume)."""
    summary = DrillSummary()
    memory = remember(catalogue, history.tries)
    say(HELP)
    say(memory_text(catalogue, memory, len(history.tries), now()))
    for number in range(1, count + 1):
        pick = plan(memory, history, now())
        if pick is None:
            break
        problem = pool[pick.problem_id]
        history = History(history.tries, Pending(pick.problem_id, pick.seed))
        keep(history)
        if pick.why:
            say(f"\n({pick.why})")
        item = ExamItem(number, problem, instantiate(problem, pick.seed, None), topic_of(problem))
        try:
            score = drill_problem(item, count, ask, say)
        except _Stop:
            summary.stopped_early = True
            break
        share = min(1.0, score.earned / score.possible) if score.possible else 0.0
        attempt = Try(problem.id, pick.seed, now(), share, score.misconceptions)
        history = History(history.tries + (attempt,), None)
        keep(history)
        memory = after(catalogue, memory, attempt)
        summary.scores.append(score)
        say(f"  mastery of this problem: {memory.of(problem.id).mastery:.0%}")
    say(summary_text(summary))
    say(memory_text(catalogue, memory, len(history.tries), now()))
    return summary


def memory_text(catalogue: tuple[PracticeProblem, ...], memory: Memory, tries: int, now: datetime) -> str:
    if not tries:
        return "No practice kept yet: your tries will be remembered from this one on."
    lines = [f"Your practice so far: {tries} tr{'y' if tries == 1 else 'ies'}. Mastery by topic:"]
    for topic, mastery in memory.topic_mastery(catalogue).items():
        bar = "█" * round(10 * mastery) + "·" * (10 - round(10 * mastery))
        lines.append(f"  {bar} {mastery:4.0%}  {topic}")
    lines += held_lines(memory)
    known = {p.id for p in catalogue}
    due = [pid for pid, _ in memory.due(now) if pid in known]
    lines.append(f"Reviews due: {len(due)}" + (f" ({', '.join(due[:5])}{', ...' if len(due) > 5 else ''})"
                                                 if due else ""))
    return "\n".join(lines)
