"""SGLang wheels: choosing one per release, listing and downloading them from PyPI,
reading METADATA (the CUDA-install pins), the manylinux glibc and the files inside."""

from __future__ import annotations

import email.parser
import os
import re
import ssl
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, Iterable

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version
from imgbuild.knowledge.sglanginstall import parse_entry_classes

from . import GenError
from .server_args import parse_server_args_report

MIN_VERSION = Version("0.4.0")


PYPI_SGLANG_JSON = "https://pypi.org/pypi/sglang/json"


PYPI_SIMPLE = "https://pypi.org/simple/{name}/"


SIMPLE_JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"


# The pins the matrix records, in the order they are rendered. sgl-kernel was renamed
# sglang-kernel in 0.5.10+, flashinfer became flashinfer-python (flashinfer_python) in 0.4.x.
PIN_NAMES = (
    "torch",
    "sgl-kernel",
    "sglang-kernel",
    "flashinfer-python",
    "flashinfer",
    "transformers",
    "cuda-python",
)


# Extras that make up the CUDA install of older releases (setup: python/pyproject.toml,
# `srt = ["sglang[runtime_common]", "sgl-kernel==...", "torch==...", ...]`); the other
# srt_* extras (srt_hip, srt_xpu, srt_hpu, srt_cpu, srt_npu) are other accelerators.
CUDA_EXTRAS = ("srt",)


# Markers are evaluated for this environment: Linux x86_64, CPython 3.12 (the Python of
# the cp312 wheels chosen below and of Ubuntu 24.04 base images).
DEFAULT_PYTHON = "3.12"


# Legacy manylinux tags and the glibc they stand for (PEP 513, 571, 599).
LEGACY_MANYLINUX_GLIBC = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


def wheel_parts(filename: str) -> tuple[Version, frozenset] | None:
    try:
        _name, version, _build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    return version, tags


def _cp_minor(interpreter: str) -> int:
    match = re.fullmatch(r"cp3(\d+)", interpreter)
    return int(match.group(1)) if match else -1


def select_wheel(filenames: Iterable[str]) -> str | None:
    """The wheel to read for one release: a manylinux x86_64 wheel (cp312 if there is one,
    else the newest CPython), else a pure py3-none-any wheel."""
    binary: list[tuple[int, str]] = []
    pure: list[str] = []
    for filename in filenames:
        parts = wheel_parts(filename)
        if parts is None:
            continue
        tags = parts[1]
        if any(t.platform.startswith("manylinux") and t.platform.endswith("_x86_64") for t in tags):
            minor = max(_cp_minor(t.interpreter) for t in tags)
            binary.append((minor, filename))
        elif any(t.platform == "any" for t in tags):
            pure.append(filename)
    if binary:
        preferred = [f for m, f in binary if m == int(DEFAULT_PYTHON.split(".")[1])]
        if preferred:
            return sorted(preferred)[0]
        return sorted(binary, key=lambda mf: (-mf[0], mf[1]))[0][1]
    return sorted(pure)[0] if pure else None


def wheel_glibc(filename: str) -> str | None:
    """The glibc a manylinux x86_64 wheel needs (`manylinux_2_34_x86_64` -> "2.34");
    None for a pure wheel."""
    parts = wheel_parts(filename)
    if parts is None:
        return None
    found: list[tuple[int, int]] = []
    for tag in parts[1]:
        platform = tag.platform
        if not platform.endswith("_x86_64"):
            continue
        match = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64", platform)
        if match:
            found.append((int(match.group(1)), int(match.group(2))))
            continue
        legacy = LEGACY_MANYLINUX_GLIBC.get(platform[: -len("_x86_64")])
        if legacy:
            major, minor = legacy.split(".")
            found.append((int(major), int(minor)))
    if not found:
        return None
    major, minor = min(found)
    return f"{major}.{minor}"


def _python_of_wheel(filename: str) -> str:
    parts = wheel_parts(filename)
    minors = [_cp_minor(t.interpreter) for t in parts[1]] if parts else []
    minors = [m for m in minors if m >= 0]
    return f"3.{min(minors)}" if minors else DEFAULT_PYTHON


