"""The click group, main() with the one mapping of errors to exit codes, and the output helpers.

Exit codes, the same for every command: 0 yes / done; 1 a negative verdict;
2 bad input or usage; 3 the environment is not there; 70 a bug.
Results go to stdout (text, or JSON with --json); progress and errors to stderr.

The command modules (check, matrix, plan, diagnose, certify, publish, build, make)
add their commands to ``cli``. They import flows, adapters and knowledge modules
inside the command functions, so that ``imgbuild check`` or ``plan`` starts without
loading docker, httpx or pynvml (tests/test_layers.py) and each command loads only
what it uses; the standard library, click and imgbuild.errors are imported at the top.
"""

from __future__ import annotations

import json
import shlex
import sys
import traceback
from typing import TYPE_CHECKING, Any, Callable

import click

from imgbuild import __version__
from imgbuild.cli import options
from imgbuild.errors import ImgbuildError, NegativeVerdict, UsageError

if TYPE_CHECKING:
    from imgbuild.knowledge.matrix import Matrix


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


def progress(line: str) -> None:
    click.echo(line, err=True)


def load_matrix(matrix_path: str | None) -> Matrix:
    """The matrix (--matrix, else the shipped one) with the team's targets file over it
    (--targets, else $IMGBUILD_TARGETS, else ./imgbuild.yaml): every command loads it here."""
    from imgbuild.knowledge.matrix import load_matrix as load
    from imgbuild.knowledge.targetsfile import overlay_targets_file

    return overlay_targets_file(load(matrix_path), targets_path())


def targets_path() -> str | None:
    """The group's --targets FILE, when given."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    return obj.get("targets") if isinstance(obj, dict) else None


def gib(n_bytes: int | None) -> str:
    return "?" if n_bytes is None else f"{n_bytes / 2**30:.1f} GiB"


def split_flags(flags_text: str | None) -> tuple[str, ...] | None:
    """--flags 'A B' as words; None when not given (the target's, or the image's recipe)."""
    if flags_text is None:
        return None
    try:
        return tuple(shlex.split(flags_text))
    except ValueError as exc:
        raise UsageError(f"--flags: {exc}") from None


def show_failed_step(exc: Any) -> None:
    """The failing build step and its last output lines, readable, before the one-line error."""
    progress(f"failed step: {exc.step}")
    for line in exc.last_lines[-12:]:
        progress(f"  | {line}")


def build_progress() -> Callable[[Any], None]:
    """Live build progress (engine.BuildEvent) on stderr: plain lines, or one updating line on a terminal."""
    tty = sys.stderr.isatty()
    state = {"open": False}

    def show(event: Any) -> None:
        stamp = f"[{event.elapsed_s:7.1f}s]"
        if event.kind == "output" and tty:
            width = 120
            click.echo(f"\r\x1b[K{stamp}   | {event.text[: width - 16]}", err=True, nl=False)
            state["open"] = True
            return
        if state["open"]:
            click.echo("", err=True)
            state["open"] = False
        if event.kind == "step":
            click.echo(f"{stamp} step {event.step}/{event.total}: {event.text[:160]}", err=True)
        elif event.kind == "layer":
            click.echo(f"{stamp}   layer {event.layer} ({event.text})", err=True)
        elif event.kind in ("pull", "push"):
            click.echo(f"{stamp}   {event.kind} {event.text}", err=True)
        else:
            click.echo(f"{stamp}   | {event.text}", err=True)

    return show


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@options.targets_file
@click.version_option(__version__, prog_name="imgbuild")
@click.pass_context
def cli(ctx: click.Context, debug: bool, targets_path: str | None) -> None:
    """Check, plan, build, certify and publish SGLang serving images."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    ctx.obj["targets"] = targets_path


def take_debug(args: list[str]) -> tuple[bool, list[str]]:
    """--debug anywhere before `--` (the README's "every command takes it"), moved to the
    group; after `--` it is a launch flag and stays where it is."""
    end = args.index("--") if "--" in args else len(args)
    head = [a for a in args[:end] if a != "--debug"]
    debug = len(head) < end
    return debug, (["--debug"] if debug else []) + head + args[end:]


def take_targets(args: list[str]) -> list[str]:
    """--targets FILE (or --targets=FILE) anywhere before `--`, moved to the group, so
    `imgbuild plan MODEL --targets team.yaml` works as `imgbuild --targets team.yaml plan MODEL`."""
    end = args.index("--") if "--" in args else len(args)
    moved: list[str] = []
    head: list[str] = []
    i = 0
    while i < end:
        arg = args[i]
        if arg == "--targets" and i + 1 < end:
            moved += [arg, args[i + 1]]
            i += 2
            continue
        if arg.startswith("--targets="):
            moved.append(arg)
        else:
            head.append(arg)
        i += 1
    return moved + head + args[end:]


def main(argv: list[str] | None = None) -> None:
    """Run the command line; every error becomes one line on stderr and its exit code."""
    args = sys.argv[1:] if argv is None else argv
    debug, args = take_debug(take_targets(list(args)))
    try:
        code = cli.main(args=args, prog_name="imgbuild", standalone_mode=False)
    except NegativeVerdict as exc:  # the answer is no: the result was already printed
        click.echo(f"imgbuild: {exc.one_line()}", err=True)
        sys.exit(exc.exit_code)
    except ImgbuildError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"imgbuild: error: {exc.one_line()}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("imgbuild: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"imgbuild: error: {exc.format_message()}", err=True)
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except KeyboardInterrupt:
        click.echo("imgbuild: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug: one line, and the traceback with --debug
        if debug:
            traceback.print_exc()
            sys.exit(70)
        click.echo(
            f"imgbuild: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
            err=True,
        )
        sys.exit(70)
    sys.exit(code if isinstance(code, int) else 0)
