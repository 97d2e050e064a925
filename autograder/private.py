"""Private at rest: every file qkv writes that names a student is its owner's only, whatever the umask.

The one home of that rule. Its writers (grades/ and what is in it: the gradebook and its -wal/-shm, the CSVs,
feedback pages, reports and exports; the service's store; token files) take from here a folder made 0700
(`private_folder`), a file written 0600, whole or not at all (`write_private`), and a file made 0600 before
another program fills it (`private_file`: SQLite gives its -wal and -shm the mode of the database file).
Modes are set explicitly, never left to the umask, which may be 0 under a service manager or a shared account.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from autograder.errors import QkvError

FOLDER_MODE = 0o700
FILE_MODE = 0o600
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def private_folder(folder: Path) -> Path:
    """`folder`, made with every missing folder above it, each 0700; a folder that exists is left as it is (it
    may be the course's, or one the user chose to share). OSError when a path on the way is no folder."""
    missing = []
    for path in (folder, *folder.parents):
        if os.path.lexists(path):
            break
        missing.append(path)
    for path in reversed(missing):
        try:
            os.mkdir(path, FOLDER_MODE)
        except FileExistsError:
            if not path.is_dir():
                raise
            continue
        os.chmod(path, FOLDER_MODE)  # mkdir's mode passes through the umask, which could take the owner's bits too
    if not folder.is_dir():
        raise NotADirectoryError(20, "not a folder", str(folder))
    return folder


def write_private(path: Path, data: bytes, replace: bool = True) -> None:
    """Write `path` whole or not at all, owner-only (its new folders too). An existing file is replaced, or, with
    `replace` false, kept: a QkvError says so and nothing is written. Errors are one line naming the file."""
    try:
        private_folder(path.parent)
    except OSError as err:
        raise QkvError(str(path), f"cannot write the file: its folder cannot be made ({err.strerror or err})") from None
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)
            handle.write(data)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if the path exists, even if it appeared a moment ago: never overwrites
            tmp.unlink()
    except FileExistsError:
        tmp.unlink(missing_ok=True)
        raise QkvError(str(path), "exists already: nothing was written over it") from None
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise QkvError(str(path), f"cannot write the file: {err.strerror or err}") from None


def private_file(path: Path) -> Path:
    """Make `path` an owner-only file before another program writes it: made empty 0600 when missing, made 0600
    when it exists (an older qkv's) and is ours, as are its SQLite side files (-wal, -shm, -journal). OSError
    when it cannot be made."""
    private_folder(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))
    except FileExistsError:
        pass
    for each in (path, *(path.with_name(path.name + side) for side in SQLITE_SIDE_FILES)):
        try:
            found = os.stat(each, follow_symlinks=False)
        except FileNotFoundError:
            continue
        # O_CREAT's mode passed through the umask, which could take the owner's bits too
        if stat.S_ISREG(found.st_mode) and found.st_mode & 0o777 != FILE_MODE and found.st_uid == os.geteuid():
            os.chmod(each, FILE_MODE)
    return path


__all__ = ["FILE_MODE", "FOLDER_MODE", "private_file", "private_folder", "write_private"]
