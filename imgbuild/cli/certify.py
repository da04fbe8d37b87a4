"""certify, certs list, certs show: prove an image serves on its GPUs, and the stored certificates."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Iterator

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json, load_matrix, progress, split_flags
from imgbuild.errors import UsageError


def env_pairs_of(pairs: tuple[str, ...]) -> dict[str, str]:
    bad = [p for p in pairs if "=" not in p or p.startswith("=")]
    if bad:
        raise UsageError(f"--env {bad[0]!r}: expected KEY=VALUE")
    return dict(p.split("=", 1) for p in pairs)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt while certify runs, so its teardown runs on the way out."""
    def on_sigterm(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the teardown short
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@cli.command()
@click.argument("image")
@options.target_name
@options.gpu_target
@options.model_dir
@options.model_ref
@options.hf_cache
@options.launch_flags
@options.gpu_uuid
@options.no_gpus
@options.host_port
@options.ready_timeout
@options.max_used_mib
@options.cert_store
@options.no_plan
@options.container_env
@options.matrix_file
@options.json_output
def certify(image: str, target_name: str | None, gpu: str | None, model_dir: str | None,
            model_ref: str | None, hf_cache: str | None, flags_text: str | None, gpu_uuids: tuple[str, ...],
            no_gpus: bool, host_port: int, timeout_s: float, max_used_mib: int, store_dir: str | None,
            no_plan: bool, env_pairs: tuple[str, ...], matrix_path: str | None, as_json: bool) -> None:
    """Launch IMAGE on its target GPUs, prove it serves, and store a certificate.

    Exit 0 when it passes (also 'pass-unattested', which the certificate marks), 1 when a
    preflight check or the certification fails, 3 when there is no Docker engine.
    """
    import httpx

    from imgbuild.adapters import engine
    from imgbuild.adapters.certstore import CertStore
    from imgbuild.flows import certify as flow
    from imgbuild.flows.targets import certify_host, certify_options
    from imgbuild.knowledge.render import find_target

    matrix = load_matrix(matrix_path)
    target = find_target(matrix.raw, target_name) if target_name else None
    flags = split_flags(flags_text)
    environment = env_pairs_of(env_pairs)
    eng = engine.connect()
    host = certify_host(eng, image)
    opts = certify_options(
        image=image, target=target, host=host, gpus=gpu, launch_flags=flags, model_dir=model_dir,
        model_ref=model_ref, hf_cache=hf_cache, gpu_uuids=gpu_uuids, attach_gpus=not no_gpus,
        host_port=host_port, ready_timeout_s=timeout_s, max_used_mib=max_used_mib, environment=environment,
    )
    planner = None if no_plan else flow.imgbuild_planner(matrix)
    with sigterm_as_interrupt(), httpx.Client(trust_env=False) as http:
        cert = flow.certify(opts, eng=eng, probe=host.probe, matrix=matrix,
                            http=http, store=CertStore(store_dir), planner=planner, progress=progress)
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


@certs.command("list")
@options.cert_store
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
@options.cert_store
@options.json_output
def certs_show(cert_id: str, store_dir: str | None, as_json: bool) -> None:
    """Show one certificate (an id or a unique prefix)."""
    from imgbuild.adapters.certstore import CertStore

    cert = CertStore(store_dir).load(cert_id)
    if as_json:
        emit_json(cert)
    else:
        _print_certificate(cert)

