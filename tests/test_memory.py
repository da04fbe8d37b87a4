"""SGLang's memory accounting (imgbuild.knowledge.memory) held against real start-up logs.

Each case in LOG_CASES names a log excerpt under tests/data/logs/ (its first line cites the
public thread) and the launch it came from. The figures are read from the log with
imgbuild.knowledge.triage.read_figures; the planner gets only what the log shows before weights load
(F0 = "Load weight end" avail + mem usage) and must reproduce what SGLang logged after:
weights per GPU within 2 %, KV tokens within 5 %, state pools within 2 %.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from imgbuild.knowledge.memory import (
    GIB,
    MemoryInputs,
    kv_cell_bytes,
    mamba_state,
    plan_memory,
    rules_for,
    split_weights,
    startup_allowance_gib,
    weights_per_gpu_bytes,
)
from imgbuild.knowledge.modelinfo import (
    describe_model,
    inspect_model,
    read_geometry,
)
from imgbuild.knowledge.triage import read_figures

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "data" / "logs"
MODELS = ROOT / "tests" / "data" / "models"
QWEN36 = ROOT / "examples" / "qwen3.6-27b"


def load_geometry(model_dir: Path):
    """The geometry the planner gets: the one modelinfo reads (config.json and the index)."""
    return inspect_model(str(model_dir)).geometry


def log_lines(name: str) -> list[str]:
    lines = (LOGS / name).read_text().splitlines()
    assert lines[0].startswith("# source: "), f"{name}: first line must cite its thread"
    return lines


@dataclass(frozen=True)
class LogCase:
    id: str
    log: str
    model: Path
    version: str
    inputs: dict[str, Any]
    verdict: str
    f0_gib: float | None = None  # when the log shows no "Load weight end" pair
    expect: dict[str, float] = field(default_factory=dict)  # figures the log states in prose


LOG_CASES = [
    LogCase(
        "qwq-32b-l4x4-tp4-0.4.3",
        "qwq-32b.l4x4-tp4.llms-in-clouds.txt",
        MODELS / "qwq-32b",
        "0.4.3.post4",
        dict(tp_size=4, mem_fraction_static=0.85, chunked_prefill_size=2048, cuda_graph_max_bs=80, gpu_total_mib=23034),
        "fits",
    ),
    LogCase(
        "llama-3.1-8b-h100-tp1",
        "llama-3.1-8b.h100-tp1.sglang-pr-4760.txt",
        MODELS / "llama-3.1-8b",
        "0.4.4",
        dict(tp_size=1, mem_fraction_static=0.88, gpu_total_mib=81559),
        "fits",
    ),
    LogCase(
        "qwen3.8-27b-fp8-h100-tp1-0.5.18",
        "qwen3.8-27b-fp8.h100-tp1.otel.txt",
        MODELS / "qwen3.8-27b-fp8",
        "0.5.18",
        dict(tp_size=1, mem_fraction_static=0.85, max_running_requests=32, gpu_total_mib=81559),
        "fits",
        expect={"max_running_requests": 24},
    ),
    LogCase(
        "qwen3.6-27b-a100-tp1-nextn-0.5.17",
        "qwen3.6-27b.a100-80g-tp1-nextn.txt",
        QWEN36,
        "0.5.17",
        dict(
            tp_size=1, mem_fraction_static=0.88, max_running_requests=4, speculative_algorithm="NEXTN",
            speculative_num_steps=5, speculative_eagle_topk=1, speculative_num_draft_tokens=6,
            mamba_ssm_dtype="bfloat16", gpu_total_mib=81920,
        ),
        "fits",
        f0_gib=80.0 - startup_allowance_gib(1),
        expect={"target_weights_gib": 51.05, "draft_load_gib": 5.53, "intermediate_ssm_gib": 2.11},
    ),
    LogCase(
        "qwen3.6-27b-a6000x2-tp2-0.5.9-seed",
        "qwen3.6-27b.a6000x2-tp2.seed.txt",
        QWEN36,
        "0.5.9",
        dict(
            tp_size=2, mem_fraction_static=0.85, context_length=65536, speculative_algorithm="NEXTN",
            speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, gpu_total_mib=49140,
        ),
        "does-not-fit",
        f0_gib=49140 / 1024 - startup_allowance_gib(2),
    ),
    LogCase(
        "qwen3-next-80b-1gpu-int8dq",
        "qwen3-next-80b.int8dq-1gpu.sglang-10736.txt",
        MODELS / "qwen3-next-80b-a3b",
        "0.5.2",
        dict(tp_size=1),
        "does-not-fit",
        f0_gib=95.08 - startup_allowance_gib(1),
    ),
]


def plan_case(case: LogCase):
    lines = log_lines(case.log)
    figures = read_figures(lines)
    f0 = case.f0_gib
    if f0 is None:
        f0 = figures.avail_after_load_gib + figures.weights_gib
    geometry = load_geometry(case.model)
    plan = plan_memory(MemoryInputs(rules=rules_for(case.version), geometry=geometry, free_before_load_gib=f0, **case.inputs))
    return plan, figures, lines


def rel_err(planned: float, logged: float) -> float:
    return abs(planned - logged) / logged


@pytest.mark.parametrize("case", LOG_CASES, ids=[c.id for c in LOG_CASES])
def test_plan_gives_the_verdict_the_log_shows(case: LogCase) -> None:
    plan, _, lines = plan_case(case)
    # a plan inside its own error says borderline; its best estimate (fits) must still be the log's
    verdict = ("fits" if plan.fits else "does-not-fit") if plan.verdict == "borderline" else plan.verdict
    assert verdict == case.verdict, (plan.failure, plan.refusal, plan.problems, plan.margin_gib)
    text = "\n".join(lines)
    if plan.failure and "Not enough memory" in text:
        assert "Not enough memory. Please try to increase --mem-fraction-static." in plan.failure
    if "CUDA out of memory" in text:
        assert plan.failure is not None and "out of memory" in plan.failure


@pytest.mark.parametrize("case", [c for c in LOG_CASES if c.f0_gib is None], ids=lambda c: c.id)
def test_weights_per_gpu_within_2_percent_of_load_weight_end(case: LogCase) -> None:
    plan, figures, _ = plan_case(case)
    assert rel_err(plan.weights_gib, figures.weights_gib) <= 0.02


@pytest.mark.parametrize("case", [c for c in LOG_CASES if c.f0_gib is None], ids=lambda c: c.id)
def test_kv_tokens_within_5_percent_given_the_logged_free_memory(case: LogCase) -> None:
    plan, figures, lines = plan_case(case)
    logged = figures.kv_tokens
    if logged is None:  # 0.5.1x logs "KV Cache is allocated. dtype: ..., #tokens: N", which read_figures skips
        logged = int(next(re.search(r"#tokens: (\d+)", x).group(1) for x in lines if "KV Cache is allocated" in x))
    assert rel_err(plan.kv_tokens, logged) <= 0.05


def test_hybrid_state_pool_within_2_percent_of_mamba_cache_line() -> None:
    case = next(c for c in LOG_CASES if c.id.startswith("qwen3.8-27b-fp8"))
    plan, figures, lines = plan_case(case)
    assert rel_err(plan.mamba_slots, figures.state_slots) <= 0.02
    assert rel_err(plan.state_gib, figures.state_gib) <= 0.02
    # SGLang caps max_running_requests at slots // 5 (extra_buffer with overlap): one slot of 124 apart
    assert abs(plan.max_running_requests - case.expect["max_running_requests"]) <= 1
    assert any("capped to 24" in line for line in lines)


def test_draft_and_intermediate_states_match_the_nextn_log() -> None:
    case = next(c for c in LOG_CASES if c.id.startswith("qwen3.6-27b-a100"))
    plan, _, lines = plan_case(case)
    draft_line = next(line for line in lines if "Qwen3_5ForCausalLMMTP" in line)
    draft_logged = float(re.search(r"mem usage=([\d.]+) GB", draft_line).group(1))
    # the draft runner loads the MTP layer plus its own copy of embed_tokens and lm_head
    assert rel_err(plan.draft_weights_gib + plan.draft_transient_gib, draft_logged) <= 0.02
    assert rel_err(plan.weights_gib, case.expect["target_weights_gib"]) <= 0.02
    assert rel_err(plan.intermediate_ssm_gib, case.expect["intermediate_ssm_gib"]) <= 0.02


def test_qwen36_shapes_account_for_every_parameter_of_the_checkpoint() -> None:
    g = load_geometry(QWEN36)
    split = split_weights(g, tp=1)
    assert split.model_total_params == g.checkpoint_parameters
    assert split.unexplained_params == 0


@pytest.mark.parametrize(
    ("tp", "expected_mib"),
    [(1, 146.81), (2, 146.81 / 2)],
    ids=["tp1", "tp2"],
)
def test_gdn_state_per_request_matches_sglang_mamba_cache_per_req(tp: int, expected_mib: float) -> None:
    """SGLang logged mamba_cache_per_req=146.81 MB for this model at TP 1 (OTel README, tests/data/logs)."""
    state = mamba_state(load_geometry(QWEN36), attn_tp=tp)
    assert state is not None
    assert state.per_request_bytes / 2**20 == pytest.approx(expected_mib, abs=0.01)


def test_bfloat16_ssm_state_halves_the_temporal_part_only() -> None:
    g = load_geometry(QWEN36)
    f32, bf16 = mamba_state(g, attn_tp=2), mamba_state(g, attn_tp=2, ssm_dtype_flag="bfloat16")
    assert bf16.ssm_bytes * 2 == f32.ssm_bytes and bf16.conv_bytes == f32.conv_bytes


@pytest.mark.parametrize(
    ("config", "tp", "kv_dtype", "cell"),
    [
        # only the 16 full-attention layers of the hybrid hold KV; 4 KV heads split over TP 2
        ({"file": QWEN36}, 2, "auto", 2 * (256 + 256) * 16 * 2),
        ({"file": QWEN36}, 8, "auto", 1 * (256 + 256) * 16 * 2),  # fewer KV heads than TP: one each
        ({"file": QWEN36}, 2, "fp8_e4m3", 2 * (256 + 256) * 16 * 1),
        ({"file": MODELS / "llama-3.1-8b"}, 1, "auto", 8 * 256 * 32 * 2),
        # MLA: the latent (kv_lora_rank + rope dims) per layer, the same on every TP rank
        (
            {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "num_hidden_layers": 61,
             "num_attention_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
             "v_head_dim": 128, "torch_dtype": "bfloat16"},
            8, "auto", (512 + 64) * 61 * 2,
        ),
    ],
    ids=["hybrid-tp2", "hybrid-tp8", "hybrid-fp8", "llama", "mla"],
)
def test_kv_cell_bytes_follow_sglang_cell_size(config: dict, tp: int, kv_dtype: str, cell: int) -> None:
    g = load_geometry(config["file"]) if "file" in config else read_geometry(config)
    assert kv_cell_bytes(g, attn_tp=tp, kv_cache_dtype=kv_dtype) == cell


DEEPSEEK_V3 = {
    # published config.json of deepseek-ai/DeepSeek-V3 (the MLA fields SGLang's cell size reads)
    "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "num_hidden_layers": 61,
    "num_attention_heads": 128, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128, "v_head_dim": 128, "torch_dtype": "bfloat16",
}


def test_mla_kv_pool_size_matches_the_deepseek_log() -> None:
    """One latent row per token and layer, page_size extra rows (memory_pool.py MLATokenToKVPool)."""
    lines = log_lines("deepseek-v3.dp-ep-tp8.sglang-6017.txt")
    line = next(x for x in lines if "KV Cache is allocated" in x)
    tokens = int(re.search(r"#tokens: (\d+)", line).group(1))
    logged_gib = float(re.search(r"KV size: ([\d.]+) GB", line).group(1))
    cell = kv_cell_bytes(read_geometry(DEEPSEEK_V3), attn_tp=1)
    assert rel_err((tokens + 1) * cell / GIB, logged_gib) <= 0.02


@pytest.mark.parametrize(
    ("version", "era", "spec_reserve", "refuses"),
    [
        ("0.5.9", "0.5.9", 2048, "auto-disable"),
        ("0.4.3.post4", "0.5.9", 2048, "auto-disable"),
        ("0.5.10", "0.5.10", 4096, "refuse"),
        ("0.5.11", "0.5.10", 4096, "refuse"),
        ("0.5.13", "0.5.10", 4096, "refuse"),
        ("0.5.14", "0.5.14", 0, "extra-buffer"),
        ("0.5.23", "0.5.14", 0, "extra-buffer"),
    ],
)
def test_rules_follow_the_release_that_changed_them(version: str, era: str, spec_reserve: int, refuses: str) -> None:
    rules = rules_for(version)
    assert (rules.era, rules.spec_reserve_mib, rules.hybrid_spec_radix) == (era, spec_reserve, refuses)


def test_default_mem_fraction_follows_server_args_formula_for_a_vlm() -> None:
    """0.5.11 on 2 x RTX A6000 (49140 MiB), TP 2, no speculation: chunked prefill 4096 and graph bs 32
    (the < 60 GiB tier), reserve 512 + 4096*1.5 + 32*2 + 2/8*1024 = 6976 MiB, mfs round(1 - 6976/49140, 3)
    = 0.858; a multimodal model then scales it by 0.95 x (1 - 0.1 x (24*1152^2/(24*1024^2) - 1))."""
    g = load_geometry(QWEN36)
    plan = plan_memory(MemoryInputs(rules=rules_for("0.5.11"), geometry=g, tp_size=2, gpu_total_mib=49140, free_before_load_gib=46.8))
    vit = 1 - 0.1 * (1152**2 / 1024**2 - 1)
    assert plan.mem_fraction_static == pytest.approx(round(1 - 6976 / 49140, 3) * 0.95 * vit)
    assert (plan.chunked_prefill_size, plan.cuda_graph_max_bs) == (4096, 32)


def test_speculation_defaults_to_48_running_requests_and_steps_plus_one_drafts() -> None:
    g = load_geometry(QWEN36)
    plan = plan_memory(
        MemoryInputs(
            rules=rules_for("0.5.11"), geometry=g, tp_size=2, gpu_total_mib=49140, free_before_load_gib=46.8,
            mem_fraction_static=0.85, speculative_algorithm="NEXTN", speculative_num_steps=3,
            speculative_eagle_topk=1, speculative_num_draft_tokens=7, disable_radix_cache=True,
        )
    )
    assert plan.speculative_num_draft_tokens == 4
    assert plan.mamba_slots == 48  # radix cache off and max_running_requests set: one slot per request
    per_req = mamba_state(g, attn_tp=2).per_request_bytes
    assert plan.spec_intermediate_gib == pytest.approx(per_req * 48 * 4 / GIB)


def test_refusal_quotes_sglang_0_5_11_error_exactly() -> None:
    g = load_geometry(QWEN36)
    plan = plan_memory(
        MemoryInputs(rules=rules_for("0.5.11"), geometry=g, tp_size=2, free_before_load_gib=46.8,
                     mem_fraction_static=0.85, speculative_algorithm="NEXTN")
    )
    assert plan.verdict == "refused"
    assert plan.refusal == (
        "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache "
        "when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use "
        "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
    )


def test_weights_per_gpu_shrink_with_tp_but_keep_replicated_parts() -> None:
    g = load_geometry(QWEN36)
    one = weights_per_gpu_bytes(g, split_weights(g, tp=1), tp=1)
    two = weights_per_gpu_bytes(g, split_weights(g, tp=2), tp=2)
    assert one / 2 < two < one / 2 * 1.01


def test_data_modules_import_no_adapter_library() -> None:
    code = (
        "import sys, imgbuild.knowledge.memory, imgbuild.knowledge.launchflags, imgbuild.knowledge.serverargs, imgbuild.flows.plan; "
        "print(sorted(m for m in ('docker', 'httpx', 'pynvml', 'click') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


MODEL_DIRS = [pytest.param(QWEN36, id="qwen3.6-27b")] + [
    pytest.param(path.parent, id=path.parent.name) for path in sorted(MODELS.glob("*/config.json"))
]


@pytest.mark.parametrize("model_dir", MODEL_DIRS)
def test_inspect_and_the_planner_count_the_same_parameters(model_dir: Path) -> None:
    """One counter: inspect's parameters are what the planner's weight split adds up to, and
    for an unquantized checkpoint its weight bytes at TP 1 are those parameters (less the
    MTP layers the target skips) times the dtype."""
    info = inspect_model(str(model_dir))
    g = info.geometry
    split = split_weights(g, tp=1)
    assert sum(info.parameter_breakdown.values()) == split.model_total_params
    assert info.parameters == split.model_total_params + split.unexplained_params
    assert info.parameter_breakdown["mtp"] == split.mtp_total_params
    if not g.quantization:
        target = info.parameters - split.mtp_total_params
        assert weights_per_gpu_bytes(g, split, tp=1) == target * g.dtype_bytes
        assert info.weight_bytes == info.parameters * g.dtype_bytes


@pytest.mark.parametrize("model_dir", MODEL_DIRS)
def test_the_planner_reads_the_geometry_inspect_read(model_dir: Path) -> None:
    """The planner takes ModelInfo.geometry; describe_model's fields are read from it."""
    info = inspect_model(str(model_dir))
    g = info.geometry
    assert g == read_geometry(info.config, checkpoint_bytes=g.checkpoint_bytes, checkpoint_parameters=g.checkpoint_parameters)
    seen = (g.full_attention_layers, g.linear_attention_layers, g.mtp_layers, g.quantization, g.sliding_window,
            g.hidden_size, g.num_layers, g.num_kv_heads, g.vocab_size, g.vision is not None)
    assert seen == (info.full_attention_layers, info.linear_attention_layers, info.mtp_layers, info.quantization,
                    info.sliding_window, info.hidden_size, info.num_hidden_layers, info.num_key_value_heads,
                    info.vocab_size, info.has_vision)


