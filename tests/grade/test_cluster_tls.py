"""qkv grade --cluster over TLS, on real Dask clusters (worker processes, real sandbox, real SQLite): a CA of the
test's own signs the scheduler's, the workers' and the client's certificates; the gradebook equals a local run's; a
client without a certificate from that CA is refused; a plain tcp:// address on another host is warned about; bad
certificate files are one-line errors naming the file. The certificates are made with `cryptography`, except in the
test of docs/cluster.md's `openssl` commands. On disk: local:N keeps its scratch in a private folder of its own,
whatever another user planted in Dask's default one, and a worker whose scratch folder another user could tamper
with is refused before it holds the bundle."""

from __future__ import annotations

import datetime
import json
import logging
import os
import pwd
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import dask
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from distributed import LocalCluster, Security, default_client

from autograder.errors import QkvError
from autograder.grade.cluster_security import (PlaintextClusterWarning, TlsFiles, UnsafeFolder, plaintext_warning,
                                                private_subfolder, write_private_files)
from autograder.routes.class_grading import GRADEBOOK_FILE, grade_class
from conftest import QKV, ROOT, graded_so_far, key_module, replace_function, said
from autograder.references import misconceptions

pytestmark = pytest.mark.slow  # real Dask clusters, and certificates made with openssl

TLS_CONFIG_KEYS = ("distributed.comm.tls.ca-file", "distributed.comm.tls.client.cert",
                   "distributed.comm.tls.client.key")


def write_pem(path: Path, *parts: bytes) -> Path:
    path.write_bytes(b"".join(parts))
    return path


