"""The GPUs of this host, through NVML: the only module that imports pynvml.

``GpuProbe`` is the interface; ``NvmlProbe`` reads the real driver, and
``SnapshotProbe`` replays a JSON snapshot of the same shape (``HostGpus.to_dict``)
for machines without a GPU (CI, planning for a host you are not on).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from imgbuild.errors import EnvironmentUnavailable, UsageError

SNAPSHOT_ENV = "IMGBUILD_GPU_SNAPSHOT"


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    name: str
    used_memory_mib: int


@dataclass(frozen=True)
class GpuDevice:
    index: int
    uuid: str
    name: str
    memory_total_mib: int
    memory_used_mib: int
    memory_free_mib: int
    compute_capability: str
    processes: tuple[GpuProcess, ...] = ()


@dataclass(frozen=True)
class HostGpus:
    driver_version: str
    cuda_driver_version: str  # the CUDA version the driver supports, e.g. "13.0"
    devices: tuple[GpuDevice, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostGpus:
        devices = tuple(
            GpuDevice(
                **{k: v for k, v in d.items() if k != "processes"},
                processes=tuple(GpuProcess(**p) for p in d.get("processes", ())),
            )
            for d in data["devices"]
        )
        return cls(
            driver_version=str(data["driver_version"]),
            cuda_driver_version=str(data["cuda_driver_version"]),
            devices=devices,
        )


class GpuProbe(Protocol):
    def read(self) -> HostGpus: ...


class SnapshotProbe:
    """Replays a snapshot written by ``imgbuild gpus --json`` on a GPU host."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def read(self) -> HostGpus:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return HostGpus.from_dict(data)
        except FileNotFoundError:
            raise UsageError(f"GPU snapshot {self.path} does not exist", hint=f"check {SNAPSHOT_ENV}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(
                f"GPU snapshot {self.path} is not a valid snapshot: {exc}",
                hint="write one with `imgbuild gpus --json > FILE` on the GPU host",
            ) from None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _memory_info(pynvml: Any, handle: Any) -> Any:
    """NVML's memory info, version 2 where the driver has it: its ``used`` leaves out what the driver
    reserves, as nvidia-smi's memory.used does (driver r510 on). Version 1 counts that reserve as used:
    615 MiB on an idle H200 (driver 580.159.04) that nvidia-smi shows at 0 MiB, seen with
    scripts/check_nvml.py. ``free`` is the same in both."""
    try:
        return pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
    except (pynvml.NVMLError, AttributeError, TypeError):  # an older driver or nvidia-ml-py
        return pynvml.nvmlDeviceGetMemoryInfo(handle)


class NvmlProbe:
    """Reads the driver through NVML (nvidia-ml-py's ``pynvml`` module)."""

    def read(self) -> HostGpus:
        try:
            import pynvml
        except ImportError as exc:  # pragma: no cover - a dependency of imgbuild
            raise EnvironmentUnavailable("pynvml is not installed", hint="pip install nvidia-ml-py") from exc
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise EnvironmentUnavailable(
                f"no NVIDIA driver: NVML could not start ({exc})",
                hint="run on a host with the NVIDIA driver, or pass --gpu NAME[xN] to plan for GPUs you are not on",
            ) from exc
        try:
            driver = _text(pynvml.nvmlSystemGetDriverVersion())
            cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
            devices = tuple(self._device(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount()))
        except pynvml.NVMLError as exc:
            raise EnvironmentUnavailable(f"NVML failed while reading the GPUs: {exc}") from exc
        finally:
            pynvml.nvmlShutdown()
        return HostGpus(
            driver_version=driver,
            cuda_driver_version=f"{cuda // 1000}.{(cuda % 1000) // 10}",
            devices=devices,
        )

    @staticmethod
    def _device(pynvml: Any, index: int) -> GpuDevice:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        memory = _memory_info(pynvml, handle)
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        processes = []
        try:
            running = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except pynvml.NVMLError:
            running = []
        for proc in running:
            try:
                name = _text(pynvml.nvmlSystemGetProcessName(proc.pid))
            except pynvml.NVMLError:
                name = "?"  # processes of another PID namespace are not visible by name
            used = proc.usedGpuMemory or 0
            processes.append(GpuProcess(pid=int(proc.pid), name=name, used_memory_mib=int(used) // 2**20))
        return GpuDevice(
            index=index,
            uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
            name=_text(pynvml.nvmlDeviceGetName(handle)),
            memory_total_mib=int(memory.total) // 2**20,
            memory_used_mib=int(memory.used) // 2**20,
            memory_free_mib=int(memory.free) // 2**20,
            compute_capability=f"{major}.{minor}",
            processes=tuple(processes),
        )


def default_probe() -> GpuProbe:
    snapshot = os.environ.get(SNAPSHOT_ENV)
    if snapshot:
        return SnapshotProbe(snapshot)
    return NvmlProbe()
