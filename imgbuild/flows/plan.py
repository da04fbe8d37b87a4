"""`imgbuild plan`: will these launch flags fit these GPUs, by SGLang's own accounting.

Flow: resolve the SGLang version and the GPUs, parse the flags against that
version's flag table (imgbuild.knowledge.serverargs), check what SGLang checks at argument
parsing, size the pools the way that version does (imgbuild.knowledge.memory), then
re-plan candidate changes and rank the ones that fit by what they cost the user
(imgbuild.knowledge.suggest). plan_lines writes the result as text for the CLI.
Adapters come in as arguments: the GPU probe, the matrix, the Hub fetcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from packaging.version import Version

from imgbuild.errors import UsageError
from imgbuild.knowledge.argchecks import first_start_failure, gptq_without_kernel, refusal
from imgbuild.knowledge.launchflags import LaunchCommand, LaunchConfig, parse_flags, split_command
from imgbuild.knowledge.memory import (
    MemoryInputs,
    MemoryPlan,
    Rules,
    backend_disables_radix_cache,
    deterministic_disables_radix_cache,
    dllm_disables_radix_cache,
    cuda_graph_flags,
    explain_mem_fraction,
    plan_memory,
    rules_for,
    runs_as_text,
    startup_allowance_gib,
)
from imgbuild.knowledge.matrix import GPU_PLATFORMS
from imgbuild.knowledge.modelinfo import ModelGeometry, ModelInfo
from imgbuild.knowledge.planerror import margin_error_share, plan_error
from imgbuild.knowledge.suggest import GpuView, Suggestion, suggest_changes

__all__ = [
    "GpuView",
    "PlanOptions",
    "PlanResult",
    "Suggestion",
    "check_parallelism",
    "launch_model_and_flags",
    "memory_inputs",
    "plan_launch",
    "plan_lines",
    "read_gpus",
    "resolve_version",
    "suggest_changes",
]

@dataclass(frozen=True, kw_only=True)
class PlanOptions:
    model: str | None = None  # local dir, config.json, or Hugging Face id
    flags: tuple[str, ...] = ()  # launch flags as passed to sglang.launch_server
    command: str | LaunchCommand | None = None  # a whole launch command line, or one split_command already split
    gpu: str | None = None  # "RTX A6000x2"; None: the live GPUs
    sglang: str | None = None  # None: the installed SGLang, else the newest that serves the model
    suggest: bool = True
    server_args_path: str | None = None  # flag data (default: the shipped server_args.json)


@dataclass(frozen=True)
class PlanResult:
    model: str
    architecture: str
    sglang: str
    sglang_source: str  # "--sglang" | "installed" | "matrix"
    flag_data_version: str
    gpu_name: str
    gpu_count: int
    gpu_source: str  # "--gpu" | "nvml"
    gpu_total_mib: float
    allowance_gib: float
    launch_flags: tuple[str, ...]
    plan: MemoryPlan
    suggestions: tuple[Suggestion, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    draft_model_path: str | None = None  # --speculative-draft-model-path to another model

    @property
    def verdict(self) -> str:
        return self.plan.verdict

    @property
    def fits(self) -> bool:
        return self.plan.fits

    @property
    def problems(self) -> tuple[str, ...]:
        first = tuple(p for p in (self.plan.refusal, self.plan.failure) if p)
        return first + self.plan.problems

    def explanation(self) -> str:
        return explain_mem_fraction(self.plan)

    def margin(self) -> dict[str, Any]:
        """How far from the edge, per GPU, and plan's own error there (knowledge/planerror.py)."""
        p, record = self.plan, plan_error()
        return {
            # the margin to the nearest limit (limited_by): the runtime headroom, the KV pool's room, the weights
            "headroom_gib": None if p.margin_gib is None else round(p.margin_gib, 3),
            "limited_by": p.margin_limit,
            "error_gib": round(p.margin_error_gib, 3),
            "error_share_of_f0": margin_error_share(),
            "borderline": p.borderline,
            "error_source": f"{record.get('logs', 0)} real start-up logs ({record.get('written_by', 'no record')})",
        }

    def to_dict(self) -> dict[str, Any]:
        p = self.plan
        return {
            "model": self.model,
            "architecture": self.architecture,
            "sglang": self.sglang,
            "sglang_source": self.sglang_source,
            "rules": p.rules.era,
            "gpu": {"name": self.gpu_name, "count": self.gpu_count, "source": self.gpu_source, "platform": p.platform},
            "launch_flags": list(self.launch_flags),
            "fits": self.fits,
            "verdict": self.verdict,
            "sglang_error": p.refusal or p.failure,
            "mem_fraction_static": p.mem_fraction_static,
            "mem_fraction_static_default": p.mem_fraction_static_default,
            "mem_fraction_static_aiter_factor": p.aiter_factor,  # ROCm's aiter backend (knowledge/memory.py)
            "max_running_requests": p.max_running_requests,
            "context_length": p.context_length,
            "chunked_prefill_size": p.chunked_prefill_size,
            "cuda_graph_max_bs": p.cuda_graph_max_bs,
            "radix_cache": p.radix_cache,
            "mamba_strategy": p.mamba_strategy,
            "speculative_algorithm": p.speculative_algorithm,
            "speculative_num_draft_tokens": p.speculative_num_draft_tokens,
            "per_gpu": {
                "total_gib": round(self.gpu_total_mib / 1024, 3),
                "startup_allowance_gib": round(self.allowance_gib, 3),
                "free_before_load_gib": round(p.free_before_load_gib, 3),
                "weights_gib": round(p.weights_gib, 3),
                "avail_after_load_gib": round(p.avail_after_load_gib, 3),
                "slack_gib": round(p.slack_gib, 3),
                "kv_cell_bytes": p.kv_cell_bytes,
                "kv_tokens": p.kv_tokens,
                "kv_gib": round(p.k_size_gib + p.v_size_gib, 3),
                "mamba_slots": p.mamba_slots,
                "mamba_state_gib": round(p.state_gib, 3),
                "mamba_per_request_bytes": p.mamba_per_request_bytes,
                "draft_gib": round(p.draft_gib, 3),
                "draft_weights_gib": round(p.draft_weights_gib, 3),
                "draft_kv_gib": round(p.draft_kv_gib, 3),
                "draft_transient_gib": round(p.draft_transient_gib, 3),
                "reserve_gib": round(p.reserve_gib, 3),
                "intermediate_ssm_gib": round(p.intermediate_ssm_gib, 3),
                "req_to_token_gib": round(p.req_to_token_gib, 3),
                "runtime_need_gib": round(p.runtime_need_gib, 3),
                "memory_pool_end_avail_gib": round(p.memory_pool_end_avail_gib, 3),
            },
            "margin": self.margin(),
            "problems": list(self.problems),
            "notes": list(self.notes + p.notes),
            "suggestions": [s.to_dict() for s in self.suggestions],
            "explanation": self.explanation(),
        }


