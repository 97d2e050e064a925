"""qkv build: releases are complete, deterministic, leak nothing, and bad manifests fail cleanly."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder.bank.load import Bank, load_bank
from autograder.kinds.numeric.by_hand import table_markdown
from autograder.kinds import ImplementProblem, NumericProblem
from autograder.kinds.implement.outputs import as_outputs, to_track
from qkv_runtime.compare import select
from autograder.kinds.resolve import resolve
from autograder.kinds.numeric.variants import variant_for
from autograder.assemble import build
from autograder.assemble.manifest import find_manifest, resolve_assignment
from autograder.kinds.implement.reference_source import solution_body
from autograder.bundle import read_bundle
from autograder.errors import QkvError
from conftest import QKV, ROOT, said

pytestmark = pytest.mark.slow  # builds every bundled assignment, some through the qkv command

FIXTURES = Path(__file__).parents[1] / "fixtures" / "manifests"
BUNDLED = sorted(p.stem for p in (ROOT / "assignments").glob("*.yaml"))


@pytest.fixture(scope="module")
def fixture_bank(bank: Bank) -> Bank:
    extra = load_bank(FIXTURES / "bank").bank
    return Bank({**bank.problems, **extra.problems}, {**bank.paths, **extra.paths}, bank.root)


@pytest.fixture(scope="module", params=BUNDLED)
def built(request, bank, tmp_path_factory):
    out = tmp_path_factory.mktemp("dist") / request.param
    return build(request.param, out, bank=bank)


def student_texts(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text(encoding="utf-8")
            for p in (out / "student").rglob("*") if p.is_file()}


def test_release_has_every_part(built):
    out, module = built.out, built.assignment.module_name
    for rel in (f"student/{module}.py", f"student/{module}.ipynb", "student/README.md", "student/PROBLEMS.md",
                "student/tests/test_public.py", "student/selfcheck.json", "student/qkv_check.py",
                "autograder/assignment.json", "autograder/arrays.npz", f"key/{module}.py"):
        assert (out / rel).is_file(), rel
    stub = (out / "student" / f"{module}.py").read_text()
    compile(stub, "stub", "exec")
    for assigned in built.assignment.implement:
        assert f"def {assigned.problem.signature}:" in stub
    for assigned in built.assignment.written:
        assert json.dumps(assigned.problem.id) in stub


def test_notebook_is_valid_and_names_an_installed_kernel(built):
    nb = nbformat.read(built.out / "student" / f"{built.assignment.module_name}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    roles = [c.metadata["qkv"]["role"] for c in nb.cells]
    problems = {c.metadata["qkv"].get("problem") for c in nb.cells if c.metadata["qkv"]["role"] == "work"}
    assert problems == {p.problem.id for p in built.assignment.problems}
    assert roles.count("selfcheck") == len(built.assignment.problems) + 1
    out = subprocess.run([sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"],
                         capture_output=True, text=True, check=True)
    assert "python3" in json.loads(out.stdout)["kernelspecs"]


def test_bundle_round_trips_and_expected_values_come_from_the_references(built):
    bundle = read_bundle(built.out / "autograder")
    assert bundle.max_points == pytest.approx(built.assignment.max_points)
    for problem in bundle.code:
        assigned = next(a for a in built.assignment.implement if a.problem.id == problem.id)
        reference = resolve(assigned.problem.references[bundle.track])
        for test in problem.tests:
            if test.expected is None:
                continue
            got = select(as_outputs(reference(*(to_track(a, bundle.track) for a in test.args),
                                              **{k: to_track(v, bundle.track) for k, v in test.kwargs.items()})), test.output)
            for g, w in zip(got, test.expected):
                assert g.shape == w.shape, (problem.id, test.name)  # a returned number stays 0-d
                np.testing.assert_allclose(g, w, atol=1e-12)


def test_same_inputs_give_byte_identical_builds(bank, tmp_path):
    first = build("attention-numpy", tmp_path / "a", bank=bank)
    second = build("attention-numpy", tmp_path / "b", bank=bank)
    files_a = sorted(p.relative_to(first.out) for p in first.out.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(second.out) for p in second.out.rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (first.out / rel).read_bytes() == (second.out / rel).read_bytes(), rel


def _float_tokens(array: np.ndarray, limit: int = 4) -> list[str]:
    """Full-precision reprs of an array's first entries, long enough not to match by chance."""
    values = [float(x) for x in np.asarray(array, dtype=float).reshape(-1)[:limit]]
    return [repr(v) for v in values if len(repr(v)) >= 10]


