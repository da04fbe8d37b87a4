"""An SGLang installation read from its files, never imported.

The version and pins come from ``sglang-*.dist-info/METADATA``; the model
classes from the ``EntryClass`` assignments in ``sglang/srt/models/*.py``,
parsed with ``ast`` (the registry SGLang builds in ``srt/models/registry.py``
collects exactly these names). This works on a site-packages directory, on files
copied out of an image, and (through scripts/gen_matrix.py) on wheels.
"""

from __future__ import annotations

import ast
import email.parser
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from imgbuild.errors import UsageError


@dataclass(frozen=True)
class SglangInstall:
    version: str
    requires_python: str
    requires_dist: tuple[str, ...]
    architectures: frozenset[str]
    location: str


def module_statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Module-level statements, including those inside top-level if/try blocks (guarded
    imports and definitions), but not inside functions or classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from module_statements(stmt.body)
            yield from module_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from module_statements(stmt.body)
            for handler in stmt.handlers:
                yield from module_statements(handler.body)
            yield from module_statements(stmt.orelse)
            yield from module_statements(stmt.finalbody)


def parse_entry_classes(source: str) -> tuple[list[str], list[str]]:
    """The architecture names a models/*.py file registers, and what could not be resolved.

    SGLang registers `cls.__name__` of each class in `EntryClass` (a class or a list), so
    an alias `B = A` registers "A", and `from x import A as B` registers "A" too."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return _entry_classes_by_text(source, exc)
    module = _ModuleNames()
    for stmt in module_statements(tree.body):
        module.read(stmt)
    if module.entry is None:
        return [], []
    names: set[str] = set()
    problems: list[str] = []
    for node in [module.entry, *module.extra_entries]:
        for element in module.elements(node):
            resolved = module.resolve(element, frozenset())
            if resolved is None:
                fallback = element.id if isinstance(element, ast.Name) else None
                problems.append(
                    f"EntryClass element {ast.unparse(element)!r} not resolved to a class"
                    + (f"; kept as {fallback!r}" if fallback else "; skipped")
                )
                if fallback:
                    names.add(fallback)
            else:
                names.add(resolved)
    return sorted(names), problems


class _ModuleNames:
    """What a model module's top-level statements bind: its classes, other assignments,
    names imported from elsewhere, and the value(s) given to ``EntryClass``."""

    def __init__(self) -> None:
        self.classes: set[str] = set()
        self.bindings: dict[str, ast.AST] = {}
        self.imported: dict[str, str] = {}
        self.entry: ast.AST | None = None
        self.extra_entries: list[ast.AST] = []

    def read(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.ClassDef):
            self.classes.add(stmt.name)
            self.bindings.pop(stmt.name, None)
            self.imported.pop(stmt.name, None)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                self.imported[alias.asname or alias.name] = alias.name
                self.bindings.pop(alias.asname or alias.name, None)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    self._assign(target.id, stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            self._assign(stmt.target.id, stmt.value)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            if stmt.target.id == "EntryClass" and isinstance(stmt.op, ast.Add):
                self.extra_entries.append(stmt.value)
        elif _is_entry_append(stmt):
            call = stmt.value  # type: ignore[attr-defined]
            self.extra_entries.append(
                call.args[0] if call.func.attr == "extend" else ast.List(elts=[call.args[0]], ctx=ast.Load())
            )

    def _assign(self, name: str, value: ast.AST) -> None:
        if name == "EntryClass":
            self.entry, self.extra_entries = value, []
        else:
            self.bindings[name] = value

    def resolve(self, node: ast.AST, seen: frozenset[str]) -> str | None:
        """The ``__name__`` of the class ``node`` evaluates to, or None."""
        if isinstance(node, ast.Name):
            name = node.id
            if name in seen:
                return None
            if name in self.bindings:
                return self.resolve(self.bindings[name], seen | {name})
            if name in self.classes:
                return name
            return self.imported.get(name)
        if isinstance(node, ast.Attribute):
            # `module.ClassName`: the class keeps its own name.
            return node.attr
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "type"
            and len(node.args) == 3
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            return node.args[0].value
        return None

    def elements(self, node: ast.AST) -> list[ast.AST]:
        """The elements of a list, tuple, sum of them or name bound to one; else [node]."""
        if isinstance(node, (ast.List, ast.Tuple)):
            out: list[ast.AST] = []
            for element in node.elts:
                out.extend(self.elements(element.value) if isinstance(element, ast.Starred) else [element])
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.elements(node.left) + self.elements(node.right)
        if isinstance(node, ast.Name) and isinstance(self.bindings.get(node.id), (ast.List, ast.Tuple, ast.BinOp)):
            return self.elements(self.bindings[node.id])
        return [node]


def _is_entry_append(stmt: ast.stmt) -> bool:
    """``EntryClass.append(X)`` or ``EntryClass.extend(X)``."""
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Attribute)
        and isinstance(stmt.value.func.value, ast.Name)
        and stmt.value.func.value.id == "EntryClass"
        and stmt.value.func.attr in ("append", "extend")
        and len(stmt.value.args) == 1
    )


def _entry_classes_by_text(source: str, exc: SyntaxError) -> tuple[list[str], list[str]]:
    """Fallback for a file this Python cannot parse (syntax newer than the interpreter):
    the names written in the `EntryClass = ...` statement, unresolved."""
    match = re.search(r"^EntryClass\s*=\s*(\[[^\]]*\]|[A-Za-z_][A-Za-z0-9_]*)", source, re.MULTILINE)
    problem = f"not parsed by Python {sys.version_info[0]}.{sys.version_info[1]} ({exc.msg}, line {exc.lineno})"
    if not match:
        return [], [problem + "; no EntryClass found by text"]
    names = sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", match.group(1))))
    return names, [problem + f"; EntryClass names taken as written: {', '.join(names)}"]


def parse_metadata(text: str) -> tuple[str, str, tuple[str, ...]]:
    """(version, requires_python, requires_dist) from a METADATA file's text."""
    message = email.parser.Parser().parsestr(text, headersonly=True)
    version = message.get("Version") or ""
    return version, message.get("Requires-Python") or "", tuple(message.get_all("Requires-Dist") or ())


def read_installation(site_dir: Path) -> SglangInstall | None:
    """The SGLang installed under ``site_dir`` (a site-packages folder), or None."""
    metas = sorted(site_dir.glob("sglang-*.dist-info/METADATA"))
    if not metas:
        return None
    version, requires_python, requires_dist = parse_metadata(metas[-1].read_text(encoding="utf-8", errors="replace"))
    models_dir = site_dir / "sglang" / "srt" / "models"
    if not models_dir.is_dir():
        raise UsageError(
            f"{site_dir}: sglang {version} is listed but {models_dir} is missing",
            hint="the installation is incomplete: reinstall sglang",
        )
    classes: set[str] = set()
    for module in sorted(models_dir.glob("*.py")):
        # utf-8-sig: some model files start with a byte-order mark (0.5.11's qwen2_classification.py)
        names, _problems = parse_entry_classes(module.read_text(encoding="utf-8-sig", errors="replace"))
        classes.update(names)
    return SglangInstall(
        version=version,
        requires_python=requires_python,
        requires_dist=requires_dist,
        architectures=frozenset(classes),
        location=str(site_dir),
    )