def test_checkpoint_evidence_comes_from_the_index_only() -> None:
    """A count from the shapes is not evidence: without an index the geometry holds no checkpoint figures."""
    with_index = load_geometry(QWEN36)
    assert (with_index.checkpoint_parameters, with_index.checkpoint_bytes) == (27_781_427_952, 55_562_855_904)
    without = load_geometry(MODELS / "llama-3.1-8b")
    assert (without.checkpoint_parameters, without.checkpoint_bytes) == (None, None)


def test_an_unmodelled_vision_tower_is_counted_from_the_index_not_guessed() -> None:
    # Pixtral's tower under a Llava config (mistral-community/pixtral-12b): not one imgbuild builds from shapes
    config = {**LLAMA_LIKE, "vision_config": {"model_type": "pixtral", "hidden_size": 1024, "num_hidden_layers": 24}}
    g = read_geometry(config)
    assert g.vision is not None and g.vision.kind == "opaque"
    assert describe_model(config, None, source="llava-like").parameter_breakdown["vision"] == 0
    index = {"metadata": {"total_parameters": 8_030_261_248 + 303_000_000}}
    info = describe_model(config, index, source="llava-like")
    split = split_weights(info.geometry, tp=2)
    assert split.vision_total_params == 303_000_000 and split.vision_per_gpu_params == 303_000_000


