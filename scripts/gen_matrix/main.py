"""The command line: list or read the wheels, look up each torch pin's CUDA, write both files."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from packaging.version import Version

from . import GenError
from . import __doc__ as _PACKAGE_DOC
from .emit import MARKER_PREFIX, build_server_args, render_engines, render_server_args, split_at_marker, write_atomic, write_generated
from .torch_cuda import torch_cuda
from .wheels import download_wheel, local_releases, pypi_client, pypi_releases, read_wheel, select_wheel

REPO_ROOT = Path(__file__).resolve().parents[2]


def _script_digest() -> str:
    """A digest of the generator's own sources: a cached wheel reading is stale once they change."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def read_wheel_cached(path: Path, cache_dir: Path | None) -> dict[str, Any]:
    """read_wheel, cached per wheel file (keyed by name, size and the generator's sources)."""
    if cache_dir is None:
        return read_wheel(path)
    key = f"{path.name}-{path.stat().st_size}-{_script_digest()}"
    cache_file = cache_dir / "wheel-info" / f"{key}.json"
    if cache_file.exists():
        return json.loads(cache_file.read_text())
    info = read_wheel(path)
    write_atomic(cache_file, json.dumps(info))
    return info


def _read_one(args: tuple[str, str | None]) -> dict[str, Any]:
    path, cache = args
    return read_wheel_cached(Path(path), Path(cache) if cache else None)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(_PACKAGE_DOC or "").split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=REPO_ROOT / ".cache", help="cache directory (default: .cache/)")
    parser.add_argument("--versions", help="comma-separated subset of releases, e.g. 0.5.9,0.5.11")
    parser.add_argument("--wheel-dir", type=Path, help="read the wheels already in DIR; download nothing")
    parser.add_argument("--matrix", type=Path, default=REPO_ROOT / "matrix.yaml")
    parser.add_argument("--server-args", type=Path, default=REPO_ROOT / "imgbuild" / "data" / "server_args.json")
    parser.add_argument("--offline", action="store_true", help="no network: cached torch lookups only")
    parser.add_argument("--verbose", action="store_true", help="list what server_args.py parsing could not resolve")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="wheels read in parallel")
    return parser.parse_args(argv)


def _releases(
    args: argparse.Namespace, client: Any, upload_dates: dict[str, str] | None = None
) -> tuple[Path, dict[str, list[str]]]:
    """The wheel directory and the releases to read (version -> wheel file names); online,
    ``upload_dates`` is filled with each wheel file's upload date from PyPI's JSON."""
    if args.wheel_dir is not None:
        if not args.wheel_dir.is_dir():
            raise GenError(f"--wheel-dir {args.wheel_dir}: not a directory")
        wheel_dir = args.wheel_dir
        releases = local_releases(wheel_dir)
    elif args.offline:
        wheel_dir = args.cache / "wheels"
        releases = local_releases(wheel_dir) if wheel_dir.is_dir() else {}
    else:
        wheel_dir = args.cache / "wheels"
        releases = pypi_releases(client, upload_dates)
    if args.versions:
        wanted = {str(Version(v.strip())) for v in args.versions.split(",") if v.strip()}
        missing = sorted(wanted - set(releases), key=Version)
        if missing:
            raise GenError(f"--versions: no final sglang wheel for {', '.join(missing)} in {wheel_dir if args.offline or args.wheel_dir else 'PyPI'}")
        releases = {v: f for v, f in releases.items() if v in wanted}
    if not releases:
        raise GenError(f"no sglang wheels found in {wheel_dir}")
    return wheel_dir, releases


def _wheel_paths(args: argparse.Namespace, wheel_dir: Path, releases: dict[str, list[str]]) -> list[Path]:
    """One wheel per release, downloaded unless --wheel-dir or --offline says they are there."""
    paths: list[Path] = []
    for version in sorted(releases, key=Version):
        filename = select_wheel(releases[version])
        if filename is None:
            print(f"skip {version}: no Linux x86_64 or pure wheel", file=sys.stderr)
            continue
        if args.wheel_dir is None and not args.offline:
            paths.append(download_wheel(version, filename, wheel_dir))
        else:
            paths.append(wheel_dir / filename)
    if not paths:
        raise GenError(f"no Linux x86_64 or pure sglang wheel among {', '.join(sorted(releases, key=Version))}")
    return paths


def _read_wheels(paths: list[Path], cache_dir: Path, jobs: int) -> list[dict[str, Any]]:
    work = [(str(p), str(cache_dir)) for p in paths]
    if jobs > 1 and len(work) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(_read_one, work))
    return [_read_one(item) for item in work]


