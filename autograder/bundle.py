"""The grading bundle: the contract between build and grade (instructor machines only).

`build` writes it to `dist/NAME/autograder/`; `grade`, the pytest plugin and the
Gradescope runner read it. It holds every test of every `implement` problem with
its inputs, expected outputs (already computed by the references), each
misconception's outputs, and the reference's outputs with a misconception of a
function it builds on inside (assemble/compose.py), so grading never runs reference
code; and the written
problems' bank files, whose per-student answers are computed from the seed.

Layout: `assignment.json` (metadata), `arrays.npz` (all arrays, read with
allow_pickle=False), `problems/<id>.yaml` (copies of the written problems), or
`problems/<id>/` for a problem folder of a course, with the code its answers are
computed by (bank/folders.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from autograder.archive import load_npz, npz_bytes
from autograder.bank import folders
from autograder.bank.load import load_problem, parse_problem
from autograder.kinds.model import TRACKS, Tolerance, Track
from autograder.errors import QkvError
from autograder.kinds import Problem
from autograder.late_policy import LatePolicy
from autograder.grade.written_policy import WrittenPolicy
from qkv_runtime.limits import Limits

FORMAT_VERSION = 2
Outputs = tuple[np.ndarray, ...]


@dataclass(frozen=True)
class GradedTest:
    """One call of a student function and how its result is judged."""

    problem_id: str
    name: str
    visibility: Literal["public", "hidden"]
    weight: float  # share of the problem's points: points * weight / (sum of the problem's weights)
    tolerance: Tolerance
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    expected: Outputs | None  # None when the call must raise `expect_error`
    expect_error: str | None = None
    output: Literal["all", "first", "second"] = "all"
    mutant_outputs: dict[str, Outputs] = field(default_factory=dict)
    # {problem it builds on: {that problem's misconception: the reference's outputs with it inside}}
    upstream_outputs: dict[str, dict[str, Outputs]] = field(default_factory=dict)

    # cached: a class of 1,000 asks each test for these once per student
    @cached_property
    def call_id(self) -> str:
        return f"{self.problem_id}::{self.name}"

    @cached_property
    def input_shapes(self) -> str:
        shapes = [str(tuple(a.shape)) for a in self.args if isinstance(a, np.ndarray)]
        shapes += [f"{k}={tuple(v.shape)}" for k, v in self.kwargs.items() if isinstance(v, np.ndarray)]
        return ", ".join(shapes)


@dataclass(frozen=True)
class CodeProblem:
    id: str
    title: str
    points: float
    function: str
    tests: tuple[GradedTest, ...]
    misconceptions: dict[str, str]  # id -> message for the student
    builds_on: tuple[str, ...] = ()  # problems whose mistakes its tests recognise, in the assignment's order

    @cached_property
    def total_weight(self) -> float:
        return sum(t.weight for t in self.tests) or 1.0

    def test_points(self, test: GradedTest) -> float:
        return self.points * test.weight / self.total_weight


@dataclass(frozen=True)
class WrittenProblem:
    id: str
    points: float
    problem: Problem


def module_name(assignment: str) -> str:
    """The Python module a student writes for an assignment: its name with underscores."""
    return assignment.replace("-", "_")


@dataclass(frozen=True)
class GradingBundle:
    name: str
    title: str
    track: Track
    seed: int
    variants: str
    due: str | None
    code: tuple[CodeProblem, ...]
    written: tuple[WrittenProblem, ...]
    problem_order: tuple[str, ...]
    limits: Limits = Limits()
    isolation: str = "require"  # the manifest's policy: "require" or "allow-rlimits"
    late: LatePolicy | None = None  # the manifest's late policy (classroom/deadlines.py applies it)
    serve: dict[str, Any] = field(default_factory=dict)  # the manifest's `serve` settings as plain data (serve/ reads)
    # the manifest's written-answer policy for repeated attempts (grade/written_policy.py); a bundle built before has
    # the default
    written_attempts: WrittenPolicy = WrittenPolicy()

    @property
    def module(self) -> str:
        return module_name(self.name)

    @property
    def max_points(self) -> float:
        return sum(p.points for p in self.code) + sum(p.points for p in self.written)


# -------------------------------------------------------------------- writing


def _encode_value(value: Any, key: str, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, np.ndarray):
        arrays[key] = value
        return {"array": key}
    return {"value": value}


def _encode_outputs(outputs: Outputs, key: str, arrays: dict[str, np.ndarray]) -> int:
    for i, array in enumerate(outputs):
        arrays[f"{key}/{i}"] = np.asarray(array)
    return len(outputs)


def written_problem_files(problem_id: str, path: Path) -> dict[str, bytes]:
    """What the bundle keeps of a written problem, {path under problems/: bytes}: its file, or its folder's files."""
    if path.name == folders.PROBLEM_FILE:
        return {f"{problem_id}/{name}": data for name, data in folders.module_files(path.parent).items()}
    return {f"{problem_id}.yaml": path.read_bytes()}