LLAMA_LIKE = {
    "architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
    "text_config": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256},
    "torch_dtype": "bfloat16",
}  # fmt: skip


def test_replanning_reuses_the_weight_split_only_for_the_same_geometry() -> None:
    from dataclasses import replace

    g = load_geometry(QWEN36)
    inp = MemoryInputs(rules_for("0.5.11"), g, tp_size=2, gpu_total_mib=49140, free_before_load_gib=46.8)
    first, again = plan_memory(inp), plan_memory(inp)
    assert again == first
    # a geometry that differs (a new object, equal or not) gets its own split
    fewer_layers = replace(g, num_layers=g.num_layers - 4, linear_attention_layers=g.linear_attention_layers - 4)
    assert plan_memory(replace(inp, geometry=fewer_layers)).weights_gib < first.weights_gib
    assert plan_memory(replace(inp, geometry=replace(g))) == first


# mem_fraction_static defaults SGLang 0.5.11's own parser resolved on 2 x RTX A6000, TP 2
# (tests/oracle/sglang_parse.py on the real wheel): what the reserve counts differs by flag.
MFS_CASES = [
    ("no-flags", [], 0.79344890625),
    ("disable-cuda-graph-still-reserves-graphs", ["--disable-cuda-graph"], 0.79344890625),
    ("cuda-graph-bs-list-sets-the-max", ["--cuda-graph-bs", "4"], 0.794373671875),
    ("chunked-prefill-off-reserves-max-prefill", ["--chunked-prefill-size", "-1"], 0.446661796875),
]


