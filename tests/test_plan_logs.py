"""`imgbuild plan` held against real SGLang start-up logs, as a user would run it.

Each case is tests/data/plan_logs/NAME.json: the public thread (url), the model (a config under
tests/data/models or tests/data/plan_logs/models, each with a SOURCE.md citing it), the GPU as `--gpu` takes it, the release, the launch flags, the outcome the log
shows (fits: "KV Cache is allocated. #tokens: N" / max_total_num_tokens; does-not-fit: "Not enough
memory" or CUDA out of memory) and the logged KV token count where there is one. The weights
are TP0's "Load weight end. ... mem usage" (or "weights_gib"); "weights_from_log": false where that
figure is not the weights (a load that filled the GPU and spilled into host memory). Its "log" names
the excerpt (this folder, or tests/data/logs), whose first line cites the same thread.

A fifth of the cases is held out of tuning by the rule the triage corpus uses:
int(sha256(url), 16) % 5 == 0. Tuning (the margin rule in knowledge/memory.py) looked only at the
other part. `python tests/test_plan_logs.py` prints the table and the agreement of each part.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "tests" / "data" / "plan_logs"
# the models of the corpus: tests/data/models where a config is there already, else this corpus's
# own models/ (kept apart so scripts/plan_corpus.py, which plans every tests/data/models entry, is unchanged)
MODEL_DIRS = (CASES_DIR / "models", ROOT / "tests" / "data" / "models")
DRAFTS_DIR = ROOT / "tests" / "data" / "drafts"
IMGBUILD = Path(sys.executable).parent / "imgbuild"
KV_TOLERANCE = 0.05  # the target for KV tokens
WEIGHTS_TOLERANCE = 0.03  # and for the weights per GPU

# what plan answers today on each part: a change to the planner that lowers a figure is a
# regression against real launches; one that raises it should raise the floor here
FLOOR = {
    # Qwen3-14B on an 80 GB Hopper with --enable-lmcache (0.5.7, weights only) added: weights -0.0% as first seen
    "tuning": {"verdicts_right": 54, "kv_within_tolerance": 38, "weights_within_tolerance": 38},
    # a pool shorter than the --context-length asked for is a note, as SGLang starts and caps requests
    # (managers/tp_worker.py): the H20 launch at --context-length 65536 over a 62k pool is right
    # Kimi-K2.5's vision tower read with SGLang's KimiK25VisionConfig defaults (KV tokens +8.6% -> +1.5%) and
    # counted as models/kimi_k25.py builds it (weights -3.6% -> -2.8%)
    # the load overhead capped at 8% of the weights (from the tuning part's sub-1B models) brought the
    # held-out Qwen3-0.6B-FP8's weights from +18.9% to +2.2% and its KV tokens from +4.8% to +5.02%
    # two GPT-OSS-20B launches (0.5.1, one pool) added: both verdicts right as first seen; the tuned one's
    # weights -11.5% (SGLang logs 14.67 GiB for a 12.8 GiB checkpoint: not from the shapes), KV +3.4%
    # Qwen2.5-72B-Instruct-AWQ on one RTX PRO 6000 (0.5.11) added: right as first seen (weights -0.1%, KV +3.4%)
    "held_out": {"verdicts_right": 15, "kv_within_tolerance": 8, "weights_within_tolerance": 8},
}


@dataclass(frozen=True)
class Case:
    name: str
    url: str
    model: str
    gpu: str
    sglang: str
    flags: list[str]
    outcome: str
    kv_tokens: int | None
    log: Path
    weights_gib: float | None = None  # TP0's "Load weight end. ... mem usage", where the log has it
    # false where the log shows the launch dying during CUDA-graph capture for a cause that is not memory
    # (a JIT build): its runtime need was never tried
    reached_ready: bool = True

    @property
    def held_out(self) -> bool:
        return int(hashlib.sha256(self.url.encode()).hexdigest(), 16) % 5 == 0


def _logged_gib(log: Path, pattern: str) -> float | None:
    found = re.findall(pattern, log.read_text(errors="replace"))
    return float(found[0]) if found else None


def logged_weights_gib(log: Path) -> float | None:
    """TP0's (the first) "Load weight end. ... mem usage=X GB" (SGLang's GB there is GiB); in releases
    that log no usage, the first "Load weight begin. avail mem" less the first "Load weight end. ...
    avail mem" (the same difference model_runner.py logs as the usage)."""
    usage = _logged_gib(log, r"Load weight end\..*?mem usage=([\d.]+) GB")
    if usage is not None:
        return usage
    begin, end = logged_f0_gib(log), _logged_gib(log, r"Load weight end\..*?avail mem=([\d.]+) GB")
    return None if begin is None or end is None else round(begin - end, 2)


