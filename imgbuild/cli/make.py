"""make, report: every target through every step, and the static page of the matrix."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json, load_matrix, progress
from imgbuild.cli.certify import sigterm_as_interrupt
from imgbuild.cli.fleet import make_certifier, site_options, uninterrupted
from imgbuild.cli.publish import registry_client
from imgbuild.cli.target import make_model_target
from imgbuild.errors import UsageError

if TYPE_CHECKING:
    from imgbuild.flows.make import MakeSummary
    from imgbuild.knowledge.matrix import Matrix
    from imgbuild.knowledge.recipe import TargetSpec


def exit_code_of(summary: MakeSummary) -> int:
    """make's exit code: 0 when every target is done, else the worst failure's
    (1 a negative verdict, 2 bad input, 3 no engine or registry)."""
    return max((int(entry.get("exit_code") or 1) for entry in summary.failures()), default=0)


def _make_targets(names: tuple[str, ...], all_targets: bool, matrix: Matrix) -> tuple[TargetSpec, ...]:
    from imgbuild.knowledge.render import find_target, targets_of

    if all_targets and names:
        raise UsageError("give TARGET names or --all, not both")
    if all_targets:
        return tuple(targets_of(matrix.raw).values())
    if not names and matrix.target_sources:  # the team's targets file: all of its targets
        return tuple(t for name, t in targets_of(matrix.raw).items() if name in matrix.target_sources)
    if not names:
        raise UsageError("give one or more TARGET names, or --all", hint="`imgbuild matrix show` and matrix.yaml targets:")
    return tuple(find_target(matrix.raw, name) for name in names)


def model_dirs(pairs: tuple[str, ...]) -> dict[str, str]:
    """--model-dir ID=DIR pairs as {ID: DIR}; a pair without both halves is exit 2."""
    out = {}
    for pair in pairs:
        model, sep, directory = pair.partition("=")
        if not sep or not model or not directory:
            raise UsageError(f"--model-dir {pair!r}: write MODEL_ID=DIRECTORY")
        out[model] = directory
    return out


def _connect_engine() -> Any:
    from imgbuild.adapters import engine

    return engine.connect()  # the engine DOCKER_HOST names (ssh://, tcp:// or a socket)


@cli.command()
@click.argument("target_names", nargs=-1, metavar="[TARGET]...")
@options.all_targets
@options.until_step
@options.force
@options.destination(required=False)
@options.allow_uncertified
@options.registry_login_make
@options.repository
@options.base_ref
@options.ca_bundle
@options.pip_index_url
@options.model_dir_pairs
@options.gpu_target
@options.driver_version
@options.base_name
@options.no_gpus
@options.workers
@options.run_on
@site_options
@options.state_dir
@options.cert_store
@options.matrix_file
@options.json_output
def make(target_names: tuple[str, ...], all_targets: bool, until: str, force: bool, destination: str | None,
         allow_uncertified: bool, username: str | None, password_stdin: bool, registry_ca: str | None,
         repository: str | None, base_ref: str | None, ca_bundle: str | None, pip_index_url: str | None,
         model_dir_pairs: tuple[str, ...], gpu: str | None, driver: str | None, base_name: str | None, no_gpus: bool,
         workers: int | None,
         run_on: str, state_dir: str | None,
         store_dir: str | None, matrix_path: str | None, as_json: bool, **site: Any) -> None:
    """Check, plan, render, build, certify and publish each TARGET (or --all; none: the team file's).

    imgbuild make MODEL --gpu NAME[xN] first adds MODEL's target on those GPUs to the team's
    targets file as `imgbuild target add` does, unless the file has one already.

    A step is skipped when its inputs did not change since it last succeeded; after
    a failure the next run resumes there. Targets on different GPU sets build and
    certify in parallel. Ends with a summary table. Exit 0 all done, else the exit
    code of the worst failure (1 a negative verdict, 2 bad input, 3 no engine/registry).

    --on slurm: every build first, then every certify as its own Slurm job, all submitted
    at once (Slurm queues them); Ctrl-C or SIGTERM cancels them (exit 130), and the next
    make finds its jobs by name and submits no target twice.
    """
    from imgbuild.adapters.registry import parse_reference
    from imgbuild.flows import make as make_mod
    from imgbuild.flows.targets import locks_dir_of

    matrix, target_names = make_model_target(target_names, gpu=gpu, driver=driver, base_name=base_name,
                                             model_dir_pairs=model_dir_pairs, matrix_path=matrix_path)
    targets = _make_targets(target_names, all_targets, matrix)
    state = make_mod.StateStore(Path(state_dir) if state_dir else None)
    certifier = make_certifier(site, run_on=run_on, state_root=state.root, matrix=matrix, matrix_path=matrix_path,
                               model_dirs=model_dirs(model_dir_pairs), attach_gpus=not no_gpus, store_dir=store_dir)
    settings = make_mod.StepSettings(
        matrix=matrix, locks_dir=locks_dir_of(matrix), render_dir=state.root / "contexts", repository=repository,
        base_override=base_ref, ca_bundle=Path(ca_bundle) if ca_bundle else None, pip_index_url=pip_index_url,
        model_dirs=model_dirs(model_dir_pairs), destination=destination, allow_uncertified=allow_uncertified,
        certify_attach_gpus=not no_gpus, store_dir=Path(store_dir) if store_dir else None,
        remote_certify=certifier.certify if certifier else None,
    )
    registry = None
    if destination and until == "publish":
        host = parse_reference(destination, require_host=True).host
        registry = registry_client(host, username, password_stdin, registry_ca)
    steps = make_mod.default_steps(settings, connect_engine=_connect_engine, registry=registry, progress=progress)
    try:
        make_opts = make_mod.MakeOptions(targets=targets, until=until, force=force, workers=workers,
                                         certify_all_at_once=certifier is not None,
                                         on_interrupt=uninterrupted(certifier.interrupt) if certifier else None)
        with sigterm_as_interrupt():
            summary = make_mod.run_make(make_opts, steps=steps, state=state, progress=progress)
    finally:
        if registry is not None:
            registry.close()
    code = exit_code_of(summary)
    if as_json:
        emit_json({**summary.to_dict(), "exit_code": code})
    else:
        for line in make_mod.summary_lines(summary):
            click.echo(line)
    if code:
        raise SystemExit(code)


@cli.command()
@options.output_dir(required=True, help="Directory for index.html.")
@options.model_dir_pairs
@options.state_dir
@options.cert_store
@options.matrix_file
@options.json_output
def report(out_dir: str, model_dir_pairs: tuple[str, ...], state_dir: str | None, store_dir: str | None,
           matrix_path: str | None, as_json: bool) -> None:
    """Write one self-contained HTML page of the matrix: the releases, the architectures x
    releases grid, the GPUs, and every target with its plan per GPU, build and certificate.

    Offline: a target's model is read from --model-dir, the shipped example or the Hub's
    cache; a target that cannot be planned says why. --json prints the page's data.
    """
    from imgbuild.flows.report import ReportOptions, write_report

    matrix = load_matrix(matrix_path)
    result = write_report(ReportOptions(
        out_dir=Path(out_dir), state_dir=Path(state_dir) if state_dir else None,
        store_dir=Path(store_dir) if store_dir else None, model_dirs=model_dirs(model_dir_pairs),
        generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")), matrix=matrix)
    doc = result.document
    counts = doc["statuses"]
    if as_json:
        emit_json({"path": str(result.path), "bytes": result.html_bytes, "targets": len(doc["targets"]),
                   "statuses": counts, "report": doc})
    else:
        planned = sum(1 for t in doc["targets"] if t["plan"])
        click.echo(f"wrote {result.path} ({result.html_bytes / 1024:.0f} KiB): {len(doc['targets'])} targets ("
                   + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + f"), {planned} planned, "
                   f"{len(doc['releases'])} releases, {doc['grid']['class_count']} architecture classes")
        for t in doc["targets"]:
            if not t["plan"]:
                click.echo(f"  {t['target']}: not planned: {t['not_planned']}")
