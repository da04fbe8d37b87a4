"""The checks SGLang runs on the launch flags after argparse (ServerArgs.__post_init__; from 0.5.18 on
the hooks of arg_groups/pipeline.py run_resolution_pipeline), that do not depend on the memory plan:
each raises and the server never starts.

Each rule applies to the releases whose sglang/srt sources carry its exact message: the ranges
below were read off the release wheels (.cache/wheels) by searching for the message text, and
held against SGLang's own parser for 0.5.9, 0.5.11 and 0.5.23 (tests/test_sglang_oracle.py). A
rule's handler names the function that raises it in the newest release it covers (server_args.py's
ServerArgs methods up to 0.5.17, arg_groups/*.py after). Rules are listed in the order SGLang runs
them, so the first one that applies is the error SGLang prints. The per-architecture support lists
(layer-norm SP, MegaMoE, CP decode attention TP, language-model-only, DSA, DeepEP v2, GPT-OSS's attention
backends) and the
quantization registry are kept per release and read config.json's architectures, which plan passes
in. The GPU-generation rules (TRT-LLM and CuTe DSL attention, MXFP8 / NVFP4 KV caches, MegaMoE,
nvfp4_online) read a CUDA GPU's compute capability, which plan passes in from matrix.yaml, and stay
silent where it is not known (a --gpu given as a memory size, a ROCm GPU).

Deliberately not here: checks that need the machine (--enable-http2 needs the granian package,
--mamba-backend flashinfer needs flashinfer's mamba module, SSL files must exist, a mooncake
transfer's --disaggregation-ib-device must be in /sys/class/infiniband, --load-format expert_pack's
files, --watermark-config's JSON file), the quantization a checkpoint declares reconciled with --quantization
(configs/model_config.py),
those that depend on what SGLang resolves for the model (--enable-linear-replayssm against the mamba
strategy: knowledge/memory.py; --enable-page-major-kv-layout in 0.5.15-0.5.18: the attention backends
resolved for the model and GPU),
and prefill_complete's one message listing every unsupported feature of the setup. The rules that read
the attention backend (multi-item scoring, the FP4 KV caches) take an unnamed one as the default SGLang
picks for the model and GPU (knowledge/attnbackend.py) and stay silent where that is not known.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import Version

from imgbuild.knowledge.attnbackend import default_attention_backend
from imgbuild.knowledge.launchflags import attention_dp_groups
from imgbuild.knowledge.quantscheme import QuantScheme

Values = Mapping[str, Any]


@dataclass(frozen=True)
class ArgCheck:
    name: str
    handler: str  # the ServerArgs method in server_args.py
    since: str
    until: str  # the last release checked that has the rule (the newest in the matrix)
    applies: Callable[[Values], bool]
    message: Callable[[Values], str]
    asserts: str = ""  # a bare assert's condition, where SGLang's AssertionError carries no message

    def in_release(self, version: str) -> bool:
        return Version(self.since) <= Version(version) <= Version(self.until)


def _v(values: Values, dest: str, default: Any = None) -> Any:
    value = values.get(dest, default)
    return default if value is None else value


def _int(values: Values, *dests: str) -> int:
    """The first of ``dests`` the flag table has: 0.5.16 renamed several dests (tensor_parallel_size
    to tp_size, attention_context_parallel_size to attn_cp_size, moe_data_parallel_size to moe_dp_size)."""
    for dest in dests:
        if values.get(dest) is not None:
            return int(values[dest])
    return 1


_TP = ("tp_size", "tensor_parallel_size")
_ATTN_CP = ("attn_cp_size", "attention_context_parallel_size")
_MOE_DP = ("moe_dp_size", "moe_data_parallel_size")
_EP = ("ep_size", "expert_parallel_size")


def _log_level_known(values: Values) -> bool:
    # server_args.py prepare_server_args: getattr(logging, raw_args.log_level.upper())
    import logging

    return hasattr(logging, str(_v(values, "log_level", "info")).upper())


def _spec_algorithm(values: Values) -> str | None:
    algo = _v(values, "speculative_algorithm")
    return "EAGLE" if algo == "NEXTN" else algo  # _handle_speculative_decoding renames NEXTN first


def _attn_tp(values: Values) -> int:
    # parallel_hook.py derive_attn_tp_size: the world TP split over attention CP and attention DP
    return _int(values, *_TP) // max(1, _int(values, *_ATTN_CP) * _int(values, "attn_dp_size"))


def _join_mode(values: Values) -> str | None:
    # 0.5.16-0.5.20 _handle_elastic_ep: the deprecated --elastic-ep-rejoin sets --elastic-ep-join-mode recover
    if _v(values, "ep_join_mode") is None and _v(values, "elastic_ep_rejoin") \
            and Version("0.5.16") <= Version(values[_VERSION]) <= Version("0.5.20"):
        return "recover"
    return _v(values, "ep_join_mode")


def _host_receive_on(values: Values) -> bool:
    # --disaggregation-decode-host-receive-threshold: 0.5.21 turns host receive on above 0 (default 0);
    # 0.5.22 inverted it, on below 1 (default 1)
    threshold = _v(values, "disaggregation_decode_host_receive_threshold")
    if threshold is None:
        return False
    return float(threshold) > 0 if Version(values[_VERSION]) < Version("0.5.22") else float(threshold) < 1


def _linear_decode_backend(values: Values) -> str:
    # handle_linear_attn_backend: the decode backend, else the shared one; an inherited flashkda decodes on triton
    decode = _v(values, "linear_attn_decode_backend") or _v(values, "linear_attn_backend", "triton")
    return "triton" if decode == "flashkda" else str(decode)


def _attn_dp_enabled(values: Values) -> bool:
    # runtime_context.py attn_dp_enabled_of (0.5.22+): --attn-dp-size > 1, or the deprecated --enable-dp-attention
    return _int(values, "attn_dp_size") > 1 or bool(_v(values, "enable_dp_attention"))


def _tlru_bounds(values: Values) -> tuple[Any, Any]:
    # kv_cache_hook.py handle_cache_compatibility: (threshold, next_prompt_estimate), each 0 when unset
    config = _v(values, "radix_eviction_policy_config", {})
    if isinstance(config, str):
        import json

        try:
            config = json.loads(config)
        except ValueError:
            config = {}
    if not isinstance(config, Mapping):
        config = {}
    return config.get("threshold", 0), config.get("next_prompt_estimate", 0)


def _tlru_refused(values: Values) -> bool:
    if _v(values, "radix_eviction_policy") != "tlru":
        return False
    threshold, estimate = _tlru_bounds(values)
    try:
        return 0 <= threshold <= estimate
    except TypeError:
        return False


# speculative/spec_info.py SpeculativeAlgorithm, the union over 0.5.12-0.5.23 (UNO from 0.5.20, DSPARK from 0.5.16),
# and the NEXTN alias
_SPEC_NAMES = ("DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM", "NONE", "NEXTN")
_MODEL_CONFIG_PARSERS = ("hf", "mistral")  # configs/model_config_parser_registry.py, 0.5.12-0.5.23


# Per-architecture support lists, as (first release, last release, the list) segments read off each
# wheel: SGLang checks these against config.json's architectures after argparse, so plan can too.
_ArchList = tuple[tuple[str, str, tuple[str, ...]], ...]
# layers/layernorm_sp.py SP_SUPPORTED_ARCHITECTURES (MUSE_SP_ARCHITECTURES added 0.5.23)
_LAYERNORM_SP: _ArchList = (
    ("0.5.19", "0.5.22", ("Qwen3ForCausalLM",)),
    ("0.5.23", "0.5.23", ("MuseSparkForConditionalGeneration", "Qwen3ForCausalLM")),
)
# layers/cp/cp_decode_attn_tp.py CP_DECODE_ATTN_TP_SUPPORTED_ARCHS
_CP_DECODE_ATTN_TP: _ArchList = (
    ("0.5.17", "0.5.23", ("DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark",
                          "GlmMoeDsaForCausalLM", "GlmMoeDsaForCausalLMNextN")),
)
# arg_groups/moe_hook.py validate_flashinfer_megamoe_model validated_architectures
_MEGAMOE_COMMON = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM",
                   "Glm4MoeForCausalLM")
_MEGAMOE_TAIL = ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM")
_MEGAMOE: _ArchList = (
    ("0.5.20", "0.5.20", (*_MEGAMOE_COMMON, *_MEGAMOE_TAIL)),
    ("0.5.21", "0.5.22", (*_MEGAMOE_COMMON, "GlmMoeDsaForCausalLM", *_MEGAMOE_TAIL)),
    ("0.5.23", "0.5.23", ("BeamForCausalLM", *_MEGAMOE_COMMON, "GlmMoeDsaForCausalLM", *_MEGAMOE_TAIL,
                          "KimiK3ForConditionalGeneration", "KimiK3LinearForCausalLM")),
)
# server_args.py ServerArgs.LANGUAGE_MODEL_ONLY_ARCHITECTURES
_LANGUAGE_MODEL_ONLY: _ArchList = (
    ("0.5.18", "0.5.19", ("MuseGlimmerForConditionalGeneration",)),
    ("0.5.20", "0.5.21", ("MuseGlimmerForConditionalGeneration", "Cosmos3ForConditionalGeneration",
                          "Cosmos3EdgeForConditionalGeneration")),
    ("0.5.22", "0.5.23", ("DeepseekV4ForCausalLM", "MuseGlimmerForConditionalGeneration",
                          "Cosmos3ForConditionalGeneration", "Cosmos3EdgeForConditionalGeneration")),
)
# configs/model_config.py is_deepseek_dsa: one of these architectures (and an index_topk, not read here)
_DSA_COMMON = ("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV3ForCausalLMNextN", "MistralLarge3ForCausalLM",
               "PixtralForConditionalGeneration", "GlmMoeDsaForCausalLM")
_LONGCAT = ("GlmMoeDsaForCausalLMNextN", "LongcatFlashForCausalLM", "LongcatFlashForCausalLMNextN")
_DSA: _ArchList = (
    ("0.5.16", "0.5.18", (*_DSA_COMMON, *_LONGCAT)),
    ("0.5.19", "0.5.19", (*_DSA_COMMON, *_LONGCAT, "Dots3NoteForCausalLM", "Dots3NoteForCausalLMNextN")),
    ("0.5.20", "0.5.23", (*_DSA_COMMON, *_LONGCAT, "Dots3NoteForCausalLM", "Dots3NoteForCausalLMNextN",
                          "Glm5NextForConditionalGeneration", "Glm5NextForConditionalGenerationNextN",
                          "HYV4ForCausalLM", "HYV4ForCausalLMNextN")),
)
# the GPT-OSS branch of the model adjustments (server_args.py _handle_model_specific_adjustments through 0.5.18,
# arg_groups/model_hook.py after): the attention backends it asserts the prefill and the decode backend are among
_GPT_OSS_BACKENDS: _ArchList = (
    ("0.5.1", "0.5.3", ("triton", "trtllm_mha", "fa3")),
    ("0.5.3.post1", "0.5.7", ("triton", "trtllm_mha", "fa3", "fa4")),
    ("0.5.8", "0.5.9", ("triton", "trtllm_mha", "fa3", "fa4", "ascend")),
    ("0.5.10", "0.5.10.post1", ("triton", "trtllm_mha", "fa3", "fa4", "ascend", "aiter")),
    ("0.5.11", "0.5.12.post1", ("triton", "trtllm_mha", "fa3", "fa4", "ascend", "intel_xpu", "aiter")),
    ("0.5.13", "0.5.23", ("triton", "trtllm_mha", "fa3", "fa4", "ascend", "intel_amx", "intel_xpu", "aiter")),
)
# the architectures encoder disaggregation (--encoder-only, --language-only) runs (server_args.py
# _handle_encoder_disaggregation 0.5.10-0.5.18, arg_groups/pd_disaggregation_hook.py after), and the names its
# refusal gives them
_QWEN_ENCODERS = ("Qwen2VLForConditionalGeneration", "Qwen3VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
                  "Qwen3VLMoeForConditionalGeneration", "Qwen3OmniMoeForConditionalGeneration",
                  "Qwen2AudioForConditionalGeneration", "Qwen2_5OmniForConditionalGeneration")
_ENCODERS_0_5_11 = (*_QWEN_ENCODERS, "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                    "KimiVLForConditionalGeneration", "KimiK25ForConditionalGeneration")
_ENCODERS_0_5_13 = (*_ENCODERS_0_5_11, "InternS2PreviewForConditionalGeneration", "MiMoV2ForCausalLM")
_ENCODERS_0_5_19 = (*_ENCODERS_0_5_13, "KimiK3ForConditionalGeneration", "Dots3NoteForCausalLM")
_ENCODER_DISAGGREGATION: _ArchList = (
    ("0.5.10", "0.5.10.post1", _QWEN_ENCODERS),
    ("0.5.11", "0.5.11", _ENCODERS_0_5_11),
    ("0.5.12", "0.5.12.post1", (*_ENCODERS_0_5_11, "InternS2PreviewForConditionalGeneration")),
    ("0.5.13", "0.5.16", _ENCODERS_0_5_13),
    ("0.5.17", "0.5.18", (*_ENCODERS_0_5_13, "KimiK3ForConditionalGeneration")),
    ("0.5.19", "0.5.19", _ENCODERS_0_5_19),
    ("0.5.20", "0.5.22", (*_ENCODERS_0_5_19, "Glm5NextForConditionalGeneration")),
    ("0.5.23", "0.5.23", (*_ENCODERS_0_5_19, "Glm5NextForConditionalGeneration", "MiniMaxM3SparseForConditionalGeneration",
                          "MuseSparkForConditionalGeneration")),
)
_ENCODER_NAMES = "Qwen2VL, Qwen3VL, Qwen3.5, InternS2, Qwen2Audio, Qwen2.5Omni"
_ENCODER_DISAGGREGATION_TAIL: _ArchList = (
    ("0.5.10", "0.5.12.post1", (", only Qwen models are supported for now.",)),
    ("0.5.13", "0.5.18", (f". Supported architectures: {_ENCODER_NAMES}, Kimi, MiMoV2.",)),
    ("0.5.19", "0.5.19", (f". Supported architectures: {_ENCODER_NAMES}, Dots3-Note, Kimi, MiMoV2.",)),
    ("0.5.20", "0.5.22", (f". Supported architectures: {_ENCODER_NAMES}, Dots3-Note, Kimi, MiMoV2, GLM5Next.",)),
    ("0.5.23", "0.5.23", (f". Supported architectures: {_ENCODER_NAMES}, Dots3-Note, Kimi, MiMoV2, GLM5Next, "
                          "MiniMax-M3, MuseSpark.",)),
)
_ARCHS = "_architectures"  # first_refusal's key for config.json's architectures (no SGLang dest has this name)
_VERSION = "_version"
_CC = "_compute_capability"  # matrix.yaml's compute capability of a CUDA GPU ("8.6"); absent: not known
_CHECKPOINT_QUANT = "_checkpoint_quantization"  # config.json's quantization_config quant_method, if any
_CHECKPOINT_SCHEME = "_checkpoint_scheme"  # its weight format (knowledge/quantscheme.py QuantScheme), if read
_MLA = "_mla"  # the model's attention is MLA (ModelConfig.attention_arch)
_DSA_MODEL = "_dsa"  # the config names an index_topk (configs/model_config.py is_deepseek_nsa's second test)


def _arch_list(values: Values, segments: _ArchList) -> tuple[str, ...] | None:
    """The support list of the release in ``values`` (None: that release has no such list)."""
    version = Version(values[_VERSION])
    return next((names for since, until, names in segments if Version(since) <= version <= Version(until)), None)


def _archs(values: Values) -> tuple[str, ...]:
    return tuple(values.get(_ARCHS) or ())


def _arch(values: Values) -> str | None:
    """hf_config.architectures[0], the one SGLang reads (None without a config)."""
    return next(iter(_archs(values)), None)


def _first_arch_outside(values: Values, segments: _ArchList) -> bool:
    # without a config there is nothing to check
    names, arch = _arch_list(values, segments), _arch(values)
    return names is not None and arch is not None and arch not in names


def _no_arch_inside(values: Values, segments: _ArchList) -> bool:
    names, archs = _arch_list(values, segments), _archs(values)
    return names is not None and bool(archs) and not any(a in names for a in archs)


def _gpt_oss_backends(values: Values) -> tuple[str | None, str | None]:
    """get_attention_backends(): a phase's own backend, else --attention-backend (None when neither is given)."""
    attention = _v(values, "attention_backend")
    return _v(values, "prefill_attention_backend") or attention, _v(values, "decode_attention_backend") or attention


