"""Failure triage for SGLang server logs: a catalog of signatures and a classifier.

Pure data layer: no docker, httpx, pynvml or click; no I/O. ``diagnose_log`` takes
the log's lines and returns a ``Diagnosis``; ``LogWatcher`` does the same while a
log streams in, and says at the first fatal line that the launch has failed, so
``certify`` does not wait for its readiness deadline. ``read_figures`` pulls the
memory figures SGLang prints while it starts (weights, KV tokens, state pool).

How a diagnosis is made:
1. When the log has "Received sigquit from a child process" (the parent's line in
   ``entrypoints/engine.py`` after a scheduler died), the root cause is the first
   traceback above it (``managers/scheduler.py`` logs "Scheduler hit an exception:
   <traceback>" and then signals the parent). Its exception line is classified;
   ``via`` is "child-failed". If that exception matches no signature the class is
   "unknown" (the root error is in the log, in no known class) and ``cause`` is the
   exception line; "child-failed" is the class only when the log holds no error of the
   child's own (its traceback cut off or not captured).
2. Otherwise the first traceback whose exception matches a signature, else the
   first line anywhere that matches one.
3. A log with a failure marker (a traceback, an exception line, the sigquit line)
   that matches nothing is "unknown"; a log with none is "none" (no failure seen).

Linear in the log: a line is read further only when it holds a keyword that some regex here
needs (``_is_hot``: the keys come from each regex's literal text), and no regex backtracks
over a long line (a catalog regex's ``A.*B`` is searched as A, then B after it; every
quantifier that could rescan a line from each of its positions is bounded or anchored).

Log lines quoted below are from the SGLang 0.5.11 wheel (paths inside ``sglang/srt``)
and from public issue threads (cited in tests/data/failure-logs/).
"""

from __future__ import annotations

import html
import json
import os
import re
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable

# Class names; the CLI and the certificate use these strings.
NONE = "none"
UNKNOWN = "unknown"
NOT_ENOUGH_MEMORY = "not-enough-memory"
CUDA_OOM = "cuda-oom"
CHILD_FAILED = "child-failed"
UNSUPPORTED_ARCHITECTURE = "unsupported-architecture"
DRIVER_TOO_OLD = "driver-too-old"
NO_KERNEL_IMAGE = "no-kernel-image"
NCCL = "nccl"
PORT_IN_USE = "port-in-use"
MODEL_NOT_FOUND = "model-not-found"
JIT_BUILD_FAILED = "jit-build-failed"
FLAGS_REFUSED = "flags-refused"
NO_GPU_VISIBLE = "no-gpu-visible"
IMPORT_FAILED = "import-failed"
KILLED = "killed"

CLASSES = (
    NOT_ENOUGH_MEMORY,
    CUDA_OOM,
    CHILD_FAILED,
    UNSUPPORTED_ARCHITECTURE,
    DRIVER_TOO_OLD,
    NO_KERNEL_IMAGE,
    NCCL,
    PORT_IN_USE,
    MODEL_NOT_FOUND,
    JIT_BUILD_FAILED,
    FLAGS_REFUSED,
    NO_GPU_VISIBLE,
    IMPORT_FAILED,
    KILLED,
    UNKNOWN,
    NONE,
)

# cuda-oom phases
PHASE_LOAD = "load"
PHASE_CAPTURE = "cuda-graph-capture"
PHASE_RUNTIME = "runtime"

PLAN_ADVICE = (
    "Run `imgbuild plan` with the same model, GPUs and flags: it sizes the pools by "
    "SGLang's own accounting and lists the fixes that fit (a larger --mem-fraction-static, "
    "a shorter --context-length, more GPUs through --tp-size)."
)


# Words a line must contain (casefolded) for any regex of this module to match it. Each regex's
# literal text (see _required_literals) contains one of them; a regex whose literal contains none
# brings its own literal instead (_keys_of). Few, and rare in a healthy log: diagnose tests every
# line for them and looks further only at the lines that have one.
_KEYWORDS = (
    "error", "exception", "exit", "interrupt", "fail", "traceback", "file", "memory", "nccl",
    "killed", "driver", "symbol", "architecture", "available", "ninja", "nvcc", "repo", "device",
    "capture", "load weight", "kv cache", "profiled", "compatib", "watchdog", "errno", "in use",
    "addr", "bind port", "identifier", "path_or", "configuration", "huggingface", "ptxas",
    "context_length", "common_ops", "shared object", "sigquit", "ready to roll", "amx", "variant",
    "must be divisible", "unknown", "backend", "model weights", "quantization method", "pool",
    "state cache", "sm75", "port out", "port number", "mthreads", "tensor_model_parallel", "transformers",
)


def _fold(text: str) -> str:
    """The text as a keyword test sees it: casefolded, and where re.IGNORECASE takes a non-ASCII
    letter for an ASCII one (ı and İ for i; K and ſ casefold to k and s), that letter."""
    folded = text.casefold()
    return folded if folded.isascii() else folded.replace("ı", "i").replace("\u0307", "")


def _group_end(pattern: str, i: int) -> int:
    """The index after the group or character class that starts at pattern[i]."""
    closing, depth = ("]", 0) if pattern[i] == "[" else (")", 1)
    j = i + 1
    if closing == "]":
        j += 1 if pattern.startswith("^", j) else 0
        j += 1 if pattern.startswith("]", j) else 0  # a ']' first in a class is literal
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j += 2
            continue
        if closing == "]" and c == "]":
            return j + 1
        if closing == ")":
            if c == "[":
                j = _group_end(pattern, j)
                continue
            depth += {"(": 1, ")": -1}.get(c, 0)
            if depth == 0:
                return j + 1
        j += 1
    raise ValueError(f"triage pattern {pattern!r}: unbalanced at {i}")


