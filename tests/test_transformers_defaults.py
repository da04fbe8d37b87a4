"""transformers' config-class defaults: scripts/gen_matrix/transformers_defaults.py, the
imgbuild/data/transformers_defaults.json it writes, and modelinfo reading configs through it.

Most tests build a small transformers-shaped wheel (a zip with configuration_*.py files); the
network-marked ones download the real transformers 5.6.0 wheel from PyPI into .cache/wheels
(where the generator caches it) and check that the committed JSON is what it gives.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from imgbuild.knowledge.modelinfo import (
    TRANSFORMERS_DEFAULTS_PATH,
    describe_model,
    inspect_model,
    transformers_defaults,
    with_transformers_defaults,
)

REPO = Path(__file__).resolve().parent.parent
if str(REPO / "scripts") not in sys.path:
    sys.path.insert(0, str(REPO / "scripts"))
import gen_matrix.transformers_defaults as gen_tf  # noqa: E402
from gen_matrix import GenError  # noqa: E402

PLAN_LOG_MODELS = REPO / "tests" / "data" / "plan_logs" / "models"


# --------------------------------------------------------------------------------------
# A small wheel
# --------------------------------------------------------------------------------------

TOY_SOURCES = {
    "transformers/__init__.py": "",
    "transformers/configuration_utils.py": (
        "class PreTrainedConfig:\n"
        "    model_type = ''\n"
        "    sub_configs = {}\n"
        "    dtype: str | None = None\n"
    ),
    "transformers/models/auto/configuration_auto.py": "class AutoConfig:\n    pass\n",
    "transformers/models/other/configuration_other.py": (
        "from ...configuration_utils import PreTrainedConfig\n\n"
        "class OtherVisionConfig(PreTrainedConfig):\n"
        "    model_type = 'other_vision'\n"
        "    patch_size: int = 14\n"
        "    image_size: int | list[int] = 224\n"
    ),
    "transformers/models/toy/configuration_toy.py": (
        "from dataclasses import field\n"
        "from ...configuration_utils import PreTrainedConfig\n"
        "from ..auto import AutoConfig\n"
        "from ..other.configuration_other import OtherVisionConfig\n"
        "from ...utils.type_validators import interval\n\n"
        "WIDTH = 1024\n\n"
        "class ToyTextConfig(PreTrainedConfig):\n"
        "    model_type = 'toy_text'\n"
        "    hidden_size: int = WIDTH\n"
        "    num_hidden_layers: int = 2 * 12\n"
        "    head_dim: int | None = None\n"
        "    vocab_size: int = field(default=32_000)\n"
        "    max_position_embeddings: int = interval(min=1)(default=4096)\n"
        "    deepstack_visual_indexes: tuple[int, ...] = (8, 16)\n"
        "    rope_theta: float = 10000.0\n\n"
        "    def __post_init__(self, **kwargs):\n"
        "        if self.head_dim is None:\n"
        "            self.head_dim = self.hidden_size // 8\n\n"
        "class ToyConfig(PreTrainedConfig):\n"
        "    model_type = 'toy'\n"
        "    sub_configs = {'text_config': ToyTextConfig, 'vision_config': OtherVisionConfig, 'audio_config': AutoConfig}\n"
        "    tie_word_embeddings: bool = True\n\n"
        "class ToySmallConfig(ToyTextConfig):\n"
        "    model_type = 'toy_small'\n"
        "    num_hidden_layers: int = 4\n"
        "    hidden_size: int | None = None\n\n"
        "class ToyAliasConfig(ToyConfig):\n"
        "    '''A deprecated name: no model_type of its own.'''\n"
    ),
}


@pytest.fixture(scope="module")
def toy_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheel = tmp_path_factory.mktemp("wheels") / "transformers-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in TOY_SOURCES.items():
            zf.writestr(name, text)
    return wheel


@pytest.mark.parametrize(
    ("model_type", "expected"),
    [
        pytest.param("toy_text", {"hidden_size": 1024, "num_hidden_layers": 24, "vocab_size": 32_000,
                                  "deepstack_visual_indexes": [8, 16]}, id="literals-constants-field-default"),
        pytest.param("toy", {"tie_word_embeddings": True}, id="composite-own-fields"),
        pytest.param("toy_small", {"num_hidden_layers": 4, "vocab_size": 32_000, "deepstack_visual_indexes": [8, 16]},
                     id="inherits-base-class-and-none-hides-base"),
        pytest.param("other_vision", {"patch_size": 14, "image_size": 224}, id="other-file"),
    ],
)
def test_generator_keeps_static_geometry_defaults_only(toy_wheel: Path, model_type: str, expected: dict) -> None:
    """Computed (head_dim), None, validator-wrapped and non-geometry (rope_theta) defaults are left out."""
    model_types, _notes = gen_tf.read_config_defaults(toy_wheel)
    assert model_types[model_type]["defaults"] == expected


def test_generator_reads_sub_configs_and_skips_auto_config(toy_wheel: Path) -> None:
    model_types, _notes = gen_tf.read_config_defaults(toy_wheel)
    assert model_types["toy"]["sub_configs"] == {"text_config": "toy_text", "vision_config": "other_vision"}
    assert model_types["toy"]["class"] == "ToyConfig"
    assert model_types["toy"]["file"] == "transformers/models/toy/configuration_toy.py"
    assert set(model_types) == {"toy", "toy_text", "toy_small", "other_vision"}  # no alias, no base class


def test_generator_command_writes_the_json_and_counts(toy_wheel: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "transformers_defaults.json"
    assert gen_tf.main(["--version", "9.9.9", "--wheel-dir", str(toy_wheel.parent), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["transformers"] == "9.9.9" and data["fields"] == list(gen_tf.GEOMETRY_FIELDS)
    assert data["model_types"]["toy_text"]["defaults"]["hidden_size"] == 1024
    assert "4 model types from transformers 9.9.9" in capsys.readouterr().err


def test_generator_refuses_a_wheel_dir_without_the_release(tmp_path: Path, capsys) -> None:
    assert gen_tf.main(["--version", "5.6.0", "--wheel-dir", str(tmp_path), "--out", str(tmp_path / "x.json")]) == 2
    assert "no transformers-5.6.0-*.whl" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


# --------------------------------------------------------------------------------------
# The real transformers 5.6.0 wheel
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_defaults() -> dict[str, Any]:
    try:
        wheel = gen_tf.download_transformers_wheel(gen_tf.TRANSFORMERS_VERSION, REPO / ".cache" / "wheels")
    except GenError as exc:
        pytest.skip(f"no transformers {gen_tf.TRANSFORMERS_VERSION} wheel: {exc}")
    data, _notes = gen_tf.build(wheel)
    return data


@pytest.mark.network
@pytest.mark.parametrize(
    ("model_type", "field", "value"),
    [
        pytest.param("gemma3_text", "vocab_size", 262_208, id="gemma3-text-vocab"),
        pytest.param("gemma3_text", "sliding_window", 4096, id="gemma3-text-window"),
        pytest.param("gemma3", "tie_word_embeddings", True, id="gemma3-tied"),
        pytest.param("llama", "vocab_size", 32_000, id="llama-vocab"),
        pytest.param("llama", "max_position_embeddings", 2048, id="llama-context"),
        pytest.param("llama", "head_dim", None, id="llama-head-dim-computed-left-out"),
        pytest.param("llama", "num_key_value_heads", None, id="llama-kv-heads-none-left-out"),
        pytest.param("mistral", "max_position_embeddings", 131_072, id="mistral-4096-times-32"),
        pytest.param("qwen2", "use_sliding_window", False, id="qwen2-window-off"),
        pytest.param("qwen3_5_text", "linear_num_value_heads", 32, id="qwen3.5-gdn"),
        pytest.param("deepseek_v3", "kv_lora_rank", 512, id="deepseek-v3-mla"),
        pytest.param("qwen3_vl_vision", "deepstack_visual_indexes", [8, 16, 24], id="qwen3-vl-deepstack"),
        pytest.param("mllama_vision_model", "patch_size", 14, id="mllama-vision"),
    ],
)
def test_real_wheel_defaults(real_defaults: dict[str, Any], model_type: str, field: str, value: Any) -> None:
    assert real_defaults["model_types"][model_type]["defaults"].get(field) == value


@pytest.mark.network
@pytest.mark.parametrize(
    ("model_type", "sub_configs"),
    [
        pytest.param("gemma3", {"text_config": "gemma3_text", "vision_config": "siglip_vision_model"}, id="gemma3"),
        pytest.param("mllama", {"text_config": "mllama_text_model", "vision_config": "mllama_vision_model"}, id="mllama"),
        pytest.param("qwen3_5", {"text_config": "qwen3_5_text", "vision_config": "qwen3_5_vision"}, id="qwen3.5"),
    ],
)
def test_real_wheel_sub_configs(real_defaults: dict[str, Any], model_type: str, sub_configs: dict) -> None:
    assert real_defaults["model_types"][model_type]["sub_configs"] == sub_configs


@pytest.mark.network
def test_committed_json_is_what_the_generator_gives(real_defaults: dict[str, Any]) -> None:
    """imgbuild/data/transformers_defaults.json is regenerated, never edited:
    python -m scripts.gen_matrix.transformers_defaults"""
    assert TRANSFORMERS_DEFAULTS_PATH.read_text(encoding="utf-8") == gen_tf.render(real_defaults)


# --------------------------------------------------------------------------------------
# The committed data, as modelinfo reads it
# --------------------------------------------------------------------------------------

# The hand-written table the data replaced (transformers 5.6.0, read by hand), less the two
# fields imgbuild never read (Gemma3Config.mm_tokens_per_image, query_pre_attn_scalar).
HAND_WRITTEN_DEFAULTS = {
    "gemma3": {"tie_word_embeddings": True},
    "gemma3_text": {
        "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
        "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096,
    },
    "siglip_vision_model": {
        "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
        "num_channels": 3, "image_size": 224, "patch_size": 16,
    },
    "gemma2": {
        "vocab_size": 256_000, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 8192,
        "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096,
    },
    "gemma": {
        "vocab_size": 256_000, "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28,
        "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "max_position_embeddings": 8192,
        "tie_word_embeddings": True, "attention_bias": False,
    },
}  # fmt: skip


@pytest.mark.parametrize("model_type", sorted(HAND_WRITTEN_DEFAULTS))
def test_generated_defaults_match_the_hand_written_table(model_type: str) -> None:
    assert transformers_defaults()[model_type]["defaults"] == HAND_WRITTEN_DEFAULTS[model_type]


# (vocab, heads, kv heads, head_dim, context, tied, window, layers, full-attention layers in
# layer_types, vision kind, vision positions), parameters: what the hand-written table gave.
@pytest.mark.parametrize(
    ("model", "shapes", "parameters"),
    [
        pytest.param("gemma-3-4b-it", (262_208, 8, 4, 256, 131_072, True, 1024, 34, 5, "siglip", 4096),
                     4_299_887_984, id="gemma-3-4b-it"),
        pytest.param("gemma-3-12b-it", (262_208, 16, 8, 256, 131_072, True, 1024, 48, 8, "siglip", 4096),
                     12_186_931_824, id="gemma-3-12b-it"),
        pytest.param("medgemma-27b-text-it", (262_208, 32, 16, 128, 131_072, True, 1024, 62, 10, None, None),
                     27_008_663_808, id="medgemma-27b-text"),
    ],
)
def test_sparse_gemma_configs_inspect_as_before(model: str, shapes: tuple, parameters: int) -> None:
    info = inspect_model(str(PLAN_LOG_MODELS / model))
    g = info.geometry
    full = sum(1 for t in info.text_config["layer_types"] if t == "full_attention")
    assert (g.vocab_size, g.num_attention_heads, g.num_kv_heads, g.head_dim, g.max_position_embeddings,
            g.tie_word_embeddings, g.sliding_window, g.num_layers, full,
            g.vision.kind if g.vision else None, g.vision.num_position_embeddings if g.vision else None) == shapes
    assert info.parameters == parameters


def test_sparse_llama_config_takes_llama_config_defaults() -> None:
    """Given fields win; the missing ones take LlamaConfig's; computed ones (head_dim) stay computed."""
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
              "num_attention_heads": 16, "num_hidden_layers": 4, "intermediate_size": 8192}
    g = describe_model(config, None, source="sparse-llama").geometry
    assert (g.vocab_size, g.max_position_embeddings, g.tie_word_embeddings) == (32_000, 2048, False)
    assert (g.head_dim, g.num_kv_heads) == (128, 16)


