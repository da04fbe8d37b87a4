"""The command line: parse, call one flow, print. The only module that exits.

Exit codes, the same for every command: 0 yes / done; 1 a negative verdict;
2 bad input or usage; 3 the environment is not there; 70 a bug.
Results go to stdout (text, or JSON with --json); progress and errors to stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from imgbuild import __version__, options
from imgbuild.errors import ImgbuildError


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


def progress(line: str) -> None:
    click.echo(line, err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(__version__, prog_name="imgbuild")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Check, plan, build, certify and publish SGLang serving images."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


# --- commands are added below this line, one block per command or group ------

def _load_matrix(matrix_path: str | None):  # noqa: ANN202 - Matrix, imported lazily
    from imgbuild.matrix import load_matrix

    return load_matrix(matrix_path)


def _gib(n_bytes: int | None) -> str:
    return "?" if n_bytes is None else f"{n_bytes / 2**30:.1f} GiB"


@cli.command()
@click.argument("model")
@options.json_output
def inspect(model: str, as_json: bool) -> None:
    """Describe MODEL: a directory, a config.json, or a Hugging Face id org/name[@rev]."""
    from imgbuild.hub import hub_for
    from imgbuild.modelinfo import inspect_model

    info = inspect_model(model, hub=hub_for(model))
    if as_json:
        emit_json(info.to_dict())
        return
    d = info.to_dict()
    rows = [
        ("architectures", ", ".join(info.architectures)),
        ("model_type", f"{info.model_type} (text: {d['text_model_type']})"),
        ("dtype", info.dtype),
        ("layers", f"{info.num_hidden_layers}: {info.full_attention_layers} full attention, "
                   f"{info.linear_attention_layers} linear attention"),
        ("attention", f"{info.num_attention_heads} heads, {info.num_key_value_heads} KV heads, head_dim {info.head_dim}"
                      + (f", MLA kv_lora_rank {info.kv_lora_rank}" if info.mla else "")),
        ("hidden / vocab", f"{info.hidden_size} / {info.vocab_size}"),
        ("MTP layers", str(info.mtp_layers)),
        ("MoE experts", "none" if not info.moe_experts else f"{info.moe_experts} ({info.moe_experts_per_token} per token)"),
        ("sliding window", str(info.sliding_window or "none")),
        ("quantization", info.quantization or "none"),
        ("vision tower", "yes" if info.has_vision else "no"),
        ("parameters", f"{info.parameters:,} (from the {info.parameters_source})" if info.parameters else "?"),
        ("weights", f"{info.weight_bytes:,} bytes ({_gib(info.weight_bytes)})" if info.weight_bytes else "?"),
        ("features", ", ".join(info.features) or "none"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")


@cli.command()
@click.argument("model")
@options.sglang_version
@click.option("--python", "python", default=None, metavar="PATH", help="Check the SGLang installed for this interpreter.")
@click.option("--image", "image", default=None, metavar="REF", help="Check the SGLang inside this local image.")
@options.gpu_target
@click.option("--driver", default=None, metavar="VERSION", help="The NVIDIA driver of the --gpu target, e.g. 580.126.09.")
@options.matrix_file
@options.json_output
def check(
    model: str,
    sglang: str | None,
    python: str | None,
    image: str | None,
    gpu: str | None,
    driver: str | None,
    matrix_path: str | None,
    as_json: bool,
) -> None:
    """Does this SGLang support MODEL on this driver and GPU?

    Exit 0 supported, 1 not supported, 2 bad input, 3 environment unavailable.
    """
    from imgbuild.check import CheckOptions, check_model
    from imgbuild.errors import NegativeVerdict
    from imgbuild.hub import hub_for

    matrix = _load_matrix(matrix_path)
    probe = None
    if not gpu:
        from imgbuild.gpus import default_probe

        probe = default_probe()
    export_image = None
    if image:
        from imgbuild.engine import export_sglang_install

        export_image = export_sglang_install
    opts = CheckOptions(model=model, sglang=sglang, python=python, image=image, gpu=gpu, driver=driver)
    result = check_model(opts, matrix=matrix, probe=probe, hub=hub_for(model), export_image=export_image)
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_check(result)
    if not result.supported:
        raise NegativeVerdict(f"SGLang {result.sglang.version} does not support {model}")


def _print_check(result) -> None:  # noqa: ANN001 - CheckResult
    m, s, h = result.model, result.sglang, result.host
    click.echo(f"model    {m.source}: {', '.join(m.architectures)} ({m.model_type}), "
               f"{(m.parameters or 0) / 1e9:.2f}B parameters, {_gib(m.weight_bytes)} {m.dtype}")
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
    click.echo(f"oldest SGLang that serves this model: {result.min_sglang or 'none in the matrix'}")
    rec = result.recommended
    if rec:
        pins = ", ".join(f"{k}{v}" for k, v in rec.pins.items())
        click.echo(f"recommended: sglang=={rec.version} (torch {rec.torch}, CUDA {rec.cuda}, "
                   f"driver >= {result.recommended_min_driver or '?'}; pins: {pins})")


@cli.group()
def matrix() -> None:
    """Show or validate the compatibility matrix."""


@matrix.command("show")
@click.option("--engine", "engine_version", default=None, metavar="V", help="Show one engine in full.")
@options.matrix_file
@options.json_output
def matrix_show(engine_version: str | None, matrix_path: str | None, as_json: bool) -> None:
    """A readable table of engines (or one engine), CUDA versions and GPUs."""
    m = _load_matrix(matrix_path)
    if engine_version:
        e = m.engine(engine_version)
        data = {"version": e.version, "requires_python": e.requires_python, "glibc": e.glibc, "torch": e.torch,
                "cuda": e.cuda, "pins": e.pins, "architectures": sorted(e.architectures)}
        if as_json:
            emit_json(data)
            return
        for key in ("version", "requires_python", "glibc", "torch", "cuda"):
            click.echo(f"{key:<16} {data[key]}")
        for name, spec in e.pins.items():
            click.echo(f"pin              {name}{spec}")
        click.echo(f"architectures    {len(e.architectures)}:")
        for arch in sorted(e.architectures):
            click.echo(f"  {arch}")
        return
    if as_json:
        emit_json({
            "engines": [{"version": e.version, "torch": e.torch, "cuda": e.cuda, "requires_python": e.requires_python,
                         "architectures": len(e.architectures)} for e in m.engines],
            "cuda": [{"version": c.version, "min_driver": c.min_driver, "sm": list(c.sm)} for c in m.cuda],
            "gpus": [{"name": g.name, "compute_capability": g.compute_capability, "memory_mib": g.memory_mib,
                      "aliases": list(g.aliases)} for g in m.gpus],
        })
        return
    click.echo(f"{'sglang':<14}{'torch':<10}{'cuda':<6}{'python':<12}{'glibc':<7}architectures")
    for e in m.engines:
        click.echo(f"{e.version:<14}{e.torch or '-':<10}{e.cuda or '-':<6}{e.requires_python or '-':<12}"
                   f"{e.glibc or '-':<7}{len(e.architectures)}")
    click.echo("")
    click.echo(f"{'cuda':<6}{'min driver':<12}sm")
    for c in m.cuda:
        click.echo(f"{c.version:<6}{c.min_driver:<12}{' '.join(c.sm)}")
    click.echo("")
    click.echo(f"{'gpu':<28}{'sm':<6}{'MiB':>8}  aliases")
    for g in m.gpus:
        click.echo(f"{g.name:<28}{g.compute_capability:<6}{g.memory_mib:>8}  {', '.join(g.aliases)}")


@matrix.command("validate")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@options.json_output
def matrix_validate(file: str | None, as_json: bool) -> None:
    """Validate a matrix file, reporting every problem with file:line and path."""
    from imgbuild.errors import MatrixError
    from imgbuild.matrix import load_matrix

    try:
        m = load_matrix(file)
    except MatrixError as exc:
        if as_json:
            emit_json({"valid": False, "problems": exc.problems})
        else:
            for problem in exc.problems:
                click.echo(problem, err=True)
        raise
    summary = {"valid": True, "file": str(m.path), "engines": len(m.engines), "cuda": len(m.cuda), "gpus": len(m.gpus),
               "features": len(m.features), "known_issues": len(m.known_issues)}
    if as_json:
        emit_json(summary)
    else:
        click.echo(f"{m.path}: valid ({len(m.engines)} engines, {len(m.cuda)} CUDA versions, {len(m.gpus)} GPUs, "
                   f"{len(m.features)} features, {len(m.known_issues)} known issues)")


@cli.command()
@options.json_output
def gpus(as_json: bool) -> None:
    """The GPUs of this host through NVML; --json writes a snapshot usable as IMGBUILD_GPU_SNAPSHOT."""
    from imgbuild.gpus import default_probe

    seen = default_probe().read()
    if as_json:
        emit_json(seen.to_dict())
        return
    click.echo(f"driver {seen.driver_version}, CUDA {seen.cuda_driver_version}")
    for d in seen.devices:
        click.echo(f"[{d.index}] {d.name} sm {d.compute_capability} {d.memory_used_mib}/{d.memory_total_mib} MiB used, "
                   f"{len(d.processes)} processes  {d.uuid}")



# --- diagnose (issue 5) -----------------------------------------------------------


@cli.command()
@click.argument("logfile", type=click.Path(dir_okay=False, allow_dash=True))
@options.json_output
def diagnose(logfile: str, as_json: bool) -> None:
    """Classify a failed SGLang launch from its log (LOGFILE, or - for stdin).

    Exit 0 when the log shows no failure, 1 when it shows one (classified, or
    'unknown'), 2 when the file cannot be read.
    """
    from imgbuild.errors import UsageError
    from imgbuild.triage import diagnose_log

    try:
        with click.open_file(logfile, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read log {logfile}: {exc.strerror or exc}") from None
    d = diagnose_log(text.splitlines())
    if as_json:
        emit_json(d.to_dict())
    else:
        click.echo(f"class: {d.failure_class}" + (f" (phase: {d.phase})" if d.phase else "")
                   + (f" via {d.via}" if d.via else "")
                   + (" [inferred]" if d.confidence != "matched" else ""))
        if d.summary:
            click.echo(d.summary)
        if d.cause:
            click.echo(f"cause (line {d.line_number}): {d.cause}")
        for item in d.advice:
            click.echo(f"  - {item}")
        if d.evidence:
            click.echo("evidence:")
            for line in d.evidence:
                click.echo(f"  | {line}")
    if d.failed:
        raise SystemExit(1)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        code = cli.main(args=args, prog_name="imgbuild", standalone_mode=False)
    except ImgbuildError as exc:
        if debug:
            raise
        click.echo(f"imgbuild: error: {exc.one_line()}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("imgbuild: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if debug:
            raise
        click.echo(f"imgbuild: error: {exc.format_message()}", err=True)
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except KeyboardInterrupt:
        click.echo("imgbuild: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug: one line unless --debug
        if debug:
            raise
        click.echo(
            f"imgbuild: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
            err=True,
        )
        sys.exit(70)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
