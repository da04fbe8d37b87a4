"""knowledge/argchecks.py's GPU-generation, registry and attention-backend rules: each refuses with SGLang's
message where it applies, passes where SGLang does, and stays silent where plan cannot know (the GPU, a backend
SGLang picks for the model)."""

from __future__ import annotations

import pytest

from imgbuild.knowledge.argchecks import first_refusal
from imgbuild.knowledge.quantscheme import read_quant_scheme

SM86, SM90, SM100 = "8.6", "9.0", "10.0"

CASES = [
    # (id, release, flag values, compute capability, the message's start or None)
    ("trtllm-mha-decode-refused-on-sm86-0.5.11", "0.5.11", {"decode_attention_backend": "trtllm_mha"}, SM86,
     "ValueError: TRTLLM MHA backend for decode is only supported on Hopper (SM90)"),
    ("trtllm-mha-decode-passes-on-sm90-0.5.11", "0.5.11", {"decode_attention_backend": "trtllm_mha"}, SM90, None),
    ("trtllm-mha-prefill-needs-sm100-0.5.11", "0.5.11", {"attention_backend": "trtllm_mha"}, SM90,
     "ValueError: TRTLLM MHA backend for prefill is only supported on Blackwell GPUs (SM100)."),
    ("trtllm-mha-prefill-passes-on-sm90-0.5.23", "0.5.23", {"attention_backend": "trtllm_mha"}, SM90, None),
    ("trtllm-mha-one-message-0.5.9", "0.5.9", {"prefill_attention_backend": "trtllm_mha"}, SM86,
     "ValueError: TRTLLM MHA backend is only supported on Blackwell GPUs (SM100)."),
    ("trtllm-mha-unknown-gpu-silent", "0.5.11", {"attention_backend": "trtllm_mha"}, None, None),
    ("trtllm-mla-refused-on-sm90", "0.5.23", {"attention_backend": "trtllm_mla"}, SM90,
     "ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x)."),
    ("trtllm-mla-passes-on-sm100", "0.5.23", {"attention_backend": "trtllm_mla"}, SM100, None),
    ("tokenspeed-mla-is-cutedsl-0.5.23", "0.5.23", {"decode_attention_backend": "tokenspeed_mla"}, SM90,
     "ValueError: CuteDSL MLA backend is only supported on Blackwell GPUs (SM100)."),
    ("cutedsl-mla-prefill-refused-anywhere", "0.5.23", {"prefill_attention_backend": "cutedsl_mla"}, None,
     "AssertionError: CuteDSL MLA only supports decoding for now"),
    ("mxfp8-kv-refused-on-sm90", "0.5.23", {"kv_cache_dtype": "mxfp8"}, SM90, "ValueError: --kv-cache-dtype mxfp8 requires"),
    ("nvfp4-kv-decodes-on-trtllm-sm86", "0.5.23", {"kv_cache_dtype": "nvfp4"}, SM86,
     "ValueError: TRTLLM MHA backend for decode"),
    ("nvfp4-kv-refused-on-sm90", "0.5.23", {"kv_cache_dtype": "nvfp4"}, SM90, "RuntimeError: --kv-cache-dtype=nvfp4 requires"),
    ("megamoe-passes-on-sm90", "0.5.23", {"moe_a2a_backend": "megamoe"}, SM90, None),
    ("megamoe-runner-alias-refused-on-sm86", "0.5.23", {"moe_runner_backend": "megamoe"}, SM86,
     "ValueError: --moe-a2a-backend megamoe needs a CUDA SM90 GPU"),
    ("nvfp4-online-needs-sm100", "0.5.23", {"quantization": "nvfp4_online"}, SM90,
     "ValueError: --quantization nvfp4_online is supported only on NVIDIA Blackwell SM100/SM103 GPUs."),
    ("gptq-unregistered-on-cuda-0.5.23", "0.5.23", {"quantization": "gptq"}, None,
     "ValueError: Unknown quantization method: gptq. Must be one of ['fp8', 'mxfp8', 'minimax_m3_nvfp4',"),
    ("marlin-unregistered-0.5.11", "0.5.11", {"quantization": "marlin"}, None, "ValueError: Unknown quantization method: marlin."),
    ("mxfp4-registered-on-cuda", "0.5.23", {"quantization": "mxfp4"}, SM86, None),
    ("unquant-is-no-quantization", "0.5.23", {"quantization": "unquant"}, SM86, None),
    ("cutedsl-moe-needs-fp4", "0.5.11", {"moe_runner_backend": "flashinfer_cutedsl"}, None,
     "AssertionError: Invalid quantization 'None'. \nFlashInfer CuteDSL MOE currently supports only: 'modelopt_fp4'."),
    ("spec-moe-runner-trtllm-0.5.9", "0.5.9", {"speculative_moe_runner_backend": "flashinfer_trtllm"}, None,
     "AssertionError: Currently speculative MoE runner backend cannot be flashinfer_trtllm"),
    ("pplx-needs-attn-dp", "0.5.23", {"moe_a2a_backend": "pplx"}, None, "AssertionError: moe_a2a_backend='pplx' requires"),
    ("pplx-with-attn-dp", "0.5.23", {"moe_a2a_backend": "pplx", "tp_size": 2, "attn_dp_size": 2}, None, None),
    ("deepep-v2-draft", "0.5.23", {"speculative_moe_a2a_backend": "deepep_v2"}, None,
     "ValueError: DeepEP v2 MoE is not validated as a speculative draft backend."),
    ("fp4-indexer-sm100-only-0.5.16", "0.5.16", {"enable_deepseek_v4_fp4_indexer": True}, "12.0",
     "ValueError: --enable-deepseek-v4-fp4-indexer requires SM100 GPUs with DeepGEMM FP4 indexer support."),
    ("fp4-indexer-sm120-passes-0.5.17", "0.5.17", {"enable_deepseek_v4_fp4_indexer": True}, "12.0", None),
    ("fp4-indexer-refused-on-sm90-0.5.23", "0.5.23", {"enable_deepseek_v4_fp4_indexer": True}, SM90,
     "ValueError: --enable-deepseek-v4-fp4-indexer requires SM100, SM120, or gfx95 GPUs with FP4 indexer support."),
    ("fp4-indexer-unknown-gpu-silent", "0.5.23", {"enable_deepseek_v4_fp4_indexer": True}, None, None),
    # deterministic inference takes only some attention backends, named explicitly (an unnamed one is picked for it)
    ("deterministic-hpc-ops-0.5.23", "0.5.23", {"enable_deterministic_inference": True, "attention_backend": "hpc_ops"},
     None, "ValueError: Currently only ['ascend', 'fa3', 'fa4', 'flashinfer', 'intel_xpu', 'triton'] attention backends are "
     "supported for deterministic inference, but you explicitly specified 'hpc_ops'."),
    ("deterministic-fa4-before-0.5.16", "0.5.11", {"enable_deterministic_inference": True, "attention_backend": "fa4"},
     None, "ValueError: Currently only ['flashinfer', 'fa3', 'triton'] attention backends"),
    ("deterministic-default-backend", "0.5.11", {"enable_deterministic_inference": True}, None, None),
    # multi-item scoring needs flashinfer for both phases; a phase left to SGLang is not judged
    ("mis-triton", "0.5.23", {"enable_mis": True, "attention_backend": "triton"}, None,
     "AssertionError: Multi-item scoring requires flashinfer attention backend for custom attention mask support. Please "
     "set --attention-backend flashinfer when using --enable-mis. Current backends: prefill=triton, decode=triton"),
    ("mis-flashinfer", "0.5.11", {"enable_mis": True, "attention_backend": "flashinfer"}, None, None),
    ("mis-backend-left-to-sglang", "0.5.11", {"enable_mis": True, "decode_attention_backend": "flashinfer"}, None, None),
    # ... a phase left to SGLang takes the release's default for the model and GPU: flashinfer on SM86, fa3 on Hopper
    ("mis-default-flashinfer-sm86", "0.5.11", {"enable_mis": True}, SM86, None),
    ("mis-default-fa3-sm90", "0.5.23", {"enable_mis": True, "prefill_attention_backend": "flashinfer"}, SM90,
     "AssertionError: Multi-item scoring requires flashinfer attention backend for custom attention mask support. Please "
     "set --attention-backend flashinfer when using --enable-mis. Current backends: prefill=flashinfer, decode=fa3"),
    ("mis-default-hybrid-sm100-not-known", "0.5.23", {"enable_mis": True}, SM100, None),
    ("mis-default-speculative-not-known", "0.5.11", {"enable_mis": True, "speculative_algorithm": "NEXTN"}, SM90, None),
    # an FP4 KV cache needs a backend that reads it; the default flashinfer does not
    ("kv4-default-flashinfer-0.5.11", "0.5.11", {"kv_cache_dtype": "fp4_e2m1"}, SM86,
     "AssertionError: KV4 MHA expects attention_backend to be one of ['triton', 'torch_native', 'flex_attention', "
     "'trtllm_mha'], but got flashinfer"),
    ("kv4-triton-0.5.11", "0.5.11", {"kv_cache_dtype": "fp4_e2m1", "attention_backend": "triton"}, SM86, None),
    ("kv4-phases-differ-warns-0.5.11", "0.5.11", {"kv_cache_dtype": "fp4_e2m1", "decode_attention_backend": "triton"},
     SM86, None),
    ("kv4-fa4-prefill-0.5.23", "0.5.23", {"kv_cache_dtype": "fp4_mx_block16", "prefill_attention_backend": "fa4"}, SM90,
     "AssertionError: KV4 FA4 MHA expects decode_attention_backend to be one of ['triton', 'torch_native', "
     "'flex_attention'], but got fa3"),
    ("kv4-named-e2m1-not-fp4-in-0.5.23", "0.5.23", {"kv_cache_dtype": "fp4_e2m1"}, SM86, None),
    ("kv4-unknown-gpu-silent", "0.5.23", {"kv_cache_dtype": "fp4_mx_block16"}, None, None),
    # --quantize-and-serve never starts a server: without ModelOpt it is refused, with it disabled
    ("quantize-and-serve-needs-modelopt-0.5.9", "0.5.9", {"quantize_and_serve": True}, None,
     "ValueError: quantize_and_serve requires ModelOpt quantization (set with --quantization {modelopt, modelopt_fp4, "
     "modelopt_fp8})"),
    ("quantize-and-serve-disabled-0.5.23", "0.5.23", {"quantize_and_serve": True, "quantization": "modelopt_fp8"}, None,
     "NotImplementedError: quantize_and_serve functionality is currently disabled"),
]


