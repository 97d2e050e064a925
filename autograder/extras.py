"""The optional parts of qkv (pip extras): whether one is installed, and the one line that says how to get it.

The core builds, grades and self-checks the NumPy track. `torch` adds the torch
track, `cluster` grading on Dask, `nbgrader` running the nbgrader course folder
(qkv itself only writes it), `copying` the code-similarity signals, `canvas` pushing
grades through Canvas's API, `serve` the submission service (`postgres` its PostgreSQL database).
"""

from __future__ import annotations

import importlib.util

from autograder.errors import QkvError
from autograder.install_line import install_line

EXTRAS = {
    "torch": ("torch", "the torch track needs PyTorch"),
    "cluster": ("distributed", "grading on a Dask cluster needs dask and distributed"),
    "nbgrader": ("nbgrader", "the nbgrader route needs nbgrader and a Jupyter kernel"),
    "copying": ("copydetect", "qkv copying compares code with copydetect"),
    "canvas": ("canvasapi", "qkv push-grades talks to Canvas through canvasapi"),
    "serve": ("uvicorn", "qkv serve runs on Starlette and uvicorn"),
    "postgres": ("psycopg", "a PostgreSQL database needs psycopg"),
}


def available(extra: str) -> bool:
    return importlib.util.find_spec(EXTRAS[extra][0]) is not None


def install_hint(extra: str) -> str:
    return f"{EXTRAS[extra][1]}: {install_line(extra)}"


def require(extra: str, where: str) -> None:
    if not available(extra):
        raise QkvError(where, install_hint(extra))