def test_flat_composite_config_keeps_its_top_level_text_fields() -> None:
    """Qwen2.5-VL's config.json is flat: transformers builds text_config from the top level,
    so no default text_config (hidden_size 3584 ...) is made up in its place."""
    config = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
              "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 36, "num_key_value_heads": 2,
              "intermediate_size": 11008, "vocab_size": 151_936,
              "vision_config": {"depth": 32, "hidden_size": 1280, "out_hidden_size": 2048}}
    filled = with_transformers_defaults(config)
    assert "text_config" not in filled
    assert filled["vision_config"]["patch_size"] == 14  # Qwen2_5_VLVisionConfig's default
    assert describe_model(config, None, source="qwen2.5-vl-3b").geometry.hidden_size == 2048


def test_published_llava_config_takes_its_auto_config_sub_configs_defaults() -> None:
    """llava-hf/llava-1.5-7b-hf's text_config names only model_type "llama" (LlavaConfig builds it
    through CONFIG_MAPPING, an AutoConfig sub-config), so LlamaConfig's defaults give the 7B shape;
    its vision_config is CLIPVisionConfig's, counted as SGLang builds the tower (models/clip.py)."""
    info = inspect_model(str(PLAN_LOG_MODELS / "llava-1.5-7b-hf"))
    g = info.geometry
    assert (g.hidden_size, g.num_layers, g.num_attention_heads, g.num_kv_heads, g.vocab_size) == (4096, 32, 32, 32, 32_064)
    assert (g.vision.kind, g.vision.depth, g.vision.num_position_embeddings) == ("clip", 24, 577)
    # LLaMA-7B with the 32,064-token vocabulary, CLIP ViT-L/14-336 (303.5M) and the projector (21.0M): 7.06B
    assert info.parameters == 7_063_427_072