@pytest.mark.parametrize(("release", "values", "cc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gpu_generation_and_registry_rules(release: str, values: dict, cc: str | None, expected: str | None) -> None:
    message = first_refusal(release, values, ("Qwen3_5ForConditionalGeneration",), compute_capability=cc)
    if expected is None:
        assert message is None
    else:
        assert message is not None and message.startswith(expected), message


def test_an_mla_model_is_judged_by_the_mla_lists() -> None:
    """KV4's MLA list holds flashinfer: DeepSeek-V2 (its default on SM86 is triton) is refused by that list."""
    refused = first_refusal("0.5.11", {"kv_cache_dtype": "fp4_e2m1"}, ("DeepseekV2ForCausalLM",), compute_capability=SM86,
                            mla=True)
    assert refused == ("AssertionError: KV4 MLA expects attention_backend to be one of ['cutlass_mla', 'flashinfer', "
                       "'trtllm_mla', 'flashmla'], but got triton")
    assert first_refusal("0.5.11", {"kv_cache_dtype": "fp4_e2m1", "attention_backend": "flashinfer"},
                         ("DeepseekV2ForCausalLM",), compute_capability=SM86, mla=True) is None


def test_quantization_rules_stay_silent_for_a_quantized_checkpoint() -> None:
    """SGLang reconciles --quantization with the checkpoint's own (configs/model_config.py): the rules that read the
    reconciled value stay silent, and a flag against a checkpoint format not held against the parser is not judged."""
    assert first_refusal("0.5.23", {"moe_runner_backend": "flashinfer_cutedsl"}, checkpoint_quantization="modelopt_fp4") is None
    assert first_refusal("0.5.23", {"quantization": "awq"}, checkpoint_quantization="quark") is None


def test_a_quantization_flag_against_the_checkpoints_own_is_refused_unless_sglang_takes_the_pair() -> None:
    """_verify_quantization's refusal, held against the real parser in tests/test_sglang_oracle.py."""
    refused = first_refusal("0.5.23", {"quantization": "gptq"}, checkpoint_quantization="fp8")
    assert refused == ("ValueError: Quantization method specified in the model config (fp8) does not match the "
                       "quantization method specified in the `quantization` argument (gptq).")
    # compatible_quantization_methods takes modelopt_fp4 for an FP8 checkpoint from 0.5.18, not before
    assert first_refusal("0.5.23", {"quantization": "modelopt_fp4"}, checkpoint_quantization="fp8") is None
    assert first_refusal("0.5.11", {"quantization": "modelopt_fp4"}, checkpoint_quantization="fp8") is not None
    # AWQ's Marlin override needs sm80 or newer
    assert first_refusal("0.5.11", {"quantization": "awq_marlin"}, checkpoint_quantization="awq",
                         compute_capability=SM86) is None
    assert "(awq_marlin)" in first_refusal("0.5.11", {"quantization": "awq_marlin"}, checkpoint_quantization="awq",
                                           compute_capability="7.5")


def _gptq(**config: object) -> dict[str, object]:
    """first_refusal's keywords for a GPTQ checkpoint whose quantization_config is ``config`` (bits 4, group 128)."""
    qc = {"quant_method": "gptq", "bits": 4, "group_size": 128, **config}
    return {"checkpoint_quantization": "gptq", "checkpoint_scheme": read_quant_scheme(qc, num_layers=32, sub_shares={})}


def test_a_gptq_checkpoint_runs_as_gptq_marlin_where_marlin_takes_it_and_0_5_20_on_cuda_has_no_plain_gptq() -> None:
    """layers/quantization/__init__.py registers plain "gptq" on CUDA through 0.5.19 only; GPTQMarlinConfig's
    override (gptq.py) turns a checkpoint with no flag, or with marlin, into gptq_marlin on sm80+ when the bits are 4 or
    8, sym is true and desc_act is given; moe_wna16.py takes 4- or 8-bit GPTQ without act order."""
    symmetric = _gptq(sym=True, desc_act=False)
    assert first_refusal("0.5.23", {}, compute_capability=SM86, **symmetric) is None
    assert first_refusal("0.5.23", {"quantization": "marlin"}, compute_capability=SM86, **symmetric) is None
    assert first_refusal("0.5.23", {"quantization": "moe_wna16"}, compute_capability=SM86, **symmetric) is None
    unknown = "ValueError: Unknown quantization method: gptq. Must be one of ['fp8', "
    # a T4 (sm75) has no Marlin kernels: the checkpoint stays gptq, which 0.5.23 does not register on CUDA
    assert first_refusal("0.5.23", {}, compute_capability="7.5", **symmetric).startswith(unknown)
    assert first_refusal("0.5.19", {}, compute_capability="7.5", **symmetric) is None
    # --quantization gptq asks for the plain kernels by name: the override does not apply
    assert first_refusal("0.5.23", {"quantization": "gptq"}, compute_capability=SM86, **symmetric).startswith(unknown)
    # asymmetric: no Marlin type; act order: no moe_wna16
    assert first_refusal("0.5.23", {}, compute_capability=SM86, **_gptq(sym=False, desc_act=False)).startswith(unknown)
    refused = first_refusal("0.5.11", {"quantization": "moe_wna16"}, compute_capability=SM86,
                            **_gptq(sym=True, desc_act=True))
    assert refused == ("ValueError: Quantization method specified in the model config (gptq) does not match the "
                       "quantization method specified in the `quantization` argument (moe_wna16).")


def test_compressed_tensors_and_bitsandbytes_checkpoints_take_only_their_own_and_compatible_flags() -> None:
    """compatible_quantization_methods: w8a8_int8 and w8a8_fp8 for compressed-tensors (auto-round-int8 from 0.5.15);
    REQUANTIZATION_METHODS: quark_mxfp4 for any checkpoint from 0.5.18; bitsandbytes has no override."""
    for flag in ("compressed-tensors", "w8a8_int8", "w8a8_fp8"):
        assert first_refusal("0.5.11", {"quantization": flag}, checkpoint_quantization="compressed-tensors") is None
    assert "(compressed-tensors) does not match" in first_refusal("0.5.11", {"quantization": "fp8"},
                                                                  checkpoint_quantization="compressed-tensors")
    assert first_refusal("0.5.23", {"quantization": "quark_mxfp4"}, checkpoint_quantization="bitsandbytes") is None
    assert "(bitsandbytes) does not match" in first_refusal("0.5.17", {"quantization": "quark_mxfp4"},
                                                            checkpoint_quantization="bitsandbytes")


def test_gpt_oss_moe_asserts_see_the_flag_not_the_checkpoint() -> None:
    """GPT-OSS's adjustments read the checkpoint's mxfp4 without copying it into server_args.quantization, so
    the CuteDSL MoE assert sees None (found by a held-back sample through SGLang 0.5.11's own parser)."""
    refused = first_refusal("0.5.11", {"moe_runner_backend": "flashinfer_cutedsl"}, ("GptOssForCausalLM",),
                            checkpoint_quantization="mxfp4")
    assert refused == ("AssertionError: Invalid quantization 'None'. \nFlashInfer CuteDSL MOE currently supports only: "
                       "'modelopt_fp4'.")


def test_deepep_v2_needs_a_registered_architecture() -> None:
    refused = first_refusal("0.5.23", {"moe_a2a_backend": "deepep_v2"}, ("Qwen3_5ForConditionalGeneration",))
    assert refused == ("ValueError: DeepEP v2 MoE is not validated for 'Qwen3_5ForConditionalGeneration'. The model package "
                       "must register its architecture with register_deepep_v2_model, because its combine and post-expert "
                       "reduction semantics must be validated first.")
    assert first_refusal("0.5.23", {"moe_a2a_backend": "deepep_v2"}, ("Qwen3MoeForCausalLM",)) is None


def test_dsa_prefill_context_parallel_asserts_follow_each_release() -> None:
    """server_args.py _handle_model_specific_adjustments on a DSA config (an index_topk): held against 0.5.11's parser
    in tests/test_sglang_oracle.py DSA_CP_CASES; 0.5.8's in-seq-split default, 0.5.12's tp <= 8 and 0.5.13's renamed
    flag read in those wheels."""
    glm5 = ("GlmMoeDsaForCausalLM",)
    cp = {"enable_nsa_prefill_context_parallel": True}
    assert first_refusal("0.5.11", {**cp, "tp_size": 8}, glm5, dsa=True) is None
    assert "tp_size == 8" in first_refusal("0.5.11", {**cp, "tp_size": 4}, glm5, dsa=True)
    assert first_refusal("0.5.11", {**cp, "tp_size": 4}, glm5, dsa=False) is None  # no index_topk: not DSA
    # the round-robin split (the default from 0.5.9) asserts one attention group before the machine
    assert first_refusal("0.5.11", {**cp, "tp_size": 8, "dp_size": 2}, glm5, dsa=True) == (
        "AssertionError: For round-robin split mode, dp attention is not supported.")
    assert first_refusal("0.5.8", {**cp, "tp_size": 8, "dp_size": 2}, glm5, dsa=True) is None  # in-seq-split default
    assert first_refusal("0.5.12", {**cp, "tp_size": 4}, glm5, dsa=True) is None
    assert "(tp_size <= 8)" in first_refusal("0.5.12", {**cp, "tp_size": 16}, glm5, dsa=True)
    decode = {"enable_dsa_prefill_context_parallel": True, "tp_size": 8, "disaggregation_mode": "decode"}
    assert first_refusal("0.5.13", decode, glm5, dsa=True).endswith(
        "please remove --enable-dsa-prefill-context-parallel.")
    assert first_refusal("0.5.14", {**cp, "tp_size": 4}, glm5, dsa=True) is None
