"""Checkpoint bytes counted from a published config.json alone, held against the checkpoint's published
size (tests/published_sizes.py: each case's SOURCE.md cites both). A local copy without its index is
planned from this count, so an architecture read wrong shows here before it shows in a plan.
`scripts/bench_model_sizes.py` prints the same rows with their errors."""

from __future__ import annotations

import pytest

from published_sizes import SizeCase, cases, measure

TOLERANCE = 0.01  # the count is exact where the shapes are known; 1% leaves room for a stray buffer
# where the count is knowingly short, by how much at most, and why (fix the count rather than add one)
KNOWN_SHORT: dict[str, tuple[float, str]] = {
    # openbmb/MiniCPM-V-2 names its vision tower by a timm model id (vision_encoder:
    # "vit_so400m_patch14_siglip_384.webli") instead of describing it: config.json has no shapes for it
    # or for the resampler, so only the index can size them
    "minicpm-v-2": (0.15, "the vision tower is a timm id, not shapes in config.json"),
    # deepseek-ai/DeepSeek-OCR(-2): vision_config names its encoders (SAM ViT-B with CLIP-L 14, or a Qwen2-0.5B
    # encoder: model_name "deeplip_b_l" / "deepencoderv2") by a few widths; imgbuild does not build them
    # from those (the language model, a DeepSeek-V2 MoE, is counted to the parameter)
    "deepseek-ocr": (0.15, "the SAM + CLIP encoders are not counted from their few config fields"),
    "deepseek-ocr-2": (0.15, "the SAM + Qwen2 encoders are not counted from their few config fields"),
}

CASES = cases()


def test_there_are_published_sizes_to_hold_the_count_against():
    assert len(CASES) >= 28
    assert len({measure(c)["model_type"] for c in CASES}) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_counted_bytes_match_the_published_checkpoint(case: SizeCase):
    row = measure(case)
    assert row["counted"] is not None, f"{case.name}: no byte count from the config"
    if case.name in KNOWN_SHORT:
        most, _why = KNOWN_SHORT[case.name]
        assert -most <= row["error"] < -TOLERANCE, row  # still short, and not by more than stated
    else:
        assert abs(row["error"]) <= TOLERANCE, row
