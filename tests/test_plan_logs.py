"""`imgbuild plan` held against real SGLang start-up logs, as a user would run it.

Each case is tests/data/plan_logs/NAME.json: the public thread (url), the model (a config under
tests/data/models or tests/data/plan_logs/models, each with a SOURCE.md citing it), the GPU as `--gpu` takes it, the release, the launch flags, the outcome the log
shows (fits: "KV Cache is allocated. #tokens: N" / max_total_num_tokens; does-not-fit: "Not enough
memory" or CUDA out of memory) and the logged KV token count where there is one. Its "log" names
the excerpt (this folder, or tests/data/logs), whose first line cites the same thread.

A fifth of the cases is held out of tuning by the rule the triage corpus uses:
int(sha256(url), 16) % 5 == 0. Tuning (the margin rule in knowledge/memory.py) looked only at the
other part. `python tests/test_plan_logs.py` prints the table and the agreement of each part.
"""

from __future__ import annotations

import hashlib
import json
import re
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
IMGBUILD = Path(sys.executable).parent / "imgbuild"
KV_TOLERANCE = 0.05  # the target for KV tokens

# what plan answers today on each part: a change to the planner that lowers a figure is a
# regression against real launches; one that raises it should raise the floor here
FLOOR = {
    "tuning": {"verdicts_right": 7, "kv_within_tolerance": 4},
    "held_out": {"verdicts_right": 5, "kv_within_tolerance": 4},
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

    @property
    def held_out(self) -> bool:
        return int(hashlib.sha256(self.url.encode()).hexdigest(), 16) % 5 == 0


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(CASES_DIR.glob("*.json")):
        d = json.loads(path.read_text())
        cases.append(Case(
            path.stem, d["url"], d["model"], d["gpu"], d["sglang"], list(d["flags"]), d["outcome"],
            d.get("kv_tokens"), (CASES_DIR / d["log"]).resolve(),
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
    kv = plan["per_gpu"].get("kv_tokens")
    kv_err = None
    if case.kv_tokens and kv is not None and plan["verdict"] == "fits":
        kv_err = (kv - case.kv_tokens) / case.kv_tokens
    return {
        "verdict": plan["verdict"],
        "verdict_right": plan["verdict"] == case.outcome,
        "kv_tokens": kv,
        "kv_err": kv_err,
        "slack_gib": plan["per_gpu"].get("slack_gib"),
        "runtime_need_gib": plan["per_gpu"].get("runtime_need_gib"),
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
        }
    return out


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
    """What SGLang had left once its pools were allocated ("Memory pool end. avail mem=X GB", GiB)."""
    found = re.findall(r"Memory pool end\. avail mem=([\d.]+) GB", case.log.read_text())
    return min(map(float, found)) if found else None


def test_the_margin_is_not_stricter_than_launches_that_started(results) -> None:
    """Every launch that started had its runtime need inside what SGLang left after the pools:
    plan's estimate of that need (knowledge/memory.py _runtime_headroom) must not exceed it."""
    checked = 0
    for case, r in results:
        left = pool_end_avail_gib(case)
        if case.outcome != "fits" or left is None:
            continue
        checked += 1
        assert r["runtime_need_gib"] <= left, (case.name, r["runtime_need_gib"], left)
    assert checked >= 3


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
