#!/usr/bin/env python3
"""Benchmark: `imgbuild make --all` on a matrix of N targets checks, plans and renders
every target before any build starts. Prints the figures; asserts nothing.

It writes a copy of matrix.yaml whose targets: are N variations of the seed's
(GPU sets, TP, max running requests, context length, engines), then runs
`imgbuild make --all --until render` twice in fresh processes: the first run does
the work, the second finds every step's inputs unchanged and skips them.

Usage: scripts/bench_make.py [--targets 50]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "qwen3.6-27b"
SPEC = ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4", "--disable-radix-cache"]


def targets(n: int) -> list[dict]:
    gpu_sets = [("RTX A6000x2", 2), ("RTX A6000x4", 4), ("H100 SXM x2", 2), ("L40S x2", 2), ("A100 80GB SXM4 x2", 2)]
    out = []
    for i in range(n):
        gpus, tp = gpu_sets[i % len(gpu_sets)]
        requests = (8, 16, 24, 32)[(i // len(gpu_sets)) % 4]
        context = (8192, 16384, 32768)[(i // 20) % 3]
        flags = ["--tp", str(tp), "--mem-fraction-static", "0.85", "--context-length", str(context),
                 "--max-running-requests", str(requests), *SPEC]
        out.append({"name": f"bench-{i:02d}", "kind": "sglang", "engine": "0.5.11", "cuda": "13.0",
                    "base": "cuda-13.0.1-devel-ubuntu24.04", "python": "3.12", "model": "Qwen/Qwen3.6-27B",
                    "gpus": gpus, "launch_flags": flags, "source": "scripts/bench_make.py"})
    return out


def write_matrix(directory: Path, n: int) -> Path:
    text = (ROOT / "matrix.yaml").read_text(encoding="utf-8")
    start = text.index("\ntargets:\n") + 1
    end = text.index("# ---- GENERATED")
    block = yaml.safe_dump({"targets": targets(n)}, sort_keys=False, width=200)
    path = directory / "matrix.yaml"
    path.write_text(text[:start] + block + "\n" + text[end:], encoding="utf-8")
    (directory / "locks").symlink_to(ROOT / "locks")
    return path


def run_make(matrix: Path, state: Path) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "imgbuild.cli", "make", "--all", "--until", "render", "--matrix", str(matrix),
           "--state", str(state), "--model-dir", f"Qwen/Qwen3.6-27B={MODEL}", "--json"]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - started
    if not done.stdout.strip():
        sys.exit(f"make failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-make-") as tmp:
        matrix = write_matrix(Path(tmp), args.targets)
        state = Path(tmp) / "state"
        for label in ("first run ", "second run"):
            wall, summary = run_make(matrix, state)
            statuses: dict[str, int] = {}
            for target in summary["targets"]:
                for step, entry in target["steps"].items():
                    key = f"{step}:{entry['status']}"
                    statuses[key] = statuses.get(key, 0) + 1
            rendered = sum(1 for t in summary["targets"] if (t["steps"].get("render") or {}).get("status")
                           in ("done", "skipped-same"))
            print(f"{label}: {args.targets} targets checked, planned and rendered in {summary['prepare_s']:.2f} s "
                  f"(process wall {wall:.2f} s; {rendered} rendered, "
                  f"{args.targets - rendered} stopped earlier by a negative verdict)")
            print("            steps: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
        print(f"GPU-set queues for build/certify: {len(summary['queues'])} "
              f"({', '.join(f'{k}: {len(v)}' for k, v in summary['queues'].items())})")


if __name__ == "__main__":
    main()
