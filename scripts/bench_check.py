#!/usr/bin/env python3
"""Benchmark: cold wall time of `imgbuild check` beside `python -c pass`, measured in one run.

Each command is started as a new process (cold interpreter, warm OS file cache),
repeated; the median is printed with the ratio to the venv's own `python -c pass`
(the fair baseline: same interpreter, same site-packages). `python3` on PATH is
printed too; where it is a pyenv shim it is a shell script and much slower.
Target: check under 3x python.
Usage: .venv/bin/python scripts/bench_check.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wall_s(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    imgbuild = str(Path(sys.executable).with_name("imgbuild"))
    model = str(ROOT / "examples" / "qwen3.6-27b")
    cases = {
        "python -c pass (this venv)": [sys.executable, "-c", "pass"],
        "python3 -c pass (PATH)": ["python3", "-c", "pass"],
        "imgbuild check (--gpu)": [imgbuild, "check", model, "--sglang", "0.5.11", "--gpu", "RTX A6000x2"],
        "imgbuild check (live NVML)": [imgbuild, "check", model, "--sglang", "0.5.11"],
        "imgbuild plan (--gpu)": [imgbuild, "plan", model, "--gpu", "RTX A6000x2", "--sglang", "0.5.11", "--",
                                  "--tp", "2", "--disable-radix-cache"],
    }
    base = None
    print(f"{'command':<28}{'median s':>10}{'x venv python':>15}   ({args.runs} runs each)")
    for name, cmd in cases.items():
        median = wall_s(cmd, args.runs)
        base = base or median
        print(f"{name:<28}{median:>10.3f}{median / base:>15.2f}")


if __name__ == "__main__":
    main()
