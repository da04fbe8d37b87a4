"""`imgbuild plan`: the seed's launch and its variants end to end, bad input, the CLI contract."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from imgbuild.cli import cli, main
from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.adapters.gpus import SnapshotProbe
from imgbuild.knowledge.matrix import load_matrix
from imgbuild.flows.plan import PlanOptions, plan_launch

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(ROOT / "examples" / "qwen3.6-27b")
SERVER_ARGS = str(ROOT / "imgbuild" / "data" / "server_args.json")
GPU_SNAPSHOTS = ROOT / "tests" / "data" / "gpus"
SEED_FLAGS = (
    "--tp 2 --mem-fraction-static 0.85 --context-length 32768 --speculative-algorithm NEXTN "
    "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
).split()


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def plan(matrix, *flags: str, sglang: str = "0.5.11", gpu: str | None = "RTX A6000x2", probe=None, **kw):
    opts = PlanOptions(model=MODEL, flags=tuple(flags), gpu=gpu, sglang=sglang, server_args_path=SERVER_ARGS, **kw)
    return plan_launch(opts, matrix=matrix, probe=probe)


def test_plan_refuses_radix_cache_with_spec_on_0_5_11(matrix) -> None:
    result = plan(matrix, *SEED_FLAGS)
    assert result.verdict == "refused" and not result.fits
    assert result.problems[0].startswith(
        "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache"
    )
    assert result.suggestions and all(s.verdict == "fits" for s in result.suggestions)
    # every suggestion makes one of the two changes SGLang's error asks for
    assert all("--disable-radix-cache" in s.flags or "extra_buffer" in s.flags for s in result.suggestions)
    costs = [s.cost for s in result.suggestions]
    assert costs == sorted(costs)


def test_a_later_argument_check_loses_to_the_hybrid_radix_refusal_as_in_sglangs_post_init(matrix) -> None:
    """0.5.10-0.5.13: __post_init__ runs _handle_model_specific_adjustments (whose _handle_mamba_radix_cache
    refuses speculation with the radix cache) before _handle_eplb_and_dispatch; found by a held-back sample
    of tests/oracle/differential.py against SGLang 0.5.11's own parser (--sample 1011 1000)."""
    radix = "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache"
    both = plan(matrix, "--tp", "2", "--speculative-algorithm", "NEXTN", "--enable-eplb")
    assert both.verdict == "refused" and both.problems[0].startswith(radix)
    # alone, or once the radix cache is off, the EPLB check is what SGLang raises (ep_size 1)
    for flags in (("--enable-eplb",), ("--speculative-algorithm", "NEXTN", "--enable-eplb", "--disable-radix-cache")):
        alone = plan(matrix, "--tp", "2", *flags)
        assert alone.verdict == "refused" and alone.problems[0].startswith("AssertionError"), flags


def test_seed_with_disable_radix_cache_runs_out_of_memory_on_0_5_11(matrix) -> None:
    """48 default running requests x 4 draft tokens of 73 MiB hybrid state eat the whole pool."""
    result = plan(matrix, *SEED_FLAGS, "--disable-radix-cache")
    assert result.verdict == "does-not-fit"
    assert "Not enough memory. Please try to increase --mem-fraction-static." in result.problems[0]
    assert result.plan.max_running_requests == 48 and result.plan.mamba_slots == 48
    fixes = {" ".join(s.flags) for s in result.suggestions}
    assert "--mamba-ssm-dtype bfloat16" in fixes
    # each suggestion was re-planned: replaying it gives the same verdict and pool
    first = result.suggestions[0]
    again = plan(matrix, *SEED_FLAGS, "--disable-radix-cache", *first.flags)
    assert (again.verdict, again.plan.kv_tokens) == ("fits", first.kv_tokens)


def test_seed_on_0_5_9_only_warns_then_runs_out_of_memory(matrix) -> None:
    result = plan(matrix, *SEED_FLAGS, sglang="0.5.9")
    assert result.verdict == "does-not-fit"
    assert not result.plan.radix_cache
    assert any("disables the radix cache" in n for n in result.plan.notes)
    assert "self.server_args.mem_fraction_static=0.85" in result.problems[0]


def test_seed_fits_on_0_5_23_where_auto_picks_extra_buffer(matrix) -> None:
    result = plan(matrix, *SEED_FLAGS, sglang="0.5.23")
    assert result.verdict == "fits"
    assert result.plan.mamba_strategy == "extra_buffer"
    assert result.plan.kv_tokens >= 32768



