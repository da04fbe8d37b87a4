"""How a quantized checkpoint stores its weights, read from its quantization config. Pure.

SGLang sizes nothing from these numbers: it allocates each quantized linear layer's
tensors in the method's ``create_weights`` and loads the checkpoint into them. This
module re-derives those tensors' bytes per weight, per method, from the wheel's
``sglang/srt/layers/quantization/`` files (0.5.11, the same layouts in 0.5.23):

- ``awq/schemes/awq_linear.py`` (and awq_marlin.py, which repacks in place): qweight int32
  [in, out/8], qzeros int32 [in/group, out/8], scales in the model dtype [in/group, out].
- ``gptq.py``: qweight int32 [in/8, out], qzeros int32 [in/group, out/8], scales fp16
  [in/group, out], g_idx int32 [in] (negligible); ``lm_head: true`` quantizes the head.
- ``compressed_tensors/schemes/``: pack-quantized int4/int8 (weight_packed, a bf16 scale
  per group, a packed zero point when asymmetric), float-quantized FP8 (one scale per
  channel, tensor or block), W4A4/W4A16 NVFP4 (uint8 pairs, an FP8 scale per 16).
- ``modelopt_quant.py``: FP8 (one byte, per-tensor scales) and NVFP4 (uint8 pairs
  [out, in/2], an FP8 scale per group of 16, two float32 scalars); ``exclude_modules`` /
  ``ignore``; a ``kv_cache_quant_algo`` of FP8 makes ``--kv-cache-dtype auto`` FP8.
- ``fp8.py``: one byte per weight, plus a float32 scale per ``weight_block_size`` block.
- ``mxfp4.py``: only the MoE experts (uint8 pairs, a uint8 scale per 32); linears stay bf16.
- ``fp8.py`` Fp8MoEMethod for DeepSeek V4 (0.5.14-0.5.23): ``is_fp4_experts`` (configs/model_config.py:
  SGLANG_DSV4_FP4_EXPERTS, default on, or the probed expert dtype) makes the routed experts MXFP4,
  int8 pairs [E, 2I, H/2] with a float32 scale per 32 (float8_e8m0 under aiter on ROCm), while the
  other linears stay FP8 blocks.
- ``bitsandbytes.py``: 4-bit (a float32 absmax per 64, or a uint8 one with double quant) or 8-bit.

Which modules stay in the model dtype: embeddings and norms always (VocabParallelEmbedding
and RMSNorm take no quant method), lm_head unless the method quantizes it, and every module
an ignore list names (AWQ ``modules_to_not_convert`` by substring, awq.py
``is_layer_skipped_awq``; compressed-tensors ``ignore`` with ``re:`` regexes,
compressed_tensors/utils.py ``should_ignore_layer``; modelopt globs matched against the
name or any dotted part, modelopt_quant.py ``is_layer_excluded``). Vision towers and MTP
layers are counted in the model dtype: quantizers leave them out (their recipes ignore them).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

QUANT_CONFIG_NAME = "hf_quant_config.json"  # modelopt's standalone file (configs/model_config.py)

# the decoder blocks a method can quantize, by imgbuild's parameter counter names
LAYER_COMPONENTS = ("attention", "linear_attention", "mlp", "experts")


@dataclass(frozen=True)
class QuantScheme:
    """One checkpoint's weight format: what a quantized linear weight costs and where."""

    method: str  # as SGLang names it: awq, gptq, compressed-tensors, modelopt_fp4, fp8, ...
    label: str  # what a person reads: "AWQ 4-bit, group 128"
    weight_bits: float  # bits per stored weight element
    group_size: int = 0  # weights per scale along the input dim; 0: per channel or tensor
    scale_bytes: float = 0.0  # bytes of one group scale
    zero_bits: float = 0.0  # bits of one group zero point (0: symmetric)
    block: tuple[int, int] | None = None  # FP8 block quantization: a float32 scale per block
    components: tuple[str, ...] = LAYER_COMPONENTS  # the blocks the method quantizes
    lm_head_quantized: bool = False
    # (component, share of its parameters an ignore list keeps in the model dtype)
    unquantized_share: tuple[tuple[str, float], ...] = ()
    kv_cache_quant_algo: str | None = None  # "FP8": --kv-cache-dtype auto serves an FP8 pool
    source: str = "config.json"
    # the routed experts in another format than the other linears (DeepSeek V4's MXFP4 experts in an FP8
    # checkpoint): bytes per routed-expert weight; None: the scheme's own
    routed_expert_bytes: float | None = None
    # GPTQ's sym and desc_act as quantization_config gives them (None: not given), which SGLang's kernel
    # overrides read (gptq.py GPTQMarlinConfig.is_gptq_marlin_compatible, moe_wna16.py is_moe_wna16_compatible)
    symmetric: bool | None = None
    act_order: bool | None = None

    @property
    def bytes_per_weight(self) -> float:
        size = self.weight_bits / 8
        if self.group_size > 0:
            size += (self.scale_bytes + self.zero_bits / 8) / self.group_size
        if self.block:
            size += 4 / (self.block[0] * self.block[1])
        return size

    def excluded_share(self, component: str) -> float:
        if component not in self.components:
            return 1.0
        return dict(self.unquantized_share).get(component, 0.0)


