"""torch -> CUDA: the CUDA a torch release's default Linux x86_64 wheel is built for,
read from its Requires-Dist on PyPI (cached under --cache/torch)."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any, Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from .emit import write_atomic
from .wheels import PYPI_SIMPLE, SIMPLE_JSON_ACCEPT, marker_applies, wheel_parts, exact_version, marker_environment, parse_metadata

PYPI_RELEASE_JSON = "https://pypi.org/pypi/{name}/{version}/json"


# Requirements of torch's Linux x86_64 wheel that name the CUDA it was built against,
# in order of preference; torch >= 2.10 depends on cuda-toolkit[...]==13.0.x.
CUDA_RUNTIME_PACKAGES = (
    "cuda-toolkit",
    "nvidia-cuda-runtime",
    "nvidia-cuda-runtime-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu11",
)


def torch_cuda_from_requires(requires_dist: Iterable[str]) -> str | None:
    """The CUDA a torch wheel targets, from its Linux x86_64 Requires-Dist
    (`nvidia-cuda-runtime-cu12==12.8.90` -> "12.8", `cuda-toolkit[...]==13.0.2` -> "13.0")."""
    env = marker_environment()
    found: dict[str, str] = {}
    for line in requires_dist:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if name not in CUDA_RUNTIME_PACKAGES or not marker_applies(req.marker, env, [""]):
            continue
        pinned = exact_version(str(req.specifier))
        if pinned is None:
            lower = [s.version for s in req.specifier if s.operator in (">=", "~=", "==")]
            pinned = lower[0] if lower else None
        if pinned:
            release = Version(pinned).release
            if len(release) >= 2:
                found[name] = f"{release[0]}.{release[1]}"
    for name in CUDA_RUNTIME_PACKAGES:
        if name in found:
            return found[name]
    return None


def _fetch_torch_requires(version: str, client: Any) -> tuple[list[str], str] | None:
    """Requires-Dist of torch==version's wheel, and where it was read."""
    url = PYPI_RELEASE_JSON.format(name="torch", version=version)
    response = client.get(url)
    if response.status_code == 200:
        requires = response.json().get("info", {}).get("requires_dist") or []
        if torch_cuda_from_requires(requires):
            return list(requires), url
    # Fallback: the simple index (PEP 691) and each wheel's PEP 658 .metadata file, the
    # Linux x86_64 wheels first; torch's CUDA requirements carry their own Linux markers,
    # so any wheel's metadata that lists them gives the same answer.
    response = client.get(PYPI_SIMPLE.format(name="torch"), headers={"Accept": SIMPLE_JSON_ACCEPT})
    response.raise_for_status()
    files = []
    for entry in response.json().get("files", []):
        parts = wheel_parts(entry["filename"])
        if parts is None or str(parts[0]) != version or entry.get("yanked"):
            continue
        linux = any(t.platform.endswith("x86_64") and "linux" in t.platform for t in parts[1])
        files.append((not linux, entry["filename"], entry["url"]))
    for _, filename, file_url in sorted(files):
        meta = client.get(file_url + ".metadata")
        if meta.status_code != 200:
            continue
        requires = parse_metadata(meta.text)[2]
        if torch_cuda_from_requires(requires):
            return requires, file_url + ".metadata"
    # Last resort (a mirror without PEP 658 files): read METADATA out of the Linux x86_64
    # wheel itself with HTTP range requests, as pip's lazy wheel does (a few MiB, not 900).
    for not_linux, filename, file_url in sorted(files):
        if not_linux:
            continue
        try:
            with zipfile.ZipFile(_HttpRangeFile(client, file_url)) as wheel:
                member = next(n for n in wheel.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
                requires = parse_metadata(wheel.read(member).decode("utf-8"))[2]
        except (zipfile.BadZipFile, StopIteration, OSError):
            continue
        if torch_cuda_from_requires(requires):
            return requires, f"{file_url} ({member}, read by range requests)"
    return None


class _HttpRangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file through HTTP Range requests."""

    block_bytes = 1 << 20

    def __init__(self, client: Any, url: str) -> None:
        super().__init__()
        self._client, self._url, self._pos = client, url, 0
        head = client.head(url)
        head.raise_for_status()
        self._size = int(head.headers["content-length"])
        self._blocks: dict[int, bytes] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _block(self, index: int) -> bytes:
        if index not in self._blocks:
            start = index * self.block_bytes
            end = min(self._size, start + self.block_bytes) - 1
            response = self._client.get(self._url, headers={"Range": f"bytes={start}-{end}"})
            if response.status_code != 206:
                raise OSError(f"{self._url}: range request answered {response.status_code}")
            self._blocks[index] = response.content
        return self._blocks[index]

    def read(self, size: int = -1) -> bytes:
        end = self._size if size is None or size < 0 else min(self._size, self._pos + size)
        chunks = []
        while self._pos < end:
            index, offset = divmod(self._pos, self.block_bytes)
            block = self._block(index)[offset : offset + (end - self._pos)]
            if not block:
                break
            chunks.append(block)
            self._pos += len(block)
        return b"".join(chunks)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def torch_cuda(version: str, *, cache_dir: Path, offline: bool, client: Any = None) -> tuple[str | None, str | None]:
    """(CUDA, source) for torch==version, cached in cache_dir/torch/<version>.json."""
    cache_file = cache_dir / "torch" / f"{version}.json"
    if cache_file.exists():
        cached = json.loads(cache_file.read_text())
        return torch_cuda_from_requires(cached["requires_dist"]), cached["source"]
    if offline or client is None:
        return None, None
    found = _fetch_torch_requires(version, client)
    if found is None:
        return None, None
    requires, source = found
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(cache_file, json.dumps({"source": source, "requires_dist": requires}, indent=1) + "\n")
    return torch_cuda_from_requires(requires), source
