"""What a sandbox worker can see and do, as data: the host's layout in, a `SandboxPolicy` and bwrap's argv out.

`host_layout()` is the only I/O (where Python and its packages live, which top-level
folders are symlinks); `sandbox_policy()` is a pure function of that layout, so the
policy is unit-tested without bubblewrap. Each mount says why it is there.

Channel by channel (with the child's own confinement, worker/confine.py and
worker/seccomp.py):

| channel | closed by |
|---|---|
| files of the host | only /usr, the lib folders, a few /etc files and the Python installation, read-only; the project, `autograder` and `solutions` in site-packages are covered by empty read-only tmpfs |
| files of earlier jobs | the only writable folder is /scratch, emptied after every job; / /tmp /dev are read-only tmpfs |
| network | a network namespace of its own (loopback only, down) |
| processes | a pid namespace of its own, the worker (zygote) as pid 1, no bwrap process inside |
| IPC | an IPC namespace of its own per worker, and seccomp denies SysV and POSIX IPC calls to student code |
| hostname, cgroups | UTS and cgroup namespaces of their own |
| environment | cleared, then a fixed PATH, HOME, locale and thread counts |
| privileges | as root: every capability dropped but the four the handler needs (setuid, setgid, kill, override file modes for cleanup); as a user: a user namespace with none |
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import site
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

WORKER_LIB = "/qkv/lib"  # holds qkv_worker/ and qkv_runtime/ inside the sandbox
SCRATCH_INSIDE = "/scratch"
TOP_LEVEL_LIBS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = (
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
    "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
)
HIDDEN_PACKAGES = ("autograder", "solutions")  # importable from site-packages after a non-editable install (solutions: older releases)
ROOT_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_DAC_OVERRIDE")
PASSED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


@dataclass(frozen=True)
class HostLayout:
    """Where things are on this machine; gathered once by `host_layout()`."""

    python_roots: tuple[str, ...]  # outermost folders of the interpreter and its site-packages, minus /usr
    site_dirs: tuple[str, ...]
    hidden: tuple[str, ...]  # package folders (and .py modules) of ours in site-packages
    project: Optional[str]  # the source checkout, when it lies inside a bound folder
    worker_dir: str
    runtime_dir: str
    top_level: dict = field(default_factory=dict)  # /bin etc.: "dir", or the target of a symlink
    etc_files: tuple[str, ...] = ETC_FILES
    environment: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Mount:
    kind: str  # bwrap's option without the dashes: ro-bind, ro-bind-try, tmpfs, dir, symlink, proc, dev, remount-ro
    target: str  # the path inside the sandbox
    source: str = ""  # binds: the host path; symlinks: the link's text
    perms: Optional[str] = None
    size: Optional[int] = None
    why: str = ""


@dataclass(frozen=True)
class SandboxPolicy:
    namespaces: tuple[str, ...]
    capabilities: Optional[tuple[str, ...]]  # kept as root; None: a user namespace (no capabilities)
    mounts: tuple[Mount, ...]
    environment: dict
    as_pid_1: bool = True


def sandbox_policy(layout: HostLayout, root: bool, scratch_bytes: int) -> SandboxPolicy:
    """The sandbox for student code on a host laid out as `layout`."""
    mounts = [Mount("ro-bind", "/usr", "/usr", why="the system's programs and libraries, read-only")]
    for name, what in sorted(layout.top_level.items()):
        if what == "dir":
            mounts.append(Mount("ro-bind", name, name, why="libraries outside /usr"))
        else:
            mounts.append(Mount("symlink", name, what, why="as on the host (merged /usr)"))
    for name in layout.etc_files:
        mounts.append(Mount("ro-bind-try", name, name, why="the dynamic loader, time zone, user names"))
    mounts += [
        Mount("proc", "/proc", why="a /proc of the sandbox's own pid namespace"),
        Mount("dev", "/dev", why="null, zero, random and friends only"),
        Mount("tmpfs", "/tmp", perms="0755", why="an empty /tmp, read-only below"),
    ]
    made = {"/", "/usr", "/tmp"}
    for path in layout.python_roots:
        # bwrap would copy the host's modes onto the folders it creates on the way
        # (e.g. /root is 0700), locking the slot's uid out of the standard library.
        for parent in reversed(Path(path).parents):
            if str(parent) not in made:
                mounts.append(Mount("dir", str(parent), perms="0755", why="a path to the Python installation"))
                made.add(str(parent))
        mounts.append(Mount("ro-bind", path, path, why="the Python installation and its packages, read-only"))
    # Every tmpfs but the scratch one ends read-only: without a uid of its own (bwrap in a
    # user namespace) the submission would own them and could leave files for the next one.
    read_only = ["/", "/tmp", "/dev"]
    if layout.project is not None:
        mounts.append(Mount("tmpfs", layout.project, why="the project's source (references, bank) is not in reach"))
        read_only.append(layout.project)
    for path in layout.hidden:
        if path.endswith(".py"):
            mounts.append(Mount("ro-bind", path, "/dev/null", why="an installed engine module is not in reach"))
        else:
            mounts.append(Mount("tmpfs", path, why="an installed engine package is not in reach"))
            read_only.append(path)
    mounts += [
        Mount("dir", "/qkv", perms="0755", why="the worker's own code"),
        Mount("dir", WORKER_LIB, perms="0755", why="the worker's own code"),
        Mount("ro-bind", f"{WORKER_LIB}/qkv_worker", layout.worker_dir, why="the worker (autograder/sandbox/worker)"),
        Mount("ro-bind", f"{WORKER_LIB}/qkv_runtime", layout.runtime_dir, why="the portable runtime it runs on"),
        Mount("tmpfs", SCRATCH_INSIDE, perms="1777", size=scratch_bytes,
              why="the one writable folder, of bounded size, emptied after every job"),
    ]
    mounts += [Mount("remount-ro", path, why="nothing can be left here for the next job") for path in read_only]
    environment = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "1",
                   "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", **layout.environment}
    namespaces = ("ipc", "pid", "net", "uts", "cgroup-try") + (() if root else ("user",))
    return SandboxPolicy(namespaces, ROOT_CAPABILITIES if root else None, tuple(mounts), environment)


def bwrap_argv(bwrap: str, policy: SandboxPolicy) -> list[str]:
    """bwrap and its options for `policy`, up to (not including) the command."""
    args = [bwrap, "--die-with-parent", "--new-session"]
    args += [f"--unshare-{name}" for name in policy.namespaces]
    if policy.as_pid_1:
        args.append("--as-pid-1")
    if policy.capabilities is not None:
        args += ["--cap-drop", "ALL"]
        for cap in policy.capabilities:
            args += ["--cap-add", cap]
    for mount in policy.mounts:
        if mount.perms is not None:
            args += ["--perms", mount.perms]
        if mount.size is not None:
            args += ["--size", str(mount.size)]
        if mount.kind in ("ro-bind", "ro-bind-try"):
            args += [f"--{mount.kind}", mount.source, mount.target]  # host path, then where it appears inside
        elif mount.kind == "symlink":
            args += ["--symlink", mount.source, mount.target]
        else:
            args += [f"--{mount.kind}", mount.target]
    args.append("--clearenv")
    for key, value in policy.environment.items():
        args += ["--setenv", key, value]
    return args + ["--chdir", "/"]


# ---------------------------------------------------------------- the host


def python_executable() -> str:
    """This interpreter with any `..` collapsed: inside bwrap the folders such a path goes through may not exist."""
    return os.path.abspath(sys.executable)


def site_dirs() -> tuple[str, ...]:
    """Where the sandbox's Python finds its packages: site-packages, and wherever numpy and torch come from
    (a .pth file or a second environment may put them elsewhere; `python -I -S` reads neither)."""
    found = list(site.getsitepackages())
    for name in ("numpy", "torch"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            found.append(str(Path(spec.origin).parent.parent))
    return tuple(p for p in dict.fromkeys(found) if os.path.isdir(p))


def _python_roots(sites: tuple[str, ...]) -> tuple[str, ...]:
    executable = Path(os.path.realpath(sys.executable))
    candidates = [sys.base_prefix, sys.prefix, str(executable.parent.parent), *sites]
    roots: list[str] = []
    for path in sorted({os.path.realpath(p) for p in candidates}, key=len):
        if path == "/":
            raise RuntimeError("the Python installation is at /; cannot bind it read-only alone")
        if not any(path == r or path.startswith(r.rstrip("/") + "/") for r in ["/usr", *roots]):
            roots.append(path)
    return tuple(roots)


def host_layout(worker_dir: Path, runtime_dir: Path, project: Optional[Path]) -> HostLayout:
    sites = site_dirs()
    roots = _python_roots(sites)
    hidden = []
    for folder in sites:
        for name in HIDDEN_PACKAGES:
            if os.path.isdir(os.path.join(folder, name)):
                hidden.append(os.path.join(folder, name))
            if os.path.isfile(os.path.join(folder, name + ".py")):
                hidden.append(os.path.join(folder, name + ".py"))
    inside = project is not None and any(str(project).startswith(r.rstrip("/") + "/") for r in ["/usr", *roots])
    top_level = {}
    for name in TOP_LEVEL_LIBS:
        if os.path.islink(name):
            top_level[name] = os.readlink(name)
        elif os.path.isdir(name):
            top_level[name] = "dir"
    return HostLayout(roots, sites, tuple(hidden), str(project) if inside else None, str(worker_dir),
                      str(runtime_dir), top_level, environment={k: os.environ[k] for k in PASSED_ENV if k in os.environ})


def find_bwrap() -> Optional[str]:
    return shutil.which("bwrap")