@pytest.mark.parametrize("sglang, flags, refusal", [
    # each outcome as SGLang's own prepare_server_args gave it for the seed model (tests/oracle, 2 x A6000)
    ("0.5.23", ("--page-size", "0"), "ZeroDivisionError: integer modulo by zero"),  # extra_buffer: 256 % 0
    ("0.5.23", ("--page-size", "3"), "AssertionError: "),  # mamba_hook.py's bare assert
    ("0.5.23", ("--page-size", "0", "--disable-overlap-schedule"), "AssertionError: no_buffer only supports page_size=1."),
    ("0.5.23", ("--page-size", "0", "--disable-radix-cache"), None),
    ("0.5.11", ("--page-size", "0"), None),  # no_buffer: the page size is reset to 1
    ("0.5.11", ("--page-size", "3", "--mamba-scheduler-strategy", "extra_buffer"),
     "AssertionError: mamba_track_interval 256 must be divisible by page_size 3"),
])
def test_a_hybrid_models_page_size_is_checked_by_its_mamba_strategy(matrix, sglang, flags, refusal) -> None:
    result = plan(matrix, "--tp", "2", *flags, sglang=sglang)
    if refusal is None:
        assert result.verdict != "refused", result.problems
    else:
        assert result.verdict == "refused" and result.problems[0] == refusal, result.problems


@pytest.mark.parametrize("sglang, flags, refusal", [
    # --enable-linear-replayssm against the mamba strategy SGLang resolves, as its own parser gave it (tests/oracle)
    ("0.5.23", (), "ValueError: --enable-linear-replayssm requires --mamba-radix-cache-strategy no_buffer (the default); "
                   "the extra_buffer ping-pong donation path is not yet supported (follow-up). Got "
                   "--mamba-radix-cache-strategy='extra_buffer'."),  # 0.5.19 on: the strategy it resolved
    ("0.5.16", (), "ValueError: --enable-linear-replayssm requires --mamba-radix-cache-strategy no_buffer (the default); "
                   "the extra_buffer ping-pong donation path is not yet supported (follow-up). Got "
                   "--mamba-radix-cache-strategy='auto'."),  # 0.5.16-0.5.18: the flag's value
    # 0.5.15's message names the field by its old name: SGLang itself raises AttributeError
    ("0.5.15", (), "AttributeError: 'ServerArgs' object has no attribute 'mamba_scheduler_strategy'"),
    ("0.5.23", ("--disable-radix-cache",), None),  # no radix cache: no extra buffer
    ("0.5.23", ("--disable-overlap-schedule",), None),  # auto resolves to no_buffer without overlap or paging
    # then the same function's disaggregation check (found by a held-back sample of tests/oracle/differential.py
    # against 0.5.23's parser): a decode server has no radix cache, so it is this check that refuses
    ("0.5.23", ("--disaggregation-mode", "decode"),
     "ValueError: --enable-linear-replayssm is not supported under PD disaggregation yet (follow-up). Got "
     "--disaggregation-mode='decode'."),
    ("0.5.15", ("--disable-radix-cache", "--disaggregation-mode", "prefill"),
     "ValueError: --enable-linear-replayssm is not supported under PD disaggregation yet (follow-up). Got "
     "--disaggregation-mode='prefill'."),
])
def test_replayssm_is_refused_against_the_resolved_mamba_strategy(matrix, sglang, flags, refusal) -> None:
    result = plan(matrix, "--tp", "2", "--enable-linear-replayssm", *flags, sglang=sglang)
    if refusal is None:
        assert result.verdict != "refused", result.problems
    else:
        assert result.verdict == "refused" and result.problems[0] == refusal, result.problems


@pytest.mark.parametrize("sglang, flags, refusal", [
    ("0.5.23", ("--mamba-radix-cache-strategy", "extra_buffer"),
     "ValueError: --mamba-radix-cache-strategy extra_buffer needs mamba state, got LlamaForCausalLM."),
    # checked inside the model-specific adjustments, before --enable-mis turns the radix cache off
    ("0.5.23", ("--mamba-radix-cache-strategy", "extra_buffer_lazy", "--enable-mis",
                "--attention-backend", "flashinfer"),
     "ValueError: --mamba-radix-cache-strategy extra_buffer_lazy needs mamba state, got LlamaForCausalLM."),
    ("0.5.23", ("--mamba-radix-cache-strategy", "extra_buffer", "--disable-radix-cache"), None),
    ("0.5.20", ("--mamba-radix-cache-strategy", "extra_buffer"), None),  # the check came in 0.5.21
])
def test_an_extra_buffer_strategy_on_a_model_without_mamba_state(matrix, sglang, flags, refusal) -> None:
    """Found by a held-back sample through SGLang 0.5.23's own parser on Qwen2.5-VL 7B."""
    opts = PlanOptions(model=str(ROOT / "tests" / "data" / "models" / "llama-3.1-8b"), flags=("--tp", "2", *flags),
                       gpu="RTX A6000x2", sglang=sglang, server_args_path=SERVER_ARGS)
    result = plan_launch(opts, matrix=matrix)
    if refusal is None:
        assert result.verdict != "refused", result.problems
    else:
        assert result.verdict == "refused" and result.problems[0] == refusal, result.problems