def marker_environment(python_version: str = DEFAULT_PYTHON) -> dict[str, str]:
    """PEP 508 marker variables of a CUDA machine: Linux x86_64, CPython."""
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{python_version}.0",
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": f"{python_version}.0",
        "python_version": python_version,
        "sys_platform": "linux",
        "extra": "",
    }


def marker_applies(marker: Marker | None, env: dict[str, str], extras: Iterable[str]) -> bool:
    if marker is None:
        return True
    return any(marker.evaluate({**env, "extra": extra}) for extra in extras)


def _parse_requirements(lines: Iterable[str], problems: list[str], where: str) -> list[Requirement]:
    requirements = []
    for line in lines:
        try:
            requirements.append(Requirement(line))
        except InvalidRequirement as exc:
            problems.append(f"{where}: Requires-Dist {line!r} not parsed: {exc}")
    return requirements


def cuda_pins(
    requires_dist: Iterable[str],
    *,
    python_version: str = DEFAULT_PYTHON,
    problems: list[str] | None = None,
    where: str = "METADATA",
) -> dict[str, str]:
    """The PIN_NAMES requirements of a CUDA install on Linux x86_64: the base requirements
    plus those of the `srt` extra and of every `sglang[...]` extra it pulls in.

    A value is the requirement's specifier ("==2.9.1", "<0.2,>=0.1.5"), "" when the
    package is required without a version, "@ URL" for a direct reference."""
    problems = problems if problems is not None else []
    requirements = _parse_requirements(requires_dist, problems, where)
    env = marker_environment(python_version)
    active = {""} | {canonicalize_name(e) for e in CUDA_EXTRAS}
    # `srt` pulls in `sglang[runtime_common]` (0.4.x-0.5.x): follow self-references.
    changed = True
    while changed:
        changed = False
        for req in requirements:
            if canonicalize_name(req.name) != "sglang" or not marker_applies(req.marker, env, active):
                continue
            for extra in req.extras:
                name = canonicalize_name(extra)
                if name not in active:
                    active.add(name)
                    changed = True
    specs: dict[str, list[Requirement]] = {}
    for req in requirements:
        name = canonicalize_name(req.name)
        if name in PIN_NAMES and marker_applies(req.marker, env, active):
            specs.setdefault(name, []).append(req)
    pins: dict[str, str] = {}
    for name in PIN_NAMES:
        reqs = specs.get(name)
        if not reqs:
            continue
        urls = sorted({req.url for req in reqs if req.url})
        if urls:
            pins[name] = "@ " + urls[0]
            continue
        combined = SpecifierSet()
        for req in reqs:
            combined &= req.specifier
        pins[name] = ",".join(sorted(str(s) for s in combined))
    return pins


def exact_version(specifier: str | None) -> str | None:
    """"==2.9.1" -> "2.9.1"; None for a range, a wildcard or no pin."""
    if not specifier or specifier.startswith("@"):
        return None
    specs = list(SpecifierSet(specifier))
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None


def parse_metadata(text: str) -> tuple[str | None, str | None, list[str]]:
    """(Version, Requires-Python, Requires-Dist lines) of a METADATA file."""
    message = email.parser.Parser().parsestr(text, headersonly=True)
    requires_python = message.get("Requires-Python")
    return (
        message.get("Version"),
        requires_python.strip() if requires_python else None,
        [str(line) for line in message.get_all("Requires-Dist") or []],
    )


