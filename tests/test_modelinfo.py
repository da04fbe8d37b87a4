"""Model inspection: layer kinds, features and parameter counts from config.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from imgbuild.errors import UsageError
from imgbuild.knowledge.memory import vlm_mfs_factor
from imgbuild.knowledge.modelinfo import (
    QWEN3_VL_PATCH_SIZE,
    QWEN3_VL_TEMPORAL_PATCH_SIZE,
    describe_model,
    read_geometry,
    attention_layer_counts,
    inspect_model,
    moe_layer_count,
    quant_method,
    read_int,
    sliding_window,
    split_hub_id,
    vision_params,
)

SEED_MODEL = Path(__file__).resolve().parent.parent / "examples" / "qwen3.6-27b"
PLAN_MODELS = Path(__file__).resolve().parent / "data" / "plan_logs" / "models"

# Llama-3.1-8B's published config (meta-llama/Llama-3.1-8B config.json); 8,030,261,248 parameters.
LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# DeepSeek-V3's config.json (deepseek-ai/DeepSeek-V3): MLA, 256 routed experts, one NextN layer, FP8 weights.
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
    "num_key_value_heads": 128, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "num_nextn_predict_layers": 1, "vocab_size": 129280,
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
    "torch_dtype": "bfloat16",
}  # fmt: skip
# Mistral-7B-v0.1's config.json: sliding window attention (4096).
MISTRAL_7B = {
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
    "sliding_window": 4096, "torch_dtype": "bfloat16",
}  # fmt: skip


def write_config(tmp_path: Path, config: dict) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def test_seed_model_is_a_gdn_hybrid_with_mtp_and_vision() -> None:
    info = inspect_model(str(SEED_MODEL))
    assert info.architectures == ("Qwen3_5ForConditionalGeneration",)
    assert (info.full_attention_layers, info.linear_attention_layers, info.mtp_layers) == (16, 48, 1)
    assert info.features == ("gdn-hybrid", "mtp", "vision")
    assert (info.parameters, info.weight_bytes, info.parameters_source) == (27_781_427_952, 55_562_855_904, "index")


def test_seed_parameter_breakdown_adds_up_to_the_published_total() -> None:
    info = inspect_model(str(SEED_MODEL))
    assert sum(info.parameter_breakdown.values()) == 27_781_427_952


def test_parameters_from_shapes_when_there_is_no_index(tmp_path: Path) -> None:
    info = inspect_model(str(write_config(tmp_path, LLAMA_31_8B)))
    assert (info.parameters, info.parameters_source) == (8_030_261_248, "shapes")
    assert info.weight_bytes == 2 * 8_030_261_248
    assert info.features == ()


def test_config_json_path_is_accepted(tmp_path: Path) -> None:
    info = inspect_model(str(write_config(tmp_path, LLAMA_31_8B) / "config.json"))
    assert info.architectures == ("LlamaForCausalLM",)


@pytest.mark.parametrize(
    ("config", "features"),
    [
        pytest.param(DEEPSEEK_V3, ("mtp", "mla", "moe", "quant-fp8"), id="deepseek-v3"),
        pytest.param(MISTRAL_7B, ("sliding-window",), id="mistral-sliding-window"),
        pytest.param({**MISTRAL_7B, "use_sliding_window": False}, (), id="sliding-window-disabled"),
    ],
)
def test_features_detected_from_config(tmp_path: Path, config: dict, features: tuple[str, ...]) -> None:
    assert inspect_model(str(write_config(tmp_path, config))).features == features


def test_quantized_checkpoint_without_index_is_sized_from_its_quantization_config(tmp_path: Path) -> None:
    # no index to read the bytes from: knowledge/quantscheme.py sizes the fp8 128x128-block
    # scheme (plan sizes the weights the same way), and the size says where it came from
    info = inspect_model(str(write_config(tmp_path, DEEPSEEK_V3)))
    assert info.quantization == "fp8" and info.weight_bytes_source == "quantization config"
    # deepseek-ai/DeepSeek-V3's index: total_size 688,586,727,753 (the weights, scales and the MTP layer)
    assert info.weight_bytes is not None and abs(info.weight_bytes / 688_586_727_753 - 1) < 0.01
    assert info.parameters_source == "shapes" and not info.geometry.checkpoint_bytes  # an estimate, not evidence
    assert info.mla and info.kv_lora_rank == 512 and info.moe_experts == 256


def test_a_published_moe_config_counts_to_its_published_checkpoint_size() -> None:
    # Qwen/Qwen3-Coder-30B-A3B-Instruct as published (tests/data/models/.../SOURCE.md): no index beside
    # the config, so the bytes come from the shapes; the published index says 61,064,245,248 bytes
    info = inspect_model(str(Path(__file__).parent / "data" / "models" / "qwen3-coder-30b-a3b-instruct"))
    assert info.weight_bytes_source == "shapes" and info.parameters_source == "shapes"
    assert (info.parameters, info.weight_bytes) == (30_532_122_624, 61_064_245_248)


def test_full_attention_interval_without_layer_types(tmp_path: Path) -> None:
    config = json.loads((SEED_MODEL / "config.json").read_text())
    del config["text_config"]["layer_types"]
    info = inspect_model(str(write_config(tmp_path, config)))
    assert (info.full_attention_layers, info.linear_attention_layers) == (16, 48)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("{not json", "is not valid JSON", id="malformed"),
        pytest.param("[1, 2]", "must hold a JSON object", id="not-an-object"),
        pytest.param('{"model_type": "llama"}', "has no 'architectures'", id="no-architectures"),
        pytest.param('{"architectures": ["X"]}', "lacks hidden_size", id="no-shapes"),
    ],
)
def test_bad_config_is_bad_input_naming_the_file(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "config.json").write_text(content)
    with pytest.raises(UsageError, match=message):
        inspect_model(str(tmp_path))


def test_missing_model_directory_and_missing_config(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or directory"):
        inspect_model(str(tmp_path / "absent"))
    with pytest.raises(UsageError, match="config.json is missing"):
        inspect_model(str(tmp_path))


def test_index_metadata_wins_over_shapes(tmp_path: Path) -> None:
    shutil.copy(SEED_MODEL / "config.json", tmp_path / "config.json")
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 123}}))
    info = inspect_model(str(tmp_path))
    assert info.weight_bytes == 123 and info.parameters == 27_781_427_952


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("Qwen/Qwen3.6-27B", ("Qwen/Qwen3.6-27B", "main"), id="default-revision"),
        pytest.param("Qwen/Qwen3.6-27B@v1.0", ("Qwen/Qwen3.6-27B", "v1.0"), id="revision"),
        pytest.param("not an id", None, id="spaces"),
    ],
)
def test_split_hub_id(text: str, expected: tuple[str, str] | None) -> None:
    assert split_hub_id(text) == expected


# ----------------------------------------------------------------------------- vision defaults

QWEN36_VISION = {
    "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
    "text_config": {"hidden_size": 5120, "num_hidden_layers": 64, "num_attention_heads": 24, "vocab_size": 248320},
    "vision_config": {"model_type": "qwen3_5", "depth": 27, "hidden_size": 1152, "intermediate_size": 4304,
                      "out_hidden_size": 5120, "in_channels": 3, "spatial_merge_size": 2},
}  # fmt: skip


def test_vision_patch_defaults_are_transformers_qwen3_vl_defaults() -> None:
    """patch_size 16 and temporal_patch_size 2 when vision_config leaves them out: the defaults of
    Qwen3VLVisionConfig and Qwen3_5VisionConfig in transformers (configuration_qwen3_vl.py,
    configuration_qwen3_5.py), so the patch embedding is 3 x 2 x 16 x 16 x 1152 + 1152."""
    assert (QWEN3_VL_PATCH_SIZE, QWEN3_VL_TEMPORAL_PATCH_SIZE) == (16, 2)
    vision = read_geometry(QWEN36_VISION).vision
    assert vision is not None and (vision.kind, vision.patch_size, vision.temporal_patch_size) == ("qwen3-vl", 16, 2)
    explicit = json.loads(json.dumps(QWEN36_VISION))
    explicit["vision_config"].update(patch_size=16, temporal_patch_size=2)
    assert read_geometry(explicit).vision == vision
    info = describe_model(QWEN36_VISION, None, source="qwen3.6-vision")
    # the seed checkpoint's tower (it spells the fields out) counts what the index holds for it
    seed = inspect_model(str(SEED_MODEL))
    assert info.parameter_breakdown["vision"] == seed.parameter_breakdown["vision"]


@pytest.mark.parametrize(
    ("model_type", "vision_type", "deepstack"),
    [
        pytest.param("qwen3_vl", "qwen3_vl", 3, id="qwen3-vl"),
        pytest.param("qwen3_vl_moe", "qwen3_vl_moe", 3, id="qwen3-vl-moe"),
        pytest.param("qwen3_5", "qwen3_5", 0, id="qwen3.5-has-none"),
    ],
)
def test_deepstack_mergers_default_as_transformers_configs_do(model_type: str, vision_type: str, deepstack: int) -> None:
    """Without deepstack_visual_indexes a Qwen3-VL tower has three deepstack mergers ([8, 16, 24] in
    Qwen3VLVisionConfig / Qwen3VLMoeVisionConfig); a Qwen3.5 tower has none."""
    config = json.loads(json.dumps(QWEN36_VISION))
    config["model_type"] = model_type
    config["vision_config"]["model_type"] = vision_type
    vision = read_geometry(config).vision
    assert vision is not None and vision.deepstack_layers == deepstack
    config["vision_config"]["deepstack_visual_indexes"] = []
    assert read_geometry(config).vision.deepstack_layers == 0


# ----------------------------------------------------------------------------- config readers
# read_geometry reads config.json through these.

GDN_SHAPES = {"linear_num_value_heads": 32, "linear_key_head_dim": 128}


@pytest.mark.parametrize(
    ("text", "layers", "architecture", "expected"),
    [
        pytest.param({"layer_types": ["linear_attention"] * 3 + ["full_attention", "linear_attention", "full_attention"]},
                     4, "", (1, 3), id="layer-types-read-up-to-num-hidden-layers"),
        pytest.param({"layer_types": ["mamba", "full_attention", "gated_deltanet", "full_attention"]},
                     4, "", (2, 2), id="mamba-and-gated-deltanet-are-linear"),
        pytest.param({"layer_types": ["full_attention"] * 3}, 4, "", (4, 0), id="layer-types-without-linear-layers"),
        pytest.param({"full_attention_interval": 4}, 48, "Qwen3NextForCausalLM", (12, 36), id="interval-for-a-known-hybrid"),
        pytest.param({"full_attention_interval": 4, **GDN_SHAPES}, 10, "", (2, 8), id="interval-from-linear-shapes"),
        pytest.param({"full_attention_interval": 4}, 32, "LlamaForCausalLM", (32, 0), id="interval-ignored-without-linear-layers"),
    ],
)
def test_attention_layer_counts(text: dict, layers: int, architecture: str, expected: tuple[int, int]) -> None:
    assert attention_layer_counts(text, layers, architecture=architecture) == expected


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param({"quantization_config": {"quant_method": "FP8"}}, "fp8", id="lower-cased"),
        pytest.param({"quantization_config": {"quant_algo": "FP8"}}, "fp8", id="modelopt-quant-algo"),
        pytest.param({"compression_config": {"format": "float-quantized"}}, "float-quantized", id="compression-config"),
        pytest.param({"quantization_config": {}}, None, id="empty"),
        pytest.param({}, None, id="none"),
    ],
)
def test_quant_method(config: dict, expected: str | None) -> None:
    assert quant_method(config) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param({"sliding_window": 4096}, 4096, id="on-by-default"),
        pytest.param({"sliding_window": 32768, "use_sliding_window": False}, None, id="turned-off"),
        pytest.param({"sliding_window": 512, "use_sliding_window": False, "layer_types": ["sliding_attention", "full_attention"]},
                     512, id="sliding-layers-named"),
        pytest.param({"sliding_window": None}, None, id="absent"),
    ],
)
def test_sliding_window(text: dict, expected: int | None) -> None:
    assert sliding_window(text) == expected


def test_read_int_skips_booleans_and_falls_back_to_default() -> None:
    cfg = {"a": True, "b": 7.0, "c": "8"}
    assert read_int(cfg, "a", "b") == 7
    assert read_int(cfg, "c") is None
    assert read_int(cfg, "c", default=0) == 0


def test_moe_layer_count_follows_the_sparse_step_and_dense_layers() -> None:
    text = {"num_experts": 8, "decoder_sparse_step": 2, "mlp_only_layers": [3], "first_k_dense_replace": 1}
    # layers 1, 3, 5, 7 are on the stride; 3 is MLP-only
    assert moe_layer_count(text, 8) == 3
    assert moe_layer_count({"num_experts": 0}, 8) == 0


# google/gemma-3-4b-it's config.json as a public test quotes it (imgbuild search index id 70892509106),
# without the final_logit_softcapping that test adds: no num_attention_heads, head_dim, vocab_size,
# max_position_embeddings or tie_word_embeddings. Published total: 4,300,079,472 parameters.
GEMMA3_4B_IT = {
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
    "image_token_index": 262144, "mm_tokens_per_image": 256, "model_type": "gemma3", "torch_dtype": "bfloat16",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
                    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model",
                      "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False},
}  # fmt: skip


def test_sparse_gemma3_config_takes_transformers_class_defaults() -> None:
    info = describe_model(GEMMA3_4B_IT, None, source="gemma-3-4b-it")
    g = info.geometry
    assert (g.num_attention_heads, g.num_kv_heads, g.head_dim) == (8, 4, 256)
    assert (g.vocab_size, g.max_position_embeddings, g.tie_word_embeddings) == (262_208, 131_072, True)
    assert g.sliding_window == 1024 and g.vision is not None and g.vision.kind == "siglip"
    # the tied embedding counted once, the SigLIP tower and projector from their shapes: within
    # 0.01 % of the published total (the Gemma norms beyond two per layer are not counted)
    assert info.parameter_breakdown["lm_head"] == 0
    assert info.parameters == pytest.approx(4_300_079_472, rel=1e-4)


def test_gemma3_layer_types_default_to_five_sliding_one_full() -> None:
    g = read_geometry(GEMMA3_4B_IT)
    assert g.num_layers == 34 and g.full_attention_layers + g.linear_attention_layers == 34


# google/gemma-3-12b-it's config.json (https://huggingface.co/google/gemma-3-12b-it) as a public repository
# embeds it with "Source: google/gemma-3-12b-it config.json" (imgbuild search index id 52647932717). Kept
# here, not under tests/data/models, so scripts/plan_corpus.py's cases stay the same.
GEMMA3_12B_IT = {
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
    "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
    "model_type": "gemma3", "torch_dtype": "bfloat16",
    "text_config": {"hidden_size": 3840, "intermediate_size": 15360, "model_type": "gemma3_text",
                    "num_attention_heads": 16, "num_hidden_layers": 48, "num_key_value_heads": 8,
                    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model",
                      "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False},
}  # fmt: skip


def test_published_gemma3_12b_config_is_read_as_transformers_reads_it(tmp_path: Path) -> None:
    info = inspect_model(str(write_config(tmp_path, GEMMA3_12B_IT)))
    assert (info.vocab_size, info.head_dim, info.tie_word_embeddings) == (262_208, 256, True)
    assert info.geometry.max_position_embeddings == 131_072
    assert info.parameters == pytest.approx(12.19e9, rel=0.01)  # the model card's 12.2B


def test_model_types_transformers_does_not_ship_pass_unchanged() -> None:
    """A remote-code model type (Kimi K2's config class lives in its repository) has no class defaults."""
    from imgbuild.knowledge.modelinfo import with_transformers_defaults

    kimi = {**LLAMA_31_8B, "architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2"}
    assert with_transformers_defaults(kimi) is kimi


def test_complete_configs_keep_their_own_values() -> None:
    from imgbuild.knowledge.modelinfo import with_transformers_defaults

    filled = with_transformers_defaults(LLAMA_31_8B)
    assert {k: filled[k] for k in LLAMA_31_8B} == LLAMA_31_8B
    assert read_geometry(filled) == read_geometry(LLAMA_31_8B)


def test_mllama_vision_tower_is_counted_as_sglang_builds_it() -> None:
    """Llama-3.2-11B-Vision's tower and projector, from the checkpoint's vision_config. The reference:
    transformers 5.6.0's MllamaForConditionalGeneration built on the meta device from this config.json
    (in a venv of locks/sglang-0.5.11-cp311-x86_64.txt) holds 863,567,379 vision_model and 31,461,376
    multi_modal_projector parameters; SGLang's VisionAttention (layers/attention/vision.py) adds q/k/v and
    out-projection biases transformers' MllamaVisionAttention does not have: 4 x 1280 in each of 32 + 8 layers."""
    g = inspect_model(str(PLAN_MODELS / "llama-3.2-11b-vision-instruct")).geometry
    assert g.vision is not None and g.vision.kind == "mllama"
    _, total = vision_params(g.vision, 1)
    assert total == 863_567_379 + 31_461_376 + 40 * 4 * 1280
    # TP 2: the patch projection, attention and MLP are sharded; embeddings, norms, biases of the
    # row-parallel layers and the projector are not
    per_gpu_tp2, _ = vision_params(g.vision, 2)
    assert total / 2 < per_gpu_tp2 < total


def test_kimi_k25_vision_tower_reads_sglang_config_class_defaults() -> None:
    """Kimi-K2.5's vision_config names its fields vt_num_hidden_layers and vt_hidden_size; SGLang's
    KimiK25VisionConfig (sglang 0.5.9 srt/configs/kimi_k25.py) keeps those as other attributes, so
    adjust_mem_fraction_for_vlm reads the class defaults, 27 layers of 1152. With them the factor is
    0.95 x (1 - 0.1 x (27 x 1152^2 / (24 x 1024^2) - 1)): the real launch's mem_fraction_static
    0.8260405859375 (tests/data/plan_logs/kimi-k2.5.*.log) is 0.908 x that; 24 and 1024 would give 0.95."""
    g = inspect_model(str(PLAN_MODELS / "kimi-k2.5")).geometry
    assert g.vision is not None
    assert (g.vision.num_hidden_layers_attr, g.vision.hidden_size) == (27, 1152)
    assert round(0.908 * vlm_mfs_factor(g.vision), 10) == 0.8260405859


def test_kimi_k25_moonvit_tower_is_counted_as_sglang_builds_it() -> None:
    """sglang 0.5.9 models/kimi_k25.py, module by module at the class defaults the checkpoint's vt_* fields
    leave in place (27 layers, 1152 wide, MLP 4304, 16 heads; 64 x 64 position table; 2 x 2 merge; text 7168):
    patch Conv2d 3*14*14*1152 + 1152 = 678,528; position table 64*64*1152 = 4,718,592; per layer two
    LayerNorms 4,608, MLP2 1152*4304 + 4304 + 4304*1152 + 1152 = 9,921,872, VisionAttention q/k/v
    3*1152*1152 + 3*1152 = 3,984,768 and proj 1152*1152 + 1152 = 1,328,256; final LayerNorm 2,304;
    projector LayerNorm 2,304, 4608*4608 + 4608 = 21,238,272, 4608*7168 + 7168 = 33,037,312.
    At TP 8 only the attention's weights and q/k/v biases are split (proj's bias is not)."""
    g = inspect_model(str(PLAN_MODELS / "kimi-k2.5")).geometry
    assert g.vision is not None and g.vision.kind == "moonvit"
    layer = 4_608 + 9_921_872 + 3_984_768 + 1_328_256
    whole = 678_528 + 4_718_592 + 27 * layer + 2_304 + 2_304 + 21_238_272 + 33_037_312
    per_gpu, total = vision_params(g.vision, 8)
    assert total == whole == 471_143_920
    assert per_gpu == whole - 27 * (3_984_768 + 1_327_104) * 7 / 8


def test_qwen2_vl_and_qwen2_5_vl_towers_are_counted_from_their_shapes() -> None:
    """Qwen2-VL (allenai/olmOCR-7B-0225-preview, a Qwen2-VL-7B fine-tune, published config only): the
    shapes give exactly the checkpoint's bytes, its model.safetensors.index.json total_size 16,582,751,232
    (SOURCE.md cites both). Qwen2.5-VL-7B-Instruct's checkpoint is 16,584,333,312 bytes, 8,292,166,656 bf16
parameters (its index's total_size as public code quotes it: imgbuild search index ids 62225960460,
60935461719, 8559747720 for Qwen-Image's text encoder); SGLang
    (models/qwen2_5_vl.py) allocates the tower's gated MLP at 3424 where the checkpoint has 3420, 4 x
    (2 x 1280 + 2 + 1280) = 15,368 more a block, 32 blocks."""
    qwen2_vl = inspect_model(str(PLAN_MODELS / "olmocr-7b-0225-preview"))
    assert qwen2_vl.geometry.vision is not None and qwen2_vl.geometry.vision.kind == "qwen2-vl"
    assert qwen2_vl.weight_bytes == 16_582_751_232
    qwen25 = inspect_model(str(PLAN_MODELS / "qwen2.5-vl-7b-instruct"))
    assert qwen25.geometry.vision is not None and qwen25.geometry.vision.kind == "qwen2.5-vl"
    assert qwen25.parameters == 8_292_166_656 + 32 * 4 * (2 * 1280 + 2 + 1280)
    # the tower's attention, MLP and merger are split by TP; at TP 2 a GPU holds a little over half
    per_gpu, total = vision_params(qwen25.geometry.vision, 2)
    assert total / 2 < per_gpu < total * 0.51


def test_the_first_qwen_counts_its_mlp_halves_and_qkv_bias_as_sglang_builds_them() -> None:
    """Qwen/Qwen-72B (QWenLMHeadModel, model_type qwen): config.json's intermediate_size 49152 counts w1
    and w2 together, SGLang builds each at 24576 (models/qwen.py QWenMLP(intermediate_size // 2)), and
    c_attn has a bias. The shapes then give the checkpoint's index total_size, 144,575,840,256 bytes
    (SOURCE.md cites it)."""
    assert inspect_model(str(PLAN_MODELS / "qwen-72b")).weight_bytes == 144_575_840_256


def test_nemotron_h_is_counted_block_by_block_as_its_pattern_says() -> None:
    """nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 (plan_logs/models/.../SOURCE.md): 23 Mamba2, 23 MoE and
    6 attention layers, one block and one norm each, relu2 experts without a gate. llama.cpp counts
    the checkpoint at 31,577,940,288 parameters; read as a dense-every-layer model it was ~3x that."""
    from imgbuild.knowledge.memory import mamba_state

    info = inspect_model(str(PLAN_MODELS / "nemotron-3-nano-30b-a3b"))
    g = info.geometry
    assert (g.full_attention_layers, g.linear_attention_layers, g.moe_layers, g.dense_layers) == (6, 23, 23, 0)
    assert g.kv_layers == 6 and g.linear_kind == "mamba2"
    assert info.features == ("mamba2-hybrid", "moe")
    assert info.parameters == 31_577_940_288
    assert info.parameter_breakdown["mlp"] == 0
    assert info.parameter_breakdown["shared_experts"] == 23 * 2 * 2688 * 3712
    # configs/mamba_utils.py Mamba2StateShape at TP 2: conv (4096 + 2*8*128) / 2 x (4 - 1) in bf16,
    # temporal 64 / 2 heads x 64 x 128 in float32, over the 23 Mamba layers
    state = mamba_state(g, attn_tp=2)
    assert (state.conv_bytes, state.ssm_bytes) == (23 * 3072 * 3 * 2, 23 * 32 * 64 * 128 * 4)
    # an ignore list naming one MLP projection: NemotronH's MLP is up and down, no gate
    from imgbuild.knowledge.modelinfo import _sub_shares

    assert _sub_shares(g)["mlp"] == {"gate": 0.0, "up": 0.5, "down": 0.5}


def test_nemotron_h_layers_block_type_reads_like_the_pattern() -> None:
    """configs/nemotron_h.py takes layers_block_type (names) before hybrid_override_pattern (letters)."""
    cfg = json.loads((PLAN_MODELS / "nemotron-3-nano-30b-a3b" / "config.json").read_text())
    names = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp"}
    listed = {k: v for k, v in cfg.items() if k != "hybrid_override_pattern"}
    listed["layers_block_type"] = [names[c] for c in cfg["hybrid_override_pattern"]]
    assert read_geometry(listed) == read_geometry(cfg)


def test_gemma4_reads_its_full_and_sliding_attention_shapes_as_sglang_does() -> None:
    """google/gemma-4-31B-it (tests/data/published_sizes/.../SOURCE.md): its base fields are the sliding
    layers' shape and global_* the full layers'; SGLang takes the full shape as the base and the sliding one
    as swa_* (utils/hf_transformers/config.py; its ModelConfig reads the same in tests/test_sglang_oracle.py).
    The full layers store no V (attention_k_eq_v), and the tower is Gemma 4's own."""
    info = inspect_model(str(Path(__file__).parent / "data" / "published_sizes" / "gemma-4-31b-it"))
    g = info.geometry
    assert (g.head_dim, g.num_kv_heads, g.swa_layers, g.swa_head_dim, g.swa_num_kv_heads) == (512, 4, 50, 256, 16)
    assert g.attention_k_eq_v and g.vision is not None and g.vision.kind == "gemma4"
    # 10 full layers: q and o 32 x 512 wide, k 4 x 512, no v; 50 sliding: q, o 32 x 256, k and v 16 x 256
    full = 2 * 5376 * 32 * 512 + 5376 * 4 * 512
    sliding = 2 * 5376 * 32 * 256 + 2 * 5376 * 16 * 256
    assert info.parameter_breakdown["attention"] == 10 * full + 50 * sliding
    # the index beside the published checkpoint: total_size 62,546,177,752
    assert abs(info.weight_bytes / 62_546_177_752 - 1) < 1e-4


@pytest.mark.parametrize(("rope", "derived"), [
    pytest.param(None, 32768, id="no-rope-scaling"),
    pytest.param({"type": "linear", "factor": 2.0}, 65536, id="linear-factor"),
    pytest.param({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, 32768, id="yarn-original"),
    pytest.param({"rope_type": "llama3", "factor": 8.0}, 32768, id="llama3"),
])
def test_context_length_is_derived_as_sglang_derives_it(tmp_path: Path, rope: dict | None, derived: int) -> None:
    """hf_transformers/common.py get_context_length (0.5.1 to 0.5.23): the factor of a rope_scaling without
    original_max_position_embeddings (and not llama3's) multiplies the length. SGLang 0.5.11's and 0.5.23's own
    ModelConfig read 65536 and 32768 for the linear and yarn variants of this config."""
    config = json.loads((PLAN_MODELS / "qwen2.5-7b-instruct" / "config.json").read_text())
    config["rope_scaling"] = rope
    g = inspect_model(str(write_config(tmp_path, config))).geometry
    assert (g.max_position_embeddings, g.context_length) == (32768, derived)


def test_gemma3_context_follows_the_releases_transformers() -> None:
    """gemma-3-4b-it's text config has rope_scaling {factor 8, linear}: SGLang 0.5.9 (transformers 4.57) derives
    1,048,576; 0.5.11 and 0.5.23 (transformers 5 moves it into per-layer-type rope parameters) 131,072, as their
    ModelConfig reads it (tests/test_sglang_oracle.py)."""
    from imgbuild.knowledge.memory import derived_context

    g = inspect_model(str(PLAN_MODELS / "gemma-3-4b-it")).geometry
    assert [derived_context(g, v) for v in ("0.4.4.post2", "0.5.9", "0.5.11", "0.5.23")] == [1048576, 1048576, 131072, 131072]
