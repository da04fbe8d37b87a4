"""GPU probes: the snapshot round-trips what NVML reports; without a driver, a clear environment error."""

from __future__ import annotations

import ctypes.util
import json
from pathlib import Path

import pytest

from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.adapters.gpus import GpuDevice, GpuProcess, HostGpus, NvmlProbe, SnapshotProbe, default_probe

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
