"""The engine's shape: no import circle among its modules, and kind names tested only in autograder/kinds/.

Imports are read from the syntax tree of every module of autograder/ and qkv_runtime/, so an import under
`if TYPE_CHECKING:` or inside a function counts as much as one at the top: a circle of type-only imports
is still two modules that cannot be understood (or moved) one without the other. Importing a.b.c runs
a/__init__.py and a/b/__init__.py first; that is not counted as an import of them, or every package whose
__init__ names its own modules would be a circle.

The kind-name rule is the grep docs/architecture.md gives ("Problem kinds"): the test runs that very
command, so the documentation and the test cannot drift apart, and first proves on lines written for the
purpose that it finds each form of kind-name test it is meant to find.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ("autograder", "qkv_runtime")


# ------------------------------------------------------------------ import graph


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under the packages (links to other trees not followed:
    autograder/references is the repository's solutions/, reference code rather than the engine)."""
    found: dict[str, Path] = {}
    for package in packages:
        for folder, subfolders, files in os.walk(root / package):
            here = Path(folder)
            subfolders[:] = sorted(d for d in subfolders if not (here / d).is_symlink() and d != "__pycache__")
            for name in files:
                if name.endswith(".py"):
                    parts = (here / name).relative_to(root).with_suffix("").parts
                    dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                    found[dotted] = here / name
    return found


