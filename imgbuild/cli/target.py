"""target add: decide a target for a model on some GPUs and write it into the team's targets file."""

from __future__ import annotations

import os
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json, progress, targets_path
from imgbuild.errors import NegativeVerdict, UsageError

if TYPE_CHECKING:
    from imgbuild.flows.targetadd import TargetAddOptions, TargetDecision
    from imgbuild.knowledge.matrix import Matrix


@cli.group()
def target() -> None:
    """The team's targets file (./imgbuild.yaml, --targets FILE or $IMGBUILD_TARGETS)."""


def team_file_path() -> Path:
    """The targets file target add writes: --targets, else $IMGBUILD_TARGETS, else ./imgbuild.yaml
    (made when missing, so unlike the reader's lookup it need not exist)."""
    from imgbuild.knowledge.targetsfile import DEFAULT_FILE, TARGETS_ENV

    return Path(targets_path() or os.environ.get(TARGETS_ENV) or DEFAULT_FILE)


def load_shipped_and_team(matrix_path: str | None, path: Path) -> tuple[Matrix, Matrix]:
    """(the matrix alone, the matrix with the team's file over it where the file exists)."""
    from imgbuild.knowledge.matrix import load_matrix
    from imgbuild.knowledge.targetsfile import overlay_matrix, read_targets_file

    shipped = load_matrix(matrix_path)
    if path.is_dir():
        raise UsageError(f"--targets {path}: is a directory, not a targets file")
    return shipped, (overlay_matrix(shipped, read_targets_file(path)) if path.is_file() else shipped)


def host_driver() -> str | None:
    """This host's NVIDIA driver through NVML (or IMGBUILD_GPU_SNAPSHOT); None when no GPU is seen."""
    from imgbuild.adapters.gpus import default_probe

    return default_probe().read().driver_version


def model_dir_of(model: str, pairs: tuple[str, ...]) -> str | None:
    """The directory --model-dir ID=DIR gives for MODEL (None: read MODEL itself)."""
    from imgbuild.cli.make import model_dirs

    return model_dirs(pairs).get(model)


def add_target(opts: TargetAddOptions, *, matrix_path: str | None) -> tuple[TargetDecision, str | None]:
    """Decide the target and write it into the team's file: (the decision, "FILE:LINE" or None
    for a refusal). Shared by `target add` and `make MODEL --gpu`."""
    from imgbuild.adapters.hub import hub_for
    from imgbuild.flows.targetadd import decide_target, save_target
    from imgbuild.knowledge.targetsfile import target_sources

    path = team_file_path()
    shipped, matrix = load_shipped_and_team(matrix_path, path)
    source = opts.model_dir or opts.model
    decision = decide_target(opts, matrix=matrix, hub=hub_for(source), host_driver=host_driver,
                             taken=target_sources(matrix))
    if decision.target is None:
        return decision, None
    where = save_target(decision, path, shipped=shipped,
                        made_on=datetime.now(timezone.utc).strftime("%Y-%m-%d"))
    return decision, where


def decision_lines(decision: TargetDecision, where: str | None) -> list[str]:
    """The decision as printed: one line per step with its reason, then where it was written."""
    out = [f"target {decision.target.name if decision.target else '(none)'}: {decision.model} on {decision.gpus}"]
    width = max((len(r.step) for r in decision.reasons), default=0)
    for r in decision.reasons:
        out.append(f"  {r.step:<{width}}  {r.value}")
        out += textwrap.wrap(r.why, width=100, initial_indent=" " * (width + 6), subsequent_indent=" " * (width + 6),
                             break_long_words=False, break_on_hyphens=False)
    if decision.target is None:
        out.append(f"refused: {decision.refusal}")
        if decision.fits_on:
            out.append("would fit on: " + ", ".join(decision.fits_on)
                       + f" (imgbuild target add {decision.model} --gpu '{decision.fits_on[0]}')")
        return out
    out.append(f"written: {where} (read back and validated against the shipped matrix)")
    out.append(f"next: imgbuild make {decision.target.name}")
    return out


def refusal_error(decision: TargetDecision) -> NegativeVerdict:
    more = f" (smallest GPU sets that fit: {', '.join(decision.fits_on)})" if decision.fits_on else ""
    return NegativeVerdict(f"no target: {decision.refusal}{more}")


