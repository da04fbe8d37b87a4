"""plan: will these launch flags fit, before anything loads?"""

from __future__ import annotations

from pathlib import Path

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json, load_matrix
from imgbuild.errors import NegativeVerdict, UsageError


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="MODEL [-- FLAGS...]")
@options.gpu_target
@options.sglang_version
@options.launch_command
@options.launch_command_file
@options.no_suggest
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

    Exit 0 fits, 1 does not fit, borderline (inside plan's own error) or SGLang refuses the
    flags, 2 bad input, 3 no GPUs to read.
    """
    from imgbuild.adapters.hub import hub_for
    from imgbuild.flows.plan import PlanOptions, plan_launch, plan_lines
    from imgbuild.knowledge.launchflags import split_command

    if command and command_file:
        raise UsageError("give --command or --command-file, not both")
    if command_file:
        command = _read_command_file(Path(command_file))
    words = list(args)
    model = words.pop(0) if words and not words[0].startswith("-") else None
    if words and words[0] == "--":
        words.pop(0)
    matrix = load_matrix(matrix_path)
    probe = None
    if not gpu:  # the live GPUs: NVML is loaded only then
        from imgbuild.adapters.gpus import default_probe

        probe = default_probe()
    source = model or (split_command(command).model_path if command else None)
    hub = hub_for(source) if source else None
    opts = PlanOptions(model=model, flags=tuple(words), command=command, gpu=gpu, sglang=sglang, suggest=not no_suggest)
    result = plan_launch(opts, matrix=matrix, probe=probe, hub=hub)
    if as_json:
        emit_json(result.to_dict())
    else:
        for line in plan_lines(result):
            click.echo(line)
    if result.verdict == "borderline":
        p = result.plan
        raise NegativeVerdict(
            f"borderline: a margin of {p.margin_gib or 0.0:+.2f} GiB per GPU is inside plan's own error of "
            f"+-{p.margin_error_gib:.2f} GiB" + ("; a change above leaves more" if result.suggestions else "")
        )
    if not result.fits:
        first = result.problems[0] if result.problems else result.verdict
        raise NegativeVerdict(f"{result.verdict}: {first}")


def _read_command_file(path: Path, max_bytes: int = 2**20) -> str:
    """A launch command is a line or a few: refuse a file over 1 MiB, or one that is not UTF-8 text."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise UsageError(f"--command-file {path}: larger than 1 MiB, not a launch command")
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"--command-file {path}: not UTF-8 text (byte {exc.start})",
                         hint="give the file holding the `python -m sglang.launch_server ...` line") from None
    except OSError as exc:
        raise UsageError(f"--command-file {path}: {exc.strerror}") from None
