"""The interface of a problem kind, and the behaviour kinds answered in `ANSWERS` share.

A `Kind` takes problems of its own model (for the build also the assignment the
problem is placed in and the grading bundle, as far as the protocols below say a
kind reads them) and gives what each stage asks of it: text, notebook cells,
self-check data, verdicts, answer keys, exam blanks, drill questions and quiz
questions (the values of items.py). `WrittenKind` is the part shared by kinds
answered in `ANSWERS`, and `AllOrNothingKind` that of those with one answer, right
or wrong. Kinds import qkv_runtime and one another, never the bank or a stage, not
even for typing: the stages hand them objects with what the protocols `Draws`,
`Build`, `Placed`, `CodeProblems` and `Guess` name (the build's manifest, assignment and
assigned problems, and the grading bundle, are such objects), so every stage can
import the kinds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from autograder.kinds.cells import plain_literal
from autograder.kinds.items import Blank, DrillQuestion, Marked, ProblemKey, Question, QuestionGroup, Variant, Verdict
from autograder.kinds.model import ProblemBase, Track

CLASS = "*"  # the student key of class-wide variants


class Draws(Protocol):
    """How an assignment draws numbers and orders: its seed and its `variants:` mode, "same" or "per_student"."""

    @property
    def seed(self) -> int: ...

    @property
    def variants(self) -> str: ...


class Build(Protocol):
    """The assignment a problem is built into, as far as a kind reads it."""

    @property
    def name(self) -> str: ...

    @property
    def track(self) -> Track: ...

    @property
    def manifest(self) -> Draws: ...


class Placed(Protocol):
    """A problem of an assignment, with the points the assignment gives it."""

    @property
    def problem(self) -> Any: ...

    @property
    def points(self) -> float: ...


class CodeProblems(Protocol):
    """The grading bundle's code problems (tests, expected outputs, mistakes), which an implement problem's
    cells and self-check data read, its own and those of the problems it builds on."""

    @property
    def code(self) -> Sequence[Any]: ...


class Guess(Protocol):
    """A student who knows nothing (bank/guessing.py): what they type in each kind of blank; None leaves it empty."""

    @property
    def number(self) -> float | None: ...

    @property
    def shape(self) -> str | None: ...

    def says(self, problem) -> bool | None:
        """The verdict they give a true/false statement."""

    def letter(self, variant, question: str, choices: dict[str, str]) -> str | None:
        """The letter they pick among `choices` ({id: text}), shown in the order of `variant` for `question`."""


@dataclass(frozen=True)
class Options:
    """What a pick among options offers (item analysis counts each): option ids or verdicts, the right one, texts."""

    ids: tuple[str, ...]
    correct: str
    texts: tuple[str, ...]


class Kind(ABC):
    """What the pipeline asks of one kind of problem; autograder.kinds registers one instance per kind."""

    name: ClassVar[str]  # the `kind:` of its problem files
    model: ClassVar[type[ProblemBase]]  # its pydantic model, whose `kind` is Literal[name]
    code: ClassVar[bool] = False  # answered with a function the grader runs, not an ANSWERS entry
    # the self-check's judge of its ANSWERS entry (qkv_selfcheck/written.py), which cannot import the kinds
    selfcheck_judge: ClassVar[str | None] = None
    parameterised: ClassVar[bool] = False  # its numbers or the order of its choices are drawn per seed and student
    per_student_what: ClassVar[str] = "numbers"  # what of it is each student's own, in the release's words
    # its answers may hold a free-text correction, kept for the instructor to read (qkv stats) and never scored
    written_correction: ClassVar[bool] = False

    # ------------------------------------------------------------ bank

    def refs(self, problem) -> list[tuple[str, str]]:
        """(field, dotted reference) pairs the problem depends on; `qkv validate` resolves them first."""
        return []

    def check(self, problem) -> list[str]:
        """What else `qkv validate` finds wrong with the problem, as 'field: reason' strings."""
        return self.render_findings(problem)

    def render_findings(self, problem, variant: Variant | None = None) -> list[str]:
        import jinja2  # a build dependency, as in numeric/render.py: grading imports the kinds without it

        out = []
        for field, render in (("prompt", self.prompt_text), ("solution", self.solution_text)):
            try:
                render(problem, variant)
            except (jinja2.TemplateError, TypeError, ValueError, KeyError) as err:
                out.append(f"{field}: template does not render: {err}")
        return out

    def variant(self, problem, seed: int, mode: str, student: str | None) -> Variant | None:
        """Its numbers (or the order of its choices) under an assignment's `variants:` mode (as
        numeric/variants.py's variant_for); None when nothing of it is drawn."""
        return None

    def per_student(self, problem) -> bool:
        """Whether this problem's prompt differs between students of a per-student assignment."""
        return self.parameterised

    def own_numbers(self, problem) -> bool:
        """Whether each student of a per-student assignment computes numbers drawn for them alone, answered in
        parts with tolerances (the numeric kind's `parts` and variants): `qkv copying` looks for students who
        answered with another student's numbers."""
        return False

    def prompt_text(self, problem, variant: Variant | None = None) -> str:
        return problem.prompt

    def solution_text(self, problem, variant: Variant | None = None) -> str:
        return problem.solution

    def takes_track(self, problem, track: str) -> bool:
        """Whether an assignment of this track (numpy, torch) can use the problem."""
        return True

    # ----------------------------------------------- measures (bank/measures.py, classroom/stats.py)

    def truth(self, problem) -> bool | None:
        """The verdict a student guessing true or false faces; None for kinds without one."""
        return None

    def choice_sets(self, problem) -> list[tuple[str, dict[str, str], str]]:
        """(field, {choice id: text}, right id) of each set of choices a guesser may pick among."""
        return []

    def numbers_asked(self, problem) -> list[float]:
        """Every number a student of this problem may be asked for (no other problem may quote one)."""
        return []

    def texts_shown(self, problem) -> list[tuple[str, str]]:
        """(field, text) of what a student reads before answering."""
        return [("prompt", problem.prompt)]

    def guessed(self, problem, variant, guess: Guess) -> Any:
        """What `guess` hands in for the problem, as a student would (None: nothing; code is not guessed)."""
        return None

    def draw_summary(self, problem):
        """How varied and how workable its drawn numbers are (numeric/checks.py's DrawSummary), for validate's
        table; None for kinds without numbers to draw."""
        return None

    def options(self, problem) -> Options | None:
        """What its answer picks among, for the distractor analysis; None when the answer is not a pick."""
        return None

    def chosen(self, problem, answer: Any, variant: Variant | None) -> str:
        """The option of `options` a student's answer picks; AnswerFormatError when it picks none."""
        raise NotImplementedError(f"{self.name} answers are not a pick among options")

    # ---------------------------------- an ANSWERS entry (WrittenKind's; a code kind is answered by a function)

    def answer(self, problem, variant: Variant | None) -> object:
        """What a right student writes in ANSWERS; `variant` holds the numbers of a parameterised kind."""
        raise NotImplementedError(f"{self.name} problems are not answered in ANSWERS")

    def placeholder(self, problem) -> str:
        """The ANSWERS entry of the release, before the student fills it in."""
        raise NotImplementedError(f"{self.name} problems are not answered in ANSWERS")

    def grade(self, problem, answer: Any, variant: Variant | None) -> Marked:
        """An answered ANSWERS entry, judged for `qkv grade`."""
        raise NotImplementedError(f"{self.name} problems are not answered in ANSWERS")

    def question_markdown(self, problem, variant: Variant | None) -> str:
        """What the student reads to answer: the prompt, with the statement or choices it asks about."""
        return self.prompt_text(problem, variant)

    def blanks(self, problem, variant: Variant | None) -> tuple[Blank, ...]:
        """The blanks of an exam paper."""
        return self.paper_question(problem, variant)[1]

    # ----------------------------------------------------------- build

    @abstractmethod
    def release_prompt(self, problem, manifest: Draws) -> str:
        """The body of the problem's section in PROBLEMS.md and the notebooks."""

    @abstractmethod
    def student_cell(self, problem) -> str:
        """The notebook cell the student fills in."""

    @abstractmethod
    def nbgrader_solution(self, assigned: Placed, assignment: Build) -> str:
        """nbgrader's solution cell: the answer between BEGIN and END SOLUTION."""

    @abstractmethod
    def nbgrader_tests(self, assigned: Placed, assignment: Build, bundle: CodeProblems) -> str:
        """nbgrader's autograded test cell; its last line's value is the points earned."""

    @abstractmethod
    def selfcheck_data(self, assigned: Placed, assignment: Build, bundle: CodeProblems,
                       students: list[str]) -> dict[str, Any]:
        """The problem's entry in selfcheck.json, beside id, kind, title and points; never an answer in clear."""

    # ------------------------------------------------------------ exam

    @abstractmethod
    def paper_question(self, problem, variant: Variant | None) -> tuple[str, tuple[Blank, ...]]:
        """What an exam paper asks (Markdown) and the blanks the student fills in."""

    def work_lines(self, problem) -> int:
        """Lines of room an exam paper leaves under the question to work it out: none where the blanks are room
        enough (a verdict and its reason, a letter)."""
        return 0

    @abstractmethod
    def key(self, problem, variant: Variant | None) -> ProblemKey:
        """The right answers as a student writes them, the worked solution and the common wrong answers."""

    def drill_text(self, problem, variant: Variant | None) -> str:
        """What the drill shows before its questions (Markdown, turned into terminal text)."""
        return self.prompt_text(problem, variant)

    @abstractmethod
    def drill_questions(self, problem, variant: Variant | None) -> list[DrillQuestion]:
        """The answers the drill asks for, one at a time."""

    @abstractmethod
    def lms_groups(self, problem, points: float, seed: int, variants: int) -> list[QuestionGroup]:
        """Quiz question groups for learning platforms (one question per variant, every part of a variant in
        its one question); none for what a platform cannot grade."""


