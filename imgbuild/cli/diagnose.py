"""diagnose: classify a failed SGLang launch from its log."""

from __future__ import annotations

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json
from imgbuild.errors import UsageError


@cli.command()
@click.argument("logfile", type=click.Path(dir_okay=False, allow_dash=True))
@options.json_output
def diagnose(logfile: str, as_json: bool) -> None:
    """Classify a failed SGLang launch from its log (LOGFILE, or - for stdin).

    Exit 0 when the log shows no failure, 1 when it shows one (classified, or
    'unknown'), 2 when the file cannot be read.
    """
    from imgbuild.knowledge.triage import diagnose_log

    try:
        with click.open_file(logfile, encoding="utf-8", errors="replace") as fh:
            # line by line, split as str.splitlines does: a big log is never held twice
            d = diagnose_log(part for raw in fh for part in raw.splitlines())
    except OSError as exc:
        raise UsageError(f"cannot read log {logfile}: {exc.strerror or exc}") from None
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
        if d.packages:
            click.echo(f"packages in the traceback: {', '.join(d.packages)}")
        for item in d.advice:
            click.echo(f"  - {item}")
        if d.evidence:
            click.echo("evidence:")
            for line in d.evidence:
                click.echo(f"  | {line}")
    if d.failed:
        raise SystemExit(1)

