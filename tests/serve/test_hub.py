"""`qkv serve` inside a real JupyterHub (issue 49): JupyterHub 6.1.1 from PyPI on loopback, its proxy
(configurable-http-proxy from npm, `make setup`), the dummy authenticator and the simple local-process spawner; qkv
serve is the hub's managed service, mounted at /services/qkv/, as docs/jupyterhub.md configures it.

Nothing of the hub is simulated: people sign in at the hub's own login page, the service signs them in through the
hub's OAuth, tokens are the hub's (made through its REST API), ada's single-user server is one the hub spawned, and
`nbgrader submit` (nbgrader's own command) writes to the exchange the service reads.
"""

from __future__ import annotations

import contextlib
import html
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
from served_course import class_sample
from servers import ServerProcess, free_port

pytestmark = pytest.mark.slow  # a hub, its proxy, a managed service, a spawned server and graded attempts

NAME = "attention-numpy"
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
        c.Spawner.args = {["--allow-root"] if os.geteuid() == 0 else []!r}  # the test's own user, root or not
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
        users = made.api("POST", "/users", json={"usernames": ["ada", "s2026002", "chomj"]})
        assert users.status_code == 201, users.text
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


def signed_in(hub: Hub, user: str, path: str, client: httpx.Client | None = None) -> httpx.Response:
    """`user` signs in at the hub's own login page and opens the service's `path`: every redirect followed, as a
    browser follows them (the hub's OAuth included). The last response; `client` keeps the cookies when given."""
    browser = client or httpx.Client(base_url=hub.url, follow_redirects=True, timeout=120)
    page = browser.get("/hub/login")
    xsrf = re.search(r'name="_xsrf"[^>]*value="([^"]+)"', page.text)
    assert page.status_code == 200 and xsrf, page.text[:2000]
    answer = browser.post(f"/hub/login?next={PREFIX}{path}",
                          data={"username": user, "password": "any", "_xsrf": xsrf.group(1)})
    if client is None:
        browser.close()
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


def test_through_the_hub_the_form_hands_in_and_its_csrf_and_site_checks_hold(hub):
    """Signed in through the hub, ada hands in with her page's form (its action and her session cookie under the
    prefix); the same form without its token, or sent from another site, is refused."""
    with httpx.Client(base_url=hub.url, follow_redirects=True, timeout=120) as browser:
        page = signed_in(hub, "ada", f"/a/{NAME}", browser)
        assert all(c.path == f"{PREFIX}/" for c in browser.cookies.jar if c.name == "qkv_session"), browser.cookies
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        before = len(hub.attempts("s2026001"))
        upload = {"file": ("ada.py", (class_sample("ada.py")).read_bytes(), "text/x-python")}
        # one character changed, to one it is not (a token may begin with "x", one in 64)
        tampered = ("y" if csrf[0] == "x" else "x") + csrf[1:]
        for forged in ({"data": {"csrf": tampered}}, {"data": {"csrf": csrf},
                                                            "headers": {"origin": "http://elsewhere.example"}}):
            assert browser.post(f"{PREFIX}/a/{NAME}/attempts", files=upload, **forged).status_code == 403
        assert len(hub.attempts("s2026001")) == before
        sent = browser.post(f"{PREFIX}/a/{NAME}/attempts", data={"csrf": csrf}, files=upload)
        assert sent.status_code == 200 and sent.url.path.startswith(f"{PREFIX}/a/{NAME}/attempts/"), sent.text[:2000]
        assert len(hub.attempts("s2026001")) == before + 1


@pytest.mark.parametrize("user", ["mallory", "chomj2", "s2026003"])
def test_a_hub_user_not_on_the_roster_is_refused_in_one_sentence(hub, user):
    """s2026003's row names another hub user (chomj), so the hub user s2026003 is not that student."""
    answer = signed_in(hub, user, f"/a/{NAME}")
    assert answer.status_code == 403
    assert f"hub user {user!r} is not on this course's roster: ask your instructor to add you" in \
        html.unescape(answer.text), answer.text[:3000]


# ------------------------------------------------------------------ handing in with the hub's tokens