# fp8.py create_weights under is_fp4_experts: half a byte per weight, a float32 scale per 32
DSV4_FP4_EXPERT_BYTES = 0.5 + 4 / 32


def with_standalone_quant_config(config: dict[str, Any], hf_quant: dict[str, Any] | None) -> dict[str, Any]:
    """config.json with hf_quant_config.json's modelopt section as its quantization_config,
    as configs/model_config.py ``_parse_quant_hf_config`` reads a checkpoint that has no
    quantization_config of its own."""
    if not isinstance(hf_quant, dict) or config.get("quantization_config") or config.get("compression_config"):
        return config
    section = hf_quant.get("quantization")
    if not isinstance(section, dict) or not section.get("quant_algo"):
        return config
    return {**config, "quantization_config": {"quant_method": "modelopt", **section, "_source": QUANT_CONFIG_NAME}}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str))


def _awq_gptq(method: str, qc: dict[str, Any]) -> QuantScheme:
    bits = _int(qc.get("bits", qc.get("w_bit")), 4)
    group = _int(qc.get("group_size", qc.get("q_group_size")), 128)
    group = group if group > 0 else 0  # -1: one scale per output channel
    name = "AWQ" if method.startswith("awq") else "GPTQ"
    # AWQ stores zeros only with zero_point; GPTQ always stores qzeros (gptq.py create_weights)
    zeros = bits if (name == "GPTQ" or qc.get("zero_point", True)) else 0
    lm_head = bool(qc.get("lm_head")) and name == "GPTQ"
    label = f"{name} {bits}-bit" + (f", group {group}" if group else ", per channel")
    symmetric, act_order = (qc.get("sym"), qc.get("desc_act")) if name == "GPTQ" else (None, None)
    return QuantScheme(method, label, bits, group, 2.0, zeros, lm_head_quantized=lm_head,
                       symmetric=symmetric if isinstance(symmetric, bool) else None,
                       act_order=act_order if isinstance(act_order, bool) else None)


def _compressed_tensors(qc: dict[str, Any]) -> QuantScheme | None:
    groups = qc.get("config_groups")
    if not isinstance(groups, dict):
        return None
    weights = None
    for group in groups.values():
        if isinstance(group, dict) and isinstance(group.get("weights"), dict):
            weights = group["weights"]
            break
    if weights is None:
        return None
    bits = _int(weights.get("num_bits"), 8)
    kind = str(weights.get("type") or "int")
    strategy = str(weights.get("strategy") or "tensor")
    group = _int(weights.get("group_size"), 0) if strategy in ("group", "tensor_group") else 0
    block = weights.get("block_structure")
    block_shape = (block[0], block[1]) if isinstance(block, list) and len(block) == 2 and all(
        isinstance(b, int) and b > 0 for b in block) else None
    nvfp4 = kind == "float" and bits == 4
    # NVFP4: an FP8 scale per 16 (compressed_tensors_w4a4_nvfp4.py); int groups: a model-dtype scale
    scale = 1.0 if nvfp4 else 2.0
    zeros = 0 if weights.get("symmetric", True) or kind == "float" else bits
    label = f"compressed-tensors {'NVFP4' if nvfp4 else ('FP' if kind == 'float' else 'INT') + str(bits)}"
    label += f", group {group}" if group else f", per {strategy}"
    return QuantScheme("compressed-tensors", label, bits, group, scale, zeros, block_shape if strategy == "block" else None)