@pytest.mark.parametrize(("flags", "mfs"), [c[1:] for c in MFS_CASES], ids=[c[0] for c in MFS_CASES])
def test_default_mem_fraction_matches_sglang_0_5_11_parser(flags: list[str], mfs: float) -> None:
    from imgbuild.flows.plan import PlanOptions, plan_launch
    from imgbuild.knowledge.matrix import load_matrix

    opts = PlanOptions(model=str(ROOT / "examples/qwen3.6-27b"), flags=("--tp", "2", *flags), gpu="RTX A6000x2",
                       sglang="0.5.11", suggest=False)
    result = plan_launch(opts, matrix=load_matrix(), probe=None, hub=None)
    assert result.plan.mem_fraction_static == pytest.approx(mfs, abs=1e-9)


# Defaults of releases before 0.5.3, each worked from that wheel's server_args.py __post_init__.
LEGACY_MFS_CASES = [
    ("0.4.3-tp4-l4-ladder", "0.4.3.post4", 4, 1, 23034, None, 0.85),
    ("0.4.4-tp1-h100-ladder", "0.4.4", 1, 1, 81559, None, 0.88),
    ("0.4.5-tp2-h200-ladder-any-size", "0.4.5", 2, 1, 143771, None, 0.87),
    ("0.4.6-h200-less-13gib", "0.4.6", 1, 1, 143771, None, (143771 - 13 * 1024) / 143771),
    ("0.4.6.post2-h200-raised-capped", "0.4.6.post2", 1, 1, 143771, None,
     min(0.88 + 48 * 1024 * 0.12 / 143771, (143771 - 18 * 1024) / 143771)),
    ("0.4.6.post2-tp-times-pp", "0.4.6.post2", 2, 2, 81559, None, 0.85),
    ("0.4.7-b200-0.79", "0.4.7", 8, 1, 183359, None, 0.79),
    ("0.4.7-h100-spec-x0.95", "0.4.7", 1, 1, 81559, "EAGLE", 0.88 * 0.95),
    ("0.4.8-a6000-class-reserve", "0.4.8", 2, 1, 49140, None, round((49140 - (9.5 + 1) * 1024) / 49140, 3)),
    ("0.5.2-4090-spec-reserve", "0.5.2", 1, 1, 24564, "EAGLE", round((24564 - (2.9 * 1024 + 2048)) / 24564, 3)),
]


