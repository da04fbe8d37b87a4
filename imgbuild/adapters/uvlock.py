"""Hash-pinned locks made with uv's resolver (``uv pip compile --generate-hashes``).

Why uv: it resolves SGLang's whole stack (4,000+ hashes, torch and the CUDA
wheels included) from package metadata only, for a platform other than the one
it runs on (``--python-platform x86_64-manylinux_2_34``), in about 15 s and
without downloading the multi-GB wheels; pip-tools can only resolve for the
running interpreter's platform. This module is the only place that runs uv.

An engine's lock reads the index as it stood when that engine was published
(``--exclude-newer`` at the last upload of its files on PyPI): SGLang leaves
many dependencies unbounded, and today's index gives a stack its release never
saw (kernels 0.17.2 with 0.5.11's transformers 5.6.0 cannot ``import sglang``).
Curated constraints from matrix.yaml ``constraints:`` are passed to uv as a
constraints file. The header records the as-of time, where it came from and the
constraints, and no other date, so the same inputs give the same bytes.
"""

from __future__ import annotations

import math
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import httpx

from imgbuild.knowledge.atomicfile import replace_text
from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.knowledge.matrix import LockConstraint
from imgbuild.knowledge.recipe import TargetSpec, engine_lock_name

ARCHES = ("x86_64", "aarch64")
MANYLINUX = "manylinux_2_34"  # SGLang 0.5.11's wheels are manylinux_2_34; see render.LOCK_GLIBC
PYPI_JSON = "https://pypi.org/pypi"


@dataclass(frozen=True)
class AsOf:
    """Which state of the index a lock reads: ``exclude_newer`` (RFC 3339, UTC) or None for today's."""

    exclude_newer: str | None
    how: str  # for the header: where the time came from


@dataclass(frozen=True, kw_only=True)
class LockOptions:
    requirements: tuple[str, ...]  # e.g. ("sglang==0.5.11",)
    python: str  # "3.12"
    arch: str  # "x86_64" | "aarch64"
    out_path: Path
    title: str  # first header line, e.g. "SGLang 0.5.11"
    as_of: AsOf | None = None  # None: exact pins (a test target), no time applied
    constraints: tuple[LockConstraint, ...] = ()
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
    as_of: str | None


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


def pypi_client(ca_bundle: Path | None = None, *, timeout_s: float = 30.0) -> httpx.Client:
    """An httpx client for PyPI's JSON API; ``ca_bundle`` is the TLS-intercepting proxy's CA."""
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(ca_bundle)) if ca_bundle else True
    return httpx.Client(timeout=httpx.Timeout(timeout_s, connect=10.0), follow_redirects=True, verify=verify)


def release_as_of(engine: str, *, client: httpx.Client, json_api: str = PYPI_JSON) -> AsOf:
    """The index as of ``sglang==engine``'s publication: just after the last upload of its files.

    The project's JSON (``/pypi/sglang/json``) is read rather than the release's own
    (``/pypi/sglang/V/json``): some PyPI mirrors and proxies answer the latter 404.
    Wheels of one release are uploaded over hours or days (0.5.11: cp310 x86_64 on
    05-05, the rest on 05-07), so the last one counts, rounded up to the next second
    because ``--exclude-newer`` keeps only files uploaded before it.
    """
    url = f"{json_api.rstrip('/')}/sglang/json"
    try:
        response = client.get(url)
    except httpx.HTTPError as exc:
        raise EnvironmentUnavailable(
            f"cannot read {url}: {exc}", hint="behind a TLS-intercepting proxy pass --ca-bundle FILE, or give --as-of DATE"
        ) from exc
    if response.status_code != 200:
        raise EnvironmentUnavailable(f"{url} answered HTTP {response.status_code}", hint="give --as-of DATE instead")
    try:
        files = response.json()["releases"].get(engine) or []
        uploads = [datetime.fromisoformat(f["upload_time_iso_8601"].replace("Z", "+00:00")) for f in files]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EnvironmentUnavailable(f"{url}: not PyPI's JSON API ({exc})", hint="give --as-of DATE instead") from exc
    if not uploads:
        raise UsageError(f"sglang {engine} has no files on PyPI ({url})", hint="give --as-of DATE to lock it anyway")
    last = max(uploads)
    ceiled = datetime.fromtimestamp(math.floor(last.timestamp()) + 1, tz=timezone.utc)
    return AsOf(
        exclude_newer=_rfc3339(ceiled),
        how=f"just after the last upload of sglang {engine}'s files, {_rfc3339(last, micro=True)}, per {url}",
    )


