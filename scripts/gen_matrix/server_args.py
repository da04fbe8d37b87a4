"""The command-line flags of sglang/srt/server_args.py, read statically: its
add_argument(...) calls and (0.5.14+) the ServerArgs fields that
arg_groups/arg_utils.py:add_cli_args_from_dataclass turns into flags."""

from __future__ import annotations

import ast
import sys
from typing import Any

from imgbuild.knowledge.sglanginstall import module_statements as _module_statements

from .ast_eval import ClassRef, Env, INFINITY, MISSING, Modules, Unresolved, base_classes, dotted_name, expr_text, field_default_of, function_env, iterable_of, jsonable

# argparse `type=` callables and the value type they stand for.
ARG_TYPES = {
    "int": "int",
    "float": "float",
    "str": "str",
    "nullable_str": "str",
    "human_readable_int": "int",  # sglang/srt/utils: "32k" -> 32768
    "parse_cuda_graph_backend_arg": "str",  # model_executor/cuda_graph_config.py (0.5.23)
    "parse_cuda_graph_config_arg": "json",  # idem: json.loads of a dict
    "json.loads": "json",
    "json_list_type": "json",
    "bool": "bool",
    "str2bool": "bool",
}


# argparse's nargs constants (argparse.OPTIONAL is "?", ...).
ARGPARSE_NARGS = {"OPTIONAL": "?", "ZERO_OR_MORE": "*", "ONE_OR_MORE": "+", "REMAINDER": "..."}


SERVER_ARGS_MODULE = "sglang.srt.server_args"


def _text_of(node: ast.AST | None, env: Env, before: tuple[int, int]) -> str:
    """Best-effort text of a help= argument (f-strings keep their literal parts)."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text_of(v, env, before) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _text_of(node.left, env, before) + _text_of(node.right, env, before)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _text_of(node.func.value, env, before)
    try:
        value = env.eval(node, before)
    except Unresolved:
        return ""
    return value if isinstance(value, str) else ""


def _type_name(node: ast.AST, problems: list[str], where: str) -> str | None:
    dotted = dotted_name(node)
    arg_type = ARG_TYPES.get(dotted or "")
    if arg_type is None:
        problems.append(f"{where}: type={expr_text(node)} kept as null")
    return arg_type


def _action_name(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    dotted = dotted_name(node)
    return dotted.split(".")[-1] if dotted else expr_text(node)


def _nargs(node: ast.AST, env: Env, problems: list[str], where: str) -> str | int | None:
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int))):
        return node.value
    dotted = dotted_name(node) or ""
    nargs = ARGPARSE_NARGS.get(dotted.split(".")[-1])
    if nargs is None:
        try:
            value = env.eval(node)
            if value is None or isinstance(value, (str, int)):
                return value
        except Unresolved:
            pass
        problems.append(f"{where}: nargs={expr_text(node)} not resolved")
    return nargs


def _choices(node: ast.AST, env: Env, before: tuple[int, int], problems: list[str], where: str) -> list[Any] | None:
    try:
        return jsonable(iterable_of(env.eval(node, before)))
    except Unresolved:
        problems.append(f"{where}: choices={expr_text(node)} not resolved")
        return None


def _is_deprecated(help_text: str, action: str, deprecated_kw: ast.AST | None) -> bool:
    return (
        "deprecat" in help_text.lower()
        or "deprecat" in action.lower()
        or (isinstance(deprecated_kw, ast.Constant) and deprecated_kw.value is True)
    )


def _spec(flags: list[str], dest: str, action: str, arg_type: str | None, choices: list[Any] | None,
          default: Any, nargs: str | int | None, deprecated: bool) -> dict[str, Any]:
    if action == "BooleanOptionalAction":
        # argparse.BooleanOptionalAction registers `--no-x` beside each `--x`.
        flags = [out for flag in flags for out in ([flag, "--no-" + flag[2:]] if flag.startswith("--") else [flag])]
    return {
        "flags": flags,
        "dest": dest,
        "action": action,
        "type": arg_type,
        "choices": choices,
        "default": default,
        "nargs": nargs,
        "deprecated": deprecated,
    }


def _call_default(
    keywords: dict[str, ast.AST], action: str, env: Env, before: tuple[int, int], declared: dict[str, Any]
) -> Any:
    """The default= of an add_argument call; `ServerArgs.x` and (0.5.20+)
    `_declared_default("x")` are the declared field's default."""
    if "default" not in keywords:
        return {"store_true": False, "store_false": True}.get(action)
    node = keywords["default"]
    try:
        return jsonable(env.eval(node, before))
    except Unresolved:
        pass
    dotted = dotted_name(node) or ""
    field_name = None
    if dotted.startswith("ServerArgs.") and dotted.count(".") == 1:
        field_name = dotted.split(".", 1)[1]
    elif (
        isinstance(node, ast.Call)
        and dotted_name(node.func) == "_declared_default"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
    ):
        field_name = str(node.args[0].value)
    if field_name is not None and field_name in declared:
        try:
            return jsonable(declared[field_name])
        except Unresolved:
            return None
    return None


