"""Self-check: the student release alone tells right from wrong, offline, as the grader's rules do, without the answers.

The heavy end-to-end part copies a release into an empty folder, makes a fresh
virtual environment with only numpy and pytest, and runs the checker there with the
network blocked (a network namespace when we can make one, and an audit hook that
fails on any socket use in every case).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import io
import json
import os
import pprint
import re
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import nbclient
import nbformat
import numpy as np
import pytest
import yaml

from qkv_runtime import sealed
from qkv_runtime.answers import evaluate_dim
from autograder.kinds import ImplementProblem, MultipleChoiceProblem, NumericProblem, ShapeProblem, TrueFalseProblem, kind_of
from autograder.kinds.multiple_choice import check_choice
from autograder.kinds.numeric.by_hand import table_markdown
from autograder.kinds.numeric.model import AnswerPart, AnswerTolerance
from autograder.kinds.numeric.parts import check_part, close
from autograder.kinds.numeric.seals import numeric_part_data
from autograder.kinds.shape import check_shape, expected_shape
from autograder.kinds.true_false import check_true_false
from qkv_runtime.compare import compare
from autograder.kinds.resolve import resolve
from autograder.kinds.numeric.variants import variant_for
from autograder.assemble import BuildResult, build
from autograder.assemble.manifest import Assignment
from autograder.kinds.sealing import answer_seal, derive_seals
from autograder.assemble.student_text import CLASS
from autograder.bundle import read_bundle as _read_bundle
from autograder.selfcheck import qkv_check
from autograder.selfcheck.qkv_selfcheck import history
from conftest import QKV, ROOT, no_network_prefix, said

pytestmark = pytest.mark.slow  # releases checked in fresh folders and processes, a Jupyter kernel

FIXTURES = Path(__file__).parents[1] / "fixtures" / "selfcheck"
BUNDLED = sorted(p.stem for p in (ROOT / "assignments").glob("*.yaml"))
NETWORK_MARK = "QKV-NETWORK-ATTEMPT"


# ------------------------------------------------------------ submissions from the bank


@functools.lru_cache(maxsize=None)
def read_bundle(folder: Path):
    return _read_bundle(folder)


def typed_numbers(values: np.ndarray, part: AnswerPart) -> object:
    """A number or list as a student types it: rounded to the part's decimals when that is within tolerance."""
    values = np.asarray(values, dtype=float)
    rounded = np.round(values, part.decimals if part.decimals is not None else 10)
    if not close(rounded, values, part.tolerance):
        rounded = np.round(values, 10)
    return rounded.tolist()


def right_answer(problem, assignment: Assignment, student: str | None) -> object:
    if isinstance(problem, NumericProblem):
        variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants, student)
        values = {p.name: typed_numbers(variant.answers[p.name], p) for p in problem.parts}
        return next(iter(values.values())) if len(values) == 1 else values
    if isinstance(problem, ShapeProblem):
        return " x ".join(problem.answer)  # as the prompt names them, e.g. "n x d/h"
    if isinstance(problem, (TrueFalseProblem, MultipleChoiceProblem)):
        return kind_of(problem).answer(problem, order_of(problem, assignment, student))


def wrong_answers(problem, assignment: Assignment, student: str | None) -> list[tuple[object, str | None]]:
    """(answer, the message the self-check must give) for each misconception of a written problem;
    a plainly wrong answer (message None) when the problem names no misconception."""
    out: list[tuple[object, str | None]] = []
    if isinstance(problem, NumericProblem):
        variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants, student)
        for mistake in problem.misconceptions:
            values = resolve(mistake.compute)(**variant.params)
            typed, differs = {}, False
            for part in problem.parts:
                want = variant.answers[part.name]
                got = np.asarray(values.get(part.name, want), dtype=float)
                if got.size == want.size and not close(got.reshape(want.shape), want, part.tolerance):
                    differs = True
                typed[part.name] = typed_numbers(got if got.size == want.size else want, part)
            if differs:
                out.append((next(iter(typed.values())) if len(typed) == 1 else typed, mistake.message))
        if not out:
            off = {p.name: (np.asarray(variant.answers[p.name]) + 10 * p.tolerance.abs + 1).tolist()
                   for p in problem.parts}
            out.append((next(iter(off.values())) if len(off) == 1 else off, None))
    elif isinstance(problem, ShapeProblem):
        # in numbers when the problem gives them, as tests/bank/test_bank.py does ('h*n' reads as 'h x n')
        out = [(" x ".join(evaluate_dim(d, problem.parameters) for d in m.answer) if problem.parameters
                else " x ".join(m.answer), m.message) for m in problem.misconceptions] or [("1 x 1 x 1", None)]
    elif isinstance(problem, TrueFalseProblem):
        right = right_answer(problem, assignment, student)
        out = [({**right, "answer": not problem.answer}, None)]
        follow = problem.follow_up
        if follow is not None and follow.choices:
            order = order_of(problem, assignment, student).params["order"]
            out += [({**right, "follow_up": "ABCDEFGH"[order.index(c.id)]}, c.misconception)
                    for c in follow.choices if c.misconception]
        elif follow is not None and follow.number is not None:
            out += [({**right, "follow_up": float(follow.number) + 10 * follow.tolerance.abs + 1}, None)]
    else:
        order = order_of(problem, assignment, student).params["order"]
        out = [("ABCDEFGH"[order.index(c.id)], c.misconception) for c in problem.choices if c.misconception]
    return out


def order_of(problem, assignment: Assignment, student: str | None):
    """The variant (the order of the choices) a student of this assignment gets."""
    return kind_of(problem).variant(problem, assignment.manifest.seed, assignment.manifest.variants, student)


def embedded_function(implementation, target: str) -> str:
    """Python source binding `target` to `implementation`, with the modules it needs inlined (no solutions import)."""
    lines = ["import types as _qkv_types", "",
             "def _qkv_module(name, source, **deps):",
             "    module = _qkv_types.ModuleType(name)",
             "    module.__dict__.update(deps)",
             "    exec(compile(source, name, 'exec'), module.__dict__)",
             "    return module", ""]
    done: set[str] = set()

    def inline(module) -> str:
        var = "_qkv_" + module.__name__.replace(".", "_")
        if var in done:
            return var
        source = inspect.getsource(module)
        deps = {}
        for name, alias in re.findall(r"^from \. import (\w+)(?: as (\w+))?\s*$", source, re.M):
            deps[alias or name] = inline(importlib.import_module(f"autograder.references.{name}"))
        source = re.sub(r"^from \. import (\w+)(?: as (\w+))?\s*$", "", source, flags=re.M)
        # the other topics' parts, imported at the end of misconceptions.py: a mutant stands alone without them
        source = re.sub(r"^from \.\w+ import \*.*$", "", source, flags=re.M)
        args = "".join(f", {alias}={var_}" for alias, var_ in deps.items())
        lines.append(f"{var} = _qkv_module({module.__name__!r}, {source!r}{args})")
        done.add(var)
        return var

    var = inline(inspect.getmodule(implementation))
    lines.append(f"{target} = {var}.{implementation.__name__}")
    return "\n".join(lines) + "\n"


def public_mutant(built: BuildResult, problem: ImplementProblem):
    """A misconception implementation that fails a public test (so the self-check can show it), or None."""
    bundle = read_bundle(built.out / "autograder")
    code = next(p for p in bundle.code if p.id == problem.id)
    for mistake in problem.misconceptions:
        if not mistake.implementation:
            continue
        for test in code.tests:
            if test.visibility == "public" and mistake.id in test.mutant_outputs and test.expected is not None and \
                    compare(test.mutant_outputs[mistake.id], test.expected, test.tolerance.abs, test.tolerance.rel) is not None:
                return mistake
    return None


def named_mistakes(built: BuildResult, problem: ImplementProblem, mistake_id: str) -> set[str]:
    """The ids the grader may name for this mistake's output on the public tests: on each test, the first
    misconception (in the bundle's sorted order) whose output equals it within the test's tolerance."""
    bundle = read_bundle(built.out / "autograder")
    code = next(p for p in bundle.code if p.id == problem.id)
    names = set()
    for test in code.tests:
        if test.visibility != "public" or test.expected is None or mistake_id not in test.mutant_outputs:
            continue
        got = test.mutant_outputs[mistake_id]
        if compare(got, test.expected, test.tolerance.abs, test.tolerance.rel) is not None:
            names.add(next(m for m, out in test.mutant_outputs.items() if compare(got, out, test.tolerance.abs, test.tolerance.rel) is None))
    return names


def mistake_messages(built: BuildResult, problem: ImplementProblem, mistake_id: str) -> set[str]:
    """The messages the grader may give for this mistake's output on the public tests: of the problem's own
    mistakes (named_mistakes), or of a mistake of a function it builds on whose output it also is (a file with
    that function wrong too is told to fix it first)."""
    bundle = read_bundle(built.out / "autograder")
    code = next(p for p in bundle.code if p.id == problem.id)
    messages = {code.misconceptions[n] for n in named_mistakes(built, problem, mistake_id)}
    by_id = {p.id: p for p in bundle.code}
    for test in code.tests:
        if test.visibility != "public" or test.expected is None or mistake_id not in test.mutant_outputs:
            continue
        got = test.mutant_outputs[mistake_id]
        messages |= {by_id[u].misconceptions[m] for u, found in test.upstream_outputs.items() for m, out in found.items()
                     if compare(got, out, test.tolerance.abs, test.tolerance.rel) is None}
    return messages


