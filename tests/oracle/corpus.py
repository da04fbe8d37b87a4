"""A corpus of launch-flag sets for one SGLang release, generated from that release's own flag
table (imgbuild/data/server_args.json, extracted from its server_args.py), to hold `plan` against
SGLang's real parser (tests/oracle/sglang_parse.py).

Every flag appears at least once with a valid value (a choice flag with each of its choices); typed
and choice flags also with an invalid one; then the combinations that server_args.py refuses or resolves specially (hand-listed from
the 0.5.x sources, below), and seeded random pairs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER_ARGS = ROOT / "imgbuild" / "data" / "server_args.json"
# Flags a corpus case never sets: the base command sets them, or they point at files, hosts or
# processes that would make the case about the world rather than about parsing.
SKIP = {
    "--model-path", "--model", "--tp", "--tp-size", "--tensor-parallel-size", "--config", "--host", "--port",
    "--tokenizer-path", "--served-model-name", "--chat-template", "--completion-template", "--dist-init-addr",
    "--nccl-init-addr", "--speculative-draft-model-path", "--speculative-draft", "--lora-paths", "--file-storage-path",
    "--json-model-override-args", "--preferred-sampling-params", "--api-key", "--admin-api-key",
    "--download-dir", "--log-requests-target", "--crash-dump-folder", "--decrypted-config-file",
    "--decrypted-draft-config-file", "--model-loader-extra-config", "--revision", "--speculative-draft-model-revision",
    "--tokenizer-worker-num", "--nnodes", "--node-rank", "--dp", "--dp-size", "--data-parallel-size",
    "--pp", "--pp-size", "--pipeline-parallel-size", "--ep", "--ep-size", "--expert-parallel-size",
}
# Combinations server_args.py decides on (0.5.9 .. 0.5.23): refusals and resolved defaults.
PAIRS = [
    ["--enable-hierarchical-cache", "--disable-radix-cache"],
    ["--speculative-algorithm", "NEXTN"],
    ["--speculative-algorithm", "NEXTN", "--disable-radix-cache"],
    ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
     "--speculative-num-draft-tokens", "4", "--disable-radix-cache"],
    ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "4",
     "--disable-radix-cache"],
    ["--speculative-algorithm", "EAGLE", "--disable-radix-cache"],
    ["--disable-cuda-graph"],
    ["--disable-cuda-graph", "--disable-radix-cache"],
    ["--mem-fraction-static", "0.85", "--context-length", "32768"],
    ["--chunked-prefill-size", "-1"],
    ["--chunked-prefill-size", "8192", "--max-prefill-tokens", "4096"],
    ["--cuda-graph-max-bs", "64"],
    ["--max-running-requests", "32"],
    ["--mamba-scheduler-strategy", "extra_buffer"],
    ["--mamba-scheduler-strategy", "extra_buffer", "--disable-radix-cache"],
    ["--kv-cache-dtype", "fp8_e4m3"],
    ["--enable-dp-attention"],
    ["--page-size", "16"],
    ["--page-size", "0"],
    ["--page-size", "3"],
    ["--page-size", "512"],
    ["--page-size", "0", "--disable-overlap-schedule"],
    ["--page-size", "0", "--disable-radix-cache"],
    ["--page-size", "3", "--mamba-scheduler-strategy", "extra_buffer"],
    ["--enable-mixed-chunk", "--disable-radix-cache"],
    ["--linear-attn-decode-backend", "flashkda"],  # refused from 0.5.15 (a middle choice from 0.5.17 on)
    ["--linear-attn-backend", "flashkda"],  # decode then falls back to triton
    ["--enable-session-radix-cache", "--radix-eviction-policy", "priority"],
    ["--enable-linear-replayssm", "--linear-attn-decode-backend", "flashinfer"],
    ["--enable-linear-replayssm", "--linear-attn-backend", "flashinfer", "--disable-radix-cache"],
    # refused against the strategy SGLang resolves: extra_buffer with overlap or paging, not without a radix cache
    ["--enable-linear-replayssm", "--disable-radix-cache"],
    ["--enable-linear-replayssm", "--disable-overlap-schedule"],
    ["--enable-linear-replayssm", "--page-size", "64", "--disable-overlap-schedule"],
    ["--enable-linear-replayssm", "--mamba-scheduler-strategy", "no_buffer", "--disable-overlap-schedule"],
    ["--speculative-algorithm", "x", "--disable-radix-cache"],  # the unknown name without the hybrid refusal
    # a check __post_init__ runs after the model adjustments (0.5.10-0.5.13) loses to their radix refusal
    ["--speculative-algorithm", "NEXTN", "--enable-eplb"],
    ["--enable-linear-replayssm", "--disaggregation-mode", "decode"],  # refused from 0.5.15 on
    ["--mamba-radix-cache-strategy", "extra_buffer", "--linear-attn-backend", "flashinfer"],  # 0.5.14 on: triton only
    ["--encoder-only", "--language-only"],
    ["--encoder-only", "--disaggregation-mode", "prefill"],
    ["--enable-unified-cache-external-linker", "--disable-radix-cache"],
    ["--enable-unified-cache-external-linker", "--enable-hierarchical-cache"],
    ["--enable-unified-cache-external-linker", "--hicache-storage-backend", "file"],
    # deterministic inference: an attention backend outside its list is refused, one outside the radix-supported
    # list turns the radix cache off after the mamba strategy is resolved
    ["--enable-deterministic-inference", "--attention-backend", "torch_native"],
    ["--enable-deterministic-inference", "--attention-backend", "flashinfer"],
    ["--rl-on-policy-target", "fsdp", "--attention-backend", "torch_native"],
    # multi-item scoring: flashinfer for both phases, then chunked prefill, CUDA graphs and the radix cache off
    ["--enable-mis", "--attention-backend", "flashinfer"],
    ["--enable-mis", "--attention-backend", "triton"],
    ["--enable-mis", "--decode-attention-backend", "flashinfer", "--attention-backend", "triton"],
    # ... with a phase left to SGLang: the default backend it picks for the model and GPU
    ["--enable-mis", "--prefill-attention-backend", "flashinfer"],
    ["--enable-mis", "--decode-attention-backend", "triton"],
    # ... whose radix cache goes off after the linear-attention checks: ReplaySSM still sees extra_buffer (0.5.23)
    ["--enable-linear-replayssm", "--enable-mis"],
    # an FP4 KV cache needs a backend that reads it (the default flashinfer does not)
    ["--kv-cache-dtype", "fp4_e2m1", "--attention-backend", "triton"],
    ["--kv-cache-dtype", "fp4_mx_block16", "--attention-backend", "triton"],
    ["--kv-cache-dtype", "fp4_mx_block16", "--decode-attention-backend", "triton"],
    # diffusion LLMs: a known algorithm, the radix cache off (0.5.10-0.5.14 check the architecture only with it on)
    ["--dllm-algorithm", "LowConfidence"],
    ["--dllm-algorithm", "x", "--disable-radix-cache"],
]


def release_specs(version: str) -> list[dict]:
    data = json.loads(SERVER_ARGS.read_text(encoding="utf-8"))
    return [data["specs"][i] for i in data["versions"][version]]


def valid_values(spec: dict) -> list[list[str]]:
    flag = spec["flags"][0]
    action = spec["action"]
    if action in ("store_true", "store_false", "StoreTrue", "DeprecatedStoreTrueAction") or spec.get("nargs") == 0:
        return [[flag]]
    if action == "BooleanOptionalAction":
        return [[flag], ["--no-" + flag[2:]]]
    if spec.get("choices"):
        return [[flag, str(c)] for c in spec["choices"]]
    kind = spec.get("type")
    if kind == "int":
        return [[flag, "4"]]
    if kind == "float":
        return [[flag, "0.5"]]
    if spec.get("nargs") in ("+", "*"):
        return [[flag, "a", "b"]]
    return [[flag, "x"]]


def invalid_values(spec: dict) -> list[list[str]]:
    flag = spec["flags"][0]
    if spec.get("choices"):
        return [[flag, "not-a-choice"]]
    if spec.get("type") in ("int", "float"):
        return [[flag, "abc"]]
    if spec["action"] in ("store_true", "BooleanOptionalAction"):
        return [[flag, "1"]]
    return []


def flag_sets(version: str, *, seed: int = 0, random_pairs: int = 60) -> list[list[str]]:
    """The corpus for one release: each case is the flags after the base command."""
    specs = [s for s in release_specs(version) if not (set(s["flags"]) & SKIP)]
    names = {f for s in specs for f in s["flags"]}
    cases: list[list[str]] = [[]]
    for spec in specs:
        cases += valid_values(spec) + invalid_values(spec)
    cases += [p for p in PAIRS if all(w in names for w in p if w.startswith("--") and not w.startswith("--no-"))]
    rng = random.Random(seed)
    singles = [v for s in specs for v in valid_values(s)]
    before_pairs = len(cases)
    while len(cases) < before_pairs + random_pairs:
        a, b = rng.sample(singles, 2)
        if a[0] != b[0]:  # two values of one flag: where plan is stricter on purpose (sample_sets)
            cases.append(a + b)
    cases.append(["--enable-h"])  # an ambiguous prefix
    return cases


def sample_sets(version: str, *, seed: int, count: int) -> list[list[str]]:
    """A held-back corpus: ``count`` random sets of one to three flag values, valid or invalid,
    drawn with ``seed`` (the test's corpus uses seed 0). Nothing in it was looked at while plan's
    parser was tuned, so its agreement measures what the fixed corpus cannot."""
    specs = [s for s in release_specs(version) if not (set(s["flags"]) & SKIP)]
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        # distinct flags: one given twice with different values is where plan is stricter on purpose
        picked = rng.sample(specs, rng.choice((1, 2, 2, 3)))
        cases.append(sum((rng.choice(valid_values(s) + invalid_values(s)) for s in picked), []))
    return cases