def _split_top(pattern: str, sep: str) -> list[str]:
    """pattern cut at each `sep` ('|' or '.*', with a lazy '.*?' the same) outside groups and classes."""
    parts, start, i = [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
        elif c in "[(":
            i = _group_end(pattern, i)
        elif pattern.startswith(sep, i):
            parts.append(pattern[start:i])
            i += len(sep) + (1 if sep == ".*" and pattern.startswith("?", i + len(sep)) else 0)
            start = i
        else:
            i += 1
    parts.append(pattern[start:])
    return parts


def _required_literals(alternative: str) -> list[str]:
    """The runs of literal text (casefolded) that every match of one alternative of a regex
    contains: what is outside groups and classes, and not made optional by ? * or {0,."""
    runs, run, i = [], "", 0
    while i < len(alternative):
        c = alternative[i]
        atom: str | None = None
        if c == "\\":
            atom = None if alternative[i + 1].isalnum() else alternative[i + 1]
            i += 2
        elif c in "[(":
            i = _group_end(alternative, i)
        elif c in ".^$":
            i += 1
        else:
            atom, i = c, i + 1
        quantifier = alternative[i] if i < len(alternative) else ""
        if quantifier in ("?", "*") or alternative.startswith("{0", i):
            atom = None  # optional: not required
        if atom is None:
            runs.append(run)
            run = ""
        else:
            run += atom
            if quantifier in ("+", "{"):
                runs.append(run)  # repeated: what follows is not adjacent to it
                run = ""
        if quantifier in ("?", "*", "+"):
            i += 2 if alternative.startswith("?", i + 1) else 1
        elif quantifier == "{":
            i = alternative.index("}", i) + 1
            i += 1 if alternative.startswith("?", i) else 0
    runs.append(run)
    return [_fold(r) for r in runs if r]


def _keys_of(pattern: str) -> tuple[str, ...]:
    """One keyword per top-level alternative of pattern: a keyword inside one of its required
    literals, or its longest literal itself. A match of the pattern contains one of them."""
    keys = []
    for alternative in _split_top(pattern, "|"):
        literals = _required_literals(alternative)
        if not literals:
            raise ValueError(f"triage pattern {pattern!r}: an alternative has no literal text to pre-filter on")
        keys.append(next((k for k in _KEYWORDS for lit in literals if k in lit), max(literals, key=len)))
    return tuple(dict.fromkeys(keys))


class _Rx:
    """One catalog regex (case-insensitive), made cheap on any line: it is tried only on a line
    holding the longest literal of one of its alternatives, and a top-level `.*` gap is searched
    part after part (the part before, then the part after anywhere later), so the same lines
    match as with `A.*B` but without a backtracking scan from every A. ``keys`` are what the
    pre-filter looks for."""

    __slots__ = ("source", "keys", "literals", "parts")

    def __init__(self, source: str) -> None:
        self.source = source
        self.keys = _keys_of(source)
        self.literals = tuple(max(_required_literals(alt), key=len) for alt in _split_top(source, "|"))
        pieces = [source] if len(_split_top(source, "|")) > 1 else _split_top(source, ".*")
        self.parts = tuple(re.compile(p, re.IGNORECASE) for p in pieces)

    def search(self, text: str, folded: str | None = None) -> bool:
        folded = _fold(text) if folded is None else folded
        if not any(lit in folded for lit in self.literals):
            return False
        pos = 0
        for part in self.parts:
            found = part.search(text, pos)
            if found is None:
                return False
            pos = found.end()
        return True


@dataclass(frozen=True)
class Signature:
    """One known failure: what to look for, what it means, and what to do."""

    failure_class: str
    patterns: tuple[_Rx, ...]
    summary: str
    advice: tuple[str, ...]
    fatal: bool = True  # when the line appears, the launch will not recover
    source: str = ""  # the SGLang file (or thread) the line comes from

    def matches(self, line: str, folded: str | None = None) -> bool:
        folded = _fold(line) if folded is None else folded
        return any(p.search(line, folded) for p in self.patterns)


def _re(*patterns: str) -> tuple[_Rx, ...]:
    return tuple(_Rx(p) for p in patterns)


# Order matters where one line could match two signatures: the first wins.
CATALOG: tuple[Signature, ...] = (
    Signature(
        NOT_ENOUGH_MEMORY,
        _re(
            # Ollama's scheduler (llm/server.go) before it loads: the model's estimate against free host memory
            r"model requires more system memory \([\d.]+ [KMGT]i?B\) than is available",
            # model_executor/pool_configurator.py (0.5.9-0.5.11)
            r"Not enough memory\. Please try to increase --mem-fraction-static",
            # 0.5.2x wording
            r"Loaded weights leave no GPU memory for the KV cache",
            # model_runner_kv_cache_mixin.py: the state pool of a hybrid (Mamba/linear-attention) model
            r"Not enough GPU memory for hybrid \(mamba/linear-attention\) state cache",
            r"state cache is too small to serve any requests",
            # pool_configurator.py: the sliding-window pool's share leaves the full pool nothing
            r"pool cap \(\d+ tokens, [\d.]+ Gi?B\) leaves no room for the full KV pool",
            r"SWA pool \(\d+ tokens\) cannot hold even one request",
            # engines that assert it before sizing their paged KV pool ("Not enough memory for KV cache,
            # try reducing --num-pages": FreeToken-Web issue 2)
            r"Not enough memory for KV cache",
            # LM Studio's load guardrail (lmstudio-bug-tracker issue 1038)
            r"\bModel loading was (?:stopped|aborted) due to insufficient system resources",
            # mlx-serve's loader (mlx-serve issue 210): the weights' estimate against the unified memory free
            r"\bInsufficient memory to load model: weights ~?[\d.]+ ?[KMGT]i?B but only [\d.]+ ?[KMGT]i?B free",
            # TensorRT-LLM's batch manager: the paged KV pool its free-memory fraction gave holds less than one
            # sequence (as the Triton backend and its Python stub report it)
            r"maxTokensInPagedKvCache (?:\(\d+\) )?must be large enough to process at least 1 sequence",
            # mem_cache/memory_pool_host.py (0.4.1.post5-0.4.7): the hierarchical cache's host pool
            r"Not enough host memory available\. Requesting [\d.]+ GB but only have [\d.]+ GB free",
        ),
        "The weights leave no room for the KV cache under --mem-fraction-static: SGLang "
        "sized the pool at zero or fewer tokens.",
        (
            "Raise --mem-fraction-static (it is the share of free GPU memory for weights "
            "plus the KV and state pools, not the KV share alone), or spread the weights "
            "over more GPUs with --tp-size, or use a quantized checkpoint.",
            PLAN_ADVICE,
            "Check that no other process holds GPU memory: SGLang measures the memory "
            "that is free, not the card's total.",
        ),
        source="model_executor/pool_configurator.py",
    ),
    Signature(
        NOT_ENOUGH_MEMORY,
        # model_runner_kv_cache_mixin.py warns before the pool is sized when the profiled
        # token count is negative (sglang issue 7691); the error follows it.
        _re(r"is larger than the profiled value -\d+"),
        "The profiled KV token count is negative: the weights use more than "
        "--mem-fraction-static allows.",
        (
            "Raise --mem-fraction-static, or use more GPUs (--tp-size) or a quantized "
            "checkpoint so the weights leave room for the KV cache.",
            PLAN_ADVICE,
        ),
        fatal=False,
        source="model_executor/model_runner_kv_cache_mixin.py",
    ),
    Signature(
        NOT_ENOUGH_MEMORY,
        # The same failure as vLLM words it (vllm/v1/core/kv_cache_utils.py and the older
        # engine's check, vllm 27508, 2418, 49064): frameworks that run SGLang often run vLLM too.
        _re(
            r"KV cache is needed, which is larger than the available KV cache memory",
            r"is larger than the maximum number of tokens that can be stored in KV cache",
            r"exceeds available Mamba cache blocks",
            # vllm/worker/worker.py raise_if_cache_size_invalid (the engine before v1)
            r"No available memory for the cache blocks",
            # the profile that precedes it (worker.py determine_num_available_blocks, vllm issue 13882)
            r"the rest of the memory reserved for KV Cache is -\d",
            # vLLM v1's worker (v1/worker/gpu_worker.py determine_available_memory) before it refuses
            r"Available KV cache memory: -\d",
            # TGI's warm-up (text_generation_server/models/flash_causal_lm.py): the prefill batch it was
            # told to take does not fit beside the weights (text-generation-inference issue 1067)
            r"Not enough memory to handle \d+ prefill tokens",
        ),
        "The memory left for the KV (or state) cache cannot hold what the engine was asked "
        "to serve: one request at the model's full length, or the configured number of sequences.",
        (
            "Give the cache more memory (SGLang: --mem-fraction-static; vLLM: "
            "--gpu-memory-utilization), or ask for less: a shorter --context-length / "
            "--max-model-len, fewer --max-running-requests / --max-num-seqs.",
            PLAN_ADVICE,
        ),
        source="vllm/v1/core/kv_cache_utils.py",
    ),
    Signature(
        NOT_ENOUGH_MEMORY,
        _re(
            # model_executor/model_runner.py init_torch_distributed (0.4.0-0.5.6.post2): one GPU has much
            # less free memory than another
            r"The memory capacity is unbalanced\. Some GPUs may be occupied by other processes",
            # vLLM's v1/worker/gpu_worker.py init_device: the utilization asks for more than is free
            r"on startup is less than desired GPU memory utilization",
            r"Free memory on device \S+ \([\d./ ]+GiB\) on startup is less\b",  # the same, a paste's line cut
        ),
        "Less GPU memory is free than the launch asks for: another process holds memory on the GPUs.",
        (
            "Stop what holds the GPUs (nvidia-smi lists the processes; a dead launch's workers "
            "can linger), or ask for less: a lower --mem-fraction-static (vLLM: --gpu-memory-utilization).",
            PLAN_ADVICE,
        ),
        source="model_executor/model_runner.py",
    ),
    Signature(
        CUDA_OOM,
        _re(
            r"CUDA out of memory",
            # the same allocator message on torch's other device backends
            r"(?:HIP|XPU|MPS backend) out of memory",
            # c10/cuda/CUDACachingAllocator.cpp's warning as the allocation fails, before the error
            r"memory allocation failed with OOM on device \d+ while trying to allocate",
            r"torch\.(cuda\.)?OutOfMemoryError",
            r"CUDA (?:runtime )?error: out of memory",  # "runtime": lmdeploy's TurboMind (memory_utils.cu)
            r"cudaErrorMemoryAllocation",
            # CANN's runtime allocating NPU memory (rtMalloc: "ErrCode=207001, desc=[driver error:out of memory]",
            # MindIE on Ascend 310P, gpustack issue 1909)
            r"desc=\[driver error:out of memory\]",
            # TensorRT-LLM's executor (PyTorch backend) when building its components ran out of memory
            r"Executor creation failed due to insufficient GPU memory",
            # ggml's CUDA backend (llama.cpp, Ollama, LocalAI) allocating its buffers
            r"\bcudaMalloc failed: out of memory",
            r"\bCUDA error 2 at \S+:\d+: out of memory",  # ggml-cuda.cu's CUDA_CHECK ("CUDA error %d at %s:%d: %s")
            # TensorRT-LLM's check<cudaError> ("CUDA runtime error in ::cudaMallocAsync(ptr, n, ...): out of memory")
            r"CUDA runtime error in ::\w+\(.{0,120}\): out of memory",
            r"CUDA failed with error out of memory",  # CTranslate2 (Tabby, faster-whisper): its CUDA_CHECK
            r"CUDA Error 2, out of memory",  # tinygrad's ops_cuda check: "CUDA Error {code}, {cuGetErrorString}"
            # IPython / Jupyter name the exception beside the traceback's header (torch's OutOfMemoryError)
            r"^OutOfMemoryError\s+Traceback \(most recent call last\)",
            # the same code in the driver API (cuGetErrorName), in HIP, and cuBLAS failing its own
            # workspace allocation (cublasCreate under a full GPU)
            r"CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory|CUBLAS_STATUS_ALLOC_FAILED",
            r"NPU out of memory",  # torch_npu on Ascend, the same failure
            # Triton's launcher on a failed allocation, also as asyncio quotes a task's exception
            # ("exception=RuntimeError('Triton Error [CUDA]: out of memory')", LightLLM issue 171)
            r"Triton Error \[CUDA\]: out of memory",
            # XLA's allocator on a TPU (or any PJRT device) that cannot place a buffer (marin issue 2387)
            r"RESOURCE_EXHAUSTED: Error allocating device buffer",
            r"\bRan out of memory in memory space \w+",  # XLA compiling for a TPU (vllm issue 19490)
            # AWS Neuron's runtime (NRT) on a device allocation that failed (vllm issue 12443, Inferentia/Trainium)
            r"\bFailed to alloc DEVICE memory\b|\bnrt_tensor_allocate status=\d+ message=\"Allocation Failure\"",
            # Apple's Metal (MLX: mlx_lm.server, mlx-lm issue 854) when a command buffer cannot get GPU memory
            r"\bkIOGPUCommandBufferCallbackErrorOutOfMemory\b",
            # Intel's Unified Runtime (Level Zero) on an XPU allocation it cannot make (llm-scaler issue 348)
            r"\bUR_RESULT_ERROR_OUT_OF_(?:RESOURCES|DEVICE_MEMORY)\b",
            # the body of torch's message (c10/cuda/CUDACachingAllocator.cpp), pasted without its first words
            r"GPU \d+ has a total capacity of [\d.]+ [GM]iB of which [\d.]+ [KMG]iB is free",
            r"RayTaskError\(OutOfMemoryError\)",  # a Ray task (an RL rollout) that hit it
            # torch_memory_saver (SGLang's --enable-memory-saver, RL rollouts): cuMemCreate's CUresult 2 is
            # CUDA_ERROR_OUT_OF_MEMORY
            r"\[torch_memory_saver\.cpp\] CUresult error:?\s+(?:result=)?2\b",
            # the same allocator under torch.cuda.set_per_process_memory_fraction (TGI sets one)
            r"Allocation on device \d+ would exceed allowed memory\. \(out of memory\)",
            # NCCL's own CUDA call failing for memory (its checks.h: "Cuda failure [N] '%s'" with
            # cudaGetErrorString), as its WARN line, or under its "unhandled cuda error" as torch raises it
            r"\bCuda failure (?:\d+ )?'out of memory'",
        ),
        "A CUDA allocation failed: the GPU ran out of memory.",
        (),  # advice depends on the phase, see _OOM_ADVICE
        source="torch",
    ),
    Signature(
        UNSUPPORTED_ARCHITECTURE,
        _re(
            # models/registry.py (the list as SGLang prints it, or however a paste renders it)
            r"Model architectures? .*(are|is) not supported",
            r"Unsupported architectures?: \w+",
            r"Model architectures .* failed to be inspected",
            # vLLM's ModelConfig on a config.json without "architectures" (a TTS or diffusion checkpoint)
            r"No model architectures are specified",
            # transformers' AutoConfig on a config.json without a model_type it knows ("Unrecognized model in
            # /models/X. Should have a `model_type` key in its config.json", an EAGLE3 draft; Ascend/sglang 602)
            r"Unrecognized model in \S+\. Should have a `model_type` key",
            # mlx-lm's utils.py _get_classes: no mlx_lm.models module for the config's model_type
            r"\bModel type \w+ not supported\.",
            # transformers too old for the checkpoint's model_type (configs/model_config.py says so itself)
            r"Transformers does not recognize this architecture",
            # TensorRT-LLM's PyTorch backend (_torch/models/modeling_auto.py) on a model class it has no
            # causal-LM implementation of (TensorRT-LLM issue 7706: a Whisper checkpoint)
            r"Unknown architecture for AutoModelForCausalLM: \w+",
            r"has a model type of `\w+`, which Transformers does not recognize",  # transformers < 4.36's wording
            r"unknown model architecture: '[\w.-]+'",  # llama.cpp's loader (llama-model.cpp), as Ollama prints it
            r"Transformers version \S+ is not supported for model",
            # the tail of transformers' (and vLLM's ModelConfig's) refusal of an unknown model_type, pasted alone
            r"the checkpoint is very new, then there may not be a release version that supports this model yet",
            r"Unknown gguf model_type",  # model_loader/loader.py
            # Ollama's converter (`ollama create` from safetensors) on an architecture it cannot convert
            r"^Error: unsupported architecture\s*$",
            # a config whose model_type this transformers does not know, as images' tables quote it
            r"model_type '?\w+'? not recognized",
            # other engines' registries: TGI's get_model, LMDeploy's pytorch engine and TurboMind's ARCH_MAP
            r"Unsupported model type:? \w+",  # (swama's MLX model factory adds the colon)
            # text-embeddings-inference's Candle backend: "Could not start backend: Model is not supported ...
            # unknown variant `gemma3_text`, expected one of `bert`, ..."
            r"Could not start backend: Model is not supported",
            # vLLM's Transformers fallback (model_executor/models/registry.py) for a class neither side has
            r"Cannot find model module\. '\w+' is not a registered model in the Transformers library",
            # ... and SGLang's (model_loader/utils.py resolve_transformers_arch: "has no SGlang implementation")
            r"\w+ has no (?:vLLM|SGl?ang) implementation and the Transformers implementation is not compatible with",
            r"Can not found rewrite for architectures",
            r"KeyError: '\w+(?:ForCausalLM|ForConditionalGeneration)'",
            # a backend's own list ("Currently supported multi-modal models are llava, ... Got qwen2_vl.",
            # TensorRT-LLM's multimodal preprocessing in Triton)
            r"[Ss]upported (?:[\w-]+ )?models are [^.]{1,200}\. Got [\w.-]+",
            # transformers' auto classes without this config ("Unrecognized configuration class <class
            # '...T5Config'> for this kind of AutoModel: AutoModelForCausalLM", FastChat issue 1152)
            r"Unrecognized configuration class <class '[\w.]+'> for this kind of\b",
            # a model implementation that knows only some versions of its model (vLLM's MiniCPMV)
            # ("... supports versions 2.0, 2.5, 2.6, 4.0. Got version: (4, 5)", vllm issue 23955)
            r"\b[A-Z]\w+ only supports versions? \d[\d.]*(?:(?:,|,? (?:and|or)) \d[\d.]*)+",
            # mistral.rs (dynamo-run's default engine): "Unsupported Huggging Face Transformers -CausalLM
            # model class `GraniteForCausalLM`" (ai-dynamo issue 1245)
            r"Unsupported .{0,60}\bmodel class `?\w+",
        ),
        "This SGLang version has no implementation for the model's architecture.",
        (
            "Use an SGLang release that supports the architecture: `imgbuild check MODEL` "
            "names the first one, and `imgbuild render --sglang VERSION` builds it.",
            "If the architecture should be supported, look for an earlier 'Ignore import "
            "error when loading sglang.srt.models...' line: the model's module failed to import.",
        ),
        source="models/registry.py",
    ),
    Signature(
        DRIVER_TOO_OLD,
        _re(
            r"NVIDIA driver on your system is too old",
            r"CUDA driver version is insufficient for CUDA runtime version",
            r"cudaErrorInsufficientDriver",
            # cudaErrorCallRequiresNewerDriver's text (TurboMind, lmdeploy issue 708)
            r"API call is not supported in the installed CUDA driver",
            r"forward compatibility was attempted on non supported HW",
            r"cudaErrorCompatNotSupportedOnDevice|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
            # the NVIDIA container toolkit comparing the image's NVIDIA_REQUIRE_CUDA with the host driver
            r"unsatisfied condition: cuda\b",  # (">=12.4, please update your driver to a newer version")
            # the entrypoint banner of NVIDIA's NGC containers (Triton, TensorRT-LLM, PyTorch)
            r"This container was built for NVIDIA Driver Release [\d.]+ or later, but",
            # a kernel library linked against a CUDA driver API symbol the host's libcuda
            # is too old to have (sgl-kernel's cuGreenCtxStreamCreate, sglang issue 8131)
            r"undefined symbol: cu[A-Z]\w*",
            # cudaErrorUnsupportedPtxVersion: the PTX in a binary came from a newer CUDA than the driver
            # can JIT (FauxPilot's FasterTransformer on driver 470, fauxpilot issue 19)
            r"the provided PTX was compiled with an unsupported toolchain",
            r"cudaErrorUnsupportedPtxVersion|CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
            # Ollama's GPU discovery when libcuda lacks a symbol it needs (ollama issue 6604)
            r"[Nn][Vv][Ii][Dd][Ii][Aa] driver is too old",
            # CUDA_ERROR_INVALID_IMAGE as Triton's driver launcher reports it: a kernel its ptxas (a newer CUDA
            # than the driver's) built that the driver cannot load (lmdeploy issue 3583; triton issue 1955)
            r"Triton Error \[CUDA\]: device kernel image is invalid",
        ),
        "The host's NVIDIA driver is older than the CUDA the image's torch was built for.",
        (
            "Upgrade the host driver to at least the minimum for the image's CUDA "
            "(matrix.yaml `cuda:` rows list min_driver), or use an image built for an "
            "older CUDA.",
            "`found version 12040` means the driver supports CUDA 12.4 at most.",
        ),
        source="torch/cuda/__init__.py",
    ),
    Signature(
        NO_KERNEL_IMAGE,
        _re(
            r"no kernel image is available for execution on the device",
            # CANN's op runner with no kernel binary of an op for this NPU ("EZ9999: ... Op Cast does not has any
            # binary.", the op package built for another SoC; LlamaFactory issue 3779)
            r"\bOp \w+ does not has any binary\b",
            # a kernel built for one GPU generation only ("This kernel only supports sm120.") and the CUDA
            # driver refusing a JIT's cubin for this GPU (DeepGEMM: CUDA_ERROR_INVALID_IMAGE)
            r"\bThis kernel only supports sm_?\d+",
            r"\bCUDA_ERROR_INVALID_IMAGE\b",
            # a path not built for a GPU generation ("block scaled fp8 gemm is not implemented for Blackwell",
            # vLLM's CUTLASS scaled_mm, vllm issue 16515)
            r"\bis not implemented for (?:Blackwell|Hopper|Ada|Ampere|Turing|Volta)\b",
            # torch.compile's check before Triton compiles anything (torch/_inductor/scheduler.py)
            r"too old to be supported by the triton GPU compiler",
            # Triton's MMA lowering on a GPU it has no MMA version for (sm_120 before Triton 3.3, vllm issue 20712)
            r'Assertion `false && "computeCapability not supported"\' failed',
            # vLLM's platform check (0.2-0.3: worker.py) on GPUs older than Volta
            r"GPUs with compute capability below \d\.\d are not supported",
            # flashinfer's TRT-LLM kernels' runner (fmhaRunner.cuh) and DeepGEMM-style asserts on the SM
            # ("Only SM 10.x and 11.x are supported", sglang issues 29562 and 25564)
            r"\.cuh?:\d+: Unsupported architecture\b",
            r"\bOnly SM \d+\.x(?: and \d+\.x)? (?:are|is) supported",
            # the same kind of assert in SGLang's FA4 CuTe attention, pasted as its source line ("FP8 is only
            # supported on SM100 (compute capability 10.x) for FA4 CuTE", sglang issue 23985: an RTX 5090)
            r"\bis only supported on SM\d+ \(compute capability \d+\.x\)",
            # CANN's op registry without the op for this NPU's SoC (vllm-ascend issue 1813: a 310P), and a CANN
            # package built for another SoC (vllm-ascend issue 6676)
            r"\bof socVersion \[\w+\] does not support opType\b",
            r"\bsocversion \w+ of bin package does not match the current device",
            # vLLM's CUTLASS scaled-mm dispatch on a GPU it was not built for (vllm issue 32109: sm_120)
            r"\bNo compiled \w+ for (?:a compute capability less than )?CUDA device capability: \d+",
            # vLLM's FlashMLA op module (attention/ops/flashmla.py) missing from a wheel built without this GPU's
            # arch (vllm-deepseek-v4-sm89 issue 90)
            r"was not compiled due to insufficient nvcc version or a supported arch was not in the list of target",
            # Triton's elementwise lowering of FP8 (e4m3) conversions on a GPU below sm_90 (vllm issue 5479)
            r"Conversion from/to f8\w+ is only supported on compute capability >= \d+",
            r"cudaErrorNoKernelImageForDevice|CUDA_ERROR_NO_BINARY_FOR_GPU",
            # ggml's CUDA backend on a GPU its build has no code for ("CUDA kernel mma has no device code
            # compatible with CUDA arch 520. ggml-cuda.cu was compiled for: ...", ollama issue 13169)
            r"\bhas no device code compatible with CUDA arch \d+",
            # text-embeddings-inference's candle backend built for another compute capability (TEI issue 268)
            r"Runtime compute cap \d+ is not compatible with compile time compute cap \d+",
            # a kernel library's dispatch on an SM it has no kernels for ("ValueError: Unsupported compute
            # capability: 12.0", sglang issue 32933) and TurboMind's decoding kernels not built for this GPU's
            # arch (lmdeploy issue 4408: head dim 256 on a V100)
            r"\bUnsupported compute capability: \d+\.\d+",
            r"\bNo decoding kernel found: decode_\w+",
            # the SYCL runtime on a kernel the binary has no image of for this device (llama.cpp issue 20338)
            r"\bNo kernel named \S+ was found",
            # rocBLAS with no Tensile kernels for this GPU's gfx target
            r"rocBLAS error: Cannot read \S*TensileLibrary\S*: .{0,60}for GPU arch",
            # cudaErrorInvalidDeviceFunction (98): a kernel with no code for this GPU is launched; HIP
            # words it the same, and names a missing code object for the GPU's gfx target
            # (ggml's HIP build, as Ollama prints it, says "ROCm error": ollama issue 11123)
            r"(?:CUDA|HIP|ROCm) error: invalid device function|cuda runtime error \(98\) : invalid device function",
            r"cudaErrorInvalidDeviceFunction|hipErrorInvalidDeviceFunction|hipErrorNoBinaryForGpu",
            r"Unable to find code object for all current devices",
            # the HIP runtime's trace (AMD_LOG_LEVEL) of a fat binary without this gfx target (ROCm ATOM issue 69)
            r"\bNo compatible code objects found for: gfx\w+",
            # TensorRT-LLM's kernels' own GPU checks ("fp8 blockscale gemm only support Hopper.", issue 5064)
            r"\bonly supports? (?:on )?(?:Hopper|Blackwell|Ampere|Ada)\b",
            r"CUBLAS_STATUS_ARCH_MISMATCH",  # cuBLAS has no kernel for this GPU's architecture
            # TensorRT-LLM's attention op (attentionOp.cpp) on a GPU without FP8 tensor cores
            r"FP8 FMHA cannot be enabled except on Ada or Hopper",
            # xformers' cutlass attention (fmha kernels' arch check): "kernel `..._sm80` is for sm80-sm100, but was built
            # for sm121" (jetson-containers issue 1360)
            r"kernel `\w+` is for sm\d+-sm\d+, but was built for sm\d+",
            # model_executor/model_runner.py (as printed, and as users retype it: "SGlang ... sm 75")
            r"S[Gg][Ll]ang only supports sm ?75 and +above",
            # AMD's aiter (chip_info.py) on a gfx target it has no kernels for
            r"Unknown GPU architecture: gfx\w+",
            # flash-attn's own refusal of a GPU older than its kernels (flash_api.cpp)
            r"FlashAttention only supports Ampere GPUs or newer",
            # sgl-kernel's FA3 (flash_attn.py) and DeepGEMM's runtime, each built for Hopper only
            r"flash_attn at sgl-kernel is only supported on sm90 and above",
            r"DeepGEMM only supports Hopper \(SM90\)",
            # TensorRT-LLM's kernel runners on a GPU they have no kernels for (fmhaRunner.cpp on a V100)
            r"Assertion failed: Unsupported architecture \([^)]{0,200}\.(?:cpp|cu|h):\d+\)",
            # DeepGEMM's DG_HOST_ASSERT (its csrc/apis/*.hpp dispatch on the GPU's arch major), as torch raises it
            r"Assertion error \([^)]{0,200}\.(?:cpp|cu|hpp|h|cuh):\d+\): Unsupported architecture",
            # torch/cuda/__init__.py _check_capability: a GPU below the oldest capability the wheel is
            # built for (a V100 under a torch built for sm_75+); every kernel then fails
            r"PyTorch no longer supports this GPU because it is too old",
            # ggml's CUDA backend (ggml-cuda/common.cuh; llama.cpp, Ollama) built without this GPU's arch
            r"ggml was not compiled with any CUDA arch <= \d+",
            # model_loader/loader.py (every release) and vLLM's the same: the checkpoint's quantization
            # has kernels only from a newer compute capability (FP8 needs 89 on sm86)
            r"The quantization method \S+ is not supported for the current GPU\. Minimum capability: \d+",
            # compressed-tensors' scheme check (vLLM's compressed_tensors.py _check_scheme_supported), a
            # tuple of strings as logged: ('Quantization scheme is not supported for ', 'the current GPU. ...')
            r"Quantization scheme is not supported for\W{1,8}the current GPU\. Min capability: \d+",
            # Triton compiling a kernel that uses FP8 (e4m3, "fp8e4nv") for a GPU below sm89: its
            # semantic check and its code generator (the CompilationError around it is this, not a broken build)
            r"fp8e4nv data type is not supported on CUDA arch < 89",
            r"type fp8e4nv not supported in this architecture",
        ),
        "The image's CUDA kernels were not built for this GPU's compute capability.",
        (
            "Use an image whose torch and kernel wheels include this GPU's sm_XX "
            "(matrix.yaml `cuda:` rows list the sm targets; `imgbuild check` compares them "
            "with your GPUs).",
            "If a JIT-compiled kernel is at fault, set TORCH_CUDA_ARCH_LIST to the GPU's "
            "capability when building the image.",
        ),
        source="CUDA runtime",
    ),
    Signature(
        NO_KERNEL_IMAGE,
        # A torch warning that precedes the error on too-new GPUs (e.g. sm_120 on cu124).
        _re(r"with CUDA capability sm_\d+ is not compatible with the current PyTorch installation",
            # torch 2.7's wording (torch/cuda/__init__.py _warn_unsupported_code, vllm PR 39878: a V100)
            r"which is of compute capability \(CC\) \d+\.\d+\.?\s*$",
            r"The following list shows the CCs this version of PyTorch was built for"),
        "The image's torch was not built for this GPU's compute capability.",
        (
            "Use an image whose torch includes this GPU's sm_XX (a newer CUDA build).",
        ),
        fatal=False,
        source="torch/cuda/__init__.py",
    ),
    Signature(
        NCCL,
        _re(
            r"NCCL error",
            r"ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclInvalidUsage",
            r"ProcessGroupNCCL.*(timeout|Watchdog caught collective operation timeout)",
            r"NCCL WARN .*(fail|error)",  # "Cuda failure 700 'an illegal memory access was encountered'"
            # NCCLCHECK's trace of a call that returned an error code, file by file up the stack ("NCCL WARN
            # init.cc:1815 -> 5", OpenRLHF issue 795; src/include/checks.h)
            r"NCCL WARN \w+\.cc:\d+ -> [1-9]\b",
            # a native crash's backtrace (gdb's "#0 0x... in ...") inside torch's NCCL process group
            r"^#\d+\s+0x[0-9a-f]+ in .{0,200}\bProcessGroupNCCL::",
            r"Test NCCL failure \S+:\d+ '",  # nccl-tests (common.cu) passing NCCL's result string on
            # torch's watchdog lines lose "ProcessGroupNCCL.cpp" with their [E... file:line] prefix
            r"Watchdog caught collective operation timeout",
            # ProcessGroupNCCL.cpp's watchdog on a collective that failed (not timed out): "[PG ID 2 PG GUID 3
            # Rank 1]  failure detected by watchdog at work sequence id: 40231" (sglang issue 10216)
            r"failure detected by watchdog at work sequence id",
            # the same watchdog's two lines for a collective that failed or timed out, torch 2.4 on ("[PG ID 2 PG GUID 3
            # Rank 16] Exception (either an error or timeout) detected by watchdog at work: 9301, ...", then "Timeout at
            # NCCL work: 9301, ...", sglang issue 3572)
            r"\bException \(either an error or timeout\) detected by watchdog at work\b",
            r"\] Timeout at NCCL work: \d+",
            # torch < 2.2's ProcessGroupNCCL.cpp: the watchdog thread ended by a CUDA error of the
            # communicator's stream ("NCCL watchdog thread terminated with exception: CUDA error: ...")
            # (not a kernel's own fault the watchdog only surfaces: an illegal memory access, a device-side assert)
            r"NCCL watchdog thread terminated with exception(?!: CUDA error: (?:an illegal memory access|"
            r"device-side assert|unspecified launch failure))",
            r"Some NCCL operations have failed or timed out",
            r"Failed to load NCCL library from",  # pynccl_wrapper.py logs it before failing
            # torch raises DistBackendError from C10D_NCCL_CHECK (pytorch PR 88134)
            r"torch\.distributed\.DistBackendError",
            # c10d's TCPStore rendezvous, which NCCL's init waits on, cannot reach the master
            r"\[c10d\] The client socket has (?:failed to connect to any network address|timed out after \d+ ?ms)",
            # (its retry warning words it "[c10d] TCP client failed to connect/validate to host H:P - retrying (...): The
            # client socket has timed out after ...", then socket.cpp's throwTimeoutError; TRL issue 3736)
            r"\bThe client socket has timed out after \d+ ?ms while trying to connect to \(",
            # the same raised as torch.distributed.DistNetworkError, naming the master's address
            r"DistNetworkError: The client socket has (?:failed to connect to|timed out after)",
            # NCCL's own result string after a failed call (nccl/src/misc/utils.cc ncclGetErrorString),
            # as TensorFlow, Horovod and torch's older errors pass it on
            r"\bnccl\w+ failed: (?:unhandled cuda error|unhandled system error|internal error|invalid usage|remote process exited)",
            # the result code's name, as cupy's NcclError (vLLM's older pynccl) and NCCL's own headers spell it
            r"\bNCCL_ERROR_(?:UNHANDLED_CUDA|SYSTEM|INTERNAL|INVALID_ARGUMENT|INVALID_USAGE|REMOTE)_?\w*",
            # torch.distributed's CPU group (gloo), set up beside NCCL's in the same init: the ranks
            # cannot reach each other (ProcessGroupGloo.cpp)
            r"Gloo connectFullMesh failed",
            # HCCL, NCCL's counterpart on Ascend NPUs (torch_npu's ProcessGroupHCCL, CANN's error codes):
            # a failed communicator call, and its transport set-up between ranks
            r"HCCL function error: hccl\w+\(",
            # HCCL's communicator init failing in a C++ engine (MindIE's runners: "HcclCommInitRootInfo failed.",
            # "... HcclCommInitRootInfo fail, error:2", gpustack issue 2021)
            r"\bHcclCommInit\w* fail(?:ed)?\b",
            # TensorRT-LLM's all-reduce plugin set-up failing (its C++ stack names the plugin under an MPI error)
            r"\bAllreducePlugin::initialize\(\)",
            r"\bcall hccl api failed\b",
            # an HCCL task's timeout on the device (CANN's device_error_proc.cc: "hccl fftsplus task timeout
            # occurred during task execution", lmdeploy issue 3354 on Ascend)
            r"\bhccl fftsplus task timeout\b",
            # CANN's error codes name their module by the second letter, I for HCCL: EI0002 a collective's
            # notify wait timed out, EI0006 a link between ranks, EI0009 its transport init, EI0013 RoCE's
            # error CQE (hiascend.com CANN troubleshooting, atlaserrorcode_15_0242; hcclug_000050 / _000061,
            # which also give HCCL's own log keywords for the last two)
            r"\bEI\d{4}(?::|\)\W)",
            r"\bwait socket establish timeout\b",
            r"\berror cqe status\b",
            # torch_npu's op runner on a collective HCCL refused (vllm-ascend issue 486)
            r"OPS function error: Hccl\w+, error code is \d+",
            # the same group when a peer stops answering (gloo/transport/tcp/unbound_buffer.cc, pair.cc;
            # sglang issue 5883, two nodes during CUDA-graph capture)
            # (any error gloo's TCP transport raises: a timeout, a closed or reset connection, an
            # enforce on a garbled message -- sglang issue 4205, the Ascend FAQ's PD decode node)
            r"gloo/transport/tcp/\w+\.cc:\d+\]",
            # c10d's TCPStore on the master rank: the other ranks never joined the rendezvous
            # (torch/csrc/distributed/c10d/TCPStore.cpp, raised as torch.distributed.DistStoreError)
            r"Timed out after \d+ seconds waiting for clients\. \d+/\d+ clients joined",
            # the same store on the other ranks: a key the others never set (sglang issue 3398, two nodes)
            r"DistStoreError: wait timeout after \d+ ?ms",
            # NCCL's init (src/init.cc, ncclInvalidUsage): two ranks were given the same GPU
            r"Duplicate GPU detected : rank \d+ and rank \d+ both on CUDA device",
            # Intel GPUs' Level Zero opening a peer's memory handle (oneCCL's IPC exchange, llm-scaler issue 398)
            r"\bzeMemOpenIpcHandle\b.{0,40}\bZE_RESULT_ERROR_\w+",
            # oneCCL's own error records (ipex-llm issue 12081: its socket exchange between ranks on Intel GPUs)
            r"\|CCL_ERROR\| \w+\.cpp:\d+ ",
            # oneCCL's exception as torch's XPU all_reduce re-raises it (vllm issue 14747)
            r"\boneCCL: \w+\.cpp:\d+ \w+: EXCEPTION: ",
        ),
        "NCCL, which links the GPUs for tensor parallelism, failed.",
        (
            "Give the container shared memory: run it with --ipc=host or a large --shm-size "
            "(NCCL puts its buffers in /dev/shm).",
            "On GPUs without peer-to-peer access (most consumer and workstation cards "
            "without NVLink), try NCCL_P2P_DISABLE=1; rerun with NCCL_DEBUG=INFO for the reason.",
            "Check that every GPU asked for is visible in the container and not held by "
            "another process.",
        ),
        source="distributed/device_communicators/pynccl_wrapper.py",
    ),
    Signature(
        PORT_IN_USE,
        _re(
            r"\[Errno 98\]",
            r"address already in use",
            # Ray's port allocation for its components (NeMo-RL issue 261: "Ray component worker_ports is trying to
            # use a port number 53058 that is used by other components")
            r"\bis trying to use a port number \d+ that is used by other components",
            r"EADDRINUSE",
            r"\[Errno 10048\]",  # Windows' WSAEADDRINUSE, in the system's language after it
            # Windows' WSAEACCES on bind: the port is in a range the system reserved (Hyper-V, WSL) or
            # held by a portproxy listener (ollama issue 4999)
            r"\[(?:Errno|WinError) 10013\]",
            r"bind: An attempt was made to access a socket in a way forbidden by its access permissions",
            # gradio's networking.py start_server (the web UIs of LlamaFactory, lmdeploy, FastChat)
            r"Cannot find empty port in range: \d+-\d+",
            r"Only one usage of each socket address \(protocol/network address/port\) is normally permitted",
            # Go's net.Listen (ollama, a Go proxy in front of the server) in any locale's wording of
            # WSAEADDRINUSE / EADDRINUSE; a refused low port or an address the host lacks are other causes
            r"listen tcp \S+:\d+: bind: (?!permission denied|cannot assign requested address)\S",
            # utils/network.py wait_port_available: "{port_name} at {port} is not available in {timeout} seconds"
            r"port at \d+ is not available|\bat \d+ is not available in \d+ seconds",
            r"port \d+ is not available",
            r"port \d+ is already in use",
            r"Could not bind port \d+",  # utils/network.py (0.5.x)
            # server_args.py PortArgs.init_new (logger.exception) when the ports it derives are taken
            r"Port is already in use\. dist_init_port=",
            # llama.cpp's server (and llamafile's) when its listening socket cannot be bound: the port taken, or
            # an address the host does not have (llamafile issue 96)
            r"couldn't bind to server socket",
            # GPUStack (which runs SGLang) checks its service ports before it starts
            r"Port \d+ required for service '[\w-]+' is not available",
            r"couldn't bind HTTP server socket",  # llama.cpp's server, as GPUStack runs it
            # NVIDIA Dynamo's Rust HTTP service (lib/llm/src/http/service/service_v2.rs) panicking on its bind
            r"could not bind to address: \S+:\d+",
            # c10d's TCPStore (torch/csrc/distributed/c10d/socket.cpp), the rendezvous that torch
            # distributed and SGLang's --dist-init-addr start, cannot bind its port; the errno
            # that says why is often on the [W] lines above or cut (Cortex issue 42)
            r"The server socket has failed to listen on any local network address",
            # HCCL (Ascend's NCCL) on its own listen port: "EJ0003 ... Failed to bind the IP port. Reason: The IP
            # address and port have been bound already" (vllm-ascend issue 405), and HCCL's socket layer
            # ("listen on ip[...] and specific port[16666] fail", vllm-ascend issue 4725)
            r"Failed to bind the IP port\. Reason: The IP address and port have been bound already",
            r"specific port\[\d+\] fail\. Please check the port status",
        ),
        "A port SGLang needs is already bound by another process.",
        (
            "Pick a free --port, or stop the process that holds it (`ss -ltnp`). SGLang "
            "binds the HTTP port only after the model has loaded, so check it before launching.",
            "If the port is the distributed-init or NCCL port, set --nccl-port or "
            "--dist-init-addr to a free one.",
        ),
        source="entrypoints/http_server.py (uvicorn)",
    ),
    Signature(
        MODEL_NOT_FOUND,
        _re(
            r"Repo id must be in the form",
            # LocalAI's backends on a model path that is not there ("could not load model: rpc error: ... stat
            # /build/models/...: no such file or directory", LocalAI issue 1965) and MLC's CLI without the
            # model's compiled library (mlc-llm issue 982)
            r"could not load model: .*\bstat \S+: no such file or directory",
            r"Cannot find the model library that corresponds to\b",
            # BentoML's model store (OpenLLM 0.x) without the model, and llama.cpp's loader on a missing file
            r"is not found in BentoML store\b",
            r"error loading model: failed to open \S+: No such file or directory",
            # ggml's gguf.cpp when the .gguf file given cannot be opened (llama-swap issue 204)
            r"gguf_init_from_file: failed to open GGUF file",
            # ModelScope's hub (the vLLM / vLLM-Ascend path under VLLM_USE_MODELSCOPE) on a repo or revision it
            # does not have (vllm-ascend issue 829)
            r"\bThe model: \S+ has no revision: \S+",
            # vLLM's get_config when the path or repo holds neither config.json nor params.json
            r"Could not detect config format for no config file found",
            r"No supported config format found in \S+",  # the same check, vLLM 0.7-0.8
            # transformers' message; a rich-rendered traceback wraps it after 'is not a'
            r"is not a local folder and is not a(?: valid model identifier|\s*$)",
            r"Incorrect path_or_model_id",
            r"Can't load the configuration of",
            # the same in transformers' older configuration_utils.py (and its tokenizer's): "Can't
            # load config for '{path}'. Make sure that: ..." (GPT2-Chinese issue 169)
            r"Can't load (?:config|tokenizer) for '",
            r"does not appear to have a file named [\w.-]+\.json",
            r"RepositoryNotFoundError|HFValidationError",
            # huggingface_hub/errors.py: a file or a revision the repo does not have
            r"EntryNotFoundError|RevisionNotFoundError|(?:Entry|Revision) Not Found for url: https://huggingface\.co/",
            # transformers' modeling_utils.py: the directory has a config but no weights file it knows
            r"Error no file named [\w.]+(?:, [\w.]+)* or [\w.]+ found in directory",
            # a weights shard the index names is missing (a download cut short, a partial copy)
            r"No such file or directory: ['\"][^'\"]*\.(?:safetensors|gguf)['\"]",
            # vLLM's transformers_utils/config.py: the model is neither a Hub id nor a directory with a config
            r"Invalid repository ID or local directory specified",
            r"GatedRepoError|Cannot access gated repo|You are trying to access a gated repo",
            # huggingface_hub's HTTPError for a gated or private repo fetched without a token (sglang PR 14644),
            # or for a repo or file the Hub does not have (vllm-omni issue 2660)
            r"(?:401|403|404) Client Error: (?:Unauthorized|Forbidden|Not Found) for url: https://huggingface\.co/",
            # the same from ModelScope's hub API, a model id it does not have (vLLM under VLLM_USE_MODELSCOPE,
            # vllm issue 2629)
            r"(?:401|403|404) Client Error: (?:Unauthorized|Forbidden|Not Found) for url: "
            r"https://(?:www\.)?modelscope\.cn/api/v1/models/",
            # huggingface_hub/utils/_http.py's message for a gated repo fetched without access
            r"Access to model \S+ is restricted(?: and you are not in the authorized list)?\. ",
            # other Hub clients (the hf-hub crate: mistral.rs, TGI's router) with the status and the file's URL
            r"\b(?:401|403|404)\b[^\n]{0,120}https://huggingface\.co/\S+/resolve/",
            # urllib's HTTPError after the URL it fetched (RamaLama's pull, ramalama issue 1489)
            r"https://huggingface\.co/\S*: HTTP Error (?:401|403|404)\b",
            r"No such file or directory: '[^']*config\.json'",
            # model_loader/loader.py, utils/hf_transformers_utils.py: the path holds no model
            r"No model weights found in",
            r"Cannot find any model weights with",
            # Triton Inference Server's model repository: a model's version directory lacks its file
            r"failed to load '[^']+' version \d+: .{0,40}failed to stat file",
            r"Can't find config file in",
            r"Cannot find adapter config file in",
            r"LocalEntryNotFoundError|couldn't connect to 'https://huggingface\.co'",
            # huggingface_hub with HF_HUB_OFFLINE=1 asked for a file it has not cached (sglang issue 5386), and
            # the Hub refusing a download with a client error (a 416 on a resumed LFS file, vllm issue 7032)
            r"\bOfflineModeIsEnabled: ",
            r"\bHfHubHTTPError: 4\d\d Client Error",
            # requests/urllib3 that cannot reach the Hub or its mirror (no network, a proxy's certificate)
            # (also inside a repr()'d exception, its quotes escaped: host=\'huggingface.co\', vllm issue 1986)
            r"HTTPSConnectionPool\(host=\\?'(?:huggingface\.co|hf-mirror\.com|[\w.-]+\.hf\.co)\\?', port=443\): Max retries "
            r"exceeded",
            # Xinference's model downloader (model/utils.py) giving up on the Hub or ModelScope
            r"\bFailed to download model '[^']{1,200}'.{0,80} after multiple retries",
            r"\bCould not download model artifacts\b",  # text-embeddings-inference's router (download.rs)
            # a Rust hub client (NIM's nim_sdk::hub::repo, TEI's download.rs) that cannot reach the model's files
            r"error sending request for url \(https://(?:api\.ngc\.nvidia\.com/\S*/models/|huggingface\.co/)",
            # huggingface_hub with downloads off (HF_HUB_OFFLINE, local_files_only) and no cached snapshot
            r"Cannot find an appropriate cached snapshot folder for the specified revision",
            # Ollama: the name is not in its registry ("ollama run orca", ollama issue 2292)
            r"pull model manifest: file does not exist",
            # ModelScope's hub API (modelscope/hub/api.py), which vLLM and SGLang use with *_USE_MODELSCOPE
            r"The request model: \S+ does not exist!",
        ),
        "The model path or Hugging Face id cannot be resolved inside the container.",
        (
            "Mount the model directory into the container and pass the path as the "
            "container sees it to --model-path (certify mounts it read-only for you).",
            "For a Hugging Face id, mount the cache (HF_HOME) or allow downloads; gated "
            "models need HF_TOKEN.",
        ),
        source="transformers / huggingface_hub",
    ),
    Signature(
        JIT_BUILD_FAILED,
        _re(
            r"No such file or directory: 'ninja'",
            # tvm_ffi's build_ninja (SGLang's JIT kernels from 0.5.10: sgl_kernel_jit_*; sglang issue 26545)
            r"\bninja exited with status \d+",
            # DeepGEMM's JIT compiling a kernel whose header this build lacks (include_parser.hpp)
            r"Assertion error \(include_parser\.hpp:\d+\)",
            # or an assert of its JIT compiler itself (jit/compiler.hpp: "NVCC version should be >= 12.3", vllm PR
            # 49051), where the kernels' own asserts live under apis/ (an architecture they lack: no-kernel-image)
            r"Assertion error \((?:\S*/)?jit/\w+\.hpp:\d+\)",
            # AWS Neuron's compiler under torch-neuronx / vLLM's Neuron worker
            r"\|\|NEURON_CC_WRAPPER\|\|: (?:Failed compilation with|Compilation failed for)",
            # neuronx-cc's own error records ("[INTERNAL_ERROR] [NCC_INLA001] Unhandled exception", vllm-neuron
            # issue 16: the compile of a model's context-encoding graph)
            r"^\[(?:INTERNAL_ERROR|ERROR)\] \[NCC_[A-Z]{3,5}\d{3}\] ",
            # AMD's aiter building one of its JIT modules (aiter/jit/core.py; ROCm/aiter issue 416 on an MI300X)
            r"\[aiter\] failed build jit \[",
            # LLVM aborting inside a compile (Triton's JIT on ROCm: "LLVM ERROR: operation destroyed but still has
            # uses", vllm issue 44973 on an MI210)
            r"^LLVM ERROR: ",
            # Intel Gaudi's graph compiler (TGI for Gaudi, tgi-gaudi issue 54)
            r"\bGraph compile failed\. synStatus",
            # a JIT (TVM's, MLC's, a kernel library's) running a compiler the machine lacks
            r"No such file or directory: '(?:nvcc|hipcc|gcc|g\+\+|cc|c\+\+|clang)'",
            # pip building a package from source for the environment (its kernels: xformers, mamba-ssm,
            # flash-attn, vLLM itself), the same compilers failing before anything is imported
            r"\bFailed building wheel for [\w.-]+",
            r"\bFailed to build installable wheels for some pyproject\.toml based projects",
            # a JIT's build left no library where torch.utils.cpp_extension puts it (xgrammar, vllm issue 15073)
            r"torch_extensions/\S+\.so: cannot open shared object file",
            # the same build asked for nvcc and found none ("mamba_ssm was requested, but nvcc was not found")
            r"\bbut nvcc was not found\b",
            r"Ninja is required to load C\+\+ extensions",
            r"ninja: build stopped",
            r"Ninja build failed",  # flashinfer's jit/cpp_ext.py run_ninja ("Ninja build failed. Ninja output: ...")
            r"\bfailed to JIT[- ]compile\b",  # "FlashInfer failed to JIT-compile: ninja (build tool) not found"
            # nvcc's own summary of a failed compilation, and make's record of the rule that failed (a kernel
            # library built from source: TensorRT-LLM's build_wheel.py, an image's build)
            r"\b\d+ (?:catastrophic )?errors? detected in the compilation of \"",
            r"\bg?make\[\d+\]: \*\*\* \[[^\]]{1,400}\.(?:cu|cpp|cc|c)\.o\] Error \d+",
            # ptxas (or nvcc) older than the GPU it is asked to compile for (sm_121a on a DGX Spark)
            r"Value 'sm_\d+\w?' is not defined for option 'gpu-name'",
            r"Error building extension",
            r"fatal error: [\w./-]+\.h: No such file or directory",
            r"nvcc: (command )?not found|Could not find nvcc",
            r"Command '\['/usr/bin/(gcc|cc|g\+\+)'.*returned non-zero exit status",
            r"CalledProcessError: Command .*(ninja|nvcc|gcc|ptxas|tcc|clang)",
            # Triton's launcher stub (cuda_utils.c / main.c) compiled at first use; tcc (triton-windows)
            # words a missing header "include file 'Python.h' not found" (triton-windows issue 156)
            r"(?:cuda_utils|main)\.c:\d+:(?:\d+:)? (?:fatal )?error: ",
            # setuptools' build_ext (an extension compiled at install or first use) when the compiler fails
            r"error: command '\S*/(?:nvcc|gcc|g\+\+|c\+\+|x86_64-linux-gnu-gcc|x86_64-linux-gnu-g\+\+)' failed with exit (?:code|status) \d+",
            r"include file '[\w./-]+\.h' not found",
            r"PTXASError|ptxas fatal",
            # the PTX a JIT (Triton, a kernel library) emits names a GPU target its bundled ptxas predates
            r"PTX \.version \d+\.\d+ does not support \.target sm_\w+",
            r"^FAILED: (?:\[code=\d+\] )?\S+\.o\s*$",  # ninja's line for the object that failed
            # nvcc refusing its input or its host compiler ("nvcc fatal   : Unsupported gpu architecture
            # 'sm_100f'", "... : Failed to preprocess host compiler properties.")
            r"\bnvcc fatal\s*: ",
            # Triton's launcher stub needs a C compiler at first use (triton/runtime/build.py)
            r"Failed to find C compiler\b",  # (a paste may stop before "Please specify via CC ...")
            # the command ninja prints under FAILED: at the start of a line (a successful verbose build
            # prints it after its "[n/m] " counter); vLLM logs it at ERROR when flashinfer's JIT fails
            r"^:?/\S+/bin/nvcc --?\w",
            # Triton's compiler (its MLIR passes) aborting on a kernel as it compiles it at first use
            # (LightLLM issue 156: a Triton release the kernels were not written for)
            r"mlir::triton::\w+.{0,400}Assertion `(?!false && \"computeCapability not supported\")",
            # Triton's front end refusing a kernel's source, and its MLIR pipeline failing on it
            # (triton/compiler/errors.py, triton/compiler/compiler.py)
            r"triton\.compiler\.errors\.\w*CompilationError",  # also Triton-Ascend's MLIRCompilationError
            # torch/utils/cpp_extension.py building an extension: no CUDA toolkit, or another CUDA than torch's
            r"CUDA_HOME environment variable is not set",
            r"The detected CUDA version \([\d.]+\) mismatches the version that was used to compile\s+PyTorch",
            r"PassManager::run failed",
            # the linker of Triton's launcher stub without libcuda.so (only libcuda.so.1 is mounted)
            r"/ld: cannot find -lcuda\b",
            # nvcc's own error format on a source it compiles ("cute/arch/mma_sm90.hpp(6108): error: static
            # assertion failed", vLLM issue 31843: flashinfer's JIT of an sm90 kernel)
            r"\.(?:cuh?|hpp|h|cpp|cc)\(\d+\): error: ",
            # ... and gcc's, clang's and hipcc's ("file.cuh:124: error: template argument ...", ROCm ATOM issue
            # 1847: aiter's CK MoE kernels built by the JIT)
            r"\.(?:cuh?|hpp|h|cpp|cc|hip)(?::\d+){1,2}: (?:fatal )?error: ",
        ),
        "A kernel that is compiled at launch (flashinfer, triton, deep_gemm JIT) failed to build.",
        (
            "Build the image with the JIT toolchain: ninja, a C compiler, the Python headers "
            "and the CUDA headers (imgbuild's rendered Dockerfile installs them).",
            "Or avoid the JIT path, e.g. --attention-backend triton, at a speed cost.",
            "A ptxas failure naming the GPU (e.g. --gpu-name=sm_120) means the toolchain in the "
            "image is older than the GPU: use an image with a newer CUDA and triton.",
        ),
        source="flashinfer/jit/cpp_ext.py, triton",
    ),
    Signature(
        FLAGS_REFUSED,
        _re(
            r"launch_server\.py: error: ",
            # disaggregation/{common,mooncake,nixl}/conn.py: prefill and decode started with TP sizes the
            # model's state transfer cannot map (sglang issue 38552); the fix is the launch's TP sizes
            r"PD Disaggregation does NOT support PD different TP sizes for\b",
            # llama.cpp's common/arg.cpp on an option's value (LLMKube issue 147, flexllama issue 15)
            r"^error while handling argument \"--?[\w-]+\": ",
            # TGI's launcher validating its options (UI-TARS issue 153, a Hugging Face endpoint)
            r"\bArgumentValidation\(\"",
            # click's (and typer's) usage error for a positional argument too many (lighteval's `vllm` command
            # given MODEL_ARGS with a space in them, open-rs issue 7)
            r"\bGot unexpected extra arguments? \(",
            # Go's flag package (a Kubernetes controller's, a router's command line)
            r"^flag provided but not defined: -",
            # vLLM's LoRA check of the model class (lora/models.py, worker's model runner)
            r"does not support LoRA, but LoRA is enabled",
        # vLLM's _get_and_verify_max_len (config.py, config/model.py): --max-model-len past what the
        # config allows; the message is built in a variable, so scripts/gen_matrix/vllm_messages.py misses it
        r"User-specified max_model_len \(\d+\) is greater than the derived max_model_len",
            # a layer refusing the --attention-backend the flags chose (sglang issue 35743: sage_attn
            # for a diffusion model's audio VAE)
            r"[Aa]ttention backend '[\w-]+' is not supported by this",
            r"error: unrecognized arguments: ",
            # GNU getopt's refusal (C/C++ servers: tritonserver, clearml-serving issue 88)
            r": unrecognized option [`']--[\w-]+",
            # a container given flags where its command goes (a pod's `args` on an image without an
            # entrypoint that takes them): runc then tries to run the first flag (kserve issue 4240)
            r'exec: "--[\w-]+(?:=[^"]{0,200})?": executable file not found',
            # TensorRT-LLM's WorldConfig: the MPI ranks the engine was started with are not its TP x PP
            r"Assertion failed: mpiSize == tp \* pp",
            # a Triton model config whose template variable was never filled in (fill_template.py not run)
            r"unable to find backend library for backend '\$\{\w+\}'",
            r"error: argument --[\w-]+(?:/-\w+)?: ",  # "argument --quantization/-q: invalid choice"
            r"error: the following arguments are required",
            # clap (TGI's launcher, Rust CLIs): "error: unexpected argument '--x' found", "error: invalid value ..."
            r"^error: unexpected argument '--[\w-]+' found",
            r"^error: invalid value '[^']*' for '--[\w-]+",
            # click (mlx-openai-server, Python CLIs built on it): "Error: No such option: --tool-call-parser"
            r"^Error: No such option: --[\w-]+",
            # server_args.py checks after parsing (0.5.11, Qwen3-Next/3.5 + speculation)
            r"not compatible with radix cache when using --mamba-scheduler-strategy",
            # configs/model_config.py, _derive_context_length (raised unless overridden)
            r"context_length \(\d+\) is greater than the derived context_length.*SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
            # checks of the flags' values made after parsing, while the model loads
            # (model_executor/model_runner.py, configs/model_config.py, distributed/parallel_state.py)
            r"Unknown load_format",
            r"Invalid attention backend(?: for MLA)?: ",
            r"Unsupported kv_cache_dtype: ",
            r"tp_size \d+ must be divisible by (?:moe_)?ep_size \d+",
            r"must be divisible by moe_tp_size \(\d+\) which is tp_size",
            r"backend can only be used with (?:non-)?MLA models",
            r"hybrid_linear_attn backend can only be used with hybrid GDN models",  # an assert (0.5.2)
            # vLLM's scheduler config: the token budget left after the flags' reservations is not positive
            r"max_num_scheduled_tokens is set to -?\d+, which does not allow any tokens to be scheduled",
            r"Dual chunk attention is enabled, but attention backend is set to",
            r"Unknown quantization method: ",
            r"does not match the quantization method specified in the `quantization` argument",
            r"world_size \(\d+\) is not equal to tensor_model_parallel_size",
            # Megatron's initialize_model_parallel (the trainer side of an RL framework): the parallel
            # sizes asked for do not divide the GPUs given ("world_size (8) is not divisible by
            # expert_tensor_model_pipeline_parallel size (16)")
            r"world_size \(\d+\) is not divisible by [\w ]{1,80}\(\d+\)",
            # transformers' HfArgumentParser (the CLIs of LlamaFactory, TRL, OpenRLHF scripts): an unknown flag or key
            r"Some (?:specified arguments|keys) are not used by the HfArgumentParser",
            r"ValueError: remaining_argv: \[",  # ms-swift's parser (swift/utils/argument.py): arguments it does not take
            # vLLM's config.py verify_with_parallel_config (SGLang asserts it bare while the model loads)
            r"Total number of attention heads \(\d+\) must be divisible by tensor parallel size \(\d+\)",
            r"must be divisible by decode_context_parallel_size",
            # utils/network.py: --dist-init-addr, --host / --port as given
            r"Port out of range \(0-65535\)",
            r"has invalid port number \d+\. Valid TCP port range",
            r"Missing port in address \(expected host:port\)",
            r"Bare IPv6 address without brackets is ambiguous",
            r"Missing closing bracket in IPv6 address",
            r"Expected ':port' after closing bracket",
            r"Invalid IPv6 address inside brackets",
            r"Empty host in address",
            r"Invalid port number: ",
            # Hydra (verl, NeMo) on a command-line override of a key the config lacks (verl PR 7430)
            r"^Could not override '[\w.]+'\.",
            # NVIDIA NIM's model manifest on a profile it does not have (k8s-nim-operator issue 407)
            r"Not all of the provided profiles are supported\.",
            # argparse on a positional (a subcommand): "TRL CLI: error: argument command: invalid choice: 'x'"
            # (argparse names a subparsers action without a dest by its choices: "argument {a,b}: invalid choice")
            r"error: argument (?:[\w-]+|\{[\w,-]+\}): invalid choice: ",
            # TensorRT-LLM's LLM args (llmapi/llm_args.py) on a key of --extra_llm_api_options it does not take
            r"got invalid argument: \w+",
            # an engine's argument class called with an option its version dropped (vLLM's EngineArgs
            # without worker_use_ray from 0.7.0, as an RL framework's actor passes it: OpenRLHF PR 702)
            r"(?:Args|ModelConfig)\.__init__\(\) got an unexpected keyword argument '\w+'",  # (lighteval's VLLMModelConfig)
            # a --quantization method the checkpoint does not carry, or a TP size its quantized shapes do
            # not divide into: vLLM's get_quant_config (model_loader/weight_utils.py, SGLang's copy in 0.3-0.4)
            # and the AWQ / GPTQ create_weights checks
            r"Cannot find the config file for \w+",
            r"The input size is not aligned with the quantized weight shape\. This can be caused by too large tensor parallel size",
            # a launcher's pydantic spec refusing a value it was given ("Failed to parse profiler config: 1
            # validation error for DynamoGraphDeploymentRequestSpec", ai-dynamo issue 10007)
            r"Failed to parse [\w ]{0,40}config: \d+ validation errors? for \w+",
            # vLLM's platforms (cuda.py check_if_supports_dtype): the checkpoint's bfloat16 on a pre-Ampere GPU,
            # fixed by --dtype half (Qwen issue 913)
            r"Bfloat16 is only supported on GPUs with compute capability of at least 8\.0",
            # vLLM's model config (pydantic "Value error, ...") on a --dtype the quantization method does not take
            # (vLLM TPU, tpu-inference PR 1659: bfloat16 with AWQ), fixed by --dtype float16
            r"\bis not supported for quantization method \w+\. Supported dtypes: ",
            # a Kubernetes service named vllm injects VLLM_PORT=tcp://IP:PORT into the pod, which vLLM reads as its
            # own port setting: refused by envs.py (0.7 on) or by int() before it
            r"VLLM_PORT '[^']*' appears to be a URI",
            r"invalid literal for int\(\) with base 10: 'tcp://[\w.-]+:\d+'",
        ),
        "This SGLang version refused the launch flags.",
        (
            "Use the flags this version accepts: `imgbuild plan` checks them against "
            "the version's server_args.py before anything loads.",
            "Flag names use dashes (--reasoning-parser, not --reasoning_parser); flags "
            "come and go between releases.",
        ),
        source="server_args.py",
    ),
    Signature(
        FLAGS_REFUSED,
        # --enable-hierarchical-cache on a KV pool HiCache has no host pool for ("MHA and MLA yet" up to
        # "MHA, MLA, and NSA (DSA) models", by release): a hybrid (Mamba / linear attention) model, or
        # DeepSeek V4's compressed attention (sglang issue 26690)
        _re(r"HiRadixCache only supports MHA\b"),
        "This SGLang version's hierarchical cache does not support this model's KV cache.",
        (
            "Drop --enable-hierarchical-cache (and the --hicache-* flags) for this model, or use a "
            "release whose HiCache supports this model's attention.",
        ),
        source="mem_cache/hiradix_cache.py",
    ),
    Signature(
        FLAGS_REFUSED,
        # distributed/utils.py ensure_divisibility (SGLang's and vLLM's): a size of the model the parallel
        # degree does not divide, met while the layers are built (GPUStack issue 4769: 16 KV heads at --tp-size 6)
        _re(r"^AssertionError: \d+ is not divisible by \d+$"),
        "A size of the model (its attention or KV heads, experts, or a layer's width) is not divisible by the "
        "parallel degree the flags asked for.",
        (
            "Choose a --tp-size (and --ep-size, --dp-size) that divides the model's attention heads, KV heads "
            "and experts: the error names the size first, then the degree. `imgbuild plan` checks the heads "
            "against --tp-size before anything loads.",
        ),
        source="distributed/utils.py",
    ),
)

LOCK_ADVICE = (
    "Rebuild the environment from the as-of-release lock: `imgbuild lock VERSION` pins every "
    "package to what was current when that SGLang release came out, and `imgbuild render` / "
    "`imgbuild make` build the image from it; an unpinned install picks up newer releases of "
    "its dependencies that this sglang was never tried with."
)

_IMPORT = Signature(
    IMPORT_FAILED,
    _re(
        # sgl_kernel/load_utils.py (0.5.x): no common_ops variant could be loaded
        r"\[sgl_kernel\] CRITICAL: Could not load any common_ops library",
        # Ollama's MLX runner without the MLX C library it loads (ollama issue 15471)
        r"failed to initialize MLX: \S+ not found",
        # transformers' hub_kernels (5.x) importing a `kernels` release newer than it supports: the import
        # sglang 0.5.11 makes fails so (kernels/layer/layer.py LayerRepository)
        r"Either a revision or a version must be specified\.",
        # transformers' lazy module on an import that failed underneath ("Failed to import X because of the
        # following error (look up to see its traceback)")
        r"Failed to import [\w.]+ because of the following error \(look up to see its traceback\)",
        # the interpreter itself on `python -m X` for a module the environment lacks ("/venv/bin/python: No
        # module named bentoml", OpenLLM issue 1053)
        r"\bpython[\d.]*: No module named [\w.]+",
        # a compiled extension built against another torch (C++ symbols are mangled _Z...)
        r"ImportError: .*undefined symbol",
        r"OSError: \S+\.so(?:\.\d+)*: undefined symbol: ",  # ctypes.CDLL on a library built against another
        # tvm-ffi's module loader (flashinfer's and DeepGEMM's compiled modules): dlopen refused the library
        r"Failed to load dynamic shared library \S+\.so\b",
        r"undefined symbol: _Z\w+",
        r"ModuleNotFoundError: No module named",
        # Xinference's engine loaders (model/llm/*/core.py) when the engine package does not import
        r"Please make sure '[\w.-]+' is installed\. You can install it by `pip install",
        r"RayTaskError\((?:ModuleNotFoundError|ImportError)\)",  # a Ray worker's import, as its caller raises it
        r"PackageNotFoundError: No package metadata was found for \S+",  # importlib.metadata: not installed
        # Triton's model loader without the backend's shared library in the image (tensorrtllm, vllm, python)
        r"unable to find backend library for backend '\w+'",
        r"cannot import name '[\w.]+' from '",  # Python's ImportError text, also pasted without its name
        # a library's own check for an optional package (FastAPI's Form(): 'Form data requires
        # "python-multipart" to be installed.', sglang issue 949)
        r'\brequires "[\w.-]+" to be installed\b',
        # a quantization method naming the package its kernels come from ("awq quantization requires some
        # operators from vllm. Please install vllm by `pip install vllm==0.9.0.1`", sglang issue 7407)
        r"\brequires? [^.]{0,100}\bfrom [\w-]+\. Please install [\w-]+",
        # Python's ImportError text without its class, as an engine logs it (vLLM's "ERROR ... No module named 'x'")
        r"^No module named '[\w.]+'",
        # model_loader/loader.py, quantization/*: an optional package a flag needs is not installed
        r"library not found\. Please install it",
        # vLLM's utils/deep_gemm.py when its FP8 kernels need a deep_gemm package that is missing or too old
        r"DeepGEMM backend is not available or outdated",
        r"\bImportError: ",
        # srt/utils (common.py) assert_pkg_version at start-up: sgl-kernel / flashinfer older than pinned
        r"is installed with version \S+, which is less than the minimum required version",
        # torch._inductor (torch.compile) without an importable triton (torch/utils/_triton.py)
        r"Cannot find a working triton installation",
        # Xinference's model loader (xinference/model/llm/...): the engine's package is not importable
        r"Failed to import module '[\w.]+'",
        # a platform plugin's own report of its device package (vllm-ascend: "Failed to import torch_npu.")
        r"^Failed to import [\w.]+\.\s*$",
        # vLLM's _custom_ops.py when its compiled extension is missing or broken (a warning, then the
        # first call into it fails)
        r"Failed to import from [\w.]+\._C with (?:ModuleNotFoundError|ImportError)\(",
        # the dynamic loader's own message for a missing library (libcuda is the no-GPU case below)
        r"\blib(?!cuda\.so|nvidia-ml\.so)[\w+-]+(?:\.[\w+-]+)*\.so(?:\.\d+)*: cannot open shared object file",
    ),
    "The environment cannot import sglang: a package it imports failed to load.",
    (LOCK_ADVICE,),
    source="python import system",
)

_NO_GPU = Signature(
    NO_GPU_VISIBLE,
    _re(
        # utils/common.py get_device(), every release's wording (imgbuild/data/sglang_messages.json):
        # "(CUDA, XPU, HPU)" 0.4.4-0.5.6, "+ NPU" 0.5.6.post1, "+ MUSA" 0.5.9, "+ MPS" 0.5.10,
        # "... or platform plugin is available." from 0.5.13; the "Warning: ... - Falling back
        # to CPU" form of 0.5.3 is not the failure
        r"No accelerator \([^)]{0,200}\)(?: or platform plugin)? is available(?!\.? - Falling back)",
        r"No supported accelerator \([^)]{0,200}\) available",
        r"No CUDA GPUs are available",
        # TGI's models/__init__.py get_model: a sharded model class with no CUDA device ("Sharded Llama requires
        # CUDA.", TGI issue 620: a container started without the GPUs)
        r"NotImplementedError: Sharded \w+ requires CUDA\.",
        # utils/common.py get_nvgpu_memory_capacity (0.4.0-0.5.23): nvidia-smi listed no GPU memory (a MIG
        # slice, a container without the GPUs; MinerU's SGLang backend, MinerU issue 2724)
        r"No GPU memory values found\.",
        # vLLM's Ray executor (executor/ray_gpu_executor.py) when the node the driver runs on got no GPU from
        # the placement group (vllm issue 7815, a multi-node cluster)
        r"Ray does not allocate any GPUs on the driver node",
        # the Docker daemon without the NVIDIA runtime asked for --gpus / a compose GPU reservation
        r'could not select device driver "nvidia" with capabilities: \[\[gpu\]\]',
        # CANN's device management (adx_dsmi.cpp) finding no NPU in the container (lmdeploy issue 2585)
        r"Get physical device number failed, err: \d+",
        r"No CUDA or HIP available on this system",  # Xinference's device_utils, launching a model on a GPU
        # GPUStack's worker found no detector that sees a GPU of the vendor it runs for (gpustack issue 3308)
        r"No GPU detectors available for \w+",
        # rocBLAS finding no GPU at all (its Tensile host needs one)
        r"Could not initialize Tensile host: No devices found",
        # TRL's GRPO trainer on a vllm_device ordinal the machine lacks (the same cause as an invalid ordinal)
        r"The requested device for vllm \(cuda:\d+\) is not available",
        r"No HIP GPUs are available",  # the same check (torch/cuda/__init__.py) in torch's ROCm build
        # Ascend's runtime (CANN) on the devices it was given: ASCEND_RT_VISIBLE_DEVICES out of order (EE1001 under
        # aclrtGetDeviceCount's 207004, gpustack issue 2527) or naming a device the host lacks (rtSetDevice's
        # 107001 "device id error", gpustack issue 3352)
        r"set ASCEND_RT_VISIBLE_DEVICES:\S* error, it must be configured in ascending order",
        r"Set visible device failed, invalid device=\d+",
        r"rtSetDevice:ErrCode=\d+, desc=\[device id error\]",
        # CANN's runtime unable to count its NPUs at all (vllm-ascend issue 13399: the driver's internal error)
        r"\brtGetDeviceCount execution failed\b",
        # torch_npu setting a device the runtime cannot set up (vllm-ascend issue 1558, data parallel)
        r"NPU function error: c10_npu::SetDevice\(device_id_\), error code is \d+",
        # torch's lazy CUDA init (torch/cuda/__init__.py) asked for a device index CUDA_VISIBLE_DEVICES hides
        r"device >= 0 && device < num_gpus INTERNAL ASSERT FAILED",
        # the same init finding no device after the CUDA runtime said there was one (a container that
        # lost its device nodes, a driver that failed under a forked process)
        r"torch\._C\._cuda_getDeviceCount\(\) > 0 INTERNAL ASSERT FAILED",
        # torch/serialization.py: a checkpoint saved from a GPU, loaded where torch sees none
        r"Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) is False",
        # nvidia-smi's own text when the kernel module is not loaded (or not reachable in the container)
        r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
        # the NVIDIA containers' entrypoint (nvidia_entrypoint.sh) when it finds no usable GPU
        r"No supported GPU\(s\) detected to run this container",
        # the NVIDIA container toolkit's prestart hook cannot load the host driver's NVML
        r"nvidia-container-cli: initialization error",
        # the same toolkit asked for a GPU index the host lacks; docker without the nvidia runtime
        # registered; CDI (podman, containerd) without a spec for the GPUs; no device node to mount
        r"nvidia-container-cli: device error: ",
        r"unknown or invalid runtime name: nvidia",
        r"unresolvable CDI devices nvidia\.com/gpu",
        r"cannot stat [`'\"]?/dev/nvidia\d*[`'\"]?: No such file or directory",
        r"RuntimeError: No supported device detected",  # vLLM's config.py DeviceConfig (0.3-0.5)
        # the same in vLLM 0.6-0.8 (config.py DeviceConfig), also as a caller logs it without the class
        # ("Error processing batch: Failed to infer device type, please set ...", SkyRL PR 1723)
        r"\bFailed to infer device type\b",
        # vLLM's platforms/__init__.py found no platform plugin (no CUDA, ROCm ... library loads), then
        # config/device.py builds torch.device("") (llm-d-deployer issue 273, keras-team/kinetic issue 269)
        r"No platform detected, vLLM is running on UnspecifiedPlatform",
        r"RuntimeError: Device string must not be empty",
        r"No CUDA devices found via torch\.cuda",  # utils/common.py
        r"NPU device is not available or visible",  # utils/common.py, torch_npu
        r"torch\.(?:xpu|mps) is not available",  # utils/common.py, --device xpu / mps
        # utils/common.py: the vendor's tool is not in the container (no NVIDIA runtime, or none mounted)
        r"(?:nvidia|rocm|hl)-smi not found\. Ensure \w+(?: \w+)? drivers are installed",
        r"mthreads-gmi not found",
        r"Found no NVIDIA driver on your system",
        r"libcuda\.so(\.1)?: cannot open shared object file",
        # the driver's NVML library, which the NVIDIA container runtime mounts with libcuda
        r"libnvidia-ml\.so(\.1)?: cannot open shared object file",
        r"CUDA driver initialization failed",
        # NVML (nvidia-ml-py's pynvml.py error names and texts): no driver loaded, or no libnvidia-ml
        r"NVMLError_DriverNotLoaded|NVML_ERROR_DRIVER_NOT_LOADED|NVMLError_LibraryNotFound|NVML_ERROR_LIBRARY_NOT_FOUND",
        r"NVML Shared Library Not Found",
        # a container that lost its device access after the host's systemd reloaded cgroups (NVIDIA
        # container toolkit): nvidia-smi inside it answers only this
        r"Failed to initialize NVML: Unknown Error",
        # the same with no reason given (Triton's and DCGM's start-up in a container run without the
        # GPUs; the CUDA runtime then says "driver version is insufficient": there is no libcuda at all)
        r"Failed to initialize NVML\s*$",
        # the CUDA runtime's own texts (cudaGetErrorString) and names for "no device" (100), "busy or
        # unavailable" (46: another process holds a GPU in exclusive mode), the stub libcuda that
        # images link against standing in for the host's driver (34), and an ordinal beyond the GPUs
        # the process sees (101: CUDA_VISIBLE_DEVICES lists fewer GPUs than the launch asks for)
        r"no CUDA-capable device is detected|cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE",
        r"no ROCm-capable device is detected|hipErrorNoDevice",
        r"CUDA-capable device\(s\) is/are busy or unavailable|cudaErrorDevicesUnavailable",
        r"CUDA driver is a stub library|cudaErrorStubLibrary|CUDA_ERROR_STUB_LIBRARY",
        # (torch before 1.5 wrote "cuda runtime error (101) : invalid device ordinal")
        r"\binvalid device ordinal\b|cudaErrorInvalidDevice\b|CUDA_ERROR_INVALID_DEVICE\b",
        # c10/cuda/CUDAFunctions.cpp on cudaErrorUnknown (999) while counting the devices
        r"CUDA unknown error - this may be due to an incorrectly set up environment",
        # the same count failing with a code that has no class of its own (802-804 do: fabric manager, driver
        # mismatch, forward compatibility): CUDA cannot use the GPUs it was given (WSL's "Error 500: named
        # symbol not found" after a Windows driver update, open-webui issue 2527)
        r"Unexpected error from cudaGetDeviceCount\(\)\..{0,200}\bError (?!80[234]\b)\d+: ",
        # docker's daemon when --gpus is asked for and no NVIDIA container toolkit is installed
        r'could not select device driver "" with capabilities: \[\[gpu\]\]',
        # ggml's CUDA backend (llama.cpp, Ollama) finding no usable device: its CUDA error string after the colon
        # ("unknown error" in a compose service given GPUs the runtime cannot open, llama.cpp issue 1866; not a
        # driver too old for the runtime, which has its own class)
        r"ggml_cuda_init: failed to initialize CUDA: (?:unknown error|initialization error|OS call failed)",
        # vLLM's world-size check finding no device at all ("local_world_size (8) must be less than or equal to the
        # number of visible devices (0).", the count on its own line as vllm-ascend prints it, vllm-ascend issue 14631)
        r"\bof visible devices \(0\)",
        # Ascend's device management library in a container given no NPU device (npu-smi: "dcmi module initialize
        # failed. ret is -8005", vllm-ascend issue 2698), NVML's counterpart
        r"\bdcmi module initialize failed\b",
    ),
    "The container sees no GPU: it was started without one, or without the NVIDIA runtime.",
    (
        "Start the container with the GPUs (docker run --gpus or device requests; certify "
        "does this) on a host with the NVIDIA container toolkit.",
        "Check CUDA_VISIBLE_DEVICES inside the container does not hide them.",
    ),
    source="torch/cuda/__init__.py",
)
# Python's ImportError text logged as a warning by a loader that goes on without the module (TGI's
# "Could not import Flash Attention enabled models: No module named 'vllm_cache_ops'"): not fatal by
# itself, it explains the failure that follows when nothing else does.
_IMPORT_WARNED = Signature(
    IMPORT_FAILED,
    _re(r"\b(?:Could not|Failed to|Unable to|Cannot) import [^:]{0,120}: No module named '[\w.]+'"),
    _IMPORT.summary,
    _IMPORT.advice,
    fatal=False,
    source="python import system",
)
_KILLED = Signature(
    KILLED,
    # the shell's, docker's or the kernel's report of a process ended by SIGKILL (exit 137)
    _re(
        r"^Killed[\s`'\"]*$",  # also as pasted inside a markdown code span
        r"\]Killed\s*$",  # the shell's report printed right after a tqdm bar (no newline after it)
        r"line \d+:\s+\d+ Killed(?:\s|$)",  # the shell's job report naming the command (or ending there)
        r"^\s*Exit code: -9\s*$",  # Python's subprocess return code for SIGKILL
        r"\bexited with (?:exit )?code:? -9\b",
        r"\bscheduler died during initialization \(exit code: -9\)",  # entrypoints/engine.py, from 0.5.11
        r"exited with code 137",  # docker compose
        r"\bexited on signal 9 \(Killed\)",  # Open MPI's mpirun (TensorRT-LLM's multi-GPU runs)
        r"Out of memory: Killed process|killed as a result of limit of",  # the kernel's log
        r"\bKilled process \d+ ?\(",  # its victim line, also retyped (ktransformers issue 890)
        r"\boom[_ ]reaper: reaped process \d+",
        r"\binvoked oom-killer\b",  # the kernel's log, the line before it picks its victim
        # kubectl describe pod: the container's last state
        r"^\s*Exit Code:\s*137\s*$",
        r"\bOOMKilled\b",
        # DeepSpeed's launcher (launcher/runner.py) and torchrun's elastic agent on a child SIGKILLed
        r"exits with return code = -9\b",
        r"\bexitcode\s*:\s*-9\b",
        r"Signal 9 \(SIGKILL\) received by PID",
        # TGI's launcher on a shard ended by SIGKILL (text-generation-inference issue 1350)
        r"signaled to shutdown with signal 9\b",
        # Python's multiprocessing / concurrent.futures on a child ended by it
        r"died with <Signals\.SIGKILL: 9>",
        r"ProcessExitedException: process \d+ terminated with signal SIGKILL",  # torch.multiprocessing.spawn
        # Go's os/exec ExitError for a child ended by SIGKILL (Ollama's runner, container runtimes)
        r"\bsignal: killed\b",
        # an IDE's or a CI runner's report of the same (128 + 9)
        r"interrupted by signal 9: SIGKILL",
        # torch/utils/data/_utils/signal_handling.py: a DataLoader worker ended by the OOM killer
        r"DataLoader worker \(pid(?:\(s\))? [\d, ]+\) is killed by signal: Killed",
        r"\bexit (?:code|status) 137\b",
        # Slurm (strings of slurmstepd and srun 22.05, Debian's slurmd / slurm-client packages; 23.02 on
        # words the first "oom_kill event in StepId=... have been OOM Killed"): the step's cgroup ran out of
        # host memory, srun's report of it, and a job ended by the scheduler (time limit, preemption,
        # scancel, a node failure)
        r"Detected \d+ oom[-_]kill event",
        r"srun: error: .{0,80}: tasks? [\d,-]+: Out Of Memory",
        r"\*\*\* (?:JOB|STEP) [\d.]+ ON \S+ CANCELLED AT ",
        # systemd's record of a service's main process ended by SIGKILL
        r"Main process exited, code=killed, status=9/KILL",
        # systemd's unit.c / service.c on a unit the kernel's OOM killer hit (ollama issue 9322)
        r"A process of this unit has been killed by the OOM killer",
        r"Failed with result 'oom-kill'",
        # the kubelet restarting a container whose liveness probe failed (kubectl describe pod's events):
        # a server still loading, or one without the probed endpoint
        r"failed liveness probe, will be restarted",
        # the kubelet evicting a pod over its node's or its own limits (kubectl describe pod's events:
        # "Warning  Evicted  5s  kubelet  Usage of EmptyDir volume ... exceeds the limit", kserve issue 3792),
        # and the pod status it leaves ("The node was low on resource: memory")
        r"^\s*Warning\s+Evicted\s+\S+\s+(?:\S+\s+)?kubelet\b",
        r"The node was low on resource: \w+",
    ),
    "The process was killed (SIGKILL); while loading, most often by the kernel's OOM killer "
    "when host RAM runs out.",
    (
        "Check the host's kernel log (dmesg: 'Out of memory: Killed process') and give the "
        "host or the container more RAM (loading reads shards through host memory).",
        "If a watchdog or orchestrator killed it, raise its start-up timeout: loading large "
        "models takes minutes.",
    ),
    source="shell",
)
# Ray's own reading that a worker (an SGLang engine in verl, slime, OpenRLHF) died for memory:
# unlike a bare "Killed", which SGLang's teardown also prints, it names the cause, so it is
# matched like any signature. python/ray/_raylet.pyx appends "The worker may have exceeded K8s
# pod memory limits" to the exit detail of a worker ended by a signal in a pod (Agent-R1 issue 33);
# Ray's memory monitor raises ray.exceptions.OutOfMemoryError with the second text.
# vLLM's API server (entrypoints/openai/api_server.py signal_handler) on SIGTERM from outside: it raises
# KeyboardInterrupt("terminated") (a Kubernetes liveness probe restarting a pod still loading, imroc's TKE guide)
_TERMINATED = Signature(
    KILLED,
    _re(r"^KeyboardInterrupt: terminated\s*$",
        # NVIDIA NIM's entrypoint on a SIGTERM from its host (azure-container-apps issue 1583)
        r"\bstart_server\.sh received SIGTERM, attempting graceful shutdown"),
    "The process was stopped from outside (SIGTERM): an orchestrator's probe or stop, not a failure of its own.",
    ("If a liveness or readiness probe stopped it while the model loaded, give the probe a start-up grace "
     "(Kubernetes: a startupProbe, or initialDelaySeconds longer than the load) or raise its timeout.",
     "Otherwise find what sent SIGTERM: `kubectl describe pod` (its events), the scheduler's or the "
     "supervisor's log."),
    source="vllm/entrypoints/openai/api_server.py signal_handler",
)

_RAY_KILLED = Signature(
    KILLED,
    _re(
        r"The worker may have exceeded K8s pod memory limits",
        r"Task was killed due to the node running low on memory",
        # the raylet's report (src/ray/raylet/node_manager.cc) and the memory monitor's message
        # (ray/_private/memory_monitor.py: the usage threshold, the worker it chose, the docs link)
        r"killed due to memory pressure \(OOM\)",
        r"Ray killed this worker \(ID: ",
        r"exceeds the memory usage threshold of [\d.]+",
        r"docs\.ray\.io/en/latest/ray-core/scheduling/ray-oom-prevention\.html",
    ),
    _KILLED.summary,
    _KILLED.advice,
    source="ray/_raylet.pyx, Ray's memory monitor",
)
# CUDA's cudaErrorSystemNotReady (error 802): the GPUs are there (nvidia-smi lists them), but on an
# NVSwitch system (HGX/DGX H100, H200, B200) CUDA cannot use them until the fabric manager has set
# up the fabric (huggingface_hub issue 4134)
_FABRIC_NOT_READY = Signature(
    NO_GPU_VISIBLE,
    # (NCCL's checks.h prints it as "Cuda failure 802 'system not yet initialized'" under its unhandled cuda error)
    _re(r"Error 802: system not yet initialized", r"cudaErrorSystemNotReady",
        r"Cuda failure 802 'system not yet initialized'"),
    "CUDA cannot use the GPUs yet: on an NVSwitch system the fabric manager has not finished setting up the fabric.",
    (
        "Start (or restart) nvidia-fabricmanager on the host, the same version as the driver, and wait "
        "until `nvidia-smi -q` shows the fabric State: Completed; then launch again.",
    ),
    source="CUDA runtime (cudaErrorSystemNotReady)",
)
# CUDA's cudaErrorSystemDriverMismatch (803): the user-space libcuda is not the kernel module's version.
# Either the driver was upgraded and the host not rebooted, or an image's cuda-compat libcuda (meant for
# an older host driver) is loaded on a host whose driver is newer (vllm issue 35593).
_DRIVER_MISMATCH = Signature(
    DRIVER_TOO_OLD,
    _re(
        r"system has unsupported display driver / cuda driver combination",
        r"cudaErrorSystemDriverMismatch|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        # NVML's own reading of the same (nvidia-smi; pynvml's NVML_ERROR_LIB_RM_VERSION_MISMATCH)
        r"Failed to initialize NVML: Driver/library version mismatch",
        r"NVMLError_LibRmVersionMismatch|NVML_ERROR_LIB_RM_VERSION_MISMATCH|RM has detected an NVML/RM version mismatch",
    ),
    "The CUDA driver library the process loaded (libcuda) is not the version of the host's kernel module.",
    (
        "After a driver upgrade, reboot the host (or reload the nvidia kernel module) so both are one version.",
        "In a container, keep the image's cuda-compat libraries off LD_LIBRARY_PATH when the host driver is "
        "newer than them: they are for older drivers only.",
    ),
    source="CUDA runtime (cudaErrorSystemDriverMismatch)",
)
# The scheduler cannot give the launch a GPU: Kubernetes' FailedScheduling event and Ray's autoscaler.
# Both are warnings that a later retry may clear, so they explain a failure only when nothing else does.
_NO_GPU_TO_SCHEDULE = Signature(
    NO_GPU_VISIBLE,
    _re(
        r"\b\d+ Insufficient nvidia\.com/gpu",
        r"resource request cannot be scheduled right now: \{[^}]*'GPU'",
    ),
    "No node has a free GPU for the launch: the cluster's scheduler cannot place it.",
    (
        "Free GPUs (another job or a dead launch's pod may hold them), ask for fewer (--tp-size, the pod's "
        "nvidia.com/gpu limit, the actor's num_gpus), or add a node with GPUs.",
        "Check the node advertises its GPUs: the NVIDIA device plugin (Kubernetes) or `ray status` (Ray).",
    ),
    fatal=False,
    source="kube-scheduler, ray autoscaler",
)
# transformers (dynamic_module_utils.py, and configuration_utils.py before 4.36): the checkpoint ships
# its own modelling code, which runs only when the launch allows it
_TRUST_REMOTE_CODE = Signature(
    FLAGS_REFUSED,
    _re(
        r"contains custom code which must be executed to correctly load the model",
        r"requires you to execute the (?:configuration|tokenizer|modeling) file in that repo on your local machine",
        # vLLM's transformers_utils/config.py words the same refusal (transformers' above, without --trust-remote-code)
        r"Failed to load the model config\. If the model is a custom model not yet available in the HuggingFace",
    ),
    "The checkpoint ships its own model code, which transformers runs only when the launch trusts it.",
    (
        "Add --trust-remote-code (SGLang and vLLM alike) after reading the repository's code, or use a "
        "release that implements the architecture natively (`imgbuild check MODEL`).",
    ),
    source="transformers/dynamic_module_utils.py",
)
# torch/cuda/__init__.py _lazy_init: the torch installed is a CPU-only build, so no GPU can be used
# whatever the container is given.
_CPU_ONLY_TORCH = Signature(
    NO_GPU_VISIBLE,
    _re(r"Torch not compiled with CUDA enabled"),
    "The torch in this environment is a CPU-only build: it cannot use any GPU.",
    (
        "Install torch's CUDA build (the image's own, or the wheel from download.pytorch.org/whl/cuXXX "
        "matching the CUDA in matrix.yaml); an unpinned `pip install` of another package can replace it.",
        LOCK_ADVICE,
    ),
    source="torch/cuda/__init__.py",
)
# The custom all-reduce kernel (vLLM's csrc/custom_all_reduce.cuh, which SGLang used through 0.2-0.3, and
# sgl-kernel's own) needs CUDA peer access between the GPUs; on GPUs without it the launch dies
# (sglang issue 552: two T4s). The fix is a flag, not NCCL's environment.
_CUSTOM_ALLREDUCE_FAILED = Signature(
    NCCL,
    # CUDACHECK in custom_all_reduce.cuh names its own source line under the CUDA error it raises
    # ("RuntimeError: invalid argument" then "/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:350" while
    # CUDA graphs register the IPC buffers, sglang issue 11957)
    _re(r"^\S*/custom_all_reduce\.cuh:\d+\s*$", r"(?:Cuda error|\bFailed:) \S*custom_all_reduce\.cuh:\d+ '",
        # (vLLM's CUDACHECK prints it as "Failed: FILE:LINE 'ERR'", ai-dynamo issue 787)
        # its utils (custom_all_reduce_utils.py, vLLM's and SGLang's) finding no CUDA runtime to test
        # P2P with (a ROCm build, sglang issue 3890), or the P2P test itself failing (vllm issue 8735)
        r"libcudart is not loaded in the current process",
        r"Error happened when batch testing peer-to-peer access from"),
    "A CUDA call of the custom all-reduce kernel failed (its IPC buffers between the GPUs' processes).",
    (
        "Launch with --disable-custom-all-reduce: tensor parallelism then goes through NCCL.",
        "In a container, give the processes the host's IPC namespace (docker run --ipc=host) and check that "
        "the driver and the image's CUDA agree.",
    ),
    source="custom_all_reduce.cuh",
)
_CUSTOM_ALLREDUCE_P2P = Signature(
    NCCL,
    _re(r"custom_all_reduce\.cuh:\d+ 'peer access is not supported between these two devices'"),
    "The custom all-reduce kernel needs CUDA peer-to-peer access between the GPUs, which these GPUs lack.",
    (
        "Launch with --disable-custom-all-reduce: tensor parallelism then goes through NCCL.",
        "Check `nvidia-smi topo -m`: GPUs on different PCIe roots or behind some virtualisation have no P2P.",
    ),
    source="custom_all_reduce.cuh",
)
# The same refusal from another runtime's P2P setup (TensorRT-LLM issue 1625: "CUDA runtime error in error: peer
# access is not supported between these two devices"): cudaErrorPeerAccessUnsupported between the ranks' GPUs.
_PEER_ACCESS = Signature(
    NCCL,
    _re(r"CUDA runtime error in \w+: peer access is not supported between these two devices",
        r"\bcudaErrorPeerAccessUnsupported\b"),
    "The GPUs cannot reach each other's memory directly (no CUDA peer-to-peer access), which the multi-GPU "
    "communication path asked for.",
    (
        "Check `nvidia-smi topo -m`: GPUs on different PCIe roots, or behind some virtualisation, have no P2P.",
        "In SGLang, --disable-custom-all-reduce sends tensor-parallel traffic through NCCL, which falls back to "
        "shared memory without P2P; set NCCL_P2P_DISABLE=1 if NCCL itself fails the same way.",
    ),
    source="CUDA runtime",
)
# EADDRNOTAVAIL: the address to listen on is not one of this machine's (FastChat issue 1714: localhost
# resolved to ::1 on a host without IPv6). The port is fine; the address is not.
_ADDRESS_NOT_AVAILABLE = Signature(
    PORT_IN_USE,
    _re(r"\[Errno 99\] .{0,120}: cannot assign requested address", r"EADDRNOTAVAIL"),
    "The address to listen on is not one of this machine's, so the port cannot be bound.",
    (
        "Pass --host 0.0.0.0 (every IPv4 address) or an address this machine has (`ip addr`); 'localhost' "
        "may resolve to ::1 where IPv6 is off.",
        "For --dist-init-addr, give this node's own address.",
    ),
    source="uvicorn / socket bind",
)
# a package older or newer than the code that calls it: the module is there, the name is not
_VERSION_MISMATCH = Signature(
    IMPORT_FAILED,
    _re(
        r"AttributeError: module '[\w.]+' has no attribute '\w+'",
        # torchvision/extension.py: torchvision built for another CUDA than torch, and torch's operator
        # registry when torchvision's C++ ops did not load (a torchvision for another torch)
        r"Detected that PyTorch and torchvision were compiled with different CUDA (?:major )?versions",
        r"operator torchvision::\w+ does not exist",
        # transformers' auto registry (models/auto/auto_factory.py register): sglang's own copy of a config
        # class that a newer transformers ships too (sglang PR 3792: Qwen2_5_VLConfig under transformers 4.49)
        r"is already used by a Transformers model",
    ),
    "A package in the environment is not the version the code calling it was written for: "
    "the module imports, but lacks a name it uses.",
    (LOCK_ADVICE,),
    source="python import system",
)
# safetensors (bindings/python: "Error while deserializing header: {SafeTensorError}"): the file does not
# begin with a safetensors header, as a Git LFS pointer checked out in place of the weights does (its
# first 8 bytes read as a header length far over the limit: HeaderTooLarge), or ends before the header's
# offsets do (MetadataIncompleteBuffer: an interrupted download)
_BROKEN_CHECKPOINT = Signature(
    MODEL_NOT_FOUND,
    _re(
        r"Error while deserializing header: (?:HeaderTooLarge|HeaderTooSmall|MetadataIncompleteBuffer|"
        r"InvalidHeader\w*)",
    ),
    "A weight file is not a whole safetensors file: a Git LFS pointer left in place of the weights, or a "
    "download cut short.",
    (
        "Fetch the weights again: `git lfs pull` in a git clone, or `huggingface-cli download REPO` "
        "(a file of a few hundred bytes is an LFS pointer; compare the sizes with the Hub's).",
        "On a shared cache, remove the snapshot's half-written files first (a download killed midway leaves them).",
    ),
    source="safetensors (bindings/python)",
)
# tokenizers reading a tokenizer.json written by a newer release of it: serde's text for an untagged enum
# none of whose variants (the tokenizer models this release knows) matches
_TOKENIZERS_TOO_OLD = Signature(
    IMPORT_FAILED,
    # (PyPreTokenizerTypeWrapper in tokenizers' Python bindings, xinference issue 1919)
    _re(r"data did not match any variant of untagged enum \w*(?:Model|PreTokenizer|Normalizer|Decoder|PostProcessor)"
        r"\w*Wrapper"),
    "The tokenizers package here is older than the one that wrote the model's tokenizer.json.",
    (
        "Upgrade tokenizers (with the transformers that requires it) to a release as new as the model's, or "
        "use an SGLang release whose lock has one (`imgbuild check MODEL --sglang V`, `imgbuild lock V`).",
    ),
    source="tokenizers (serde untagged enum)",
)
CATALOG = CATALOG + (
    _BROKEN_CHECKPOINT, _TOKENIZERS_TOO_OLD,
    _IMPORT, _IMPORT_WARNED, _FABRIC_NOT_READY, _DRIVER_MISMATCH, _CPU_ONLY_TORCH, _NO_GPU, _NO_GPU_TO_SCHEDULE,
    _TRUST_REMOTE_CODE, _KILLED, _RAY_KILLED, _TERMINATED, _CUSTOM_ALLREDUCE_P2P, _PEER_ACCESS, _CUSTOM_ALLREDUCE_FAILED,
    _ADDRESS_NOT_AVAILABLE,
    _VERSION_MISMATCH,
)

_OOM_ADVICE: dict[str | None, tuple[str, ...]] = {
    PHASE_LOAD: (
        "The weights (or the KV pool sized by --mem-fraction-static right after them) did "
        "not fit: use more GPUs (--tp-size) or a quantized checkpoint; if the failure came "
        "while the KV pool was allocated, lower --mem-fraction-static.",
        "Check that no other process holds GPU memory (nvidia-smi).",
        PLAN_ADVICE,
    ),
    PHASE_CAPTURE: (
        # SGLang's own advice: model_executor/cuda_graph_runner.py, CUDA_GRAPH_CAPTURE_FAILED_MSG
        "CUDA graphs are captured in the memory outside the static pool: lower "
        "--mem-fraction-static (e.g. by 0.05) to leave them more room.",
        "Or lower --cuda-graph-max-bs (e.g. 16), which captures fewer, smaller graphs.",
        "--disable-cuda-graph works too, at a large speed cost.",
    ),
    PHASE_RUNTIME: (
        "Activations of a large batch overflowed the memory outside the static pool: "
        "lower --mem-fraction-static, --chunked-prefill-size or --max-running-requests.",
        "With speculative decoding the draft model also lives outside the pool in 0.5.11; "
        "lower --mem-fraction-static further or --speculative-num-steps.",
    ),
    None: (
        "The log does not show when it failed; if during weight load, use more GPUs or a "
        "quantized checkpoint; if during CUDA-graph capture, lower --mem-fraction-static or "
        "--cuda-graph-max-bs; if while serving, lower --chunked-prefill-size.",
        "Check that no other process holds GPU memory (nvidia-smi).",
        PLAN_ADVICE,
    ),
}

UNKNOWN_ADVICE = (
    "No known signature matched; the cause line is the root error SGLang printed.",
    "Search SGLang's issues for that line, and rerun with --log-level debug for more detail.",
)
CHILD_FAILED_ADVICE = (
    "A scheduler process died and the launcher shut the server down; the cause line is "
    "the exception of the first traceback above 'Received sigquit'.",
) + UNKNOWN_ADVICE[1:]
CHILD_REPORT_ADVICE = (
    "The launcher reported only that a child process (a scheduler, an engine core, a rank) "
    "died: its own error is in the lines it printed before, which this excerpt does not hold. "
    "Diagnose the whole log, or that child's own log (torchrun: the rank's error_file).",
) + UNKNOWN_ADVICE[1:]

_SIGQUIT = re.compile(r"Received sigquit from a child proces"  # "proces" in 0.4.x
                      # the tokenizer manager's own handler (managers/tokenizer_manager.py, 0.5.x), which a
                      # docker compose log shows repeated (sglang issue 12076)
                      r"|SIGQUIT received\. signum=\S+ frame=\S+\. It usually means one child failed")
# Other launchers' report that a child process died, with no cause of their own: vLLM's API server
# (v1/engine/utils.py wait_for_engine_startup), torchrun's ChildFailedError summary. Unlike the
# sigquit line they decide only when no signature explains the log.
_CHILD_REPORT = re.compile(
    r"Engine core initialization failed\. (?:See root cause above|Failed core proc)|^Root Cause \(first observed failure\):|\bChildFailedError\b"
    r"|Engine core proc \w+ died unexpectedly"  # vLLM's client (v1/engine/core_client.py)
    r"|\bEngineCore failed to start\."  # vLLM's engine process (v1/engine/core.py run_engine_core)
    # vLLM's api_server.py (0.6-0.8) when its engine process (MQLLMEngine) exits before it is up
    r"|Engine process failed to start(?:\. See stack trace for the root cause|\s*$)"  # (0.6.x: the bare form)
    # SGLang's entrypoints/engine.py: a scheduler process exited (EOF on its pipe) before it was ready
    r"|\bRank \d+ scheduler is dead\. Please check if there are relevant logs"
    # the same with its exit code next to it, as a front end re-raises it (dynamo.sglang: "Error: Rank 0
    # scheduler is dead. Exit code: -6 (SIGABRT)", ai-dynamo issue 5048)
    r"|\bRank \d+ scheduler is dead\. Exit code: -?\d+"
    # the launcher's sigquit_handler (entrypoints/engine.py) running: a child told it that it failed, and it
    # kills its own process tree with SIGQUIT, which the shell reports as "Quit (core dumped)"
    r"|\bengine\.py\", line \d+, in sigquit_handler\b|^Quit \(core dumped\)\s*$"
    # the same, from 0.5.11 (_scheduler_died_error): its hint about -9 and the OOM killer is not the cause
    r"|\bRank \d+ scheduler died during initialization \(exit code: -?\d+\)"
    r"|\bWorker proc \S+ died unexpectedly"  # vLLM's v1/executor/multiproc_executor.py: a TP worker
    # the same executor (0.8.x) and its engine client, when a worker sends SIGUSR1 (vllm issue 16777)
    r"|\b[Gg]ot fatal signal from worker processes, shutting down\b"
    # the same executor (v1/executor/multiproc_executor.py get_response) on a worker's exception: a report only
    # where it quotes no message of the exception's own (a bare assert, vllm issue 41027); a message it quotes
    # is read for its words (vllm-project/recipes issue 760)
    r"|\bWorker failed with error '(?:\w+: ?)?', please check the stack trace above for the root cause"
    # tokenspeed's launcher when its server never answered its readiness probe (tokenspeed issue 365)
    r"|^startup failed: gateway never reached 200 on \S+ within \d+s"
    # vLLM's MQLLMEngine client when its engine process's loop is gone (engine/multiprocessing/client.py,
    # 0.6.x; vllm issue 9175)
    r"|\bRuntimeError: Engine loop has died\b"
    # Triton server's Python backend when a model's stub process died (TensorRT-LLM issue 3526)
    r"|\bStub process '[^']+' is not healthy"
    # Hugging Face Inference Endpoints on a container that exited, its last log line as the "Reason" (TGI issue 3317)
    r"|\bEndpoint failed to start\b"
    # GPUStack's worker on the inference server it launched (GPUStack issue 109: "... exited with code 0.")
    r"|\bInference server exited with code -?\d+"
    # model_executor/model_runner.py (0.4.x-0.5.x): this rank loaded, another did not
    r"|could finish the model loading, but there are other ranks"
    # Xinference's actor framework (xoscar) when the model's subprocess went away
    r"|xoscar\.errors\.ServerClosed: (?:\[[^\]]{0,200}\] )?Remote server \S+ closed"
    # its message as Xinference's client prints it, without the class ("[address=..., pid=...]" above it)
    r"|^Remote server unixsocket://\S+ closed"
    # Ray (python/ray/exceptions.py ActorDiedError): an actor (an engine, a rollout worker) died
    r"|The actor died unexpectedly before finishing this task|The actor is dead because its worker process has died"
    # Ray's worker.py for a task's worker that died (its text lists OOM kill, ray stop, a crash as causes)
    r"|A worker died or was killed while executing a task by an unexpected system error"
    # Ray's core worker (direct_actor_transport.cc) failing the calls queued for an actor that is DEAD
    r"|\bFailing pending tasks for actor \w+ because the actor is already dead\b"
    # Ray's worker exit record for a worker whose process went away (its text lists an OOM kill as one cause)
    r"|\bWorker unexpectedly exits with a connection error code \d+"
    # Vertex AI's endpoint on a serving container that exited while deploying
    r"|\bModel server exited unexpectedly\b"
    # the kubelet restarting a container that exited (its event, and kubectl describe's line)
    r"|\bBack-off restarting failed container\b"
    # RunPod's serverless host when the worker's process ended
    r"|\bworker exited with exit code [1-9]\d*"
    # torchrun's error record of a rank ended by a signal (elastic/multiprocessing/errors), as the
    # summary prints it below "Root Cause": "traceback : Signal 11 (SIGSEGV) received by PID 3304209"
    r"|\btraceback\s*:\s*Signal \d+ \(SIG[A-Z]+\) received by PID"
    # Ollama's server when its llama runner subprocess ended (llm/server.go)
    # (not where it names a segfault: the runner's own crash, ollama issue 6552)
    r"|\bllama runner process has terminated: (?!signal: segmentation fault)"
    # a Go front end's gRPC call to its backend process that went away mid-call (LocalAI's "could not
    # load model: rpc error: code = Unavailable desc = error reading from server: EOF", LocalAI issue 1087)
    r"|\brpc error: code = Unavailable desc = (?:error reading from server: EOF|connection error)"
    # vLLM's v1/executor/multiproc_executor.py: a TP worker process failed while it started
    r"|WorkerProc initialization failed due to an exception in a background process"
    # Unsloth's SyntheticDataKit / fast_inference on the vLLM server subprocess it started
    r"|\bUnsloth: vllm_process failed to load!"
    # vLLM's v1 client once its engine process died (EngineDeadError), as a server in front of it reports it
    r"|EngineCore encountered an issue\. See stack trace \(above\) for the root cause"
    # vLLM's V0 clients on the engine process or loop that died (multiprocessing/client.py, async_llm_engine.py)
    r"|\bEngine process \(pid \d+\) died\b|\bEngine loop is not running\b|\bBackground loop is (?:stopped|not running)\b"
    # vLLM's RemoteOpenAIServer (tests/utils.py) on a server that exited while it waited for health
    r"|\bServer exited unexpectedly\b"
    # Ray's ActorDiedError for an actor whose __init__ raised (an LLM engine actor); its own traceback, when
    # printed, is below (OpenRLHF issue 358)
    r"|The actor died because of an error raised in its creation task"
    # a benchmark harness watching the pods it deployed (llm-d-benchmark issue 668)
    r"|\bCrashed container in pod\b"
    # AReaL's remote SGLang engine (areal/engine/sglang_remote.py) giving up on the server it waited for
    r"|\b(?:RuntimeError|TimeoutError): server launch failed\b"  # (TimeoutError in AReaL 1.0, AReaL issue 979)
)
# a server's own line that loading the model failed, with no exception of its own (llama.cpp's
# loaders, LocalAI): a failure without a traceback
_FAILED_LOAD = re.compile(r"\b[Ff]ailed (?:to load|loading) (?:the )?model\b|\bLoading the model failed\b"
                          # a serving front end's last word on a server that never came up (KServe's
                          # "Failed to start model server: integer division or modulo by zero")
                          r"|\b[Ff]ailed to (?:start|launch) (?:the )?(?:model |inference |API |HTTP )?server\b")
# urllib3's debug line for a request sent through an HTTP proxy names the absolute URL: the server's
# own address asked through a proxy (SGLang's warm-up and get_model_info, when http_proxy is set and
# no_proxy does not list it), answered by the proxy with an error status
_PROXIED_SELF = re.compile(
    r'"(?:GET|POST) http://(?:0\.0\.0\.0|127\.0\.0\.1|localhost):\d{1,5}/\S{0,200} HTTP/1\.[01]" [45]\d\d\b')
PROXY_ADVICE = (
    "The server's own requests (its warm-up, /get_model_info) went through an HTTP proxy, which "
    "refused them: set no_proxy=localhost,127.0.0.1,0.0.0.0 (and NO_PROXY) in the server's "
    "environment, or unset http_proxy/https_proxy for it.",
)
_TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
# "[2026-05-01 10:00:00 TP0] " and "2025-07-02 16:41:31 | ERROR | stderr | " style prefixes
# glog (Triton server): "E1115 02:58:51.162611 1 x.cc:634] "
_GLOG = r"[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [\w./-]+:\d+\]"
_PREFIX = re.compile(
    # journalctl (a systemd service) and syslog: "Mar 01 10:00:00 gpu-node sglang[1234]: ", and
    # journalctl -o short-iso: "2025-03-01T10:00:00+0000 gpu-node sglang[1234]: " (before docker's timestamp,
    # which would take the date alone)
    r"^\s*(?:(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T[\d:.]+[+-]\d{2}:?\d{2}) [\w.-]+ [\w.@/-]+\[\d+\]: "
    # [2026-05-01 10:00:00 TP0]; the lookahead bounds the bracket, so a long line without ']' is not
    # scanned once per time in it
    r"|\[(?=[^\]]{0,200}\])[^\]]*\d{2}:\d{2}:\d{2}[^\]]*\]\s*"
    r"|\d{4}-\d{2}-\d{2} [\d:,.]+ - [\w.]+ - [A-Z]+ - "  # logging's default: "time - name - LEVEL - "
    # 2025-07-02 16:41:31 | ERROR | x |, docker --timestamps, CloudWatch's "2023-12-15T20:06:10.216+01:00\t"
    # FastChat's "time | LEVEL | stream | " (its third field too)
    r"|\d{4}-\d{2}-\d{2} [\d:,.]+ \| (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \| [\w.-]{1,40} \| ?"
    r"|\d{4}-\d{2}-\d{2}[ T][\d:,.]+(?:Z|[+-]\d{2}:?\d{2})?\s*(?:\|[^|]*\|\s*)*"
    # Ray workers: "(WorkerDict pid=616, ip=...)"; vLLM's own workers: "(VllmWorker rank=2 pid=267)"
    r"|\(\w+(?: rank=\d+)? pid=\d+(?:, ip=[\w.-]+)?\)\s*"
    r"|\[rank\d+\]:\s?"  # torch.distributed's per-rank prefix
    r"|[\w.-]+-\d+\s+\|\s"  # docker compose: "sglang-1  | "
    r"|[\w.-]+\s{2,}\|\s"  # docker compose with container_name: "scalellm    | "
    r"|\[pod/[^\]]+\]\s?"  # kubectl logs --prefix: "[pod/name/container] "
    # vLLM-style "INFO 03-06 10:05:08 __init__.py:190] ", "ERROR 10-30 17:32:00 [v1/executor/x.py:671] "
    r"|[A-Z]+ \d{2}-\d{2} [\d:]+ (?:\[)?[\w./]+:\d+\]\s*"
    r"|[A-Z]+ \d{4}-\d{2}-\d{2}T[\d:.]+Z\s+"  # cloud log viewers: "ERROR 2025-04-07T19:13:52.318Z "
    r"|\w{3} \w{3} +\d+ [\d:]+ \d{4}\[\d+,\d+\]<std(?:out|err)>:"  # mpirun --tag-output
    r"|[\u2502\u2503]\s*"  # a terminal pane's frame (k9s, lazydocker): "│ ERROR ... │"
    r"|>(?: ?>)* ?"  # a Markdown quote, as a reply quotes a log ("> [time] KeyError: ...", "> > ...")
    r"|\.{3}\s+(?=\S)"  # a paste's elision before the line it kept ("... AssertionError: ...")
    r"|[\w.-]+\.(?:cc|cpp|py):\d+\]\s"  # a glog record cut before its file ('pb_stub.cc:366] "Failed to ...')
    r"|E {3,}(?=\S)"  # pytest's report of the failing line's exception ("E       RuntimeError: CUDA error: ...")
    # glog (Triton server): "E1115 02:58:51.162611 1 x.cc:634] "; torch's logging writes the same with a
    # path and a compile id: "W1112 00:26:33.338000 39792 torch/_inductor/codecache.py:604] [0/0] "
    rf"|{_GLOG}\s*(?:\[[\d/]+\]\s*)?)"
)
_GLOG_RECORD = re.compile(rf"\s*{_GLOG}")
# what a rich editor (an issue form, a chat) makes of ASCII: curly quotes, and "--" before a flag as
# an en or em dash
_TYPOGRAPHIC = re.compile(r"[\u2018\u2019\u201c\u201d]|[\u2013\u2014](?=[A-Za-z])")
_TYPOGRAPHIC_ASCII = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "--", "\u2014": "--"}
# Ray's de-duplication note at the end of a line; (?<!\s): a run of spaces is tried from its start only
_EMPHASIS = re.compile(r"^(\*\*|`)(?=[^\s*`])(.+?)(?<=[^\s*`])\1\s*$")  # (not a fence: ```)
_ENTITY = re.compile(r"&(?:quot|apos|amp|lt|gt|#\d{2,3}|#x[0-9a-fA-F]{2});")
_RAY_REPEATED = re.compile(r"(?<!\s)\s*\[repeated \d+x across cluster\]\s*$")
# colour codes, also as pasted without their ESC byte ("[36m(WorkerDict pid=1)[0m") or as ^[
# (three branches, each with its first character, so re skips the text that cannot start one)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\^\[\[(?:\d{1,3};)*\d{1,3}m|\[(?:\d{1,3};)*\d{1,3}m")
_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*\w*(?:Error|Exception|Exit|Interrupt|Failure)(?::\s.*|:?$)"
    # an exception class named otherwise, in a module of errors (triton.runtime.errors.OutOfResources)
    r"|^(?:[a-z_]\w*\.)+(?:errors|exceptions)\.[A-Z]\w*:\s"
)
_FRAME = re.compile(r"^\s*File \"")
# \b: only a word's first letter starts a match, so a long run of letters is scanned once, not once per letter
_HIT_EXCEPTION = re.compile(r"\b\w+ hit an exception")
# c10's report of a C++ exception (CUDA errors surface so in Ray workers' logs)
_CPP_EXCEPTION = re.compile(r"^Exception raised from \w+(?:\(\))? at ")  # "from operator() at" (torch_npu's ops)
# a server's own line that something failed with a Python exception ("Failed to initialize Python stub:
# TypeError: ...", "failed to load 'm' version 1: Internal: TypeError: ...", quoted as glog quotes it):
# a failure without a traceback
# a tool's own line for a failure that ends it: pip's and docker build's "ERROR: ", the docker daemon's
# refusal, the NVIDIA container toolkit's hook (pip's note on its resolver is advice, not a failure)
_STATED_ERROR = re.compile(r"^(?:ERROR|Error|error): +(?!pip's dependency resolver)\S|\bError response from daemon: "
                           # a program's own line naming the exception it caught ("RuntimeError in llava image
                           # encoding: The expanded size ...", sglang issue 273)
                           r"|^\w*(?:Error|Exception) in [\w .-]{1,60}: \S"
                           r"|^Server error: 5\d\d - "  # Xinference's client, the worker's error after it
                           # ggml's CUDA backend (Ollama, llama.cpp) stating the CUDA error it stops on
                           r"|^CUDA error: \w"
                           # flash-attention's CHECK_CUDA (hopper/flash_fwd_launch_template.h; "CUDA error
                           # (file:line): invalid argument", FreeToken issue 442)
                           r"|^CUDA error \([\w./+-]+:\d+\): \w"
                           # a logger's "LEVEL - message" without its time (sglang_router's launcher), and
                           # pytest's summary of a test that failed on an exception
                           r"|^ERROR - \S|^FAILED \S+::\S+ - \w*(?:Error|Exception)\b"
                           r"|\bpull access denied for \S|^nvidia-container-cli: [\w ]{1,40} error: "
                           # CANN's log records at ERROR level that say something failed ("[ERROR] RUNTIME(pid,proc):
                           # date [file:line]tid ... failed", "[ERROR] HCCL(...)"), torch_npu's "[ERROR] date (PID:n,
                           # Device:0, RankID:-1) ERR01005 OPS internal error", and an Ascend test harness's "[ASSERT]"
                           r"|^\[ERROR\] [A-Z]{2,12}\(\d+,[^)]{0,80}\):\d{4}-.{0,400}?(?:\b[Ff]ail|\berror\b|\bError\b)"
                           r"|^\[ERROR\] \d{4}-\d\d-\d\d-[\d:]+ \(PID:\d+, Device:-?\d+, RankID:-?\d+\) ERR\d+ "
                           r"|^\[ASSERT\]\s*\w"
                           # a C/C++ library's level-first record ("error 12789 pid[12789] [BM devmm_ioctl.cpp:122] svm
                           # advise failed", memfabric's hybm under SGLang's Ascend transfer engine, sglang issue 10748)
                           r"|^error \d+ pid\[\d+\] \[\w+ [\w.]+:\d+\] "
                           # a sentence saying something failed, then the exception it quotes ("The model service failed
                           # to start（RuntimeError: The bias should be 1D）", Ascend/sglang's CI issues)
                           r"|\b(?:[Ff]ail(?:ed|s|ure)?|[Ee]rror)\b[^:(（]{0,80}[:(（]\s*[\"“]?\w*(?:Error|Exception): \S")
