"""The attention backend SGLang picks on a CUDA GPU for a launch that names none.

Read off the release wheels: server_args.py _handle_attention_backend_compatibility "Pick the default
attention backend if not specified" (0.5.8-0.5.9), _get_default_attn_backend (0.5.10-0.5.18) and
arg_groups/model_override_base.py get_default_attn_backend (0.5.19-0.5.23), called after
_handle_model_specific_adjustments. An MHA model gets fa3 on Hopper (flashinfer 0.6.1's Hopper
regression, sglang issue 17411), trtllm_mha on SM100 (from 0.5.23 fa4 where K and V rows differ in
width: neither is flashinfer), flashinfer elsewhere (from 0.5.10 triton for a model with attention sinks:
GPT-OSS, which picks its own below); an MLA model fa3 on Hopper, flashinfer on SM100, triton elsewhere. (Before 0.5.8 Hopper's fa3
went to a list of architectures only: utils/common.py is_fa3_default_architecture.)

Where SGLang decides otherwise, this says nothing (None) and its callers stay silent: the
architectures whose model-specific adjustments (server_args.py, from 0.5.19 arg_groups/model_overrides/)
set or check a backend of their own, a GPU that is not known or not CUDA, releases before 0.5.8, and
a launch with speculative decoding (the draft's top-k, which the choice reads, is resolved in the same
pass).
"""

from __future__ import annotations

from packaging.version import Version

# Architectures whose model-specific adjustments choose or check the attention backend themselves, on
# every GPU or on GPUs this module cannot tell apart (0.5.11 server_args.py, 0.5.23 model_overrides/*.py)
_OWN_CHOICE = frozenset({
    "BeamForCausalLM", "BailingMoeV2_5ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM",
    "DeepseekV4ForCausalLM", "DiffusionGemmaForBlockDiffusion", "Dots3NoteForCausalLM", "Exaone4ForCausalLM",
    "ExaoneMoEForCausalLM", "ExaoneMoeForCausalLM", "FalconH1ForCausalLM", "Gemma4ForCausalLM",
    "Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration", "Glm5NextForConditionalGeneration",
    "GlmMoeDsaForCausalLM", "GptOssForCausalLM", "GraniteMoeHybridForCausalLM", "HYV4ForCausalLM",
    "InklingForConditionalGeneration", "IQuestQ1ForCausalLM", "JetNemotronForCausalLM",
    "JetVLMForConditionalGeneration", "KimiK25ForConditionalGeneration", "KimiK3ForConditionalGeneration",
    "KimiLinearForCausalLM", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "Llama4ForCausalLM",
    "Llama4ForConditionalGeneration", "LongcatFlashForCausalLM", "MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM",
    "MiniCPMForCausalLM", "MiniCPMSALAForCausalLM", "MiniCPMV4_6ForConditionalGeneration",
    "MiniCPMV4_7ForConditionalGeneration", "MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration",
    "MistralLarge3ForCausalLM", "MossVLForConditionalGeneration",
    "NemotronHPuzzleForCausalLM", "Olmo2ForCausalLM", "PixtralForConditionalGeneration", "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration", "Qwen4ExpForConditionalGeneration", "WhisperForConditionalGeneration",
})
# ... and those whose choice is SM100's only (_handle_mamba_radix_cache's sm100_default_attention_backend,
# 0.5.23 model_overrides/qwen3_5.py): elsewhere they take the general default
_OWN_CHOICE_ON_SM100 = frozenset({
    "Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "InternS2MobiusForConditionalGeneration", "InternS2PreviewForConditionalGeneration",
})
# ... and on any Blackwell (SM100 in server_args.py's NemotronH branch, 0.5.9-0.5.11: _handle_mamba_radix_cache's
# sm100_default_attention_backend; is_blackwell in 0.5.23 model_overrides/nemotron_h.py)
_OWN_CHOICE_ON_BLACKWELL = frozenset({"NemotronHForCausalLM"})


def default_attention_backend(version: str, architecture: str | None, compute_capability: str | None, *,
                              mla: bool, speculative: bool) -> str | None:
    """The backend SGLang ``version`` sets when --attention-backend is not given (None: not known here).
    ``compute_capability``: the CUDA GPU's ("8.6"); ``speculative``: a --speculative-algorithm is given."""
    try:
        major = int(str(compute_capability).split(".")[0])
    except ValueError:
        return None
    key = Version(version)
    if key < Version("0.5.8") or speculative or not architecture or architecture in _OWN_CHOICE:
        return None
    if (major == 10 and architecture in _OWN_CHOICE_ON_SM100) \
            or (major in (10, 12) and architecture in _OWN_CHOICE_ON_BLACKWELL):
        return None
    if mla:
        return {9: "fa3", 10: "flashinfer"}.get(major, "triton")
    if major == 9:
        return "fa3"
    if major == 10:
        return "trtllm_mha"
    return "flashinfer"