def _gpt_oss_backends_refused(values: Values) -> bool:
    # with no backend named at all SGLang picks one of its own (trtllm_mha on SM100, fa3 on SM90, else triton);
    # one phase's backend named alone leaves the other None, which the assert refuses
    names = _arch_list(values, _GPT_OSS_BACKENDS)
    if names is None or _arch(values) != "GptOssForCausalLM":
        return False
    prefill, decode = _gpt_oss_backends(values)
    named = prefill is not None or decode is not None
    return named and (prefill not in names or decode not in names)


# Llama 4's model-specific adjustments (server_args.py _handle_model_specific_adjustments 0.5.3-0.5.18,
# arg_groups/model_hook.py after): with no --attention-backend it picks fa3 / trtllm_mha / aiter / triton itself
# (from 0.5.5; 0.5.3 and 0.5.4 pick none there, not modelled), then asserts the backend is one of these
# (off --device cpu). (since, until, accepted, the assert's text without the backend it got, names it)
_LLAMA4_BACKENDS: tuple[tuple[str, str, tuple[str, ...], str, bool], ...] = (
    ("0.5.3", "0.5.4", ("fa3", "aiter", "triton"), "fa3, aiter, or triton is required for Llama4 model", False),
    ("0.5.5", "0.5.5.post3", ("fa3", "aiter", "triton", "trtllm_mha"),
     "fa3, aiter, triton, or trtllm_mha is required for Llama4 model", False),
    ("0.5.6", "0.5.9", ("fa3", "aiter", "triton", "trtllm_mha", "intel_xpu"),
     "fa3, aiter, triton, trtllm_mha or intel_xpu is required for Llama4 model but got", True),
    ("0.5.10", "0.5.23", ("fa3", "aiter", "triton", "ascend", "trtllm_mha", "intel_xpu"),
     "fa3, aiter, triton, ascend, trtllm_mha or intel_xpu is required for Llama4 model but got", True),
)


def _llama4_rule(values: Values) -> tuple[tuple[str, ...], str, bool] | None:
    version = Version(values[_VERSION])
    if not str(_arch(values) or "").startswith("Llama4") or _v(values, "device") == "cpu":
        return None
    return next(((names, text, got) for since, until, names, text, got in _LLAMA4_BACKENDS
                 if Version(since) <= version <= Version(until)), None)


def _llama4_backend_refused(values: Values) -> bool:
    rule = _llama4_rule(values)
    backend = _attn(values, "attention_backend")
    return rule is not None and backend is not None and backend not in rule[0]


def _llama4_backend_message(values: Values) -> str:
    _, text, got = _llama4_rule(values) or ((), "", False)
    return f"AssertionError: {text} {_attn(values, 'attention_backend')}" if got else f"AssertionError: {text}"


# Gemma 4's (server_args.py 0.5.13-0.5.18, arg_groups/model_hook.py after): the prefill and decode backends must
# both be in the list; --attention-backend, when not given, is Gemma 4's own default even where one phase is named
# (trtllm_mha on SM100, else triton; 0.5.13-0.5.18 triton for a modelopt_fp4 MoE checkpoint, arg_groups/
# model_overrides/gemma4.py from 0.5.19). (since, until, accepted, the names the message gives)
_GEMMA4 = ("Gemma4ForConditionalGeneration", "Gemma4ForCausalLM", "Gemma4UnifiedForConditionalGeneration")
_GEMMA4_BACKENDS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("0.5.13", "0.5.13", ("trtllm_mha", "triton", "intel_xpu"), "trtllm_mha, triton, or intel_xpu"),
    # 0.5.14-0.5.17 accept ascend without saying so
    ("0.5.14", "0.5.17", ("trtllm_mha", "triton", "ascend", "intel_xpu"), "trtllm_mha, triton, or intel_xpu"),
    ("0.5.18", "0.5.19", ("trtllm_mha", "triton", "ascend", "intel_xpu", "intel_amx"),
     "trtllm_mha, triton, ascend, intel_xpu, or intel_amx"),
    ("0.5.20", "0.5.21", ("trtllm_mha", "triton", "ascend", "intel_xpu", "intel_amx", "aiter"),
     "trtllm_mha, triton, ascend, intel_xpu, intel_amx, or aiter"),
    ("0.5.22", "0.5.23", ("trtllm_mha", "triton", "fa4", "ascend", "intel_xpu", "intel_amx", "aiter"),
     "trtllm_mha, triton, fa4, ascend, intel_xpu, intel_amx, or aiter"),
)


def _gemma4_rule(values: Values) -> tuple[tuple[str, ...], str] | None:
    version = Version(values[_VERSION])
    if _arch(values) not in _GEMMA4:
        return None
    return next(((names, said) for since, until, names, said in _GEMMA4_BACKENDS
                 if Version(since) <= version <= Version(until)), None)


def _gemma4_backends(values: Values) -> tuple[str, str]:
    # Gemma 4's default: trtllm_mha on SM100 (a GPU given only as a memory size reads as not SM100: either
    # default is accepted, so only the message's wording can differ)
    default = "trtllm_mha" if _cc_major(values) in _SM100 else "triton"
    attention = _attn(values, "attention_backend") or default
    return _attn(values, "prefill_attention_backend") or attention, _attn(values, "decode_attention_backend") or attention


def _gemma4_backend_refused(values: Values) -> bool:
    rule = _gemma4_rule(values)
    return rule is not None and not all(b in rule[0] for b in _gemma4_backends(values))


def _gemma4_backend_message(values: Values) -> str:
    _, said = _gemma4_rule(values) or ((), "")
    prefill, decode = _gemma4_backends(values)
    return f"AssertionError: Gemma4 only supports {said} attention backend, got prefill={prefill}, decode={decode}"


def _lmo_reaches_list(values: Values) -> bool:
    # model_hook.py handle_language_model_only refuses these combinations (other texts) before the list
    combined = ("encoder_only", "language_only", "enable_prefix_mm_cache", "enable_broadcast_mm_inputs_process",
                "mm_enable_dp_encoder")
    return not any(_v(values, d) for d in combined) and _v(values, "disaggregation_mode", "null") == "null"


# utils/common.py _check_cuda_device_version by the capability's major (0.5.19+ runtime_context.py's
# platform facts read the same): is_sm90_supported 9, is_sm100_supported 10, is_sm120_supported 12,
# is_blackwell_supported 10, 11 and 12
_SM90, _SM100, _SM120 = (9,), (10,), (12,)
_BLACKWELL = (10, 11, 12)


def _cc_major(values: Values) -> int | None:
    try:
        return int(str(values.get(_CC) or "").split(".")[0])
    except ValueError:
        return None


def _gpu_outside(values: Values, *majors: tuple[int, ...]) -> bool:
    """The GPU is known and is none of ``majors`` (a --gpu given as a bare memory size: not known, silent)."""
    major = _cc_major(values)
    return major is not None and not any(major in group for group in majors)


def _attn(values: Values, dest: str) -> str | None:
    # 0.5.23 serving_hook.py handle_deprecated_args renames the deprecated tokenspeed_mla to cutedsl_mla
    # (--attention-backend and --decode-attention-backend only)
    backend = _v(values, dest)
    renamed = dest != "prefill_attention_backend" and Version(values[_VERSION]) >= Version("0.5.23")
    return "cutedsl_mla" if backend == "tokenspeed_mla" and renamed else backend


def _nvfp4_kv_decodes_on_trtllm(values: Values) -> bool:
    # 0.5.21+ kv_cache_hook.py handle_nvfp4_prefill_kv_dequant_dtype: an NVFP4 KV cache with no backend
    # named sets --decode-attention-backend trtllm_mha (prefill: flashinfer below SM100)
    return Version(values[_VERSION]) >= Version("0.5.21") and _v(values, "kv_cache_dtype") == "nvfp4" \
        and _v(values, "prefill_kv_cache_dequant_dtype", "auto") == "auto" and not any(
            _v(values, d) for d in ("attention_backend", "prefill_attention_backend", "decode_attention_backend"))


def _prefill_attn(values: Values) -> str | None:
    return _attn(values, "prefill_attention_backend") or _attn(values, "attention_backend")


def _decode_attn(values: Values) -> str | None:
    if _nvfp4_kv_decodes_on_trtllm(values):
        return "trtllm_mha"
    return _attn(values, "decode_attention_backend") or _attn(values, "attention_backend")


def _any_attn(values: Values, backend: str) -> bool:
    return backend in (_attn(values, "attention_backend"), _attn(values, "decode_attention_backend"),
                       _attn(values, "prefill_attention_backend"))


# Architectures whose model-specific adjustments read the checkpoint's quant_method without copying it into
# server_args.quantization, so server_args' MoE asserts see the flag alone: GPT-OSS (server_args.py's
# GptOssForCausalLM branch to 0.5.14, arg_groups/model_overrides/gpt_oss.py from 0.5.15).
_FLAG_QUANT_ONLY = ("GptOssForCausalLM",)


def _quantization(values: Values) -> str | None:
    """--quantization as server_args holds it, where plan can tell: "?" when the checkpoint declares its
    own and the architecture's adjustments may copy it in (configs/model_config.py then reconciles the two,
    which is not modelled here)."""
    if values.get(_CHECKPOINT_QUANT) and _arch(values) not in _FLAG_QUANT_ONLY:
        return "?"
    flag = _v(values, "quantization")
    return None if flag in (None, "unquant") else str(flag).lower()  # "unquant": server_args.py sets None


