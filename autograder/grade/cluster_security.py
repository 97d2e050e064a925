"""What keeps `qkv grade --cluster` private: the client certificates a tls:// scheduler needs, the temporary ones
of `local-tls:N`, the warning that a plain tcp:// address earns, and the workers' folder for the bundle.

Why: the grading bundle (hidden inputs, expected outputs) travels to every worker inside a WorkerPlugin, and a
Dask scheduler runs whatever its clients send on its workers. On tcp:// anyone who can reach the scheduler's
port can do both, and anyone on the path can read the traffic. On tls:// distributed encrypts every connection
and each end must show a certificate signed by the cluster's CA (mutual TLS), so only holders of such a
certificate can submit work, read results or get the bundle.

On a worker the bundle lands on disk, in the scratch folder its operator chose or Dask's default in the shared
temporary folder, which Dask uses even when another user made it first. `private_subfolder` refuses a folder
another user could rename, replace or redirect, and `write_private_files` never follows a link it did not make.

No dask or distributed import at module level: `grade_class` takes a `TlsFiles` even when no cluster is used.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from autograder.errors import QkvError

ENCRYPTED_SCHEMES = ("tls", "wss")
# field: (CLI option, Dask config key the option overrides, what it is)
SETTINGS = {
    "ca": ("--tls-ca", "distributed.comm.tls.ca-file", "the cluster's CA certificate"),
    "cert": ("--tls-cert", "distributed.comm.tls.client.cert", "this client's certificate"),
    "key": ("--tls-key", "distributed.comm.tls.client.key", "this client's private key"),
}


class PlaintextClusterWarning(UserWarning):
    """The scheduler's address is neither encrypted nor authenticated, and not on this machine."""


@dataclass(frozen=True)
class TlsFiles:
    """`--tls-ca`, `--tls-cert`, `--tls-key`; None where not given, and then Dask's config may supply them."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    def given(self) -> list[str]:
        return [SETTINGS[field][0] for field in SETTINGS if getattr(self, field) is not None]


def is_encrypted(scheduler: str) -> bool:
    return scheduler.partition("://")[0] in ENCRYPTED_SCHEMES


def plaintext_warning(scheduler: str) -> str | None:
    """The warning for a scheduler address whose traffic is unencrypted and leaves this machine; None otherwise."""
    scheme = scheduler.partition("://")[0]
    if is_encrypted(scheduler) or scheme == "inproc":
        return None
    try:
        host = urlsplit(scheduler).hostname or ""
    except ValueError:  # a malformed address: Dask will refuse it, but it may still leave this machine
        host = ""
    if host == "localhost" or _is_loopback_ip(host):
        return None
    return (f"{scheduler} is a plain {scheme}:// address: the grading bundle (hidden inputs, expected outputs) and "
            "the submissions travel to it unencrypted and unauthenticated, and anyone who can reach the scheduler "
            "can read them and run code on its workers. Such a scheduler must never be reachable from untrusted "
            "networks; use tls:// with certificates (docs/cluster.md).")


def _is_loopback_ip(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: only "localhost" is known not to leave this machine without asking DNS
        return False


def env_variable(config_key: str) -> str:
    """Dask's environment variable for a config key: DASK_DISTRIBUTED__COMM__TLS__CA_FILE for its ca-file."""
    return "DASK_" + config_key.replace(".", "__").replace("-", "_").upper()


