"""vLLM's configuration refusals, per release, into imgbuild/data/vllm_config_refusals.json.

The frameworks that run SGLang (verl, OpenRLHF, slime, Ray Serve, KServe) often run vLLM beside it,
and their logs reach `imgbuild diagnose`. vLLM checks its arguments in its config classes and in
its argument parser; each check raises with a text of its own. Those texts, read from vLLM's
source distributions on PyPI (never installed or imported), are the launcher refusing the
arguments it was given, the way server_args.py's are for SGLang (scripts/gen_matrix/messages.py).

Files read, inside each sdist: vllm/config.py (through 0.10.0), vllm/config/*.py (0.10.1 on),
vllm/engine/arg_utils.py, vllm/entrypoints/openai/cli_args.py. Every `raise X("...")` with a literal
or f-string message is kept, f-string holes written as `{...}`; a text is stored once with the
releases that have it.

Usage: .venv/bin/python -m scripts.gen_matrix.vllm_messages [--versions 0.6.6,0.8.5] [--sdist-dir DIR]
       [--out FILE] [--offline]
"""

from __future__ import annotations

import argparse
import json
import tarfile
from pathlib import Path, PurePosixPath

from packaging.version import Version

from . import GenError
from .emit import write_atomic
from .messages import extract_messages
from .wheels import PYPI_SIMPLE, SIMPLE_JSON_ACCEPT, pypi_client

REPO_ROOT = Path(__file__).resolve().parents[2]
# One release per minor series from the V1 engine's predecessor on: the wordings users paste.
DEFAULT_VERSIONS = ("0.5.5", "0.6.6", "0.7.3", "0.8.5", "0.9.2", "0.10.2", "0.11.0", "0.12.0")
CONFIG_FILES = ("vllm/config.py", "vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py")
CONFIG_DIR = "vllm/config"


def download_sdists(versions: list[str], dest: Path) -> list[Path]:
    """vllm-V.tar.gz of each version into dest (skipped when present), from PyPI's simple JSON index."""
    wanted = {f"vllm-{v}.tar.gz": v for v in versions}
    missing = [name for name in wanted if not (dest / name).exists()]
    if missing:
        client = pypi_client()
        index = client.get(PYPI_SIMPLE.format(name="vllm"), headers={"Accept": SIMPLE_JSON_ACCEPT})
        index.raise_for_status()
        urls = {f["filename"]: f["url"] for f in index.json()["files"]}
        dest.mkdir(parents=True, exist_ok=True)
        for name in missing:
            if name not in urls:
                raise GenError(f"PyPI has no {name}: pass --versions with vLLM releases that have an sdist")
            response = client.get(urls[name])
            response.raise_for_status()
            write_atomic(dest / name, response.content)
    return [dest / name for name in wanted]


def _is_config_file(relative: str) -> bool:
    path = PurePosixPath(relative)
    return relative in CONFIG_FILES or (path.parent.as_posix() == CONFIG_DIR and path.suffix == ".py")


def read_sdist(sdist: Path) -> dict[tuple[str, str, str], None]:
    """(file, kind, text) keys of the raises in one sdist's config files."""
    keys: dict[tuple[str, str, str], None] = {}
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            relative = member.name.split("/", 1)[1] if "/" in member.name else member.name
            if not member.isfile() or not _is_config_file(relative):
                continue
            handle = tar.extractfile(member)
            if handle is None:
                continue
            try:
                messages = extract_messages(handle.read().decode("utf-8"))
            except SyntaxError:
                continue
            for kind, text in messages:
                if kind.startswith("raise"):
                    keys[(relative, kind, text)] = None
    return keys


def build(sdists: list[Path]) -> dict[str, object]:
    releases: dict[tuple[str, str, str], list[str]] = {}
    versions = sorted((Version(p.name[len("vllm-"):-len(".tar.gz")]), p) for p in sdists)
    for version, sdist in versions:
        for key in read_sdist(sdist):
            releases.setdefault(key, []).append(str(version))
    messages = [
        {"file": rel, "kind": kind, "text": text, "first": rels[0], "last": rels[-1], "releases": len(rels)}
        for (rel, kind, text), rels in sorted(releases.items())
    ]
    return {"generated_by": "scripts/gen_matrix/vllm_messages.py", "source": "vLLM sdists on PyPI",
            "releases": [str(v) for v, _ in versions], "messages": messages}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", default=",".join(DEFAULT_VERSIONS))
    parser.add_argument("--sdist-dir", type=Path, default=REPO_ROOT / ".cache" / "vllm-sdists")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "imgbuild" / "data" / "vllm_config_refusals.json")
    parser.add_argument("--offline", action="store_true", help="use only the sdists already in --sdist-dir")
    args = parser.parse_args(argv)
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    try:
        if args.offline:
            sdists = [args.sdist_dir / f"vllm-{v}.tar.gz" for v in versions]
            absent = [p.name for p in sdists if not p.exists()]
            if absent:
                raise GenError(f"--offline: {', '.join(absent)} not in {args.sdist_dir}; run once without --offline")
        else:
            sdists = download_sdists(versions, args.sdist_dir)
    except GenError as exc:
        raise SystemExit(f"vllm_messages: error: {exc}") from None
    data = build(sdists)
    write_atomic(args.out, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(data['messages'])} refusals from {len(data['releases'])} vLLM releases")  # noqa: T201


if __name__ == "__main__":
    main()