@pytest.mark.parametrize("sglang, threshold, refused", [
    # --disaggregation-decode-host-receive-threshold: 0.5.21 turns host receive on above 0 (its default 0),
    # 0.5.22 on below 1 (its default 1); on a server that is not a PD decode server, host receive is refused
    ("0.5.21", None, False), ("0.5.21", "0.5", True), ("0.5.23", None, False), ("0.5.23", "0.5", True),
])
def test_host_receive_is_read_as_each_release_defines_its_threshold(matrix, sglang, threshold, refused) -> None:
    flags = ("--tp", "2") + (("--disaggregation-decode-host-receive-threshold", threshold) if threshold else ())
    result = plan(matrix, *flags, sglang=sglang)
    assert (result.verdict == "refused") is refused, result.problems
    if refused:
        assert "host_pool is only supported on a PD decode server" in result.problems[0]


@pytest.mark.parametrize("sglang, flags, refusal", [
    # each as the real 0.5.21 and 0.5.23 parsers gave it (pd_disaggregation_hook.py handle_pd_disaggregation)
    ("0.5.21", ("--disaggregation-decode-host-receive-threshold", "2"),
     "ValueError: --disaggregation-decode-host-receive-threshold must be between 0 and 1"),
    ("0.5.23", ("--disaggregation-mode", "decode", "--disaggregation-decode-retraction-backup", "cpu_tensor",
                "--disaggregation-decode-host-receive-threshold", "0.5"),
     "ValueError: Decode host KV buffering requires host_pool retraction"),
    ("0.5.21", ("--disaggregation-decode-retraction-backup", "cpu_tensor", "--disaggregation-decode-host-receive-threshold",
                "0.5"), "ValueError: Decode host KV buffering requires host_pool retraction"),
])
def test_host_receive_refusals_come_in_sglangs_order(matrix, sglang, flags, refusal) -> None:
    result = plan(matrix, "--tp", "2", *flags, sglang=sglang)
    assert result.verdict == "refused" and result.problems[0] == refusal, result.problems

def test_eagle_topk_above_1_without_draft_tokens_keeps_no_intermediate_states(matrix) -> None:
    """SGLang 0.5.23 leaves --speculative-num-draft-tokens None when --speculative-eagle-topk > 1 comes
    alone, and its hybrid pool then holds no intermediate speculative states: a plan, not a crash."""
    flags = ("--tp", "2", "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
             "--speculative-eagle-topk", "4", "--disable-radix-cache")
    alone = plan(matrix, *flags, sglang="0.5.23")
    with_tokens = plan(matrix, *flags, "--speculative-num-draft-tokens", "8", sglang="0.5.23")
    assert alone.verdict == "fits"
    assert with_tokens.plan.kv_tokens < alone.plan.kv_tokens  # the states come out of the KV pool's share


def test_json_has_the_agreed_fields(matrix) -> None:
    data = plan(matrix, *SEED_FLAGS, "--disable-radix-cache").to_dict()
    for key in ("fits", "verdict", "mem_fraction_static", "max_running_requests", "problems", "suggestions"):
        assert key in data
    for key in ("total_gib", "free_before_load_gib", "weights_gib", "kv_cell_bytes", "kv_tokens", "mamba_slots",
                "mamba_state_gib", "draft_gib", "reserve_gib"):
        assert key in data["per_gpu"]
    assert set(data["suggestions"][0]) >= {"flags", "verdict", "kv_tokens"}
    json.dumps(data)


def test_command_line_is_parsed_like_flags(matrix) -> None:
    command = "nohup python -m sglang.launch_server --model-path " + MODEL + " " + " ".join(SEED_FLAGS) + " > log 2>&1 &"
    opts = PlanOptions(command=command, gpu="RTX A6000x2", sglang="0.5.11", server_args_path=SERVER_ARGS)
    result = plan_launch(opts, matrix=matrix)
    assert result.verdict == "refused" and result.launch_flags == tuple(SEED_FLAGS)