# layers/quantization/__init__.py QUANTIZATION_METHODS on a CUDA machine, in order (BASE_QUANTIZATION_METHODS,
# then the is_cuda() additions: mxfp4); configs/model_config.py _verify_quantization lists it in its refusal.
# Read off each wheel from 0.5.5 on (0.5.1-0.5.4 add vllm's methods when vllm is installed).
_QUANTIZATION_METHODS: _ArchList = (
    ("0.5.5", "0.5.5", (
        "fp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "w8a8_int8", "w8a8_fp8", "awq",
        "awq_marlin", "gguf", "gptq", "gptq_marlin", "moe_wna16", "compressed-tensors", "qoq", "w4afp8",
        "petit_nvfp4", "fbgemm_fp8", "auto-round", "quark", "mxfp4")),
    ("0.5.6", "0.5.7", (
        "fp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "w8a8_int8", "w8a8_fp8", "awq",
        "awq_marlin", "gguf", "gptq", "gptq_marlin", "moe_wna16", "compressed-tensors", "qoq", "w4afp8",
        "petit_nvfp4", "fbgemm_fp8", "quark", "auto-round", "mxfp4")),
    ("0.5.8", "0.5.8.post1", (
        "fp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "w8a8_int8", "w8a8_fp8", "awq",
        "awq_marlin", "bitsandbytes", "gguf", "gptq", "gptq_marlin", "moe_wna16", "compressed-tensors", "qoq",
        "w4afp8", "petit_nvfp4", "fbgemm_fp8", "quark", "auto-round", "modelslim", "quark_int4fp8_moe", "mxfp4")),
    ("0.5.9", "0.5.9", (
        "fp8", "mxfp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "w8a8_int8", "w8a8_fp8",
        "awq", "awq_marlin", "bitsandbytes", "gguf", "gptq", "gptq_marlin", "moe_wna16", "compressed-tensors",
        "qoq", "w4afp8", "petit_nvfp4", "fbgemm_fp8", "quark", "auto-round", "modelslim", "quark_int4fp8_moe",
        "mxfp4")),
    ("0.5.10", "0.5.12.post1", (
        "fp8", "mxfp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "modelopt_mixed", "w8a8_int8",
        "w8a8_fp8", "awq", "awq_marlin", "bitsandbytes", "gguf", "gptq", "gptq_marlin", "moe_wna16",
        "compressed-tensors", "qoq", "w4afp8", "petit_nvfp4", "fbgemm_fp8", "quark", "auto-round", "modelslim",
        "quark_int4fp8_moe", "mxfp4")),
    ("0.5.13", "0.5.13.post1", (
        "fp8", "mxfp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "modelopt_mixed", "w8a8_int8",
        "w8a8_fp8", "awq", "awq_marlin", "bitsandbytes", "gguf", "gptq", "gptq_marlin", "moe_wna16",
        "compressed-tensors", "qoq", "w4afp8", "petit_nvfp4", "fbgemm_fp8", "quark", "quark_mxfp4", "auto-round",
        "modelslim", "quark_int4fp8_moe", "mxfp4")),
    ("0.5.14", "0.5.14", (
        "fp8", "mxfp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "nvfp4_online",
        "modelopt_mixed", "w8a8_int8", "w8a8_fp8", "awq", "awq_marlin", "bitsandbytes", "gguf", "gptq",
        "gptq_marlin", "moe_wna16", "compressed-tensors", "qoq", "w4afp8", "petit_nvfp4", "fbgemm_fp8", "quark",
        "quark_mxfp4", "auto-round", "modelslim", "quark_int4fp8_moe", "mxfp4")),
    ("0.5.15", "0.5.15.post1", (
        "fp8", "mxfp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "nvfp4_online",
        "modelopt_mixed", "w8a8_int8", "w8a8_fp8", "awq", "awq_marlin", "bitsandbytes", "gguf", "gptq",
        "gptq_marlin", "moe_wna16", "compressed-tensors", "qoq", "w4afp8", "petit_nvfp4", "fbgemm_fp8", "quark",
        "quark_mxfp4", "auto-round", "auto-round-int8", "modelslim", "quark_int4fp8_moe", "mxfp_w4a8", "mxfp4")),
    ("0.5.16", "0.5.19", (
        "fp8", "mxfp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "nvfp4_online",
        "modelopt_mixed", "w8a8_int8", "w8a8_fp8", "awq", "awq_marlin", "bitsandbytes", "gguf", "gptq",
        "gptq_marlin", "moe_wna16", "compressed-tensors", "w4afp8", "petit_nvfp4", "quark", "quark_mxfp4",
        "auto-round", "auto-round-int8", "modelslim", "quark_int4fp8_moe", "humming", "mxfp_w4a8", "mxfp4")),
    ("0.5.20", "0.5.22", (
        "fp8", "mxfp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "nvfp4_online",
        "modelopt_mixed", "w8a8_int8", "w8a8_fp8", "awq", "awq_marlin", "bitsandbytes", "gguf", "gptq_marlin",
        "moe_wna16", "compressed-tensors", "w4afp8", "petit_nvfp4", "quark", "quark_mxfp4", "auto-round",
        "auto-round-int8", "modelslim", "quark_int4fp8_moe", "humming", "mxfp_w4a8", "mxfp4")),
    ("0.5.23", "0.5.23", (
        "fp8", "mxfp8", "minimax_m3_nvfp4", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4",
        "nvfp4_online", "modelopt_mixed", "w8a8_int8", "w8a8_fp8", "awq", "awq_marlin", "bitsandbytes", "gguf",
        "gptq_marlin", "moe_wna16", "compressed-tensors", "w4afp8", "petit_nvfp4", "quark", "quark_mxfp4",
        "auto-round", "auto-round-int8", "modelslim", "quark_int4fp8_moe", "humming", "mxfp_w4a8", "mxfp4")),
)


# configs/model_config.py _validate_quantize_and_serve_config: the ModelOpt methods --quantize-and-serve needs (by
# --quantization as given, whatever the checkpoint declares), read off each wheel; with one of them it raises that the
# feature is disabled, so the flag never starts a server
_MODELOPT_METHODS: _ArchList = (
    ("0.5.5", "0.5.9", ("modelopt", "modelopt_fp8", "modelopt_fp4")),
    ("0.5.10", "0.5.13.post1", ("modelopt", "modelopt_fp8", "modelopt_fp4", "modelopt_mixed")),
    ("0.5.14", "0.5.23", ("modelopt", "modelopt_fp8", "modelopt_fp4", "nvfp4_online", "modelopt_mixed")),
)


def _quantize_and_serve_message(values: Values) -> str:
    methods = _arch_list(values, _MODELOPT_METHODS) or ()
    if _v(values, "quantization") in methods:
        return ("NotImplementedError: quantize_and_serve functionality is currently disabled due to compatibility issues. "
                "Please use the separate quantize-then-deploy workflow instead. Step 1: Quantize and export model. "
                "Step 2: Deploy the exported model.")
    return f"ValueError: quantize_and_serve requires ModelOpt quantization (set with --quantization {{{', '.join(sorted(methods))}}})"


# DETERMINISTIC_ATTENTION_BACKEND_CHOICES (server_args.py), in its order, read off each wheel; an explicit
# --attention-backend outside it is refused under deterministic inference (which --rl-on-policy-target turns on)
_DETERMINISTIC_BACKENDS: _ArchList = (
    ("0.5.4", "0.5.12.post1", ("flashinfer", "fa3", "triton")),
    ("0.5.13", "0.5.15.post1", ("flashinfer", "fa3", "triton", "ascend")),
    ("0.5.16", "0.5.18", ("ascend", "fa3", "fa4", "flashinfer", "triton")),
    ("0.5.19", "0.5.23", ("ascend", "fa3", "fa4", "flashinfer", "intel_xpu", "triton")),
)


def _deterministic_backend_refused(values: Values) -> bool:
    backend = _v(values, "attention_backend")
    on = bool(_v(values, "enable_deterministic_inference")) or _v(values, "rl_on_policy_target") is not None
    return on and backend is not None and backend not in (_arch_list(values, _DETERMINISTIC_BACKENDS) or (backend,))


def _resolved_attention(values: Values) -> tuple[str | None, str | None, str | None]:
    """(attention, prefill, decode) backends as _handle_attention_backend_compatibility leaves them: equal
    phase flags become --attention-backend, an unnamed one is the release's default for the model and GPU
    (knowledge/attnbackend.py; None where that is not known), a phase without its own flag takes it
    (get_attention_backends)."""
    attention, prefill = _attn(values, "attention_backend"), _attn(values, "prefill_attention_backend")
    decode = "trtllm_mha" if _nvfp4_kv_decodes_on_trtllm(values) else _attn(values, "decode_attention_backend")
    if prefill is not None and prefill == decode:
        attention = prefill
    if attention is None:
        archs = _archs(values)
        attention = default_attention_backend(values[_VERSION], archs[0] if archs else None, values.get(_CC),
                                              mla=bool(values.get(_MLA)), speculative=_spec_algorithm(values) is not None)
    return attention, prefill or attention, decode or attention


def _mis_refused(values: Values) -> bool:
    _, prefill, decode = _resolved_attention(values)
    return bool(_v(values, "enable_mis")) and None not in (prefill, decode) and (prefill, decode) != ("flashinfer",) * 2


# _handle_kv4_compatibility (server_args.py 0.5.7-0.5.18, arg_groups/kv_cache_hook.py after): the FP4 KV caches
# (fp4_e2m1 through 0.5.15; nvfp4 and fp4_mx_block16 from 0.5.16) need a backend that reads them. Equal phases
# (or FA4 prefill) are checked; different ones only warn. The MLA lists lost cutlass_mla in 0.5.20, flashmla in 0.5.16.
_KV4_DTYPES: _ArchList = (("0.5.7", "0.5.15.post1", ("fp4_e2m1",)), ("0.5.16", "0.5.23", ("nvfp4", "fp4_mx_block16")))
_KV4_MLA: _ArchList = (
    ("0.5.7", "0.5.15.post1", ("cutlass_mla", "flashinfer", "trtllm_mla", "flashmla")),
    ("0.5.16", "0.5.19", ("cutlass_mla", "flashinfer", "trtllm_mla")),
    ("0.5.20", "0.5.23", ("flashinfer", "trtllm_mla")),
)
_KV4_FA4_MLA: _ArchList = (("0.5.7", "0.5.19", ("cutlass_mla", "flashinfer", "trtllm_mla")),
                           ("0.5.20", "0.5.23", ("flashinfer", "trtllm_mla")))
_KV4_MHA = ("triton", "torch_native", "flex_attention", "trtllm_mha")
_KV4_FA4_MHA = ("triton", "torch_native", "flex_attention")


def _kv4_refusal(values: Values) -> str | None:
    if _v(values, "kv_cache_dtype") not in (_arch_list(values, _KV4_DTYPES) or ()) or _cc_major(values) is None:
        return None
    attention, prefill, decode = _resolved_attention(values)
    if None in (attention, prefill, decode) or (prefill != decode and prefill != "fa4"):
        return None
    arch = "MLA" if values.get(_MLA) else "MHA"
    if prefill == "fa4":
        choices = list(_arch_list(values, _KV4_FA4_MLA) or ()) if arch == "MLA" else list(_KV4_FA4_MHA)
        return None if decode in choices else (f"AssertionError: KV4 FA4 {arch} expects decode_attention_backend to "
                                               f"be one of {choices}, but got {decode}")
    choices = list(_arch_list(values, _KV4_MLA) or ()) if arch == "MLA" else list(_KV4_MHA)
    return None if attention in choices else (f"AssertionError: KV4 {arch} expects attention_backend to be one of "
                                              f"{choices}, but got {attention}")


# diffusion LLMs: the algorithms (the Algorithm classes of dllm/algorithm/*.py, which handle_dllm_inference looks
# up by name from 0.5.21) and the architectures dllm/config.py DllmConfig.from_server_args has parameters for
_DLLM_ALGORITHMS: _ArchList = (("0.5.21", "0.5.21", ("Gemma4Renoise", "JointThreshold", "LowConfidence")),
                               ("0.5.22", "0.5.23", ("Gemma4Renoise", "JointThreshold", "JointThresholdInDel",
                                                     "LowConfidence")))
_DLLM_ARCHS: _ArchList = (
    ("0.5.10", "0.5.20", ("LLaDA2MoeModelLM", "SDARForCausalLM", "SDARMoeForCausalLM")),
    ("0.5.21", "0.5.23", ("DiffusionGemmaForBlockDiffusion", "LLaDA2MoeModelLM", "SDARForCausalLM", "SDARMoeForCausalLM")),
)


def _dllm_architecture_refused(values: Values) -> bool:
    # 0.5.10-0.5.14 server_args.py _handle_dllm_inference builds the DllmConfig only with the radix cache on;
    # from 0.5.15 arg_groups/overrides.py _dllm_page_size builds it for every dLLM launch
    gated = Version(values[_VERSION]) < Version("0.5.15") and bool(_v(values, "disable_radix_cache"))
    return _v(values, "dllm_algorithm") is not None and not gated and _first_arch_outside(values, _DLLM_ARCHS)


def _quantization_unknown(values: Values) -> bool:
    names, quant = _arch_list(values, _QUANTIZATION_METHODS), _verified_quantization(values)
    return names is not None and quant not in (None, "?") and quant not in names


# server_args.py _handle_model_specific_adjustments, DeepSeek sparse attention on a CUDA or ROCm GPU (0.5.7-0.5.13;
# is_deepseek_nsa: the first architecture one of these, and an index_topk): prefill context parallel asserts one
# attention group under its round-robin split (0.5.8 on; the mode's default is in-seq-split in 0.5.8), a single
# machine (tp == 8 to 0.5.11, <= 8 in 0.5.12-0.5.13), and no decode server. 0.5.14 moves it to --enable-prefill-cp.
_NSA_ARCHS = ("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV3ForCausalLMNextN", "MistralLarge3ForCausalLM",
              "PixtralForConditionalGeneration", "GlmMoeDsaForCausalLM")


def _dsa_prefill_cp_refusal(values: Values) -> str | None:
    version = Version(values[_VERSION])
    archs = _archs(values)
    if not (Version("0.5.7") <= version < Version("0.5.14") and values.get(_DSA_MODEL) and archs
            and archs[0] in _NSA_ARCHS):
        return None
    dsa = version >= Version("0.5.13")
    flag = "dsa" if dsa else "nsa"
    if not _v(values, f"enable_{flag}_prefill_context_parallel"):
        return None
    mode = _v(values, f"{flag}_prefill_cp_mode") or ("in-seq-split" if version < Version("0.5.9") else "round-robin-split")
    if version >= Version("0.5.8") and mode != "in-seq-split" and _int(values, "dp_size") != 1:
        return "AssertionError: For round-robin split mode, dp attention is not supported."
    tp = _int(values, *_TP)
    if version < Version("0.5.12") and tp != 8:
        return ("AssertionError: Current multi-machine CP support suffers from precision issues. So context parallel "
                "only support Single machine(tp_size == 8)")
    if version >= Version("0.5.12") and tp > 8:
        return "AssertionError: Context parallel only supports single machine (tp_size <= 8). Cross-machine CP has precision issues."
    if version >= Version("0.5.8") and _v(values, "disaggregation_mode") == "decode":
        return ("AssertionError: CP is only supported for prefill when PD disaggregation, please remove "
                f"--enable-{flag}-prefill-context-parallel.")
    return None


