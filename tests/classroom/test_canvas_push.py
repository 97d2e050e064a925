"""qkv push-grades against a local HTTP server that answers Canvas's documented endpoints (courses, assignments,
submissions, submissions/update_grades), through the real canvasapi library: the dry run changes nothing,
the push posts exactly the changed grades with their comments, and Canvas's refusals are one line."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from autograder.classroom.classbook import store_class
from autograder.classroom.roster import parse_roster
from autograder.grade.gradebook import Gradebook
from autograder.results import ProblemResult, SubmissionResult, TestResult
from conftest import QKV
from conftest import said as told

pytestmark = pytest.mark.slow  # the qkv command against a local Canvas server

TOKEN = "secret-token"
SUBMISSIONS = [{"id": 1, "user_id": 1001, "assignment_id": 42, "score": None},
               {"id": 2, "user_id": 1002, "assignment_id": 42, "score": 3.0},
               {"id": 3, "user_id": 1003, "assignment_id": 42, "score": 2.0}]


class FakeCanvas(BaseHTTPRequestHandler):
    posted: list[dict] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def reply(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        if status == 401:  # as Canvas answers a bad token
            self.send_header("WWW-Authenticate", 'Bearer realm="canvas-lms"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def authorised(self) -> bool:
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self.reply(401, {"errors": [{"message": "Invalid access token."}]})
            return False
        return True

    def do_GET(self) -> None:
        if not self.authorised():
            return
        path = urllib.parse.urlparse(self.path).path
        if path == "/api/v1/courses/7":
            self.reply(200, {"id": 7, "name": "Transformers"})
        elif path == "/api/v1/courses/7/assignments/42":
            self.reply(200, {"id": 42, "course_id": 7, "name": "Attention", "points_possible": 4})
        elif path == "/api/v1/courses/7/assignments/42/submissions":
            self.reply(200, SUBMISSIONS)
        else:
            self.reply(404, {"errors": [{"message": "The specified resource does not exist."}]})

    def do_POST(self) -> None:
        if not self.authorised():
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        if urllib.parse.urlparse(self.path).path == "/api/v1/courses/7/assignments/42/submissions/update_grades":
            FakeCanvas.posted.append(dict(urllib.parse.parse_qsl(body)))
            self.reply(200, {"id": 99, "workflow_state": "queued", "url": "/api/v1/progress/99"})
        else:
            self.reply(404, {"errors": [{"message": "The specified resource does not exist."}]})


@pytest.fixture
def canvas():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeCanvas)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeCanvas.posted = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def grades(tmp_path):
    roster = parse_roster("id,name,email,lms_id\na,A,a@x,1001\nb,B,b@x,1002\nc,C,c@x,1003\nd,D,d@x,\n", "r.csv")
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        book.check_assignment("tiny", "f" * 64)
        for student, score in (("a", 4.0), ("b", 3.0), ("c", 1.0), ("d", 2.0)):
            test = TestResult("P", "t", "hidden", score, 4.0, score == 4.0, "")
            book.record(SubmissionResult(student, "x", "graded", "", score, 4.0,
                                         (ProblemResult("P", "implement", score, 4.0, "", (test,)),)), "bwrap")
        store_class(book, roster, {}, "Tiny")
    return tmp_path


def push(url: str, grades, *extra: str, token: str = TOKEN, assignment: str = "42") -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "150", "CANVAS_API_TOKEN": token}
    return subprocess.run([str(QKV), "push-grades", "tiny", "--canvas", url, "--course", "7", "--assignment", assignment,
                           "--grades", str(grades), *extra], capture_output=True, text=True, env=env, timeout=60)


def test_a_dry_run_shows_the_changes_and_posts_nothing(canvas, grades):
    done = push(canvas, grades, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "Would change in Canvas (dry run): 2 grade(s)" in done.stdout
    assert "1 already right in Canvas" in done.stdout and "no canvas_user_id, or not listed): d" in done.stdout
    assert FakeCanvas.posted == []


def test_the_push_posts_only_the_changed_grades_with_comments(canvas, grades):
    done = push(canvas, grades)
    assert done.returncode == 0, done.stderr
    assert "Canvas job 99" in done.stdout
    (posted,) = FakeCanvas.posted
    assert posted["grade_data[1001][posted_grade]"] == "4" and posted["grade_data[1003][posted_grade]"] == "1"
    assert not any(key.startswith("grade_data[1002]") for key in posted)  # already 3 in Canvas
    assert posted["grade_data[1003][text_comment]"].startswith("1/4")


@pytest.mark.parametrize("token, assignment, said", [
    ("wrong", "42", "Canvas answered InvalidAccessToken"),
    (TOKEN, "43", "Canvas answered ResourceDoesNotExist"),
    ("", "42", "CANVAS_API_TOKEN: not set"),
])
def test_canvas_refusals_are_one_line(canvas, grades, token, assignment, said):
    done = push(canvas, grades, token=token, assignment=assignment)
    assert done.returncode == 1 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(told(done.stderr)) == 1
    assert FakeCanvas.posted == []


def test_an_unreachable_canvas_is_one_line(grades):
    done = push("http://127.0.0.1:9", grades)
    assert done.returncode == 1 and "cannot reach Canvas" in done.stderr and len(told(done.stderr)) == 1