_FAILED_WITH = re.compile(r"^(?:ERROR:?\s+)?\"?[Ff]ailed to [^:]{1,120}: (?:\w+: )?\w*(?:Error|Exception): "
                          # SGLang's disaggregation ("Prefill transfer failed for request ... with exception
                          # KVTransferError(bootstrap_room=...): Decode instance could be dead", Mooncake issue 2177)
                          r"|^.{0,200}?\bfailed for request\b.{0,300} with exception \w*(?:Error|Exception)\(")
# a process that crashed in native code: the shell's report, Python's faulthandler
_CRASH = re.compile(r"\b[Ss]egmentation fault"  # (two ranks' reports interleaved: "faultSegmentation fault")
                    # a kernel's fault as CUDA's GPU core dump records it (CUDA_ENABLE_COREDUMP_ON_EXCEPTION; an
                    # illegal address, SkyRL issue 428)
                    r"|\bcoredump: Detected an exception of type CUDBG_EXCEPTION_\w+"
                    # SIGFPE as bash ("Floating point exception (core dumped)") and zsh ("[1] 123 floating point
                    # exception  cmd") report it
                    r"|\b[Ff]loating point exception\b"
                    # SIGILL: a binary built for CPU instructions this CPU lacks (AVX2, AVX-512), as the shell
                    # reports it ("line 69:   134 Illegal instruction", "Illegal instruction (core dumped)")
                    r"|\bIllegal instruction(?: \(core dumped\)|\s+\S|\s*$)"
                    # SIGBUS as the shell reports it: in a container, most often a /dev/shm too small for
                    # the shared memory torch's and NCCL's processes map (docker's 64 MiB default)
                    r"|\bBus error(?:\s+\(core dumped\)|\s*$)"
                    # SIGABRT as faulthandler reports it (a double free in a native library, vllm issue 15687)
                    r"|\bFatal Python error: Aborted\b"
                    # absl's / Ray's failure signal handler ("*** SIGBUS received at time=1709393443 on cpu 1 ***")
                    r"|\*\*\* SIG[A-Z]{3,6} received at time=\d+"
                    # a Rust launcher's or router's panic (TGI's launcher and router, sgl-router)
                    r"|\bthread '[^']{1,80}' panicked at\b"
                    # a C++ exception nothing caught (std::terminate's report), a C++ engine's failed check
                    r"|\bterminate called after throwing an instance of\b|\]\[ERROR\] Assertion failed: "
                    # C's assert() as glibc reports it: "python: x.cpp:40: f(): Assertion `cond' failed."
                    r"|: Assertion `[^`]{0,400}' failed\."
                    # a CUDA kernel's device-side assert, as the runtime prints it per thread ("IndexKernel.cu:92:
                    # operator(): block: [1193,0,0], thread: [124,0,0] Assertion `...` failed.", sglang issue 1279)
                    r"|\bthread: \[\d+,\d+,\d+\] Assertion `.{0,400}` failed\."
                    r"|\bDevice-side assertion `.{0,400}' failed\."  # the same in torch's HIP build
                    # ROCm's HSA runtime on a kernel's bad memory access (it aborts the process)
                    r"|^Memory access fault by GPU node-\d+ \(Agent handle: "
                    # CANN's report of an AI Core / vector core task that faulted on the NPU ("Kernel task happen
                    # error, retCode=0x31, [vector core exception]", sglang issue 12464: Ascend)
                    r"|\bKernel task happen error, retCode=0x[0-9a-fA-F]+"
                    # gdb on a core dump
                    r"|^Program terminated with signal SIG[A-Z]+"
                    # a CUDA driver call that failed, as torch_memory_saver (SGLang's --enable-memory-saver)
                    # reports it; code 2 (out of memory) is in the catalog, the others are failures too
                    r"|\[torch_memory_saver\.cpp\] CUresult error"
                    # Ray's C++ core (src/ray/util/logging.cc) on an exception nothing caught in a worker
                    # ("Unhandled exception: N5boost10wrapexcept... what(): thread: Resource temporarily unavailable")
                    r"|\blogging\.cc:\d+: Unhandled exception: "
                    # a C++ engine's CHECK naming its source line: glog's "file.cc:12] Check failed: ", LMDeploy's
                    # TurboMind "[TM][FATAL] comm/device_comm.cc(28): Check failed: 0 ..." (not the NVIDIA kernel
                    # module's "NVRM: ...: Check failed: Out of memory" in dmesg, which is a report, not the crash)
                    # (glog's own prefix is taken off with the log's, leaving the line to start with it)
                    r"|\.(?:cc|cpp|cu|cuh|h)(?:\(\d+\):|:\d+\]) Check failed: |^Check failed: "
                    # TVM's runtime (MLC-LLM): "memory_manager.cc:115: InternalError: Check failed: (...) is false"
                    r"|\.(?:cc|cpp|h):\d+: \w*Error: Check failed: ")