# configs/model_config.py ModelConfig._verify_quantization (every 0.5.x release): a checkpoint that declares its
# quant_method, launched with another --quantization, is refused unless an override (layers/quantization/*.py
# override_quantization_method) or the compatible_quantization_methods table takes the pair. Checked here only for the
# formats held against the real parser (tests/test_sglang_oracle.py QUANT_MISMATCH_CASES): AWQ, GPTQ, FP8, MXFP4,
# compressed-tensors and bitsandbytes. (A modelopt checkpoint is never refused: ModelOptFp8Config's override, early in
# QUANTIZATION_METHODS, turns any flag into the checkpoint's modelopt_fp8 / modelopt_fp4.)
_QUANT_MISMATCH_FORMATS = ("awq", "gptq", "fp8", "mxfp4", "compressed-tensors", "bitsandbytes")
_QUANT_TAKEN: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    # humming.py (0.5.16 on): "humming" for any checkpoint but MXFP4
    *(("0.5.16", "0.5.23", fmt, ("humming",)) for fmt in ("awq", "gptq", "fp8", "compressed-tensors", "bitsandbytes")),
    # compatible_quantization_methods: nvfp4_online <- fp8 (0.5.14 on), modelopt_fp4 <- fp8 (0.5.18 on);
    # w8a8_int8 and w8a8_fp8 <- compressed-tensors (every 0.5.x), auto-round-int8 <- compressed-tensors (0.5.15 on)
    ("0.5.14", "0.5.23", "fp8", ("nvfp4_online",)),
    ("0.5.18", "0.5.23", "fp8", ("modelopt_fp4",)),
    ("0.5.0", "0.5.23", "compressed-tensors", ("w8a8_int8", "w8a8_fp8")),
    ("0.5.15", "0.5.23", "compressed-tensors", ("auto-round-int8",)),
    # REQUANTIZATION_METHODS (0.5.18 on): quark_mxfp4 requantizes any checkpoint online
    *(("0.5.18", "0.5.23", fmt, ("quark_mxfp4",)) for fmt in _QUANT_MISMATCH_FORMATS),
)
_MARLIN_GROUPS = (0, 32, 64, 128)  # marlin_utils.py MARLIN_SUPPORTED_GROUP_SIZES (0 here: -1, per channel)


def _quant_overrides(values: Values, declared: str) -> set[str]:
    """The flags a kernel override turns into a method that suits this checkpoint: awq/awq.py AWQMarlinConfig and
    gptq.py GPTQMarlinConfig (marlin, awq_marlin / gptq_marlin) on a CUDA GPU of sm80 or newer whose Marlin kernels
    take the bits and group size (awq.py, and 0.5.9's and 0.5.11's gptq.py, ask is_cuda() at import, so the oracle's
    GPU-less parser refuses these where a GPU takes them); moe_wna16.py MoeWNA16Config (a 4-bit AWQ on sm75+, a 4- or
    8-bit GPTQ without act order)."""
    scheme = values.get(_CHECKPOINT_SCHEME)
    bits, group = (scheme.weight_bits, scheme.group_size) if scheme is not None else (4, 128)
    sm80 = not _gpu_outside(values, (8, 9, 10, 11, 12))
    taken: set[str] = set()
    if declared == "awq":
        marlin = bits in (4, 8) and group in _MARLIN_GROUPS
        taken |= ({"awq_marlin", "marlin"} if marlin and sm80 else set()) | ({"moe_wna16"} if bits == 4 else set())
    elif declared == "gptq":
        sym, act_order = (scheme.symmetric, scheme.act_order) if scheme is not None else (True, False)
        marlin = bits in (4, 8) and sym is True and act_order is not None and group in _MARLIN_GROUPS
        taken |= ({"gptq_marlin", "marlin"} if marlin and sm80 else set()) \
            | ({"moe_wna16"} if bits in (4, 8) and not act_order else set())
    return taken


def _verified_quantization(values: Values) -> str | None:
    """The method _verify_quantization checks against the registry: the flag, or where the checkpoint declares a
    format modelled here, the flag or the checkpoint's method as an override turns it (a GPTQ checkpoint with no
    flag runs as gptq_marlin where Marlin takes it, else as gptq, which 0.5.20 on registers only off CUDA);
    "?" for a checkpoint format not modelled."""
    declared = values.get(_CHECKPOINT_QUANT)
    if not declared or _arch(values) in _FLAG_QUANT_ONLY:
        return _quantization(values)
    if declared not in _QUANT_MISMATCH_FORMATS:
        return "?"
    flag = _v(values, "quantization")
    flag = None if flag in (None, "unquant") else str(flag).lower()
    overrides, marlin = _quant_overrides(values, str(declared)), f"{declared}_marlin"
    if flag is None or flag == "marlin":
        return marlin if marlin in overrides else (flag or str(declared))
    return flag


def gptq_without_kernel(version: str, values: Values, *, checkpoint_quantization: str | None,
                        checkpoint_scheme: QuantScheme | None, compute_capability: str | None) -> str | None:
    """Why a GPTQ checkpoint has no kernel on CUDA in ``version`` (0.5.20 on: layers/quantization/__init__.py registers
    plain gptq only off CUDA, so it runs only as gptq_marlin), and what serves it; None where it has one."""
    seen = {**values, _VERSION: version, _CC: compute_capability, _CHECKPOINT_QUANT: checkpoint_quantization,
            _CHECKPOINT_SCHEME: checkpoint_scheme}
    if checkpoint_quantization != "gptq" or _verified_quantization(seen) != "gptq" or not _quantization_unknown(seen):
        return None
    scheme = checkpoint_scheme
    lacks = [why for why, missing in (
        (f"a GPU of sm80 or newer (this one is sm{(compute_capability or '').replace('.', '')})",
         _gpu_outside(seen, (8, 9, 10, 11, 12))),
        ("4- or 8-bit weights", scheme is not None and scheme.weight_bits not in (4, 8)),
        ("symmetric quantization (sym: true)", scheme is not None and scheme.symmetric is not True),
        ("desc_act stated in quantization_config", scheme is not None and scheme.act_order is None),
        (f"a group size of {', '.join(str(g) for g in _MARLIN_GROUPS[1:])} or -1",
         scheme is not None and scheme.group_size not in _MARLIN_GROUPS),
    ) if missing]
    asked = _v(seen, "quantization") == "gptq"
    why = ("--quantization gptq asks for the plain GPTQ kernels by name" if asked and not lacks
           else "Marlin needs " + "; ".join(lacks or ["what this checkpoint does not state"]))
    return (f"SGLang {version} runs GPTQ on CUDA only through the Marlin kernels (gptq_marlin; plain gptq is registered "
            f"only off CUDA from 0.5.20): {why}. "
            + ("Leave --quantization out, or pass gptq_marlin. " if asked and not lacks else "")
            + "SGLang 0.5.19 and earlier still run plain GPTQ.")


def _quant_mismatch(values: Values) -> tuple[str, str] | None:
    """(the checkpoint's quant_method, the flag's) where SGLang refuses the pair; None where it takes it or
    this does not know."""
    declared, flag = values.get(_CHECKPOINT_QUANT), _v(values, "quantization")
    if declared not in _QUANT_MISMATCH_FORMATS or flag in (None, "unquant"):
        return None
    flag, version = str(flag).lower(), Version(values[_VERSION])
    taken = {name for since, until, fmt, names in _QUANT_TAKEN
             if fmt == declared and Version(since) <= version <= Version(until) for name in names}
    taken |= _quant_overrides(values, str(declared))
    return None if flag == declared or flag in taken else (str(declared), flag)


# configs/moe_model_registry.py _DEEPEP_V2_MODELS (0.5.21-0.5.23; external packages may register more)
_DEEPEP_V2_COMMON = ("DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM", "Qwen3MoeForCausalLM",
                     "Glm5NextForConditionalGeneration")
_DEEPEP_V2: _ArchList = (
    ("0.5.21", "0.5.21", _DEEPEP_V2_COMMON),
    ("0.5.22", "0.5.23", (*_DEEPEP_V2_COMMON, "GlmMoeDsaForCausalLM", "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM")),
)


def _flashinfer_a2a_topology_refused(values: Values) -> bool:
    # moe_hook.py _flashinfer_a2a_topology_is_supported: attention DP over the whole TP group, or Muse Spark's
    # prefill sequence parallelism at TP4/EP4 or TP8/EP8 (the A2A sets ep_size to tp_size)
    tp, attn_dp = _int(values, *_TP), _int(values, "attn_dp_size")
    if _attn_dp_enabled(values) and attn_dp == tp:
        return False
    muse = _archs(values)[:1] == ("MuseSparkForConditionalGeneration",) and bool(_v(values, "enable_layernorm_sp")) \
        and not _v(values, "enable_dp_attention") and attn_dp == 1 and tp in (4, 8)
    return not muse and bool(_archs(values))


def _cutedsl_moe_quantizations(version: str) -> tuple[str, ...]:
    # server_args.py _handle_moe_kernel_config (0.5.11-0.5.18), arg_groups/moe_hook.py handle_moe_kernel_config
    key = Version(version)
    return ("modelopt_fp4",) + (("modelopt_mixed",) if key >= Version("0.5.16") else ()) \
        + (("nvfp4_online",) if key >= Version("0.5.18") else ())


def _cutedsl_moe_refused(values: Values) -> bool:
    quant = _quantization(values)
    return _v(values, "moe_runner_backend") == "flashinfer_cutedsl" and quant != "?" \
        and quant not in _cutedsl_moe_quantizations(values[_VERSION])


_CUTEDSL_MOE_TAIL = (  # what the message lists after the quantization, by release
    ("0.5.11", "0.5.14", "'modelopt_fp4'."),
    ("0.5.15", "0.5.15.post1", "'modelopt_fp4' or hybrid NVFP4 models."),
    ("0.5.16", "0.5.17", "'modelopt_fp4', 'modelopt_mixed' (with NVFP4 MoE layers), or hybrid NVFP4 models."),
    ("0.5.18", "0.5.23", "'modelopt_fp4', 'modelopt_mixed' (with NVFP4 MoE layers), 'nvfp4_online', or hybrid NVFP4 "
                         "models."),
)


def _cutedsl_moe_message(values: Values) -> str:
    version = Version(values[_VERSION])
    tail = next(t for since, until, t in _CUTEDSL_MOE_TAIL if Version(since) <= version <= Version(until))
    return f"AssertionError: Invalid quantization '{_quantization(values)}'. \nFlashInfer CuteDSL MOE currently supports " \
           f"only: {tail}"


def _draft_a2a(values: Values) -> str | None:
    # moe_hook.py validate_deepep_v2_speculative_draft: the draft's A2A backend, else the target's (not for NGRAM)
    draft = _v(values, "speculative_moe_a2a_backend")
    if draft is None and _v(values, "speculative_algorithm") and str(_v(values, "speculative_algorithm")).upper() != "NGRAM":
        return _v(values, "moe_a2a_backend")
    return draft