class WrittenKind(Kind):
    """A kind answered by an `ANSWERS[id]` entry, judged against the right answer."""

    @abstractmethod
    def answer(self, problem, variant: Variant | None) -> object:
        """What a right student writes in ANSWERS; `variant` holds the numbers of a parameterised kind."""

    def placeholder(self, problem) -> str:
        return "None"

    @abstractmethod
    def grade(self, problem, answer: Any, variant: Variant | None) -> Marked:
        """An answered ANSWERS entry, judged for `qkv grade`."""

    def per_student_note(self, problem) -> str:
        return (f"Your {self.per_student_what} depend on your student id: set `STUDENT_ID`, then run "
                f"`python qkv_check.py --student YOUR_ID --show {problem.id}` (or `show(\"{problem.id}\")` in the "
                "notebook).")

    def release_prompt(self, problem, manifest: Draws) -> str:
        if manifest.variants == "per_student" and self.per_student(problem):
            return self.per_student_note(problem)
        return self.question_markdown(problem, self.variant(problem, manifest.seed, manifest.variants, None))

    def student_cell(self, problem) -> str:
        return f"# your work\nANSWERS[{problem.id!r}] = {self.placeholder(problem)}"

    # ----------------------------------------------------------- nbgrader

    def answer_hint(self, problem) -> str:
        """The right-hand side of the ANSWERS line shown above nbgrader's solution region."""
        return self.placeholder(problem)

    def answer_notes(self, problem) -> tuple[str, ...]:
        """Comment lines that follow the hint."""
        return ()

    @abstractmethod
    def nbgrader_checks(self, problem, variant: Variant | None) -> list[str]:
        """The hidden lines of the test cell: calls of qkv_runtime.nbcells.WrittenAnswer (`_w`)."""

    def nbgrader_solution(self, assigned: Placed, assignment: Build) -> str:
        problem = assigned.problem
        pid = problem.id
        # nbgrader grades the class-wide numbers, whatever the assignment's variants
        right = self.answer(problem, self.variant(problem, assignment.manifest.seed, "same", None))
        return "\n".join([f"# your answer, in this form: ANSWERS[{pid!r}] = {self.answer_hint(problem)}",
                          *self.answer_notes(problem),
                          "### BEGIN SOLUTION", f"ANSWERS[{pid!r}] = {plain_literal(right)}", "### END SOLUTION"])

    def nbgrader_tests(self, assigned: Placed, assignment: Build, bundle: CodeProblems) -> str:
        problem = assigned.problem
        pid, points = problem.id, float(assigned.points)
        hidden = self.nbgrader_checks(problem, self.variant(problem, assignment.manifest.seed, "same", None))
        return "\n".join([
            f"# Checks ANSWERS[{pid!r}] (locked): the answer is compared when this is graded.",
            f"_w = _QkvAnswer(globals(), {pid!r}, points={points!r})",
            "### BEGIN HIDDEN TESTS", *hidden, "### END HIDDEN TESTS",
            "_w.score()",
        ])

    # ------------------------------------------------------------ exam

    @abstractmethod
    def blanks(self, problem, variant: Variant | None) -> tuple[Blank, ...]:
        """The blanks of an exam paper."""

    def paper_question(self, problem, variant: Variant | None) -> tuple[str, tuple[Blank, ...]]:
        return self.question_markdown(problem, variant), self.blanks(problem, variant)


