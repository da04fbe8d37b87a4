#!/usr/bin/env python3
"""Benchmark: `imgbuild plan` against every real SGLang start-up log in tests/data/plan_logs.

Each case is planned as a user would run it (the CLI, `--json`); its figures are held against the
log's: the verdict (judged by plan's `fits`), weights per GPU ("Load weight end. mem usage"), F0
("Load weight begin. avail mem"), KV tokens ("KV Cache is allocated. #tokens"), and what was left
once the pools were placed ("Memory pool end. avail mem"). Per figure it prints the cases, the
median and worst error and how many are inside the issue's target (weights 3%, KV tokens 5%),
the tuning part and the held-out part (sha256(url) % 5 == 0) apart.

--write records plan's own error (the pool-end error as a share of F0, from the TUNING part only)
into imgbuild/data/plan_error.json: the band inside which a plan is `borderline`.

Usage: .venv/bin/python scripts/bench_plan_accuracy.py [--json] [--write]
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import test_plan_logs as corpus  # noqa: E402  (the cases and how each is judged, one place)

from imgbuild.knowledge.planerror import DATA_PATH as ERROR_PATH  # noqa: E402
from imgbuild.knowledge.planerror import margin_error_share  # noqa: E402
TARGETS = {"weights": 0.03, "kv_tokens": 0.05}
def figure_summary(values: list[float], target: float | None = None) -> dict[str, Any]:
    if not values:
        return {"cases": 0}
    worst = max(values, key=abs)
    out: dict[str, Any] = {
        "cases": len(values),
        "median_abs": round(statistics.median(abs(v) for v in values), 4),
        "worst": round(worst, 4),
    }
    if target is not None:
        out["within_target"] = sum(abs(v) <= target for v in values)
        out["target"] = target
    return out


def summarize(rows: list[tuple[corpus.Case, dict[str, Any]]]) -> dict[str, Any]:
    def values(key: str) -> list[float]:
        return [r[key] for _, r in rows if r.get(key) is not None]

    shares = [r["pool_end_err_gib"] / r["f0_gib"] for _, r in rows if r.get("pool_end_err_gib") is not None and r["f0_gib"]]
    return {
        "cases": len(rows),
        "verdicts_right": sum(r["verdict_right"] for _, r in rows),
        "borderline": sum(r["verdict"] == "borderline" for _, r in rows),
        "weights": figure_summary(values("weights_err"), TARGETS["weights"]),
        "kv_tokens": figure_summary(values("kv_err"), TARGETS["kv_tokens"]),
        "f0_gib": figure_summary(values("f0_err_gib")),
        "pool_end_gib": figure_summary(values("pool_end_err_gib")),
        "pool_end_share_of_f0": figure_summary(shares),
        # how often the pool-end error falls inside the recorded band (plan_error.json): on the
        # held-out part, a check of the band that was not fitted to it
        "inside_band": sum(abs(v) <= margin_error_share() for v in shares),
    }


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:+.1%}"


def _gib(v: float | None) -> str:
    return "-" if v is None else f"{v:+.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    ap.add_argument("--write", action="store_true", help="record the tuning part's error band in imgbuild/data/plan_error.json")
    args = ap.parse_args()

    results = [(case, corpus.judge(case, corpus.run_plan(case))) for case in corpus.CASES]
    parts = {
        "tuning": [(c, r) for c, r in results if not c.held_out],
        "held_out": [(c, r) for c, r in results if c.held_out],
    }
    summary = {part: summarize(rows) for part, rows in parts.items()}
    if args.write:
        ERROR_PATH.write_text(json.dumps(corpus.error_band_record(parts["tuning"]), indent=2) + "\n")
    if args.json:
        print(json.dumps(summary))
        return
    print(f"{'part':8} {'case':52} {'log':12} {'plan':12} {'weights':>8} {'F0 GiB':>7} {'KV':>7} {'pool end':>8}  margin")
    for case, r in results:
        margin = r["margin"] or {}
        print(f"{'held-out' if case.held_out else 'tuning':8} {case.name[:52]:52} {case.outcome:12} {r['verdict']:12} "
              f"{_pct(r['weights_err']):>8} {_gib(r['f0_err_gib']):>7} {_pct(r['kv_err']):>7} "
              f"{_gib(r['pool_end_err_gib']):>8}  {_gib(margin.get('headroom_gib'))} (+-{margin.get('error_gib', 0):.2f})")
    for part, s in summary.items():
        print(f"\n{part}: {s['cases']} cases, verdicts right {s['verdicts_right']}/{s['cases']}, borderline {s['borderline']}")
        for figure in ("weights", "kv_tokens", "f0_gib", "pool_end_gib", "pool_end_share_of_f0"):
            f = s[figure]
            if not f["cases"]:
                print(f"  {figure:22} no case logs it")
                continue
            share = figure in ("weights", "kv_tokens", "pool_end_share_of_f0")
            fmt = (lambda v: f"{v:.2%}") if share else (lambda v: f"{v:.2f} GiB")
            line = f"  {figure:22} {f['cases']:3} cases  median |err| {fmt(f['median_abs'])}  worst {fmt(f['worst'])}"
            if "within_target" in f:
                line += f"  within {f['target']:.0%}: {f['within_target']}/{f['cases']}"
            if figure == "pool_end_share_of_f0":
                line += f"  inside the band (+-{margin_error_share():.2%}): {s['inside_band']}/{f['cases']}"
            print(line)
    if args.write:
        print(f"\nwrote {ERROR_PATH.relative_to(ROOT)}: {json.dumps(corpus.error_band_record(parts['tuning']))}")


if __name__ == "__main__":
    main()