def bundle_files(bundle: GradingBundle, written: dict[str, bytes]) -> dict[str, bytes]:
    """The bundle as {relative path: bytes}; `written`: the written problems' files (written_problem_files)."""
    arrays: dict[str, np.ndarray] = {}
    code = []
    for problem in bundle.code:
        tests = []
        for t in problem.tests:
            base = f"{problem.id}/{t.name}"
            tests.append({
                "name": t.name,
                "visibility": t.visibility,
                "weight": t.weight,
                "tolerance": t.tolerance.model_dump(),
                "output": t.output,
                "expect_error": t.expect_error,
                "args": [_encode_value(a, f"{base}/arg/{i}", arrays) for i, a in enumerate(t.args)],
                "kwargs": {k: _encode_value(v, f"{base}/kwarg/{k}", arrays) for k, v in sorted(t.kwargs.items())},
                "expected": None if t.expected is None else _encode_outputs(t.expected, f"{base}/want", arrays),
                "mutants": {m: _encode_outputs(o, f"{base}/mutant/{m}", arrays) for m, o in sorted(t.mutant_outputs.items())},
                "upstream": {u: {m: _encode_outputs(o, f"{base}/upstream/{u}/{m}", arrays) for m, o in sorted(found.items())}
                             for u, found in sorted(t.upstream_outputs.items())},
            })
        code.append({"id": problem.id, "title": problem.title, "points": problem.points,
                     "function": problem.function, "misconceptions": problem.misconceptions,
                     "builds_on": list(problem.builds_on), "tests": tests})
    meta = {
        "format": FORMAT_VERSION,
        "name": bundle.name, "title": bundle.title, "track": bundle.track, "seed": bundle.seed,
        "variants": bundle.variants, "due": bundle.due, "problem_order": list(bundle.problem_order),
        "limits": bundle.limits.to_json(), "isolation": bundle.isolation,
        "late": bundle.late.to_json() if bundle.late else None,
        "serve": bundle.serve, "written_attempts": bundle.written_attempts.to_json(), "code": code,
        "written": [{"id": w.id, "points": w.points} for w in bundle.written],
    }
    files = {
        "assignment.json": (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode(),
        "arrays.npz": npz_bytes(arrays),
    }
    files.update({f"problems/{path}": data for path, data in sorted(written.items())})
    return files


# -------------------------------------------------------------------- reading


def bundle_fingerprint(folder: Path) -> str:
    """What names a build of the bundle in `folder`: a gradebook is bound to it, and a rebuilt one grades again."""
    digest = hashlib.sha256()
    for name in ("assignment.json", "arrays.npz"):
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()


def _decode_value(spec: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    return arrays[spec["array"]] if "array" in spec else spec["value"]


def _decode_outputs(count: int, key: str, arrays: dict[str, np.ndarray]) -> Outputs:
    return tuple(arrays[f"{key}/{i}"] for i in range(count))


def read_bundle(folder: Path) -> GradingBundle:
    """Load a bundle written by `qkv build`; a missing or damaged one is a one-line QkvError."""
    meta_path = folder / "assignment.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        arrays = load_npz(folder / "arrays.npz")
    except FileNotFoundError:
        raise QkvError(str(folder), "no grading bundle here: run `qkv build` for this assignment first") from None
    except (ValueError, OSError) as err:
        raise QkvError(str(folder), f"damaged grading bundle: {err}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_VERSION:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise QkvError(str(meta_path), f"bundle format {found} is not {FORMAT_VERSION}: rebuild it")
    try:
        return _decode_bundle(folder, meta, arrays)
    except QkvError:
        raise
    except (KeyError, TypeError, ValueError, OSError) as err:
        raise QkvError(str(folder), f"damaged grading bundle ({type(err).__name__}: {err}): rebuild it") from None


def _track(value: Any) -> Track:
    if value not in TRACKS:
        raise ValueError(f"track {value!r} is not one of {', '.join(TRACKS)}")
    return value


def _decode_bundle(folder: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> GradingBundle:
    code = []
    for p in meta["code"]:
        tests = tuple(
            GradedTest(
                problem_id=p["id"], name=t["name"], visibility=t["visibility"], weight=t["weight"],
                tolerance=Tolerance(**t["tolerance"]), output=t["output"], expect_error=t["expect_error"],
                args=tuple(_decode_value(a, arrays) for a in t["args"]),
                kwargs={k: _decode_value(v, arrays) for k, v in t["kwargs"].items()},
                expected=None if t["expected"] is None else _decode_outputs(t["expected"], f"{p['id']}/{t['name']}/want", arrays),
                mutant_outputs={m: _decode_outputs(n, f"{p['id']}/{t['name']}/mutant/{m}", arrays) for m, n in t["mutants"].items()},
                upstream_outputs={u: {m: _decode_outputs(n, f"{p['id']}/{t['name']}/upstream/{u}/{m}", arrays)
                                      for m, n in found.items()} for u, found in t.get("upstream", {}).items()},
            )
            for t in p["tests"]
        )
        code.append(CodeProblem(p["id"], p["title"], p["points"], p["function"], tests, p["misconceptions"],
                                tuple(p.get("builds_on", ()))))  # bundles built before builds_on have none
    written = []
    for w in meta["written"]:
        own = folder / "problems" / w["id"] / folders.PROBLEM_FILE
        if own.is_file():
            written.append(WrittenProblem(w["id"], w["points"], load_problem(own)))
            continue
        path = folder / "problems" / f"{w['id']}.yaml"
        written.append(WrittenProblem(w["id"], w["points"], parse_problem(path.read_text(encoding="utf-8"), str(path))))
    serve = meta.get("serve")
    return GradingBundle(
        name=meta["name"], title=meta["title"], track=_track(meta["track"]), seed=meta["seed"], variants=meta["variants"],
        due=meta["due"], code=tuple(code), written=tuple(written), problem_order=tuple(meta["problem_order"]),
        limits=Limits.from_json(meta["limits"]), isolation=str(meta["isolation"]),
        late=LatePolicy.model_validate(meta["late"]) if isinstance(meta.get("late"), dict) else None,
        serve=serve if isinstance(serve, dict) else {},
        written_attempts=WrittenPolicy.model_validate(meta.get("written_attempts") or {}),
    )
