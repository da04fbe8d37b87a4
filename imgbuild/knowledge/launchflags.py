"""Launch flags, read the way SGLang's argparse reads them, into a typed LaunchConfig.

The flag table of each version comes from imgbuild/data/server_args.json
(imgbuild.knowledge.serverargs); this module only applies it: aliases (``--tp`` is
``--tp-size``), ``--flag=value``, booleans, types, choices. Mistakes become a
UsageError naming the flag, the close match, and the versions that know it.
"""

from __future__ import annotations

import difflib
import json
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from imgbuild.errors import UsageError
from imgbuild.knowledge.serverargs import FlagSpec

# Entry points users have in their scripts; everything after one of them is flags.
_ENTRY_POINTS = ("sglang.launch_server", "sglang/launch_server.py", "launch_server.py")


_ARGPARSE_DESTS = {
    "tp_size": "tensor_parallel_size",
    "pp_size": "pipeline_parallel_size",
    "dp_size": "data_parallel_size",
    "ep_size": "expert_parallel_size",
}


@dataclass(frozen=True)
class LaunchCommand:
    model_path: str | None
    flags: tuple[str, ...]  # launch flags without --model-path/--model


def split_command(command: str) -> LaunchCommand:
    """Pull the launch flags out of a shell command line.

    Accepts what people paste: env assignments, ``nohup``, ``python3 -m
    sglang.launch_server`` or ``sglang serve``, backslash-newlines, and a
    trailing redirection or ``&``.
    """
    text = command.replace("\\\n", " ").replace("\\\r\n", " ")
    try:
        words = shlex.split(text, comments=True)
    except ValueError as exc:
        raise UsageError(f"--command: cannot split the command line: {exc}") from exc
    start = None
    for i, word in enumerate(words):
        if any(word.endswith(entry) for entry in _ENTRY_POINTS):
            start = i + 1
            break
        if word == "serve" and i > 0 and words[i - 1].endswith("sglang"):
            start = i + 1
            break
    if start is None:
        raise UsageError(
            "--command: no 'sglang.launch_server' or 'sglang serve' in the command",
            hint="pass the launch command as you run it, e.g. 'python -m sglang.launch_server --model-path M --tp 2'",
        )
    rest: list[str] = []
    for word in words[start:]:
        if word in ("&", "&&", "|", ";", "||") or word.startswith((">", "2>", "1>", "&>")):
            break
        rest.append(word)
    model_path: str | None = None
    flags: list[str] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        name, eq, value = word.partition("=")
        if name in ("--model-path", "--model"):
            if eq:
                model_path = value
            elif i + 1 < len(rest):
                model_path = rest[i + 1]
                i += 1
            i += 1
            continue
        flags.append(word)
        i += 1
    return LaunchCommand(model_path=model_path, flags=tuple(flags))


def attention_dp_groups(values: Mapping[str, Any]) -> tuple[int, int]:
    """(attention-DP groups, whole replicas) from the flag values as 0.5.22 on reads them: --attn-dp-size counts the
    groups and --dp-size the replicas, and the deprecated --dp-size N --enable-dp-attention is --attn-dp-size N
    (arg_groups/parallel_hook.py handle_deprecated_dp_attention)."""
    groups = int(values["attn_dp_size"]) if values.get("attn_dp_size") is not None else 1
    replicas = int(values["dp_size"]) if values.get("dp_size") is not None else 1
    return (replicas, 1) if groups == 1 and values.get("enable_dp_attention") else (groups, replicas)