def reference_function(problem: ImplementProblem, track: str) -> str:
    from autograder.assemble.solution_key import key_function

    return key_function(problem, track)


def submission_py(built: BuildResult, student: str | None = None, wrong: bool = False) -> str:
    """The release's stub with every function and answer filled in: right, or with one mistake each."""
    assignment = built.assignment
    stub = (built.out / "student" / f"{assignment.module_name}.py").read_text(encoding="utf-8")
    parts = [stub, "", "# ---- filled in by tests/selfcheck/test_selfcheck.py", ""]
    for assigned in assignment.implement:
        problem = assigned.problem
        mistake = public_mutant(built, problem) if wrong else None
        if mistake:
            parts.append(embedded_function(resolve(mistake.implementation), problem.function))
        else:
            parts.append(reference_function(problem, assignment.track))
    answers = {}
    for assigned in assignment.written:
        problem = assigned.problem
        answers[problem.id] = (wrong_answers(problem, assignment, student)[0][0] if wrong
                               else right_answer(problem, assignment, student))
    parts.append(f"STUDENT_ID = {json.dumps(student or '')}")
    parts.append("ANSWERS = " + pprint.pformat(answers, width=100, sort_dicts=False))
    return "\n".join(parts) + "\n"


def filled_notebook(built: BuildResult, student: str | None = None) -> str:
    """The release notebook with every work cell filled in with the right code and answers."""
    assignment = built.assignment
    nb = nbformat.read(built.out / "student" / f"{assignment.module_name}.ipynb", as_version=4)
    problems = {a.problem.id: a.problem for a in assignment.problems}
    for cell in nb.cells:
        meta = cell.metadata.get("qkv", {})
        if meta.get("role") == "setup" and student:
            cell.source = cell.source.replace('STUDENT_ID = ""', f"STUDENT_ID = {student!r}")
        if meta.get("role") == "work":
            problem = problems[meta["problem"]]
            if isinstance(problem, ImplementProblem):
                cell.source = "%matplotlib inline\n" + reference_function(problem, assignment.track)
            else:
                cell.source = f"ANSWERS[{problem.id!r}] = {right_answer(problem, assignment, student)!r}"
    return nbformat.writes(nb)


def expected_summary(built: BuildResult, wrong: bool) -> dict[str, str]:
    """problem id -> the status the summary must show."""
    out = {}
    for assigned in built.assignment.problems:
        problem = assigned.problem
        if wrong and isinstance(problem, ImplementProblem) and public_mutant(built, problem) is None:
            out[problem.id] = "pass"  # no mistake of this problem shows on the public tests
        else:
            out[problem.id] = "fail" if wrong else "pass"
    return out


def summary_rows(text: str) -> dict[str, str]:
    rows = {}
    for line in text.split("\nSummary\n", 1)[1].splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] in ("implement", "numeric", "shape", "true_false", "multiple_choice"):
            rows[fields[0]] = fields[3]
    return rows


# ------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def releases(bank, tmp_path_factory) -> dict[str, BuildResult]:
    """Every bundled assignment, the torch/per-student fixture and attention-numpy with the class's numbers, built
    once."""
    root = tmp_path_factory.mktemp("selfcheck-dist")
    built = {name: build(name, root / name, bank=bank) for name in BUNDLED}
    built["per-student-torch"] = build(str(FIXTURES / "per-student-torch.yaml"), root / "pst", bank=bank)
    manifest = yaml.safe_load((ROOT / "assignments" / "attention-numpy.yaml").read_text(encoding="utf-8"))
    manifest["variants"] = "same"  # the checker's machinery on one key for anyone (the shipped one is per student)
    manifest.pop("roster", None)
    (root / "same").mkdir()
    (root / "same" / "attention-numpy.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    built["attention-numpy-same"] = build(str(root / "same" / "attention-numpy.yaml"), root / "numpy-same", bank=bank)
    return built


@pytest.fixture(scope="module")
def numpy_release(releases) -> BuildResult:
    """attention-numpy giving the class one set of numbers: a file of the class's answers checks right whoever runs
    it (test_the_shipped_numpy_release_seals_each_roster_students_own_numbers checks the release as it ships)."""
    return releases["attention-numpy-same"]


@pytest.fixture(scope="module")
def netless() -> list[str]:
    """A command prefix that runs its command with no network; [] where none can be made here
    (the audit hook installed in the fresh venv still fails on any socket use)."""
    return no_network_prefix()


GUARD = f'''
import sys
def _qkv_no_network(event, args):
    if event.startswith(("socket.", "urllib.", "http.", "ftplib.", "smtplib.")) and event != "socket.__new__":
        sys.stderr.write("{NETWORK_MARK} " + event + "\\n")
        raise RuntimeError("the self-check tried to use the network: " + event)
sys.addaudithook(_qkv_no_network)
'''


@pytest.fixture(scope="module")
def fresh_venv(netless, tmp_path_factory) -> Path:
    """A new virtual environment holding only numpy and pytest (and what pytest needs).

    This session's pip installs into it (`pip --python`, no pip inside: faster), from the machine's
    pip configuration: first with the network blocked, so local wheels serve when there are any,
    then, if that fails, with the network.
    """
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([shutil.which("python3.11") or sys.executable, "-m", "venv", "--without-pip", str(venv)],
                   check=True, capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--retries", "0",
               "--timeout", "5", "numpy", "pytest"]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(netless + install, capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0:
        done = subprocess.run(install, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "sitecustomize.py").write_text(GUARD)
    listed = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                             "print('\\n'.join(d.metadata['Name'].lower() for d in m.distributions()))"],
                            capture_output=True, text=True, check=True, cwd=venv).stdout.split()
    assert {"numpy", "pytest"} <= set(listed)
    assert set(listed) <= {"numpy", "pytest", "pluggy", "iniconfig", "packaging", "pygments", "exceptiongroup",
                           "tomli", "colorama"}, listed
    return venv


@pytest.fixture(scope="module")
def offline_release(numpy_release, tmp_path_factory) -> Path:
    """The student release copied alone into an empty folder, with a right and a wrong .py and a filled notebook."""
    folder = tmp_path_factory.mktemp("student-machine") / "release"
    shutil.copytree(numpy_release.out / "student", folder)
    module = numpy_release.assignment.module_name
    (folder / "right.py").write_text(submission_py(numpy_release))
    (folder / "wrong.py").write_text(submission_py(numpy_release, wrong=True))
    (folder / "filled.ipynb").write_text(filled_notebook(numpy_release))
    (folder / "kernel.py").write_text(textwrap.dedent('''
        """Runs a notebook's code cells in one namespace, as a Jupyter kernel does (self-check cells too)."""
        import json, sys
        sys.path.insert(0, ".")
        namespace = {"__name__": "__main__"}
        for cell in json.load(open(sys.argv[1]))["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                source = "\\n".join(l for l in source.splitlines() if not l.lstrip().startswith(("%", "!")))
                exec(compile(source, "<cell>", "exec"), namespace)
    '''))
    assert (folder / f"{module}.py").is_file() and not (folder / "autograder").exists()
    return folder


