"""publish, verify: images with their certificates in a registry."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json, load_matrix, progress
from imgbuild.errors import ImgbuildError, NegativeVerdict, UsageError

if TYPE_CHECKING:
    from imgbuild.adapters.registry import RegistryClient
    from imgbuild.flows.publish import TargetWant


def registry_client(host: str, username: str | None, password_stdin: bool, registry_ca: str | None) -> RegistryClient:
    """A client for ``host`` with the credentials of --username/--password-stdin, else the Docker config's."""
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
@options.destination(required=True)
@options.allow_uncertified
@options.registry_login
@options.cert_store
@options.matrix_file
@options.json_output
def publish(source: str, destination: str, allow_uncertified: bool, username: str | None, password_stdin: bool,
            registry_ca: str | None, store_dir: str | None, matrix_path: str | None, as_json: bool) -> None:
    """Push IMAGE (or TARGET's newest build) to a registry with its certificates attached.

    Exit 0 published (or already there), 1 no passing certificate, 2 bad input,
    3 no engine, registry unreachable or credentials refused.
    """
    from imgbuild.adapters import engine as engine_mod
    from imgbuild.adapters.registry import parse_reference
    from imgbuild.flows.publish import PublishOptions, load_certificates, publish_image
    from imgbuild.knowledge.render import targets_of

    dest = parse_reference(destination, require_host=True)
    try:
        targets = tuple(targets_of(load_matrix(matrix_path).raw))
    except ImgbuildError:
        targets = ()
    opts = PublishOptions(source=source, destination=destination, allow_uncertified=allow_uncertified, targets=targets)
    with registry_client(dest.host, username, password_stdin, registry_ca) as registry:
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
@options.for_target
@options.require_attested
@options.registry_login
@options.matrix_file
@options.json_output
def verify(reference: str, target_name: str | None, require_attested: bool, username: str | None,
           password_stdin: bool, registry_ca: str | None, matrix_path: str | None, as_json: bool) -> None:
    """Read REF's certificates from its registry and check that each is bound to its digest.

    Exit 0 certified (for --for TARGET when given), 1 not certified, 2 bad input, 3 registry unavailable.
    """
    from imgbuild.adapters.registry import parse_reference
    from imgbuild.flows.publish import VerifyOptions, verify_image

    want = _target_want(target_name, matrix_path) if target_name else None
    ref = parse_reference(reference, require_host=True)
    with registry_client(ref.host, username, password_stdin, registry_ca) as registry:
        result = verify_image(VerifyOptions(reference=reference, target=want, require_attested=require_attested),
                              registry=registry)
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_verify(result)
    if not result.certified:
        what = f"for target {target_name}" if target_name else "by any bound, passing certificate"
        raise NegativeVerdict(f"{result.repository}@{result.digest} is not certified {what}")


def _target_want(name: str, matrix_path: str | None) -> TargetWant:
    """What --for TARGET asks of a certificate: the target's GPUs, flags and minimum driver."""
    from imgbuild.flows.publish import TargetWant
    from imgbuild.knowledge.render import targets_of

    matrix = load_matrix(matrix_path)
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


def _print_verify(result: Any) -> None:
    """The VerifyResult as text."""
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