# ----------------------------------------------------------------------------- inputs


def _installed_sglang() -> str | None:
    # the version of an installed SGLang, without importing it (importing sglang is slow and needs a GPU stack)
    from importlib import metadata

    try:
        return metadata.version("sglang")
    except metadata.PackageNotFoundError:
        return None


def resolve_version(requested: str | None, *, architecture: str, matrix: Any) -> tuple[str, str]:
    if requested:
        return requested, "--sglang"
    installed = _installed_sglang()
    if installed:
        return installed, "installed"
    for engine in reversed(matrix.engines):
        if architecture in engine.architectures:
            return engine.version, "matrix"
    raise UsageError(
        f"no SGLang in the matrix registers {architecture}",
        hint="pass --sglang VERSION, or run `imgbuild check` for what serves this model",
    )


def read_gpus(options_gpu: str | None, *, matrix: Any, probe: Any, world: int, tp: int, pp: int, nnodes: int = 1) -> GpuView:
    if options_gpu:
        from imgbuild.knowledge.customgpu import parse_custom_gpu

        custom = parse_custom_gpu(options_gpu)  # '24GiBx2': a GPU matrix.yaml does not list
        if custom is not None:
            name, count, mib = custom
            allowance = startup_allowance_gib(tp, pp, nnodes)
            return GpuView(name, count, float(mib), mib / 1024 - allowance, allowance, "--gpu")
        spec, count = matrix.resolve_gpu(options_gpu, platforms=GPU_PLATFORMS)
        allowance = startup_allowance_gib(tp, pp, nnodes, spec.nvlink)
        return GpuView(spec.name, count, float(spec.memory_mib), spec.memory_mib / 1024 - allowance, allowance, "--gpu",
                       nvlink=spec.nvlink, platform=spec.platform)
    if probe is None:
        raise UsageError("no --gpu and no GPU probe", hint="pass --gpu NAME[xN] to plan for GPUs you are not on")
    host = probe.read()
    if not host.devices:
        from imgbuild.errors import EnvironmentUnavailable

        raise EnvironmentUnavailable("NVML reports no GPUs on this host", hint="pass --gpu NAME[xN] to plan for other GPUs")
    used = host.devices[: max(1, world)]
    row = matrix.gpu_by_smi_name(host.devices[0].name) if matrix is not None else None
    nvlink = row.nvlink if row is not None else None
    allowance = startup_allowance_gib(tp, pp, nnodes, nvlink)
    free = min(d.memory_free_mib for d in used) / 1024 - allowance
    total = min(d.memory_total_mib for d in host.devices)
    holders = tuple(
        f"GPU {d.index}: pid {proc.pid} ({proc.name}) holds {proc.used_memory_mib} MiB"
        for d in used
        for proc in d.processes
    )
    return GpuView(host.devices[0].name, len(host.devices), float(total), free, allowance, "nvml", holders, nvlink)


