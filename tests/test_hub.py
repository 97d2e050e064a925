"""`qkv serve` inside a real JupyterHub (issue 49): JupyterHub 6.1.1 from PyPI on loopback, its proxy
(configurable-http-proxy from npm, `make setup`), the dummy authenticator and the simple local-process spawner; qkv
serve is the hub's managed service, mounted at /services/qkv/, as docs/jupyterhub.md configures it.

Nothing of the hub is simulated: people sign in at the hub's own login page, the service signs them in through the
hub's OAuth, tokens are the hub's (made through its REST API), ada's single-user server is one the hub spawned, and
`nbgrader submit` (nbgrader's own command) writes to the exchange the service reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import nbformat
import pytest
import yaml

from autograder.grade.gradebook import GRADEBOOK_FILE
from autograder.grade.gradebook.database import open_sqlite
from conftest import QKV, ROOT, wait_for
from servers import ServerProcess, free_port

pytestmark = pytest.mark.slow  # a hub, its proxy, a managed service, a spawned server and graded attempts

NAME = "attention-numpy"
SAMPLES = ROOT / "examples" / "submissions" / NAME
CHP = ROOT / ".cache" / "npm" / "node_modules" / "configurable-http-proxy" / "bin" / "configurable-http-proxy"
PREFIX = "/services/qkv"
ROSTER = """id,name,email,hub_user
s2026001,Ada Lovelace,ada@uni.example,ada
s2026002,Ben Okafor,ben@uni.example,
s2026003,Cho Min-jun,cho@uni.example,chomj
"""
RUN_S = 900  # a bound on one command on a loaded 2-core machine, not an expected time


def require_hub() -> None:
    """Skip where JupyterHub or its proxy is not installed; in CI, which installs both (make setup), fail."""
    missing = []
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        missing.append("jupyterhub (pip install jupyterhub==6.1.1)")
    if not CHP.exists():
        missing.append("configurable-http-proxy (make setup)")
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"not installed: {', '.join(missing)}", pytrace=False)
        pytest.skip(f"not installed: {', '.join(missing)}")


@dataclass
class Hub:
    url: str  # the proxy's public address
    root: Path
    store: Path
    exchange: Path
    release: Path  # the student release, as an instructor hands it out
    admin_token: str
    process: ServerProcess

    @property
    def service(self) -> str:
        return self.url + PREFIX

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        return httpx.request(method, f"{self.url}/hub/api{path}", timeout=120,
                             headers={"authorization": f"token {self.admin_token}"}, **kwargs)

    def token_of(self, user: str, **body) -> str:
        answer = self.api("POST", f"/users/{user}/tokens", json={"note": "a test's", **body})
        assert answer.status_code in (200, 201), answer.text
        return answer.json()["token"]

    def attempts(self, student: str) -> list[tuple[str, str, str]]:
        """(id, filename, state) of `student`'s attempts, read from the gradebook itself."""
        db = open_sqlite(self.store / NAME / GRADEBOOK_FILE, read_only=True)
        try:
            return [tuple(r) for r in db.execute("SELECT id, filename, state FROM attempts WHERE student = ? "
                                                 "ORDER BY received_at", (student,))]
        finally:
            db.close()

    def log(self) -> str:
        return self.process.log.read_text(encoding="utf-8", errors="replace")


def hub_config(root: Path, course: Path, roster: Path, store: Path, service_port: int, admin_token: str,
               proxy: ServerProcess, proxy_api: int, proxy_token: str) -> str:
    """jupyterhub_config.py as docs/jupyterhub.md gives it, with the test's ports, folders and users. The proxy is
    started by the test (the hub would start it in a session of its own, out of reach of the test's stop)."""
    serve = [str(QKV), "--course", str(course), "serve", NAME, "--roster", str(roster), "--db", str(store),
             "--port", str(service_port), "--proxy", "--jobs", "1"]
    return textwrap.dedent(f"""\
        c = get_config()  # noqa: F821
        c.JupyterHub.bind_url = {proxy.url!r}
        c.JupyterHub.hub_ip = "127.0.0.1"
        c.ConfigurableHTTPProxy.should_start = False
        c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
        c.ConfigurableHTTPProxy.auth_token = {proxy_token!r}
        c.JupyterHub.db_url = "sqlite:///{root / 'jupyterhub.sqlite'}"
        c.JupyterHub.cookie_secret_file = {str(root / 'jupyterhub_cookie_secret')!r}
        c.JupyterHub.authenticator_class = "dummy"
        c.Authenticator.allow_all = True
        c.JupyterHub.spawner_class = "simple"
        c.Spawner.cmd = [{sys.executable!r}, "-m", "jupyterhub.singleuser"]
        c.SimpleLocalProcessSpawner.home_dir_template = {str(root / 'home' / '{username}')!r}
        c.Spawner.start_timeout = 600
        c.Spawner.http_timeout = 600
        c.Spawner.environment = {{"QKV_SERVICE_URL": "http://127.0.0.1:{service_port}{PREFIX}"}}
        c.JupyterHub.load_groups = {{"tas": {{"users": ["tina"]}}, "teachers": {{"users": ["ian"]}}}}
        c.JupyterHub.load_roles = [
            {{"name": "user", "scopes": ["self", "access:services!service=qkv"]}},
            {{"name": "server", "scopes": ["users:activity!user", "access:servers!server",
                                          "access:services!service=qkv"]}},
            {{"name": "qkv", "services": ["qkv"], "scopes": ["read:users:name", "read:users:groups",
                                                            "read:roles:users"]}},
            {{"name": "tester", "services": ["tester"], "scopes": ["admin:users", "admin:servers", "tokens",
                                                                  "read:users"]}},
        ]
        c.JupyterHub.services = [
            {{"name": "qkv", "url": "http://127.0.0.1:{service_port}", "command": {serve!r},
              "oauth_no_confirm": True}},
            {{"name": "tester", "api_token": {admin_token!r}}},
        ]
        """)


