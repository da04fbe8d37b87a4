"""Triage of SGLang logs: real excerpts from public threads (tests/data/failure-logs,
each citing its source on its first line) and lines as SGLang 0.5.11 prints them."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.version import Version

from imgbuild.cli import cli
from imgbuild.knowledge.triage import CLASSES, LogWatcher, diagnose_log, read_figures

LOGS = Path(__file__).parent / "data" / "failure-logs"


def log_lines(name: str) -> list[str]:
    """The excerpt without its leading '# source:' comment lines."""
    lines = (LOGS / name).read_text(encoding="utf-8").splitlines()
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return lines


# file, class, phase, via, confidence, a fragment the cause must contain
REAL_LOGS = [
    ("cuda-oom-after-load.sglang-10736.txt", "cuda-oom", None, None, "matched", "Tried to allocate 2.00 GiB"),
    ("cuda-oom.sglang-7006.txt", "cuda-oom", None, None, "matched", "Tried to allocate 26.00 MiB"),
    ("cuda-graph-oom.sglang-5285.txt", "cuda-oom", "cuda-graph-capture", None, "matched", "Capture cuda graph failed"),
    ("negative-profiled-tokens.sglang-7691.txt", "not-enough-memory", None, None, "matched", "profiled value -561981"),
    ("no-kv-memory.inferencex-2128.txt", "not-enough-memory", None, None, "matched", "mem-fraction-static=0.88"),
    ("not-enough-memory.sglang-4895.txt", "not-enough-memory", None, None, "inferred", "avail mem=3.64 GB"),
    ("nccl.sglang-4289.txt", "nccl", None, "child-failed", "matched", "RuntimeError: NCCL error: unhandled system error"),
    ("nccl-unindented.sglang-3460.txt", "nccl", None, None, "matched", "RuntimeError: NCCL error"),
    ("jit-ninja.transformerlab-api-381.txt", "jit-build-failed", None, "child-failed", "matched", "'ninja'"),
    ("jit-import-error.sglang-4253.txt", "jit-build-failed", None, None, "inferred", "sglang.srt.models.deepseek_v2"),
    ("unsupported-architecture.sglang-5441.txt", "unsupported-architecture", None, None, "matched", "Glm4ForCausalLM"),
    ("driver-too-old.sglang-11395.txt", "driver-too-old", None, None, "matched", "found version 12040"),
    ("no-kernel-image.sglang-831.txt", "no-kernel-image", None, None, "matched", "RMSNorm failed"),
    ("flags-refused.sglang-12818.txt", "flags-refused", None, None, "matched", "--reasoning_parser"),
    ("port-in-use.openui-226.txt", "port-in-use", None, None, "matched", "address already in use"),
    ("started-then-warmup-failed.sglang-2468.txt", "unknown", None, None, "matched", "AssertionError"),
]


@pytest.mark.parametrize(
    "name, klass, phase, via, confidence, cause_part", REAL_LOGS, ids=[r[0] for r in REAL_LOGS]
)
def test_real_log_excerpt_is_classified(name, klass, phase, via, confidence, cause_part):
    d = diagnose_log(log_lines(name))
    assert (d.failure_class, d.phase, d.via, d.confidence) == (klass, phase, via, confidence)
    assert cause_part in d.cause
    assert d.evidence, "the lines used are reported"
    assert all(line in log_lines(name) for line in d.evidence)
    assert d.advice


# start-up logs without a failure: nothing is classified; the figures are read
OK_LOGS = [
    ("ok-startup.sglang-pr4826.txt", {"weights_gib": 8.13, "kv_tokens": 834615, "kv_gib": 108.24}),
    ("ok-startup-kv-dtype.sglang-pr11830.txt", {"kv_tokens": 2243474, "graph_gib": 1.44, "avail_after_pool_gib": 40.03}),
    ("ok-startup-kv-dtype.sglang-pr29853.txt", {"kv_tokens": 387968, "kv_gib": 11.84}),
]


@pytest.mark.parametrize("name, figures", OK_LOGS, ids=[o[0] for o in OK_LOGS])
def test_real_startup_log_shows_no_failure_and_its_figures(name, figures):
    d = diagnose_log(log_lines(name))
    assert (d.failure_class, d.failed, d.cause) == ("none", False, None)
    got = read_figures(log_lines(name)).to_dict()
    assert {k: got[k] for k in figures} == figures


def test_every_failure_log_cites_its_thread_on_the_first_line():
    for path in sorted(LOGS.glob("*.txt")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# source: https://github.com/"), path.name
    assert {p.name for p in LOGS.glob("*.txt")} == {r[0] for r in REAL_LOGS} | {o[0] for o in OK_LOGS}


P = "[2026-05-01 10:00:0{} TP0] "

STARTUP_0511 = [
    P.format(0) + "Load weight begin. avail mem=47.29 GB",
    P.format(1) + "Load weight end. elapsed=31.02 s, type=Qwen3_5ForConditionalGeneration, dtype=torch.bfloat16, avail mem=21.41 GB, mem usage=25.88 GB.",
    P.format(2) + "Mamba Cache is allocated. max_mamba_cache_size: 97, conv_state size: 0.57GB, ssm_state size: 2.27GB ",
    P.format(2) + "KV Cache is allocated. #tokens: 233472, K size: 3.56 GB, V size: 3.56 GB",
    P.format(2) + "Memory pool end. avail mem=7.02 GB",
    P.format(3) + "Capture cuda graph begin. This can take up to several minutes. avail mem=6.90 GB",
]


def sched_traceback(frames: list[str], exc: str) -> list[str]:
    return (
        [P.format(4) + "Scheduler hit an exception: Traceback (most recent call last):"]
        + [f'  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/{f}", line 1, in x' for f in frames]
        + [exc, "", "[2026-05-01 10:00:05] Received sigquit from a child process. It usually means the child failed."]
    )


SYNTHETIC = [
    (
        "oom-during-capture-by-frames",
        STARTUP_0511 + sched_traceback(["model_executor/cuda_graph_runner.py"],
                                       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."),
        "cuda-oom", "cuda-graph-capture", "child-failed",
    ),
    (
        "oom-during-capture-by-milestone",
        STARTUP_0511 + sched_traceback(["managers/scheduler.py"],
                                       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."),
        "cuda-oom", "cuda-graph-capture", "child-failed",
    ),
    (
        "oom-during-load",
        STARTUP_0511[:1] + sched_traceback(["model_loader/loader.py"],
                                           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB."),
        "cuda-oom", "load", "child-failed",
    ),
    (
        "oom-while-serving",
        STARTUP_0511 + [P.format(5) + "Capture cuda graph end. Time elapsed: 9.10 s. mem usage=0.61 GB. avail mem=6.29 GB.",
                        "[2026-05-01 10:00:06] The server is fired up and ready to roll!"]
        + sched_traceback(["managers/scheduler.py"], "torch.OutOfMemoryError: CUDA out of memory."),
        "cuda-oom", "runtime", "child-failed",
    ),
    (
        "not-enough-memory-0511-wording",
        STARTUP_0511[:2] + sched_traceback(
            ["model_executor/pool_configurator.py"],
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.5"),
        "not-enough-memory", None, "child-failed",
    ),
    (
        "child-failed-unmatched",
        STARTUP_0511[:2] + sched_traceback(["models/qwen3_5.py"], "KeyError: 'model.layers.0.mlp.gate.weight'"),
        "unknown", None, "child-failed",
    ),
    (
        "first-traceback-above-sigquit-wins",
        STARTUP_0511[:2]
        + sched_traceback(["distributed/parallel_state.py"], "RuntimeError: NCCL error: unhandled cuda error")[:-2]
        + sched_traceback(["model_loader/loader.py"], "torch.OutOfMemoryError: CUDA out of memory."),
        "nccl", None, "child-failed",
    ),
    (
        "warnings-and-a-handled-traceback-before-ready-are-no-failure",
        ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>', "ImportError: no vllm",
         "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation."]
        + STARTUP_0511 + ["[2026-05-01 10:00:06] The server is fired up and ready to roll!"],
        "none", None, None,
    ),
    (
        "import-error-of-an-unused-model-is-no-failure",
        ["[2026-05-01 10:00:00] Ignore import error when loading sglang.srt.models.foo. No module named 'bar'"]
        + STARTUP_0511 + ["[2026-05-01 10:00:06] The server is fired up and ready to roll!"],
        "none", None, None,
    ),
    (
        "radix-cache-refused-at-parse-time",
        ["Traceback (most recent call last):",
         '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 1, in __post_init__',
         "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache "
         "when using --mamba-scheduler-strategy no_buffer. To use radix cache with speculative decoding, please use "
         "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."],
        "flags-refused", None, None,
    ),
    (
        "assertion-in-server-args-is-flags-refused",
        ["Traceback (most recent call last):",
         '  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 1, in <module>',
         '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 2, in check_server_args',
         "    assert self.tp_size % self.pp_size == 0",
         "AssertionError"],
        "flags-refused", None, None,
    ),
    (
        "context-length-beyond-the-model",
        [P.format(0) + "Scheduler hit an exception: Traceback (most recent call last):",
         '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/configs/model_config.py", line 475, in _derive_context_length',
         "ValueError: Warning: User-specified context_length (262144) is greater than the derived context_length (40960). "
         "This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from "
         "max_position_embeddings in the model's config. To allow overriding this maximum, set the env var "
         "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
         "[2026-05-01 10:00:05] Received sigquit from a child process. It usually means the child failed."],
        "flags-refused", None, "child-failed",
    ),
    (
        "compose-and-rank-prefixes",
        ["sglang-1  | [2026-05-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
         'sglang-1  | [rank0]:   File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 1, in init_torch_distributed',
         "sglang-1  | [rank0]: RuntimeError: No CUDA GPUs are available",
         "sglang-1  | [2026-05-01 10:00:01] Received sigquit from a child process. It usually means the child failed."],
        "no-gpu-visible", None, "child-failed",
    ),
    (
        "logging-ray-and-ansi-prefixes",
        ["2025-03-07 23:50:27,727 - __main__ - INFO - [2025-03-07 23:50:27 TP0] Load weight begin. avail mem=22.46 GB",
         "\x1b[36m(WorkerDict pid=616, ip=192.168.149.159)\x1b[0m [2025-09-18 03:27:45 DP1 TP0] Scheduler hit an exception: Traceback (most recent call last):",
         '\x1b[36m(WorkerDict pid=616, ip=192.168.149.159)\x1b[0m   File "/opt/conda/lib/python3.11/site-packages/triton/backends/nvidia/compiler.py", line 292, in make_cubin',
         "\x1b[36m(WorkerDict pid=616, ip=192.168.149.159)\x1b[0m subprocess.CalledProcessError: Command '/opt/conda/lib/python3.11/site-packages/triton/backends/nvidia/bin/ptxas -lineinfo -v --gpu-name=sm_120 /tmp/t.ptx -o /tmp/t.ptx.o 2> /tmp/t.log' returned non-zero exit status 255."],
        "jit-build-failed", None, None,
    ),
    (
        "killed-while-loading",
        [P.format(0) + "Load weight begin. avail mem=47.29 GB",
         "Loading safetensors checkpoint shards:  27% Completed | 3/11 [00:41<01:52, 12.50s/it]", "Killed"],
        "killed", None, None,
    ),
    ("empty-log", [], "none", None, None),
]


@pytest.mark.parametrize("lines, klass, phase, via", [s[1:] for s in SYNTHETIC], ids=[s[0] for s in SYNTHETIC])
def test_sglang_0_5_11_lines_are_classified(lines, klass, phase, via):
    d = diagnose_log(lines)
    assert (d.failure_class, d.phase, d.via) == (klass, phase, via)


def test_child_failed_reports_the_root_exception_not_the_sigquit_line():
    lines = STARTUP_0511[:2] + sched_traceback(["models/qwen3_5.py"], "KeyError: 'model.layers.0.mlp.gate.weight'")
    d = diagnose_log(lines)
    assert d.cause == "KeyError: 'model.layers.0.mlp.gate.weight'"
    assert any("Received sigquit" in e for e in d.evidence)


def test_each_oom_phase_has_its_own_advice():
    advice = {}
    for name, lines, klass, phase, _ in SYNTHETIC:
        if klass == "cuda-oom":
            advice[phase] = diagnose_log(lines).advice
    assert set(advice) == {"load", "cuda-graph-capture", "runtime"}
    assert len({a for a in advice.values()}) == 3
    assert any("--cuda-graph-max-bs" in a for a in advice["cuda-graph-capture"])


def test_not_enough_memory_advice_points_to_imgbuild_plan():
    d = diagnose_log(log_lines("no-kv-memory.inferencex-2128.txt"))
    assert any("imgbuild plan" in a for a in d.advice)


def test_watcher_stops_at_the_first_fatal_line_with_the_same_verdict_as_the_whole_log():
    lines = STARTUP_0511 + sched_traceback(["model_executor/cuda_graph_runner.py"],
                                           "torch.OutOfMemoryError: CUDA out of memory.") + ["later noise"]
    w = LogWatcher()
    verdicts = [(i, v) for i, line in enumerate(lines) if (v := w.feed(line)) is not None]
    assert len(verdicts) == 1
    at, verdict = verdicts[0]
    assert "OutOfMemoryError" in lines[at]
    assert verdict.failure_class == "cuda-oom"
    assert verdict.phase == "cuda-graph-capture"


def test_watcher_ignores_warnings_and_notes_readiness():
    w = LogWatcher()
    for line in ["[2026-05-01 10:00:00] Ignore import error when loading sglang.srt.models.foo. x",
                 "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
                 "[2026-05-01 10:00:06] The server is fired up and ready to roll!"]:
        assert w.feed(line) is None
    assert w.ready_seen


def test_read_figures_takes_rank_0_values():
    lines = STARTUP_0511 + [
        "[2026-05-01 10:00:01 TP1] Load weight end. elapsed=31.02 s, type=X, dtype=torch.bfloat16, avail mem=20.00 GB, mem usage=26.00 GB.",
        P.format(5) + "Capture cuda graph end. Time elapsed: 9.10 s. mem usage=0.61 GB. avail mem=6.29 GB.",
        P.format(6) + "max_total_num_tokens=233472, chunked_prefill_size=4096, max_prefill_tokens=16384, "
        "max_running_requests=48, context_len=262144, available_gpu_mem=6.29 GB",
    ]
    f = read_figures(lines)
    assert (f.weights_gib, f.avail_after_load_gib) == (25.88, 21.41)
    assert (f.kv_tokens, f.kv_gib) == (233472, 7.12)
    assert (f.state_slots, f.state_gib) == (97, 2.84)
    assert (f.graph_gib, f.max_total_num_tokens, f.max_running_requests, f.context_len) == (0.61, 233472, 48, 262144)


def test_read_figures_of_an_older_log_without_mem_usage():
    f = read_figures(log_lines("started-then-warmup-failed.sglang-2468.txt"))
    assert (f.avail_after_load_gib, f.weights_gib, f.max_total_num_tokens) == (9.69, None, 56524)


DIAGNOSE_CLI = [
    ("failure-json", ["diagnose", "--json", str(LOGS / "nccl.sglang-4289.txt")], 1),
    ("no-failure", ["diagnose", "-"], 0),
    ("unreadable", ["diagnose", str(LOGS / "does-not-exist.txt")], 2),
]


@pytest.mark.parametrize("args, code", [c[1:] for c in DIAGNOSE_CLI], ids=[c[0] for c in DIAGNOSE_CLI])
def test_diagnose_exit_codes(args, code):
    proc = subprocess.run([sys.executable, "-m", "imgbuild.cli", *args], input="all good\n",
                          capture_output=True, text=True, check=False)
    assert proc.returncode == code, proc.stderr
    if code == 2:
        assert "cannot read log" in proc.stderr and "Traceback" not in proc.stderr


def test_diagnose_json_has_class_cause_advice_evidence():
    result = CliRunner().invoke(cli, ["diagnose", "--json", str(LOGS / "jit-ninja.transformerlab-api-381.txt")])
    data = json.loads(result.output)
    assert data["class"] == "jit-build-failed"
    assert data["cause"] == "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'"
    assert isinstance(data["advice"], list) and data["advice"]
    assert any("Received sigquit" in e for e in data["evidence"])


def test_diagnose_reads_stdin():
    text = (LOGS / "flags-refused.sglang-12818.txt").read_text()
    result = CliRunner().invoke(cli, ["diagnose", "-"], input=text)
    assert "class: flags-refused" in result.output


def test_triage_imports_no_adapter_library():
    code = ("import sys, imgbuild.knowledge.triage; bad = {'docker', 'httpx', 'pynvml', 'click'} & set(sys.modules); "
            "print(sorted(bad)); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


# ---- the public corpus: tuned part (failure-logs/public, failure-logs/local) and held-out part ----
# Each file: "# source: URL (note)", "# expect: CLASS", then the excerpt as posted. The held-out
# files were chosen by sha256(url) % 5 == 0 when collected; no signature was written from the
# seven collected last, which the classifier saw only after the split, nor from the eight added
# with the pre-filter (one of them held out), each classified right as first seen. Of the 35
# collected after those (27 tuned, 8 held out), the held-out part was scored before any change
# (19 of 22) and the classifier was then changed from the tuned part's misses only. Of the 41
# collected after those (36 tuned, 5 held out), the tuned misses (10) were fixed from the tuned
# logs alone; scored at the end, the whole held-out part reads 22 of 27 with the code before that
# change and 23 of 27 after it (the new held-out logs: 2 of 5, then 3 of 5). Of the 44 collected
# after those (35 tuned, 9 held out: one-line pastes, ROCm/Ascend out-of-memory lines, NCCL WARN
# lines, c10d socket lines, Ray's actor-death text, transformers' older wordings), both parts were
# scored before any change: the tuned part 31 of 35, the held-out part 29 of 37 (0.78; the new
# held-out logs 6 of 9). The four tuned misses were fixed from the tuned logs alone (a traceback
# through ninja's runner, c10d's listen failure, Ray's memory kill, "Can't load config for");
# scored after that change the held-out part still reads 29 of 37 (the new logs 6 of 9), so the
# new honest held-out logs pulled the floor down from 0.82 to what it measures. Of the 63 collected
# after those (54 tuned, 9 held out), both parts were scored before any change: the tuned part 39 of
# 54, the held-out part 37 of 46 (the new held-out logs 8 of 9). Three tuned logs were dropped because
# their text does not hold the cause the thread found (sglang 7033 and 4689 are cut before the error
# their titles name; faster-whisper 1229 shows only "CUDA driver version is insufficient" where the
# GPU had not been passed into the container). The other twelve tuned misses were fixed from the
# tuned logs alone (a missing shared library, Ray's memory-monitor texts, DeepSpeed's and torchrun's
# -9, NCCL's own result strings, docker without the NVIDIA toolkit, vLLM's older cache-block
# refusal, TurboMind's "CUDA runtime error: out of memory"); scored after that change, the held-out
# part reads 38 of 46 (0.83). Of the 78 collected after those (55 tuned, 23 held out: vLLM, TGI,
# LlamaFactory, ComfyUI, k9s panes, one-line pastes), both parts were scored before any change: the
# tuned part 43 of 55, the held-out part 56 of 69 (0.81; the new held-out logs 18 of 23). The twelve
# tuned misses were fixed from the tuned logs alone (vLLM's and torchrun's child reports, a 401 from
# the Hub, the NCCL watchdog's failed collective, NCCL_ERROR_* names, Triton's C stub under tcc, vLLM's
# heads-by-TP refusal, TGI's signal 9, a terminal pane's frame); scored after that change, the
# held-out part reads 60 of 69 (0.87; the new held-out logs 21 of 23). Of the 52 collected after
# those (48 tuned, 4 held out: RL frameworks' Ray and torchrun pastes, forum and blog pages), both parts
# were scored before any change: the tuned part 33 of 49 (two dropped since: one's text names another
# error than the cause its page gives, one cites a bare IP mirror), the held-out part 63 of 73 (the new held-out logs 3 of 4). The
# tuned misses were fixed from the tuned logs alone (Ray's and vLLM's child reports, HfArgumentParser's
# and ms-swift's refusals, vLLM's "No supported device", torch's OOM body, NCCL WARN/nccl-tests
# failures, the kernel's oom-killer line, an offline Hub, glog prefixes and a server's "Failed to ...:
# XError" line); scored after that change, the held-out part reads 63 of 73 (0.86). Of the 85 collected
# after those (vllm-project threads, then LMDeploy, TGI, Xinference, GPUStack, TensorRT-LLM, Triton and
# ComfyUI threads; 61 tuned, 19 held out, five dropped whose text does not hold the cause), each batch
# was scored before the changes its tuned misses brought: the vllm-project batch's held-out logs 6 of 7,
# the other batch's 9 of 12 (the whole held-out part then 78 of 92). The tuned misses were fixed from the
# tuned logs alone (the caching allocator's OOM warning, the container toolkit's and NGC containers'
# driver checks, a Hub 404, clap's refusals, other engines' architecture registries, xoscar's
# ServerClosed, a markdown-quoted "Killed"); scored after, the held-out part reads 79 of 92 (0.86).
# Then a class read from an unmatched error's own words (triage.py _WORDED), written and checked
# against the tuned part (one tuned log, SGLang's request-slot "runs out of memory", narrowed the OOM
# words to a device's memory); scored once after, the held-out part reads 80 of 92 (0.87). Of the 18
# collected after that (model repositories' threads: GLM, Qwen, InternVL, MiniCPM-V, DeepSeek; 15 tuned,
# 3 held out), all 18 were classified right as first seen, with no change; the held-out part reads 83
# of 95 (0.87). Of the 42 collected after that (RL frameworks, serving stacks and SGLang threads; one a
# thread already held, so 30 tuned and 11 held out), both parts were scored before any change: the tuned
# part 19 of 30, the new held-out logs 7 of 11 (the whole held-out part 90 of 106). Two tuned hard
# negatives were dropped because their text does not show the outcome their label gives (lmdeploy 3292:
# a WARNING that AutoConfig failed, then a fallback; vLLM PR 33545: "Error retrieving safetensors" at
# ERROR level; each thread says the server went on): a reader of the text alone must call both failures.
# The other nine tuned misses were fixed from the tuned logs alone (nvcc fatal and ninja's failed command,
# Gloo's connectFullMesh, the container toolkit's NVML load, RunPod's worker exit, curly quotes and an en
# dash for "--", a shell's segmentation fault, a kill reported before the error it caused); scored after,
# the held-out part still reads 90 of 106 (0.85). Of the 49 collected after that (SGLang threads, RL
# frameworks, serving stacks, deployment projects, two blogs; 41 tuned, 8 held out), both parts were
# scored before any change: the tuned part 24 of 41, the new held-out logs 6 of 8 (the whole held-out
# part 96 of 114). One tuned log was dropped (vLLM 586: Ray's "actor is dead ... potential root causes"
# text, labelled killed by its thread, is the text of two tuned child-failed logs). The other tuned
# misses were fixed from the tuned logs alone (cudaErrorCallRequiresNewerDriver, Error 802 without the
# fabric manager, vLLM's UnspecifiedPlatform and empty device string, Windows' port-in-use, vLLM's
# negative KV-cache profile, a positional argparse choice, TensorRT-LLM's invalid argument, vLLM's
# bfloat16 on pre-Ampere, Xinference's module import, libcuda missing outside a CPU launch, torchrun's
# signal record, Ollama's runner exit, a SIGKILL under a launcher's child report, a failed model load
# without a traceback, the server's own requests refused by an HTTP proxy); scored after, the held-out
# part reads 96 of 114 (0.84). The 8 SGLang-thread logs collected after that all fell in the tuned part
# (5 of 8 as first seen); one was relabelled child-failed before any change, as the corpus labels the same
# shape (sglang 6888: a child's unmatched exception line, then the parent's sigquit). The misses were fixed
# from them (the custom all-reduce's missing P2P with its own advice, Gloo's send/recv timeout, an
# exception class in an errors module, the child's exception line as the cause when the excerpt has no
# traceback header); the held-out part still reads 96 of 114. Of the 32 collected after that (SGLang,
# vLLM, TGI, TensorRT-LLM, KServe, GPUStack, LLaMA-Factory, AReaL, DeepSpeed threads; 25 tuned, 7 held
# out), both parts were scored before any change: the tuned part 21 of 25, the new held-out logs 5 of 7.
# One tuned log was dropped as vLLM 586 was (vLLM PR 1395: Ray's "worker died or was killed ...
# potential root causes" text, labelled killed, is the text of two tuned child-failed logs). The class
# of a child's unmatched exception became unknown (via child-failed), as the labels define child-failed:
# a child died and the log holds no error of its own; the two tuned logs labelled child-failed for that
# shape (sglang 6888, 8513) were relabelled unknown. The other misses were fixed from the tuned logs
# alone (a Markdown-quoted log, torch's allocator under a memory fraction, vLLM's _C import warning,
# Ray's worker-died text as a child report); scored after, the held-out part reads 101 of 121. Of the 25
# collected after that (SGLang, verl, slime, EasyR1, OpenRLHF, vLLM, Ollama, Triton server, LMDeploy,
# Dynamo threads; 24 tuned, 1 held out), scored before any change: the tuned part 18 of 24, the new
# held-out log 1 of 1. The misses were fixed from the tuned logs alone (torch_memory_saver's CUresult 2,
# Triton server's missing model file, the NVIDIA containers' "No supported GPU(s)", llama.cpp's unknown
# architecture, transformers' older "does not recognize" wording); scored after, 102 of 122. Of the 33
# collected after that (SGLang, vLLM, verl, NeMo-RL, TRL, FastChat, LightLLM, TGI, Ollama, TensorRT-LLM,
# Triton, mistral.rs, FreeToken threads; 25 tuned, 8 held out), scored before any change: the tuned part 17
# of 25, the new held-out logs 7 of 8. The misses were fixed from the tuned logs alone (the PTX toolchain
# error and Ollama's "driver is too old", std::terminate and TensorRT-LLM's failed assertions as failures,
# TensorRT-LLM's kernels' "Unsupported architecture", a backend's "supported models are ... Got x",
# Ollama's unknown model name, a bind to an address the machine lacks, a "cache budget too small", and a
# traceback logged at glog's W level as a warning); scored after, 109 of 130. Of the 25 collected after
# that (pull requests that quote the error they fix; SGLang, vLLM, LoRAX, FastChat, LightLLM, Xinference,
# SkyRL, EasyR1, NeMo-RL, NoisyRollout threads, NVIDIA's forum, two blogs; 19 tuned, 6 held out; vLLM 586
# dropped again, a source build of sgl-kernel and an excerpt without its failure line left out), scored
# before any change: the tuned part 14 of 19, the new held-out logs 5 of 6. The misses were fixed from
# the tuned logs alone (an exception from a parser's parse_args is flags-refused; transformers' auto
# classes without the config and a model that knows only some of its versions are
# unsupported-architecture; a module without the name its caller uses is a version mismatch; C's
# assert() is a failure, and in Triton's compiler a JIT failure); scored after, 114 of 136. Of the 12
# collected after that (SGLang, Ascend's SGLang, vLLM, vLLM-Ascend, llm-d, club-3090 threads; 11 tuned, 1
# held out; one excerpt without its final error left out), scored before any change: the tuned part 10
# of 11, the new held-out log 1 of 1. The miss was fixed from it (a layer refusing the chosen
# --attention-backend is flags-refused); scored after, 115 of 137. Later batches are recorded in the README's diagnose
# paragraph and the issue notes. Of the 44 collected after those (SGLang and KTransformers threads, RL
# frameworks and operators, other serving stacks; 36 tuned, 8 held out), scored before any change with
# this session's rules read from library source (Slurm, safetensors, tokenizers, torchvision, journald
# and indented pastes), which had left the held-out part at 143 of 166: the tuned part 25 of 36, the new
# held-out logs 5 of 8 (the whole part 148 of 174). The tuned misses were fixed from the tuned logs
# alone (vLLM's nested process prefixes, a traceback cut below "hit an exception", Triton's FP8 refusal
# inside its CompilationError, an assert on the GPU's generation, pydantic's config refusal, NCCL's
# INFO lines, the Hub's gated-model text and another client's 403, SIGILL, a bold error line, an
# elided site-packages path); scored after, 150 of 174. A terminal's cut lines rejoined (tuned logs cut at
# 80 and 120 columns) brought it to 151. Of the 7 collected after that (6 tuned, 1 held out: one-line
# pastes, an RL launcher's -9, a multi-node NCCL watchdog), all 7 were classified right as first seen:
# 152 of 175. Of the 11 collected after those (10 tuned, 1 held out: Ascend NPU out-of-memory and HCCL
# lines, vLLM's negative KV cache memory, a kubelet's liveness kill, SGLang's cut "other ranks" text),
# the tuned part read 4 of 10 as first seen and was fixed from those logs alone; the held-out one was
# right as first seen: 153 of 176. Line numbers and flattened tracebacks read (from the tuned logs pasted
# those ways) left it at 153. Of the 27 collected after that (SGLang, xinference, gpustack, LMCache,
# KServe, SkyRL, slime threads; 18 tuned, 9 held out), the tuned part read 14 of 18 and the new held-out
# logs 8 of 9 as first seen; the tuned misses were fixed from those logs alone (a retyped sm75 refusal,
# aiter's unknown gfx target, Megatron's world-size check, KServe's "Failed to start model server"):
# 161 of 185. Rules read from library and tool sources after that (torch's device-count assert, the
# kubelet's back-off, pip's and docker's "ERROR: " lines, sgl-kernel's FA3 and DeepGEMM's Hopper-only
# refusals, PTX targets newer than ptxas) left it at 161. Of the 30 collected after those (vLLM, SGLang,
# ollama, ComfyUI, verl, torchrun and training projects' threads, chosen for the rarer classes; 24
# tuned, 6 held out), the tuned part read 23 of 24 and the new held-out logs 5 of 6 as first seen; the
# tuned miss was fixed from it (Go's bind error in another locale's words): 166 of 191. Of the 40 collected
# after that (SGLang, vLLM, LMDeploy, TGI, Dynamo, KServe, NIM, OpenRLHF, verl-based projects; 32 tuned, 8
# held out), the tuned part read 24 of 32 and the new held-out logs 6 of 8 as first seen; the tuned misses
# were fixed from those logs alone (a `python -m` entry module's top level is not an import, torch's older
# watchdog wording, a dropped EngineArgs keyword, a launcher's pydantic spec, the kubelet's eviction,
# another engine's "Unsupported ... model class", transformers' registry clash, a C++ engine's "runtime
# error: invalid argument", a hub client's fetch chain): 172 of 199, the same before and after. Of the 30
# collected after that (SGLang, vLLM, vllm-ascend, LMDeploy, Xinference, LocalAI, TGI, ktransformers, RL
# frameworks' threads, chosen for the rarer classes; 25 tuned, 5 held out), the tuned part read 23 of 25
# and the new held-out logs 4 of 5 as first seen; the tuned misses were fixed from those logs alone (a Go
# front end's gRPC call to a backend that died, the tail of transformers' unknown-model-type text): 176 of 204.
# Of the 23 collected after that (leads left by the batches before: vLLM, ms-swift, ktransformers, Ollama,
# LMDeploy, GPUStack, verl, FlashInfer threads; 19 tuned, 4 held out), the tuned part read 15 of 19 and the
# new held-out logs 3 of 4 as first seen; the tuned misses were fixed from those logs alone (vLLM's
# WorkerProc report, nvcc's "file(line): error:", Ollama's converter, Ray's C++ core crash printed after
# the driver's report): 179 of 208, the same before and after. Of the 39 collected after that (Ascend and ROCm
# launches, Windows and WSL users, cloud and cluster platforms; 33 tuned, 6 held out), the tuned part read 21
# of 33 and the new held-out logs 5 of 6 as first seen (184 of 214); the tuned misses were fixed from those
# logs alone (argparse's "--flag/-f", Triton-Ascend's MLIRCompilationError, Ascend's visible-device errors,
# HCCL's bound port under its communicator failure, CTranslate2's OOM, Kubernetes' VLLM_PORT, a child
# SIGKILLed in a CalledProcessError, Ollama's host-memory check, TEI's unsupported model, CloudWatch's
# timestamp): 185 of 214. Of the 9 collected after that (model makers' repositories, web pages; 8 tuned, 1 held
# out), the tuned part read 6 of 8 and the new held-out log 1 of 1 as first seen; the tuned misses were fixed
# from those logs alone (vLLM's Transformers fallback without the class, DeepGEMM missing): 186 of 215. Of the
# 13 collected after that (disaggregated and multi-node launches, quantized checkpoints, embedding servers; 10
# tuned, 3 held out), one tuned log was dropped because its text does not hold the cause its label gives (TEI
# 524: a missing tensor, labelled unsupported from the thread's title); the tuned part read 6 of 9 and the new
# held-out logs 2 of 3 as first seen; the tuned misses were fixed from those logs alone (a --quantization the
# checkpoint lacks, quantized shapes TP does not divide, SGLang's failed KV transfer): 188 of 218. Of the 63
# collected after that (SGLang 2026 threads, RL frameworks, serving operators, vLLM / Ascend / ROCm; 49 tuned,
# 14 held out), the tuned part read 37 of 49 and the new held-out logs 11 of 14 as first seen; one tuned label
# was changed on review (TRL's vllm_device ordinal the machine lacks: no-gpu-visible, as an invalid ordinal is);
# the tuned misses were fixed from those logs alone (a communicator's failure naming its CUDA cause below it,
# SGLang's "scheduler died during initialization (exit code: N)", an import error a handler turned into its
# own refusal, a segfault inside pynccl, an assert that torch sees a GPU): 199 of 232. Of the 51 collected after
# that (the rarer classes, leads of the batch before, Chinese and notebook pastes, multimodal and embedding
# servers; 44 tuned, 7 held out), the tuned part read 38 of 44 and the new held-out logs 7 of 7 as first seen; the
# tuned misses were fixed from those logs alone (the shell's "Quit (core dumped)" and SGLang's sigquit_handler
# as a child's report, a C++ engine's CHECK as a crash, vLLM's Transformers-incompatible class, a version list
# without "and", cudaGetDeviceCount failing with a code of no class of its own): 206 of 239. Of the 53 collected
# after that (SGLang's early releases, Jetson / DGX Spark, eval and fine-tuning tools, apps' model containers; 39
# tuned, 14 held out), one tuned log was dropped (heretic 13: a tool that warns it found no GPU and runs on the
# CPU, no failure in its log); the tuned part read 25 of 38 and the new held-out logs 13 of 14 as first seen; the
# tuned misses were fixed from those logs alone (ptxas without the GPU's target, xformers' kernel range, ggml's
# CUDA_CHECK, tokenizers' Py-wrapper names, TEI's download, a ValueError from an argument getter, an argument class
# refusing a keyword, a client's 5xx report, frames of one length not joined as a terminal's cut): 221 of 253.
# Of the 72 collected after that (forums, NVIDIA's TensorRT-LLM / Triton / NIM, Ray Serve and KubeRay, Chinese
# threads; 62 tuned, 10 held out), three tuned logs were dropped because the class their label gives is not in
# their text (a line cut before "out of memory", an NVML assert labelled from a moderator's reply, a SIGTERM
# labelled killed); the tuned part read 43 of 62 and the new held-out logs 7 of 10 as first seen; the tuned
# misses were fixed from those logs alone (TensorRT-LLM's paged-KV minimum, its CUDA check, its MPI world size and
# FP8 FMHA refusals, nvcc's and make's build failures, Triton's missing or unfilled backend, torch spawn's
# SIGKILL, vLLM's EngineDeadError, a Ray task's import, SIGFPE, an NGC fetch): 229 of 263 (the old held-out
# part 222 of 253). Of the 55 collected after that in three rounds (SGLang's issues, RL frameworks, neighbour
# stacks, pages, Ascend / ROCm / Gaudi; 43 tuned, 12 held out), one tuned log repeated a thread the earlier
# excerpts hold and one held-out page (an SEO rewrite citing no thread, over http) were dropped, and one
# tuned label moved from nccl to port-in-use (HCCL failing to listen on its port, its own text naming the
# port as taken); the rounds' tuned parts read 19 of 26, 8 of 10 and 4 of 7 and their held-out parts 3 of 5,
# 1 of 3 and 3 of 4 as first seen; the tuned misses were fixed from those logs alone (getopt's unrecognized
# option, HiRadixCache refusing the model's KV pool, assert_pkg_version, systemd's and the kernel's OOM-kill
# records, a bare NVML init failure in a container, "Unsupported model type:", any gloo TCP transport error,
# HCCL's op and socket errors, a platform plugin's "Failed to import X.", a flattened traceback's
# HTML-escaped quotes): 237 of 275 (the older held-out part still 229 of 263).
# A seventh round (81 logs by six collectors: 118 SGLang threads no earlier round held, RL frameworks, serving
# stacks and operators, pages; 67 tuned, 14 held out) read 54 of 67 and 11 of 14 as first seen. The tuned
# misses were fixed from those logs alone (NCCLCHECK's "NCCL WARN x.cc:N -> 5" trace, a gdb backtrace in
# ProcessGroupNCCL, a CUDA kernel's device-side assert, ROCm's memory access fault, gdb's "Program terminated
# with signal", a glog ERROR record that says something failed, custom all-reduce's CUDA check, "Rank N
# scheduler is dead. Exit code:", xoscar's "Remote server ... closed" without its class, FastAPI's 'requires
# "python-multipart" to be installed', a traceback cut inside assert_pkg_version, "Failed to find C compiler"
# cut short, GPUStack's "No GPU detectors available", "XError in <what>: ", a lower-case "error: " line, an
# elided "..." line or a crash line below a line at the terminal width, EINVAL's "Invalid argument [22]" not
# read as flags): 250 of 289 (the older 275 at 239). A blind second labelling of those 275 (two helpers, the
# logs without their source lines, shown nothing of the classifier) agreed with the first on 269.
# An eighth round (42 logs by four collectors, cut short when the session's search budget ran out: newer SGLang
# threads, neighbouring engines, hardware stacks, forums; 33 tuned, 9 held out) read 16 of 33 and 5 of 9 as
# first seen. The tuned misses were fixed from those logs alone (Triton's and XLA's out-of-memory texts, vLLM's
# free-memory refusal cut across lines, a config without architectures, torch.compile's and vLLM's too-old-GPU
# checks, flashinfer's "Unsupported architecture" and "Only SM 10.x" asserts, a missing config format, a missing
# compiler, Go's "flag provided but not defined", a package a quantization needs, "No module named" without its
# class, rocBLAS finding no device, Level Zero's IPC handle, ggml's "CUDA error:", a traceback through TVM's
# nvcc): 255 of 298 (the older 289 still at 250). The words an unmatched error is read by were then widened
# from the classes' definitions alone (RCCL, HCCL, gloo and a collective that failed; "requires a newer driver";
# "unknown model type"; a checkpoint's config or tokenizer file missing; "undefined symbol", "X is not
# installed", "please install X"; nvcc, ptxas, ninja failing): 256 of 298.
# A ninth round, with no search left: the full opening posts of 612 SGLang and vLLM issues that a public
# bug study keeps (github.com/yunwei37/vllm-exp, bug-study/analysis_llm/sample_results) and no earlier round
# holds, each with a traceback or an error, labelled blind by six helpers from the post's log alone: 528
# logs (422 tuned, 106 held out; one tuned a thread an earlier round holds, dropped), half of them runtime
# bugs (`unknown`). As first seen: 338 of 422 and 77 of 106. The tuned misses taught: a child's own error
# above the launcher's report (vLLM's logged ERROR traceback, SGLang's scheduler traceback, a crash) is the
# cause, and a pipe found closed with nothing else is the child's death; a crash inside the communicator
# beats the teardown's SIGKILL; the child's traceback printed just below the sigquit line; vLLM V0's dead
# engine texts; a warning the program went on after (vLLM's missing vllm._C) no longer beats a later
# exception; the NCCL watchdog surfacing a kernel's own fault is that fault; FastChat's three-field,
# pytest's "E   ", a "... " elision and vLLM's "(VllmWorker rank=N pid=M)" prefixes; Neuron's and a TPU's
# out-of-memory texts; pip's failed wheel builds; the Hub's offline and 4xx errors; accelerators Ray could
# not place; HIP's device-side assert; custom all-reduce's P2P test; the store's wait timeout. Two tuned
# labels moved to the corpus's conventions (noted in their source lines); 25 tuned logs stay misses
# (KNOWN_TUNED_MISSES; a cause line no longer joins c10's next record, which fixed two). All: 342 of 404
# (the older 298 at 257).
# A tenth round (three collectors, 130 look-ups each): SGLang threads of 2025-2026, projects that run SGLang
# (Ascend's sglang fork, GPUStack, LMCache, verl forks, Ray) and repositories that commit real logs (a TKE
# guide's FAQ, DGX Spark and RTX 3090 notes, a benchmark's server logs): 91 logs (71 tuned, 20 held out; four
# dropped: an excerpt whose last line came from the fix's PR, one whose run went on past the failure, one cut
# before its message, a content farm's rewrite of an issue; one relabelled no-kernel-image as the corpus reads
# Triton's fp8e4nv refusal). As first seen: 58 of 71 and 16 of 20 (19 of 20 after). The tuned misses taught: CANN's ERROR records, torch_npu's "[ERROR] ... (PID:"
# and an "[ASSERT]" line are failures; a sentence that quotes the exception it failed on; memfabric's
# level-first records; CANN's rtMalloc out of memory, its missing op binary, its device count failing, HCCL's
# communicator init; Ray's core worker failing tasks of a dead actor; tvm_ffi's ninja; transformers' config
# without a model_type; c10's "Exception raised from operator()"; vLLM's SIGTERM handler (a probe's stop, its
# own advice); a server_args text wrapped over lines, or joined without its space ("no_buffer.To use").
# All: 361 of 424 (the older 404 at 342).
# An eleventh round (three collectors, 120 look-ups each: SGLang threads for the classes earlier rounds found
# fewest of, vLLM's V1 start-up failures, deployments through Kubernetes, Docker and cloud platforms): 87 logs
# (69 tuned, 18 held out; a lone CancelledError dropped; a segfault inside all_reduce labelled nccl as the
# corpus reads a crash in the communicator). As first seen: 53 of 69 and 13 of 18. The tuned misses taught:
# faulthandler's current thread (below the others) crashing in a torch.distributed collective; SGLang's "No GPU
# memory values found."; Docker without the NVIDIA runtime; a `kernels` release transformers' hub_kernels
# cannot take; transformers' lazy import failing; a kernel for one GPU generation, CUDA_ERROR_INVALID_IMAGE and
# a path "not implemented for Blackwell"; DeepGEMM's missing header and Neuron's compiler; vLLM's "Failed core
# proc(s)", Ray's worker exit record, Vertex AI's model server exiting; absl's signal report; vLLM's token
# budget refusal; TOKENIZER_MAPPING without the config class. All: 376 of 442 (the older 424 at 363).
# A twelfth round (two collectors: SGLang's failures outside its own tracker, in forks, downstream projects and
# repositories that commit logs; other engines on the same stack: llama.cpp, TensorRT-LLM, TGI, MLC, OpenLLM,
# Xinference): 42 logs (37 tuned, 5 held out; three dropped: a Ray actor-table dump, a log transcribed by hand,
# one cut mid-line). As first seen: 30 of 37 and 2 of 5. The tuned misses taught: TensorRT-LLM's executor out of
# memory and its all-reduce plugin's MPI failure; the interpreter's "python: No module named X"; BentoML's store
# and llama.cpp's loader without the model; TVM's "file.cc:N: InternalError: Check failed"; an exception that is
# itself the report of the child's death (xoscar's ServerClosed twice) is not its cause. All: 378 of 447.
# A thirteenth round (two collectors, about 110 look-ups each: SGLang threads past those held, projects that run
# it, other engines and their deployments): 52 logs, one dropped (a niche engine's "[engine terminated]"), two
# labelled flags-refused as the corpus reads vLLM's bfloat16 refusal on a T4. Its split was first drawn at random
# by mistake, and rules were written from five logs the sha256 rule holds out (OpenRLHF 358, sglang 12076, WeClone
# 85, llamafile 96, TensorRT-LLM 7706) before that was seen: those five stay tuned, the rule's other seven are
# held out (7 of 7 as first seen), 44 tuned (31 as first seen). The tuned misses taught: the tokenizer manager's
# "SIGQUIT received ... one child failed"; Ray's actor that died in its creation task; a harness's crashed
# container; AReaL's "server launch failed"; llama.cpp's "error while handling argument", TGI's
# ArgumentValidation and ensure_divisibility's "N is not divisible by M" as refused flags; ggml's GGUF file that
# will not open; "couldn't bind to server socket"; TGI's prefill tokens that do not fit; TensorRT-LLM's unknown
# causal-LM architecture; Ray giving the driver node no GPU. All: 389 of 454 (the older 447 at 382).
# A fourteenth round (three collectors: SGLang threads for the scarcer classes, deployments and hardware stacks,
# logs repositories commit), cut short by threads the corpus already holds: 20 logs (2 held out by the sha256
# rule, 2 of 2 first seen; 18 tuned, 16 first seen). The tuned misses taught: oneCCL's CCL_ERROR records; vLLM's
# "Failed to infer device type" as a caller logs it. All: 391 of 456.
# A fifteenth round (two collectors: model makers' trackers, where users paste a failed SGLang or vLLM launch of
# their model; application, evaluation and training frameworks that start a server): 36 logs (6 held out by the
# sha256 rule, 6 of 6 first seen; 30 tuned, 27 first seen). The tuned misses taught: an error raised in the
# teardown (weakref's exit handler, a shutdown or __del__) below the launcher's report is not the child's own;
# click's "Got unexpected extra argument". One stays a miss (listed). All: 397 of 462.
# A sixteenth round (two collectors: SGLang threads in Chinese, PR descriptions and deep comments; the forks that
# run SGLang or vLLM on other accelerators: ROCm, Ascend, Intel XPU, Gaudi, Neuron, TPU, Jetson, Apple MLX): 22
# logs (3 held out by the sha256 rule, 2 of 3 first seen; 19 tuned, 10 first seen: the accelerator forks are
# where the catalog is thinnest). The tuned misses taught: an "only supported on SMxxx (compute capability x)"
# assert; CANN's op registry without an op for the SoC and a package built for another SoC; CANN's device count
# failing; a CANN kernel task's fault (a crash); Metal's out-of-memory command buffer; oneCCL's EXCEPTION;
# neuronx-cc's [NCC_...] records; vLLM 0.6's bare "Engine process failed to start". All: 399 of 465.
# A seventeenth round (one collector: SGLang and vLLM on ROCm and on Ascend): 17 logs (1 held out by the sha256
# rule, 0 of 1 first seen; 16 tuned, 11 first seen). The tuned misses taught: aiter's failed JIT module build,
# LLVM aborting a compile, ModelScope's missing revision, HCCL's task timeout on the device; a ROCm build's
# warnings above a --help stay a miss (listed). All: 399 of 466.
# An eighteenth round (one collector: serving on accelerators other than CUDA, and on Jetson, GB10 and sm_120):
# 19 logs (3 held out by the sha256 rule, 1 of 3 first seen; 16 tuned, 10 first seen). The tuned misses taught:
# Level Zero's out-of-resources, Gaudi's graph compile, vLLM's CUTLASS dispatch without the GPU's capability,
# torch_npu's SetDevice failing, a dtype a quantization method does not take, an exception raised by aiter's
# kernel generator. All: 400 of 469.
# A nineteenth round (four collectors, aimed at the classes the held-out part misses most: JIT builds and kernel
# images; NCCL, killed and child reports; architectures, model files and imports; GPUs, drivers and runtime bugs):
# 68 logs (14 held out by the sha256 rule, 10 of 14 first seen; 54 tuned, 43 first seen). The tuned misses
# taught: vLLM's "No compiled X for a compute capability less than", its FlashMLA module built without the arch,
# Triton's FP8 conversion below sm_90, SGLang's own "has no SGlang implementation" refusal, Xinference's engine
# import and download give-ups, a Hub URL inside a repr()'d exception, TGI's "Sharded X requires CUDA.", Open
# MPI's "exited on signal 9 (Killed)", CUDA peer access refused outside the custom all-reduce; LocalAI falling
# back to CPU stays a miss (listed). All: 410 of 483.
# Then, written against the tuned part alone (no tuned log changed): more general words for _WORDED (torch.distributed's
# c10d and ProcessGroup failing, a GPU generation a kernel was not built for, a repo id that is not one) and a last
# resort for a failure whose words name no class (triage.py _by_origin: where it was raised: a build step, the Hub
# client, torch.distributed, transformers' auto classes); the held-out part, scored after: 411.
# A twentieth round (four collectors: runtime bugs and clean start-ups; flags, memory and ports; child reports,
# NCCL and JIT builds; kernels, architectures and imports): 70 logs (13 held out by the sha256 rule, 13 of 13 first
# seen; 57 tuned, 52 first seen, the same with or without the last resort). The tuned misses taught: mlx-serve's
# insufficient memory, Ray's port allocation, SGLang's PD transfer refusing different TP sizes, GPUStack's
# "Inference server exited"; TGI's WARN of an optional import it goes on without stays a miss (listed). All: 424
# of 496.
# A twenty-first round (two collectors: SGLang and the projects that launch it, then vLLM, TensorRT-LLM, lmdeploy,
# TGI and llama.cpp of 2025-2026; nearly every SGLang thread found was already held): 53 logs (15 held out by the
# sha256 rule, 10 of 15 first seen; 38 tuned, 32 first seen). The tuned misses taught: a compiler's
# "file.cuh:124: error:" under aiter's JIT, the HIP runtime finding no code object for the gfx target,
# TensorRT-LLM's "only support Hopper", torch 2.7's compute-capability warning, LM Studio's load guardrail; one
# log labelled unknown when collected is relabelled flags-refused, as the corpus labels the same launch's
# ModelConfig refusal (vllm issue 26161). All: 437 of 511.
# Rounds twenty-two to twenty-four: 104 logs, 16 of 20 held out and 72 of 84 tuned first seen. All: 455 of 531.
# A twenty-fifth round (three collectors: SGLang's recent threads; other engines for the scarcer classes; RL and
# serving frameworks): 45 logs (9 held out by the sha256 rule, 7 of 9 first seen; 36 tuned, 29 first seen). The
# tuned misses taught: vLLM's executor quoting a worker's bare assert, tokenspeed's readiness give-up, Triton's
# "device kernel image is invalid" as a driver too old for its ptxas, flash-attention's "CUDA error (file:line)",
# LocalAI's and MLC's missing model files; one label stays a miss (listed). All: 463 of 540.
# A twenty-sixth round (two collectors, aimed at the classes whose held-out logs most often read unknown:
# architectures, kernel images and imports; child reports, NCCL and model files): 31 logs (11 held out, 8 of 11 first
# seen; 20 tuned, 13 first seen). The tuned misses taught: ggml's "has no device code compatible with CUDA arch",
# TEI's runtime/compile-time compute cap, "Unsupported compute capability: 12.0", TurboMind's missing decoding
# kernel, vLLM 0.6's "Engine loop has died", Triton server's unhealthy Python stub, ModelScope's 404. All: 471 of 551.
# A twenty-seventh round (two collectors: runtime failures, memory refusals, kills and clean start-ups; ports,
# drivers, flags and CUDA OOM): 27 logs (5 held out, 5 of 5 first seen; 22 tuned, 20 first seen). The tuned misses
# taught: Ollama's report of a runner that segfaulted is the crash, not a child report; Hydra's "Could not override"
# (verl). All: 476 of 556.
# A twenty-eighth round (one collector: forums, ROCm, Intel and Apple stacks, Kubernetes operators): 22 logs (5 held
# out, 4 of 5 first seen; 17 tuned, 12 first seen). The tuned misses taught: NVIDIA NIM's unknown profiles and its
# SIGTERM, Ollama's MLX runner without libmlxc, ggml's "ROCm error: invalid device function", SYCL's "No kernel
# named ... was found". All: 480 of 561.

TUNED_ALL = sorted((LOGS / "public").glob("*.txt")) + sorted((LOGS / "local").glob("*.txt"))
# The ninth round's tuned logs the classifier still reads otherwise, each with why: its class is argued
# either way, or its excerpt lacks what would decide it. They stay in the corpus (and in the score below)
# rather than be relabelled to what the classifier says; one fixed is taken off the list.
KNOWN_TUNED_MISSES = {
    "unknown.sglang-2090.txt": "sqlite's disk I/O error raised while a package imports: read as the import failing",
    "unknown.vllm-12189.txt": "CUDA re-initialised in a forked worker; the store timeout it leads to is read as the cause",
    "child-failed.vllm-20767.txt": "a CI summary of a forked test that failed, with nothing of the child's",
    "model-not-found.sglang-5035.txt": "a JSONDecodeError on the safetensors index: a broken download, the text does not say",
    "flags-refused.vllm-17327.txt": "a quantization block the TP split does not divide: an earlier log's label for the same "
                                    "kind of text is unknown (kenrollins nemotron-tp-tiling)",
    "nccl.sglang-1343.txt": "the P2P check's subprocess returned garbage (UnpicklingError)",
    "no-kernel-image.vllm-20712.txt": "Triton's MMA assert on sm_120 above a PassManager failure read as the JIT failing",
    "unknown.vllm-13676.txt": "a worker's own error above gloo's receive timeout, which is read as the cause",
    "unknown.vllm-2021.txt": "setup.py failing inside pip's build of vLLM, read as an import chain",
    "model-not-found.vllm-12311.txt": "Run:ai's streamer refusing the object store's file",
    "none.vllm-6473-b.txt": "a clean start-up whose only error-like line is vLLM's warning that vllm._C is missing",
    "unknown.sglang-3658.txt": "an illegal memory access; the busy-device error after it is read as the cause",
    "unknown.sglang-4478.txt": "vLLM's warning that vllm._version is missing above a notebook's ValueError",
    "unknown.vllm-10459.txt": "setup.py failing inside pip's build of vLLM, read as an import chain",
    "unsupported-architecture.vllm-14687.txt": "an AttributeError of a config class vLLM falls back for; the "
                                               "fallback note is a warning",
    "child-failed.vllm-11232.txt": "a ZMQError in the client where the engine never came up",
    "import-failed.sglang-3065.txt": "an undefined symbol in Triton's own library, read as a driver too old",
    "jit-build-failed.vllm-10478.txt": "oneDNN's JIT on the CPU failing to make a kernel",
    "jit-build-failed.vllm-6276.txt": "two workers racing on Triton's cache file",
    "killed.vllm-322.txt": "an unrelated ImportError in Ray's log thread above Ray's out-of-memory kill",
    # read as an unknown failure since a line that states a failure counts when nothing else explains the log
    "none.lmdeploy-4366.txt": "TurboMind's ERROR records of failed warm-ups the engine went on after; the excerpt "
                              "ends there, so nothing says it went on",
    "none.verl-5668.txt": "a rollout worker's ERROR record of a tool call it could not decode, between lines of its "
                          "going on: a request's failure, not the server's",
    # the seventeenth round
    "none.vllm-rocm-11.txt": "a ROCm build's warnings that vllm._C does not load (an undefined symbol) above the --help "
                             "it printed: read as the import failure the launch will meet",
    # the twentieth round
    "none.tgi-pr2702.txt": "TGI's WARN records of optional model imports (Flash Attention, Mamba) it starts without: "
                           "read as the import failure the launch will meet",
    # the nineteenth round
    "no-gpu-visible.localai-2394.txt": "LocalAI's entrypoint finding no nvidia-smi and going on on the CPU: a warning "
                                       "the server starts after, read as no failure",
    # the fifteenth round
    "model-not-found.vllm-8331.txt": "the Hub's 401 raised through hf_raise_for_status, cut before its URL: a bare "
                                     "requests HTTPError is not read as the Hub's",
    # the twenty-fifth round
    "killed.arcticinference-37.txt": "the shell's Killed after vLLM's fatal-signal report, labelled killed when "
                                     "collected; vLLM's client SIGKILLs its own process tree there "
                                     "(v1/engine/core_client.py), so it is read as the child report",
}
TUNED = [p for p in TUNED_ALL if p.name not in KNOWN_TUNED_MISSES]
HELDOUT = sorted((Path(__file__).parent / "data" / "failure-logs-heldout").glob("*.txt"))
HELDOUT_FLOOR = 0.85  # measured 480 of 561 (0.856; the nineteenth round's part, 10 of 14 first seen, had taken it to
# 0.849, the twentieth's, 13 of 13, back up; the twenty-first's 10 of 15; the twenty-second's 6 of 7; the twenty-third's
# 7 of 10; the twenty-fourth's 3 of 3; the twenty-fifth's 7 of 9, and its tuned part's rule for Triton's "device
# kernel image is invalid" took one older held-out log to right; the twenty-sixth's 8 of 11; the twenty-seventh's 5 of 5; the twenty-eighth's 4 of 5); the target is 0.95


def corpus_case(path: Path) -> tuple[str, list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    expect = next(ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("# expect:"))
    return expect, [ln for ln in lines if not ln.startswith("# ")]


@pytest.mark.parametrize("path", TUNED, ids=[p.name for p in TUNED])
def test_tuned_corpus_log_is_classified(path):
    expect, lines = corpus_case(path)
    assert diagnose_log(lines).failure_class == expect


def test_the_known_tuned_misses_are_still_missed_and_counted(capsys):
    """Each listed miss is in the corpus and still read otherwise (a fixed one leaves the list)."""
    paths = {p.name: p for p in TUNED_ALL}
    fixed = [name for name in KNOWN_TUNED_MISSES
             if diagnose_log(corpus_case(paths[name])[1]).failure_class == corpus_case(paths[name])[0]]
    with capsys.disabled():
        print(f"\ntuned corpus: {len(TUNED_ALL) - len(KNOWN_TUNED_MISSES)}/{len(TUNED_ALL)} classes right "
              f"({len(KNOWN_TUNED_MISSES)} listed misses)")
    assert fixed == []


# The ways a log reaches a user before it is pasted: through a log collector, a terminal, a web page.
# Each wraps every line of the excerpt (or, the fence, the excerpt); the class must not change.
PASTES = {
    "Markdown fence": lambda lines: ["```text", *lines, "```"],
    # a log held in one string: a JSON field (an API's error body, a k8s event), an exception's repr
    "a JSON string": lambda lines: [json.dumps({"error": "\n".join(lines)})],
    # a viewer's line numbers copied with the lines: `cat -n`, an editor's or a CI page's gutter
    "cat -n": lambda lines: [f"{i:6d}\t{ln}" for i, ln in enumerate(lines, 1)],
    "numbered gutter": lambda lines: [f"{i:>4} | {ln}" for i, ln in enumerate(lines, 1)],
}
LINE_PASTES = {
    "ray worker": lambda ln: f"(RayWorkerWrapper pid=12345, ip=10.0.0.2) {ln}",
    "kubectl logs --timestamps": lambda ln: f"2025-03-01T10:00:07.123456789Z {ln}",
    "docker compose": lambda ln: f"sglang-1  | {ln}",
    "torch rank": lambda ln: f"[rank0]: {ln}",
    "journalctl": lambda ln: f"Mar 01 10:00:07 gpu-node sglang[1234]: {ln}",
    "journalctl -o short-iso": lambda ln: f"2025-03-01T10:00:07+0000 gpu-node python3[1234]: {ln}",
    "Markdown quote": lambda ln: f"> {ln}",
    "indented code block": lambda ln: f"    {ln}",
    "colour": lambda ln: f"\x1b[36m{ln}\x1b[0m",
    "CRLF": lambda ln: f"{ln}\r",
    "HTML source": html.escape,
    # a page or a chat that turns spaces into no-break ones and leaves a zero-width space behind
    "rich-text copy": lambda ln: "\u200b" + ln.replace(" ", "\u00a0"),
    "srun --label": lambda ln: f"0: {ln}",
    # the file docker's json-file driver writes (/var/lib/docker/containers/ID/ID-json.log)
    "docker json-file": lambda ln: json.dumps({"log": ln + "\n", "stream": "stderr",
                                               "time": "2025-03-01T10:00:07.123456789Z"}),
}
PASTES |= {name: (lambda wrap: lambda lines: [wrap(ln) for ln in lines])(wrap) for name, wrap in LINE_PASTES.items()}


@pytest.mark.parametrize("paste", PASTES)
def test_every_tuned_log_keeps_its_class_however_it_was_pasted(paste):
    wrap = PASTES[paste]
    changed = []
    for path in TUNED:
        expect, lines = corpus_case(path)
        got = diagnose_log(wrap(lines)).failure_class
        if got != expect:
            changed.append((path.name, expect, got))
    assert not changed


def test_tuned_logs_of_two_lines_or_more_keep_their_class_through_stern():
    # stern (logs of many pods) puts "pod container " before every line; on one line alone that reads
    # as the line's own words, so only excerpts of two lines or more are held to it
    changed = []
    for path in TUNED:
        expect, lines = corpus_case(path)
        if sum(1 for ln in lines if ln.strip()) >= 2:
            got = diagnose_log([f"sglang-7d9f8c6b5d-x2kqz sglang {ln}" for ln in lines]).failure_class
            if got != expect:
                changed.append((path.name, expect, got))
    assert not changed


def _cut_at(width: int, lines: list[str]) -> list[str]:
    """What a terminal of that many columns that does not rejoin on copy (tmux, screen) pastes."""
    return [ln[i:i + width] for ln in lines for i in range(0, max(len(ln), 1), width)]


# A log cut at a terminal's width is rejoined where two or more of its lines were cut; one that reads as
# no failure, or as a failure no signature matches, is read again with every line at the longest
# length joined to the next (a one-line paste cut once). Logs that still change class, of 677: 2 at 100
# columns, 1 at 120, 160 and 200, none at 80 (168 at 80 and 65 at 120 of 671 with no rejoining; 22 at
# both when only two or more cuts were rejoined).
@pytest.mark.parametrize("width", [80, 100, 120, 160, 200])
def test_tuned_logs_cut_at_a_terminal_width_keep_their_class(width):
    changed = [p.name for p in TUNED if diagnose_log(_cut_at(width, corpus_case(p)[1])).failure_class
               != corpus_case(p)[0]]
    assert len(changed) <= 0.005 * len(TUNED), changed


def test_a_one_line_paste_cut_once_is_read_as_one_line():
    # ollama issue 2540 (tests/data/failure-logs/public/port-in-use.ollama-2540.txt), 133 columns,
    # in a terminal of 120: "permitted." lands on a line of its own
    line = ("Error: listen tcp 127.0.0.1:11434: bind: Only one usage of each socket address "
            "(protocol/network address/port) is normally permitted.")
    assert diagnose_log([line]).failure_class == "port-in-use"
    assert diagnose_log(_cut_at(120, [line])).failure_class == "port-in-use"
    # a healthy log's longest line joined to the next finds nothing: it stays a log with no failure
    ready = ["[2026-03-01 10:00:07] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
             "[2026-03-01 10:00:09] The server is fired up and ready to roll!"]
    assert diagnose_log(ready).failure_class == "none"


def test_a_log_cut_at_the_terminal_width_is_read_as_printed():
    error = ("[2026-03-01 10:00:07 TP0] RuntimeError: Not enough memory. Please try to increase "
             "--mem-fraction-static. Current value: mem_fraction_static=0.8")
    cut = _cut_at(70, ["[2026-03-01 10:00:01 TP0] Load weight begin. avail mem=44.26 GB, and some more "
                       "words here", error, "[2026-03-01 10:00:08] Received sigquit from a child process."])
    assert "0.8" in cut  # the figure the message ends with is on a line of its own
    diag = diagnose_log(["Traceback (most recent call last):", '  File "x.py", line 1, in <module>', *cut])
    assert diag.failure_class == "not-enough-memory"
    assert "mem_fraction_static=0.8" in diag.evidence[0]


def test_lines_printed_at_the_width_are_not_joined():
    # rich pads its console lines with spaces and closes its traceback boxes at the console's width;
    # a wrap at words leaves lines of every length short of the width: none of these is a cut, and
    # joining any would hide the line below it
    box = ["\u256d" + "\u2500" * 78 + "\u256e", "\u2502 /usr/lib/python3/x.py:12 in main" + " " * 45 + "\u2502",
           "\u2570" + "\u2500" * 78 + "\u256f", "Killed"]
    padded = ["INFO loading shards".ljust(80), "INFO shard 1 of 2 done".ljust(80), "Killed"]
    assert diagnose_log(box).failure_class == diagnose_log(padded).failure_class == "killed"
    words = ["ValueError: Unrecognized configuration class <class 'T5Config'> for this kind of",
             "AutoModel: AutoModelForCausalLM. Model type should be one of BartConfig, BertConfig,",
             "BioGptConfig, BlenderbotConfig, BlenderbotSmallConfig, BloomConfig, CamembertConfig,",
             "CTRLConfig, Data2VecTextConfig, ElectraConfig, ErnieConfig, GitConfig, GPT2Config.."]
    assert diagnose_log(words).evidence == (words[0],)
    # two lines of one length in a short excerpt, the second a traceback's exception: not a cut
    frame = '  File "/usr/lib/python3/dist-packages/sglang/srt/server_args.py", line 1, in __post_init__'
    error = "ValueError: --tp-size must divide the number of attention heads; got tp_size=3 and 32 heads"
    assert len(frame) == len(error)
    assert diagnose_log(["Traceback (most recent call last):", frame, error]).evidence == (error,)
    # frames that end in their function's name, in a paste that lost its indentation: whole, not cut (so the
    # refusal is read as raised in an argument getter, LlamaFactory issue 8173)
    frames = ['File "/srv/app/src/app/train/tuner.py", line 55, in _training_function',
              "model_args = get_train_args(args)",
              'File "/srv/app/src/app/hparams/parser.py", line 296, in get_train_args',
              'raise ValueError("vLLM is only for API, CLI and Web.")',
              "ValueError: vLLM is only for API, CLI and Web."]
    assert len(frames[0]) == len(frames[2]) == max(map(len, frames))
    assert diagnose_log(frames).failure_class == "flags-refused"


def test_heldout_corpus_score_is_reported_and_above_its_floor(capsys):
    results = [(p.name, *corpus_case(p)) for p in HELDOUT]
    misses = [(name, expect, diagnose_log(lines).failure_class) for name, expect, lines in results
              if diagnose_log(lines).failure_class != expect]
    score = 1 - len(misses) / len(results)
    with capsys.disabled():
        # the count only: naming the misses would show whoever tunes the classifier why held-out logs fail
        print(f"\nheld-out corpus: {len(results) - len(misses)}/{len(results)} classes right ({score:.0%})")
    assert len(results) >= 95 and score >= HELDOUT_FLOOR


def test_every_corpus_log_cites_its_source_and_every_class_is_covered():
    counts: dict[str, int] = {}
    for name, klass, *_ in REAL_LOGS:
        counts[klass] = counts.get(klass, 0) + 1
    for path in TUNED_ALL + HELDOUT:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        # a public thread or page (GitHub, a forum, a blog), or a run on this machine
        assert first.startswith(("# source: https://", "# source: local run on this machine")), path.name
        klass = corpus_case(path)[0]
        counts[klass] = counts.get(klass, 0) + 1
    assert len(TUNED_ALL) + len(HELDOUT) >= 472
    failing = [c for c in CLASSES if c not in ("none",)]
    assert all(counts.get(c, 0) >= 4 for c in failing), {c: counts.get(c, 0) for c in failing}


# ---- logs as users paste them: the same real excerpt, reshaped ----
def _ansi(lines):
    return ["\x1b[31m" + ln + "\x1b[0m" for ln in lines]


def _kubectl(lines):
    return ["[pod/sglang-7d9f/server] " + ln for ln in lines]


def _compose(lines):
    return ["sglang-1  | " + ln for ln in lines]


def _ray(lines):
    return ["(SGLangEngine pid=4242, ip=10.0.0.3) " + ln for ln in lines]


def _ranks_interleaved(lines):
    noise = [f"[2025-04-21 07:28:4{i % 10} TP1] Load weight begin. avail mem=78.84 GB" for i in range(len(lines))]
    return [x for pair in zip(lines, noise) for x in pair]


def _crlf(lines):
    return "\r\n".join(lines).splitlines(keepends=True)


def _markdown_quote(lines):
    # a reply quoting the log, GitHub's way: "> " before each line, blank quoted lines between
    return [q for ln in lines for q in ("> " + ln, "> ")]


SHAPES = {"ansi": _ansi, "kubectl": _kubectl, "compose": _compose, "ray": _ray,
          "ranks-interleaved": _ranks_interleaved, "crlf": _crlf, "markdown-quote": _markdown_quote}
RESHAPED = ["nccl.sglang-4289.txt", "cuda-graph-oom.sglang-5285.txt", "jit-ninja.transformerlab-api-381.txt",
            "flags-refused.sglang-12818.txt"]


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
@pytest.mark.parametrize("name", RESHAPED, ids=RESHAPED)
def test_a_reshaped_paste_is_classified_like_the_original(name, shape):
    original = diagnose_log(log_lines(name))
    reshaped = diagnose_log(SHAPES[shape](log_lines(name)))
    assert (reshaped.failure_class, reshaped.phase) == (original.failure_class, original.phase)


def test_a_traceback_without_its_header_is_read():
    lines = log_lines("nccl.sglang-4289.txt")
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("File "))
    assert diagnose_log(lines[start + 2:]).failure_class == "nccl"


EXCERPT_LINES = [
    ("exit-code-9", ["Exit code: -9"], "killed"),
    ("no-accelerator-0.4", ["RuntimeError: No accelerator (CUDA, XPU, HPU) is available."], "no-gpu-visible"),
    ("no-accelerator-0.5.9", ["RuntimeError: No accelerator (CUDA, XPU, HPU, NPU, MUSA) is available."], "no-gpu-visible"),
    ("no-accelerator-0.5.11", ["RuntimeError: No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) is available."], "no-gpu-visible"),
    ("falling-back-warning-is-no-failure", ["Warning: No accelerator (CUDA, XPU, HPU) is available. - Falling back to CPU"], "none"),
    ("old-libcuda", ["ImportError: /usr/lib/python3/sgl_kernel/common_ops.abi3.so: undefined symbol: cuTensorMapEncodeTiled"], "driver-too-old"),
    ("npu-oom", ["torch.OutOfMemoryError: NPU out of memory. Tried to allocate 72.00 MiB"], "cuda-oom"),
    ("c10d-store-cannot-listen",
     ["torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address."],
     "port-in-use"),
    ("ray-memory-monitor", ["ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."],
     "killed"),
    ("transformers-2-config-wording", ["OSError: Can't load config for 'model/final_model'. Make sure that:"],
     "model-not-found"),
    ("cut-traceback-through-ninja",
     ["Traceback (most recent call last):",
      '  File "/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2506, in _run_ninja_build',
      "    subprocess.run("], "jit-build-failed"),
    ("rust-panic-is-a-failure", ["thread 'main' panicked at router/src/main.rs:216:18:", "called `Result::unwrap()` on an "
                                 "`Err` value: Os { code: 2, kind: NotFound }"], "unknown"),
    ("missing-shared-library", ["libnvrtc.so.12: cannot open shared object file: No such file or directory"],
     "import-failed"),
    ("no-libcuda-is-no-gpu", ["OSError: libcuda.so.1: cannot open shared object file: No such file or directory"],
     "no-gpu-visible"),
    ("no-libnvidia-ml-is-no-gpu", ["OSError: libnvidia-ml.so.1: cannot open shared object file: No such file or directory"],
     "no-gpu-visible"),
    ("ray-memory-pressure", ["(raylet) node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), "
                             "0 Workers crashed due to other reasons at node"], "killed"),
    ("deepspeed-minus-nine", ["[launch.py:319:sigkill_handler] ... exits with return code = -9"], "killed"),
    ("nccl-result-string", ["UnknownError: ncclCommInitRank failed: unhandled cuda error"], "nccl"),
    ("docker-without-nvidia-toolkit",
     ['docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].'],
     "no-gpu-visible"),
    ("vllm-v0-cache-blocks", ["ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"],
     "not-enough-memory"),
    ("turbomind-oom", ["RuntimeError: [TM][ERROR] CUDA runtime error: out of memory memory_utils.cu:32"], "cuda-oom"),
    ("unmatched-error-line", ["ValueError: something SGLang refused"], "unknown"),
    ("uncaught-cpp-exception-is-a-failure", ["terminate called after throwing an instance of 'std::bad_alloc'",
                                             "  what():  std::bad_alloc"], "unknown"),
    ("warning-level-traceback-is-no-failure",
     ["W1112 00:26:33.338000 39792 torch/_inductor/codecache.py:604] [0/0] Can't pickle",
      "W1112 00:26:33.338000 39792 torch/_inductor/codecache.py:604] [0/0] Traceback (most recent call last):"], "none"),
    ("error-level-traceback-is-a-failure",
     ["E1112 00:26:33.338000 39792 torch/x.py:604] [0/0] Traceback (most recent call last):",
      'E1112 00:26:33.338000 39792 torch/x.py:604] [0/0]   File "/x.py", line 1, in f'], "unknown"),
    # texts from the engines' and libraries' sources, not (yet) seen in a collected log
    ("vllm-free-memory-below-utilization",
     ["ValueError: Free memory on device (13.91/79.33 GiB) on startup is less than desired GPU memory utilization "
      "(0.95, 75.36 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."],
     "not-enough-memory"),
    ("xpu-oom", ["torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB"], "cuda-oom"),
    ("mps-oom", ["RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.00 GB)"],
     "cuda-oom"),
    ("flash-attn-too-old-gpu", ["RuntimeError: FlashAttention only supports Ampere GPUs or newer."], "no-kernel-image"),
    ("vllm-failed-to-infer-device", ["RuntimeError: Failed to infer device type"], "no-gpu-visible"),
    ("hub-gated-repo", ["OSError: You are trying to access a gated repo."], "model-not-found"),
    # the driver's library missing outside a CPU launch: the NVIDIA runtime did not mount it
    ("importerror-libcuda-is-no-gpu",
     ["ImportError: libcuda.so.1: cannot open shared object file: No such file or directory"], "no-gpu-visible"),
    ("go-exec-sigkill", ["Error: llama runner process has terminated: signal: killed"], "killed"),
    ("torchrun-signal-record", ["  traceback : Signal 11 (SIGSEGV) received by PID 3304209"], "child-failed"),
    ("optional-library-missing",
     ["ImportError: NVIDIA Model Optimizer (modelopt) library not found. Please install it to use ModelOpt quantization."],
     "import-failed"),
    # no message known, but the error's own words name the class (knowledge/triage.py _WORDED): inferred
    ("worded-device-oom", ["RuntimeError: the device ran out of memory while building the sampler"], "cuda-oom"),
    ("worded-pool-slots-are-not-gpu-oom",
     ["RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for `--max-running-requests`."],
     "unknown"),
    ("worded-nccl", ["RuntimeError: failed to set up the NCCL communicator for group tp"], "nccl"),
    ("worded-architecture", ["ValueError: model type foo_bar is not supported yet by this engine"],
     "unsupported-architecture"),
    ("worded-no-device", ["RuntimeError: no GPUs were found on this node"], "no-gpu-visible"),
    ("worded-flag", ["SystemExit: unknown argument --foo for the serve command"], "flags-refused"),
    ("worded-bind", ["RuntimeError: failed to bind to address 0.0.0.0:9000 for the metrics exporter"], "port-in-use"),
    ("worded-capability", ["ValueError: this kernel's min capability: 80, current capability: 75"], "no-kernel-image"),
    ("worded-no-runtime", ["RuntimeError: No HIP or CUDA runtime found for the worker"], "no-gpu-visible"),
    ("vllm-engine-core-died", ["ERROR 01-29 08:37:48 [core_client.py:564] Engine core proc EngineCore_DP1 died "
                               "unexpectedly, shutting down client."], "child-failed"),
    # torch/cuda/__init__.py _lazy_init's assert when the runtime's device count and torch's disagree
    ("torch-device-count-assert", ['RuntimeError: torch._C._cuda_getDeviceCount() > 0 INTERNAL ASSERT FAILED at '
                                   '"/pytorch/aten/src/ATen/cuda/CUDAContext.cpp":50'], "no-gpu-visible"),
    # the kubelet's event for a container that keeps exiting: a parent's report, no cause of its own
    ("kubelet-back-off", ["  Warning  BackOff  3m (x20 over 8m)  kubelet  Back-off restarting failed container "
                          "sglang in pod sglang-0_default(1234)"], "child-failed"),
    # a tool's own failure line, no catalog class: a failure, not a healthy log
    ("pip-no-distribution", ["ERROR: No matching distribution found for flashinfer-python==0.9.9"], "unknown"),
    ("pip-resolver-note-is-no-failure",
     ["ERROR: pip's dependency resolver does not currently take into account all the packages that are installed."],
     "none"),
    ("docker-build-failed", ['ERROR: failed to solve: process "/bin/sh -c pip install sglang" did not complete '
                             "successfully: exit code: 1"], "unknown"),
    ("sgl-kernel-fa3-below-hopper",
     ["NotImplementedError: flash_attn at sgl-kernel is only supported on sm90 and above"], "no-kernel-image"),
    ("deepgemm-hopper-only", ["RuntimeError: DeepGEMM only supports Hopper (SM90) architectures, but current device "
                              "compute capability is 86."], "no-kernel-image"),
    ("worded-kernel-limit", ["RuntimeError: the fused MoE kernel requires SM90"], "no-kernel-image"),
    ("image-pull-denied-is-no-model", ["docker: Error response from daemon: pull access denied for lmsysorg/sglang, "
                                       "repository does not exist or may require 'docker login'."], "unknown"),
    ("go-bind-refused-low-port-is-no-port-in-use", ["Error: listen tcp 0.0.0.0:80: bind: permission denied"], "unknown"),
    ("ptx-target-newer-than-ptxas", ["RuntimeError: PTX .version 8.7 does not support .target sm_120a"],
     "jit-build-failed"),
    ("triton-cuda-invalid-argument-is-no-flag", ["RuntimeError: Triton Error [CUDA]: invalid argument"], "unknown"),
    ("container-toolkit-mount-error", ["nvidia-container-cli: mount error: file creation failed: "
                                       "/var/lib/docker/overlay2/x/merged/usr/bin/nvidia-smi: file exists: unknown"],
     "unknown"),
    # entrypoints/engine.py _scheduler_died_error (0.5.11 on): its exit code decides, not its hint about -9
    ("scheduler-died-sigkill", ["RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit "
                                "code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i "
                                "oom` to check."], "killed"),
    ("scheduler-died-other", ["RuntimeError: Rank 1 scheduler died during initialization (exit code: 1). If exit "
                              "code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i "
                              "oom` to check."], "child-failed"),
    # NCCL's unhandled cuda error names the CUDA call's own failure below it: that is the cause
    ("nccl-below-cuda-oom", ["torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                             "cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
                             "ncclUnhandledCudaError: Call to CUDA function failed.", "Last error:",
                             "Cuda failure 'out of memory'"], "cuda-oom"),
    # a client's report of the server's 5xx is a failure; the server's error after it names the class
    ("client-server-error", ["Server error: 500 - [address=0.0.0.0:1, pid=2] cannot assign 'x' as child module 'model'"],
     "unknown"),
    ("ggml-cuda-check-oom", ["CUDA error 2 at /src/ggml-cuda.cu:9132: out of memory"], "cuda-oom"),
    ("shell-sigfpe", ["Floating point exception (core dumped)"], "unknown"),
    ("metadata-not-installed", ["importlib.metadata.PackageNotFoundError: No package metadata was found for vllm"],
     "import-failed"),
    # an engine's argument class built from a dict of options, on a keyword this version lacks
    ("args-class-keyword", ["    engine = LLMEngine(EngineArgs(**engine_args))",
                            "TypeError: __init__() got an unexpected keyword argument 'limit_mm_per_prompt'"],
     "flags-refused"),
    # the shell's report of SIGQUIT, which SGLang's launcher sends its own tree when a child failed
    ("shell-quit", ["Quit (core dumped)"], "child-failed"),
    # a C++ engine's CHECK naming its source line is a crash; the kernel module's own in dmesg is not
    ("glog-check-failed", ["F1204 10:00:00.000000 12 engine.cc:88] Check failed: n > 0 (0 vs. 0)"], "unknown"),
    ("nvrm-check-failed-is-a-report", ["NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY]"],
     "none"),
    # an assert that torch sees a GPU, whatever its message
    ("assert-cuda-available", ['  File "/app/megatron/initialize.py", line 37, in initialize_megatron',
                               "    assert torch.cuda.is_available(), 'Megatron requires CUDA.'",
                               "AssertionError: Megatron requires CUDA."], "no-gpu-visible"),
    # the last resort: a line that states a failure in words no pattern knows, read from its words
    ("stated-error-record", ["[2025-09-22 20:20:40] Prefill batch. #new-seq: 1",
                             "2025-09-22 20:20:41 [error] engine.cc:12 queue drained with 3 requests lost"], "unknown"),
    ("stated-failure-words-name-class", ["E: NCCL communicator setup failed on rank 3"], "nccl"),
    ("stated-failure-warning-is-none", ["warning: failed to mlock 139264000-byte buffer: Cannot allocate memory"],
     "none"),
    ("stated-failure-info-is-none", ["INFO 06-19 01:00:39 [utils.py:12] Failed to read the GPU's clock; using 0"],
     "none"),
]


@pytest.mark.parametrize("lines, klass", [c[1:] for c in EXCERPT_LINES], ids=[c[0] for c in EXCERPT_LINES])
def test_one_line_alone_states_its_failure(lines, klass):
    assert diagnose_log(lines).failure_class == klass


def test_import_failed_names_the_packages_and_points_at_the_release_lock():
    _, lines = corpus_case(LOGS / "local" / "import-failed.local-kernels-0.17.2.txt")
    d = diagnose_log(lines)
    assert d.failure_class == "import-failed" and d.cause == "ValueError: Either a revision or a version must be specified."
    assert d.packages == ("transformers 5.6.0", "kernels 0.17.2")
    assert any("imgbuild lock VERSION" in a for a in d.advice)


def test_a_cpu_launch_is_told_it_needs_the_cpu_build_of_sgl_kernel_not_gpus():
    _, lines = corpus_case(LOGS / "local" / "import-failed.local-sglang-0.5.11-device-cpu.txt")
    d = diagnose_log(lines)
    assert d.failure_class == "import-failed" and "sgl-kernel" in d.packages
    assert len(d.advice) == 1 and "CPU build of sgl-kernel" in d.advice[0]


def test_a_package_imported_from_outside_the_environment_is_named_with_its_directory():
    """Real SGLang 0.5.9 with transformers 4.44.2 first on PYTHONPATH (tests/data/failure-logs/local):
    the stray copy is named and the advice says to take it off the path; the SGLang image's own
    editable install (/sgl-workspace/sglang/python/sglang/srt/configs, sglang issue 4159) is not."""
    _, lines = corpus_case(LOGS / "local" / "import-failed.local-sglang-0.5.9-transformers-4.44.txt")
    d = diagnose_log(lines)
    assert d.failure_class == "import-failed" and "transformers" in d.packages
    assert "transformers is imported from /tmp/real/shadow, outside" in d.summary
    assert "It needs tokenizers>=0.19,<0.20 and found tokenizers 0.22.2." in d.summary
    assert d.advice[0].startswith("transformers (from /tmp/real/shadow) shadows the environment's own copy")
    _, lines = corpus_case(LOGS / "public" / "import-failed.sglang-4159.txt")
    d = diagnose_log(lines)
    assert d.failure_class == "import-failed" and "outside" not in d.summary and "shadows" not in d.advice[0]


def test_torchvision_built_for_another_torch_is_named_as_the_package_that_failed():
    """Real SGLang 0.5.11 with torch 2.9.1 in place of its locked 2.11 (tests/data/failure-logs/local): the
    locked torchvision's operators are not registered in that torch; the failure is torchvision's, and the
    advice is to install the release's torch and torchvision together, not to look at torch alone."""
    _, lines = corpus_case(LOGS / "local" / "import-failed.local-sglang-0.5.11-torch-2.9.1.txt")
    d = diagnose_log(lines)
    assert (d.failure_class, d.cause) == ("import-failed", "RuntimeError: operator torchvision::nms does not exist")
    assert "the import failed in torchvision" in d.summary
    assert d.advice[0].startswith("torchvision was built for another torch than the one installed")