def check_parallelism(g: ModelGeometry, launch: LaunchConfig, gpu_count: int, gpu_name: str, version: str) -> None:
    """Impossible TP/PP: what SGLang asserts while building the model, said before it loads."""
    tp, pp = launch.tp_size, launch.pp_size
    layout = launch.dp_layout(version)
    attn_tp, dp = layout.attn_tp_size(tp), layout.replicas
    world = tp * pp * dp
    if tp < 1 or pp < 1:
        raise UsageError(f"--tp-size {tp} / --pp-size {pp}: must be at least 1")
    if g.kv_layers < 1:  # every pool SGLang sizes is per KV layer (pool_configurator.py's cell size)
        raise UsageError(f"{g.architecture}: config.json leaves no layer with a KV cache "
                         f"({g.num_layers} layers, {g.full_attention_layers} of them full attention)",
                         hint="check num_hidden_layers against layer_types / full_attention_interval")
    if world > gpu_count:
        raise UsageError(
            f"--tp-size {tp} x --pp-size {pp}" + (f" x --dp-size {dp}" if dp > 1 else "")
            + f" needs {world} GPUs; {gpu_name} x{gpu_count} has {gpu_count}",
            hint=f"lower --tp-size or plan with --gpu '{gpu_name}x{world}'",
        )
    if g.num_attention_heads and g.num_attention_heads % attn_tp:
        raise UsageError(
            f"--tp-size {attn_tp} does not divide the {g.num_attention_heads} attention heads of {g.architecture}",
            hint="SGLang asserts total_num_heads % tp_size == 0 while building the attention layers; pick a divisor",
        )
    kv = g.num_kv_heads
    if kv and not g.mla and ((kv >= attn_tp and kv % attn_tp) or (kv < attn_tp and attn_tp % kv)):
        raise UsageError(
            f"--tp-size {attn_tp} and the {kv} KV heads of {g.architecture}: one must divide the other",
            hint="SGLang asserts this in the attention layer (models/*.py num_kv_heads)",
        )
    # LFM2's ShortConv state is one head of the full width: sglang configs/lfm2.py passes num_heads=tp_size
    # to Mamba2StateShape so that divide() holds for any TP
    linear_heads = () if g.linear_kind == "short_conv" else (
        ("linear-attention key", g.linear_num_key_heads), ("linear-attention value", g.linear_num_value_heads))
    for what, heads in linear_heads:
        if heads and heads % attn_tp:
            raise UsageError(
                f"--tp-size {attn_tp} does not divide the {heads} {what} heads of {g.architecture}",
                hint="SGLang's divide() asserts it for the Gated DeltaNet state shapes (configs/mamba_utils.py)",
            )


def _decode_forces_chunk_cache(version: str, values: Any) -> bool:
    """A decode server runs without the radix cache unless
    --disaggregation-decode-enable-radix-cache (0.5.11+) asks for it
    (server_args.py _handle_pd_disaggregation from 0.4.4.post2; arg_groups/pd_disaggregation_hook.py
    handle_pd_disaggregation in 0.5.15-0.5.23)."""
    if values.get("disaggregation_mode") != "decode" or not (Version("0.4.4.post2") <= Version(version) <= Version("0.5.23")):
        return False
    return not values.get("disaggregation_decode_enable_radix_cache")