def test_student_release_leaks_nothing(built):
    texts = student_texts(built.out)
    everything = "\n".join(texts.values())
    bundle = read_bundle(built.out / "autograder")
    for assigned in built.assignment.implement:
        problem: ImplementProblem = assigned.problem
        body = solution_body(resolve(problem.references[built.assignment.track]))
        for line in body.splitlines():
            line = line.strip()
            if len(line) > 30 and not line.startswith(("import", "from", "#", "def ", '"""')):
                assert line not in everything, f"reference line of {problem.id} leaked: {line}"
        for mistake in problem.misconceptions:
            if mistake.implementation:
                assert mistake.implementation.rsplit(".", 1)[1] not in everything
                for line in solution_body(resolve(mistake.implementation)).splitlines():
                    if len(line.strip()) > 40:
                        assert line.strip() not in everything, f"mutant {mistake.id} leaked"
    def floats(test) -> set[str]:
        values = (*test.args, *test.kwargs.values(), *(test.expected or ()))
        return {repr(float(x)) for v in values if isinstance(v, np.ndarray) and v.dtype.kind == "f"
                for x in v.reshape(-1) if len(repr(float(x))) >= 10}

    public = set().union(*(floats(t) for p in bundle.code for t in p.tests if t.visibility == "public"))
    for problem in bundle.code:
        for test in problem.tests:
            if test.visibility == "hidden":
                for token in sorted(floats(test) - public)[:20]:
                    assert token not in everything, f"hidden value of {problem.id}/{test.name} leaked"
    assert "solutions." not in everything
    for assigned in built.assignment.written:
        problem = assigned.problem
        if isinstance(problem, NumericProblem):
            students = built.assignment.manifest.roster or [None]
            for student in students:
                variant = variant_for(problem, built.assignment.manifest.seed, built.assignment.manifest.variants, student)
                # a printed table of e^x or sin and cos holds its entries by design: the method earns the points
                tabled = table_markdown(problem.by_hand, variant.quantities)
                for value in variant.answers.values():
                    for token in set(_float_tokens(value)) - public:
                        assert token not in everything
                        if f"{float(token):.4f}" in tabled:
                            continue
                        rounded = re.escape(f"{float(token):.4f}")
                        assert not re.search(rf"(?<![\d.]){rounded}(?!\d)", texts.get("student/selfcheck.json", ""))


def test_per_student_release_hides_every_students_answers(fixture_bank, tmp_path):
    result = build(str(FIXTURES / "per-student.yaml"), tmp_path / "per", bank=fixture_bank)
    texts = student_texts(result.out)
    problem = fixture_bank.problems["one-query-by-hand"]
    answers = {s: variant_for(problem, 7, "per_student", s).answers for s in ("alice", "bob", "carol")}
    assert not np.allclose(answers["alice"]["weights"], answers["bob"]["weights"])
    data = json.loads(texts["student/selfcheck.json"])
    assert set(data["prompts"]) == {"alice", "bob", "carol"}
    for student, parts in answers.items():
        for values in parts.values():
            for x in np.asarray(values).reshape(-1):
                if not float(x).is_integer():
                    for text in texts.values():
                        assert f"{x:.4f}" not in text, student