@target.command("add", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="MODEL [-- FLAGS...]")
@options.gpu_target
@options.driver_version
@options.sglang_version
@options.base_name
@options.new_target_name
@options.tp_size
@options.model_dir_pairs
@options.matrix_file
@options.json_output
def add(args: tuple[str, ...], gpu: str | None, driver: str | None, sglang: str | None, base_name: str | None,
        target_name: str | None, tp: int | None, model_dir_pairs: tuple[str, ...], matrix_path: str | None, as_json: bool) -> None:
    """Decide a target for MODEL on --gpu NAME[xN] and add it to the team's targets file.

    imgbuild target add MODEL --gpu NAME[xN] [--driver D] [--name N] [--sglang V] [--base-name B] [--tp N] [-- FLAGS...]

    Chooses the engine (the newest release that serves MODEL, whose CUDA the driver runs and
    that has a lock for the base's Python), the base for that CUDA, the Python, TP (the GPU
    count) and flags that fit (FLAGS plus plan's cheapest change, or none), says why for each,
    and appends the target with those reasons as comments to ./imgbuild.yaml (or --targets
    FILE), making the file if needed. Exit 0 written, 1 nothing fits (the smallest GPU set
    that would is named), 2 bad input or a name already taken.
    """
    from imgbuild.flows.targetadd import TargetAddOptions

    model, flags = split_model_and_flags(args)
    if not gpu:
        raise UsageError("give the GPUs with --gpu NAME[xN], e.g. --gpu L4 or --gpu 'H100x2'")
    opts = TargetAddOptions(model=model, gpu=gpu, model_dir=model_dir_of(model, model_dir_pairs), driver=driver,
                            name=target_name, sglang=sglang, base_name=base_name, tp=tp, flags=flags)
    decision, where = add_target(opts, matrix_path=matrix_path)
    if as_json:
        emit_json({**decision.to_dict(), "written": where})
    else:
        for line in decision_lines(decision, where):
            click.echo(line)
    if decision.target is None:
        raise refusal_error(decision)


def split_model_and_flags(args: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """MODEL, then the launch flags after `--` (or after MODEL)."""
    words = list(args)
    if not words or words[0].startswith("-"):
        raise UsageError("give MODEL: a Hugging Face id or a model directory (and --gpu NAME[xN])")
    model = words.pop(0)
    if words and words[0] == "--":
        words.pop(0)
    return model, tuple(words)


def make_model_target(names: tuple[str, ...], *, gpu: str | None, driver: str | None, base_name: str | None,
                      model_dir_pairs: tuple[str, ...], matrix_path: str | None) -> tuple[Matrix, tuple[str, ...]]:
    """`make MODEL --gpu NAME[xN]`: the matrix and the target names make runs. Without --gpu,
    the names as given. With it, MODEL's target on those GPUs from the team's file, or a new
    one `target add` decides and writes there (its reasons on stderr); a refusal is exit 1."""
    from imgbuild.cli.app import load_matrix
    from imgbuild.flows.targetadd import TargetAddOptions, team_target_for

    if gpu is None:
        return load_matrix(matrix_path), names
    _, matrix = load_shipped_and_team(matrix_path, team_file_path())  # the file may not exist yet: target add makes it
    if len(names) != 1:
        raise UsageError("--gpu goes with one MODEL: imgbuild make MODEL --gpu NAME[xN]")
    model = names[0]
    if model in {str(t.get("name")) for t in matrix.raw.get("targets") or [] if isinstance(t, dict)}:
        raise UsageError(f"{model!r} is a target, which names its own GPUs: leave out --gpu",
                         hint="--gpu is for a MODEL that has no target yet")
    existing = team_target_for(matrix, model, gpu, base_name)
    if existing is not None:
        progress(f"make: {model} on {existing.gpus}: target {existing.name} "
                 f"({matrix.target_sources.get(existing.name, 'the targets file')})")
        return matrix, (existing.name,)
    opts = TargetAddOptions(model=model, gpu=gpu, model_dir=model_dir_of(model, model_dir_pairs), driver=driver,
                            base_name=base_name)
    decision, where = add_target(opts, matrix_path=matrix_path)
    for line in decision_lines(decision, where):
        progress(line)
    if decision.target is None:
        raise refusal_error(decision)
    return load_matrix(matrix_path), (decision.target.name,)