def _imported(module: str, is_package: bool, tree: ast.AST, known: dict[str, Path]) -> set[str]:
    """The known modules `tree` imports anywhere in its body: top level, under TYPE_CHECKING, in functions."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in known:
                    out.add(f"{source}.{alias.name}")  # `from package import module`
                elif source in known:
                    out.add(source)
    out.discard(module)
    return out


def import_graph(root: Path, packages: tuple[str, ...] = ENGINE) -> dict[str, set[str]]:
    known = _modules(root, packages)
    return {name: _imported(name, path.name == "__init__.py", ast.parse(path.read_text(), str(path)), known)
            for name, path in known.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return found


def _described(graph: dict[str, set[str]], circle: list[str]) -> str:
    inside = set(circle)
    arrows = [f"  {a} -> {b}" for a in circle for b in sorted(graph[a] & inside)]
    return f"{len(circle)} modules: {', '.join(circle)}\n" + "\n".join(arrows)


def test_the_engine_has_no_import_circle():
    graph = import_graph(ROOT)
    assert "autograder.kinds" in graph and "qkv_runtime.judge" in graph  # the walk found the engine
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(_described(graph, c) for c in found)


def test_type_only_and_function_level_imports_close_a_circle(tmp_path):
    """The detector itself: a circle made only of an `if TYPE_CHECKING:` import and an import inside a
    function is found, and a package whose __init__ imports its own modules is not one."""
    pkg = tmp_path / "autograder"
    (pkg / "inner").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from autograder.b import B\n")
    (pkg / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "c.py").write_text("import autograder.a\n")
    (pkg / "inner" / "__init__.py").write_text("from autograder.inner.leaf import x\n")
    (pkg / "inner" / "leaf.py").write_text("from autograder import errors\n")
    graph = import_graph(tmp_path, ("autograder",))
    assert graph["autograder.b"] == {"autograder.c"}
    assert circles(graph) == [["autograder.a", "autograder.b", "autograder.c"]]


# -------------------------------------------------------------- kind names


def documented_grep() -> str:
    """The command docs/architecture.md gives for kind names in comparisons and keys outside the kinds."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    commands = re.findall(r"`(grep -rnE [^`]+)`", text)
    assert len(commands) == 1, f"docs/architecture.md should give one kind-name grep, found {len(commands)}"
    return commands[0]


def _run_grep(where: Path) -> list[str]:
    done = subprocess.run(["bash", "-c", documented_grep()], cwd=where, capture_output=True, text=True, timeout=60)
    assert not done.stderr, done.stderr
    return done.stdout.splitlines()


def test_kind_names_are_compared_only_in_the_kinds():
    hits = _run_grep(ROOT)
    assert not hits, "kind names tested outside autograder/kinds/ (ask the kind instead):\n" + "\n".join(hits)


CAUGHT = [
    'if problem.kind == "numeric":',
    "if scores.problem_kinds.get(problem) != 'true_false':",
    'if "shape" == kind:',
    'if problem.kind in ("implement", "numeric"):',
    "if kind not in ['multiple_choice']:",
    'JUDGES = {"true_false": judge}',
    'if "implement" in chosen:',
    "if w.problem.kind == NUMERIC.name and w.problem.parameters:",
    'if row["kind"] == kind:',
    'problems = bank.by_kind("shape")',
]
PASSED = [
    "if kind_of(problem).code:",
    'title = "a numeric answer"',
    'shape = array.shape  # "shape" of the array',
    "kinds = {p.id: IMPLEMENT.name for p in bundle.code}",
]


def test_the_grep_finds_each_form_of_kind_name_test(tmp_path):
    """Each form the rule forbids is found outside the kinds and nowhere inside them; ordinary lines are not."""
    lines = "\n".join(CAUGHT + PASSED) + "\n"
    for folder in ("autograder/classroom", "autograder/kinds/numeric", "qkv_runtime"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "sample.py").write_text(lines)
    hits = _run_grep(tmp_path)
    found = {(path, int(line)) for path, line, *_ in (hit.split(":", 2) for hit in hits)}
    expected = {(f"{folder}/sample.py", n) for folder in ("autograder/classroom", "qkv_runtime")
                for n in range(1, len(CAUGHT) + 1)}
    assert found == expected, "\n".join(hits)


# ------------------------------------------------------------------ start-up


# Where nbformat loads, jsonschema loads with it, and with that rfc3987-syntax's grammars where that package is
# installed (it comes with qkv[nbgrader]: docs/dependencies.md), seconds of CPU: only writing a notebook needs it.
NOTEBOOK_WRITERS = ("autograder/assemble/notebook.py", "autograder/assemble/nbgrader_source.py")


def test_only_the_notebook_writers_import_nbformat():
    """Reading a notebook is json's work (grading, the self-check, the service); nbformat, and jsonschema under it, is
    imported only where a notebook is written, and there in the function that writes it."""
    found = []
    for folder in ENGINE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            top = {id(node) for node in tree.body}
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(n.split(".")[0] in ("nbformat", "jsonschema") for n in names):
                    relative = path.relative_to(ROOT).as_posix()
                    if relative not in NOTEBOOK_WRITERS or id(node) in top:
                        found.append(f"{relative}:{node.lineno}")
    assert found == []


def test_starting_qkv_its_service_and_its_grader_loads_no_notebook_library():
    """What the commands, the service's app and the grading path import at start: nothing that loads nbformat
    (a library of theirs that imports it at its top would, which the rule above does not see)."""
    probe = ("import sys\n"
             "import autograder.cli, autograder.serve.command, autograder.serve.web, autograder.serve.app\n"
             "import autograder.routes.class_grading, autograder.grade.service, autograder.sandbox.pool\n"
             "import autograder.selfcheck.qkv_check\n"
             "print(sorted(m for m in ('nbformat', 'jsonschema', 'rfc3987_syntax', 'lark') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


# ------------------------------------------------------------------ registries per axis

# Each axis other than kinds is one registry: grade exports (classroom/grade_formats.py), quiz exports and exam papers
# (exam_formats.py), isolation (isolation_modes.py). A decision on a format's or a mode's name written out anywhere
# else (`if fmt == "canvas":`, `isolation != "bwrap"`) is a second place to keep in step; this finds one.
REGISTRIES = ("autograder/classroom/grade_formats.py", "autograder/exam_formats.py", "autograder/isolation_modes.py")
_DECIDED = re.compile(r"""\b(fmt|format|isolation)\b\s*(==|!=)\s*["']|["']\s*(==|!=)\s*[\w.]*\b(fmt|format|isolation)\b"""
                      r"""|\b(fmt|format|isolation)\s+(not\s+)?in\s+[(\[{]\s*["']""")


def _decisions_on_names(root: Path) -> list[str]:
    hits = []
    for folder in ENGINE:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative in REGISTRIES or "/references/" in relative:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _DECIDED.search(line.split("#", 1)[0]):
                    hits.append(f"{relative}:{number}: {line.strip()}")
    return hits


def test_formats_and_isolation_modes_are_decided_through_their_registries():
    assert _decisions_on_names(ROOT) == []


def test_the_registry_rule_finds_each_form_of_a_decision_on_a_name(tmp_path):
    caught = ['if fmt == "canvas":', "elif fmt != 'moodle':", 'if run.isolation == "rlimits-only":',
              'if "bwrap" == pool.isolation:', 'if isolation in ("require", "bwrap"):']
    passed = ["if fmt not in GRADE_FORMATS:", "if pool.isolation == IsolationMode.BWRAP:",
              'layout = "moodle"  # fmt == "canvas" in a comment']
    for folder in ENGINE:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "sample.py").write_text("\n".join(caught + passed) + "\n")
    hits = _decisions_on_names(tmp_path)
    assert [hit.split(":")[:2] for hit in hits] == [[f"{folder}/sample.py", str(n)] for folder in ENGINE
                                                   for n in range(1, len(caught) + 1)]


def test_no_import_hook_in_the_engine():
    """A name is importable because a package of that name is installed, not because a finder says so: the bundled
    references are `autograder.references` alone (kinds/resolve.py once made `solutions` another name for them)."""
    hooks = [f"{path.relative_to(ROOT)}:{n}" for folder in ENGINE for path in sorted((ROOT / folder).rglob("*.py"))
             if "/references/" not in path.as_posix()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bsys\.(meta_path|path_hooks)\b", line.split("#", 1)[0])]
    assert hooks == []



# A write to sys.modules makes a name importable; the engine's one honest kind is a *registration*: a module it has
# just made (types.ModuleType(NAME), or importlib.util.module_from_spec of a spec named NAME) put under that NAME,
# or the script being run put under its own file's name. Anything else there is a stub (None: "not importable"),
# an alias (another module's object under a second name) or a wholesale change. Removing an entry is no such write.
_MODULE_MAKERS = {"ModuleType", "module_from_spec"}
_SPEC_MAKERS = {"spec_from_file_location", "spec_from_loader", "find_spec"}
_REMOVALS = {"pop", "get", "keys", "values", "items", "copy", "__contains__", "__getitem__", "__delitem__"}


def _called(node: ast.AST) -> str:
    if not isinstance(node, ast.Call):
        return ""
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Call) and _called(node.func) == "type":  # type(sys)(NAME), ModuleType by another name
        return "ModuleType"
    return ""


def _scopes(tree: ast.AST) -> dict[int, ast.AST]:
    """Each node's nearest enclosing function (or the module), by id."""
    scope_of: dict[int, ast.AST] = {}
    todo: list[tuple[ast.AST, ast.AST]] = [(tree, tree)]
    while todo:
        node, scope = todo.pop()
        scope_of[id(node)] = scope
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else scope
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))
    return scope_of


def sys_modules_writes(source: str, stem: str) -> list[tuple[int, str]]:
    """(line, what) of each write to sys.modules in `source` (a module whose file is STEM.py) that is no
    registration: `sys` and `sys.modules` followed through `import sys as s`, `from sys import modules`,
    `table = sys.modules` and getattr(sys, "modules")."""
    tree = ast.parse(source)
    scope_of = _scopes(tree)
    sys_names, tables = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            sys_names |= {a.asname or a.name for a in node.names if a.name == "sys"}
        elif isinstance(node, ast.ImportFrom) and node.module == "sys":
            tables |= {a.asname or a.name for a in node.names if a.name == "modules"}

    def is_table(node: ast.AST) -> bool:
        return ((isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name)
                 and node.value.id in sys_names)
                or (isinstance(node, ast.Name) and node.id in tables)
                or (_called(node) == "getattr" and len(node.args) == 2 and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in sys_names and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value == "modules"))

    made: dict[tuple[int, str], list[str]] = {}  # (scope, variable) -> the names its module may go under
    specs: dict[tuple[int, str], str] = {}
    for node in ast.walk(tree):  # the aliases of the table, and the modules and specs made, scope by scope
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value, scope = node.targets[0].id, node.value, id(scope_of[id(node)])
            if is_table(value):
                tables.add(target)
            elif _called(value) in _SPEC_MAKERS and value.args:
                specs[(scope, target)] = ast.dump(value.args[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value, scope = node.targets[0].id, node.value, id(scope_of[id(node)])
            if _called(value) in _MODULE_MAKERS and value.args:
                first = value.args[0]
                names = [ast.dump(first)]
                if isinstance(first, ast.Name):  # module_from_spec(spec): the spec's name
                    names += [specs.get((scope, first.id), ""),
                              ast.dump(ast.Attribute(value=ast.Name(id=first.id, ctx=ast.Load()), attr="name",
                                                     ctx=ast.Load()))]
                made[(scope, target)] = [n for n in names if n]

    def registration(key: ast.AST, value: ast.AST, scope: int) -> bool:
        if isinstance(value, ast.Name) and ast.dump(key) in made.get((scope, value.id), []):
            return True
        running = (isinstance(value, ast.Subscript) and is_table(value.value)
                   and ((isinstance(value.slice, ast.Constant) and value.slice.value == "__main__")
                        or (isinstance(value.slice, ast.Name) and value.slice.id == "__name__")))
        return running and isinstance(key, ast.Constant) and key.value == stem

    writes = []
    for node in ast.walk(tree):
        scope = id(scope_of[id(node)])
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(node, ast.AugAssign) and (is_table(target) or isinstance(target, ast.Subscript)
                                                        and is_table(target.value)):
                    writes.append((node.lineno, "an in-place change of sys.modules"))
                elif is_table(target) and not (isinstance(target, ast.Name) and is_table(node.value)):
                    writes.append((node.lineno, f"{ast.unparse(target)} replaced"))
                elif (isinstance(target, ast.Subscript) and is_table(target.value) and node.value is not None
                      and not registration(target.slice, node.value, scope)):
                    writes.append((node.lineno, f"{ast.unparse(target)} = {ast.unparse(node.value)}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_table(node.func.value):
            method = node.func.attr
            if method in ("setdefault", "__setitem__") and len(node.args) == 2:
                if not registration(node.args[0], node.args[1], scope):
                    writes.append((node.lineno, ast.unparse(node)))
            elif method not in _REMOVALS:
                writes.append((node.lineno, ast.unparse(node)))
    return sorted(writes)


def test_the_engine_writes_sys_modules_only_to_register_a_module_it_made():
    """No stub (autograder/__init__.py once made rfc3987_syntax None, "not importable") and no alias of one module
    under another's name: a name is importable because a module of that name was made for it."""
    writes = [f"{path.relative_to(ROOT)}:{line}: {what}" for folder in ENGINE
              for path in sorted((ROOT / folder).rglob("*.py")) if "/references/" not in path.as_posix()
              for line, what in sys_modules_writes(path.read_text(encoding="utf-8"), path.stem)]
    assert writes == []


# each case a function of its own; the lines marked `# caught` are the writes the rule must name, no other
SYS_MODULES_CASES = """\
import importlib.util
import sys
import sys as system
import types
from sys import modules
from sys import modules as table


def stub_by_setdefault():
    sys.modules.setdefault("rfc3987_syntax", None)  # caught


def stub_by_item():
    sys.modules["rfc3987_syntax"] = None  # caught


def alias_of_a_module():
    import autograder.references
    sys.modules["solutions"] = autograder.references  # caught


def alias_of_a_loaded_module():
    sys.modules["solutions"] = sys.modules["autograder.references"]  # caught


def alias_by_setdefault():
    sys.modules.setdefault("solutions", sys.modules["autograder.references"])  # caught


def made_but_put_under_another_name():
    module = types.ModuleType("submission")
    sys.modules["solutions"] = module  # caught


def made_in_another_function():
    sys.modules["submission"] = module  # caught


def through_an_alias_of_sys():
    system.modules["x"] = None  # caught


def through_modules_imported_from_sys():
    modules["x"] = None  # caught
    table.setdefault("y", None)  # caught


def through_a_name_for_the_table():
    found = sys.modules
    found["x"] = object()  # caught


def through_getattr():
    getattr(sys, "modules")["x"] = None  # caught


def many_at_once():
    sys.modules.update(solutions=sys.modules["autograder.references"])  # caught
    sys.modules |= {"x": None}  # caught
    sys.modules.__setitem__("x", None)  # caught


def the_table_replaced():
    sys.modules = dict(sys.modules)  # caught


def registered_after_its_making(name):
    module = types.ModuleType(name, "doc")
    sys.modules[name] = module
    child = type(sys)("qkv_runtime")
    sys.modules["qkv_runtime"] = child


def registered_from_a_spec(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    other = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = other


def the_running_script_under_its_own_name():
    sys.modules.setdefault("sample", sys.modules["__main__"])


def read_and_removed(name):
    torch = sys.modules.get("torch")
    del sys.modules[name]
    sys.modules.pop(name, None)
    return torch
"""


