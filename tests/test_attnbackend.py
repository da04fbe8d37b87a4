"""knowledge/attnbackend.py: the attention backend SGLang picks when none is named, per release, GPU and
model, and silence where SGLang's choice is the model's own (held against SGLang's parser by
tests/test_sglang_oracle.py on SM86 and SM90)."""

from __future__ import annotations

import pytest

from imgbuild.knowledge.attnbackend import default_attention_backend

QWEN36, LLAMA, DEEPSEEK_V2 = "Qwen3_5ForConditionalGeneration", "LlamaForCausalLM", "DeepseekV2ForCausalLM"


@pytest.mark.parametrize(("version", "arch", "cc", "mla", "expected"), [
    ("0.5.11", QWEN36, "8.6", False, "flashinfer"),    # an RTX A6000: flashinfer wherever no rule says otherwise
    ("0.5.11", QWEN36, "9.0", False, "fa3"),           # Hopper MHA: fa3 (sglang issue 17411)
    ("0.5.11", QWEN36, "10.0", False, None),           # the Qwen3.5 family picks its own on SM100
    ("0.5.11", LLAMA, "10.0", False, "trtllm_mha"),
    ("0.5.11", LLAMA, "12.0", False, "flashinfer"),    # SM120 is no SM100
    ("0.5.23", DEEPSEEK_V2, "8.6", True, "triton"),    # MLA: triton below Hopper
    ("0.5.23", DEEPSEEK_V2, "9.0", True, "fa3"),
    ("0.5.23", DEEPSEEK_V2, "10.0", True, "flashinfer"),
    ("0.5.11", "GptOssForCausalLM", "8.6", False, None),  # model-specific choice: not judged
    ("0.5.7", LLAMA, "9.0", False, None),              # before 0.5.8 Hopper's fa3 went by an architecture list
    ("0.5.11", LLAMA, None, False, None),              # the GPU not known
    ("0.5.11", LLAMA, "gfx942", False, None),
])
def test_default_attention_backend(version, arch, cc, mla, expected):
    assert default_attention_backend(version, arch, cc, mla=mla, speculative=False) == expected


def test_speculation_leaves_the_choice_to_sglang():
    assert default_attention_backend("0.5.11", LLAMA, "9.0", mla=False, speculative=True) is None
