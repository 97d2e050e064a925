"""The loops `qkv serve` runs beside its web app (the LTI score poster and class-list puller, the hub's exchange
intake: ServiceState.background) start in the app's lifespan as uvicorn starts it, and stop in it as uvicorn stops:
no thread of theirs outlives the server."""

from __future__ import annotations

import threading
from pathlib import Path

import uvicorn

from autograder.serve.app.state import ServiceState
from autograder.serve.course import open_accounts
from autograder.serve.hub.exchange import ExchangeIntake
from autograder.serve.lti.grades import ScorePoster
from autograder.serve.lti.roster_sync import RosterPuller
from autograder.serve.web import make_app
from conftest import wait_for
from servers import free_port

LOOPS = {"qkv-lti-scores", "qkv-lti-roster", "qkv-exchange"}


def running() -> set[str]:
    return {thread.name for thread in threading.enumerate() if thread.is_alive()} & LOOPS


def test_uvicorn_starts_the_loops_beside_the_app_with_it_and_stops_them_with_it(tmp_path: Path) -> None:
    inbound = tmp_path / "exchange" / "course" / "inbound"
    inbound.mkdir(parents=True)
    said: list[str] = []
    # the real loops, with nothing to post, pull or take in: no LMS, no assignment
    loops = [ScorePoster(None, {}, {}, said.append), RosterPuller(None, (), None, 3600.0, said.append),
             ExchangeIntake(inbound, "course", {}, {}, None, lambda name: None, said.append, poll_seconds=0.05)]
    assert running() == set()  # made, not started: `qkv serve` leaves their start to the app
    with open_accounts(tmp_path) as accounts:
        state = ServiceState({}, accounts, None, background=list(loops))
        server = uvicorn.Server(uvicorn.Config(make_app(state), host="127.0.0.1", port=free_port(),
                                               log_level="warning", lifespan="on"))
        serving = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
        serving.start()
        try:
            wait_for(lambda: server.started or not serving.is_alive(), "server started")
            assert server.started and running() == LOOPS
        finally:
            server.should_exit = True
            serving.join(120)
    assert not serving.is_alive() and running() == set() and said == []