def server_environment(hub: Hub, user: str) -> dict[str, str]:
    """The environment of `user`'s single-user server, spawned by the hub (its JUPYTERHUB_API_TOKEN, and the
    QKV_SERVICE_URL the hub's configuration gives every server), read from the running process."""
    answer = hub.api("POST", f"/users/{user}/server")
    assert answer.status_code in (201, 202, 400), answer.text  # 400: already running

    def ready() -> bool:
        server = hub.api("GET", f"/users/{user}").json().get("servers", {}).get("")
        if server is None:  # it ended before it was ready
            pytest.fail(f"{user}'s server stopped; the hub's log ends:\n{hub.process.output_tail(30)}", pytrace=False)
        return bool(server.get("ready"))
    wait_for(ready, f"{user}'s server", lambda: hub.process.output_tail(30), seconds=600)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            pairs = [p.split(b"=", 1) for p in (entry / "environ").read_bytes().split(b"\0") if b"=" in p]
        except OSError:
            continue
        env = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}
        if env.get("JUPYTERHUB_USER") == user and env.get("JUPYTERHUB_API_TOKEN") and "JUPYTERHUB_SERVER_NAME" in env:
            return env
    pytest.fail(f"no process of {user}'s server found", pytrace=False)


def submit(hub: Hub, env: dict[str, str], file: str) -> subprocess.CompletedProcess:
    """`python qkv_check.py --submit FILE` in a copy of the release in the user's home, in the server's environment."""
    home = Path(env.get("HOME", hub.root))
    release = home / "release"
    if not release.exists():
        shutil.copytree(hub.release, release)
    shutil.copy(class_sample(file), release / file)
    return subprocess.run([sys.executable, str(release / "qkv_check.py"), "--submit", file, "--wait", "600"],
                          cwd=release, env=env, capture_output=True, text=True, timeout=RUN_S,
                          stdin=subprocess.DEVNULL)


def test_qkv_check_submit_in_a_hub_server_hands_in_with_the_hub_token(hub):
    """In ada's own server (spawned by the hub), with no link anywhere: the server's hub token hands ada.py in as
    s2026001's attempt, and the checker prints the score and the feedback page under the service's address."""
    env = server_environment(hub, "ada")
    assert "QKV_TOKEN" not in env and env["QKV_SERVICE_URL"].endswith(PREFIX)
    before = len(hub.attempts("s2026001"))
    done = submit(hub, env, "ada.py")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    scored = re.search(r"score (\d+(?:\.\d+)?) / (\d+(?:\.\d+)?)", out)
    assert scored, out
    if before == 0:  # the first attempt is on the release's numbers, which ada.py answers: full marks
        assert scored[1] == scored[2], out
    else:  # a later attempt draws fresh numbers (issue 47): ada.py's code still earns its points
        assert 0 < float(scored[1]) < float(scored[2]), out
    assert f"feedback: {env['QKV_SERVICE_URL']}/a/{NAME}/attempts/" in out
    assert env["JUPYTERHUB_API_TOKEN"] not in out
    attempts = hub.attempts("s2026001")
    assert len(attempts) == before + 1 and attempts[-1][1:] == ("ada.py", "graded")


def api(hub: Hub, method: str, path: str, token: str, **kwargs) -> httpx.Response:
    return httpx.request(method, f"{hub.service}/api/a/{NAME}{path}", timeout=120,
                         headers={"authorization": f"Bearer {token}"}, **kwargs)


def test_another_users_token_hands_in_as_that_user_and_reads_nothing_of_anothers(hub):
    ada, ben = hub.token_of("ada"), hub.token_of("s2026002")
    sent = api(hub, "POST", "/attempts?filename=ada.py", ben, content=(class_sample("ada.py")).read_bytes())
    assert sent.status_code == 202, sent.text
    bens = sent.json()["attempt"]
    assert bens in [a[0] for a in hub.attempts("s2026002")] and bens not in [a[0] for a in hub.attempts("s2026001")]
    assert api(hub, "GET", f"/attempts/{bens}", ben).status_code == 200
    refused = api(hub, "GET", f"/attempts/{bens}", ada)
    assert refused.status_code == 404 and refused.json() == {"error": "no such attempt"}


@pytest.mark.parametrize("which", ["no access to the service", "a service's token", "not the hub's"])
def test_a_token_that_is_not_a_users_with_access_is_refused(hub, which):
    token = {"no access to the service": lambda: hub.token_of("ada", scopes=["read:users:name!user"]),
             "a service's token": lambda: hub.admin_token,
             "not the hub's": lambda: secrets.token_hex(16)}[which]()
    before = len(hub.attempts("s2026001"))
    answer = api(hub, "POST", "/attempts?filename=ada.py", token, content=(class_sample("ada.py")).read_bytes())
    assert answer.status_code == 401, answer.text
    assert answer.json()["error"] in ("that hub token does not carry access to this service (a token of another "
                                      "server or service?)", "that token is not valid on this hub (mistyped, "
                                                             "expired or revoked)")
    assert len(hub.attempts("s2026001")) == before


