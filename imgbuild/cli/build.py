"""render, build, lock, verify-repro, bases refresh: a target's recipe, image and locks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import click

from imgbuild.cli import options
from imgbuild.cli.app import build_progress, cli, emit_json, load_matrix, progress, show_failed_step, split_flags
from imgbuild.errors import ImgbuildError, NegativeVerdict

if TYPE_CHECKING:
    from imgbuild.knowledge.recipe import RecipeInputs
    from imgbuild.knowledge.specs import EngineSpec


def target_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """A target given on the command line instead of a name from matrix.yaml."""
    return options.stack(
        options.sglang_version, options.cuda_version, options.base_name, options.image_python, options.model_id,
        options.gpu_target, options.launch_flags,
    )(func)


def resolve_request(matrix_path: str | None, target_name: str | None, base_ref: str | None,
                    cl: dict[str, Any]) -> RecipeInputs:
    """The RecipeInputs of TARGET, or of the target --sglang ... describes (flows.targets)."""
    from imgbuild.flows.targets import TargetRequest, resolve_target

    request = TargetRequest(
        name=target_name, engine=cl.get("sglang"), cuda=cl.get("cuda"), base_name=cl.get("base_name"),
        python=cl.get("image_python"), model=cl.get("model"), gpus=cl.get("gpu"),
        launch_flags=split_flags(cl.get("flags_text")) or (), base_ref=base_ref,
    )
    return resolve_target(load_matrix(matrix_path), request)


@cli.command()
@click.argument("target_name", required=False, metavar="[TARGET]")
@options.output_dir(required=False, help="Directory for the build context (default: build/render/TARGET).")
@options.base_ref
@target_options
@options.matrix_file
@options.json_output
def render(target_name: str | None, out_dir: str | None, base_ref: str | None, matrix_path: str | None, as_json: bool, **cl: Any) -> None:
    """Write TARGET's Dockerfile, lock and build context; the same inputs give the same bytes."""
    from imgbuild.knowledge.render import render_context, write_context

    inputs = resolve_request(matrix_path, target_name, base_ref, cl)
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
@options.base_ref
@options.ca_bundle
@options.pip_index_url
@options.force
@options.repository
@options.record_path
@target_options
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
    from imgbuild.adapters import engine as engine_mod
    from imgbuild.flows.build import BuildOptions, build_image
    from imgbuild.flows.targets import default_repository
    from imgbuild.knowledge.render import render_context

    inputs = resolve_request(matrix_path, target_name, base_ref, cl)
    rendered = render_context(inputs)
    repo = repository or default_repository()
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
                on_progress=build_progress(),
            ),
        )
    except (engine_mod.BuildFailed, engine_mod.BuildEnvironmentFailed) as exc:
        show_failed_step(exc)
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
@options.target_name
@options.lock_arch
@options.image_python
@options.pip_index_url
@options.index_as_of
@options.index_latest
@options.ca_bundle
@options.matrix_file
@options.json_output
def lock(
    engine_version: str | None,
    target_name: str | None,
    arches: tuple[str, ...],
    image_python: str | None,
    pip_index_url: str | None,
    as_of: str | None,
    latest: bool,
    ca_bundle: str | None,
    matrix_path: str | None,
    as_json: bool,
) -> None:
    """Hash-pin ENGINE's whole dependency set for Linux x86_64 and aarch64 into locks/, as of ENGINE's release."""
    from imgbuild.adapters import uvlock as lock_mod
    from imgbuild.knowledge import render

    python, index_url = image_python or "3.12", pip_index_url
    matrix = load_matrix(matrix_path)
    locks_dir = matrix.path.parent / "locks"
    ca = Path(ca_bundle) if ca_bundle else None
    jobs = []
    if target_name:
        target = render.find_target(matrix.raw, target_name)
        when = None if target.kind == "test" else lock_mod.engine_as_of(target.engine, as_of=as_of, latest=latest, ca_bundle=ca)
        jobs.append(
            lock_mod.target_lock_options(
                target, locks_dir=locks_dir, as_of=when, constraints=matrix.constraints_for(target.engine), index_url=index_url, ca_bundle=ca
            )
        )
    elif engine_version:
        spec = matrix.engine(engine_version)
        from packaging.specifiers import SpecifierSet

        if spec.requires_python and python not in SpecifierSet(spec.requires_python):
            raise click.UsageError(f"SGLang {spec.version} needs Python {spec.requires_python}, not {python}")
        when = lock_mod.engine_as_of(spec.version, as_of=as_of, latest=latest, ca_bundle=ca)
        for arch in arches or lock_mod.ARCHES:
            jobs.append(
                lock_mod.engine_lock_options(
                    spec.version, python=python, arch=arch, locks_dir=locks_dir, as_of=when,
                    constraints=matrix.constraints_for(spec.version), index_url=index_url, ca_bundle=ca,
                )
            )
    else:
        raise click.UsageError("give an ENGINE version (e.g. 0.5.11) or --target NAME")
    results = []
    for job in jobs:
        when_text = f", as of {job.as_of.exclude_newer or 'today'}" if job.as_of else ""
        progress(f"resolving {' '.join(job.requirements)} for {job.arch}, Python {job.python}{when_text} ...")
        results.append(lock_mod.lock_requirements(replace(job)))
    if as_json:
        emit_json([{"path": str(r.path), "packages": r.packages, "hashes": r.hashes, "uv": r.uv_version, "as_of": r.as_of} for r in results])
    else:
        for r in results:
            click.echo(f"{r.path}: {r.packages} packages, {r.hashes} hashes{', as of ' + r.as_of if r.as_of else ''} ({r.uv_version})")


@cli.command("verify-repro")
@click.argument("image")
@options.ca_bundle
@options.pip_index_url
@options.keep_rebuild
@options.matrix_file
@options.json_output
def verify_repro_cmd(image: str, ca_bundle: str | None, pip_index_url: str | None, keep: bool, matrix_path: str | None, as_json: bool) -> None:
    """Rebuild IMAGE without cache and compare its environment: identical, or the differences (exit 1)."""
    from imgbuild.adapters import engine as engine_mod
    from imgbuild.flows.repro import ReproOptions, verify_repro
    from imgbuild.knowledge.render import bases_of

    matrix = load_matrix(matrix_path)

    def engine_spec(version: str) -> EngineSpec | None:
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
        on_progress=build_progress(),
    )
    try:
        report = verify_repro(engine_mod.connect(), options_)
    except (engine_mod.BuildFailed, engine_mod.BuildEnvironmentFailed) as exc:
        show_failed_step(exc)
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
@options.request_timeout
@options.matrix_file
@options.json_output
def bases_refresh(timeout_s: float | None, matrix_path: str | None, as_json: bool) -> None:
    """Re-read each base's digests from its registry and record them in matrix.yaml."""
    import httpx

    from imgbuild.flows.targets import refresh_base_digests

    matrix = load_matrix(matrix_path)
    with httpx.Client(timeout=timeout_s or 20.0, follow_redirects=True) as client:
        changes = [c.to_dict() for c in refresh_base_digests(matrix, client=client, progress=progress)]
    if as_json:
        emit_json(changes)
    else:
        for c in changes:
            same = "unchanged" if c["old"] == c["digest"] else f"was {c['old']}"
            click.echo(f"{c['base']}: {c['digest']} ({same}); {len(c['platforms'])} platforms")

