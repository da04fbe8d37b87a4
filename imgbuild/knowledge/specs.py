"""Frozen records read from matrix.yaml. Pure data: no I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EngineSpec:
    """One SGLang release, as its wheel on PyPI declares it (generated rows)."""

    version: str
    requires_python: str
    glibc: str | None
    pins: dict[str, str]
    torch: str | None
    cuda: str | None
    architectures: frozenset[str] = field(default_factory=frozenset)
    released: str | None = None  # the wheel's upload date on PyPI, YYYY-MM-DD
    # scripts/lock_all.py's measurement per kind of lock ("as_of_release", "latest"):
    # {"imports": bool, "python", "as_of", "checked", and where it fails "step", "root", "packages"}
    lock_smoke: dict[str, dict[str, Any]] = field(default_factory=dict)

    def lock_failure(self) -> str | None:
        """Why this release's as-of-release lock does not import, or None (imports, or not measured)."""
        record = self.lock_smoke.get("as_of_release") or {}
        if record.get("imports") is not False:
            return None
        where = f" (in {', '.join(record['packages'])})" if record.get("packages") else ""
        step = str(record.get("step") or "")
        verb = "cannot be made" if step.startswith("uv pip compile") else \
            "does not install" if step.startswith("uv pip install") else "does not import"
        return (f"its lock as of the release, for Python {record.get('python')} (checked {record.get('checked')}), "
                f"{verb}: {step}: {record.get('root')}{where}")


@dataclass(frozen=True)
class GpuSpec:
    name: str
    aliases: tuple[str, ...]
    smi_names: tuple[str, ...]
    compute_capability: str  # "8.6"
    memory_mib: int  # memory.total as nvidia-smi reports it
    # every board of a multi-GPU server on NVLink (SXM / HGX: True), pairs at most (PCIe cards,
    # bridged pairs: False), or not recorded (None)
    nvlink: bool | None = None
    # the software stack SGLang runs on it: "cuda" (NVIDIA) or "rocm" (AMD Instinct). imgbuild
    # builds and certifies CUDA images only; plan models both (knowledge/memory.py aiter_mfs_factor)
    platform: str = "cuda"


@dataclass(frozen=True)
class CudaSpec:
    version: str
    min_driver: str  # Linux minimum driver for this toolkit
    sm: tuple[str, ...]  # compute capabilities its torch wheels are built for


@dataclass(frozen=True)
class FeatureSpec:
    name: str
    description: str
    detect: str
    min_sglang: str | None


@dataclass(frozen=True)
class SpeculativeSpec:
    algorithm: str
    min_sglang: str | None
    needs: str


@dataclass(frozen=True)
class KnownIssue:
    id: str
    model_types: tuple[str, ...]
    architectures: tuple[str, ...]
    features: tuple[str, ...]
    min_sglang: str
    reason: str
    source: str