def read_wheel(path: str | Path) -> dict[str, Any]:
    """Everything the matrix and the flag data need from one sglang wheel."""
    path = Path(path)
    problems: list[str] = []
    architectures: set[str] = set()
    server_args: list[dict[str, Any]] = []
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        metadata_names = [n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        if len(metadata_names) != 1:
            raise GenError(f"{path}: expected one *.dist-info/METADATA, found {len(metadata_names)}")
        version, requires_python, requires_dist = parse_metadata(
            wheel.read(metadata_names[0]).decode("utf-8")
        )
        if not version:
            raise GenError(f"{path}: METADATA has no Version")
        for name in sorted(names):
            if re.fullmatch(r"sglang/srt/models/[^/]+\.py", name):
                source = wheel.read(name).decode("utf-8-sig")
                found, file_problems = parse_entry_classes(source)
                architectures.update(found)
                problems.extend(f"{name}: {p}" for p in file_problems)
        if "sglang/srt/server_args.py" in names:
            present = set(names)

            def read_source(member: str) -> str | None:
                return wheel.read(member).decode("utf-8-sig") if member in present else None

            server_args, flag_problems = parse_server_args_report(
                wheel.read("sglang/srt/server_args.py").decode("utf-8-sig"), read_source
            )
            problems.extend(f"server_args: {p}" for p in flag_problems)
        else:
            problems.append("no sglang/srt/server_args.py")
    pins = cuda_pins(
        requires_dist,
        python_version=_python_of_wheel(path.name),
        problems=problems,
        where=metadata_names[0],
    )
    return {
        "version": str(Version(version)),
        "wheel": path.name,
        "requires_python": requires_python,
        "glibc": wheel_glibc(path.name),
        "pins": pins,
        "torch": exact_version(pins.get("torch")),
        "architectures": sorted(architectures),
        "server_args": server_args,
        "problems": problems,
    }


def pypi_client() -> Any:
    import httpx  # imported here so that tests of the parsers need no HTTP stack

    ca_bundle = os.environ.get("SSL_CERT_FILE")
    if not ca_bundle and os.path.exists("/etc/ssl/certs/ca-certificates.crt"):
        ca_bundle = "/etc/ssl/certs/ca-certificates.crt"
    verify = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else True
    return httpx.Client(verify=verify, timeout=60.0, follow_redirects=True)


def is_final(version: Version) -> bool:
    return not (version.is_prerelease or version.is_devrelease)


def pypi_releases(client: Any, upload_dates: dict[str, str] | None = None) -> dict[str, list[str]]:
    """{version: [wheel file names]} of every final, non-yanked sglang release >= 0.4.0.

    ``upload_dates``, when given, is filled with {wheel file name: its upload date (UTC, YYYY-MM-DD)}."""
    response = client.get(PYPI_SGLANG_JSON)
    response.raise_for_status()
    releases: dict[str, list[str]] = {}
    for version_text, files in response.json()["releases"].items():
        if upload_dates is not None:
            for f in files:
                when = f.get("upload_time_iso_8601") or f.get("upload_time") or ""
                if when:
                    upload_dates[f["filename"]] = when[:10]
        try:
            version = Version(version_text)
        except InvalidVersion:
            continue
        if version < MIN_VERSION or not is_final(version):
            continue
        wheels = [f["filename"] for f in files if f["packagetype"] == "bdist_wheel" and not f.get("yanked")]
        if wheels:
            releases[str(version)] = wheels
    return releases


def local_releases(wheel_dir: Path) -> dict[str, list[str]]:
    releases: dict[str, list[str]] = {}
    for path in sorted(wheel_dir.glob("sglang-*.whl")):
        parts = wheel_parts(path.name)
        if parts is None or parts[0] < MIN_VERSION or not is_final(parts[0]):
            continue
        releases.setdefault(str(parts[0]), []).append(path.name)
    return releases


def download_wheel(version: str, filename: str, dest: Path, *, package: str = "sglang") -> Path:
    """`pip download --no-deps` of exactly the chosen wheel of package into dest (skipped when present)."""
    target = dest / filename
    if target.exists():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--retries", "10", "--no-deps", "--quiet", "--only-binary=:all:", "-d", str(dest)]
    parts = wheel_parts(filename)
    assert parts is not None
    platforms = sorted({t.platform for t in parts[1] if t.platform != "any"})
    if platforms:
        tag = sorted(parts[1], key=str)[0]
        command += ["--platform", platforms[0], "--implementation", "cp", "--abi", tag.abi]
        command += ["--python-version", _python_of_wheel(filename)]
    command.append(f"{package}=={version}")
    result = subprocess.run(command, capture_output=True, text=True)
    if not target.exists():
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise GenError(f"pip download {package}=={version} did not produce {filename}: {tail[0]}")
    return target
