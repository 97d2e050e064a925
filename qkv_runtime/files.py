"""A student's own file read whole but bounded: what the practice drill's and the self-check's histories read.

Standard library only, as all of qkv_runtime (it runs in a student's release on Python 3.9)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import List, Optional


class Unusable(Exception):
    """A file that cannot be used as it is; its text is the fault in a few words ("is not a file")."""


def read_bounded(path: Path, most: int, holds: str) -> Optional[bytes]:
    """The file's bytes, None when there is none; Unusable when it is no regular file (a link is not followed, a
    FIFO does not block) or larger than `most` bytes, which `holds` names ("a practice history")."""
    try:
        fd = os.open(str(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as err:
        raise Unusable(f"cannot be read ({err.strerror or err})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unusable("is not a file")
        chunks: List[bytes] = []
        size = 0
        while size <= most:
            chunk = os.read(fd, most + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise Unusable(f"cannot be read ({err.strerror or err})") from None
    finally:
        os.close(fd)
    if size > most:
        raise Unusable(f"is larger than {most // 2**20} MiB, more than {holds} holds")
    return b"".join(chunks)