def test_the_sys_modules_rule_finds_each_form_of_stub_and_alias():
    """Proven on lines written for it: every marked write is named, and the registrations and reads are not."""
    caught = [n for n, line in enumerate(SYS_MODULES_CASES.splitlines(), 1) if line.endswith("# caught")]
    assert [line for line, _ in sys_modules_writes(SYS_MODULES_CASES, "sample")] == caught
    # the running script is registered under its own file's name only
    assert [line for line, _ in sys_modules_writes(SYS_MODULES_CASES, "another")] == sorted(
        caught + [SYS_MODULES_CASES.splitlines().index('    sys.modules.setdefault("sample", sys.modules["__main__"])')
                  + 1])


# ------------------------------------------------------------------ one grading path


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for found in graph.get(todo.pop(), ()):
            if found not in seen:
                seen.add(found)
                todo.append(found)
    return seen


def _wrong_ways(graph: dict[str, set[str]]) -> list[str]:
    """What the grading service, or the service's grader, reaches that a front door owns: the CLI's routes/ or the
    staff views (serve/instructor.py); the grading service reaches no part of the web service either."""
    wrong = []
    for start, banned in (("autograder.serve.grader", ("autograder.routes", "autograder.serve.instructor")),
                          ("autograder.grade.service", ("autograder.routes", "autograder.serve"))):
        wrong += [f"{start} -> {m}" for m in sorted(_reached(graph, start))
                  if any(m == b or m.startswith(b + ".") for b in banned)]
    return wrong


