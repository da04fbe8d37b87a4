"""Build targets and base images from matrix.yaml, and the recipe digest.

A target is one cell of the matrix: an engine (SGLang version) on a base image
with its Python, optionally the model, GPUs and launch flags it is certified
with. ``kind: sglang`` targets install the engine's full hash-locked stack on a
CUDA base; ``kind: test`` targets install a few packages (``--no-deps``) on a
small base, for CI.

The recipe digest is a sha256 over every input of a build: the Dockerfile
template, the lock, the base image reference (with its digest), the target's
fields and imgbuild's version. Equal digests mean equal recipes; it names the
image tag. Pure data: no docker, httpx or click here.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any

from imgbuild import __version__
from imgbuild.errors import UsageError

KINDS = ("sglang", "test")
PLATFORM_ARCH = {"linux/amd64": "x86_64", "linux/arm64": "aarch64"}
_DIGEST_REF = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._/:-]*?)(?::(?P<tag>[\w][\w.-]{0,127}))?@(?P<digest>sha256:[0-9a-f]{64})$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


@dataclass(frozen=True)
class BaseSpec:
    """A base image as recorded in matrix.yaml ``bases:``."""

    name: str
    image: str  # repository, e.g. "nvidia/cuda"
    tag: str | None
    digest: str | None  # the manifest list (index) digest; None when made per machine
    platforms: dict[str, str | None]  # "linux/amd64" -> that platform's manifest digest
    glibc: str | None  # e.g. "2.39" for Ubuntu 24.04
    python: str | None  # the Python the base provides or installs, e.g. "3.12"
    source: str

    def ref(self) -> str:
        if not self.digest:
            raise UsageError(
                f"base {self.name!r} has no digest in matrix.yaml",
                hint="pass --base REF@sha256:... (tests use $IMGBUILD_TEST_BASE) or run `imgbuild bases refresh`",
            )
        tag = f":{self.tag}" if self.tag else ""
        return f"{self.image}{tag}@{self.digest}"


def engine_lock_name(engine: str, *, python: str, arch: str) -> str:
    """``sglang-0.5.11-cp312-x86_64.txt``: a lock holds wheels of one Python and one platform."""
    return f"sglang-{engine}-cp{python.replace('.', '')}-{arch}.txt"


@dataclass(frozen=True)
class TargetSpec:
    """Everything that decides what goes into an image (all of it is hashed)."""

    name: str
    kind: str  # "sglang" | "test"
    engine: str  # SGLang version
    base: str  # a base name from ``bases:``, or a pinned reference given with --base
    python: str  # "3.12"
    platform: str = "linux/amd64"
    cuda: str | None = None
    torch: str | None = None
    glibc: str | None = None  # the glibc the engine's wheels need (manylinux tag)
    model: str | None = None
    gpus: str | None = None
    launch_flags: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()  # kind: test only, installed with --no-deps
    lock: str | None = None  # file name under locks/; default from engine/kind/arch
    source: str = ""

    @property
    def arch(self) -> str:
        return PLATFORM_ARCH[self.platform]

    def lock_name(self) -> str:
        if self.lock:
            return self.lock
        if self.kind == "test":
            return f"{self.name}-{self.arch}.txt"
        return engine_lock_name(self.engine, python=self.python, arch=self.arch)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["launch_flags"] = list(self.launch_flags)
        data["packages"] = list(self.packages)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TargetSpec:
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"target fields {unknown} are unknown", hint=f"known fields: {sorted(known)}")
        missing = [name for name in REQUIRED_TARGET_FIELDS if data.get(name) in (None, "")]
        if missing:
            raise UsageError(f"{', '.join(missing)} missing: each target needs {', '.join(REQUIRED_TARGET_FIELDS)}",
                             hint="see the targets: rows of matrix.yaml for examples")
        values = dict(data)
        values["launch_flags"] = tuple(str(x) for x in values.get("launch_flags") or ())
        values["packages"] = tuple(str(x) for x in values.get("packages") or ())
        return cls(**values)


# the fields a target row must give (TargetSpec's fields without a default)
REQUIRED_TARGET_FIELDS = tuple(f.name for f in fields(TargetSpec) if f.default is MISSING and f.default_factory is MISSING)


def is_pinned_ref(ref: str) -> bool:
    return _DIGEST_REF.match(ref) is not None


def split_ref(ref: str) -> tuple[str, str | None, str]:
    """'repo:tag@sha256:..' -> (repo, tag, digest); UsageError if not pinned by digest."""
    match = _DIGEST_REF.match(ref)
    if not match:
        raise UsageError(
            f"base {ref!r} is not pinned by digest",
            hint="write it as NAME[:TAG]@sha256:<64 hex> (docker images --digests shows it)",
        )
    return match.group("name"), match.group("tag"), match.group("digest")


def parse_bases(raw: Any, *, where: str = "matrix.yaml") -> dict[str, BaseSpec]:
    bases: dict[str, BaseSpec] = {}
    for i, row in enumerate(raw or []):
        if not isinstance(row, dict) or not row.get("name") or not row.get("image"):
            raise UsageError(f"{where}: bases[{i}] needs name and image")
        digest = row.get("digest")
        if digest is not None and not re.fullmatch(r"sha256:[0-9a-f]{64}", str(digest)):
            raise UsageError(f"{where}: bases[{i}].digest {digest!r} is not sha256:<64 hex>")
        bases[str(row["name"])] = BaseSpec(
            name=str(row["name"]),
            image=str(row["image"]),
            tag=str(row["tag"]) if row.get("tag") else None,
            digest=str(digest) if digest else None,
            platforms={str(k): (str(v) if v else None) for k, v in (row.get("platforms") or {}).items()},
            glibc=str(row["glibc"]) if row.get("glibc") else None,
            python=str(row["python"]) if row.get("python") else None,
            source=str(row.get("source", "")),
        )
    return bases


def parse_targets(raw: Any, *, where: str = "matrix.yaml") -> dict[str, TargetSpec]:
    targets: dict[str, TargetSpec] = {}
    for i, row in enumerate(raw or []):
        if not isinstance(row, dict):
            raise UsageError(f"{where}: targets[{i}] must be a mapping")
        try:
            spec = TargetSpec.from_dict({k: (str(v) if isinstance(v, (int, float)) else v) for k, v in row.items()})
        except TypeError as exc:
            raise UsageError(f"{where}: targets[{i}]: {exc}",
                             hint=f"each target needs {', '.join(REQUIRED_TARGET_FIELDS)}") from None
        validate_target(spec, where=f"{where}: targets[{i}]")
        if spec.name in targets:
            raise UsageError(f"{where}: targets[{i}]: name {spec.name!r} is used twice")
        targets[spec.name] = spec
    return targets


def validate_target(spec: TargetSpec, *, where: str = "target") -> None:
    if not _NAME.match(spec.name):
        raise UsageError(f"{where}: name {spec.name!r} must be lowercase letters, digits, '.', '_' or '-'")
    if spec.kind not in KINDS:
        raise UsageError(f"{where}: kind {spec.kind!r} is not one of {', '.join(KINDS)}")
    if spec.platform not in PLATFORM_ARCH:
        raise UsageError(f"{where}: platform {spec.platform!r} is not one of {', '.join(PLATFORM_ARCH)}")
    if spec.kind == "test" and not spec.packages:
        raise UsageError(f"{where}: a test target needs packages:")
    if spec.kind == "sglang" and spec.packages:
        raise UsageError(f"{where}: packages: is for test targets; an sglang target installs its engine's lock")


def with_base_override(spec: TargetSpec, base_ref: str | None) -> TargetSpec:
    if not base_ref:
        return spec
    split_ref(base_ref)
    return replace(spec, base=base_ref)


def glibc_satisfies(have: str, need: str) -> bool:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split("."))

    return key(have) >= key(need)


@dataclass(frozen=True)
class RecipeInputs:
    """The exact inputs one render uses; their digest is the recipe digest."""

    target: TargetSpec
    base_ref: str  # NAME[:TAG]@sha256:...
    template_name: str
    template_text: str
    lock_text: str
    imgbuild_version: str = __version__
    extra: dict[str, str] = field(default_factory=dict)

    def digest(self) -> str:
        doc = {
            "imgbuild": self.imgbuild_version,
            "target": self.target.to_dict(),
            "base": self.base_ref,
            "template": {"name": self.template_name, "sha256": _sha256(self.template_text)},
            "lock": {"name": self.target.lock_name(), "sha256": _sha256(self.lock_text)},
            "extra": dict(sorted(self.extra.items())),
        }
        canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return "sha256:" + _sha256(canonical)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def image_tag(target: TargetSpec, recipe_digest: str) -> str:
    return f"{target.name}-{recipe_digest.split(':', 1)[1][:12]}"


def update_base_digests(text: str, name: str, digest: str, platforms: dict[str, str]) -> str:
    """matrix.yaml's text with one base's digest and platform digests replaced.

    A line edit (not a YAML round trip) so every comment and all other sections
    stay as they are.
    """
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, ln in enumerate(lines) if ln.rstrip() == f"  - name: {name}")
    except StopIteration:
        raise UsageError(f"base {name!r} is not in matrix.yaml bases:") from None
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith("  - ") or not lines[i].startswith(" ")),
        len(lines),
    )
    item = lines[start:end]
    out: list[str] = []
    i = 0
    while i < len(item):
        line = item[i]
        if line.startswith("    digest:"):
            out.append(f'    digest: "{digest}"\n')
        elif line.startswith("    platforms:"):
            out.append("    platforms:\n" if platforms else "    platforms: {}\n")
            for plat in sorted(platforms):
                out.append(f'      {plat}: "{platforms[plat]}"\n')
            while i + 1 < len(item) and item[i + 1].startswith("      "):
                i += 1
        else:
            out.append(line)
        i += 1
    return "".join(lines[:start] + out + lines[end:])
