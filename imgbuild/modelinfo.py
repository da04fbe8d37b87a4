"""What a model checkpoint is, read from its config.json (and safetensors index).

Pure data layer: files are read from a local directory or through a ``hub``
object handed in by the caller (imgbuild.hub.HubClient fetches from Hugging
Face); this module never imports httpx.

Parameter counts follow the module shapes of the Hugging Face / SGLang model
definitions; for Qwen3.5/3.6 (GDN hybrid + MTP + vision tower) the breakdown adds
up exactly to the published total of the 27B checkpoint (27,781,427,952).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from imgbuild.errors import UsageError

CONFIG_NAME = "config.json"
INDEX_NAME = "model.safetensors.index.json"
HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")

DTYPE_BYTES = {
    "float32": 4, "fp32": 4, "float": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "float8_e4m3fn": 1, "fp8": 1, "int8": 1,
}  # fmt: skip


class HubFetcher(Protocol):
    def fetch(self, repo: str, revision: str, filename: str) -> bytes | None:
        """The file's bytes, or None when the repository has no such file."""


@dataclass(frozen=True)
class ModelInfo:
    source: str
    architectures: tuple[str, ...]
    model_type: str
    config: dict[str, Any] = field(repr=False)
    text_config: dict[str, Any] = field(repr=False)
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    full_attention_layers: int
    linear_attention_layers: int
    mtp_layers: int
    moe_experts: int | None
    moe_experts_per_token: int | None
    moe_intermediate_size: int | None
    mla: bool
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    v_head_dim: int | None
    sliding_window: int | None
    quantization: str | None
    dtype: str
    parameters: int | None
    weight_bytes: int | None
    has_vision: bool
    tie_word_embeddings: bool
    features: tuple[str, ...]
    parameters_source: str = "index"  # "index" (safetensors metadata) or "shapes"
    parameter_breakdown: dict[str, int] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "architectures": list(self.architectures),
            "model_type": self.model_type,
            "text_model_type": self.text_config.get("model_type", self.model_type),
            "dtype": self.dtype,
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
            "full_attention_layers": self.full_attention_layers,
            "linear_attention_layers": self.linear_attention_layers,
            "mtp_layers": self.mtp_layers,
            "moe_experts": self.moe_experts,
            "moe_experts_per_token": self.moe_experts_per_token,
            "mla": self.mla,
            "sliding_window": self.sliding_window,
            "quantization": self.quantization,
            "has_vision": self.has_vision,
            "parameters": self.parameters,
            "weight_bytes": self.weight_bytes,
            "parameters_source": self.parameters_source,
            "parameter_breakdown": dict(self.parameter_breakdown),
            "features": list(self.features),
        }


def split_hub_id(source: str) -> tuple[str, str] | None:
    """'Qwen/Qwen3.6-27B@main' -> ('Qwen/Qwen3.6-27B', 'main'); None if not a hub id."""
    match = HUB_ID.match(source)
    if not match:
        return None
    return match.group("repo"), match.group("revision") or "main"


def is_local_source(source: str) -> bool:
    return Path(source).exists() or source.startswith((".", "/", "~")) or source.endswith(".json")


def inspect_model(source: str, *, hub: HubFetcher | None = None) -> ModelInfo:
    config, index = read_model_files(source, hub=hub)
    return describe_model(config, index, source=source)