def client_security(scheduler: str, tls: TlsFiles):
    """distributed's `Security` for a client of the tls:// scheduler at `scheduler`.

    Each file comes from its option, else from Dask's config (`distributed.comm.tls.*`, or its DASK_... variables).
    The files are checked here, so that a missing or wrong one is a one-line QkvError naming it, not a failed
    handshake or a passphrase prompt from OpenSSL in the middle of a run.
    """
    from distributed import Security

    ca, ca_source = _required(tls, "ca", scheduler)
    cert, cert_source = _required(tls, "cert", scheduler)
    key, key_source = _configured(tls, "key")  # the key may follow the certificate in its file, as Dask allows
    if "CERTIFICATE-----" not in read_pem(ca, ca_source):
        raise QkvError(str(ca), f"holds no PEM certificate ({ca_source} must be the cluster's CA certificate)")
    cert_text = read_pem(cert, cert_source)
    if "CERTIFICATE-----" not in cert_text:
        raise QkvError(str(cert), f"holds no PEM certificate ({cert_source})")
    key_path, key_text, key_source = ((key, read_pem(key, key_source), key_source) if key
                                      else (cert, cert_text, cert_source))
    if "PRIVATE KEY-----" not in key_text:
        raise QkvError(str(key_path), f"holds no PEM private key ({key_source})"
                       + ("" if key else "; give the key's file with --tls-key FILE"))
    if "BEGIN ENCRYPTED PRIVATE KEY" in key_text or "Proc-Type: 4,ENCRYPTED" in key_text:
        raise QkvError(str(key_path), f"the private key is protected by a passphrase, which Dask cannot ask for "
                                      f"({key_source}); use an unencrypted key file readable only by you (chmod 600)")

    # what distributed will do with them, once, here: a wrong pair fails now, with the file named
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca))
    except ssl.SSLError as err:
        raise QkvError(str(ca), f"not a CA certificate OpenSSL can use ({ca_source}): {err.reason or err}") from None
    try:
        context.load_cert_chain(str(cert), str(key) if key else None, password=_no_passphrase(key_path))
    except ssl.SSLError as err:
        if err.reason == "KEY_VALUES_MISMATCH":
            raise QkvError(str(cert), f"this certificate ({cert_source}) does not belong to the key "
                                      f"{key_path}") from None
        raise QkvError(str(cert), f"OpenSSL cannot use this certificate with the key {key_path}: "
                                  f"{err.reason or err}") from None
    return Security(tls_ca_file=str(ca), tls_client_cert=str(cert), tls_client_key=str(key) if key else None,
                    require_encryption=True)


def _configured(tls: TlsFiles, field: str) -> tuple[Path | None, str]:
    """One file of SETTINGS and where it was named: its option, else Dask's config, else None."""
    import dask

    option, config_key, _ = SETTINGS[field]
    value: Path | None = getattr(tls, field)
    if value is not None or not dask.config.get(config_key, None):
        return value, option
    configured = str(dask.config.get(config_key))
    if "\n" in configured:
        raise QkvError(config_key, "holds a certificate's text; qkv takes the path of a PEM file there")
    return Path(configured).expanduser(), f"Dask's {config_key}"


def _required(tls: TlsFiles, field: str, scheduler: str) -> tuple[Path, str]:
    value, source = _configured(tls, field)
    if value is None:
        option, config_key, what = SETTINGS[field]
        raise QkvError(option, f"{scheduler} is a TLS scheduler: give {what} with {option} FILE "
                               f"(or Dask's config {config_key}, environment {env_variable(config_key)})")
    return value, source


def _no_passphrase(key: Path):
    def refuse() -> bytes:
        raise QkvError(str(key), "the private key is protected by a passphrase, which Dask cannot ask for")
    return refuse


def read_pem(path: Path, source: str) -> str:
    try:
        return path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise QkvError(str(path), f"no such file ({source})") from None
    except IsADirectoryError:
        raise QkvError(str(path), f"is a folder, not a PEM file ({source})") from None
    except UnicodeDecodeError:
        raise QkvError(str(path), f"not a PEM file ({source}); a DER file converts with "
                                  "`openssl x509 -inform der -in FILE -out FILE.pem`") from None
    except OSError as err:
        raise QkvError(str(path), f"cannot read it: {err.strerror} ({source})") from None