def _modelopt_mixed(qc: dict[str, Any], *, kv: str | None, source: str) -> QuantScheme | None:
    """ModelOpt's MIXED_PRECISION checkpoints (modelopt_quant.py ModelOptMixedPrecisionConfig): one
    quant_algo per module in quantized_layers, modules it does not name in the model dtype. Read as the
    attention's and dense MLPs' format, the routed experts' own bytes where they differ, and whether
    lm_head is quantized (in the experts' format, the usual NVFP4 one, it is then counted at the main
    format's bytes: an over-count of up to half a byte per lm_head weight)."""
    layers = qc.get("quantized_layers")
    if not isinstance(layers, dict) or not layers:
        return None

    def algo_of(name: str) -> str:
        entry = layers.get(name)
        return str(entry.get("quant_algo") or "").upper() if isinstance(entry, dict) else ""

    def bytes_of(algo: str, group: int) -> float:
        return 0.5 + 1 / group if "FP4" in algo else 1.0

    names = list(layers)
    experts = next((n for n in names if n.endswith(".experts") or ".experts." in n), None)
    main = next((n for n in names if n != experts and any(k in n for k in (".self_attn.", ".linear_attn.", ".mlp."))), None)
    if main is None:
        return None
    main_algo = algo_of(main)
    group = _int(layers[main].get("group_size"), 16) if isinstance(layers[main], dict) else 16
    expert_algo = algo_of(experts) if experts else main_algo
    expert_group = _int(layers[experts].get("group_size"), 16) if experts and isinstance(layers[experts], dict) else 16
    fp4 = "FP4" in main_algo
    label = f"ModelOpt mixed precision: {main_algo or '?'}" + (f", routed experts {expert_algo}" if expert_algo != main_algo else "")
    return QuantScheme(
        "modelopt_mixed", label, 4 if fp4 else 8, group if fp4 else 0, 1.0 if fp4 else 0.0,
        lm_head_quantized="lm_head" in layers, kv_cache_quant_algo=kv, source=source,
        routed_expert_bytes=bytes_of(expert_algo, expert_group) if expert_algo != main_algo else None,
    )


def _modelopt(qc: dict[str, Any]) -> QuantScheme | None:
    algo = str(qc.get("quant_algo") or "").upper()
    kv = qc.get("kv_cache_quant_algo")
    scheme = qc.get("kv_cache_scheme")
    if kv is None and isinstance(scheme, dict) and scheme.get("type") == "float" and scheme.get("num_bits") == 8:
        kv = "FP8"  # the flat config.json form (modelopt_quant.py from_config)
    source = str(qc.get("_source") or "config.json")
    if algo == "MIXED_PRECISION":
        return _modelopt_mixed(qc, kv=str(kv) if kv else None, source=source)
    if "FP4" in algo:
        group = _int(qc.get("group_size"), 16)
        return QuantScheme("modelopt_fp4", f"ModelOpt NVFP4, group {group}", 4, group, 1.0,
                           kv_cache_quant_algo=str(kv) if kv else None, source=source)
    if "FP8" in algo:
        return QuantScheme("modelopt_fp8", "ModelOpt FP8", 8, kv_cache_quant_algo=str(kv) if kv else None, source=source)
    return None


def _other(method: str, qc: dict[str, Any]) -> QuantScheme | None:
    if method in ("fp8", "fbgemm_fp8", "w8a8_fp8", "w8a8_int8", "modelopt_fp8"):
        block = qc.get("weight_block_size")
        shape = (block[0], block[1]) if isinstance(block, list) and len(block) == 2 and all(
            isinstance(b, int) and b > 0 for b in block) else None
        label = f"{method} 8-bit" + (f", {shape[0]}x{shape[1]} blocks" if shape else "")
        return QuantScheme(method, label, 8, block=shape)
    if method == "mxfp4":
        return QuantScheme(method, "MXFP4 experts, group 32", 4, 32, 1.0, components=("experts",))
    if method == "bitsandbytes":
        if qc.get("load_in_8bit"):
            return QuantScheme(method, "bitsandbytes 8-bit", 8)
        double = bool(qc.get("bnb_4bit_use_double_quant"))
        return QuantScheme(method, "bitsandbytes 4-bit", 4, 64, 1.0 if double else 4.0)
    return None


def _matches(pattern: str, name: str) -> bool:
    if pattern.startswith("re:"):
        try:
            return re.match(pattern[3:], name) is not None
        except re.error:
            return False
    if pattern in name:
        return True
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(name, pattern) or any(fnmatch.fnmatchcase(part, pattern) for part in name.split("."))
    return False