def _dsa_forced_dp_attention(launch: LaunchConfig, g: ModelGeometry, version: str, notes: list[str]) -> LaunchConfig:
    """DP attention that SGLang turns on for DeepSeek sparse attention on a CUDA or ROCm GPU (server_args.py
    _handle_model_specific_adjustments): 0.5.4.post1-0.5.5.post3 with one attention group per GPU ("DP attention is
    enabled for DeepSeek NSA.", dp_size = tp_size over the flags); 0.5.6-0.5.7 keeping --dp-size; 0.5.8-0.5.13 only
    for prefill context parallel (--enable-nsa-prefill-context-parallel, --enable-dsa-... in 0.5.13), both split
    modes. Later releases leave it to the flags."""
    release, tp, dp = Version(version), launch.tp_size, launch.dp_size
    if not (g.dsa_indexer and g.mla) or launch.enable_dp_attention and (dp == tp or release >= Version("0.5.6")):
        return launch
    cp = launch.values.get("enable_dsa_prefill_context_parallel" if release >= Version("0.5.13")
                           else "enable_nsa_prefill_context_parallel")
    if Version("0.5.4.post1") <= release < Version("0.5.6"):
        notes.append(f"SGLang {version} runs DeepSeek sparse attention with DP attention, --dp-size {tp}: "
                     "attention weights are whole on every GPU")
        return replace(launch, values={**launch.values, "enable_dp_attention": True, "dp_size": tp})
    if Version("0.5.6") <= release < Version("0.5.8") or (Version("0.5.8") <= release < Version("0.5.14") and cp):
        if dp > 1:
            notes.append(f"SGLang {version} turns DP attention on for DeepSeek sparse attention"
                         + (" with prefill context parallel" if cp else "") + f": --dp-size {dp} groups the {tp} GPUs")
        return replace(launch, values={**launch.values, "enable_dp_attention": True})
    return launch


def _piecewise_flag(rules: Rules, v: dict, model_path: str) -> bool | None:
    """Piecewise CUDA graphs as the flags decide them, None where the release's default for the model decides
    (knowledge/memory.py). 0.5.10-0.5.13's _handle_piecewise_cuda_graph (server_args.py) turns them off for
    these settings before _handle_gpu_memory_settings reserves their memory; --enforce-piecewise-cuda-graph
    skips every such turning off. (0.5.14 on, the reserve does not follow these flags: held against 0.5.23.)"""
    if v.get("enforce_piecewise_cuda_graph"):
        return True
    release = Version(rules.version)
    off = rules.era == "0.5.10" and any((
        release < Version("0.5.11") and v.get("speculative_algorithm") is not None,  # (0.5.10 only)
        v.get("moe_a2a_backend") not in (None, "none"),
        bool(v.get("lora_paths")) or bool(v.get("enable_lora")),
        v.get("load_format") == "gguf" or v.get("quantization") == "gguf" or model_path.endswith(".gguf"),
        v.get("dllm_algorithm") is not None,
        float(v.get("cpu_offload_gb") or 0) > 0 or bool(v.get("enable_hierarchical_cache")),
        bool(v.get("enable_deterministic_inference")),
        v.get("disaggregation_mode") not in (None, "null"),
        bool(v.get("enable_symm_mem")),
        bool(v.get("enable_eplb")) or v.get("expert_distribution_recorder_mode") is not None,
        int(v.get("attn_cp_size") or v.get("attention_context_parallel_size") or 1) > 1,  # (its dest in 0.5.10-0.5.13)
        release >= Version("0.5.11") and bool(v.get("debug_cuda_graph")),
        release >= Version("0.5.13") and bool(v.get("enable_dsa_prefill_context_parallel")),
    ))
    if v.get("disable_piecewise_cuda_graph") or off:
        return False
    return True if v.get("enable_piecewise_cuda_graph") else None


