"""make, report: every target through every step, and the static page of the matrix."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json, load_matrix, progress
from imgbuild.cli.publish import registry_client
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
    if not names:
        raise UsageError("give one or more TARGET names, or --all", hint="`imgbuild matrix show` and matrix.yaml targets:")
    return tuple(find_target(matrix.raw, name) for name in names)


def _model_dirs(pairs: tuple[str, ...]) -> dict[str, str]:
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
@options.no_gpus
@options.workers
@options.state_dir
@options.cert_store
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
    from imgbuild.adapters.registry import parse_reference
    from imgbuild.flows import make as make_mod
    from imgbuild.flows.targets import locks_dir_of

    matrix = load_matrix(matrix_path)
    targets = _make_targets(target_names, all_targets, matrix)
    state = make_mod.StateStore(Path(state_dir) if state_dir else None)
    settings = make_mod.StepSettings(
        matrix=matrix, locks_dir=locks_dir_of(matrix), render_dir=state.root / "contexts", repository=repository,
        base_override=base_ref, ca_bundle=Path(ca_bundle) if ca_bundle else None, pip_index_url=pip_index_url,
        model_dirs=_model_dirs(model_dir_pairs), destination=destination, allow_uncertified=allow_uncertified,
        certify_attach_gpus=not no_gpus, store_dir=Path(store_dir) if store_dir else None,
    )
    registry = None
    if destination and until == "publish":
        host = parse_reference(destination, require_host=True).host
        registry = registry_client(host, username, password_stdin, registry_ca)
    steps = make_mod.default_steps(settings, connect_engine=_connect_engine, registry=registry, progress=progress)
    try:
        summary = make_mod.run_make(make_mod.MakeOptions(targets=targets, until=until, force=force, workers=workers),
                                    steps=steps, state=state, progress=progress)
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
@options.state_dir
@options.cert_store
@options.matrix_file
@options.json_output
def report(out_dir: str, state_dir: str | None, store_dir: str | None, matrix_path: str | None, as_json: bool) -> None:
    """Write a static HTML page of the matrix: every target, its status and its certificate."""
    from imgbuild.flows import make as make_mod
    from imgbuild.flows.publish import load_certificates
    from imgbuild.knowledge import report as report_mod
    from imgbuild.knowledge.render import targets_of

    matrix = load_matrix(matrix_path)
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
