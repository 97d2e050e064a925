"""The sandbox's mount policy as data (autograder/sandbox/policy.py), checked without bubblewrap.

A host laid out like a pyenv installation under /root, with the project checkout and an
installed engine package inside the bound Python folders: the policy must reach the
standard library for the slot's uid, hide our own code, keep one bounded writable
folder, and say why each mount is there. tests/sandbox/test_sandbox.py runs the real thing.
"""

from __future__ import annotations

from autograder.sandbox.policy import (
    ROOT_CAPABILITIES,
    SCRATCH_INSIDE,
    WORKER_LIB,
    HostLayout,
    Mount,
    bwrap_argv,
    sandbox_policy,
)

PYENV = "/root/.pyenv/versions/3.11.7"
VENV = "/home/teacher/course/.venv"
SITE = f"{VENV}/lib/python3.11/site-packages"
PROJECT = f"{VENV}/src/qkv"  # a checkout inside a bound folder: its references must not be in reach
LAYOUT = HostLayout(
    python_roots=(PYENV, VENV),
    site_dirs=(SITE,),
    hidden=(f"{SITE}/autograder", f"{SITE}/solutions.py"),
    project=PROJECT,
    worker_dir="/home/teacher/course/.venv/src/qkv/autograder/sandbox/worker",
    runtime_dir="/home/teacher/course/.venv/src/qkv/qkv_runtime",
    top_level={"/bin": "usr/bin", "/lib": "usr/lib", "/lib64": "dir"},
    environment={"OPENBLAS_CORETYPE": "Haswell"},
)
SCRATCH_BYTES = 64 << 20


def mounts(policy) -> list[Mount]:
    return list(policy.mounts)


def index(policy, kind: str, target: str) -> int:
    return next(i for i, m in enumerate(policy.mounts) if m.kind == kind and m.target == target)


def test_as_a_user_there_is_a_user_namespace_and_no_capability_and_as_root_only_four():
    user, root = sandbox_policy(LAYOUT, False, SCRATCH_BYTES), sandbox_policy(LAYOUT, True, SCRATCH_BYTES)
    assert "user" in user.namespaces and user.capabilities is None
    assert "user" not in root.namespaces and root.capabilities == ROOT_CAPABILITIES
    for policy in (user, root):
        assert {"ipc", "pid", "net", "uts"} <= set(policy.namespaces) and policy.as_pid_1
    argv = bwrap_argv("/usr/bin/bwrap", root)
    assert "--as-pid-1" in argv and argv[argv.index("--cap-drop") + 1] == "ALL"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--cap-add"] == list(ROOT_CAPABILITIES)
    assert "--cap-drop" not in bwrap_argv("/usr/bin/bwrap", user)


def test_only_the_scratch_folder_is_writable_and_its_size_is_bounded():
    policy = sandbox_policy(LAYOUT, False, SCRATCH_BYTES)
    tmpfs = [m for m in mounts(policy) if m.kind == "tmpfs"]
    read_only = {m.target for m in mounts(policy) if m.kind == "remount-ro"}
    writable = [m.target for m in tmpfs if m.target not in read_only]
    assert writable == [SCRATCH_INSIDE]
    scratch = next(m for m in tmpfs if m.target == SCRATCH_INSIDE)
    assert scratch.size == SCRATCH_BYTES and scratch.perms == "1777"
    assert "/" in read_only and "/tmp" in read_only and "/dev" in read_only
    # remounts come last: a read-only / made before the folders inside it would stop bwrap creating them
    first_remount = min(i for i, m in enumerate(policy.mounts) if m.kind == "remount-ro")
    assert all(m.kind == "remount-ro" for m in policy.mounts[first_remount:])


def test_our_code_is_covered_after_the_folders_that_hold_it_are_bound():
    policy = sandbox_policy(LAYOUT, True, SCRATCH_BYTES)
    venv = index(policy, "ro-bind", VENV)
    assert index(policy, "tmpfs", PROJECT) > venv  # a later mount covers an earlier one
    assert index(policy, "tmpfs", f"{SITE}/autograder") > venv
    module = next(m for m in mounts(policy) if m.target == f"{SITE}/solutions.py")
    assert (module.kind, module.source) == ("ro-bind", "/dev/null")
    assert PROJECT in {m.target for m in mounts(policy) if m.kind == "remount-ro"}


def test_the_worker_and_the_runtime_are_bound_read_only_and_nothing_else_of_the_host_is():
    policy = sandbox_policy(LAYOUT, True, SCRATCH_BYTES)
    binds = {m.target: m.source for m in mounts(policy) if m.kind in ("ro-bind", "ro-bind-try")}
    assert binds[f"{WORKER_LIB}/qkv_worker"] == LAYOUT.worker_dir
    assert binds[f"{WORKER_LIB}/qkv_runtime"] == LAYOUT.runtime_dir
    allowed = {"/usr", "/lib64", "/dev/null", PYENV, VENV, LAYOUT.worker_dir, LAYOUT.runtime_dir, *LAYOUT.etc_files}
    assert set(binds.values()) <= allowed
    assert "/home" not in binds and "/root" not in binds and "/work" not in binds
    assert not [m for m in mounts(policy) if m.kind == "bind"]  # no read-write bind of any host folder
    links = {m.target: m.source for m in mounts(policy) if m.kind == "symlink"}
    assert links == {"/bin": "usr/bin", "/lib": "usr/lib"}


def test_folders_on_the_way_to_python_are_made_open_for_the_slot_uid():
    """pyenv under /root (mode 0700 on the host): bwrap would copy that mode onto the folder it makes,
    and the slot's uid could not reach the standard library."""
    policy = sandbox_policy(LAYOUT, True, SCRATCH_BYTES)
    made = {m.target: m.perms for m in mounts(policy) if m.kind == "dir"}
    for folder in ("/root", "/root/.pyenv", "/root/.pyenv/versions", "/home", "/home/teacher"):
        assert made[folder] == "0755", folder
    assert index(policy, "dir", "/root/.pyenv/versions") < index(policy, "ro-bind", PYENV)


def test_every_mount_says_why_and_the_environment_is_cleared_first():
    policy = sandbox_policy(LAYOUT, False, SCRATCH_BYTES)
    assert all(m.why for m in policy.mounts)
    argv = bwrap_argv("/usr/bin/bwrap", policy)
    clear = argv.index("--clearenv")
    settings = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "--setenv"}
    assert all(i > clear for i, a in enumerate(argv) if a == "--setenv")
    assert settings["PATH"] == "/usr/bin:/bin" and settings["OMP_NUM_THREADS"] == "1"
    assert settings["OPENBLAS_CORETYPE"] == "Haswell"  # passed on from the host's layout, nothing else is
    assert set(settings) == {"PATH", "HOME", "LC_ALL", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                             "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE"}
    # a bind is the host path first, then where it appears inside
    at = argv.index(f"{WORKER_LIB}/qkv_runtime")
    assert argv[at - 2:at] == ["--ro-bind", LAYOUT.runtime_dir]