def memory_inputs(rules: Rules, g: ModelGeometry, launch: LaunchConfig, gpus: GpuView, model_path: str, *,
                  compute_capability: str | None = None) -> MemoryInputs:
    """The planner's inputs from the parsed launch. Over 60 lines because it is one keyword per
    MemoryInputs field the flags set. ``compute_capability``: the GPU's (matrix.yaml); a CUDA GPU's also
    feeds the GPU-generation refusals (knowledge/argchecks.py), a ROCm GPU's gfx version is no SM."""
    v = launch.values
    piecewise = _piecewise_flag(rules, v, model_path)
    layout = launch.dp_layout(rules.version)
    draft_path = v.get("speculative_draft_model_path")
    cuda_cc = compute_capability if gpus.platform == "cuda" else None
    refused = refusal(rules.version, v, (g.architecture,) if g.architecture else (), compute_capability=cuda_cc,
                      checkpoint_quantization=g.quantization, mla=g.mla,
                      checkpoint_scheme=g.quant, dsa=g.dsa_indexer)
    return MemoryInputs(
        rules=rules,
        geometry=replace(g, multimodal=False) if g.multimodal and runs_as_text(rules.version, g.architecture, v) else g,
        gpu_compute_capability=compute_capability,
        tp_size=launch.tp_size,
        pp_size=launch.pp_size,
        attn_tp_size=layout.attn_tp_size(launch.tp_size),
        dp_size=layout.groups if layout.attention else layout.replicas,
        enable_dp_attention=layout.attention,
        gpu_total_mib=gpus.total_mib,
        free_before_load_gib=gpus.free_gib,
        platform=gpus.platform,
        attention_backend=v.get("attention_backend"),
        mem_fraction_static=launch.mem_fraction_static,
        chunked_prefill_size=v.get("chunked_prefill_size"),
        cuda_graph_max_bs=v.get("cuda_graph_max_bs"),
        cuda_graph_bs=tuple(int(b) for b in v["cuda_graph_bs"]) if v.get("cuda_graph_bs") else None,
        max_prefill_tokens=int(v.get("max_prefill_tokens") or 16384),
        disable_cuda_graph=bool(v.get("disable_cuda_graph")),
        piecewise_cuda_graph=piecewise,
        piecewise_max_tokens=int(v["piecewise_cuda_graph_max_tokens"]) if v.get("piecewise_cuda_graph_max_tokens") else None,
        max_running_requests=launch.max_running_requests,
        max_total_tokens=launch.max_total_tokens,
        context_length=launch.context_length,
        page_size=int(v.get("page_size") or 1),
        page_size_flag=int(v["page_size"]) if v.get("page_size") is not None else None,
        mamba_track_interval=int(v.get("mamba_track_interval") or 256),
        kv_cache_dtype=launch.kv_cache_dtype,
        speculative_algorithm=launch.speculative_algorithm,
        speculative_num_steps=v.get("speculative_num_steps"),
        speculative_eagle_topk=v.get("speculative_eagle_topk"),
        speculative_num_draft_tokens=v.get("speculative_num_draft_tokens"),
        draft_model_external=bool(draft_path) and draft_path != model_path,
        disable_radix_cache=launch.disable_radix_cache or _decode_forces_chunk_cache(rules.version, v)
        or backend_disables_radix_cache(rules.version, v.get("attention_backend")),
        radix_off_after_adjustments=dllm_disables_radix_cache(rules.version, v)
        or deterministic_disables_radix_cache(rules.version, v, cuda_cc, g.architecture, mla=g.mla),
        enable_mis=bool(v.get("enable_mis")),
        mamba_strategy=launch.mamba_strategy,
        mamba_ssm_dtype=v.get("mamba_ssm_dtype"),
        max_mamba_cache_size=v.get("max_mamba_cache_size"),
        mamba_full_memory_ratio=float(v.get("mamba_full_memory_ratio") or 0.9),
        cpu_offload_gb=float(v.get("cpu_offload_gb") or 0),
        disable_hybrid_swa_memory=bool(v.get("disable_hybrid_swa_memory")),
        swa_full_tokens_ratio=float(v["swa_full_tokens_ratio"]) if v.get("swa_full_tokens_ratio") is not None else None,
        enable_hierarchical_cache=bool(v.get("enable_hierarchical_cache")),
        language_only=bool(v.get("language_only")),
        mm_enable_dp_encoder=bool(v.get("mm_enable_dp_encoder")),
        enable_torch_compile=bool(v.get("enable_torch_compile")),
        argument_error=refused.message if refused else None,
        argument_error_late=bool(refused and refused.after_model_adjustments),
        argument_error_asserts=refused.asserts if refused else None,
        cuda_graphs=cuda_graph_flags(v),
        disable_overlap_schedule=bool(v.get("disable_overlap_schedule")),
        linear_attn_backend=str(v.get("linear_attn_backend") or "triton"),
        quantization_flag=v.get("quantization"),
        enable_linear_replayssm=bool(v.get("enable_linear_replayssm")),
    )


# ----------------------------------------------------------------------------- the flow


def launch_model_and_flags(options: PlanOptions) -> tuple[str, tuple[str, ...]]:
    """The model and the launch flags of ``options``: MODEL and the flags, merged with the
    command line (split here only when the caller passed it as text). UsageError when the
    two name different models, or neither names one."""
    model = options.model
    flags = tuple(options.flags)
    if options.command:
        command = options.command if isinstance(options.command, LaunchCommand) else split_command(options.command)
        if model and command.model_path and command.model_path != model:
            raise UsageError(
                f"MODEL {model!r} and the command's --model-path {command.model_path!r} differ",
                hint="give one of them",
            )
        model = model or command.model_path
        flags = command.flags + flags
    if not model:
        raise UsageError("no model: give MODEL or a --command with --model-path")
    if any(f in ("--model-path", "--model") or f.startswith(("--model-path=", "--model=")) for f in flags):
        raise UsageError("pass the model as MODEL, not as --model-path among the flags")
    return model, flags