def temporary_security():
    """Self-signed certificates made for this run, held in memory, shared by a LocalCluster and its one client:
    no other user of this machine can connect to its scheduler or read the bundle on the way to the workers."""
    from distributed import Security

    try:
        return Security.temporary()
    except ImportError:
        raise QkvError("local-tls", "needs the cryptography package (pip install cryptography)") from None


class UnsafeFolder(Exception):
    """A worker's scratch folder that another user could read, replace or redirect: nothing is written there.
    One message argument, so that it crosses from a Dask worker to the client intact."""


SCRATCH_ADVICE = ("start the worker with --local-directory DIR, a folder of its user's own "
                  "(mkdir -m 700 DIR; see docs/cluster.md)")


def private_subfolder(parent: Path, prefix: str) -> Path:
    """A new folder of mode 0700 inside `parent` (a Dask worker's local_directory), by its real path, once no other
    user can change what that path leads to; UnsafeFolder, naming the folder at fault, otherwise."""
    me = os.geteuid()
    place = Path(os.path.realpath(parent.parent)) / parent.name
    try:
        own = os.lstat(place)
    except OSError as err:
        raise UnsafeFolder(f"{parent}: cannot inspect the worker's scratch folder ({err.strerror})") from None
    if stat.S_ISLNK(own.st_mode) or not stat.S_ISDIR(own.st_mode):
        raise UnsafeFolder(f"{parent}: the worker's scratch folder is a symbolic link or no folder; {SCRATCH_ADVICE}")
    if own.st_uid != me:
        raise UnsafeFolder(f"{parent}: the worker's scratch folder belongs to uid {own.st_uid}, not to the worker's "
                           f"uid {me}; {SCRATCH_ADVICE}")
    if own.st_mode & 0o022:
        raise UnsafeFolder(f"{parent}: the worker's scratch folder is writable by {_writers(own.st_mode)} "
                           f"(mode {stat.S_IMODE(own.st_mode):04o}); {SCRATCH_ADVICE}")
    # Whoever may write to a folder above can rename what lies below it and put a folder or link of their own in
    # its place, so each must belong to root or to the worker's user, and be writable by others only when sticky
    # (as /tmp is: there only an entry's owner may rename it). Below a folder of the worker's user that nobody
    # else may even enter, no other user can reach anything.
    for above in reversed(place.parents):
        info = os.lstat(above)
        mode, owner = info.st_mode, info.st_uid
        if owner not in (0, me):
            raise UnsafeFolder(f"{parent}: {above}, a folder above the worker's scratch folder, belongs to uid "
                               f"{owner}, who could replace what lies in it; {SCRATCH_ADVICE}")
        if mode & 0o022 and not mode & stat.S_ISVTX:
            raise UnsafeFolder(f"{parent}: {above}, a folder above the worker's scratch folder, is writable by "
                               f"{_writers(mode)} (mode {stat.S_IMODE(mode):04o}), who could replace what lies in "
                               f"it; {SCRATCH_ADVICE}")
        if owner == me and not mode & 0o077:
            break
    return Path(tempfile.mkdtemp(prefix=prefix, dir=place))  # mode 0700; mkdir follows no link


def _writers(mode: int) -> str:
    return " and ".join(who for who, bit in (("its group", 0o020), ("other users", 0o002)) if mode & bit)


def write_private_files(folder: Path, files: dict[str, bytes]) -> None:
    """`files` ({relative path: bytes}) into `folder`, a fresh private one: every file and sub-folder new, made
    here, readable only by this user; an entry already there (a planted link) is an error, never followed."""
    for relative, data in files.items():
        parts = PurePosixPath(relative).parts
        if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
            raise UnsafeFolder(f"{relative}: not a path inside the grading bundle")
        place = folder
        for part in parts[:-1]:
            place = place / part
            try:
                os.mkdir(place, 0o700)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(place).st_mode):  # a link to a folder is no folder here
                    raise UnsafeFolder(f"{place}: already exists and is no folder") from None
        fd = os.open(place / parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