class AllOrNothingKind(WrittenKind):
    """A written kind with one answer, right or wrong: full points or none."""

    @abstractmethod
    def read(self, problem, typed: Any, variant: Variant | None) -> object:
        """The typed answer parsed; raises AnswerFormatError when it is malformed (the drill asks again)."""

    @abstractmethod
    def judge(self, problem, typed: Any, variant: Variant | None) -> Verdict:
        """Right or wrong, with the misconception a wrong answer matches; `variant` holds a student's order."""

    def grade(self, problem, answer: Any, variant: Variant | None) -> Marked:
        verdict = self.judge(problem, answer, variant)
        return Marked(1.0 if verdict.correct else 0.0, verdict.message, verdict.misconception)

    @abstractmethod
    def drill_label(self, problem) -> str:
        """The drill's prompt for the answer, e.g. "true or false"."""

    def drill_questions(self, problem, variant: Variant | None) -> list[DrillQuestion]:
        return [DrillQuestion(self.drill_label(problem), lambda typed: self.read(problem, typed, variant),
                              lambda typed: self.judge(problem, typed, variant), problem.points)]

    @abstractmethod
    def lms_question(self, problem, points: float, variant: Variant | None) -> Question:
        """The one quiz question of the problem (choices in the variant's order)."""

    def lms_groups(self, problem, points: float, seed: int, variants: int) -> list[QuestionGroup]:
        variant = self.variant(problem, seed, "same", None)
        return [QuestionGroup(problem.id, problem.title, points, (self.lms_question(problem, points, variant),))]
