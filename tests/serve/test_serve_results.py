"""autograder/serve/results.py: a held look at a waiting attempt is told, on its own event loop, when the grader's
thread says the attempt's grading is stored; no other look is."""

from __future__ import annotations

import asyncio
import threading

from autograder.serve.results import ResultWatch

BOUND_S = 60.0  # a bound on a loaded machine, not an expected time



def _run_alone(coroutine_function):
    """asyncio.run in a thread of its own: a browser test's Playwright (its sync API) may keep an event loop running
    in this worker's main thread, where asyncio.run refuses to start."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(coroutine_function())).result()

def test_a_held_look_is_told_from_the_graders_thread_and_no_other_look_is() -> None:
    watch = ResultWatch()

    async def held() -> tuple[bool, int]:
        with watch.watching("a1") as told, watch.watching("a2") as other:
            assert watch.held() == 2
            threading.Thread(target=watch.recorded, args=("a1",)).start()
            await asyncio.wait_for(told.wait(), BOUND_S)
            await asyncio.sleep(0)  # anything else the thread set would be set by now
            return other.is_set(), watch.held()
    other_told, held_inside = _run_alone(held)
    assert not other_told and held_inside == 2
    assert watch.held() == 0  # a look that ended is forgotten


def test_a_grading_told_before_the_look_is_held_is_not_remembered() -> None:
    # the held look reads the attempt after it starts watching (serve/app/student.py), so a grading stored earlier
    # is seen by that read: the watch need not remember it, and does not
    watch = ResultWatch()
    watch.recorded("a1")

    async def held() -> bool:
        with watch.watching("a1") as told:
            await asyncio.sleep(0)
            return told.is_set()
    assert _run_alone(held) is False
