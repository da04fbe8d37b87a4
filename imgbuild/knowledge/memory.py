"""SGLang's own GPU memory accounting, done before anything loads. Pure: no I/O.

Every formula names the file of the SGLang wheel it follows (paths inside the
``sglang/srt/`` package). Three rule sets, chosen by version ("eras"), each read
from the released wheels:

- ``0.5.9`` (0.5.9 and older): model_executor/model_runner_kv_cache_mixin.py
  ``profile_max_num_token``/``init_memory_pool``; server_args.py
  ``_handle_gpu_memory_settings`` with a 2 GiB speculative reserve; hybrid
  models with speculation silently lose the radix cache.
- ``0.5.10`` (0.5.10 .. 0.5.13): model_executor/pool_configurator.py and
  model_runner_kv_cache_mixin.py ``_profile_available_bytes``/
  ``handle_max_mamba_cache``/``_resolve_max_num_reqs``; a 4 GiB speculative
  reserve; piecewise CUDA graphs on by default; hybrid + speculation + radix
  cache with ``no_buffer`` is refused at argument parsing.
- ``0.5.14`` (0.5.14 and newer, read in 0.5.14 and 0.5.23): no speculative
  reserve in the default mem-fraction; draft weights load before the KV pool is
  sized ("draft weights are now counted"); mamba slots and intermediate
  speculative states solved jointly; ``--mamba-radix-cache-strategy auto``
  picks extra_buffer instead of refusing. 0.5.23 pads the intermediate states by
  one slot (mem_cache/kv_cache_configurator.py) and, from 0.5.18, reserves the
  multimodal embedding cache (100 MiB) out of the KV budget.

The model comes in as the ModelGeometry that imgbuild.knowledge.modelinfo read, and its
weights are counted by modelinfo's block counters; this module only shards and sizes.

All sizes are per GPU. SGLang logs "GB" meaning GiB (x / (1 << 30)).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from imgbuild.knowledge.attnbackend import default_attention_backend
from imgbuild.knowledge.modelinfo import (
    DTYPE_BYTES,
    MODELLED_VISION,
    ModelGeometry,
    VisionGeometry,
    attention_layers_params,
    linear_attention_params,
    mlp_params,
    mtp_layer_params,
    routed_expert_params,
    vision_params,
    vocab_per_gpu,
)
from imgbuild.knowledge.planerror import margin_error_gib
from imgbuild.knowledge.quantscheme import QuantScheme

GIB = float(1 << 30)
MIB = float(1 << 20)

# ----------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rules:
    """What one SGLang version does, where the versions differ."""

    version: str
    era: str  # "0.5.9" | "0.5.10" | "0.5.14"
    spec_reserve_mib: int  # server_args.py _handle_gpu_memory_settings, EAGLE family
    standalone_reserve_mib: int
    piecewise_graphs_default_on: bool
    hybrid_spec_radix: str  # "auto-disable" | "refuse" | "extra-buffer"
    mrr_explicit_cap: str  # "none" | "estimate" | "tokens"
    draft_weights_before_kv: bool
    mamba_joint_solve: bool
    intermediate_pad_slot: bool
    mm_reservation_mib: int
    verified: bool  # this exact version's wheel was read

    @property
    def hybrid_pool_rule(self) -> str:
        """Which form of the hybrid state pool's sizing this version has, before the 0.5.10 era's
        (read in the 0.5.2-0.5.9 wheels): "0.5.2" model_executor/model_runner.py ``initialize``
        and ``profile_max_num_token`` (a fixed slot count); "0.5.4" model_runner.py
        ``handle_max_mamba_cache`` (the ratio split, slots x (1 + draft tokens)); "0.5.7" and
        "0.5.8" model_executor/model_runner_kv_cache_mixin.py ``handle_max_mamba_cache``;
        "0.5.9" the form this module follows from 0.5.9 on."""
        key = _vkey(self.version)
        for start in ("0.5.9", "0.5.8", "0.5.7", "0.5.4"):
            if key >= _vkey(start):
                return start
        return "0.5.2"

    @property
    def era_label(self) -> str:
        return {"0.5.9": "<= 0.5.9", "0.5.10": "0.5.10-0.5.13", "0.5.14": ">= 0.5.14"}[self.era]


def _vkey(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.replace("post", ".").replace("rc", ".").split("."):
        if not piece:  # "0.4.5.post3" -> "0.4.5..3": the post number is the fourth part
            continue
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    while len(parts) < 4:
        parts.append(0)
    return tuple(parts[:4])


VERIFIED_VERSIONS = frozenset({"0.5.9", "0.5.10", "0.5.11", "0.5.12", "0.5.13", "0.5.14", "0.5.23"})


def rules_for(version: str) -> Rules:
    key = _vkey(version)
    verified = version in VERIFIED_VERSIONS
    if key < _vkey("0.5.10"):
        return Rules(version, "0.5.9", 2048, 6144, False, "auto-disable", "none", False, False, False, 0, verified)
    if key < _vkey("0.5.14"):
        return Rules(version, "0.5.10", 4096, 6144, True, "refuse", "estimate", False, False, False, 0, verified)
    return Rules(
        version,
        "0.5.14",
        0,
        0,
        True,
        "extra-buffer",
        "tokens",
        True,
        True,
        key >= _vkey("0.5.23"),
        100 if key >= _vkey("0.5.18") else 0,
        verified,
    )


# ----------------------------------------------------------------------------- geometry
# ModelGeometry and VisionGeometry are read by imgbuild.knowledge.modelinfo (read_geometry).

# configs/model_config.py piecewise_cuda_graph_disabled_model_archs (0.5.11)
PIECEWISE_DISABLED_ARCHS = frozenset(
    {"DeepseekV32ForCausalLM", "Qwen3NextForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM", "LLaDAModelLM"}
)


# ----------------------------------------------------------------------------- weights


@dataclass(frozen=True)
class WeightSplit:
    """Parameters, per GPU and in the checkpoint, by where SGLang puts them."""

    target_per_gpu_params: float
    target_total_params: int
    mtp_per_gpu_params: float
    mtp_total_params: int
    vision_per_gpu_params: float
    vision_total_params: int
    model_total_params: int  # everything in the checkpoint as computed from shapes
    unexplained_params: int  # checkpoint total_parameters less the computed total
    target_linear_per_gpu_params: float = 0.0  # the decoder layers less their norms: what a quantized checkpoint packs
    # target_linear_per_gpu_params by block (attention, linear_attention, mlp, experts), for ignore lists
    target_parts_per_gpu: tuple[tuple[str, float], ...] = ()
    lm_head_per_gpu_params: float = 0.0
    routed_experts_per_gpu_params: float = 0.0  # the MoE layers' routed experts (FusedMoE), a share of "experts"

    def per_gpu_bytes(self, geom: ModelGeometry, params_per_gpu: float) -> float:
        """Bytes for a per-GPU parameter count: dtype bytes, or the checkpoint's real bytes when quantized."""
        if geom.quantization and geom.checkpoint_bytes:
            return geom.checkpoint_bytes * params_per_gpu / max(1, self.model_total_params + self.unexplained_params)
        return params_per_gpu * geom.dtype_bytes


def _target_params(
    g: ModelGeometry, *, tp: int, pp: int, attn_tp: int
) -> tuple[float, int, float, tuple[tuple[str, float], ...]]:
    """(per GPU, total, per-GPU linear projections, those by block) of the target model:
    decoder layers, embeddings, final norm."""
    h = g.hidden_size
    vocab_gpu = vocab_per_gpu(g.vocab_size, tp)
    embed_total = g.vocab_size * h * (1 if g.tie_word_embeddings else 2)
    embed_gpu = vocab_gpu * h * (1 if g.tie_word_embeddings else 2)

    # with --enable-dp-attention the attention layers run at attention-TP (tp / dp): replicated wider
    attn_gpu, attn_total = attention_layers_params(g, attn_tp)
    gdn_gpu, gdn_total = linear_attention_params(g, attn_tp) if g.hybrid else (0.0, 0)
    dense_gpu, dense_total = mlp_params(g, tp, moe=False)
    moe_gpu, moe_total = mlp_params(g, tp, moe=True) if g.num_experts else (0.0, 0)
    norms = g.norms_per_layer * h

    layers_gpu = 0.0
    layers_total = 0
    n_moe = g.moe_layers
    n_dense = g.dense_layers
    layers_gpu += attn_gpu + g.linear_attention_layers * gdn_gpu
    layers_total += attn_total + g.linear_attention_layers * gdn_total
    layers_gpu += n_dense * dense_gpu + n_moe * moe_gpu + g.num_layers * norms
    layers_total += n_dense * dense_total + n_moe * moe_total + g.num_layers * norms
    # pipeline stages split the layers; embeddings sit on the first, the head on the last:
    # the first stage is the largest, which is what must fit.
    layers_gpu /= pp
    linear_gpu = layers_gpu - g.num_layers * norms / pp
    parts = (
        ("attention", attn_gpu / pp),
        ("linear_attention", g.linear_attention_layers * gdn_gpu / pp),
        ("mlp", n_dense * dense_gpu / pp),
        ("experts", n_moe * moe_gpu / pp),
    )
    return layers_gpu + embed_gpu + h, layers_total + embed_total + h, linear_gpu, parts


def _checkpoint_gap(g: ModelGeometry, computed: int) -> int:
    """The checkpoint's own parameter count (or its bytes / dtype) less the shapes' count; 0 without an index."""
    reference = g.checkpoint_parameters
    if reference is None and g.checkpoint_bytes and not g.quantization:
        reference = g.checkpoint_bytes // g.dtype_bytes
    return int(reference) - computed if reference else 0


def split_weights(
    g: ModelGeometry, *, tp: int, pp: int = 1, vision_tp: int | None = None, attn_tp: int | None = None
) -> WeightSplit:
    """Parameters per GPU for the target model, its MTP layers and its vision tower.

    The target skips the checkpoint's MTP/NextN tensors (models/qwen3_5.py
    ``load_weights`` drops names with "mtp"; deepseek_v2.py drops the NextN layer),
    so they are counted apart: they belong to the draft. The blocks are counted by
    imgbuild.knowledge.modelinfo, the same counter inspect's parameter_breakdown adds up.
    """
    target_gpu, target_total, linear_gpu, parts = _target_params(g, tp=tp, pp=pp, attn_tp=attn_tp or tp)

    mtp_gpu, mtp_total = 0.0, 0
    if g.mtp_layers:
        one_gpu, one_total = mtp_layer_params(g, tp, attn_tp)
        mtp_gpu, mtp_total = one_gpu * g.mtp_layers, one_total * g.mtp_layers

    vis_gpu, vis_total = 0.0, 0
    if g.vision is not None and g.vision.kind in MODELLED_VISION:
        vis_gpu, vis_total = vision_params(g.vision, vision_tp or tp)

    unexplained = _checkpoint_gap(g, int(target_total + mtp_total + vis_total))
    if g.vision is not None and g.vision.kind == "opaque" and unexplained > 0:
        # a vision tower whose shapes imgbuild does not model: what the index holds
        # beyond the text model, kept whole on every GPU (the conservative reading)
        vis_total = unexplained
        vis_gpu = float(unexplained)
        unexplained = 0
    return WeightSplit(
        target_per_gpu_params=target_gpu,
        target_total_params=int(target_total),
        mtp_per_gpu_params=mtp_gpu,
        mtp_total_params=int(mtp_total),
        vision_per_gpu_params=vis_gpu,
        vision_total_params=int(vis_total),
        model_total_params=int(target_total + mtp_total + vis_total),
        unexplained_params=unexplained,
        target_linear_per_gpu_params=linear_gpu,
        target_parts_per_gpu=parts,
        lm_head_per_gpu_params=0.0 if g.tie_word_embeddings else float(vocab_per_gpu(g.vocab_size, tp) * g.hidden_size),
        routed_experts_per_gpu_params=g.moe_layers * routed_expert_params(g) / tp / pp if g.num_experts else 0.0,
    )


def weights_per_gpu_bytes(g: ModelGeometry, split: WeightSplit, *, tp: int, at_load: QuantScheme | None = None) -> float:
    """The target's "Load weight end ... mem usage" per GPU, in bytes.

    A gap between the checkpoint's own parameter count and the shapes (less than
    a percent for the models modelled) is spread over the GPUs as if sharded.
    ``at_load``: the scheme an unquantized checkpoint is quantized to while loading
    (online_quant_scheme); its projections then take that format, whatever the index says.
    """
    params = split.target_per_gpu_params + split.vision_per_gpu_params
    if split.unexplained_params > 0 and not g.quantization:
        params += split.unexplained_params / tp
    scheme = at_load or (g.quant if not g.checkpoint_bytes else None)
    if scheme is not None:
        packed = quantized_params_per_gpu(scheme, split)
        if scheme.routed_expert_bytes is not None:  # routed experts in their own format (DeepSeek V4's MXFP4)
            routed = min(packed, split.routed_experts_per_gpu_params * (1 - scheme.excluded_share("experts")))
            return (routed * scheme.routed_expert_bytes + (packed - routed) * scheme.bytes_per_weight
                    + (params - packed) * g.dtype_bytes)
        return packed * scheme.bytes_per_weight + (params - packed) * g.dtype_bytes
    return split.per_gpu_bytes(g, params)


def quantized_params_per_gpu(scheme: QuantScheme, split: WeightSplit) -> float:
    """The target's parameters per GPU that a quantized checkpoint packs: the decoder layers'
    projections (knowledge/quantscheme.py says which methods quantize which), less what its
    ignore list keeps in the model dtype; embeddings, norms and the vision tower stay unpacked."""
    packed = split.target_linear_per_gpu_params
    for component, part in split.target_parts_per_gpu:
        share = scheme.excluded_share(component)
        if share:
            packed -= share * part
    if scheme.lm_head_quantized:
        packed += split.lm_head_per_gpu_params
    return max(0.0, packed)


FP8_METHODS = frozenset({"fp8", "w8a8_fp8", "fbgemm_fp8", "modelopt_fp8", "compressed-tensors"})

# --quantization fp8 on a checkpoint without a quantization config: layers/quantization/fp8.py
# Fp8Config.get_quant_method gives every LinearBase an Fp8LinearMethod and every FusedMoE an
# Fp8MoEMethod; on a checkpoint that is not FP8-serialized their create_weights allocate the
# weights in the model dtype, the loader (model_loader/loader.py DefaultModelLoader.load_model)
# reads the whole checkpoint into them, and only then process_weights_after_loading quantizes
# each to float8_e4m3 with one scale per tensor (input_to_float8). So the load peaks at the
# model-dtype size, and "Load weight end ... mem usage" is the FP8 size (read in 0.4.5.post1 and
# 0.5.10.post1). Embeddings and lm_head (VocabParallelEmbedding) get no quant method.
ONLINE_FP8 = QuantScheme("fp8", "FP8 per tensor, quantized at load (--quantization fp8)", 8, source="--quantization fp8")


def online_quant_scheme(g: ModelGeometry, quantization_flag: str | None) -> QuantScheme | None:
    """The scheme SGLang quantizes an unquantized checkpoint to at load, where imgbuild sizes it."""
    if g.quantization or (quantization_flag or "").lower() != "fp8":
        return None
    return ONLINE_FP8



# ----------------------------------------------------------------------------- KV and state


def kv_dtype_bytes(kv_cache_dtype: str, model_dtype_bytes: int) -> float:
    """--kv-cache-dtype (server_args.py choices); "auto" is the model dtype."""
    name = (kv_cache_dtype or "auto").lower()
    if name == "auto":
        return float(model_dtype_bytes)
    if name.startswith("fp8"):
        return 1.0
    if name.startswith("fp4"):
        return 0.5
    return float(DTYPE_BYTES.get(name, model_dtype_bytes))


def checkpoint_kv_cache_dtype(g: ModelGeometry, version: str) -> str | None:
    """The KV dtype --kv-cache-dtype auto takes from the checkpoint, None for the model dtype:
    a modelopt quant config whose kv_cache_quant_algo is FP8 gives fp8_e4m3 from 0.5.3
    (model_executor/model_runner.py ``configure_kv_cache_dtype``; 0.5.23
    mem_cache/kv_cache_dtype.py); 0.4.x-0.5.2 serve "auto" in the model dtype."""
    algo = g.quant.kv_cache_quant_algo if g.quant is not None else None
    if isinstance(algo, str) and algo.upper() == "FP8" and _vkey(version) >= _vkey("0.5.3"):
        return "fp8_e4m3"
    return None