def test_the_grading_service_and_the_services_grader_reach_no_front_door():
    graph = import_graph(ROOT)
    assert "autograder.grade.service" in graph and "autograder.serve.grader" in graph
    assert _wrong_ways(graph) == []


def test_the_front_door_rule_finds_a_grader_that_reaches_the_staff_views():
    """The rule itself, on a graph made for it: a staff view reached through another module is found, and the
    grading service reaching the CLI's route (and the service's pages through it) is."""
    graph = {"autograder.serve.grader": {"autograder.classroom.history", "autograder.grade.service"},
             "autograder.classroom.history": {"autograder.serve.instructor"}, "autograder.serve.instructor": set(),
             "autograder.grade.service": {"autograder.routes.class_grading"},
             "autograder.routes.class_grading": {"autograder.serve.course"}, "autograder.serve.course": set()}
    assert _wrong_ways(graph) == ["autograder.serve.grader -> autograder.routes.class_grading",
                                  "autograder.serve.grader -> autograder.serve.instructor",
                                  "autograder.grade.service -> autograder.routes.class_grading",
                                  "autograder.grade.service -> autograder.serve.course"]


def test_the_late_rules_are_applied_in_the_grading_service_alone():
    """classroom/deadlines.py's `apply_policy` is named (imported or called) by the grading service alone, so a
    late outcome is worked out where a grading is kept and read everywhere else."""
    users = sorted(str(path.relative_to(ROOT)) for folder in ENGINE for path in (ROOT / folder).rglob("*.py")
                   if "/references/" not in path.as_posix() and re.search(r"\bapply_policy\b", path.read_text())
                   and path.name != "deadlines.py")
    assert users == ["autograder/grade/service.py"]


