"""Read problem files: YAML text in, typed `Problem`s out, or one-line errors with file, line and field.

`load_bank` collects every error of a folder instead of stopping at the first,
so `qkv validate` can list them all at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from autograder.bank import folders
from autograder.errors import QkvError
from autograder.kinds import KINDS, Problem, problem_adapter

MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class Bank:
    """Every problem of a bank by id, with the file each came from."""

    problems: dict[str, Problem]
    paths: dict[str, Path]
    root: Path
    overrides: dict[str, Path] = field(default_factory=dict)  # problem id -> the bundled file it replaces

    def get(self, problem_id: str) -> Problem:
        return self.problems[problem_id]

    def by_kind(self, kind: str) -> list[Problem]:
        return [p for p in self.problems.values() if p.kind == kind]


@dataclass
class LoadReport:
    bank: Bank
    errors: list[QkvError] = field(default_factory=list)


def default_bank_root() -> Path:
    """The bank that ships with qkv (package data; the repository's question_bank/)."""
    from importlib import resources

    return Path(str(resources.files("autograder") / "bundled" / "question_bank"))


def _node_at(node: yaml.Node | None, loc: Iterable[Any]) -> yaml.Node | None:
    """Follow a pydantic error location through the YAML node tree, as far as it goes."""
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == str(key)), None)
            if match is None:
                return node
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            return node
    return node


def _field_path(loc: tuple[Any, ...]) -> str:
    # pydantic puts the discriminator value and union member names in loc; they are not fields
    parts = [str(p) for p in loc if str(p) not in KINDS and not str(p)[:1].isupper() and "[" not in str(p)]
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out or "(top level)"


def _data_loc(loc: tuple[Any, ...]) -> list[Any]:
    return [p for p in loc if str(p) not in KINDS and not str(p)[:1].isupper() and "[" not in str(p)]


def _repeated_key(node: yaml.Node | None) -> yaml.ScalarNode | None:
    """The first key a mapping of the document gives twice."""
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    return key
                seen.add(key.value)
            found = _repeated_key(value)
            if found is not None:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            found = _repeated_key(item)
            if found is not None:
                return found
    return None


# libyaml's parser when PyYAML has it (ten times the speed: the bank is parsed by every command), else PyYAML's own
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _compose(text: str, loader_class: type) -> tuple[yaml.Node | None, Any]:
    """What yaml.safe_load does, keeping the node tree for line numbers: one parse, not two."""
    loader = loader_class(text)
    try:
        tree = loader.get_single_node()
        return tree, loader.construct_document(tree) if tree is not None else None
    finally:
        loader.dispose()


def parse_problem(text: str, where: str, folder: Path | None = None) -> Problem:
    """Parse one problem file's text; raise QkvError naming `where`, the line and the field.

    `folder`: the problem's own folder, whose modules its references may name (bank/folders.py)."""
    try:
        tree, data = _compose(text, FAST_LOADER)
    except yaml.YAMLError as fast_error:
        err = fast_error
        try:  # the pure-Python parser says what is wrong, and where, more precisely than libyaml
            _compose(text, yaml.SafeLoader)
        except yaml.YAMLError as slow_error:
            err = slow_error
        mark = getattr(err, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        reason = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise QkvError(f"{where}{at}", f"bad YAML: {reason}") from None
    repeated = _repeated_key(tree)
    if repeated is not None:
        raise QkvError(f"{where}:{repeated.start_mark.line + 1}",
                       f"{repeated.value}: given twice in the same mapping (YAML would silently keep the last)")
    if not isinstance(data, dict):
        raise QkvError(where, "a problem file must be a YAML mapping (key: value lines)")
    if folder is not None:
        data = folders.localize(data, folder)
    if data.get("kind") not in KINDS:
        kind_node = _node_at(tree, ["kind"])
        at = f":{kind_node.start_mark.line + 1}" if kind_node is not None else ""
        raise QkvError(f"{where}{at}", f"kind: must be one of {', '.join(KINDS)}, got {data.get('kind')!r}")
    try:
        return problem_adapter().validate_python(data)
    except ValidationError as err:
        first = max(err.errors(), key=lambda e: len(e["loc"]))  # the deepest error names the field best
        node = _node_at(tree, _data_loc(first["loc"]))
        at = f":{node.start_mark.line + 1}" if node is not None else ""
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        message = first["msg"].removeprefix("Value error, ")
        raise QkvError(f"{where}{at}", f"{_field_path(first['loc'])}: {message}{more}") from None


def load_problem(path: Path) -> Problem:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise QkvError(str(path), f"cannot read: {err.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise QkvError(str(path), f"file is {len(raw):,} bytes; a problem file is at most {MAX_FILE_BYTES:,}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise QkvError(str(path), f"not UTF-8 text (byte {err.start})") from None
    if path.name == folders.PROBLEM_FILE:  # a problem folder: its name is the id, its modules are its code
        problem = parse_problem(text, str(path), path.parent)
        if problem.id != path.parent.name:
            raise QkvError(str(path), f"id: '{problem.id}' must match the folder name '{path.parent.name}'")
        return problem
    problem = parse_problem(text, str(path))
    if problem.id != path.stem:
        raise QkvError(str(path), f"id: '{problem.id}' must match the file name '{path.stem}'")
    return problem


def problem_files(root: Path) -> list[Path]:
    """Every problem file under `root`: `*.yaml` files, and the problem.yaml of problem folders."""
    if root.is_file():
        return [root]
    found = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            continue
        inside = [parent for parent in path.parents if folders.is_problem_folder(parent) and root in parent.parents]
        if path.name == folders.PROBLEM_FILE or not inside:
            found.append(path)
    return found


def load_bank(root: Path | None = None) -> LoadReport:
    """Load every `*.yaml` under `root`; errors are collected, valid problems kept."""
    root = (root or default_bank_root()).resolve()
    if not root.exists():
        raise QkvError(str(root), "no such folder")
    files = problem_files(root)
    problems: dict[str, Problem] = {}
    paths: dict[str, Path] = {}
    errors: list[QkvError] = []
    for path in files:
        try:
            problem = load_problem(path)
        except QkvError as err:
            errors.append(err)
            continue
        if problem.id in problems:
            errors.append(QkvError(str(path), f"id: '{problem.id}' is already used by {paths[problem.id]}"))
            continue
        problems[problem.id] = problem
        paths[problem.id] = path
    return LoadReport(Bank(problems, paths, root if root.is_dir() else root.parent), errors)


def load_bank_strict(root: Path | None = None) -> Bank:
    """The bank, or the first error: for stages that must not run on a broken bank."""
    report = load_bank(root)
    if report.errors:
        raise report.errors[0]
    return report.bank