def logged_f0_gib(log: Path) -> float | None:
    """The first "Load weight begin. avail mem=X GB": F0, what SGLang measured before loading."""
    return _logged_gib(log, r"Load weight begin\. avail mem=([\d.]+) GB")


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(CASES_DIR.glob("*.json")):
        d = json.loads(path.read_text())
        # a draft the launch named by its Hub id, planned from its config in tests/data/drafts
        drafts = {hub: str(DRAFTS_DIR / local) for hub, local in d.get("drafts", {}).items()}
        cases.append(Case(
            path.stem, d["url"], d["model"], d["gpu"], d["sglang"], [drafts.get(f, f) for f in d["flags"]], d["outcome"],
            d.get("kv_tokens"), (CASES_DIR / d["log"]).resolve(), d.get("weights_gib") or (logged_weights_gib(
                (CASES_DIR / d["log"]).resolve()) if d.get("weights_from_log", True) else None),
            d.get("reached_ready", True),
        ))
    return cases


CASES = load_cases()


def model_dir(case: Case) -> Path:
    return next((d / case.model for d in MODEL_DIRS if (d / case.model / "config.json").is_file()), MODEL_DIRS[0] / case.model)


def run_plan(case: Case) -> dict[str, Any]:
    argv = [str(IMGBUILD), "plan", str(model_dir(case)), "--gpu", case.gpu, "--sglang", case.sglang,
            "--no-suggest", "--json", "--", *case.flags]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode in (0, 1), f"{case.name}: exit {proc.returncode}: {proc.stderr.strip()}"
    return json.loads(proc.stdout)


def judge(case: Case, plan: dict[str, Any]) -> dict[str, Any]:
    """plan's figures against the log's. A borderline plan is judged by its `fits` (its best estimate)."""
    per_gpu = plan["per_gpu"]
    kv = per_gpu.get("kv_tokens")
    kv_err = None
    if case.kv_tokens and kv is not None and plan["fits"]:
        kv_err = (kv - case.kv_tokens) / case.kv_tokens
    weights_err = None
    if case.weights_gib and per_gpu.get("weights_gib"):
        weights_err = (per_gpu["weights_gib"] - case.weights_gib) / case.weights_gib
    logged_f0, logged_end = logged_f0_gib(case.log), pool_end_avail_gib(case)
    return {
        "verdict": plan["verdict"],
        "fits": plan["fits"],
        "verdict_right": plan["fits"] == (case.outcome == "fits"),
        "kv_tokens": kv,
        "kv_err": kv_err,
        "weights_err": weights_err,
        "f0_err_gib": None if logged_f0 is None else per_gpu["free_before_load_gib"] - logged_f0,
        # what is left once the pools are placed, planned less logged, GiB and as a share of F0
        "pool_end_err_gib": None if logged_end is None or not plan["fits"] else
        per_gpu["memory_pool_end_avail_gib"] - logged_end,
        "f0_gib": per_gpu["free_before_load_gib"],
        "margin": plan.get("margin"),
        "slack_gib": per_gpu.get("slack_gib"),
        "runtime_need_gib": per_gpu.get("runtime_need_gib"),
        # the defaults SGLang resolved, planned against the log's server_args / max_total_num_tokens lines
        "defaults": {name: (int(logged[0]), plan.get(name)) for name in ("chunked_prefill_size", "cuda_graph_max_bs")
                     if (logged := re.findall(rf"\b{name}=(-?\d+)", case.log.read_text(errors="replace")))},
    }