def _parse_launch(flags: tuple[str, ...], version: str, server_args_path: str | None, notes: list[str]) -> tuple[str, LaunchConfig]:
    """(the flag data's version, the parsed flags): the version's own table, else the nearest older one (noted)."""
    from imgbuild.knowledge.serverargs import load_server_args

    data = load_server_args(server_args_path)
    data_version = version
    if version not in data.by_version:
        nearest = data.nearest_version(version)
        if nearest is None:
            raise UsageError(f"no SGLang flag data for {version} or older", hint="regenerate server_args.json with scripts/gen_matrix.py")
        notes.append(f"flag data for SGLang {version} is missing; checked against {nearest}")
        data_version = nearest
    table = data.flags_for(data_version)
    others = {v: data.by_version[v] for v in data.versions() if v != data_version}
    return data_version, parse_flags(flags, table, version=data_version, other_versions=others)


def plan_launch(
    options: PlanOptions, *, matrix: Any, probe: Any = None, hub: Any = None, model_info: ModelInfo | None = None
) -> PlanResult:
    """Plan one launch. UsageError for bad input; the verdict is in the result.

    One way through: the model is read once (modelinfo, or ``model_info`` when the caller,
    check, has already read ``options.model``), the flags are parsed once (launchflags), and
    memory gets the typed geometry and flags.
    """
    from imgbuild.knowledge.modelinfo import inspect_model

    model, flags = launch_model_and_flags(options)
    info = model_info if model_info is not None and model_info.source == model else inspect_model(model, hub=hub)
    geometry = info.geometry

    version, version_source = resolve_version(options.sglang, architecture=geometry.architecture, matrix=matrix)
    notes: list[str] = []
    data_version, launch = _parse_launch(flags, version, options.server_args_path, notes)
    launch = _dsa_forced_dp_attention(launch, geometry, version, notes)

    world = launch.tp_size * launch.pp_size * launch.dp_layout(version).replicas
    gpus = read_gpus(options.gpu, matrix=matrix, probe=probe, world=world, tp=launch.tp_size, pp=launch.pp_size,
                     nnodes=int(launch.values.get("nnodes") or 1))
    check_parallelism(geometry, launch, gpus.count, gpus.name, version)

    rules = rules_for(version)
    listed = matrix.gpu_by_smi_name(gpus.name) if matrix is not None else None
    cc = getattr(listed, "compute_capability", None) if listed is not None else None
    notes.extend(_setting_notes(version, rules, geometry, launch, gpus, matrix, str(cc) if cc else None))
    inputs = memory_inputs(rules, geometry, launch, gpus, model, compute_capability=str(cc) if cc else None)
    draft_path = launch.values.get("speculative_draft_model_path")
    if inputs.draft_model_external and draft_path:
        # the draft's config.json through the same reader (a local path or a Hub id)
        try:
            draft = inspect_model(str(draft_path), hub=hub)
        except UsageError as exc:
            raise UsageError(f"--speculative-draft-model-path: {exc.message}", hint=exc.hint) from exc
        inputs = replace(inputs, draft_geometry=draft.geometry)
    plan, started = _with_start_failure(plan_memory(inputs), rules.version, launch, geometry)
    if inputs.argument_error_asserts and plan.refusal == inputs.argument_error:
        notes.append(f"SGLang's AssertionError has no message: {inputs.argument_error_asserts}")
    suggestions = suggest_changes(inputs, plan, gpus) if options.suggest and not started else ()
    return PlanResult(
        model=model,
        architecture=geometry.architecture,
        sglang=version,
        sglang_source=version_source,
        flag_data_version=data_version,
        gpu_name=gpus.name,
        gpu_count=gpus.count,
        gpu_source=gpus.source,
        gpu_total_mib=gpus.total_mib,
        allowance_gib=gpus.allowance_gib,
        launch_flags=flags,
        plan=plan,
        suggestions=suggestions,
        notes=tuple(notes),
        draft_model_path=str(draft_path) if inputs.draft_model_external and draft_path else None,
    )


