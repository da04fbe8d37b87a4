"""Hash-pinned locks made with uv's resolver (``uv pip compile --generate-hashes``).

Why uv: it resolves SGLang's whole stack (4,000+ hashes, torch and the CUDA
wheels included) from package metadata only, for a platform other than the one
it runs on (``--python-platform x86_64-manylinux_2_34``), in about 15 s and
without downloading the multi-GB wheels; pip-tools can only resolve for the
running interpreter's platform. This module is the only place that runs uv.

The lock's header is written here without dates, so the same resolution gives
the same bytes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.knowledge.recipe import TargetSpec

ARCHES = ("x86_64", "aarch64")
MANYLINUX = "manylinux_2_34"  # SGLang 0.5.11's wheels are manylinux_2_34; see render.LOCK_GLIBC


@dataclass(frozen=True, kw_only=True)
class LockOptions:
    requirements: tuple[str, ...]  # e.g. ("sglang==0.5.11",)
    python: str  # "3.12"
    arch: str  # "x86_64" | "aarch64"
    out_path: Path
    title: str  # first header line, e.g. "SGLang 0.5.11"
    no_deps: bool = False
    index_url: str | None = None
    ca_bundle: Path | None = None
    timeout_s: float = 600.0


@dataclass(frozen=True)
class LockResult:
    path: Path
    packages: int
    hashes: int
    uv_version: str


def find_uv() -> list[str]:
    """The uv command: next to this Python (a venv with uv installed), then PATH."""
    here = Path(sys.executable).parent / "uv"
    if here.exists():
        return [str(here)]
    found = shutil.which("uv")
    if found:
        return [found]
    raise EnvironmentUnavailable(
        "uv is not installed (imgbuild lock uses its resolver)",
        hint=f"{sys.executable} -m pip install uv",
    )


def lock_requirements(options: LockOptions) -> LockResult:
    if options.arch not in ARCHES:
        raise UsageError(f"architecture {options.arch!r} is not one of {', '.join(ARCHES)}")
    uv = find_uv()
    platform = f"{options.arch}-{MANYLINUX}"
    flags = [
        "--generate-hashes",
        "--python-platform",
        platform,
        "--python-version",
        options.python,
        "--no-header",
        "--quiet",
    ]
    if options.no_deps:
        flags.append("--no-deps")
    if options.index_url:
        flags += ["--index-url", options.index_url]
    env = dict(os.environ)
    if options.ca_bundle:
        env["SSL_CERT_FILE"] = str(options.ca_bundle)  # uv honours it (and --native-tls)
    version = subprocess.run([*uv, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="imgbuild-lock-") as tmp:
        req = Path(tmp) / "requirements.in"
        req.write_text("\n".join(options.requirements) + "\n", encoding="utf-8")
        out = Path(tmp) / "lock.txt"
        try:
            proc = subprocess.run(
                # Relative paths and cwd=tmp: the lock's "# via -r requirements.in"
                # annotations then do not name the temporary directory.
                [*uv, "pip", "compile", req.name, *flags, "--output-file", out.name],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=options.timeout_s,
                check=False,
                env=env,
            )
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentUnavailable(
                f"uv pip compile did not finish within {options.timeout_s:.0f} s", hint="check the network to the index"
            ) from exc
        if proc.returncode != 0:
            tail = " | ".join(proc.stderr.strip().splitlines()[-6:])
            cls = EnvironmentUnavailable if _looks_like_network(proc.stderr) else UsageError
            raise cls(
                f"uv pip compile failed for {' '.join(options.requirements)} on {platform}, Python {options.python}: {tail}",
                hint="behind a TLS-intercepting proxy pass --ca-bundle FILE" if cls is EnvironmentUnavailable else None,
            )
        body = out.read_text(encoding="utf-8")
    header = [
        f"# imgbuild lock: {options.title} for Python {options.python} on {platform}",
        "# made with: uv pip compile --generate-hashes --python-platform "
        f"{platform} --python-version {options.python}{' --no-deps' if options.no_deps else ''} ({version})",
        f"# input: {' '.join(options.requirements)}",
        "# regenerate with `imgbuild lock`; do not edit by hand",
    ]
    text = "\n".join(header) + "\n" + body
    options.out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = options.out_path.with_name(options.out_path.name + ".tmp")
    tmp_path.write_text(text, encoding="utf-8")
    os.replace(tmp_path, options.out_path)
    packages = sum(1 for line in body.splitlines() if line and not line[0].isspace() and not line.startswith("#"))
    return LockResult(path=options.out_path, packages=packages, hashes=text.count("--hash=sha256:"), uv_version=version)


def engine_lock_options(
    engine: str, *, python: str, arch: str, locks_dir: Path, index_url: str | None = None, ca_bundle: Path | None = None
) -> LockOptions:
    return LockOptions(
        requirements=(f"sglang=={engine}",),
        python=python,
        arch=arch,
        out_path=locks_dir / f"sglang-{engine}-{arch}.txt",
        title=f"SGLang {engine}",
        index_url=index_url,
        ca_bundle=ca_bundle,
    )


def target_lock_options(
    target: TargetSpec, *, locks_dir: Path, index_url: str | None = None, ca_bundle: Path | None = None
) -> LockOptions:
    """A test target's packages, each pinned with hashes and no dependencies."""
    if target.kind != "test":
        return engine_lock_options(
            target.engine, python=target.python, arch=target.arch, locks_dir=locks_dir, index_url=index_url, ca_bundle=ca_bundle
        )
    return LockOptions(
        requirements=target.packages,
        python=target.python,
        arch=target.arch,
        out_path=locks_dir / target.lock_name(),
        title=f"test target {target.name}",
        no_deps=True,
        index_url=index_url,
        ca_bundle=ca_bundle,
    )


def _looks_like_network(stderr: str) -> bool:
    needles = ("certificate", "Failed to fetch", "dns error", "Connection refused", "timed out", "tcp connect")
    return any(n.lower() in stderr.lower() for n in needles)