CHECKS: tuple[ArgCheck, ...] = (
    ArgCheck("log-level", "prepare_server_args", "0.5.11", "0.5.23",
             lambda v: not _log_level_known(v),
             lambda v: f"AttributeError: module 'logging' has no attribute '{str(_v(v, 'log_level')).upper()}'"),
    # from here on in the order of 0.5.23's arg_groups/pipeline.py run_resolution_pipeline
    # handle_mega_moe runs first (handle_moe_runner_backend_alias: --moe-runner-backend megamoe is
    # --moe-a2a-backend megamoe); the overlap flags are refused before the GPU (another text)
    ArgCheck("megamoe-gpu", "arg_groups/mega_moe_hook.py check_mega_moe_compat", "0.5.21", "0.5.23",
             lambda v: "megamoe" in (_v(v, "moe_a2a_backend"), _v(v, "moe_runner_backend"))
             and not (_v(v, "enable_two_batch_overlap") or _v(v, "enable_single_batch_overlap"))
             and _gpu_outside(v, _SM90, _SM100),
             lambda v: "ValueError: --moe-a2a-backend megamoe needs a CUDA SM90 GPU (block-FP8 experts) or an SM100-class "
                       "GPU (MXFP4 / NVFP4 experts); it runs DeepGEMM kernels over CUDA symmetric memory. On ROCm, set "
                       "SGLANG_AMD_USE_FLYDSL_MEGA_MOE=1 to select aiter MegaMoEv2 instead."),
    ArgCheck("aux-hidden-layer-ids-alone", "arg_groups/validation_hook.py handle_aux_hidden_state_capture", "0.5.23", "0.5.23",
             lambda v: not _v(v, "enable_return_aux_hidden_states") and _v(v, "return_aux_hidden_state_layer_ids") is not None,
             lambda v: "ValueError: --return-aux-hidden-state-layer-ids requires --enable-return-aux-hidden-states."),
    ArgCheck("aux-hidden-needs-capture-method", "arg_groups/validation_hook.py handle_aux_hidden_state_capture",
             "0.5.23", "0.5.23",
             lambda v: bool(_v(v, "enable_return_aux_hidden_states"))
             and str(_v(v, "speculative_algorithm", "")).upper() not in ("EAGLE3", "DFLASH", "DSPARK"),
             lambda v: "ValueError: --enable-return-aux-hidden-states needs --speculative-algorithm EAGLE3, DFLASH or DSPARK to "
                       f"name the capture convention, got {_v(v, 'speculative_algorithm')!r}."),
    ArgCheck("ssl-keyfile-alone", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: bool(_v(v, "ssl_keyfile")) and not _v(v, "ssl_certfile"),
             lambda v: "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."),
    ArgCheck("ssl-certfile-alone", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: bool(_v(v, "ssl_certfile")) and not _v(v, "ssl_keyfile"),
             lambda v: "ValueError: --ssl-certfile requires --ssl-keyfile to be specified as well."),
    ArgCheck("ssl-ca-certs-alone", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: not _v(v, "ssl_certfile") and not _v(v, "ssl_keyfile") and bool(_v(v, "ssl_ca_certs")),
             lambda v: "ValueError: --ssl-ca-certs has no effect without --ssl-certfile and --ssl-keyfile."),
    ArgCheck("ssl-keyfile-password-alone", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: not _v(v, "ssl_certfile") and not _v(v, "ssl_keyfile") and bool(_v(v, "ssl_keyfile_password")),
             lambda v: "ValueError: --ssl-keyfile-password has no effect without --ssl-certfile and --ssl-keyfile."),
    ArgCheck("ssl-refresh-without-files", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: bool(_v(v, "enable_ssl_refresh")) and not (_v(v, "ssl_certfile") and _v(v, "ssl_keyfile")),
             lambda v: "ValueError: --enable-ssl-refresh requires --ssl-certfile and --ssl-keyfile to be specified."),
    ArgCheck("http-worker-reuseport", "arg_groups/serving_hook.py handle_ssl_validation", "0.5.23", "0.5.23",
             lambda v: bool(_v(v, "enable_http_worker_reuseport"))
             and (_int(v, "tokenizer_worker_num") == 1 or bool(_v(v, "enable_http2"))),
             lambda v: "ValueError: --enable-http-worker-reuseport requires --tokenizer-worker-num > 1 and has no effect with "
                       "--enable-http2."),
    ArgCheck("sidecar-needs-grpc-port", "arg_groups/serving_hook.py handle_deprecated_args", "0.5.16", "0.5.23",
             lambda v: bool(str(_v(v, "sidecar", "")).strip()) and not _v(v, "smg_grpc_mode") and not _v(v, "grpc_mode")
             and _v(v, "grpc_port") is None,
             lambda v: "ValueError: --sidecar requires --grpc-port or SGLANG_GRPC_PORT."),
    ArgCheck("model-config-parser-known", "configs/model_config_parser_registry.py get_model_config_parser",
             "0.5.12", "0.5.23",
             lambda v: _v(v, "model_config_parser", "auto") not in ("auto", *_MODEL_CONFIG_PARSERS),
             lambda v: f"ValueError: Unknown model-config parser {_v(v, 'model_config_parser')!r}. "
                       f"Registered: {sorted(_MODEL_CONFIG_PARSERS)}"),
    ArgCheck("prefill-only-no-kv-needs-embedding", "arg_groups/kv_cache_hook.py validate_prefill_only_disable_kv_cache_args",
             "0.5.12", "0.5.23",
             lambda v: bool(_v(v, "prefill_only_disable_kv_cache")) and not _v(v, "is_embedding"),
             lambda v: "ValueError: --prefill-only-disable-kv-cache currently requires --is-embedding. Other prefill-only "
                       "workloads may be supported in a future change once their attention paths stop reading or writing "
                       "the paged KV cache."),
    ArgCheck("dcp-comm-backend-needs-dcp", "arg_groups/parallel_hook.py handle_decode_context_parallelism", "0.5.17", "0.5.23",
             lambda v: _v(v, "dcp_comm_backend") in ("a2a", "fi_a2a") and _int(v, "dcp_size") <= 1,
             lambda v: f"ValueError: --dcp-comm-backend {_v(v, 'dcp_comm_backend')} only affects the decode context-parallel "
                       "attention reduction and therefore requires --dcp-size / --decode-context-parallel-size > 1, but got "
                       f"dcp_size={_int(v, 'dcp_size')}."),
    ArgCheck("dcp-replicate-q-proj-needs-dcp", "arg_groups/parallel_hook.py handle_decode_context_parallelism",
             "0.5.17", "0.5.23",
             lambda v: bool(_v(v, "dcp_replicate_q_proj")) and _int(v, "dcp_size") <= 1,
             lambda v: "ValueError: --dcp-replicate-q-proj requires --dcp-size > 1."),
    ArgCheck("dwdp-equals-tp", "arg_groups/parallel_hook.py handle_dwdp", "0.5.17", "0.5.23",
             lambda v: _int(v, "dwdp_size") >= 2 and _int(v, "dwdp_size") != _int(v, *_TP),
             lambda v: f"AssertionError: dwdp_size ({_int(v, 'dwdp_size')}) must equal tp_size ({_int(v, *_TP)})"),
    # the model adjustments start by loading ModelConfig: _validate_quantize_and_serve_config, then
    # _verify_quantization, which checks the registry
    ArgCheck("quantize-and-serve", "configs/model_config.py ModelConfig._validate_quantize_and_serve_config",
             "0.5.5", "0.5.23",
             lambda v: bool(_v(v, "quantize_and_serve")), _quantize_and_serve_message),
    ArgCheck("quantization-matches-checkpoint", "configs/model_config.py ModelConfig._verify_quantization", "0.5.3",
             "0.5.23", lambda v: _quant_mismatch(v) is not None,
             lambda v: "ValueError: Quantization method specified in the model config ({}) does not match the "
                       "quantization method specified in the `quantization` argument ({}).".format(*_quant_mismatch(v))),
    ArgCheck("quantization-registered", "configs/model_config.py ModelConfig._verify_quantization", "0.5.5", "0.5.23",
             _quantization_unknown,
             lambda v: f"ValueError: Unknown quantization method: {_verified_quantization(v)}. Must be one of "
                       f"{list(_arch_list(v, _QUANTIZATION_METHODS) or ())}."),
    ArgCheck("dsa-prefill-context-parallel", "_handle_model_specific_adjustments", "0.5.7", "0.5.13",
             lambda v: _dsa_prefill_cp_refusal(v) is not None, lambda v: str(_dsa_prefill_cp_refusal(v))),
    ArgCheck("dsa-cache-layer-split-architectures", "arg_groups/model_hook.py handle_model_specific_adjustments",
             "0.5.16", "0.5.23",
             lambda v: bool(_v(v, "enable_dsa_cache_layer_split")) and _first_arch_outside(v, _DSA),
             lambda v: "ValueError: --enable-dsa-cache-layer-split is only supported for DSA (DeepSeek Sparse Attention) "
                       "models."),
    ArgCheck("cp-decode-attn-tp-architectures", "arg_groups/model_hook.py handle_model_specific_adjustments",
             "0.5.17", "0.5.23",
             lambda v: bool(_v(v, "enable_cp_decode_attn_tp")) and _first_arch_outside(v, _CP_DECODE_ATTN_TP),
             lambda v: "ValueError: --enable-cp-decode-attn-tp is only supported for models whose attention linears are "
                       f"replicated across CP ranks (attn_tp_size=1). Got {_archs(v)[0]}; supported: "
                       f"{sorted(_arch_list(v, _CP_DECODE_ATTN_TP) or ())}."),
    ArgCheck("gpt-oss-attention-backends", "arg_groups/model_hook.py handle_model_specific_adjustments",
             "0.5.1", "0.5.23", _gpt_oss_backends_refused,
             lambda v: f"AssertionError: GptOssForCausalLM requires one of {list(_arch_list(v, _GPT_OSS_BACKENDS) or ())} "
                       "attention backend, but got the following backends\n"
                       f"- Prefill: {_gpt_oss_backends(v)[0]}\n- Decode: {_gpt_oss_backends(v)[1]}\n"),
    ArgCheck("llama4-attention-backend", "arg_groups/model_hook.py handle_model_specific_adjustments", "0.5.3", "0.5.23",
             _llama4_backend_refused, _llama4_backend_message),
    ArgCheck("gemma4-attention-backends", "arg_groups/model_hook.py handle_model_specific_adjustments", "0.5.13", "0.5.23",
             _gemma4_backend_refused, _gemma4_backend_message),
    ArgCheck("prefill-kv-dequant-needs-nvfp4", "arg_groups/kv_cache_hook.py handle_nvfp4_prefill_kv_dequant_dtype",
             "0.5.21", "0.5.23",
             lambda v: _v(v, "kv_cache_dtype", "auto") != "nvfp4" and _v(v, "prefill_kv_cache_dequant_dtype", "auto") != "auto",
             lambda v: "ValueError: --prefill-kv-cache-dequant-dtype applies only with --kv-cache-dtype=nvfp4."),
    # _handle_deterministic_inference (server_args.py through 0.5.18; arg_groups/overrides.py
    # _deterministic_attention_backend after), just before the attention backends' compatibility
    ArgCheck("deterministic-attention-backend", "arg_groups/overrides.py _deterministic_attention_backend",
             "0.5.4", "0.5.23", _deterministic_backend_refused,
             lambda v: f"ValueError: Currently only {list(_arch_list(v, _DETERMINISTIC_BACKENDS) or ())} attention backends "
                       "are supported for deterministic inference, but you explicitly specified "
                       f"'{_v(v, 'attention_backend')}'."),
    # handle_attention_backend_compatibility (server_args.py _handle_attention_backend_compatibility through
    # 0.5.18): TRT-LLM MLA, CuTe DSL MLA, then TRT-LLM MHA prefill and decode
    ArgCheck("trtllm-mla-blackwell-0.5.8", "_handle_attention_backend_compatibility", "0.5.8", "0.5.8.post1",
             lambda v: "trtllm_mla" in (_v(v, "attention_backend"), _v(v, "decode_attention_backend"))
             and _gpu_outside(v, _BLACKWELL),
             lambda v: "ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs (SM100). Please use a different "
                       "backend."),
    ArgCheck("trtllm-mla-blackwell", "arg_groups/overrides.py _mla_kv_cache_dtype_checks", "0.5.9", "0.5.23",
             lambda v: "trtllm_mla" in (_attn(v, "attention_backend"), _attn(v, "decode_attention_backend"))
             and _gpu_outside(v, _BLACKWELL),
             lambda v: "ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use a "
                       "different backend."),
    ArgCheck("tokenspeed-mla-blackwell", "arg_groups/overrides.py _mla_kv_cache_dtype_checks", "0.5.12", "0.5.22",
             lambda v: "tokenspeed_mla" in (_v(v, "attention_backend"), _v(v, "decode_attention_backend"))
             and _gpu_outside(v, _BLACKWELL),
             lambda v: "ValueError: tokenspeed_mla backend is only supported on Blackwell GPUs (SM100/SM12x)."),
    ArgCheck("cutedsl-mla-decode-only", "arg_groups/overrides.py _cutedsl_prefill_backend_fill", "0.5.13", "0.5.23",
             lambda v: _attn(v, "prefill_attention_backend") == "cutedsl_mla",
             lambda v: "AssertionError: CuteDSL MLA only supports decoding for now"),
    ArgCheck("cutedsl-mla-sm100", "arg_groups/overrides.py _cutedsl_prefill_backend_fill", "0.5.13", "0.5.23",
             lambda v: _any_attn(v, "cutedsl_mla") and _gpu_outside(v, _SM100),
             lambda v: "ValueError: CuteDSL MLA backend is only supported on Blackwell GPUs (SM100). Please use a different "
                       "backend."),
    ArgCheck("trtllm-mha-sm100", "_handle_attention_backend_compatibility", "0.5.1", "0.5.9",
             lambda v: _any_attn(v, "trtllm_mha") and _gpu_outside(v, _SM100),
             lambda v: "ValueError: TRTLLM MHA backend is only supported on Blackwell GPUs (SM100). Please use a different "
                       "backend."),
    ArgCheck("trtllm-mha-prefill-sm100", "_handle_attention_backend_compatibility", "0.5.10", "0.5.18",
             lambda v: _prefill_attn(v) == "trtllm_mha" and _gpu_outside(v, _SM100),
             lambda v: "ValueError: TRTLLM MHA backend for prefill is only supported on Blackwell GPUs (SM100). Please use "
                       "a different prefill backend."),
    ArgCheck("trtllm-mha-prefill", "arg_groups/attention_hook.py handle_attention_backend_compatibility", "0.5.19", "0.5.23",
             lambda v: _prefill_attn(v) == "trtllm_mha" and _gpu_outside(v, _SM90, _SM100, _SM120),
             lambda v: "ValueError: TRTLLM MHA backend for prefill requires Hopper (SM90), Blackwell (SM100), or SM120 GPUs. "
                       "Please use a different prefill backend."),
    ArgCheck("trtllm-mha-decode", "arg_groups/attention_hook.py handle_attention_backend_compatibility", "0.5.10", "0.5.23",
             lambda v: _decode_attn(v) == "trtllm_mha" and _gpu_outside(v, _SM90, _SM100, _SM120),
             lambda v: "ValueError: TRTLLM MHA backend for decode is only supported on Hopper (SM90), Blackwell (SM100) and "
                       "(SM120) GPUs. Please use a different decode backend."),
    # the same function's last check (0.5.11-0.5.19), after its FA3, aiter and XPU notes
    ArgCheck("intel-xpu-mla-decode-only", "arg_groups/attention_hook.py handle_attention_backend_compatibility",
             "0.5.11", "0.5.19", lambda v: bool(v.get(_MLA)) and _prefill_attn(v) == "intel_xpu",
             lambda v: "ValueError: intel_xpu backend is only supported on decode for MLA models, please set "
                       "--decode-attention-backend to intel_xpu and do not set --attention-backend or "
                       "--prefill-attention-backend to intel_xpu for prefill instead use triton."),
    ArgCheck("mamba-stochastic-rounding-fp16", "arg_groups/mamba_hook.py handle_mamba_backend", "0.5.15", "0.5.23",
             lambda v: bool(_v(v, "enable_mamba_cache_stochastic_rounding")) and _v(v, "mamba_ssm_dtype") != "float16",
             lambda v: "ValueError: Stochastic rounding for the Mamba SSM cache requires --mamba-ssm-dtype float16, got "
                       f"{_v(v, 'mamba_ssm_dtype')!r}. Run with --mamba-ssm-dtype float16 or disable "
                       "--enable-mamba-cache-stochastic-rounding."),
    ArgCheck("linear-attn-decode-not-flashkda", "arg_groups/attention_hook.py handle_linear_attn_backend", "0.5.15", "0.5.23",
             # server_args.py _handle_linear_attn_backend through 0.5.18; an explicit choice only (an inherited
             # --linear-attn-backend flashkda falls back to triton for decode)
             lambda v: _v(v, "linear_attn_decode_backend") == "flashkda",
             lambda v: "ValueError: --linear-attn-decode-backend flashkda is not supported: FlashKDA is prefill-only. Use "
                       "--linear-attn-prefill-backend flashkda (decode stays on triton)."),
    # the same function's ReplaySSM guard, on the decode backend left after the flashkda fallback (not modelled:
    # SM100+ with a bfloat16 mamba state defaults decode to flashinfer there)
    ArgCheck("linear-replayssm-needs-triton-decode", "_handle_linear_attn_backend", "0.5.15", "0.5.17",
             lambda v: bool(_v(v, "enable_linear_replayssm")) and _linear_decode_backend(v) != "triton",
             lambda v: "ValueError: --enable-linear-replayssm requires the Triton linear-attn decode backend, got "
                       f"--linear-attn-decode-backend={_linear_decode_backend(v)!r}."),
    ArgCheck("linear-replayssm-needs-triton-or-helion-decode", "arg_groups/attention_hook.py handle_linear_attn_backend",
             "0.5.18", "0.5.23",
             lambda v: bool(_v(v, "enable_linear_replayssm")) and _linear_decode_backend(v) not in ("triton", "helion"),
             lambda v: "ValueError: --enable-linear-replayssm requires Triton, or Helion for KDA, as the linear-attn decode "
                       f"backend; got --linear-attn-decode-backend={_linear_decode_backend(v)!r}."),
    ArgCheck("nvfp4-kv-sm100-or-sm120", "arg_groups/kv_cache_hook.py handle_kv4_compatibility", "0.5.16", "0.5.23",
             lambda v: _v(v, "kv_cache_dtype") == "nvfp4" and _gpu_outside(v, _SM100, _SM120),
             lambda v: "RuntimeError: --kv-cache-dtype=nvfp4 requires Blackwell SM100 or SM120. Use "
                       "--kv-cache-dtype=fp4_mx_block16 for the block-size-16 FP4 recipe."),
    ArgCheck("kv4-attention-backend", "arg_groups/kv_cache_hook.py handle_kv4_compatibility", "0.5.7", "0.5.23",
             lambda v: _kv4_refusal(v) is not None, lambda v: _kv4_refusal(v) or ""),
    ArgCheck("mxfp8-kv-blackwell", "arg_groups/kv_cache_hook.py handle_mxfp8_kv_cache_compatibility", "0.5.16", "0.5.23",
             lambda v: _v(v, "kv_cache_dtype") == "mxfp8" and _gpu_outside(v, _BLACKWELL),
             lambda v: "ValueError: --kv-cache-dtype mxfp8 requires an SM100+ (Blackwell) GPU for the block-scaled operands "
                       "used by the FA4 MXFP8 attention path."),
    # server_args.py _handle_multi_item_scoring (0.5.11; arg_groups/attention_hook.py in 0.5.23), after the kernel
    # backends are set: multi-item scoring's custom attention mask is flashinfer's, in both phases
    ArgCheck("mis-needs-flashinfer", "arg_groups/attention_hook.py handle_multi_item_scoring", "0.5.11", "0.5.23",
             _mis_refused,
             lambda v: "AssertionError: Multi-item scoring requires flashinfer attention backend for custom attention mask "
                       "support. Please set --attention-backend flashinfer when using --enable-mis. Current backends: "
                       "prefill={}, decode={}".format(*_resolved_attention(v)[1:])),
    ArgCheck("linker-mla-dedup-needs-mooncake", "arg_groups/hicache_hook.py handle_hicache", "0.5.21", "0.5.23",
             lambda v: bool(_v(v, "enable_linker_mla_dedup")) and (
                 not _v(v, "enable_unified_cache_external_linker")
                 or _v(v, "unified_cache_external_linker_backend", "mooncake") != "mooncake"),
             lambda v: "ValueError: --enable-linker-mla-dedup requires the Mooncake linker."),
    # the same function's checks of the external linker itself (a held-back sample against 0.5.23's parser)
    ArgCheck("linker-needs-radix", "arg_groups/hicache_hook.py handle_hicache", "0.5.23", "0.5.23",
             lambda v: bool(_v(v, "enable_unified_cache_external_linker"))
             and (bool(_v(v, "disable_radix_cache")) or _v(v, "radix_cache_backend") is not None),
             lambda v: "ValueError: --enable-unified-cache-external-linker requires the default UnifiedRadixCache with "
                       "radix caching enabled."),
    ArgCheck("linker-not-with-hicache", "arg_groups/hicache_hook.py handle_hicache", "0.5.20", "0.5.23",
             lambda v: bool(_v(v, "enable_unified_cache_external_linker")) and bool(_v(v, "enable_hierarchical_cache")),
             lambda v: "ValueError: --enable-unified-cache-external-linker and --enable-hierarchical-cache are mutually "
                       "exclusive."),
    ArgCheck("linker-no-hicache-storage", "arg_groups/hicache_hook.py handle_hicache", "0.5.20", "0.5.23",
             lambda v: bool(_v(v, "enable_unified_cache_external_linker")) and _v(v, "hicache_storage_backend") is not None,
             lambda v: "ValueError: --enable-unified-cache-external-linker does not use --hicache-storage-backend."),
    # _handle_data_parallelism (arg_groups/parallel_hook.py handle_data_parallelism from 0.5.19): a bare
    # `assert tp_size % dp_size == 0` under DP attention; from 0.5.22 on the attention-DP groups, after the check
    # that they do not come with replicas
    ArgCheck("dp-attention-divides-tp", "_handle_data_parallelism", "0.4.4.post1", "0.5.21",
             lambda v: bool(_v(v, "enable_dp_attention")) and _int(v, "dp_size") > 1
             and _int(v, *_TP) % _int(v, "dp_size") != 0,
             lambda v: "AssertionError: ", asserts="tp_size % dp_size == 0 under DP attention"),
    ArgCheck("attn-dp-positive", "arg_groups/parallel_hook.py handle_data_parallelism", "0.5.22", "0.5.23",
             lambda v: _int(v, "attn_dp_size") < 1,
             lambda v: f"ValueError: --attn-dp-size must be positive (got {_int(v, 'attn_dp_size')})."),
    ArgCheck("attn-dp-no-replicas", "arg_groups/parallel_hook.py handle_data_parallelism", "0.5.22", "0.5.23",
             lambda v: _int(v, "attn_dp_size") > 1 and _int(v, "dp_size") > 1,
             lambda v: f"ValueError: --dp-size {_int(v, 'dp_size')} with --attn-dp-size {_int(v, 'attn_dp_size')}: "
                       "data-parallel replicas combined with attention data parallelism are not supported."),
    ArgCheck("attn-dp-divides-tp", "arg_groups/parallel_hook.py handle_data_parallelism", "0.5.22", "0.5.23",
             lambda v: attention_dp_groups(v)[0] > 1 and _int(v, *_TP) % attention_dp_groups(v)[0] != 0,
             lambda v: "AssertionError: ", asserts="tp_size % attn_dp_size == 0"),
    ArgCheck("tp-lm-head-a2a-needs-dp-attention", "arg_groups/overrides.py _dp_lm_head_validation", "0.5.18", "0.5.21",
             lambda v: bool(_v(v, "enable_tp_lm_head_all_to_all")) and not _v(v, "enable_dp_attention"),
             lambda v: "AssertionError: Please enable dp attention when setting enable_tp_lm_head_all_to_all."),
    ArgCheck("tp-lm-head-a2a-needs-attn-dp", "arg_groups/overrides.py _dp_lm_head_validation", "0.5.22", "0.5.23",
             lambda v: bool(_v(v, "enable_tp_lm_head_all_to_all")) and not _attn_dp_enabled(v),
             lambda v: "AssertionError: --enable-tp-lm-head-all-to-all requires attention DP (--attn-dp-size)."),
    ArgCheck("prefill-cp-needs-strategy", "arg_groups/parallel_hook.py handle_context_parallelism", "0.5.14", "0.5.23",
             lambda v: bool(_v(v, "enable_prefill_cp")) and _v(v, "cp_strategy") is None,
             lambda v: "ValueError: --cp-strategy must be set when --enable-prefill-cp is enabled."),
    # both legacy prefill-CP flags (--enable-dsa- / --enable-nsa-prefill-context-parallel share a dest);
    # 0.5.14-0.5.18's legacy conversion returns early on the pair, so this check still sees both
    ArgCheck("prefill-cp-legacy-flags-exclusive", "_handle_context_parallelism", "0.5.13", "0.5.18",
             lambda v: bool(_v(v, "enable_prefill_context_parallel")) and bool(_v(v, "enable_dsa_prefill_context_parallel")),
             lambda v: "ValueError: --enable-prefill-context-parallel and --enable-nsa-prefill-context-parallel are mutually "
                       "exclusive. Use --enable-nsa-prefill-context-parallel for DeepSeek V3.2 (NSA) models and "
                       "--enable-prefill-context-parallel for MLA-based models (DeepSeek V3/R1, Kimi K2.5) or "
                       "MHA/GQA-based models."),
    # before the divisibility below: _boundary_parallelism_overrides reads the model_type (nemotron_h,
    # nemotron_h_puzzle), which these architectures carry
    ArgCheck("nemotron-h-no-attn-cp", "arg_groups/parallel_hook.py handle_context_parallelism", "0.5.21", "0.5.23",
             lambda v: _arch(v) in ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM") and _int(v, *_ATTN_CP) > 1,
             lambda v: "ValueError: Nemotron-H does not support --attn-cp-size > 1"),
    ArgCheck("attn-cp-divides-tp", "_handle_context_parallelism", "0.5.9", "0.5.23",
             lambda v: _int(v, *_ATTN_CP) > 1 and _int(v, *_TP) % _int(v, *_ATTN_CP) != 0,
             lambda v: "AssertionError: tp_size must be divisible by attn_cp_size"),
    # the same handler's second assert: with --dp-size as given up to 0.5.21; from 0.5.22 with the attention-DP groups
    # (--attn-dp-size, or --dp-size under the deprecated --enable-dp-attention). An MLA or DSA model's prefill CP
    # resolves its own attn_dp_size and attn_cp_size first (arg_groups/model_overrides/deepseek_v2.py), not modelled.
    ArgCheck("attn-cp-dp-divides-tp", "_handle_context_parallelism", "0.5.9", "0.5.21",
             lambda v: _int(v, *_ATTN_CP) > 1 and _int(v, *_TP) % (_int(v, "dp_size") * _int(v, *_ATTN_CP)) != 0,
             lambda v: "AssertionError: tp_size must be divisible by dp_size * attn_cp_size"),
    ArgCheck("attn-cp-attn-dp-divides-tp", "arg_groups/parallel_hook.py handle_context_parallelism", "0.5.22", "0.5.23",
             lambda v: _int(v, *_ATTN_CP) > 1 and not (_v(v, "enable_prefill_cp") and (v.get(_MLA) or v.get(_DSA_MODEL)))
             and _int(v, *_TP) % (attention_dp_groups(v)[0] * _int(v, *_ATTN_CP)) != 0,
             lambda v: "AssertionError: tp_size must be divisible by attn_dp_size * attn_cp_size"),
    ArgCheck("moe-dp-divides-tp", "_handle_context_parallelism", "0.5.9", "0.5.23",
             lambda v: _int(v, *_MOE_DP) > 1 and _int(v, *_TP) % _int(v, *_MOE_DP) != 0,
             lambda v: "AssertionError: tp_size must be divisible by moe_dp_size"),
    ArgCheck("attn-cp-no-pp", "_handle_context_parallelism", "0.5.9", "0.5.9",  # (0.5.10 dropped it)
             lambda v: _int(v, *_ATTN_CP) > 1 and _int(v, "pp_size") > 1,
             lambda v: "AssertionError: PP is not supported with context parallelism"),
    # the rest of the same handler's MoE-DP block (ep_size as given: only an MLA or DSA prefill CP resolves it first),
    # and the check after it (0.5.11 on)
    ArgCheck("moe-dp-ep-within-tp", "_handle_context_parallelism", "0.5.9", "0.5.23",
             lambda v: _int(v, *_MOE_DP) > 1 and _int(v, *_EP) * _int(v, *_MOE_DP) > _int(v, *_TP),
             lambda v: "AssertionError: ep_size * moe_dp_size must be less than or equal to tp_size"),
    ArgCheck("moe-dp-no-pp", "_handle_context_parallelism", "0.5.9", "0.5.23",
             lambda v: _int(v, *_MOE_DP) > 1 and _int(v, "pp_size") > 1,
             lambda v: "AssertionError: PP is not supported with context parallelism"),
    ArgCheck("moe-dp-ep-fills-tp", "_handle_context_parallelism", "0.5.9", "0.5.23",
             lambda v: _int(v, *_MOE_DP) > 1 and _int(v, *_EP) > 1 and _int(v, *_EP) * _int(v, *_MOE_DP) != _int(v, *_TP),
             lambda v: "AssertionError: ep_size * moe_dp_size must be equal to tp_size"),
    ArgCheck("attn-cp-moe-dp-match", "_handle_context_parallelism", "0.5.11", "0.5.23",
             lambda v: _int(v, *_MOE_DP) > 1 and _int(v, *_ATTN_CP) != _int(v, *_MOE_DP),
             lambda v: "AssertionError: attn_cp_size != moe_dp_size is only supported when moe_dp_size == 1"),
    ArgCheck("kv-cache-sharding-prefill-only", "arg_groups/kv_shard_hook.py handle_kv_cache_sharding", "0.5.22", "0.5.23",
             lambda v: bool(_v(v, "enable_kv_cache_sharding")) and _v(v, "disaggregation_mode") != "prefill",
             lambda v: "ValueError: --enable-kv-cache-sharding is only supported on PD prefill workers: a rank's pool holds "
                       "only its stripe of every cached page, which is incompatible with local decode."),
    # handle_moe_kernel_config (server_args.py _handle_moe_kernel_config through 0.5.18)
    ArgCheck("nvfp4-online-sm100", "arg_groups/overrides.py _moe_runner_backend_quant_constraints", "0.5.14", "0.5.23",
             # the flag as given: a checkpoint's own FP8 takes it (compatible_quantization_methods), and the check
             # reads server_args.quantization, not the reconciled model config's
             lambda v: str(_v(v, "quantization") or "").lower() == "nvfp4_online" and _gpu_outside(v, _SM100),
             lambda v: "ValueError: --quantization nvfp4_online is supported only on NVIDIA Blackwell SM100/SM103 GPUs."),
    ArgCheck("flashinfer-cutedsl-moe-quantization", "arg_groups/moe_hook.py handle_moe_kernel_config", "0.5.11", "0.5.23",
             _cutedsl_moe_refused, _cutedsl_moe_message),
    ArgCheck("flashinfer-a2a-runner", "_handle_a2a_moe", "0.5.9", "0.5.12.post1",
             lambda v: _v(v, "moe_a2a_backend") == "flashinfer" and _v(v, "moe_runner_backend", "auto") != "flashinfer_cutlass",
             lambda v: "AssertionError: Flashinfer MoE A2A is only supported with flashinfer_cutlass moe runner backend"),
    ArgCheck("flashinfer-a2a-dispatch-type", "arg_groups/moe_hook.py handle_a2a_moe", "0.5.20", "0.5.23",
             lambda v: _v(v, "moe_a2a_backend") != "flashinfer" and _v(v, "flashinfer_a2a_dispatch_type") not in (None, "auto"),
             lambda v: "ValueError: --flashinfer-a2a-dispatch-type requires --moe-a2a-backend flashinfer."),
    # handle_a2a_moe's DeepEP v2, FlashInfer and pplx branches
    ArgCheck("deepep-v2-architectures", "arg_groups/moe_hook.py validate_deepep_v2_model_architecture", "0.5.21", "0.5.23",
             lambda v: _v(v, "moe_a2a_backend") == "deepep_v2" and _first_arch_outside(v, _DEEPEP_V2),
             lambda v: f"ValueError: DeepEP v2 MoE is not validated for {_archs(v)[0]!r}. The model package must register "
                       "its architecture with register_deepep_v2_model, because its combine and post-expert reduction "
                       "semantics must be validated first."),
    ArgCheck("flashinfer-a2a-attn-dp", "arg_groups/moe_hook.py handle_a2a_moe", "0.5.23", "0.5.23",
             lambda v: _v(v, "moe_a2a_backend") == "flashinfer" and _flashinfer_a2a_topology_refused(v),
             lambda v: "AssertionError: Flashinfer MoE A2A requires --attn-dp-size equal to --tp-size, except for Muse "
                       "Spark TP4/EP4 or TP8/EP8 prefill sequence parallelism."),
    ArgCheck("pplx-needs-attn-dp", "arg_groups/moe_hook.py handle_a2a_moe", "0.5.22", "0.5.23",
             lambda v: _v(v, "moe_a2a_backend") == "pplx" and _int(v, "attn_dp_size") < 2,
             lambda v: "AssertionError: moe_a2a_backend='pplx' requires attention DP with at least 2 groups "
                       "(--attn-dp-size >= 2)."),
    ArgCheck("flashinfer-megamoe-architectures", "arg_groups/moe_hook.py validate_flashinfer_megamoe_model",
             "0.5.20", "0.5.23",
             lambda v: _v(v, "moe_a2a_backend") == "flashinfer_megamoe" and _no_arch_inside(v, _MEGAMOE),
             lambda v: f"ValueError: FlashInfer MegaMOE is not validated for model architectures {list(_archs(v))}. "
                       f"Supported architectures: {sorted(_arch_list(v, _MEGAMOE) or ())}."),
    ArgCheck("shared-experts-tp-divides-attn-tp", "arg_groups/parallel_hook.py handle_shared_experts_tp", "0.5.21", "0.5.23",
             lambda v: _v(v, "shared_experts_tp_size") is not None
             and (int(_v(v, "shared_experts_tp_size")) < 1 or _attn_tp(v) % int(_v(v, "shared_experts_tp_size")) != 0),
             lambda v: f"ValueError: --shared-experts-tp-size ({_v(v, 'shared_experts_tp_size')}) must be a positive divisor "
                       f"of attention TP size ({_attn_tp(v)})."),
    ArgCheck("ep-dispatch-rank-invariant", "arg_groups/parallel_hook.py handle_eplb_and_dispatch", "0.5.17", "0.5.23",
             lambda v: _v(v, "moe_a2a_backend", "none") == "none" and _v(v, "ep_dispatch_algorithm") in ("static", "lp"),
             lambda v: f"ValueError: --ep-dispatch-algorithm {_v(v, 'ep_dispatch_algorithm')} picks a different physical "
                       "replica per rank, which only holds up when an a2a backend routes each token to a single rank. Use "
                       "--ep-dispatch-algorithm dynamic with --moe-a2a-backend none."),
    ArgCheck("eplb-needs-ep", "_handle_eplb_and_dispatch", "0.4.10.post2", "0.5.15.post1",
             lambda v: bool(_v(v, "enable_eplb")) and _int(v, *_EP) <= 1,
             lambda v: "AssertionError: ", asserts="ep_size > 1 with --enable-eplb"),
    ArgCheck("eplb-needs-ep-resolved", "arg_groups/parallel_hook.py handle_eplb_and_dispatch", "0.5.16", "0.5.23",
             lambda v: bool(_v(v, "enable_eplb")) and _v(v, "ep_join_mode") != "scale" and _int(v, *_EP) <= 1,
             lambda v: "AssertionError: ", asserts="ep_size > 1 with --enable-eplb"),
    ArgCheck("elastic-ep-rejoin-backend", "_handle_elastic_ep", "0.5.11", "0.5.15.post1",
             lambda v: bool(_v(v, "elastic_ep_rejoin")) and _v(v, "elastic_ep_backend") in (None, "none"),
             lambda v: "AssertionError: Elastic EP rejoin requires elastic_ep_backend to be set."),
    ArgCheck("elastic-ep-join-mode-backend", "arg_groups/parallel_hook.py handle_elastic_ep", "0.5.16", "0.5.23",
             lambda v: _join_mode(v) is not None and _v(v, "elastic_ep_backend") is None,
             lambda v: "AssertionError: --elastic-ep-join-mode requires --elastic-ep-backend to be set."),
    ArgCheck("elastic-ep-join-rank-offset-scale", "arg_groups/parallel_hook.py handle_elastic_ep", "0.5.16", "0.5.23",
             lambda v: int(_v(v, "ep_join_rank_offset", 0)) != 0 and _v(v, "ep_join_mode") != "scale",
             lambda v: "AssertionError: --elastic-ep-join-rank-offset is only valid with --elastic-ep-join-mode scale."),
    ArgCheck("max-ep-size-backend", "arg_groups/parallel_hook.py handle_elastic_ep", "0.5.16", "0.5.23",
             lambda v: _v(v, "max_ep_size") is not None and _v(v, "elastic_ep_backend") is None,
             lambda v: "AssertionError: --max-ep-size requires --elastic-ep-backend to be set."),
    ArgCheck("elastic-ep-initial-size-scaling", "arg_groups/parallel_hook.py handle_elastic_ep", "0.5.16", "0.5.23",
             lambda v: _v(v, "elastic_ep_initial_size") is not None and not (
                 _v(v, "elastic_ep_backend") is not None and _v(v, "max_ep_size") is not None
                 and int(_v(v, "max_ep_size")) > _int(v, *_TP)),
             lambda v: "AssertionError: --elastic-ep-initial-size is only valid for an Elastic EP deployment with "
                       "--max-ep-size larger than its local TP size."),
    ArgCheck("speculative-algorithm-known", "speculative/spec_info.py SpeculativeAlgorithm.from_string", "0.5.12", "0.5.23",
             lambda v: _v(v, "speculative_algorithm") is not None
             and str(_v(v, "speculative_algorithm")).upper() not in _SPEC_NAMES,
             lambda v: f"ValueError: Unknown speculative algorithm name: {str(_v(v, 'speculative_algorithm')).upper()}"),
    # the first check of _handle_speculative_decoding: the draft's MoE runner, speculative or not
    ArgCheck("spec-moe-runner-not-trtllm-0.5.9", "_handle_speculative_decoding", "0.5.7", "0.5.9",
             lambda v: _v(v, "speculative_moe_runner_backend") == "flashinfer_trtllm",
             lambda v: "AssertionError: Currently speculative MoE runner backend cannot be flashinfer_trtllm for risk in "
                       "some draft models."),
    ArgCheck("spec-moe-runner-not-trtllm", "_handle_speculative_decoding", "0.5.10", "0.5.11",
             lambda v: _v(v, "speculative_moe_runner_backend") == "flashinfer_trtllm",
             lambda v: "AssertionError: Currently speculative MoE runner backend doesn't support flashinfer_trtllm, please "
                       "use triton or auto backend for speculative moe runner instead."),
    ArgCheck("spec-skip-dp-mlp-sync", "_handle_speculative_decoding", "0.5.11", "0.5.22",
             lambda v: bool(_v(v, "speculative_skip_dp_mlp_sync")) and _spec_algorithm(v) != "EAGLE",
             lambda v: "AssertionError: --speculative-skip-dp-mlp-sync is only supported with speculative_algorithm == "
                       f"EAGLE, got {_spec_algorithm(v)}."),
    ArgCheck("block-verification-algorithms", "arg_groups/speculative_hook.py handle_speculative_decoding",
             "0.5.22", "0.5.23",
             lambda v: bool(_v(v, "speculative_use_block_verification"))
             and _spec_algorithm(v) not in ("EAGLE", "EAGLE3", "DFLASH", "DSPARK"),
             lambda v: "ValueError: --speculative-use-block-verification only supports EAGLE / EAGLE3 / NEXTN / DFLASH / "
                       "DSPARK."),
    ArgCheck("draft-sink-needs-window", "arg_groups/speculative_hook.py handle_speculative_decoding", "0.5.21", "0.5.23",
             lambda v: _v(v, "speculative_draft_sink_size") is not None and int(_v(v, "speculative_draft_sink_size")) >= 0
             and _v(v, "speculative_draft_window_size") is None,
             lambda v: "ValueError: --speculative-draft-sink-size requires --speculative-draft-window-size."),
    ArgCheck("megamoe-layernorm-sp-needs-sp", "arg_groups/layernorm_sp_hook.py handle_layernorm_sp", "0.5.23", "0.5.23",
             lambda v: bool(_v(v, "enable_megamoe_for_layernorm_sp")) and not _v(v, "enable_layernorm_sp"),
             lambda v: "ValueError: --enable-megamoe-for-layernorm-sp requires --enable-layernorm-sp."),
    ArgCheck("layernorm-sp-architectures", "arg_groups/layernorm_sp_hook.py validate_layernorm_sp", "0.5.19", "0.5.23",
             lambda v: bool(_v(v, "enable_layernorm_sp")) and _first_arch_outside(v, _LAYERNORM_SP)
             and not (_v(v, "enable_megamoe_for_layernorm_sp") and _archs(v)[0] != "MuseSparkForConditionalGeneration"),
             lambda v: f"ValueError: --enable-layernorm-sp is only supported for {sorted(_arch_list(v, _LAYERNORM_SP) or ())}; "
                       f"got {_archs(v)[0]}."),
    # handle_encoder_disaggregation (0.5.18 server_args.py _handle_encoder_disaggregation) calls it first,
    # after elastic EP and speculative decoding (a held-back sample against 0.5.21's parser showed the order)
    ArgCheck("language-model-only-architectures", "arg_groups/model_hook.py handle_language_model_only", "0.5.18", "0.5.23",
             lambda v: bool(_v(v, "language_model_only")) and _lmo_reaches_list(v) and _no_arch_inside(v, _LANGUAGE_MODEL_ONLY),
             lambda v: f"ValueError: --language-model-only does not support {list(_archs(v))}. "
                       f"Supported: {list(_arch_list(v, _LANGUAGE_MODEL_ONLY) or ())}."),
    ArgCheck("prefix-mm-cache-encoder-only", "_handle_encoder_disaggregation", "0.5.7", "0.5.23",
             lambda v: bool(_v(v, "enable_prefix_mm_cache")) and not _v(v, "encoder_only"),
             lambda v: "ValueError: --enable-prefix-mm-cache requires --encoder-only to be enabled"),
    # the same function's next two checks (0.5.7 server_args.py _handle_encoder_disaggregation, 0.5.23
    # arg_groups/pd_disaggregation_hook.py handle_encoder_disaggregation; found by a held-back sample against 0.5.17)
    ArgCheck("encoder-only-and-language-only", "_handle_encoder_disaggregation", "0.5.7", "0.5.23",
             lambda v: bool(_v(v, "encoder_only")) and bool(_v(v, "language_only")),
             lambda v: "ValueError: Cannot set --encoder-only and --language-only together"),
    ArgCheck("encoder-only-with-pd", "_handle_encoder_disaggregation", "0.5.7", "0.5.23",
             lambda v: bool(_v(v, "encoder_only")) and _v(v, "disaggregation_mode", "null") != "null",
             lambda v: "ValueError: Cannot set --encoder-only and --disaggregation-mode prefill/decode together"),
    ArgCheck("language-only-encoder-urls", "_handle_encoder_disaggregation", "0.5.7", "0.5.12.post1",
             lambda v: bool(_v(v, "language_only")) and not _v(v, "encoder_urls") and not _v(v, "encoder_only"),
             lambda v: "ValueError: requires at least one encoder urls to be set via --encoder-urls"),
    # then (after a mooncake transfer's IB devices, which need the machine) the model's architecture
    ArgCheck("encoder-disaggregation-architectures", "arg_groups/pd_disaggregation_hook.py handle_encoder_disaggregation",
             "0.5.10", "0.5.23",
             lambda v: bool(_v(v, "encoder_only") or _v(v, "language_only")) and _first_arch_outside(v, _ENCODER_DISAGGREGATION),
             lambda v: f"ValueError: Model type {_archs(v)[0]} is not supported for encoder disaggregation"
                       f"{(_arch_list(v, _ENCODER_DISAGGREGATION_TAIL) or ('',))[0]}"),
    ArgCheck("host-receive-threshold-range", "arg_groups/pd_disaggregation_hook.py handle_pd_disaggregation",
             "0.5.21", "0.5.23",
             lambda v: _v(v, "disaggregation_decode_host_receive_threshold") is not None
             and not 0 <= float(_v(v, "disaggregation_decode_host_receive_threshold")) <= 1,
             lambda v: "ValueError: --disaggregation-decode-host-receive-threshold must be between 0 and 1"),
    ArgCheck("host-receive-no-hisparse", "arg_groups/pd_disaggregation_hook.py handle_pd_disaggregation", "0.5.21", "0.5.23",
             lambda v: _host_receive_on(v) and bool(_v(v, "enable_hisparse") or _v(v, "enable_pd_role_switch")),
             lambda v: "ValueError: Decode host receive does not yet support HiSparse or role switching"),
    ArgCheck("host-receive-needs-host-pool", "arg_groups/pd_disaggregation_hook.py handle_pd_disaggregation",
             "0.5.21", "0.5.23",
             lambda v: _host_receive_on(v) and _v(v, "disaggregation_decode_retraction_backup") == "cpu_tensor",
             lambda v: "ValueError: Decode host KV buffering requires host_pool retraction"),
    # handle_environment_variables (server_args.py _handle_environment_variables through 0.5.19), just before the
    # cache checks: DeepSeek-V4's FP4 indexer needs DeepGEMM's FP4 kernels (gfx95 from 0.5.20: ROCm, not modelled)
    ArgCheck("fp4-indexer-sm100", "_handle_environment_variables", "0.5.13", "0.5.16",
             lambda v: bool(_v(v, "enable_deepseek_v4_fp4_indexer")) and _gpu_outside(v, _SM100),
             lambda v: "ValueError: --enable-deepseek-v4-fp4-indexer requires SM100 GPUs with DeepGEMM FP4 indexer support."),
    ArgCheck("fp4-indexer-sm100-sm120", "_handle_environment_variables", "0.5.17", "0.5.19",
             lambda v: bool(_v(v, "enable_deepseek_v4_fp4_indexer")) and _gpu_outside(v, _SM100, _SM120),
             lambda v: "ValueError: --enable-deepseek-v4-fp4-indexer requires SM100 or SM120 GPUs with DeepGEMM FP4 indexer "
                       "support."),
    ArgCheck("fp4-indexer-sm100-sm120-gfx95", "arg_groups/serving_hook.py handle_environment_variables", "0.5.20", "0.5.23",
             lambda v: bool(_v(v, "enable_deepseek_v4_fp4_indexer")) and _gpu_outside(v, _SM100, _SM120),
             lambda v: "ValueError: --enable-deepseek-v4-fp4-indexer requires SM100, SM120, or gfx95 GPUs with FP4 indexer "
                       "support."),
    ArgCheck("host-pool-retraction-decode-only", "arg_groups/kv_cache_hook.py handle_cache_compatibility",
             "0.5.18", "0.5.23",
             # pd_disaggregation_hook.py handle_pd_disaggregation: host receive (which picks host_pool) is on
             lambda v: (_v(v, "disaggregation_decode_retraction_backup") == "host_pool" or _host_receive_on(v))
             and _v(v, "disaggregation_mode") != "decode",
             lambda v: "ValueError: --disaggregation-decode-retraction-backup=host_pool is only supported on a PD decode "
                       "server."),
    ArgCheck("tlru-threshold-above-estimate", "arg_groups/kv_cache_hook.py handle_cache_compatibility", "0.5.21", "0.5.23",
             _tlru_refused,
             lambda v: "ValueError: --radix-eviction-policy tlru needs 'threshold' greater than 'next_prompt_estimate' in "
                       f"--radix-eviction-policy-config, got {_tlru_bounds(v)[0]} <= {_tlru_bounds(v)[1]}; otherwise no "
                       "tokens are ever TEL-safe and T-LRU is exactly LRU."),
    ArgCheck("session-radix-needs-priority", "_handle_cache_compatibility", "0.5.15", "0.5.16",
             # 0.5.17 moved the check to mem_cache/registry.py (at cache creation, another text)
             lambda v: bool(_v(v, "enable_session_radix_cache")) and _v(v, "radix_eviction_policy", "lru") != "priority",
             lambda v: "ValueError: --enable-session-radix-cache requires --radix-eviction-policy priority"),
    ArgCheck("hicache-without-radix", "_handle_cache_compatibility", "0.5.1", "0.5.23",
             lambda v: bool(_v(v, "enable_hierarchical_cache")) and bool(_v(v, "disable_radix_cache")),
             lambda v: "ValueError: The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive "
                       "and cannot be used at the same time. Please use only one of them."),
    ArgCheck("decode-offload-kvcache-mode", "_handle_cache_compatibility", "0.5.3", "0.5.23",
             lambda v: bool(_v(v, "disaggregation_decode_enable_offload_kvcache")) and _v(v, "disaggregation_mode") != "decode",
             lambda v: "ValueError: The argument disaggregation-decode-enable-offload-kvcache is only supported for decode side."),
    ArgCheck("page-major-kv-needs-unified-memory", "arg_groups/kv_cache_hook.py handle_page_major_kv_layout",
             "0.5.19", "0.5.23",
             lambda v: bool(_v(v, "enable_page_major_kv_layout")) and not _v(v, "enable_unified_memory"),
             lambda v: "AssertionError: --enable-page-major-kv-layout without --enable-unified-memory is temporarily "
                       "unsupported: the strided MHA K/V views were removed and the static-pool page-major layout awaits its "
                       "per-layer-view reimplementation. Run with --enable-unified-memory, or drop "
                       "--enable-page-major-kv-layout."),
    ArgCheck("dllm-algorithm-known", "dllm/algorithm/__init__.py get_algorithm_cls", "0.5.21", "0.5.23",
             lambda v: _v(v, "dllm_algorithm") is not None and _v(v, "dllm_algorithm") not in (
                 _arch_list(v, _DLLM_ALGORITHMS) or ()),
             lambda v: f"RuntimeError: Unknown diffusion LLM algorithm: {_v(v, 'dllm_algorithm')}"),
    ArgCheck("dllm-architecture", "dllm/config.py DllmConfig.from_server_args", "0.5.10", "0.5.23",
             _dllm_architecture_refused, lambda v: f"RuntimeError: Unknown diffusion LLM: {_archs(v)[0]}"),
    # 0.5.23 refuses it for every model but DeepSeek V4 here; for DeepseekV4ForCausalLM (0.5.21 on) the
    # model_type (deepseek_v4 or deepseek_v41) decides, which plan does not read
    ArgCheck("encoder-swa-replay-needs-dsv41", "arg_groups/model_hook.py handle_model_capability_adjustments", "0.5.23",
             "0.5.23", lambda v: bool(_v(v, "enable_encoder_swa_bounded_replay"))
             and _arch(v) not in (None, "DeepseekV4ForCausalLM"),
             lambda v: "ValueError: --enable-encoder-swa-bounded-replay requires DeepSeek-V4.1"),
    # after the pipeline, the last validations of arg_groups/pipeline.py run_resolution_pipeline
    ArgCheck("deepep-v2-not-for-draft", "arg_groups/moe_hook.py validate_deepep_v2_speculative_draft", "0.5.19", "0.5.23",
             lambda v: _draft_a2a(v) == "deepep_v2",
             lambda v: "ValueError: DeepEP v2 MoE is not validated as a speculative draft backend. Select another "
                       "--speculative-moe-a2a-backend."),
)