def _setting_notes(version: str, rules: Rules, g: ModelGeometry, launch: LaunchConfig, gpus: GpuView, matrix: Any,
                   cc: str | None) -> list[str]:
    """What the plan's setting adds to it: processes already on the GPUs, a release without the model class, rules
    read in another release, a GPTQ checkpoint the release has no CUDA kernel for."""
    notes = [f"{h}: F0 is what it leaves" for h in gpus.holders] + _unregistered(g.architecture, version, matrix)
    if not rules.verified:
        notes.append(f"SGLang {version}: accounting rules of the {rules.era} family (read in 0.5.9, 0.5.10-0.5.14, 0.5.23)")
    gptq = gptq_without_kernel(version, launch.values, checkpoint_quantization=g.quantization, checkpoint_scheme=g.quant,
                               compute_capability=cc if gpus.platform == "cuda" else None)
    return notes + ([gptq] if gptq else [])


def _unregistered(architecture: str, version: str, matrix: Any) -> list[str]:
    """A release without a model class for the architecture (models/registry.py ModelRegistry): model_loader/
    utils.py resolve_transformers_arch falls back to transformers' own class where the installed transformers
    has one, else loading fails; plan sizes SGLang's model either way."""
    engines = {e.version: e for e in getattr(matrix, "engines", ())}
    engine = engines.get(version)
    if not architecture or engine is None or not engine.architectures or architecture in engine.architectures:
        return []
    first = next((e.version for e in engines.values() if architecture in e.architectures), None)
    since = f"first in {first}" if first and Version(first) > Version(version) else "see imgbuild check"
    return [f"SGLang {version} has no model class for {architecture} ({since}): it falls back to the Transformers "
            "implementation where the installed transformers has one, else fails at load; these figures are for "
            "SGLang's own model"]


def _with_start_failure(plan: MemoryPlan, version: str, launch: LaunchConfig, g: ModelGeometry) -> tuple[MemoryPlan, str | None]:
    """The plan failed with what SGLang raises as it starts on flags it accepted (argchecks
    START_CHECKS), when nothing earlier stops it; no memory change fixes those."""
    started = None if plan.refusal or plan.failure else first_start_failure(version, launch.values, hybrid=g.hybrid)
    return (replace(plan, failure=started) if started else plan), started


_LABEL_WIDTH = 64


def _row(label: str, value: str) -> str:
    return f"  {label:<{_LABEL_WIDTH}} {value:>14}"


def _budget_rows(result: PlanResult) -> list[str]:
    """The per-GPU budget, in the order SGLang logs it: F0, weights, pools, draft, headroom."""
    p = result.plan
    rocm = p.platform == "rocm"
    rows = [_row("per GPU", "GiB"), _row(f"memory.total ({'rocm-smi' if rocm else 'nvidia-smi'})", f"{result.gpu_total_mib / 1024:.2f}")]
    if result.gpu_source != "--gpu":
        rows.append(_row("NVML memory free now (smallest of the GPUs the launch uses)", f"{p.free_before_load_gib + result.allowance_gib:.2f}"))
    context = "HIP context + RCCL" if rocm else "CUDA context + NCCL"
    rows.append(_row(f"- {context} (imgbuild allowance, from real logs)", f"-{result.allowance_gib:.2f}"))
    rows.append(_row("Load weight begin. avail mem  (F0)", f"{p.free_before_load_gib:.2f}"))
    rows.append(_row("Load weight end. mem usage  (target weights)", f"{p.weights_gib:.2f}"))
    rows.append(_row("Load weight end. avail mem", f"{p.avail_after_load_gib:.2f}"))
    origin = "default formula" if p.mem_fraction_static_default else "--mem-fraction-static"
    if p.aiter_factor != 1.0:
        origin += f" x {p.aiter_factor:.2f}, aiter on ROCm"
    rows.append(_row(f"mem_fraction_static ({origin})", f"{p.mem_fraction_static:.3f}"))
    rows.append(_row("F0 x (1 - mfs): kept back for activations, graphs" + (", draft" if p.speculative_algorithm else ""), f"{p.slack_gib:.2f}"))
    if p.rules.draft_weights_before_kv and p.draft_weights_gib:
        rows.append(_row("draft weights + its embed/head copy (loaded before the KV pool is sized)", f"{p.draft_weights_gib + p.draft_transient_gib:.2f}"))
    rows.append(_row("rest for pools = avail - F0 x (1 - mfs)", f"{p.rest_before_state_gib:.2f}"))
    if p.mamba_per_request_bytes:
        if p.spec_intermediate_gib:
            rows.append(_row(
                f"speculative intermediate states ({p.speculative_num_draft_tokens} tokens/request)",
                f"{p.spec_intermediate_gib:.2f}",
            ))
        rows.append(_row(f"Mamba Cache is allocated. max_mamba_cache_size: {p.mamba_slots}", f"{p.state_gib:.2f}"))
        rows.append(_row(f"  conv_state size / ssm_state size ({p.mamba_per_request_bytes / 2**20:.1f} MiB/request)", f"{p.mamba_conv_gib:.2f} / {p.mamba_ssm_gib:.2f}"))
    rows.append(_row(f"KV Cache is allocated. #tokens: {p.kv_tokens}  ({p.kv_cell_bytes} B/token)", f"{p.k_size_gib + p.v_size_gib:.2f}"))
    rows.append(_row("  K size / V size", f"{p.k_size_gib:.2f} / {p.v_size_gib:.2f}"))
    rows.append(_row(f"ReqToTokenPool ({p.max_running_requests} requests x context {p.context_length}, int32)", f"{p.req_to_token_gib:.2f}"))
    rows.append(_row("Memory pool end. avail mem", f"{p.memory_pool_end_avail_gib:.2f}"))
    if p.draft_weights_gib:
        when = "counted above" if p.rules.draft_weights_before_kv else "loads after the pools"
        # the target's own MTP layers, or a separate model (EAGLE/EAGLE3/STANDALONE) at --speculative-draft-model-path
        what = f"{p.speculative_algorithm} draft model weights" if result.draft_model_path else "draft (MTP) weights"
        rows.append(_row(f"{what}, {when}", f"{p.draft_weights_gib:.2f}"))
        rows.append(_row("draft KV pool (same #tokens, its own layers)", f"{p.draft_kv_gib:.2f}"))
        if p.draft_transient_gib:
            rows.append(_row("draft's own embed + lm_head copy while it loads (transient)", f"{p.draft_transient_gib:.2f}"))
    rows.append(_row("activations + CUDA graphs + late loads (imgbuild estimate)", f"{p.runtime_need_gib:.2f}"))
    rows.append(
        f"  max_total_num_tokens={p.kv_tokens}, chunked_prefill_size={p.chunked_prefill_size}, "
        f"max_running_requests={p.max_running_requests}, context_len={p.context_length}, "
        f"cuda_graph_max_bs={p.cuda_graph_max_bs}, radix_cache={'on' if p.radix_cache else 'off'}"
    )
    return rows