# a glog record at ERROR or FATAL level that says something failed (Mooncake's transfer engine: "E0115 ...
# rdma_context.cpp:81] Failed to open device mlx5_8", Mooncake issue 1384); gRPC's harmless E-level notes
# ("grpc_wait_for_shutdown_with_timeout() timed out") say no such thing
_GLOG_FAILURE = re.compile(
    r"(?:^|[\s:)|])[EF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [\w./-]+:\d+\] .{0,300}?\b[Ff]ailed to \w"
    r"|(?:^|[\s:)|])[EF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [\w./-]+:\d+\] .{0,300}?\bcannot \w")
# Python's own words for a call that does not fit the function (a TypeError), pasted without the
# "TypeError: " prefix: a failure in the program's code, with no traceback
_BAD_CALL = re.compile(r"^\w+\(\) (?:got multiple values for argument '\w+'|got an unexpected keyword argument '\w+'"
                       r"|missing \d+ required (?:positional|keyword-only) arguments?: "
                       r"|takes (?:from \d+ to )?\d+ positional arguments? but \d+ (?:was|were) given)")
_IMPORT_IGNORED = re.compile(r"Ignore import error when loading (sglang\.srt\.models\.\w+)")
_READY = re.compile(r"The server is fired up and ready to roll!")

# Milestones in start-up order (model_runner.py, memory_pool.py, http_server.py)
_M_LOAD_BEGIN = re.compile(r"Load weight begin")
_M_LOAD_END = re.compile(r"Load weight end")
_M_POOL = re.compile(r"KV Cache is allocated|Memory pool end")
_M_CAPTURE_BEGIN = re.compile(r"Capture (cuda|draft cuda|piecewise CUDA) graph begin|Capture cuda graph bs")
_M_CAPTURE_END = re.compile(r"Capture cuda graph end")


