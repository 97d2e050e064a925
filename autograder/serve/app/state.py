"""What the service's endpoints share, typed: the served assignments and their gradebooks, the accounts, the
roster, the graders, the staff's notes, the LTI tool and the hub; and the one hand-in path, the form's and the API's.

Built once by `qkv serve` (serve/command.py) before the app starts, and read by each endpoint from its app
(`state_of`): no endpoint reads the process's folder or environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Protocol, Union

from starlette.requests import Request

from autograder.grade.gradebook import Gradebook
from autograder.serve.app.site import Site
from autograder.serve.course import ServedAssignment
from autograder.serve.grader import Grader
from autograder.serve.handin import Accepted, Refused, hand_in
from autograder.serve.results import ResultWatch
from autograder.serve.signin import SignIns

if TYPE_CHECKING:  # the LMS library is imported only where the course is an LTI tool
    from autograder.serve.hub.signin import Hub
    from autograder.serve.lti.launch import LtiTool
    from autograder.serve.exams import ExamRooms
    from autograder.serve.practice import PracticeSpace


class Background(Protocol):
    """A loop the service runs beside its web app in a thread of its own (the LTI score poster and class-list
    puller, the hub's exchange intake, the practice space's code graders): started as the app starts, stopped
    as it stops."""

    def start(self) -> object: ...

    def stop(self) -> None: ...


@dataclass
class ServiceState(Site):
    books: dict[str, Gradebook] = field(default_factory=dict)
    graders: dict[str, Grader] = field(default_factory=dict)  # started and stopped in the app's lifespan
    background: list[Background] = field(default_factory=list)  # started after the graders, stopped before them
    notes: dict[str, str] = field(default_factory=dict)  # by assignment: what the class page says at the top
    lti: Optional[LtiTool] = None  # when course.yaml has an `lti:` section
    hub: Optional[Hub] = None  # when course.yaml has a `jupyterhub:` section: the hub signs people in
    practice: Optional[PracticeSpace] = None  # when course.yaml has a `practice:` section
    exams: Optional[ExamRooms] = None  # when course.yaml has an `exams:` section
    results: ResultWatch = field(default_factory=ResultWatch)  # held looks at waiting attempts, told by the graders
    sign_ins: SignIns = field(init=False)

    def __post_init__(self) -> None:
        self.sign_ins = SignIns(self.accounts)

    def wake(self, name: str) -> None:
        """Tell the assignment's grader an attempt waits (else it looks within a second anyway)."""
        if name in self.graders:
            self.graders[name].wake()

    def receive(self, a: ServedAssignment, student: str, filename: str, body: bytes,
                now: float, size: Optional[int] = None) -> Union[Accepted, Refused]:
        """The one hand-in path, the browser's form and the API's alike: checked and stored as an attempt (or
        refused in one sentence), and the grader woken."""
        outcome = hand_in(a, self.books[a.name], self.roster, student, filename, body, now, size=size)
        if isinstance(outcome, Accepted):
            self.wake(a.name)
        return outcome


def state_of(request: Request) -> ServiceState:
    state = request.app.state.service
    assert isinstance(state, ServiceState)
    return state


__all__ = ["Background", "ServiceState", "state_of"]