def _spec_from_call(
    call: ast.Call,
    env: Env,
    before: tuple[int, int],
    declared: dict[str, Any],
    problems: list[str],
) -> dict[str, Any] | None:
    line = call.lineno
    flags: list[str] = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            flags.append(arg.value)
        else:
            problems.append(f"sglang/srt/server_args.py line {line}: add_argument with non-literal names skipped")
            return None
    if not flags:
        problems.append(f"sglang/srt/server_args.py line {line}: add_argument without names skipped")
        return None
    where = f"sglang/srt/server_args.py line {line}: {flags[0]}"
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if any(k.arg is None for k in call.keywords):
        problems.append(f"{where}: **kwargs not resolved")

    action = _action_name(keywords["action"]) if "action" in keywords else "store"
    arg_type = _type_name(keywords["type"], problems, where) if "type" in keywords else None
    choices = _choices(keywords["choices"], env, before, problems, where) if "choices" in keywords else None

    default = _call_default(keywords, action, env, before, declared)

    nargs = _nargs(keywords["nargs"], env, problems, where) if "nargs" in keywords else None

    if "dest" in keywords and isinstance(keywords["dest"], ast.Constant):
        dest = str(keywords["dest"].value)
    else:
        # argparse: the first long option, else the first short one, without dashes.
        long_flags = [f for f in flags if f.startswith("--")]
        first = long_flags[0] if long_flags else flags[0]
        dest = first.lstrip("-").replace("-", "_")

    help_text = _text_of(keywords.get("help"), env, before)
    deprecated = _is_deprecated(help_text, action, keywords.get("deprecated"))
    return _spec(flags, dest, action, arg_type, choices, default, nargs, deprecated)


def _annotation_node(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return node
    return node


def _subscript_of(node: ast.AST, names: tuple[str, ...]) -> list[ast.AST] | None:
    """The arguments of `Name[...]` when Name (or typing.Name) is one of names."""
    node = _annotation_node(node)
    if not isinstance(node, ast.Subscript):
        return None
    dotted = dotted_name(node.value) or ""
    if dotted.split(".")[-1] not in names:
        return None
    inner = node.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def _unwrap_optional(node: ast.AST) -> ast.AST:
    node = _annotation_node(node)
    args = _subscript_of(node, ("Optional",))
    if args is not None and len(args) == 1:
        return _annotation_node(args[0])
    members: list[ast.AST] | None = _subscript_of(node, ("Union",))
    if members is None and isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        members = []
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.BinOp) and isinstance(item.op, ast.BitOr):
                stack.extend([item.right, item.left])
            else:
                members.append(item)
    if members is not None:
        non_none = [m for m in members if not (isinstance(m, ast.Constant) and m.value is None) and dotted_name(m) != "None"]
        if len(non_none) == 1:
            return _annotation_node(non_none[0])
    return node


def _infer_type(node: ast.AST | type | None) -> str:
    """arg_utils._infer_type_func: str, int and float map to themselves, anything else to str."""
    name = node.__name__ if isinstance(node, type) else (dotted_name(node) if node is not None else None)
    return name if name in ("str", "int", "float") else "str"


def _declared_fields(env: Env, class_name: str) -> list[tuple[str, ast.AST, ast.AST | None, Env, int]]:
    """(name, annotation, default node, its module, line) of each field of the class the
    CLI is derived from: in 0.5.14-0.5.19 ServerArgs itself, from 0.5.20 also the
    namespace classes that `collect_input_fields(...)` gathers into it."""
    classes: list[ClassRef] = []
    tree_body = env.body
    for stmt in _module_statements(tree_body):
        for node in ast.walk(stmt) if isinstance(stmt, (ast.Assign, ast.Expr)) else []:
            if isinstance(node, ast.Call) and dotted_name(node.func) == "collect_input_fields" and node.args:
                try:
                    sources = env.eval(node.args[0])
                except Unresolved:
                    continue
                classes.extend(s for s in iterable_of(sources) if isinstance(s, ClassRef))
    own = env.class_named(class_name)
    if own is not None:
        classes.append(own)
    fields: dict[str, tuple[str, ast.AST, ast.AST | None, Env, int]] = {}

    def collect(ref: ClassRef, seen: frozenset[int]) -> None:
        if id(ref.node) in seen:
            return
        for parent in base_classes(ref):
            collect(parent, seen | {id(ref.node)})
        for stmt in ref.node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if _subscript_of(stmt.annotation, ("ClassVar",)) is not None:
                    continue
                fields[stmt.target.id] = (stmt.target.id, stmt.annotation, stmt.value, ref.env, stmt.lineno)

    for ref in classes:
        collect(ref, frozenset())
    return list(fields.values())


