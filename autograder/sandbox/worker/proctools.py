"""Process tools of the handler and the zygote: scan /proc, kill a submission's processes, reap them, empty its folder.

Trusted code (their tier): it never runs student code, and what it reads from
/proc about a student's process is used only to kill that process and to count
its CPU time (the supervisor's starved-phase check, `qkv grade --timings`).
Every walk here is iterative and bounded, so no folder tree or process count a
submission can make raises RecursionError or runs for ever.
"""

from __future__ import annotations

import os
import secrets
import signal
import stat
import time
from typing import Iterator, NamedTuple, Optional, Set, Tuple

REAP_SECONDS = 2.0
PROC_CHUNK = 16384  # a status or stat file is a few kB
PAGE_BYTES = 4096  # the smallest page a kernel reads /proc's lists in
MAX_PROC_CHUNKS = 512  # a list of children comes 4 kB a read: 512 reads hold 250,000 children
MAX_REMOVED_ENTRIES = 200_000  # a scratch folder with more is dropped with its worker, not walked


class Process(NamedTuple):
    pid: int
    uid: int  # real uid; /proc/PID's owner is root for non-dumpable processes
    group: int
    state: str
    threads: int


def read_proc(path: str) -> bytes:
    """/proc/PATH, read without file objects: these scans run per job, in the zygote between forks and in a
    fresh child, where every object made writes a page it must first copy. Raises OSError."""
    fd = os.open(f"/proc/{path}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, PROC_CHUNK)]
        # A list of children comes a page a read, whatever was asked for, so a read that filled most of a page may
        # have more after it; one that did not is the end (its next entry, 8 bytes at most, would have fitted).
        # A stat or status file is one read, and a job reads one per process: no read more to find its end.
        while len(chunks[-1]) > PAGE_BYTES - 64 and len(chunks) < MAX_PROC_CHUNKS:
            chunks.append(os.read(fd, PROC_CHUNK))
        return b"".join(chunks)
    finally:
        os.close(fd)


def stat_fields(pid: str) -> list[bytes]:
    """/proc/PID/stat's fields after the process's name: that name is the process's to choose (any bytes, ')' and
    spaces included), so it is cut off at the last ')' and never decoded."""
    return read_proc(f"{pid}/stat").rsplit(b")", 1)[1].split()


def status_field(status: bytes, name: bytes) -> int:
    """The first number of /proc/PID/status's line `name`; raises ValueError when it has none."""
    at = status.find(b"\n" + name + b":")
    if at < 0:
        raise ValueError(name)
    return int(status[at + len(name) + 2:status.find(b"\n", at + 1)].split()[0])


def processes() -> Iterator[Process]:
    """Each process we can see in /proc (processes that vanish meanwhile are skipped)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = stat_fields(entry)
            status = read_proc(f"{entry}/status")
            uid, threads = status_field(status, b"Uid"), status_field(status, b"Threads")
        except (OSError, ValueError, IndexError):
            continue
        yield Process(int(entry), uid, int(fields[2]), fields[0].decode("ascii", "replace"), threads)


def threads_of(uid: int) -> int:
    """How many threads the processes of real uid `uid` have now: what RLIMIT_NPROC counts. Read per job as a
    user without a uid of their own, from each process's status alone (a desktop has hundreds of processes)."""
    total = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = read_proc(f"{entry}/status")
                if status_field(status, b"Uid") == uid:
                    total += status_field(status, b"Threads")
            except (OSError, ValueError, IndexError):
                continue
    return total


def parent_of(pid: int) -> Optional[int]:
    try:
        return int(stat_fields(str(pid))[1])
    except (OSError, ValueError, IndexError):
        return None


def process_cpu_seconds(pid: int) -> float:
    """CPU time one process has used so far (0 when it is gone).

    /proc/PID/stat counts it in clock ticks, each of user and system time cut down to a whole tick: a phase
    of 15 ms reads 9 on average, so a job's loading (read here as it ends) came out about 5 ms short and its
    calls as much over. Each live thread's schedstat gives its time on a CPU in ns; the ticks, which also
    hold threads that have ended, are taken where they say more (or where the kernel keeps no schedstat)."""
    ticks = 0.0
    try:
        fields = stat_fields(str(pid))
        ticks = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        nanoseconds = 0
        for thread in os.listdir(f"/proc/{pid}/task"):
            nanoseconds += int(read_proc(f"{pid}/task/{thread}/schedstat").split()[0])
        return max(ticks, nanoseconds / 1e9)
    except (OSError, ValueError, IndexError):
        return ticks


def group_cpu_seconds(group: int) -> float:
    """CPU time used by a process group's live members and the children they reaped."""
    ticks = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = stat_fields(entry)
                if int(fields[2]) == group:
                    ticks += sum(int(f) for f in fields[11:15])
            except (OSError, ValueError, IndexError):
                continue
    return ticks / os.sysconf("SC_CLK_TCK")


def waited_seconds(groups: Tuple[int, ...]) -> float:
    """The seconds the live processes of these groups spent runnable but not running, waiting for a CPU (each
    thread's schedstat): what a machine busy with others' work took from them, so that their own time is their
    wall time less this. 0 where the kernel keeps no schedstat."""
    nanoseconds = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(stat_fields(entry)[2]) not in groups:
                    continue
                for thread in os.listdir(f"/proc/{entry}/task"):
                    nanoseconds += int(read_proc(f"{entry}/task/{thread}/schedstat").split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return nanoseconds / 1e9


def kill_group(pgid: Optional[int]) -> None:
    if pgid and pgid > 1:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (OSError, OverflowError):
            pass


def kill_processes(uid: int, groups: Optional[Set[int]]) -> None:
    """SIGKILL every live process of `uid` (in `groups`, if given) until none is left.

    Scanning is not atomic, so a forking process can add one behind the scan;
    the next round gets it, and a killed process cannot fork any more.
    """
    give_up = time.monotonic() + REAP_SECONDS
    while time.monotonic() < give_up:
        found = False
        for process in processes():
            if process.uid == uid and process.state != "Z" and (groups is None or process.group in groups):
                found = True
                try:
                    os.kill(process.pid, signal.SIGKILL)
                except OSError:
                    pass
        if not found:
            return


def children(spare: int) -> Set[int]:
    """This process's children but `spare` (the zygote's: the processes a submission left it, and zombies).

    The kernel's list of children may miss one that moves to this process while it is
    read, so an empty list is checked against every process's parent in /proc (a few
    processes in the sandbox's pid namespace).
    """
    me = os.getpid()
    try:
        found = {int(p) for p in read_proc(f"{me}/task/{me}/children").split()}
    except OSError:
        found = set()
    found.discard(spare)
    if not found:
        found = {int(e) for e in os.listdir("/proc") if e.isdigit() and parent_of(int(e)) == me}
        found.discard(spare)
    return found


def collect(pids: Set[int]) -> Set[int]:
    """Collect those of `pids` that have exited; gives the ones still running."""
    running = set()
    for pid in pids:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                running.add(pid)
        except ChildProcessError:
            pass
    return running


def kill_every_process_of(uid: int, give_up: float) -> None:
    """SIGKILL every process of `uid` at once: a helper takes the uid and signals -1, which the kernel does
    under its task list lock, so no fork can slip past it as one can past a scan of /proc. A helper that fails
    (stopped by a process of that uid, or not done by `give_up`) is killed; reap's next look tells what is left."""
    helper = os.fork()
    if helper == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    while True:
        pid, status = os.waitpid(helper, os.WNOHANG | os.WUNTRACED)
        if pid == helper and not os.WIFSTOPPED(status):
            return
        if pid == helper or time.monotonic() > give_up:
            os.kill(helper, signal.SIGKILL)
            os.waitpid(helper, 0)
            return
        time.sleep(0.0005)


def reap(uid: Optional[int], spare: int) -> bool:
    """Kill every process the submission left behind and collect them (run by the zygote); False when some
    are still there after REAP_SECONDS, and the worker must end (under bwrap, ending pid 1 ends every process
    of its namespace).

    The zygote inherits the submission's orphans (pid 1 of its namespace, or a child
    subreaper), so once its only child is `spare`, the handler, no process of the
    submission is left: every live one has an ancestor on that list until the zygote
    collects it. So the list is read afresh after anything is collected (a process that
    exits hands its children to the zygote just before), and only an empty list ends
    the loop. As root every process of the slot's uid is killed at once; as a user each
    child is, round after round, as the orphans of the killed ones come here. Children
    are only ever waited for by pid, so the handler's own end is left to the zygote's
    main loop to see.
    """
    give_up = time.monotonic() + REAP_SECONDS
    while True:
        found = children(spare)
        if not found:
            return True
        left = collect(found)
        if not left:
            continue
        if time.monotonic() > give_up:
            return False
        if uid is not None:
            kill_every_process_of(uid, give_up)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.002)


# ---------------------------------------------------------------- files


def _unlink_all(fd: int, budget: list) -> list:
    """Remove the files of the folder open as `fd`; gives the names of the folders in it."""
    folders = []
    for entry in os.scandir(fd):
        budget[0] -= 1
        if budget[0] < 0:
            raise OverflowError
        try:
            is_folder = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_folder = False
        if is_folder:
            folders.append(entry.name)
        else:
            try:
                os.unlink(entry.name, dir_fd=fd)
            except FileNotFoundError:
                pass
    return folders


def _open_folder(name: str, dir_fd: Optional[int]) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:
        # a submission may take the permissions off its own folders; give them back (never via a symlink)
        if not stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise
        os.chmod(name, 0o700, dir_fd=dir_fd)
        return os.open(name, flags, dir_fd=dir_fd)


def empty_folder(path: str) -> bool:
    """Remove everything inside `path` without recursion, at any depth; False when it could not.

    Two folders are open at a time: a folder's sub-folders are moved up into `path`
    (one rename each) before the folder itself is removed, so a chain a thousand
    levels deep is undone level by level and no path grows long.
    """
    budget = [MAX_REMOVED_ENTRIES]
    try:
        top = _open_folder(path, None)
    except OSError:
        return False
    moved, token = 0, secrets.token_hex(8)  # names a submission cannot have made in advance
    try:
        pending = _unlink_all(top, budget)
        while pending:
            name = pending.pop()
            budget[0] -= 1
            if budget[0] < 0:
                return False
            folder = _open_folder(name, top)
            try:
                for inner in _unlink_all(folder, budget):
                    moved += 1
                    new_name = f".qkv-{token}-{moved}"
                    os.rename(inner, new_name, src_dir_fd=folder, dst_dir_fd=top)
                    pending.append(new_name)
            finally:
                os.close(folder)
            os.rmdir(name, dir_fd=top)
        return not os.listdir(top)
    except (OSError, OverflowError):
        return False
    finally:
        os.close(top)
