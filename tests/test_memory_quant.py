"""Quantized checkpoints without a safetensors index: weights sized from the quantization config
(knowledge/quantscheme.py), held to the totals their published indexes or logs state; and the KV
dtype a modelopt checkpoint implies."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from imgbuild.cli import cli
from imgbuild.knowledge.memory import split_weights, weights_per_gpu_bytes
from imgbuild.knowledge.modelinfo import describe_model, inspect_model
from imgbuild.knowledge.quantscheme import read_quant_scheme

MODELS = Path(__file__).resolve().parent / "data" / "models"
# kept apart from data/models, which scripts/plan_corpus.py plans by position
QUANTIZED = Path(__file__).resolve().parent / "data" / "quantized"


def _where(model: str) -> Path:
    return QUANTIZED / model if (QUANTIZED / model).is_dir() else MODELS / model


def _checkpoint_bytes(model: str, tp: int = 1) -> float:
    g = inspect_model(str(_where(model))).geometry
    return weights_per_gpu_bytes(g, split_weights(g, tp=tp), tp=tp)


def test_modelopt_nvfp4_from_hf_quant_config_matches_the_published_index_total() -> None:
    # nvidia/Llama-3.3-70B-Instruct-NVFP4: model.safetensors.index.json total_size 42,709,045,632
    estimate = _checkpoint_bytes("llama-3.3-70b-nvfp4")
    assert abs(estimate / 42_709_045_632 - 1) < 0.001
    g = inspect_model(str(QUANTIZED / "llama-3.3-70b-nvfp4")).geometry
    assert g.quant is not None and g.quant.source == "hf_quant_config.json"
    assert g.quant.kv_cache_quant_algo == "FP8" and dict(g.quant.unquantized_share) == {"lm_head": 1.0}


def test_awq_int4_group128_is_about_a_third_of_bf16() -> None:
    # hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4: "~5.7GB" of weights
    assert 5.6e9 < _checkpoint_bytes("llama-3.1-8b-awq") < 5.8e9


def test_block_fp8_matches_the_logged_load() -> None:
    # tests/data/logs/qwen3.8-27b-fp8.h100-tp1.otel.txt: "Load weight end ... mem usage=28.47 GB"
    gib = _checkpoint_bytes("qwen3.8-27b-fp8") / 2**30 + 0.18
    assert abs(gib / 28.47 - 1) < 0.01


@pytest.mark.parametrize(
    "qc, label, bytes_per_weight",
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}, "GPTQ 4-bit, group 128", 0.5 + 2.5 / 128),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1, "desc_act": False}, "GPTQ 8-bit, per channel", 1.0),
        ({"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                                            "group_size": 128, "symmetric": True}}}},
         "compressed-tensors INT4, group 128", 0.5 + 2 / 128),
        ({"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}},
         "compressed-tensors FP8, per channel", 1.0),
        ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
          "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}}},
         "compressed-tensors NVFP4, group 16", 0.5 + 1 / 16),
        ({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_scheme": {"type": "float", "num_bits": 8}}, "ModelOpt FP8", 1.0),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8 8-bit, 128x128 blocks", 1 + 4 / 128**2),
        ({"quant_method": "mxfp4"}, "MXFP4 experts, group 32", 0.5 + 1 / 32),
    ],
)
def test_each_method_reads_its_bits_groups_and_scales(qc: dict, label: str, bytes_per_weight: float) -> None:
    scheme = read_quant_scheme(qc, num_layers=4, sub_shares={})
    assert scheme is not None and scheme.label == label
    assert scheme.bytes_per_weight == pytest.approx(bytes_per_weight)


def test_ignore_lists_keep_the_modules_they_name_in_bf16() -> None:
    shares = {"mlp": {"gate": 1 / 3, "up": 1 / 3, "down": 1 / 3}, "attention": {"q": 0.5, "kv": 0.2, "o": 0.3}}
    qc = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*", "model.layers.0.mlp.down_proj"],
          "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}
    scheme = read_quant_scheme(qc, num_layers=4, sub_shares=shares)
    assert scheme is not None
    got = dict(scheme.unquantized_share)
    assert got["attention"] == pytest.approx(1.0) and got["lm_head"] == 1.0
    assert got["mlp"] == pytest.approx(1 / 3 / 4)  # one of four layers' down_proj
    # AWQ's modules_to_not_convert matches by substring (awq.py is_layer_skipped_awq)
    awq = read_quant_scheme({"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": ["mlp"]},
                            num_layers=4, sub_shares=shares)
    assert awq is not None and dict(awq.unquantized_share)["mlp"] == pytest.approx(1.0)


def test_mxfp4_quantizes_only_the_experts() -> None:
    scheme = read_quant_scheme({"quant_method": "mxfp4"}, num_layers=2, sub_shares={})
    assert scheme is not None
    assert scheme.excluded_share("attention") == 1.0 and scheme.excluded_share("experts") == 0.0


def test_an_unknown_method_falls_back_to_the_dtype_with_a_note(tmp_path: Path) -> None:
    config = json.loads((MODELS / "llama-3.1-8b" / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gguf"}
    g = describe_model(config, None, source="x").geometry
    assert g.quantization == "gguf" and g.quant is None


def _plan(model: str, *flags: str, sglang: str = "0.5.11") -> dict:
    result = CliRunner().invoke(cli, ["plan", str(_where(model)), "--gpu", "H100 80GB HBM3x1", "--sglang", sglang, "--json", "--", *flags])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_modelopt_kv_cache_quant_algo_fp8_makes_auto_an_fp8_pool() -> None:
    plan = _plan("llama-3.3-70b-nvfp4")
    # 8 KV heads x (128 + 128) x 80 layers x 1 byte
    assert plan["per_gpu"]["kv_cell_bytes"] == 8 * 256 * 80
    assert any("serves fp8_e4m3" in n for n in plan["notes"])
    assert _plan("llama-3.3-70b-nvfp4", "--kv-cache-dtype", "bfloat16")["per_gpu"]["kv_cell_bytes"] == 8 * 256 * 80 * 2
    # before 0.5.3 "auto" is the model dtype (model_runner.py: no kv_cache_quant_algo)
    assert _plan("llama-3.3-70b-nvfp4", sglang="0.5.2")["per_gpu"]["kv_cell_bytes"] == 8 * 256 * 80 * 2


def test_nvfp4_needs_blackwell_before_0_5_13() -> None:
    # model_loader/loader.py: "The quantization method ... is not supported for the current GPU"
    plan = _plan("llama-3.3-70b-nvfp4")
    assert plan["verdict"] == "does-not-fit"
    assert ("The quantization method modelopt_fp4 is not supported for the current GPU. "
            "Minimum capability: 100. Current capability: 90.") in plan["problems"][0] + str(plan.get("sglang_error"))
    # 0.5.13 lowered ModelOptFp4Config's minimum to 80 (its Marlin fallback)
    assert _plan("llama-3.3-70b-nvfp4", sglang="0.5.14")["verdict"] == "fits"


def test_suggest_offers_no_fp8_kv_cache_when_auto_already_serves_fp8(monkeypatch: pytest.MonkeyPatch) -> None:
    """A change that changes nothing is no offer: --kv-cache-dtype auto on a ModelOpt checkpoint
    with kv_cache_quant_algo FP8 is already an FP8 pool."""
    from dataclasses import replace

    from imgbuild.knowledge import suggest
    from imgbuild.knowledge.memory import MemoryInputs, plan_memory, rules_for

    g = inspect_model(str(QUANTIZED / "llama-3.3-70b-nvfp4")).geometry
    assert g.quant is not None
    mib = 81559.0  # H100, one GPU, the model's full context at 0.6
    gpus = suggest.GpuView("H100", 1, mib, mib / 1024 - 0.9, 0.9, "--gpu")

    def base(geometry) -> MemoryInputs:
        return MemoryInputs(rules=rules_for("0.5.14"), geometry=geometry, tp_size=1, attn_tp_size=1, gpu_total_mib=mib,
                            free_before_load_gib=gpus.free_gib, mem_fraction_static=0.6, context_length=131072)

    # the same checkpoint with a bfloat16 KV pool: FP8 KV is a real change and offered
    bf16_kv = base(replace(g, quant=replace(g.quant, kv_cache_quant_algo=None)))
    offers = suggest.suggest_changes(bf16_kv, plan_memory(bf16_kv), gpus)
    assert any("--kv-cache-dtype" in s.flags for s in offers)
    tried: list[str] = []

    def spy(inp: MemoryInputs):
        tried.append(inp.kv_cache_dtype)
        return plan_memory(inp)

    monkeypatch.setattr(suggest, "plan_memory", spy)
    fp8_kv = base(g)
    offers = suggest.suggest_changes(fp8_kv, plan_memory(fp8_kv), gpus)
    assert offers and not any("--kv-cache-dtype" in s.flags for s in offers)
    assert tried and set(tried) == {"auto"}  # never even re-planned


# ---- --quantization fp8 on a checkpoint without a quantization config (quantized at load)
PLAN_MODELS = Path(__file__).resolve().parent / "data" / "plan_logs" / "models"


def _plan_json(model: Path, gpu: str, version: str, *flags: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["plan", str(model), "--gpu", gpu, "--sglang", version, "--no-suggest", "--json",
                                      "--", *flags])
    return result.exit_code, json.loads(result.output)


def test_quantize_at_load_keeps_the_fp8_size_after_loading() -> None:
    """Qwen3-8B BF16 with --quantization fp8 on SGLang 0.5.10.post1 logged "mem usage=9.09 GB"
    (tests/data/plan_logs/qwen3-8b-fp8online.*): the projections in one byte, the rest in bf16."""
    code, plan = _plan_json(PLAN_MODELS / "qwen3-8b", "RTX 4090", "0.5.10.post1", "--quantization", "fp8")
    _, bf16 = _plan_json(PLAN_MODELS / "qwen3-8b", "RTX 4090", "0.5.10.post1")
    assert code == 0 and plan["fits"]
    assert abs(plan["per_gpu"]["weights_gib"] / 9.09 - 1) < 0.03
    assert plan["per_gpu"]["kv_tokens"] > 2 * bf16["per_gpu"]["kv_tokens"]


def test_quantize_at_load_needs_the_unconverted_size_free_while_loading() -> None:
    """gemma-3-12b-it in float16 with --quantization fp8 on an RTX 4070 Ti SUPER ran out of memory in
    Fp8LinearMethod.create_weights (sglang issue 5576): the FP8 size would fit, the float16 load does not."""
    code, plan = _plan_json(PLAN_MODELS / "gemma-3-12b-it", "RTX 4070 Ti SUPER", "0.4.5.post1",
                            "--dtype=float16", "--quantization", "fp8", "--context-length", "7000")
    assert code == 1 and plan["verdict"] == "does-not-fit"
    assert "while loading weights" in plan["sglang_error"] and "before --quantization fp8" in plan["sglang_error"]
    assert plan["margin"]["headroom_gib"] < 0
    assert plan["per_gpu"]["weights_gib"] < plan["per_gpu"]["free_before_load_gib"]


def test_quantization_flag_leaves_a_quantized_checkpoint_as_it_is() -> None:
    g = inspect_model(str(_where("qwen3.8-27b-fp8"))).geometry
    from imgbuild.knowledge.memory import online_quant_scheme

    assert online_quant_scheme(g, "fp8") is None
    assert online_quant_scheme(inspect_model(str(MODELS / "llama-3.1-8b")).geometry, "awq") is None


def test_deepseek_v4_routed_experts_are_mxfp4_beside_fp8_linears() -> None:
    """configs/model_config.py (0.5.14-0.5.23) makes DeepSeek V4's routed experts MXFP4 (fp8.py create_weights:
    int8 pairs, a float32 scale per 32) while its other linears stay FP8 blocks: the published
    deepseek-ai/DeepSeek-V4-Pro config (tests/data/plan_logs/models, its SOURCE.md) sizes at about 121 GiB
    per GPU at TP 8, where SGLang's first V4 build logged 125.65 (InferenceX issue 2128); as FP8 throughout
    it would be about 190."""
    from imgbuild.knowledge.modelinfo import routed_expert_params
    from imgbuild.knowledge.quantscheme import DSV4_FP4_EXPERT_BYTES

    path = Path(__file__).resolve().parent / "data" / "plan_logs" / "models" / "deepseek-v4-pro"
    g = inspect_model(str(path)).geometry
    assert g.quant is not None and g.quant.routed_expert_bytes == DSV4_FP4_EXPERT_BYTES == 0.625
    split = split_weights(g, tp=8)
    routed = split.routed_experts_per_gpu_params
    assert routed == g.moe_layers * routed_expert_params(g) / 8
    as_fp8 = weights_per_gpu_bytes(g, split, tp=8, at_load=replace(g.quant, routed_expert_bytes=None))
    mixed = weights_per_gpu_bytes(g, split, tp=8)
    assert as_fp8 - mixed == pytest.approx(routed * (g.quant.bytes_per_weight - 0.625), rel=1e-9)
    assert 115 < mixed / 2**30 < 125 and as_fp8 / 2**30 > 180


def test_a_modelopt_mixed_precision_checkpoint_is_sized_per_module_kind() -> None:
    """nvidia/Qwen3.6-35B-A3B-NVFP4 (tests/data/quantized/qwen3.6-35b-a3b-nvfp4-mixed): quant_algo
    MIXED_PRECISION with a quantized_layers map (modelopt_quant.py ModelOptMixedPrecisionConfig, 0.5.11 on):
    attention and Gated DeltaNet projections FP8, routed and shared experts and lm_head W4A16_NVFP4 (half a
    byte and an FP8 scale per 16), embeddings, router, MTP and vision tower in bfloat16. It was read as an
    unquantized checkpoint (65.6 GiB) before."""
    info = inspect_model(str(QUANTIZED / "qwen3.6-35b-a3b-nvfp4-mixed"))
    q = info.geometry.quant
    assert q is not None and q.method == "modelopt_mixed"
    assert (q.bytes_per_weight, q.routed_expert_bytes, q.lm_head_quantized) == (1.0, 0.5 + 1 / 16, True)
    # config.json's own quantization_config wins over hf_quant_config.json (configs/model_config.py), and it
    # names no KV cache format: --kv-cache-dtype auto serves the model dtype
    assert q.kv_cache_quant_algo is None
    unquantized = info.parameters * 2
    assert 0.3 * unquantized < info.weight_bytes < 0.35 * unquantized
