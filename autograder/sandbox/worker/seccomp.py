"""The system calls student code may not make: a seccomp filter, as data, installed by the child before exec.

Namespaces and uids close most channels (see docs/architecture.md); this filter
closes the ones they leave open, for every isolation mode, root or not. Each
denied call fails with EPERM, as if the kernel refused it, so a library that
probes for a feature just goes without it.

| channel | calls | why |
|---|---|---|
| the grader's processes | ptrace, process_vm_readv/writev, pidfd_getfd, process_madvise | read or change another process's memory or fds |
| signals to the grader | kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_open aimed at a protected pid, or kill(-1); pidfd_send_signal | stop or kill the handler (same uid when qkv runs as a normal user) |
| signals by proxy | fcntl F_SETOWN, F_SETOWN_EX, F_SETSIG; ioctl FIOSETOWN, SIOCSPGRP | make the kernel send SIGIO to a process of our choosing |
| keyrings | keyctl, add_key, request_key | the login session's keys, and keys left for the next student |
| SysV and POSIX IPC | shm*, sem*, msg*, mq_* | objects that outlive the submission in the worker's IPC namespace |
| the kernel's bigger surfaces | io_uring_*, bpf, perf_event_open, userfaultfd | none is needed by student code, each has been a way out |
| namespaces and mounts | unshare, setns, mount, umount2, pivot_root, open_tree, move_mount, fsopen, fsmount | a user namespace of one's own gives capabilities inside it |
| other ABIs | any call of a foreign architecture, or x32 | the filter's numbers are the native ones |
"""

from __future__ import annotations

import ctypes
import platform
import struct
from typing import Dict, Iterable, List, Sequence, Tuple

EPERM = 1
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
X32_SYSCALL_BIT = 0x40000000

# (audit arch, native syscall numbers): x86_64 and aarch64 (the generic table)
ARCHES: Dict[str, Tuple[int, Dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "process_madvise": 440,
        "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
        "pidfd_open": 434, "pidfd_send_signal": 424, "fcntl": 72, "ioctl": 16,
        "keyctl": 250, "add_key": 248, "request_key": 249,
        "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65, "semctl": 66,
        "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71,
        "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244,
        "mq_getsetattr": 245,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "bpf": 321,
        "perf_event_open": 298, "userfaultfd": 323,
        "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsmount": 432,
    }),
    "aarch64": (0xC00000B7, {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "process_madvise": 440,
        "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
        "pidfd_open": 434, "pidfd_send_signal": 424, "fcntl": 25, "ioctl": 29,
        "keyctl": 219, "add_key": 217, "request_key": 218,
        "shmget": 194, "shmat": 196, "shmctl": 195, "shmdt": 197, "semget": 190, "semop": 193, "semctl": 191,
        "semtimedop": 192, "msgget": 186, "msgsnd": 189, "msgrcv": 188, "msgctl": 187,
        "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
        "mq_getsetattr": 185,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "bpf": 280,
        "perf_event_open": 241, "userfaultfd": 282,
        "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsmount": 432,
    }),
}

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "pidfd_send_signal",
    "keyctl", "add_key", "request_key",
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop",
    "msgget", "msgsnd", "msgrcv", "msgctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
    "unshare", "setns", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsmount",
)
# calls whose first argument names a process (or, negated, a process group)
PID_GUARDED = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open")
# (call, second-argument values denied): fcntl and ioctl commands that aim SIGIO at a process
COMMAND_GUARDED = (("fcntl", (8, 15, 10)), ("ioctl", (0x8901, 0x8902)))  # F_SETOWN, F_SETOWN_EX, F_SETSIG; FIOSETOWN, SIOCSPGRP

# classic BPF
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_NR, _ARCH, _ARG0_LOW, _ARG1_LOW = 0, 4, 16, 24  # offsets in struct seccomp_data (little-endian)


def _insn(code: int, jt: int = 0, jf: int = 0, k: int = 0) -> Tuple[int, int, int, int]:
    return (code, jt, jf, k & 0xFFFFFFFF)


def _deny_if(value: int) -> List[Tuple[int, int, int, int]]:
    return [_insn(_JEQ_K, 0, 1, value), _insn(_RET_K, k=RET_ERRNO | EPERM)]


def filter_program(machine: str, protected_pids: Iterable[int]) -> List[Tuple[int, int, int, int]]:
    """The BPF instructions of the filter for `machine`, protecting `protected_pids` from signals."""
    audit_arch, numbers = ARCHES[machine]
    guarded = sorted({p & 0xFFFFFFFF for pid in protected_pids if pid > 0 for p in (pid, -pid)} | {0xFFFFFFFF})
    program = [_insn(_LD_W_ABS, k=_ARCH), _insn(_JEQ_K, 1, 0, audit_arch), _insn(_RET_K, k=RET_ERRNO | EPERM),
               _insn(_LD_W_ABS, k=_NR)]
    if machine == "x86_64":
        program += [_insn(_JGE_K, 0, 1, X32_SYSCALL_BIT), _insn(_RET_K, k=RET_ERRNO | EPERM)]
    for name in DENIED:
        program += _deny_if(numbers[name])
    checks: List[Tuple[str, int, Sequence[int]]] = [(name, _ARG0_LOW, guarded) for name in PID_GUARDED]
    checks += [(name, _ARG1_LOW, values) for name, values in COMMAND_GUARDED]
    for name, offset, values in checks:
        block = [_insn(_LD_W_ABS, k=offset)]
        for value in values:
            block += _deny_if(value)
        block.append(_insn(_LD_W_ABS, k=_NR))
        program.append(_insn(_JEQ_K, 0, len(block), numbers[name]))  # not this call: skip its block
        program += block
    program.append(_insn(_RET_K, k=RET_ALLOW))
    return program


_INSN_BYTES = struct.calcsize("HBBI")
_LIBC = ctypes.CDLL(None, use_errno=True)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def supported() -> bool:
    return platform.machine() in ARCHES


def compiled(protected_pids: Iterable[int]) -> bytes:
    """The filter for this machine, protecting `protected_pids`, as the kernel takes it (struct sock_filter)."""
    return b"".join(struct.pack("HBBI", *insn) for insn in filter_program(platform.machine(), protected_pids))


def install(program: bytes) -> None:
    """Install a `compiled` filter on this process (and everything it forks); needs PR_SET_NO_NEW_PRIVS first."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Program(len(program) // _INSN_BYTES, ctypes.cast(buffer, ctypes.c_void_p))
    if _LIBC.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter refused")