# ------------------------------------------------------------------ nbgrader's exchange

def notebook_of(source: Path) -> str:
    return nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source.read_text())]))


def nbgrader_submit(hub: Hub, user: str, work: Path) -> None:
    """nbgrader's own `nbgrader submit` of `work`/NAME, as `user`: nbgrader names a submission by its local user
    (here every hub user's server runs as the test's own), so the student id is given as a hub user's would be."""
    done = subprocess.run([sys.executable, "-m", "nbgrader", "submit", NAME, "--course", "qkv",
                           f"--Exchange.root={hub.exchange}", f"--CourseDirectory.student_id={user}"], cwd=work,
                          capture_output=True, text=True, timeout=RUN_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


def test_nbgrader_submit_to_the_exchange_is_graded_as_that_students_attempt(hub, tmp_path):
    (hub.exchange / "qkv" / "outbound" / NAME / f"{NAME}.ipynb").write_text(notebook_of(class_sample("ada.py")))
    work = tmp_path / "cho"
    (work / NAME).mkdir(parents=True)
    (work / NAME / f"{NAME}.ipynb").write_text(notebook_of(class_sample("ada.py")))
    nbgrader_submit(hub, "chomj", work)
    wait_for(lambda: any(a[1:] == (f"{NAME}.ipynb", "graded") for a in hub.attempts("s2026003")),
             "cho's exchange submission graded", lambda: hub.process.output_tail(20), seconds=600)
    attempt = next(a[0] for a in hub.attempts("s2026003") if a[1] == f"{NAME}.ipynb")
    cho, ada = hub.token_of("chomj"), hub.token_of("ada")
    seen = api(hub, "GET", f"/attempts/{attempt}", cho)
    assert seen.status_code == 200 and seen.json()["state"] == "graded" and seen.json()["score"] > 0, seen.text
    assert api(hub, "GET", f"/attempts/{attempt}", ada).status_code == 404


def test_hostile_exchange_folders_are_each_refused_in_their_own_row(hub, tmp_path):
    """Beside a good submission of ben's (graded): one whose notebook is a symlink, one that is a symlink itself,
    and one of ada's holding a file named for ben. Each refused in one line of the service's log, nothing followed,
    nothing of theirs an attempt."""
    inbound = hub.exchange / "qkv" / "inbound"
    secret = tmp_path / "secret.ipynb"
    secret.write_text(notebook_of(class_sample("ada.py")))
    stamp = "2026-12-06 10:00:00.000000 UTC"
    linked = inbound / f"ada+{NAME}+{stamp}+linked"
    linked.mkdir()
    (linked / f"{NAME}.ipynb").symlink_to(secret)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{NAME}.ipynb").write_text(notebook_of(class_sample("ada.py")))
    (inbound / f"ada+{NAME}+{stamp}+folderlink").symlink_to(elsewhere, target_is_directory=True)
    naming = inbound / f"ada+{NAME}+{stamp}+naming"
    naming.mkdir()
    (naming / f"{NAME}.ipynb").write_text(notebook_of(class_sample("ada.py")))
    (naming / "s2026002.ipynb").write_text(notebook_of(class_sample("ada.py")))
    good = inbound / f"s2026002+{NAME}+{stamp}+good"
    good.mkdir()
    (good / f"{NAME}.ipynb").write_text(notebook_of(class_sample("ada.py")))
    before = len(hub.attempts("s2026001"))
    wait_for(lambda: any(a[1] == f"{NAME}.ipynb" for a in hub.attempts("s2026002")), "ben's exchange submission",
             lambda: hub.process.output_tail(20), seconds=600)
    hostile = (linked, naming, inbound / f"ada+{NAME}+{stamp}+folderlink")
    wait_for(lambda: all(f"{folder.name}: refused" in hub.log() for folder in hostile), "the refusals",
             lambda: hub.process.output_tail(20), seconds=300)
    log = hub.log()
    rows = {folder: next(line for line in log.splitlines() if f"exchange: {folder.name}:" in line)
            for folder in hostile}
    assert rows[linked].endswith("refused: holds a symbolic link, 'attention-numpy.ipynb': nothing is followed "
                                 "out of the exchange")
    assert rows[inbound / f"ada+{NAME}+{stamp}+folderlink"].endswith(
        "refused: is a symbolic link: nothing is followed out of the exchange")
    assert rows[naming].endswith("refused: holds 's2026002.ipynb', a file named for another student: not graded")
    assert len(hub.attempts("s2026001")) == before