def test_a_check_sglang_0_5_23_asserts_in_arg_groups_is_flags_refused():
    """0.5.19+ moved server_args' checks into arg_groups/; an assert there (real 0.5.23, --device cpu
    on a Gated DeltaNet hybrid) refuses the launch like one in server_args.py, and the generator keeps
    asserts' texts so the line alone is read too."""
    _, lines = corpus_case(LOGS / "local" / "flags-refused.local-sglang-0.5.23-device-cpu.txt")
    d = diagnose_log(lines)
    assert (d.failure_class, d.cause) == (
        "flags-refused", "AssertionError: extra_buffer requires platform support for Mamba cache state snapshots.")
    assert diagnose_log([d.cause]).failure_class == "flags-refused"


def test_diagnose_json_lists_the_packages_of_an_import_failure():
    result = CliRunner().invoke(cli, ["diagnose", "--json", str(LOGS / "local" / "import-failed.local-kernels-0.17.2.txt")])
    assert result.exit_code == 1
    assert json.loads(result.output)["packages"] == ["transformers 5.6.0", "kernels 0.17.2"]


# ---- SGLang's own start-up texts (imgbuild/data/sglang_messages.json, scripts/gen_matrix/messages.py) ----
MESSAGES = json.loads((Path(__file__).parents[1] / "imgbuild" / "data" / "sglang_messages.json").read_text())


