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

from imgbuild import __version__
from imgbuild.cli import options
from imgbuild.errors import ImgbuildError, NegativeVerdict


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
    from imgbuild.knowledge.matrix import load_matrix

    return load_matrix(matrix_path)


def _gib(n_bytes: int | None) -> str:
    return "?" if n_bytes is None else f"{n_bytes / 2**30:.1f} GiB"


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
@click.argument("flags", nargs=-1, type=click.UNPROCESSED)
@options.sglang_version
@click.option("--python", "python", default=None, metavar="PATH", help="Check the SGLang installed for this interpreter.")
@click.option("--image", "image", default=None, metavar="REF", help="Check the SGLang inside this local image.")
@options.gpu_target
@click.option("--driver", default=None, metavar="VERSION", help="The NVIDIA driver of the --gpu target, e.g. 580.126.09.")
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
    from imgbuild.flows.check import CheckOptions, check_model
    from imgbuild.errors import NegativeVerdict
    from imgbuild.adapters.hub import hub_for

    matrix = _load_matrix(matrix_path)
    probe = None
    if not gpu:
        from imgbuild.adapters.gpus import default_probe

        probe = default_probe()
    export_image = None
    if image:
        from imgbuild.adapters.engine import export_sglang_install

        export_image = export_sglang_install
    opts = CheckOptions(model=model, sglang=sglang, python=python, image=image, gpu=gpu, driver=driver, flags=flags)
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
    click.echo(f"{'gpu':<36}{'sm':<6}{'MiB':>8}  aliases")
    for g in m.gpus:
        click.echo(f"{g.name:<36}{g.compute_capability:<6}{g.memory_mib:>8}  {', '.join(g.aliases)}")


@matrix.command("validate")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@options.json_output
def matrix_validate(file: str | None, as_json: bool) -> None:
    """Validate a matrix file, reporting every problem with file:line and path."""
    from imgbuild.errors import MatrixError
    from imgbuild.knowledge.matrix import load_matrix

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
    from imgbuild.adapters.gpus import default_probe

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
    from imgbuild.knowledge.triage import diagnose_log

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


# --- certify, certs (issue 5) -------------------------------------------------------


@cli.command()
@click.argument("image")
@click.option("--target", "target_name", default=None, metavar="NAME",
              help="A matrix.yaml target: its GPUs, model and launch flags.")
@click.option("--gpus", "gpus_text", default=None, metavar="NAME[xN]",
              help="The GPUs to certify on, e.g. 'RTX A6000x2' (default: the target's).")