def _engine_rows(infos: list[dict[str, Any]], args: argparse.Namespace, client: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Each wheel's reading with its torch pin's CUDA, and the notes for matrix.yaml."""
    notes: list[str] = []
    rows = []
    for info in infos:
        cuda = None
        if info["torch"]:
            cuda, _source = torch_cuda(info["torch"], cache_dir=args.cache, offline=args.offline, client=client)
            if cuda is None:
                notes.append(f"{info['version']}: CUDA of torch {info['torch']} not found")
        rows.append({**info, "cuda": cuda})
    for info in infos:
        for problem in info["problems"]:
            if not problem.startswith("server_args: "):
                notes.append(f"{info['version']}: {problem}")
    return rows, notes


def carried_fields(matrix_text: str) -> dict[str, dict[str, Any]]:
    """{version: fields} that the generated rows keep from the matrix being rewritten:
    ``released`` (where this run has no PyPI listing, --offline or --wheel-dir) and
    ``lock_smoke`` (measured by scripts/lock_all.py, not readable from a wheel)."""
    import yaml

    marker = matrix_text.find(MARKER_PREFIX)
    if marker < 0:
        return {}
    try:
        data = yaml.safe_load(matrix_text[marker:]) or {}
    except yaml.YAMLError:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for row in data.get("engines") or []:
        if isinstance(row, dict) and row.get("version"):
            kept = {k: row[k] for k in ("released", "lock_smoke") if row.get(k)}
            if kept:
                out[str(row["version"])] = kept
    return out


def _with_carried(rows: list[dict[str, Any]], carried: dict[str, dict[str, Any]], upload_dates: dict[str, str]) -> None:
    for row in rows:
        old = carried.get(row["version"], {})
        released = upload_dates.get(row.get("wheel") or "") or old.get("released")
        if released:
            row["released"] = str(released)
        if old.get("lock_smoke"):
            row["lock_smoke"] = old["lock_smoke"]


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    # Refuse early (before any download or write) when the matrix has no marker line.
    try:
        split_at_marker(args.matrix.read_bytes(), args.matrix)
    except OSError as exc:
        raise GenError(f"--matrix {args.matrix}: {exc.strerror}") from exc
    client = None if args.offline else pypi_client()
    try:
        upload_dates: dict[str, str] = {}
        wheel_dir, releases = _releases(args, client, upload_dates)
        paths = _wheel_paths(args, wheel_dir, releases)
        downloaded_s = time.monotonic() - started
        infos = _read_wheels(paths, args.cache, args.jobs)
        rows, notes = _engine_rows(infos, args, client)
    finally:
        if client is not None:
            client.close()
    _with_carried(rows, carried_fields(args.matrix.read_text(encoding="utf-8")), upload_dates)

    versions = sorted((info["version"] for info in infos), key=Version)
    # The text keeps the generator's old file name: it is part of the generated bytes
    # (and matrix.yaml's marker line), which reruns must reproduce exactly.
    generated_by = (
        f"scripts/gen_matrix.py: the add_argument calls of sglang/srt/server_args.py and (0.5.14+) the "
        f"ServerArgs fields that arg_groups/arg_utils.py:add_cli_args_from_dataclass turns into flags, "
        f"in the sglang wheels {versions[0]} .. {versions[-1]} ({len(versions)} releases)"
    )
    server_args = build_server_args({i["version"]: i["server_args"] for i in infos}, generated_by=generated_by)
    write_atomic(args.server_args, render_server_args(server_args))
    matrix_changed = write_generated(args.matrix, render_engines(rows, notes=notes))
    flag_problems = sorted({p for info in infos for p in info["problems"] if p.startswith("server_args: ")})
    return {
        "engines": len(rows),
        "specs": len(server_args["specs"]),
        "matrix_changed": matrix_changed,
        "notes": notes,
        "flag_problems": flag_problems,
        "download_s": downloaded_s,
        "total_s": time.monotonic() - started,
    }


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        summary = run(args)
    except GenError as exc:
        print(f"gen_matrix: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if type(exc).__module__.split(".")[0] != "httpx":
            raise
        print(f"gen_matrix: PyPI request failed ({exc}); rerun, or use --offline with the wheels in "
              f"--wheel-dir (or {args.cache / 'wheels'})", file=sys.stderr)
        return 3
    for note in summary["notes"]:
        print(f"note: {note}", file=sys.stderr)
    if args.verbose:
        for problem in summary["flag_problems"]:
            print(problem, file=sys.stderr)
    print(
        f"{summary['engines']} engines, {summary['specs']} distinct flag specs; "
        f"{args.matrix} {'updated' if summary['matrix_changed'] else 'unchanged'}, {args.server_args} written; "
        f"{len(summary['flag_problems'])} server_args.py notes{'' if args.verbose else ' (--verbose lists them)'}; "
        f"{summary['total_s']:.1f} s ({summary['download_s']:.1f} s listing/downloading)",
        file=sys.stderr,
    )
    return 0