def _normalised(pattern: str) -> str:
    # the language model's layers under a multimodal wrapper: matched as model.layers.N
    for wrapper in ("model.language_model.", "language_model.model."):
        pattern = pattern.replace(wrapper, "model.")
    return pattern.replace("language_model.", "") if not pattern.startswith("re:") else pattern


# (component, [(sub-module share key, the names SGLang's model files give it)])
_SUBMODULES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "attention": (
        ("q", ("self_attn.q_proj", "self_attn.qkv_proj", "self_attn.q_a_proj", "self_attn.q_b_proj")),
        ("kv", ("self_attn.k_proj", "self_attn.v_proj", "self_attn.kv_a_proj_with_mqa", "self_attn.kv_b_proj")),
        ("o", ("self_attn.o_proj",)),
    ),
    "linear_attention": (
        ("in", ("linear_attn.in_proj_qkvz", "linear_attn.in_proj_qkv", "linear_attn.in_proj_z")),
        ("ba", ("linear_attn.in_proj_ba", "linear_attn.in_proj_b", "linear_attn.in_proj_a")),
        ("out", ("linear_attn.out_proj",)),
    ),
    "mlp": (
        ("gate", ("mlp.gate_proj", "mlp.gate_up_proj")),
        ("up", ("mlp.up_proj",)),
        ("down", ("mlp.down_proj",)),
    ),
    "experts": (
        ("routed", ("mlp.experts.0.gate_proj", "mlp.experts.0.up_proj", "mlp.experts.0.down_proj", "mlp.experts")),
        ("shared", ("mlp.shared_expert.gate_proj", "mlp.shared_experts.gate_proj", "mlp.shared_expert.down_proj")),
    ),
}


def ignored_shares(
    patterns: tuple[str, ...], *, num_layers: int, sub_shares: dict[str, dict[str, float]]
) -> tuple[tuple[str, float], ...]:
    """The share of each component's parameters the ignore list keeps unquantized, averaged
    over the decoder layers (a list naming layer 0's down_proj keeps a third of one layer's MLP)."""
    if not patterns or num_layers <= 0:
        return ()
    normalised = tuple(_normalised(p) for p in patterns)
    per_layer = any(ch.isdigit() for p in normalised for ch in p)
    layers = range(num_layers) if per_layer else range(1)
    shares: list[tuple[str, float]] = []
    for component, subs in _SUBMODULES.items():
        weights = sub_shares.get(component, {})
        total = 0.0
        for i in layers:
            for key, names in subs:
                share = weights.get(key, 0.0)
                if share and any(_matches(p, f"model.layers.{i}.{n}") for n in names for p in normalised):
                    total += share
        if total:
            shares.append((component, min(1.0, total / len(layers))))
    if any(_matches(p, "lm_head") for p in normalised):
        shares.append(("lm_head", 1.0))
    return tuple(shares)


def read_quant_scheme(
    qc: Any, *, num_layers: int, sub_shares: dict[str, dict[str, float]]
) -> QuantScheme | None:
    """The weight format a quantization_config describes; None for one imgbuild cannot size."""
    if not isinstance(qc, dict):
        return None
    method = str(qc.get("quant_method") or "").lower()
    if method in ("awq", "awq_marlin", "gptq", "gptq_marlin", "auto-round"):
        scheme = _awq_gptq(method, qc)
        patterns = _names(qc.get("modules_to_not_convert"))
    elif method == "compressed-tensors" or (not method and isinstance(qc.get("config_groups"), dict)):
        scheme = _compressed_tensors(qc)
        patterns = _names(qc.get("ignore"))
    elif method == "modelopt" or (not method and qc.get("quant_algo")):
        scheme = _modelopt(qc)
        patterns = _names(qc.get("exclude_modules")) or _names(qc.get("ignore"))
    else:
        scheme = _other(method, qc)
        patterns = _names(qc.get("ignored_layers")) or _names(qc.get("modules_to_not_convert"))
    if scheme is None:
        return None
    shares = ignored_shares(patterns, num_layers=num_layers, sub_shares=sub_shares)
    if scheme.lm_head_quantized and any(c == "lm_head" for c, _ in shares):
        scheme = QuantScheme(**{**scheme.__dict__, "lm_head_quantized": False})
    return QuantScheme(**{**scheme.__dict__, "unquantized_share": shares})
