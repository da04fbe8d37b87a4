"""Runs SGLang's own launch-flag parser (`prepare_server_args`) inside an environment that has the
real sglang stack installed, on a machine without a GPU.

Stands in for nothing: this is SGLang's own code. Only what probes the GPU is patched, so that
SGLang sees the GPUs named on the command line (each patch is named below). Reads one JSON list
of argv lists on stdin; prints one JSON object per case on stdout:
  {"outcome": "accept" | "refuse-parse" | "refuse-after", "message": str, "resolved": {...}}
refuse-parse: argparse exits (the last stderr line); refuse-after: ServerArgs.__post_init__ or
check_server_args raises (the exception's text).

Usage: VENV/bin/python tests/oracle/sglang_parse.py --memory-mib 49140 --sm 86 --gpu-name "NVIDIA RTX A6000" --gpus 2 < cases.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import sys
import warnings

RESOLVED = (
    "mem_fraction_static", "chunked_prefill_size", "cuda_graph_max_bs", "max_running_requests",
    "mamba_scheduler_strategy", "disable_radix_cache", "speculative_num_draft_tokens",
    "speculative_algorithm", "context_length", "tp_size", "kv_cache_dtype", "page_size",
)


def patch_gpu_probes(memory_mib: int, sm: int, gpu_name: str, gpus: int) -> list[str]:
    """Patches every GPU probe server_args.py reaches while parsing, and returns their names."""
    import torch

    # Imported before any patch: these modules decide at import time whether to load
    # sgl_kernel's CUDA ops (which need a driver); server_args asks again at parse time.
    import sglang.srt.configs.model_config  # noqa: F401
    import sglang.srt.server_args as server_args
    import sglang.srt.utils as utils

    major, minor = divmod(sm, 10)
    patches = {
        "get_device_memory_capacity": lambda *a, **k: float(memory_mib),  # nvidia-smi memory.total
        "get_device_sm": lambda *a, **k: sm,                              # torch.cuda.get_device_capability
        "get_device_name": lambda *a, **k: gpu_name,                      # torch.cuda.get_device_name
        "is_cuda": lambda: True,                                          # torch.version.cuda and is_available
        "is_cuda_alike": lambda: True,
        "is_sm100_supported": lambda *a, **k: sm >= 100,
        "is_sm90_supported": lambda *a, **k: sm >= 90,
    }
    done = []
    for name, fn in patches.items():
        for module in (server_args, utils):
            if hasattr(module, name):
                setattr(module, name, fn)
                done.append(f"{module.__name__}.{name}")
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: gpus
    torch.cuda.get_device_capability = lambda *a, **k: (major, minor)
    torch.cuda.get_device_name = lambda *a, **k: gpu_name
    done += ["torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.get_device_capability",
             "torch.cuda.get_device_name"]
    return done


def run_case(argv: list[str]) -> dict:
    from sglang.srt.server_args import prepare_server_args

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = prepare_server_args(list(argv))
            if hasattr(args, "check_server_args"):
                pass  # __post_init__ already calls it in the releases we run
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return {"outcome": "refuse-parse", "message": lines[-1] if lines else "", "resolved": {}}
    except Exception as exc:  # SGLang raises ValueError, AssertionError, RuntimeError...
        return {"outcome": "refuse-after", "message": f"{type(exc).__name__}: {exc}", "resolved": {}}
    return {"outcome": "accept", "message": "", "resolved": {k: getattr(args, k, None) for k in RESOLVED}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memory-mib", type=int, required=True)
    parser.add_argument("--sm", type=int, required=True)
    parser.add_argument("--gpu-name", required=True)
    parser.add_argument("--gpus", type=int, required=True)
    opts = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    patched = patch_gpu_probes(opts.memory_mib, opts.sm, opts.gpu_name, opts.gpus)
    cases = json.load(sys.stdin)
    out = sys.stdout
    print(json.dumps({"patched": patched}), file=out, flush=True)
    for argv in cases:
        with contextlib.redirect_stdout(io.StringIO()):
            result = run_case(argv)
        print(json.dumps(result, default=str), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
