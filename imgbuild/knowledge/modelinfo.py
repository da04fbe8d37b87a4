"""What a model checkpoint is, read from its config.json (and safetensors index).

The one reader of config.json and the one parameter counter: read_geometry turns the
config into a ModelGeometry, describe_model wraps it with the index's evidence into a
ModelInfo, and the planner (imgbuild.knowledge.memory) takes ModelInfo.geometry, never
the raw config. The block counters (attention_params, linear_attention_params, mlp_params,
mtp_layer_params, vision_params) return per-GPU and total parameters, so inspect's
count and the planner's weights cannot drift apart.

Pure data layer: files are read from a local directory or through a ``hub``
object handed in by the caller (imgbuild.adapters.hub.HubClient fetches from Hugging
Face); this module never imports httpx.

Parameter counts follow the module shapes of the SGLang model definitions; for
Qwen3.5/3.6 (GDN hybrid + MTP + vision tower) the breakdown adds up exactly to the
published total of the 27B checkpoint (27,781,427,952).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Protocol, overload

from imgbuild.errors import UsageError
from imgbuild.knowledge.quantscheme import (
    DSV4_FP4_EXPERT_BYTES,
    QUANT_CONFIG_NAME,
    QuantScheme,
    read_quant_scheme,
    with_standalone_quant_config,
)

CONFIG_NAME = "config.json"
INDEX_NAME = "model.safetensors.index.json"
MAX_CONFIG_BYTES = 16 * 2**20  # the same caps as the Hub downloads (imgbuild.adapters.hub)
MAX_INDEX_BYTES = 64 * 2**20
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
# LFM2's short-convolution layers are "conv" (configuration_lfm2.py) or "short_conv" (sglang configs/lfm2.py)
LINEAR_LAYER_TYPES = ("linear_attention", "mamba", "gated_deltanet", "conv", "short_conv")
MODELLED_VISION = frozenset({"qwen3-vl", "qwen2.5-vl", "qwen2-vl", "siglip", "mllama", "clip", "moonvit", "gemma4", "pixtral"})  # towers counted from their shapes


class HubFetcher(Protocol):
    def fetch(self, repo: str, revision: str, filename: str) -> bytes | None:
        """The file's bytes, or None when the repository has no such file."""


@dataclass(frozen=True)
class VisionGeometry:
    """A vision tower as SGLang builds it: Qwen3-VL's blocks ("qwen3-vl"), or only what
    adjust_mem_fraction_for_vlm reads ("opaque": its parameters come from the index)."""

    kind: str  # "qwen3-vl" | "qwen2.5-vl" | "qwen2-vl" | "siglip" | "mllama" | "clip" | "moonvit" | "gemma4" | "pixtral" | "opaque"
    depth: int = 0
    hidden_size: int = 0
    intermediate_size: int = 0
    out_hidden_size: int = 0
    patch_size: int = 0
    temporal_patch_size: int = 1
    in_channels: int = 3
    spatial_merge_size: int = 2
    num_position_embeddings: int = 0
    deepstack_layers: int = 0
    num_hidden_layers_attr: int | None = None  # what adjust_mem_fraction_for_vlm reads
    hidden_size_attr: int | None = None  # the same, where vision_config.hidden_size is not the tower's width
    # Mllama's tower (models/mllama.py): a second ("global") encoder, tiles, aspect-ratio tables
    global_layers: int = 0
    max_num_tiles: int = 0
    aspect_ratios: int = 0
    vision_output_dim: int = 0


@dataclass(frozen=True)
class ModelGeometry:
    """The model's shapes, read once from config.json (read_geometry): what the parameter
    counter and SGLang's memory accounting (imgbuild.knowledge.memory) need."""

    architecture: str
    model_type: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int  # qk_nope + qk_rope for MLA
    v_head_dim: int
    vocab_size: int
    intermediate_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    dtype_bytes: int  # as SGLang serves it: float32 checkpoints load in bfloat16
    dtype: str = "bfloat16"  # the checkpoint dtype's name as the config spells it
    # the context length SGLang derives from the config (derived_context_length): with rope_scaling's factor
    # as transformers 4 passes it on, and without (transformers 5 nests Gemma 3's per layer type); 0: unread
    context_length: int = 0
    context_length_unscaled: int = 0
    attn_output_gate: bool = False
    # Gemma 4's full-attention layers keep no v_proj in the checkpoint (attention_k_eq_v: V is K);
    # SGLang's qkv_proj still holds V's rows (models/gemma4_causal.py loads K into them)
    attention_k_eq_v: bool = False
    qk_norm: bool = False
    qkv_bias: bool = False
    # hybrid linear attention: Gated DeltaNet, or NemotronH's Mamba2 mixer read into the same fields
    # (key heads = n_groups, key head dim = ssm_state_size, value heads = mamba_num_heads, value head
    # dim = mamba_head_dim: configs/mamba_utils.py Mamba2StateShape sizes both states alike)
    full_attention_layers: int = 0
    linear_attention_layers: int = 0
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel_dim: int = 4
    linear_kind: str = "gated_deltanet"  # or "mamba2", or "short_conv" (LFM2)
    # NemotronH's layers are one block each (a mixer or an MLP, one norm): the dense MLP layers
    # counted apart (None: every layer that is not MoE), norms per layer, and its MLPs and experts
    # as up / down without a gate (models/nemotron_h.py NemotronHMLP, is_gated=False)
    dense_mlp_layers: int | None = None
    norms_per_layer: int = 2
    mlp_matrices: int = 3
    mamba_ssm_dtype: str | None = None
    # MLA
    mla: bool = False  # SGLang builds MLA attention (DeepSeek / Kimi): the latent KV cache
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    # DeepSeek sparse attention (V3.2, GLM-5): config.json has index_topk (configs/model_config.py
    # is_deepseek_dsa); its indexer keeps an FP8 key of index_head_dim per token and layer
    dsa_indexer: bool = False
    dsa_index_head_dim: int = 128
    # MoE
    num_experts: int = 0
    num_experts_per_token: int | None = None
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    moe_layers: int = 0
    # speculative draft layers in the checkpoint (MTP / NextN)
    mtp_layers: int = 0
    mtp_has_own_embeddings: bool = False  # DeepSeek's NextN layer ships embed + head copies
    vision: VisionGeometry | None = None
    multimodal: bool = False
    quantization: str | None = None
    quant: QuantScheme | None = None  # the weight format of a quantized checkpoint (knowledge/quantscheme.py)
    draft_vocab_size: int = 0  # an EAGLE3 draft's own head vocabulary (models/llama_eagle3.py)
    sliding_window: int | None = None
    # the sliding-window layers as SGLang's hybrid SWA pool splits them (configs/model_config.py
    # get_hybrid_layer_ids, 0.5.8-0.5.23), and their KV heads and head dims (ModelConfig.swa_head_dim,
    # get_swa_num_kv_heads); 0 layers where the config names none
    swa_layers: int = 0
    swa_num_kv_heads: int = 0
    swa_head_dim: int = 0
    swa_v_head_dim: int = 0
    checkpoint_bytes: int | None = None  # the index's total_size (or parameters x dtype when only they are given)
    checkpoint_parameters: int | None = None  # the index's total_parameters (or the shapes' count when absent)

    @property
    def hybrid(self) -> bool:
        return self.linear_attention_layers > 0

    @property
    def global_attention_layers(self) -> int:
        """Full-attention layers that are not sliding-window ones."""
        return self.full_attention_layers - min(self.swa_layers, self.full_attention_layers)

    @property
    def kv_layers(self) -> int:
        return self.full_attention_layers if self.hybrid else self.num_layers

    @property
    def dense_layers(self) -> int:
        """Decoder layers with a dense MLP."""
        return self.num_layers - self.moe_layers if self.dense_mlp_layers is None else self.dense_mlp_layers


@dataclass(frozen=True)
class ModelInfo:
    source: str
    architectures: tuple[str, ...]
    model_type: str
    config: dict[str, Any] = field(repr=False)
    text_config: dict[str, Any] = field(repr=False)
    geometry: ModelGeometry = field(repr=False)  # what the planner reads; the shapes below are views of it
    parameters: int | None
    weight_bytes: int | None
    parameters_source: str = "index"  # "index" (safetensors metadata) or "shapes"
    # "index", "shapes" (parameters x dtype), "quantization config" (knowledge/quantscheme.py), None
    weight_bytes_source: str | None = None
    parameter_breakdown: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def hidden_size(self) -> int:
        return self.geometry.hidden_size

    @property
    def num_hidden_layers(self) -> int:
        return self.geometry.num_layers

    @property
    def num_attention_heads(self) -> int:
        return self.geometry.num_attention_heads

    @property
    def num_key_value_heads(self) -> int:
        return self.geometry.num_kv_heads

    @property
    def head_dim(self) -> int:
        return self.geometry.head_dim

    @property
    def vocab_size(self) -> int:
        return self.geometry.vocab_size

    @property
    def intermediate_size(self) -> int:
        return self.geometry.intermediate_size

    @property
    def full_attention_layers(self) -> int:
        return self.geometry.full_attention_layers

    @property
    def linear_attention_layers(self) -> int:
        return self.geometry.linear_attention_layers

    @property
    def mtp_layers(self) -> int:
        return self.geometry.mtp_layers

    @property
    def moe_experts(self) -> int | None:
        return self.geometry.num_experts or None

    @property
    def moe_experts_per_token(self) -> int | None:
        return self.geometry.num_experts_per_token

    @property
    def moe_intermediate_size(self) -> int | None:
        return self.geometry.moe_intermediate_size or None

    @property
    def mla(self) -> bool:
        return self.geometry.kv_lora_rank > 0  # MLA-shaped weights, whether or not SGLang builds MLA attention

    @property
    def kv_lora_rank(self) -> int | None:
        return self.geometry.kv_lora_rank or None

    @property
    def qk_rope_head_dim(self) -> int | None:
        return (self.geometry.qk_rope_head_dim or None) if self.mla else None

    @property
    def v_head_dim(self) -> int | None:
        return self.geometry.v_head_dim if self.mla else None

    @property
    def sliding_window(self) -> int | None:
        return self.geometry.sliding_window

    @property
    def quantization(self) -> str | None:
        return self.geometry.quantization

    @property
    def dtype(self) -> str:
        return self.geometry.dtype

    @property
    def has_vision(self) -> bool:
        return self.geometry.vision is not None

    @property
    def tie_word_embeddings(self) -> bool:
        return self.geometry.tie_word_embeddings

    @property
    def features(self) -> tuple[str, ...]:
        return _features(self.geometry)

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
            "weight_bytes_source": self.weight_bytes_source,
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
    try:
        exists = Path(source).exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        exists = False
    return exists or source.startswith((".", "/", "~")) or source.endswith(".json")