def as_logged(message: dict) -> str:
    """The message as the log shows it: the raised class, holes filled with a number."""
    kind = message["kind"]
    exc = kind.split()[-1] if kind.startswith("raise") else "AssertionError" if kind == "assert" else "RuntimeError"
    return f"{exc}: {message['text'].replace('{...}', '1')}"


def is_refusal(message: dict) -> bool:
    """A check that raises (`raise X(...)` or `assert cond, "..."`), not a logged error."""
    return message["kind"].startswith("raise") or message["kind"] == "assert"


# (step, a fragment every wording of it has, the class)
OWN_TEXTS = [
    ("device", "No accelerator (", "no-gpu-visible"),
    ("memory-pools", "Not enough memory", "not-enough-memory"),
    ("distributed", "NCCL error", "nccl"),
    ("distributed", "Failed to load NCCL library", "nccl"),
    ("ports", "Could not bind port", "port-in-use"),
    ("ports", "is not available in", "port-in-use"),
    ("memory-pools", "Not enough GPU memory for hybrid", "not-enough-memory"),
    ("memory-pools", "state cache is too small to serve any requests", "not-enough-memory"),
    ("memory-pools", "leaves no room for the full KV pool", "not-enough-memory"),
    ("memory-pools", "cannot hold even one request", "not-enough-memory"),
    ("model-config", "are not supported for now", "unsupported-architecture"),
    ("model-config", "failed to be inspected", "unsupported-architecture"),
    ("model-config", "Please upgrade transformers", "unsupported-architecture"),
    ("model-loading", "Unknown gguf model_type", "unsupported-architecture"),
    ("model-loading", "SGLang only supports sm75", "no-kernel-image"),
    ("device", "No CUDA devices found via torch.cuda", "no-gpu-visible"),
    ("device", "NPU device is not available or visible", "no-gpu-visible"),
    ("device", "-smi not found", "no-gpu-visible"),
    ("device", "mthreads-gmi not found", "no-gpu-visible"),
    ("device", "torch.xpu is not available", "no-gpu-visible"),
    ("device", "torch.mps is not available", "no-gpu-visible"),
    ("model-loading", "No model weights found in", "model-not-found"),
    ("model-loading", "Cannot find any model weights with", "model-not-found"),
    ("model-config", "Can't find config file in", "model-not-found"),
    ("model-loading", "Cannot find adapter config file in", "model-not-found"),
    ("model-loading", "Unknown load_format", "flags-refused"),
    ("model-loading", "Invalid attention backend", "flags-refused"),
    ("model-loading", "Unsupported kv_cache_dtype", "flags-refused"),
    ("model-loading", "must be divisible by ep_size", "flags-refused"),
    ("model-loading", "must be divisible by moe_ep_size", "flags-refused"),
    ("model-loading", "must be divisible by moe_tp_size", "flags-refused"),
    ("model-loading", "backend can only be used with", "flags-refused"),
    ("model-loading", "Dual chunk attention is enabled", "flags-refused"),
    ("model-config", "Unknown quantization method", "flags-refused"),
    ("model-config", "does not match the quantization method specified", "flags-refused"),
    ("distributed", "is not equal to tensor_model_parallel_size", "flags-refused"),
    ("distributed", "must be divisible by decode_context_parallel_size", "flags-refused"),
    ("ports", "Port out of range", "flags-refused"),
    ("ports", "has invalid port number", "flags-refused"),
    ("ports", "Missing port in address", "flags-refused"),
    ("ports", "Bare IPv6 address without brackets", "flags-refused"),
    ("ports", "Missing closing bracket in IPv6 address", "flags-refused"),
    ("ports", "Expected ':port' after closing bracket", "flags-refused"),
    ("ports", "Invalid IPv6 address inside brackets", "flags-refused"),
    ("ports", "Empty host in address", "flags-refused"),
    ("ports", "Invalid port number: ", "flags-refused"),
    ("memory-pools", "Not enough host memory available", "not-enough-memory"),
    ("model-loading", "The memory capacity is unbalanced", "not-enough-memory"),
    ("model-loading", "library not found. Please install it", "import-failed"),
    ("model-loading", "other ranks that didn't finish loading", "child-failed"),
    ("model-loading", "is not supported for the current GPU. Minimum capability", "no-kernel-image"),
    ("device", "No GPU memory values found", "no-gpu-visible"),
    ("server-args", "Port is already in use. dist_init_port=", "port-in-use"),
]