def _first_check(version: str, values: Values, architectures: tuple[str, ...], compute_capability: str | None,
                 checkpoint_quantization: str | None, mla: bool,
                 checkpoint_scheme: QuantScheme | None = None, dsa: bool = False) -> tuple[ArgCheck, Values] | None:
    seen = {**values, _ARCHS: tuple(architectures), _VERSION: version, _CC: compute_capability,
            _CHECKPOINT_QUANT: checkpoint_quantization, _CHECKPOINT_SCHEME: checkpoint_scheme, _MLA: mla, _DSA_MODEL: dsa}
    for check in CHECKS:
        if check.in_release(version) and check.applies(seen):
            return check, seen
    return None


def first_refusal(version: str, values: Values, architectures: tuple[str, ...] = (), *,
                  compute_capability: str | None = None, checkpoint_quantization: str | None = None,
                  mla: bool = False, checkpoint_scheme: QuantScheme | None = None, dsa: bool = False) -> str | None:
    """The error SGLang `version` raises after parsing these flag values, if one of the rules applies.
    ``architectures`` (config.json's) feeds the per-architecture support lists, ``compute_capability`` (a CUDA
    GPU's, "8.6") the GPU-generation rules, ``checkpoint_quantization`` (config.json's quant_method) tells the
    quantization rules that SGLang reconciles the flag with the checkpoint (``checkpoint_scheme``, its weight format,
    which kernel overrides suit it), ``mla`` (the model's attention) the default attention backend, ``dsa`` (an
    index_topk in the config) DeepSeek sparse attention's rules; without them those rules stay silent."""
    found = _first_check(version, values, architectures, compute_capability, checkpoint_quantization, mla,
                         checkpoint_scheme, dsa)
    return None if found is None else found[0].message(found[1])