def run_offline(venv: Path, netless: list[str], folder: Path, *args: str, env: dict | None = None):
    run = subprocess.run(
        netless + [str(venv / "bin" / "python"), *args], cwd=folder, capture_output=True, text=True, timeout=180,
        env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(folder.parent), "LANG": "C.UTF-8",
             "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
    assert NETWORK_MARK not in run.stdout + run.stderr
    return run


# ------------------------------------------------------------ the release alone, offline


def test_release_alone_checks_a_right_and_a_wrong_file_offline(fresh_venv, netless, offline_release, numpy_release):
    right = run_offline(fresh_venv, netless, offline_release, "qkv_check.py", "right.py")
    assert right.returncode == 0, right.stderr
    assert "Traceback" not in right.stdout + right.stderr
    assert summary_rows(right.stdout) == expected_summary(numpy_release, wrong=False)
    n = len(numpy_release.assignment.problems)
    assert f"{n} pass, 0 fail, 0 not answered" in right.stdout
    hidden = sum(len(a.problem.hidden_tests) for a in numpy_release.assignment.implement)
    assert f"Hidden tests exist for {len(numpy_release.assignment.implement)} function" in right.stdout
    assert f"({hidden} tests)" in right.stdout and "necessary, not sufficient" in right.stdout

    wrong = run_offline(fresh_venv, netless, offline_release, "qkv_check.py", "wrong.py")
    assert wrong.returncode == 0, wrong.stderr
    assert "Traceback" not in wrong.stdout + wrong.stderr
    assert summary_rows(wrong.stdout) == expected_summary(numpy_release, wrong=True)
    for assigned in numpy_release.assignment.implement:
        mistake = public_mutant(numpy_release, assigned.problem)
        if mistake:
            names = named_mistakes(numpy_release, assigned.problem, mistake.id)
            assert any(f"(common mistake: {name})" in wrong.stdout for name in names), (mistake.id, names)
            assert "expected: shape" in wrong.stdout and "got:      shape" in wrong.stdout
    for assigned in numpy_release.assignment.written:
        message = wrong_answers(assigned.problem, numpy_release.assignment, None)[0][1]
        if message:
            assert message in wrong.stdout, assigned.problem.id


def _history_view(text: str) -> tuple[list[tuple[str, str, str]], tuple[str, str] | None]:
    """(held misconceptions as (name, named in, right answers since), the next problem and its why) from a report."""
    held = re.findall(r"^  - (.+) \(named in (\S+); (\d)/\d right answers since\)$", text, re.M)
    chosen = re.search(r"^Work next on: (\S+) \(why: (.+)\)$", text, re.M)
    return held, (chosen.group(1), chosen.group(2)) if chosen else None


def test_the_release_remembers_its_runs_offline_and_targets_a_held_misconception(fresh_venv, netless, offline_release,
                                                                                tmp_path):
    """Issue 48: run twice with the network off, the self-check resumes from the history in the student's folder,
    names the misconception still held and the next problem that can show it; a damaged history is one line."""
    folder = tmp_path / "release"
    shutil.copytree(offline_release, folder)
    kept = folder / history.FILE
    kept.unlink(missing_ok=True)  # other tests' runs in the shared release
    data = json.loads((folder / "selfcheck.json").read_text())
    can_show = {p.id: p.detects for p in history.catalogue(data, CLASS)}

    first = run_offline(fresh_venv, netless, folder, "qkv_check.py", "wrong.py")
    assert first.returncode == 0 and "Traceback" not in first.stdout + first.stderr, first.stderr
    held, chosen = _history_view(first.stdout)
    assert "1 run," in first.stdout and held and all(since == "0" for _, _, since in held)
    assert all(name in first.stdout.split("Your self-check history")[0] for name, _, _ in held)  # named in the report
    assert chosen is not None and chosen[1] == f"a misconception you hold: {held[0][0]}"
    assert held[0][0] in can_show[chosen[0]] or chosen[0] == held[0][1]
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600

    second = run_offline(fresh_venv, netless, folder, "qkv_check.py", "right.py")
    assert second.returncode == 0 and "Traceback" not in second.stdout + second.stderr, second.stderr
    still, chosen = _history_view(second.stdout)
    assert "2 runs," in second.stdout  # resumed: the first run is remembered
    assert still and {name for name, _, _ in still} <= {name for name, _, _ in held}
    assert all(since == "1" for _, _, since in still)  # one right answer since, of the two that clear it
    assert chosen is not None and chosen[1] == f"a misconception you hold: {still[0][0]}"
    assert still[0][0] in can_show[chosen[0]] or chosen[0] == still[0][1]

    kept.write_bytes(b'{"format": "qkv-selfcheck-history", "tries": [{"problem": ')
    third = run_offline(fresh_venv, netless, folder, "qkv_check.py", "right.py")
    assert third.returncode == 0 and "Traceback" not in third.stdout + third.stderr, third.stderr
    told = [line for line in third.stdout.splitlines() if "starting a fresh history" in line]
    assert len(told) == 1 and told[0].startswith(f"{kept}: is damaged (not JSON); kept as {history.FILE}.aside-")
    assert "1 run," in third.stdout and "No misconception held." in third.stdout


def test_files_named_like_the_standard_library_beside_the_release_are_not_imported(fresh_venv, netless, offline_release,
                                                                                    tmp_path, numpy_release):
    folder = tmp_path / "release"
    shutil.copytree(offline_release, folder)
    for name in ("numbers", "random", "json"):  # a student's scratch files, named after what they try out
        (folder / f"{name}.py").write_text(f"raise SystemExit('the student\\'s {name}.py was imported')\n")
    right = run_offline(fresh_venv, netless, folder, "qkv_check.py", "right.py")
    assert right.returncode == 0 and "was imported" not in right.stdout + right.stderr, right.stderr
    assert summary_rows(right.stdout) == expected_summary(numpy_release, wrong=False)


def test_release_alone_checks_a_notebook_offline(fresh_venv, netless, offline_release, numpy_release):
    n = len(numpy_release.assignment.problems)
    cli = run_offline(fresh_venv, netless, offline_release, "qkv_check.py", "filled.ipynb")
    assert cli.returncode == 0 and "Traceback" not in cli.stdout + cli.stderr, cli.stderr
    assert summary_rows(cli.stdout) == expected_summary(numpy_release, wrong=False)
    assert "cells failed" not in cli.stdout and "These cells" not in cli.stdout

    # As in Jupyter: the setup cell imports check(), each self-check cell calls it with the kernel's globals.
    kernel = run_offline(fresh_venv, netless, offline_release, "kernel.py", "filled.ipynb")
    assert kernel.returncode == 0, kernel.stderr
    for assigned in numpy_release.assignment.problems:
        assert f"[{assigned.problem.id}]" in kernel.stdout
    assert "FAIL" not in kernel.stdout and "TODO" not in kernel.stdout
    assert f"{n} pass, 0 fail, 0 not answered" in kernel.stdout

    # The unfilled release notebook: everything still to do, nothing crashes.
    module = numpy_release.assignment.module_name
    stub = run_offline(fresh_venv, netless, offline_release, "kernel.py", f"{module}.ipynb")
    assert stub.returncode == 0, stub.stderr
    assert f"0 pass, 0 fail, {n} not answered" in stub.stdout
    assert "not implemented yet" in stub.stdout


def test_release_alone_runs_its_public_pytest_offline(fresh_venv, netless, offline_release, numpy_release):
    module = numpy_release.assignment.module_name
    public = sum(len(a.problem.public_tests) for a in numpy_release.assignment.implement)
    stub = run_offline(fresh_venv, netless, offline_release, "-m", "pytest", "-q")
    assert stub.returncode == 1 and f"{public} failed" in stub.stdout and "not implemented yet" in stub.stdout
    runs = {name: run_offline(fresh_venv, netless, offline_release, "-m", "pytest", "-q",
                              env={"QKV_SUBMISSION": name}) for name in ("right.py", "filled.ipynb", "wrong.py")}
    for name in ("right.py", "filled.ipynb"):
        assert runs[name].returncode == 0 and f"{public} passed" in runs[name].stdout, runs[name].stdout[-3000:]
    wrong = runs["wrong.py"]
    assert wrong.returncode == 1 and " failed" in wrong.stdout
    for assigned in numpy_release.assignment.implement:
        mistake = public_mutant(numpy_release, assigned.problem)
        if mistake:
            assert any(message in wrong.stdout
                       for message in mistake_messages(numpy_release, assigned.problem, mistake.id)), mistake.id
    assert (offline_release / f"{module}.py").read_text() == (numpy_release.out / "student" / f"{module}.py").read_text()


def test_readme_tells_how_to_check_a_file_and_a_notebook(numpy_release):
    readme = " ".join((numpy_release.out / "student" / "README.md").read_text().split())
    module = numpy_release.assignment.module_name
    for needle in (f"python qkv_check.py {module}.py", f"python qkv_check.py {module}.ipynb", 'check("problem-id")',
                   "pytest", "necessary, not sufficient", "guessed", "never uses the self-check"):
        assert needle in readme, needle
    assert "brute" in (ROOT / "docs" / "self-check.md").read_text()


def test_a_real_jupyter_kernel_runs_the_self_check_cells(numpy_release, tmp_path):
    folder = tmp_path / "release"
    shutil.copytree(numpy_release.out / "student", folder)
    nb = nbformat.reads(filled_notebook(numpy_release), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(f"show({numpy_release.assignment.written[0].problem.id!r})"))
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}}).execute()
    printed = {}
    for cell in nb.cells:
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        printed[cell.metadata.get("qkv", {}).get("problem", "all" if "check()" in cell.source else cell.source)] = text
    for assigned in numpy_release.assignment.problems:
        assert "PASS" in printed[assigned.problem.id] and "FAIL" not in printed[assigned.problem.id]
    n = len(numpy_release.assignment.problems)
    assert f"{n} pass, 0 fail, 0 not answered" in printed["all"]
    assert "same numbers" in "".join(printed.values())


# ------------------------------------------------------------ consistency, in process


def _data(built: BuildResult) -> dict:
    return qkv_check.load_data(built.out / "student" / "selfcheck.json")


def _students(built: BuildResult) -> list[str | None]:
    return list(built.assignment.manifest.roster) if built.assignment.manifest.variants == "per_student" else [None]


@pytest.mark.parametrize("name", BUNDLED + ["per-student-torch"])
def test_every_reference_passes_and_every_public_mistake_is_named(releases, name):
    built = releases[name]
    data = _data(built)
    bundle = read_bundle(built.out / "autograder")
    for assigned in built.assignment.implement:
        problem = assigned.problem
        entry = next(p for p in data["problems"] if p["id"] == problem.id)
        reference = resolve(problem.references[built.assignment.track])
        checks = [qkv_check.PublicCheck(entry, t, data["track"]) for t in entry["public_tests"]]
        assert checks, problem.id
        for check in checks:
            outcome = check.run({problem.function: reference})
            assert outcome.passed, (check.id, outcome.message)
        code = next(p for p in bundle.code if p.id == problem.id)
        for mistake in problem.misconceptions:
            if not mistake.implementation:
                continue
            mutant = resolve(mistake.implementation)
            for check, test in zip(checks, [t for t in code.tests if t.visibility == "public"]):
                if mistake.id not in test.mutant_outputs or test.expected is None:
                    continue
                mismatch = compare(test.mutant_outputs[mistake.id], test.expected, test.tolerance.abs, test.tolerance.rel)
                # mutants are NumPy code: feed them NumPy inputs, as the build did
                outcome = qkv_check.PublicCheck(entry, check.test, "numpy").run({problem.function: mutant})
                if mismatch is None:
                    assert outcome.passed, (check.id, mistake.id, outcome.message)
                else:
                    assert not outcome.passed
                    # the grader's words: the message of the first mistake (sorted by id, as in the bundle)
                    # whose output this is, then what differs
                    named = next(m for m, out in test.mutant_outputs.items()
                                 if compare(test.mutant_outputs[mistake.id], out, test.tolerance.abs, test.tolerance.rel) is None)
                    assert outcome.message == f"{test.name}: {code.misconceptions[named]} ({mismatch.reason})", \
                        (mistake.id, outcome.message)