@pytest.mark.parametrize(("version", "tp", "pp", "gpu_mib", "spec", "mfs"), [c[1:] for c in LEGACY_MFS_CASES],
                         ids=[c[0] for c in LEGACY_MFS_CASES])
def test_releases_before_0_5_3_use_their_own_default_mem_fraction(
    version: str, tp: int, pp: int, gpu_mib: int, spec: str | None, mfs: float
) -> None:
    g = load_geometry(MODELS / "llama-3.1-8b")
    extra = {"speculative_algorithm": spec, "speculative_num_steps": 3, "speculative_eagle_topk": 1,
             "speculative_num_draft_tokens": 4} if spec else {}
    plan = plan_memory(MemoryInputs(rules=rules_for(version), geometry=g, tp_size=tp, pp_size=pp, gpu_total_mib=gpu_mib,
                                    free_before_load_gib=gpu_mib / 1024 - 1.5, **extra))
    assert plan.mem_fraction_static == pytest.approx(mfs, abs=1e-9)


# (chunked_prefill_size, largest CUDA-graph batch) of releases before 0.5.4, each worked from that wheel's
# server_args.py and model_executor/cuda_graph_runner.py (get_batch_sizes_to_capture); the logged ones are
# held against the real start-up logs in tests/test_plan_logs.py.
GRAPH_DEFAULT_CASES = [
    ("0.4.0-4090-tp4-8", "0.4.0", 4, 24564, None, "null", 1, (2048, 8)),
    ("0.4.1-4090-tp4-80", "0.4.1", 4, 24564, None, "null", 1, (2048, 80)),
    ("0.4.3-a6000-8192-160", "0.4.3", 2, 49140, None, "null", 1, (8192, 160)),
    ("0.4.5.post3-h200-256", "0.4.5.post3", 1, 143771, None, "null", 1, (8192, 256)),
    ("0.4.6-h200-dp2-160", "0.4.6", 2, 143771, None, "null", 2, (8192, 160)),
    ("0.4.6.post2-h100-pd-16384", "0.4.6.post2", 1, 81559, None, "prefill", 1, (16384, 160)),
    ("0.4.7-h100-spec-152", "0.4.7", 1, 81559, "EAGLE", "null", 1, (8192, 152)),
    ("0.4.7-b200-16384-256", "0.4.7", 8, 183359, None, "null", 1, (16384, 256)),
    ("0.4.8-5090-8", "0.4.8", 2, 32607, None, "null", 1, (2048, 8)),
    ("0.4.9-h200-256", "0.4.9", 1, 143771, None, "null", 1, (8192, 256)),
    ("0.5.2-b200-512", "0.5.2", 8, 183359, None, "null", 1, (16384, 512)),
    ("0.5.3-4090-16", "0.5.3", 1, 24564, None, "null", 1, (2048, 16)),
    ("0.5.4-4090-24", "0.5.4", 1, 24564, None, "null", 1, (2048, 24)),
]


@pytest.mark.parametrize(("version", "tp", "gpu_mib", "spec", "pd", "dp", "expected"), [c[1:] for c in GRAPH_DEFAULT_CASES],
                         ids=[c[0] for c in GRAPH_DEFAULT_CASES])
def test_each_release_fills_in_its_own_chunk_and_graph_batch(
    version: str, tp: int, gpu_mib: int, spec: str | None, pd: str, dp: int, expected: tuple[int, int]
) -> None:
    from imgbuild.knowledge.memory import CudaGraphFlags, release_graph_defaults

    g = load_geometry(MODELS / "llama-3.1-8b")
    inp = MemoryInputs(rules=rules_for(version), geometry=g, tp_size=tp, dp_size=dp, gpu_total_mib=gpu_mib,
                       free_before_load_gib=gpu_mib / 1024 - 1.5, speculative_algorithm=spec,
                       cuda_graphs=CudaGraphFlags(disaggregation_mode=pd))
    assert release_graph_defaults(inp) == expected


@pytest.mark.parametrize(
    ("tp", "nnodes", "nvlink", "extra_ranks"),
    [
        (1, 1, False, 0),
        (2, 1, False, 1),  # a pair may still run SGLang's custom all-reduce over P2P
        (4, 1, False, 0),  # beyond two PCIe-only GPUs it is off: L4 x4 logs 0.86 GiB
        (4, 1, True, 3),  # NVLink H20 x4 logs 2.12 GiB
        (4, 1, None, 3),  # not recorded: the larger allowance, so F0 is not overstated
        (16, 2, True, 7),  # the ranks on one node count: H800 TP 16 over two nodes logs 2.68 GiB
    ],
    ids=["tp1", "pcie-pair", "pcie-tp4", "nvlink-tp4", "unknown-tp4", "two-nodes"],
)
def test_startup_allowance_counts_ranks_that_share_nccl_memory(tp: int, nnodes: int, nvlink: bool | None,
                                                                extra_ranks: int) -> None:
    assert startup_allowance_gib(tp, 1, nnodes, nvlink) == pytest.approx(
        startup_allowance_gib(1) + extra_ranks * (startup_allowance_gib(2) - startup_allowance_gib(1)))