def inspect_model(source: str, *, hub: HubFetcher | None = None) -> ModelInfo:
    try:
        config, index = read_model_files(source, hub=hub)
        return describe_model(config, index, source=source)
    except UsageError as exc:
        # What a server answered stays cached: an error about it says where, and how to drop it.
        hub_id = None if is_local_source(source) else split_hub_id(source)
        note = getattr(hub, "cache_note", None)
        where = note(*hub_id) if hub_id is not None and note is not None else None
        if where is None:
            raise
        raise UsageError(exc.message, hint=f"{exc.hint}; {where}" if exc.hint else where) from exc


_MODEL_HINT = "give a model directory holding config.json, a config.json path, or a Hugging Face id org/name"


def read_model_files(source: str, *, hub: HubFetcher | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if not source.strip():
        # Path("") is the working directory: name the empty argument, not a missing ./config.json
        raise UsageError(f"model {source!r}: an empty model path", hint=_MODEL_HINT)
    if is_local_source(source):
        path = Path(source).expanduser()
        if path.is_dir():
            config_path, index_path = path / CONFIG_NAME, path / INDEX_NAME
        elif path.is_file():
            config_path, index_path = path, path.with_name(INDEX_NAME)
        elif path.exists():
            raise UsageError(f"model {source}: a device, pipe or socket, not a directory or a file", hint=_MODEL_HINT)
        else:
            raise UsageError(f"model {source}: no such file or directory", hint=_MODEL_HINT)
        if not config_path.is_file():
            raise UsageError(f"model {source}: {config_path} is missing", hint="the directory must hold config.json")
        config = _parse_json(read_bounded(config_path, MAX_CONFIG_BYTES), str(config_path), local=True)
        index = (_parse_json(read_bounded(index_path, MAX_INDEX_BYTES), str(index_path), local=True)
                 if index_path.is_file() else None)
        quant_path = config_path.with_name(QUANT_CONFIG_NAME)
        if quant_path.is_file():
            # configs/model_config.py reads a standalone modelopt hf_quant_config.json beside config.json
            hf_quant = _parse_json(read_bounded(quant_path, MAX_CONFIG_BYTES), str(quant_path), local=True)
            config = with_standalone_quant_config(config, hf_quant)
        check_model_files(config, index, source=source)
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
    if _looks_quantized_without_config(config, index):
        raw_quant = hub.fetch(repo, revision, QUANT_CONFIG_NAME)
        if raw_quant is not None:
            config = with_standalone_quant_config(config, _parse_json(raw_quant, f"{source}:{QUANT_CONFIG_NAME}"))
    check_model_files(config, index, source=source)
    return config, index


def _looks_quantized_without_config(config: dict[str, Any], index: dict[str, Any] | None) -> bool:
    """A Hub checkpoint whose index holds under 3/4 of its shapes' bytes at the config's dtype but
    whose config.json names no quantization: its format is in hf_quant_config.json (modelopt).
    SGLang asks the Hub for that file for every model; imgbuild only for these, saving a request."""
    if config.get("quantization_config") or config.get("compression_config"):
        return False
    total = ((index or {}).get("metadata") or {}).get("total_size")
    if not isinstance(total, int) or total <= 0:
        return False
    try:
        g = read_geometry(config)
    except (TypeError, ValueError, KeyError, AttributeError):
        return False
    counted = sum(parameter_breakdown(g).values())
    return total < 0.75 * counted * DTYPE_BYTES.get(g.dtype, 2)


def read_bounded(path: Path, max_bytes: int) -> bytes:
    """A local file's bytes, refused past max_bytes before more is read (a weights file
    passed for config.json, a sparse 2 GB file) and on a read error."""
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > max_bytes:
        raise UsageError(f"{path} is larger than {max_bytes // 2**20} MiB, too large for a {path.name}",
                         hint="give the model's directory or its config.json, not a weights file")
    return data


# Bounds on the counts a config gives, far above any checkpoint (the largest have ~100 layers
# and 384 experts), checked before any loop runs over them: a count of 10^9 layers would
# take minutes of CPU to plan. Sizes (widths, vocabularies, context lengths) get room to 2^31.
MAX_LAYER_COUNT = 10_000
MAX_SIZE = 2**31
_COUNT_KEYS = frozenset({
    "num_hidden_layers", "num_layers", "n_layers", "depth", "num_attention_heads", "num_key_value_heads",
    "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts", "num_experts_per_tok",
    "n_shared_experts", "mtp_num_hidden_layers", "num_nextn_predict_layers", "full_attention_interval",
    "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step", "linear_num_key_heads",
    "linear_num_value_heads", "sliding_window_pattern",
})  # fmt: skip
_SIZE_KEYS = frozenset({
    "hidden_size", "intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size", "head_dim",
    "vocab_size", "max_position_embeddings", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "sliding_window",
    "out_hidden_size", "patch_size",
})  # fmt: skip
# Divisors of the plan (SGLang's per-layer, per-head and per-token arithmetic): 0 is no model.
_POSITIVE_KEYS = frozenset({
    "num_hidden_layers", "num_layers", "n_layers", "depth", "num_attention_heads", "num_key_value_heads",
    "hidden_size", "head_dim", "vocab_size", "max_position_embeddings", "linear_num_key_heads",
    "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "patch_size",
})  # fmt: skip
_NESTED_CONFIGS = ("text_config", "llm_config", "language_config", "vision_config")


def check_model_files(config: dict[str, Any], index: dict[str, Any] | None, *, source: str) -> None:
    """Refuse values no checkpoint has, before anything counts with them: a NaN, an
    infinity, a negative or absurd count, architectures that are not a list of names."""
    for where, cfg in [("", config), *((f"{k}.", config[k]) for k in _NESTED_CONFIGS if isinstance(config.get(k), dict))]:
        for key in _COUNT_KEYS | _SIZE_KEYS:
            value = cfg.get(key)
            if value is None or isinstance(value, bool):
                continue
            limit = MAX_LAYER_COUNT if key in _COUNT_KEYS else MAX_SIZE
            least = 1 if key in _POSITIVE_KEYS else 0
            if not isinstance(value, (int, float)) or value != value or not least <= value <= limit \
                    or (isinstance(value, float) and not value.is_integer()):
                raise UsageError(f"model {source}: config.json {where}{key} is {_shown(value)}",
                                 hint=f"a model's {key} is a whole number from {least} to {limit:,}")
        for key in ("architectures", "mlp_only_layers", "layer_types"):
            value = cfg.get(key)
            if value is not None and not (isinstance(value, list) and len(value) <= MAX_LAYER_COUNT):
                raise UsageError(f"model {source}: config.json {where}{key} is {_shown(value)}", hint="it must be a list")
        for key, value in cfg.items():  # names looked up in tables (dtypes, model types): text or null
            if (key == "model_type" or key.endswith("dtype")) and value is not None and not isinstance(value, str):
                raise UsageError(f"model {source}: config.json {where}{key} is {_shown(value)}",
                                 hint='it must be a name, e.g. "bfloat16"')
        if not all(isinstance(a, str) for a in cfg.get("architectures") or []):
            raise UsageError(f"model {source}: config.json {where}architectures must be class names, "
                             f"not {_shown(cfg['architectures'])}", hint='e.g. ["Qwen3ForCausalLM"]')
    metadata = (index or {}).get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise UsageError(f"model {source}: {INDEX_NAME} metadata is {_shown(metadata)}", hint="it must be an object")
    for key in ("total_parameters", "total_size"):
        value = (metadata or {}).get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise UsageError(f"model {source}: {INDEX_NAME} metadata.{key} is {_shown(value)}",
                             hint="it must be a whole number of at least 0")


def _shown(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 200:
        return f"a number of {len(str(value))} digits"
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _parse_json(data: bytes, where: str, *, local: bool = False) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        hint = "give the model's config.json" if local else "re-download the file"
        raise UsageError(f"{where} is not valid JSON: {exc}", hint=hint) from None
    except RecursionError:
        raise UsageError(f"{where} is nested too deeply to be a model config") from None
    if not isinstance(value, dict):
        raise UsageError(f"{where} must hold a JSON object")
    return value


# ----------------------------------------------------------------------------- transformers' defaults
# A published config.json holds only what differs from its config class's defaults; transformers
# (and SGLang, which loads it through AutoConfig) fill the rest. imgbuild/data/transformers_defaults.json
# holds those class defaults, only the fields the geometry reads, and each class's sub_configs (the
# class a nested config takes when it names no model_type), as scripts/gen_matrix/transformers_defaults.py
# read them from the transformers wheel SGLang pins (never by hand). Read lazily, once.
TRANSFORMERS_DEFAULTS_PATH = Path(__file__).resolve().parents[1] / "data" / "transformers_defaults.json"


@lru_cache(maxsize=1)
def transformers_defaults() -> dict[str, Any]:
    """{model_type: {"class", "file", "defaults", "sub_configs"}} of the generated file; {} when it is absent."""
    try:
        return json.loads(TRANSFORMERS_DEFAULTS_PATH.read_text(encoding="utf-8")).get("model_types") or {}
    except FileNotFoundError:
        return {}


# What the config classes' __post_init__ computes when layer_types is None: every
# sliding_window_pattern-th layer is full attention, the others sliding. Gemma3TextConfig
# (models/gemma3/configuration_gemma3.py: kwargs.get("sliding_window_pattern", 6)) and
# Gemma2Config (models/gemma2/configuration_gemma2.py: `(i + 1) % 2`).
SLIDING_WINDOW_PATTERN = {"gemma3_text": 6, "gemma2": 2}


# keys a config class's __init__ takes under an older name before its defaults apply
# (models/bloom/configuration_bloom.py: n_embed, popped from kwargs, is hidden_size; models/lfm2/
# configuration_lfm2.py: block_ff_dim is intermediate_size, tie_embedding tie_word_embeddings)
_INIT_ALIASES = {"bloom": {"n_embed": "hidden_size"},
                 "lfm2": {"block_ff_dim": "intermediate_size", "tie_embedding": "tie_word_embeddings"}}


def _with_class_defaults(cfg: dict[str, Any], model_type: str) -> dict[str, Any]:
    entry = transformers_defaults().get(model_type) or {}
    aliased = {new: cfg[old] for old, new in _INIT_ALIASES.get(model_type, {}).items() if old in cfg and new not in cfg}
    filled = {**(entry.get("defaults") or {}), **cfg, **aliased}
    if model_type == "lfm2" and filled.get("layer_types") is None and isinstance(filled.get("num_hidden_layers"), int):
        # Lfm2Config.__post_init__: full_attn_idxs (default: every layer) name the attention layers, the rest "conv"
        idxs = filled.get("full_attn_idxs")
        idxs = set(idxs if isinstance(idxs, list) else range(filled["num_hidden_layers"]))
        filled["layer_types"] = ["full_attention" if i in idxs else "conv" for i in range(filled["num_hidden_layers"])]
    pattern = SLIDING_WINDOW_PATTERN.get(model_type)
    if pattern and filled.get("layer_types") is None and isinstance(filled.get("num_hidden_layers"), int):
        every = filled.get("sliding_window_pattern") if isinstance(filled.get("sliding_window_pattern"), int) else pattern
        filled["layer_types"] = [
            "full_attention" if (i + 1) % max(1, every) == 0 else "sliding_attention"
            for i in range(filled["num_hidden_layers"])
        ]
    return filled


def with_transformers_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """config.json as transformers loads it: each (sub-)config's missing fields take its class's
    defaults; a model_type transformers does not ship (remote code) passes unchanged."""
    model_type = str(config.get("model_type") or "")
    entry = transformers_defaults().get(model_type)
    if entry is None:
        return config
    filled = _with_class_defaults(config, model_type)
    for key, sub_type in (entry.get("sub_configs") or {}).items():
        sub = config.get(key)
        if sub is None and config.get("hidden_size") is not None:
            # A flat config (Qwen2.5-VL's): __post_init__ builds text_config from the top-level
            # fields (models/qwen2_5_vl/configuration_qwen2_5_vl.py); a default one would hide them.
            continue
        sub = dict(sub) if isinstance(sub, dict) else {}
        filled[key] = _with_class_defaults(sub, str(sub.get("model_type") or sub_type))
    for key in _NESTED_CONFIGS:
        sub = config.get(key)
        if key not in (entry.get("sub_configs") or {}) and isinstance(sub, dict) and sub.get("model_type"):
            # an AutoConfig sub-config (LlavaConfig's text_config, vision_config): transformers builds it
            # from CONFIG_MAPPING[its model_type] (models/llava/configuration_llava.py), so its class's defaults
            filled[key] = _with_class_defaults(dict(sub), str(sub["model_type"]))
    return filled


# ----------------------------------------------------------------------------- config readers
# read_geometry and the launch checks read config.json through these.


@overload
def read_int(cfg: Mapping[str, Any], *keys: str, default: int) -> int: ...
@overload
def read_int(cfg: Mapping[str, Any], *keys: str, default: None = None) -> int | None: ...
def read_int(cfg: Mapping[str, Any], *keys: str, default: int | None = None) -> int | None:
    """The first of keys holding a number (booleans skipped), as an int; else default.

    A NaN, an infinity or a number past 2^53 (JSON's exact integers) in a key that
    check_model_files does not bound is bad input here, not a crash or a count of 10^308."""
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            if value != value or abs(value) > 2**53:
                raise UsageError(f"config.json {key} is {_shown(value)}", hint=f"a model's {key} is a whole number")
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
    pattern = block_pattern(text)
    if pattern is not None:
        return pattern[:layers].count(NEMOTRON_H_ATTENTION), pattern[:layers].count(NEMOTRON_H_MAMBA)
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


# NemotronH (sglang/srt/configs/nemotron_h.py, 0.5.11): each layer is one block, its kind a letter of
# hybrid_override_pattern, or a name in layers_block_type (the newer spelling, which wins)
NEMOTRON_H_MAMBA, NEMOTRON_H_ATTENTION, NEMOTRON_H_MLP, NEMOTRON_H_MOE = "M", "*", "-", "E"
_NEMOTRON_H_BLOCK_NAMES = {"mamba": NEMOTRON_H_MAMBA, "attention": NEMOTRON_H_ATTENTION, "mlp": NEMOTRON_H_MLP,
                           "moe": NEMOTRON_H_MOE}
# NemotronHConfig.__init__'s defaults for the Mamba2 mixer (mamba_num_heads, mamba_head_dim,
# ssm_state_size, n_groups, conv kernel), which transformers' defaults table does not carry
_NEMOTRON_H_MAMBA_DEFAULTS = (128, 64, 128, 8, 4)


def block_pattern(text: dict[str, Any]) -> str | None:
    """A NemotronH config's layer kinds as pattern letters; None for every other model."""
    kinds = text.get("layers_block_type")
    if isinstance(kinds, list) and all(k in _NEMOTRON_H_BLOCK_NAMES for k in kinds):
        return "".join(_NEMOTRON_H_BLOCK_NAMES[k] for k in kinds)
    pattern = text.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern and set(pattern) <= set(_NEMOTRON_H_BLOCK_NAMES.values()):
        return pattern
    return None


def _mamba2_shapes(text: dict[str, Any], pattern: str, layers: int) -> dict[str, Any]:
    """NemotronH's Mamba2 mixer in the linear-attention fields, and its one-block layers
    (models/nemotron_h.py: NemotronHMambaDecoderLayer's MambaMixer2, NemotronHMLP)."""
    heads, head_dim, state, groups, kernel = _NEMOTRON_H_MAMBA_DEFAULTS
    return {
        "linear_kind": "mamba2",
        "linear_num_key_heads": read_int(text, "n_groups", "mamba_n_groups", default=groups),
        "linear_key_head_dim": read_int(text, "ssm_state_size", default=state),
        "linear_num_value_heads": read_int(text, "mamba_num_heads", default=heads),
        "linear_value_head_dim": read_int(text, "mamba_head_dim", default=head_dim),
        "linear_conv_kernel_dim": read_int(text, "conv_kernel", "mamba_d_conv", default=kernel),
        "dense_mlp_layers": pattern[:layers].count(NEMOTRON_H_MLP),
        "norms_per_layer": 1,
        "mlp_matrices": 2,
    }


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
    per_shared = read_int(text, "moe_shared_expert_intermediate_size", default=0)  # NemotronH
    if n_shared and not shared:
        shared = n_shared * (per_shared or moe_intermediate)
    return shared


def moe_layer_count(text: dict[str, Any], layers: int) -> int:
    """Decoder layers whose MLP is MoE: NemotronH's MoE blocks; else those not among the
    first_k_dense_replace dense ones nor mlp_only_layers, and on the decoder_sparse_step /
    moe_layer_freq stride."""
    if not expert_count(text):
        return 0
    pattern = block_pattern(text)
    if pattern is not None:
        return pattern[:layers].count(NEMOTRON_H_MOE)
    first_dense = read_int(text, "first_k_dense_replace", default=0)
    step = read_int(text, "decoder_sparse_step", "moe_layer_freq", default=1) or 1
    mlp_only = set(text.get("mlp_only_layers") or [])
    return sum(1 for i in range(layers) if i >= first_dense and i not in mlp_only and (i + 1) % step == 0)


# ----------------------------------------------------------------------------- geometry: the one reading

# Architectures whose vision tower SGLang builds from Qwen3-VL's blocks (models/qwen3_vl.py)
_QWEN3_VL_VISION = ("qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")
# transformers' defaults for the Qwen3-VL vision tower, the same in Qwen3VLVisionConfig
# (src/transformers/models/qwen3_vl/configuration_qwen3_vl.py) and Qwen3_5VisionConfig
# (src/transformers/models/qwen3_5/configuration_qwen3_5.py): what SGLang sees when a
# checkpoint's vision_config leaves a field out.
QWEN3_VL_PATCH_SIZE = 16
QWEN3_VL_TEMPORAL_PATCH_SIZE = 2
QWEN3_VL_POSITION_EMBEDDINGS = 2304
# Qwen3VLVisionConfig and Qwen3VLMoeVisionConfig (models/qwen3_vl_moe/configuration_qwen3_vl_moe.py)
# default deepstack_visual_indexes to [8, 16, 24]; Qwen3_5VisionConfig has no deepstack mergers.
QWEN3_VL_DEEPSTACK_INDEXES = (8, 16, 24)
# Vision configs SGLang builds with its own class, whose defaults fill what the checkpoint leaves
# out: (num_hidden_layers, hidden_size). Kimi K2.5 (sglang/srt/configs/kimi_k25.py, 0.5.9
# KimiK25VisionConfig: 27 and 1152) names its fields vt_num_hidden_layers and vt_hidden_size, which
# the class keeps as other attributes, so adjust_mem_fraction_for_vlm reads the defaults.
SGLANG_VISION_DEFAULTS = {"kimi_k25": (27, 1152)}
# MllamaVisionConfig.__post_init__ (transformers 5.6.0 models/mllama/configuration_mllama.py):
# [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]] when the config gives none
MLLAMA_DEFAULT_ASPECT_RATIOS = 8


def _deepstack_layers(vision_cfg: dict[str, Any], *, model_type: str) -> int:
    indexes = vision_cfg.get("deepstack_visual_indexes")
    if indexes is None:
        qwen3_vl = model_type.startswith("qwen3_vl") or str(vision_cfg.get("model_type", "")).startswith("qwen3_vl")
        indexes = QWEN3_VL_DEEPSTACK_INDEXES if qwen3_vl else ()
    return len(indexes)


def _vit_fields(vision_cfg: dict[str, Any], *, text_hidden: int, patch_default: int, image_default: int
                ) -> tuple[dict[str, Any], int]:
    """The fields a plain ViT tower (SigLIP, Mllama's) has in common, and its patches per side."""
    patch = read_int(vision_cfg, "patch_size", default=patch_default) or patch_default
    fields = {
        "depth": read_int(vision_cfg, "num_hidden_layers", default=0),
        "hidden_size": read_int(vision_cfg, "hidden_size", default=0),
        "intermediate_size": read_int(vision_cfg, "intermediate_size", default=0),
        "out_hidden_size": text_hidden,
        "patch_size": patch,
        "in_channels": read_int(vision_cfg, "num_channels", default=3),
        "num_hidden_layers_attr": read_int(vision_cfg, "num_hidden_layers", default=0) or None,
    }
    return fields, read_int(vision_cfg, "image_size", default=image_default) // patch


def _mllama_vision(vision_cfg: dict[str, Any], *, text_hidden: int) -> VisionGeometry:
    """Llama 3.2 Vision's tower (models/mllama.py MllamaVisionModel); transformers' MllamaVisionConfig
    (configuration_mllama.py) fills supported_aspect_ratios with its 8 pairs when absent."""
    fields, side = _vit_fields(vision_cfg, text_hidden=text_hidden, patch_default=14, image_default=448)
    ratios = vision_cfg.get("supported_aspect_ratios")
    return VisionGeometry(
        kind="mllama",
        **fields,
        num_position_embeddings=side * side + 1,  # the patches and the class token
        global_layers=read_int(vision_cfg, "num_global_layers", default=0),
        max_num_tiles=read_int(vision_cfg, "max_num_tiles", default=4),
        aspect_ratios=len(ratios) if isinstance(ratios, list) else MLLAMA_DEFAULT_ASPECT_RATIOS,
        vision_output_dim=read_int(vision_cfg, "vision_output_dim", default=0),
    )


def _qwen2_vl_vision(vision_cfg: dict[str, Any], *, model_type: str) -> VisionGeometry:
    """Qwen2-VL's and Qwen2.5-VL's towers (sglang 0.5.9 models/qwen2_vl.py, models/qwen2_5_vl.py) at
    transformers' Qwen2VLVisionConfig / Qwen2_5_VLVisionConfig defaults where the checkpoint gives none.
    Qwen2.5-VL's gated MLP is allocated at intermediate_size rounded up to 8 (3420 -> 3424); Qwen2-VL's
    is embed_dim x mlp_ratio, and its merger writes hidden_size (the text width)."""
    if model_type == "qwen2_5_vl":
        d = read_int(vision_cfg, "hidden_size", default=3584)
        inter = (read_int(vision_cfg, "intermediate_size", default=3420) + 7) // 8 * 8
        out = read_int(vision_cfg, "out_hidden_size", default=3584)
        kind = "qwen2.5-vl"
    else:
        d = read_int(vision_cfg, "embed_dim", default=1280)
        ratio = vision_cfg.get("mlp_ratio", 4)
        inter = int(d * (ratio if isinstance(ratio, (int, float)) else 4))
        out = read_int(vision_cfg, "hidden_size", default=3584)
        kind = "qwen2-vl"
    depth = read_int(vision_cfg, "depth", default=32)
    return VisionGeometry(
        kind=kind,
        depth=depth,
        hidden_size=d,
        intermediate_size=inter,
        out_hidden_size=out,
        patch_size=read_int(vision_cfg, "patch_size", default=14),
        temporal_patch_size=read_int(vision_cfg, "temporal_patch_size", default=2),
        in_channels=read_int(vision_cfg, "in_channels", default=3),
        spatial_merge_size=read_int(vision_cfg, "spatial_merge_size", default=2),
        num_hidden_layers_attr=read_int(vision_cfg, "num_hidden_layers", default=0) or None,
        # Qwen2-VL's vision_config.hidden_size is the merger's output (3584), which the mfs rule reads
        hidden_size_attr=out if kind == "qwen2-vl" else None,
    )


def _moonvit(vision_cfg: dict[str, Any], *, text_hidden: int) -> VisionGeometry:
    """Kimi K2.5's MoonViT tower and patch-merger projector (sglang 0.5.9 models/kimi_k25.py,
    configs/kimi_k25.py). SGLang builds KimiK25VisionConfig from the checkpoint's vision_config, whose
    vt_* names the class keeps as other attributes: the tower takes the class defaults (27 layers of
    1152, MLP 4304) unless the plain names are given, and the projector reads vt_hidden_size."""
    layers, hidden = SGLANG_VISION_DEFAULTS["kimi_k25"]
    merge = vision_cfg.get("merge_kernel_size") or [2, 2]
    merge_tokens = int(merge[0]) * int(merge[1]) if isinstance(merge, list) and len(merge) == 2 else 4
    tower_hidden = read_int(vision_cfg, "hidden_size", default=hidden)
    return VisionGeometry(
        kind="moonvit",
        depth=read_int(vision_cfg, "num_hidden_layers", default=layers),
        hidden_size=tower_hidden,
        intermediate_size=read_int(vision_cfg, "intermediate_size", default=4304),
        out_hidden_size=read_int(vision_cfg, "text_hidden_size", default=text_hidden),
        patch_size=read_int(vision_cfg, "patch_size", default=14),
        spatial_merge_size=merge_tokens,
        num_position_embeddings=read_int(vision_cfg, "init_pos_emb_height", default=64)
        * read_int(vision_cfg, "init_pos_emb_width", default=64),
        vision_output_dim=read_int(vision_cfg, "vt_hidden_size", default=tower_hidden) * merge_tokens,
        num_hidden_layers_attr=read_int(vision_cfg, "num_hidden_layers", default=layers),
    )


def _plain_tower(kind: str, vision_cfg: dict[str, Any], *, text_hidden: int, **fields: int) -> VisionGeometry:
    """A tower read from the usual fields (num_hidden_layers, hidden_size, intermediate_size, patch_size)
    into the text width, plus the kind's own ``fields``: Pixtral under Mistral 3 (sglang models/pixtral.py
    PixtralHFVisionModel; transformers' Mistral3MultiModalProjector: a norm, the patch merger over
    spatial_merge_size^2 patches, two linears), Gemma 4's (models/gemma4_vision.py Gemma4VisionEncoder,
    gemma4_mm.py Gemma4MultimodalEmbedder)."""
    depth = read_int(vision_cfg, "num_hidden_layers", default=0)
    return VisionGeometry(
        kind=kind,
        depth=depth,
        hidden_size=read_int(vision_cfg, "hidden_size", default=0),
        intermediate_size=read_int(vision_cfg, "intermediate_size", default=0),
        out_hidden_size=text_hidden,
        patch_size=read_int(vision_cfg, "patch_size", default=16),
        num_hidden_layers_attr=depth or None,
        **fields,
    )


def _vision_geometry(vision_cfg: Any, *, model_type: str, text_hidden: int, feature_layer: Any = None,
                     spatial_merge_size: int = 2) -> VisionGeometry | None:
    """The vision tower: Qwen3-VL's blocks when SGLang builds it from them (models/qwen3_vl.py),
    else only what adjust_mem_fraction_for_vlm reads (server_args.py)."""
    if not isinstance(vision_cfg, dict):
        return None
    if model_type in _QWEN3_VL_VISION or str(vision_cfg.get("model_type", "")).startswith(("qwen3", "qwen3_5")):
        return VisionGeometry(
            kind="qwen3-vl",
            depth=read_int(vision_cfg, "depth", "num_hidden_layers", default=0),
            hidden_size=read_int(vision_cfg, "hidden_size", default=0),
            intermediate_size=read_int(vision_cfg, "intermediate_size", default=0),
            out_hidden_size=read_int(vision_cfg, "out_hidden_size", default=text_hidden),
            patch_size=read_int(vision_cfg, "patch_size", default=QWEN3_VL_PATCH_SIZE),
            temporal_patch_size=read_int(vision_cfg, "temporal_patch_size", default=QWEN3_VL_TEMPORAL_PATCH_SIZE),
            in_channels=read_int(vision_cfg, "in_channels", default=3),
            spatial_merge_size=read_int(vision_cfg, "spatial_merge_size", default=2),
            num_position_embeddings=read_int(vision_cfg, "num_position_embeddings", default=QWEN3_VL_POSITION_EMBEDDINGS),
            deepstack_layers=_deepstack_layers(vision_cfg, model_type=model_type),
            num_hidden_layers_attr=read_int(vision_cfg, "num_hidden_layers", default=0) or None,
        )
    if model_type in ("qwen2_5_vl", "qwen2_vl"):
        return _qwen2_vl_vision(vision_cfg, model_type=model_type)
    if model_type == "mllama" or str(vision_cfg.get("model_type", "")) == "mllama_vision_model":
        return _mllama_vision(vision_cfg, text_hidden=text_hidden)
    if str(vision_cfg.get("model_type", "")) == "clip_vision_model" and model_type == "llava":
        # LLaVA's CLIP tower (SGLang models/clip.py CLIPVisionModel, every layer built) and transformers'
        # LlavaMultiModalProjector (two Linear layers; the first takes one hidden per feature layer);
        # CLIPVisionConfig's defaults: patch 32, image 224
        fields, side = _vit_fields(vision_cfg, text_hidden=text_hidden, patch_default=32, image_default=224)
        layers = len(feature_layer) if isinstance(feature_layer, list) else 1
        return VisionGeometry(kind="clip", **fields, num_position_embeddings=side * side + 1,
                              vision_output_dim=fields["hidden_size"] * max(1, layers))
    if str(vision_cfg.get("model_type", "")) == "siglip_vision_model" and model_type == "gemma3":
        # Gemma 3's SigLIP tower and its projector (models/gemma3_mm.py, models/siglip.py)
        fields, side = _vit_fields(vision_cfg, text_hidden=text_hidden, patch_default=16, image_default=224)
        return VisionGeometry(kind="siglip", **fields, num_position_embeddings=side * side)
    if model_type == "kimi_k25":
        return _moonvit(vision_cfg, text_hidden=text_hidden)
    if str(vision_cfg.get("model_type", "")) == "pixtral" and model_type == "mistral3":
        return _plain_tower("pixtral", vision_cfg, text_hidden=text_hidden, spatial_merge_size=spatial_merge_size,
                            in_channels=read_int(vision_cfg, "num_channels", default=3))
    if str(vision_cfg.get("model_type", "")) == "gemma4_vision":
        return _plain_tower("gemma4", vision_cfg, text_hidden=text_hidden,
                            num_position_embeddings=read_int(vision_cfg, "position_embedding_size", default=0))
    return VisionGeometry(
        kind="opaque",
        hidden_size=read_int(vision_cfg, "hidden_size", default=0),
        num_hidden_layers_attr=read_int(vision_cfg, "num_hidden_layers", default=0) or None,
    )


def _swa_shapes(text: dict[str, Any], *, arch: str, layers: int) -> dict[str, Any]:
    """The sliding-window layers SGLang's hybrid SWA pool would hold and their KV shape, as
    configs/model_config.py reads them (get_hybrid_layer_ids; 0.5.9 and 0.5.23 alike): Llama 4's
    chunked-attention layers are three of every four ((i + 1) % 4 != 0), MiMo-V2 marks them 1 in
    hybrid_layer_pattern, the others name them "sliding_attention" in layer_types. KV heads:
    swa_num_key_value_heads, Step-3.5's attention_other_setting.num_attention_groups, else the model's;
    head dims: swa_head_dim and swa_v_head_dim, else the model's (get_swa_num_kv_heads, __init__)."""
    if arch == "Llama4ForConditionalGeneration":
        swa = sum(1 for i in range(layers) if (i + 1) % 4 != 0)
    elif isinstance(text.get("hybrid_layer_pattern"), list):
        swa = sum(1 for x in text["hybrid_layer_pattern"][:layers] if x == 1)
    elif isinstance(text.get("layer_types"), list):
        swa = sum(1 for x in text["layer_types"][:layers] if x == "sliding_attention")
    else:
        swa = 0
    if not swa:
        return {}
    other = text.get("attention_other_setting")
    heads = read_int(text, "swa_num_key_value_heads", default=0)
    if not heads and isinstance(other, dict):
        heads = read_int(other, "num_attention_groups", default=0)
    head_dim = read_int(text, "swa_head_dim", default=0)
    return {"swa_layers": swa, "swa_num_kv_heads": heads, "swa_head_dim": head_dim,
            "swa_v_head_dim": read_int(text, "swa_v_head_dim", default=head_dim)}


def _as_sglang_reads(text: dict[str, Any]) -> dict[str, Any]:
    """The text config with SGLang's own rewrites applied before it sizes anything: Gemma 4 states its
    sliding-window shape in the base fields and the full-attention one as global_*; SGLang makes the full
    shape the base and the sliding one swa_* (utils/hf_transformers/config.py, 0.5.11 and 0.5.23)."""
    if not text.get("global_head_dim"):
        return text
    return {
        **text,
        "head_dim": text["global_head_dim"],
        "num_key_value_heads": text.get("num_global_key_value_heads") or text.get("num_key_value_heads"),
        "swa_head_dim": text.get("head_dim"),
        "swa_v_head_dim": text.get("head_dim"),
        "swa_num_key_value_heads": text.get("num_key_value_heads"),
    }


def _kv_heads(text: dict[str, Any], *, model_type: str, heads: int) -> int:
    """KV heads; Falcon's and GPTBigCode's from their own fields (transformers' FalconAttention:
    num_kv_heads under new_decoder_architecture, else one if multi_query, its default; GPTBigCode
    is multi-query unless multi_query is false)."""
    if model_type == "falcon":
        if text.get("new_decoder_architecture"):
            return read_int(text, "num_kv_heads", default=heads) or heads
        return 1 if text.get("multi_query", True) else heads
    if model_type == "gpt_bigcode":
        return 1 if text.get("multi_query", True) else heads
    return read_int(text, "num_key_value_heads", "multi_query_group_num", default=heads) or heads


def _attention_shapes(text: dict[str, Any], *, arch: str, model_type: str, hidden: int, heads: int) -> dict[str, Any]:
    """Attention fields of ModelGeometry: heads, head dims, gates, biases, MLA's low ranks."""
    head_dim = read_int(text, "head_dim", default=(hidden // heads if heads else 0)) or (hidden // heads if heads else 0)
    # SGLang builds MLA attention for DeepSeek and Kimi (models/deepseek_v2.py) and the architectures
    # configs/model_config.py (0.5.23) gives AttentionArch.MLA: GLM-4.7-Flash and GLM-5 (DSA), LongCat-Flash,
    # Hunyuan V4, dots, Mistral Large 3, GigaChat 3.5
    mla = bool(text.get("kv_lora_rank")) and arch.startswith((
        "Deepseek", "KimiK2", "Kimi", "Glm4MoeLite", "GlmMoeDsa", "Glm5Next", "LongcatFlash", "HYV4", "Dots3Note",
        "DotsVLM", "MistralLarge3", "Eagle3DeepseekV2", "GigaChat35"))
    nope = read_int(text, "qk_nope_head_dim", default=0)
    rope = read_int(text, "qk_rope_head_dim", default=0)
    return {
        "num_attention_heads": heads,
        "num_kv_heads": _kv_heads(text, model_type=model_type, heads=heads),
        "head_dim": nope + rope if mla else head_dim,
        "v_head_dim": read_int(text, "v_head_dim", default=head_dim) if mla else head_dim,
        "attn_output_gate": bool(text.get("attn_output_gate", False)),
        "attention_k_eq_v": bool(text.get("attention_k_eq_v", False)),
        "qk_norm": model_type.startswith(("qwen3", "qwen3_5", "lfm2")) or arch.startswith("Qwen3"),
        "qkv_bias": model_type.startswith("qwen2") or model_type == "qwen" or bool(text.get("attention_bias", False)),
        "mla": mla,
        "kv_lora_rank": read_int(text, "kv_lora_rank", default=0),
        "q_lora_rank": read_int(text, "q_lora_rank", default=0),
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "dsa_indexer": text.get("index_topk") is not None,
        "dsa_index_head_dim": read_int(text, "index_head_dim", default=128),
    }


# Decoder MLPs of two matrices, up and down without a gate, as transformers' modeling files build them:
# falcon (FalconMLP dense_h_to_4h / dense_4h_to_h), persimmon and fuyu (PersimmonMLP), gpt_neox and bloom
# (dense_h_to_4h), gpt2 and gpt_bigcode (c_fc / c_proj), starcoder2 (Starcoder2MLP c_fc / c_proj), gptj
# and codegen (fc_in / fc_out), opt and phi (fc1 / fc2), mpt and nemotron (up_proj / down_proj)
_TWO_MATRIX_MLP = frozenset({"falcon", "persimmon", "fuyu", "gpt_neox", "bloom", "gpt2", "gpt_bigcode",
                             "starcoder2", "gptj", "codegen", "opt", "phi", "mpt", "nemotron"})


def _intermediate(text: dict[str, Any], *, model_type: str, hidden: int) -> int:
    """The dense MLP's width as the model builds it."""
    intermediate = read_int(text, "intermediate_size", "ffn_hidden_size", default=4 * hidden) or 4 * hidden
    if model_type == "qwen":
        return intermediate // 2  # the first Qwen's config counts w1 and w2 together (models/qwen.py QWenMLP)
    return _lfm2_ff_dim(text, intermediate) if model_type == "lfm2" else intermediate


def _lfm2_ff_dim(text: dict[str, Any], intermediate: int) -> int:
    """transformers' Lfm2MLP (modeling_lfm2.py): two thirds of the configured width, times the
    multiplier, up to a multiple of block_multiple_of, when block_auto_adjust_ff_dim (the default)."""
    if not text.get("block_auto_adjust_ff_dim", True):
        return intermediate
    ff = int(2 * intermediate / 3)
    multiplier = text.get("block_ffn_dim_multiplier", 1.0)
    if multiplier is not None:
        step = read_int(text, "block_multiple_of", default=256) or 1
        ff = int(multiplier * ff)
        ff = step * ((ff + step - 1) // step)
    return ff


def _short_conv_shapes(text: dict[str, Any], hidden: int) -> dict[str, Any]:
    """LFM2's ShortConv layers in the linear-attention fields: a conv state of the full width and no SSM
    state, as sglang configs/lfm2.py mamba2_cache_params builds its Mamba2StateShape (intermediate_size =
    hidden, state_size 0, conv_kernel = conv_L_cache)."""
    return {
        "linear_kind": "short_conv",
        "linear_num_key_heads": 1,
        "linear_key_head_dim": 0,
        "linear_num_value_heads": 1,
        "linear_value_head_dim": hidden,
        "linear_conv_kernel_dim": read_int(text, "conv_L_cache", default=3),
    }


def _layer_shapes(text: dict[str, Any], *, arch: str, model_type: str, layers: int, intermediate: int
                  ) -> dict[str, Any]:
    """Layer kinds of ModelGeometry: full / Gated DeltaNet attention, MoE, MTP."""
    full_layers, linear_layers = attention_layer_counts(text, layers, architecture=arch)
    experts = expert_count(text)
    moe_inter = read_int(text, "moe_intermediate_size", default=intermediate)
    mtp = mtp_layer_count(text)
    pattern = block_pattern(text)
    return {
        "full_attention_layers": full_layers,
        "linear_attention_layers": linear_layers,
        "linear_num_key_heads": read_int(text, "linear_num_key_heads", default=0),
        "linear_num_value_heads": read_int(text, "linear_num_value_heads", default=0),
        "linear_key_head_dim": read_int(text, "linear_key_head_dim", default=0),
        "linear_value_head_dim": read_int(text, "linear_value_head_dim", default=0),
        "linear_conv_kernel_dim": read_int(text, "linear_conv_kernel_dim", default=4),
        "num_experts": experts,
        "num_experts_per_token": read_int(text, "num_experts_per_tok", "moe_topk", "num_experts_per_token") if experts else None,
        "moe_intermediate_size": moe_inter if experts else 0,
        "shared_expert_intermediate_size": shared_expert_intermediate(text, moe_inter),
        "moe_layers": moe_layer_count(text, layers),
        "mtp_layers": mtp,
        "mtp_has_own_embeddings": arch.startswith("Deepseek") and mtp > 0,
        "mlp_matrices": 2 if model_type in _TWO_MATRIX_MLP else 3,
        **(_mamba2_shapes(text, pattern, layers) if pattern is not None else {}),
        **(_short_conv_shapes(text, read_int(text, "hidden_size", default=0)) if model_type.startswith("lfm2") else {}),
    }


def read_geometry(
    config: dict[str, Any],
    *,
    architecture: str | None = None,
    checkpoint_bytes: int | None = None,
    checkpoint_parameters: int | None = None,
) -> ModelGeometry:
    """The shapes of a Hugging Face config.json (top level, as loaded): the one reading of it.

    describe_model calls it with what the safetensors index says; the planner reads
    ModelInfo.geometry and never the raw config.
    """
    config = with_transformers_defaults(config)
    text = _as_sglang_reads(text_config_of(config))
    arch = architecture or str((config.get("architectures") or ["?"])[0])
    model_type = str(config.get("model_type") or text.get("model_type") or "")
    hidden = read_int(text, "hidden_size", "d_model", "n_embd", default=0)
    layers = read_int(text, "num_hidden_layers", "n_layer", "num_layers", default=0)
    heads = read_int(text, "num_attention_heads", "n_head", default=0)
    intermediate = _intermediate(text, model_type=model_type, hidden=hidden)
    dtype_name = config_dtype(config, text)
    vision = _vision_geometry(config.get("vision_config"), model_type=model_type, text_hidden=hidden,
                              feature_layer=config.get("vision_feature_layer"),
                              spatial_merge_size=read_int(config, "spatial_merge_size", default=2))
    geometry = ModelGeometry(
        architecture=arch,
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        vocab_size=read_int(text, "vocab_size", "padded_vocab_size", default=read_int(config, "vocab_size", default=0)),
        intermediate_size=intermediate,
        **_context_fields(text),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
        # SGLang serves float32 checkpoints in bfloat16 (configs/model_config.py _get_and_verify_dtype)
        dtype_bytes=min(DTYPE_BYTES.get(dtype_name.replace("torch.", ""), 2), 2),
        dtype=dtype_name,
        mamba_ssm_dtype=text.get("mamba_ssm_dtype") or config.get("mamba_ssm_dtype"),
        vision=vision,
        multimodal=vision is not None,
        quantization=quant_method(config) or quant_method(text),
        sliding_window=sliding_window(text),
        **_swa_shapes(text, arch=arch, layers=layers),
        draft_vocab_size=read_int(text, "draft_vocab_size", default=0),
        checkpoint_bytes=checkpoint_bytes,
        checkpoint_parameters=checkpoint_parameters,
        **_attention_shapes(text, arch=arch, model_type=model_type, hidden=hidden, heads=heads),
        **_layer_shapes(text, arch=arch, model_type=model_type, layers=layers, intermediate=intermediate),
    )
    qc = config.get("quantization_config") or config.get("compression_config") or text.get("quantization_config")
    if isinstance(qc, dict):
        quant = read_quant_scheme(qc, num_layers=layers, sub_shares=_sub_shares(geometry))
        if quant is not None and model_type == "deepseek_v4" and str(text.get("expert_dtype", "fp4")).lower() == "fp4":
            # configs/model_config.py (0.5.14-0.5.23): DeepSeek V4's routed experts are MXFP4 unless the
            # checkpoint's expert tensors are FP8 (config.json says which: expert_dtype)
            quant = replace(quant, routed_expert_bytes=DSV4_FP4_EXPERT_BYTES,
                            label=quant.label + ", MXFP4 routed experts (a float32 scale per 32)")
        geometry = replace(geometry, quant=quant)
    return geometry


def _sub_shares(g: ModelGeometry) -> dict[str, dict[str, float]]:
    """Each quantizable block's sub-modules as shares of its parameters, for ignore lists that
    name one projection (knowledge/quantscheme.py ignored_shares)."""
    h, hd = g.hidden_size, g.head_dim
    q = h * g.num_attention_heads * hd * (2 if g.attn_output_gate else 1)
    kv = 2 * h * g.num_kv_heads * hd
    o = g.num_attention_heads * hd * h
    attn = max(1, q + kv + o)
    key_dim = g.linear_num_key_heads * g.linear_key_head_dim
    value_dim = g.linear_num_value_heads * g.linear_value_head_dim
    gdn_in = h * (2 * key_dim + 2 * value_dim)
    gdn_ba = 2 * h * g.linear_num_value_heads
    gdn_out = value_dim * h
    gdn = max(1, gdn_in + gdn_ba + gdn_out)
    routed = g.num_experts * g.moe_intermediate_size
    shared = g.shared_expert_intermediate_size
    moe = max(1, routed + shared)
    return {
        "attention": {"q": q / attn, "kv": kv / attn, "o": o / attn},
        "linear_attention": {"in": gdn_in / gdn, "ba": gdn_ba / gdn, "out": gdn_out / gdn},
        # a gated MLP's gate, up and down are one third each; NemotronH's (up, down) are halves
        "mlp": {"gate": (g.mlp_matrices - 2) / g.mlp_matrices, "up": 1 / g.mlp_matrices, "down": 1 / g.mlp_matrices},
        "experts": {"routed": routed / moe, "shared": shared / moe},
    }


# ----------------------------------------------------------------------------- ModelInfo


def _required_shapes(config: dict[str, Any], text: dict[str, Any], where: str) -> tuple[str, ...]:
    """The architectures, after checking the config names them and the three shapes every model has."""
    architectures = tuple(str(a) for a in (config.get("architectures") or text.get("architectures") or ()))
    if not architectures:
        raise UsageError(f"{where} has no 'architectures'", hint="is this a Hugging Face model config?")
    hidden = read_int(text, "hidden_size", "d_model", "n_embd")
    layers = read_int(text, "num_hidden_layers", "n_layer", "num_layers")
    heads = read_int(text, "num_attention_heads", "n_head")
    if not hidden or not layers or not heads:
        raise UsageError(f"{where} lacks hidden_size, num_hidden_layers or num_attention_heads")
    return architectures


def _parameters_and_bytes(
    geometry: ModelGeometry, breakdown: dict[str, int], index: dict[str, Any] | None
) -> tuple[int, int | None, str]:
    """(parameters, weight_bytes, source): the index's metadata where it has it, else the shapes."""
    counted = sum(breakdown.values())
    dtype_bytes = DTYPE_BYTES.get(geometry.dtype, 2)
    metadata = (index or {}).get("metadata") or {}
    if isinstance(metadata.get("total_parameters"), int) or isinstance(metadata.get("total_size"), int):
        parameters = metadata.get("total_parameters") or counted
        weight_bytes = metadata.get("total_size")
        if weight_bytes is None and geometry.quantization is None:
            weight_bytes = parameters * dtype_bytes
        return parameters, weight_bytes, "index"
    return counted, (counted * dtype_bytes if geometry.quantization is None else None), "shapes"


def _quantized_checkpoint_bytes(g: ModelGeometry) -> int:
    """A quantized checkpoint's bytes without an index: the target at TP 1 as plan sizes it
    (packed projections at the scheme's bytes per weight, the rest in the model dtype), its MTP
    layers at the target's bytes per parameter."""
    # memory imports this module; imported here, when both are loaded
    from imgbuild.knowledge.memory import split_weights, weights_per_gpu_bytes

    split = split_weights(g, tp=1)
    target = weights_per_gpu_bytes(g, split, tp=1)
    per_param = target / max(1.0, split.target_per_gpu_params + split.vision_per_gpu_params)
    return int(target + split.mtp_total_params * per_param)


def _features(g: ModelGeometry) -> tuple[str, ...]:
    flags = (
        ("gdn-hybrid", g.linear_attention_layers > 0 and g.linear_kind == "gated_deltanet"),
        ("mamba2-hybrid", g.linear_attention_layers > 0 and g.linear_kind == "mamba2"),
        ("conv-hybrid", g.linear_attention_layers > 0 and g.linear_kind == "short_conv"),
        ("mtp", g.mtp_layers > 0),
        ("mla", g.kv_lora_rank > 0),
        ("moe", g.num_experts > 0),
        ("sliding-window", bool(g.sliding_window)),
        ("vision", g.vision is not None),
    )
    features = [name for name, present in flags if present]
    if g.quantization:
        features.append(f"quant-{g.quantization}")
    return tuple(features)


def describe_model(config: dict[str, Any], index: dict[str, Any] | None, *, source: str) -> ModelInfo:
    """What the model is: one read_geometry of config.json, counted by parameter_breakdown.

    The geometry it carries holds the index's evidence (checkpoint bytes and parameters)
    only where the index gives them; a count from the shapes is not evidence.
    """
    config = with_transformers_defaults(config)
    text = text_config_of(config)
    architectures = _required_shapes(config, text, f"model {source}: config.json")
    g = read_geometry(config, architecture=architectures[0])
    breakdown = parameter_breakdown(g)
    parameters, weight_bytes, parameters_source = _parameters_and_bytes(g, breakdown, index)
    if parameters_source == "index":
        g = replace(g, checkpoint_bytes=weight_bytes, checkpoint_parameters=parameters)
    bytes_source = parameters_source if weight_bytes is not None else None
    if weight_bytes is None and g.quant is not None:
        weight_bytes, bytes_source = _quantized_checkpoint_bytes(g), "quantization config"
    return ModelInfo(
        source=source,
        architectures=architectures,
        model_type=g.model_type,
        config=config,
        text_config=text,
        geometry=g,
        parameters=parameters,
        weight_bytes=weight_bytes,
        parameters_source=parameters_source,
        weight_bytes_source=bytes_source,
        parameter_breakdown=breakdown,
    )


# hf_transformers/common.py CONTEXT_LENGTH_KEYS (0.5.1 to 0.5.23 alike): the first one the text config has
_CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")


def _context_fields(text: dict[str, Any]) -> dict[str, int]:
    """The configured length and the lengths SGLang derives from it, with and without rope_scaling's factor."""
    return {
        "max_position_embeddings": read_int(text, "max_position_embeddings", "max_sequence_length", "seq_length",
                                            default=2048),
        "context_length": derived_context_length(text),
        "context_length_unscaled": derived_context_length(text, rope_factor=False),
    }


def derived_context_length(text: dict[str, Any], *, rope_factor: bool = True) -> int:
    """The context length SGLang derives (hf_transformers/common.py get_context_length, the same from 0.5.1
    to 0.5.23): the first of _CONTEXT_LENGTH_KEYS, times rope_scaling's factor unless rope_scaling names
    original_max_position_embeddings or is llama3's; 2048 without any."""
    rope = text.get("rope_scaling") or text.get("rope_parameters")
    factor: float = 1
    if rope_factor and isinstance(rope, dict) and rope:
        factor = rope.get("factor", 1) if isinstance(rope.get("factor", 1), (int, float)) else 1
        if "original_max_position_embeddings" in rope or "llama3" in (rope.get("rope_type"), rope.get("type")):
            factor = 1
    value = next((text[k] for k in _CONTEXT_LENGTH_KEYS if isinstance(text.get(k), int)), None)
    return int(factor * value) if value is not None else 2048


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


# ----------------------------------------------------------------------------- the parameter counter
# Each block returns (parameters per GPU at tensor-parallel size tp, parameters in the checkpoint),
# following the SGLang model files named; imgbuild.knowledge.memory shards the weights with them and
# parameter_breakdown adds up their totals, so inspect and plan count alike.


def vocab_per_gpu(vocab: int, tp: int) -> int:
    # layers/vocab_parallel_embedding.py: vocab padded to a multiple of 64, split evenly
    padded = (vocab + 63) // 64 * 64
    return math.ceil(padded / tp)


def attention_params(g: ModelGeometry, tp: int) -> tuple[float, int]:
    """One full-attention block. models/qwen3_5.py, llama.py, deepseek_v2.py."""
    h = g.hidden_size
    if g.mla:
        nope_rope = g.qk_nope_head_dim + g.qk_rope_head_dim
        heads_tp = g.num_attention_heads / tp
        replicated = h * (g.kv_lora_rank + g.qk_rope_head_dim) + g.kv_lora_rank  # kv_a_proj_with_mqa + norm
        sharded_total = g.kv_lora_rank * g.num_attention_heads * (g.qk_nope_head_dim + g.v_head_dim)  # kv_b_proj
        sharded_total += g.num_attention_heads * g.v_head_dim * h  # o_proj
        if g.q_lora_rank:
            replicated += h * g.q_lora_rank + g.q_lora_rank  # q_a_proj + q_a_layernorm
            sharded_total += g.q_lora_rank * g.num_attention_heads * nope_rope
        else:
            sharded_total += h * g.num_attention_heads * nope_rope
        per_gpu = replicated + sharded_total * heads_tp / g.num_attention_heads
        return per_gpu, replicated + sharded_total
    hd = g.head_dim
    q_out = g.num_attention_heads * hd * (2 if g.attn_output_gate else 1)
    kv_per_gpu_heads = max(1, g.num_kv_heads // tp) if g.num_kv_heads < tp else g.num_kv_heads / tp
    total = h * q_out + 2 * h * g.num_kv_heads * hd + g.num_attention_heads * hd * h
    per_gpu = (h * q_out + g.num_attention_heads * hd * h) / tp + 2 * h * kv_per_gpu_heads * hd
    if g.qkv_bias:
        total += q_out + 2 * g.num_kv_heads * hd
        per_gpu += q_out / tp + 2 * kv_per_gpu_heads * hd
    if g.qk_norm:
        total += 2 * hd
        per_gpu += 2 * hd
    return per_gpu, total


def attention_layers_params(g: ModelGeometry, tp: int) -> tuple[float, int]:
    """Every full- and sliding-window-attention layer's block, each at its own shape: the sliding
    layers' KV heads and head dim (swa_num_kv_heads, swa_head_dim) where the config gives them
    (Gemma 4, MiMo-V2, Step-3.5), the model's elsewhere."""
    full_gpu, full_total = attention_params(g, tp)
    if not (g.swa_num_kv_heads or g.swa_head_dim) or g.mla or not g.swa_layers:
        return g.full_attention_layers * full_gpu, g.full_attention_layers * full_total
    sliding = replace(g, num_kv_heads=g.swa_num_kv_heads or g.num_kv_heads, head_dim=g.swa_head_dim or g.head_dim)
    swa_gpu, swa_total = attention_params(sliding, tp)
    rest, swa = g.global_attention_layers, g.full_attention_layers - g.global_attention_layers
    return rest * full_gpu + swa * swa_gpu, rest * full_total + swa * swa_total


def linear_attention_params(g: ModelGeometry, tp: int) -> tuple[float, int]:
    """One linear-attention block: Gated DeltaNet (models/qwen3_5.py Qwen3_5GatedDeltaNet,
    qwen3_next.py), or NemotronH's Mamba2 mixer (models/nemotron_h.py, layers/attention/mamba/
    mamba.py MambaMixer2: in_proj to x, z, B, C and dt, a biased conv1d, A, D, dt_bias, a gated
    RMSNorm over the whole inner width, out_proj; all of it sharded by heads)."""
    h = g.hidden_size
    key_dim = g.linear_num_key_heads * g.linear_key_head_dim
    value_dim = g.linear_num_value_heads * g.linear_value_head_dim
    conv_dim = 2 * key_dim + value_dim
    if g.linear_kind == "short_conv":  # models/lfm2.py ShortConv: in_proj to B, C, x; a depthwise conv; out_proj
        sharded = 3 * h * h + h * g.linear_conv_kernel_dim + h * h
        return sharded / tp, sharded
    if g.linear_kind == "mamba2":
        sharded = h * (conv_dim + value_dim + g.linear_num_value_heads)  # in_proj x B C, z, dt
        sharded += conv_dim * (g.linear_conv_kernel_dim + 1)  # conv1d weight and bias
        sharded += 3 * g.linear_num_value_heads + value_dim  # A_log, D, dt_bias; the norm
        sharded += value_dim * h  # out_proj
        return sharded / tp, sharded
    sharded = h * (conv_dim + value_dim + 2 * g.linear_num_value_heads)  # in_proj qkv, z, b, a
    sharded += conv_dim * g.linear_conv_kernel_dim  # conv1d
    sharded += 2 * g.linear_num_value_heads  # dt_bias, A_log
    sharded += value_dim * h  # out_proj
    replicated = g.linear_value_head_dim  # gated RMSNorm over one head
    return replicated + sharded / tp, replicated + sharded


def _moe_parts(g: ModelGeometry) -> tuple[int, int, int]:
    """(routed experts, shared experts, replicated: router + shared-expert gate + score bias) of one MoE layer."""
    h = g.hidden_size
    experts = g.num_experts * g.mlp_matrices * h * g.moe_intermediate_size
    shared = g.mlp_matrices * h * g.shared_expert_intermediate_size
    replicated = h * g.num_experts  # router
    if g.shared_expert_intermediate_size and g.model_type.startswith("qwen"):
        replicated += h  # shared_expert_gate
    if g.architecture.startswith(("Deepseek", "NemotronH")):
        replicated += g.num_experts  # e_score_correction_bias
    return experts, shared, replicated


def routed_expert_params(g: ModelGeometry) -> int:
    """One MoE layer's routed experts (what FusedMoE holds), all of them."""
    return _moe_parts(g)[0]


def mlp_params(g: ModelGeometry, tp: int, *, moe: bool) -> tuple[float, int]:
    """One decoder layer's MLP: dense (gate, up, down), or MoE (experts, shared experts, router)."""
    if not moe:
        total = g.mlp_matrices * g.hidden_size * g.intermediate_size
        return total / tp, total
    experts, shared, replicated = _moe_parts(g)
    return replicated + (experts + shared) / tp, replicated + experts + shared


def mtp_layer_params(g: ModelGeometry, tp: int, attn_tp: int | None = None) -> tuple[float, int]:
    """One MTP / NextN layer: fc 2H->H, two norms, one decoder layer (MoE if the model is), a
    final norm; DeepSeek's also ships its own embed and head (models/deepseek_nextn.py)."""
    h = g.hidden_size
    attn_gpu, attn_total = attention_params(g, attn_tp or tp)
    mlp_gpu, mlp_total = mlp_params(g, tp, moe=bool(g.num_experts))
    norms = 2 * h
    one_gpu = 2 * h * h / tp + 2 * h + attn_gpu + mlp_gpu + norms + h
    one_total = 2 * h * h + 2 * h + attn_total + mlp_total + norms + h
    if g.mtp_has_own_embeddings:
        one_total += 2 * g.vocab_size * h
        one_gpu += 2 * vocab_per_gpu(g.vocab_size, tp) * h
    return one_gpu, one_total


def _pixtral_params(v: VisionGeometry, tp: int) -> tuple[float, int]:
    """Pixtral (sglang models/pixtral.py PixtralHFVisionModel): the patch conv (no bias) and ln_pre
    replicated; per block q/k/v/o and the gated gate_up / down MLP, no biases, TP-sharded, and two
    RMSNorms; then Mistral3MultiModalProjector: an RMSNorm, the merging layer (merge^2 x width ->
    width) and linear_1 / linear_2 into the text width (no biases in the published configs)."""
    d, inter, out = v.hidden_size, v.intermediate_size, v.out_hidden_size
    block_sharded = 4 * d * d + 3 * d * inter
    projector = d + d * v.spatial_merge_size**2 * d + d * out + out * out
    replicated = v.in_channels * v.patch_size**2 * d + d + v.depth * 2 * d + projector
    return replicated + v.depth * block_sharded / tp, replicated + v.depth * block_sharded


def _gemma4_vision_params(v: VisionGeometry, tp: int) -> tuple[float, int]:
    """Gemma 4's tower (sglang 0.5.23 models/gemma4_vision.py): the patch projection (no bias) and a
    position table of two axes, replicated; per layer a fused qkv (heads x head_dim = the width in the
    published configs), o_proj, a gated gate_up / down MLP, all without biases and TP-sharded, and four
    RMSNorms; then gemma4_mm.py's embedding_projection into the text width."""
    d, inter = v.hidden_size, v.intermediate_size
    patch = v.in_channels * v.patch_size**2 * d + 2 * v.num_position_embeddings * d
    block_sharded = 3 * d * d + d * d + 2 * d * inter + inter * d
    block_replicated = 4 * d  # the four RMSNorms (the q/k norms over one head, a few thousand, left out)
    replicated = patch + v.depth * block_replicated + d * v.out_hidden_size
    return replicated + v.depth * block_sharded / tp, replicated + v.depth * block_sharded


def _siglip_params(v: VisionGeometry, tp: int) -> tuple[float, int]:
    """SigLIP tower + Gemma 3 projector (models/siglip.py, models/gemma3_mm.py): q/k/v/out and
    fc1/fc2 sharded, embeddings, LayerNorms and the projector replicated."""
    d, inter = v.hidden_size, v.intermediate_size
    patch = v.in_channels * v.patch_size**2 * d + d
    pos = v.num_position_embeddings * d
    block_sharded = 4 * d * d + 3 * d + d * inter + inter + inter * d
    block_replicated = 4 * d + d + d  # two LayerNorms (w, b), out-proj and fc2 biases
    replicated = patch + pos + v.depth * block_replicated + 2 * d + d * v.out_hidden_size + d
    return replicated + v.depth * block_sharded / tp, replicated + v.depth * block_sharded


def _qwen2_vl_params(v: VisionGeometry, tp: int) -> tuple[float, int]:
    """Qwen2-VL / Qwen2.5-VL towers (sglang 0.5.9 models/qwen2_vl.py, models/qwen2_5_vl.py): the patch
    Conv3d (no bias), VisionAttention's q/k/v (with biases) and projection, the MLP (Qwen2.5-VL's gated
    gate_up/down, Qwen2-VL's fc1/fc2, with biases) and the merger's two linears TP-sharded; norms
    (Qwen2.5-VL's RMSNorms, Qwen2-VL's LayerNorms), the row-parallel biases and the patch replicated."""
    d, inter, out = v.hidden_size, v.intermediate_size, v.out_hidden_size
    gated = v.kind == "qwen2.5-vl"
    norm = d if gated else 2 * d
    patch = v.in_channels * v.temporal_patch_size * v.patch_size**2 * d
    mlp_up = (2 if gated else 1) * (d * inter + inter)
    block_sharded = 3 * d * d + 3 * d + d * d + mlp_up + inter * d
    block_replicated = 2 * norm + d + d  # the norms, proj's and the MLP's row-parallel biases
    merged = d * v.spatial_merge_size**2
    sharded = v.depth * block_sharded + merged * merged + merged + merged * out
    replicated = patch + v.depth * block_replicated + norm + out
    return replicated + sharded / tp, replicated + sharded


def _moonvit_params(v: VisionGeometry, tp: int) -> tuple[float, int]:
    """MoonViT + K2VLMultiModalProjector (sglang 0.5.9 models/kimi_k25.py): VisionAttention's q/k/v
    (with biases) and output projection are TP-sharded; its MLP (MLP2, plain nn.Linear with biases),
    LayerNorms, the out-projection bias, the patch convolution, the learnt 2-D position table and the
    projector (LayerNorm, then ReplicatedLinear merged -> merged -> text hidden) are replicated."""
    d, inter, merged, out = v.hidden_size, v.intermediate_size, v.vision_output_dim, v.out_hidden_size
    block_sharded = 3 * d * d + 3 * d + d * d
    block_replicated = 4 * d + d + d * inter + inter + inter * d + d
    embeddings = v.in_channels * v.patch_size**2 * d + d + v.num_position_embeddings * d
    projector = 2 * (merged // max(1, v.spatial_merge_size)) + merged * merged + merged + merged * out + out
    replicated = embeddings + v.depth * block_replicated + 2 * d + projector
    return replicated + v.depth * block_sharded / tp, replicated + v.depth * block_sharded


def _clip_params(v: VisionGeometry, tp: int) -> tuple[float, int]:
    """CLIP tower + LLaVA projector (SGLang models/clip.py, models/llava.py with transformers'
    LlavaMultiModalProjector): q/k/v/out (with biases) and fc1/fc2 sharded as SigLIP's; the class,
    patch (no bias) and position embeddings, pre- and post-LayerNorm, row-parallel biases and the
    two-layer projector (vision_output_dim -> text hidden -> text hidden, with biases) replicated."""
    d, inter, out = v.hidden_size, v.intermediate_size, v.out_hidden_size
    embeddings = d + v.in_channels * v.patch_size**2 * d + v.num_position_embeddings * d
    block_sharded = 4 * d * d + 3 * d + d * inter + inter + inter * d
    block_replicated = 4 * d + d + d  # two LayerNorms (w, b), out-proj and fc2 biases
    projector = v.vision_output_dim * out + out + out * out + out
    replicated = embeddings + 4 * d + v.depth * block_replicated + projector
    return replicated + v.depth * block_sharded / tp, replicated + v.depth * block_sharded


def _mllama_params(v: VisionGeometry, tp: int) -> tuple[float, int]:
    """Mllama's tower and projector (SGLang models/mllama.py MllamaVisionModel,
    MllamaForConditionalGeneration): the patch projection (ColumnParallelLinear, no bias), q/k/v
    (with biases, layers/attention/vision.py VisionAttention), out-proj and fc1/fc2 sharded; the
    class, position and tile-position embeddings (MllamaPrecomputedPositionEmbedding's table is
    (aspect ratios + 1) x tiles x positions x hidden), the two aspect-ratio embeddings with their
    gates, LayerNorms, row-parallel biases, the global layers' gates and the multi-modal projector
    (ReplicatedLinear vision_output_dim -> text hidden) replicated."""
    d, inter = v.hidden_size, v.intermediate_size
    layers = v.depth + v.global_layers
    patch = v.in_channels * v.patch_size**2 * d
    positions = v.num_position_embeddings * d + 1 + (v.aspect_ratios + 1) * v.max_num_tiles * v.num_position_embeddings * d
    aspect = 2 * ((v.aspect_ratios + 1) * v.max_num_tiles * d + 1)
    block_sharded = d * 3 * d + 3 * d + d * d + d * inter + inter + inter * d
    block_replicated = 4 * d + d + d  # two LayerNorms (w, b), out-proj and fc2 biases
    projector = v.vision_output_dim * v.out_hidden_size + v.out_hidden_size
    replicated = d + positions + aspect + 4 * d + layers * block_replicated + 2 * v.global_layers + projector
    sharded = patch + layers * block_sharded
    return replicated + sharded / tp, replicated + sharded


def vision_params(v: VisionGeometry, tp: int) -> tuple[float, int]:
    """Qwen3-VL vision tower (models/qwen3_vl.py): linear layers TP-sharded unless
    --mm-enable-dp-encoder; patch/pos embeddings, LayerNorms and row-parallel biases replicated."""
    if v.kind == "siglip":
        return _siglip_params(v, tp)
    if v.kind == "mllama":
        return _mllama_params(v, tp)
    if v.kind == "clip":
        return _clip_params(v, tp)
    if v.kind == "moonvit":
        return _moonvit_params(v, tp)
    if v.kind == "gemma4":
        return _gemma4_vision_params(v, tp)
    if v.kind == "pixtral":
        return _pixtral_params(v, tp)
    if v.kind in ("qwen2.5-vl", "qwen2-vl"):
        return _qwen2_vl_params(v, tp)
    d, inter = v.hidden_size, v.intermediate_size
    patch = v.in_channels * v.temporal_patch_size * v.patch_size**2 * d + d
    pos = v.num_position_embeddings * d
    block_sharded = d * 3 * d + 3 * d + d * d + d * inter + inter + inter * d  # qkv(+bias), proj, fc1(+bias), fc2
    block_replicated = 4 * d + d + d  # two LayerNorms (w, b), proj bias, fc2 bias
    merged = d * v.spatial_merge_size**2

    def merger(norm_dim: int) -> tuple[int, int]:
        sharded = merged * merged + merged + merged * v.out_hidden_size
        replicated = 2 * norm_dim + v.out_hidden_size
        return sharded, replicated

    m_sh, m_rep = merger(d)
    ds_sh, ds_rep = merger(merged)
    sharded = v.depth * block_sharded + m_sh + v.deepstack_layers * ds_sh
    replicated = patch + pos + v.depth * block_replicated + m_rep + v.deepstack_layers * ds_rep
    return replicated + sharded / tp, replicated + sharded


def _k_eq_v_params(g: ModelGeometry) -> int:
    """The V projections Gemma 4's full-attention layers do not store (attention_k_eq_v)."""
    if not g.attention_k_eq_v:
        return 0
    return g.global_attention_layers * g.hidden_size * g.num_kv_heads * g.head_dim


def parameter_breakdown(g: ModelGeometry) -> dict[str, int]:
    """Parameters per component in the checkpoint, from the shapes (the blocks above at TP 1).

    Keys: embed, lm_head, attention (full-attention layers), linear_attention (Gated DeltaNet
    layers), mlp (dense MLPs), experts (routed MoE experts), shared_experts (with their gate),
    router (with DeepSeek's score bias), norms, mtp (the MTP/NextN layers), vision (a Qwen3-VL
    tower; one imgbuild does not model counts 0 here, its parameters are in the index).
    """
    h = g.hidden_size
    moe_experts, moe_shared, moe_replicated = _moe_parts(g) if g.num_experts else (0, 0, 0)
    shared_gate = h if g.shared_expert_intermediate_size and g.model_type.startswith("qwen") else 0
    vision = vision_params(g.vision, 1)[1] if g.vision is not None and g.vision.kind in MODELLED_VISION else 0
    return {
        "embed": g.vocab_size * h,
        "lm_head": 0 if g.tie_word_embeddings else g.vocab_size * h,
        "attention": attention_layers_params(g, 1)[1] - _k_eq_v_params(g),
        "linear_attention": g.linear_attention_layers * linear_attention_params(g, 1)[1] if g.hybrid else 0,
        "mlp": g.dense_layers * mlp_params(g, 1, moe=False)[1],
        "experts": g.moe_layers * moe_experts,
        "shared_experts": g.moe_layers * (moe_shared + shared_gate),
        "router": g.moe_layers * (moe_replicated - shared_gate),
        "norms": g.num_layers * g.norms_per_layer * h + h,
        "mtp": g.mtp_layers * mtp_layer_params(g, 1)[1],
        "vision": vision,
    }
