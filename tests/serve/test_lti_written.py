"""LTI grade passback under the written-answer policy (serve/lti/grades.py, grade/written_policy.py): under `hidden` a
score posted while hand-in is open would tell a student which fixed written items are right, so the local platform
(tests/lti_platform.py, the AGS score service as its specification shapes it) receives nothing until hand-in has
closed for everyone, a classmate's extension included; then the whole score, FullyGraded."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from autograder.serve.lti.grades import HELD
from conftest import QKV
from lti_platform import Platform
from served_course import class_sample
from serve_client import wait_for
from servers import ServerProcess
from test_lti import NAME, ROSTER, Tool, launch, learner, lti_course

pytestmark = pytest.mark.slow  # a course served twice, a file graded in a sandbox

CHO = learner("1003", "cho@uni.example")  # s2026003 in the roster


def roster_with(folder: Path, extension: str) -> Path:
    """The class list with Cho's extension `extension` (empty: none) and nobody else's."""
    lines = ROSTER.read_text(encoding="utf-8").splitlines()
    head, rows = lines[0], [line.rsplit(",", 1)[0] + "," for line in lines[1:]]
    rows = [row + extension if row.startswith("s2026003,") else row for row in rows]
    path = folder / f"roster-{'open' if extension else 'closed'}.csv"
    path.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")
    return path


@contextlib.contextmanager
def serving(root: Path, config: dict, platform: Platform, roster: Path) -> Iterator[Tool]:
    def command(port: int) -> list:
        lti = platform.course_settings(f"http://127.0.0.1:{port}", "lti-keys")
        (root / "course.yaml").write_text(yaml.safe_dump({**config, "lti": lti}), encoding="utf-8")
        return [QKV, "--course", root, "serve", NAME, "--roster", roster, "--db", root / "store", "--port", port,
                "--jobs", 1, "--lti-sync-hours", 0]

    with ServerProcess(command, cwd=root) as server:
        yield Tool(root, str(root / "store"), server)


def scores_row(tool: Tool, attempt: str) -> tuple | None:
    """(sent_at, error, final) of the attempt's score in the LMS outbox, or None before it is queued."""
    rows = tool.rows("SELECT s.sent_at, s.error, g.final FROM lti_scores AS s JOIN gradings AS g ON g.id = s.grading"
                     f" WHERE s.attempt = '{attempt}'")
    return tuple(rows[0]) if rows else None


def test_a_score_waits_for_hand_in_to_close_for_everyone_then_goes_whole(served_numpy, tmp_path_factory):
    root, config = lti_course(served_numpy, tmp_path_factory)
    meta_path = root / "dist" / NAME / "autograder" / "assignment.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    # the assignment's own dates are past; Cho's extension alone keeps hand-in open; the manifest's default rule
    meta["due"], meta["late"] = (now - dt.timedelta(days=2)).isoformat(), {"last": (now - dt.timedelta(days=1))
                                                                          .isoformat()}
    meta["written_attempts"] = {"rule": "hidden"}
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    platform = Platform().start()
    try:
        with serving(root, config, platform, roster_with(root, "3000-01-01T00:00+00:00")) as tool:
            browser, answer, _ = launch(tool, platform, CHO)
            assert answer.status_code == 303
            sample = class_sample("ada.py").read_bytes()
            handed = browser.hand_in(NAME, "ada.py", sample)
            assert handed.status_code == 303, handed.text[:500]
            attempt = handed.headers["location"].rsplit("/", 1)[1]
            wait_for(lambda: (scores_row(tool, attempt) or (None, ""))[1] == HELD, "the score held",
                     lambda: scores_row(tool, attempt))
            assert scores_row(tool, attempt)[0] is None
            assert [s for _, s in platform.scores if s["userId"] == CHO.sub] == []
        # Cho's extension withdrawn: hand-in has closed for everyone
        with serving(root, config, platform, roster_with(root, "")) as tool:
            wait_for(lambda: (scores_row(tool, attempt) or (None,))[0] is not None, "the score posted",
                     lambda: scores_row(tool, attempt))
            final = scores_row(tool, attempt)[2]
    finally:
        platform.stop()
    mine = [s for _, s in platform.scores if s["userId"] == CHO.sub]
    assert len(mine) == 1, mine
    assert mine[0]["scoreGiven"] == final and mine[0]["gradingProgress"] == "FullyGraded"