@pytest.mark.slow
def test_each_graded_submission_has_its_late_outcome_worked_out_once_on_both_front_doors(built_numpy, tmp_path,
                                                                                         monkeypatch):
    """Counted on the rules themselves, wherever a module holds them: `qkv grade` of a class (a file with no
    program among them), the same class again (nothing new: none), and `qkv serve`'s grader with the feedback
    pages and the class settled at start read after it (none more)."""
    from autograder.classroom import deadlines
    from autograder.grade.gradebook import Gradebook
    from autograder.grade.gradebook.records import AttemptState, NewAttempt
    from autograder.grade.route import open_route
    from autograder.routes.class_grading import bundle_fingerprint, grade_class
    from autograder.serve.course import served_assignment
    from autograder.serve.grader import Grader
    from autograder.serve.app.student import feedback_page
    from autograder.serve.instructor import settle_class
    from conftest import key_module

    counted: list[str] = []
    original = deadlines.apply_policy

    def counting(policy, raw, max_score, *rest, **named):
        counted.append(f"{raw}/{max_score}")
        return original(policy, raw, max_score, *rest, **named)

    for module in list(sys.modules.values()):
        if getattr(module, "apply_policy", None) is original:
            monkeypatch.setattr(module, "apply_policy", counting)

    subs = tmp_path / "subs"
    subs.mkdir()
    key = key_module(built_numpy.assignment)
    (subs / "ann.py").write_text(key)
    (subs / "bob.py").write_text(key.replace("def ", "def _", 1))
    (subs / "cy.ipynb").write_text("{not a notebook")
    bundle = built_numpy.out / "autograder"
    first = grade_class(bundle, subs, tmp_path / "out", jobs=1, timeout=3.0, isolation="allow-rlimits")
    assert len(first.results) == 3 and len(counted) == 3, counted
    again = grade_class(bundle, subs, tmp_path / "out", jobs=1, timeout=3.0, isolation="allow-rlimits")
    assert again.graded_now == 0 and len(counted) == 3 and again.late == first.late

    counted.clear()
    assignment = served_assignment("attention-numpy", built_numpy.out)
    with Gradebook(tmp_path / "served.sqlite", assignment=assignment.name) as book:
        book.check_assignment(assignment.name, bundle_fingerprint(assignment.bundle_dir))
        for n, (student, body) in enumerate([("ann", key), ("bob", key), ("ann", key + "\n")]):
            assert book.accept(NewAttempt(f"attempt-{n}", student, time.time(), "attention_numpy.py", f"d{n}",
                                          body.encode()), 10, 10) is None
        grader = Grader(assignment, book, None, lambda: open_route(assignment.bundle, assignment.bundle_dir, 1,
                                                                   assignment.bundle.limits, "allow-rlimits", None))
        grader.start()
        try:
            deadline = time.monotonic() + 300
            while any(book.attempt(f"attempt-{n}").state is not AttemptState.GRADED for n in range(3)):
                assert time.monotonic() < deadline, "the grader did not grade the attempts"
                time.sleep(0.05)
        finally:
            grader.stop()
        assert len(counted) == 3, counted
        for n in range(3):
            assert "Your due date" in feedback_page(assignment, book, None, book.attempt(f"attempt-{n}"))
        settle_class(grader.service, assignment)
        assert len(counted) == 3, counted