@pytest.mark.parametrize("fixture, field", [
    ("unknown-problem.yaml", "problems[1]: unknown problem id 'no-such-problem'"),
    ("bad-points.yaml", "problems[0].points"),
    ("bad-yaml.yaml", "bad YAML"),
    ("bad-track.yaml", "track"),
    ("torch-cannot-take.yaml", "has no torch reference"),
    ("per-student-without-roster.yaml", "roster"),
])
def test_bad_manifest_is_one_line_and_writes_nothing(fixture, field, fixture_bank, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(QkvError) as err:
        build(str(FIXTURES / fixture), out, bank=fixture_bank)
    assert fixture in str(err.value) and field in str(err.value)
    assert "\n" not in str(err.value)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir()]


def test_cli_reports_bad_manifest_without_traceback(tmp_path):
    run = subprocess.run([str(QKV), "build", str(FIXTURES / "bad-points.yaml"), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert "Traceback" not in run.stderr + run.stdout
    lines = said(run.stderr)
    assert len(lines) == 1 and "bad-points.yaml" in lines[0] and "points" in lines[0]
    unknown = subprocess.run([str(QKV), "build", "no-such-assignment"], capture_output=True, text=True)
    assert unknown.returncode == 1 and "unknown assignment" in unknown.stderr and "Traceback" not in unknown.stderr


def test_failed_rebuild_keeps_the_previous_release(bank, tmp_path, monkeypatch):
    out = tmp_path / "rel"
    build("attention-numpy", out, bank=bank)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    import autograder.assemble as build_module

    def broken(assignment, bundle):
        raise RuntimeError("disk full")

    monkeypatch.setattr(build_module, "student_files", broken)
    with pytest.raises(RuntimeError):
        build("attention-numpy", out, bank=bank)
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert before == after
    assert [p.name for p in tmp_path.iterdir()] == ["rel"]


def test_assignment_points_override_the_bank(fixture_bank, tmp_path):
    manifest = tmp_path / "override.yaml"
    manifest.write_text("title: Override\ntrack: numpy\nseed: 3\nproblems:\n  - {id: softmax-rows, points: 10}\n")
    assignment = resolve_assignment(manifest, fixture_bank)
    assert assignment.max_points == 10
    assert find_manifest(str(manifest)) == manifest


@pytest.mark.parametrize("broken, what", [
    (("solutions.numpy_ref.softmax_rows", "solutions.numpy_ref.no_such_function"), "unknown reference"),
    (("expect: [[0.6666667, 0.3333333, 0.0]]", "expect: [[0.5, 0.5, 0.0]]"), "expect: the reference gives other numbers"),
])
def test_a_broken_problem_of_the_assignment_is_named_and_nothing_is_written(broken, what, tmp_path):
    bank_root = tmp_path / "bank"
    shutil.copytree(ROOT / "question_bank", bank_root)
    problem_file = bank_root / "attention" / "softmax-rows.yaml"
    problem_file.write_text(problem_file.read_text().replace(*broken, 1))
    out = tmp_path / "out"
    with pytest.raises(QkvError) as err:
        build("attention-numpy", out, bank=load_bank(bank_root).bank)
    assert str(err.value).startswith(str(problem_file)) and what in str(err.value) and "\n" not in str(err.value)
    assert not out.exists()


def test_an_unwritable_output_folder_is_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    run = subprocess.run([str(QKV), "build", "attention-numpy", "--out", str(blocker / "release")],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert f"{blocker / 'release'}: cannot write the release" in run.stderr


def modes(folder: Path) -> dict[str, int]:
    """Every path under `folder` (and `folder` itself, as "."), with its permission bits."""
    import os
    import stat

    found = {".": stat.S_IMODE(os.lstat(folder).st_mode)}
    for path in folder.rglob("*"):
        found[path.relative_to(folder).as_posix()] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_what_gives_answers_away_is_its_owners_only_whatever_the_umask(tmp_path, umask):
    import os

    out = tmp_path / "dist" / "attention-numpy"
    out.mkdir(parents=True)
    (out / "key").mkdir()
    (out / "key" / "stale.py").write_text("an older build")  # a rebuild replaces it all, old modes with it
    done = subprocess.run([str(QKV), "build", "attention-numpy", "--out", str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, preexec_fn=lambda: os.umask(umask))
    assert done.returncode == 0, done.stderr
    found = modes(out)
    assert "key/stale.py" not in found
    private = {p: m for p, m in found.items() if p.split("/")[0] in ("autograder", "nbgrader", "key", "gradescope.zip")}
    assert {"key/attention_numpy.py", "autograder/arrays.npz", "gradescope.zip"} <= set(private)
    assert any(p.startswith("nbgrader/source/") for p in private)
    wrong = {p: oct(m) for p, m in private.items() if m != (0o700 if (out / p).is_dir() else 0o600)}
    assert wrong == {}, wrong
    # students' part, and the folder holding it, stay as readable as the umask makes any new file
    public = {p: m for p, m in found.items() if p not in private}
    assert "student/attention_numpy.py" in public and "." in public
    for path, mode in public.items():
        expected = (0o777 if (out / path).is_dir() else 0o666) & ~umask
        assert mode == expected, (path, oct(mode))


def test_an_exams_answer_key_is_its_owners_only(tmp_path):
    import os

    out = tmp_path / "exam"
    out.mkdir()
    (out / "answer-key.md").write_text("an older key")
    (out / "answer-key.md").chmod(0o644)
    done = subprocess.run([str(QKV), "exam", "--count", "3", "--out", str(out)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, preexec_fn=lambda: os.umask(0o022))
    assert done.returncode == 0, done.stderr
    found = modes(out)
    assert found["answer-key.md"] == 0o600 and found["exam.md"] == 0o644
    assert (out / "answer-key.md").read_text() != "an older key"


def test_stub_docstrings_are_raw_strings_that_show_the_tex_as_written(built):
    """An editor shows the stub's source: `$(\\dots, n_q)$` must read there as in the problem file."""
    module = built.assignment.module_name
    stub = (built.out / "student" / f"{module}.py").read_text()
    notebook = nbformat.read(built.out / "student" / f"{module}.ipynb", as_version=4)
    cells = {c.metadata["qkv"].get("problem"): c.source for c in notebook.cells if c.metadata["qkv"]["role"] == "work"}
    functions = {n.name: n for n in ast.parse(stub).body if isinstance(n, ast.FunctionDef)}
    checked = 0
    for assigned in built.assignment.implement:
        problem = assigned.problem
        node = functions[problem.function]
        assert stub.splitlines()[node.body[0].lineno - 1].strip().startswith('r"""'), problem.id
        assert ast.get_docstring(node).startswith(problem.prompt.strip().replace('"""', "'''"))
        for line in (line.strip() for line in problem.prompt.splitlines() if "\\" in line):
            assert line in stub and line in cells[problem.id], (problem.id, line)
            checked += 1
    assert checked or not any("\\" in p.problem.prompt for p in built.assignment.implement)


def test_a_stub_compiles_whatever_quotes_and_backslashes_its_texts_hold(bank):
    from autograder.kinds.implement import stub_function

    problem = bank.get("softmax-rows").model_copy(update={
        "prompt": 'a backslash at the end \\\nthen """quotes""", \\N{nothing} and $\\dots$',
        "returns": "\\u00zz, not an escape", "example": ">>> softmax_rows('\\\\')"})
    space: dict = {}
    exec(compile(stub_function(problem), "stub", "exec"), space)
    doc = space["softmax_rows"].__doc__
    assert "a backslash at the end \\\n" in doc and "'''quotes'''" in doc and "\\N{nothing} and $\\dots$" in doc
    assert "Returns: \\u00zz, not an escape" in doc and ">>> softmax_rows('\\\\')" in doc
