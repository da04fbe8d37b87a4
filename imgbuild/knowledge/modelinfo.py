"""What a model checkpoint is, read from its config.json (and safetensors index).

Pure data layer: files are read from a local directory or through a ``hub``
object handed in by the caller (imgbuild.adapters.hub.HubClient fetches from Hugging
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
from typing import Any, Mapping, Protocol, overload

from imgbuild.errors import UsageError

CONFIG_NAME = "config.json"
INDEX_NAME = "model.safetensors.index.json"
HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")

DTYPE_BYTES = {
    "float32": 4, "fp32": 4, "float": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "float8_e4m3fn": 1, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1,
}  # fmt: skip

# Qwen3-Next / Qwen3.5 / Qwen3.6: Gated DeltaNet layers with a full-attention layer every
# full_attention_interval layers (models/qwen3_next.py, models/qwen3_5.py)
HYBRID_GDN_ARCHITECTURES = frozenset({
    "Qwen3NextForCausalLM",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5ForCausalLM",
    "Qwen3_5MoeForCausalLM",
})  # fmt: skip
LINEAR_LAYER_TYPES = ("linear_attention", "mamba", "gated_deltanet")


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


# ----------------------------------------------------------------------------- config readers
# Shared with imgbuild.knowledge.memory (geometry_from_config): one reading of config.json for both.


@overload
def read_int(cfg: Mapping[str, Any], *keys: str, default: int) -> int: ...
@overload
def read_int(cfg: Mapping[str, Any], *keys: str, default: None = None) -> int | None: ...
def read_int(cfg: Mapping[str, Any], *keys: str, default: int | None = None) -> int | None:
    """The first of keys holding a number (booleans skipped), as an int; else default."""
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            return int(value)
    return default


def text_config_of(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's config: text_config (Qwen-VL), llm_config, language_config, else the top level."""
    for key in ("text_config", "llm_config", "language_config"):
        nested = config.get(key)
        if isinstance(nested, dict) and nested.get("hidden_size"):
            return nested
    return config


def config_dtype(config: dict[str, Any], text: dict[str, Any]) -> str:
    """The checkpoint dtype's name as the config spells it ("bfloat16" when absent)."""
    return str(text.get("dtype") or text.get("torch_dtype") or config.get("dtype") or config.get("torch_dtype") or "bfloat16")


def attention_layer_counts(text: dict[str, Any], layers: int, *, architecture: str = "") -> tuple[int, int]:
    """(full, linear) attention layer counts of the first ``layers`` layers.

    From layer_types when it names linear layers; else, for a Gated DeltaNet hybrid (a
    known architecture, or linear-attention shapes in the config), layer i is full
    attention when (i + 1) % full_attention_interval == 0 (models/qwen3_next.py).
    """
    layer_types = text.get("layer_types")
    if isinstance(layer_types, list) and any(t in LINEAR_LAYER_TYPES for t in layer_types):
        linear = sum(1 for t in layer_types[:layers] if t in LINEAR_LAYER_TYPES)
        return layers - linear, linear
    interval = read_int(text, "full_attention_interval")
    hybrid = architecture in HYBRID_GDN_ARCHITECTURES or text.get("linear_num_value_heads") or text.get("linear_key_head_dim")
    if interval and hybrid:
        full = sum(1 for i in range(layers) if (i + 1) % interval == 0)
        return full, layers - full
    return layers, 0


def mtp_layer_count(text: dict[str, Any]) -> int:
    """MTP / NextN draft layers shipped in the checkpoint."""
    return read_int(text, "mtp_num_hidden_layers", "num_nextn_predict_layers", default=0)


def expert_count(text: dict[str, Any]) -> int:
    """Routed MoE experts (0 for a dense model)."""
    return read_int(text, "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts", default=0)


def shared_expert_intermediate(text: dict[str, Any], moe_intermediate: int) -> int:
    """The shared experts' MLP width: shared_expert_intermediate_size (Qwen) or
    n_shared_experts x moe_intermediate_size (DeepSeek)."""
    shared = read_int(text, "shared_expert_intermediate_size", default=0)
    n_shared = read_int(text, "n_shared_experts", default=0)
    if n_shared and not shared:
        shared = n_shared * moe_intermediate
    return shared


def moe_layer_count(text: dict[str, Any], layers: int) -> int:
    """Decoder layers whose MLP is MoE: not among the first_k_dense_replace dense ones nor
    mlp_only_layers, and on the decoder_sparse_step / moe_layer_freq stride."""
    if not expert_count(text):
        return 0
    first_dense = read_int(text, "first_k_dense_replace", default=0)
    step = read_int(text, "decoder_sparse_step", "moe_layer_freq", default=1) or 1
    mlp_only = set(text.get("mlp_only_layers") or [])
    return sum(1 for i in range(layers) if i >= first_dense and i not in mlp_only and (i + 1) % step == 0)


