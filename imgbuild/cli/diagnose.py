"""diagnose: classify a failed SGLang launch from its log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

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
        with click.open_file(logfile, "rb") as fh:
            d = diagnose_log(_bounded_lines(fh, logfile))
    except OSError as exc:
        raise UsageError(f"cannot read log {logfile}: {exc.strerror or exc}") from None
    if as_json:
        emit_json(d.to_dict())
    else:
        click.echo(f"class: {d.failure_class}" + (f" (phase: {d.phase})" if d.phase else "")
                   + (f" via {d.via}" if d.via and d.via != d.failure_class else "")
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



MAX_LOG_BYTES = 64 * 2**20  # a failed launch's log is a few MiB; diagnose keeps every line
MAX_LINE_BYTES = 2**20  # a longer "line" (no newline: /dev/zero, a binary) is read in parts


def _bounded_lines(fh: IO[bytes], logfile: str) -> Iterator[str]:
    """The log's lines, split as str.splitlines does, read a bounded part at a time: a file
    past MAX_LOG_BYTES is bad input, refused before it is all read."""
    total = 0
    while raw := fh.readline(MAX_LINE_BYTES):
        total += len(raw)
        if total > MAX_LOG_BYTES:
            where = "on stdin" if logfile == "-" else logfile
            raise UsageError(f"log {where}: larger than {MAX_LOG_BYTES // 2**20} MiB, not one SGLang launch's log",
                             hint="give the failed launch's own log, or its end: tail -c 16M LOG | imgbuild diagnose -")
        yield from raw.decode("utf-8", errors="replace").splitlines()