# What ServerArgs.__post_init__ runs before _handle_model_specific_adjustments in 0.5.10-0.5.18 (read in
# those wheels' server_args.py; a rule's handler is named for the newest release it covers, so by its
# function's name), the parser itself, and the model-config parser the adjustments start by loading;
# every other rule here comes after them.
_BEFORE_MODEL_ADJUSTMENTS = frozenset({
    "prepare_server_args", "handle_ssl_validation", "handle_asr_validation", "handle_deprecated_args",
    "handle_pd_disaggregation", "validate_prefill_only_disable_kv_cache_args", "handle_decode_context_parallelism",
    "handle_dwdp", "handle_multimodal", "handle_model_source_paths", "handle_cuda_graph_config",
    "get_model_config_parser", "ModelConfig._verify_quantization",
})


@dataclass(frozen=True)
class Refusal:
    """The error SGLang raises after parsing, and whether it is raised only after SGLang's model
    adjustments, so that a refusal made there (knowledge/memory.py: a hybrid model's radix cache with
    speculation in 0.5.10-0.5.13.post1, the mamba strategy's validators in 0.5.14-0.5.18, both from
    _handle_mamba_radix_cache, which _handle_model_specific_adjustments calls) is the one SGLang prints.
    Found by samples against the real parsers: NEXTN with --enable-eplb (0.5.11), an unknown
    --mamba-scheduler-strategy with an unknown --speculative-algorithm (0.5.14). From 0.5.19 the
    adjustments run in arg_groups/pipeline.py."""

    message: str
    after_model_adjustments: bool
    # where SGLang raises a bare assert and what it asserts ("server_args.py _handle_data_parallelism asserts ...")
    asserts: str | None = None