def _serves_sparse_mla(inp: MemoryInputs) -> bool:
    """DeepSeek sparse attention as SGLang serves it from 0.5.4.post1: MLA with the indexer."""
    g = inp.geometry
    return g.dsa_indexer and g.mla and _vkey(inp.rules.version) >= _vkey("0.5.4")


def served_kv_cache_dtype(inp: MemoryInputs) -> str:
    """--kv-cache-dtype as the KV pool is allocated: "auto" resolved through the checkpoint, and for a
    DeepSeek sparse-attention model (MLA with index_topk) by the GPU: fp8_e4m3 on SM 10 and newer,
    bfloat16 below (server_args.py _set_default_nsa_kv_cache_dtype 0.5.6-0.5.13, _set_default_dsa_kv_cache_dtype
    0.5.14-0.5.18, arg_groups/overrides.py from 0.5.19; 0.5.4.post1 sets fp8_e4m3 on SM 10+ inline)."""
    if (inp.kv_cache_dtype or "auto").lower() == "auto":
        cc = inp.gpu_compute_capability
        if cc and _serves_sparse_mla(inp):
            return "fp8_e4m3" if int(float(cc)) >= 10 else "auto"
        return checkpoint_kv_cache_dtype(inp.geometry, inp.rules.version) or "auto"
    return inp.kv_cache_dtype


def dsa_index_bytes(g: ModelGeometry) -> int:
    """DSATokenToKVPool's indexer key per token and layer (mem_cache/memory_pool.py): index_head_dim FP8
    bytes and a 4-byte scale per quant_block_size (128), in its uint8 buffer."""
    return g.dsa_index_head_dim + g.dsa_index_head_dim // 128 * 4


def dsa_fp8_latent_bytes(g: ModelGeometry) -> int:
    """An FP8 DSA pool's stored latent per token and layer (calculate_mla_kv_cache_dim): kv_lora_rank FP8
    bytes with a 4-byte scale per 128, and the rope part kept in bfloat16 (656 for DeepSeek-V3.2)."""
    return g.kv_lora_rank + g.kv_lora_rank // 128 * 4 + g.qk_rope_head_dim * 2


