#!/usr/bin/env python3
"""On a GPU host: imgbuild's NVML probe (imgbuild.adapters.gpus.NvmlProbe) held against nvidia-smi.

CI has no GPU, so the probe's real path is checked here, by hand, on a machine that has one:
every field the probe reads is compared with what nvidia-smi prints for the same GPU (name, UUID,
memory.total, compute capability, driver version, the CUDA version the driver supports, the compute
processes and their memory). Memory in use is compared within --used-tolerance-mib, since a
process on the GPU can allocate between the two reads.

Usage: python scripts/check_nvml.py [--json] [--used-tolerance-mib N]
Prints one line per field and device; exits 1 when a field differs, 3 when there is no driver.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from imgbuild.adapters.gpus import NvmlProbe  # noqa: E402
from imgbuild.errors import ImgbuildError  # noqa: E402

GPU_FIELDS = "index,uuid,name,memory.total,memory.used,memory.free,compute_cap,driver_version"


def smi(*args: str) -> list[list[str]]:
    out = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return [[cell.strip() for cell in line.split(",")] for line in out.splitlines() if line.strip()]


def smi_cuda_version() -> str:
    # the banner's "CUDA Version: 13.0" is the version the driver supports, what NVML's
    # nvmlSystemGetCudaDriverVersion_v2 reports
    banner = subprocess.run(["nvidia-smi"], capture_output=True, text=True, check=True, timeout=60).stdout
    found = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    return found.group(1) if found else "?"


def compare(tolerance_mib: int) -> list[dict[str, Any]]:
    seen = NvmlProbe().read()
    rows: list[dict[str, Any]] = []

    def row(device: str, field: str, probe: Any, nvidia_smi: Any, ok: bool | None = None) -> None:
        rows.append({"device": device, "field": field, "probe": probe, "nvidia_smi": nvidia_smi,
                     "agree": probe == nvidia_smi if ok is None else ok})

    gpus = smi(f"--query-gpu={GPU_FIELDS}")
    row("host", "driver_version", seen.driver_version, gpus[0][7] if gpus else "?")
    row("host", "cuda_driver_version", seen.cuda_driver_version, smi_cuda_version())
    row("host", "device_count", len(seen.devices), len(gpus))
    apps = smi("--query-compute-apps=pid,gpu_uuid,used_memory")
    for (index, uuid, name, total, used, free, cc, _driver), d in zip(gpus, seen.devices):
        tag = f"GPU {index}"
        row(tag, "uuid", d.uuid, uuid)
        row(tag, "name", d.name, name)
        row(tag, "memory_total_mib", d.memory_total_mib, int(total))
        row(tag, "compute_capability", d.compute_capability, cc)
        row(tag, "memory_used_mib", d.memory_used_mib, int(used), abs(d.memory_used_mib - int(used)) <= tolerance_mib)
        row(tag, "memory_free_mib", d.memory_free_mib, int(free), abs(d.memory_free_mib - int(free)) <= tolerance_mib)
        row(tag, "processes", sorted(p.pid for p in d.processes), sorted(int(a[0]) for a in apps if a[1] == uuid))
        smi_mib = {int(a[0]): int(a[2]) for a in apps if a[1] == uuid and a[2].isdigit()}
        for p in d.processes:
            if p.pid in smi_mib:
                row(tag, f"process {p.pid} used_memory_mib", p.used_memory_mib, smi_mib[p.pid],
                    abs(p.used_memory_mib - smi_mib[p.pid]) <= tolerance_mib)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the rows as one JSON object")
    ap.add_argument("--used-tolerance-mib", type=int, default=64, help="how far memory in use may move between reads")
    args = ap.parse_args()
    try:
        rows = compare(args.used_tolerance_mib)
    except (ImgbuildError, OSError, subprocess.SubprocessError) as exc:
        print(f"check_nvml: {exc}", file=sys.stderr)
        return 3
    differing = [r for r in rows if not r["agree"]]
    if args.json:
        print(json.dumps({"rows": rows, "differ": len(differing)}, indent=2))
    else:
        for r in rows:
            mark = "ok  " if r["agree"] else "DIFF"
            print(f"{mark} {r['device']:<6} {r['field']:<32} probe={r['probe']!r}  nvidia-smi={r['nvidia_smi']!r}")
        print(f"{len(rows) - len(differing)} of {len(rows)} fields agree")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