# ------------------------------------------------------------------ the tests' own tree

# tests/ mirrors the code: one folder per subpackage of autograder/, `runtime` for qkv_runtime/, `engine` for the
# modules at autograder/'s top (archive.py, private.py, wording.py...), `benchmarks` for benchmarks/. Each folder runs
# alone (`pytest tests/serve`): its modules import the helpers at tests/'s top (pyproject's pythonpath) and no test
# module of another folder. At the top only the modules about the whole project.
TESTS = ROOT / "tests"
FOLDERS_BEYOND_THE_PACKAGES = {"runtime": "qkv_runtime/", "engine": "autograder/*.py", "benchmarks": "benchmarks/"}
WHOLE_PROJECT = {"test_structure.py", "test_as_user.py"}


def _test_modules(tests: Path) -> list[Path]:
    return sorted(p for p in tests.rglob("test_*.py") if "fixtures" not in p.relative_to(tests).parts)


def _folder_for(module: Path) -> str:
    """Where a module at tests/'s top belongs: the subpackage of autograder/ it imports most, else qkv_runtime's."""
    counts: dict[str, int] = {}
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        for name in names:
            parts = name.split(".")
            folder = ("runtime" if parts[0] == "qkv_runtime" else
                      parts[1] if parts[0] == "autograder" and len(parts) > 1 else "")
            if folder:
                counts[folder] = counts.get(folder, 0) + 1
    return max(counts, key=lambda f: counts[f]) if counts else "?"


