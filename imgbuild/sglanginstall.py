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
from dataclasses import dataclass
from pathlib import Path

from imgbuild.errors import UsageError


@dataclass(frozen=True)
class SglangInstall:
    version: str
    requires_python: str
    requires_dist: tuple[str, ...]
    architectures: frozenset[str]
    location: str


def entry_classes(source: str, *, filename: str = "<model>") -> list[str]:
    """Names bound to ``EntryClass`` in one model module: ``X`` or ``[X, Y]``."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if value is None or not any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in targets):
            continue
        items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        for item in items:
            if isinstance(item, ast.Name):
                names.append(item.id)
            elif isinstance(item, ast.Attribute):
                names.append(item.attr)
    return names


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
        classes.update(entry_classes(module.read_text(encoding="utf-8", errors="replace"), filename=str(module)))
    return SglangInstall(
        version=version,
        requires_python=requires_python,
        requires_dist=requires_dist,
        architectures=frozenset(classes),
        location=str(site_dir),
    )
