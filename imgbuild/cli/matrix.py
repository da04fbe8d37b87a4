"""matrix show, matrix validate: the compatibility matrix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json, load_matrix, targets_path
from imgbuild.errors import MatrixError, UsageError

if TYPE_CHECKING:
    from imgbuild.knowledge.matrix import Matrix


@cli.group()
def matrix() -> None:
    """Show or validate the compatibility matrix."""


@matrix.command("show")
@options.sglang_version
@options.matrix_file
@options.json_output
def matrix_show(sglang: str | None, matrix_path: str | None, as_json: bool) -> None:
    """A readable table of engines (or one engine, --sglang V), CUDA versions and GPUs."""
    m = load_matrix(matrix_path)
    if sglang:
        e = m.engine(sglang)
        data = {"version": e.version, "requires_python": e.requires_python, "glibc": e.glibc, "torch": e.torch,
                "cuda": e.cuda, "pins": e.pins, "architectures": sorted(e.architectures), "released": e.released,
                "lock_smoke": e.lock_smoke}
        if as_json:
            emit_json(data)
            return
        for key in ("version", "released", "requires_python", "glibc", "torch", "cuda"):
            click.echo(f"{key:<16} {data[key]}")
        for kind, record in e.lock_smoke.items():
            click.echo(f"lock {kind:<11} " + ("imports" if record["imports"] else
                       f"DOES NOT import: {record.get('step')}: {record.get('root')}") + f" (Python {record.get('python')}, "
                       f"as of {record.get('as_of')}, checked {record.get('checked')})")
        for name, spec in e.pins.items():
            click.echo(f"pin              {name}{spec}")
        click.echo(f"architectures    {len(e.architectures)}:")
        for arch in sorted(e.architectures):
            click.echo(f"  {arch}")
        return
    if as_json:
        emit_json({
            "engines": [{"version": e.version, "torch": e.torch, "cuda": e.cuda, "requires_python": e.requires_python,
                         "architectures": len(e.architectures), "released": e.released,
                         "lock_imports": {k: r["imports"] for k, r in e.lock_smoke.items()}} for e in m.engines],
            "cuda": [{"version": c.version, "min_driver": c.min_driver, "sm": list(c.sm)} for c in m.cuda],
            "gpus": [{"name": g.name, "compute_capability": g.compute_capability, "memory_mib": g.memory_mib,
                      "aliases": list(g.aliases), "platform": g.platform} for g in m.gpus],
            "targets_file": None if m.targets_file is None else str(m.targets_file),
            "targets": _target_rows(m),
        })
        return
    click.echo(f"{'sglang':<14}{'released':<12}{'torch':<10}{'cuda':<6}{'python':<12}{'glibc':<7}{'archs':<7}lock imports")
    for e in m.engines:
        click.echo(f"{e.version:<14}{e.released or '-':<12}{e.torch or '-':<10}{e.cuda or '-':<6}"
                   f"{e.requires_python or '-':<12}{e.glibc or '-':<7}{len(e.architectures):<7}{_lock_column(e)}")
    failing = [e for e in m.engines if e.lock_failure()]
    for e in failing:
        click.echo(f"warning: SGLang {e.version}: {e.lock_failure()}", err=True)
    click.echo("")
    click.echo(f"{'cuda':<6}{'min driver':<12}sm")
    for c in m.cuda:
        click.echo(f"{c.version:<6}{c.min_driver:<12}{' '.join(c.sm)}")
    click.echo("")
    click.echo(f"{'gpu':<36}{'sm':<6}{'MiB':>8}  aliases")
    for g in m.gpus:
        rocm = "  (ROCm: plan only)" if g.platform == "rocm" else ""
        click.echo(f"{g.name:<36}{g.compute_capability:<6}{g.memory_mib:>8}  {', '.join(g.aliases)}{rocm}")
    click.echo("")
    click.echo(f"{'target':<32}{'kind':<8}{'sglang':<10}{'gpus':<20}from")
    for t in _target_rows(m):
        click.echo(f"{t['name']:<32}{t['kind']:<8}{t['engine']:<10}{t['gpus'] or '-':<20}{t['source']}")


def _target_rows(m: Matrix) -> list[dict[str, Any]]:
    """Each target with the file (and line) it came from: the team's targets file or the matrix."""
    from imgbuild.knowledge.render import targets_of
    from imgbuild.knowledge.targetsfile import target_sources

    sources = target_sources(m)
    return [{"name": t.name, "kind": t.kind, "engine": t.engine, "gpus": t.gpus, "model": t.model,
             "source": sources.get(t.name, "")} for t in targets_of(m.raw).values()]