@pytest.mark.parametrize("step, fragment, klass", OWN_TEXTS, ids=[f"{s}:{f}" for s, f, _ in OWN_TEXTS])
def test_every_release_wording_of_an_sglang_text_is_classified(step, fragment, klass):
    """Each mapped text, as raised and inside a traceback raised from its own file, in every wording."""
    found = [m for m in MESSAGES["messages"] if m["step"] == step and fragment in m["text"]]
    assert found, "the generator found the text in the wheels"
    for message in found:
        assert diagnose_log([as_logged(message)]).failure_class == klass, (message["first"], message["text"])
        frame = f'  File "/usr/local/lib/python3.12/dist-packages/{message["file"]}", line 1, in f'
        traceback = ["Traceback (most recent call last):", frame, as_logged(message)]
        assert diagnose_log(traceback).failure_class == klass, (message["first"], message["text"])


def test_no_accelerator_has_a_wording_per_release_range_up_to_the_newest():
    wordings = {m["text"]: (m["first"], m["last"]) for m in MESSAGES["messages"] if "No accelerator (" in m["text"]}
    newest = max(Version(last) for _, last in wordings.values())
    assert len(wordings) >= 5 and newest == max(Version(v) for v in MESSAGES["releases"])


def test_a_server_args_refusal_is_flags_refused_in_every_release(capsys):
    """Each check server_args.py raises, in a traceback raised from server_args.py, is the
    flags being refused (or a more specific class)."""
    refused = [m for m in MESSAGES["messages"] if m["step"] == "server-args" and is_refusal(m)]
    frame = '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 1, in __post_init__'
    classes = [diagnose_log(["Traceback (most recent call last):", frame, as_logged(m)]).failure_class for m in refused]
    with capsys.disabled():
        known = [m for m in MESSAGES["messages"] if diagnose_log([as_logged(m)]).failure_class not in ("unknown", "none")]
        print(f"\nsglang start-up texts: {len(MESSAGES['messages'])} from {len(MESSAGES['releases'])} releases; "
              f"{len(known)} classified from the line alone; {len(refused)} server_args refusals")
    assert len(refused) > 100 and all(c not in ("unknown", "none") for c in classes)


