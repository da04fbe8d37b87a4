"""Static evaluation of a wheel's Python sources (ast, never imported): literals and
the module constants, class attributes and no-argument functions they name, across
the wheel's modules."""

from __future__ import annotations

import ast
import json
from typing import Any

from imgbuild.knowledge.sglanginstall import module_statements as _module_statements


class Unresolved(Exception):
    """An expression that is not a literal this script can evaluate statically."""


def expr_text(node: ast.AST) -> str:
    return ast.unparse(node)


def dotted_name(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


class _Opaque:
    """A value that exists but is no literal (a class in a dict of parsers, ...)."""

    def __repr__(self) -> str:
        return "<opaque>"


_OPAQUE = _Opaque()


MISSING = object()  # a dataclass field without a default


INFINITY = (1 << 62, 0)


_ARITHMETIC = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b if abs(b) < 64 else 1 / 0,
    ast.LShift: lambda a, b: a << b if 0 <= b < 64 else 1 / 0,
}


class ClassRef:
    def __init__(self, env: "Env", node: ast.ClassDef) -> None:
        self.env, self.node = env, node


class _FuncRef:
    def __init__(self, env: "Env", node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.env, self.node = env, node


class Modules:
    """The Python files of one wheel by path, parsed into environments on demand."""

    def __init__(self, read: Any) -> None:
        self._read = read
        self._envs: dict[str, Env | None] = {}

    def env(self, module: str) -> "Env | None":
        if module not in self._envs:
            self._envs[module] = None
            base = module.replace(".", "/")
            for path, is_package in ((base + ".py", False), (base + "/__init__.py", True)):
                source = self._read(path)
                if source is None:
                    continue
                try:
                    tree = ast.parse(source)
                except SyntaxError:
                    break
                package = module if is_package else module.rpartition(".")[0]
                self._envs[module] = Env(self, module, package, tree.body, None)
                break
        return self._envs[module]


class Env:
    """Names bound by a module (or a function body) and their values where static.

    Bindings are kept in source order, so `X = X + [...]` and `X.append(...)` see the
    earlier value; a lookup from statement k sees only what was bound before it."""

    def __init__(self, modules: Modules, module: str, package: str, body: list[ast.stmt], parent: "Env | None") -> None:
        self.modules, self.module, self.package, self.parent = modules, module, package, parent
        self.body = body
        self.bindings: dict[str, list[tuple[tuple[int, int], str, Any]]] = {}
        self._active: set[tuple[str, tuple[int, int]]] = set()
        self._cache: dict[tuple[str, tuple[int, int]], Any] = {}
        self.stars: list[str] = []
        seq = 0
        for index, top in enumerate(body):
            statements = _module_statements([top]) if parent is None else [top]
            for stmt in statements:
                seq += 1
                if stmt is not top and isinstance(top, ast.If) and not isinstance(
                    stmt, (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
                ):
                    # A value set under a module-level `if` depends on the machine or the
                    # environment (0.5.13: `if envs.SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE.get():
                    # SAMPLING_BACKEND_CHOICES.add(...)`): keep the unconditional value.
                    continue
                self._bind((index, seq), stmt)

    def _add(self, name: str, position: tuple[int, int], kind: str, payload: Any) -> None:
        self.bindings.setdefault(name, []).append((position, kind, payload))

    def _bind(self, position: tuple[int, int], stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.ClassDef):
            self._add(stmt.name, position, "class", stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._add(stmt.name, position, "func", stmt)
        elif isinstance(stmt, ast.ImportFrom):
            if stmt.level:
                parts = self.package.split(".")
                base = ".".join(parts[: len(parts) - (stmt.level - 1)] if stmt.level > 1 else parts)
                source = f"{base}.{stmt.module}" if stmt.module else base
            else:
                source = stmt.module or ""
            for alias in stmt.names:
                if alias.name == "*":
                    # `from sglang.srt.utils.common import *` (sglang/srt/utils/__init__.py)
                    self.stars.append(source)
                else:
                    self._add(alias.asname or alias.name, position, "import", (source, alias.name))
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                self._add(alias.asname or alias.name.split(".")[0], position, "unknown", None)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is None:
                return
            for target in targets:
                if isinstance(target, ast.Name):
                    self._add(target.id, position, "expr", stmt.value)
                else:
                    for node in ast.walk(target):
                        if isinstance(node, ast.Name):
                            self._add(node.id, position, "unknown", None)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            kind = "aug" if isinstance(stmt.op, (ast.Add, ast.BitOr)) else "unknown"
            self._add(stmt.target.id, position, kind, stmt.value)
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute)
            and isinstance(stmt.value.func.value, ast.Name)
            and stmt.value.func.attr in ("append", "extend", "add", "update")
            and len(stmt.value.args) == 1
            and not stmt.value.keywords
        ):
            self._add(stmt.value.func.value.id, position, stmt.value.func.attr, stmt.value.args[0])

    def class_named(self, name: str) -> ClassRef | None:
        for _position, kind, payload in reversed(self.bindings.get(name, [])):
            if kind == "class":
                return ClassRef(self, payload)
        return None

    def lookup(self, name: str, before: tuple[int, int] = INFINITY) -> Any:
        entries = [b for b in self.bindings.get(name, []) if b[0] < before]
        if not entries:
            for source in reversed(self.stars):
                env = self.modules.env(source)
                if env is not None and env is not self and (name in env.bindings or env.stars):
                    try:
                        return env.lookup(name)
                    except Unresolved:
                        continue
            if self.parent is not None:
                return self.parent.lookup(name)
            raise Unresolved
        position, kind, payload = entries[-1]
        key = (name, position)
        if key in self._cache:
            return self._cache[key]
        if key in self._active:
            raise Unresolved
        self._active.add(key)
        try:
            value = self._value(name, position, kind, payload)
        finally:
            self._active.discard(key)
        self._cache[key] = value
        return value

    def _value(self, name: str, position: tuple[int, int], kind: str, payload: Any) -> Any:
        if kind == "class":
            return ClassRef(self, payload)
        if kind == "func":
            return _FuncRef(self, payload)
        if kind == "import":
            source, attr = payload
            env = self.modules.env(source)
            if env is None:
                raise Unresolved
            return env.lookup(attr)
        if kind == "expr":
            return self.eval(payload, position)
        if kind == "const":
            return payload
        if kind in ("aug", "append", "extend", "add", "update"):
            base = self.lookup(name, position)
            value = self.eval(payload, position)
            if kind == "append" and isinstance(base, list):
                return [*base, value]
            if kind in ("aug", "extend") and isinstance(base, (list, tuple)):
                return [*base, *iterable_of(value)]
            if kind in ("add", "aug", "update") and isinstance(base, frozenset):
                return base | frozenset([value] if kind == "add" else iterable_of(value))
            if kind in ("aug", "update") and isinstance(base, dict) and isinstance(value, dict):
                return {**base, **value}
            raise Unresolved
        raise Unresolved

    def eval(self, node: ast.AST, before: tuple[int, int] = INFINITY) -> Any:
        """The value of an expression that only involves literals and static names.

        Over 60 lines on purpose: one flat dispatch on the node type, one short branch per
        kind of expression; split, the reader has to chase each kind to a helper."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.eval(node.operand, before)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return -value if isinstance(node.op, ast.USub) else value
            raise Unresolved
        if isinstance(node, ast.Name):
            return self.lookup(node.id, before)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items: list[Any] = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    items.extend(iterable_of(self.eval(element.value, before)))
                else:
                    items.append(self.eval(element, before))
            if isinstance(node, ast.Set):
                return frozenset(items)
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for key, value in zip(node.keys, node.values):
                if key is None:
                    mapping = self.eval(value, before)
                    if not isinstance(mapping, dict):
                        raise Unresolved
                    out.update(mapping)
                    continue
                try:
                    out[self.eval(key, before)] = self.eval(value, before)
                except Unresolved:
                    out[self.eval(key, before)] = _OPAQUE
            return out
        if isinstance(node, ast.BinOp):
            left, right = self.eval(node.left, before), self.eval(node.right, before)
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right))
            if isinstance(node.op, ast.Add):
                if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
                    return [*left, *right]
                if isinstance(left, str) and isinstance(right, str):
                    return left + right
            elif isinstance(node.op, ast.BitOr) and isinstance(left, frozenset) and isinstance(right, frozenset):
                return left | right
            if numbers and isinstance(node.op, tuple(_ARITHMETIC)):
                try:
                    return _ARITHMETIC[type(node.op)](left, right)
                except (ArithmeticError, ValueError):
                    raise Unresolved from None
            raise Unresolved
        if isinstance(node, ast.Subscript):
            base = self.eval(node.value, before)
            key = self.eval(node.slice, before)
            try:
                if isinstance(base, (list, tuple, str)) and isinstance(key, int) and not isinstance(key, bool):
                    return base[key]
                if isinstance(base, dict) and not isinstance(base.get(key, _OPAQUE), _Opaque):
                    return base[key]
            except (IndexError, KeyError, TypeError):
                pass
            raise Unresolved
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, before)
            if isinstance(base, ClassRef):
                return _class_attribute(base, node.attr)
            if isinstance(base, _EnumMember) and node.attr in ("name", "value"):
                return getattr(base, node.attr)
            raise Unresolved
        if isinstance(node, (ast.ListComp, ast.SetComp)) and len(node.generators) == 1:
            generator = node.generators[0]
            if generator.ifs or generator.is_async or not isinstance(generator.target, ast.Name):
                raise Unresolved
            results = []
            for item in iterable_of(self.eval(generator.iter, before)):
                scope = Env(self.modules, self.module, self.package, [], self)
                scope._add(generator.target.id, (0, 0), "const", item)
                results.append(scope.eval(node.elt))
            return results if isinstance(node, ast.ListComp) else frozenset(results)
        if isinstance(node, ast.Call):
            return self._call(node, before)
        raise Unresolved

    def _call(self, node: ast.Call, before: tuple[int, int]) -> Any:
        func = node.func
        if node.keywords or len(node.args) > 1:
            raise Unresolved
        if isinstance(func, ast.Name) and func.id in ("list", "tuple", "sorted", "set", "frozenset"):
            if not node.args:
                return {"list": [], "sorted": [], "tuple": ()}.get(func.id, frozenset())
            items = iterable_of(self.eval(node.args[0], before))
            if func.id == "sorted":
                return sorted(items, key=repr)
            if func.id in ("set", "frozenset"):
                return frozenset(items)
            return items if func.id == "list" else tuple(items)
        if isinstance(func, ast.Attribute) and func.attr in ("lower", "upper", "strip") and not node.args:
            text = self.eval(func.value, before)
            if isinstance(text, str):
                return getattr(text, func.attr)()
            raise Unresolved
        if isinstance(func, ast.Attribute) and func.attr in ("keys", "values", "copy") and not node.args:
            mapping = self.eval(func.value, before)
            if isinstance(mapping, dict):
                return list(mapping) if func.attr == "keys" else (
                    list(mapping.values()) if func.attr == "values" else dict(mapping)
                )
            if func.attr == "copy" and isinstance(mapping, (list, frozenset)):
                return mapping
            raise Unresolved
        if not node.args:
            target = self.eval(func, before)
            if isinstance(target, _FuncRef):
                return _call_function(target)
        raise Unresolved


def function_env(env: Env, func: ast.FunctionDef | ast.AsyncFunctionDef) -> Env:
    """The local names of a function body; its parameters are unknown values that hide
    module names of the same spelling."""
    local = Env(env.modules, env.module, env.package, func.body, env)
    arguments = func.args
    params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    for param in params:
        if param is not None:
            local._add(param.arg, (-1, 0), "unknown", None)
    return local


def _call_function(ref: _FuncRef) -> Any:
    """The value a no-argument function returns, read from its last top-level return
    (e.g. `_reasoning_parser_choices()` in 0.5.20+ returns a name list it imports)."""
    body = ref.node.body
    returns = [i for i, stmt in enumerate(body) if isinstance(stmt, ast.Return) and stmt.value is not None]
    if not returns or ref.node.args.args or ref.node.args.posonlyargs:
        raise Unresolved
    local = function_env(ref.env, ref.node)
    index = returns[-1]
    return local.eval(body[index].value, (index, 0))


def field_default_of(env: Env, value: ast.AST | None) -> Any:
    """A dataclass/msgspec field default: the literal, `field(default=...)`, or
    `field(default_factory=list)`; MISSING when there is none."""
    if value is None:
        return MISSING
    if isinstance(value, ast.Call) and (dotted_name(value.func) or "").split(".")[-1] == "field":
        keywords = {k.arg: k.value for k in value.keywords if k.arg}
        if "default" in keywords:
            return env.eval(keywords["default"])
        factory = keywords.get("default_factory")
        if factory is None:
            return MISSING
        if isinstance(factory, ast.Name) and factory.id in ("list", "dict", "tuple", "set", "frozenset"):
            return {"list": [], "dict": {}, "tuple": ()}.get(factory.id, frozenset())
        if isinstance(factory, ast.Lambda):
            return env.eval(factory.body)
        raise Unresolved
    return env.eval(value)


def base_classes(ref: ClassRef) -> list[ClassRef]:
    """The class's bases that resolve statically to classes, in order; the others are skipped."""
    bases = []
    for base in ref.node.bases:
        try:
            value = ref.env.eval(base)
        except Unresolved:
            continue
        if isinstance(value, ClassRef):
            bases.append(value)
    return bases


def _class_attribute(ref: ClassRef, attr: str) -> Any:
    """A class-level value: a dataclass field default, or a constant whose expression
    may use the names bound before it in the class body (`ALL = (FULL, DISABLED)`)."""
    body = ref.node.body
    for stmt in reversed(body):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == attr:
            value = field_default_of(ref.env, stmt.value)
            if value is MISSING:
                raise Unresolved
            return value
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in stmt.targets):
            local = Env(ref.env.modules, ref.env.module, ref.env.package, body, ref.env)
            return local.lookup(attr)
    for parent in base_classes(ref):
        return _class_attribute(parent, attr)
    raise Unresolved


class _EnumMember:
    def __init__(self, name: str, value: Any) -> None:
        self.name, self.value = name, value


def _enum_members(ref: ClassRef) -> list[_EnumMember]:
    """Members of an Enum subclass in definition order (iteration order of the enum)."""
    bases = {(dotted_name(b) or "").split(".")[-1] for b in ref.node.bases}
    if not bases & {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}:
        raise Unresolved
    local = Env(ref.env.modules, ref.env.module, ref.env.package, ref.node.body, ref.env)
    members = []
    for stmt in ref.node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if not name.startswith("_"):
                members.append(_EnumMember(name, local.lookup(name)))
    return members


def iterable_of(value: Any) -> list[Any]:
    if isinstance(value, ClassRef):
        return _enum_members(value)
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, frozenset):
        return sorted(value, key=repr)
    if isinstance(value, (list, tuple, str)):
        return list(value)
    raise Unresolved


def jsonable(value: Any) -> Any:
    if isinstance(value, _EnumMember):
        return jsonable(value.value)
    if isinstance(value, (_Opaque, ClassRef, _FuncRef)) or value is MISSING:
        raise Unresolved
    if isinstance(value, frozenset):
        return sorted((jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is Ellipsis:
        raise Unresolved
    return value