def _spec_from_field(
    name: str, annotation: ast.AST, value: ast.AST | None, env: Env, line: int, problems: list[str]
) -> dict[str, Any] | None:
    """The FLAGSPEC of one declared field, or None when it is no flag.

    Over 60 lines on purpose: its branches follow add_cli_args_from_dataclass one for
    one (explicit action, Literal, list, bool, plain type), in that function's order, so
    the two read side by side; split, the order that decides a field's flag is lost."""
    args = _subscript_of(annotation, ("A", "Annotated"))
    if not args:
        return None
    raw_type, metas = args[0], args[1:]
    meta: dict[str, ast.AST] | None = None
    for item in metas:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            meta = {"help": item}
            break
        if isinstance(item, ast.Call) and (dotted_name(item.func) or "").split(".")[-1] == "Arg":
            meta = {k.arg: k.value for k in item.keywords if k.arg}
            break
    if meta is None:
        return None
    where = f"{env.module.replace('.', '/')}.py line {line}: field {name}"

    def value_of(key: str, fallback: Any = None) -> Any:
        if key not in meta:
            return fallback
        try:
            return env.eval(meta[key])
        except Unresolved:
            problems.append(f"{where}: Arg({key}={expr_text(meta[key])}) not resolved")
            return fallback

    if value_of("no_cli", False) is True:
        return None
    cli_name = value_of("cli_name") or "--" + name.replace("_", "-")
    aliases = value_of("aliases") or []
    flags = [cli_name, *[a for a in aliases if isinstance(a, str)]]
    try:
        default = field_default_of(env, value)
    except Unresolved:
        problems.append(f"{where}: default {expr_text(value) if value else ''} not resolved")
        default = None
    has_default = default is not MISSING
    try:
        default_json = jsonable(default) if has_default else None
    except Unresolved:
        default_json = None
    help_text = _text_of(meta.get("help"), env, INFINITY)
    type_parser = meta.get("type_parser")
    parser_type = None
    if type_parser is not None and not (isinstance(type_parser, ast.Constant) and type_parser.value is None):
        parser_type = _type_name(type_parser, problems, where)
    else:
        type_parser = None

    def choices_of() -> list[Any] | None:
        if "choices" not in meta:
            return None
        found = _choices(meta["choices"], env, INFINITY, problems, where)
        return found or None

    action_node = meta.get("action")
    if action_node is not None and not (isinstance(action_node, ast.Constant) and action_node.value is None):
        action = _action_name(action_node)
        extra = value_of("action_kwargs") or {}
        extra = extra if isinstance(extra, dict) else {}
        arg_type = extra.get("type") if isinstance(extra.get("type"), str) else None
        try:
            choices = jsonable(extra["choices"]) if "choices" in extra else None
        except Unresolved:
            choices = None
        nargs = extra.get("nargs") if isinstance(extra.get("nargs"), (str, int)) else None
        if not has_default:
            default_json = False if action == "store_true" else (True if action == "store_false" else None)
        return _spec(flags, name, action, arg_type, choices, default_json, nargs,
                     _is_deprecated(help_text, action, None))

    inner = _unwrap_optional(raw_type)
    literal_args = _subscript_of(inner, ("Literal",))
    if literal_args is not None:
        values: list[Any] = []
        for item in literal_args:
            try:
                values.append(env.eval(item))
            except Unresolved:
                problems.append(f"{where}: Literal value {expr_text(item)} not resolved")
        choices = choices_of() or jsonable(values)
        arg_type = parser_type if type_parser is not None else _infer_type(type(values[0]) if values else str)
        return _spec(flags, name, "store", arg_type, choices, default_json, None,
                     _is_deprecated(help_text, "store", None))

    list_args = _subscript_of(inner, ("list", "List"))
    is_list = list_args is not None or dotted_name(_annotation_node(inner)) in ("list", "List")
    if is_list and type_parser is None:
        element = list_args[0] if list_args else None
        nargs = value_of("nargs") or "+"
        return _spec(flags, name, "store", _infer_type(element), choices_of(), default_json, nargs,
                     _is_deprecated(help_text, "store", None))

    if dotted_name(_annotation_node(inner)) == "bool":
        return _spec(flags, name, "store_true", None, None, default_json if has_default else False, None,
                     _is_deprecated(help_text, "store_true", None))

    arg_type = parser_type if type_parser is not None else _infer_type(_annotation_node(inner))
    return _spec(flags, name, "store", arg_type, choices_of(), default_json, value_of("nargs") or None,
                 _is_deprecated(help_text, "store", None))