def score(results: list[tuple[Case, dict[str, Any]]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for part, held in (("tuning", False), ("held_out", True)):
        rows = [r for c, r in results if c.held_out == held]
        with_kv = [r for r in rows if r["kv_err"] is not None]
        out[part] = {
            "cases": len(rows),
            "verdicts_right": sum(r["verdict_right"] for r in rows),
            "kv_cases": len(with_kv),
            "kv_within_tolerance": sum(abs(r["kv_err"]) <= KV_TOLERANCE for r in with_kv),
            "weights_within_tolerance": sum(abs(r["weights_err"]) <= WEIGHTS_TOLERANCE for r in rows
                                            if r["weights_err"] is not None),
        }
    return out


# the share of launches plan's error band is to cover (estimated from the tuning logs by _band_rank)
BAND_QUANTILE = 0.9


def _band_rank(n: int) -> int:
    """The rank k (1-based, of n sorted errors) whose value is a median-unbiased estimate of the
    BAND_QUANTILE quantile: the smallest k with P(Binomial(n, q) <= k - 1) >= 1/2, so that the band
    covers at least that share of launches as often as not. The plain empirical quantile (rank
    ceil(q n)) falls short more often than not on a few dozen logs (21 logs: rank 19, short with
    probability 0.65), and these errors are in-sample."""
    q, cdf, k = BAND_QUANTILE, 0.0, 0
    while k < n:
        cdf += math.comb(n, k) * q**k * (1 - q) ** (n - k)
        k += 1
        if cdf >= 0.5:
            break
    return max(1, k)


def error_band_record(tuning: list[tuple[Case, dict[str, Any]]]) -> dict[str, Any]:
    """plan's own error as imgbuild/data/plan_error.json records it (scripts/bench_plan_accuracy.py
    --write): |planned - logged| "Memory pool end. avail mem" as a share of F0, tuning cases only."""
    shares = sorted(abs(r["pool_end_err_gib"]) / r["f0_gib"] for c, r in tuning
                    if not c.held_out and r.get("pool_end_err_gib") is not None and r["f0_gib"])
    quantile = shares[_band_rank(len(shares)) - 1] if shares else 0.0
    return {
        "about": "plan's 'Memory pool end. avail mem' less SGLang's logged one, as a share of F0, on the tuning part "
                 "of tests/data/plan_logs (real start-up logs, each citing its thread); a margin inside "
                 f"a median-unbiased estimate of its {BAND_QUANTILE:.0%} quantile is borderline",
        "written_by": "scripts/bench_plan_accuracy.py --write",
        "logs": len(shares),
        "median_share_of_f0": round(statistics.median(shares), 5) if shares else 0.0,
        "worst_share_of_f0": round(shares[-1], 5) if shares else 0.0,
        "margin_error_share_of_f0": round(quantile, 5),
    }


def test_every_case_cites_its_thread_and_has_its_model() -> None:
    assert CASES, "no cases under tests/data/plan_logs"
    for case in CASES:
        first = case.log.read_text().splitlines()[0]
        assert first.startswith("# source: " + case.url), (case.name, first)
        assert (model_dir(case) / "config.json").is_file(), case.name
        assert case.outcome in ("fits", "does-not-fit"), case.name


def test_both_parts_have_cases() -> None:
    assert any(c.held_out for c in CASES) and any(not c.held_out for c in CASES)


@pytest.fixture(scope="module")
def results() -> list[tuple[Case, dict[str, Any]]]:
    return [(case, judge(case, run_plan(case))) for case in CASES]


def test_agreement_does_not_fall_below_the_recorded_figures(results) -> None:
    scores = score(results)
    for part, floors in FLOOR.items():
        for figure, floor in floors.items():
            assert scores[part][figure] >= floor, (part, figure, scores, [(c.name, r) for c, r in results])


def pool_end_avail_gib(case: Case) -> float | None:
    """What SGLang had left once its pools were allocated ("Memory pool end. avail mem=X GB", GiB;
    the smallest where ranks log it several times)."""
    found = re.findall(r"Memory pool end\. avail mem=([\d.]+) GB", case.log.read_text(errors="replace"))
    return min(map(float, found)) if found else None


def test_the_margin_is_not_stricter_than_launches_that_started(results) -> None:
    """Every launch that started had its runtime need inside what SGLang left after the pools:
    plan's estimate of that need (knowledge/memory.py _runtime_headroom) must not exceed it."""
    checked = 0
    for case, r in results:
        left = pool_end_avail_gib(case)
        if case.outcome != "fits" or left is None or not case.reached_ready:
            continue
        checked += 1
        assert r["runtime_need_gib"] <= left, (case.name, r["runtime_need_gib"], left)
    assert checked >= 3


def test_the_chunk_and_graph_batch_defaults_are_what_each_release_printed(results) -> None:
    """chunked_prefill_size and cuda_graph_max_bs as the log prints them (0.4.0-0.5.18 here): before 0.5.3
    by knowledge/memory.py legacy_graph_defaults (server_args.py and cuda_graph_runner.py of those wheels);
    with the 0.5.9 tiers for every release they agreed on 23 of 41."""
    pairs = [(case.name, name, logged, planned) for case, r in results for name, (logged, planned) in r["defaults"].items()]
    assert len(pairs) >= 40
    assert [p for p in pairs if p[2] != p[3]] == []


def test_the_recorded_error_band_is_what_the_tuning_logs_give(results) -> None:
    """imgbuild/data/plan_error.json (the band inside which plan says borderline) is regenerated by
    scripts/bench_plan_accuracy.py --write: a change to the planner or the corpus must rewrite it."""
    from imgbuild.knowledge.planerror import DATA_PATH

    recorded = json.loads(DATA_PATH.read_text())
    assert recorded == error_band_record(results), "run .venv/bin/python scripts/bench_plan_accuracy.py --write"


def test_the_request_to_token_pool_is_counted_where_logs_show_what_the_pools_left(results) -> None:
    """SGLang allocates its ReqToTokenPool (an int32 row of context + 4 per request) with the KV pool,
    out of F0 x (1 - mfs): QwQ-32B's 131,072-token context at 2,048 requests takes 1 GiB. Without it
    plan said 3.11 GiB was left on each L4 where the log says 2.09; with it plan is within 0.2 (0.06 of
    that is the weights, planned 15.44 GiB where the log says 15.54)."""
    case, r = next((c, r) for c, r in results if c.name == "qwq-32b.l4x4-tp4")
    assert pool_end_avail_gib(case) == 2.09
    assert abs(r["pool_end_err_gib"]) < 0.2, r


def main() -> None:
    results = [(case, judge(case, run_plan(case))) for case in CASES]
    for case, r in results:
        kv = f"{r['kv_tokens']} vs {case.kv_tokens} ({r['kv_err']:+.1%})" if r["kv_err"] is not None else "-"
        part = "held-out" if case.held_out else "tuning"
        print(f"{part:8} {case.name:48} log {case.outcome:12} plan {r['verdict']:12} "
              f"need {r['runtime_need_gib']} GiB (left after pools: {pool_end_avail_gib(case)}) kv {kv}")
    print(json.dumps(score(results)))


if __name__ == "__main__":
    main()
