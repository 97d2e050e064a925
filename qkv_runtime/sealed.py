"""How the self-check keeps answers out of the student release: cells, slow keys, tags and sealed values.

The build stores, for each written answer of each student, a tag and a sealed copy
of the exact value under a key that costs a deliberate amount of work to derive
(hashlib.scrypt, memory-hard, salted per assignment, student, problem and part).
The self-check derives the key from what the student typed, finds the tag, unseals
the exact value and applies the grader's own rule to it (docs/self-check.md).

Numbers: each entry t of the right answer lies in a cell k = floor(t / s) of a size s
(a power of two) at least twice the widest tolerance window the self-check may
compute around a typed number x the grader accepts. So the window around x touches
at most two cells per entry, the self-check derives at most two keys per entry (or
one per tuple of cells for a small vector, "whole" mode), and once the value is
unsealed the verdict is the grader's, |x - t| <= abs + rel*|t| (judge.within), exactly.
Shapes, true/false and choices (by id, whatever their order): one key of the canonical form typed.

A brute-force search pays one key per cell (or per shape, letter, integer) tried.
"""

from __future__ import annotations

import hashlib
import math
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .judge import window

FORMAT = 3  # of selfcheck.json; the self-check refuses another (3: choices sealed by id, orders, follow-ups)

# One key: scrypt with these parameters, 3.5 MiB of memory and about 7 ms on one core of the reference
# machine (benchmarks/selfcheck.py): as much as keeps the build of a 400-student assignment with its own
# numbers for everyone (some 28,000 keys) near 2 minutes on 2 cores. They travel in selfcheck.json, so a
# later release may change them.
KDF_N = 2**12
KDF_R = 7
KDF_P = 1
KEY_BYTES = 32
MAX_KDF_MEMORY = 1 << 30  # a release asking for more than this is damaged

WHOLE_MAX = 3  # parts of at most 3 entries are keyed as one tuple of cells (at most 2**3 keys a check)
SLACK = 1e-12  # relative slack on a window bounded from a typed number (floating-point rounding)
MARGIN = 1e-6  # a cell is wider than twice the widest window by this much, relative


# ------------------------------------------------------------------ the key derivation


def kdf_params(n: int = KDF_N, r: int = KDF_R, p: int = KDF_P) -> Dict[str, Any]:
    """The scrypt parameters as selfcheck.json keeps them (memory: 128 * n * r bytes)."""
    return {"name": "scrypt", "n": int(n), "r": int(r), "p": int(p), "dklen": KEY_BYTES,
            "maxmem": 128 * int(r) * (int(n) + int(p) + 2) + (1 << 20)}


def kdf_memory(params: Dict[str, Any]) -> int:
    return 128 * int(params["n"]) * int(params["r"])


def kdf_problem(params: Any) -> Optional[str]:
    """What is wrong with key-derivation parameters read from a file, or None."""
    if not isinstance(params, dict) or params.get("name") != "scrypt":
        return "no scrypt parameters"
    values = [params.get(k) for k in ("n", "r", "p", "dklen", "maxmem")]
    counts = [v for v in values if type(v) is int and v > 0]
    if len(counts) != len(values):
        return "bad scrypt parameters"
    n, r, p, _, maxmem = counts
    if n < 2 or n & (n - 1) or maxmem > MAX_KDF_MEMORY or 128 * r * (n + p) > maxmem:
        return "bad scrypt parameters"
    return None


def kdf_available() -> bool:
    """Some Pythons have no hashlib.scrypt (built with LibreSSL, e.g. Apple's /usr/bin/python3)."""
    return hasattr(hashlib, "scrypt")


def derive_key(password: str, salt: str, params: Dict[str, Any]) -> bytes:
    """The slow step: one call is what a search pays for each candidate."""
    return hashlib.scrypt(password.encode("utf-8"), salt=f"qkv2|{salt}".encode("utf-8"), n=params["n"],
                          r=params["r"], p=params["p"], maxmem=params["maxmem"], dklen=params["dklen"])


def digest_salt(assignment: str, student: str, problem: str, part: str) -> str:
    return f"{assignment}|{student}|{problem}|{part}"


def tag(key: bytes, label: str) -> str:
    """What a release stores to recognise a key: fast to check once the key is known."""
    return hashlib.sha256(b"qkv2|tag|" + label.encode("utf-8") + b"|" + key).hexdigest()[:32]


def _keystream(key: bytes, label: str, size: int) -> bytes:
    return hashlib.shake_256(b"qkv2|seal|" + label.encode("utf-8") + b"|" + key).digest(size)


def seal(key: bytes, label: str, values: Sequence[float]) -> str:
    """The exact float64 values, XORed with a keystream of the key: hex."""
    plain = b"".join(struct.pack(">d", float(v)) for v in values)
    return bytes(a ^ b for a, b in zip(plain, _keystream(key, label, len(plain)))).hex()