def test_a_server_args_refusal_pasted_alone_is_flags_refused():
    """The same checks as a user pastes them: the exception line alone, or a traceback cut below
    server_args.py's frame. Only texts whose fixed words are too few to be told from others
    ("Invalid {...}: {...}") are left to the words' inference."""
    refused = [m for m in MESSAGES["messages"] if m["step"] == "server-args" and is_refusal(m)]
    distinct = [m for m in refused if sum(len(p.strip()) for p in m["text"].split("{...}")) >= 24
                and len(m["text"].split("{...}")[0].strip()) >= 8]
    cut = '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/http_server.py", line 1, in launch_server'
    unread = [m["text"] for m in distinct
              if diagnose_log([as_logged(m)]).failure_class in ("unknown", "none")
              or diagnose_log(["Traceback (most recent call last):", cut, as_logged(m)]).failure_class in ("unknown", "none")]
    assert len(distinct) > 200 and unread == []
    d = diagnose_log(["ValueError: --ssl-certfile requires --ssl-keyfile to be specified as well."])
    assert d.failure_class == "flags-refused" and d.cause.startswith("ValueError: --ssl-certfile")


def test_a_check_past_server_args_that_names_the_flag_it_refuses_is_flags_refused():
    """A pool's or a loader's ValueError / NotImplementedError that names a flag (--x) or an SGLANG_X=
    variable refuses the configuration asked for; a more specific class (not-enough-memory names
    --mem-fraction-static) still wins. Left out: texts whose fixed words start after a hole."""
    naming = [m for m in MESSAGES["messages"] if m["step"] != "server-args"
              and m["kind"] in ("raise ValueError", "raise NotImplementedError", "assert")
              and re.search(r"(?:^|[\s(`'])--[a-z][a-z0-9-]+|\bSGLANG_[A-Z0-9_]+=", m["text"])
              and len(m["text"].split("{...}")[0].strip()) >= 8]
    classes = {m["text"]: diagnose_log([as_logged(m)]).failure_class for m in naming}
    assert len(classes) >= 15
    assert {t: c for t, c in classes.items() if c not in ("flags-refused", "not-enough-memory")} == {}


