#!/usr/bin/env python3
"""Benchmark: plan 1,000 launch-flag combinations of the seed model (target: under 1 s).

Each combination goes the whole way a suggestion does: flags parsed against the release's
flag table, then SGLang's accounting. Prints the figures; asserts nothing.

    .venv/bin/python scripts/bench_plan.py [--server-args PATH]
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-args", default=None, help="flag data (default: the shipped imgbuild/data/server_args.json)")
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()

    t0 = time.perf_counter()
    from imgbuild.flows.plan import memory_inputs
    from imgbuild.knowledge.launchflags import parse_flags
    from imgbuild.knowledge.matrix import load_matrix
    from imgbuild.knowledge.memory import plan_memory, rules_for, startup_allowance_gib
    from imgbuild.knowledge.modelinfo import inspect_model
    from imgbuild.knowledge.serverargs import load_server_args
    from imgbuild.knowledge.suggest import GpuView

    matrix = load_matrix()
    data = load_server_args(args.server_args)
    info = inspect_model(str(ROOT / "examples" / "qwen3.6-27b"))
    geometry = info.geometry  # what plan_launch hands memory: read once, by modelinfo
    spec, _ = matrix.resolve_gpu("RTX A6000x8")
    setup_s = time.perf_counter() - t0

    versions = [v for v in ("0.5.9", "0.5.11", "0.5.23") if v in data.by_version]
    grid = itertools.product(
        versions,
        (1, 2, 4, 8),
        ("0.80", "0.85", "0.88", "0.92"),
        (None, "8", "48"),
        ("8192", "32768", "131072"),
        ("auto", "fp8_e4m3"),
        (False, True),  # speculative NEXTN
        (False, True),  # --disable-radix-cache
    )
    every = list(grid)
    step = max(1, len(every) // args.count)
    combos = every[::step][: args.count]  # spread over all versions
    verdicts: dict[str, int] = {}
    t1 = time.perf_counter()
    for version, tp, mfs, mrr, ctx, kv, spec_on, no_radix in combos:
        argv = ["--tp", str(tp), "--mem-fraction-static", mfs, "--context-length", ctx, "--kv-cache-dtype", kv]
        if mrr:
            argv += ["--max-running-requests", mrr]
        if spec_on:
            argv += ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
                     "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
        if no_radix:
            argv.append("--disable-radix-cache")
        launch = parse_flags(argv, data.flags_for(version), version=version)
        allowance = startup_allowance_gib(tp)
        gpus = GpuView(spec.name, 8, float(spec.memory_mib), spec.memory_mib / 1024 - allowance, allowance, "--gpu")
        result = plan_memory(memory_inputs(rules_for(version), geometry, launch, gpus, "qwen3.6-27b"))
        verdicts[result.verdict] = verdicts.get(result.verdict, 0) + 1
    plans_s = time.perf_counter() - t1

    startup = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import imgbuild.flows.plan, imgbuild.cli"],
        capture_output=True, text=True, cwd=ROOT,
    )
    import_us = sum(
        int(line.split("|")[1]) for line in startup.stderr.splitlines()
        if line.startswith("import time:") and line.split("|")[2].strip() in ("imgbuild.flows.plan", "imgbuild.cli")
    )
    print(f"setup (matrix, flag data, model): {setup_s * 1000:.1f} ms")
    print(f"{len(combos)} flag combinations planned in {plans_s:.3f} s ({plans_s / len(combos) * 1e6:.0f} us each)")
    print(f"verdicts: {verdicts}")
    print(f"import imgbuild.flows.plan + imgbuild.cli (cumulative, -X importtime): {import_us / 1000:.1f} ms")


if __name__ == "__main__":
    main()
