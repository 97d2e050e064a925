"""The zygote and the handler talk over a socket pair of their own: one JSON datagram a message.

Whenever the grader sends a problem set, between jobs:

| from | message | with |
|---|---|---|
| handler | `{"do": "hold"}`: hold this problem set for the children forked from now on | a memfd of its frame |
| zygote | `{"held": true}` once it has read and decoded it | |

Per job, in this order:

| from | message | with |
|---|---|---|
| handler | `{"do": "fork"}`: a fresh child for the next job | |
| zygote | `{"pid": P}` | the child's job pipe (write end), result and output pipes (read ends), a pidfd of it |
| zygote | `{"exited": STATUS, "cpu": S}`: the child's wait status and CPU seconds (its waited descendants too) | |
| handler | `{"do": "reap"}`: kill and collect what the submission left | |
| zygote | `{"reaped": CLEAN, "cpu": S}`: whether none of it is left (if not, the worker ends: under bwrap its pid 1, and with it every process of its namespace); the zygote's own CPU seconds for the job | |

Both ends are trusted, and no student process holds the socket: a child closes its copy
before it reads its job. The zygote is the children's parent (so it alone can wait for
them) and the handler their supervisor; neither is a child's ancestor through whom one
student's job could reach the next student's memory.
"""

from __future__ import annotations

import json
import socket
from typing import Any, Dict, List, Optional, Sequence, Tuple

MAX_MESSAGE = 1 << 12  # every message is a few words


def pair() -> Tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock: socket.socket, message: Dict[str, Any], fds: Sequence[int] = ()) -> None:
    socket.send_fds(sock, [json.dumps(message).encode()], list(fds))


def receive(sock: socket.socket, max_fds: int = 0) -> Tuple[Optional[Dict[str, Any]], List[int]]:
    """The next message and the descriptors that came with it; (None, []) when the other end is gone."""
    data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, max_fds)
    if not data:
        return None, fds
    return json.loads(data), fds