def _suggestion_lines(result: PlanResult) -> list[str]:
    """The changes that fit (or the closest misses), one a line."""
    if not result.suggestions:
        return []
    fitting = any(s.verdict == "fits" for s in result.suggestions)
    head = "changes that serve the full context, cheapest first:" if result.plan.context_short else "changes that fit, cheapest first:"
    out = ["", head if fitting else "no single or paired change fits; closest:"]
    for s in result.suggestions:
        gpu = f"  (--gpu '{s.gpu}')" if s.gpu else ""
        out.append(
            f"  {' '.join(s.flags):<58} {s.verdict:<13} #tokens {s.kv_tokens:>8}  "
            f"max_running_requests {s.max_running_requests}{gpu}  [{s.description}]"
        )
    return out


def _margin_lines(result: PlanResult) -> list[str]:
    p, m = result.plan, result.margin()
    if p.margin_gib is None:
        return []
    if p.margin_gib < 0 or p.failure:
        where = "short"
    elif p.margin_limit == "pools":
        where = "left for the KV pool once the weights are in; SGLang refuses when nothing is"
    else:
        where = "left after the pools, activations and graphs"
    line = f"  margin: {p.margin_gib:+.2f} GiB per GPU ({where}); plan's own error here +-{p.margin_error_gib:.2f} GiB"
    lines = [line + f" ({m['error_share_of_f0']:.2%} of F0, from {m['error_source']})"]
    if p.borderline:
        lines.append(
            "  borderline: the margin is inside plan's own error, so this launch may "
            + ("still run out of memory" if result.fits else "still start")
            + ("; the changes below leave a margin outside it" if result.suggestions else "")
        )
    return lines


def plan_lines(result: PlanResult) -> list[str]:
    """The per-GPU table, lines named as SGLang's log names them. Text only: cli.py prints it."""
    p = result.plan
    out = [
        f"SGLang {result.sglang} ({result.sglang_source}) · {result.architecture} · "
        f"{result.gpu_count} x {result.gpu_name} ({result.gpu_source}) · SGLang rules {p.rules.era_label}",
        f"flags: {' '.join(result.launch_flags) or '(none)'}",
        "",
    ]
    out += _budget_rows(result)
    out += ["", f"verdict: {result.verdict}"]
    out += _margin_lines(result)
    out += [f"  - {problem}" for problem in result.problems]
    out += [f"  note: {note}" for note in result.notes + p.notes]
    out += _suggestion_lines(result)
    out += ["", result.explanation()]
    return out
