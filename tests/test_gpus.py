"""GPU probes: the snapshot round-trips what NVML reports; without a driver, a clear environment error."""

from __future__ import annotations

import ctypes.util
import json
from pathlib import Path

import pytest

from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.adapters.gpus import (
    GpuDevice,
    GpuProcess,
    HostGpus,
    NvmlProbe,
    SnapshotProbe,
    _memory_info,
    default_probe,
)

HOST = HostGpus(
    driver_version="580.126.09",
    cuda_driver_version="13.0",
    devices=(
        GpuDevice(0, "GPU-aaaa", "NVIDIA RTX A6000", 49140, 41000, 8140, "8.6",
                  (GpuProcess(4242, "python3", 40960),)),
        GpuDevice(1, "GPU-bbbb", "NVIDIA RTX A6000", 49140, 3, 49137, "8.6"),
    ),
)  # fmt: skip


def test_snapshot_round_trips_host_gpus(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(HOST.to_dict()))
    assert SnapshotProbe(path).read() == HOST


def test_default_probe_takes_the_snapshot_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(HOST.to_dict()))
    monkeypatch.setenv("IMGBUILD_GPU_SNAPSHOT", str(path))
    assert default_probe().read().devices[0].processes[0].pid == 4242


@pytest.mark.parametrize(
    ("content", "message"),
    [pytest.param(None, "does not exist", id="missing"), pytest.param('{"devices": []}', "not a valid snapshot", id="partial")],
)
def test_bad_snapshot_is_bad_input(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "snap.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UsageError, match=message):
        SnapshotProbe(path).read()


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="this host has an NVIDIA driver")
def test_nvml_probe_without_a_driver_says_so() -> None:
    with pytest.raises(EnvironmentUnavailable, match="no NVIDIA driver"):
        NvmlProbe().read()


class _Nvml:
    """Stands in for the pynvml module's memory call only: a driver with or without NVML's v2 memory info."""

    nvmlMemory_v2 = 0x2000028

    class NVMLError(Exception):
        pass

    def __init__(self, has_v2: bool) -> None:
        self.has_v2 = has_v2
        self.asked: list[object] = []

    def nvmlDeviceGetMemoryInfo(self, handle: object, version: object = None) -> str:
        self.asked.append(version)
        if version is not None and not self.has_v2:
            raise self.NVMLError("Function Not Found")
        return "v2" if version is not None else "v1"


@pytest.mark.parametrize(("has_v2", "expect", "asked"), [(True, "v2", [0x2000028]), (False, "v1", [0x2000028, None])],
                         ids=["driver-with-v2", "driver-before-r510"])
def test_memory_is_read_as_nvidia_smi_shows_it_where_the_driver_can(has_v2: bool, expect: str, asked: list) -> None:
    """v1's used counts the driver's reserve (615 MiB on an idle H200 that nvidia-smi shows at 0 MiB)."""
    nvml = _Nvml(has_v2)
    assert _memory_info(nvml, handle=object()) == expect
    assert nvml.asked == asked


@pytest.mark.parametrize("name", ["h200x1-nvml-idle.json", "h200x1-nvml-held.json"])
def test_real_nvml_snapshots_are_consistent(name: str) -> None:
    """Snapshots written by `imgbuild gpus --json` on a real H200: used + free stays under total by the
    driver's reserve only (v2 memory info), and a process's memory is inside what the GPU shows used."""
    device = SnapshotProbe(Path(__file__).parent / "data" / "gpus" / name).read().devices[0]
    reserve_mib = device.memory_total_mib - device.memory_used_mib - device.memory_free_mib
    assert 0 <= reserve_mib <= 1024
    assert sum(p.used_memory_mib for p in device.processes) <= device.memory_used_mib
