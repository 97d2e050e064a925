"""The self-check's layout: qkv_check.py and the parts beside it (autograder/selfcheck/qkv_selfcheck/), each small,
each copied into the release byte for byte, none importing the grader, so the release runs on its own."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import autograder.selfcheck

SOURCE = Path(autograder.selfcheck.__file__).resolve().parent
MOST_LINES = 400
# what a part may import: the standard library, the release's runtime and the self-check's own parts, numpy, torch
# (a torch track) and IPython (show() in Jupyter)
ALLOWED = set(sys.stdlib_module_names) | {"qkv_runtime", "qkv_selfcheck", "numpy", "torch", "IPython"}
BLOCKER = '''
import sys
class _NoGrader:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "autograder":
            raise ImportError("QKV-GRADER-IMPORTED " + name)
sys.meta_path.insert(0, _NoGrader())
'''


def parts() -> dict[str, Path]:
    """{path in a release: source file} for every part of the self-check in this checkout."""
    found = {"qkv_check.py": SOURCE / "qkv_check.py"}
    found.update({f"qkv_selfcheck/{p.name}": p for p in sorted((SOURCE / "qkv_selfcheck").glob("*.py"))})
    return found


def test_every_part_is_under_400_lines():
    found = parts()
    long = {rel: n for rel, path in found.items() if (n := len(path.read_text(encoding="utf-8").splitlines())) >= MOST_LINES}
    assert not long, f"parts of {MOST_LINES} lines or more: {long}"
    assert "qkv_selfcheck/__init__.py" in found and len(found) > 2, sorted(found)


def test_the_release_carries_every_part_byte_for_byte(built_numpy_same):
    student = built_numpy_same.out / "student"
    shipped = {"qkv_check.py"} | {f"qkv_selfcheck/{p.name}" for p in (student / "qkv_selfcheck").glob("*.py")}
    assert "qkv_selfcheck/__init__.py" in shipped and shipped == set(parts()), sorted(shipped ^ set(parts()))
    for rel, path in parts().items():
        assert (student / rel).read_bytes() == path.read_bytes(), rel


def test_no_part_imports_anything_a_student_lacks():
    for rel, path in parts().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in ALLOWED, f"{rel}, line {node.lineno}: imports {name}"


def test_the_release_checks_and_imports_with_the_grader_out_of_reach(built_numpy_same, tmp_path):
    """The release copied alone, the grader's packages made unimportable (for the check's children too), and
    files named like the standard library beside it: `python qkv_check.py FILE` and the notebook's import work."""
    folder = tmp_path / "release"
    shutil.copytree(built_numpy_same.out / "student", folder)
    module = built_numpy_same.assignment.module_name
    shutil.copy(built_numpy_same.out / "key" / f"{module}.py", folder / "right.py")
    for name in ("numbers", "random", "json"):  # a student's scratch files: qkv_check.py's folder comes last
        (folder / f"{name}.py").write_text(f"raise SystemExit('the student\\'s {name}.py was imported')\n")
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "blocker"),
                                                                       os.environ.get("PYTHONPATH")]))}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=300)

    blocked = run("-c", "import autograder")
    assert blocked.returncode != 0 and "QKV-GRADER-IMPORTED autograder" in blocked.stderr  # the blocker works
    checked = run("qkv_check.py", "right.py")
    said = checked.stdout + checked.stderr
    assert checked.returncode == 0 and "QKV-GRADER-IMPORTED" not in said and "was imported" not in said, said[-2000:]
    n = len(built_numpy_same.assignment.problems)
    assert f"{n} pass, 0 fail, 0 not answered" in checked.stdout, checked.stdout[-2000:]

    # the notebook's setup cell, in a kernel started in the release's folder (cwd first on sys.path)
    for name in ("numbers", "random", "json"):  # a kernel's cwd comes first on its path: there they are the student's
        (folder / f"{name}.py").unlink()
    imported = run("-c", "from qkv_check import check, show; import qkv_selfcheck; print(qkv_selfcheck.__file__)")
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert Path(imported.stdout.strip()).resolve() == (folder / "qkv_selfcheck" / "__init__.py").resolve()
