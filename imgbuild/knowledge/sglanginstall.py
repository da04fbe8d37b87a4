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


# -- the import smoke: does the installation import, as the server does at start? ----------
# Run by the image build (dockerfiles/sglang.Dockerfile.tmpl, as import-smoke.py in the build
# context), by `check --python` in that interpreter and by `check --image` in a throwaway
# container. It needs no GPU: SGLang's accelerator check comes after these imports.

SMOKE_FILE = "import-smoke.py"
SMOKE_MARK = "imgbuild-smoke:"

# The modules `python -m sglang.launch_server` imports before it parses a flag (sglang/launch_server.py
# imports sglang.srt.server_args at the top). Its HTTP mode's sglang.srt.entrypoints.http_server is
# left out: it loads sgl_kernel, which needs the driver's libcuda.so.1 (sgl_kernel/load_utils.py),
# so it cannot import without a GPU. A module absent from a release is skipped.
SMOKE_MODULES = ("sglang", "sglang.srt.server_args", "sglang.launch_server")

IMPORT_SMOKE = r'''
import importlib, importlib.metadata as md, importlib.util, json, os, subprocess, sys, sysconfig, traceback
MODULES = %(modules)r
MARK = %(mark)r
SITES = sorted({os.path.realpath(p) for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])}, key=len, reverse=True)
try:
    OWNERS = md.packages_distributions()
except Exception:
    OWNERS = {}

def package_of(filename):
    path = os.path.realpath(filename)
    for site in SITES:
        if path.startswith(site + os.sep):
            top = os.path.relpath(path, site).split(os.sep)[0]
            top = top[:-3] if top.endswith(".py") else top
            dist = (OWNERS.get(top) or [top])[0]
            try:
                return dist.lower() + " " + md.version(dist)
            except md.PackageNotFoundError:
                return None
    return None

def failure(step, exc):
    packages = []
    seen = set()
    chain = []
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc)); chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    root = chain[0]
    for e in reversed(chain):
        for frame in traceback.extract_tb(e.__traceback__):
            p = package_of(frame.filename)
            if p and p not in packages:
                packages.append(p)
    return {"step": step, "root": traceback.format_exception_only(type(root), root)[-1].strip(),
            "missing_module": getattr(root, "name", None) if isinstance(root, ImportError) else None,
            "packages": packages}

def main():
    # Imports first: a missing module is a sharper root error than pip check's summary of it.
    steps = []
    for name in MODULES:
        try:
            if "." in name and importlib.util.find_spec(name) is None:
                continue
            importlib.import_module(name)
            steps.append("import " + name)
        except BaseException as exc:
            return steps, failure("import " + name, exc)
    if importlib.util.find_spec("pip") is not None:  # a venv made without pip has no pip check
        done = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
        steps.append("pip check")
        if done.returncode != 0:
            lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
            return steps, {"step": "pip check", "root": (lines or ["exit %%d" %% done.returncode])[0],
                           "missing_module": None, "packages": []}
    done = subprocess.run([sys.executable, "-m", "sglang.launch_server", "--help"], capture_output=True, text=True,
                          timeout=600)
    steps.append("python -m sglang.launch_server --help")
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        return steps, {"step": "python -m sglang.launch_server --help",
                       "root": (lines or ["exit %%d" %% done.returncode])[-1], "missing_module": None, "packages": []}
    return steps, None

steps, failed = main()
result = {"ok": failed is None, "steps": steps, "failure": failed, "python": sys.version.split()[0]}
if failed is None:
    print(MARK + " ok: " + "; ".join(steps), file=sys.stderr)
else:
    where = (" (in " + ", ".join(failed["packages"]) + ")") if failed["packages"] else ""
    print(MARK + " FAILED at " + failed["step"] + ": " + failed["root"] + where, file=sys.stderr)
print(json.dumps(result))
sys.exit(0 if failed is None else 1)
''' % {"modules": SMOKE_MODULES, "mark": SMOKE_MARK}


@dataclass(frozen=True)
class SmokeResult:
    """What the import smoke found: ``ok``, or the step that failed, its root error line,
    the packages in its traceback's frames (``kernels 0.17.2``) and the module that was missing."""

    ok: bool
    steps: tuple[str, ...]
    step: str | None = None
    root: str | None = None
    packages: tuple[str, ...] = ()
    missing_module: str | None = None

    def reason(self) -> str:
        """One line for a verdict or a build error."""
        if self.ok:
            return "the installation imports (" + "; ".join(self.steps) + ")"
        where = f" (in {', '.join(self.packages)})" if self.packages else ""
        return f"the installation cannot start the server: {self.step} fails: {self.root}{where}"

    def hint(self, engine: str | None = None) -> str:
        release = engine or next((p.split()[1] for p in self.packages if p.startswith("sglang ")), "ENGINE")
        if self.missing_module:
            return (f"module {self.missing_module!r} is not installed: install the whole lock "
                    f"(`imgbuild lock {release}` then uv pip install -r it), not sglang alone")
        others = [p for p in self.packages if not p.startswith("sglang ")]
        if others:
            return (f"the locked stack does not work together ({', '.join(others)}): lock as of the release "
                    f"(`imgbuild lock {release}`, the default, not --latest) or add a constraint for that "
                    "package to matrix.yaml's constraints:")
        return f"read the step's output above; lock as of the release with `imgbuild lock {release}`"


def parse_smoke_output(output: str, exit_code: int) -> SmokeResult:
    """The smoke's result from its output (the last JSON line); a smoke that died before it
    printed one is a failure with its last line as the root."""
    import json

    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            failed = data.get("failure") or {}
            return SmokeResult(
                ok=bool(data.get("ok")) and exit_code == 0, steps=tuple(data.get("steps") or ()),
                step=failed.get("step"), root=failed.get("root"), packages=tuple(failed.get("packages") or ()),
                missing_module=failed.get("missing_module"),
            )
    lines = [ln for ln in output.splitlines() if ln.strip()]
    return SmokeResult(ok=False, steps=(), step="the import smoke", root=(lines or [f"exit {exit_code}"])[-1])


def smoke_from_build_line(line: str) -> SmokeResult | None:
    """The smoke's summary line as a build log shows it (``imgbuild-smoke: FAILED at ...``), or None."""
    match = re.match(re.escape(SMOKE_MARK) + r" FAILED at (.+?): (.+?)(?: \(in ([^()]+)\))?$", line.strip())
    if not match:
        return None
    packages = tuple(p.strip() for p in (match.group(3) or "").split(",") if p.strip())
    missing = re.search(r"No module named '([^']+)'", match.group(2))
    return SmokeResult(ok=False, steps=(), step=match.group(1), root=match.group(2), packages=packages,
                       missing_module=missing.group(1) if missing else None)
