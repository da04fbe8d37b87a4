"""cache show / cache clear: imgbuild's own caches, with their sizes, and a way to drop them.

Two caches, both only speed-ups: ``hub`` (config.json and the safetensors index of each
Hugging Face id, per revision, under $XDG_CACHE_HOME/imgbuild/hub) and ``matrix`` (each
validated matrix file's parsed JSON, under $XDG_CACHE_HOME/imgbuild/matrix). Build
records (…/imgbuild/builds) are not a cache: publish and report read them, and neither
command touches them.
"""

from __future__ import annotations

from typing import Any

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json
from imgbuild.errors import UsageError


@cli.group()
def cache() -> None:
    """imgbuild's caches (Hub files, parsed matrix files): show them, clear them."""


def _size(n_bytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{n_bytes} B"


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def _caches() -> list[dict[str, Any]]:
    from imgbuild.adapters.hub import cache_entries, default_cache_dir
    from imgbuild.knowledge.matrix import matrix_cache_dir, matrix_cache_usage

    hub_dir, matrix_dir = default_cache_dir(), matrix_cache_dir()
    entries = cache_entries(hub_dir)
    matrix_files, matrix_bytes = matrix_cache_usage(matrix_dir)
    return [
        {"name": "hub", "path": str(hub_dir), "files": sum(e.files for e in entries),
         "bytes": sum(e.size_bytes for e in entries), "entries": [e.to_dict() for e in entries]},
        {"name": "matrix", "path": str(matrix_dir), "files": matrix_files, "bytes": matrix_bytes},
    ]


@cache.command("show")
@options.json_output
def cache_show(as_json: bool) -> None:
    """Each cache's folder, files and size; the Hub cache per model revision."""
    caches = _caches()
    if as_json:
        emit_json({"caches": caches})
        return
    for c in caches:
        click.echo(f"{c['name']:<7} {c['path']}  {_files(c['files'])}, {_size(c['bytes'])}")
        for e in c.get("entries", ()):
            click.echo(f"  {e['repo']}@{e['revision']}  {_files(e['files'])}, {_size(e['bytes'])}")


@cache.command("clear")
@click.argument("models", nargs=-1, metavar="[ORG/NAME[@REV]]...")
@click.option("--hub", "hub_only", is_flag=True, help="The whole Hub cache.")
@click.option("--matrix", "matrix_only", is_flag=True, help="The parsed-matrix cache.")
@click.option("--all", "everything", is_flag=True, help="Both (the default without MODEL or a flag).")
@options.json_output
def cache_clear(models: tuple[str, ...], hub_only: bool, matrix_only: bool, everything: bool, as_json: bool) -> None:
    """Remove cached files: a model's (every revision, or @REV's), a whole cache, or all.

    A model's files are fetched again on its next use; a matrix file is parsed again."""
    from imgbuild.adapters.hub import clear_cache, default_cache_dir
    from imgbuild.knowledge.matrix import clear_matrix_cache, matrix_cache_dir
    from imgbuild.knowledge.modelinfo import split_hub_id

    if models and (hub_only or matrix_only or everything):
        raise UsageError("give model ids or --hub/--matrix/--all, not both",
                         hint="`imgbuild cache clear ORG/NAME` drops one model's files")
    everything = everything or not (models or hub_only or matrix_only)
    removed: list[dict[str, Any]] = []
    for model in models:
        parts = split_hub_id(model)
        if parts is None:
            raise UsageError(f"{model!r} is not a Hugging Face id", hint="write ORG/NAME or ORG/NAME@REVISION")
        repo, revision = parts
        files, size = clear_cache(repo=repo, revision=revision if "@" in model else None)
        removed.append({"cache": "hub", "model": model, "files": files, "bytes": size})
    if hub_only or everything:
        files, size = clear_cache()
        removed.append({"cache": "hub", "path": str(default_cache_dir()), "files": files, "bytes": size})
    if matrix_only or everything:
        removed.append({"cache": "matrix", **clear_matrix_cache(matrix_cache_dir())})
    if as_json:
        emit_json({"removed": removed})
        return
    for r in removed:
        what = r.get("model") or r["path"]
        click.echo(f"{r['cache']:<7} {what}: removed {_files(r['files'])}, {_size(r['bytes'])}")
