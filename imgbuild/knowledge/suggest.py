"""Which changes to a launch make it fit: re-plan candidate flag changes, rank them by cost.

Pure: every candidate is re-planned with imgbuild.knowledge.memory.plan_memory; nothing is
read or printed. imgbuild.flows.plan calls suggest_changes after a plan that does not fit, or whose KV
pool is shorter than the --context-length asked for.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from imgbuild.knowledge.memory import (
    MemoryInputs,
    MemoryPlan,
    derived_context,
    plan_memory,
    served_kv_cache_dtype,
    startup_allowance_gib,
)


@dataclass(frozen=True)
class GpuView:
    """The GPUs a plan is for, as imgbuild.flows.plan.read_gpus sees them (--gpu or NVML)."""

    name: str
    count: int
    total_mib: float  # smallest memory.total over the host's GPUs (what SGLang's default reads)
    free_gib: float  # F0 on the GPUs the launch uses
    allowance_gib: float
    source: str
    holders: tuple[str, ...] = ()  # processes already holding memory on the GPUs the launch uses
    nvlink: bool | None = None  # matrix.yaml's row: all boards on NVLink (None: not recorded)
    platform: str = "cuda"  # matrix.yaml's row: "rocm" for an AMD Instinct GPU


@dataclass(frozen=True)
class Suggestion:
    flags: tuple[str, ...]  # the flags to add or change
    description: str
    cost: int
    verdict: str
    kv_tokens: int
    max_running_requests: int
    gpu: str | None = None  # another --gpu, for "more GPUs"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "flags": list(self.flags),
            "description": self.description,
            "cost": self.cost,
            "verdict": self.verdict,
            "kv_tokens": self.kv_tokens,
            "max_running_requests": self.max_running_requests,
        }
        if self.gpu:
            out["gpu"] = self.gpu
        return out


# ----------------------------------------------------------------------------- the search

# What each change costs the user, lowest first: a knob, then throughput, then accuracy or
# features, then context, then hardware.
COST_MFS = 1
COST_GRAPH_BS = 2
COST_MRR = 2
COST_SSM_BF16 = 2
COST_NO_RADIX = 3
COST_KV_FP8 = 3
COST_CONTEXT = 4
COST_NO_SPEC = 5
COST_MORE_GPUS = 6


@dataclass(frozen=True)
class _Move:
    name: str
    cost: int
    options: Callable[[MemoryInputs], list[tuple[tuple[str, ...], str, MemoryInputs]]]


def _ladder(name: str, cost: int, flag: str, field_name: str, values: Sequence[Any], describe: str) -> _Move:
    def options(inp: MemoryInputs) -> list[tuple[tuple[str, ...], str, MemoryInputs]]:
        out = []
        for value in values:
            if getattr(inp, field_name) == value:
                continue
            out.append(((flag, str(value)), describe.format(value=value), replace(inp, **{field_name: value})))
        return out

    return _Move(name, cost, options)


def _moves(base: MemoryInputs, plan: MemoryPlan, gpus: GpuView) -> list[_Move]:
    g = base.geometry
    moves: list[_Move] = []
    mfs_now = plan.mem_fraction_static
    # nearest first: the smallest change of mem-fraction-static that fits wins
    up = [round(mfs_now + d, 3) for d in (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1) if mfs_now + d <= 0.96]
    down = [round(mfs_now - d, 3) for d in (0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.15) if mfs_now - d >= 0.5]
    order = [v for pair in itertools.zip_longest(up, down) for v in pair if v is not None]
    moves.append(_ladder("mfs", COST_MFS, "--mem-fraction-static", "mem_fraction_static", order, "mem-fraction-static {value}"))
    mrr_now = plan.max_running_requests or 48
    mrr_values = [n for n in (32, 24, 16, 12, 8, 6, 4, 2) if n < mrr_now]
    if mrr_values:
        moves.append(_ladder("mrr", COST_MRR, "--max-running-requests", "max_running_requests", mrr_values, "at most {value} running requests"))
    if not base.disable_cuda_graph:
        bs_now = plan.cuda_graph_max_bs
        bs_values = [n for n in (16, 8, 4) if n < bs_now]
        if bs_values:
            moves.append(_ladder("graph_bs", COST_GRAPH_BS, "--cuda-graph-max-bs", "cuda_graph_max_bs", bs_values, "CUDA graphs up to batch {value}"))
    if g.hybrid and (base.mamba_ssm_dtype or g.mamba_ssm_dtype or "float32") == "float32":
        moves.append(
            _Move("ssm", COST_SSM_BF16, lambda inp: [(("--mamba-ssm-dtype", "bfloat16"), "SSM state in bfloat16", replace(inp, mamba_ssm_dtype="bfloat16"))])
        )
    if g.hybrid and plan.radix_cache:
        moves.append(
            _Move("radix", COST_NO_RADIX, lambda inp: [(("--disable-radix-cache",), "no prefix caching", replace(inp, disable_radix_cache=True))])
        )
    # "auto" as the pool is allocated: a checkpoint whose quant config sets kv_cache_quant_algo
    # FP8 already serves FP8 (memory.checkpoint_kv_cache_dtype), so FP8 KV would change nothing
    if served_kv_cache_dtype(base) in ("auto", "bfloat16", "bf16", "float16"):
        moves.append(
            _Move("kvfp8", COST_KV_FP8, lambda inp: [(("--kv-cache-dtype", "fp8_e4m3"), "FP8 KV cache", replace(inp, kv_cache_dtype="fp8_e4m3"))])
        )
    ctx_now = plan.context_length
    ctx_values = [c for c in (131072, 65536, 32768, 16384, 8192, 4096) if c < ctx_now]
    if ctx_values:
        moves.append(_ladder("context", COST_CONTEXT, "--context-length", "context_length", ctx_values, "context {value} tokens"))
    if base.speculative_algorithm:
        moves.append(
            _Move(
                "nospec",
                COST_NO_SPEC,
                lambda inp: [(("(drop the --speculative-* flags)",), "no speculative decoding", replace(
                    inp, speculative_algorithm=None, speculative_num_steps=None, speculative_eagle_topk=None,
                    speculative_num_draft_tokens=None, max_running_requests=inp.max_running_requests if base.max_running_requests else None))],
            )
        )
    return moves


def _more_gpus(base: MemoryInputs, gpus: GpuView) -> list[tuple[tuple[str, ...], str, MemoryInputs, str | None]]:
    g = base.geometry
    out = []
    tp = base.tp_size * 2
    heads_ok = (not g.num_attention_heads or g.num_attention_heads % tp == 0) and (
        g.mla or not g.num_kv_heads or g.num_kv_heads % tp == 0 or tp % g.num_kv_heads == 0
    ) and all(not h or h % tp == 0 for h in (g.linear_num_key_heads, g.linear_num_value_heads))
    if heads_ok:
        need = tp * base.pp_size
        free = gpus.free_gib + gpus.allowance_gib - startup_allowance_gib(tp, base.pp_size, nvlink=gpus.nvlink)
        gpu_arg = f"{gpus.name}x{need}" if gpus.source == "--gpu" else None
        if gpus.source == "--gpu" or gpus.count >= need:
            out.append((("--tp-size", str(tp)), f"{need} GPUs, TP {tp}", replace(base, tp_size=tp, attn_tp_size=tp, free_before_load_gib=free), gpu_arg))
    return out


_Start = tuple[tuple[str, ...], list[str], int, MemoryInputs]  # (flags, descriptions, cost, inputs)


def _starts(base: MemoryInputs, plan: MemoryPlan) -> list[_Start]:
    """Where the search starts: the user's flags, or, after a refusal, the change SGLang's
    error asks for (both of them for the radix cache rule of 0.5.10-0.5.13)."""
    starts: list[_Start] = [((), [], 0, base)]
    if plan.refusal and "context_length" in plan.refusal:
        ctx = derived_context(base.geometry, base.rules.version)
        starts = [(("--context-length", str(ctx)), ["the model's context length"], COST_CONTEXT,
                   replace(base, context_length=ctx))]
    if plan.refusal and "radix cache" in plan.refusal:
        flags0, desc0, cost0, inp0 = starts[0]
        starts = [
            (flags0 + ("--disable-radix-cache",), desc0 + ["no prefix caching (SGLang refuses the radix cache here)"],
             cost0 + COST_NO_RADIX, replace(inp0, disable_radix_cache=True)),
            (flags0 + ("--mamba-scheduler-strategy", "extra_buffer"),
             desc0 + ["radix cache kept with extra_buffer state tracking (needs SGLANG_ENABLE_SPEC_V2=1, the default)"],
             cost0 + COST_MFS, replace(inp0, mamba_strategy="extra_buffer")),
        ]
    return starts


class _Candidates:
    """Every change re-planned so far: the cheapest of each flag set that fits, and the misses."""

    def __init__(self, base: MemoryInputs) -> None:
        self.found: dict[tuple[str, ...], Suggestion] = {}
        self.misses: list[Suggestion] = []
        # what the user's flags ask for (SGLang's own default of 48 with EAGLE-family speculation)
        self.wanted = base.max_running_requests or (
            48 if base.speculative_algorithm and base.speculative_algorithm != "NGRAM" else None
        )

    def consider(self, pre: _Start, flags: tuple[str, ...], desc: list[str], cost: int, inp: MemoryInputs,
                 gpu_arg: str | None = None) -> bool:
        """Re-plan one change on top of the start; True when it fits."""
        pre_flags, pre_desc, pre_cost, _ = pre
        p = plan_memory(inp)
        # a launch that starts but serves few requests at once costs throughput: rank it lower
        asked = inp.max_running_requests or self.wanted
        penalty = 0
        if asked and p.max_running_requests < asked:
            penalty = 1 if p.max_running_requests * 2 >= asked else 2 if p.max_running_requests >= 8 else 4
            desc = desc + [f"only {p.max_running_requests} requests at once"]
        s = Suggestion(pre_flags + flags, "; ".join(pre_desc + desc), pre_cost + cost + penalty, p.verdict,
                       p.kv_tokens, p.max_running_requests, gpu_arg)
        # a borderline change is not offered as one that fits, nor one whose pool is shorter than the context asked
        if p.verdict == "fits" and not p.context_short:
            key = tuple(sorted(s.flags))
            if key not in self.found or self.found[key].cost > s.cost:
                self.found[key] = s
            return True
        self.misses.append(s)
        return False

    def expand(self, pre: _Start, combo: tuple[_Move, ...], idx: int, inp: MemoryInputs, flags: tuple[str, ...],
               desc: list[str], cost: int) -> bool:
        """Apply the moves of combo from idx on: a ladder move tries its values in order and
        keeps the first that fits."""
        if idx == len(combo):
            return self.consider(pre, flags, desc, cost, inp)
        move = combo[idx]
        for mflags, mdesc, minp in move.options(inp):
            if self.expand(pre, combo, idx + 1, minp, flags + mflags, desc + [mdesc], cost + move.cost):
                return True
        return False

    def search(self, pre: _Start, gpus: GpuView) -> None:
        """From one start: the start itself, each move and each pair of moves, then more GPUs
        (with a cheap knob where more GPUs alone miss)."""
        pre_flags, _, _, start = pre
        start_plan = plan_memory(start)
        if start_plan.refusal:
            return
        moves = [m for m in _moves(start, start_plan, gpus) if not (pre_flags and m.name == "radix")]
        if pre_flags:
            self.consider(pre, (), [], 0, start)
        for size in (1, 2):
            for combo in itertools.combinations(moves, size):
                self.expand(pre, combo, 0, start, (), [], 0)
        for flags, desc, inp, gpu_arg in _more_gpus(start, gpus):
            if not self.consider(pre, flags, [desc], COST_MORE_GPUS, inp, gpu_arg):
                for move in moves:
                    if move.name in ("mfs", "mrr", "ssm"):
                        if any(self.consider(pre, flags + mf, [desc, md], COST_MORE_GPUS + move.cost, mi, gpu_arg)
                               for mf, md, mi in move.options(inp)):
                            break

    def ranked(self, limit: int) -> tuple[Suggestion, ...]:
        """The changes that fit, cheapest first, without supersets of a cheaper fit; else the
        closest misses."""
        ranked = sorted(self.found.values(), key=lambda s: (s.cost, len(s.flags), -s.kv_tokens))
        # a change that already fits makes every superset of it a worse offer
        kept: list[Suggestion] = []
        for s in ranked:
            if not any(set(k.flags) < set(s.flags) and k.gpu == s.gpu for k in kept):
                kept.append(s)
        if kept:
            return tuple(kept[:limit])
        misses = sorted(self.misses, key=lambda s: (-s.kv_tokens, s.cost))
        return tuple(misses[:3])


def suggest_changes(base: MemoryInputs, plan: MemoryPlan, gpus: GpuView, *, limit: int = 6) -> tuple[Suggestion, ...]:
    """Re-plan candidate changes (alone and in pairs) and rank those that fit by cost.

    A refusal first needs the change SGLang's error asks for; where it offers two (the radix
    cache rule of 0.5.10-0.5.13: --disable-radix-cache, or --mamba-scheduler-strategy
    extra_buffer), both are searched.
    """
    if plan.verdict == "fits" and not plan.context_short:
        return ()
    candidates = _Candidates(base)
    for start in _starts(base, plan):
        candidates.search(start, gpus)
    return candidates.ranked(limit)