# ----------------------------------------------------------------------------- hybrid state pool by release
# The slot count of the hybrid (Gated DeltaNet) state pool, by the form of handle_max_mamba_cache each
# release has (read in the 0.5.2-0.5.9, 0.5.11, 0.5.14 and 0.5.23 wheels; memory.Rules.hybrid_pool_rule).
QWEN3_NEXT = MODELS / "qwen3-next-80b-a3b"


def _next_plan(version: str, **flags: Any):
    g = load_geometry(QWEN3_NEXT)
    inp = MemoryInputs(rules_for(version), g, tp_size=4, gpu_total_mib=97871, free_before_load_gib=94.0, **flags)
    return plan_memory(inp), mamba_state(g, attn_tp=4).per_request_bytes


def _ratio_slots(plan, per_req: int, ratio: float = 0.9) -> int:
    return int(plan.rest_before_state_gib * ratio / (1 + ratio) * GIB // per_req)


@pytest.mark.parametrize("version", ["0.5.2", "0.5.3"])
def test_hybrid_gdn_before_0_5_4_turns_radix_off_and_keeps_512_slots(version: str) -> None:
    """model_executor/model_runner.py initialize: "Hybrid GDN model detected, disable radix cache";
    max_mamba_cache_size = --max-running-requests, else 512, per DP rank."""
    plan, _ = _next_plan(version)
    assert (plan.radix_cache, plan.mamba_slots) == (False, 512)
    assert plan.max_running_requests <= 512
    assert any("disable radix cache" in n for n in plan.notes)
    plan, _ = _next_plan(version, max_running_requests=64, enable_dp_attention=True, dp_size=2)
    assert plan.mamba_slots == 32


def test_the_0_5_4_pool_gives_each_slot_its_draft_states() -> None:
    """model_runner.py handle_max_mamba_cache (0.5.4-0.5.6): slots = ratio share // (1 + draft tokens),
    and the pool holds slots x (1 + draft tokens) states; the radix cache stays on for Qwen3-Next."""
    plain, per_req = _next_plan("0.5.5")
    assert plain.radix_cache and plain.mamba_slots == _ratio_slots(plain, per_req)
    spec, _ = _next_plan("0.5.5", speculative_algorithm="NEXTN", speculative_num_steps=3,
                         speculative_eagle_topk=1, speculative_num_draft_tokens=4)
    assert spec.radix_cache and spec.mamba_slots == _ratio_slots(spec, per_req) // 5
    assert spec.spec_intermediate_gib == pytest.approx(spec.mamba_slots * per_req * 4 / GIB)


def test_from_0_5_7_an_explicit_mamba_cache_size_is_per_dp_rank() -> None:
    """0.5.7-0.5.13 model_runner_kv_cache_mixin.py and 0.5.14 / 0.5.23 (kv_cache_configurator.py):
    max_mamba_cache_size // dp_size under DP attention; 0.5.7 also caps requests at slots // 5."""
    for version in ("0.5.7", "0.5.9", "0.5.11", "0.5.14", "0.5.23"):
        plan, _ = _next_plan(version, max_mamba_cache_size=600, enable_dp_attention=True, dp_size=2)
        assert plan.mamba_slots == 300, version
    plan, per_req = _next_plan("0.5.7")
    assert plan.radix_cache and plan.mamba_slots == _ratio_slots(plan, per_req)
    assert plan.max_running_requests <= plan.mamba_slots // 5


def test_kimi_linear_keeps_no_radix_cache_until_0_5_14() -> None:
    """server_args.py 0.5.5-0.5.13: "Disabling Radix Cache for KimiLinearForCausalLM as it is not yet
    supported"; 0.5.14 gives it the mamba radix cache. The architecture name alone decides it."""
    g = replace(load_geometry(QWEN3_NEXT), architecture="KimiLinearForCausalLM")
    radix = {v: plan_memory(MemoryInputs(rules_for(v), g, tp_size=4, gpu_total_mib=97871, free_before_load_gib=94.0))
             for v in ("0.5.11", "0.5.14")}
    assert (radix["0.5.11"].radix_cache, radix["0.5.14"].radix_cache) == (False, True)
    assert any("not yet supported" in n for n in radix["0.5.11"].notes)


def test_cpu_offload_moves_decoder_weights_off_the_gpu_up_to_the_budget() -> None:
    """utils/offloader.py OffloaderV1: decoder-layer parameters go to host memory until the offloaded
    bytes reach --cpu-offload-gb x 2**30 per GPU; embeddings and the LM head stay."""
    g = load_geometry(QWEN36)

    def plan(offload: float):
        return plan_memory(MemoryInputs(rules_for("0.5.11"), g, tp_size=2, gpu_total_mib=49140,
                                        free_before_load_gib=46.8, cpu_offload_gb=offload))

    base, ten, all_ = plan(0), plan(10), plan(1000)
    assert base.weights_gib - ten.weights_gib == pytest.approx(10)
    assert ten.kv_tokens > base.kv_tokens
    assert any("--cpu-offload-gb 10" in n for n in ten.notes)
    # everything but the (untied) embedding and LM head shards and the vision tower can go
    kept = 2 * (g.vocab_size / 2) * g.hidden_size * 2 / GIB + split_weights(g, tp=2).vision_per_gpu_params * 2 / GIB
    assert all_.weights_gib == pytest.approx(kept, rel=0.02)


def test_deepseek_sparse_attention_counts_its_indexer_and_its_fp8_layout(tmp_path: Path) -> None:
    # configs/model_config.py is_deepseek_dsa: a DeepSeek architecture with index_topk (DeepSeek-V3.2).
    # The cell SGLang sizes the pool by (model_runner_kv_cache_mixin.py get_cell_size_per_token, 0.5.9):
    # the latent (512 + 64) in the KV dtype plus the indexer's 128 FP8 bytes and a 4-byte scale, per layer
    config = json.loads((ROOT / "tests/data/plan_logs/models/deepseek-v3/config.json").read_text())
    dsa = {**config, "architectures": ["DeepseekV32ForCausalLM"], "index_topk": 2048, "index_head_dim": 128,
           "index_n_heads": 64}
    plans = {}
    for name, cfg, gpu_mib, cc in (("v3-h200", config, 143771, "9.0"), ("v32-h200", dsa, 143771, "9.0"),
                                   ("v32-b200", dsa, 183359, "10.0")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(cfg))
        plans[name] = plan_memory(MemoryInputs(rules=rules_for("0.5.23"), geometry=load_geometry(tmp_path / name),
                                               tp_size=8, gpu_total_mib=gpu_mib, gpu_compute_capability=cc,
                                               free_before_load_gib=gpu_mib / 1024 - 3))
    layers = config["num_hidden_layers"]
    assert plans["v3-h200"].kv_cell_bytes == 576 * 2 * layers
    # Hopper: bfloat16 (server_args' DSA default below SM 10), the indexer beside it
    assert plans["v32-h200"].kv_cell_bytes == 576 * 2 * layers + 132 * layers
    # Blackwell: fp8_e4m3 by default; the pool stores 656 B a layer (scales, bf16 rope) where it was sized by 576
    b200 = plans["v32-b200"]
    assert b200.kv_cell_bytes == 576 * layers + 132 * layers
    assert any("stores 656 B" in n for n in b200.notes)
    assert b200.k_size_gib == pytest.approx((b200.kv_tokens + 64) * (656 + 132) * layers / 2**30, rel=0.01)
    # the pool as a real log prints it: DeepSeek-V3.2-Exp on 8 x B200 (sglang PR 11309, after the fix it
    # brings: "#tokens: 975424", "KV size: 43.67 GB"; GLM-5-FP8's logs show the same 788 B a token and layer)
    logged = plan_memory(MemoryInputs(rules=rules_for("0.5.23"), geometry=load_geometry(tmp_path / "v32-b200"),
                                      tp_size=8, gpu_total_mib=183359, gpu_compute_capability="10.0",
                                      free_before_load_gib=176.0, max_total_tokens=975_424))
    assert logged.kv_tokens == 975_424 and round(logged.k_size_gib, 2) == 43.67
    # NEXTN: the draft's layer is DSA too (is_deepseek_dsa lists DeepseekV3ForCausalLMNextN), its pool
    # holds the target's tokens in the same stored layout
    nextn = plan_memory(MemoryInputs(rules=rules_for("0.5.23"), geometry=load_geometry(tmp_path / "v32-b200"),
                                     tp_size=8, gpu_total_mib=183359, gpu_compute_capability="10.0",
                                     free_before_load_gib=176.0, speculative_algorithm="NEXTN"))
    assert nextn.draft_kv_gib == pytest.approx((nextn.kv_tokens + 64) * (656 + 132) / 2**30)
    # pages of 64 tokens, as SGLang sets for DSA on CUDA whatever --page-size says
    assert b200.kv_tokens % 64 == 0 and plans["v32-h200"].kv_tokens % 64 == 0
    # that excess is taken from what F0 x (1 - mfs) kept back, and a refusal says so rather than
    # printing the reduced figure as F0 x (1 - mfs)
    tight = plan_memory(MemoryInputs(rules=rules_for("0.5.23"), geometry=load_geometry(tmp_path / "v32-b200"),
                                     tp_size=8, gpu_total_mib=183359, gpu_compute_capability="10.0",
                                     free_before_load_gib=176.0, mem_fraction_static=0.985))
    excess = tight.k_size_gib - tight.kv_tokens * tight.kv_cell_bytes / 2**30
    assert excess > 1
    assert any(f"= {tight.slack_gib:.2f} GiB, less {excess:.2f} GiB the FP8 sparse-attention pool stores" in p
               for p in tight.problems), tight.problems
    glm5 = {**dsa, "architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa"}
    (tmp_path / "glm5").mkdir()
    (tmp_path / "glm5" / "config.json").write_text(json.dumps(glm5))
    g = load_geometry(tmp_path / "glm5")
    assert g.mla and g.dsa_indexer  # configs/model_config.py builds MLA for it, and it has the indexer


# ROCm: SGLang scales --mem-fraction-static for the aiter attention backend above an 8K context
# (memory.aiter_mfs_factor; the release files it follows are named there). The factor is read
# from SGLang's source; the launch it explains is tests/data/plan_logs' Qwen3-Next on 4 x MI300X.
DSV3 = ROOT / "tests" / "data" / "plan_logs" / "models" / "deepseek-v3"


def _rocm_mfs(model: Path, version: str, *, platform: str = "rocm", **flags: Any) -> float:
    g = load_geometry(model)
    flags.setdefault("tp_size", 4)
    inp = MemoryInputs(rules_for(version), g, gpu_total_mib=196288, free_before_load_gib=190.0,
                       mem_fraction_static=0.8, platform=platform, **flags)
    return plan_memory(inp).mem_fraction_static


@pytest.mark.parametrize(
    ("version", "platform", "flags", "factor"),
    [
        ("0.5.11", "rocm", {}, 0.85),  # MHA (Gated DeltaNet hybrid): aiter by default
        ("0.5.4.post1", "rocm", {}, 0.90),  # the one release with 0.90
        ("0.4.9", "rocm", {}, 0.85),  # model_runner.py's form
        ("0.4.6.post2", "rocm", {}, 1.0),  # before the rule
        ("0.5.23", "rocm", {}, 0.85),
        ("0.5.11", "cuda", {}, 1.0),
        ("0.5.11", "rocm", {"attention_backend": "triton"}, 1.0),
        ("0.5.11", "rocm", {"context_length": 8192}, 1.0),  # 8,192 is not above 8K
    ],
)
def test_rocm_aiter_scales_mem_fraction_static(version: str, platform: str, flags: dict[str, Any], factor: float) -> None:
    assert _rocm_mfs(QWEN3_NEXT, version, platform=platform, **flags) == pytest.approx(0.8 * factor)


@pytest.mark.parametrize(("tp", "factor"), [(8, 0.85), (4, 1.0), (1, 0.85)])
def test_rocm_mla_takes_aiter_only_at_16_or_128_heads_per_rank(tp: int, factor: float) -> None:
    # DeepSeek-V3's 128 KV heads: 16 per rank at TP 8 and 128 at TP 1 pick aiter, 32 at TP 4 triton
    assert _rocm_mfs(DSV3, "0.5.11", tp_size=tp) == pytest.approx(0.8 * factor)


# openai/gpt-oss-20b's published config.json (tests/data/plan_logs/models/gpt-oss-20b, SOURCE.md cites it):
# 24 layers alternating sliding (128 tokens) and full attention, 8 KV heads of 64
GPT_OSS_20B = ROOT / "tests" / "data" / "plan_logs" / "models" / "gpt-oss-20b"


def _gpt_oss_plan(version: str, **changes: Any):
    inp = MemoryInputs(rules=rules_for(version), geometry=load_geometry(GPT_OSS_20B), tp_size=1,
                       gpu_total_mib=81559, free_before_load_gib=78.8, gpu_compute_capability="9.0")
    return plan_memory(replace(inp, **changes))


def test_gpt_oss_kv_pool_is_split_into_full_and_sliding_parts_as_the_release_does() -> None:
    """pool_configurator.py HybridSWAPoolConfigurator (0.5.10-0.5.23): a token of the full part costs
    F x 12 + 0.8 x S x 12 bytes (F = S = 8 heads x (64 + 64) x 2 B); the sliding part holds 0.8 of it."""
    plan = _gpt_oss_plan("0.5.11")
    per_layer = 8 * (64 + 64) * 2
    assert plan.kv_cell_bytes == int(per_layer * 12 + 0.8 * per_layer * 12)
    one_pool = _gpt_oss_plan("0.5.11", disable_hybrid_swa_memory=True)
    assert one_pool.kv_cell_bytes == per_layer * 24
    # the same bytes hold 24 / (12 + 0.8 x 12) = 1.11 times the tokens of one pool
    assert plan.kv_tokens / one_pool.kv_tokens == pytest.approx(24 / 21.6, rel=1e-4)
    assert any("full_layer_tokens=" in n and "swa_layer_tokens=" in n for n in plan.notes)
    assert plan.k_size_gib + plan.v_size_gib == pytest.approx(one_pool.k_size_gib + one_pool.v_size_gib, rel=1e-3)
    # --swa-full-tokens-ratio 1 gives every layer the same tokens: one pool's count
    assert _gpt_oss_plan("0.5.11", swa_full_tokens_ratio=1.0).kv_tokens == one_pool.kv_tokens


def test_gpt_oss_split_follows_each_releases_server_args() -> None:
    """0.5.2-0.5.6 server_args.py sets disable_hybrid_swa_memory for GPT-OSS; 0.5.7's model_config.py
    splits only MiMo-V2; 0.5.8-0.5.9 split it except on trtllm_mha (the SM 10 default) and, in 0.5.8,
    with speculative decoding; 0.5.10 on split it on every backend."""
    one_pool_cell = 8 * (64 + 64) * 2 * 24
    assert _gpt_oss_plan("0.5.6").kv_cell_bytes == one_pool_cell
    assert _gpt_oss_plan("0.5.7").kv_cell_bytes == one_pool_cell
    assert _gpt_oss_plan("0.5.8").kv_cell_bytes < one_pool_cell
    assert _gpt_oss_plan("0.5.9", gpu_compute_capability="10.0").kv_cell_bytes == one_pool_cell
    assert _gpt_oss_plan("0.5.9", attention_backend="trtllm_mha").kv_cell_bytes == one_pool_cell
    assert _gpt_oss_plan("0.5.11", gpu_compute_capability="10.0").kv_cell_bytes < one_pool_cell
    assert _gpt_oss_plan("0.5.8", speculative_algorithm="EAGLE3").kv_cell_bytes == one_pool_cell


def test_gpt_oss_split_before_0_5_10_sizes_then_splits_a_capped_pool() -> None:
    """0.5.8-0.5.9 (model_runner_kv_cache_mixin.py set_num_tokens_hybrid_swa): --max-total-tokens caps
    the pool sized at F + S per token, which is then split: the full part gets 24 / 21.6 of the cap.
    From 0.5.10 the cap is the full part's."""
    assert _gpt_oss_plan("0.5.9", max_total_tokens=100_000).kv_tokens == int(100_000 * 24 / 21.6)
    assert _gpt_oss_plan("0.5.11", max_total_tokens=100_000).kv_tokens == 100_000