# Every keyword some regex of diagnose needs: the catalog's, the markers' above (_EXCEPTION's
# words sit in a group, so they are named), and the CPU-launch hints'. A keyword holding
# another is dropped: the shorter one finds its lines too.
_CPU_HINTS = re.compile(
    r"--device[ =]cpu|device='cpu'|Intel AMX|Expected variant: CPU|Auto-configed device: cpu"
)
_ALL_KEYS = [k for sig in CATALOG for rx in sig.patterns for k in rx.keys] + [
    k for rx in (_SIGQUIT, _TRACEBACK, _FRAME, _HIT_EXCEPTION, _CPP_EXCEPTION, _IMPORT_IGNORED, _READY,
                 _M_LOAD_BEGIN, _M_LOAD_END, _M_POOL, _M_CAPTURE_BEGIN, _M_CAPTURE_END, _CPU_HINTS, _CHILD_REPORT,
                 _FAILED_WITH, _CRASH, _FAILED_LOAD, _PROXIED_SELF, _BAD_CALL, _GLOG_FAILURE)
    for k in _keys_of(rx.pattern)] + ["error", "exception", "exit", "interrupt", "fail", "[assert]"]
_HOT_KEYS = tuple(k for k in dict.fromkeys(_ALL_KEYS) if not any(o != k and o in k for o in _ALL_KEYS))


# Letters from the rarest in a log to the commonest. Each key is filed under its rarest letter:
# a one-letter `in` is a memchr, so a line without 'x' costs nothing for the keys holding one.
_RARITY = "qjxzkvwyg\"[(_bhfpmucdlsanotier"


def _rarity(ch: str) -> int:
    return _RARITY.index(ch) if ch in _RARITY else len(_RARITY)