def test_a_class_read_from_the_errors_words_is_marked_inferred_with_that_class_advice():
    d = diagnose_log(["RuntimeError: failed to set up the NCCL communicator for group tp"])
    assert (d.failure_class, d.confidence) == ("nccl", "inferred")
    assert d.summary.startswith("Probably: ") and any("NCCL_P2P_DISABLE" in a for a in d.advice)
    assert diagnose_log(["RuntimeError: NCCL error: unhandled system error"]).confidence == "matched"



@pytest.mark.parametrize("line, klass", [
    ("RuntimeError: Could not import the fused MoE kernels from vendor_ext", "import-failed"),
    ("RuntimeError: Failed to compile the paged attention kernel for sm_90a", "jit-build-failed"),
    ("ValueError: The KV cache is too small to hold a single request of 32768 tokens", "not-enough-memory"),
    # torch.distributed's store, a GPU generation a kernel was not built for, a repo id that is not one
    ("RuntimeError: [c10d] The client socket has failed to connect to the store, connection refused", "nccl"),
    ("RuntimeError: this flash kernel was not compiled for compute capability 12.0", "no-kernel-image"),
    ("ValueError: gfx1100 is not supported by the fused MoE kernels", "no-kernel-image"),
    ("OSError: org/missing-model is not a valid model identifier listed on the model hub", "model-not-found"),
])
def test_words_of_an_unmatched_error_name_import_build_and_pool_failures(line, klass):
    # wordings no signature holds: the class comes from the words, marked inferred
    d = diagnose_log([line])
    assert (d.failure_class, d.confidence) == (klass, "inferred")