def key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def issue(folder: Path, name: str, ca: tuple | None = None) -> tuple[Path, Path, tuple]:
    """A key and a certificate for `name` signed by `ca` (key, certificate), or a CA of its own when ca is None."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer_key, issuer = (key, subject) if ca is None else (ca[0], ca[1].subject)
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca is None, path_length=None), critical=True)
            .sign(issuer_key, hashes.SHA256()))
    cert_file = write_pem(folder / f"{name}.pem", cert.public_bytes(serialization.Encoding.PEM))
    return cert_file, write_pem(folder / f"{name}-key.pem", key_pem(key)), (key, cert)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("certs")
    ca_file, _, ca = issue(folder, "ca")
    files = {"ca": ca_file}
    for role in ("node", "client"):  # node: the scheduler's and the workers'
        files[role], files[f"{role}-key"], _ = issue(folder, role, ca)
    # an attacker's: its own CA, and a client certificate that CA signed
    files["rogue-ca"], _, rogue_ca = issue(folder, "rogue-ca")
    files["rogue"], files["rogue-key"], _ = issue(folder, "rogue", rogue_ca)
    files["client-with-key"] = write_pem(folder / "client-with-key.pem", files["client"].read_bytes(),
                                         files["client-key"].read_bytes())
    client_key = serialization.load_pem_private_key(files["client-key"].read_bytes(), None)
    files["encrypted-key"] = write_pem(folder / "encrypted-key.pem", client_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"pw")))
    files["der"] = write_pem(folder / "client.der", x509.load_pem_x509_certificate(
        files["client"].read_bytes()).public_bytes(serialization.Encoding.DER))
    return files


def client_tls(certs: dict[str, Path]) -> TlsFiles:
    return TlsFiles(certs["ca"], certs["client"], certs["client-key"])


@pytest.fixture(scope="module")
def tls_cluster(certs, tmp_path_factory):
    """Two one-thread worker processes behind a scheduler on tls://, every part with a certificate from `certs`' CA;
    their scratch in a folder of the test's own, as docs/cluster.md asks of a worker's operator."""
    security = Security(tls_ca_file=str(certs["ca"]), require_encryption=True,
                        tls_scheduler_cert=str(certs["node"]), tls_scheduler_key=str(certs["node-key"]),
                        tls_worker_cert=str(certs["node"]), tls_worker_key=str(certs["node-key"]),
                        tls_client_cert=str(certs["client"]), tls_client_key=str(certs["client-key"]))
    scratch = str(tmp_path_factory.mktemp("tls-scratch"))
    with dask.config.set({"distributed.scheduler.worker-saturation": 1.0}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               protocol="tls://", security=security, silence_logs=logging.ERROR,
                               local_directory=scratch, scheduler_kwargs={"local_directory": scratch})
    with cluster:
        assert cluster.scheduler_address.startswith("tls://")
        yield cluster


@pytest.fixture(scope="module")
def small_class(built_numpy_same, tmp_path_factory) -> tuple[Path, Path]:
    """(submissions, the folder of their local grading): a right, a wrong, a stub, an empty and a broken one."""
    folder = tmp_path_factory.mktemp("small-class")
    key = key_module(built_numpy_same.assignment)
    subs = folder / "subs"
    subs.mkdir()
    (subs / "perfect.py").write_text(key)
    (subs / "columns.py").write_text(replace_function(key, "softmax_rows", misconceptions.softmax_over_columns))
    release = built_numpy_same.out / "student" / f"{built_numpy_same.assignment.module_name}.py"
    (subs / "stub.py").write_bytes(release.read_bytes())
    (subs / "empty.py").write_text("")
    (subs / "syntax.py").write_text("def softmax_rows(S:\n")
    grade_class(built_numpy_same.out / "autograder", subs, folder / "local", jobs=2, timeout=5.0)
    return subs, folder / "local"


def assert_same_gradebook(there: Path, here: Path) -> None:
    assert (there / "gradebook.csv").read_bytes() == (here / "gradebook.csv").read_bytes()
    for student in (path.name for path in (here / "feedback").iterdir()):
        assert (there / "feedback" / student / "results.json").read_bytes() == \
            (here / "feedback" / student / "results.json").read_bytes(), student
    sql = "SELECT student, digest, status, score, max_score, isolation, result FROM submissions ORDER BY student"
    with sqlite3.connect(here / GRADEBOOK_FILE) as a, sqlite3.connect(there / GRADEBOOK_FILE) as b:
        assert b.execute(sql).fetchall() == a.execute(sql).fetchall()


def environment(**dask_settings: str) -> dict[str, str]:
    """This process's environment without any DASK_ setting of the machine's, plus `dask_settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    return {**env, **dask_settings}


def no_tls_config():
    return dask.config.set({key: None for key in TLS_CONFIG_KEYS})


def test_tls_cluster_gradebook_is_identical_to_local(built_numpy_same, small_class, tls_cluster, certs, tmp_path):
    subs, local = small_class
    with warnings.catch_warnings(record=True) as caught, no_tls_config():
        warnings.simplefilter("always")
        run = grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", timeout=5.0,
                          cluster=tls_cluster.scheduler_address, tls=client_tls(certs))
    assert run.graded_now == 5
    assert {r.student: r.status for r in run.results}["perfect"] == "graded"
    assert_same_gradebook(tmp_path / "out", local)
    assert not [w for w in caught if issubclass(w.category, PlaintextClusterWarning)]


def test_cli_takes_the_certificates_from_dask_config_when_the_options_are_absent(built_numpy_same, small_class, tls_cluster,
                                                                                  certs, tmp_path):
    """The environment variables of Dask's config, and a key that follows the certificate in its file."""
    subs, local = small_class
    env = environment(DASK_DISTRIBUTED__COMM__TLS__CA_FILE=str(certs["ca"]),
                      DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT=str(certs["client-with-key"]))
    run = subprocess.run([str(QKV), "grade", "attention-numpy", str(subs), "--dist", str(built_numpy_same.out),
                          "--out", str(tmp_path / "out"), "--timeout", "5", "--cluster", tls_cluster.scheduler_address],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "WARNING" not in run.stderr
    assert_same_gradebook(tmp_path / "out", local)


def test_local_tls_cluster_runs_encrypted_and_grades_as_locally(built_numpy_same, small_class, tmp_path):
    subs, local = small_class
    seen: set[str] = set()
    status_pages: list[int] = []

    def progress(done: int, total: int, student: str) -> None:
        client = default_client()  # the client qkv made for its LocalCluster
        seen.add(client.scheduler.address)
        seen.update(client.scheduler_info()["workers"])
        if not status_pages:  # Dask's plain-HTTP page of the workers, which a local:N scheduler serves any local user
            host, port = client.run_on_scheduler(lambda dask_scheduler: (dask_scheduler.http_server.address,
                                                                         dask_scheduler.http_server.port))
            try:
                status_pages.append(urllib.request.urlopen(f"http://{host}:{port}/info/main/workers.html").status)
            except urllib.error.HTTPError as err:
                status_pages.append(err.code)

    run = grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", timeout=5.0, cluster="local-tls:2",
                      progress=progress)
    assert run.graded_now == 5
    assert len(seen) >= 2 and all(address.startswith("tls://") for address in seen), seen
    assert status_pages == [404]
    assert_same_gradebook(tmp_path / "out", local)


def test_a_tls_address_without_certificates_is_a_one_line_error_naming_the_option(built_numpy_same, small_class,
                                                                                    tls_cluster, certs, tmp_path):
    subs, _ = small_class
    with no_tls_config(), pytest.raises(QkvError) as caught:
        grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", cluster=tls_cluster.scheduler_address)
    assert "--tls-ca" in str(caught.value) and "DASK_DISTRIBUTED__COMM__TLS__CA_FILE" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()

    with no_tls_config(), pytest.raises(QkvError) as caught:
        grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", cluster=tls_cluster.scheduler_address,
                    tls=TlsFiles(ca=certs["ca"]))
    assert str(caught.value).startswith("--tls-cert: ")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("who", ["a client with a certificate from another CA",
                                 "a scheduler the client's CA did not sign"])
def test_a_certificate_from_another_ca_is_refused_at_the_handshake(built_numpy_same, small_class, tls_cluster, certs,
                                                                     tmp_path, who):
    """The attacker may know the cluster's CA certificate (it is no secret), not a key that CA signed; and a client
    whose CA did not sign the scheduler's certificate is talking to an impostor, which gets nothing either."""
    subs, _ = small_class
    tls = (TlsFiles(certs["ca"], certs["rogue"], certs["rogue-key"]) if who.startswith("a client")
           else TlsFiles(certs["rogue-ca"], certs["client"], certs["client-key"]))
    with no_tls_config(), pytest.raises(QkvError) as caught:
        grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", cluster=tls_cluster.scheduler_address,
                    tls=tls)
    message = str(caught.value)
    assert message.startswith(tls_cluster.scheduler_address) and "TLS handshake" in message and "\n" not in message
    assert graded_so_far(tmp_path / "out" / GRADEBOOK_FILE) == 0


@pytest.mark.parametrize("address", ["tcp://192.0.2.7:8786", "tcp://grader.example.edu:8786",
                                     "tcp://[2001:db8::1]:8786", "tcp://0.0.0.0:8786", "ws://10.1.2.3:8786"])
def test_a_plain_address_on_another_host_is_warned_about(address):
    message = plaintext_warning(address)
    assert message and address in message and "\n" not in message
    assert "unencrypted" in message and "must never be reachable from untrusted networks" in message


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "tcp://localhost:8786", "tcp://[::1]:8786",
                                     "tls://192.0.2.7:8786", "wss://grader.example.edu:8786", "inproc://192.0.2.7/1/2"])
def test_an_encrypted_or_loopback_address_is_not_warned_about(address):
    assert plaintext_warning(address) is None


def test_cli_warns_once_on_stderr_before_it_connects_to_a_plain_address_on_another_host(built_numpy_same, small_class,
                                                                                          tmp_path):
    """No scheduler is there (a documentation address, RFC 5737; whatever answers, if anything does, is no Dask
    scheduler): the warning comes before the connection fails."""
    subs, _ = small_class
    env = environment(DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="1s")
    run = subprocess.run([str(QKV), "grade", "attention-numpy", str(subs), "--dist", str(built_numpy_same.out),
                          "--out", str(tmp_path / "out"), "--cluster", "tcp://203.0.113.9:8786"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 1
    lines = said(run.stderr)
    assert len(lines) == 2 and "Traceback" not in run.stderr, run.stderr
    assert lines[0].startswith("WARNING: tcp://203.0.113.9:8786 is a plain tcp:// address")
    assert "must never be reachable from untrusted networks" in lines[0]
    assert lines[1].startswith("error: tcp://203.0.113.9:8786: ")


@pytest.mark.parametrize("case, expected", [
    ("ca-missing", "{missing}: no such file (--tls-ca)"),
    ("cert-missing", "{missing}: no such file (--tls-cert)"),
    ("key-missing", "{missing}: no such file (--tls-key)"),
    ("ca-is-a-folder", "{folder}: is a folder, not a PEM file (--tls-ca)"),
    ("ca-is-a-key", "{client-key}: holds no PEM certificate"),
    ("cert-is-der", "{der}: not a PEM file (--tls-cert)"),
    ("no-key", "{client}: holds no PEM private key (--tls-cert); give the key's file with --tls-key FILE"),
    ("another-key", "{client}: this certificate (--tls-cert) does not belong to the key {rogue-key}"),
    ("encrypted-key", "{encrypted-key}: the private key is protected by a passphrase"),
    ("config-ca-missing", "{missing}: no such file (Dask's distributed.comm.tls.ca-file)"),
])
def test_bad_certificate_files_are_one_line_errors_naming_the_file(built_numpy_same, small_class, certs, tmp_path,
                                                                   case, expected):
    subs, _ = small_class
    files = {**certs, "missing": tmp_path / "nowhere" / "x.pem", "folder": tmp_path}
    good = {"ca": certs["ca"], "cert": certs["client"], "key": certs["client-key"]}
    tls = {
        "ca-missing": {**good, "ca": files["missing"]},
        "cert-missing": {**good, "cert": files["missing"]},
        "key-missing": {**good, "key": files["missing"]},
        "ca-is-a-folder": {**good, "ca": tmp_path},
        "ca-is-a-key": {**good, "ca": certs["client-key"]},
        "cert-is-der": {**good, "cert": certs["der"]},
        "no-key": {**good, "key": None},
        "another-key": {**good, "key": certs["rogue-key"]},
        "encrypted-key": {**good, "key": certs["encrypted-key"]},
        "config-ca-missing": {**good, "ca": None},
    }[case]
    settings = {key: None for key in TLS_CONFIG_KEYS}
    if case == "config-ca-missing":
        settings["distributed.comm.tls.ca-file"] = str(files["missing"])
    with dask.config.set(settings), pytest.raises(QkvError) as caught:
        grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", cluster="tls://192.0.2.7:8786",
                    tls=TlsFiles(**tls))
    assert str(caught.value).startswith(expected.format(**{k: str(v) for k, v in files.items()}))
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("cluster, tls, expected", [
    ("tcp://192.0.2.7:8786", TlsFiles(ca=Path("ca.pem")), "--tls-ca: tcp://192.0.2.7:8786 is not a TLS address"),
    ("local:2", TlsFiles(cert=Path("c.pem")), "--tls-cert: local:2 starts its cluster here"),
    ("local-tls:2", TlsFiles(key=Path("k.pem")), "--tls-key: local-tls:2 starts its cluster here"),
    (None, TlsFiles(key=Path("k.pem")), "--tls-key: certificates are for a tls:// --cluster"),
])
def test_certificates_a_cluster_would_not_use_are_an_error(built_numpy_same, small_class, tmp_path, cluster, tls, expected):
    """Whoever gives certificates believes the run is encrypted; silently unused, they would mislead."""
    subs, _ = small_class
    with pytest.raises(QkvError) as caught:
        grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", cluster=cluster, tls=tls)
    assert str(caught.value).startswith(expected)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra, expected", [
    (["--tls-ca", "nowhere/ca.pem", "--tls-cert", "c.pem"], "error: nowhere/ca.pem: no such file (--tls-ca)"),
    ([], "error: --tls-ca: tls://192.0.2.7:8786 is a TLS scheduler: give the cluster's CA certificate"),
])
def test_cli_tls_errors_are_one_line_and_leave_no_gradebook(built_numpy_same, tmp_path, extra, expected):
    (tmp_path / "subs").mkdir()
    command = [str(QKV), "grade", "attention-numpy", str(tmp_path / "subs"), "--dist", str(built_numpy_same.out),
               "--out", str(tmp_path / "out"), "--cluster", "tls://192.0.2.7:8786", *extra]
    run = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=environment())
    assert run.returncode == 1
    lines = said(run.stderr)
    assert len(lines) == 1 and lines[0].startswith(expected), run.stderr
    assert not (tmp_path / "out").exists()


def shell_block(markdown: str, containing: str) -> str:
    return next(block for block in re.findall(r"```sh\n(.*?)```", markdown, re.S) if containing in block)


def test_the_documented_openssl_and_dask_commands_make_a_cluster_qkv_grades_on(built_numpy_same, small_class, tmp_path):
    """docs/cluster.md's certificate commands, run as written; its `dask scheduler` and `dask worker` flags, bound
    to this machine's loopback and a free port; `qkv grade --tls-*` through them."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command here")
    subs, local = small_class
    folder = tmp_path / "certs"
    folder.mkdir()
    commands = shell_block((ROOT / "docs" / "cluster.md").read_text(), "openssl req")
    subprocess.run(["sh", "-e", "-c", commands], cwd=folder, check=True, capture_output=True, timeout=120)
    assert all(oct((folder / f"{role}-key.pem").stat().st_mode)[-3:] == "600" for role in ("ca", "scheduler", "client"))

    dask_bin = Path(sys.executable).with_name("dask")
    scratch = tmp_path / "dask-scratch"
    scratch.mkdir(mode=0o700)
    env = environment(DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION="1.0",
                      DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES="[]", DASK_TEMPORARY_DIRECTORY=str(scratch))
    started: list[subprocess.Popen] = []
    try:
        started.append(subprocess.Popen(
            [str(dask_bin), "scheduler", "--no-dashboard", "--host", "tls://127.0.0.1", "--port", "0",
             "--scheduler-file", "scheduler.json",
             "--tls-ca-file", "ca.pem", "--tls-cert", "scheduler.pem", "--tls-key", "scheduler-key.pem"],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        started.append(subprocess.Popen(
            [str(dask_bin), "worker", "--scheduler-file", "scheduler.json", "--nworkers", "1", "--nthreads", "1",
             "--no-dashboard", "--tls-ca-file", "ca.pem", "--tls-cert", "worker.pem", "--tls-key", "worker-key.pem",
             "--local-directory", str(scratch)],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        # the worker waits for the scheduler's file; qkv then waits for the worker (WORKER_WAIT_SECONDS)
        identity = wait_for_json(folder / "scheduler.json", started[0])
        address = identity["address"]
        assert address.startswith("tls://127.0.0.1:")
        # its HTTP server, outside TLS, serves none of the pages that name the students
        with pytest.raises(urllib.error.HTTPError) as status_page:
            urllib.request.urlopen(f"http://127.0.0.1:{identity['services']['dashboard']}/info/main/workers.html")
        assert status_page.value.code == 404
        run = subprocess.run([str(QKV), "grade", "attention-numpy", str(subs), "--dist", str(built_numpy_same.out),
                              "--out", str(tmp_path / "out"), "--timeout", "5", "--cluster", address,
                              "--tls-ca", "ca.pem", "--tls-cert", "client.pem", "--tls-key", "client-key.pem"],
                             cwd=folder, capture_output=True, text=True, env=environment(), timeout=300)
    finally:
        for process in reversed(started):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
    assert run.returncode == 0, run.stderr
    assert "WARNING" not in run.stderr
    assert_same_gradebook(tmp_path / "out", local)


def wait_for_json(path: Path, process: subprocess.Popen) -> dict:
    """The scheduler file, once the scheduler has written it whole; a guard, not a measure, bounds the wait."""
    for _ in range(1200):
        if process.poll() is not None:
            raise AssertionError(f"the scheduler exited with {process.returncode} before writing {path}")
        try:
            return json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            time.sleep(0.1)
    raise AssertionError(f"the scheduler wrote no {path}")


ATTACKER = "qkv-tester"  # the unprivileged user CI creates (tests/test_as_user.py)


def attacker() -> pwd.struct_passwd:
    """Another user of this machine, who plants folders for root's qkv to use; giving them folders needs root."""
    if os.geteuid() != 0:
        pytest.skip("only root can make folders another user owns; CI runs this as root")
    try:
        return pwd.getpwnam(ATTACKER)
    except KeyError:
        if os.environ.get("CI"):
            pytest.fail(f"no user {ATTACKER} on this CI machine (make test creates it)")
        pytest.skip(f"no user {ATTACKER} (make test creates it when run as root)")


@pytest.fixture
def shared_tmp():
    """A shared temporary folder as /tmp is (root's, mode 1777) but of this test's own, given to qkv as TMPDIR:
    what is planted there cannot disturb another test that uses the real one."""
    folder = Path(tempfile.mkdtemp(prefix="qkv-shared-tmp-"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def tree(folder: Path) -> list[tuple]:
    """Every entry under `folder`: path, owner, mode, and where a link points."""
    entries = []
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        entries.append((str(path.relative_to(folder)), info.st_uid, info.st_mode,
                        os.readlink(path) if path.is_symlink() else None))
    return entries


def test_local_tls_uses_no_dask_scratch_folder_another_user_made_first(built_numpy_same, small_class, shared_tmp,
                                                                      tmp_path):
    """Dask's default scratch folders, made first by another user, open to all, each with links named as the lock
    files Dask opens there for writing and pointing at a file only root may write: qkv's run must leave them as
    they were, take nothing of the bundle there, and leave no folder of its own behind."""
    user = attacker()
    subs, local = small_class
    secret = tmp_path / "root-only"  # in pytest's folder for this test: root's, mode 0700
    secret.write_bytes(b"root's own, not to be overwritten\n")
    secret.chmod(0o600)
    for name in ("dask-scratch-space", f"dask-scratch-space-{os.getuid()}"):
        planted = shared_tmp / name
        planted.mkdir()
        for lock in ("global.lock", "purge.lock"):
            (planted / lock).symlink_to(secret)
            os.lchown(planted / lock, user.pw_uid, user.pw_gid)
        os.chown(planted, user.pw_uid, user.pw_gid)
        planted.chmod(0o777)
    before = tree(shared_tmp)
    run = subprocess.run([str(QKV), "grade", "attention-numpy", str(subs), "--dist", str(built_numpy_same.out),
                          "--out", str(tmp_path / "out"), "--timeout", "5", "--cluster", "local-tls:2"],
                         capture_output=True, text=True, env=environment(TMPDIR=str(shared_tmp)), timeout=300)
    assert run.returncode == 0, run.stderr
    assert_same_gradebook(tmp_path / "out", local)
    assert secret.read_bytes() == b"root's own, not to be overwritten\n"
    assert tree(shared_tmp) == before


def test_local_cluster_scratch_is_a_private_folder_of_the_run_removed_after(built_numpy_same, small_class, tmp_path):
    """The scheduler's and every worker's scratch lie in one folder this run made in the temporary folder, mode
    0700 and the run's user's (Dask's default, shared by every run of every user, is neither), gone once the run
    is over."""
    subs, local = small_class
    temporary = Path(tempfile.gettempdir()).resolve()
    tops: dict[str, Path] = {}  # each scratch folder of the cluster: the folder it lies in, right in `temporary`
    modes: list[tuple[int, int]] = []

    def progress(done: int, total: int, student: str) -> None:
        if tops:
            return
        client = default_client()  # the client qkv made for its LocalCluster
        folders = [*client.run(lambda dask_worker: dask_worker.local_directory).values(),
                   client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.local_directory)]
        for folder in folders:
            tops[folder] = temporary / Path(folder).resolve().relative_to(temporary).parts[0]
        info = next(iter(tops.values())).stat()
        modes.append((info.st_mode & 0o7777, info.st_uid))

    run = grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", timeout=5.0, cluster="local:2",
                      progress=progress)
    assert run.graded_now == 5
    assert len(tops) == 3, tops  # two workers and the scheduler
    assert len(set(tops.values())) == 1, tops
    top = next(iter(tops.values()))
    assert not top.name.startswith("dask-scratch-space")
    assert modes == [(0o700, os.geteuid())]
    assert not top.exists()
    assert_same_gradebook(tmp_path / "out", local)


@pytest.mark.parametrize("case", ["writable by its group", "writable by other users", "another user's"])
def test_a_worker_whose_scratch_folder_others_could_tamper_with_gets_no_bundle(built_numpy_same, small_class, tmp_path,
                                                                               case):
    """A worker started with --local-directory in a folder that other users may write to, or that another user
    owns (root's worker could still write there): they could swap the worker's folder for one of theirs, so qkv
    refuses, in one line naming the folder, before any file of the bundle is written."""
    subs, _ = small_class
    loose = Path(tempfile.mkdtemp(prefix="qkv-loose-scratch-"))  # in the shared temporary folder, like /tmp/x
    try:
        mode, expected = {"writable by its group": (0o775, "writable by its group (mode 0775)"),
                          "writable by other users": (0o757, "writable by other users (mode 0757)"),
                          "another user's": (0o755, "belongs to uid")}[case]
        if case == "another user's":
            user = attacker()
            os.chown(loose, user.pw_uid, user.pw_gid)
            expected = f"belongs to uid {user.pw_uid}"
        loose.chmod(mode)
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=logging.CRITICAL, local_directory=str(loose),
                          scheduler_kwargs={"local_directory": str(tmp_path)}) as cluster:
            with pytest.raises(QkvError) as caught:
                grade_class(built_numpy_same.out / "autograder", subs, tmp_path / "out", timeout=5.0,
                            cluster=cluster.scheduler_address)
            message = str(caught.value)
            assert message.startswith(f"{cluster.scheduler_address}: a Dask worker cannot grade: "), message
            assert str(loose) in message and expected in message and "--local-directory" in message, message
            assert "\n" not in message
            assert not [p for p in loose.rglob("*") if p.name.startswith("qkv-bundle-")]
        assert graded_so_far(tmp_path / "out" / GRADEBOOK_FILE) == 0
    finally:
        shutil.rmtree(loose, ignore_errors=True)


def test_a_scratch_folder_that_is_a_link_is_refused_and_planted_links_are_never_followed(tmp_path):
    """A worker's folder given as a link (its target may change under the worker), and a link already where a
    bundle file goes (a fresh private folder has none, but were one there it must not redirect the write)."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(private)
    with pytest.raises(UnsafeFolder, match="is a symbolic link"):
        private_subfolder(tmp_path / "link", "qkv-bundle-")
    assert list(private.iterdir()) == []

    folder = private_subfolder(private, "qkv-bundle-")
    assert folder.parent == private and folder.stat().st_mode & 0o777 == 0o700
    target = tmp_path / "elsewhere"
    target.write_bytes(b"untouched")
    (folder / "assignment.json").symlink_to(target)
    with pytest.raises(FileExistsError):
        write_private_files(folder, {"assignment.json": b"{}"})
    with pytest.raises(UnsafeFolder, match="not a path inside the grading bundle"):
        write_private_files(folder, {"../escaped": b"x"})
    assert target.read_bytes() == b"untouched" and not (private / "escaped").exists()
    write_private_files(folder, {"nested/arrays.npz": b"data"})
    assert (folder / "nested" / "arrays.npz").read_bytes() == b"data"
    assert (folder / "nested" / "arrays.npz").stat().st_mode & 0o777 == 0o600
