"""The command line: parse, call one flow, print. The only module that exits.

Exit codes, the same for every command: 0 yes / done; 1 a negative verdict;
2 bad input or usage; 3 the environment is not there; 70 a bug.
Results go to stdout (text, or JSON with --json); progress and errors to stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from imgbuild import __version__, options
from imgbuild.errors import ImgbuildError


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


def progress(line: str) -> None:
    click.echo(line, err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(__version__, prog_name="imgbuild")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Check, plan, build, certify and publish SGLang serving images."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


# --- commands are added below this line, one block per command or group ------


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        code = cli.main(args=args, prog_name="imgbuild", standalone_mode=False)
    except ImgbuildError as exc:
        if debug:
            raise
        click.echo(f"imgbuild: error: {exc.one_line()}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("imgbuild: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if debug:
            raise
        click.echo(f"imgbuild: error: {exc.format_message()}", err=True)
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except KeyboardInterrupt:
        click.echo("imgbuild: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug: one line unless --debug
        if debug:
            raise
        click.echo(
            f"imgbuild: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
            err=True,
        )
        sys.exit(70)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