def stray_test_modules(tests: Path) -> list[str]:
    """Test modules at tests/'s top that belong in a folder, each with the folder its imports suggest."""
    return [f"tests/{p.name} -> tests/{_folder_for(p)}/" for p in sorted(tests.glob("test_*.py"))
            if p.name not in WHOLE_PROJECT]


def test_no_test_module_sits_at_the_top_of_tests():
    """A module added at tests/'s top (a branch started before the folders) is named with where it goes: move it
    there with `git mv`, and its path in tests/test_as_user.py and .ci/under_load.py if it is rerun there."""
    assert stray_test_modules(TESTS) == []


def test_the_stray_module_rule_names_each_module_and_its_folder(tmp_path):
    (tmp_path / "serve").mkdir()
    (tmp_path / "serve" / "test_in_place.py").write_text("")
    (tmp_path / "test_structure.py").write_text("")
    (tmp_path / "test_practice.py").write_text(
        "from autograder.exam import drill\nfrom autograder.exam.select import x\nimport autograder.serve.web\n")
    (tmp_path / "test_values.py").write_text("from qkv_runtime.values import plain_answers\n")
    assert stray_test_modules(tmp_path) == ["tests/test_practice.py -> tests/exam/",
                                            "tests/test_values.py -> tests/runtime/"]


def test_each_test_folder_mirrors_a_package():
    packages = {p.parent.name for p in (ROOT / "autograder").glob("*/__init__.py")}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name not in ("fixtures", "__pycache__")}
    assert sorted(folders - packages - set(FOLDERS_BEYOND_THE_PACKAGES)) == []


def test_test_module_names_are_unique():
    """pytest imports a module of a folder without __init__.py by its bare name: two of one name cannot both run."""
    names = [p.name for p in _test_modules(TESTS)]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def foreign_test_imports(tests: Path) -> list[str]:
    """Imports of a test module from another folder: they work in a whole run, where pytest has put that folder on
    sys.path, and fail when the importing folder runs alone."""
    where = {p.stem: p.parent for p in _test_modules(tests)}
    found = []
    for path in _test_modules(tests):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for name in names:
                home = where.get(name.split(".")[0])
                if home is not None and home not in (path.parent, tests):
                    found.append(f"{path.relative_to(tests)}:{node.lineno}: {name}")
    return found