@pytest.fixture(scope="module")
def hub(served_numpy, tmp_path_factory) -> Iterator[Hub]:
    require_hub()
    root = tmp_path_factory.mktemp("hub")
    course = root / "course"
    shutil.copytree(served_numpy.folder, course, symlinks=True)
    exchange = root / "exchange"
    config = yaml.safe_load((course / "course.yaml").read_text(encoding="utf-8"))
    config["jupyterhub"] = {"staff_groups": ["tas"], "instructor_groups": ["teachers"], "exchange": str(exchange),
                            "course_id": "qkv", "poll_seconds": 0.2}
    (course / "course.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    roster = root / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    for folder in ("inbound", f"outbound/{NAME}"):
        (exchange / "qkv" / folder).mkdir(parents=True)
    os.chmod(exchange / "qkv" / "inbound", 0o777)  # as nbgrader's own instructions make it: anyone may hand in
    store, admin_token, proxy_token, proxy_api = root / "store", secrets.token_hex(32), secrets.token_hex(32), free_port()
    proxy = ServerProcess(lambda port: [CHP, "--ip", "127.0.0.1", "--port", port, "--api-ip", "127.0.0.1",
                                        "--api-port", proxy_api], env={"CONFIGPROXY_AUTH_TOKEN": proxy_token}, cwd=root)
    proxy.start()
    (root / "jupyterhub_config.py").write_text(
        hub_config(root, course, roster, store, free_port(), admin_token, proxy, proxy_api, proxy_token),
        encoding="utf-8")
    server = ServerProcess(lambda port: [sys.executable, "-m", "jupyterhub", "-f", root / "jupyterhub_config.py",
                                         f"--JupyterHub.hub_port={port}"], cwd=root, wait_s=300)
    try:
        server.start()
        made = Hub(proxy.url, root, store, exchange, served_numpy.dist / "student", admin_token, server)
        wait_for(lambda: _answers(made.service + "/refresh.js"), "the qkv service behind the hub's proxy",
                 lambda: server.output_tail(40), seconds=300)
        yield made
    finally:
        server.close()  # the hub stops its managed service and the servers it spawned
        proxy.close()
        _end_left_behind(root)


def _end_left_behind(root: Path) -> None:
    """What the hub started in sessions of their own (the service, spawned servers) and left running, when the hub
    itself was killed: each process whose command line or environment names this test's folder, by its id."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            named = str(root).encode() in (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if named:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=10).status_code == 200
    except httpx.HTTPError:
        return False


def signed_in(hub: Hub, user: str, path: str) -> httpx.Response:
    """`user` signs in at the hub's own login page and opens the service's `path`: every redirect followed, as a
    browser follows them (the hub's OAuth included). The last response."""
    client = httpx.Client(base_url=hub.url, follow_redirects=True, timeout=120)
    page = client.get("/hub/login")
    xsrf = re.search(r'name="_xsrf"[^>]*value="([^"]+)"', page.text)
    assert page.status_code == 200 and xsrf, page.text[:2000]
    answer = client.post(f"/hub/login?next={PREFIX}{path}",
                         data={"username": user, "password": "any", "_xsrf": xsrf.group(1)})
    client.close()
    return answer


# ------------------------------------------------------------------ signing in through the hub

def test_a_student_signs_in_through_the_hub_and_lands_on_their_assignment(hub):
    """ada (roster row s2026001 by its hub_user column) opens the service: the hub's OAuth signs her in, with no
    consent page, and she is on her assignment's page, as Ada."""
    answer = signed_in(hub, "ada", f"/a/{NAME}")
    assert answer.status_code == 200, answer.text[:2000]
    assert answer.url.path == f"{PREFIX}/a/{NAME}", answer.url
    assert "Ada Lovelace" in answer.text or "s2026001" in answer.text, answer.text[:3000]
    assert f'action="{PREFIX}/a/{NAME}/attempts"' in answer.text  # the page's own links are under the prefix


def test_a_hub_user_named_by_the_roster_id_signs_in_as_that_student(hub):
    answer = signed_in(hub, "s2026002", f"/a/{NAME}")
    assert answer.status_code == 200 and answer.url.path == f"{PREFIX}/a/{NAME}", answer.text[:2000]


def test_staff_by_hub_group_see_the_class(hub):
    answer = signed_in(hub, "tina", f"/a/{NAME}")
    assert answer.status_code == 200, answer.text[:2000]
    assert answer.url.path == f"{PREFIX}/a/{NAME}/class"
    assert "s2026001" in answer.text and "s2026003" in answer.text


@pytest.mark.parametrize("user", ["mallory", "chomj2", "s2026003"])
def test_a_hub_user_not_on_the_roster_is_refused_in_one_sentence(hub, user):
    """s2026003's row names another hub user (chomj), so the hub user s2026003 is not that student."""
    answer = signed_in(hub, user, f"/a/{NAME}")
    assert answer.status_code == 403
    assert f"hub user {user!r} is not on this course&#39;s roster: ask your instructor to add you" in answer.text \
        or f"hub user &#39;{user}&#39; is not on this course&#39;s roster" in answer.text, answer.text[:3000]
