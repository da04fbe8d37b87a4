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
    import importlib.util

    for name in ("sglang.srt.configs.model_config", "sglang.srt.model_loader", "sglang.srt.arg_groups.overrides",
                 "sglang.srt.arg_groups.memory_hook"):
        try:  # the last two exist from 0.5.14 / 0.5.16 on (resolution imports the loader)
            importlib.import_module(name)
        except ImportError:
            pass
    import sglang.srt.server_args as server_args
    import sglang.srt.utils as utils

    major, minor = divmod(sm, 10)
    patches = {
        "get_device_memory_capacity": lambda *a, **k: float(memory_mib),  # nvidia-smi memory.total
        "get_device_sm": lambda *a, **k: sm,                              # torch.cuda.get_device_capability
        "get_device_name": lambda *a, **k: gpu_name,                      # torch.cuda.get_device_name
        "is_cuda": lambda: True,                                          # torch.version.cuda and is_available
        "is_cuda_alike": lambda: True,
        # utils/common.py _check_cuda_device_version: the capability's major is the one named (SM120 is no SM100)
        "is_sm100_supported": lambda *a, **k: major == 10,
        "is_sm90_supported": lambda *a, **k: major == 9,
    }
    done = []
    # Every sglang module that imported a probe by name holds its own reference (server_args.py,
    # utils, 0.5.16+ arg_groups/memory_hook.py ...): replace each reference to the original.
    originals = {name: getattr(utils, name) for name in patches if hasattr(utils, name)}
    for module_name, module in sorted(sys.modules.items()):
        if not module_name.startswith("sglang") or module is None:
            continue
        for name, fn in patches.items():
            current = getattr(module, name, None)
            if current is not None and (current is originals.get(name) or module in (server_args, utils)):
                setattr(module, name, fn)
                done.append(f"{module_name}.{name}")
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: gpus
    torch.cuda.get_device_capability = lambda *a, **k: (major, minor)
    torch.cuda.get_device_name = lambda *a, **k: gpu_name
    done += ["torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.get_device_capability",
             "torch.cuda.get_device_name"]
    done += _clear_cached_probes()
    try:  # 0.5.17+: runtime_context.py's own way to say what machine this is
        from sglang.srt import runtime_context
    except ImportError:
        return done
    if not hasattr(runtime_context, "override_platform"):
        return done
    facts = dict(is_cuda=True, is_hip=False, is_npu=False, is_xpu=False, is_musa=False, is_mps=False,
                 is_sm90=major == 9, is_sm100=major == 10, is_sm100_or_sm110=major in (10, 11), is_sm110=major == 11,
                 is_sm120=major == 12, is_blackwell=major in (10, 11, 12), is_hopper_with_cuda_12_3=major == 9,
                 device_sm=sm, device_capability=(major, minor),
                 # is_flashinfer_available(): the package is in the locked stack, and the GPU is CUDA
                 has_flashinfer=importlib.util.find_spec("flashinfer") is not None)
    # each release knows its own set of facts (0.5.21 has no is_mps or is_sm110) and refuses others
    known = set(getattr(runtime_context, "_PLATFORM_PROBES", facts)) | set(getattr(runtime_context, "_PLATFORM_VALUES", ()))
    runtime_context.override_platform(**{k: v for k, v in facts.items() if k in known}).install()
    done.append("sglang.srt.runtime_context.override_platform")
    return done


def _clear_cached_probes() -> list[str]:
    """utils/common.py caches some answers (lru_cache) that ask the probes: is_flashinfer_available()
    asks is_cuda(), and the imports above asked it before the patch, so it said False and every default
    attention backend became triton. Empties those caches so they ask the patched probes again."""
    cleared = []
    for module_name, module in sorted(sys.modules.items()):
        if not module_name.startswith("sglang.srt.utils") or module is None:
            continue
        for name, value in vars(module).items():
            if getattr(value, "__module__", None) == module_name and callable(getattr(value, "cache_clear", None)):
                value.cache_clear()
                cleared.append(f"{module_name}.{name} (cache emptied)")
    return cleared


def replay_quantization_registry() -> str | None:
    """layers/quantization/__init__.py registers its CUDA-only methods (mxfp4) at import time by asking
    is_cuda(), which the imports above answered before the probes were patched. Runs a second copy of the
    module under the patched probes and puts its registry, in its order, into the dicts configs/model_config.py
    holds, so that ModelConfig._verify_quantization sees what it sees on the GPUs named here."""
    import importlib.util

    try:
        import sglang.srt.layers.quantization as quantization
    except ImportError:
        return None
    spec = importlib.util.find_spec(quantization.__name__)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    for name in ("BASE_QUANTIZATION_METHODS", "QUANTIZATION_METHODS"):
        held, replayed = getattr(quantization, name, None), getattr(fresh, name, None)
        if isinstance(held, dict) and isinstance(replayed, dict):
            held.clear()
            held.update(replayed)
    return "sglang.srt.layers.quantization.QUANTIZATION_METHODS"


def run_case(argv: list[str]) -> dict:
    from sglang.srt.server_args import prepare_server_args

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = prepare_server_args(list(argv))
            view = args
            if hasattr(args, "resolve_once"):
                # 0.5.16+: prepare_server_args returns the raw input; launch_server.py run_server
                # resolves it (resolve_once) and reads it through arg_groups/overrides.py resolving_view
                from sglang.srt.arg_groups.overrides import resolving_view

                args.resolve_once()
                view = resolving_view(args)
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return {"outcome": "refuse-parse", "message": lines[-1] if lines else "", "resolved": {}}
    except Exception as exc:  # SGLang raises ValueError, AssertionError, RuntimeError...
        return {"outcome": "refuse-after", "message": f"{type(exc).__name__}: {exc}", "resolved": {}}
    resolved = {k: getattr(view, k, None) for k in RESOLVED}
    # 0.5.16+ names: the decode graph's max batch (cuda_graph_config.decode.max_bs) and the
    # hybrid cache strategy (mamba_radix_cache_strategy) hold what the older fields held
    graphs = getattr(view, "cuda_graph_config", None)
    if resolved["cuda_graph_max_bs"] is None and graphs is not None:
        resolved["cuda_graph_max_bs"] = getattr(getattr(graphs, "decode", None), "max_bs", None)
    if resolved["mamba_scheduler_strategy"] is None:
        resolved["mamba_scheduler_strategy"] = getattr(view, "mamba_radix_cache_strategy", None)
    return {"outcome": "accept", "message": "", "resolved": resolved}


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
    patched += [name for name in (replay_quantization_registry(),) if name]
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