def _raised_in(path: str, exception: str) -> list[str]:
    return ["Traceback (most recent call last):",
            '  File "/usr/lib/python3.12/site-packages/sglang/srt/model_loader/loader.py", line 210, in load_model',
            "    self._prepare_weights(model_config.model_path)",
            f'  File "/usr/lib/python3.12/site-packages/{path}", line 88, in inner', "    raise exc", exception]


@pytest.mark.parametrize("path, exception, klass", [
    # where it was raised names the kind when no signature and no word does (triage.py _by_origin)
    ("huggingface_hub/file_download.py", "OSError: the request for the snapshot came back empty", "model-not-found"),
    ("torch/distributed/distributed_c10d.py", "RuntimeError: rank 3 reported a mismatch in the shapes", "nccl"),
    ("torch/utils/cpp_extension.py", "RuntimeError: the extension's sources were left half-written", "jit-build-failed"),
    ("transformers/models/auto/configuration_auto.py", "ValueError: the class map returned nothing for this checkpoint",
     "unsupported-architecture"),
    # ... but not a call one package's version lacks (vllm issue 3796: SafeTensorsInfo's keyword), nor Triton's
    # runtime, through which a compiled kernel's fault is raised too (sglang issue 3662)
    ("huggingface_hub/hf_api.py", "TypeError: SafeTensorsInfo.__init__() got an unexpected keyword argument 'sharded'",
     "unknown"),
    ("triton/backends/nvidia/driver.py", "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
     "unknown"),
])
def test_an_unmatched_error_takes_the_class_of_where_it_was_raised(path, exception, klass):
    d = diagnose_log(_raised_in(path, exception))
    assert d.failure_class == klass
    assert klass == "unknown" or (d.confidence == "inferred" and d.cause == exception and d.advice)


def test_the_servers_own_requests_refused_by_a_proxy_name_no_proxy():
    # sglang issue 9155 (tests/data/failure-logs/public/unknown.sglang-9155.txt): urllib3 logs the
    # absolute URL of a proxied request; the proxy answered the server's own /get_model_info with 403
    lines = ['[2025-08-13 11:01:03] http://172.16.37.200:3138 "GET http://0.0.0.0:25600/get_model_info HTTP/1.1" 403 3582']
    d = diagnose_log(lines)
    assert d.failure_class == "unknown" and "no_proxy" in d.advice[0] and d.line_number == 1
    # the same request answered 200 by the proxy is no failure
    assert diagnose_log([lines[0].replace(" 403 ", " 200 ")]).failure_class == "none"


def test_a_sigkill_under_a_launchers_child_report_is_killed_and_a_libcuda_import_in_a_cpu_launch_is_not():
    record = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
              "Root Cause (first observed failure):", "  exitcode  : -9 (pid: 3309)"]
    assert diagnose_log(record).failure_class == "killed"
    assert diagnose_log(record[:2]).failure_class == "child-failed"
    cpu = ["python -m sglang.launch_server --model-path m --device cpu",
           "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory"]
    assert diagnose_log(cpu).failure_class == "import-failed"
    assert diagnose_log(cpu[1:]).failure_class == "no-gpu-visible"


def test_a_bind_to_an_address_the_machine_lacks_says_so_not_that_the_port_is_taken():
    # EADDRNOTAVAIL (FastChat issue 1714: localhost resolved to ::1 on a host without IPv6)
    d = diagnose_log(["ERROR:    [Errno 99] error while attempting to bind on address ('::1', 21001, 0, 0): "
                      "cannot assign requested address"])
    assert d.failure_class == "port-in-use" and "not one of this machine's" in (d.summary or "")
    assert any("--host 0.0.0.0" in a for a in d.advice)


@pytest.mark.parametrize("lines, klass", [
    # vLLM's FlexibleArgumentParser.parse_args refusing --model for `vllm serve` (vLLM PR 17944)
    (["Traceback (most recent call last):", '  File "/x/vllm/utils.py", line 1391, in parse_args',
      "    raise ValueError(", "ValueError: With `vllm serve`, you should provide the model as a positional argument"],
     "flags-refused"),
    (["AttributeError: module 'cutlass.cute.nvgpu' has no attribute 'OperandMajorMode'"], "import-failed"),
    (["python: /project/lib/Analysis/Allocation.cpp:40: std::pair<unsigned, unsigned> mlir::triton::getCvtOrder("
      "mlir::Attribute, mlir::Attribute): Assertion `!(srcMmaLayout && dstMmaLayout)' failed."], "jit-build-failed"),
    (["python3: ../nptl/pthread_mutex_lock.c:81: __pthread_mutex_lock: Assertion `mutex->__data.__owner == 0' failed."],
     "unknown"),
])
def test_parser_frames_version_mismatches_and_c_asserts(lines, klass):
    assert diagnose_log(lines).failure_class == klass


