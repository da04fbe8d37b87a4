"""inspect, check and gpus: what a model is, whether an SGLang serves it here, this host's GPUs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json, gib, load_matrix
from imgbuild.errors import NegativeVerdict

if TYPE_CHECKING:
    from imgbuild.knowledge.modelinfo import ModelInfo


@cli.command()
@click.argument("model")
@options.json_output
def inspect(model: str, as_json: bool) -> None:
    """Describe MODEL: a directory, a config.json, or a Hugging Face id org/name[@rev]."""
    from imgbuild.adapters.hub import hub_for
    from imgbuild.knowledge.modelinfo import inspect_model

    info = inspect_model(model, hub=hub_for(model))
    if as_json:
        emit_json(info.to_dict())
        return
    d = info.to_dict()
    # NemotronH's MLP-only layers (MoE or dense) hold no attention of either kind
    mlp_only = info.num_hidden_layers - info.full_attention_layers - info.linear_attention_layers
    rows = [
        ("architectures", ", ".join(info.architectures)),
        ("model_type", f"{info.model_type} (text: {d['text_model_type']})"),
        ("dtype", info.dtype),
        ("layers", f"{info.num_hidden_layers}: {info.full_attention_layers} full attention, "
                   f"{info.linear_attention_layers} linear attention"
                   + (f", {mlp_only} MLP only" if mlp_only else "")),
        ("attention", f"{info.num_attention_heads} heads, {info.num_key_value_heads} KV heads, head_dim {info.head_dim}"
                      + (f", MLA kv_lora_rank {info.kv_lora_rank}" if info.mla else "")),
        ("hidden / vocab", f"{info.hidden_size} / {info.vocab_size}"),
        ("MTP layers", str(info.mtp_layers)),
        ("MoE experts", "none" if not info.moe_experts else f"{info.moe_experts} ({info.moe_experts_per_token} per token)"),
        ("sliding window", _sliding_window_row(info)),
        ("quantization", info.quantization or "none"),
        ("vision tower", "yes" if info.has_vision else "no"),
        ("parameters", f"{info.parameters:,} (from the {info.parameters_source})" if info.parameters else "?"),
        ("weights", f"{info.weight_bytes:,} bytes ({gib(info.weight_bytes)})"
                    + (", computed from the quantization config" if info.weight_bytes_source == "quantization config" else "")
                    if info.weight_bytes else "?"),
        ("features", ", ".join(info.features) or "none"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")


def _sliding_window_row(info: ModelInfo) -> str:
    """The window, the layers it applies to, and their own KV shape where it is not the full layers' (Gemma 4)."""
    g = info.geometry
    if not info.sliding_window:
        return "none"
    row = str(info.sliding_window) + (f" on {g.swa_layers} layers" if g.swa_layers else "")
    if g.swa_layers and (g.swa_num_kv_heads or g.swa_head_dim):
        row += f" ({g.swa_num_kv_heads or g.num_kv_heads} KV heads, head_dim {g.swa_head_dim or g.head_dim})"
    return row


@cli.command()
@click.argument("model")
@click.argument("flags", nargs=-1, type=click.UNPROCESSED)
@options.sglang_version
@options.interpreter
@options.image_to_check
@options.gpu_target
@options.driver_version
@options.matrix_file
@options.json_output
def check(
    model: str,
    flags: tuple[str, ...],
    sglang: str | None,
    python: str | None,
    image: str | None,
    gpu: str | None,
    driver: str | None,
    matrix_path: str | None,
    as_json: bool,
) -> None:
    """Does this SGLang support MODEL on this driver and GPU?

    Launch flags after `--` are planned too (the same planner as `imgbuild plan`).
    Exit 0 supported, 1 not supported, 2 bad input, 3 environment unavailable.
    """
    from imgbuild.adapters.hub import hub_for
    from imgbuild.flows.check import CheckOptions, check_model

    matrix = load_matrix(matrix_path)
    probe = None
    if not gpu:
        from imgbuild.adapters.gpus import default_probe

        probe = default_probe()
    export_image = smoke_image = None
    if image:
        from imgbuild.adapters.engine import export_sglang_install, image_import_smoke

        export_image, smoke_image = export_sglang_install, image_import_smoke
    opts = CheckOptions(model=model, sglang=sglang, python=python, image=image, gpu=gpu, driver=driver, flags=flags)
    result = check_model(opts, matrix=matrix, probe=probe, hub=hub_for(model), export_image=export_image,
                         smoke_image=smoke_image)
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_check(result)
    if not result.supported:
        raise NegativeVerdict(f"SGLang {result.sglang.version} does not support {model}")


def _print_check(result: Any) -> None:
    """The CheckResult as text."""
    m, s, h = result.model, result.sglang, result.host
    click.echo(f"model    {m.source}: {', '.join(m.architectures)} ({m.model_type}), "
               f"{(m.parameters or 0) / 1e9:.2f}B parameters, {gib(m.weight_bytes)} {m.dtype}")
    click.echo(f"         features: {', '.join(m.features) or 'none'}")
    pins = f"torch {s.engine.torch}, CUDA {s.engine.cuda}" if s.engine else "not in the matrix"
    click.echo(f"sglang   {s.version} ({s.source}; {pins})")
    if h.checked:
        gpus = ", ".join(f"{g.count}x {g.name} (sm {g.compute_capability}, {g.memory_mib} MiB)" for g in h.gpus) or "no GPUs"
        driver = f"driver {h.driver_version}" if h.driver_version else "driver not given (--driver)"
        cuda = f" (CUDA {h.cuda_driver_version})" if h.cuda_driver_version else ""
        click.echo(f"host     {gpus}; {driver}{cuda}")
    else:
        click.echo(f"host     not checked: {h.source}")
    if result.supported:
        need = ""
        if s.engine and s.engine.cuda:
            need = f": needs CUDA {s.engine.cuda}, NVIDIA driver >= {result.sglang_min_driver or '?'}"
        click.echo(f"verdict  SUPPORTED by SGLang {s.version}{need}")
    else:
        click.echo(f"verdict  NOT SUPPORTED by SGLang {s.version}")
        for reason in result.reasons:
            click.echo(f"  - {reason}")
    for note in result.notes:
        click.echo(f"note     {note}")
    if result.plan is not None:
        p = result.plan
        click.echo(f"plan     {p.verdict}: {p.plan.kv_tokens} KV tokens per GPU, max_running_requests "
                   f"{p.plan.max_running_requests} (details: imgbuild plan)")
    click.echo(f"oldest SGLang that serves this model: {result.min_sglang or 'none in the matrix'}")
    rec = result.recommended
    if rec:
        pins = ", ".join(f"{k}{v}" for k, v in rec.pins.items())
        click.echo(f"recommended: sglang=={rec.version} (torch {rec.torch}, CUDA {rec.cuda}, "
                   f"driver >= {result.recommended_min_driver or '?'}; pins: {pins})")


@cli.command()
@options.json_output
def gpus(as_json: bool) -> None:
    """The GPUs of this host through NVML; --json writes a snapshot usable as IMGBUILD_GPU_SNAPSHOT."""
    from imgbuild.adapters.gpus import default_probe

    seen = default_probe().read()
    if as_json:
        emit_json(seen.to_dict())
        return
    click.echo(f"driver {seen.driver_version}, CUDA {seen.cuda_driver_version}")
    for d in seen.devices:
        click.echo(f"[{d.index}] {d.name} sm {d.compute_capability} {d.memory_used_mib}/{d.memory_total_mib} MiB used, "
                   f"{len(d.processes)} processes  {d.uuid}")


