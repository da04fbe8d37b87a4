"""Holds `imgbuild plan` against SGLang's own parser on a corpus (tests/oracle/corpus.py).

Both sides get the same base command (the seed model, --tp 2, 2x RTX A6000) plus one case's
flags. Compared: the outcome (accept / refuse at argparse / refuse after it) and its message, and
on accepted cases the defaults SGLang resolves that the memory plan depends on.

Usage: .venv/bin/python tests/oracle/differential.py VENV_PYTHON VERSION [--sample SEED COUNT] [--json OUT]
(--sample: COUNT random sets of one to three flag values drawn with SEED instead of the test corpus,
a held-back check: the test uses the fixed corpus only)
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import flag_sets, sample_sets  # noqa: E402

MODEL = "examples/qwen3.6-27b"
GPU = "RTX A6000x2"
GPU_PROBE = ["--memory-mib", "49140", "--sm", "86", "--gpu-name", "NVIDIA RTX A6000", "--gpus", "2"]
# a second machine, of another GPU generation, for the rules that read the compute capability (matrix.yaml's
# "H100 SXM": its nvidia-smi name and memory.total)
H100_GPU = "H100 SXMx2"
H100_PROBE = ["--memory-mib", "81559", "--sm", "90", "--gpu-name", "NVIDIA H100 80GB HBM3", "--gpus", "2"]
BASE = ["--tp", "2"]
# plan's JSON key -> SGLang's ServerArgs attribute (and how to read it).
COMPARED = {
    "mem_fraction_static": ("mem_fraction_static", lambda v: round(float(v), 9) if v is not None else None),
    "chunked_prefill_size": ("chunked_prefill_size", lambda v: v),
    "cuda_graph_max_bs": ("cuda_graph_max_bs", lambda v: v),
    "radix_cache": ("disable_radix_cache", lambda v: not v),
    "mamba_strategy": ("mamba_scheduler_strategy", lambda v: v),
}


def sglang_side(python: str, cases: list[list[str]], model: str | list[str] = MODEL,
                probe: list[str] = GPU_PROBE) -> list[dict]:
    """SGLang's outcome for each case, in one parser process (its import is most of the cost); ``model``: one for all
    cases, or one per case."""
    models = [model] * len(cases) if isinstance(model, str) else model
    argv = [["--model-path", m, *BASE, *c] for m, c in zip(models, cases)]
    done = subprocess.run([python, str(ROOT / "tests/oracle/sglang_parse.py"), *probe], input=json.dumps(argv),
                          capture_output=True, text=True, cwd=ROOT, check=True)
    lines = done.stdout.splitlines()
    return [json.loads(line) for line in lines[1:]]


@dataclass
class _Run:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(argv: list[str]) -> _Run:
    """imgbuild's own main(), in process: its exit codes and its stderr lines, as a user sees them."""
    from imgbuild.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
    return _Run(code, out.getvalue(), err.getvalue())


def imgbuild_side(version: str, cases: list[list[str]], model: str = MODEL, gpu: str = GPU) -> list[dict]:
    out = []
    for case in cases:
        res = run_cli(["plan", model, "--gpu", gpu, "--sglang", version, "--json", "--no-suggest", "--", *BASE, *case])
        if res.exit_code == 2:
            lines = [line for line in res.stderr.splitlines() if line.strip()]
            out.append({"outcome": "refuse-parse", "message": lines[-1] if lines else "", "resolved": {}})
            continue
        if res.exit_code not in (0, 1):
            out.append({"outcome": f"crash-{res.exit_code}", "message": res.stderr.strip()[-300:], "resolved": {}})
            continue
        if not res.stdout.strip():
            out.append({"outcome": f"no-plan-{res.exit_code}", "message": res.stderr.strip()[-300:], "resolved": {}})
            continue
        plan = json.loads(res.stdout)
        if plan["verdict"] == "refused":
            out.append({"outcome": "refuse-after", "message": plan.get("sglang_error") or "", "resolved": {}})
        else:
            out.append({"outcome": "accept", "message": "", "resolved": {k: plan.get(k) for k in COMPARED}})
    return out


def compare(case: list[str], ours: dict, theirs: dict, *, hybrid: bool = True) -> str | None:
    """None when they agree, else what differs. ``hybrid``: the model has a linear-attention (mamba) state; a
    model without one has no mamba scheduler, and SGLang's attribute holds a default nothing reads."""
    if ours["outcome"] != theirs["outcome"]:
        return f"outcome: imgbuild {ours['outcome']} ({ours['message'][:160]}), sglang {theirs['outcome']} ({theirs['message'][:160]})"
    if ours["outcome"] == "refuse-after" and ours["message"] != theirs["message"]:
        return f"message: imgbuild {ours['message'][:160]!r}, sglang {theirs['message'][:160]!r}"
    if ours["outcome"] == "accept":
        diffs = []
        for key, (attr, read) in COMPARED.items():
            if key == "mamba_strategy" and not hybrid:
                continue
            mine, real = ours["resolved"].get(key), read(theirs["resolved"].get(attr))
            if key == "mem_fraction_static" and mine is not None:
                mine = round(float(mine), 9)
            if mine != real:
                diffs.append(f"{key}: imgbuild {mine}, sglang {real}")
        return "; ".join(diffs) or None
    return None


def run(python: str, version: str, cases: list[list[str]] | None = None, model: str = MODEL, *, gpu: str = GPU,
        probe: list[str] = GPU_PROBE) -> dict:
    """``gpu`` (plan's --gpu) and ``probe`` (what sglang_parse.py patches SGLang's GPU probes to) name one machine."""
    cases = flag_sets(version) if cases is None else cases
    return run_models(python, version, {model: cases}, gpu=gpu, probe=probe)[model]


def run_models(python: str, version: str, lists: dict[str, list[list[str]]], *, gpu: str = GPU,
               probe: list[str] = GPU_PROBE) -> dict[str, dict]:
    """``run`` for several models on one machine, through one parser process: each model's report."""
    from imgbuild.knowledge.modelinfo import inspect_model

    pairs = [(model, case) for model, cases in lists.items() for case in cases]
    theirs = iter(sglang_side(python, [c for _, c in pairs], [m for m, _ in pairs], probe))
    reports = {}
    for model, cases in lists.items():
        ours = imgbuild_side(version, cases, model, gpu)
        hybrid = inspect_model(str(ROOT / model)).geometry.hybrid  # (an absolute path stays as it is)
        rows = [{"flags": case, "imgbuild": o, "sglang": t, "differs": compare(case, o, t, hybrid=hybrid)}
                for case, o, t in zip(cases, ours, theirs)]
        agree = sum(1 for r in rows if r["differs"] is None)
        reports[model] = {"version": version, "cases": len(rows), "agree": agree, "rows": rows}
    return reports


def main(argv: list[str]) -> int:
    """PYTHON VERSION [--sample SEED COUNT] [--json FILE]: the test's corpus, or a held-back sample."""
    python, version = argv[0], argv[1]
    cases = None
    if "--sample" in argv:
        i = argv.index("--sample")
        cases = sample_sets(version, seed=int(argv[i + 1]), count=int(argv[i + 2]))
    report = run(python, version, cases)
    for row in report["rows"]:
        if row["differs"]:
            print(f"DIFFERS {' '.join(row['flags'])}: {row['differs']}")
    print(f"sglang {version}: plan agrees with SGLang's parser on {report['agree']} of {report['cases']} flag sets")
    if "--json" in argv:
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    return 0 if report["agree"] == report["cases"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