def unseal(key: bytes, label: str, text: str) -> List[float]:
    data = bytes.fromhex(text)
    plain = bytes(a ^ b for a, b in zip(data, _keystream(key, label, len(data))))
    return [struct.unpack(">d", plain[i:i + 8])[0] for i in range(0, len(plain) - len(plain) % 8, 8)]


def answer_password(canonical: str) -> str:
    """A shape (dims joined by x), true/false, or a choice's id."""
    return f"answer|{canonical}"


# ------------------------------------------------------------------ numbers: cells


def window_bound(x: float, tol_abs: float, tol_rel: float) -> float:
    """A bound on the grader's window abs + rel*|t| for every t that accepts the typed x.

    |t| <= |x| + abs + rel*|t| gives abs + rel*|t| <= (abs + rel*|x|) / (1 - rel).
    """
    if tol_abs == 0 and tol_rel == 0:
        return 0.0
    x = abs(float(x))
    return float(window(x, tol_abs, tol_rel)) / max(1.0 - tol_rel, 1e-9) + SLACK * max(1.0, x)


def _power_of_two_at_least(x: float) -> float:
    size = 2.0 ** math.ceil(math.log2(x))
    while size < x:
        size *= 2
    while size / 2 >= x:
        size /= 2
    return size


def cell_size(t: float, tol_abs: float, tol_rel: float, decimals: Optional[int] = None) -> float:
    """The cell of an entry whose right answer is t: a power of two, at least twice the widest window
    the self-check may compute around a number the grader accepts (so it touches at most 2 cells).

    With no tolerance at all only t itself is accepted: a cell no wider than the answer's grid
    (1 for whole numbers, 2**-7 for 2 decimals), so each grid point has its own key.
    """
    t = float(t)
    around = float(window(t, tol_abs, tol_rel))
    if around == 0:
        return 2.0 ** math.floor(math.log2(10.0 ** -(decimals or 0)))
    widest = window_bound(abs(t) + around, tol_abs, tol_rel)
    return _power_of_two_at_least(2 * widest * (1 + MARGIN))


def cell_index(value: float, size: float) -> int:
    return int(math.floor(float(value) / size))


def candidate_cells(x: float, size: float, tol_abs: float, tol_rel: float) -> List[int]:
    """The cells a right answer may lie in if the grader accepts the typed x: x's own cell first.

    A right answer's window is under size / 2, so the search never reaches further than that, and
    then [x - reach, x + reach] touches at most one neighbour of x's cell: at most 2 cells.
    """
    x = float(x)
    if not math.isfinite(x) or abs(x) / size > 2.0**52:
        return []
    own = cell_index(x, size)
    reach = min(window_bound(x, tol_abs, tol_rel), size / 2)
    offset = x - own * size  # where x lies in its cell, in [0, size]: exact, size being a power of two
    if offset < reach:
        return [own, own - 1]
    if size - offset <= reach:
        return [own, own + 1]
    return [own]


def cell_password(sizes: Sequence[float], shape: Sequence[int], indices: Sequence[int]) -> str:
    """The canonical form of cells: their sizes, the part's shape, the cell indices."""
    return ("cells|" + ",".join(repr(float(s)) for s in sizes) + "|" + "x".join(str(int(n)) for n in shape)
            + "|" + ",".join(str(int(k)) for k in indices))


def part_mode(size: int) -> str:
    """"whole": one key per tuple of cells (few entries); "each": one key per entry's cell."""
    return "whole" if size <= WHOLE_MAX else "each"


def most_keys(size: int) -> int:
    """The most keys the self-check derives for one typed part of `size` entries."""
    return 2**size if part_mode(size) == "whole" else 2 * size


def part_plan(values: Any, tol_abs: float, tol_rel: float,
              decimals: Optional[int] = None) -> Tuple[str, List[float]]:
    """How a part whose right answer is `values` is keyed: its mode and one cell size per entry."""
    flat = np.asarray(values, dtype=float).reshape(-1)
    return part_mode(flat.size), [cell_size(x, tol_abs, tol_rel, decimals) for x in flat]


# ------------------------------------------------------------------ function outputs


def canonical_numbers(values: np.ndarray, digits: int) -> str:
    flat = np.round(np.asarray(values, dtype=float).reshape(-1), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{np.shape(values)}:" + ",".join(f"{x:.{digits}f}" for x in flat)


OUTPUT_DIGITS = 6  # a function output matches a misconception's when equal to 6 decimals


def outputs_digest(outputs, digits: int = OUTPUT_DIGITS) -> str:
    """A digest of a function's outputs on a PUBLIC input, to recognise a misconception's output.

    Plain sha256, no slow key: the inputs are public and so is what a mistaken function returns
    on them (anyone can run the mistake); only the written answers are secrets.
    """
    canonical = "|".join(canonical_numbers(np.asarray(o, dtype=float), digits) for o in outputs)
    return hashlib.sha256(f"qkv1|outputs|{canonical}".encode()).hexdigest()