@dataclass(frozen=True)
class DpLayout:
    """The data-parallel layout of a launch: ``groups`` attention-DP groups that split each TP group's attention
    (its attention TP is tp_size // groups), ``replicas`` whole copies of the model (each on its own tp x pp GPUs),
    ``attention`` whether DP attention runs (before 0.5.22 the flag turns it on even with one group)."""

    groups: int
    replicas: int
    attention: bool

    def attn_tp_size(self, tp_size: int) -> int:
        return max(1, tp_size // self.groups) if self.attention and self.groups > 1 else tp_size


@dataclass(frozen=True)
class LaunchConfig:
    """The launch flags that matter to memory, after argparse defaults.

    ``values`` holds every dest SGLang's parser would fill (defaults included);
    ``explicit`` the dests the user set.
    """

    values: Mapping[str, Any]
    explicit: frozenset[str]
    argv: tuple[str, ...]

    def get(self, dest: str, default: Any = None) -> Any:
        value = self.values.get(dest, default)
        return default if value is None else value

    def is_set(self, dest: str) -> bool:
        return dest in self.explicit

    # Typed views of the flags the planner reads ---------------------------------
    @property
    def tp_size(self) -> int:
        return int(self.get("tp_size", 1))

    @property
    def pp_size(self) -> int:
        return int(self.get("pp_size", 1))

    @property
    def dp_size(self) -> int:
        return int(self.get("dp_size", 1))

    @property
    def enable_dp_attention(self) -> bool:
        return bool(self.get("enable_dp_attention", False))

    def dp_layout(self, version: str) -> DpLayout:
        """How the DP flags split the GPUs in this release. Up to 0.5.21 --enable-dp-attention turns --dp-size into
        attention-DP groups inside the TP group (server_args.py _handle_data_parallelism; before 0.4.4.post1
        __post_init__ sets dp_size = tp_size); from 0.5.22 attention_dp_groups."""
        release, dp = Version(version), self.dp_size
        if release >= Version("0.5.22"):
            groups, replicas = attention_dp_groups(self.values)
            return DpLayout(groups, replicas, groups > 1)
        if not self.enable_dp_attention:
            return DpLayout(1, dp, False)
        return DpLayout(self.tp_size if release < Version("0.4.4.post1") else dp, 1, True)

    @property
    def mem_fraction_static(self) -> float | None:
        value = self.values.get("mem_fraction_static")
        return None if value is None else float(value)

    @property
    def context_length(self) -> int | None:
        value = self.values.get("context_length")
        return None if value is None else int(value)

    @property
    def max_running_requests(self) -> int | None:
        value = self.values.get("max_running_requests")
        return None if value is None else int(value)

    @property
    def max_total_tokens(self) -> int | None:
        value = self.values.get("max_total_tokens")
        return None if value is None else int(value)

    @property
    def speculative_algorithm(self) -> str | None:
        value = self.values.get("speculative_algorithm")
        return None if value in (None, "", "None") else str(value).upper()

    @property
    def kv_cache_dtype(self) -> str:
        return str(self.get("kv_cache_dtype", "auto"))

    @property
    def disable_radix_cache(self) -> bool:
        return bool(self.get("disable_radix_cache", False))

    @property
    def mamba_strategy(self) -> str:
        # --mamba-scheduler-strategy (0.5.9-0.5.13) became --mamba-radix-cache-strategy (0.5.14)
        value = self.values.get("mamba_radix_cache_strategy") or self.values.get("mamba_scheduler_strategy")
        return str(value or "auto")

    @property
    def page_size(self) -> int:
        return int(self.get("page_size", 1))


@dataclass
class _Parsed:
    values: dict[str, Any] = field(default_factory=dict)
    explicit: set[str] = field(default_factory=set)


def _convert(spec: FlagSpec, flag: str, raw: str) -> Any:
    kind = spec.type
    try:
        if kind == "int":
            value: Any = int(raw)
        elif kind == "float":
            value = float(raw)
            if not math.isfinite(value):  # argparse's float() takes nan and inf; no SGLang setting means them
                raise ValueError(raw)
        elif kind == "json":
            value = json.loads(raw)
        else:
            value = raw
    except (ValueError, RecursionError):
        shown = raw if len(raw) <= 60 else raw[:60] + "..."
        raise UsageError(f"{flag}: invalid {kind} value: {shown!r}",
                         hint="a finite number" if kind == "float" else None) from None
    if spec.choices is not None and value not in spec.choices:
        shown = ", ".join(repr(c) for c in spec.choices)
        raise UsageError(f"{flag}: invalid choice: {raw!r} (choose from {shown})")
    return value


def _unknown_flag(flag: str, known: Mapping[str, FlagSpec], version: str, others: Mapping[str, Mapping[str, FlagSpec]]) -> UsageError:
    close = difflib.get_close_matches(flag, list(known), n=1, cutoff=0.75)
    hint_parts: list[str] = []
    holders = [v for v, table in others.items() if flag in table]
    if holders:
        hint_parts.append(f"{flag} exists in SGLang {_span(holders)}")
    if close:
        hint_parts.append(f"did you mean {close[0]}?")
    elif holders:
        # a rename: the same dest under another option string in this version
        dest = others[holders[-1]][flag].dest
        renamed = sorted({f for f, s in known.items() if s.dest == dest})
        if renamed:
            hint_parts.append(f"SGLang {version} calls it {renamed[0]}")
    return UsageError(
        f"SGLang {version} does not know the flag {flag}",
        hint="; ".join(hint_parts) or None,
    )


def _span(versions: Sequence[str]) -> str:
    return versions[0] if len(versions) == 1 else f"{versions[0]} .. {versions[-1]} ({len(versions)} releases)"


def parse_flags(
    argv: Sequence[str],
    flags: Mapping[str, FlagSpec],
    *,
    version: str,
    other_versions: Mapping[str, Mapping[str, FlagSpec]] | None = None,
) -> LaunchConfig:
    """Parse launch flags against one version's flag table, as argparse would.

    Raises UsageError for unknown flags, missing or invalid values and bad choices.
    ``other_versions`` (version -> table) lets the message say where a flag exists.
    """
    parsed = _with_defaults(flags)
    args = list(argv)
    given: dict[str, tuple[str, Any]] = {}
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if not word.startswith("-") or word in ("-", "--"):
            raise UsageError(f"unexpected argument {word!r} among the launch flags", hint="flags look like --tp 2")
        name, eq, inline = word.partition("=")
        spec = _lookup_flag(name, flags, version, other_versions or {})
        if not spec.takes_value:
            if eq:
                raise UsageError(f"{name}: takes no value (got {word!r})")
            value = spec.value_when_given(name)
            if value is not None:
                parsed.values[spec.dest] = value
                parsed.explicit.add(spec.dest)
            continue
        if eq:
            raw_values = [inline]
        else:
            raw_values, i = _take_values(spec, name, args, i)
        _store(parsed, given, spec, name, _flag_value(spec, name, raw_values))
    _copy_argparse_dests(parsed)
    return LaunchConfig(values=parsed.values, explicit=frozenset(parsed.explicit), argv=tuple(argv))


def _with_defaults(flags: Mapping[str, FlagSpec]) -> _Parsed:
    """Every dest of the table at its default (a dest several option strings share, once)."""
    parsed = _Parsed()
    seen: set[int] = set()
    for spec in flags.values():
        if id(spec) in seen:
            continue
        seen.add(id(spec))
        parsed.values.setdefault(spec.dest, spec.default)
    return parsed


def _lookup_flag(
    name: str, flags: Mapping[str, FlagSpec], version: str, others: Mapping[str, Mapping[str, FlagSpec]]
) -> FlagSpec:
    spec = flags.get(name)
    if spec is not None:
        return spec
    # argparse accepts unambiguous prefixes (allow_abbrev defaults to True)
    prefixed = {s.dest: f for f, s in flags.items() if f.startswith(name) and f.startswith("--")}
    if len(prefixed) == 1 and len(name) > 3:
        return flags[next(iter(prefixed.values()))]
    if len(prefixed) > 1 and len(name) > 3:
        # argparse's own refusal (_parse_optional): every option string the prefix matches
        matches = sorted(f for f in flags if f.startswith(name) and f.startswith("--"))
        raise UsageError(
            f"ambiguous option: {name} could match {', '.join(matches)}",
            hint="spell the flag out in full",
        )
    raise _unknown_flag(name, flags, version, others)


def _take_values(spec: FlagSpec, name: str, args: list[str], i: int) -> tuple[list[str], int]:
    """The words after ``name`` (from ``args[i]``) that its nargs takes, and the next index."""
    nargs = spec.nargs
    if nargs in ("+", "*"):
        raw_values = []
        while i < len(args) and not args[i].startswith("--"):
            raw_values.append(args[i])
            i += 1
        if nargs == "+" and not raw_values:
            raise UsageError(f"{name}: expected at least one value")
        return raw_values, i
    if nargs == "?":
        if i < len(args) and not args[i].startswith("--"):
            return [args[i]], i + 1
        return [], i
    if isinstance(nargs, int):
        raw_values = args[i : i + nargs]
        if len(raw_values) != nargs:
            raise UsageError(f"{name}: expected {nargs} values")
        return raw_values, i + nargs
    if i >= len(args) or (args[i].startswith("--") and len(args[i]) > 2):
        raise UsageError(f"{name}: expected a value")
    return [args[i]], i + 1


def _flag_value(spec: FlagSpec, name: str, raw_values: list[str]) -> Any:
    converted = [_convert(spec, name, raw) for raw in raw_values]
    if spec.nargs in ("+", "*") or isinstance(spec.nargs, int):
        return converted
    if spec.nargs == "?" and not converted:
        return True
    return converted[0]


def _store(parsed: _Parsed, given: dict[str, tuple[str, Any]], spec: FlagSpec, name: str, value: Any) -> None:
    if spec.action == "append":
        previous = parsed.values.get(spec.dest)
        value = (list(previous) if isinstance(previous, list) else []) + [value]
    elif spec.dest in given and given[spec.dest][1] != value:
        # argparse would keep the last one silently; two different values are a mistake
        first_flag, first_value = given[spec.dest]
        raise UsageError(
            f"conflicting values: {first_flag} {first_value} and {name} {value} set the same option",
            hint="keep one of them",
        )
    given[spec.dest] = (name, value)
    parsed.values[spec.dest] = value
    parsed.explicit.add(spec.dest)


def _copy_argparse_dests(parsed: _Parsed) -> None:
    # argparse dests named after the long option; ServerArgs.from_cli_args renames them (server_args.py)
    for field_name, dest in _ARGPARSE_DESTS.items():
        if dest in parsed.values:
            parsed.values[field_name] = parsed.values[dest]
            if dest in parsed.explicit:
                parsed.explicit.add(field_name)


def with_flags(config: LaunchConfig, changes: Mapping[str, Any]) -> LaunchConfig:
    """A copy with dests set (None unsets), for re-planning a suggestion."""
    values = dict(config.values)
    explicit = set(config.explicit)
    for dest, value in changes.items():
        values[dest] = value
        if value is None:
            explicit.discard(dest)
        else:
            explicit.add(dest)
    return LaunchConfig(values=values, explicit=frozenset(explicit), argv=config.argv)