def _declared_defaults(fields: list[tuple[str, ast.AST, ast.AST | None, Env, int]]) -> dict[str, Any]:
    """The statically known defaults of the declared fields, by field name."""
    defaults: dict[str, Any] = {}
    for name, _annotation, value, owner, _line in fields:
        try:
            default = field_default_of(owner, value)
        except Unresolved:
            continue
        if default is not MISSING:
            defaults[name] = default
    return defaults


def _call_places(env: Env, tree: ast.Module) -> dict[int, tuple[Env, tuple[int, int]]]:
    """Where each call is evaluated (by id of its node): its innermost function's local
    names, and only what that function bound before the statement holding the call."""
    places: dict[int, tuple[Env, tuple[int, int]]] = {}
    for index, stmt in enumerate(env.body):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                places[id(node)] = (env, (index, 0))
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument" for n in ast.walk(func)):
            continue
        local = function_env(env, func)
        for index, stmt in enumerate(func.body):
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call):
                    places[id(node)] = (local, (index, 0))
    return places


def parse_server_args_report(
    source: str, modules: Any = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every command-line flag a server_args.py declares, as FLAGSPEC dicts in source
    order (see parse_server_args), with notes on what could not be resolved statically.

    modules: the wheel's other files by path (a mapping or a callable path -> source or
    None), used to resolve imported choice lists and, from 0.5.20, the field classes."""
    if modules is None:
        read = lambda path: None  # noqa: E731
    elif callable(modules):
        read = modules
    else:
        read = modules.get
    own_path = SERVER_ARGS_MODULE.replace(".", "/") + ".py"
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return [], [f"not parsed by Python {sys.version_info[0]}.{sys.version_info[1]}: {exc.msg}, line {exc.lineno}"]
    library = Modules(lambda path: source if path == own_path else read(path))
    env = library.env(SERVER_ARGS_MODULE)
    assert env is not None
    tree = ast.Module(body=env.body, type_ignores=[])
    problems: list[str] = []
    found: list[tuple[tuple[int, int, int], dict[str, Any]]] = []

    places = _call_places(env, tree)

    declared_cache: dict[str, list[tuple[str, ast.AST, ast.AST | None, Env, int]]] = {}

    def declared_fields(class_name: str) -> list[tuple[str, ast.AST, ast.AST | None, Env, int]]:
        if class_name not in declared_cache:
            declared_cache[class_name] = _declared_fields(env, class_name)
        return declared_cache[class_name]

    declared_defaults: dict[str, Any] = {}
    if any(isinstance(n, ast.Call) and dotted_name(n.func) == "add_cli_args_from_dataclass" for n in ast.walk(tree)) or "_declared_default" in source:
        declared_defaults = _declared_defaults(declared_fields("ServerArgs"))

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted_name(node.func) or ""
        if isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            call_env, before = places.get(id(node), (env, INFINITY))
            spec = _spec_from_call(node, call_env, before, declared_defaults, problems)
            if spec is not None:
                found.append(((node.lineno, node.col_offset, 0), spec))
        elif name.split(".")[-1] == "add_cli_args_from_dataclass" and len(node.args) >= 2:
            class_name = dotted_name(node.args[1]) or ""
            fields = declared_fields(class_name)
            if not fields:
                problems.append(f"line {node.lineno}: add_cli_args_from_dataclass({class_name}): no fields found")
            for order, (field_name, annotation, value, owner, line) in enumerate(fields):
                spec = _spec_from_field(field_name, annotation, value, owner, line, problems)
                if spec is not None:
                    found.append(((node.lineno, node.col_offset, order), spec))
    found.sort(key=lambda item: item[0])
    return [spec for _key, spec in found], problems


def parse_server_args(source: str, modules: Any = None) -> list[dict[str, Any]]:
    """Every flag a server_args.py source declares, in source order, as
    {"flags", "dest", "action", "type", "choices", "default", "nargs", "deprecated"}:
    its add_argument(...) calls and (0.5.14+) the fields add_cli_args_from_dataclass
    turns into flags. `default=ServerArgs.x` resolves to the field's literal default,
    `choices=NAME` to a literal list bound at module level (here or in an imported
    module of the wheel, when `modules` holds it); anything else unresolved is null."""
    return parse_server_args_report(source, modules)[0]
