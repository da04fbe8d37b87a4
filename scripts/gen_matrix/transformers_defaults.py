"""transformers' config-class defaults, into imgbuild/data/transformers_defaults.json.

A published config.json holds only the fields that differ from its config class's defaults;
transformers (and SGLang, which loads configs through AutoConfig) fill in the rest. This step
reads those defaults from the released transformers wheel that SGLang pins, as a zip file,
never installed or imported: every ``transformers/models/*/configuration_*.py`` is parsed with
ast and, for each config class that names its ``model_type``, the class-level field defaults
(transformers 5.x declares its configs as dataclasses: ``vocab_size: int = 32000``; base config
classes' fields are inherited) of the fields imgbuild's geometry reads (GEOMETRY_FIELDS), and
``sub_configs``: the model_type a nested text_config / vision_config takes when it names none.

Only literals and module constants are kept (ast_eval); a field whose default is computed, or
is None (transformers fills it in ``__post_init__``: Llama's head_dim = hidden_size // heads),
is left out, not guessed. The rules such ``__post_init__`` code applies live in
imgbuild/knowledge/modelinfo.py beside the reader of this file.

Usage: .venv/bin/python -m scripts.gen_matrix.transformers_defaults [--version 5.6.0]
       [--wheel-dir DIR] [--cache DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

from . import GenError
from .ast_eval import MISSING, ClassRef, Modules, Unresolved, base_classes, field_default_of, jsonable
from .emit import write_atomic
from .wheels import download_wheel

REPO_ROOT = Path(__file__).resolve().parents[2]

# The transformers release SGLang 0.5.11 pins (its Requires-Dist: transformers==5.6.0).
TRANSFORMERS_VERSION = "5.6.0"

# The config keys imgbuild/knowledge/modelinfo.py reads (read_int / get on a config, its
# text_config or its vision_config), in the order it reads them.
GEOMETRY_FIELDS = (
    # the text model's shapes
    "hidden_size", "d_model", "n_embd", "num_hidden_layers", "n_layer", "num_layers", "num_attention_heads",
    "n_head", "intermediate_size", "ffn_hidden_size", "vocab_size", "padded_vocab_size", "max_position_embeddings",
    "max_sequence_length", "seq_length", "tie_word_embeddings", "dtype", "torch_dtype", "mamba_ssm_dtype",
    # attention
    "head_dim", "num_key_value_heads", "multi_query_group_num", "v_head_dim", "attn_output_gate", "attention_bias",
    "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "sliding_window", "use_sliding_window", "sliding_window_size", "sliding_window_pattern", "layer_types",
    # Gated DeltaNet hybrids
    "full_attention_interval", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
    "linear_value_head_dim", "linear_conv_kernel_dim",
    # MoE and MTP
    "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts", "num_experts_per_tok", "moe_topk",
    "num_experts_per_token", "moe_intermediate_size", "shared_expert_intermediate_size", "n_shared_experts",
    "first_k_dense_replace", "decoder_sparse_step", "moe_layer_freq", "mlp_only_layers",
    "mtp_num_hidden_layers", "num_nextn_predict_layers", "draft_vocab_size",
    # vision towers
    "depth", "out_hidden_size", "patch_size", "temporal_patch_size", "in_channels", "num_channels", "image_size",
    "spatial_merge_size", "num_position_embeddings", "deepstack_visual_indexes",
    "num_global_layers", "max_num_tiles", "vision_output_dim",
)  # fmt: skip

CONFIG_FILE = re.compile(r"transformers/models/[^/]+/configuration_[^/]+\.py")


def download_transformers_wheel(version: str, dest: Path) -> Path:
    """`pip download --no-deps` of the transformers wheel into dest (skipped when present):
    a pure wheel, one file name for every platform."""
    return download_wheel(version, f"transformers-{version}-py3-none-any.whl", dest, package="transformers")


def _own_model_type(ref: ClassRef) -> str | None:
    """The model_type a class sets in its own body (a subclass that only inherits one, such as
    a deprecated alias, does not name a model type of its own)."""
    for stmt in ref.node.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "model_type" for t in targets) and stmt.value is not None:
            try:
                value = ref.env.eval(stmt.value)
            except Unresolved:
                return None
            return value if isinstance(value, str) and value else None
    return None


def _field_defaults(ref: ClassRef, depth: int = 0) -> dict[str, Any]:
    """GEOMETRY_FIELDS defaults of a config class: its bases' first, its own body's over them;
    None, computed and unreadable defaults left out (a base's value then does not show through)."""
    defaults: dict[str, Any] = {}
    if depth < 10:
        for base in base_classes(ref):
            defaults.update(_field_defaults(base, depth + 1))
    for stmt in ref.node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            name, node = stmt.target.id, stmt.value
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, node = stmt.targets[0].id, stmt.value
        else:
            continue
        if name not in GEOMETRY_FIELDS or node is None:
            continue
        defaults.pop(name, None)
        try:
            value = field_default_of(ref.env, node)
            if value is MISSING or value is None:
                continue
            defaults[name] = jsonable(value)
        except Unresolved:
            continue
    return defaults


def _sub_configs(ref: ClassRef) -> dict[str, str]:
    """{key: model_type} of ``sub_configs = {"text_config": Gemma3TextConfig, ...}``; a key whose
    class is AutoConfig (the nested config names its own model_type) or not static is left out."""
    for stmt in ref.node.body:
        if not (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Dict)):
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if not any(isinstance(t, ast.Name) and t.id == "sub_configs" for t in targets):
            continue
        found: dict[str, str] = {}
        for key, value in zip(stmt.value.keys, stmt.value.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            try:
                target = ref.env.eval(value)
            except Unresolved:
                continue
            model_type = _own_model_type(target) if isinstance(target, ClassRef) else None
            if model_type:
                found[key.value] = model_type
        return found
    return {}


def read_config_defaults(wheel: Path) -> tuple[dict[str, Any], list[str]]:
    """({model_type: {"class", "file", "defaults", "sub_configs"}}, notes) of one transformers wheel."""
    model_types: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    with zipfile.ZipFile(wheel) as zf:
        present = set(zf.namelist())

        def read_source(member: str) -> str | None:
            return zf.read(member).decode("utf-8-sig") if member in present else None

        modules = Modules(read_source)
        for member in sorted(n for n in present if CONFIG_FILE.fullmatch(n)):
            env = modules.env(member[: -len(".py")].replace("/", "."))
            if env is None:
                notes.append(f"{member}: not parsed")
                continue
            for stmt in env.body:
                if not isinstance(stmt, ast.ClassDef):
                    continue
                ref = ClassRef(env, stmt)
                model_type = _own_model_type(ref)
                if model_type is None:
                    continue
                if model_type in model_types:
                    notes.append(f"{member}: {stmt.name} repeats model_type {model_type!r} of "
                                 f"{model_types[model_type]['class']}; the first is kept")
                    continue
                model_types[model_type] = {
                    "class": stmt.name,
                    "file": member,
                    "defaults": _field_defaults(ref),
                    "sub_configs": _sub_configs(ref),
                }
    return dict(sorted(model_types.items())), notes


def build(wheel: Path) -> tuple[dict[str, Any], list[str]]:
    version = wheel.name.split("-")[1]
    model_types, notes = read_config_defaults(wheel)
    data = {
        "generated_by": "scripts/gen_matrix/transformers_defaults.py: the class-level field defaults and sub_configs "
                        f"of the config classes in transformers/models/*/configuration_*.py of the transformers "
                        f"{version} wheel, only the fields imgbuild's geometry reads",
        "transformers": version,
        "fields": list(GEOMETRY_FIELDS),
        "model_types": model_types,
    }
    return data, notes


def render(data: dict[str, Any]) -> str:
    """The JSON text: one line per model type, so a regeneration's diff shows which classes changed."""
    head = {k: v for k, v in data.items() if k != "model_types"}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()] + [' "model_types": {']
    items = list(data["model_types"].items())
    for i, (model_type, entry) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"  {json.dumps(model_type)}: {json.dumps(entry, ensure_ascii=False)}{comma}")
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--version", default=TRANSFORMERS_VERSION, help=f"transformers release (default {TRANSFORMERS_VERSION})")
    parser.add_argument("--cache", type=Path, default=REPO_ROOT / ".cache", help="cache directory (default: .cache/)")
    parser.add_argument("--wheel-dir", type=Path, help="read the wheel already in DIR; download nothing")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "imgbuild" / "data" / "transformers_defaults.json")
    args = parser.parse_args(argv)
    try:
        if args.wheel_dir is not None:
            found = sorted(args.wheel_dir.glob(f"transformers-{args.version}-*.whl"))
            if not found:
                raise GenError(f"--wheel-dir {args.wheel_dir}: no transformers-{args.version}-*.whl")
            wheel = found[0]
        else:
            wheel = download_transformers_wheel(args.version, args.cache / "wheels")
        data, notes = build(wheel)
    except GenError as exc:
        print(f"transformers_defaults: {exc}", file=sys.stderr)
        return 2
    write_atomic(args.out, render(data))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    entries = data["model_types"].values()
    with_defaults = sum(1 for e in entries if e["defaults"])
    values = sum(len(e["defaults"]) for e in entries)
    with_subs = sum(1 for e in entries if e["sub_configs"])
    print(f"{args.out}: {len(entries)} model types from transformers {data['transformers']} ({with_defaults} with "
          f"defaults, {values} field values over {len(GEOMETRY_FIELDS)} fields; {with_subs} with sub_configs)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
