"""autograder/archive.py: zips and .npz files that are the same bytes for the same input, and read back as written."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from autograder.archive import load_npz, npz_bytes, zip_bytes

ARRAYS = {
    "scalar": np.float64(2.5) * np.ones(()), "empty": np.zeros((0, 3)), "flags": np.array([True, False]),
    "big-endian": np.arange(4, dtype=">f4"), "ints": np.arange(6, dtype=np.int8).reshape(2, 3),
    "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)), "wide": np.arange(24.0).reshape(2, 3, 4),
    "nan": np.array([np.nan, np.inf, -0.0]),
}


def test_every_array_reads_back_as_numpy_reads_it_and_writable():
    data = npz_bytes(ARRAYS)
    ours = load_npz(io.BytesIO(data))
    with np.load(io.BytesIO(data), allow_pickle=False) as theirs:
        assert sorted(ours) == sorted(theirs.files) == sorted(ARRAYS)
        for name, array in ours.items():
            assert array.dtype == theirs[name].dtype and array.shape == theirs[name].shape, name
            assert np.array_equal(array, theirs[name], equal_nan=True) and array.flags.writeable, name


def test_an_npz_written_elsewhere_is_read_by_numpys_own_reader():
    buffer = io.BytesIO()
    np.savez(buffer, a=np.arange(3), b=np.ones((2, 2), dtype=np.complex64))
    arrays = load_npz(io.BytesIO(buffer.getvalue()))
    assert arrays["a"].tolist() == [0, 1, 2] and arrays["b"].dtype == np.complex64


def test_object_arrays_are_refused_both_ways():
    with pytest.raises(ValueError):
        npz_bytes({"o": np.array([{}], dtype=object)})
    buffer = io.BytesIO()
    np.savez(buffer, o=np.array([{}], dtype=object))
    with pytest.raises(ValueError):
        load_npz(io.BytesIO(buffer.getvalue()))


def test_the_same_members_make_the_same_bytes():
    assert zip_bytes({"b": b"2", "a": b"1"}) == zip_bytes({"a": b"1", "b": b"2"})
    assert zipfile.ZipFile(io.BytesIO(zip_bytes({"a": b"1"}))).getinfo("a").date_time == (1980, 1, 1, 0, 0, 0)