def test_a_mistake_of_a_function_built_on_is_named_in_the_graders_words(numpy_release):
    """ben's attention functions carry the mistakes of the functions they build on: the self-check names each
    one as `qkv grade` does (diagnosis.name_mistake over the release's `upstream` digests and `builds_on`,
    confirmed by what the checks of the functions built on showed in the same run), word for word the
    sentence grade/score.py writes for the same outputs."""
    from autograder.grade.score import Upstream, basic_first, score_code_problem
    from autograder.sandbox import ProblemRun, SubmissionRun
    from autograder.sandbox.protocol import CallResult
    from qkv_runtime.values import exception_text, to_arrays

    data = _data(numpy_release)
    ben = ROOT / "examples" / "submissions" / "attention-numpy" / "ben.py"
    submission = qkv_check.load_submission(ben)
    checked = {r.problem["id"]: [o.message for o in r.outcomes] for r in qkv_check.run_checks(data, submission)}
    bundle = read_bundle(numpy_release.out / "autograder")
    runs = {}
    for code in bundle.code:  # the grader scores the same calls, the public tests' (what the self-check has)
        calls = {}
        for test in (t for t in code.tests if t.visibility == "public"):
            try:
                outputs = to_arrays(submission.namespace[code.function](*test.args, **test.kwargs))
                calls[test.call_id] = CallResult(False, error=outputs) if isinstance(outputs, str) else \
                    CallResult(True, tuple(outputs))
            except Exception as exc:  # noqa: BLE001 - the student's exception is the call's result
                calls[test.call_id] = CallResult(False, error=exception_text(exc))
        runs[code.id] = ProblemRun("ok", "", calls)
    run = SubmissionRun("ok", "", runs, {}, tuple(p.function for p in bundle.code), "")
    upstream, named = Upstream.of(bundle), {"own": 0, "upstream": 0}
    for code in basic_first(bundle.code):
        for test in score_code_problem(code, run, upstream).tests:
            if test.visibility == "public" and test.misconception:
                assert f"{test.name}: {test.message}" in checked[code.id], (code.id, test.message, checked[code.id])
                named["upstream" if test.cause else "own"] += 1
    assert named["upstream"] >= 2 and named["own"] >= 1, named  # both kinds were compared
    alone = qkv_check.run_checks(data, qkv_check.load_submission(ben), only="multi-head-attention")[0].outcomes
    # checked alone, no check of softmax_rows ran to confirm its mistake: the grader's third case, the mistake inside
    assert any("has the mistake of a wrong softmax_rows inside it" in o.message for o in alone), alone
    assert not any("fix softmax_rows first" in o.message for o in alone), alone


@pytest.mark.parametrize("name", BUNDLED + ["per-student-torch"])
def test_every_written_answer_right_passes_and_every_misconception_fails(releases, name):
    built = releases[name]
    data = _data(built)
    assignment = built.assignment
    for assigned in assignment.written:
        problem = assigned.problem
        entry = next(p for p in data["problems"] if p["id"] == problem.id)
        for student in _students(built):
            right = right_answer(problem, assignment, student)
            outcomes = qkv_check.check_written(data, entry, right, student or "")
            assert outcomes and all(o.passed for o in outcomes), (problem.id, student, outcomes)
            for answer, message in wrong_answers(problem, assignment, student):
                outcomes = qkv_check.check_written(data, entry, answer, student or "")
                assert not all(o.passed for o in outcomes), (problem.id, student, answer)
                assert bank_verdict(problem, assignment, student, answer) is False
                text = "\n".join(o.message + "\n" + "\n".join(o.details) for o in outcomes)
                if message:
                    assert message in text, (problem.id, student, text)
            assert bank_verdict(problem, assignment, student, right) is True


def bank_verdict(problem, assignment: Assignment, student: str | None, answer) -> bool:
    """The grader's judges (the kinds of autograder/kinds/) on the same answer."""
    if isinstance(problem, NumericProblem):
        variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants, student)
        typed = answer if isinstance(answer, dict) else {problem.parts[0].name: answer}
        return all(check_part(p, variant.answers[p.name], typed[p.name]).correct for p in problem.parts)
    if isinstance(problem, ShapeProblem):
        return check_shape(problem, answer).correct
    if isinstance(problem, TrueFalseProblem):
        return check_true_false(problem, answer, order_of(problem, assignment, student)).fraction == 1.0
    return check_choice(problem, answer, order_of(problem, assignment, student)).correct


PARITY_CASES = [
    (AnswerPart(name="w", label="w", decimals=4, tolerance=AnswerTolerance(abs=5e-4, rel=0)), (0, 1, 1)),
    (AnswerPart(name="v", label="v", decimals=4, tolerance=AnswerTolerance(abs=2e-3, rel=0)), (-9, 9, 3)),
    (AnswerPart(name="r", label="r", decimals=2, tolerance=AnswerTolerance(abs=0, rel=1e-2)), (50, 900, 2)),
    (AnswerPart(name="m", label="m", decimals=3, tolerance=AnswerTolerance(abs=1e-3, rel=0)), (-1, 1, (2, 4))),
    (AnswerPart(name="s", label="s", decimals=0, tolerance=AnswerTolerance(abs=0, rel=1e-6)), [2.0, -4.0, 0.0]),
    (AnswerPart(name="q", label="q", decimals=2, tolerance=AnswerTolerance(abs=5e-3, rel=0)), [0.25, -1.5]),
    (AnswerPart(name="c", label="c", tolerance=AnswerTolerance(abs=0, rel=1e-6)), 12_582_912.0),
    (AnswerPart(name="g", label="g", tolerance=AnswerTolerance(abs=0, rel=1e-6)), 3_221_225_472.0),
    (AnswerPart(name="n", label="n", tolerance=AnswerTolerance(abs=0, rel=0)), 2_099_200.0),  # a parameter count
    (AnswerPart(name="b", label="b", decimals=2, tolerance=AnswerTolerance(abs=1e-3, rel=5e-3)), (-30, 30, 3)),
]


def _parity_value(rng, spec) -> np.ndarray:
    if isinstance(spec, tuple):
        return rng.uniform(*spec)
    return np.asarray(spec, dtype=float)


@pytest.mark.parametrize("part, spec", PARITY_CASES, ids=[p.name for p, _ in PARITY_CASES])
def test_numbers_get_the_graders_verdict_even_at_the_edge_of_the_tolerance(part, spec):
    """Sweep typed numbers across the tolerance edge, to the last bit: the self-check's verdict is the
    grader's (autograder.kinds.numeric.parts.check_part), inside, outside and exactly at the edge."""
    rng = np.random.default_rng(5)
    want = _parity_value(rng, spec)
    data, entry = _synthetic(part, want)
    tol = part.tolerance
    window = tol.abs + tol.rel * np.abs(want)
    spec_ = entry["digests"][CLASS][part.name]
    assert spec_["mode"] == ("each" if want.size > 3 else "whole")
    sizes = np.asarray(spec_["cells"]).reshape(want.shape)
    assert np.all(sizes >= 2 * window) and np.all(np.log2(sizes) == np.round(np.log2(sizes)))  # powers of two
    typed_values = []
    for fraction in (0.0, 0.3, -0.7, 0.999, -0.999, 1.0, -1.0, 1.001, 1.3, -1.6, 2.5, 4.0, 40.0):
        for direction in (np.ones_like(want), rng.choice([-1.0, 1.0], size=want.shape)):
            typed_values.append(want + fraction * window * direction)
    edge = want + window * rng.choice([-1.0, 1.0], size=want.shape)
    for ulps in (-2, -1, 0, 1, 2):  # the last bits around the edge: the grader's own arithmetic decides
        typed_values.append(edge + ulps * np.spacing(edge))
    typed_values.append(np.floor(want / sizes) * sizes)  # on a cell boundary
    verdicts = set()
    for typed in typed_values:
        got = qkv_check.check_written(data, entry, typed.tolist())[0]
        grader = check_part(part, want, typed.tolist()).correct
        assert got.passed == grader, (part.name, typed, want, got)
        verdicts.add(grader)
    assert verdicts == {True, False}  # the sweep saw both sides


