"""plan's own error on real SGLang start-up logs, as data: how far its "Memory pool end. avail mem"
figure (what is left for activations and CUDA graphs once the pools are placed) was from the one
SGLang logged, as a share of F0, over the tuning part of tests/data/plan_logs.

imgbuild/data/plan_error.json is written by `scripts/bench_plan_accuracy.py --write` (never by hand);
tests/test_plan_logs.py fails when it no longer matches what the logs give. A launch whose margin is
inside this error is `borderline`. Read lazily: nothing here touches a file at import time.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA_PATH = Path(__file__).resolve().parents[1] / "data" / "plan_error.json"


@lru_cache(maxsize=1)
def plan_error() -> dict[str, Any]:
    """The recorded figures (see the module docstring); {} when the file is absent."""
    try:
        return json.loads(DATA_PATH.read_text())
    except FileNotFoundError:
        return {}


def margin_error_share() -> float:
    """The share of F0 within which plan's margin is not to be trusted."""
    return float(plan_error().get("margin_error_share_of_f0", 0.0))


def margin_error_gib(free_before_load_gib: float) -> float:
    """plan's own error at this F0, GiB per GPU."""
    return max(free_before_load_gib, 0.0) * margin_error_share()
