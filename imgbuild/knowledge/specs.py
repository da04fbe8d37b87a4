"""Frozen records read from matrix.yaml. Pure data: no I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class GpuSpec:
    name: str
    aliases: tuple[str, ...]
    smi_names: tuple[str, ...]
    compute_capability: str  # "8.6"
    memory_mib: int  # memory.total as nvidia-smi reports it


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