def date_as_of(text: str) -> AsOf:
    """``--as-of``: a date YYYY-MM-DD (the end of that day, UTC) or an RFC 3339 time."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day, tzinfo=timezone.utc) + timedelta(days=1)
            return AsOf(exclude_newer=_rfc3339(moment), how=f"--as-of {text}, the end of that day in UTC")
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--as-of {text!r} is not a date (2026-05-07) or an RFC 3339 time (2026-05-07T00:07:15Z)") from None
    if moment.tzinfo is None:
        raise UsageError(f"--as-of {text!r} has no time zone", hint="end it with Z for UTC")
    return AsOf(exclude_newer=_rfc3339(moment.astimezone(timezone.utc)), how=f"--as-of {text}")


def latest_as_of(today: date) -> AsOf:
    """``--latest``: the index as it is; the header records the day, since the bytes depend on it."""
    return AsOf(exclude_newer=None, how=f"--latest: the index of {today.isoformat()}, no --exclude-newer")


def engine_as_of(
    engine: str,
    *,
    as_of: str | None = None,
    latest: bool = False,
    ca_bundle: Path | None = None,
    today: date | None = None,
) -> AsOf:
    """``imgbuild lock``'s choice: ``--latest``, ``--as-of DATE``, else ENGINE's upload time on PyPI."""
    if as_of and latest:
        raise UsageError("--as-of and --latest exclude each other")
    if latest:
        return latest_as_of(today or datetime.now(timezone.utc).date())
    if as_of:
        return date_as_of(as_of)
    with pypi_client(ca_bundle) as client:
        return release_as_of(engine, client=client)


def uv_flags(options: LockOptions, *, constraints_file: str | None) -> list[str]:
    """The ``uv pip compile`` flags after the input file, as recorded in the header."""
    flags = ["--generate-hashes", "--python-platform", f"{options.arch}-{MANYLINUX}", "--python-version", options.python]
    if options.no_deps:
        flags.append("--no-deps")
    if options.as_of and options.as_of.exclude_newer:
        flags += ["--exclude-newer", options.as_of.exclude_newer]
    if constraints_file:
        flags += ["--constraint", constraints_file]
    return flags


def lock_requirements(options: LockOptions) -> LockResult:
    if options.arch not in ARCHES:
        raise UsageError(f"architecture {options.arch!r} is not one of {', '.join(ARCHES)}")
    uv = find_uv()
    constraints_file = "constraints.txt" if options.constraints else None
    flags = uv_flags(options, constraints_file=constraints_file)
    extra = ["--no-header", "--quiet"] + (["--index-url", options.index_url] if options.index_url else [])
    env = dict(os.environ)
    if options.ca_bundle:
        env["SSL_CERT_FILE"] = str(options.ca_bundle)  # uv honours it (and --native-tls)
    version = subprocess.run([*uv, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="imgbuild-lock-") as tmp:
        req = Path(tmp) / "requirements.in"
        req.write_text("\n".join(options.requirements) + "\n", encoding="utf-8")
        if constraints_file:
            (Path(tmp) / constraints_file).write_text(
                "".join(f"{c.requirement}\n" for c in options.constraints), encoding="utf-8"
            )
        out = Path(tmp) / "lock.txt"
        # Relative paths and cwd=tmp: the lock's "# via -r requirements.in"
        # annotations then do not name the temporary directory.
        _run_uv([*uv, "pip", "compile", req.name, *flags, *extra, "--output-file", out.name], cwd=tmp, env=env, options=options)
        body = out.read_text(encoding="utf-8")
    text = "\n".join(_header(options, flags, version)) + "\n" + body
    _write_lock(options.out_path, text)
    packages = sum(1 for line in body.splitlines() if line and not line[0].isspace() and not line.startswith("#"))
    return LockResult(
        path=options.out_path,
        packages=packages,
        hashes=text.count("--hash=sha256:"),
        uv_version=version,
        as_of=options.as_of.exclude_newer if options.as_of else None,
    )


def _write_lock(path: Path, text: str) -> None:
    """Through a temporary name of this call's own in the same folder, then os.replace (two
    locks written at once never share one); a device or pipe (-o /dev/stdout) is written, never replaced."""
    try:
        if path.exists() and not path.is_file():
            path.write_text(text, encoding="utf-8")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_text(path, text)  # a lock is committed and read by builds: 0644
    except OSError as exc:
        raise UsageError(f"cannot write the lock to {path}: {exc.strerror or exc}",
                         hint="give -o a file in a folder you can write to") from None


def _run_uv(argv: list[str], *, cwd: str, env: dict[str, str], options: LockOptions) -> subprocess.CompletedProcess[str]:
    platform = f"{options.arch}-{MANYLINUX}"
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=options.timeout_s, check=False, env=env)
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
    return proc


def _header(options: LockOptions, flags: list[str], uv_version: str) -> list[str]:
    lines = [f"# imgbuild lock: {options.title} for Python {options.python} on {options.arch}-{MANYLINUX}"]
    if options.as_of:
        lines.append(f"# as of: {options.as_of.exclude_newer or 'today'} ({options.as_of.how})")
    for c in options.constraints:
        lines.append(f"# constraint: {c.requirement} (matrix.yaml constraints: for sglang{c.engines})")
    lines += [
        f"# made with: uv pip compile {' '.join(flags)} ({uv_version})",
        f"# input: {' '.join(options.requirements)}",
        "# regenerate with `imgbuild lock`; do not edit by hand",
    ]
    return lines


def engine_lock_options(
    engine: str,
    *,
    python: str,
    arch: str,
    locks_dir: Path,
    as_of: AsOf,
    constraints: tuple[LockConstraint, ...] = (),
    index_url: str | None = None,
    ca_bundle: Path | None = None,
) -> LockOptions:
    return LockOptions(
        requirements=(f"sglang=={engine}",),
        python=python,
        arch=arch,
        out_path=locks_dir / engine_lock_name(engine, python=python, arch=arch),
        title=f"SGLang {engine}",
        as_of=as_of,
        constraints=constraints,
        index_url=index_url,
        ca_bundle=ca_bundle,
    )


def target_lock_options(
    target: TargetSpec,
    *,
    locks_dir: Path,
    as_of: AsOf | None = None,
    constraints: tuple[LockConstraint, ...] = (),
    index_url: str | None = None,
    ca_bundle: Path | None = None,
) -> LockOptions:
    """A test target's packages, each pinned exactly with hashes and no dependencies (no as-of)."""
    if target.kind != "test":
        if as_of is None:
            raise UsageError(f"target {target.name}: an engine's lock needs an as-of time")
        return engine_lock_options(
            target.engine,
            python=target.python,
            arch=target.arch,
            locks_dir=locks_dir,
            as_of=as_of,
            constraints=constraints,
            index_url=index_url,
            ca_bundle=ca_bundle,
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


def _rfc3339(moment: datetime, *, micro: bool = False) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds" if micro else "seconds").replace("+00:00", "Z")


def _looks_like_network(stderr: str) -> bool:
    needles = ("certificate", "Failed to fetch", "dns error", "Connection refused", "timed out", "tcp connect")
    return any(n.lower() in stderr.lower() for n in needles)


# -- installing a lock into a throwaway venv (scripts/lock_all.py) -------------------------


@dataclass(frozen=True)
class VenvInstall:
    """A lock installed by uv into ``venv``: its interpreter and how long uv took."""

    venv: Path
    python: Path
    seconds: float


def install_lock(
    lock_path: Path,
    venv: Path,
    *,
    interpreter: str,
    cache_dir: Path,
    ca_bundle: Path | None = None,
    timeout_s: float = 1800.0,
) -> VenvInstall:
    """``uv venv`` then ``uv pip install --require-hashes -r LOCK`` into ``venv``.

    The cache is shared between runs (one copy of each torch's CUDA wheels, about 4 GB);
    with the venv on the same file system uv hardlinks from it, so a venv costs little disk.
    ``--no-deps``: the lock already lists every package, and a lock that misses one should
    fail the import smoke rather than be patched by the installer.
    """
    import time

    uv = find_uv()
    env = dict(os.environ, UV_CACHE_DIR=str(cache_dir))
    if ca_bundle:
        env["SSL_CERT_FILE"] = str(ca_bundle)
    started = time.monotonic()
    steps = (
        [*uv, "venv", "--quiet", "--python", interpreter, str(venv)],
        [*uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "--require-hashes", "--no-deps",
         "-r", str(lock_path)],
    )
    for argv in steps:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False, env=env)
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentUnavailable(f"{' '.join(argv[:3])} did not finish within {timeout_s:.0f} s") from exc
        if proc.returncode != 0:
            cls = EnvironmentUnavailable if _looks_like_network(proc.stderr) else UsageError
            raise cls(f"installing {lock_path.name} failed: {install_failure(proc.stderr)}",
                      hint="check the network to the index, or the disk space of the uv cache")
    return VenvInstall(venv=venv, python=venv / "bin" / "python", seconds=time.monotonic() - started)


def install_failure(stderr: str) -> str:
    """One line from uv's failed install: its ``error:`` line, the build's last exception line, and
    where the package is a placeholder sdist (NVIDIA's wheel-stub: cuda-tile 1.6.0rc5, which sglang
    0.5.18-0.5.22 pin) that fetches its real wheel from pypi.nvidia.com at build time, that."""
    import re

    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    error = next((ln for ln in lines if ln.startswith("error:")), lines[-1] if lines else "uv failed")
    exceptions = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b[^:]*:\s+\S", ln)]
    text = error + (f": {exceptions[-1]}" if exceptions else "")
    if "downloads a real wheel package" in stderr and "pypi.nvidia.com" in stderr:
        text += " (a placeholder sdist that downloads its wheel from https://pypi.nvidia.com/ while it builds)"
    return text