def kv_cell_bytes(g: ModelGeometry, *, attn_tp: int, pp: int = 1, kv_cache_dtype: str = "auto") -> int:
    """Bytes per token per GPU (model_executor/pool_configurator.py ``_compute_cell_size``;
    0.5.9: model_runner_kv_cache_mixin.py ``get_cell_size_per_token``)."""
    size = kv_dtype_bytes(kv_cache_dtype, g.dtype_bytes)
    layers = math.ceil(g.kv_layers / pp)
    if g.mla:
        cell = (g.kv_lora_rank + g.qk_rope_head_dim) * layers * size
        if g.dsa_indexer:
            cell += dsa_index_bytes(g) * layers
    else:
        heads = max(1, g.num_kv_heads // attn_tp)
        cell = heads * (g.head_dim + g.v_head_dim) * layers * size
        if size == 0.5:  # fp4: packed values plus one scale per 16 (pool_configurator.py)
            cell = cell + heads * g.head_dim * layers * 2 * 1 // 16
    return int(cell)


# ----------------------------------------------------------------------------- the hybrid SWA pool

# configs/model_config.py is_hybrid_swa_model: the architectures whose KV pool SGLang splits into a
# full-attention part and a sliding-window part, by release (read in the 0.5.8.post1, 0.5.9, 0.5.10,
# 0.5.11, 0.5.14, 0.5.16, 0.5.18 and 0.5.23 wheels). 0.5.7 splits only MiMo-V2 (is_hybrid_model); up to
# 0.5.6 model_runner.py splits any model with a sliding window, but server_args.py turns it off for
# GPT-OSS (0.5.2, 0.5.6), Gemma 2/3 and OLMo: those releases are planned with one pool.
_SWA_SIZED_FROM = {
    "GptOssForCausalLM": "0.5.8",
    "Llama4ForConditionalGeneration": "0.5.8",
    "MiMoV2FlashForCausalLM": "0.5.8",
    "MiMoV2ForCausalLM": "0.5.11",  # MIMO_V2_MODEL_ARCHS
    "Step3p5ForCausalLM": "0.5.9",
    "Step3p7ForConditionalGeneration": "0.5.14",
    # Gemma 4: layer_types name the sliding layers; the full layers take global_head_dim and
    # num_global_key_value_heads, the sliding ones head_dim and num_key_value_heads
    # (utils/hf_transformers/config.py, 0.5.11 and 0.5.23; modelinfo.py reads them so). Its KV-shared
    # layers keep their slots: the pool is sized for every layer (nothing outside the model reads them)
    "Gemma4ForCausalLM": "0.5.11",
    "Gemma4ForConditionalGeneration": "0.5.11",
}
# split too, but by geometry plan does not read (DeepSeek V4's compressed pools, the rest unseen
# here): counted as one pool, with a note
_SWA_UNSIZED_FROM = {
    "Gemma4UnifiedForConditionalGeneration": "0.5.14", "LagunaForCausalLM": "0.5.14",
    "MellumForCausalLM": "0.5.16", "InklingForConditionalGeneration": "0.5.16",
    "UnlimitedOCRForCausalLM": "0.5.16", "MuseGlimmerForCausalLM": "0.5.18",
    "MuseGlimmerForConditionalGeneration": "0.5.18", "BeamForCausalLM": "0.5.23",
    "EmbeddingGemma2Model": "0.5.23", "DiffusionGemmaForBlockDiffusion": "0.5.23",
    "GraniteSWAForCausalLM": "0.5.23", "GraniteMoeSWAForCausalLM": "0.5.23", "IQuestQ1ForCausalLM": "0.5.23",
}
SWA_FULL_TOKENS_RATIO = 0.8  # server_args.py (0.5.8-0.5.14), arg_groups/fields/schedule.py fallback (0.5.23)


@dataclass(frozen=True)
class SwaSplit:
    """The two parts of a hybrid SWA pool: layers and bytes per token of each, and the ratio of
    sliding-window tokens to full ones."""

    full_layers: int
    swa_layers: int
    full_per_token: int  # bytes, one layer, per GPU
    swa_per_token: int
    ratio: float


def hybrid_swa_split(inp: MemoryInputs) -> SwaSplit | None:
    """The split SGLang makes, or None where it keeps one pool: the architecture is not split in this
    release, --disable-hybrid-swa-memory, or server_args.py turns it off (GPT-OSS on the trtllm_mha
    backend, the default on SM 10, in 0.5.8-0.5.9, and with speculative decoding in 0.5.8; MiMo-V2 and
    Step-3.5 under --enable-hierarchical-cache)."""
    g, version = inp.geometry, inp.rules.version
    since = _SWA_SIZED_FROM.get(g.architecture)
    if since is None or _vkey(version) < _vkey(since) or g.swa_layers <= 0 or inp.disable_hybrid_swa_memory:
        return None
    if g.architecture == "GptOssForCausalLM" and _vkey(version) < _vkey("0.5.10"):
        cc = inp.gpu_compute_capability
        backend = inp.attention_backend or ("trtllm_mha" if cc and int(float(cc)) == 10 else None)
        if backend == "trtllm_mha" or (inp.speculative_algorithm and _vkey(version) < _vkey("0.5.9")):
            return None
    if inp.enable_hierarchical_cache and g.architecture.startswith(("MiMoV2", "Step3p")):
        return None
    size = kv_dtype_bytes(served_kv_cache_dtype(inp), g.dtype_bytes)
    attn_tp = inp.attn_tp_size or inp.tp_size
    full_heads = max(1, g.num_kv_heads // attn_tp)
    swa_heads = max(1, (g.swa_num_kv_heads or g.num_kv_heads) // attn_tp)
    swa_head_dim = g.swa_head_dim or g.head_dim
    swa_v_head_dim = g.swa_v_head_dim or swa_head_dim
    return SwaSplit(
        full_layers=math.ceil((g.num_layers - g.swa_layers) / inp.pp_size),
        swa_layers=math.ceil(g.swa_layers / inp.pp_size),
        full_per_token=int(full_heads * (g.head_dim + g.v_head_dim) * size),
        swa_per_token=int(swa_heads * (swa_head_dim + swa_v_head_dim) * size),
        ratio=inp.swa_full_tokens_ratio if inp.swa_full_tokens_ratio is not None else SWA_FULL_TOKENS_RATIO,
    )


def hybrid_swa_unsized(g: ModelGeometry, version: str) -> bool:
    """Whether this release splits the model's pool by a geometry plan does not read."""
    since = _SWA_UNSIZED_FROM.get(g.architecture)
    return since is not None and _vkey(version) >= _vkey(since)


def swa_pool_tokens(split: SwaSplit, rest_bytes: int, *, page_size: int, max_total_tokens: int | None,
                    era: str) -> tuple[int, int]:
    """(full tokens, sliding-window tokens) of the split pool. 0.5.10 on (model_executor/
    pool_configurator.py HybridSWAPoolConfigurator): a token of max_total_num_tokens costs
    F x full layers + ratio x S x SWA layers, and --max-total-tokens caps the full part. 0.5.8-0.5.9
    (model_runner_kv_cache_mixin.py set_num_tokens_hybrid_swa): the pool is first sized, and capped,
    as F x full + S x SWA per token, then split in the same proportion."""
    full_cost = split.full_per_token * split.full_layers
    swa_cost = split.swa_per_token * split.swa_layers

    def page(x: float) -> int:
        return int(x) // page_size * page_size

    if split.full_layers == 0:  # all layers slide: one pool, no ratio
        tokens = rest_bytes // max(1, swa_cost)
        if max_total_tokens is not None:
            tokens = min(tokens, max_total_tokens)
        return 0, page(tokens)
    if era == "0.5.9":
        tokens = page(rest_bytes // max(1, full_cost + swa_cost))
        if max_total_tokens is not None:
            tokens = min(tokens, page(max_total_tokens))
        full = page(tokens * (full_cost + swa_cost) / (full_cost + split.ratio * swa_cost))
    else:
        full = page(rest_bytes / (full_cost + split.ratio * swa_cost))
        if max_total_tokens is not None:
            full = min(full, page(max_total_tokens))
    return full, swa_part_tokens(split, full, page_size)


def swa_part_tokens(split: SwaSplit, full_tokens: int, page_size: int) -> int:
    """The sliding-window part's tokens beside a full part of full_tokens, page-aligned."""
    return int(full_tokens * split.ratio) // page_size * page_size


@dataclass(frozen=True)
class MambaState:
    conv_bytes: int  # per request, all linear layers, per GPU
    ssm_bytes: int
    ssm_dtype: str

    @property
    def per_request_bytes(self) -> int:
        return self.conv_bytes + self.ssm_bytes


def mamba_state(g: ModelGeometry, *, attn_tp: int, pp: int = 1, ssm_dtype_flag: str | None = None) -> MambaState | None:
    """Conv + SSM state of one request (configs/mamba_utils.py ``Mamba2StateShape``,
    ``mamba_cache_per_req``; dtype from ``mamba2_state_dtype``: float32, else the
    config's mamba_ssm_dtype, else --mamba-ssm-dtype, the last one winning)."""
    if not g.hybrid:
        return None
    ssm_dtype = ssm_dtype_flag or g.mamba_ssm_dtype or "float32"
    layers = math.ceil(g.linear_attention_layers / pp)
    key_dim = g.linear_num_key_heads * g.linear_key_head_dim
    value_dim = g.linear_num_value_heads * g.linear_value_head_dim
    conv_dim = 2 * key_dim + value_dim
    conv = (conv_dim // attn_tp) * (g.linear_conv_kernel_dim - 1) * 2  # bf16 conv state
    ssm = (g.linear_num_value_heads // attn_tp) * g.linear_value_head_dim * g.linear_key_head_dim
    ssm *= DTYPE_BYTES.get(ssm_dtype, 4)
    return MambaState(conv_bytes=conv * layers, ssm_bytes=ssm * layers, ssm_dtype=ssm_dtype)


# ----------------------------------------------------------------------------- defaults


def graph_defaults(gpu_mem_mib: float | None, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) by GPU memory (server_args.py
    ``_handle_gpu_memory_settings``; the same tiers in 0.5.9, 0.5.11, 0.5.23 memory_hook.py)."""
    if gpu_mem_mib is None:
        return 4096, 160
    if gpu_mem_mib < 20 * 1024:
        return 2048, 8
    if gpu_mem_mib < 35 * 1024:
        return 2048, 24 if tp < 4 else 80
    if gpu_mem_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if gpu_mem_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def legacy_graph_defaults(inp: MemoryInputs) -> tuple[int, int]:
    """(chunked_prefill_size, the largest CUDA-graph batch) of releases before 0.5.3, read from each
    wheel's server_args.py ``__post_init__`` and model_executor/cuda_graph_runner.py
    ``get_batch_sizes_to_capture`` (0.4.0-0.5.2). Where server_args leaves cuda_graph_max_bs unset,
    the largest batch is the capture list's: 160 (152 with speculative decoding, 0.4.5.post3-0.4.7),
    extended to 256 on a large GPU (above 81,920 MiB in 0.4.5.post3-0.4.6.post1, without DP from
    0.4.6; above 96 GiB in 0.4.6.post2-0.4.7; above 90 GiB from 0.4.8) and to 512 above 160,000 MiB
    (0.4.8+).

    chunked_prefill_size: 0.4.0-0.4.7 2048 under 25,000 MiB, else 8192 (16384 with PD disaggregation
    from 0.4.6.post2, and above 180,000 MiB in 0.4.7); 0.4.8-0.5.2 by 35 / 160 GiB: 2048 / 8192 / 16384.
    cuda_graph_max_bs under that small-GPU line: 8 (0.4.0), 8 below TP 4 and 80 from it (0.4.1+)."""
    key, gpu = _vkey(inp.rules.version), inp.gpu_total_mib
    if gpu is None:
        return (4096 if key >= _vkey("0.4.8") else 8192), 160
    if key < _vkey("0.4.8"):
        small = gpu < 25_000
        if key >= _vkey("0.4.7") and gpu > 180_000:
            chunk = 16384
        elif small:
            chunk = 2048
        elif key >= _vkey("0.4.6.post2") and inp.cuda_graphs.disaggregation_mode != "null":
            chunk = 16384
        else:
            chunk = 8192
    else:
        small = gpu < 35 * 1024
        chunk = 2048 if small else 8192 if gpu < 160 * 1024 else 16384
    if small:
        return chunk, 8 if key < _vkey("0.4.1") or inp.tp_size < 4 else 80
    if key < _vkey("0.4.5.post3"):
        return chunk, 160  # server_args sets 160 itself
    spec = inp.speculative_algorithm is not None
    graph_bs = 152 if spec and key < _vkey("0.4.8") else 160
    if key < _vkey("0.4.6.post2"):
        large = gpu > 81920 and (key < _vkey("0.4.6") or inp.dp_size == 1)
    elif key < _vkey("0.4.8"):
        large = gpu > 96 * 1024
    else:
        large = gpu > 90 * 1024
    if large:
        graph_bs = 256
    if key >= _vkey("0.4.8") and gpu > 160 * 1000:
        graph_bs = 512
    return chunk, graph_bs


def release_graph_defaults(inp: MemoryInputs) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang fills in for this release: legacy_graph_defaults
    before 0.5.3, graph_defaults' tiers from 0.5.3 (0.5.3 itself gives 16, not 24, at TP < 4 between 20
    and 35 GiB), decode_graph_defaults from 0.5.15."""
    key = _vkey(inp.rules.version)
    if key < _vkey("0.5.3"):
        return legacy_graph_defaults(inp)
    if key >= _vkey("0.5.15"):
        return decode_graph_defaults(inp)
    chunk, graph_bs = graph_defaults(inp.gpu_total_mib, inp.tp_size)
    gpu = inp.gpu_total_mib
    if key < _vkey("0.5.4") and gpu is not None and 20 * 1024 <= gpu < 35 * 1024 and inp.tp_size < 4:
        graph_bs = 16
    return chunk, graph_bs


def decode_graph_defaults(inp: MemoryInputs) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_config.decode.max_bs) of 0.5.15+ (server_args.py
    _handle_gpu_memory_settings; arg_groups/memory_hook.py from 0.5.19): from 0.5.20 a GPU under
    35 GiB gets 4096 and 48 (160 at TP >= 4); --cuda-graph-max-bs-decode and
    --cuda-graph-bs-decode (its max) set max_bs; from 0.5.22 a default max_bs is capped at
    --max-running-requests."""
    chunk, max_bs = graph_defaults(inp.gpu_total_mib, inp.tp_size)
    key, f, gpu_mem = _vkey(inp.rules.version), inp.cuda_graphs, inp.gpu_total_mib
    if key >= _vkey("0.5.20") and gpu_mem is not None and 20 * 1024 <= gpu_mem < 35 * 1024:
        chunk, max_bs = 4096, 48 if inp.tp_size < 4 else 160
    explicit = f.decode_max_bs if f.decode_max_bs is not None else inp.cuda_graph_max_bs
    if explicit is not None:
        max_bs = explicit
    elif key >= _vkey("0.5.22") and inp.max_running_requests is not None:
        max_bs = min(max_bs, inp.max_running_requests)
    if f.decode_bs:
        max_bs = max(f.decode_bs)
    return chunk, max_bs


def piecewise_token_sizes(max_tokens: int) -> list[int]:
    """_generate_piecewise_cuda_graph_tokens() (server_args.py, 0.5.9-0.5.13; the prefill graph's
    generate_prefill_cuda_graph_batch_sizes later)."""
    sizes = (
        list(range(4, 33, 4))
        + list(range(48, 257, 16))
        + list(range(288, 513, 32))
        + list(range(576, 1025, 64))
        + list(range(1280, 4097, 256))
        + list(range(4608, max_tokens + 1, 512))
    )
    return [s for s in sizes if s <= max_tokens]


def piecewise_token_count(max_tokens: int) -> int:
    """len(_generate_piecewise_cuda_graph_tokens()) (server_args.py, 0.5.9-0.5.13)."""
    return len(piecewise_token_sizes(max_tokens))


def piecewise_reserve_mib(inp: MemoryInputs, chunked: int) -> float:
    """What _handle_gpu_memory_settings (server_args.py) reserves for piecewise CUDA graphs, by release (read in
    the wheels): nothing up to 0.5.5; piecewise_cuda_graph_max_tokens // 4 in 0.5.6 (4096 unless given) and // 8
    in 0.5.7 (the chunked prefill size unless given); from 0.5.8, 8 MiB a captured size up to the max tokens (the
    chunked prefill size, 2048 for an MLA model, unless given), but 1.5 GiB for an MLA model from 0.5.10."""
    key, mla, given = _vkey(inp.rules.version), inp.geometry.mla, inp.piecewise_max_tokens
    if key < _vkey("0.5.6"):
        return 0.0
    if key < _vkey("0.5.7"):
        return float((given or 4096) // 4)
    if key < _vkey("0.5.8"):
        return float((given or chunked) // 8)
    if mla and key >= _vkey("0.5.10"):
        return 1.5 * 1024
    sizes = piecewise_token_sizes(min(given or (2048 if mla else chunked), inp.max_total_tokens or 1 << 30))
    if key < _vkey("0.5.9"):  # 0.5.8's list starts its fourth range at 640, not 576
        sizes = [size for size in sizes if size != 576]
    return len(sizes) * 8.0


def vlm_mfs_factor(v: VisionGeometry | None) -> float:
    """server_args.py ``adjust_mem_fraction_for_vlm``: it reads
    vision_config.num_hidden_layers (24 when absent, as for Qwen3-VL's ``depth``)."""
    if v is None:
        return 1.0
    layers = v.num_hidden_layers_attr or 24
    hidden = v.hidden_size_attr or v.hidden_size or 1024
    ratio = layers * hidden**2 / (24 * 1024**2)
    factor = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return 0.95 * factor


# ----------------------------------------------------------------------------- the plan

# SGLang's "Load weight end ... mem usage" is free memory before less free memory after loading
# (model_runner.py load_model), so it also holds what the first kernels bring in (lazily loaded
# CUDA modules, cuBLAS workspaces, rotary caches) and the staging blocks the caching allocator keeps.
# The mean residual of the parameter bytes against the logged figure over the cases in tests/data/logs
# (+0.09 .. +0.29 GiB). Under about 2 GiB of weights the residual shrinks with the model: 0.07 to 0.08
# GiB on Qwen2.5-0.5B and Qwen3-Reranker-0.6B, 0.15 on MiniCPM5-1B (tests/data/plan_logs, tuning part),
# so it is capped at LOAD_OVERHEAD_SHARE of the weights.
LOAD_OVERHEAD_GIB = 0.18
LOAD_OVERHEAD_SHARE = 0.08


def load_overhead_gib(param_gib: float) -> float:
    """What "Load weight end ... mem usage" holds beyond the parameters' bytes, per GPU."""
    return min(LOAD_OVERHEAD_GIB, LOAD_OVERHEAD_SHARE * param_gib)


@dataclass(frozen=True)
class CudaGraphFlags:
    """The flags that decide the per-phase CUDA graphs of 0.5.16+ (server_args.py
    _parse_cuda_graph_config, arg_groups/cuda_graph_hook.py parse_cuda_graph_config from 0.5.19)
    and the settings their compatibility rules read."""

    decode_backend: str | None = None  # --cuda-graph-backend-decode
    prefill_backend: str | None = None  # --cuda-graph-backend-prefill
    disable_decode: bool = False  # --disable-decode-cuda-graph
    disable_prefill: bool = False  # --disable-prefill-cuda-graph
    decode_max_bs: int | None = None  # --cuda-graph-max-bs-decode
    decode_bs: tuple[int, ...] | None = None  # --cuda-graph-bs-decode
    prefill_max_bs: int | None = None  # --cuda-graph-max-bs-prefill
    prefill_bs: tuple[int, ...] | None = None  # --cuda-graph-bs-prefill
    disaggregation_mode: str = "null"
    dcp_size: int = 1
    attn_cp_size: int = 1
    two_batch_overlap: bool = False
    moe_a2a_backend: str = "none"
    lora: bool = False
    language_model_only: bool = False


def cuda_graph_flags(values: Any) -> CudaGraphFlags:
    """CudaGraphFlags from parsed launch flags (launchflags.LaunchConfig.values)."""

    def ints(key: str) -> tuple[int, ...] | None:
        return tuple(int(b) for b in values[key]) if values.get(key) else None

    def opt_int(key: str) -> int | None:
        return int(values[key]) if values.get(key) is not None else None

    return CudaGraphFlags(
        decode_backend=values.get("cuda_graph_backend_decode"),
        prefill_backend=values.get("cuda_graph_backend_prefill"),
        disable_decode=bool(values.get("disable_decode_cuda_graph")),
        disable_prefill=bool(values.get("disable_prefill_cuda_graph")),
        decode_max_bs=opt_int("cuda_graph_max_bs_decode"),
        decode_bs=ints("cuda_graph_bs_decode"),
        prefill_max_bs=opt_int("cuda_graph_max_bs_prefill"),
        prefill_bs=ints("cuda_graph_bs_prefill"),
        disaggregation_mode=str(values.get("disaggregation_mode") or "null"),
        dcp_size=int(values.get("dcp_size") or 1),
        attn_cp_size=int(values.get("attn_cp_size") or 1),
        two_batch_overlap=bool(values.get("enable_two_batch_overlap")),
        moe_a2a_backend=str(values.get("moe_a2a_backend") or "none"),
        lora=bool(values.get("enable_lora") or values.get("lora_paths")),
        language_model_only=bool(values.get("language_model_only")),
    )


@dataclass(frozen=True)
class MemoryInputs:
    rules: Rules
    geometry: ModelGeometry
    tp_size: int
    pp_size: int = 1
    attn_tp_size: int | None = None
    dp_size: int = 1
    enable_dp_attention: bool = False
    gpu_total_mib: float | None = None  # smallest memory.total over the host's GPUs (nvidia-smi)
    free_before_load_gib: float = 0.0  # F0: mem_get_info after NCCL init, min over ranks
    mem_fraction_static: float | None = None
    chunked_prefill_size: int | None = None
    cuda_graph_max_bs: int | None = None
    cuda_graph_bs: tuple[int, ...] | None = None  # --cuda-graph-bs
    max_prefill_tokens: int = 16384
    disable_cuda_graph: bool = False
    piecewise_cuda_graph: bool | None = None  # None: the version's default for this model
    piecewise_max_tokens: int | None = None  # --piecewise-cuda-graph-max-tokens
    max_running_requests: int | None = None
    max_total_tokens: int | None = None
    context_length: int | None = None
    page_size: int = 1
    page_size_flag: int | None = None  # --page-size as given (page_size above turns 0 into 1)
    mamba_track_interval: int = 256  # --mamba-track-interval (server_args.py's default)
    kv_cache_dtype: str = "auto"
    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    draft_model_external: bool = False  # --speculative-draft-model-path to another model
    draft_geometry: ModelGeometry | None = None  # that model's config.json, read by modelinfo
    gpu_compute_capability: str | None = None  # "9.0": matrix.yaml's row for the GPU (None: unknown)
    platform: str = "cuda"  # matrix.yaml's row: "rocm" on an AMD Instinct GPU (aiter_mfs_factor)
    attention_backend: str | None = None  # --attention-backend as given (None: the release's default)
    disable_radix_cache: bool = False
    # turned off after the model adjustments resolved the mamba strategy (deterministic inference's backend check,
    # a diffusion LLM in 0.5.6-0.5.9)
    radix_off_after_adjustments: bool = False
    # --enable-mis: the radix cache off after the kernel backends are set (after the linear-attention checks too),
    # chunked prefill and CUDA graphs off once the memory settings are made (server_args.py
    # _handle_multi_item_scoring, 0.5.11; arg_groups/attention_hook.py in 0.5.23), so mem_fraction_static keeps
    # their reserve
    enable_mis: bool = False
    mamba_strategy: str = "auto"
    mamba_ssm_dtype: str | None = None
    max_mamba_cache_size: int | None = None
    mamba_full_memory_ratio: float = 0.9
    language_only: bool = False
    mm_enable_dp_encoder: bool = False
    enable_torch_compile: bool = False
    # the first post-parse check of knowledge/argchecks.py that refuses these flags (None: none)
    argument_error: str | None = None
    # SGLang raises argument_error only after its model adjustments (knowledge/argchecks.py
    # checked_after_model_adjustments): a refusal made there is printed instead
    argument_error_late: bool = False
    argument_error_asserts: str | None = None  # a bare assert's place and condition (argchecks.Refusal.asserts)
    cuda_graphs: CudaGraphFlags = CudaGraphFlags()  # read from 0.5.16 on
    disable_overlap_schedule: bool = False  # read from 0.5.16 on (the hybrid cache strategy)
    linear_attn_backend: str = "triton"
    quantization_flag: str | None = None  # --quantization as given (None: the checkpoint's own)
    enable_linear_replayssm: bool = False
    cpu_offload_gb: float = 0.0  # --cpu-offload-gb: GiB of decoder-layer weights per GPU kept in host memory
    disable_hybrid_swa_memory: bool = False  # --disable-hybrid-swa-memory
    swa_full_tokens_ratio: float | None = None  # --swa-full-tokens-ratio (None: SWA_FULL_TOKENS_RATIO)
    enable_hierarchical_cache: bool = False


@dataclass(frozen=True)
class MemoryPlan:
    """One GPU's budget in SGLang's own terms, plus the verdict ingredients."""

    rules: Rules
    mem_fraction_static: float
    mem_fraction_static_default: bool
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    gpu_total_gib: float
    free_before_load_gib: float
    weights_gib: float
    avail_after_load_gib: float
    draft_weights_gib: float
    draft_transient_gib: float
    draft_kv_gib: float
    kv_cell_bytes: int
    rest_before_state_gib: float
    spec_intermediate_gib: float
    mamba_per_request_bytes: int
    mamba_slots: int
    mamba_conv_gib: float
    mamba_ssm_gib: float
    intermediate_ssm_gib: float
    req_to_token_gib: float  # the ReqToTokenPool, allocated with the pools out of F0 x (1 - mfs)
    kv_tokens: int
    k_size_gib: float
    v_size_gib: float
    max_running_requests: int
    context_length: int
    speculative_algorithm: str | None
    speculative_num_draft_tokens: int | None
    radix_cache: bool
    mamba_strategy: str | None
    slack_gib: float  # F0 * (1 - mfs): what activations, graphs (and the draft, before 0.5.14) must fit in
    runtime_need_gib: float  # imgbuild's estimate of what lands there
    sglang_reserve_gib: float  # SGLang's own reserve heuristic for the same flags
    memory_pool_end_avail_gib: float
    refusal: str | None  # the exact error SGLang raises at argument parsing
    failure: str | None  # the exact error SGLang raises while sizing pools
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # the pool holds fewer tokens than the --context-length asked for: SGLang starts (the verdict can be
    # fits) but caps each request at the pool, so suggest still looks for changes that serve that length
    context_short: bool = False
    # how far the launch is from the edge, GiB per GPU: headroom left after the pools less the runtime
    # estimate; where a pool or the weights cannot be placed, how far short they fall (negative).
    # None where no memory figure decides (a refusal, or a failure memory cannot fix).
    margin_gib: float | None = None
    # what the margin is measured to: "weights" (they do not load), "pools" (nothing left for the KV pool
    # once the weights are in), "headroom" (activations and graphs outside the pools)
    margin_limit: str = "headroom"
    # plan's own error on real start-up logs at this F0 (knowledge/planerror.py): a margin inside it
    # is borderline
    margin_error_gib: float = 0.0
    # the only problem is the runtime headroom (so the margin alone decides the verdict)
    memory_only: bool = True
    platform: str = "cuda"  # "rocm": an AMD Instinct GPU
    aiter_factor: float = 1.0  # aiter_mfs_factor, already in mem_fraction_static

    @property
    def state_gib(self) -> float:
        return self.mamba_conv_gib + self.mamba_ssm_gib

    @property
    def reserve_gib(self) -> float:
        return self.spec_intermediate_gib

    @property
    def draft_gib(self) -> float:
        return self.draft_weights_gib + self.draft_kv_gib

    @property
    def borderline(self) -> bool:
        """The margin is inside plan's own error: the launch may go either way."""
        return (
            not self.refusal and self.memory_only and self.margin_gib is not None
            and abs(self.margin_gib) < self.margin_error_gib
        )

    @property
    def verdict(self) -> str:
        if self.refusal:
            return "refused"
        if self.borderline:
            return "borderline"
        if self.failure or self.problems:
            return "does-not-fit"
        return "fits"

    @property
    def fits(self) -> bool:
        """plan's best estimate: a borderline launch fits when its margin is not negative and SGLang's
        sizing raised nothing (a pool a few bytes short still fails)."""
        verdict = self.verdict
        return verdict == "fits" or (verdict == "borderline" and (self.margin_gib or 0.0) >= 0 and not self.failure)


def _spec_family(algorithm: str | None) -> str | None:
    if algorithm is None:
        return None
    algo = algorithm.upper()
    return "EAGLE" if algo == "NEXTN" else algo


def _tp_ladder(parallel: int) -> float:
    """The 0.4.x default by parallel size (server_args.py ``__post_init__``, 0.4.0-0.4.7)."""
    for size, fraction in ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87)):
        if parallel >= size:
            return fraction
    return 0.88


def _reserved_by_gpu_class_mib(gpu_mem: float, parallel: int) -> float:
    """server_args.py ``__post_init__`` (0.4.7.post1-0.5.2): the reserve by GPU memory class."""
    if gpu_mem < 35 * 1024:  # T4, A10, L40, 4090
        return (2.8 + parallel / 10) * 1024
    if gpu_mem < 90 * 1024:  # A100, H100
        return (9.5 + parallel / 2) * 1024
    if gpu_mem < 160 * 1024:  # H20, H200
        return (12 + parallel / 2) * 1024
    return 32 * 1024.0  # B200, MI300


def legacy_mem_fraction_static(inp: MemoryInputs) -> float:
    """The default --mem-fraction-static of releases before 0.5.3, read from each wheel's
    sglang/srt/server_args.py ``__post_init__``; the rule changed five times:

    0.4.0-0.4.5.post2   by TP size: 0.88 / 0.87 (TP 2) / 0.85 (4) / 0.81 (8) / 0.79 (16)
    0.4.5.post3-0.4.6.post1  that ladder up to 80 GiB, else (mem - 13 GiB) / mem
    0.4.6.post2-0.4.7   ladder on TP x PP up to 80 GiB, else 0.88; above 96 GiB raised by
                        48 GiB x (1 - f) / mem, capped at (mem - 18 GiB) / mem (20 GiB with
                        speculative decoding; 0.4.7: 0.79 above 180,000 MiB, and x 0.95 with
                        speculative decoding at or below 96 GiB)
    0.4.7.post1-0.5.2   mem less a reserve by GPU class, + 2 GiB speculative, + 4 GiB DP attention
                        (0.5.2: + 6 GiB for STANDALONE); multimodal x 0.90 (0.4.9) or
                        adjust_mem_fraction_for_vlm (0.4.10+)
    """
    key, gpu_mem = _vkey(inp.rules.version), inp.gpu_total_mib
    spec = inp.speculative_algorithm is not None
    if key < _vkey("0.4.5.post3"):
        return _tp_ladder(inp.tp_size)
    if key < _vkey("0.4.6.post2"):
        if gpu_mem is None or gpu_mem <= 81920:
            return _tp_ladder(inp.tp_size)
        return (gpu_mem - 13 * 1024) / gpu_mem
    parallel = inp.tp_size * inp.pp_size
    if key < _vkey("0.4.7.post1"):
        mfs = _tp_ladder(parallel) if gpu_mem is not None and gpu_mem <= 81920 else 0.88
        if gpu_mem is None:
            return mfs
        if key >= _vkey("0.4.7") and gpu_mem > 180 * 1000:
            return 0.79
        if gpu_mem > 96 * 1024:
            reserve = 20 * 1024 if spec and key >= _vkey("0.4.7") else 18 * 1024
            return min(mfs + 48 * 1024 * (1 - mfs) / gpu_mem, (gpu_mem - reserve) / gpu_mem)
        return mfs * 0.95 if spec and key >= _vkey("0.4.7") else mfs
    if gpu_mem is None:
        return 0.88
    reserved = _reserved_by_gpu_class_mib(gpu_mem, parallel)
    if spec:
        standalone = _spec_family(inp.speculative_algorithm) == "STANDALONE" and key >= _vkey("0.5.2")
        reserved += 6 * 1024 if standalone else 2 * 1024
    if inp.enable_dp_attention:
        reserved += 4 * 1024
    mfs = round((gpu_mem - reserved) / gpu_mem, 3)
    if inp.geometry.multimodal and not inp.language_only and key >= _vkey("0.4.9"):
        mfs = mfs * (vlm_mfs_factor(inp.geometry.vision) if key >= _vkey("0.4.10") else 0.90)
    return mfs


def default_mem_fraction_static(inp: MemoryInputs, *, chunked: int, graph_bs: int, piecewise: bool) -> float:
    """server_args.py ``_handle_gpu_memory_settings`` (0.5.3-0.5.14, read in 0.5.9 and 0.5.11);
    cuda_graph_mem_fraction_static from 0.5.15 (per-phase CUDA graphs);
    legacy_mem_fraction_static before 0.5.3."""
    rules, g = inp.rules, inp.geometry
    if _vkey(rules.version) < _vkey("0.5.3"):
        return legacy_mem_fraction_static(inp)
    if _vkey(rules.version) >= _vkey("0.5.15"):
        return cuda_graph_mem_fraction_static(inp, chunked=chunked, graph_bs=graph_bs)
    gpu_mem = inp.gpu_total_mib
    if gpu_mem is None:
        return 0.88 if rules.era != "0.5.14" else 0.95
    # chunked prefill off (-1): the activations of a whole max_prefill_tokens prefill
    reserved = 512.0 + max(chunked if chunked > 0 else inp.max_prefill_tokens, 2048) * 1.5
    # the CUDA-graph reserve ignores --disable-cuda-graph up to 0.5.14 (from 0.5.15 it follows
    # each phase's graph backend: cuda_graph_mem_fraction_static)
    reserved += graph_bs * 2
    reserved += inp.tp_size * inp.pp_size / 8 * 1024
    if inp.enable_dp_attention:
        reserved += graph_bs * inp.dp_size * 3
        if graph_bs > 300:
            reserved += graph_bs * inp.dp_size * 1.5
    if piecewise:
        reserved += piecewise_reserve_mib(inp, chunked)
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    algo = _spec_family(inp.speculative_algorithm)
    if algo == "STANDALONE":
        reserved += rules.standalone_reserve_mib
    elif algo is not None and algo != "NGRAM":
        reserved += rules.spec_reserve_mib
    mfs = round((gpu_mem - reserved) / gpu_mem, 3)
    if g.multimodal and not inp.language_only:
        mfs = mfs * vlm_mfs_factor(g.vision)
    return mfs


# configs/model_config.py multimodal_breakable_cuda_graph_supported_model_archs: each
# architecture with the first release that lists it (0.5.16-0.5.23 read)
_MM_BREAKABLE_SINCE = {
    "Qwen3_5ForConditionalGeneration": "0.5.16",
    "Qwen3_5MoeForConditionalGeneration": "0.5.16",
    "InternS2MobiusForConditionalGeneration": "0.5.18",
    "KimiK25ForConditionalGeneration": "0.5.18",
    "KimiK3ForConditionalGeneration": "0.5.18",
    "MuseGlimmerForConditionalGeneration": "0.5.18",
    "Cohere2VisionForConditionalGeneration": "0.5.19",
    "PaddleOCRVLForConditionalGeneration": "0.5.19",
    "Glm5NextForConditionalGeneration": "0.5.20",
    "MiniMaxM3SparseForCausalLM": "0.5.22",
    "MiniMaxM3SparseForConditionalGeneration": "0.5.22",
    "Qwen4ExpForConditionalGeneration": "0.5.22",
    "MuseSparkForConditionalGeneration": "0.5.23",
}
_DEEPSEEK_V4_ARCHS = frozenset({"DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark"})
_NEMOTRON_H_ARCHS = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronHForCausalLMMTP"})
_DSA_ARCHS = frozenset({"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"})


def _breakable_prefill_incompatible(inp: MemoryInputs) -> bool:
    """The rules that turn the default breakable prefill graph off: server_args.py
    _disable_breakable_cudagraph_if_incompatible (0.5.16-0.5.18), arg_groups/cuda_graph_hook.py
    disable_breakable_cudagraph_if_incompatible (0.5.19-0.5.23); the rule list changed in 0.5.17,
    0.5.18 and 0.5.20. Not modelled: 0.5.20+'s KDA models, 0.5.23's CP exemption (layers/cp/bcg.py)."""
    key, g, f = _vkey(inp.rules.version), inp.geometry, inp.cuda_graphs
    arch = g.architecture
    since = _MM_BREAKABLE_SINCE.get(arch)
    multimodal = g.multimodal and not f.language_model_only and not (since and key >= _vkey(since))
    common = arch in _DEEPSEEK_V4_ARCHS or f.attn_cp_size > 1 or f.dcp_size > 1 or multimodal
    if key < _vkey("0.5.17"):
        return common or g.mla or f.lora or f.moe_a2a_backend != "none" or inp.enable_dp_attention
    unvalidated_a2a = f.moe_a2a_backend not in ("none", "deepep", "megamoe", "flashinfer")
    rest = common or f.two_batch_overlap or unvalidated_a2a
    if key < _vkey("0.5.18"):
        return rest or (g.mla and arch not in _DSA_ARCHS) or arch in _NEMOTRON_H_ARCHS
    return rest


def _graph_backends_on(inp: MemoryInputs) -> tuple[bool, bool]:
    """(decode graph, prefill graph) captured, 0.5.16+: explicit flags win (parse_cuda_graph_config:
    --disable-cuda-graph, then --disable-{decode,prefill}-cuda-graph, then --cuda-graph-backend-*),
    else the defaults (decode full; prefill breakable on CUDA, CudaGraphConfig) less
    apply_cuda_graph_compatibility's auto-disable and apply_cuda_graph_disaggregation_roles."""
    f = inp.cuda_graphs
    decode = f.decode_backend
    if decode is None and (inp.disable_cuda_graph or f.disable_decode):
        decode = "disabled"
    if decode is None and f.disaggregation_mode == "prefill":
        decode = "disabled"
    prefill = f.prefill_backend
    if prefill is None and (inp.disable_cuda_graph or f.disable_prefill):
        prefill = "disabled"
    if prefill is None and inp.piecewise_cuda_graph is not None:  # 0.5.16-0.5.19's piecewise flags
        prefill = "breakable" if inp.piecewise_cuda_graph else "disabled"
    if prefill is None:
        pp_default_off = inp.pp_size > 1 and _vkey(inp.rules.version) >= _vkey("0.5.19")
        off = pp_default_off or _breakable_prefill_incompatible(inp) or f.disaggregation_mode == "decode"
        prefill = "disabled" if off else "breakable"
    return decode != "disabled", prefill != "disabled"


def _prefill_graph_sizes(inp: MemoryInputs, chunked: int) -> int:
    """len(cuda_graph_config.prefill.bs): the prefill capture sizes up to prefill max_bs
    (handle_gpu_memory_settings; generate_prefill_cuda_graph_batch_sizes, the piecewise list)."""
    f = inp.cuda_graphs
    if _deepep_aligns_prefill_graphs(inp):
        # server_args.py _apply_deepep_adjustments (0.5.17-0.5.18; arg_groups/cuda_graph_hook.py
        # apply_deepep_adjustments from 0.5.19): DeepEP's breakable prefill graph captures sizes rounded up
        # to multiples of 8, listed before max_bs is resolved (the flag, else 2048)
        sizes = f.prefill_bs or piecewise_token_sizes(f.prefill_max_bs or 2048)
        return len({(int(b) + 7) // 8 * 8 for b in sizes})
    if f.prefill_bs:
        return len(f.prefill_bs)
    max_bs = f.prefill_max_bs
    if max_bs is None:
        if not inp.geometry.mla:
            max_bs = chunked
        else:  # MLA capture capped: 2048 (0.5.16-0.5.22), min(8192, chunked) (0.5.23)
            max_bs = min(8192, chunked) if _vkey(inp.rules.version) >= _vkey("0.5.23") else 2048
        if inp.max_total_tokens is not None:
            max_bs = min(max_bs, inp.max_total_tokens)
        if inp.context_length is not None and _vkey(inp.rules.version) < _vkey("0.5.17"):
            max_bs = min(max_bs, inp.context_length)  # 0.5.16's clamp (#21112)
    return piecewise_token_count(max_bs)


def _deepep_aligns_prefill_graphs(inp: MemoryInputs) -> bool:
    f = inp.cuda_graphs
    return f.moe_a2a_backend == "deepep" and _vkey(inp.rules.version) >= _vkey("0.5.17") \
        and f.prefill_backend in (None, "breakable")


def _graph_reserve_mib(inp: MemoryInputs, *, chunked: int, graph_bs: int) -> float:
    """reserve_for_graph_mb + reserve_for_deepep_a2a_mb (server_args.py 0.5.16-0.5.18,
    arg_groups/memory_hook.py 0.5.19-0.5.23); the DeepEP one is added after the 10 GiB floor."""
    key, f = _vkey(inp.rules.version), inp.cuda_graphs
    decode_on, prefill_on = _graph_backends_on(inp)
    reserved = 0.0
    if f.disaggregation_mode != "prefill" and decode_on:
        reserved += graph_bs * 2
    # DP attention: enable_dp_attention x dp_size up to 0.5.21, attn_dp_size > 1 from 0.5.22
    dp_attention = inp.enable_dp_attention and (inp.dp_size > 1 or key < _vkey("0.5.22"))
    if dp_attention and f.disaggregation_mode != "prefill":
        reserved += graph_bs * inp.dp_size * 3
        if graph_bs > 300:
            reserved += graph_bs * inp.dp_size * 1.5
    if f.disaggregation_mode != "decode" and prefill_on:
        reserved += 1.5 * 1024 if inp.geometry.mla else _prefill_graph_sizes(inp, chunked) * 8
        if f.moe_a2a_backend == "deepep" and key >= _vkey("0.5.17"):
            reserved += 1024  # prefill-BCG DeepEP delta
    return reserved


def cuda_graph_mem_fraction_static(inp: MemoryInputs, *, chunked: int, graph_bs: int) -> float:
    """The default --mem-fraction-static of 0.5.15-0.5.23: server_args.py
    ``_handle_gpu_memory_settings`` (0.5.15-0.5.18; 0.5.15 inlines what 0.5.16 moved into
    reserve_for_graph_mb, and has no post-capture sizing), arg_groups/memory_hook.py
    ``handle_gpu_memory_settings`` (0.5.19-0.5.23), without post-capture KV sizing (off unless
    SGLANG_ENABLE_POST_CAPTURE_KV_SIZING). The graph reserve follows the per-phase CUDA graphs:
    the decode graph's max_bs x 2 MiB, the prefill graph's capture sizes x 8 MiB."""
    g, f, gpu_mem = inp.geometry, inp.cuda_graphs, inp.gpu_total_mib
    if gpu_mem is None:
        return 0.95
    if f.disaggregation_mode == "decode":
        running = inp.max_running_requests or graph_bs or 1
        activation_tokens = max(running * (inp.speculative_num_draft_tokens or 1), 2048)
    else:
        activation_tokens = max(chunked if chunked > 0 else inp.max_prefill_tokens, 2048)
    reserved = 512.0 + activation_tokens * 1.5 + inp.tp_size * inp.pp_size / 8 * 1024
    reserved += _graph_reserve_mib(inp, chunked=chunked, graph_bs=graph_bs)
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    decode_on, _ = _graph_backends_on(inp)
    if f.moe_a2a_backend == "deepep" and decode_on and f.disaggregation_mode != "prefill":
        reserved += 2 * 1024
    mfs = round((gpu_mem - reserved) / gpu_mem, 3)
    vlm = g.multimodal and not inp.language_only and not f.language_model_only
    # 0.5.17 on skips it for PD decode engines (server_args.py _handle_gpu_memory_settings: "the VLM encoder
    # only runs on the prefill stage"; 0.5.19 the same in its hook)
    if vlm and (f.disaggregation_mode != "decode" or _vkey(inp.rules.version) < _vkey("0.5.17")):
        mfs = mfs * vlm_mfs_factor(g.vision)
    return mfs


def _not_enough_message(rules: Rules, mfs: float) -> str:
    if rules.era == "0.5.9":
        # model_runner_kv_cache_mixin.py init_memory_pool (f-string with "=")
        return (
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: self.server_args.mem_fraction_static={mfs}"
        )
    # model_executor/pool_configurator.py MemoryPoolConfig.__post_init__
    return f"RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static={mfs}"


class _Outcome:
    """What the phases find on the way: SGLang's argument-parsing refusal, the first
    error SGLang would raise while sizing, and the problems and notes, in the order found."""

    __slots__ = ("refusal", "failure", "problems", "notes", "memory_failure", "headroom_problem", "load_short_gib",
                 "context_short")

    def __init__(self) -> None:
        self.refusal: str | None = None
        self.failure: str | None = None
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.memory_failure = False  # the failure is memory running short (a margin can say how far)
        self.headroom_problem: str | None = None  # the problem that is the runtime headroom, if any
        self.load_short_gib: float | None = None  # F0 less a load peak above the weights kept (quantize-at-load)
        self.context_short = False  # the pool is shorter than the --context-length asked for

    def fail(self, message: str, *, memory: bool = False) -> None:
        # SGLang stops at the first error: later phases never overwrite it
        if self.failure is None:
            self.failure = message
            self.memory_failure = memory

    def refuse(self, message: str) -> None:
        if self.refusal is None:
            self.refusal = message

    def memory_only(self) -> bool:
        """Nothing but memory stops the launch: no failure memory cannot fix, no problem but the headroom."""
        return (self.failure is None or self.memory_failure) and all(p == self.headroom_problem for p in self.problems)


@dataclass(slots=True)
class _Settings:
    """The launch after SGLang's server_args.py has filled in its defaults (not frozen: a
    frozen dataclass costs a few microseconds a plan, and suggestions plan thousands)."""

    chunked: int
    graph_bs: int
    piecewise: bool
    algo: str | None
    mfs: float
    mfs_default: bool
    mrr_flag: int | None
    draft_tokens: int | None
    context: int
    radix: bool
    strategy: str | None
    page_size: int
    aiter_factor: float = 1.0  # aiter_mfs_factor, already in mfs


def _piecewise_graphs(inp: MemoryInputs) -> bool:
    """Piecewise CUDA graphs: opt-in in 0.5.9; on by default from 0.5.10 except for the
    models and modes _handle_piecewise_cuda_graph turns off (server_args.py)."""
    if inp.piecewise_cuda_graph is not None:
        return inp.piecewise_cuda_graph
    if inp.rules.piecewise_graphs_default_on:
        return not (
            inp.geometry.architecture in PIECEWISE_DISABLED_ARCHS
            or inp.geometry.multimodal
            or inp.enable_dp_attention
            or inp.enable_torch_compile
            or inp.pp_size > 1
        )
    return False


def _speculative_defaults(inp: MemoryInputs, algo: str | None) -> tuple[int | None, int | None]:
    """(max_running_requests flag, draft tokens) after server_args.py _handle_speculative_decoding."""
    mrr_flag = inp.max_running_requests
    steps, topk, draft_tokens = inp.speculative_num_steps, inp.speculative_eagle_topk, inp.speculative_num_draft_tokens
    if algo in ("EAGLE", "EAGLE3", "STANDALONE"):
        if mrr_flag is None:
            mrr_flag = 48
        if steps is None:
            # auto_choose_speculative_params: (3, 1, 4) except Llama/Grok (5, 4, 8)
            arch = inp.geometry.architecture
            steps, topk, draft_tokens = (5, 4, 8) if arch in ("LlamaForCausalLM", "Grok1ForCausalLM") else (3, 1, 4)
        topk = topk or 1
        if topk == 1 and draft_tokens != steps + 1:
            draft_tokens = steps + 1
    elif algo is None:
        draft_tokens = None
    return mrr_flag, draft_tokens


# transformers 5 turns Gemma 3's rope_scaling into rope parameters per layer type, where SGLang's
# get_context_length finds no factor: 131072 for gemma-3-4b-it under 0.5.11 and 0.5.23, 1048576 under 0.5.9
# (SGLang's own ModelConfig, tests/oracle/sglang_model_shapes.py). matrix.yaml's pins: transformers 5 from
# 0.5.10 (5.3.0), and 5.0.0rc0 in 0.5.6.post1 alone.
_ROPE_PER_LAYER_TYPE = frozenset({"gemma3", "gemma3_text"})


def derived_context(g: ModelGeometry, version: str) -> int:
    """The context length SGLang ``version`` derives for the model under the transformers it pins."""
    transformers5 = _vkey(version) >= _vkey("0.5.10") or version == "0.5.6.post1"
    if transformers5 and g.model_type in _ROPE_PER_LAYER_TYPE:
        return g.context_length_unscaled or g.max_position_embeddings
    return g.context_length or g.max_position_embeddings


def _context_length(inp: MemoryInputs, out: _Outcome) -> int:
    """The context length (configs/model_config.py _derive_context_length): a longer one is refused."""
    derived = derived_context(inp.geometry, inp.rules.version)
    if inp.context_length and inp.context_length > derived:
        out.refuse(
            f"ValueError: Warning: User-specified context_length ({inp.context_length}) is greater than the derived "
            f"context_length ({derived}). This may lead to incorrect model outputs or CUDA errors. Note that the "
            "derived context_length may differ from max_position_embeddings in the model's config. To allow overriding "
            "this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        )
    return inp.context_length or derived


_MAMBA2_ARCHS = frozenset({"FalconH1ForCausalLM", "NemotronHForCausalLM", "NemotronH_Nano_VL_V2"})


def _radix_unsupported(version: str, architecture: str, algo: str | None) -> str | None:
    """Where a release turns the radix cache off for a hybrid model whatever the flags say: the
    file and what it says, or None."""
    key = _vkey(version)
    if key < _vkey("0.5.4"):
        return "model_executor/model_runner.py: 'Hybrid GDN model detected, disable radix cache'"
    if key < _vkey("0.5.7") and architecture in _MAMBA2_ARCHS:
        return "model_executor/model_runner.py: 'model detected, disable radix cache' for Mamba2 models"
    if _vkey("0.5.5") <= key < _vkey("0.5.14") and architecture == "KimiLinearForCausalLM" \
            or _vkey("0.5.9") <= key < _vkey("0.5.13") and architecture == "BailingMoeV2_5ForCausalLM":
        return "server_args.py: 'Disabling Radix Cache for this model as it is not yet supported'"
    if _vkey("0.5.8") <= key < _vkey("0.5.9") and architecture == "NemotronHForCausalLM" and algo is not None:
        return "server_args.py: speculative decoding for NemotronHForCausalLM is not supported with radix cache yet"
    return None


# hybrids whose mamba cache has no extra_buffer form: LFM2's conv state (0.5.9 and 0.5.11 server_args.py
# _handle_mamba_radix_cache(support_mamba_cache_extra_buffer=False) asserts "mamba extra_buffer is not supported
# for Lfm2ForCausalLM model"; 0.5.23 arg_groups/overrides.py _MAMBA_EXTRA_BUFFER_ARCHS lacks it, so "auto"
# resolves no_buffer), as SGLang's own parser answers for these releases (tests/oracle)
_NO_MAMBA_EXTRA_BUFFER = frozenset({"Lfm2ForCausalLM"})


def _extra_buffer_supported(inp: MemoryInputs) -> bool:
    """supports_mamba_cache_extra_buffer (0.5.14+ server_args.py, 0.5.23 arg_groups/overrides.py): the triton
    linear-attention backend, and a model whose cache has the form (its full per-release list is not modelled)."""
    return inp.linear_attn_backend == "triton" and inp.geometry.architecture not in _NO_MAMBA_EXTRA_BUFFER


def _mamba_radix_cache(inp: MemoryInputs, algo: str | None, out: _Outcome) -> tuple[bool, str | None, int]:
    """(radix cache on, mamba scheduler strategy, page size) for a hybrid model with speculation
    (server_args.py _handle_mamba_radix_cache; 0.5.14+: _handle_mamba_radix_cache /
    arg_groups/overrides.py _mamba_radix_cache_resolution)."""
    rules, g = inp.rules, inp.geometry
    radix = not inp.disable_radix_cache
    strategy: str | None = None
    page_size = inp.page_size
    if g.hybrid:
        strategy = inp.mamba_strategy if inp.mamba_strategy != "auto" else "no_buffer"
        if _vkey(rules.version) >= _vkey("0.5.14") and inp.mamba_strategy == "auto":
            # 0.5.14 server_args.py _handle_mamba_radix_cache (0.5.15 on
            # arg_groups/overrides.py _mamba_radix_cache_resolution): left "auto" without a radix
            # cache; extra_buffer needs overlap or paging and supports_mamba_cache_extra_buffer
            # (the triton linear-attention backend)
            extra = (not inp.disable_overlap_schedule or page_size > 1) and _extra_buffer_supported(inp)
            strategy = "auto" if not radix else "extra_buffer" if extra else "no_buffer"
        unsupported = _radix_unsupported(rules.version, g.architecture, algo)
        if radix and unsupported:
            radix = False
            out.notes.append(f"SGLang {rules.version} disables the radix cache for {g.architecture} ({unsupported})")
        if radix and strategy == "no_buffer" and algo is not None and _vkey(rules.version) >= _vkey("0.5.9"):
            if rules.hybrid_spec_radix == "auto-disable":
                radix = False
                out.notes.append(
                    f"SGLang {rules.version} disables the radix cache: speculative decoding for "
                    f"{g.architecture} is not supported with radix cache yet"
                )
            elif rules.hybrid_spec_radix == "refuse":
                out.refuse(
                    f"ValueError: Speculative decoding for {g.architecture} is not compatible with radix cache when "
                    "using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please "
                    "use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
                )
        if radix and strategy == "extra_buffer" and g.architecture in _NO_MAMBA_EXTRA_BUFFER \
                and _vkey(rules.version) < _vkey("0.5.14"):
            out.refuse(f"AssertionError: mamba extra_buffer is not supported for {g.architecture} model")
        if radix:
            _validate_mamba_strategy(inp, strategy, out)
        if radix and strategy == "no_buffer" and page_size != 1:
            page_size = 1
        if not radix and strategy == "extra_buffer" and rules.era == "0.5.10":
            # server_args.py _handle_mamba_radix_cache; 0.5.13 put a full stop after the flag
            stop = "." if _vkey(rules.version) >= _vkey("0.5.13") else ""
            out.refuse(
                f"ValueError: mamba extra_buffer is not compatible with --disable-radix-cache{stop} Overlap scheduling "
                "is already supported with no_buffer + disable_radix_cache. Please use --mamba-scheduler-strategy "
                "no_buffer instead."
            )
    if not g.hybrid and not inp.disable_radix_cache and inp.mamba_strategy in ("extra_buffer", "extra_buffer_lazy") \
            and _vkey(rules.version) >= _vkey("0.5.21"):
        # arg_groups/model_hook.py handle_mamba_radix_cache (0.5.21-0.5.23), inside the model-specific adjustments
        # (before --enable-mis turns the radix cache off): an explicit extra-buffer strategy on a model without
        # mamba state, with the radix cache on (mamba_extra_buffer_of)
        out.refuse(f"ValueError: --mamba-radix-cache-strategy {inp.mamba_strategy} needs mamba state, got "
                   f"{g.architecture}.")
    return radix and not inp.radix_off_after_adjustments and not inp.enable_mis, strategy, page_size


def _validate_mamba_strategy(inp: MemoryInputs, strategy: str | None, out: _Outcome) -> None:
    """The resolved strategy's validators with a radix cache on (0.5.14+: server_args.py
    _validate_mamba_no_buffer / _validate_mamba_extra_buffer, 0.5.23 arg_groups/mamba_hook.py), and
    extra_buffer's page-size assertion in every release that has it."""
    if strategy == "no_buffer" and inp.page_size_flag not in (None, 1) \
            and _vkey(inp.rules.version) >= _vkey("0.5.14"):
        # server_args.py _validate_mamba_no_buffer (0.5.23 arg_groups/mamba_hook.py validate_mamba_no_buffer);
        # up to 0.5.13.post1 _handle_mamba_radix_cache warned and reset the page size to 1 instead
        out.refuse("AssertionError: no_buffer only supports page_size=1.")
    if inp.mamba_strategy != "auto" and not inp.mamba_strategy.startswith("extra_buffer") \
            and not inp.disable_overlap_schedule \
            and _vkey(inp.rules.version) >= _vkey("0.5.14"):
        # the same validator's next assert: "auto" turns the overlap schedule off when it picks
        # no_buffer, an explicit strategy other than extra_buffer (argparse takes any text) does not
        out.refuse("AssertionError: no_buffer do not support overlap schedule. Try to set "
                   "disable_overlap_schedule=True.")
    if (strategy or "").startswith("extra_buffer") and _vkey(inp.rules.version) >= _vkey("0.5.14") \
            and not _extra_buffer_supported(inp):
        # validate_mamba_extra_buffer's first assert (0.5.14 server_args.py _validate_mamba_extra_buffer,
        # 0.5.23 arg_groups/mamba_hook.py), by the same supports_mamba_cache_extra_buffer the auto strategy asks
        out.refuse(f"AssertionError: extra_buffer is not supported for {inp.geometry.architecture}; use no_buffer.")
    if (strategy or "").startswith("extra_buffer") and inp.page_size_flag is not None:
        # extra_buffer_lazy too (enable_mamba_extra_buffer / 0.5.23 mamba_extra_buffer_of)
        _extra_buffer_page_size(inp, out)


def _replayssm_refusals(inp: MemoryInputs, algo: str | None, out: _Outcome) -> None:
    """--enable-linear-replayssm against the strategy SGLang resolves (server_args.py
    _handle_linear_attn_backend 0.5.15-0.5.18, arg_groups/attention_hook.py from 0.5.19):
    mamba_extra_buffer_of(resolved_view(...)), a radix cache with extra_buffer(_lazy), is refused, then
    any --disaggregation-mode but null. The first message names the strategy; 0.5.15's names a field
    it no longer has (mamba_scheduler_strategy, renamed mamba_radix_cache_strategy), so it raises
    AttributeError."""
    key = _vkey(inp.rules.version)
    if not inp.enable_linear_replayssm or key < _vkey("0.5.15"):
        return
    # the resolution alone (its refusals come later), as the check sees it: before --enable-mis turns the radix off
    radix, strategy, _ = _mamba_radix_cache(replace(inp, enable_mis=False), algo, _Outcome())
    if not inp.geometry.hybrid or not radix or strategy not in ("extra_buffer", "extra_buffer_lazy"):
        # the same function's next check (0.5.15-0.5.23): the disaggregated decode pool has no ReplaySSM ring
        mode = inp.cuda_graphs.disaggregation_mode
        if mode != "null":
            out.refuse("ValueError: --enable-linear-replayssm is not supported under PD disaggregation yet "
                       f"(follow-up). Got --disaggregation-mode={mode!r}.")
        return
    if key < _vkey("0.5.16"):
        out.refuse("AttributeError: 'ServerArgs' object has no attribute 'mamba_scheduler_strategy'")
        return
    # 0.5.16-0.5.18 name the flag's value (self.mamba_radix_cache_strategy); 0.5.19 on read it through
    # resolving_view (arg_groups/attention_hook.py handle_linear_attn_backend), so the resolved strategy
    named = inp.mamba_strategy if key < _vkey("0.5.19") else strategy
    out.refuse("ValueError: --enable-linear-replayssm requires --mamba-radix-cache-strategy no_buffer (the default); "
               "the extra_buffer ping-pong donation path is not yet supported (follow-up). Got "
               f"--mamba-radix-cache-strategy={named!r}.")


def _extra_buffer_page_size(inp: MemoryInputs, out: _Outcome) -> None:
    """extra_buffer's page-size assertion: mamba_track_interval % page_size == 0 (server_args.py
    _handle_mamba_radix_cache through 0.5.13.post1, with its message; 0.5.14 on a bare assert, 0.5.23
    arg_groups/mamba_hook.py validate_mamba_extra_buffer). --page-size 0 divides by zero there."""
    page = inp.page_size_flag
    if page == 0:
        out.refuse("ZeroDivisionError: integer modulo by zero")
    elif page is not None and inp.mamba_track_interval % page:
        out.refuse(f"AssertionError: mamba_track_interval {inp.mamba_track_interval} must be divisible by page_size "
                   f"{page}" if _vkey(inp.rules.version) < _vkey("0.5.14") else "AssertionError: ")


def rocm_default_attention_backend(inp: MemoryInputs) -> str:
    """The attention backend SGLang picks on ROCm when --attention-backend is not given
    (model_executor/model_runner.py model_specific_adjustment 0.4.7-0.5.3, server_args.py
    _handle_attention_backend_compatibility 0.5.4.post1-0.5.18, arg_groups/model_override_base.py
    get_default_attn_backend from 0.5.19): aiter for MHA; for MLA aiter only when the KV heads
    per TP rank (ModelConfig.get_num_kv_heads) are 16 or 128 ("current aiter only support head
    number 16 or 128"), and through 0.5.2 only without speculative decoding; triton otherwise.
    DeepSeek sparse attention serves on its own backend (nsa / dsa)."""
    g = inp.geometry
    if _serves_sparse_mla(inp):
        return "nsa"
    if not g.mla:
        return "aiter"
    per_rank = max(1, g.num_kv_heads // max(1, inp.attn_tp_size or inp.tp_size))
    if per_rank not in (16, 128):
        return "triton"
    if inp.speculative_algorithm is not None and _vkey(inp.rules.version) < _vkey("0.5.3"):
        return "triton"
    return "aiter"


def aiter_mfs_factor(inp: MemoryInputs, context_len: int) -> float:
    """On ROCm with the aiter attention backend and a context above 8,192 tokens, SGLang scales
    --mem-fraction-static, given or default, to leave aiter its workspace ("AMD platforms
    backends"): x 0.85 from 0.4.7 (model_runner.py through 0.5.3, server_args.py
    _handle_attention_backend_compatibility 0.5.4.post1-0.5.18, arg_groups/attention_hook.py
    handle_attention_backend_compatibility from 0.5.19, where SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1
    skips it for a given value), x 0.90 in 0.5.4.x (read in 0.5.4.post1). On CUDA only with an explicit
    --attention-backend aiter (the default is never aiter there)."""
    key = _vkey(inp.rules.version)
    if key < _vkey("0.4.7") or context_len <= 8192:
        return 1.0
    # the check reads the backend, not the platform: an explicit --attention-backend aiter scales it on CUDA too
    backend = inp.attention_backend or (rocm_default_attention_backend(inp) if inp.platform == "rocm" else None)
    if backend != "aiter":
        return 1.0
    return 0.90 if _vkey("0.5.4") <= key < _vkey("0.5.5") else 0.85


def backend_disables_radix_cache(version: str, attention_backend: str | None) -> bool:
    """--attention-backend dual_chunk_flash_attn turns the radix cache (and mixed chunks) off ("Mixed chunk
    and radix cache are disabled when using dual-chunk flash attention backend": server_args.py
    _handle_attention_backend_compatibility 0.5.3-0.5.18, arg_groups/attention_hook.py 0.5.19)."""
    return attention_backend == "dual_chunk_flash_attn" and _vkey("0.5.3") <= _vkey(version) <= _vkey("0.5.19")


def dllm_disables_radix_cache(version: str, values: Mapping[str, Any]) -> bool:
    """A diffusion LLM (--dllm-algorithm) turns the radix cache off in 0.5.6-0.5.9 ("Radix cache is disabled
    because of using diffusion LLM inference": server_args.py _handle_dllm_inference, after the model-specific
    adjustments); from 0.5.10 it keeps it and checks the architecture instead (knowledge/argchecks.py)."""
    return values.get("dllm_algorithm") is not None and _vkey("0.5.6") <= _vkey(version) < _vkey("0.5.10")


# _deterministic_is_deepseek_model's architectures (arg_groups/overrides.py, 0.5.23; server_args.py's list before it
# lacked Glm4MoeLiteForCausalLM): on Blackwell their deterministic fallback is triton, not flashinfer
_DETERMINISTIC_TRITON_ARCHS = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "MistralLarge3ForCausalLM",
    "PixtralForConditionalGeneration", "GlmMoeDsaForCausalLM", "Glm4MoeLiteForCausalLM",
})


def deterministic_disables_radix_cache(version: str, values: Mapping[str, Any], compute_capability: str | None,
                                       architecture: str | None, *, mla: bool = False) -> bool:
    """Deterministic inference (or --rl-on-policy-target, which turns it on) on an attention backend outside
    RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND turns the radix cache off: server_args.py
    _handle_deterministic_inference 0.5.5-0.5.18, arg_groups/attention_hook.py after. Unnamed, the backend is
    the one SGLang picked for the model and GPU where the check runs after that choice (0.5.5-0.5.11; known
    from 0.5.8: knowledge/attnbackend.py), else SGLang's fallback: flashinfer on Blackwell (triton for
    DeepSeek-like models), fa3 below it (from 0.5.12 the check runs first)."""
    key = _vkey(version)
    if key < _vkey("0.5.5") or not (values.get("enable_deterministic_inference")
                                    or values.get("rl_on_policy_target") is not None):
        return False
    backend = values.get("attention_backend")
    if backend is None and key < _vkey("0.5.12"):
        backend = default_attention_backend(version, architecture, compute_capability, mla=mla,
                                            speculative=values.get("speculative_algorithm") is not None)
    if backend is None:
        major = compute_capability.split(".")[0] if compute_capability else None
        blackwell = major in ("10", "12")
        backend = ("triton" if architecture in _DETERMINISTIC_TRITON_ARCHS else "flashinfer") if blackwell else "fa3"
    supported = {"fa3", "triton"} | ({"ascend"} if key >= _vkey("0.5.13") else set()) \
        | ({"fa4"} if key >= _vkey("0.5.16") else set())
    return backend not in supported


def _model_runner_multimodal_factor(inp: MemoryInputs) -> float:
    """model_executor/model_runner.py model_specific_adjustment up to 0.4.8.post1: a multimodal
    model's --mem-fraction-static, given or default, is scaled down ("Automatically reduce
    --mem-fraction-static to ... because this is a multimodal model"): x 0.95 through 0.4.4.post3,
    x 0.90 from 0.4.4.post4. 0.4.9 moved the reduction into server_args.py's default."""
    key = _vkey(inp.rules.version)
    if not inp.geometry.multimodal or key >= _vkey("0.4.9"):
        return 1.0
    return 0.95 if key < _vkey("0.4.4.post4") else 0.90


# configs/model_config.py ModelConfig.__init__'s mm_disabled_models (read in each wheel): these architectures run
# as text models unless --enable-multimodal asks for their vision (from 0.5.10 also unless --model-impl
# transformers): is_multimodal is False, so none of SGLang's multimodal memory handling applies (the VLM factor on
# mem_fraction_static, piecewise CUDA graphs off), though the vision tower's weights still load
_MM_DISABLED = (
    ("0.4.6", ("Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration")),
    ("0.4.10.post1", ("Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration", "Step3VLForConditionalGeneration")),
    ("0.5.16", ("Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration", "Step3VLForConditionalGeneration",
                "InklingForConditionalGeneration")),
)


def runs_as_text(version: str, architecture: str | None, flags: Mapping[str, Any]) -> bool:
    """The release runs this multimodal architecture as a text model (ModelConfig.is_multimodal False), given the
    launch's parsed flag values (enable_multimodal, model_impl)."""
    key = _vkey(version)
    disabled = next((archs for since, archs in reversed(_MM_DISABLED) if key >= _vkey(since)), ())
    transformers = key >= _vkey("0.5.10") and flags.get("model_impl") == "transformers"
    return architecture in disabled and not flags.get("enable_multimodal") and not transformers


# configs/model_config.py is_multimodal_chunked_prefill_supported (the same list 0.5.16-0.5.23): multimodal models
# whose prefill cannot be chunked. From 0.5.16 the server-args resolution turns chunked prefill off for them
# (arg_groups/model_hook.py handle_model_capability_adjustments, after the memory settings); before, only the
# model runner did, at load, which the parsed arguments do not show.
_UNCHUNKED_MULTIMODAL = frozenset({"Grok1VForCausalLM", "Grok1AForCausalLM", "LlavaLlamaForCausalLM",
                                   "MllamaForConditionalGeneration", "MossVLForConditionalGeneration", "CLIPModel"})


def _server_args(inp: MemoryInputs, out: _Outcome) -> _Settings:
    """Phase 1, free memory and mem-fraction-static: the defaults server_args.py fills in
    (_handle_gpu_memory_settings, _handle_speculative_decoding, _handle_mamba_radix_cache)."""
    late = bool(inp.argument_error) and inp.argument_error_late
    if inp.argument_error and not late:
        out.refuse(inp.argument_error)
    default_chunk, default_bs = release_graph_defaults(inp)
    chunked = inp.chunked_prefill_size if inp.chunked_prefill_size is not None else default_chunk
    graph_bs = inp.cuda_graph_max_bs if inp.cuda_graph_max_bs is not None else default_bs
    if inp.cuda_graph_bs and _vkey(inp.rules.version) < _vkey("0.5.14"):
        # _handle_gpu_memory_settings: an explicit --cuda-graph-bs list sets the max (0.5.3-0.5.13)
        graph_bs = max(inp.cuda_graph_bs)
    if _vkey("0.5.14") <= _vkey(inp.rules.version) < _vkey("0.5.15"):
        # 0.5.14 parses --cuda-graph-max-bs / --cuda-graph-bs into cuda_graph_config's decode phase
        # (dests cuda_graph_max_bs_decode, cuda_graph_bs_decode); its max is the graph reserve's batch size
        f = inp.cuda_graphs
        if f.decode_max_bs is not None:
            graph_bs = f.decode_max_bs
        elif f.decode_bs:
            graph_bs = max(f.decode_bs)
    piecewise = _piecewise_graphs(inp)
    algo = _spec_family(inp.speculative_algorithm)
    mfs_default = inp.mem_fraction_static is None
    mfs = inp.mem_fraction_static if inp.mem_fraction_static is not None else default_mem_fraction_static(
        inp, chunked=chunked, graph_bs=graph_bs, piecewise=piecewise
    )
    mfs *= _model_runner_multimodal_factor(inp)
    if inp.geometry.multimodal and inp.geometry.architecture in _UNCHUNKED_MULTIMODAL \
            and _vkey(inp.rules.version) >= _vkey("0.5.16"):
        chunked = -1
    mrr_flag, draft_tokens = _speculative_defaults(inp, algo)
    context = _context_length(inp, out)
    aiter = aiter_mfs_factor(inp, context)
    mfs *= aiter
    _replayssm_refusals(inp, algo, out)
    radix, strategy, page_size = _mamba_radix_cache(inp, algo, out)
    if _serves_sparse_mla(inp):
        # "Setting page size to 64 for DeepSeek NSA/DSA." on CUDA, over any --page-size (server_args.py
        # 0.5.4.post1-0.5.18, arg_groups/model_overrides/deepseek_v2.py from 0.5.19)
        page_size = 64
    if late:
        out.refuse(inp.argument_error or "")
    return _Settings(
        chunked, graph_bs, piecewise, algo, mfs, mfs_default, mrr_flag, draft_tokens, context, radix, strategy, page_size,
        aiter_factor=aiter,
    )


def _dp_attention_chunk(inp: MemoryInputs, chunked: int) -> int:
    """The chunked prefill size after DP attention divides it among its groups ("DP attention is enabled. The
    chunked prefill size is adjusted to ..."), which SGLang does after the memory settings have read the undivided
    size (the planner's own runtime estimate reads it too: the MoE layers gather every group's chunk): server_args.py __post_init__ halves it up to 0.4.4, _handle_data_parallelism divides it by dp_size from
    0.4.4.post1, arg_groups/parallel_hook.py handle_data_parallelism from 0.5.19 (by attn_dp_size from 0.5.22)."""
    if not inp.enable_dp_attention:
        return chunked
    return chunked // (2 if _vkey(inp.rules.version) < _vkey("0.4.4.post1") else max(1, inp.dp_size))


# split_weights for one geometry and parallel layout, by the geometry's identity: suggestions
# and benchmarks re-plan the same model thousands of times with other flags. The entry holds
# the geometry itself, so its id cannot be reused while the entry lives.
_WEIGHTS_CACHE: dict[tuple[int, int, int, int, int], tuple[ModelGeometry, WeightSplit, float]] = {}


def _target_weights(g: ModelGeometry, tp: int, pp: int, vision_tp: int, attn_tp: int) -> tuple[WeightSplit, float]:
    """(the parameter split, the target's "Load weight end ... mem usage" in GiB) per GPU."""
    key = (id(g), tp, pp, vision_tp, attn_tp)
    hit = _WEIGHTS_CACHE.get(key)
    if hit is not None and hit[0] is g:
        return hit[1], hit[2]
    split = split_weights(g, tp=tp, pp=pp, vision_tp=vision_tp, attn_tp=attn_tp)
    param_gib = weights_per_gpu_bytes(g, split, tp=tp) / GIB
    weights_gib = param_gib + load_overhead_gib(param_gib)
    if len(_WEIGHTS_CACHE) >= 256:
        _WEIGHTS_CACHE.clear()
    _WEIGHTS_CACHE[key] = (g, split, weights_gib)
    return split, weights_gib


def quant_min_capability(method: str, version: str) -> int | None:
    """The compute capability (major x 10 + minor) a quantization method needs, where a method
    imgbuild sizes refuses older GPUs outright (layers/quantization/modelopt_quant.py
    get_min_capability: FP8 89; NVFP4 100 before 0.5.13, 80 from it, its Marlin fallback)."""
    if method == "modelopt_fp4":
        return 80 if _vkey(version) >= _vkey("0.5.13") else 100
    if method == "modelopt_fp8":
        return 89
    return None


def _check_capability(inp: MemoryInputs, out: _Outcome) -> None:
    """model_loader/loader.py _get_quantization_config: a GPU below the method's minimum
    capability stops the load before any weight is read."""
    scheme, cc = inp.geometry.quant, inp.gpu_compute_capability
    if scheme is None or not cc:
        return
    need = quant_min_capability(scheme.method, inp.rules.version)
    major, _, minor = cc.partition(".")
    if need is None or not (major.isdigit() and minor.isdigit()):
        return
    have = int(major) * 10 + int(minor)
    if have < need:
        out.fail(
            f"ValueError: The quantization method {scheme.method} is not supported for the current GPU. "
            f"Minimum capability: {need}. Current capability: {have}."
        )


def _weights(inp: MemoryInputs, algo: str | None, out: _Outcome) -> tuple[float, float, float]:
    """Phase 2, target and draft weights, GiB per GPU: (target, draft, draft's transient
    embedding/head copy). model_runner.py load_model; models/qwen3_5_mtp.py for the draft."""
    g, tp = inp.geometry, inp.tp_size
    _check_capability(inp, out)
    split, weights_gib = _target_weights(g, tp, inp.pp_size, 1 if inp.mm_enable_dp_encoder else tp, inp.attn_tp_size or tp)
    online = online_quant_scheme(g, inp.quantization_flag)
    if online is not None:
        if weights_gib >= inp.free_before_load_gib and out.refusal is None:
            out.load_short_gib = inp.free_before_load_gib - weights_gib
            out.fail(
                f"torch.OutOfMemoryError: CUDA out of memory while loading weights ({weights_gib:.2f} GiB per GPU in "
                f"{g.dtype} before --quantization fp8 converts them, {inp.free_before_load_gib:.2f} GiB free before loading)",
                memory=True,
            )
        param_gib = weights_per_gpu_bytes(g, split, tp=tp, at_load=online) / GIB
        weights_gib = param_gib + load_overhead_gib(param_gib)
        out.notes.append(
            f"--quantization fp8: the weights load in {g.dtype} and are converted to FP8 after loading; "
            "the load needs the unconverted size free"
        )
    if inp.cpu_offload_gb > 0:
        offloaded = _cpu_offloaded_gib(inp, split, weights_gib)
        weights_gib -= offloaded
        out.notes.append(
            f"--cpu-offload-gb {inp.cpu_offload_gb:g}: {offloaded:.2f} GiB per GPU of the decoder layers' weights "
            "stay in host memory, copied in on every forward pass (utils/offloader.py)"
        )
    draft_weights_gib = 0.0
    draft_transient_gib = 0.0
    if algo is not None and algo != "NGRAM":
        if split.mtp_total_params and not inp.draft_model_external:
            draft_weights_gib = split.per_gpu_bytes(g, split.mtp_per_gpu_params) / GIB
            # models/qwen3_5_mtp.py (and qwen3_next_mtp.py) build their own embed_tokens and
            # lm_head, then swap in the target's: the copy exists while the draft loads
            if not g.mtp_has_own_embeddings:
                draft_transient_gib = 2 * vocab_per_gpu(g.vocab_size, tp) * g.hidden_size * g.dtype_bytes / GIB
        elif inp.draft_model_external and inp.draft_geometry is not None:
            draft_weights_gib, draft_transient_gib = external_draft_weights_gib(inp.draft_geometry, algo, tp=tp)
        elif inp.draft_model_external:
            out.notes.append("the draft model at --speculative-draft-model-path is not inspected: its weights are not counted")
        elif algo in ("EAGLE", "EAGLE3"):
            out.notes.append(f"{g.architecture} has no MTP layers in its config: {algo} needs --speculative-draft-model-path")
    return weights_gib, draft_weights_gib, draft_transient_gib


def _cpu_offloaded_gib(inp: MemoryInputs, split: WeightSplit, weights_gib: float) -> float:
    """--cpu-offload-gb: the decoder layers' parameters (make_layers wraps them), one after the other,
    move to pinned host memory until the offloaded bytes reach the budget, per GPU
    (utils/offloader.py OffloaderV1.maybe_offload_to_cpu, 0.5.x; 0.4.x utils.py maybe_offload_to_cpu
    moves whole layers). Embeddings, the LM head and a vision tower stay on the GPU."""
    g = inp.geometry
    embed_and_head = vocab_per_gpu(g.vocab_size, inp.tp_size) * g.hidden_size + split.lm_head_per_gpu_params
    kept = embed_and_head * g.dtype_bytes / GIB
    kept += split.per_gpu_bytes(g, split.vision_per_gpu_params) / GIB
    return min(inp.cpu_offload_gb, max(0.0, weights_gib - kept))


def external_draft_weights_gib(d: ModelGeometry, algo: str | None, *, tp: int) -> tuple[float, float]:
    """(kept, transient) GiB per GPU of a --speculative-draft-model-path model.

    STANDALONE loads a whole second model (speculative/standalone_worker.py). EAGLE drafts
    (models/llama_eagle.py) are decoder layers plus an fc of 2H -> H, and take the target's
    embed_tokens and lm_head (eagle_worker.py set_embed_and_head): their own exist only while
    they load. EAGLE3 drafts (models/llama_eagle3.py) are one layer whose qkv reads 2H, an fc
    of 3 x target H -> H (torch.nn.Linear, on every GPU) and their own lm_head over
    draft_vocab_size; they take only the target's embed_tokens (unless the config has no
    draft_vocab_size, then the head too: load_lm_head_from_target).
    """
    split = split_weights(d, tp=tp)
    full = weights_per_gpu_bytes(d, split, tp=tp)
    if algo == "STANDALONE":
        return full / GIB, 0.0
    h, b = d.hidden_size, d.dtype_bytes
    embed = vocab_per_gpu(d.vocab_size, tp) * h * b
    head = 0.0 if d.tie_word_embeddings else embed
    kept = full - embed - head
    transient = embed + head
    if algo == "EAGLE3":
        q_out = d.num_attention_heads * d.head_dim
        kept += d.num_layers * h * (q_out + 2 * d.num_kv_heads * d.head_dim) / tp * b  # qkv over 2H
        kept += 3 * h * h * b  # fc
        if d.draft_vocab_size:
            kept += vocab_per_gpu(d.draft_vocab_size, tp) * h * b  # its own head over the draft vocab
            transient = embed
    else:
        kept += 2 * h * h * b  # fc
    return kept / GIB, transient / GIB


def _rest_for_pools(
    inp: MemoryInputs, s: _Settings, weights_gib: float, draft_weights_gib: float, draft_transient_gib: float, out: _Outcome
) -> tuple[float, float, float]:
    """(available after loading, slack F0 x (1 - mfs), rest for the pools), GiB per GPU
    (model_runner_kv_cache_mixin.py _profile_available_bytes)."""
    rules = inp.rules
    f0 = inp.free_before_load_gib
    avail_after = f0 - weights_gib
    slack = f0 * (1 - s.mfs)
    if avail_after <= 0 and out.refusal is None:
        # the weights alone do not fit: loading stops with a CUDA OOM before any pool is sized
        out.fail(
            f"torch.OutOfMemoryError: CUDA out of memory while loading weights "
            f"({weights_gib:.2f} GiB per GPU, {f0:.2f} GiB free before loading)",
            memory=True,
        )
    rest = avail_after - slack
    if rules.draft_weights_before_kv:
        # 0.5.23 speculative/eagle_worker_v2.py: the draft shares the target's embed/head only in
        # alloc_memory_pool (init_lm_head), after the target pool is sized: its copies still count
        rest -= draft_weights_gib + draft_transient_gib
    if rules.mm_reservation_mib and inp.geometry.multimodal:
        rest -= rules.mm_reservation_mib / 1024
    return avail_after, slack, rest


def _mamba_ratio(rules: Rules, s: _Settings) -> int:
    """_calculate_mamba_ratio: 1 without radix cache; 3, plus the ping-pong buffers with extra_buffer.
    Before 0.5.7 (model_runner.py init_memory_pool) no buffers; 0.5.7 (model_runner_kv_cache_mixin.py
    init_memory_pool) adds 2 unless extra_buffer runs with speculation (1)."""
    if not s.radix:
        return 1
    pool_rule = rules.hybrid_pool_rule
    if pool_rule in ("0.5.2", "0.5.4"):
        return 3
    if pool_rule == "0.5.7":
        return 3 + (1 if s.strategy == "extra_buffer" and s.algo is not None else 2)
    if s.strategy == "extra_buffer":
        if rules.era == "0.5.9":
            return 3 + (1 if s.algo is not None else 2)
        return 3 + 2  # overlap schedule on (spec v2 is the default from 0.5.11)
    return 3


def _hybrid_state_pool(
    inp: MemoryInputs, s: _Settings, state: MambaState | None, rest: float, out: _Outcome
) -> tuple[int, float, float]:
    """Phase 3, hybrid state pool and intermediate speculative states: (mamba slots,
    intermediate GiB, rest left for the KV pool). 0.5.9 / 0.5.11 model_runner_kv_cache_mixin.py
    handle_max_mamba_cache; 0.5.14 model_runner_kv_cache_mixin.py / 0.5.23
    kv_cache_configurator.py _handle_max_mamba_cache."""
    if state is None:
        return 0, 0.0, rest
    rules, algo, draft_tokens = inp.rules, s.algo, s.draft_tokens
    per_req = state.per_request_bytes
    mrr_per_dp = None if s.mrr_flag is None else s.mrr_flag // (inp.dp_size if inp.enable_dp_attention else 1)
    spec_intermediate = 0.0
    if rules.mamba_joint_solve:
        # 0.5.14 model_runner_kv_cache_mixin.py / 0.5.23 kv_cache_configurator.py _handle_max_mamba_cache
        pad = 1 if rules.intermediate_pad_slot else 0
        if inp.max_mamba_cache_size is not None:
            # an explicit size is per DP rank (0.5.23: max_mamba_cache_size // attn_dp_size)
            slots = inp.max_mamba_cache_size // (inp.dp_size if inp.enable_dp_attention else 1)
            if algo is not None and mrr_per_dp is not None:
                capped = min(max(1, mrr_per_dp), slots // _mamba_ratio(rules, s))
                spec_intermediate = per_req * (capped + pad) * (draft_tokens or 0) / GIB
        elif not s.radix and mrr_per_dp is not None:
            slots = max(1, mrr_per_dp)
            if algo is not None:
                # --speculative-eagle-topk > 1 without --speculative-num-draft-tokens leaves the count None
                # through 0.5.23's parse; the pool then gets speculative_num_draft_tokens=None and keeps no
                # intermediate states (kv_cache_configurator.py, overrides.py max_speculative_num_draft_tokens).
                spec_intermediate = per_req * (slots + pad) * (draft_tokens or 0) / GIB
        else:
            budget = rest * inp.mamba_full_memory_ratio / (1 + inp.mamba_full_memory_ratio) * GIB
            if algo is not None and mrr_per_dp is not None:
                ratio = _mamba_ratio(rules, s)
                d = draft_tokens or 1
                slots = int((budget - per_req * (1 + d) * pad) // (per_req * (1 + d / ratio)))
                capped = min(max(1, mrr_per_dp), slots // ratio)
                spec_intermediate = per_req * (capped + pad) * d / GIB
            else:
                slots = int((budget - per_req * pad) // per_req)
        rest -= spec_intermediate
        if slots <= 0:
            out.fail(
                "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
                f"Computed max_mamba_cache_size={slots} (total_rest_memory={rest:.2f} GB, "
                f"mamba_cache_per_req={per_req / MIB:.2f} MB). Try: (1) reduce --max-running-requests, "
                "(2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, or "
                "(4) use GPUs with more memory.", memory=True,
            )
    else:
        slots, spec_intermediate, rest = _unjoint_hybrid_slots(inp, s, per_req, rest)
    rest -= slots * per_req / GIB
    return slots, spec_intermediate, rest


# model_executor/model_runner.py hybrid_gdn_config (0.5.4-0.5.6): the models whose slots are per DP rank
_GDN_ARCHS_054 = frozenset({"Qwen3NextForCausalLM"})


def _unjoint_hybrid_slots(inp: MemoryInputs, s: _Settings, per_req: int, rest: float) -> tuple[int, float, float]:
    """(mamba slots, intermediate GiB, rest less the intermediate states) up to 0.5.13, by the form
    of handle_max_mamba_cache the version has (Rules.hybrid_pool_rule). An explicit
    --max-mamba-cache-size, or the request count, is per DP rank under DP attention."""
    rule = inp.rules.hybrid_pool_rule
    dp = inp.dp_size if inp.enable_dp_attention else 1
    mmcs, mrr, spec = inp.max_mamba_cache_size, s.mrr_flag, 0.0
    fixed = mmcs if mmcs is not None else mrr if mrr is not None else 512

    def by_ratio(memory: float) -> int:  # mamba memory / full KV memory == --mamba-full-memory-ratio
        return int(memory * inp.mamba_full_memory_ratio / (1 + inp.mamba_full_memory_ratio) * GIB // per_req)

    if rule == "0.5.2":
        # model_runner.py initialize: the radix cache is off, max_mamba_cache_size = mmcs, mrr or 512
        return fixed // dp, 0.0, rest
    if rule == "0.5.4":
        # model_runner.py handle_max_mamba_cache: each slot holds 1 + speculative_num_draft_tokens states
        d = s.draft_tokens or 0
        slots = by_ratio(rest) // (1 + d) if s.radix else fixed
        slots //= dp if inp.geometry.architecture in _GDN_ARCHS_054 else 1
        spec = slots * per_req * d / GIB
        return slots, spec, rest - spec
    if s.algo is not None and mrr is not None and rule != "0.5.7":
        # 0.5.8+ reserve the intermediate states of the speculative steps first
        spec = per_req * (mrr // dp) * (s.draft_tokens or 1) / GIB
        rest -= spec
    if rule in ("0.5.7", "0.5.8") and (not s.radix or mmcs is not None):
        return fixed // dp, spec, rest
    if rule == "0.5.9" and mmcs is not None:
        return mmcs // dp, spec, rest
    if rule == "0.5.9" and not s.radix and mrr is not None:
        return mrr // dp, spec, rest
    if rule == "0.5.7" and s.algo is not None and mrr is not None:
        # 0.5.7 reserves them only on the ratio branch, for the whole max_running_requests
        spec = per_req * mrr * (s.draft_tokens or 1) / GIB
        rest -= spec
    return by_ratio(rest), spec, rest


def _kv_pool_tokens(
    inp: MemoryInputs, s: _Settings, rest: float, avail_after: float, draft_gib: tuple[float, float], out: _Outcome
) -> tuple[int, int]:
    """Phase 4, the KV pool: (cell bytes per token, tokens), model_executor/pool_configurator.py
    (0.5.9: model_runner_kv_cache_mixin.py profile_max_num_token / init_memory_pool)."""
    f0 = inp.free_before_load_gib
    if inp.rules.era == "0.5.14" and rest <= 0:
        # 0.5.14+ _profile_available_bytes refuses before sizing the pools
        draft_weights_gib, draft_transient_gib = draft_gib
        minimum = 1 - (avail_after - draft_weights_gib - draft_transient_gib) / f0 if f0 else 1.0
        out.fail(
            f"ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={s.mfs}. "
            f"Raise --mem-fraction-static above {math.ceil(minimum * 1000) / 1000:.3f} (minimum viable = 1 - "
            f"available/pre = {minimum:.4f}). If using speculative decoding, draft weights are now counted.",
            memory=True,
        )
    cell = kv_cell_bytes(inp.geometry, attn_tp=inp.attn_tp_size or inp.tp_size, pp=inp.pp_size, kv_cache_dtype=served_kv_cache_dtype(inp))
    g = inp.geometry
    if g.dsa_indexer and not g.mla:
        out.notes.append(
            f"{g.architecture} uses DeepSeek sparse attention without an MLA-shaped config here: its indexer key cache "
            f"({dsa_index_bytes(g)} B per token and layer) is not counted"
        )
    elif g.dsa_indexer and served_kv_cache_dtype(inp) == "fp8_e4m3":
        out.notes.append(
            f"the FP8 DSA pool stores {dsa_fp8_latent_bytes(g)} B per token and layer of latent KV where SGLang sizes it by "
            f"{g.kv_lora_rank + g.qk_rope_head_dim}: it takes more memory than the rest it was sized from"
        )
    page_size = s.page_size
    split = hybrid_swa_split(inp)
    if split is not None:
        full, swa = swa_pool_tokens(split, max(0, int(rest * GIB)), page_size=page_size,
                                    max_total_tokens=inp.max_total_tokens, era=inp.rules.era)
        tokens = full if split.full_layers else swa
        cell = int(split.full_per_token * split.full_layers + split.ratio * split.swa_per_token * split.swa_layers) \
            if split.full_layers else split.swa_per_token * split.swa_layers
        if tokens > 0:
            out.notes.append(
                f"SGLang splits the KV pool of {g.architecture} (hybrid SWA): full_layer_tokens={full}, "
                f"swa_layer_tokens={swa} ({split.full_layers} full-attention and {split.swa_layers} sliding-window "
                f"layers, --swa-full-tokens-ratio {split.ratio:g})"
            )
    else:
        tokens = int(rest * GIB) // cell
        tokens = tokens // page_size * page_size
        if inp.max_total_tokens is not None and tokens > 0:
            tokens = min(tokens, inp.max_total_tokens // page_size * page_size)
    if tokens <= 0:
        out.fail(_not_enough_message(inp.rules, s.mfs), memory=True)
    return cell, tokens


def _max_running_requests(inp: MemoryInputs, s: _Settings, tokens: int, state: MambaState | None, slots: int, out: _Outcome) -> int:
    """max_running_requests (model_runner_kv_cache_mixin.py _resolve_max_num_reqs; 0.5.9 init_memory_pool)."""
    rules, mrr_flag = inp.rules, s.mrr_flag
    estimated = max(min(int(max(tokens, 0) / s.context * 512), 4096), 2048)
    if mrr_flag is not None:
        if rules.mrr_explicit_cap == "estimate":
            mrr = min(mrr_flag // inp.dp_size, estimated)
        elif rules.mrr_explicit_cap == "tokens":
            mrr = min(max(1, mrr_flag // inp.dp_size), max(tokens, 0) // 2)
        else:
            mrr = mrr_flag
    else:
        mrr = estimated if rules.era == "0.5.9" else min(estimated, max(tokens, 0) // 2)
    if state is not None:
        ratio = _mamba_ratio(rules, s)
        mrr = min(mrr, slots // ratio) if slots > 0 else 0
        if mrr <= 0:
            out.fail(
                f"max_running_requests resolves to {mrr}: the mamba state pool "
                f"(max_mamba_cache_size={slots}) holds no request at {ratio} slots per request",
                memory=True,
            )
    return mrr


def _mla_stored_bytes(g: ModelGeometry, kv_cache_dtype: str, kv_bytes: float) -> float:
    """An MLA pool's bytes per token and layer as allocated (mem_cache/memory_pool.py): the latent, and
    for DeepSeek sparse attention (DSATokenToKVPool) the latent as the FP8 layout stores it and the
    indexer's keys beside it."""
    per_layer = (g.kv_lora_rank + g.qk_rope_head_dim) * kv_bytes
    if g.dsa_indexer:
        if kv_cache_dtype == "fp8_e4m3":
            per_layer = dsa_fp8_latent_bytes(g)
        per_layer += dsa_index_bytes(g)
    return per_layer


def _pool_sizes(
    inp: MemoryInputs, s: _Settings, tokens: int, state: MambaState | None, slots: int, mrr: int
) -> tuple[float, float, float, float, float]:
    """(K, V, conv, SSM, intermediate SSM) GiB as SGLang logs them
    (mem_cache/memory_pool.py: size + page_size rows)."""
    g, page_size = inp.geometry, s.page_size
    kv_layers = math.ceil(g.kv_layers / inp.pp_size)
    kv_bytes = kv_dtype_bytes(served_kv_cache_dtype(inp), g.dtype_bytes)
    rows = max(tokens, 0) + page_size
    split = hybrid_swa_split(inp)
    if split is not None:
        # the full pool and the sliding-window pool (mem_cache/swa_memory_pool.py SWAKVPool), each
        # with page_size rows more; K and V are equal halves of each token's bytes here
        full = tokens if split.full_layers else 0
        swa = swa_part_tokens(split, full, page_size) if split.full_layers else tokens
        pool = ((full + page_size) * split.full_per_token * split.full_layers
                + (swa + page_size) * split.swa_per_token * split.swa_layers) / GIB
        k_size = v_size = pool / 2
    elif g.mla:
        k_size = rows * _mla_stored_bytes(g, served_kv_cache_dtype(inp), kv_bytes) * kv_layers / GIB
        v_size = 0.0
    else:
        heads = max(1, g.num_kv_heads // (inp.attn_tp_size or inp.tp_size))
        k_size = rows * heads * g.head_dim * kv_layers * kv_bytes / GIB
        v_size = rows * heads * g.v_head_dim * kv_layers * kv_bytes / GIB
    conv_gib = (slots + 1) * state.conv_bytes / GIB if state else 0.0
    ssm_gib = (slots + 1) * state.ssm_bytes / GIB if state else 0.0
    # mem_cache/memory_pool.py MambaPool: intermediate_ssm_state_cache has
    # (spec_state_size + 1) x draft_tokens rows, spec_state_size = the resolved max_running_requests
    intermediate_ssm_gib = (
        (max(mrr, 0) + 1) * (s.draft_tokens or 0) * state.ssm_bytes / GIB if state and s.algo is not None else 0.0
    )
    return k_size, v_size, conv_gib, ssm_gib, intermediate_ssm_gib


def _req_to_token_gib(s: _Settings, mrr: int) -> float:
    """The ReqToTokenPool: an int32 row of context_len + 4 slots (+ the draft tokens when speculating)
    per request, max_num_reqs + 1 rows (mem_cache/memory_pool.py ReqToTokenPool; sized in 0.4.x
    model_runner.py init_memory_pool, 0.5.9-0.5.13 model_runner_kv_cache_mixin.py, 0.5.23
    mem_cache/kv_cache_configurator.py). It is allocated after the KV pool is sized, so it comes out of
    F0 x (1 - mfs); 128k-context models at 2,048 requests take 1 GiB."""
    columns = s.context + 4 + ((s.draft_tokens or 0) if s.algo is not None else 0)
    return (max(mrr, 0) + 1) * columns * 4 / GIB


def _draft_kv_gib(inp: MemoryInputs, s: _Settings, tokens: int, draft_weights_gib: float) -> float:
    """Phase 5, the draft model's own pools: one KV layer per MTP layer, the target's token
    count (speculative/eagle_worker.py, the draft's model runner)."""
    if draft_weights_gib <= 0:
        return 0.0
    g = inp.geometry
    kv_bytes = kv_dtype_bytes(served_kv_cache_dtype(inp), g.dtype_bytes)
    draft_layers = max(1, g.mtp_layers)
    if inp.draft_model_external and inp.draft_geometry is not None:
        # an external draft's runner allocates a pool of its own layers with the target's
        # max_total_num_tokens (memory_pool_config passed in, speculative/eagle_worker.py)
        g = inp.draft_geometry
        draft_layers = g.kv_layers
    if g.mla:
        # a DSA target's NextN layer is DSA too (configs/model_config.py is_deepseek_dsa lists the NextN
        # architectures): its pool is the same DSATokenToKVPool
        draft_cell = _mla_stored_bytes(g, served_kv_cache_dtype(inp), kv_bytes) * draft_layers
    else:
        draft_cell = max(1, g.num_kv_heads // (inp.attn_tp_size or inp.tp_size)) * (g.head_dim + g.v_head_dim) * draft_layers * kv_bytes
    return (max(tokens, 0) + s.page_size) * draft_cell / GIB


def _runtime_headroom(
    inp: MemoryInputs, s: _Settings, draft_kv_gib: float, draft_weights_gib: float, draft_transient_gib: float
) -> tuple[float, float, float]:
    """Phase 6, runtime headroom: (imgbuild's estimate of what must fit in F0 x (1 - mfs), SGLang's
    own reserve heuristic (server_args.py _handle_gpu_memory_settings), the draft's share of the estimate)."""
    g, rules, tp = inp.geometry, inp.rules, inp.tp_size
    # activations of one prefill chunk: MLP gate/up + act, qkv and residual streams in the model dtype
    inter_gpu = (g.moe_intermediate_size * 8 if g.num_experts else g.intermediate_size) / tp
    act_gib = max(s.chunked, 2048) * (3 * inter_gpu + 8 * g.hidden_size) * g.dtype_bytes / GIB
    # decode CUDA graphs: SGLang budgets ~2 MiB per captured batch size (server_args.py reserve)
    graphs_gib = 0.0 if inp.disable_cuda_graph or inp.enable_mis else s.graph_bs * 2 / 1024
    if s.algo is not None and graphs_gib:
        graphs_gib *= 2  # the draft captures its own graphs
    # after KV sizing in 0.5.9-0.5.13: draft weights, KV; in 0.5.14+ only its KV
    draft_after = draft_kv_gib + (0.0 if rules.draft_weights_before_kv else draft_weights_gib)
    # the draft's transient embedding/head copy peaks while the draft loads, before graphs exist
    runtime_need = 0.5 + max(act_gib + graphs_gib + draft_after, draft_after + draft_transient_gib)
    sglang_reserve = (
        512 + max(s.chunked, 2048) * 1.5 + (0 if inp.disable_cuda_graph else s.graph_bs * 2) + tp * inp.pp_size / 8 * 1024
    ) / 1024
    return runtime_need, sglang_reserve, draft_after


def _verdict(
    inp: MemoryInputs, s: _Settings, tokens: int, headroom: tuple[float, float, float], runtime_need: float,
    sglang_reserve: float, draft_after: float, out: _Outcome,
) -> None:
    """Phase 7, the verdict: headroom against the estimate, the context against the pool, and
    what the accounting leaves out. headroom: (F0 x (1 - mfs), what an FP8 DSA pool stores beyond
    the cell size it was sized by, the request-to-token pool), GiB."""
    g = inp.geometry
    f0_slack, pool_excess, req_to_token_gib = headroom
    slack = f0_slack - pool_excess
    if out.refusal is not None:
        # SGLang stops at argument parsing: nothing after it happens
        out.failure = None
    if out.failure is None and out.refusal is None:
        if runtime_need > slack - req_to_token_gib:
            out.headroom_problem = (
                f"F0 x (1 - mem_fraction_static) = {f0_slack:.2f} GiB, less "
                + (f"{pool_excess:.2f} GiB the FP8 sparse-attention pool stores beyond its sizing, " if pool_excess else "")
                + f"{req_to_token_gib:.2f} GiB of request-to-token pool, leaves {slack - req_to_token_gib:.2f} GiB to hold activations, CUDA graphs"
                + (" and the draft model" if draft_after > 0 else "")
                + f" (about {runtime_need:.2f} GiB): expect CUDA out of memory during graph capture or the first long prefill"
            )
            out.problems.append(out.headroom_problem)
        elif sglang_reserve > slack:
            out.notes.append(
                f"SGLang's own heuristic would leave {sglang_reserve:.2f} GiB for activations and graphs; "
                f"these flags leave {slack:.2f} GiB"
            )
        if tokens > 0 and s.context > tokens:
            # SGLang starts, max_req_len = min(context_len, pool) - 1 (managers/tp_worker.py); a 62k pool under
            # --context-length 65536 served (tests/data/plan_logs/deepseek-r1.h20x8-tp8-mfs090-ctx64k)
            out.notes.append(
                f"the KV pool holds {tokens} tokens, fewer than the context length {s.context}: SGLang starts, but "
                f"caps each request at {tokens - 1} tokens, so one full-length request cannot be served"
            )
            out.context_short = inp.context_length is not None
    if hybrid_swa_unsized(g, inp.rules.version) and not inp.disable_hybrid_swa_memory:
        out.notes.append(
            f"SGLang {inp.rules.version} splits the KV pool of {g.architecture} into full-attention and "
            "sliding-window parts; plan counts every layer as full attention, so the pool may hold more tokens"
        )
    if g.dsa_indexer and g.mla and served_kv_cache_dtype(inp) != (inp.kv_cache_dtype or "auto"):
        out.notes.append(
            f"--kv-cache-dtype auto serves {served_kv_cache_dtype(inp)}: SGLang's default for DeepSeek sparse "
            f"attention on SM {inp.gpu_compute_capability} (bfloat16 below SM 10)"
        )
    elif served_kv_cache_dtype(inp) != (inp.kv_cache_dtype or "auto"):
        out.notes.append(
            f"--kv-cache-dtype auto serves {served_kv_cache_dtype(inp)}: the checkpoint's quantization config "
            "sets kv_cache_quant_algo FP8 (model_runner.py configure_kv_cache_dtype)"
        )
    if g.quantization and not g.checkpoint_bytes and g.quant is None:
        out.notes.append(f"quantized checkpoint ({g.quantization}) without an index total_size: weights estimated at {g.dtype_bytes} bytes/param")
    elif g.quant is not None and not g.checkpoint_bytes and g.quantization not in FP8_METHODS:
        out.notes.append(
            f"no safetensors index: weights sized from {g.quant.source}'s quantization config ({g.quant.label}, "
            f"{g.quant.bytes_per_weight:.4f} bytes per packed weight; embeddings, norms"
            + (", vision tower" if g.vision is not None else "") + " and ignored modules in the model dtype)"
        )


def plan_memory(inp: MemoryInputs) -> MemoryPlan:
    """SGLang's pool sizing for one GPU (the smallest), before anything loads, in the order
    SGLang starts: server arguments, weights, hybrid state, KV pool, draft, runtime headroom, margin.
    Over 60 lines: the phases in order, then one keyword per MemoryPlan field."""
    rules, g = inp.rules, inp.geometry
    out = _Outcome()
    s = _server_args(inp, out)
    weights_gib, draft_weights_gib, draft_transient_gib = _weights(inp, s.algo, out)
    avail_after, slack, rest = _rest_for_pools(inp, s, weights_gib, draft_weights_gib, draft_transient_gib, out)
    rest_before_state = rest
    state = mamba_state(g, attn_tp=inp.attn_tp_size or inp.tp_size, pp=inp.pp_size, ssm_dtype_flag=inp.mamba_ssm_dtype)
    slots, spec_intermediate, rest = _hybrid_state_pool(inp, s, state, rest, out)
    draft_before_kv_gib = draft_weights_gib + draft_transient_gib if rules.draft_weights_before_kv else 0.0
    cell, tokens = _kv_pool_tokens(inp, s, rest, avail_after, (draft_weights_gib, draft_transient_gib), out)
    mrr = _max_running_requests(inp, s, tokens, state, slots, out)
    k_size, v_size, conv_gib, ssm_gib, intermediate_ssm_gib = _pool_sizes(inp, s, tokens, state, slots, mrr)
    # an FP8 DSA pool is larger than the cell size it was sized by (_pool_sizes): the excess comes out of
    # what F0 x (1 - mfs) kept back
    pool_excess = max(0.0, k_size - tokens * cell / GIB) if g.dsa_indexer and g.mla else 0.0
    kept_back = slack - pool_excess
    draft_kv_gib = _draft_kv_gib(inp, s, tokens, draft_weights_gib)
    req_to_token_gib = _req_to_token_gib(s, mrr)
    runtime_need, sglang_reserve, draft_after = _runtime_headroom(inp, s, draft_kv_gib, draft_weights_gib, draft_transient_gib)
    pools = draft_before_kv_gib + k_size + v_size + conv_gib + ssm_gib + spec_intermediate + req_to_token_gib
    memory_pool_end = avail_after - pools
    _verdict(inp, s, tokens, (slack, pool_excess, req_to_token_gib), runtime_need, sglang_reserve, draft_after, out)
    margin, margin_limit = _margin_gib(out, avail_after, min(rest_before_state, rest), kept_back - req_to_token_gib - runtime_need)

    return MemoryPlan(
        rules=rules,
        mem_fraction_static=s.mfs,
        mem_fraction_static_default=s.mfs_default,
        platform=inp.platform,
        aiter_factor=s.aiter_factor,
        chunked_prefill_size=-1 if inp.enable_mis else _dp_attention_chunk(inp, s.chunked),
        cuda_graph_max_bs=s.graph_bs,
        gpu_total_gib=(inp.gpu_total_mib or 0) / 1024,
        free_before_load_gib=inp.free_before_load_gib,
        weights_gib=weights_gib,
        avail_after_load_gib=avail_after,
        draft_weights_gib=draft_weights_gib,
        draft_transient_gib=draft_transient_gib,
        draft_kv_gib=draft_kv_gib,
        kv_cell_bytes=cell,
        rest_before_state_gib=rest_before_state,
        spec_intermediate_gib=spec_intermediate,
        mamba_per_request_bytes=state.per_request_bytes if state else 0,
        mamba_slots=slots,
        mamba_conv_gib=conv_gib,
        mamba_ssm_gib=ssm_gib,
        intermediate_ssm_gib=intermediate_ssm_gib,
        req_to_token_gib=req_to_token_gib,
        kv_tokens=tokens,
        k_size_gib=k_size,
        v_size_gib=v_size,
        max_running_requests=mrr,
        context_length=s.context,
        speculative_algorithm=s.algo,
        speculative_num_draft_tokens=s.draft_tokens,
        radix_cache=s.radix,
        mamba_strategy=s.strategy if g.hybrid else None,
        slack_gib=slack,
        runtime_need_gib=runtime_need,
        sglang_reserve_gib=sglang_reserve,
        memory_pool_end_avail_gib=memory_pool_end,
        refusal=out.refusal,
        failure=out.failure,
        problems=tuple(out.problems),
        context_short=out.context_short,
        notes=tuple(out.notes),
        margin_gib=margin,
        margin_limit=margin_limit,
        margin_error_gib=margin_error_gib(inp.free_before_load_gib),
        memory_only=out.memory_only(),
    )


def _margin_gib(out: _Outcome, avail_after: float, rest_for_pools: float, headroom: float) -> tuple[float | None, str]:
    """How far from the edge, GiB per GPU, by what stops the launch first: the weights (what is
    left after loading), the pools (what is left for them), else the runtime headroom. A launch whose
    pools fit is as far from the edge as the nearer of the two: the headroom, or what is left for the
    pools (model_runner_kv_cache_mixin.py refuses at rest_memory <= 0, 0.5.14-0.5.23; earlier
    releases at a pool of no tokens), so a pool within plan's error of nothing is borderline."""
    if out.refusal is not None or (out.failure is not None and not out.memory_failure):
        return None, "headroom"
    if out.load_short_gib is not None:
        return out.load_short_gib, "weights"
    if avail_after <= 0:
        return avail_after, "weights"
    if out.failure is not None or rest_for_pools < headroom:
        return rest_for_pools, "pools"
    return headroom, "headroom"


def with_inputs(inp: MemoryInputs, **changes: Any) -> MemoryInputs:
    return replace(inp, **changes)


# ----------------------------------------------------------------------------- F0 for a GPU you are not on

# CUDA context plus NCCL and custom all-reduce buffers, GiB, before weights load: memory.total
# less SGLang's first "Load weight begin. avail mem" (the F0 it measures), in public logs:
#   TP1 H100 80GB  79.65 - 78.81 = 0.84  (Llama-3.1-8B, Jan 2025)
#   TP1 H100 80GB  79.65 - 78.48 = 1.17  (0.5.18; includes the launcher's own ~0.6 GiB context on GPU 0;
#                                         tests/data/logs/qwen3.8-27b-fp8.h100-tp1.otel.txt)
#   TP4 L4         22.49 - 21.63 = 0.86  (0.4.3, custom all-reduce off; tests/data/logs/qwq-32b.*)
#   TP4 RTX PRO 6000 95.59 - 94.01 = 1.58 (https://github.com/sgl-project/sglang/issues/40558)
#   TP8 H200       140.40 - 137.29 = 3.11 (https://github.com/sgl-project/sglang/pull/11716)
#   TP1 H200       140.40 - 139.19 = 1.21 (measured on a lent H200, driver 580.159.04, torch 2.11.0+cu130: the
#                                         driver's reserve 0.60 (torch's total is 139.80) and the CUDA context
#                                         0.61; an eager world-1 NCCL group and one all-reduce take 0.56 more,
#                                         which SGLang at TP 1 does not create)
# fitted as a context plus a per-extra-rank communicator share (about +-0.3 GiB on these).
CUDA_CONTEXT_GIB = 0.9
NCCL_GIB_PER_EXTRA_RANK = 0.28


def startup_allowance_gib(tp_size: int, pp_size: int = 1, nnodes: int = 1, nvlink: bool | None = None) -> float:
    """What the CUDA context and communicators take before SGLang measures F0.

    The share per extra rank counts the ranks on this GPU's own node (--nnodes splits tp x pp
    evenly over the nodes): a TP 16 launch over two 8-GPU nodes logs 79.65 - 76.97 = 2.68 GiB on
    H800s (https://github.com/sgl-project/sglang/issues/4161), about TP 8's figure, not TP 16's.
    More than two GPUs that are not all on NVLink (``nvlink`` False: PCIe cards) take no share:
    SGLang turns its custom all-reduce off there (distributed/device_communicators/
    custom_all_reduce.py, "not supported on more than two PCIe-only GPUs") and NCCL goes through
    the host; TP 4 on L4s and on RTX 4090s logs 0.86 and 0.91 GiB (the tuning part of
    tests/data/plan_logs), against 2.68 with 8 ranks a node on NVLink H800s. One point disagrees:
    TP 4 on RTX PRO 6000s, 1.58 (issue 40558)."""
    local = max(1, (tp_size * pp_size) // max(1, nnodes))
    if nvlink is False and local > 2:
        return CUDA_CONTEXT_GIB
    return CUDA_CONTEXT_GIB + NCCL_GIB_PER_EXTRA_RANK * (local - 1)


def explain_mem_fraction(plan: MemoryPlan) -> str:
    f0, mfs = plan.free_before_load_gib, plan.mem_fraction_static
    return (
        f"--mem-fraction-static {mfs:g} is the share of the memory free before loading (F0 = {f0:.2f} GiB "
        f"per GPU, measured after the CUDA context and NCCL start) that SGLang lets the model weights and "
        f"its static pools use: weights + KV cache"
        + (" + hybrid state" if plan.mamba_per_request_bytes else "")
        + f" = mfs x F0 = {mfs * f0:.2f} GiB. SGLang sizes the KV pool only after the weights are on the GPU, "
        f"as whatever is left of that share. The other {1 - mfs:.2f} x F0 = {plan.slack_gib:.2f} GiB is kept "
        "back for activations and CUDA graphs"
        + (" and, before 0.5.14, the speculative draft model" if plan.speculative_algorithm else "")
        + ". Raising it grows the KV pool and shrinks that headroom; it is not the KV cache's share of the GPU."
    )