def test_a_folder_imports_no_test_module_of_another():
    assert foreign_test_imports(TESTS) == []


def test_the_foreign_import_rule_finds_one(tmp_path):
    for folder in ("serve", "routes"):
        (tmp_path / folder).mkdir()
    (tmp_path / "test_as_user.py").write_text("")
    (tmp_path / "routes" / "test_nbgrader.py").write_text("")
    (tmp_path / "routes" / "test_mistakes.py").write_text("from test_nbgrader import fixture\n")
    (tmp_path / "serve" / "test_lti.py").write_text("import test_as_user\n\n\ndef late():\n    import test_nbgrader\n")
    assert foreign_test_imports(tmp_path) == ["serve/test_lti.py:5: test_nbgrader"]


# ------------------------------------------------------------------ one stylesheet

PAGE_CSS = ROOT / "autograder" / "page.css"
_JINJA = re.compile(r"\{[{%#].*?[}%#]\}", re.S)
_RULE = re.compile(r"([^{};]+)\{([^{}]*)\}")


def _rules(css: str) -> list[tuple[str, frozenset[str]]]:
    """Each CSS rule as its selector and its declarations, whitespace-normalised; comments and Jinja left out."""
    css = re.sub(r"/\*.*?\*/", "", _JINJA.sub("", css), flags=re.S)
    return [(" ".join(sel.split()), frozenset(" ".join(d.split()) for d in body.split(";") if d.strip()))
            for sel, body in _RULE.findall(css)]


def _styles(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    return text if path.suffix == ".css" else "\n".join(re.findall(r"<style[^>]*>(.*?)</style>", text, re.S))


def second_copies_of_the_page_style(root: Path, shared: Path) -> list[str]:
    """Rules of other pages that repeat one of the shared stylesheet's: the same selector with two or more of its
    declarations (or its only one). A page keeps in its own <style> only what differs."""
    mine = _rules(shared.read_text(encoding="utf-8"))
    found = []
    for path in sorted(root.rglob("*")):
        if path == shared or path.suffix not in (".css", ".j2", ".html", ".py") or not path.is_file():
            continue
        for selector, declarations in _rules(_styles(path)):
            for shared_selector, shared_declarations in mine:
                same = declarations & shared_declarations
                if selector == shared_selector and len(same) >= min(2, len(shared_declarations)):
                    found.append(f"{path.relative_to(root)}: {selector} {{ {'; '.join(sorted(same))} }}")
    return found


def test_the_pages_share_one_stylesheet_and_copy_none_of_it():
    """autograder/page.css is the pages' one look: each standalone page's template inlines it, and no template
    (or other file of the engine) carries a second copy of its rules to keep in step."""
    assert second_copies_of_the_page_style(ROOT / "autograder", PAGE_CSS) == []
    for template in ("serve/templates/base.html.j2", "report/templates/feedback.html.j2",
                     "classroom/templates/stats.html.j2", "exam/templates/paper.html.j2"):
        assert "{{ page_style }}" in (ROOT / "autograder" / template).read_text(encoding="utf-8"), template


def test_the_second_copy_rule_finds_a_copied_rule(tmp_path):
    shared = tmp_path / "page.css"
    shared.write_text("/* one look */\nnav { display: flex; gap: 1rem; }\nh1 { font-size: 1.5rem; }\n")
    (tmp_path / "own.html.j2").write_text(
        "<style>{{ page_style }}</style>\n<style>\n@media print { nav {display:none} }\n"
        "{% if x %}nav { gap: 1rem;  display: flex; margin: 0 }{% endif %}\nh1 { font-size: 2rem; }\n</style>\n")
    (tmp_path / "other.html.j2").write_text("<style>h1 { font-size: 1.5rem }</style><p>nav { display: flex; gap: 1rem; }</p>")
    assert second_copies_of_the_page_style(tmp_path, shared) == [
        "other.html.j2: h1 { font-size: 1.5rem }", "own.html.j2: nav { display: flex; gap: 1rem }"]