def read_model_files(source: str, *, hub: HubFetcher | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if is_local_source(source):
        path = Path(source).expanduser()
        if path.is_dir():
            config_path, index_path = path / CONFIG_NAME, path / INDEX_NAME
        elif path.is_file():
            config_path, index_path = path, path.with_name(INDEX_NAME)
        else:
            raise UsageError(
                f"model {source}: no such file or directory",
                hint="give a model directory holding config.json, a config.json path, or a Hugging Face id org/name",
            )
        if not config_path.is_file():
            raise UsageError(f"model {source}: {config_path} is missing", hint="the directory must hold config.json")
        config = _parse_json(config_path.read_bytes(), str(config_path))
        index = _parse_json(index_path.read_bytes(), str(index_path)) if index_path.is_file() else None
        return config, index
    hub_id = split_hub_id(source)
    if hub_id is None:
        raise UsageError(
            f"model {source!r} is neither a local path nor a Hugging Face id",
            hint="give a directory, a config.json path, or org/name[@revision]",
        )
    if hub is None:
        raise UsageError(f"model {source}: a Hugging Face id needs the hub client")
    repo, revision = hub_id
    raw_config = hub.fetch(repo, revision, CONFIG_NAME)
    if raw_config is None:
        raise UsageError(f"model {source}: the repository has no config.json", hint="check the id and revision")
    raw_index = hub.fetch(repo, revision, INDEX_NAME)
    config = _parse_json(raw_config, f"{source}:{CONFIG_NAME}")
    index = _parse_json(raw_index, f"{source}:{INDEX_NAME}") if raw_index is not None else None
    return config, index


def _parse_json(data: bytes, where: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where} is not valid JSON: {exc}", hint="re-download the file") from None
    if not isinstance(value, dict):
        raise UsageError(f"{where} must hold a JSON object")
    return value


def _int(cfg: dict[str, Any], *keys: str, default: int | None = None) -> int | None:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            return int(value)
    return default


def text_config_of(config: dict[str, Any]) -> dict[str, Any]:
    for key in ("text_config", "llm_config", "language_config"):
        nested = config.get(key)
        if isinstance(nested, dict) and nested.get("hidden_size"):
            return nested
    return config


def describe_model(config: dict[str, Any], index: dict[str, Any] | None, *, source: str) -> ModelInfo:
    text = text_config_of(config)
    where = f"model {source}: config.json"
    architectures = tuple(config.get("architectures") or text.get("architectures") or ())
    if not architectures:
        raise UsageError(f"{where} has no 'architectures'", hint="is this a Hugging Face model config?")
    hidden = _int(text, "hidden_size", "d_model", "n_embd")
    layers = _int(text, "num_hidden_layers", "n_layer", "num_layers")
    heads = _int(text, "num_attention_heads", "n_head")
    if not hidden or not layers or not heads:
        raise UsageError(f"{where} lacks hidden_size, num_hidden_layers or num_attention_heads")
    kv_heads = _int(text, "num_key_value_heads", "multi_query_group_num", default=heads) or heads
    head_dim = _int(text, "head_dim", default=hidden // heads) or hidden // heads
    vocab = _int(text, "vocab_size", "padded_vocab_size", default=0) or 0
    intermediate = _int(text, "intermediate_size", "ffn_hidden_size", default=4 * hidden) or 4 * hidden

    full_layers, linear_layers = _attention_layers(text, layers)
    mtp = _int(text, "mtp_num_hidden_layers", "num_nextn_predict_layers", default=0) or 0
    experts = _int(text, "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
    experts = experts if experts else None
    per_token = _int(text, "num_experts_per_tok", "moe_topk", "num_experts_per_token") if experts else None
    moe_inter = _int(text, "moe_intermediate_size", default=intermediate) if experts else None
    kv_lora = _int(text, "kv_lora_rank")
    mla = bool(kv_lora)
    rope_dim = _int(text, "qk_rope_head_dim") if mla else None
    v_head = _int(text, "v_head_dim") if mla else None
    sliding = _sliding_window(text)
    quant = _quant_method(config) or _quant_method(text)
    dtype = str(text.get("dtype") or text.get("torch_dtype") or config.get("dtype") or config.get("torch_dtype") or "bfloat16")
    has_vision = isinstance(config.get("vision_config"), dict)
    tied = bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", False)))

    breakdown = parameter_breakdown(config)
    parameters: int | None
    weight_bytes: int | None
    metadata = (index or {}).get("metadata") or {}
    if isinstance(metadata.get("total_parameters"), int) or isinstance(metadata.get("total_size"), int):
        parameters_source = "index"
        parameters = metadata.get("total_parameters") or sum(breakdown.values())
        weight_bytes = metadata.get("total_size")
        if weight_bytes is None and quant is None:
            weight_bytes = parameters * DTYPE_BYTES.get(dtype, 2)
    else:
        parameters_source = "shapes"
        parameters = sum(breakdown.values())
        weight_bytes = parameters * DTYPE_BYTES.get(dtype, 2) if quant is None else None

    features = []
    if linear_layers:
        features.append("gdn-hybrid")
    if mtp:
        features.append("mtp")
    if mla:
        features.append("mla")
    if experts:
        features.append("moe")
    if sliding:
        features.append("sliding-window")
    if has_vision:
        features.append("vision")
    if quant:
        features.append(f"quant-{quant}")
    return ModelInfo(
        source=source,
        architectures=architectures,
        model_type=str(config.get("model_type") or text.get("model_type") or ""),
        config=config,
        text_config=text,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        intermediate_size=intermediate,
        full_attention_layers=full_layers,
        linear_attention_layers=linear_layers,
        mtp_layers=mtp,
        moe_experts=experts,
        moe_experts_per_token=per_token,
        moe_intermediate_size=moe_inter,
        mla=mla,
        kv_lora_rank=kv_lora,
        qk_rope_head_dim=rope_dim,
        v_head_dim=v_head,
        sliding_window=sliding,
        quantization=quant,
        dtype=dtype,
        parameters=parameters,
        weight_bytes=weight_bytes,
        has_vision=has_vision,
        tie_word_embeddings=tied,
        features=tuple(features),
        parameters_source=parameters_source,
        parameter_breakdown=breakdown,
    )


def _attention_layers(text: dict[str, Any], layers: int) -> tuple[int, int]:
    """(full, linear) attention layer counts, from layer_types or full_attention_interval."""
    layer_types = text.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        linear = sum(1 for t in layer_types if t in ("linear_attention", "mamba", "gated_deltanet"))
        return len(layer_types) - linear, linear
    interval = _int(text, "full_attention_interval")
    if interval and (text.get("linear_num_value_heads") or text.get("linear_key_head_dim")):
        full = layers // interval
        return full, layers - full
    return layers, 0


def _sliding_window(text: dict[str, Any]) -> int | None:
    window = _int(text, "sliding_window")
    if not window or text.get("use_sliding_window") is False:
        layer_types = text.get("layer_types")
        if isinstance(layer_types, list) and "sliding_attention" in layer_types:
            return window or _int(text, "sliding_window_size")
        return None
    return window


def _quant_method(cfg: dict[str, Any]) -> str | None:
    qc = cfg.get("quantization_config") or cfg.get("compression_config")
    if isinstance(qc, dict):
        method = qc.get("quant_method") or qc.get("quant_algo") or qc.get("format")
        if method:
            return str(method).lower()
    return None


def parameter_breakdown(config: dict[str, Any]) -> dict[str, int]:
    """Parameters per component, from the config's shapes (HF module layout).

    Keys: embed, lm_head, attention (full-attention layers), linear_attention
    (Gated DeltaNet layers), mlp (dense MLPs), experts (routed MoE experts),
    shared_experts, router, norms, mtp (the MTP/NextN head), vision (tower + merger).
    The planner shards these by SGLang's TP rules.
    """
    text = text_config_of(config)
    hidden = _int(text, "hidden_size", default=0) or 0
    layers = _int(text, "num_hidden_layers", default=0) or 0
    heads = _int(text, "num_attention_heads", default=1) or 1
    kv_heads = _int(text, "num_key_value_heads", default=heads) or heads
    head_dim = _int(text, "head_dim", default=hidden // heads) or hidden // heads
    vocab = _int(text, "vocab_size", default=0) or 0
    inter = _int(text, "intermediate_size", default=4 * hidden) or 4 * hidden
    full, linear = _attention_layers(text, layers)
    tied = bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", False)))

    attn = _full_attention_params(text, hidden, heads, kv_heads, head_dim)
    lin = _linear_attention_params(text, hidden) if linear else 0
    dense_mlp = 3 * hidden * inter
    experts = _int(text, "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts") or 0
    moe_inter = _int(text, "moe_intermediate_size", default=inter) or inter
    shared_inter = _int(text, "shared_expert_intermediate_size", default=0) or 0
    n_shared = _int(text, "n_shared_experts", default=0) or 0
    if n_shared and not shared_inter:
        shared_inter = n_shared * moe_inter
    first_dense = _int(text, "first_k_dense_replace", default=0) or 0
    moe_layers = max(layers - first_dense, 0) if experts else 0
    per_layer_norms = 2 * hidden

    out = {
        "embed": vocab * hidden,
        "lm_head": 0 if tied else vocab * hidden,
        "attention": full * attn,
        "linear_attention": linear * lin,
        "mlp": (layers - moe_layers) * dense_mlp,
        "experts": moe_layers * experts * 3 * hidden * moe_inter,
        "shared_experts": moe_layers * (3 * hidden * shared_inter + (hidden if shared_inter and "qwen" in str(text.get("model_type", "")) else 0)),
        "router": moe_layers * experts * hidden,
        "norms": layers * per_layer_norms + hidden,
        "mtp": 0,
        "vision": _vision_params(config.get("vision_config"), hidden),
    }
    mtp = _int(text, "mtp_num_hidden_layers", "num_nextn_predict_layers", default=0) or 0
    if mtp:
        # Each MTP/NextN layer: fc 2H->H, two pre-fc norms, one full-attention decoder
        # layer (MoE when the model is), and a final norm; embeddings are shared.
        mtp_mlp = (experts * 3 * hidden * moe_inter + experts * hidden + 3 * hidden * shared_inter) if experts else dense_mlp
        out["mtp"] = mtp * (2 * hidden * hidden + 2 * hidden + attn + mtp_mlp + per_layer_norms + hidden)
    return out


def _full_attention_params(text: dict[str, Any], hidden: int, heads: int, kv_heads: int, head_dim: int) -> int:
    kv_lora = _int(text, "kv_lora_rank")
    if kv_lora:  # MLA (DeepSeek V2/V3): low-rank q and kv projections
        q_lora = _int(text, "q_lora_rank")
        nope = _int(text, "qk_nope_head_dim", default=128) or 128
        rope = _int(text, "qk_rope_head_dim", default=64) or 64
        v_dim = _int(text, "v_head_dim", default=128) or 128
        q = (hidden * q_lora + q_lora + q_lora * heads * (nope + rope)) if q_lora else hidden * heads * (nope + rope)
        kv = hidden * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_dim)
        return q + kv + heads * v_dim * hidden
    gate = 2 if text.get("attn_output_gate") else 1
    params = hidden * heads * head_dim * gate + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden
    if text.get("attention_bias") or text.get("qkv_bias") or str(text.get("model_type", "")).startswith("qwen2"):
        params += heads * head_dim + 2 * kv_heads * head_dim
    if str(text.get("model_type", "")).startswith(("qwen3", "qwen3_5")):
        params += 2 * head_dim  # q_norm and k_norm
    return params


def _linear_attention_params(text: dict[str, Any], hidden: int) -> int:
    """One Gated DeltaNet layer (Qwen3-Next / Qwen3.5): projections, conv1d, gates, norm."""
    k_heads = _int(text, "linear_num_key_heads", default=0) or 0
    v_heads = _int(text, "linear_num_value_heads", default=0) or 0
    k_dim = k_heads * (_int(text, "linear_key_head_dim", default=0) or 0)
    v_head_dim = _int(text, "linear_value_head_dim", default=0) or 0
    v_dim = v_heads * v_head_dim
    kernel = _int(text, "linear_conv_kernel_dim", default=4) or 4
    conv_dim = 2 * k_dim + v_dim
    return (
        hidden * (2 * k_dim + 2 * v_dim)  # in_proj_qkvz
        + hidden * 2 * v_heads  # in_proj_ba
        + conv_dim * kernel  # conv1d
        + 2 * v_heads  # A_log, dt_bias
        + v_head_dim  # gated RMSNorm
        + v_dim * hidden  # out_proj
    )


def _vision_params(vision: Any, text_hidden: int) -> int:
    """Qwen-VL style vision tower (Qwen3-VL / Qwen3.5): blocks, patch embed, position embed, merger."""
    if not isinstance(vision, dict):
        return 0
    hidden = _int(vision, "hidden_size", "embed_dim", default=0) or 0
    depth = _int(vision, "depth", "num_hidden_layers", default=0) or 0
    inter = _int(vision, "intermediate_size", default=4 * hidden) or 4 * hidden
    patch = _int(vision, "patch_size", default=14) or 14
    temporal = _int(vision, "temporal_patch_size", default=1) or 1
    channels = _int(vision, "in_channels", "num_channels", default=3) or 3
    merge = _int(vision, "spatial_merge_size", default=2) or 2
    out_hidden = _int(vision, "out_hidden_size", default=text_hidden) or text_hidden
    positions = _int(vision, "num_position_embeddings", default=2304) or 2304
    block = 4 * hidden * hidden + 4 * hidden + 2 * hidden * inter + inter + hidden + 4 * hidden
    merged = hidden * merge * merge
    merger = 2 * hidden + merged * merged + merged + merged * out_hidden + out_hidden
    patch_embed = channels * temporal * patch * patch * hidden + hidden
    return depth * block + patch_embed + positions * hidden + merger