def describe_model(config: dict[str, Any], index: dict[str, Any] | None, *, source: str) -> ModelInfo:
    text = text_config_of(config)
    where = f"model {source}: config.json"
    architectures = tuple(config.get("architectures") or text.get("architectures") or ())
    if not architectures:
        raise UsageError(f"{where} has no 'architectures'", hint="is this a Hugging Face model config?")
    hidden = read_int(text, "hidden_size", "d_model", "n_embd")
    layers = read_int(text, "num_hidden_layers", "n_layer", "num_layers")
    heads = read_int(text, "num_attention_heads", "n_head")
    if not hidden or not layers or not heads:
        raise UsageError(f"{where} lacks hidden_size, num_hidden_layers or num_attention_heads")
    kv_heads = read_int(text, "num_key_value_heads", "multi_query_group_num", default=heads) or heads
    head_dim = read_int(text, "head_dim", default=hidden // heads) or hidden // heads
    vocab = read_int(text, "vocab_size", "padded_vocab_size", default=0) or 0
    intermediate = read_int(text, "intermediate_size", "ffn_hidden_size", default=4 * hidden) or 4 * hidden

    full_layers, linear_layers = attention_layer_counts(text, layers, architecture=str(architectures[0]))
    mtp = mtp_layer_count(text)
    experts = expert_count(text) or None
    per_token = read_int(text, "num_experts_per_tok", "moe_topk", "num_experts_per_token") if experts else None
    moe_inter = read_int(text, "moe_intermediate_size", default=intermediate) if experts else None
    kv_lora = read_int(text, "kv_lora_rank")
    mla = bool(kv_lora)
    rope_dim = read_int(text, "qk_rope_head_dim") if mla else None
    v_head = read_int(text, "v_head_dim") if mla else None
    sliding = sliding_window(text)
    quant = quant_method(config) or quant_method(text)
    dtype = config_dtype(config, text)
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


def sliding_window(text: dict[str, Any]) -> int | None:
    """The sliding-window size, when the config turns it on (use_sliding_window) or names
    sliding_attention layers; None otherwise."""
    window = read_int(text, "sliding_window")
    if not window or text.get("use_sliding_window") is False:
        layer_types = text.get("layer_types")
        if isinstance(layer_types, list) and "sliding_attention" in layer_types:
            return window or read_int(text, "sliding_window_size")
        return None
    return window


def quant_method(cfg: dict[str, Any]) -> str | None:
    """quantization_config (or compression_config) method, lower-case: "fp8", "awq", ..."""
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
    hidden = read_int(text, "hidden_size", default=0) or 0
    layers = read_int(text, "num_hidden_layers", default=0) or 0
    heads = read_int(text, "num_attention_heads", default=1) or 1
    kv_heads = read_int(text, "num_key_value_heads", default=heads) or heads
    head_dim = read_int(text, "head_dim", default=hidden // heads) or hidden // heads
    vocab = read_int(text, "vocab_size", default=0) or 0
    inter = read_int(text, "intermediate_size", default=4 * hidden) or 4 * hidden
    architectures = config.get("architectures") or text.get("architectures") or [""]
    full, linear = attention_layer_counts(text, layers, architecture=str(architectures[0]))
    tied = bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", False)))

    attn = _full_attention_params(text, hidden, heads, kv_heads, head_dim)
    lin = _linear_attention_params(text, hidden) if linear else 0
    dense_mlp = 3 * hidden * inter
    experts = expert_count(text)
    moe_inter = read_int(text, "moe_intermediate_size", default=inter) or inter
    shared_inter = shared_expert_intermediate(text, moe_inter)
    moe_layers = moe_layer_count(text, layers)
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
    mtp = mtp_layer_count(text)
    if mtp:
        # Each MTP/NextN layer: fc 2H->H, two pre-fc norms, one full-attention decoder
        # layer (MoE when the model is), and a final norm; embeddings are shared.
        mtp_mlp = (experts * 3 * hidden * moe_inter + experts * hidden + 3 * hidden * shared_inter) if experts else dense_mlp
        out["mtp"] = mtp * (2 * hidden * hidden + 2 * hidden + attn + mtp_mlp + per_layer_norms + hidden)
    return out


def _full_attention_params(text: dict[str, Any], hidden: int, heads: int, kv_heads: int, head_dim: int) -> int:
    kv_lora = read_int(text, "kv_lora_rank")
    if kv_lora:  # MLA (DeepSeek V2/V3): low-rank q and kv projections
        q_lora = read_int(text, "q_lora_rank")
        nope = read_int(text, "qk_nope_head_dim", default=128) or 128
        rope = read_int(text, "qk_rope_head_dim", default=64) or 64
        v_dim = read_int(text, "v_head_dim", default=128) or 128
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
    k_heads = read_int(text, "linear_num_key_heads", default=0) or 0
    v_heads = read_int(text, "linear_num_value_heads", default=0) or 0
    k_dim = k_heads * (read_int(text, "linear_key_head_dim", default=0) or 0)
    v_head_dim = read_int(text, "linear_value_head_dim", default=0) or 0
    v_dim = v_heads * v_head_dim
    kernel = read_int(text, "linear_conv_kernel_dim", default=4) or 4
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
    hidden = read_int(vision, "hidden_size", "embed_dim", default=0) or 0
    depth = read_int(vision, "depth", "num_hidden_layers", default=0) or 0
    inter = read_int(vision, "intermediate_size", default=4 * hidden) or 4 * hidden
    patch = read_int(vision, "patch_size", default=14) or 14
    temporal = read_int(vision, "temporal_patch_size", default=1) or 1
    channels = read_int(vision, "in_channels", "num_channels", default=3) or 3
    merge = read_int(vision, "spatial_merge_size", default=2) or 2
    out_hidden = read_int(vision, "out_hidden_size", default=text_hidden) or text_hidden
    positions = read_int(vision, "num_position_embeddings", default=2304) or 2304
    block = 4 * hidden * hidden + 4 * hidden + 2 * hidden * inter + inter + hidden + 4 * hidden
    merged = hidden * merge * merge
    merger = 2 * hidden + merged * merged + merged + merged * out_hidden + out_hidden
    patch_embed = channels * temporal * patch * patch * hidden + hidden
    return depth * block + patch_embed + positions * hidden + merger