def _lock_column(engine: object) -> str:
    """as of the release / of today, from matrix.yaml lock_smoke (scripts/lock_all.py); '-' not measured."""
    smoke = getattr(engine, "lock_smoke", {})

    def word(kind: str) -> str:
        record = smoke.get(kind)
        return "-" if record is None else ("yes" if record["imports"] else "NO")

    return f"{word('as_of_release')} (today: {word('latest')})" if smoke else "-"


@matrix.command("validate")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@options.json_output
def matrix_validate(file: str | None, as_json: bool) -> None:
    """Validate a matrix file and the team's targets file over it, every problem with file:line.

    FILE is a matrix (default: the shipped one), or a targets file (one with none of
    engines:, cuda:, features:, ...), checked against the shipped matrix. The targets file
    of --targets, $IMGBUILD_TARGETS or ./imgbuild.yaml is checked too."""
    from imgbuild.knowledge.matrix import check_targets
    from imgbuild.knowledge.matrix import load_matrix as load_file
    from imgbuild.knowledge.targetsfile import (
        TEAM_SECTIONS,
        find_targets_file,
        missing_locks,
        overlay_matrix,
        read_targets_file,
    )

    matrix_file, team_path = file, None
    if file and _is_targets_file(file):
        matrix_file, team_path = None, file
    try:
        m = load_file(matrix_file)
        check_targets(m)
        team_path = team_path or find_targets_file(targets_path())
        team = read_targets_file(team_path) if team_path else None
        merged = overlay_matrix(m, team) if team else m
    except MatrixError as exc:
        if as_json:
            emit_json({"valid": False, "problems": exc.problems})
        else:
            for problem in exc.problems if len(exc.problems) > 1 else ():  # one: main's error line is it
                click.echo(problem, err=True)
        raise MatrixError(exc.problems) from None
    summary = {"valid": True, "file": str(m.path), "engines": len(m.engines), "cuda": len(m.cuda), "gpus": len(m.gpus),
               "features": len(m.features), "known_issues": len(m.known_issues)}
    warnings = []
    if team is not None:
        from imgbuild.flows.targets import locks_dir_of

        warnings = missing_locks(merged, locks_dir_of(merged))
        summary["targets_file"] = {"file": str(team.path), **{s: len(team.rows(s)) for s in TEAM_SECTIONS},
                                   "warnings": warnings}
    if as_json:
        emit_json(summary)
        return
    click.echo(f"{m.path}: valid ({len(m.engines)} engines, {len(m.cuda)} CUDA versions, {len(m.gpus)} GPUs, "
               f"{len(m.features)} features, {len(m.known_issues)} known issues)")
    if team is not None:
        counts = ", ".join(f"{len(team.rows(s))} {s}" for s in TEAM_SECTIONS)
        click.echo(f"{team.path}: valid over {m.path} ({counts})")
    for line in warnings:
        click.echo(f"warning: {line}", err=True)


def _is_targets_file(file: str) -> bool:
    """A file with none of the sections only a whole matrix has (engines:, cuda:, ...) is a targets file."""
    from imgbuild.knowledge.targetsfile import read_targets_file

    try:
        data = read_targets_file(file).data
    except UsageError:
        return False  # load_matrix reports it, as the matrix file it was given as
    return not set(data) & {"schema", "engines", "cuda", "features", "speculative", "known_issues"}