def test_an_already_split_command_plans_like_its_text(matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI splits --command once (to choose a Hub) and hands plan the LaunchCommand; plan does not split it again."""
    from imgbuild.flows import plan as plan_flow
    from imgbuild.knowledge.launchflags import split_command

    command = "python -m sglang.launch_server --model-path " + MODEL + " " + " ".join(SEED_FLAGS)
    text = plan_launch(PlanOptions(command=command, gpu="RTX A6000x2", sglang="0.5.11", server_args_path=SERVER_ARGS),
                       matrix=matrix)
    split = split_command(command)

    def no_second_split(_: str) -> None:
        raise AssertionError("plan split the command again")

    monkeypatch.setattr(plan_flow, "split_command", no_second_split)
    opts = PlanOptions(command=split, flags=("--max-running-requests", "8"), gpu="RTX A6000x2", sglang="0.5.11",
                       server_args_path=SERVER_ARGS)
    assert plan_flow.launch_model_and_flags(opts) == (MODEL, tuple(SEED_FLAGS) + ("--max-running-requests", "8"))
    again = plan_launch(replace(opts, flags=()), matrix=matrix)
    assert again.to_dict() == text.to_dict()


def test_plan_reads_the_model_once_and_hands_memory_its_geometry(matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    """modelinfo reads config.json once; memory gets ModelInfo.geometry (check's ModelInfo is reused as it is)."""
    from imgbuild.knowledge import modelinfo

    reads: list[str] = []
    real = modelinfo.read_model_files

    def counting(source: str, **kw):  # noqa: ANN202 - the real signature
        reads.append(source)
        return real(source, **kw)

    monkeypatch.setattr(modelinfo, "read_model_files", counting)
    info = modelinfo.inspect_model(MODEL)
    result = plan_launch(PlanOptions(model=MODEL, flags=("--tp", "2"), gpu="RTX A6000x2", sglang="0.5.11",
                                     server_args_path=SERVER_ARGS), matrix=matrix, model_info=info)
    assert reads == [MODEL]
    assert result.plan.weights_gib > 0 and result.architecture == info.geometry.architecture
    plan_launch(PlanOptions(model=MODEL, gpu="RTX A6000x2", sglang="0.5.11", server_args_path=SERVER_ARGS), matrix=matrix)
    assert reads == [MODEL, MODEL]


def test_live_gpus_come_from_the_probe(matrix) -> None:
    probe = SnapshotProbe(GPU_SNAPSHOTS / "a6000x2-clean.json")
    result = plan(matrix, *SEED_FLAGS, "--disable-radix-cache", "--mamba-ssm-dtype", "bfloat16", gpu=None, probe=probe)
    seen = probe.read().devices
    assert result.gpu_source == "nvml" and result.gpu_count == len(seen)
    assert result.plan.free_before_load_gib == pytest.approx(
        min(d.memory_free_mib for d in seen[:2]) / 1024 - result.allowance_gib
    )


def test_leftover_processes_shrink_f0(matrix) -> None:
    clean = plan(matrix, "--tp", "2", gpu=None, probe=SnapshotProbe(GPU_SNAPSHOTS / "a6000x2-clean.json"))
    busy = plan(matrix, "--tp", "2", gpu=None, probe=SnapshotProbe(GPU_SNAPSHOTS / "a6000x2-leftover.json"))
    assert busy.plan.free_before_load_gib < clean.plan.free_before_load_gib
    assert busy.plan.kv_tokens < clean.plan.kv_tokens


def test_a_real_nvml_read_with_a_process_holding_40_gib_plans_on_what_is_free(matrix) -> None:
    """tests/data/gpus/h200x1-nvml-*.json are imgbuild's NvmlProbe read on a real H200 (scripts/check_nvml.py
    agreed with nvidia-smi on every field), idle and while a python3 process held 40 GiB: the seed's retry
    onto GPUs a dead run still holds is planned on the 99.2 GiB left, not on memory.total."""
    idle = plan(matrix, "--tp", "1", gpu=None, probe=SnapshotProbe(GPU_SNAPSHOTS / "h200x1-nvml-idle.json"))
    held_probe = SnapshotProbe(GPU_SNAPSHOTS / "h200x1-nvml-held.json")
    held = plan(matrix, "--tp", "1", gpu=None, probe=held_probe)
    assert (idle.gpu_source, idle.gpu_count) == ("nvml", 1)
    free_gib = held_probe.read().devices[0].memory_free_mib / 1024
    assert held.plan.free_before_load_gib == pytest.approx(free_gib - held.allowance_gib)
    assert idle.plan.free_before_load_gib - held.plan.free_before_load_gib == pytest.approx(41578 / 1024, abs=0.01)
    assert held.plan.kv_tokens < idle.plan.kv_tokens


@pytest.mark.parametrize(
    ("flags", "gpu", "message"),
    [
        (["--tp", "4"], "RTX A6000x2", "needs 4 GPUs"),
        (["--tp", "5"], "RTX A6000x8", "does not divide the 24 attention heads"),
        (["--tp", "3"], "RTX A6000x4", "one must divide the other"),
        (["--speculative-algoritm", "NEXTN"], "RTX A6000x2", "did you mean --speculative-algorithm"),
        (["--tp", "2"], "Radeon 9000x2", "unknown GPU"),
    ],
    ids=["more-tp-than-gpus", "tp-not-dividing-heads", "tp-not-dividing-kv-heads", "unknown-flag", "unknown-gpu"],
)
def test_bad_input_is_a_usage_error(matrix, flags: list[str], gpu: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        plan(matrix, *flags, gpu=gpu)
    assert message in err.value.one_line()


def test_no_gpu_and_no_driver_is_environment_unavailable(matrix, monkeypatch, tmp_path) -> None:
    empty = tmp_path / "none.json"
    empty.write_text(json.dumps({"driver_version": "", "cuda_driver_version": "", "devices": []}))
    with pytest.raises(EnvironmentUnavailable):
        plan(matrix, "--tp", "1", gpu=None, probe=SnapshotProbe(empty))


@pytest.fixture()
def cli_env(monkeypatch):
    monkeypatch.setenv("IMGBUILD_SERVER_ARGS", SERVER_ARGS)


def test_cli_prints_the_table_then_exits_1_when_refused(cli_env, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["plan", MODEL, "--gpu", "RTX A6000x2", "--sglang", "0.5.11", "--", *SEED_FLAGS])
    assert exit_.value.code == 1
    out, err = capsys.readouterr()
    assert "Load weight end. mem usage" in out and "KV Cache is allocated. #tokens" in out
    assert "verdict: refused" in out
    assert err.startswith("imgbuild: refused: ValueError: Speculative decoding")


def test_cli_json_fits_exits_0(cli_env) -> None:
    result = CliRunner().invoke(
        cli, ["plan", MODEL, "--gpu", "RTX A6000x2", "--sglang", "0.5.23", "--json", "--", *SEED_FLAGS]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["fits"] is True and data["verdict"] == "fits"


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", MODEL, "--gpu", "RTX A6000x2", "--sglang", "0.5.11", "--", "--tp", "4"],
        ["plan", MODEL, "--gpu", "RTX A6000x2", "--sglang", "0.5.11", "--", "--no-such-flag"],
        ["plan", MODEL, "--gpu", "nope", "--sglang", "0.5.11", "--", "--tp", "2"],
    ],
    ids=["tp-too-large", "unknown-flag", "unknown-gpu"],
)
def test_cli_bad_input_is_one_line_exit_2(cli_env, capsys, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("imgbuild: error: ")


def test_suggest_changes_is_a_pure_search_over_memory_plans(matrix) -> None:
    """knowledge.suggest re-plans candidates from the MemoryInputs alone: nothing for a plan
    that fits, and for one that does not, changes that each fit when re-planned."""
    from dataclasses import replace as with_changes

    from imgbuild.knowledge.memory import MemoryInputs, plan_memory, rules_for
    from imgbuild.knowledge.modelinfo import inspect_model
    from imgbuild.knowledge.suggest import GpuView, suggest_changes

    g = inspect_model(MODEL).geometry
    gpus = GpuView("NVIDIA RTX A6000", 2, 49140.0, 47.99 - 0.9 - 0.28, 1.18, "--gpu")

    base = MemoryInputs(rules=rules_for("0.5.11"), geometry=g, tp_size=2, attn_tp_size=2, gpu_total_mib=gpus.total_mib,
                        free_before_load_gib=gpus.free_gib, mem_fraction_static=0.85, context_length=32768)
    fitting = plan_memory(base)
    assert fitting.fits and suggest_changes(base, fitting, gpus) == ()
    # 27B of bfloat16 weights on one 48 GiB GPU: only more GPUs make it fit
    one_gpu = with_changes(base, tp_size=1, attn_tp_size=1, free_before_load_gib=47.99 - 0.9)
    plan = plan_memory(one_gpu)
    assert not plan.fits
    suggestions = suggest_changes(one_gpu, plan, gpus)
    assert suggestions and all(s.verdict == "fits" for s in suggestions)
    assert suggestions[0].flags[:2] == ("--tp-size", "2") and suggestions[0].gpu == "NVIDIA RTX A6000x2"
    assert [s.cost for s in suggestions] == sorted(s.cost for s in suggestions)


LLAMA = str(ROOT / "tests" / "data" / "models" / "llama-3.1-8b")


@pytest.mark.parametrize("flags, sglang, raised", [
    # managers/tp_worker.py: max_req_len = min(context_len - 1, pool - 1) must be > 0, and through
    # 0.5.13 max_req_len - 5 too
    (("--context-length", "3"), "0.5.11", "AssertionError: Memory pool size is too small"),
    (("--context-length", "1"), "0.5.23", "AssertionError: Memory pool size is too small"),
    # ReqToTokenPool's context_len + 4 columns, before that
    (("--context-length", "-5"), "0.5.11", "RuntimeError: Trying to create tensor with negative dimension -1"),
    # check_server_args: chunked_prefill_size % page_size (real 0.5.11 and 0.5.23 raise exactly this)
    (("--page-size", "0"), "0.5.11", "ZeroDivisionError: integer modulo by zero"),
    (("--page-size", "0"), "0.5.23", "ZeroDivisionError: integer modulo by zero"),
    # cuda_graph_runner.py get_batch_sizes_to_capture (0.5.1-0.5.13)
    (("--cuda-graph-max-bs", "-1"), "0.5.11", "AssertionError: capture_bs=[-1]"),
])
def test_flags_sglang_accepts_but_cannot_start_with_are_a_verdict_quoting_its_error(matrix, flags, sglang, raised) -> None:
    opts = PlanOptions(model=LLAMA, flags=flags, gpu="H100 80GB HBM3x1", sglang=sglang, server_args_path=SERVER_ARGS)
    result = plan_launch(opts, matrix=matrix)
    assert not result.fits and result.problems[0] == raised
    assert result.suggestions == ()  # no memory change fixes a flag
    # the same flags with sound values start
    ok = {"--context-length": "8192", "--page-size": "16", "--cuda-graph-max-bs": "8"}[flags[0]]
    assert plan_launch(replace(opts, flags=(flags[0], ok)), matrix=matrix).fits


# ----------------------------------------------------------------------------- the margin, and borderline

LLAMA = str(Path(__file__).parent / "data" / "models" / "llama-3.1-8b")


def _llama_on_l4(matrix, mfs: float, *, suggest: bool = False):
    opts = PlanOptions(model=LLAMA, flags=("--mem-fraction-static", f"{mfs:.3f}", "--context-length", "8192"),
                       gpu="L4", sglang="0.5.11", server_args_path=SERVER_ARGS, suggest=suggest)
    return plan_launch(opts, matrix=matrix)


def test_the_margin_decides_between_fits_borderline_and_does_not_fit(matrix) -> None:
    """Raising --mem-fraction-static walks Llama-3.1-8B on an L4 from fits into borderline (and on to
    does-not-fit): borderline exactly where the margin is inside plan's own error (imgbuild/data/plan_error.json)."""
    seen = set()
    for step in range(70, 100):
        result = _llama_on_l4(matrix, step / 100)
        p, margin = result.plan, result.to_dict()["margin"]
        if p.refusal or p.margin_gib is None or not p.memory_only:
            continue  # low fractions: the KV pool is shorter than --context-length, a problem of its own
        assert margin["headroom_gib"] == round(p.margin_gib, 3) and margin["error_gib"] > 0
        inside = abs(p.margin_gib) < p.margin_error_gib
        expected = "borderline" if inside else ("fits" if p.margin_gib >= 0 else "does-not-fit")
        assert result.verdict == expected and margin["borderline"] == inside, (step, margin)
        # JSON keeps fits: plan's best estimate, whatever the band
        assert result.fits == (p.margin_gib >= 0), (step, margin)
        seen.add(result.verdict)
    assert {"fits", "borderline"} <= seen  # does-not-fit too where the band is under ~0.7 GiB here


def test_a_borderline_plan_exits_1_and_offers_a_change_that_leaves_a_safe_margin(matrix, cli_env, capsys) -> None:
    mfs = next(m / 1000 for m in range(700, 1000, 5) if _llama_on_l4(matrix, m / 1000).verdict == "borderline")
    result = _llama_on_l4(matrix, mfs, suggest=True)
    safe = [s for s in result.suggestions if s.verdict == "fits"]
    assert safe, [s.to_dict() for s in result.suggestions]
    with pytest.raises(SystemExit) as exit_:
        main(["plan", LLAMA, "--gpu", "L4", "--sglang", "0.5.11", "--", "--mem-fraction-static", f"{mfs:.3f}",
              "--context-length", "8192"])
    out, err = capsys.readouterr()
    assert exit_.value.code == 1
    assert "verdict: borderline" in out and "margin: " in out and "plan's own error here" in out
    assert err.startswith("imgbuild: borderline: a margin of ") and "inside plan's own error" in err
    # each change offered as fitting was planned with a margin outside the band (suggest.py)
    assert all(s.verdict == "fits" for s in result.suggestions if s in safe)


@pytest.mark.parametrize("sglang, flags, refused", [
    # validate_mamba_extra_buffer (0.5.14 on): the extra buffer needs the triton linear-attention backend; found by
    # a held-back sample of tests/oracle/differential.py against 0.5.14's parser (seed 77)
    ("0.5.14", ("--mamba-radix-cache-strategy", "extra_buffer_lazy", "--linear-attn-backend", "flashinfer"), True),
    ("0.5.23", ("--mamba-radix-cache-strategy", "extra_buffer", "--linear-attn-backend", "flashinfer"), True),
    ("0.5.23", ("--mamba-radix-cache-strategy", "extra_buffer"), False),
    # without a radix cache nothing is validated; auto resolves to no_buffer off triton
    ("0.5.23", ("--mamba-radix-cache-strategy", "extra_buffer", "--linear-attn-backend", "flashinfer",
                "--disable-radix-cache"), False),
    ("0.5.23", ("--linear-attn-backend", "flashinfer", "--disable-overlap-schedule"), False),
])
def test_an_explicit_extra_buffer_needs_the_triton_linear_attention_backend(matrix, sglang, flags, refused) -> None:
    result = plan(matrix, "--tp", "2", *flags, sglang=sglang)
    message = "AssertionError: extra_buffer is not supported for Qwen3_5ForConditionalGeneration; use no_buffer."
    assert (tuple(result.problems[:1]) == (message,)) == refused, result.problems


def test_the_mamba_strategys_validators_run_before_later_argument_checks_in_0_5_14(matrix) -> None:
    """0.5.14-0.5.18 validate the mamba strategy inside _handle_model_specific_adjustments, before
    _handle_speculative_decoding reads the algorithm's name (a held-back sample against 0.5.14's parser)."""
    result = plan(matrix, "--tp", "2", "--mamba-scheduler-strategy", "x", "--speculative-algorithm", "x",
                  sglang="0.5.14")
    assert result.problems[0] == ("AssertionError: no_buffer do not support overlap schedule. Try to set "
                                  "disable_overlap_schedule=True.")
    # without the strategy, the name's check is the refusal
    alone = plan(matrix, "--tp", "2", "--speculative-algorithm", "x", sglang="0.5.14")
    assert alone.problems[0] == "ValueError: Unknown speculative algorithm name: X"


def test_dsa_runs_with_dp_attention_where_0_5_4_post1_to_0_5_5_force_it(matrix, tmp_path: Path) -> None:
    # server_args.py 0.5.4.post1-0.5.5.post3: "DP attention is enabled for DeepSeek NSA." sets
    # enable_dp_attention and dp_size = tp_size; 0.5.6 and later leave --dp-size as given
    config = json.loads((ROOT / "tests/data/plan_logs/models/deepseek-v3/config.json").read_text())
    config.update(architectures=["DeepseekV32ForCausalLM"], index_topk=2048, index_head_dim=128, index_n_heads=64)
    (tmp_path / "config.json").write_text(json.dumps(config))
    results = {
        v: plan_launch(PlanOptions(model=str(tmp_path), flags=("--tp", "8"), gpu="H200x8", sglang=v), matrix=matrix)
        for v in ("0.5.5", "0.5.6")
    }
    assert any("DP attention, --dp-size 8" in n for n in results["0.5.5"].notes)
    assert not any("DP attention" in n for n in results["0.5.6"].notes)
    # the attention weights (MLA projections, the indexer) are whole on every GPU, not split by 8
    assert results["0.5.5"].plan.weights_gib > results["0.5.6"].plan.weights_gib + 1


def test_a_pool_left_almost_nothing_is_borderline_by_the_pools_not_the_headroom(matrix) -> None:
    """model_runner_kv_cache_mixin.py refuses when nothing is left for the KV pool once the weights are
    in: a pool within plan's own error of nothing is borderline, measured to the pools, however much
    headroom the activations have (the seed's model at TP 2 on H100s, 0.5.2's default mem_fraction_static:
    the Mamba cache takes nearly all of the pool budget)."""
    r = plan(matrix, "--tp", "2", sglang="0.5.2", gpu="H100 80GB HBM3x8")
    p, margin = r.plan, r.margin()
    assert margin["limited_by"] == "pools" and p.verdict == "borderline"
    assert 0 < p.margin_gib < p.margin_error_gib and p.margin_gib < p.slack_gib - p.runtime_need_gib
    # a larger mem_fraction_static leaves the pool room and the headroom decides again
    wide = plan(matrix, "--tp", "2", "--mem-fraction-static", "0.9", sglang="0.5.2", gpu="H100 80GB HBM3x8")
    assert wide.margin()["limited_by"] == "headroom" and wide.plan.verdict == "fits"


def test_plan_says_when_the_release_has_no_model_class_for_the_architecture(matrix) -> None:
    """google/gemma-4-31b-it's published config: Gemma4ForConditionalGeneration is registered from 0.5.11 (the
    matrix's architectures, read from each wheel's models/); on 0.5.9 plan still sizes it but says so."""
    gemma4 = str(ROOT / "tests" / "data" / "published_sizes" / "gemma-4-31b-it")
    said = {}
    for version in ("0.5.9", "0.5.11"):
        opts = PlanOptions(model=gemma4, flags=("--tp", "2"), gpu="RTX A6000x2", sglang=version, suggest=False)
        said[version] = [n for n in plan_launch(opts, matrix=matrix).notes if "has no model class" in n]
    assert said["0.5.11"] == []
    assert len(said["0.5.9"]) == 1 and "Gemma4ForConditionalGeneration (first in 0.5.11)" in said["0.5.9"][0]


def test_a_gptq_checkpoint_on_a_gpu_without_marlin_is_refused_from_0_5_20_with_the_reason(matrix, tmp_path) -> None:
    """Llama 3.1 8B's published config with transformers' GPTQConfig(bits=4, group_size=128, desc_act=False,
    sym=True) quantization_config (as tests/test_sglang_oracle.py writes it with each release's own transformers)."""
    config = json.loads((ROOT / "tests" / "data" / "models" / "llama-3.1-8b" / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False,
                                     "sym": True, "true_sequential": True, "damp_percent": 0.1}
    (tmp_path / "config.json").write_text(json.dumps(config))

    def gptq_plan(version: str, gpu: str, *flags: str):
        opts = PlanOptions(model=str(tmp_path), flags=flags, gpu=gpu, sglang=version, server_args_path=SERVER_ARGS,
                           suggest=False)
        return plan_launch(opts, matrix=matrix)

    t4 = gptq_plan("0.5.23", "T4x1")
    assert t4.verdict == "refused" and t4.problems[0].startswith("ValueError: Unknown quantization method: gptq.")
    note = next(n for n in t4.notes if "Marlin" in n)
    assert "a GPU of sm80 or newer (this one is sm75)" in note and "0.5.19 and earlier" in note
    assert gptq_plan("0.5.19", "T4x1").verdict != "refused"
    a6000 = gptq_plan("0.5.23", "RTX A6000x1")
    assert a6000.verdict == "fits" and not any("Marlin" in n for n in a6000.notes)
    named = gptq_plan("0.5.23", "RTX A6000x1", "--quantization", "gptq")
    assert named.verdict == "refused" and any("pass gptq_marlin" in n for n in named.notes)


def test_dsa_prefill_context_parallel_turns_dp_attention_on_so_dp_groups_share_the_tp_gpus(matrix) -> None:
    """0.5.8-0.5.13 turn DP attention on for DeepSeek sparse attention with prefill context parallel (server_args.py
    _handle_model_specific_adjustments): --dp 2 beside --tp 8 groups 8 GPUs, not 16; the round-robin split (the
    default from 0.5.9) then asserts one group, the in-seq split takes it (both held against 0.5.11's parser in
    tests/test_sglang_oracle.py DSA_CP_CASES). zai-org/GLM-5-FP8's published config."""
    glm5 = str(ROOT / "tests" / "data" / "plan_logs" / "models" / "glm-5-fp8")

    def glm5_plan(*flags: str):
        opts = PlanOptions(model=glm5, flags=("--enable-nsa-prefill-context-parallel", "--tp", "8", "--dp", "2", *flags),
                           gpu="H100 SXMx8", sglang="0.5.11", server_args_path=SERVER_ARGS, suggest=False)
        return plan_launch(opts, matrix=matrix)

    assert glm5_plan().problems[0] == "AssertionError: For round-robin split mode, dp attention is not supported."
    in_seq = glm5_plan("--nsa-prefill-cp-mode", "in-seq-split")
    assert in_seq.verdict != "refused" and in_seq.gpu_count == 8
    assert any("turns DP attention on" in n and "prefill context parallel" in n for n in in_seq.notes)


@pytest.mark.parametrize(("sglang", "flags", "chunk"), [
    ("0.4.3.post4", "--tp 2", 8192),
    ("0.4.3.post4", "--tp 2 --enable-dp-attention", 4096),  # __post_init__ halves it up to 0.4.4
    ("0.4.6", "--tp 4 --dp 4 --enable-dp-attention", 2048),  # _handle_data_parallelism: // dp_size
    ("0.4.6", "--tp 4 --dp 4 --enable-dp-attention --chunked-prefill-size -1", -1),  # (off stays off)
    ("0.5.23", "--tp 4 --attn-dp-size 2", 4096),  # arg_groups/parallel_hook.py: // attn_dp_size
])
def test_dp_attention_divides_the_chunked_prefill_size_among_its_groups(matrix, sglang: str, flags: str,
                                                                         chunk: int) -> None:
    """The chunk SGLang reports is each attention-DP group's (held against 0.5.9-0.5.23's parsers by
    tests/test_sglang_oracle.py's DP_CP_CASES; the 0.4.x rules read from those wheels' server_args.py)."""
    model = str(ROOT / "tests" / "data" / "models" / "llama-3.1-8b")
    opts = PlanOptions(model=model, flags=tuple(flags.split()), gpu="H100 SXMx4", sglang=sglang,
                       server_args_path=SERVER_ARGS)
    assert plan_launch(opts, matrix=matrix).plan.chunked_prefill_size == chunk


@pytest.mark.parametrize(("sglang", "flags", "where"), [
    ("0.5.11", "--tp 2 --dp 4 --enable-dp-attention", "server_args.py _handle_data_parallelism asserts tp_size % dp_size"),
    ("0.5.23", "--tp 2 --attn-dp-size 4", "arg_groups/parallel_hook.py handle_data_parallelism asserts tp_size % attn_dp_size"),
    ("0.5.11", "--tp 2 --enable-eplb", "server_args.py _handle_eplb_and_dispatch asserts ep_size > 1"),
])
def test_a_bare_assert_is_refused_as_sglang_prints_it_with_a_note_on_what_it_asserts(
        matrix, sglang: str, flags: str, where: str) -> None:
    opts = PlanOptions(model=str(ROOT / "tests" / "data" / "models" / "llama-3.1-8b"), flags=tuple(flags.split()),
                       gpu="H100 SXMx4", sglang=sglang, server_args_path=SERVER_ARGS)
    result = plan_launch(opts, matrix=matrix)
    assert result.verdict == "refused" and result.problems[0] == "AssertionError: "
    assert any(n.startswith(f"SGLang's AssertionError has no message: {where}") for n in result.notes)