def _synthetic(part: AnswerPart, want, misconception=None, assignment="formats", student=CLASS) -> tuple[dict, dict]:
    """Self-check data for one numeric problem with one part, made with the build's own helper."""
    salt = lambda suffix: sealed.digest_salt(assignment, student, "p", part.name + suffix)  # noqa: E731
    spec, wrong = numeric_part_data(salt, np.asarray(want, dtype=float), part,
                                    [] if misconception is None else [misconception])
    entry = {"id": "p", "kind": "numeric", "code": False, "judge": "numbers", "title": "p", "points": 1,
             "parts": [{"name": part.name, "label": part.label, "shape": list(np.shape(want)),
                        "tolerance": part.tolerance.model_dump()}],
             "digests": {student: {part.name: spec}},
             "misconceptions": {student: [{"message": "you forgot the exponential", "label": "mistake0",
                                           "digests": {part.name: wrong[0]}}]
                                if wrong and wrong[0] else []}}
    data = {"format": sealed.FORMAT, "assignment": assignment, "variants": "same", "track": "numpy",
            "problems": [entry], "prompts": {}, "kdf": sealed.kdf_params()}
    return data, entry


# ------------------------------------------------------------ a check that costs: slow keys


KDF_MEMORY_FLOOR = 3 * 1024**2  # bytes of scrypt memory per key (128 * n * r): what each candidate costs at least


@contextlib.contextmanager
def counted_keys():
    """Count the self-check's key derivations (sealed.derive_key), each the price of one candidate."""
    calls = []
    real = sealed.derive_key

    def counting(password, salt, params):
        calls.append((password, salt))
        return real(password, salt, params)

    sealed.derive_key = counting
    try:
        yield calls
    finally:
        sealed.derive_key = real


@pytest.mark.parametrize("name", BUNDLED + ["per-student-torch"])
def test_every_release_keys_its_answers_with_memory_hard_scrypt(releases, name):
    data = _data(releases[name])
    kdf = data["kdf"]
    assert kdf["name"] == "scrypt" and sealed.kdf_problem(kdf) is None
    assert sealed.kdf_memory(kdf) >= KDF_MEMORY_FLOOR and kdf["p"] >= 1 and kdf["dklen"] == 32
    assert kdf == sealed.kdf_params()  # the build's parameters, travelling with the data
    # the key really is scrypt with these parameters (so a search pays n * r * 128 bytes and the time per candidate)
    expected = hashlib.scrypt(b"cells|0.5||3", salt=b"qkv2|a|s|p|x", n=kdf["n"], r=kdf["r"], p=kdf["p"],
                              maxmem=kdf["maxmem"], dklen=kdf["dklen"])
    assert sealed.derive_key("cells|0.5||3", "a|s|p|x", kdf) == expected


def _typed_cases(built, problem, student):
    return [right_answer(problem, built.assignment, student)] + [a for a, _ in wrong_answers(problem, built.assignment,
                                                                                            student)]


def _most_keys(entry) -> int:
    if entry["kind"] == "true_false" and "follow_up" in entry:  # the verdict's key, and the follow-up's
        return 1 + (sealed.most_keys(1) if entry["follow_up"]["form"] == "number" else 1)
    if entry["kind"] != "numeric":
        return 1
    return sum(sealed.most_keys(int(np.prod(p["shape"])) if p["shape"] else 1) for p in entry["parts"])


@pytest.mark.parametrize("name", ["attention-numpy", "exam-prep"])
def test_one_typed_answer_costs_a_bounded_number_of_keys_and_never_none(releases, name):
    """Each check derives at least one slow key (no path around the cost) and at most 2 per entry
    (2**n for the tuple of a small vector); a right integer or shape is exactly one key."""
    built = releases[name]
    data = _data(built)
    student = _students(built)[0]
    for assigned in built.assignment.written:
        problem = assigned.problem
        entry = next(p for p in data["problems"] if p["id"] == problem.id)
        for typed in _typed_cases(built, problem, student):
            with counted_keys() as calls:
                qkv_check.check_written(data, entry, typed, student or "")
            assert 1 <= len(calls) <= _most_keys(entry), (problem.id, typed, len(calls))
    exact = AnswerPart(name="n", label="count", tolerance=AnswerTolerance(abs=0, rel=0))
    data, entry = _synthetic(exact, 2_099_200.0)
    for typed in (2_099_200, 2_099_201, "2099200"):
        with counted_keys() as calls:
            qkv_check.check_written(data, entry, typed)
        assert len(calls) == 1, typed