@click.option("--model", "model_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="The model directory on the engine's host, mounted read-only at /model.")
@click.option("--model-ref", default=None, metavar="ID",
              help="--model-path inside the container when no --model (a Hugging Face id; see --hf-cache).")
@click.option("--hf-cache", default=None, type=click.Path(exists=True, file_okay=False),
              help="A Hugging Face cache directory, mounted read-only.")
@click.option("--flags", "flags_text", default=None, metavar="'FLAGS'",
              help="The launch flags as one string (default: the target's).")
@click.option("--gpu-uuid", "gpu_uuids", multiple=True, metavar="UUID", help="Use this GPU (repeat for each).")
@click.option("--no-gpus", is_flag=True,
              help="Attach no GPU (stand-in images in tests); the certificate is marked unattested.")
@click.option("--port", "host_port", type=int, default=30000, show_default=True, help="HTTP port on 127.0.0.1.")
@click.option("--timeout", "timeout_s", type=float, default=1800.0, show_default=True,
              help="Seconds to wait for the server to become ready.")
@click.option("--max-used-mib", type=int, default=1024, show_default=True,
              help="A GPU using more memory than this before launch is not clean.")
@click.option("--store", "store_dir", default=None, type=click.Path(file_okay=False),
              help="Certificate store (default: $XDG_DATA_HOME/imgbuild/certs).")
@click.option("--no-plan", is_flag=True, help="Skip the plan check of the preflight.")
@click.option("--env", "env_pairs", multiple=True, metavar="KEY=VALUE",
              help="An environment variable for the server container (repeat), e.g. NCCL_P2P_DISABLE=1.")
@options.matrix_file
@options.json_output
def certify(image: str, target_name: str | None, gpus_text: str | None, model_dir: str | None,
            model_ref: str | None, hf_cache: str | None, flags_text: str | None, gpu_uuids: tuple[str, ...],
            no_gpus: bool, host_port: int, timeout_s: float, max_used_mib: int, store_dir: str | None,
            no_plan: bool, env_pairs: tuple[str, ...], matrix_path: str | None, as_json: bool) -> None:
    """Launch IMAGE on its target GPUs, prove it serves, and store a certificate.

    Exit 0 when it passes (also 'pass-unattested', which the certificate marks), 1 when a
    preflight check or the certification fails, 3 when there is no Docker engine.
    """
    import os
    import shlex
    import signal

    import httpx

    from imgbuild.flows import certify as flow
    from imgbuild.adapters import engine
    from imgbuild.adapters.certstore import CertStore
    from imgbuild.errors import UsageError
    from imgbuild.adapters.gpus import SNAPSHOT_ENV, default_probe
    from imgbuild.knowledge.render import find_target

    matrix = _load_matrix(matrix_path)
    target = find_target(matrix.raw, target_name) if target_name else None
    gpus_text = gpus_text or (target.gpus if target else None) or ""  # else: the image's recipe
    try:
        flags = tuple(shlex.split(flags_text)) if flags_text is not None else tuple(target.launch_flags if target else ())
    except ValueError as exc:
        raise UsageError(f"--flags: {exc}") from None
    bad = [p for p in env_pairs if "=" not in p or p.startswith("=")]
    if bad:
        raise UsageError(f"--env {bad[0]!r}: expected KEY=VALUE")
    snapshot = os.environ.get(SNAPSHOT_ENV)
    docker_host = os.environ.get("DOCKER_HOST", "")
    remote = docker_host.startswith(("ssh://", "tcp://")) and not any(
        h in docker_host for h in ("://127.0.0.1", "://localhost"))
    eng = engine.connect()
    if snapshot:
        probe, probe_source = default_probe(), f"snapshot:{snapshot}"
    elif remote:  # NVML here would read this machine: ask the engine's host instead
        probe, probe_source = flow.ContainerGpuProbe(eng, image), f"nvidia-smi on {docker_host}"
    else:
        probe, probe_source = default_probe(), "nvml"
    opts = flow.CertifyOptions(
        image=image, gpus=gpus_text, launch_flags=flags,
        target_name=target.name if target else None, target_gpus=target.gpus if target else None,
        engine_version=target.engine if target else None,
        cuda=target.cuda if target else None,
        model_dir=model_dir, model_ref=model_ref or (target.model if target and not model_dir else None),
        hf_cache=hf_cache, gpu_uuids=gpu_uuids, attach_gpus=not no_gpus,
        probe_source=probe_source, http_in_container=remote,
        host_port=host_port, ready_timeout_s=timeout_s, max_used_mib=max_used_mib,
        environment=dict(p.split("=", 1) for p in env_pairs),
    )
    planner = None if no_plan else flow.imgbuild_planner(matrix)

    def on_sigterm(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the teardown short
        raise KeyboardInterrupt  # the flow's teardown runs on the way out

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        with httpx.Client(trust_env=False) as http:
            cert = flow.certify(opts, eng=eng, probe=probe, matrix=matrix,
                                http=http, store=CertStore(store_dir), planner=planner, progress=progress)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if as_json:
        emit_json(cert)
    else:
        _print_certificate(cert)
    if cert["verdict"] == flow.VERDICT_FAIL:
        raise SystemExit(1)


def _print_certificate(cert: dict) -> None:
    click.echo(f"certificate {cert['id']}: {cert['verdict']}")
    click.echo(f"image {cert['image']['ref']} (recipe {cert['image'].get('recipe_digest') or '?'})")
    hw = cert.get("hardware") or {}
    gpus_seen = ", ".join(f"{g['name']} {g['uuid']}" for g in hw.get("gpus") or [])
    click.echo(f"hardware ({hw.get('source')}, attached={hw.get('attached')}): driver {hw.get('driver_version')}; {gpus_seen}")
    if cert.get("failure"):
        click.echo(f"failed at {cert['failure']['stage']}: {cert['failure']['reason']}")
    diag = cert.get("diagnosis")
    if diag:
        click.echo(f"diagnosis: {diag['class']}" + (f" ({diag['phase']})" if diag.get("phase") else "")
                   + f": {diag.get('cause')}")
        for item in diag.get("advice") or []:
            click.echo(f"  - {item}")
    for gap in cert.get("attestation_gaps") or []:
        click.echo(f"not attested: {gap}")
    for note in cert.get("preflight_notes") or []:
        click.echo(f"note: {note}")
    gen = cert.get("generation") or {}
    if gen:
        spec = f", acceptance length {gen['spec_accept_length']:.2f}" if gen.get("spec_accept_length") else ""
        click.echo(f"generation: {len(gen.get('output_ids') or [])} tokens, deterministic={gen.get('deterministic')}{spec}")
    figures = cert.get("figures") or {}
    log_f, plan_f = figures.get("log") or {}, figures.get("plan") or {}
    for key in ("weights_gib", "kv_tokens", "state_slots", "graph_gib"):
        if log_f.get(key) is not None or plan_f.get(key) is not None:
            diff = (figures.get("difference") or {}).get(key)
            click.echo(f"  {key:<12} log {log_f.get(key)}  plan {plan_f.get(key, '-')}"
                       + (f"  (log - plan {diff:+g})" if diff is not None else ""))
    t = cert.get("timings") or {}
    click.echo(f"timings: weights {t.get('weights_loaded_s')} s, ready {t.get('ready_s')} s, "
               f"first generation {t.get('first_generation_s')} s"
               + (f"; fatal line at {t['fatal_line_s']} s, verdict at {t['verdict_s']} s "
                  f"(deadline {t['ready_deadline_s']:g} s)" if t.get("verdict_s") is not None else ""))
    click.echo(f"log: {cert.get('log_file')}")


@cli.group()
def certs() -> None:
    """Certificates in the local store."""


_store_option = click.option("--store", "store_dir", default=None, type=click.Path(file_okay=False),
                             help="Certificate store (default: $XDG_DATA_HOME/imgbuild/certs).")


@certs.command("list")
@_store_option
@options.json_output
def certs_list(store_dir: str | None, as_json: bool) -> None:
    """List the stored certificates, oldest first."""
    from imgbuild.adapters.certstore import CertStore

    rows = CertStore(store_dir).list()
    if as_json:
        emit_json([r.to_dict() for r in rows])
        return
    for r in rows:
        click.echo(f"{r.id}  {r.verdict:<15} {r.target or '-':<24} {r.image}" + (f"  ({r.failure})" if r.failure else ""))


@certs.command("show")
@click.argument("cert_id")
@_store_option
@options.json_output
def certs_show(cert_id: str, store_dir: str | None, as_json: bool) -> None:
    """Show one certificate (an id or a unique prefix)."""
    from imgbuild.adapters.certstore import CertStore

    cert = CertStore(store_dir).load(cert_id)
    if as_json:
        emit_json(cert)
    else:
        _print_certificate(cert)


# --- publish, verify (issue 6) ----------------------------------------------------

_username_option = click.option("--username", "-u", default=None, metavar="USER",
                                help="Registry user (with --password-stdin); default: the Docker config's credentials.")
_password_stdin_option = click.option("--password-stdin", is_flag=True,
                                      help="Read the registry password from stdin (never from the command line).")
_ca_bundle_option = click.option("--ca-bundle", "registry_ca", default=None, type=click.Path(exists=True, dir_okay=False),
                                 help="A CA file that signed the registry's TLS certificate.")


def _registry_client(host: str, username: str | None, password_stdin: bool, registry_ca: str | None):  # noqa: ANN202
    from imgbuild.errors import UsageError
    from imgbuild.adapters.registry import Credentials, RegistryClient, docker_config_credentials

    if password_stdin and not username:
        raise UsageError("--password-stdin needs --username")
    if username and not password_stdin:
        raise UsageError("--username needs --password-stdin", hint="pipe the password: echo \"$PW\" | imgbuild ... --password-stdin")
    if username:
        # docker login --password-stdin strips the trailing newline the same way.
        secret = sys.stdin.readline().rstrip("\r\n")
        if not secret:
            raise UsageError("--password-stdin: stdin was empty")
        credentials = Credentials(username, secret, source="--password-stdin")
    else:
        credentials = docker_config_credentials(host)
    return RegistryClient(host, credentials=credentials, ca_bundle=registry_ca)


@cli.command()
@click.argument("source", metavar="IMAGE|TARGET")
@click.option("--to", "destination", required=True, metavar="HOST[:PORT]/REPO", help="Where to publish.")
@click.option("--allow-uncertified", is_flag=True,
              help="Publish without a passing certificate; the registry then marks it uncertified.")
@_username_option
@_password_stdin_option
@_ca_bundle_option
@_store_option
@options.matrix_file
@options.json_output
def publish(source: str, destination: str, allow_uncertified: bool, username: str | None, password_stdin: bool,
            registry_ca: str | None, store_dir: str | None, matrix_path: str | None, as_json: bool) -> None:
    """Push IMAGE (or TARGET's newest build) to a registry with its certificates attached.

    Exit 0 published (or already there), 1 no passing certificate, 2 bad input,
    3 no engine, registry unreachable or credentials refused.
    """
    from pathlib import Path

    from imgbuild.adapters import engine as engine_mod
    from imgbuild.flows.publish import PublishOptions, load_certificates, publish_image
    from imgbuild.adapters.registry import parse_reference
    from imgbuild.knowledge.render import targets_of

    dest = parse_reference(destination, require_host=True)
    try:
        targets = tuple(targets_of(_load_matrix(matrix_path).raw))
    except ImgbuildError:
        targets = ()
    opts = PublishOptions(source=source, destination=destination, allow_uncertified=allow_uncertified, targets=targets)
    with _registry_client(dest.host, username, password_stdin, registry_ca) as registry:
        result = publish_image(opts, engine=engine_mod.PushAdapter(engine_mod.connect()), registry=registry,
                               certificates=load_certificates(Path(store_dir) if store_dir else None),
                               progress=progress)
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(f"{'published' if result.changed else 'already published'}: {result.reference}"
               + (" (UNCERTIFIED: --allow-uncertified)" if result.uncertified else ""))
    for tag in result.tags:
        click.echo(f"tag          {result.repository}:{tag}")
    for cert in result.certificates:
        click.echo(f"certificate  {cert['id']} ({cert['verdict']}, target {cert['target'] or '-'}) -> {cert['artifact']}")


@cli.command()
@click.argument("reference", metavar="REF")
@click.option("--for", "target_name", default=None, metavar="TARGET",
              help="Exit 1 unless a certificate bound to this image certifies this matrix target.")
@click.option("--require-attested", is_flag=True,
              help="Count only certificates made on the real GPUs through the driver (verdict pass, not pass-unattested).")
@_username_option
@_password_stdin_option
@_ca_bundle_option
@options.matrix_file
@options.json_output
def verify(reference: str, target_name: str | None, require_attested: bool, username: str | None,
           password_stdin: bool, registry_ca: str | None, matrix_path: str | None, as_json: bool) -> None:
    """Read REF's certificates from its registry and check that each is bound to its digest.

    Exit 0 certified (for --for TARGET when given), 1 not certified, 2 bad input, 3 registry unavailable.
    """
    from imgbuild.errors import NegativeVerdict
    from imgbuild.flows.publish import VerifyOptions, verify_image
    from imgbuild.adapters.registry import parse_reference

    want = _target_want(target_name, matrix_path) if target_name else None
    ref = parse_reference(reference, require_host=True)
    with _registry_client(ref.host, username, password_stdin, registry_ca) as registry:
        result = verify_image(VerifyOptions(reference=reference, target=want, require_attested=require_attested),
                              registry=registry)
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_verify(result)
    if not result.certified:
        what = f"for target {target_name}" if target_name else "by any bound, passing certificate"
        raise NegativeVerdict(f"{result.repository}@{result.digest} is not certified {what}")


def _target_want(name: str, matrix_path: str | None):  # noqa: ANN202 - TargetWant
    from imgbuild.flows.publish import TargetWant
    from imgbuild.knowledge.render import targets_of

    matrix = _load_matrix(matrix_path)
    target = targets_of(matrix.raw).get(name)
    if target is None:
        return TargetWant(name=name)
    gpu, count, names, min_driver = None, None, frozenset(), None
    if target.gpus:
        spec, count = matrix.resolve_gpu(target.gpus)
        gpu, names = spec.name, frozenset((spec.name, *spec.smi_names, *spec.aliases))
    if target.cuda:
        min_driver = matrix.cuda_spec(target.cuda).min_driver
    return TargetWant(name=name, gpu_name=gpu, gpu_count=count, gpu_names_ok=names,
                      launch_flags=tuple(target.launch_flags), min_driver=min_driver)


def _print_verify(result) -> None:  # noqa: ANN001 - VerifyResult
    click.echo(f"image        {result.repository}@{result.digest} ({result.media_type})")
    if result.uncertified_marks:
        click.echo("marked       UNCERTIFIED (published with --allow-uncertified)")
    if not result.checks:
        click.echo("certificates none attached")
    for check in result.checks:
        d = check.to_dict()
        state = "BOUND" if check.bound else "REJECTED"
        click.echo(f"certificate  {d['id'] or '?'}: {state}, verdict {d['verdict']}, target {d['target'] or '-'}"
                   + ("" if check.matches_target is None else f", for {result.target}: {'yes' if check.matches_target else 'no'}"))
        click.echo(f"  artifact   {check.artifact}")
        cert = check.certificate or {}
        hw = cert.get("hardware") or {}
        click.echo(f"  gpus       {', '.join(d['gpus']) or '-'}; driver {d['driver'] or '?'} "
                   f"(CUDA {hw.get('cuda_driver_version') or '?'})")
        click.echo(f"  flags      {' '.join(d['flags']) or '-'}")
        for gap in cert.get("attestation_gaps") or []:
            click.echo(f"  not attested: {gap}")
        for problem in check.problems:
            click.echo(f"  problem    {problem}")
    click.echo(f"verdict      {'CERTIFIED' if result.certified else 'NOT CERTIFIED'}"
               + (f" for {result.target}" if result.target else ""))


# --- render, build, lock, verify-repro, bases (issue 4) ----------------------------

_ca_bundle_opt = click.option(
    "--ca-bundle",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Extra CA certificates (PEM) for a TLS-intercepting proxy; used while building only.",
)
_pip_index_opt = click.option("--pip-index-url", default=None, metavar="URL", help="Install from this index instead of PyPI.")
_base_opt = click.option(
    "--base", "base_ref", default=None, metavar="REF@sha256:...", help="Use this base image (pinned by digest)."
)


def _target_options(func):  # noqa: ANN001, ANN202 - a click decorator stack
    """A target given on the command line instead of a name from matrix.yaml."""
    for decorator in reversed(
        [
            click.option("--engine", "cl_engine", default=None, metavar="V", help="SGLang version (a target from the command line)."),
            click.option("--cuda", "cl_cuda", default=None, metavar="X.Y", help="CUDA of the base, e.g. 13.0."),
            click.option("--base-name", "cl_base_name", default=None, metavar="NAME", help="A base from matrix.yaml bases: (default: the newest -devel for --cuda)."),
            click.option("--python", "cl_python", default=None, metavar="X.Y", help="Python of the image (default: the base's)."),
            click.option("--model", "cl_model", default=None, metavar="ID", help="The model the image serves by default."),
            click.option("--gpus", "cl_gpus", default=None, metavar="NAME[xN]", help="GPUs the image is meant for (recorded)."),
            click.option("--flags", "cl_flags", default=None, metavar="'FLAGS'", help="Launch flags (CMD), one quoted string."),
        ]
    ):
        func = decorator(func)
    return func


def _resolve_build_target(
    matrix_path: str | None, target_name: str | None, base_ref: str | None, cl: dict[str, Any]
):  # noqa: ANN202 - (Matrix, RecipeInputs)
    import shlex

    from imgbuild.knowledge import recipe, render

    matrix = _load_matrix(matrix_path)
    bases = render.bases_of(matrix.raw)
    if target_name and cl.get("cl_engine"):
        raise click.UsageError("give a TARGET name or --engine, not both")
    if target_name:
        target = render.find_target(matrix.raw, target_name)
    elif cl.get("cl_engine"):
        cuda = cl.get("cl_cuda") or matrix.engine(cl["cl_engine"]).cuda
        base_name = cl.get("cl_base_name")
        if not base_name and not base_ref:
            devel = sorted(
                (b for b in bases.values() if b.tag and cuda and b.tag.startswith(f"{cuda}.") and "-devel-" in b.tag),
                key=lambda b: b.tag or "",
            )
            if not devel:
                raise click.UsageError(f"no -devel base for CUDA {cuda} in matrix.yaml bases: (give --base-name or --base)")
            base_name = devel[-1].name
        base = base_ref or base_name
        python = cl.get("cl_python") or (bases[base_name].python if base_name in bases else None) or "3.12"
        target = render.target_from_options(
            name=None,
            engine=cl["cl_engine"],
            base=base,
            python=python,
            cuda=cuda,
            torch=None,
            glibc=None,
            model=cl.get("cl_model"),
            gpus=cl.get("cl_gpus"),
            launch_flags=tuple(shlex.split(cl.get("cl_flags") or "")),
        )
    else:
        raise click.UsageError("give a TARGET from matrix.yaml targets: or a target with --engine V [--cuda X.Y]")
    target = recipe.with_base_override(target, base_ref)
    try:
        engine_spec = matrix.engine(target.engine) if target.kind == "sglang" else None
    except ImgbuildError:
        engine_spec = None
    if target.kind == "sglang" and engine_spec is None:
        matrix.engine(target.engine)  # raises the matrix's own "not in the matrix" error
    inputs = render.resolve_inputs(target, bases=bases, engine=engine_spec, locks_dir=matrix.path.parent / "locks")
    return matrix, inputs


def _show_failed_step(exc: Any) -> None:
    """The failing step and its last output lines, readable, before the one-line error."""
    progress(f"failed step: {exc.step}")
    for line in exc.last_lines[-12:]:
        progress(f"  | {line}")


def _build_progress():  # noqa: ANN202 - a callback for engine.BuildEvent
    """Live build progress on stderr: plain lines, or one updating line on a terminal."""
    tty = sys.stderr.isatty()
    state = {"open": False}

    def show(event: Any) -> None:
        stamp = f"[{event.elapsed_s:7.1f}s]"
        if event.kind == "output" and tty:
            width = 120
            click.echo(f"\r\x1b[K{stamp}   | {event.text[: width - 16]}", err=True, nl=False)
            state["open"] = True
            return
        if state["open"]:
            click.echo("", err=True)
            state["open"] = False
        if event.kind == "step":
            click.echo(f"{stamp} step {event.step}/{event.total}: {event.text[:160]}", err=True)
        elif event.kind == "layer":
            click.echo(f"{stamp}   layer {event.layer} ({event.text})", err=True)
        elif event.kind == "pull":
            click.echo(f"{stamp}   pull {event.text}", err=True)
        else:
            click.echo(f"{stamp}   | {event.text}", err=True)

    return show


@cli.command()
@click.argument("target_name", required=False, metavar="[TARGET]")
@click.option("-o", "--output", "out_dir", default=None, type=click.Path(file_okay=False), help="Directory for the build context (default: build/render/TARGET).")
@_base_opt
@_target_options
@options.matrix_file
@options.json_output
def render(target_name: str | None, out_dir: str | None, base_ref: str | None, matrix_path: str | None, as_json: bool, **cl: Any) -> None:
    """Write TARGET's Dockerfile, lock and build context; the same inputs give the same bytes."""
    from pathlib import Path

    from imgbuild.knowledge.render import render_context, write_context

    _, inputs = _resolve_build_target(matrix_path, target_name, base_ref, cl)
    rendered = render_context(inputs)
    out = Path(out_dir or Path("build") / "render" / rendered.target.name)
    written = write_context(rendered, out)
    result = {
        "target": rendered.target.name,
        "recipe_digest": rendered.recipe_digest,
        "tag": rendered.tag,
        "base": rendered.base_ref,
        "directory": str(out),
        "files": [p.name for p in written],
    }
    if as_json:
        emit_json(result)
    else:
        click.echo(f"{rendered.target.name}: recipe {rendered.recipe_digest}")
        click.echo(f"  tag   {rendered.tag}\n  base  {rendered.base_ref}\n  wrote {out}/{{{','.join(result['files'])}}}")


@cli.command()
@click.argument("target_name", required=False, metavar="[TARGET]")
@_base_opt
@_ca_bundle_opt
@_pip_index_opt
@click.option("--force", is_flag=True, help="Build even if an image with the same recipe digest exists.")
@click.option("--repository", default=None, metavar="REPO", help="Image repository (default: imgbuild/sglang, or $IMGBUILD_REGISTRY/imgbuild/sglang; with a registry host the image is pushed).")
@click.option("--record", "record_path", default=None, type=click.Path(dir_okay=False), help="Write the build record JSON here (default: ~/.cache/imgbuild/builds/TAG.json).")
@_target_options
@options.matrix_file
@options.json_output
def build(
    target_name: str | None,
    base_ref: str | None,
    ca_bundle: str | None,
    pip_index_url: str | None,
    force: bool,
    repository: str | None,
    record_path: str | None,
    matrix_path: str | None,
    as_json: bool,
    **cl: Any,
) -> None:
    """Build TARGET's image through the Docker engine (skipped when its recipe digest exists)."""
    import os
    from pathlib import Path

    from imgbuild.adapters import engine as engine_mod
    from imgbuild.flows.build import DEFAULT_REPOSITORY, BuildOptions, build_image
    from imgbuild.knowledge.render import render_context

    _, inputs = _resolve_build_target(matrix_path, target_name, base_ref, cl)
    rendered = render_context(inputs)
    registry = os.environ.get("IMGBUILD_REGISTRY")
    repo = repository or (f"{registry}/{DEFAULT_REPOSITORY}" if registry else DEFAULT_REPOSITORY)
    progress(f"building {repo}:{rendered.tag} (recipe {rendered.recipe_digest})")
    try:
        record = build_image(
            engine_mod.connect(),
            BuildOptions(
                rendered=rendered,
                repository=repo,
                ca_bundle=Path(ca_bundle) if ca_bundle else None,
                pip_index_url=pip_index_url,
                force=force,
                record_path=Path(record_path) if record_path else None,
                on_progress=_build_progress(),
            ),
        )
    except (engine_mod.BuildFailed, engine_mod.BuildEnvironmentFailed) as exc:
        _show_failed_step(exc)
        raise
    if as_json:
        emit_json(record.to_dict())
    else:
        verb = "skipped" if record.skipped else "built"
        click.echo(f"{verb} {record.image} in {record.duration_s:.1f} s ({record.reason})")
        click.echo(f"  id      {record.image_id}")
        if record.repo_digest:
            click.echo(f"  digest  {record.repo_digest}")
        click.echo(f"  record  {record.record_path}")


@cli.command()
@click.argument("engine_version", required=False, metavar="[ENGINE]")
@click.option("--target", "target_name", default=None, metavar="NAME", help="Lock a target's packages instead (test targets: --no-deps).")
@click.option("--arch", "arches", multiple=True, type=click.Choice(["x86_64", "aarch64"]), help="Repeat for each (default: both).")
@click.option("--python", "python", default="3.12", show_default=True, metavar="X.Y", help="The image's Python.")
@click.option("--index-url", default=None, metavar="URL", help="Resolve against this index instead of PyPI.")
@_ca_bundle_opt
@options.matrix_file
@options.json_output
def lock(
    engine_version: str | None,
    target_name: str | None,
    arches: tuple[str, ...],
    python: str,
    index_url: str | None,
    ca_bundle: str | None,
    matrix_path: str | None,
    as_json: bool,
) -> None:
    """Hash-pin ENGINE's whole dependency set for Linux x86_64 and aarch64 into locks/."""
    from dataclasses import replace
    from pathlib import Path

    from imgbuild.adapters import uvlock as lock_mod
    from imgbuild.knowledge import render

    matrix = _load_matrix(matrix_path)
    locks_dir = matrix.path.parent / "locks"
    ca = Path(ca_bundle) if ca_bundle else None
    jobs = []
    if target_name:
        target = render.find_target(matrix.raw, target_name)
        jobs.append(lock_mod.target_lock_options(target, locks_dir=locks_dir, index_url=index_url, ca_bundle=ca))
    elif engine_version:
        spec = matrix.engine(engine_version)
        from packaging.specifiers import SpecifierSet

        if spec.requires_python and python not in SpecifierSet(spec.requires_python):
            raise click.UsageError(f"SGLang {spec.version} needs Python {spec.requires_python}, not {python}")
        for arch in arches or lock_mod.ARCHES:
            jobs.append(
                lock_mod.engine_lock_options(spec.version, python=python, arch=arch, locks_dir=locks_dir, index_url=index_url, ca_bundle=ca)
            )
    else:
        raise click.UsageError("give an ENGINE version (e.g. 0.5.11) or --target NAME")
    results = []
    for job in jobs:
        progress(f"resolving {' '.join(job.requirements)} for {job.arch}, Python {job.python} ...")
        results.append(lock_mod.lock_requirements(replace(job)))
    if as_json:
        emit_json([{"path": str(r.path), "packages": r.packages, "hashes": r.hashes, "uv": r.uv_version} for r in results])
    else:
        for r in results:
            click.echo(f"{r.path}: {r.packages} packages, {r.hashes} hashes ({r.uv_version})")


@cli.command("verify-repro")
@click.argument("image")
@_ca_bundle_opt
@_pip_index_opt
@click.option("--keep", is_flag=True, help="Keep the rebuilt image (untagged) instead of removing it.")
@options.matrix_file
@options.json_output
def verify_repro_cmd(image: str, ca_bundle: str | None, pip_index_url: str | None, keep: bool, matrix_path: str | None, as_json: bool) -> None:
    """Rebuild IMAGE without cache and compare its environment: identical, or the differences (exit 1)."""
    from pathlib import Path

    from imgbuild.adapters import engine as engine_mod
    from imgbuild.errors import NegativeVerdict
    from imgbuild.knowledge.render import bases_of
    from imgbuild.flows.repro import ReproOptions, verify_repro

    matrix = _load_matrix(matrix_path)

    def engine_spec(version: str):  # noqa: ANN202
        try:
            return matrix.engine(version)
        except ImgbuildError:
            return None

    options_ = ReproOptions(
        image=image,
        bases=bases_of(matrix.raw),
        engine_spec=engine_spec,
        locks_dir=matrix.path.parent / "locks",
        ca_bundle=Path(ca_bundle) if ca_bundle else None,
        pip_index_url=pip_index_url,
        keep_rebuild=keep,
        on_progress=_build_progress(),
    )
    try:
        report = verify_repro(engine_mod.connect(), options_)
    except (engine_mod.BuildFailed, engine_mod.BuildEnvironmentFailed) as exc:
        _show_failed_step(exc)
        raise
    if as_json:
        emit_json(report.to_dict())
    elif report.identical:
        click.echo(f"identical: {image} and its rebuild ({report.packages_compared} packages, {report.files_compared} files)")
    else:
        click.echo(f"different: {image} and its rebuild ({len(report.differences)} differences)")
        for line in report.differences:
            click.echo(f"  {line}")
    if not report.identical:
        raise NegativeVerdict(f"{image}: the rebuild differs in {len(report.differences)} places")


@cli.group()
def bases() -> None:
    """Base images of matrix.yaml bases:."""


@bases.command("refresh")
@click.option("--timeout", "timeout_s", default=20.0, show_default=True, help="Seconds per registry request.")
@options.matrix_file
@options.json_output
def bases_refresh(timeout_s: float, matrix_path: str | None, as_json: bool) -> None:
    """Re-read each base's digests from its registry and record them in matrix.yaml."""
    import httpx

    from imgbuild.adapters.baseimages import fetch_digests
    from imgbuild.knowledge.recipe import update_base_digests
    from imgbuild.knowledge.render import bases_of

    matrix = _load_matrix(matrix_path)
    text = matrix.path.read_text(encoding="utf-8")
    changes = []
    with httpx.Client(timeout=timeout_s, follow_redirects=True) as client:
        for base in bases_of(matrix.raw).values():
            if not base.tag or base.image.startswith("127.0.0.1"):
                continue  # made per machine (scripts/services): nothing to refresh
            progress(f"reading {base.image}:{base.tag} ...")
            digest, platforms = fetch_digests(client, base.image, base.tag)
            changes.append({"base": base.name, "old": base.digest, "digest": digest, "platforms": platforms})
            text = update_base_digests(text, base.name, digest, platforms)
    tmp = matrix.path.with_name(matrix.path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(matrix.path)
    if as_json:
        emit_json(changes)
    else:
        for c in changes:
            same = "unchanged" if c["old"] == c["digest"] else f"was {c['old']}"
            click.echo(f"{c['base']}: {c['digest']} ({same}); {len(c['platforms'])} platforms")


# --- plan (issue 3) -------------------------------------------------------------------


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="MODEL [-- FLAGS...]")
@options.gpu_target
@options.sglang_version
@click.option("--command", "command", default=None, metavar="'CMD'", help="A whole launch command: 'python -m sglang.launch_server --model-path M ...'.")
@click.option("--command-file", "command_file", default=None, type=click.Path(dir_okay=False, exists=True), help="Read the launch command from a file (a script line).")
@click.option("--no-suggest", is_flag=True, help="Skip the search for changes that fit.")
@options.matrix_file
@options.json_output
def plan(
    args: tuple[str, ...],
    gpu: str | None,
    sglang: str | None,
    command: str | None,
    command_file: str | None,
    no_suggest: bool,
    matrix_path: str | None,
    as_json: bool,
) -> None:
    """Will these launch flags fit, by SGLang's own memory accounting, before anything loads?

    imgbuild plan MODEL [--gpu NAME[xN]] [--sglang V] -- --tp 2 --mem-fraction-static 0.85 ...

    Exit 0 fits, 1 does not fit or SGLang refuses the flags, 2 bad input, 3 no GPUs to read.
    """
    from pathlib import Path

    from imgbuild.errors import NegativeVerdict, UsageError
    from imgbuild.flows.plan import PlanOptions, plan_launch, plan_lines

    if command and command_file:
        raise UsageError("give --command or --command-file, not both")
    if command_file:
        command = Path(command_file).read_text(encoding="utf-8")
    words = list(args)
    model = words.pop(0) if words and not words[0].startswith("-") else None
    if words and words[0] == "--":
        words.pop(0)
    matrix = _load_matrix(matrix_path)
    probe = None
    if not gpu:
        from imgbuild.adapters.gpus import default_probe

        probe = default_probe()
    from imgbuild.adapters.hub import hub_for
    from imgbuild.knowledge.launchflags import split_command

    source = model or (split_command(command).model_path if command else None)
    hub = hub_for(source) if source else None
    opts = PlanOptions(model=model, flags=tuple(words), command=command, gpu=gpu, sglang=sglang, suggest=not no_suggest)
    result = plan_launch(opts, matrix=matrix, probe=probe, hub=hub)
    if as_json:
        emit_json(result.to_dict())
    else:
        for line in plan_lines(result):
            click.echo(line)
    if not result.fits:
        first = result.problems[0] if result.problems else result.verdict
        raise NegativeVerdict(f"{result.verdict}: {first}")


# --- make, report (issue 6) -------------------------------------------------------


def _make_targets(names: tuple[str, ...], all_targets: bool, matrix) -> tuple:  # noqa: ANN001 - Matrix
    from imgbuild.errors import UsageError
    from imgbuild.knowledge.render import find_target, targets_of

    if all_targets and names:
        raise UsageError("give TARGET names or --all, not both")
    if all_targets:
        return tuple(targets_of(matrix.raw).values())
    if not names:
        raise UsageError("give one or more TARGET names, or --all", hint="`imgbuild matrix show` and matrix.yaml targets:")
    return tuple(find_target(matrix.raw, name) for name in names)


def _model_dirs(pairs: tuple[str, ...]) -> dict[str, str]:
    from imgbuild.errors import UsageError

    out = {}
    for pair in pairs:
        model, sep, directory = pair.partition("=")
        if not sep or not model or not directory:
            raise UsageError(f"--model-dir {pair!r}: write MODEL_ID=DIRECTORY")
        out[model] = directory
    return out


@cli.command()
@click.argument("target_names", nargs=-1, metavar="[TARGET]...")
@click.option("--all", "all_targets", is_flag=True, help="Every target in matrix.yaml.")
@click.option("--until", default="publish", type=click.Choice(["check", "plan", "render", "build", "certify", "publish"]),
              show_default=True, help="Stop after this step.")
@click.option("--force", is_flag=True, help="Run every step again, even where its inputs did not change.")
@click.option("--to", "destination", default=None, metavar="HOST[:PORT]/REPO", help="Publish there (no --to: no publish).")
@click.option("--allow-uncertified", is_flag=True, help="Publish targets without a passing certificate, marked so.")
@_username_option
@_password_stdin_option
@click.option("--registry-ca", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A CA file that signed the --to registry's TLS certificate.")
@click.option("--repository", default=None, metavar="REPO",
              help="Where builds are tagged (default: $IMGBUILD_REGISTRY/imgbuild/sglang or imgbuild/sglang).")
@click.option("--base", "base_ref", default=None, metavar="REF@sha256:...", help="The base for targets whose matrix base has no digest (made per machine, e.g. $IMGBUILD_TEST_BASE).")
@click.option("--ca-bundle", "ca_bundle", default=None, type=click.Path(exists=True, dir_okay=False),
              help="An extra CA for the build's pip (a TLS-intercepting proxy).")
@click.option("--pip-index-url", default=None, metavar="URL", help="The package index the builds use.")
@click.option("--model-dir", "model_dir_pairs", multiple=True, metavar="ID=DIR",
              help="Use a local directory for a model id (check, plan, certify); repeat for each.")
@click.option("--no-gpus", is_flag=True, help="Certify without attaching GPUs (stand-in images; certificates say so).")
@click.option("--workers", type=int, default=None, help="Parallel GPU-set queues at most (default: one per GPU set).")
@click.option("--state", "state_dir", default=None, type=click.Path(file_okay=False),
              help="Where make keeps each step's inputs and results (default: $XDG_STATE_HOME/imgbuild/make).")
@_store_option
@options.matrix_file
@options.json_output
def make(target_names: tuple[str, ...], all_targets: bool, until: str, force: bool, destination: str | None,
         allow_uncertified: bool, username: str | None, password_stdin: bool, registry_ca: str | None,
         repository: str | None, base_ref: str | None, ca_bundle: str | None, pip_index_url: str | None,
         model_dir_pairs: tuple[str, ...], no_gpus: bool, workers: int | None, state_dir: str | None,
         store_dir: str | None, matrix_path: str | None, as_json: bool) -> None:
    """Check, plan, render, build, certify and publish each TARGET (or --all).

    A step is skipped when its inputs did not change since it last succeeded; after
    a failure the next run resumes there. Targets on different GPU sets build and
    certify in parallel. Ends with a summary table. Exit 0 all done, else the exit
    code of the worst failure (1 a negative verdict, 2 bad input, 3 no engine/registry).
    """
    import os
    from pathlib import Path

    from imgbuild.flows import make as make_mod
    from imgbuild.adapters.registry import parse_reference

    matrix = _load_matrix(matrix_path)
    targets = _make_targets(target_names, all_targets, matrix)
    state = make_mod.StateStore(Path(state_dir) if state_dir else None)
    settings = make_mod.StepSettings(
        matrix=matrix, locks_dir=matrix.path.parent / "locks", render_dir=state.root / "contexts",
        repository=repository,
        base_override=base_ref, ca_bundle=Path(ca_bundle) if ca_bundle else None, pip_index_url=pip_index_url,
        model_dirs=_model_dirs(model_dir_pairs), destination=destination, allow_uncertified=allow_uncertified,
        certify_attach_gpus=not no_gpus, store_dir=Path(store_dir) if store_dir else None,
    )
    registry = None
    if destination and until == "publish":
        registry = _registry_client(parse_reference(destination, require_host=True).host, username, password_stdin,
                                    registry_ca)

    def connect():  # noqa: ANN202 - engine.Engine
        from imgbuild.adapters import engine as engine_mod

        return engine_mod.connect()

    steps = make_mod.default_steps(settings, connect_engine=connect, registry=registry, progress=progress)
    try:
        summary = make_mod.run_make(make_mod.MakeOptions(targets=targets, until=until, force=force, workers=workers),
                                    steps=steps, state=state, progress=progress)
    finally:
        if registry is not None:
            registry.close()
    if as_json:
        emit_json(summary.to_dict())
    else:
        for line in make_mod.summary_lines(summary):
            click.echo(line)
    code = summary.exit_code()
    if code:
        raise SystemExit(code)


@cli.command()
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory for index.html.")
@click.option("--state", "state_dir", default=None, type=click.Path(file_okay=False),
              help="make's state directory (default: $XDG_STATE_HOME/imgbuild/make).")
@_store_option
@options.matrix_file
@options.json_output
def report(out_dir: str, state_dir: str | None, store_dir: str | None, matrix_path: str | None, as_json: bool) -> None:
    """Write a static HTML page of the matrix: every target, its status and its certificate."""
    import os
    from datetime import datetime, timezone
    from pathlib import Path

    from imgbuild.flows import make as make_mod
    from imgbuild.knowledge import report as report_mod
    from imgbuild.flows.publish import load_certificates
    from imgbuild.knowledge.render import targets_of

    matrix = _load_matrix(matrix_path)
    targets = [t.to_dict() for t in targets_of(matrix.raw).values()]
    rows = report_mod.build_rows(targets, load_certificates(Path(store_dir) if store_dir else None),
                                 make_mod.StateStore(Path(state_dir) if state_dir else None).all())
    page = report_mod.render_html(rows, generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                                  source=str(matrix.path))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    tmp = out / ".index.html.tmp"
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)
    counts = {s: sum(1 for r in rows if r.status == s) for s in report_mod.STATUSES}
    if as_json:
        emit_json({"path": str(path), "targets": len(rows), "statuses": counts})
    else:
        click.echo(f"wrote {path}: {len(rows)} targets (" + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ")")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        code = cli.main(args=args, prog_name="imgbuild", standalone_mode=False)
    except NegativeVerdict as exc:  # the answer is no: the result was already printed
        click.echo(f"imgbuild: {exc.one_line()}", err=True)
        sys.exit(exc.exit_code)
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
