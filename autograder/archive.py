"""Byte-identical zip files: {member name: bytes} in, a zip with fixed timestamps and order out.

Releases are diffed in git, so the same input must give the same bytes; the
zipfile module otherwise stamps the current time into every entry.
"""

from __future__ import annotations

import io
import math
import re
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


# the header np.lib.format.write_array gives a C-ordered array: a 1.0 header, then the bytes
_NPY_HEADER = re.compile(rb"\{'descr'[:] '([<>|][biufc][0-9]{1,2})', 'fortran_order'[:] False, 'shape'[:] \(([0-9, ]*)\), \} *\n")


def load_npz(path: Path | io.BytesIO) -> dict[str, np.ndarray]:
    """The arrays of an .npz that `npz_bytes` wrote. Its headers are read here, not by np.load, which parses each
    with ast.literal_eval (a grading bundle holds thousands of small arrays); any other header goes to numpy."""
    arrays = {}
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            data = archive.read(name)
            header = _NPY_HEADER.match(data, 10) if data[:8] == b"\x93NUMPY\x01\x00" else None
            if header is None:
                array = np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
            else:
                shape = tuple(int(n) for n in header.group(2).split(b",") if n.strip())
                array = np.frombuffer(data, dtype=np.dtype(header.group(1).decode()), count=math.prod(shape),
                                      offset=header.end()).reshape(shape).copy()
            arrays[name.removesuffix(".npy")] = array
    return arrays