def test_keys_come_from_the_releases_parameters(numpy_release):
    """Change the parameters in the data and the right answers no longer open: the tags are of scrypt keys
    with exactly those parameters, so a later release may change them (and an older checker refuses them)."""
    data = _data(numpy_release)
    entries = [(a.problem, next(p for p in data["problems"] if p["id"] == a.problem.id))
               for a in numpy_release.assignment.written]
    assert all(qkv_check.check_written(data, e, right_answer(p, numpy_release.assignment, None))[0].passed
               for p, e in entries)
    other = {**data, "kdf": sealed.kdf_params(n=data["kdf"]["n"] // 2)}
    assert not any(qkv_check.check_written(other, e, right_answer(p, numpy_release.assignment, None))[0].passed
                   for p, e in entries)


def test_keys_are_the_same_however_many_threads_derive_them():
    from autograder.kinds.numeric.seals import numeric_part_plan

    part = AnswerPart(name="v", label="v", form="vector", decimals=4, tolerance=AnswerTolerance(abs=5e-4, rel=0))
    salt = lambda suffix: sealed.digest_salt("a", "s", "p", "v" + suffix)  # noqa: E731
    plans = [numeric_part_plan(salt, np.arange(k, k + 6.0) / 7, part, [np.arange(6.0)]) for k in range(3)]
    params = sealed.kdf_params()
    one = derive_seals(plans, params, workers=1)
    assert derive_seals(plans, params, workers=2) == one == derive_seals(plans, params, workers=5)


def test_a_release_of_another_format_or_with_bad_parameters_is_refused_in_one_line(numpy_release, tmp_path):
    folder = tmp_path / "rel"
    shutil.copytree(numpy_release.out / "student", folder)
    data = json.loads((folder / "selfcheck.json").read_text())
    (folder / "right.py").write_text(submission_py(numpy_release))
    for change, needle in (({"format": 1}, f"format 1 is not {sealed.FORMAT}; this qkv_check.py belongs to another release"),
                           ({"kdf": {**data["kdf"], "n": 1000}}, "damaged (bad scrypt parameters)"),
                           ({"kdf": {**data["kdf"], "maxmem": 2**40}}, "damaged (bad scrypt parameters)"),
                           ({"kdf": None}, "damaged (no scrypt parameters)")):
        (folder / "selfcheck.json").write_text(json.dumps({**data, **change}))
        run = subprocess.run([sys.executable, "qkv_check.py", "right.py"], cwd=folder, capture_output=True, text=True)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 2 and len(lines) == 1 and needle in lines[0], (change, run.stderr)


def test_a_python_without_scrypt_says_so_for_written_answers_and_still_checks_code(numpy_release, monkeypatch):
    import hashlib as _hashlib

    data = _data(numpy_release)
    written = [p for p in data["problems"] if p["kind"] != "implement"]
    monkeypatch.delattr(_hashlib, "scrypt")
    assert not sealed.kdf_available()
    for entry in written:
        outcome = qkv_check.check_written(data, entry, "anything")[0]
        assert outcome.status == qkv_check.TODO and "has no scrypt" in outcome.message and "python.org" in outcome.message
    problem = next(a.problem for a in numpy_release.assignment.implement)
    entry = next(p for p in data["problems"] if p["id"] == problem.id)
    reference = resolve(problem.references["numpy"])
    assert qkv_check.check_problem(data, entry, qkv_check.Submission.from_namespace(
        {problem.function: reference})).status == "pass"


KINDS = [  # (part, right answer, a mistake's answer, a plainly wrong answer)
    (AnswerPart(name="x", label="scalar", decimals=4, tolerance=AnswerTolerance(abs=5e-4, rel=0)), 0.7311, 0.5, 0.9),
    (AnswerPart(name="v", label="vector", form="vector", decimals=4, tolerance=AnswerTolerance(abs=5e-4, rel=0)),
     [0.2119, 0.5761, 0.2119], [1 / 3, 1 / 3, 1 / 3], [0.2119, 0.5761, 0.25]),
    (AnswerPart(name="m", label="matrix", form="matrix", decimals=3, tolerance=AnswerTolerance(abs=1e-3, rel=0)),
     [[1.0, -0.25], [0.5, 2.0]], [[1.0, -0.25], [0.5, 4.0]], [[1.0, -0.25], [0.6, 2.0]]),
    (AnswerPart(name="n", label="integer", tolerance=AnswerTolerance(abs=0, rel=0)), 1_050_112.0, 1_048_576.0,
     1_050_113.0),
    (AnswerPart(name="r", label="relative", decimals=2, tolerance=AnswerTolerance(abs=0, rel=1e-2)), 812.5, 406.25,
     830.0),
]


@pytest.mark.parametrize("part, right, mistake, wrong", KINDS, ids=[k[0].label for k in KINDS])
def test_numbers_right_wrong_and_a_named_mistake(part, right, mistake, wrong):
    data, entry = _synthetic(part, right, misconception=mistake)
    assert entry["misconceptions"][CLASS], "the mistake is keyed"
    assert qkv_check.check_written(data, entry, right)[0].passed
    assert check_part(part, np.asarray(right), right).correct
    for typed, named in ((mistake, True), (wrong, False)):
        outcome = qkv_check.check_written(data, entry, typed)[0]
        assert not outcome.passed and not check_part(part, np.asarray(right), typed).correct
        assert ("common mistake: you forgot the exponential" in outcome.details) is named, (part.label, outcome)
        assert outcome.message == check_part(part, np.asarray(right), typed).message  # the grader's words
        assert "within 0 " not in outcome.message
    # the mistake is named within the grader's tolerance of the mistake's value, as the right answer is
    near = (np.asarray(mistake, dtype=float) + 0.9 * (part.tolerance.abs + part.tolerance.rel
                                                       * np.abs(np.asarray(mistake, dtype=float)))).tolist()
    assert "common mistake: you forgot the exponential" in qkv_check.check_written(data, entry, near)[0].details


# ------------------------------------------------------------ answer formats


def _written_entry(data: dict, kind: str) -> dict:
    return next(p for p in data["problems"] if p["kind"] == kind)


def test_answers_typed_the_usual_ways_are_understood(numpy_release):
    weight = AnswerPart(name="a", label="weight", decimals=4, tolerance=AnswerTolerance(abs=5e-4, rel=0))
    data, entry = _synthetic(weight, 0.06337, misconception=0.1667)
    for typed in ("0.0634", "6.34e-2", 0.0634, " 0.0634 ", [0.0634], "[0.0634]", "0.06337"):
        assert qkv_check.check_written(data, entry, typed)[0].passed, typed
    for typed in ("0.0644", 0.07, "6.34e-3"):
        assert not qkv_check.check_written(data, entry, typed)[0].passed, typed
    mistake = qkv_check.check_written(data, entry, "0.1667")[0]
    assert not mistake.passed and "you forgot the exponential" in " ".join(mistake.details)

    weights = AnswerPart(name="w", label="weights", form="vector", decimals=4, tolerance=AnswerTolerance(abs=5e-4, rel=0))
    data, entry = _synthetic(weights, [0.06337, 0.46831, 0.46831])
    for typed in ([0.0634, 0.4683, 0.4683], "[0.0634, 0.4683, 0.4683]", "0.0634, 0.4683, 0.4683",
                  "(0.0634 0.4683 0.4683)", "6.34e-2 0.4683 0.4683", {"w": [0.0634, 0.4683, 0.4683]}):
        assert qkv_check.check_written(data, entry, typed)[0].passed, typed
    short = qkv_check.check_written(data, entry, [0.0634, 0.4683])[0]
    assert not short.passed and short.message == 'weights: expected 3 number(s), got 2 in "[0.0634, 0.4683]"'

    data = _data(numpy_release)
    shape = _written_entry(data, "shape")
    problem = next(a.problem for a in numpy_release.assignment.written if a.problem.id == shape["id"])
    dims = list(problem.answer)
    for typed in (" x ".join(dims), "(" + ", ".join(dims) + ")", dims, "[" + ",".join(dims) + "]"):
        assert qkv_check.check_written(data, shape, typed)[0].passed, typed

    # numbers for symbols: (3, 4), 3x4 and n x d_v are one and the same shape
    symbolic = ShapeProblem(id="out", title="out shape", topic="t", points=1, difficulty=1, source="src",
                            prompt="What is the shape of the output?", solution="n x d_v, one row per query",
                            kind="shape", parameters={"n": 3, "d_v": 4}, answer=["n", "d_v"])
    entry = derive_seals({"id": "out", "kind": "shape", "judge": "dimensions", "title": "out", "points": 1, "symbols": {"n": 3, "d_v": 4},
                          "digests": {CLASS: {"answer": answer_seal("formats", "out", "x".join(expected_shape(symbolic)),
                                                                    "right")}},
                          "misconceptions": {CLASS: []}}, sealed.kdf_params())
    sdata = {"format": sealed.FORMAT, "assignment": "formats", "variants": "same", "track": "numpy",
             "problems": [entry], "kdf": sealed.kdf_params()}
    for typed in ("(3, 4)", "3x4", "3 x 4", "n x d_v", "(n, d_v)", "n x dv", [3, 4], "3×4", "[n d_v]", "n x (d_v)",
                  "(n, (d_v))", "[3 4]"):
        assert qkv_check.check_written(sdata, entry, typed)[0].passed, typed
    assert not qkv_check.check_written(sdata, entry, "4 x 3")[0].passed

    tf = _written_entry(data, "true_false")
    truth = next(a.problem for a in numpy_release.assignment.written if a.problem.id == tf["id"]).answer
    spellings = ("True", "true", "T", "t", "yes", True) if truth else ("False", "false", "F", "f", "no", False)
    for typed in spellings:
        assert qkv_check.check_written(data, tf, typed)[0].passed, typed
        assert qkv_check.check_written(data, tf, {"answer": typed, "correction": "..."})[0].passed, typed
    assert not qkv_check.check_written(data, tf, not truth)[0].passed

    mc = _written_entry(data, "multiple_choice")
    problem = next(a.problem for a in numpy_release.assignment.written if a.problem.id == mc["id"])
    letter = right_answer(problem, numpy_release.assignment, None)
    for typed in (letter, letter.lower(), f"({letter})", f" {letter}. "):
        assert qkv_check.check_written(data, mc, typed)[0].passed, typed


def test_malformed_answers_say_what_is_expected_never_a_traceback(numpy_release, tmp_path, capsys):
    data = _data(numpy_release)
    numeric = _written_entry(data, "numeric")
    cases = [
        (numeric, {p["name"]: "zero point six" for p in numeric["parts"]}, "a number such as 0.0634"),
        (numeric, "0.5" if len(numeric["parts"]) > 1 else {"x": 1}, "dictionary" if len(numeric["parts"]) > 1 else ""),
        (_written_entry(data, "shape"), "3 x ?", "a shape such as (3, 4), 3x4 or n x d_v"),
        (_written_entry(data, "true_false"), "maybe", "expected True or False"),
        (_written_entry(data, "true_false"), {"answer": "perhaps", "correction": ""}, "expected True or False"),
        (_written_entry(data, "multiple_choice"), "Z", "expected one letter from A, B"),
        (_written_entry(data, "multiple_choice"), 3, "expected one letter"),
    ]
    for entry, typed, hint in cases:
        outcomes = qkv_check.check_written(data, entry, typed)
        assert not any(o.passed for o in outcomes), (entry["id"], typed)
        assert hint in " ".join(o.message for o in outcomes), (entry["id"], typed, outcomes)
    for entry in data["problems"]:  # empty is "not answered", as in the grader: None, "", a dict of those
        if entry["kind"] != "implement":
            for empty in (None, "", {"answer": None, "correction": ""}, {"answer": "", "correction": ""}):
                assert qkv_check.check_written(data, entry, empty)[0].status == qkv_check.TODO, (entry["id"], empty)

    # the same through the command line, with a file whose answers are all malformed
    folder = tmp_path / "rel"
    shutil.copytree(numpy_release.out / "student", folder)
    typed = {"numeric": "'zero'", "shape": "'3 x ?'", "true_false": "{'answer': 'maybe'}", "multiple_choice": "object()"}
    answers = ", ".join(f"{e['id']!r}: {typed[e['kind']]}" for e in data["problems"] if e["kind"] != "implement")
    (folder / "bad.py").write_text(f"STUDENT_ID = 's1'\nANSWERS = {{{answers}}}\n")
    run = subprocess.run([sys.executable, "qkv_check.py", "bad.py"], cwd=folder, capture_output=True, text=True)
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr
    assert "a shape such as" in run.stdout and "expected True or False" in run.stdout
    assert "expected one letter" in run.stdout


def verdicts_by_problem(report_text: str) -> dict[str, list[str]]:
    """problem id -> the verdict lines under its header in a self-check report."""
    out: dict[str, list[str]] = {}
    current = None
    for line in report_text.splitlines():
        header = re.match(r"\[([^\]]+)\] ", line)
        if header:
            current = out.setdefault(header.group(1), [])
        elif current is not None and line.startswith("  ") and line.strip():
            current.append(line.strip())
        else:
            current = None
    return out


def run_release_check(built: BuildResult, folder: Path, name: str, text: str) -> subprocess.CompletedProcess:
    """The release's own qkv_check.py, as a student runs it, on a file `name` holding `text`."""
    if not folder.exists():
        shutil.copytree(built.out / "student", folder)
    (folder / name).write_text(text, encoding="utf-8")
    run = subprocess.run([sys.executable, "qkv_check.py", name], cwd=folder, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr
    return run


def test_an_unreadable_shape_says_it_could_not_be_read_and_a_wrong_one_that_it_is_not_the_shape(built_numpy_same, tmp_path):
    shapes = [a.problem for a in built_numpy_same.assignment.written if isinstance(a.problem, ShapeProblem)]
    assert len(shapes) >= 4, "the release has shape problems to answer"
    unreadable = {shapes[0].id: "n by d?", shapes[1].id: "[[", shapes[2].id: "   "}
    wrong = "2 x 3 x 5 x 7"  # read, and no problem's shape nor a named mistake's
    typed = {**unreadable, shapes[3].id: wrong}
    run = run_release_check(built_numpy_same, tmp_path / "rel", "shapes.py",
                            f"STUDENT_ID = 's1'\nANSWERS = {typed!r}\n")
    lines = verdicts_by_problem(run.stdout)
    for pid, answer in unreadable.items():
        [line] = lines[pid]
        assert line.startswith("FAIL") and "could not read" in line and "is not the shape" not in line, (pid, line)
        assert "a shape such as (3, 4), 3x4 or n x d_v" in line, (pid, line)  # the forms it accepts
    [line] = lines[shapes[3].id]
    grader = check_shape(shapes[3], wrong)
    assert not grader.correct and line == f"FAIL  {grader.message}" == f'FAIL  "{wrong}" is not the shape'
    for form in (" x ".join(shapes[3].answer), " x ".join(expected_shape(shapes[3]))):
        assert form not in line  # the answer is not given away


def test_a_wrong_exact_number_must_be_exact_never_within_0(built_numpy_same, tmp_path):
    assignment = built_numpy_same.assignment
    numeric = [a.problem for a in assignment.written if isinstance(a.problem, NumericProblem)]
    exact = next(p for p in numeric if all(q.tolerance.abs == q.tolerance.rel == 0 for q in p.parts))
    loose = next(p for p in numeric if p.parts[0].tolerance.abs > 0)
    typed, messages = {}, {}
    for problem in (exact, loose):
        variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants, None)
        off = {q.name: (np.asarray(variant.answers[q.name], dtype=float) + 1 + 10 * q.tolerance.abs).tolist()
               for q in problem.parts}
        typed[problem.id] = off
        messages[problem.id] = [check_part(q, variant.answers[q.name], off[q.name]).message for q in problem.parts]
    run = run_release_check(built_numpy_same, tmp_path / "rel", "wrong_numbers.py",
                            f"STUDENT_ID = 's1'\nANSWERS = {typed!r}\n")
    lines = verdicts_by_problem(run.stdout)
    assert [line.removeprefix("FAIL  ") for line in lines[exact.id] if line.startswith("FAIL")] == messages[exact.id]
    assert all(m.endswith(": not the answer (it must be exact)") for m in messages[exact.id])
    assert "within 0 " not in run.stdout
    window = f"not within {loose.parts[0].tolerance.abs:g} of the answer"  # a part with a window keeps it
    assert lines[loose.id][0] == f"FAIL  {loose.parts[0].label}: {window}" and lines[loose.id][0][6:] == messages[loose.id][0]


def test_an_empty_student_id_is_warned_about_once_and_fails_nothing(built_numpy, bank, tmp_path):
    answers = "ANSWERS = {'scores-shape': 'n x m'}\n"
    folder = tmp_path / "rel"
    runs = {name: run_release_check(built_numpy, folder, name, text) for name, text in (
        ("empty.py", "STUDENT_ID = ''\n" + answers), ("missing.py", answers), ("blank.py", "STUDENT_ID = '  '\n" + answers),
        ("set.py", "STUDENT_ID = 's1234567'\n" + answers))}
    for name in ("empty.py", "missing.py", "blank.py"):
        out = runs[name].stdout
        warned = [line for line in out.splitlines() if "STUDENT_ID is empty" in line]
        assert len(warned) == 1, (name, out[:600])
        assert name in warned[0] and "the grader will not know whose file it is" in warned[0]
        assert 'set STUDENT_ID = "your id"' in warned[0]  # how to set it
        assert out.index(warned[0]) < out.index("\n[")  # at the top, before the first problem
        assert summary_rows(out) == summary_rows(runs["set.py"].stdout)  # a warning, not a failure
    assert "STUDENT_ID is empty" not in runs["set.py"].stdout
    # the release's own notebook, untouched, says STUDENT_ID = "" in its first cell
    stub = folder / f"{built_numpy.assignment.module_name}.ipynb"
    notebook = run_release_check(built_numpy, folder, "mine.ipynb", stub.read_text(encoding="utf-8"))
    assert sum("STUDENT_ID is empty in mine.ipynb" in line for line in notebook.stdout.splitlines()) == 1

    # in a notebook, check() warns in the whole report only; a per-student file named after a roster id is
    # not warned about (the name identifies it at grading)
    data = _data(built_numpy)
    whole, _ = qkv_check.report(data, qkv_check.Submission.from_namespace({"ANSWERS": {}}), code_results={})
    assert whole.splitlines()[0].startswith("warning: STUDENT_ID is empty in this notebook")
    one, _ = qkv_check.report(data, qkv_check.Submission.from_namespace({"ANSWERS": {}}), only="scores-shape",
                              summary=False)
    assert "STUDENT_ID" not in one
    per_student = build(str(FIXTURES / "per-student-torch.yaml"), tmp_path / "pst", bank=bank)
    pdata = _data(per_student)
    for name, warned in (("ada.py", False), ("anon.py", True)):
        text, _ = qkv_check.report(pdata, qkv_check.Submission({"ANSWERS": {}}, name, "py"), code_results={})
        assert ("STUDENT_ID is empty" in text) is warned, (name, text[:300])


# ------------------------------------------------------------ nothing revealed


def _number_tokens(values) -> set[str]:
    tokens = set()
    for x in np.asarray(values, dtype=float).reshape(-1):
        tokens |= {repr(float(x)), f"{x:.4f}", f"{x:.6g}"}
    return {t for t in tokens if len(t.strip("-0.")) >= 2}  # '0.0001' is no answer


# symbols_of: each student's drawn sizes of a shape problem, the numbers that student's prompt prints (issue 47)
GIVEN = ("prompts", "public_tests", "cells", "shape", "tolerance", "symbols", "symbols_of", "points", "max_points", "hidden_tests",
         "message", "misconceptions_text", "title", "label", "kdf", "limits", "roster")


def _without_given(value):
    """The self-check data less what students are given anyway (prompts, public tests), the keying parameters
    (cell sizes, scrypt's), the grading limits, and the authors' texts (titles, labels, mistake messages: in clear by design, and they quote numbers)."""
    if isinstance(value, dict):
        return {k: _without_given(v) for k, v in value.items() if k not in GIVEN}
    if isinstance(value, list):
        return [_without_given(v) for v in value]
    return value


@pytest.mark.parametrize("name", BUNDLED + ["per-student-torch"])
def test_selfcheck_json_holds_no_written_answer_in_clear(releases, name):
    built = releases[name]
    text = (built.out / "student" / "selfcheck.json").read_text()
    data = json.loads(text)
    rest = json.dumps(_without_given(data))
    prompts = json.dumps(data.get("prompts", {}))
    assignment = built.assignment
    for assigned in assignment.written:
        problem = assigned.problem
        entry = next(p for p in data["problems"] if p["id"] == problem.id)
        assert not {"answer", "answers", "correction", "solution", "reason", "choices_text"} & set(entry), problem.id
        if isinstance(problem, NumericProblem):
            for student in _students(built):
                variant = variant_for(problem, assignment.manifest.seed, assignment.manifest.variants, student)
                tables = table_markdown(problem.by_hand, variant.quantities)
                untabled = prompts.replace(json.dumps(tables)[1:-1], "") if tables else prompts
                for part in problem.parts:
                    value = np.asarray(variant.answers[part.name], dtype=float)
                    for digits in range(0, 7):
                        assert sealed.canonical_numbers(value, digits) not in text, (problem.id, student)
                    for token in _number_tokens(value):
                        alone = re.compile(rf"(?<![\w.-]){re.escape(token)}(?![\w.])")  # not inside a digest
                        assert not alone.search(rest), (problem.id, student, part.name, token)
                        # a printed table of e^x or sin and cos holds its entries by design (the method of
                        # finding the right one earns the points): the prompts are read without the tables
                        if not float(token).is_integer() and len(token.strip("-0.")) >= 3:
                            assert not alone.search(untabled), (problem.id, student, part.name, token)
        if isinstance(problem, ShapeProblem):
            assert f'"{"x".join(expected_shape(problem))}"' not in text, problem.id
            assert "x".join(expected_shape(problem)) not in rest, problem.id
        if isinstance(problem, TrueFalseProblem):
            assert problem.reason not in text and (problem.correction or problem.reason) not in text
        if isinstance(problem, MultipleChoiceProblem):
            assert problem.solution not in text
            # a per-student release shows each student their choices (their prompts); the rest names them by id only
            assert not any(c.text in rest for c in problem.choices)
            assert sorted(next(iter(entry["orders"].values()))) == sorted(problem.ids)


# ------------------------------------------------------------ per student, torch track, command line


def test_the_shipped_numpy_release_seals_each_roster_students_own_numbers(releases, tmp_path):
    """attention-numpy as it ships draws per student: in its release, offline, each roster student's own right
    answers pass every problem, and a classmate's numbers fail the written problems drawn per student."""
    built = releases["attention-numpy"]
    manifest = built.assignment.manifest
    assert manifest.variants == "per_student" and {"ada", "s2026001"} <= set(manifest.roster)
    folder = tmp_path / "rel"
    shutil.copytree(built.out / "student", folder)
    for student in ("ada", "s2026001"):
        (folder / f"{student}.py").write_text(submission_py(built, student))
    (folder / "swapped.py").write_text(submission_py(built, "ada").replace('STUDENT_ID = "ada"',
                                                                           'STUDENT_ID = "s2026001"'))

    def check(*args: str) -> subprocess.CompletedProcess:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.chdir(folder):
            code = qkv_check.main([*args, "--no-history", "--data", str(folder / "selfcheck.json")])
        return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

    for student in ("ada", "s2026001"):
        mine = check(f"{student}.py")
        assert mine.returncode == 0 and f"| student {student}" in mine.stdout, mine.stderr
        assert summary_rows(mine.stdout) == expected_summary(built, wrong=False), student
    rows = summary_rows(check("swapped.py").stdout)  # ada's answers, run as s2026001
    assignment = built.assignment
    differ = {a.problem.id for a in assignment.written
              if right_answer(a.problem, assignment, "ada") != right_answer(a.problem, assignment, "s2026001")}
    assert len(differ) >= len(assignment.written) // 2, differ
    assert {p for p, status in rows.items() if status == "fail"} == differ, rows


def test_per_student_numbers_are_each_students_own(releases, tmp_path):
    built = releases["per-student-torch"]
    folder = tmp_path / "rel"
    shutil.copytree(built.out / "student", folder)
    ada = submission_py(built, "ada")
    (folder / "ada.py").write_text(ada)
    (folder / "grace.py").write_text(ada)  # ada's work under grace's name
    (folder / "anon.py").write_text(ada.replace('STUDENT_ID = "ada"', 'STUDENT_ID = ""'))
    (folder / "stranger.py").write_text(ada.replace('STUDENT_ID = "ada"', 'STUDENT_ID = "mallory"'))

    def check(*args: str) -> subprocess.CompletedProcess:
        """The release's checker, in this process (a subprocess would import torch each time)."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.chdir(folder):
            code = qkv_check.main([*args, "--data", str(folder / "selfcheck.json")])
        return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

    mine = check("ada.py")
    assert mine.returncode == 0 and "| student ada" in mine.stdout, mine.stderr
    assert summary_rows(mine.stdout) == expected_summary(built, wrong=False)
    as_grace = check("ada.py", "--student", "grace")
    assert summary_rows(as_grace.stdout)["one-query-by-hand"].startswith("fail")
    named = check("grace.py")  # STUDENT_ID says ada; the file name says grace, which the grader uses
    assert "named 'grace'" in named.stdout and "STUDENT_ID = 'ada'" in named.stdout
    assert "STUDENT_ID" in check("anon.py").stdout and summary_rows(check("anon.py").stdout)["one-query-by-hand"] == "fail"
    stranger = check("stranger.py")
    assert "'mallory' is not on this assignment's roster" in stranger.stdout
    rows = summary_rows(stranger.stdout)  # digests are salted per student: nothing to compare with
    assert all(rows[a.problem.id] == "fail" for a in built.assignment.written)
    assert all(rows[a.problem.id] == "pass" for a in built.assignment.implement)

    unknown = check("ada.py", "--student", "mallory")
    assert unknown.returncode == 2 and "roster" in unknown.stderr and "Traceback" not in unknown.stderr
    shown = check("--student", "ada", "--show", "one-query-by-hand")
    assert shown.returncode == 0 and "(for ada)" in shown.stdout and "$$K =" in shown.stdout
    assert check("--student", "grace", "--show").stdout != shown.stdout
    from_file = check("ada.py", "--show")
    assert from_file.returncode == 0 and "(for ada)" in from_file.stdout


def test_command_line_usage_errors_exit_2_with_one_line(numpy_release, tmp_path):
    folder = numpy_release.out / "student"

    def check(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "qkv_check.py", *args], cwd=folder, capture_output=True, text=True)

    for args, needle in ((), "give the file to check"), (("nope.py",), "no such file"), \
            (("README.md",), "expected a .py file or a .ipynb notebook"), (("--bogus",), "unrecognized arguments"):
        run = check(*args)
        assert run.returncode == 2 and needle in run.stderr and "Traceback" not in run.stderr, (args, run.stderr)
    assert check("--help").returncode == 0

    # qkv check: the instructor's door to the same checker
    right = tmp_path / "right.py"
    right.write_text(submission_py(numpy_release))
    run = subprocess.run([str(QKV), "check", "attention-numpy", str(right), "--dist", str(numpy_release.out)],
                         capture_output=True, text=True)
    assert run.returncode == 0 and summary_rows(run.stdout) == expected_summary(numpy_release, wrong=False), run.stderr
    missing = subprocess.run([str(QKV), "check", "attention-numpy", str(right), "--dist", str(tmp_path / "none")],
                             capture_output=True, text=True)
    lines = said(missing.stderr)
    assert missing.returncode == 1 and len(lines) == 1 and "qkv build attention-numpy" in lines[0]
    absent = subprocess.run([str(QKV), "check", "attention-numpy", str(tmp_path / "absent.py"), "--dist",
                             str(numpy_release.out)], capture_output=True, text=True)
    assert absent.returncode == 1 and said(absent.stderr) == [f"error: {tmp_path / 'absent.py'}: no such file to check"]


# ------------------------------------------------------------ broken work


def test_a_file_and_a_notebook_load_as_python_compiles_them(tmp_path):
    """The checker's own `from __future__ import annotations` must not reach student code: annotations are
    evaluated when a function is defined, so a name they use must exist, as in the student's Python."""
    code = "def f(x: int) -> int:\n    return x\nKIND = type(f.__annotations__['x']).__name__\n"
    (tmp_path / "typed.py").write_text(code)
    (tmp_path / "typed.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(code), nbformat.v4.new_code_cell("def g(x: Undefined):\n    return x")])))
    (tmp_path / "undefined.py").write_text("def g(x: Undefined):\n    return x\n")
    assert qkv_check.load_submission(tmp_path / "typed.py").namespace["KIND"] == "type"
    notebook = qkv_check.load_submission(tmp_path / "typed.ipynb")
    assert notebook.namespace["KIND"] == "type" and len(notebook.cell_errors) == 1
    assert "NameError" in notebook.cell_errors[0], notebook.cell_errors
    assert "NameError" in (qkv_check.load_submission(tmp_path / "undefined.py").load_error or "")


def test_broken_notebooks_and_files_are_reported_not_fatal(numpy_release, tmp_path, monkeypatch):
    data = _data(numpy_release)
    problem = numpy_release.assignment.implement[0].problem
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import numpy as np\n!pip install nothing\n%load_ext autoreload"),
        nbformat.v4.new_code_cell("def broken(:\n    pass"),
        nbformat.v4.new_code_cell("%%bash\necho hello"),
        nbformat.v4.new_code_cell("raise ValueError('oops')"),
        nbformat.v4.new_code_cell("for i in range(2):\n    %time i\n" + reference_function(problem, "numpy")),
        nbformat.v4.new_code_cell("from qkv_check import check\nANSWERS = {}\ncheck('x')  # in the student's own cell"),
    ])
    path = tmp_path / "broken.ipynb"
    path.write_text(nbformat.writes(nb))
    monkeypatch.setitem(sys.modules, "qkv_check", qkv_check)
    submission = qkv_check.load_submission(path)
    assert [e.split(":")[0] for e in submission.cell_errors] == ["cell 2", "cell 4"]
    assert "no problem" not in submission.printed  # check() does nothing while the checker runs the notebook
    assert "ValueError: oops (line 1)" in submission.cell_errors[1]
    assert submission.skipped == ["cell 3: a %%bash cell, not Python: skipped, as Jupyter does not run its body "
                                  "in the notebook's Python"]
    text, results = qkv_check.report(data, submission, only=numpy_release.assignment.problems[0].problem.id)
    assert results[0].status == "pass" and "These cells failed" in text and "cell 4: ValueError" in text

    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n")
    text, results = qkv_check.report(data, qkv_check.load_submission(syntax))
    assert "does not load: SyntaxError" in text and "line 1" in text and results == []

    loops = tmp_path / "loops.py"
    loops.write_text(f"import warnings, sys\n"
                     f"def {problem.function}(*args, **kwargs):\n    while True:\n        pass\n")
    outcome = qkv_check.public_checks(data)[0].run(qkv_check.load_submission(loops), seconds=0.3)
    assert not outcome.passed and "took longer than 0.3 s while running" in outcome.message
    assert f"{problem.function}()" in outcome.message and re.search(r", at line [34]: an endless loop", outcome.message)

    shape = tuple(data["problems"][0]["public_tests"][0]["expected"][0]["shape"])
    for body, needle in (("import sys; sys.exit(3)", "sys.exit(3)"), ("return None", "missing return?"),
                         ("return 'text'", "returned str, not an array"), ("raise NotImplementedError", "not implemented yet"),
                         (f"return np.full({shape}, np.nan)", "contains NaN"),
                         ("import warnings; warnings.warn('careful'); raise KeyError('k')", "KeyError: 'k' (line 4)")):
        source = tmp_path / "one.py"
        source.write_text(f"import numpy as np\n\ndef {problem.function}(*args, **kwargs):\n    {body}\n")
        outcome = qkv_check.public_checks(data)[0].run(qkv_check.load_submission(source))
        assert not outcome.passed and needle in outcome.message, (body, outcome.message)


def test_the_self_check_judges_with_the_graders_own_functions(numpy_release):
    """One rule, one definition: the self-check's comparison, reader and parsers are the runtime's, and the
    release carries the runtime byte for byte."""
    import qkv_runtime
    from qkv_runtime import answers, diagnosis, judge, notebook, values
    from autograder.selfcheck.qkv_selfcheck import loading, public, written

    assert public.compare is compare and written.judge is judge and public.diagnosis is diagnosis
    assert public.to_arrays is values.to_arrays and loading.read_cells is notebook.read_cells
    assert written.qkv_answers is answers
    package = Path(qkv_runtime.__file__).parent
    shipped = numpy_release.out / "student" / "qkv_runtime"
    assert sorted(p.name for p in shipped.glob("*.py")) == sorted(p.name for p in package.glob("*.py"))
    for path in package.glob("*.py"):
        assert (shipped / path.name).read_bytes() == path.read_bytes(), path.name
