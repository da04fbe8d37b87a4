"""SGLang's own failure texts on the way to "ready", per release, into imgbuild/data/sglang_messages.json.

For each sglang wheel in the wheel directory, the files that run before the server is ready
(server args and 0.5.19+'s arg_groups, device and distributed init, model config and loading, memory
pools and the caches over them, the speculative workers, quantized layers, CUDA graphs) are parsed
with ast; every `raise X("...")`, `assert cond, "..."` and `logger.error/critical/exception("...")`
with a literal or f-string message is kept, f-string holes written as `{...}`. A text is stored once with
the releases that have it, so a wording's first and last release can be read off.

Usage: .venv/bin/python -m scripts.gen_matrix.messages [--wheel-dir .cache/wheels] [--out FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import zipfile
from pathlib import Path

from packaging.version import Version

from .emit import write_atomic
from .wheels import select_wheel, wheel_parts

REPO_ROOT = Path(__file__).resolve().parents[2]

# The start-up path, by what it does; paths inside sglang/srt/ (moved files are listed under both names;
# a path ending in "/" is every .py file under that directory, as 0.5.19+ split server_args.py into arg_groups/).
STARTUP_FILES = {
    "server-args": ("server_args.py", "arg_groups/", "server_args_config_parser.py"),
    "device": ("utils.py", "utils/common.py"),
    "distributed": ("distributed/parallel_state.py", "distributed/device_communicators/pynccl_wrapper.py"),
    "model-config": ("configs/model_config.py", "models/registry.py", "hf_transformers_utils.py",
                     "utils/hf_transformers_utils.py"),
    "model-loading": ("model_loader/loader.py", "model_executor/model_runner.py"),
    "memory-pools": ("model_executor/model_runner_kv_cache_mixin.py", "model_executor/pool_configurator.py",
                     "mem_cache/memory_pool.py"),
    "cuda-graphs": ("model_executor/cuda_graph_runner.py",),
    # checks past server_args that refuse a setting when the pools, the draft or a quantized layer are built
    "caches": ("mem_cache/",),
    "speculative": ("speculative/",),
    "quantization": ("layers/quantization/",),
    "ports": ("utils/network.py",),
}
_LOG_CALLS = {"error", "critical", "exception", "fatal"}


def _text(node: ast.AST) -> str | None:
    """A literal or f-string message, holes as {...}; None for anything computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{...}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return left + right if left is not None and right is not None else None
    return None


def extract_messages(source: str) -> list[tuple[str, str]]:
    """(kind, text) for each raise, assert and error log call with a readable message in a source file."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(source)):
        call = None
        if isinstance(node, ast.Assert) and node.msg is not None:
            # `assert cond, "text"`: SGLang's checks are often asserts (an AssertionError with the text)
            text = _text(node.msg)
            if text and text.strip():
                found.append(("assert", " ".join(text.split())))
            continue
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            call, func = node.exc, node.exc.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            kind = f"raise {name}" if name else None
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _LOG_CALLS and isinstance(node.func.value, ast.Name)
              and node.func.value.id == "logger"):
            call, kind = node, f"logger.{node.func.attr}"
        if call is None or kind is None or not call.args:
            continue
        text = _text(call.args[0])
        if text and text.strip():
            found.append((kind, " ".join(text.split())))
    return found


def _members(names: set[str], files: tuple[str, ...]) -> list[str]:
    """The wheel's members for a step's paths: a file as named, a directory's .py files in order."""
    found: list[str] = []
    for rel in files:
        member = f"sglang/srt/{rel}"
        if rel.endswith("/"):
            found += sorted(n for n in names if n.startswith(member) and n.endswith(".py"))
        elif member in names:
            found.append(member)
    return found


def read_release(wheel: Path) -> dict[tuple[str, str, str, str], None]:
    """(step, file, kind, text) keys of one wheel's start-up messages."""
    keys: dict[tuple[str, str, str, str], None] = {}
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        read: set[str] = set()  # a file under two steps' paths (mem_cache/memory_pool.py) is read for the first
        for step, files in STARTUP_FILES.items():
            for member in _members(names, files):
                if member in read:
                    continue
                read.add(member)
                rel = member.removeprefix("sglang/srt/")
                try:
                    messages = extract_messages(zf.read(member).decode("utf-8"))
                except SyntaxError:
                    continue  # a file this interpreter's grammar cannot read
                for kind, text in messages:
                    keys[(step, rel, kind, text)] = None
    return keys


def build(wheel_dir: Path) -> dict[str, object]:
    releases: dict[tuple[str, str, str, str], list[str]] = {}
    by_version: dict[Version, list[str]] = {}
    for wheel in wheel_dir.glob("sglang-*.whl"):
        parts = wheel_parts(wheel.name)
        if parts is not None and not parts[0].is_prerelease:
            by_version.setdefault(parts[0], []).append(wheel.name)
    versions = [(v, wheel_dir / chosen) for v, names in by_version.items() if (chosen := select_wheel(names))]
    for version, wheel in sorted(versions):
        for key in read_release(wheel):
            releases.setdefault(key, []).append(str(version))
    messages = [
        {"step": step, "file": f"sglang/srt/{rel}", "kind": kind, "text": text,
         "first": rels[0], "last": rels[-1], "releases": len(rels)}
        for (step, rel, kind, text), rels in sorted(releases.items())
    ]
    return {"generated_by": "scripts/gen_matrix/messages.py", "releases": [str(v) for v, _ in sorted(versions)],
            "messages": messages}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--wheel-dir", type=Path, default=REPO_ROOT / ".cache" / "wheels")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "imgbuild" / "data" / "sglang_messages.json")
    args = parser.parse_args(argv)
    data = build(args.wheel_dir)
    write_atomic(args.out, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(data['messages'])} messages from {len(data['releases'])} releases")  # noqa: T201


if __name__ == "__main__":
    main()
