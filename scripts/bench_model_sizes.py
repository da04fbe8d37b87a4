#!/usr/bin/env python3
"""Benchmark: checkpoint bytes counted from config.json alone, held against the published size.

Every model folder under tests/data (models/, plan_logs/models/, published_sizes/) whose SOURCE.md
quotes its checkpoint's published `"total_size": N` (model.safetensors.index.json's metadata) is
inspected as a user's local copy without the index would be: `inspect_model` on the config only.
Per model it prints the model_type, the counted bytes, the published bytes and the error; then the
median and worst error and how many are within 1% and 3% (the plan target for weights).

Usage: .venv/bin/python scripts/bench_model_sizes.py [--json]
Prints figures; asserts nothing (tests/test_published_sizes.py holds the floor).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import published_sizes  # noqa: E402  (the cases: one place, shared with the test)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the rows and the summary as one JSON object")
    args = ap.parse_args()
    rows = [published_sizes.measure(case) for case in published_sizes.cases()]
    errors = [r["error"] for r in rows if r["error"] is not None]
    summary = {
        "models": len(rows),
        "counted": len(errors),
        "median_abs": round(statistics.median(abs(e) for e in errors), 5) if errors else None,
        "worst": round(max(errors, key=abs), 5) if errors else None,
        "within_1pct": sum(abs(e) <= 0.01 for e in errors),
        "within_3pct": sum(abs(e) <= 0.03 for e in errors),
    }
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}))
        return
    print(f"{'model':40} {'model_type':18} {'counted':>17} {'published':>17} {'error':>8}")
    for r in rows:
        err = "-" if r["error"] is None else f"{r['error']:+.2%}"
        counted = "-" if r["counted"] is None else f"{r['counted']:,}"
        print(f"{r['name'][:40]:40} {r['model_type'][:18]:18} {counted:>17} {r['published']:>17,} {err:>8}")
    print(f"\n{summary['counted']} of {summary['models']} counted; median |error| {summary['median_abs']:.2%}, "
          f"worst {summary['worst']:+.2%}; within 1%: {summary['within_1pct']}, within 3%: {summary['within_3pct']}")


if __name__ == "__main__":
    main()
