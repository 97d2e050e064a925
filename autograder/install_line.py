"""How this qkv was installed in, the pip line that installs it again with an extra out.

qkv is not on a package index: it is installed from its wheel or from a checkout, so a
hint that asks pip for the package by its name would fail. Every hint asks this module,
which reads what pip recorded (PEP 610's direct_url.json in the installed metadata).
"""

from __future__ import annotations

import json
import shlex
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

# when pip recorded nothing usable (the wheel was deleted, a copy of the sources, an unknown installer)
UNKNOWN_SOURCE = "the checkout or the wheel you installed qkv from"


def _direct_url(path: list[str] | None) -> dict | None:
    """What pip recorded of where qkv came from; None when nothing readable was recorded.

    An in-tree build leaves a qkv.egg-info beside the sources, without a record: the one with a record wins."""
    found = metadata.distributions(name="qkv") if path is None else metadata.distributions(name="qkv", path=path)
    for dist in found:
        try:
            data = json.loads(dist.read_text("direct_url.json") or "null")
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("url"), str):
            return data
    return None


def _local_path(url: str) -> Path | None:
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" and parsed.path else None


def install_line(extra: str, path: list[str] | None = None) -> str:
    """The command that adds `extra` (a name of pyproject's optional-dependencies) to this qkv (`path`: where to
    look for its metadata instead of sys.path)."""
    record = _direct_url(path)
    if record is not None:
        url, local = record["url"], _local_path(record["url"])
        if local is not None and local.exists():
            dir_info = record.get("dir_info")
            editable = isinstance(dir_info, dict) and dir_info.get("editable") is True and local.is_dir()
            return f"pip install {'-e ' if editable else ''}{shlex.quote(f'{local}[{extra}]')}"
        if local is None:  # a URL: pip's own form for a URL with extras (git+https://...@commit for a repository)
            vcs = record.get("vcs_info")
            if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
                url = f"{vcs['vcs']}+{url}" + (f"@{vcs['commit_id']}" if isinstance(vcs.get("commit_id"), str) else "")
            return f"pip install {shlex.quote(f'qkv[{extra}] @ {url}')}"
    return f"pip install 'PATH[{extra}]', PATH being {UNKNOWN_SOURCE}"