# The CUDA runtime's own error texts (cudaGetErrorString) and names (cudaGetErrorName / the driver API's
# cuGetErrorName), as torch, Triton and C++ engines pass them on: a class for each code whose cause is
# one thing, whatever the project that hit it. Codes with several causes ("initialization error",
# "device kernel image is invalid", "a PTX JIT compilation failed") are left to the words around them.
CUDA_RUNTIME_TEXTS = [
    ("RuntimeError: CUDA error: no CUDA-capable device is detected", "no-gpu-visible"),  # 100
    ("cudaErrorNoDevice", "no-gpu-visible"),
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "no-gpu-visible"),  # 46
    ("RuntimeError: CUDA error: CUDA driver is a stub library", "no-gpu-visible"),  # 34
    ("RuntimeError: CUDA error: invalid device ordinal", "no-gpu-visible"),  # 101
    ("RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env "
     "variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.", "no-gpu-visible"),
    ("RuntimeError: HIP error: no ROCm-capable device is detected", "no-gpu-visible"),
    ("AssertionError: Torch not compiled with CUDA enabled", "no-gpu-visible"),
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 803: system has unsupported display driver / "
     "cuda driver combination", "driver-too-old"),  # 803
    ("failed call to cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda "
     "driver combination", "driver-too-old"),
    ("CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "driver-too-old"),  # 804
    ("RuntimeError: CUDA error: invalid device function", "no-kernel-image"),  # 98
    ("RuntimeError: HIP error: invalid device function", "no-kernel-image"),
    ("rocBLAS error: hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", "no-kernel-image"),
    ("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for "
     "GPU arch : gfx1036", "no-kernel-image"),
    # NCCL's checks.h reports its own failed CUDA call ("Cuda failure %d '%s'")
    ("gpu-node:1234:1290 [0] include/alloc.h:103 NCCL WARN Cuda failure 2 'out of memory'", "cuda-oom"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasGemmEx(...)`", "no-kernel-image"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "cuda-oom"),
    ("triton.runtime.errors.OutOfResources: CUDA_ERROR_OUT_OF_MEMORY", "cuda-oom"),
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:3571",
     "nccl"),
    ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.", "nccl"),
    ("triton.compiler.errors.CompilationError: at 12:4:", "jit-build-failed"),
    ("RuntimeError: PassManager::run failed", "jit-build-failed"),
    ("/usr/bin/ld: cannot find -lcuda: No such file or directory", "jit-build-failed"),
    ("RuntimeError: Failed to find C compiler. Please specify via CC environment variable.", "jit-build-failed"),
    ("Process finished with exit code 137 (interrupted by signal 9: SIGKILL)", "killed"),
    # SIGBUS as bash reports it (a container's /dev/shm too small, most often): a crash, no class of its own
    ("./serve.sh: line 12:  4242 Bus error               (core dumped) python3 -m sglang.launch_server --tp 2",
     "unknown"),
]


@pytest.mark.parametrize("line, klass", CUDA_RUNTIME_TEXTS, ids=[t[0][:60] for t in CUDA_RUNTIME_TEXTS])
def test_the_cuda_runtimes_own_error_texts_name_their_class(line, klass):
    assert diagnose_log([line]).failure_class == klass


def test_a_driver_mismatch_says_reboot_or_drop_cuda_compat_not_upgrade():
    d = diagnose_log(["RuntimeError: system has unsupported display driver / cuda driver combination"])
    assert d.failure_class == "driver-too-old" and "kernel module" in (d.summary or "")
    assert any("cuda-compat" in a for a in d.advice) and any("reboot" in a for a in d.advice)


# Texts the libraries under a serving stack raise with one cause, read from their source: NVML
# (nvidia-ml-py's pynvml.py), huggingface_hub/errors.py, torch's DataLoader and c10d, setuptools'
# build_ext, vLLM's and SGLang's launchers.
LIBRARY_TEXTS = [
    ("RuntimeError: Failed to load the model config. If the model is a custom model not yet available in the "
     "HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using the "
     "`--trust-remote-code` flag in the CLI.", "flags-refused"),
    ("ValueError: User-specified max_model_len (262144) is greater than the derived max_model_len "
     "(max_position_embeddings=40960 or model_max_length=None in model's config.json).", "flags-refused"),
    # a refusal of vLLM's config (imgbuild/data/vllm_config_refusals.json) pasted to its first sentence
    ("ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768).", "flags-refused"),
    ("torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && "
     "device < num_gpus INTERNAL ASSERT FAILED at \"../aten/src/ATen/cuda/CUDAContext.cpp\":50", "no-gpu-visible"),
    ("RuntimeError: Cannot find a working triton installation. Either the package is not installed or it is too "
     "old.", "import-failed"),
    ("ERROR 07-10 12:00:00 [core.py:586] EngineCore failed to start.", "child-failed"),
    ("requests.exceptions.SSLError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with "
     "url: /api/models/Qwen/Qwen3-8B (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] "
     "certificate verify failed: unable to get local issuer certificate (_ssl.c:1007)')))", "model-not-found"),
    ("RuntimeError: Failed to initialize NVML: Driver/library version mismatch", "driver-too-old"),
    ("pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.", "driver-too-old"),
    ("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded", "no-gpu-visible"),
    ("pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found", "no-gpu-visible"),
    ("huggingface_hub.errors.EntryNotFoundError: 404 Client Error. (Request ID: Root=1-6) Entry Not Found for url: "
     "https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json.", "model-not-found"),
    ("huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. Revision Not Found for url: "
     "https://huggingface.co/api/models/Qwen/Qwen3-8B/revision/v2.", "model-not-found"),
    ("ValueError: Invalid repository ID or local directory specified: '/models/qwen'.", "model-not-found"),
    ("RuntimeError: Engine process failed to start. See stack trace for the root cause.", "child-failed"),
    ("[2025-06-30 06:18:36] Rank 0 scheduler is dead. Please check if there are relevant logs.", "child-failed"),
    ("OSError: /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister",
     "import-failed"),
    ("RuntimeError: DataLoader worker (pid 1234) is killed by signal: Killed.", "killed"),
    ("torch.distributed.DistNetworkError: The client socket has failed to connect to [node1]:29500 (errno: 110 - "
     "Connection timed out).", "nccl"),
    ("ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. "
     "Current capability: 86.", "no-kernel-image"),
    ("error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1", "jit-build-failed"),
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.", "jit-build-failed"),
    ("RuntimeError: The detected CUDA version (12.1) mismatches the version that was used to compile PyTorch (11.8). "
     "Please make sure to use the same CUDA versions.", "jit-build-failed"),
    ("OSError: Error no file named pytorch_model.bin, model.safetensors, tf_model.h5, model.ckpt.index or "
     "flax_model.msgpack found in directory /models/x.", "model-not-found"),
    ('FileNotFoundError: No such file or directory: "/models/qwen/model-00001-of-00004.safetensors"', "model-not-found"),
    ("Failed to initialize NVML: Unknown Error", "no-gpu-visible"),
    # safetensors' header errors (an LFS pointer, a cut download) and tokenizers older than tokenizer.json
    ("safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge", "model-not-found"),
    ("safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer", "model-not-found"),
    ("Exception: data did not match any variant of untagged enum ModelWrapper at line 757443 column 3", "import-failed"),
    # Slurm 22.05's slurmstepd and srun (strings of Debian's packages), 23.02's wording, systemd
    ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=4242.0. Some of your processes may have been killed "
     "by the cgroup out-of-memory handler.", "killed"),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the step tasks have been OOM Killed.",
     "killed"),
    ("srun: error: gpu-node-01: task 0: Out Of Memory", "killed"),
    ("slurmstepd: error: *** JOB 4242 ON gpu-node-01 CANCELLED AT 2025-01-01T00:10:00 DUE TO TIME LIMIT ***", "killed"),
    ("sglang.service: Main process exited, code=killed, status=9/KILL", "killed"),
    ("Process exited with code -9", "killed"),
    # huggingface_hub's gated-repo text, and another Hub client's 403 on a file's URL (the hf-hub crate)
    ("Access to model meta-llama/Meta-Llama-3-8B-Instruct is restricted. You must have access to it and be "
     "authenticated to access it. Please log in.", "model-not-found"),
    ("RequestError(Status(403, Response[status: 403, status_text: Forbidden, url: "
     "https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.1/resolve/main/tokenizer.json]))", "model-not-found"),
    # Triton's FP8 (e4m3) on a GPU below sm89
    ("AssertionError: fp8e4nv data type is not supported on CUDA arch < 89", "no-kernel-image"),
    ("triton.compiler.errors.CompilationError: at 1:0:\ndef fused_moe_kernel(\n^\nValueError(\"type fp8e4nv not "
     "supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\")", "no-kernel-image"),
    # pydantic's refusal by a vLLM config class (0.10+), and the check's own text naming another class
    ("pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig\n  Value error, "
     "max_num_batched_tokens (8192) is smaller than max_model_len (128000).", "flags-refused"),
    # SIGILL (a build for CPU instructions this CPU lacks) is a crash with no class of its own
    ("/scripts/docker-entrypoint.sh: line 69:   134 Illegal instruction     \"${LAUNCHER[@]}\"", "unknown"),
    ("Illegal instruction (core dumped)", "unknown"),
    # an error line set in bold in a post
    ("**AttributeError: 'Glm4vMoeForConditionalGeneration' object has no attribute 'capture_aux_hidden_states'**",
     "unknown"),
    # a bare AssertionError whose failing line asserts the GPU's generation
    ('File ".../sglang/srt/layers/quantization/fp8.py", line 788, in __init__\n    assert is_sm100_supported() or '
     'is_sm90_supported()\nAssertionError', "no-kernel-image"),
    # NCCL's INFO lines (a plugin it did not find) are not the failure; its WARN of a CUDA failure names it
    ("NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object "
     "file: No such file or directory", "none"),
    # a traceback cut short under vLLM's three process prefixes and its logger's, below a worker's report
    ("(APIServer pid=1) (EngineCore_DP6 pid=2) (Worker_DP6_EP6 pid=3) ERROR 10-30 17:32:00 "
     "[v1/executor/multiproc_executor.py:671] WorkerProc hit an exception.\n(APIServer pid=1) (EngineCore_DP6 pid=2) "
     "(Worker_DP6_EP6 pid=3) ERROR 10-30 17:32:00 [v1/executor/multiproc_executor.py:671] Traceback (most recent "
     "call last):\n(APIServer pid=1) (EngineCore_DP6 pid=2) (Worker_DP6_EP6 pid=3) ERROR 10-30 17:32:00 "
     "[v1/executor/multiproc_executor.py:671]   File \"/opt/vllm/lib64/python3.12/site-packages/flashinfer/jit/"
     "cpp_ext.py\", line 258, in run_ninja", "jit-build-failed"),
    # NCCL's init.cc, torch's ROCm build and serialization.py, nvidia-smi, torchvision's extension.py
    ("misc/init.cc:943 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000", "nccl"),
    ("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000", "nccl"),
    ("RuntimeError: No HIP GPUs are available", "no-gpu-visible"),
    ("RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
     "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu').", "no-gpu-visible"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
     "driver is installed and running.", "no-gpu-visible"),
    ("RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. PyTorch "
     "has CUDA Version=12.1 and torchvision has CUDA Version=11.8.", "import-failed"),
    ("RuntimeError: operator torchvision::nms does not exist", "import-failed"),
    ("RuntimeError: Check failed: (lib_handle_ != nullptr) is false: Failed to load dynamic shared library "
     "/usr/lib/python3.12/site-packages/deep_gemm/_C.so libnvrtc.so.13: cannot open shared object file", "import-failed"),
    ("docker: Error response from daemon: unknown or invalid runtime name: nvidia.", "no-gpu-visible"),
    ("nvidia-container-cli: device error: 2: unknown device: unknown", "no-gpu-visible"),
    ("Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all", "no-gpu-visible"),
    ("Warning  FailedScheduling  12s  default-scheduler  0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
     "no-gpu-visible"),
    ("(autoscaler +1m) Warning: The following resource request cannot be scheduled right now: {'GPU': 1.0, 'CPU': 1.0}.",
     "no-gpu-visible"),
    ("ValueError: The repository for THUDM/chatglm3-6b contains custom code which must be executed to correctly load "
     "the model. You can inspect the repository content at https://hf.co/THUDM/chatglm3-6b.", "flags-refused"),
    ("ValueError: Loading /models/Qwen-7B-Chat requires you to execute the configuration file in that repo on your "
     "local machine. Make sure you have read the code there to avoid malicious use, then set the option "
     "`trust_remote_code=True` to remove this error.", "flags-refused"),
]


def test_a_checkpoint_with_its_own_code_is_told_to_trust_it():
    d = diagnose_log(["ValueError: The repository for THUDM/chatglm3-6b contains custom code which must be executed "
                      "to correctly load the model."])
    assert d.failure_class == "flags-refused" and any("--trust-remote-code" in a for a in d.advice)


def test_a_scheduling_warning_does_not_outrank_the_error_that_follows():
    lines = ["(autoscaler +1m) Warning: The following resource request cannot be scheduled right now: {'GPU': 1.0}.",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]
    assert diagnose_log(lines).failure_class == "cuda-oom"


@pytest.mark.parametrize("line, klass", LIBRARY_TEXTS, ids=[t[0][:60] for t in LIBRARY_TEXTS])
def test_the_stacks_libraries_own_texts_name_their_class(line, klass):
    assert diagnose_log(line.split("\n")).failure_class == klass


def test_cudas_own_invalid_argument_is_not_read_as_refused_flags():
    # cudaErrorInvalidValue inside the program (a torch_memory_saver double free, miles PR 3192) is a
    # failure with no known class, not the command line
    d = diagnose_log(["[torch_memory_saver.cpp] CUresult error: 1 (invalid argument) file=csrc/core.cpp func=free"])
    assert d.failure_class == "unknown"
    assert diagnose_log(["RuntimeError: CUDA error: invalid argument"]).failure_class == "unknown"
    assert diagnose_log(["RuntimeError: invalid argument --max-tokens for this command"]).failure_class == "flags-refused"



VLLM_REFUSALS = json.loads((Path(__file__).parents[1] / "imgbuild" / "data" / "vllm_config_refusals.json").read_text())


def test_a_vllm_config_refusal_pasted_alone_is_flags_refused_with_vllms_advice():
    """vLLM's config checks (scripts/gen_matrix/vllm_messages.py, from its sdists), as pasted: the exception
    line alone. Each is refused flags, or a more specific class the catalog knows ("Failed to infer device
    type" is no GPU; a quantization needing a newer GPU is no kernel)."""
    kinds = ("raise ValueError", "raise NotImplementedError", "raise ArgumentTypeError")
    refused = [m for m in VLLM_REFUSALS["messages"] if m["kind"] in kinds
               and sum(len(p.strip()) for p in m["text"].split("{...}")) >= 24 and len(m["text"].split("{...}")[0].strip()) >= 8]
    classes = {m["text"]: diagnose_log([as_logged(m)]).failure_class for m in refused}
    assert len(refused) > 200 and not [t for t, c in classes.items() if c in ("unknown", "none")]
    d = diagnose_log(["ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768). This effectively "
                      "limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. "
                      "Please increase max_num_batched_tokens or decrease max_model_len."])
    assert d.failure_class == "flags-refused" and d.summary.startswith("vLLM's configuration checks")
    # vLLM's own bugs and device probes are not the flags
    assert diagnose_log(["AssertionError: vLLM tried to hash some configs that may have Python objects ids in them. "
                         "This is a bug, please file an issue. Text being hashed: x"]).failure_class == "unknown"


def test_a_missing_optional_module_explains_a_failure_only_when_a_loader_says_it_failed_to_import():
    # TGI's loader (text-generation-inference issue 663) against a plain note that a fallback is used
    lines = ["WARN text_generation_launcher: Could not import Flash Attention enabled models: No module named 'vllm_cache_ops'",
             "NotImplementedError: Sharded Llama requires Flash Attention enabled models."]
    assert diagnose_log(lines).failure_class == "import-failed"
    assert diagnose_log(["WARNING: No module named 'flash_attn'; using the triton backend"]).failure_class == "none"


# A traceback pasted with its newlines lost (a web form, a chat): one line, its records joined by spaces.
# Of the 684 tuned logs so flattened, 34 change class: 16 are logs read line by line (NCCL's INFO/WARN
# records, a lone "Killed"), the rest a Rust CLI's usage text, compiler output and the like.
@pytest.mark.parametrize("name", ["cuda-oom.sglang-5576.txt", "unknown.sglang-6888.txt",
                                  "unsupported-architecture.jetmoe-4.txt", "import-failed.sglang-9173.txt"])
def test_a_traceback_pasted_on_one_line_keeps_its_class(name):
    expect, lines = corpus_case(LOGS / "public" / name)
    flattened = " ".join(ln.strip() for ln in lines if ln.strip())
    found = diagnose_log([flattened])
    assert found.failure_class == expect
    assert diagnose_log(lines).cause.split()[0] in found.cause