def refusal(version: str, values: Values, architectures: tuple[str, ...] = (), *,
            compute_capability: str | None = None, checkpoint_quantization: str | None = None,
            mla: bool = False, checkpoint_scheme: QuantScheme | None = None, dsa: bool = False) -> Refusal | None:
    """first_refusal's error with where SGLang raises it (Refusal), from one pass over the rules."""
    found = _first_check(version, values, architectures, compute_capability, checkpoint_quantization, mla,
                         checkpoint_scheme, dsa)
    if found is None:
        return None
    check, seen = found
    late = Version("0.5.10") <= Version(version) < Version("0.5.19") \
        and check.handler.split()[-1].lstrip("_") not in _BEFORE_MODEL_ADJUSTMENTS
    where = check.handler if "/" in check.handler else f"server_args.py {check.handler}"
    return Refusal(check.message(seen), late, f"{where} asserts {check.asserts}" if check.asserts else None)


def _page_size_zero(values: Values, version: str, hybrid: bool) -> str | None:
    # server_args.py check_server_args (engine.py runs it at launch; 0.5.23 arg_groups/validation_hook.py):
    # chunked_prefill_size % page_size. A hybrid model's page size is resolved first (0.5.11 resets it
    # to 1 under no_buffer), so plan leaves those to the memory plan.
    if hybrid or _v(values, "page_size") != 0 or _v(values, "disaggregation_mode") == "decode":
        return None
    chunk = _v(values, "chunked_prefill_size")
    return "ZeroDivisionError: integer modulo by zero" if chunk is None or int(chunk) > 0 else None


def _context_too_short(values: Values, version: str, hybrid: bool) -> str | None:
    # model_executor/model_runner_kv_cache_mixin.py (0.5.11; 0.5.23 mem_cache/kv_cache_configurator.py):
    # ReqToTokenPool holds context_len + 4 (+ draft tokens) columns; managers/tp_worker.py then asserts
    # max_req_len = min(context_len - 1, pool - 1) > 0, and through 0.5.13 also max_req_len - 5 > 0
    ctx = _v(values, "context_length")
    if ctx is None or int(ctx) >= (7 if Version(version) < Version("0.5.14") else 2):
        return None
    columns = int(ctx) + 4 + int(_v(values, "speculative_num_draft_tokens", 0) if _spec_algorithm(values) else 0)
    if columns < 0:
        return f"RuntimeError: Trying to create tensor with negative dimension {columns}"
    return "AssertionError: Memory pool size is too small"


def _graph_bs_not_positive(values: Values, version: str, hybrid: bool) -> str | None:
    # model_executor/cuda_graph_runner.py get_batch_sizes_to_capture (0.5.1-0.5.13): server_args.py
    # turns --cuda-graph-max-bs N <= 0 into cuda_graph_bs [N], and capture asserts capture_bs[0] > 0
    bs = _v(values, "cuda_graph_max_bs")
    if bs is None or int(bs) > 0 or _v(values, "disable_cuda_graph") or _v(values, "cuda_graph_bs"):
        return None
    return f"AssertionError: capture_bs=[{int(bs)}]"


# Values SGLang's argparse and post-parse checks accept but its start-up then raises on, in the
# order it starts: check_server_args at launch, the request pool, CUDA graph capture. Each as
# (since, until, the check), ranges read off the release wheels by the assertion's text.
START_CHECKS: tuple[tuple[str, str, Callable[[Values, str, bool], str | None]], ...] = (
    ("0.5.1", "0.5.23", _page_size_zero),
    ("0.5.1", "0.5.23", _context_too_short),
    ("0.5.1", "0.5.13", _graph_bs_not_positive),
)


def first_start_failure(version: str, values: Values, *, hybrid: bool = False) -> str | None:
    """The error SGLang `version` raises while starting with these accepted flag values, if any."""
    for since, until, check in START_CHECKS:
        if Version(since) <= Version(version) <= Version(until):
            message = check(values, version, hybrid)
            if message:
                return message
    return None