def _gated(keys: Iterable[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The keys grouped under their rarest letter, the rarest group first."""
    gates: dict[str, list[str]] = {}
    for key in keys:
        gates.setdefault(min(key, key=_rarity), []).append(key)
    return tuple((gate, tuple(gates[gate])) for gate in sorted(gates, key=_rarity))


_GATED = _gated(_HOT_KEYS)


def _holds_key(folded: str) -> bool:
    for gate, keys in _GATED:
        if gate in folded:
            for key in keys:
                if key in folded:
                    return True
    return False


def _is_hot(line: str) -> bool:
    """Whether the line holds one of _HOT_KEYS: a line without any matches no regex of
    diagnose, and is never looked at again. (`in` tests, each a C scan of the line, are faster
    here than one regex alternation of the keys, which re tries key by key at every position.)"""
    if _holds_key(_fold(line)):
        return True
    # a colour code inside a word hides it until strip_prefix removes the code, and so does an HTML entity
    plain = _decoded(line)
    return plain is not line and _holds_key(_fold(plain))


def _decoded(text: str) -> str:
    """The text as a terminal or a browser showed it: colour codes removed, and HTML entities (a log
    copied from a page's source: &quot; &#39; &gt;) decoded. The text itself where it holds neither."""
    if "[" in text and _ANSI.search(text) is not None:
        text = _ANSI.sub("", text)
    if "&" in text and _ENTITY.search(text) is not None:
        text = html.unescape(text)
    return text


def strip_prefix(line: str) -> str:
    """The message without its prefixes: SGLang's '[time TPn] ', a logger's 'time | LEVEL |
    name | ', docker's timestamps, compose's 'service-1  | ', torch's '[rank0]: '."""
    text = _decoded(line.rstrip("\r\n"))
    text = _RAY_REPEATED.sub("", text) if "[repeated " in text else text
    if not text.isascii():
        text = _TYPOGRAPHIC.sub(lambda m: _TYPOGRAPHIC_ASCII[m.group(0)[0]], text)
    if "\u2502" in text or "\u2503" in text:  # a terminal pane's frame, closed at the right too
        text = text.rstrip().rstrip("\u2502\u2503").rstrip()
    for _ in range(6):  # vLLM nests three process prefixes before its logger's
        stripped = _PREFIX.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    # an error line a post set in bold or in a code span ("**AttributeError: ...**", "`Killed`")
    if text[:1] in "*`" and (emphasis := _EMPHASIS.match(text)) is not None:
        text = emphasis.group(2)
    return text


@dataclass(frozen=True)
class Diagnosis:
    """What failed, why, and what to do. ``failure_class`` is one of CLASSES."""

    failure_class: str
    cause: str | None = None
    advice: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    summary: str | None = None
    phase: str | None = None  # cuda-oom only: load / cuda-graph-capture / runtime
    via: str | None = None  # "child-failed" when a scheduler's death carried the cause
    line_number: int | None = None  # 1-based line of the cause
    confidence: str = "matched"  # "matched" a signature line, or "inferred" from context
    ready: bool = False  # the log shows "The server is fired up and ready to roll!"
    packages: tuple[str, ...] = ()  # import-failed: "name version" of the traceback's packages

    @property
    def failed(self) -> bool:
        return self.failure_class != NONE

    def to_dict(self) -> dict[str, object]:
        return {
            "class": self.failure_class,
            "cause": self.cause,
            "advice": list(self.advice),
            "evidence": list(self.evidence),
            "summary": self.summary,
            "phase": self.phase,
            "via": self.via,
            "line": self.line_number,
            "confidence": self.confidence,
            "ready": self.ready,
        } | ({"packages": list(self.packages)} if self.packages else {})

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Diagnosis:
        return cls(
            failure_class=str(data["class"]),
            cause=data.get("cause"),  # type: ignore[arg-type]
            advice=tuple(data.get("advice") or ()),  # type: ignore[arg-type]
            evidence=tuple(data.get("evidence") or ()),  # type: ignore[arg-type]
            summary=data.get("summary"),  # type: ignore[arg-type]
            phase=data.get("phase"),  # type: ignore[arg-type]
            via=data.get("via"),  # type: ignore[arg-type]
            line_number=data.get("line"),  # type: ignore[arg-type]
            confidence=str(data.get("confidence") or "matched"),
            ready=bool(data.get("ready")),
            packages=tuple(data.get("packages") or ()),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class _Traceback:
    start: int  # index of the "Traceback (most recent call last):" line
    exception: int | None  # index of its first exception line, None when cut off
    frames: tuple[str, ...]


def _match(text: str) -> Signature | None:
    if "Ignore import error" in text and _IMPORT_IGNORED.search(text):
        # SGLang imports every model module and logs the failures it ignores; such a
        # line explains a failure only together with one (see _refine_architecture).
        return None
    if "NCCL INFO " in text:  # NCCL's INFO level: a plugin it did not find, its topology; never the failure
        return None
    folded = _fold(text)
    for sig in CATALOG:
        if sig is not _KILLED and sig.matches(text, folded):
            return sig
    return None


def _class_signature(klass: str) -> Signature:
    """The catalog's first signature of ``klass``: its summary and advice stand for the class."""
    return next(sig for sig in CATALOG if sig.failure_class == klass)


_FLAGS_SIGNATURE = _class_signature(FLAGS_REFUSED)


# SGLang's own texts on the way to ready, per release (scripts/gen_matrix/messages.py reads them from the wheels)
MESSAGES_PATH = Path(__file__).resolve().parents[1] / "data" / "sglang_messages.json"
VLLM_REFUSALS_PATH = Path(__file__).resolve().parents[1] / "data" / "vllm_config_refusals.json"
_EXCEPTION_PREFIX = re.compile(r"^(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception): ")
_MIN_LITERAL = 24  # a text's fixed words, at least: shorter ones ("Invalid {}: {}") would match anything
# vLLM's config checks that refuse what they were given; its AssertionErrors ("This is a bug"),
# RuntimeErrors (no device, a config without KV heads) and ImportErrors are other classes' business
_VLLM_REFUSAL_KINDS = ("raise ValueError", "raise NotImplementedError", "raise ArgumentTypeError")

_VLLM_FLAGS_SIGNATURE = Signature(
    FLAGS_REFUSED,
    (),
    "vLLM's configuration checks refused the arguments it was given.",
    (
        "Change the argument the message names: `vllm serve --help` lists them for the installed release, "
        "and the check's wording says which combination it refuses.",
        "A framework that starts vLLM for you (verl, OpenRLHF, Ray Serve) passes its own config keys "
        "through as these arguments: fix them there.",
    ),
    source="vllm/config, vllm/engine/arg_utils.py",
)


def _read_messages(path: Path) -> list[dict]:
    try:
        return list(json.loads(path.read_text(encoding="utf-8"))["messages"])
    except (OSError, ValueError, KeyError):
        return []


def _refusal_pattern(texts: Iterable[str]) -> re.Pattern[str] | None:
    """The texts as one pattern: each text's fixed words in order, anything where its source
    formats a value in. Texts with too few fixed words to be told from others are left out."""
    alternatives = set()
    for text in texts:
        # the first sentence where it is told from others alone: a paste cut short still holds it (a
        # sentence can end without its space where the source joins two literals: "no_buffer.To use")
        first = re.split(r"\.(?: |(?=[A-Z]))", text, maxsplit=1)[0]
        if first != text and len(first.replace("{...}", "")) >= 2 * _MIN_LITERAL:
            text = first
        pieces = [piece.strip() for piece in text.split("{...}")]
        if sum(len(piece) for piece in pieces) < _MIN_LITERAL or len(pieces[0]) < 8:
            continue
        alternatives.add(r".{0,200}?".join(re.escape(piece) for piece in pieces if piece))
    return re.compile("(?:" + "|".join(sorted(alternatives)) + ")") if alternatives else None


_REFUSAL_KINDS = ("raise ValueError", "raise NotImplementedError", "assert")
_NAMES_A_SETTING = re.compile(r"(?:^|[\s(`'])--[a-z][a-z0-9-]+|\bSGLANG_[A-Z0-9_]+=")


@lru_cache(maxsize=1)
def _server_args_refusals() -> re.Pattern[str] | None:
    """Every check server_args.py (and its arg_groups) raises in any release. None without the data."""
    return _refusal_pattern(str(m["text"]) for m in _read_messages(MESSAGES_PATH)
                            if (m.get("step") == "server-args"
                                and (str(m.get("kind", "")).startswith("raise") or m.get("kind") == "assert"))
                            # a check further on (a pool, a loader) that names the flag or the variable it refuses
                            or (m.get("kind") in _REFUSAL_KINDS and _NAMES_A_SETTING.search(str(m.get("text", "")))))


@lru_cache(maxsize=1)
def _vllm_refusals() -> re.Pattern[str] | None:
    """Every check vLLM's config classes and argument parser raise (scripts/gen_matrix/vllm_messages.py)."""
    return _refusal_pattern(str(m["text"]) for m in _read_messages(VLLM_REFUSALS_PATH)
                            if m.get("kind") in _VLLM_REFUSAL_KINDS
                            # cli_args.py's checks of `vllm serve` flags, raised as TypeError
                            or (m.get("kind") == "raise TypeError" and str(m.get("text", "")).startswith("Error: --")))


# pydantic's report on a config class that refused its values (vLLM's config classes are pydantic
# dataclasses from 0.10: "1 validation error for SchedulerConfig", then "  Value error, <the check's text>");
# the check's own text, when the catalog knows it (a model type transformers lacks), names the class first
_CONFIG_VALIDATION = re.compile(r"(?:[\w.]+\.)?ValidationError: \d+ validation errors? for \w*Config\b")


def _config_refusal(text: str) -> Signature | None:
    """``text`` (an exception line) is, word for word, one of SGLang's server_args refusals or one of
    vLLM's config refusals, or pydantic's report that one of vLLM's config classes refused its values:
    the signature saying so, else None."""
    if _CONFIG_VALIDATION.match(text.strip()):
        return _VLLM_FLAGS_SIGNATURE
    message = _EXCEPTION_PREFIX.sub("", text.strip(), count=1)
    for pattern, signature in ((_server_args_refusals(), _FLAGS_SIGNATURE), (_vllm_refusals(), _VLLM_FLAGS_SIGNATURE)):
        if pattern is not None and pattern.match(message) is not None:
            return signature
    return None


# a command line's own parse_args (an argparse subclass that checks more: vLLM's FlexibleArgumentParser)
# (LLaMA-Factory's hparams/parser.py get_train_args: "vLLM/SGLang backend is only available for API, CLI and Web.")
_PARSE_ARGS_FRAME = re.compile(r'", line \d+, in (?:parse_(?:known_)?args|(?:get|check|verify|validate)_\w*args)$')


# SGLang's server_args.py, and arg_groups/ where 0.5.19+ moved its checks (mamba_hook.py, model_hook.py ...),
# or a command line's parse_args
_SERVER_ARGS_FRAME = re.compile(r"server_args\.py|/sglang/srt/arg_groups/|" + _PARSE_ARGS_FRAME.pattern)


def _classify(msgs: _Messages, tb: _Traceback) -> Signature | None:
    """A traceback's exception by the catalog; an unmatched one raised from server_args.py or a
    parser's parse_args is the launcher refusing the flags (SGLang's checks are asserts and
    ValueErrors there), one raised
    while ninja ran a kernel build is that build failing."""
    assert tb.exception is not None
    text = _exception_text(msgs, tb.exception)
    if tb.frames and _AITER_CODEGEN_FRAME.search(tb.frames[-1]):
        return _JIT_SIGNATURE  # raised by the kernel generator itself (its import too): the JIT build failed
    sig = _match(text)
    if sig is None and tb.frames and _SERVER_ARGS_FRAME.search(tb.frames[-1]):
        return _FLAGS_SIGNATURE
    if sig is None:  # an excerpt that starts below server_args.py's (or vLLM's config's) frame
        sig = _config_refusal(text)
    if sig is None and text.startswith("KeyError") and any(
            "configuration_auto.py" in f or ("auto_factory.py" in f and "tokenization_auto" in " ".join(tb.frames))
            for f in tb.frames):
        # transformers' CONFIG_MAPPING has no entry for the checkpoint's model_type, or TOKENIZER_MAPPING none
        # for its config class (a GGUF Mistral 3, vllm issue 17210): too old
        return _UNSUPPORTED_SIGNATURE
    if sig is None and text.strip() == "NotImplementedError" and tb.frames:
        # vLLM's platforms: the base Platform (interface.py) answers only where no device platform was detected;
        # a platform's check_and_update_config refuses the configuration asked for (vllm issues 8243, 12522)
        if "vllm/platforms/interface.py" in tb.frames[-1]:
            return _NO_GPU
        if tb.frames[-1].endswith("in check_and_update_config"):
            return _VLLM_FLAGS_SIGNATURE
    if sig is None and text.strip() == "AssertionError" and _failing_line_is(msgs, tb.exception, _CAPABILITY_ASSERT):
        return _NO_KERNEL_SIGNATURE
    if sig is None and text.startswith("AssertionError") and _failing_line_is(msgs, tb.exception, _GPU_PRESENT_ASSERT):
        return _NO_GPU
    if sig is None and text.strip() == "AssertionError" and _failing_line_is(msgs, tb.exception, _TP_DIVIDES_ASSERT):
        return _FLAGS_SIGNATURE
    if sig is None and "got an unexpected keyword argument" in text \
            and _failing_line_is(msgs, tb.exception, _ARGS_FROM_OPTIONS):
        return _FLAGS_SIGNATURE
    if sig is None and (_in_jit_build(tb.frames) or any(_PACKAGE_BUILD_FRAME.search(f) for f in tb.frames)):
        return _JIT_SIGNATURE
    if sig is None and _is_import_chain(tb.frames):
        return _IMPORT
    if sig is None and _KILLED.matches(text):  # "CalledProcessError: ... died with <Signals.SIGKILL: 9>"
        return _KILLED
    return sig


_JIT_SIGNATURE = _class_signature(JIT_BUILD_FAILED)
# the functions that run ninja for a kernel compiled at launch: torch/utils/cpp_extension.py
# (_run_ninja_build, which flashinfer's older JIT and deepspeed use) and flashinfer/jit/cpp_ext.py
# (run_ninja); a traceback through them is a build that failed, whatever its exception says; so is one through
# TVM's nvcc driver (tvm/contrib/nvcc.py compile_cuda: MLC-LLM's and TVM-FFI's kernels, mlc-llm issue 3285)
_JIT_BUILD_FRAME = re.compile(r'", line \d+, in (?:_run_ninja_build|run_ninja|compile_cuda)\b')


# pip building a package from source (its isolated build environment, setuptools' PEP 517 hooks): an
# exception there is the build failing, not an import (vllm issues 11191, 16920)
_PACKAGE_BUILD_FRAME = re.compile(
    r'File "[^"]*(?:/pip-build-env-|/pyproject_hooks/_in_process/|/setuptools/build_meta\.py")')


# AMD aiter's JIT generating a kernel's sources (aiter_meta/csrc/cpp_itfs/*_generate.py) below its "start build"
# (ROCm/aiter issue 843: the generator's own import failing)
_AITER_CODEGEN_FRAME = re.compile(r'/aiter_meta/csrc/\S+_generate\.py", line \d+')


def _in_jit_build(frames: Iterable[str]) -> bool:
    return any(("ninja" in f or "nvcc.py" in f) and _JIT_BUILD_FRAME.search(f) for f in frames)


_UNSUPPORTED_SIGNATURE = _class_signature(UNSUPPORTED_ARCHITECTURE)
_NO_KERNEL_SIGNATURE = _class_signature(NO_KERNEL_IMAGE)
# the source line Python prints under the failing frame, when it asserts the GPU's generation: SGLang's
# utils (is_sm90_supported, is_sm100_supported, is_blackwell ...), torch's get_device_capability
_CAPABILITY_ASSERT = re.compile(
    r"^\s*assert\b.*\b(?:is_sm\d+\w*_supported|is_(?:hopper|blackwell|ampere)\w*|get_device_capability|"
    r"get_device_sm|device_capability|sm_version|compute_capability)\b")


# ... or that torch sees a GPU at all (Megatron's initialize.py: "assert torch.cuda.is_available(), 'Megatron
# requires CUDA.'"), whatever message the assert carries
_GPU_PRESENT_ASSERT = re.compile(r"^\s*assert\b.*\btorch\.cuda\.(?:is_available|device_count)\(\)")
# ... or that the tensor-parallel size divides a model dimension ("assert self.total_num_kv_heads % tp_size == 0",
# vLLM's attention layers; vllm issue 4953): the --tensor-parallel-size the launch asked for
_TP_DIVIDES_ASSERT = re.compile(r"^\s*assert\b.*%\s*(?:self\.)?(?:tp_size|tensor_parallel_size|tp_world_size)\b")


# ... or that builds an engine's argument class from a dict of options (LLaMA-Factory's
# "AsyncEngineArgs(**engine_args)" under an older vLLM: "__init__() got an unexpected keyword argument")
_ARGS_FROM_OPTIONS = re.compile(r"^.*\b\w*(?:Args|Config)\(\*\*\w+\)")


def _failing_line_is(msgs: _Messages, exception: int, failing_line: re.Pattern[str]) -> bool:
    """Whether the exception's failing line (just above it, or above Python 3.11's ^^^ marks) matches
    ``failing_line``: an assert of the GPU's compute capability is code with kernels only for other
    GPUs; an assert that torch sees a GPU, a process given none; an argument class refusing a keyword,
    an option this version of the engine does not take."""
    return any(k >= 0 and failing_line.match(msgs[k]) for k in (exception - 1, exception - 2))
# a frame running a module's top level; \b: a long word is tried from its first letter only
_MODULE_LINE = re.compile(r'\b(\w+)\.py", line \d+, in <module>')
# (Python 3.11 on prints runpy's frames as File "<frozen runpy>")
_RUNPY_RUN_CODE = re.compile(r'runpy(?:\.py|>)", line \d+, in _run_code\b')
# installed packages, and sglang run from a source checkout (/sgl-workspace/sglang/python/sglang/...)
# (or a path the poster shortened to ".../sglang/srt/...")
_PACKAGE_DIR = re.compile(r"(?:(?:site|dist)-packages|/python|^\.\.\.)/[A-Za-z_]\w*/")


def _is_import_chain(frames: Iterable[str]) -> bool:
    """An exception raised while an installed package was being imported: an `in <module>`
    frame of a site-packages module other than the entry point (launch_server.py runs as
    __main__ and calls everything from its module level; so does any module `python -m` runs,
    whose frame follows runpy's _run_code)."""
    previous = ""
    for frame in frames:
        m = _MODULE_LINE.search(frame) if '.py", line ' in frame and "<module>" in frame else None
        run_as_main = _RUNPY_RUN_CODE.search(previous) is not None
        previous = frame
        if m is None or run_as_main or m.group(1) in ("launch_server", "__main__"):
            continue
        path = frame[:m.start()]
        if _PACKAGE_DIR.search(path[path.rfind('"') + 1:]):  # the package directory in the same path
            return True
    return False


def _jit_signature(text: str) -> Signature | None:
    return next((s for s in CATALOG if s.failure_class == JIT_BUILD_FAILED and s.matches(text)), None)


def _tracebacks(msgs: _Messages, hot: list[int]) -> list[_Traceback]:
    """Every traceback in the log with its exception line (the first after its frames). Only
    the hot lines are read: a header, a frame or an exception line is always one."""
    found: list[_Traceback] = []
    p, n = 0, len(hot)
    while p < n:
        i = hot[p]
        # an excerpt may start in the middle of a traceback: its first frame starts one
        headerless = not _TRACEBACK.search(msgs[i])
        if headerless and not _FRAME.match(msgs[i]):
            p += 1
            continue
        frames: list[str] = []
        q = p if headerless else p + 1
        exc: int | None = None
        while q < n:
            m = msgs[hot[q]]
            if _FRAME.match(m):
                frames.append(m.strip())
            elif _TRACEBACK.search(m):
                break  # a new traceback before this one's exception: cut off
            elif _EXCEPTION.match(m.strip()) and (not m.startswith((" ", "\t")) or not frames):
                exc = hot[q]
                break
            q += 1
        found.append(_Traceback(i, exc, tuple(frames)))
        p = q + 1 if exc is not None else q if q > p else p + 1
    return found


_C10_RECORD = re.compile(r"\[[IWEF]\d{3,4} \d\d:\d\d:\d\d\.\d+ [\w.]+:\d+\]")


def _exception_text(msgs: _Messages, index: int) -> str:
    """The exception line plus its continuation lines (driver messages span several)."""
    parts = [msgs[index].strip()]
    k = index + 1
    if parts[0].endswith(":"):  # "ImportError: " then the message on the lines below
        while k < len(msgs) and not msgs[k].strip():
            k += 1
    for k in range(k, min(k + 3, len(msgs))):
        nxt = msgs[k].strip()
        if not nxt or nxt.startswith("```") or _TRACEBACK.search(nxt) or _SIGQUIT.search(nxt) or _FRAME.match(msgs[k]):
            break  # (a Markdown fence closes the pasted block)
        if _PREFIX.match(msgs[k]) and msgs[k] != nxt:  # a new log record
            break
        if _GLOG_RECORD.match(msgs.line(k)):  # a new glog record (Triton's "W0303 09:57:36.731 125 x.cc:221] ")
            break
        if _C10_RECORD.search(msgs.line(k)):
            break  # c10's own record under a rank's prefix ("[rank0]:[W307 09:43:03.19 x.cpp:1250]")
        parts.append(nxt)
    return " ".join(parts)


def _oom_phase(log: _Log, index: int, frames: Iterable[str]) -> str | None:
    text = log.msgs[index]
    if re.search(r"Capture (cuda|draft cuda|piecewise CUDA) graph failed", text, re.I):
        return PHASE_CAPTURE
    frame_text = " ".join(frames)
    if "cuda_graph_runner" in frame_text or "capture_one_batch_size" in frame_text:
        return PHASE_CAPTURE
    if re.search(r"load_model|load_weights|model_loader|init_memory_pool|_initialize_model", frame_text):
        return PHASE_LOAD
    if re.search(r"event_loop|run_batch|forward_batch_generation|process_batch", frame_text):
        return PHASE_RUNTIME
    # No telling frames: the last start-up milestone before the OOM says where it was.
    phase: str | None = None
    for m in (log.msgs[k] for k in log.hot_in(0, index)):
        if _READY.search(m):
            phase = PHASE_RUNTIME
        elif _M_CAPTURE_END.search(m):
            phase = PHASE_RUNTIME if phase == PHASE_RUNTIME else None
        elif _M_CAPTURE_BEGIN.search(m):
            phase = PHASE_CAPTURE
        elif _M_LOAD_BEGIN.search(m) or _M_LOAD_END.search(m) or _M_POOL.search(m):
            phase = PHASE_LOAD
    return phase


class _Messages:
    """Each line's message (strip_prefix), made when first asked for: most lines of a long
    log are never looked at."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self._made: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._lines)

    def line(self, index: int) -> str:
        """The line as read, its prefix kept."""
        return self._lines[index]

    def __getitem__(self, index: int) -> str:
        msg = self._made.get(index)
        if msg is None:
            msg = self._made[index] = strip_prefix(self._lines[index])
        return msg


@dataclass(frozen=True)
class _Log:
    """A log read once for diagnosis: its lines, their messages without the log prefix, the
    hot lines (those holding a keyword: no other line can match a regex here), and its
    tracebacks."""

    lines: list[str]
    msgs: _Messages
    hot: list[int]
    # what came before "ready to roll" did not stop the server (warnings, handled
    # tracebacks, ignored imports): the scan for a failure starts after it
    ready_at: int | None
    tracebacks: list[_Traceback]
    matched: dict[int, Signature | None] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.ready_at is not None

    def hot_in(self, lo: int, hi: int, *, scan: bool = False) -> list[int]:
        """The hot lines in [lo, hi); with scan, only those after the ready line."""
        if scan and self.ready_at is not None:
            lo = max(lo, self.ready_at + 1)
        return self.hot[bisect_left(self.hot, lo):bisect_left(self.hot, hi)]

    def scanned(self) -> list[int]:
        return self.hot_in(0, len(self.lines), scan=True)

    def match(self, index: int) -> Signature | None:
        if index not in self.matched:
            self.matched[index] = _match(self.msgs[index])
        return self.matched[index]


# a glog-style record at INFO or WARNING level (torch's logging, Triton): a traceback it holds was
# logged and handled ("W... torch/_inductor/codecache.py:604] [0/0] Can't pickle" then the traceback)
# (at a line's start, or after another prefix: torch's "[rank0]:", Ray's, compose's, journald's)
_LOGGED_LEVEL = re.compile(r"(?:^|[\s:)|])[IW]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [\w./-]+:\d+\]")


# spaces a web page or a chat puts for ASCII ones (no-break, thin, ideographic), and characters of
# no width, as a log copied from there holds them
_UNICODE_SPACES = str.maketrans({**{c: " " for c in "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
                                    "\u2008\u2009\u200a\u202f\u205f\u3000"},
                                 **{c: None for c in "\u200b\u200c\u200d\u2060\ufeff"}})
# a log collector's JSON record of one line: docker's json-file driver ({"log": "...\n", "stream": ...,
# "time": ...}), Google Cloud Logging's textPayload, a JSON logger's message, an API's error body
_JSON_TEXT_KEYS = ("log", "textPayload", "message", "msg", "error", "detail")
# srun --label: "0: " before each line, the task that printed it
# stern (kubectl logs of many pods): "pod container " before each line; a Deployment's pod is named
# NAME-HASH-XXXXX (five lower-case letters or digits), a StatefulSet's NAME-N
_STERN = re.compile(r"^[a-z0-9][a-z0-9.-]*-(?:[a-z0-9]{5}|\d{1,4}) [a-z0-9][a-z0-9-]{0,62} ")
_SRUN_LABEL = re.compile(r"^\s{0,3}\d{1,5}: ")
# a viewer's line numbers copied with the log: `cat -n` ("     7\t"), an editor's or a CI page's gutter ("  7 | ")
_LINE_NUMBER = re.compile(r"^\s*(\d{1,7})(?:\t| ?[|\u2502] ?| {2,}|$)")


def _json_record_text(line: str) -> list[str] | None:
    """The lines a one-line JSON log record holds, or None where the line is not one."""
    body = line.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        record = json.loads(body)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    text = next((record[k] for k in _JSON_TEXT_KEYS if isinstance(record.get(k), str)), None)
    return None if text is None else text.rstrip("\n").split("\n")


def _shipper_prefix(lines: list[str]) -> str:
    """stern's "pod container " where every non-blank line has the same one (see _STERN); else empty."""
    body = [ln for ln in lines if ln.strip()]
    first = _STERN.match(body[0]) if len(body) >= 2 else None
    if first is None or not all(ln.startswith(first.group(0)) for ln in body):
        return ""
    return first.group(0)


# "\n" as two characters, not the end of an escaped backslash ("C:\\\\new" in a repr of a Windows path)
_ESCAPED_NEWLINE = re.compile(r"(?<!\\)(?:\\r)?\\n")
_ESCAPED_QUOTE = re.compile(r"(?<!\\)\\([\"'])")


def _escaped_lines(line: str) -> list[str]:
    """A log held in one line with its newlines escaped (a JSON string, an exception's repr: "Traceback
    (most recent call last):\\n  File \\"x.py\\"..."), as the lines it holds; other lines as they are."""
    parts = _ESCAPED_NEWLINE.split(line)
    if len(parts) < 2:
        return [line]
    return [_ESCAPED_QUOTE.sub(r"\1", part) for part in parts]


def _as_printed(lines: list[str]) -> list[str]:
    """The lines as the program printed them: unicode spaces as ASCII ones, JSON records (docker's
    json-file) as their text, srun's task labels and a log shipper's prefix taken off."""
    lines = [ln.translate(_UNICODE_SPACES) if not ln.isascii() else ln for ln in lines]
    if any(ln.lstrip().startswith('{"') for ln in lines[:50]):
        out: list[str] = []
        for ln in lines:
            text = _json_record_text(ln) if ln.lstrip().startswith("{") else None
            out.extend([ln] if text is None else text)
        lines = out
    labelled = [ln for ln in lines if ln.strip()]
    if labelled and all(_SRUN_LABEL.match(ln) for ln in labelled):
        lines = [_SRUN_LABEL.sub("", ln, count=1) for ln in lines]
    if any("\x1b" in ln for ln in lines[:50]):  # stern colours its prefix
        lines = [_ANSI.sub("", ln) if "\x1b" in ln else ln for ln in lines]
    prefix = _shipper_prefix(lines)
    return _without_line_numbers([ln[len(prefix):] for ln in lines] if prefix else lines)


def _without_line_numbers(lines: list[str]) -> list[str]:
    """The lines less the numbers a viewer printed before them: where every line, blank ones
    included, begins with one and each is the one before plus one (three lines at least, or
    numbered from 1)."""
    cut: list[str] = []
    number = None if len(lines) >= 3 else 0
    for ln in lines:
        m = _LINE_NUMBER.match(ln)
        if m is None or (number is not None and int(m.group(1)) != number + 1):
            return lines
        number = int(m.group(1))
        cut.append(ln[m.end():])
    return cut


def _dedent(lines: list[str]) -> list[str]:
    """The lines less the indent all of them share: a log pasted as an indented block (Markdown's code
    block, a forum's quote, a YAML value) reads as it was printed. Stops at the first line at column 0,
    which in a log as printed is the first line or nearly. A Markdown fence around the block ("```text")
    is not part of it."""
    common: str | None = None
    for ln in lines:
        body = ln.lstrip()
        if body and not body.startswith("```"):
            indent = ln[:len(ln) - len(body)]
            common = indent if common is None else os.path.commonprefix((common, indent))
            if not common:
                return lines
    return [ln if ln.lstrip().startswith("```") else ln[len(common):] for ln in lines] if common else lines


# where a terminal's fixed width cut a line, the cut falls anywhere; a line that ends a box (rich's
# traceback frame) or pads to the width with spaces was printed at that width, not cut to it
_BOX_EDGE = frozenset("\u2502\u2503\u256e\u256f\u256d\u2570\u2500\u2501")
_MIN_WRAP = 60  # narrower than any terminal a log is read in


def _starts_record(line: str) -> bool:
    """Whether the line begins as a record does (a log prefix, a traceback's header, frame or exception):
    a cut falls there only by chance, and a short log's two lines of one length often end there."""
    return (strip_prefix(line) != line or _TRACEBACK.match(line) is not None or _FRAME.match(line) is not None
            or _EXCEPTION.match(line) is not None or _ELISION.match(line) is not None or _CRASH.match(line) is not None)


# the line a paste puts where it left lines out ("...", "[...]", "…")
_ELISION = re.compile(r"^\s*(?:\.{3,}|\[\.{3}\]|\u2026)\s*$")


_WHOLE_FRAME = re.compile(r'^\s*File "[^"]+", line \d+, in [\w<>.]+$')


def _unwrap(lines: list[str], *, surely: bool = True) -> list[str]:
    """The lines a fixed-width terminal (tmux, screen, a web console) cut, joined again: when two or more
    lines are exactly as long as the longest, and more than are just short of it, each such line and the
    one below it were one line, unless the one below starts a record. Not ``surely``: every line at the
    longest length is joined so, however many there are (a single long line cut once looks like that)."""
    width = max(map(len, lines), default=0)
    if width < _MIN_WRAP:
        return lines

    def at_width(line: str) -> bool:
        # (a frame that ends in its function's name is whole: two frames of one length in a paste that lost
        # its indentation are not a terminal's cut, LlamaFactory issue 8173)
        return len(line) == width and not line.endswith("  ") and line[-1] not in _BOX_EDGE \
            and not _WHOLE_FRAME.match(line)

    cut = sum(1 for ln in lines if at_width(ln))
    # a cut at a fixed column leaves most long lines at exactly the width, and only the rest of a line
    # below it; a wrap at words (rich, textwrap) leaves lines of every length just short of the width
    near = sum(1 for ln in lines if width * 0.85 <= len(ln) < width)
    if surely and (cut < 2 or cut <= near):
        return lines
    joined: list[str] = []
    was_cut = False
    for ln in lines:
        if was_cut and ln and not _starts_record(ln):
            joined[-1] += ln
        else:
            joined.append(ln)
        was_cut = at_width(ln)
    return joined


def _printed_lines(lines: Iterable[str]) -> list[str]:
    """What _read_log reads: the lines as printed (_as_printed), less a shared indent, cut lines joined,
    escaped newlines (a log held in one JSON string) as lines."""
    kept = _unwrap(_dedent(_as_printed([ln.rstrip("\r\n") for ln in lines])))
    if any("\\n" in ln for ln in kept):
        kept = _dedent([part for ln in kept for part in _escaped_lines(ln)])
    if any(len(ln) >= _FLATTENED_MIN and _FLATTENED_HEADER.search(ln) for ln in kept):
        kept = _flattened_split(kept, sure=True)
    return kept


# where a traceback pasted as one line (its newlines lost to a web form or a chat) began its lines
_FLATTENED_BREAK = re.compile(
    r" (?=Traceback \(most recent call last\):|File (?:\"|&quot;)[^\"&]+(?:\"|&quot;), line \d"
    r"|(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt): |\[\d{4}-\d\d-\d\d[ T]\d)")
_FLATTENED_MIN = 200  # a line shorter than this holds one record, not a pasted log
# a traceback's header and its first frame on one line: only a log that lost its newlines prints so
# (its quotes also as a page's source escapes them)
_FLATTENED_HEADER = re.compile(r"Traceback \(most recent call last\): +File (?:\"|&quot;)")


def _flattened_split(lines: list[str], *, sure: bool) -> list[str]:
    """Each long line that holds a traceback split where its lines began (a log pasted with its
    newlines lost): where it shows the header and first frame on one line, or, not ``sure``, anywhere."""
    return [part for ln in lines
            for part in (_FLATTENED_BREAK.split(ln)
                         if len(ln) >= _FLATTENED_MIN and (not sure or _FLATTENED_HEADER.search(ln)) else (ln,))]


def _second_reading(kept: list[str]) -> list[str] | None:
    """Another reading of a log that shows no failure or none the catalog knows: every line at the
    longest length joined to the next (a single line a terminal cut once); else each long line split
    where a traceback's lines, an exception or a timestamped record would begin (a log pasted with
    its newlines lost); None where neither changes the lines."""
    joined = _unwrap(kept, surely=False)
    if len(joined) < len(kept):
        return joined
    split = _flattened_split(kept, sure=False)
    return split if len(split) > len(kept) else None


def _read_log(kept: list[str]) -> _Log:
    hot = [i for i, ln in enumerate(kept) if _is_hot(ln)]
    msgs = _Messages(kept)
    ready_at = next((i for i in hot if _READY.search(msgs[i])), None)
    log = _Log(lines=kept, msgs=msgs, hot=hot, ready_at=ready_at, tracebacks=[])
    log.tracebacks.extend(tb for tb in _tracebacks(msgs, log.scanned()) if not _LOGGED_LEVEL.search(kept[tb.start]))
    return log


def _diagnose_at(
    log: _Log, index: int, sig: Signature, frames: tuple[str, ...],
    *, via: str | None, extra_evidence: tuple[int, ...] = (),
) -> Diagnosis:
    msgs = log.msgs
    cause = _exception_text(msgs, index) if _EXCEPTION.match(msgs[index].strip()) else msgs[index].strip()
    evidence_idx = sorted({index, *extra_evidence})
    phase = None
    advice = sig.advice
    summary = sig.summary
    if sig.failure_class == CUDA_OOM:
        phase = _oom_phase(log, index, frames)
        advice = _OOM_ADVICE[phase]
        where = {PHASE_LOAD: "while loading", PHASE_CAPTURE: "during CUDA-graph capture",
                 PHASE_RUNTIME: "while serving", None: "at a point the log does not show"}[phase]
        summary = f"A CUDA allocation failed {where}: the GPU ran out of memory."
    elif sig.failure_class == NOT_ENOUGH_MEMORY:
        load_end = _last_before(log, index, _M_LOAD_END)
        if load_end is not None:
            evidence_idx = sorted({load_end, *evidence_idx})
    elif sig.failure_class == IMPORT_FAILED:
        return _diagnose_import(log, index, frames, cause, via=via, evidence_idx=evidence_idx)
    elif sig.failure_class == NO_GPU_VISIBLE and _cpu_launch(log):
        advice = (CPU_ADVICE,)
    return Diagnosis(
        failure_class=sig.failure_class,
        cause=cause,
        advice=advice,
        evidence=tuple(log.lines[i].rstrip("\r\n") for i in evidence_idx),
        summary=summary,
        phase=phase,
        via=via,
        line_number=index + 1,
        ready=log.ready,
    )


CPU_ADVICE = (
    "This is a CPU launch (--device cpu): it needs SGLang's CPU build of sgl-kernel (built from "
    "sgl-kernel/ for CPU, as SGLang's docker/xeon.Dockerfile does) and a CPU torch; the CUDA "
    "build of sgl-kernel loads libcuda.so.1 and fails on a host without an NVIDIA driver. "
    "Starting the container with --gpus does not help a host without GPUs."
)
_PACKAGE_PATH = re.compile(r"(?:site|dist)-packages/([A-Za-z_]\w*)(?:/|\.py)")
# a package imported from outside any site-packages (a PYTHONPATH entry, `pip install --target`, a
# source checkout): the frame of its __init__.py names the directory it came from and the package
_OUTSIDE_PACKAGE = re.compile(r'File "(/[^"]*?)/([A-Za-z_]\w*)/__init__\.py"')
# the interpreter's own library (json/__init__.py) and the environment's are not "outside"
_INSIDE_ROOT = re.compile(r"(?:site|dist)-packages(?:/|$)|/lib(?:64)?/python\d\.\d+$|/lib-dynload$")


# transformers' dependency check (utils/versions.py): "tokenizers>=0.19,<0.20 is required for a normal
# functioning of this module, but found tokenizers==0.22.2."
_REQUIRED_FOUND = re.compile(r"\b([A-Za-z][\w.-]{0,60}?)([<>=!~]=?[\w.,<>=!~*+-]{1,60}) is required for a normal functioning "
                             r"of this module, but found [\w.-]{1,60}==([\w.+-]{1,40}?)\.?(?:\s|$)")


def _outside_packages(frames: tuple[str, ...], cause: str) -> tuple[tuple[str, str], ...]:
    """(package, directory) for each package a traceback imports from outside site-packages that its
    error names ("... Try: `pip install transformers -U`"): an editable install's subpackages
    (the SGLang image's /sgl-workspace/sglang/python/sglang/srt/configs) are not the point."""
    found = ((m.group(2), m.group(1)) for f in frames for m in [_OUTSIDE_PACKAGE.search(f)] if m)
    return tuple(dict.fromkeys((name, root) for name, root in found
                               if not _INSIDE_ROOT.search(root) and re.search(rf"(?<![.\w]){name}\b", cause)))
# bounded: a name or version is short, and a long dotted or dashed run is not tried from each
# of its words to its end
_DIST_INFO = re.compile(r"\b([A-Za-z][\w.]{0,99}?)-(\d{1,9}(?:\.\d{1,9}){1,9}[\w.+]{0,40}?)\.dist-info")
_PIN = re.compile(r"\b([A-Za-z][\w-]{0,99})(?:==|: )v?(\d{1,9}\.\d{1,9}(?:\.\d{1,9})?[\w.+]{0,40})\b")
_PIN_HINT = re.compile(r"==|: v?\d|\.dist-info")


def _cpu_launch(log: _Log) -> bool:
    return any(_CPU_HINTS.search(log.msgs[i]) for i in log.hot)


def _dist_name(module: str) -> str:
    return module.replace("_", "-").lower()


# a compiled package's operator missing from torch's registry ("operator torchvision::nms does not exist")
_OPERATOR_MISSING = re.compile(r"\boperator (torch\w+)::\w+ does not exist\b")


def _package_versions(log: _Log) -> dict[str, str]:
    """Versions the log states: dist-info directories in paths, `pkg==1.2` pins and
    check_env's `pkg: 1.2` lines; keyed by distribution name."""
    found: dict[str, str] = {}
    for i, line in enumerate(log.lines):
        if not _PIN_HINT.search(_ANSI.sub("", line) if "[" in line else line):
            continue
        m = log.msgs[i]
        for name, version in _DIST_INFO.findall(m) + _PIN.findall(m):
            found.setdefault(_dist_name(name), version)
    return found


def _diagnose_import(
    log: _Log, index: int, frames: tuple[str, ...], cause: str, *, via: str | None, evidence_idx: list[int]
) -> Diagnosis:
    """The environment cannot import sglang: name the packages in the traceback's frames
    (from their site-packages paths) with the versions the log gives, and the one that raised."""
    msgs = log.msgs
    outside = _outside_packages(frames, cause)
    modules = list(dict.fromkeys(m.group(1) for f in frames for m in [_PACKAGE_PATH.search(f)] if m))
    modules += [name for name, _ in outside if name not in modules]
    block = [msgs[k] for k in range(index, min(index + 40, len(msgs)))]
    for m in block:
        if (hit := _PACKAGE_PATH.search(m)) and hit.group(1) not in modules:
            modules.append(hit.group(1))
    versions = _package_versions(log)
    packages = tuple(f"{_dist_name(mod)} {versions[_dist_name(mod)]}" if _dist_name(mod) in versions
                     else _dist_name(mod) for mod in modules)
    raised_in = _dist_name(modules[-1]) if modules else None
    if _NO_GPU.matches(cause) and not _cpu_launch(log):
        # the driver's own library is missing: the container or pod runs without the NVIDIA runtime
        # (GPUStack's pods, gpustack issue 5122), as an OSError for it says; a CPU launch is the
        # CUDA-only build's fault instead (below)
        return _diagnose_at(log, index, _NO_GPU, frames, via=via)
    advice, raised_in = _import_advice(log, block, cause, raised_in)
    if outside:
        advice = (_outside_advice(outside), *advice)
    where = f" in {raised_in}" if raised_in else ""
    required = _REQUIRED_FOUND.search(cause)
    summary = (f"The environment cannot import sglang: the import failed{where}"
               + (f"; packages in the traceback: {', '.join(packages)}." if packages else ".")
               + (f" It needs {required.group(1)}{required.group(2)} and found {required.group(1)} {required.group(3)}."
                  if required else "")
               + "".join(f" {name} is imported from {root}, outside the environment's site-packages."
                         for name, root in outside))
    return Diagnosis(
        failure_class=IMPORT_FAILED,
        cause=cause,
        advice=advice,
        evidence=tuple(log.lines[i].rstrip("\r\n") for i in evidence_idx),
        summary=summary,
        via=via,
        line_number=index + 1,
        ready=log.ready,
        packages=packages,
    )


def _import_advice(log: _Log, block: list[str], cause: str, raised_in: str | None) -> tuple[tuple[str, ...], str | None]:
    """What to do about an import that failed, by what the traceback's block shows, and the package at fault
    where the cause names another than the last frame's."""
    no_driver = any("libcuda.so" in m for m in block)
    if no_driver and _cpu_launch(log):
        return (CPU_ADVICE,), raised_in
    if no_driver:
        return ("sgl-kernel's CUDA build needs libcuda.so.1: start the container with the GPUs "
                "(docker run --gpus, certify does this) on a host with the NVIDIA driver, or use "
                "the CPU build of sgl-kernel for --device cpu.", LOCK_ADVICE), raised_in
    if (operator := _OPERATOR_MISSING.search(cause)) is not None:
        # torchvision's (torchaudio's) meta registrations look up their own compiled operators in torch: with a
        # torch other than the one the package was built for, none is registered (pytorch/vision issue 9174;
        # vllm-ascend pins torchvision to its torch for this, its PR 479)
        package = _dist_name(operator.group(1))
        return (f"{package} was built for another torch than the one installed (its compiled operator "
                f"{operator.group(0).split()[1]} is not registered): install the torch and {package} that the "
                "SGLang release pins, together.", LOCK_ADVICE), package
    if any("undefined symbol" in m for m in block):
        return ("A compiled extension was built against another torch (an undefined C++ symbol): "
                "install the torch and sgl-kernel (or flash-attn) that the SGLang release pins, "
                "together.", LOCK_ADVICE), raised_in
    return (LOCK_ADVICE,), raised_in


def _outside_advice(outside: tuple[tuple[str, str], ...]) -> str:
    names = ", ".join(f"{name} (from {root})" for name, root in outside)
    return (f"{names} shadows the environment's own copy: a PYTHONPATH entry, a `pip install --target`, "
            "or a source checkout in the working directory comes first on sys.path. Unless "
            "that copy is meant to be used, take its directory off the path (unset PYTHONPATH, run from "
            "another directory) so the locked versions load.")


def _last_before(log: _Log, index: int, pattern: re.Pattern[str]) -> int | None:
    return next((k for k in reversed(log.hot_in(0, index)) if pattern.search(log.msgs[k])), None)


def _refine_architecture(log: _Log, diag: Diagnosis, upto: int) -> Diagnosis:
    """'not supported' after 'Ignore import error when loading sglang.srt.models.X':
    the module exists but failed to import (sglang issue 4253: a triton gcc build)."""
    if diag.failure_class != UNSUPPORTED_ARCHITECTURE:
        return diag
    lines, msgs = log.lines, log.msgs
    for k in log.hot_in(0, upto):
        m = _IMPORT_IGNORED.search(msgs[k])
        if not m:
            continue
        inner = _jit_signature(msgs[k])
        if inner is not None:
            return Diagnosis(
                failure_class=JIT_BUILD_FAILED,
                cause=msgs[k].strip(),
                advice=inner.advice,
                evidence=(lines[k].rstrip("\r\n"),) + diag.evidence,
                summary=f"{m.group(1)} failed to import because a kernel build failed, so its "
                "architecture looked unsupported.",
                via=diag.via,
                line_number=k + 1,
                ready=diag.ready,
            )
        return Diagnosis(
            failure_class=UNSUPPORTED_ARCHITECTURE,
            cause=diag.cause,
            advice=(f"{m.group(1)} exists in this SGLang but failed to import: {msgs[k].strip()}",)
            + diag.advice,
            evidence=(lines[k].rstrip("\r\n"),) + diag.evidence,
            summary=diag.summary,
            via=diag.via,
            line_number=diag.line_number,
            ready=diag.ready,
        )
    return diag


def diagnose_log(lines: Iterable[str]) -> Diagnosis:
    """Classify an SGLang log (the whole log or an excerpt) by the catalog.

    A child's death (the sigquit line) decides alone; otherwise the first of: a traceback
    whose exception matches a signature, a line matching one, a failure marker no
    signature matches, a lone "Killed". A log read as showing no failure, one no signature matches,
    or only a child's death, is read again (_second_reading); the reading that finds more wins (a
    known class, then a failure, then a child's death, then none), the first where they find as much."""
    kept = _printed_lines(lines)
    log = _read_log(kept)
    found = _diagnose_read(log)
    other = _second_reading(kept) if found.failure_class in (NONE, UNKNOWN, CHILD_FAILED) else None
    if other is not None:
        other_log = _read_log(other)
        again = _diagnose_read(other_log)
        if _weight(again) > _weight(found):
            found, log = again, other_log
    return _by_origin(found, log)


# The last resort for a failure that no signature matches and whose words name no class (_WORDED): where it was
# raised. The exception's own type, or the innermost frame's package (a build step, the Hub client,
# torch.distributed, transformers' auto classes), names the kind of failure.
# (not Triton's or inductor's: a kernel that compiled and then faulted raises through them too)
_RAISED_BY: tuple[tuple[str, re.Pattern[str]], ...] = tuple((klass, re.compile(rx)) for klass, rx in (
    (JIT_BUILD_FAILED, r"^triton\.compiler\.errors\.CompilationError\b"),
    (NCCL, r"^torch\.distributed\.\w*(?:Error|Exception)\b"),
    (MODEL_NOT_FOUND, r"^huggingface_hub\.(?:errors|utils\._errors|utils\._validators)\.\w+"),
))
_RAISED_IN: tuple[tuple[str, re.Pattern[str]], ...] = tuple((klass, re.compile(rx)) for klass, rx in (
    # (not tvm_ffi: SGLang's JIT kernels run through it as well as build)
    (JIT_BUILD_FAILED, r"/(?:torch/utils/cpp_extension\.py|flashinfer/jit/|deep_gemm/jit|setuptools/|distutils/)"),
    (MODEL_NOT_FOUND, r"/(?:huggingface_hub|modelscope/hub)/"),
    (NCCL, r"/torch/distributed/|/pynccl\w*\.py\b"),
    (UNSUPPORTED_ARCHITECTURE, r"/transformers/models/auto/(?:configuration_auto|auto_factory)\.py\b"),
))


_PROGRAMMING_ERROR = re.compile(r"^(?:[\w.]+\.)?(?:TypeError|AttributeError|NameError|UnboundLocalError):")


def _raised_where(log: _Log, found: Diagnosis) -> str | None:
    """The class the cause's exception type, or the innermost frame of its traceback, names (_RAISED_BY, _RAISED_IN)."""
    klass = next((k for k, rx in _RAISED_BY if rx.search(found.cause or "")), None)
    if klass is not None or found.line_number is None:
        return klass
    if _PROGRAMMING_ERROR.match(found.cause or ""):
        return None  # a call or an attribute one package's version does not have: not the kind of the place
    tb = next((t for t in log.tracebacks if t.exception == found.line_number - 1 and t.frames), None)
    return None if tb is None else next((k for k, rx in _RAISED_IN if rx.search(tb.frames[-1])), None)


def _by_origin(found: Diagnosis, log: _Log) -> Diagnosis:
    """An unknown failure raised where one kind of failure is (_raised_where): that class, inferred."""
    if found.failure_class != UNKNOWN or not found.cause:
        return found
    klass = _raised_where(log, found)
    if klass is None:
        return found
    sig = _class_signature(klass)
    return replace(found, failure_class=klass, advice=sig.advice, confidence="inferred",
                   summary=f"Probably: {sig.summary} (no signature matched; read from where the error was raised)")


def _lower_first(text: str) -> str:
    """A sentence to follow "Probably:": its first letter lower-case, unless it opens an acronym (NCCL, CUDA)."""
    return text if text[1:2].isupper() else text[:1].lower() + text[1:]


def _weight(d: Diagnosis) -> int:
    """How much a reading found: a known cause, more than a failure no signature matches, more than a
    child's death with no cause of its own, more than none."""
    return {NONE: 0, CHILD_FAILED: 1, UNKNOWN: 2}.get(d.failure_class, 3)


def _diagnose_read(log: _Log) -> Diagnosis:
    sigquit = next((i for i in log.scanned() if _SIGQUIT.search(log.msgs[i])), None)
    if sigquit is not None:
        return _diagnose_child_failure(log, sigquit)
    for step in (_diagnose_first_traceback, _diagnose_first_signature_line, _diagnose_unmatched_failure,
                 _diagnose_killed, _diagnose_stated_failure):
        found = step(log)
        if found is not None:
            return found
    return Diagnosis(failure_class=NONE, ready=log.ready,
                     summary="The log shows no failure." + (" The server became ready." if log.ready else ""))


def _unmatched_child_exception(log: _Log, exc: int, sigquit: int) -> Diagnosis:
    """The child's exception line (at ``exc``) matches no signature: unknown, reached via child-failed,
    with that line as the cause."""
    return Diagnosis(
        failure_class=UNKNOWN,
        cause=_exception_text(log.msgs, exc),
        advice=CHILD_FAILED_ADVICE,
        evidence=(log.lines[exc], log.lines[sigquit]),
        summary="A child process (a scheduler, a worker) raised an error that no signature matches.",
        via=CHILD_FAILED,
        line_number=exc + 1,
        ready=log.ready,
    )


def _classified_traceback_after(log: _Log, line: int, last: int) -> tuple[_Traceback, Signature] | None:
    """The first traceback with an exception that starts after ``line`` (up to ``last``), and the
    signature its exception matches; None where there is none, or it matches none."""
    tb = next((t for t in log.tracebacks if line < t.start <= last and t.exception is not None), None)
    sig = None if tb is None else _classify(log.msgs, tb)
    return None if tb is None or sig is None else (tb, sig)


def _diagnose_child_failure(log: _Log, sigquit: int) -> Diagnosis:
    """A child died: the first traceback above the sigquit line holds the cause."""
    lines, msgs = log.lines, log.msgs
    above = [tb for tb in log.tracebacks if tb.start < sigquit]
    extra = (sigquit,)
    if not above:
        # the child's traceback printed just after the parent's sigquit line (sglang issue 5212); not a -9 there,
        # which is the parent's sigquit handler killing its process tree (sglang issue 12421)
        found = _classified_traceback_after(log, sigquit, sigquit + 3)
        if found is not None and found[1].failure_class != KILLED:
            below, sig = found
            d = _diagnose_at(log, below.exception, sig, below.frames, via=CHILD_FAILED, extra_evidence=extra)
            return _refine_architecture(log, d, below.exception)
    for tb in above[:1]:
        if tb.exception is None:
            # its exception printed below the sigquit line, the ranks' output interleaved (sglang issue 3398)
            found = _classified_traceback_after(log, sigquit, len(msgs))
            if found is not None and found[1].fatal:
                below, sig = found
                return _diagnose_at(log, below.exception, sig, below.frames, via=CHILD_FAILED, extra_evidence=extra)
            break
        sig = _classify(msgs, tb)
        if sig is not None:
            d = _diagnose_at(log, tb.exception, sig, tb.frames, via=CHILD_FAILED, extra_evidence=extra)
            return _refine_architecture(log, d, tb.exception)
        return _unmatched_child_exception(log, tb.exception, sigquit)
    # No complete traceback above it: a signature line above still explains it.
    hit = _first_signature(log, 0, sigquit)
    if hit is not None:
        i, sig = hit
        return _refine_architecture(log, _diagnose_at(log, i, sig, (), via=CHILD_FAILED, extra_evidence=extra), i)
    inferred = _infer_from_milestones(log, sigquit, via=CHILD_FAILED)
    if inferred is not None:
        return inferred
    # an excerpt without the traceback's header: the child's own exception line above it is the cause
    exc = next((k for k in log.hot_in(0, sigquit, scan=True) if _EXCEPTION.match(msgs[k])), None)
    if exc is not None:
        return _unmatched_child_exception(log, exc, sigquit)
    return Diagnosis(
        failure_class=CHILD_FAILED,
        cause=msgs[sigquit].strip(),
        advice=CHILD_FAILED_ADVICE,
        evidence=(lines[sigquit],),
        summary="A child process failed; its traceback is not in the log.",
        via=CHILD_FAILED,
        line_number=sigquit + 1,
        ready=log.ready,
    )


def _diagnose_first_traceback(log: _Log) -> Diagnosis | None:
    """The first traceback whose exception matches a signature."""
    for tb in log.tracebacks:
        if tb.exception is None:
            continue
        sig = _classify(log.msgs, tb)
        if sig is not None:
            if sig.failure_class == IMPORT_FAILED and (handled := _import_handled(log, tb.exception)) is not None:
                return handled
            if sig.failure_class == NCCL:
                at, cause = _wrapped_cause(log, tb.exception, sig, len(log.msgs))
                if at != tb.exception:  # the communicator's own report of the CUDA call (or port) that failed
                    return _diagnose_at(log, at, cause, tb.frames, via=None)
            return _refine_architecture(log, _diagnose_at(log, tb.exception, sig, tb.frames, via=None), tb.exception)
    return None


_DURING_HANDLING = re.compile(r"^During handling of the above exception, another exception occurred:")


def _import_handled(log: _Log, exception: int) -> Diagnosis | None:
    """An import error the code caught and turned into its own error (mlx-lm's _get_classes: the
    model module's ModuleNotFoundError becomes "Model type X not supported."): the handler's error
    names the cause, when a signature knows it."""
    msgs = log.msgs
    during = next((k for k in range(exception + 1, min(exception + 4, len(msgs)))
                   if _DURING_HANDLING.match(msgs[k])), None)
    if during is None:
        return None
    for k in range(during + 1, min(during + 80, len(msgs))):
        if _EXCEPTION.match(msgs[k]):
            sig = _match(_exception_text(msgs, k))
            return None if sig is None or sig.failure_class == IMPORT_FAILED else _diagnose_at(log, k, sig, (), via=None)
    return None


# a record a logger wrote at WARNING level (vLLM's "WARNING 08-29 11:56:16 x.py:17] ", Python's "UserWarning: ")
_WARNING_RECORD = re.compile(r"(?:^|[\s)\]|:])WARNING \d\d-\d\d [\d:]+ |\b\w*Warning: ")


def _diagnose_first_signature_line(log: _Log) -> Diagnosis | None:
    """The first line anywhere matching a signature; a fatal one beats a warning."""
    end = len(log.msgs)
    hit = _first_signature(log, 0, end, fatal_only=True) or _first_signature(log, 0, end)
    if hit is None:
        return None
    i, sig = hit
    if sig.failure_class in (IMPORT_FAILED, NO_GPU_VISIBLE) and _WARNING_RECORD.search(log.lines[i]) \
            and any(tb.exception is not None and tb.exception > i for tb in log.tracebacks):
        # a warning the program went on after (vLLM's "Failed to import from vllm._C" on a platform without it):
        # an exception no signature knows, raised later, is the failure (vllm issues 8736, 7993)
        return None
    # a process killed before that line: what failed after it is its consequence (a step that then
    # finds no checkpoint, a peer that lost its rank)
    return _killed_before(log, i) or _refine_architecture(
        log, _diagnose_at(log, i, sig, _frames_above(log.tracebacks, i), via=None), i)


def _diagnose_unmatched_failure(log: _Log) -> Diagnosis | None:
    """A failure marker (a traceback, 'Hit an exception') with no signature."""
    lines, msgs = log.lines, log.msgs
    # a line that states a failure ("XError: message", unindented) counts without a traceback
    marker = next((i for i in log.scanned() if (m := msgs[i]) and (
        (" hit an exception" in m and _HIT_EXCEPTION.search(m))
        or (_TRACEBACK.search(m) and not _LOGGED_LEVEL.search(lines[i])) or _EXCEPTION.match(m)
        or _CPP_EXCEPTION.match(m) or _CHILD_REPORT.search(m) or _FAILED_WITH.match(m) or _CRASH.search(m)
        or _FAILED_LOAD.search(m) or _PROXIED_SELF.search(m) or _BAD_CALL.match(m) or _STATED_ERROR.search(m)
        or _GLOG_FAILURE.search(lines[i]))), None)
    starts = [tb.start for tb in log.tracebacks]
    if starts and (marker is None or starts[0] < marker):
        marker = starts[0]
    if marker is None:
        return None
    for k in log.hot_in(0, marker, scan=True):
        if _IMPORT_IGNORED.search(msgs[k]) and (sig := _jit_signature(msgs[k])) is not None:
            return Diagnosis(
                failure_class=JIT_BUILD_FAILED,
                cause=msgs[k].strip(),
                advice=sig.advice,
                evidence=(lines[k], lines[marker]),
                summary="A model module failed to import because a kernel build failed; "
                "the failure that followed is probably its consequence.",
                line_number=k + 1,
                confidence="inferred",
                ready=log.ready,
            )
    # the traceback at the marker, or the one its line announces ("WorkerProc hit an exception." above it)
    cut = next((tb for tb in log.tracebacks if marker <= tb.start <= marker + 1 and tb.exception is None), None)
    if cut is not None and (inferred := _diagnose_cut_traceback(log, cut, marker)) is not None:
        return inferred
    # entrypoints/engine.py: a scheduler that died before reporting ready is logged as 'Rank N
    # scheduler is dead' and 'Exit code: -9' when SIGKILLed; the launcher's traceback that follows
    # (an EOFError) is the consequence, not the cause
    return (_killed_before(log, marker) or _infer_from_milestones(log, marker, via=None)
            or _diagnose_unexplained(log, marker))


def _killed_before(log: _Log, index: int) -> Diagnosis | None:
    """A SIGKILL reported before line ``index``: the failure that follows is its consequence."""
    killed = next((k for k in log.hot_in(0, index, scan=True) if _KILLED.matches(log.msgs[k])), None)
    return None if killed is None else _diagnose_at(log, killed, _KILLED, (), via=None)


# what a process raises on finding its peer gone (vLLM's EngineDeadError is its own report of that)
_PEER_GONE = re.compile(r"^(?:[\w.]+\.)?(?:EOFError|BrokenPipeError|ConnectionResetError|ConnectionRefusedError|"
                        r"KeyboardInterrupt|(?:Async)?EngineDeadError)\b")


# vLLM's client on a worker's fatal signal kills its own process tree (v1/engine/core_client.py): the "Killed"
# the shell prints after it is that, not how the worker died (vllm issue 12245)
_SELF_KILLING_REPORT = re.compile(r"\b[Gg]ot fatal signal from worker processes, shutting down\b")


def _diagnose_unexplained(log: _Log, marker: int) -> Diagnosis:
    """A failure nothing above explains: a launcher's report that a child died, else the class
    the error's own words name, else unknown with the root error as the cause."""
    lines, msgs = log.lines, log.msgs
    report = next((i for i in log.scanned() if _CHILD_REPORT.search(msgs[i])), None)
    killed = next((k for k in log.scanned() if _KILLED.matches(msgs[k])), None)
    # a process that crashed inside the communicator (faulthandler's stack ends in pynccl): that crash, not
    # the launcher's report or the SIGKILL of the teardown after it (vllm issue 17770, a Ray worker)
    # (a crash is often reported twice, by absl's signal handler and then by faulthandler with the stack)
    for crash in (k for k in log.scanned() if _CRASH.search(msgs[k])):
        if (frame := _crashed_in_communicator(log, crash)) is not None:
            return _diagnose_at(log, crash, _NCCL_SIGNATURE, (), via=None, extra_evidence=(frame,))
    if report is not None and killed is not None and not _SELF_KILLING_REPORT.search(msgs[report]):
        # the launcher's report that a child died and how it died: by SIGKILL (torchrun's
        # "exitcode : -9" under its ChildFailedError, apple/ml-recurrent-drafter issue 5)
        return _diagnose_at(log, killed, _KILLED, (), via=CHILD_FAILED)
    if killed == marker:  # the failure line itself says the process was killed (a DataLoader worker's)
        return _diagnose_at(log, killed, _KILLED, (), via=None)
    if _PROXIED_SELF.search(msgs[marker]):
        return Diagnosis(
            failure_class=UNKNOWN,
            cause=msgs[marker].strip(),
            advice=PROXY_ADVICE,
            evidence=(lines[marker],),
            summary="The server's requests to itself went through an HTTP proxy, which refused them.",
            line_number=marker + 1,
            ready=log.ready,
        )
    if report is not None:
        return _diagnose_child_report(log, report)
    exc = next((tb.exception for tb in log.tracebacks if tb.exception is not None), None)
    at = exc if exc is not None else marker
    cause = _exception_text(msgs, at) if exc is not None else msgs[at].strip()
    # the launcher's own words for refused flags, pasted alone (a message wrapped over lines is read whole)
    whole = _exception_text(msgs, at) if exc is None and _EXCEPTION.match(cause) else cause
    if (refusal := _config_refusal(cause) or _config_refusal(whole)) is not None:
        return _diagnose_at(log, at, refusal, (), via=None)
    if "got an unexpected keyword argument" in cause and _failing_line_is(msgs, at, _ARGS_FROM_OPTIONS):
        return _diagnose_at(log, at, _FLAGS_SIGNATURE, (), via=None)  # (a traceback's tail, without its header)
    if exc is not None and _PEER_GONE.match(cause) and not any(
            tb.exception is not None and not _PEER_GONE.match(_exception_text(msgs, tb.exception)) for tb in log.tracebacks):
        # the launcher's read of a pipe or socket to a child that went away (SGLang's scheduler pipe, 0.1's
        # rpyc link to its TP workers: "EOFError: connection closed by peer"), with nothing of the child's own
        return _child_died(log, at, cause, "A child process died: the launcher found the pipe to it closed; "
                                           "its own error is not in the log.")
    return _infer_from_words(log, at, cause) or Diagnosis(
        failure_class=UNKNOWN,
        cause=cause,
        advice=UNKNOWN_ADVICE,
        evidence=(lines[at],),
        summary="The log shows a failure that no known signature matches.",
        line_number=at + 1,
        ready=log.ready,
    )


def _diagnose_child_report(log: _Log, report: int) -> Diagnosis:
    """A launcher's report that a child died (at ``report``), nothing above explaining the log: the child's
    own error where the log holds one (unknown via child-failed when no signature knows it), else child-failed."""
    msgs = log.msgs
    own = next((k for k in log.hot_in(report + 1, len(log.lines), scan=True) if _CRASH.search(msgs[k])), None)
    if own is not None:
        # Ray prints a worker's own output after the driver's report that it died: a crash of its
        # own there is the child's error (verl issue 472: "logging.cc: Unhandled exception: ... what():
        # thread: Resource temporarily unavailable" below "The actor is dead")
        return _unmatched_child_exception(log, own, report)
    # the child's own exception above the launcher's report (vLLM's engine logs it at ERROR before "Engine
    # process failed to start"; SGLang's scheduler traceback before "Rank 0 scheduler is dead"): the cause,
    # though no signature knows it; a broken pipe, an EOF or a dead engine there is only a peer noticing
    # (or the traceback the report itself opens: vLLM's "EngineCore failed to start." then its traceback; or a
    # native crash of the child's, a device-side assert or a bus error, above the report)
    # (an exception that is itself a report of the child's death, xoscar's ServerClosed raised twice, is not its cause)
    own_tb = next((tb.exception for tb in log.tracebacks if report <= tb.start <= report + 2 and tb.exception is not None
                   and not _CHILD_REPORT.search(msgs[tb.exception]) and not _in_teardown(tb.frames)), None)
    above = own_tb if own_tb is not None else next(
        (k for k in log.hot_in(0, report, scan=True)
         if (_EXCEPTION.match(msgs[k].strip()) and not _PEER_GONE.match(msgs[k].strip())
             and not _CHILD_REPORT.search(msgs[k])) or _CRASH.search(msgs[k])), None)
    if above is not None:
        cause = _exception_text(msgs, above)
        if (refusal := _config_refusal(cause)) is not None:
            return _diagnose_at(log, above, refusal, (), via=CHILD_FAILED, extra_evidence=(report,))
        return _infer_from_words(log, above, cause) or _unmatched_child_exception(log, above, report)
    return _child_died(log, report, msgs[report].strip(),
                       "A child process died and its launcher reported only that; its own error is not in the log.")


# the interpreter's exit handlers and an object's finaliser: an error raised there is the teardown after the
# failure (vLLM's MultiprocExecutor.shutdown run by weakref's finalizer on an executor whose workers never
# started: "'MultiprocExecutor' object has no attribute 'workers'", Hunyuan-A13B issue 22)
_TEARDOWN_FRAME = re.compile(r'weakref\.py", line \d+, in _exitfunc\b|", line \d+, in (?:__del__|shutdown|_atexit\w*)$')


def _in_teardown(frames: Iterable[str]) -> bool:
    return any(_TEARDOWN_FRAME.search(f) for f in frames)


def _child_died(log: _Log, at: int, cause: str, summary: str) -> Diagnosis:
    """child-failed, read at line ``at``: a child died and the log holds no error of its own."""
    return Diagnosis(failure_class=CHILD_FAILED, cause=cause, advice=CHILD_REPORT_ADVICE, evidence=(log.lines[at],),
                     summary=summary, line_number=at + 1, via=CHILD_FAILED, ready=log.ready)


_NCCL_SIGNATURE = _class_signature(NCCL)
_STACK_HEADER = re.compile(r"\(most recent call first\):")  # Python's faulthandler, on a fatal signal


def _crashed_in_communicator(log: _Log, crash: int) -> int | None:
    """The line of the innermost frame of faulthandler's stack below a crash, when that frame is in
    the communicator (SGLang's pynccl_wrapper.py calling libnccl: a segfault at "Init torch distributed
    begin", sglang issue 28299), else None."""
    msgs = log.msgs
    header = next((k for k in range(crash + 1, min(crash + 6, len(msgs))) if _STACK_HEADER.search(msgs[k])), None)
    if header is None:
        return None
    # faulthandler prints the other threads first: the crashing one is under "Current thread 0x... (most recent
    # call first):" (a scheduler's watchdog thread above it, sglang issue 3745)
    current = next((k for k in range(header, min(header + 60, len(msgs)))
                    if msgs[k].lstrip().startswith("Current thread ") and _STACK_HEADER.search(msgs[k])), header)
    frame = next((k for k in range(current + 1, min(current + 4, len(msgs))) if "File " in msgs[k]), None)
    return frame if frame is not None and _COMMUNICATOR_FRAME.search(msgs[frame]) else None


# a frame inside a communicator: NCCL's wrappers (pynccl), or torch.distributed's collectives themselves
_COMMUNICATOR_FRAME = re.compile(r"(?i)nccl|distributed_c10d\.py\W+line \d+,? in (?:all_reduce|all_gather\w*|"
                                 r"reduce_scatter\w*|broadcast\w*|all_to_all\w*|barrier|send|recv|reduce|gather|scatter)\b")


# utils (common.py) assert_pkg_version: SGLang's start-up check that sgl-kernel / flashinfer are installed at
# the version it pins (importlib.metadata's StopIteration below it when the package is not installed at all)
_PKG_VERSION_FRAME = re.compile(r'", line \d+, in assert_pkg_version$')


def _diagnose_cut_traceback(log: _Log, cut: _Traceback, marker: int) -> Diagnosis | None:
    """A traceback cut before its exception, read by its frames: through ninja, a kernel build
    that failed; a chain of module imports, an environment that cannot import sglang."""
    if _in_jit_build(cut.frames):
        build = next(f for f in cut.frames if _JIT_BUILD_FRAME.search(f))
        failure_class, cause, advice = JIT_BUILD_FAILED, build, _JIT_SIGNATURE.advice
        summary = "Probably a kernel compiled at launch failed to build: the traceback, cut before its exception, runs through ninja."
    elif (check := next((f for tb in log.tracebacks if tb.start >= cut.start and tb.exception is None
                         for f in tb.frames if _PKG_VERSION_FRAME.search(f)), None)) is not None:
        # (importlib.metadata's StopIteration above it is the package that is not installed, chained)
        failure_class, cause, advice = IMPORT_FAILED, check, (LOCK_ADVICE,)
        summary = ("Probably a package SGLang needs is missing or too old: the traceback, cut before its exception, "
                   "runs through SGLang's start-up check of package versions.")
    elif _is_import_chain(cut.frames):
        failure_class, cause, advice = IMPORT_FAILED, cut.frames[-1], (LOCK_ADVICE,)
        summary = ("Probably the environment cannot import sglang: the traceback, cut before its "
                   "exception, is a chain of module imports.")
    else:
        return None
    return Diagnosis(
        failure_class=failure_class,
        cause=f"{cause} (the exception itself is not in the log)",
        advice=advice,
        evidence=(log.lines[marker],),
        summary=summary,
        line_number=marker + 1,
        confidence="inferred",
        ready=log.ready,
    )


def _diagnose_killed(log: _Log) -> Diagnosis | None:
    """"Killed" alone explains a log only when nothing else does: SGLang's own teardown
    after a failure also ends in a SIGKILL (utils kill_process_tree)."""
    killed = next((i for i in log.scanned() if _KILLED.matches(log.msgs[i])), None)
    if killed is None:
        return None
    return _diagnose_at(log, killed, _KILLED, (), via=None)


# the last resort: a line whose own words say that something failed, in a wording no pattern above
# knows (a logger's ERROR, FATAL or CRITICAL record, "[error]", an exception's name with its message,
# "... failed"); held against the public logs of rounds 7-12 as first seen, such lines were in 21 of
# the 24 logs read as showing no failure that hold an unknown one, and in none of the 13 that hold none
_STATED_FAILURE = re.compile(r"\b(?:ERROR|FATAL|CRITICAL)\b|\[(?:error|fatal)\]|\blevel=(?:error|fatal)\b"
                             r"|\b[A-Z]\w*(?:Error|Exception)\b[:!]|\berror:|\b(?:[Ff]ailed|FAILED)\b|\bfault\b")
# ... but not a record at INFO, DEBUG or WARNING level that something failed, which the program goes on
# after ("warning: failed to mlock ...", llama.cpp), nor a relay of another stream's INFO line at ERROR
# level (FastChat's "| ERROR | stderr | INFO:     Uvicorn running on ..."); nor pip's note on its resolver,
# nor the NVIDIA kernel module's reports in dmesg (NVRM: ...), which are not the program's failure
_NOT_A_FAILURE = re.compile(r"^\s*(?:warning|Warning)\b|\b[IW]\d{4} |\b(?:WARNING|WARN|INFO|DEBUG)\b"
                            r"|ERROR: pip's dependency resolver|\bNVRM: ")


def _diagnose_stated_failure(log: _Log) -> Diagnosis | None:
    """A line that states a failure in words no pattern knows, when nothing else in the log explains
    it: the class its words name, else unknown; marked as inferred. Only what came after "ready to
    roll", when the server got there."""
    start = 0 if log.ready_at is None else log.ready_at + 1
    msgs = log.msgs
    at = next((i for i in range(start, len(msgs)) if _STATED_FAILURE.search(msgs[i][:_WORDED_SPAN])
               and not _NOT_A_FAILURE.search(msgs[i][:_WORDED_SPAN])  # (the level, in the prefix or after it)
               and not _NOT_A_FAILURE.search(log.lines[i][:_WORDED_SPAN])), None)
    if at is None:
        return None
    cause = msgs[at].strip()
    return _infer_from_words(log, at, cause) or Diagnosis(
        failure_class=UNKNOWN,
        cause=cause,
        advice=UNKNOWN_ADVICE,
        evidence=(log.lines[at],),
        summary="A line states a failure that no known message matches (read from its words).",
        line_number=at + 1,
        confidence="inferred",
        ready=log.ready,
    )


# an exception whose own lines below it carry the error it wraps: Triton's CompilationError ("at 1:0:",
# the kernel's source, then the semantic error, e.g. an FP8 type this GPU lacks)
_WRAPPER = re.compile(r"^(?:[\w.]+\.)?CompilationError: ")


# what a communicator's failure (NCCL, HCCL) reports as its own cause on the lines below it: a port already
# bound, or the CUDA call that failed under its "unhandled cuda error" ("Last error: Cuda failure 802 ...")
_BELOW_COMMUNICATOR = frozenset({PORT_IN_USE, CUDA_OOM, NO_GPU_VISIBLE, DRIVER_TOO_OLD, NO_KERNEL_IMAGE})


def _wrapped_cause(log: _Log, i: int, sig: Signature, hi: int) -> tuple[int, Signature]:
    """(i, sig), or the line below a wrapping exception that names its cause by another signature;
    below a communicator's failure, the cause it reports (_BELOW_COMMUNICATOR)."""
    if sig.failure_class == NCCL:
        for k in log.hot_in(i + 1, min(hi, i + 12)):
            if (cause := log.match(k)) is not None and cause.failure_class in _BELOW_COMMUNICATOR:
                return k, cause
    if not _WRAPPER.match(log.msgs[i]):
        return i, sig
    for k in log.hot_in(i + 1, min(hi, i + 12)):
        inner = log.match(k)
        if inner is not None and inner.fatal and inner.failure_class != sig.failure_class:
            return k, inner
    return i, sig


def _first_signature(
    log: _Log, lo: int, hi: int, *, fatal_only: bool = False
) -> tuple[int, Signature] | None:
    """The first matching line in [lo, hi) after the ready line, preferring exception lines
    ('XError: ...') over log lines, and log lines over indented source lines quoted in a traceback."""
    msgs = log.msgs
    exc_hit = log_hit = code_hit = None
    for i in log.hot_in(lo, hi, scan=True):
        sig = log.match(i)
        if sig is None or (fatal_only and not sig.fatal):
            continue
        if _EXCEPTION.match(msgs[i]):
            exc_hit = exc_hit or _wrapped_cause(log, i, sig, hi)
            break
        if msgs[i].startswith((" ", "\t")):
            code_hit = code_hit or (i, sig)
        else:
            log_hit = log_hit or (i, sig)
    return exc_hit or log_hit or code_hit


def _frames_above(tbs: list[_Traceback], index: int) -> tuple[str, ...]:
    for tb in tbs:
        if tb.exception == index:
            return tb.frames
    return ()


_AVAIL = re.compile(r"avail mem=([\d.]+) GB")


# The words of an error no signature knows that still say which class it is, as a reader would
# take them: tried on the failure's own line only, in this order; each gap is bounded, so no
# pattern rescans a long line.
_WORDED: tuple[tuple[str, re.Pattern[str]], ...] = (
    # a device's memory: "runs out of memory" alone is also said of SGLang's request-slot pool
    (CUDA_OOM, re.compile(r"\b(?:cuda|gpu|device|hip|xpu|npu|vram)\b.{0,40}\bout of memory\b"
                          r"|\bout of (?:gpu|device|cuda|video) memory\b|\bOOM\b(?! ?kill)", re.IGNORECASE)),
    # a collective library (NCCL, ROCm's RCCL, Ascend's HCCL, torch's gloo) or a collective it ran
    (NCCL, re.compile(r"\b(?:nccl|rccl|hccl|gloo)\b|\ball[_ -]?(?:reduce|gather)\b.{0,60}\b(?:fail|error|timed? ?out)"
                      r"|\bcollective operation\b"
                      # torch.distributed's own layers (c10d's store, a ProcessGroup, init_process_group) failing
                      r"|\b(?:c10d|processgroup\w*|init_process_group)\b.{0,160}\b(?:error|fail\w*|timed? ?out|abort\w*|"
                      r"refused|closed|reset)", re.IGNORECASE)),
    (DRIVER_TOO_OLD, re.compile(r"\bdriver\b.{0,60}\b(?:too old|insufficient|older than|update)"
                                r"|\b(?:requires?|needs?) (?:a )?newer (?:nvidia |cuda |gpu |display )?driver\b",
                                re.IGNORECASE)),
    # a bind that failed, in a program's own words, is most often a port another process holds
    (PORT_IN_USE, re.compile(r"\bport\b.{0,60}\b(?:in use|occupied|already|taken)\b"
                             r"|\b(?:could not|cannot|can't|failed to|unable to) bind (?:to )?(?:the )?(?:address|port|socket)\b",
                             re.IGNORECASE)),
    (NO_KERNEL_IMAGE, re.compile(r"\b(?:sm_?\d{2,3}|compute capability|gpu architecture)\b.{0,60}"
                                 r"\bnot (?:supported|compatible)\b"
                                 # a kernel library's own limit: "only supports Hopper (SM90)", "only
                                 # supported on sm90 and above", "requires SM90"
                                 r"|\bonly (?:supports?|supported on|runs on) (?:\w+ )?\(?sm_?\d{2,3}\b"
                                 r"|\brequires? (?:an? )?sm_?\d{2,3}\b"
                                 # a kernel's minimum against the GPU's: "Min capability: 80. Current capability: 75"
                                 r"|\bmin(?:imum)? (?:compute )?capability\W{0,3}\d+.{0,60}\bcurrent (?:compute )?capability\b"
                                 # the GPU's generation (its capability, sm_XX, CUDA or gfx arch) with a kernel not
                                 # built or not supported for it, in either order
                                 r"|(?:\bcompute capability|\bsm_?\d{2,3}a?\b|\bcuda arch|\bgpu arch|\bdevice capability|"
                                 r"\bgfx\d{3,4})\w*.{0,120}\b(?:unsupported|not supported|only supported|not compiled|"
                                 r"no kernel|not built|at least|or (?:newer|higher|above))"
                                 r"|\b(?:unsupported|only supported|not compiled|not built)\b.{0,80}(?:\bcompute capability|"
                                 r"\bsm_?\d{2,3}a?\b|\bcuda arch|\bgpu arch|\bgfx\d{3,4})",
                                 re.IGNORECASE)),
    (UNSUPPORTED_ARCHITECTURE, re.compile(r"\b(?:architecture|model[ _]type)s?\b.{0,60}\bnot (?:yet )?"
                                          r"(?:supported|recognized|registered)\b"
                                          r"|\b(?:unrecognized|unknown|unsupported) model(?:[ _]type| architecture)?\b",
                                          re.IGNORECASE)),
    # not a container image's repository ("pull access denied for x, repository does not exist"): the image
    (MODEL_NOT_FOUND, re.compile(r"^(?!.*\bpull access denied\b).*?\b(?:repo(?:sitory)?|model (?:path|id|directory))\b.{0,60}"
                                 r"\b(?:not found|does not exist|doesn't exist)"
                                 # the checkpoint's own files missing where the model should be
                                 r"|\b(?:config\.json|tokenizer(?:_config)?\.json|safetensors)\b.{0,60}\b(?:not found|no such file|"
                                 r"does not (?:exist|appear)|missing)\b"
                                 # transformers' and huggingface_hub's words for a repo id or file that is not there
                                 r"|\bnot a valid model identifier\b|\bdoes not appear to have a file named\b|\bgated repo\b",
                                 re.IGNORECASE)),
    # a hub client's error chain while fetching the model ("initializing ngc repo from repo_id: ...",
    # "fetching file_map": NVIDIA NIM, nim-deploy issue 62); lower case, as such chains are written
    (MODEL_NOT_FOUND, re.compile(r"(?:fetching|downloading|initializing) (?:\w+ ){0,2}(?:repo|model|weights|file[ _]?map)\b")),
    (NO_GPU_VISIBLE, re.compile(r"\bno (?:cuda |nvidia )?(?:gpus?|tpus?|devices?|accelerators?)\b.{0,30}"
                                r"\b(?:found|available|detected|visible|allocated?)\b"
                                # Ray's placement finding fewer accelerators than asked for ("The number of
                                # required TPUs exceeds the total number of available TPUs", "has no TPU available")
                                r"|\brequired (?:gpus|tpus) exceeds\b|\bhas no (?:gpu|tpu)s? available\b"
                                r"|\bdoes not allocate any (?:gpus|tpus)\b"
                                # "No CUDA or HIP available on this system", "no ROCm device found"
                                r"|\bno (?:cuda|hip|rocm)\b(?: or \w+)?(?: (?:gpus?|devices?|runtime))? (?:is |was )?"
                                r"(?:found|available|detected|visible)\b", re.IGNORECASE)),
    # not CUDA's own "invalid argument" (cudaErrorInvalidValue: "CUDA error: invalid argument", "CUresult
    # error: 1 (invalid argument)"), which is a call inside the program, not the command line; nor the system's
    # EINVAL ("[Errno 22] Invalid argument", glog's "...: Invalid argument [22]" from an RDMA registration)
    (FLAGS_REFUSED, re.compile(r"(?<!\()(?<!CUDA error: )(?<!HIP error: )(?<!\[CUDA\]: )(?<!runtime error: )(?<!\] )"
                               r"(?<!Messsage: )(?<!Message: )"  # Triton's "Triton Error [HIP]: Code: 1, Messsage: invalid argument"
                               r"(?<!\): )"  # flash-attention's "CUDA error (file.h:203): invalid argument"
                               r"\b(?:unrecognized|unknown|invalid) (?:argument|option|flag)s?\b(?! \[\d+\])", re.IGNORECASE)),
    (IMPORT_FAILED, re.compile(r"\b(?:failed to import|cannot import|could not import|unable to import|"
                               r"no module named|undefined symbol)\b"
                               # a package the code needs, in its own words ("flashinfer is not installed")
                               r"|\b[\w.-]+ (?:is|are) not installed\b|\bplease install [\w.-]+", re.IGNORECASE)),
    (JIT_BUILD_FAILED, re.compile(r"\b(?:failed to (?:compile|build)|compil(?:e|ation) (?:failed|error)|"
                                  r"build (?:failed|error))\b"
                                  # the compilers a JIT runs, failing
                                  r"|\b(?:nvcc|ptxas|ninja|hipcc)\b.{0,60}\b(?:error|fatal|failed)\b", re.IGNORECASE)),
    (NOT_ENOUGH_MEMORY, re.compile(r"\b(?:kv[ _-]?cache|cache (?:blocks?|budget)|memory pool)\b.{0,60}"
                                   r"\b(?:not enough|insufficient|no available|too small)\b", re.IGNORECASE)),
)


# the error's own words come first: a line of megabytes (a paste without line breaks) is read no further
_WORDED_SPAN = 4096


def _infer_from_words(log: _Log, at: int, cause: str) -> Diagnosis | None:
    """A failure no signature matches whose own line names its class in plain words ("... out of
    memory ...", "... NCCL ...", "port ... already in use"): that class, marked as inferred."""
    head = cause[:_WORDED_SPAN]
    for klass, words in _WORDED:
        if words.search(head):
            sig = _class_signature(klass)
            return Diagnosis(
                failure_class=klass,
                cause=cause,
                advice=sig.advice if klass != CUDA_OOM else _OOM_ADVICE[None],
                evidence=(log.lines[at],),
                summary=f"Probably: {_lower_first(sig.summary)} (read from the error's words; "
                        "no known message matched)",
                line_number=at + 1,
                confidence="inferred",
                ready=log.ready,
            )
    return None


def _infer_from_milestones(log: _Log, failure_at: int, *, via: str | None) -> Diagnosis | None:
    """A failure whose traceback was not captured, right after 'Load weight end' and
    before the KV cache was allocated: that step is the pool sizing, where SGLang raises
    'Not enough memory' (sglang issue 4895). Marked as inferred, never as matched."""
    lines, msgs = log.lines, log.msgs
    load_end = _last_before(log, failure_at, _M_LOAD_END)
    if load_end is None:
        return None
    if any(_M_POOL.search(msgs[k]) or _M_CAPTURE_BEGIN.search(msgs[k]) for k in log.hot_in(load_end, failure_at)):
        return None
    avail = _AVAIL.search(msgs[load_end])
    avail_text = f" (avail mem={avail.group(1)} GB after the weights)" if avail else ""
    sig = CATALOG[0]
    return Diagnosis(
        failure_class=NOT_ENOUGH_MEMORY,
        cause=f"{msgs[failure_at].strip()} (the exception itself is not in the log), right "
        f"after 'Load weight end'{avail_text} and before the KV cache was allocated",
        advice=sig.advice,
        evidence=(lines[load_end], lines[failure_at]),
        summary="Probably not enough memory for the KV cache: the failure came at the pool "
        "sizing step, where SGLang raises 'Not enough memory'.",
        via=via,
        line_number=failure_at + 1,
        confidence="inferred",
        ready=log.ready,
    )


class LogWatcher:
    """Feeds on log lines as they stream; ``feed`` returns a Diagnosis at the first fatal
    line (the sigquit line, or a line matching a fatal signature), else None."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ready_seen = False
        self.verdict: Diagnosis | None = None

    def feed(self, line: str) -> Diagnosis | None:
        line = line.rstrip("\r\n")
        self.lines.append(line)
        if self.verdict is not None or not _is_hot(line):
            return None
        msg = strip_prefix(line)
        if _READY.search(msg):
            self.ready_seen = True
            return None
        if _SIGQUIT.search(msg):
            self.verdict = diagnose_log(self.lines)
            return self.verdict
        sig = _match(msg)
        if sig is not None and sig.fatal:
            self.verdict = diagnose_log(self.lines)
            return self.verdict
        return None

    def diagnose(self) -> Diagnosis:
        return self.verdict or diagnose_log(self.lines)


@dataclass(frozen=True)
class LogFigures:
    """Memory figures SGLang logs while it starts (GB in SGLang's log means GiB), TP rank 0's."""

    weights_gib: float | None = None  # "Load weight end ... mem usage="
    avail_after_load_gib: float | None = None
    kv_tokens: int | None = None  # "KV Cache is allocated. #tokens:"
    kv_gib: float | None = None  # K size + V size (or KV size for MLA)
    state_slots: int | None = None  # "Mamba Cache is allocated. max_mamba_cache_size:"
    state_gib: float | None = None  # conv_state + ssm_state
    avail_after_pool_gib: float | None = None  # "Memory pool end. avail mem="
    graph_gib: float | None = None  # "Capture cuda graph end ... mem usage="
    avail_after_graph_gib: float | None = None
    max_total_num_tokens: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    extra: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        out = {k: v for k, v in self.__dict__.items() if k != "extra"}
        out.update(self.extra)
        return out


_F_LOAD = re.compile(r"Load weight end\..*?avail mem=([\d.]+) GB(?:, mem usage=([\d.]+) GB)?")
_F_KV = re.compile(r"KV Cache is allocated\.(?: dtype: [\w.]+,)? #tokens: (\d+), (?:K size: ([\d.]+) GB, V size: ([\d.]+) GB|KV size: ([\d.]+) GB)")
_F_MAMBA = re.compile(r"Mamba Cache is allocated\. max_mamba_cache_size: (\d+), conv_state size: ([\d.]+) ?GB, ssm_state size: ([\d.]+) ?GB")
_F_POOL = re.compile(r"Memory pool end\. avail mem=([\d.]+) GB")
_F_GRAPH = re.compile(r"Capture cuda graph end\..*?mem usage=([\d.]+) GB\. avail mem=([\d.]+) GB")
_F_TOKENS = re.compile(r"max_total_num_tokens=(\d+),.*?max_running_requests=(\d+),.*?context_len=(\d+)")
_TP_RANK = re.compile(r"\bTP(\d+)\b")


def read_figures(lines: Iterable[str]) -> LogFigures:
    """Each start-up figure as the lowest TP rank logged it (rank 0 when the log has it;
    lines without a rank count as rank 0), its first value."""
    best: dict[str, tuple[int, object]] = {}

    def put(rank: int, key: str, value: object) -> None:
        if key not in best or rank < best[key][0]:
            best[key] = (rank, value)

    for raw in lines:
        found = _TP_RANK.search(raw[:64])
        rank = int(found.group(1)) if found else 0
        msg = strip_prefix(raw)
        if m := _F_LOAD.search(msg):
            put(rank, "avail_after_load_gib", float(m.group(1)))
            if m.group(2):
                put(rank, "weights_gib", float(m.group(2)))
        elif m := _F_KV.search(msg):
            put(rank, "kv_tokens", int(m.group(1)))
            kv = float(m.group(4)) if m.group(4) else float(m.group(2)) + float(m.group(3))
            put(rank, "kv_gib", round(kv, 4))
        elif m := _F_MAMBA.search(msg):
            put(rank, "state_slots", int(m.group(1)))
            put(rank, "state_gib", round(float(m.group(2)) + float(m.group(3)), 4))
        elif m := _F_POOL.search(msg):
            put(rank, "avail_after_pool_gib", float(m.group(1)))
        elif m := _F_GRAPH.search(msg):
            put(rank, "graph_gib", float(m.group(1)))
            put(rank, "avail_after_graph_gib", float(m.group(2)))
        elif m := _F_TOKENS.search(msg):
            put(rank, "max_total_num_tokens", int(m.group(1)))
            put(rank, "max_running_requests", int(m.group(2)))
            put(rank, "context_len", int(m.group(3)))
    return LogFigures(**{k: v for k, (_, v) in best.items()})  # type: ignore[arg-type]
