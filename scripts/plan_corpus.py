#!/usr/bin/env python3
"""Records `imgbuild plan --json` over a corpus of models, GPUs, releases and flag sets.

A refactor of the planner must not change a byte of its answers. Run this before the
change to record them, and after it to compare:

    .venv/bin/python scripts/plan_corpus.py record /tmp/plans.jsonl
    .venv/bin/python scripts/plan_corpus.py compare /tmp/plans.jsonl

Each line holds one case (model, gpu, sglang, flags), the exit code and the sha256 of
stdout. Cases run in process through click's CliRunner, so the corpus takes seconds.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["examples/qwen3.6-27b", *sorted(f"tests/data/models/{p.name}" for p in (ROOT / "tests/data/models").iterdir())]
GPUS = ["RTX A6000x2", "H100 80GB HBM3x1", "L4x4", "A100-SXM4-80GBx1", "H100 80GB HBM3x8"]
RELEASES = ["0.4.6", "0.5.2", "0.5.9", "0.5.11", "0.5.14", "0.5.18", "0.5.23"]
FLAG_SETS = [
    [],
    ["--tp", "2"],
    ["--tp", "2", "--mem-fraction-static", "0.85", "--context-length", "32768"],
    ["--tp", "2", "--mem-fraction-static", "0.85", "--context-length", "32768", "--speculative-algorithm", "NEXTN",
     "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"],
    ["--tp", "2", "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
     "--speculative-num-draft-tokens", "4", "--disable-radix-cache"],
    ["--tp", "2", "--disable-radix-cache", "--max-running-requests", "32", "--kv-cache-dtype", "fp8_e4m3"],
    ["--tp", "4", "--context-length", "65536", "--chunked-prefill-size", "4096"],
    ["--tp", "8", "--disable-cuda-graph"],
    ["--tp", "1", "--mem-fraction-static", "0.9", "--max-total-tokens", "100000"],
]


def cases() -> list[dict]:
    return [
        {"model": m, "gpu": g, "sglang": v, "flags": f}
        for m, g, v, f in itertools.product(MODELS, GPUS, RELEASES, FLAG_SETS)
    ]


def run_case(runner: CliRunner, cli, case: dict) -> dict:  # noqa: ANN001 - the click group
    args = ["plan", str(ROOT / case["model"]), "--gpu", case["gpu"], "--sglang", case["sglang"], "--json", "--", *case["flags"]]
    result = runner.invoke(cli, args)
    return {**case, "exit": result.exit_code, "sha256": hashlib.sha256(result.stdout.encode()).hexdigest()}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("record", "compare"):
        print("usage: plan_corpus.py record|compare FILE", file=sys.stderr)
        return 2
    try:
        from imgbuild.cli import cli
    except ImportError:
        from imgbuild.cli.main import cli  # type: ignore[no-redef]
    runner = CliRunner()
    got = [run_case(runner, cli, c) for c in cases()]
    path = Path(argv[1])
    if argv[0] == "record":
        path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in got), encoding="utf-8")
        exits = {}
        for r in got:
            exits[r["exit"]] = exits.get(r["exit"], 0) + 1
        print(f"recorded {len(got)} plans to {path} (exit codes: {dict(sorted(exits.items()))})")
        return 0
    want = {_key(w): w for w in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    have = {_key(g): g for g in got}
    common = [k for k in have if k in want]
    differ = [k for k in common if want[k] != have[k]]
    for k in differ[:20]:
        w, g = want[k], have[k]
        print(f"differs: {w['model']} {w['gpu']} {w['sglang']} {' '.join(w['flags'])}: exit {w['exit']} -> {g['exit']}")
    only_new, only_old = len(have) - len(common), len(want) - len(common)
    print(f"compared {len(common)} plans: {len(common) - len(differ)} identical, {len(differ)} differ"
          f" ({only_new} cases new since the record, {only_old} no longer in the corpus)")
    return 1 if differ else 0


def _key(case: dict) -> tuple:
    """Cases are matched by what they plan, not by position: a model added to tests/data shifts no one."""
    return case["model"], case["gpu"], case["sglang"], tuple(case["flags"])

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
