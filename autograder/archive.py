"""Byte-identical zip files: {member name: bytes} in, a zip with fixed timestamps and order out.

Releases are diffed in git, so the same input must give the same bytes; the
zipfile module otherwise stamps the current time into every entry.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Mapping

import numpy as np

_EPOCH = (1980, 1, 1, 0, 0, 0)


def zip_bytes(members: Mapping[str, bytes], executable: frozenset[str] = frozenset()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if name in executable else 0o644) << 16
            archive.writestr(info, members[name])
    return buffer.getvalue()


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An .npz (readable by np.load) built deterministically; object arrays are refused."""
    members = {}
    for key, array in arrays.items():
        out = io.BytesIO()
        # not np.ascontiguousarray, which makes a 0-d array (a function returning a number) 1-d
        np.lib.format.write_array(out, np.asarray(array, order="C"), allow_pickle=False)
        members[f"{key}.npy"] = out.getvalue()
    return zip_bytes(members)


def load_npz(path: Path | io.BytesIO) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}
