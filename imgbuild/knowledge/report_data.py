"""The report's data: the matrix as a person reads it, and each target with its plan.

Sections, each a list of plain dicts (the page is drawn from them by report_html, and
``imgbuild report --json`` prints the same document):

- ``grid``: architecture classes (grouped by family) against releases, oldest to newest,
  as runs of one state (absent, served, known issue, removed) so the page stays small;
- ``releases``: one row per engine, newest first, with its pins and CUDA's driver floor;
- ``gpus``: memory, compute capability and which CUDA releases' torch wheels carry kernels;
- ``targets``: each target's plan per GPU as bar segments beside the numbers, its build,
  certificate and where it was published.

Pure data: the caller (imgbuild.flows.report) plans, reads stores and records.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from packaging.version import Version

from imgbuild.knowledge.matrix import Matrix
from imgbuild.knowledge.specs import EngineSpec, KnownIssue

# State of one architecture class in one release, best first; also the CSS class of a cell.
GRID_STATES = ("served", "issue", "absent", "removed")
# Segments of a per-GPU bar, bottom to top as SGLang fills the GPU; headroom is what is left.
BAR_SEGMENTS = ("weights", "kv_cache", "hybrid_state", "draft", "reserve", "headroom")

_FAMILY_CUT = re.compile(r"(?<=[A-Za-z])(?=For[A-Z]|Model|LMHead|Embedding|MTP|NextN|Eagle)|[0-9_]|(?<=[a-z])V(?=\d)")
_URL = re.compile(r"https?://[^\s,;)]+")


def family_of(architecture: str) -> str:
    """'Qwen3_5ForConditionalGeneration' -> 'Qwen', 'DeepseekV3ForCausalLM' -> 'Deepseek',
    'MiniCPM3ForCausalLM' -> 'MiniCPM': the name up to its first version digit or role suffix."""
    cut = next((m.start() for m in _FAMILY_CUT.finditer(architecture) if m.start() > 0), len(architecture))
    return architecture[:cut]


def first_link(text: str) -> str | None:
    found = _URL.search(text or "")
    return found.group(0).rstrip(".") if found else None


def _issues_for(architecture: str, issues: Sequence[KnownIssue]) -> list[KnownIssue]:
    return [i for i in issues if architecture in i.architectures]


def _state(architecture: str, engine: EngineSpec, seen: bool, issues: Sequence[KnownIssue]) -> tuple[str, str | None]:
    """(state, the known issue's id when that is why) of ``architecture`` in ``engine``."""
    if architecture not in engine.architectures:
        return ("removed" if seen else "absent"), None
    here = Version(engine.version)
    for issue in issues:
        if Version(issue.min_sglang) > here:
            return "issue", issue.id
    return "served", None


def _runs(architecture: str, engines: Sequence[EngineSpec], issues: Sequence[KnownIssue]) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    seen = False
    for engine in engines:
        state, issue = _state(architecture, engine, seen, issues)
        seen = seen or architecture in engine.architectures
        last = runs[-1] if runs else None
        if last and last["state"] == state and last["issue"] == issue:
            last["to"], last["count"] = engine.version, last["count"] + 1
        else:
            runs.append({"state": state, "issue": issue, "from": engine.version, "to": engine.version, "count": 1})
    return runs


def _class_row(architecture: str, engines: Sequence[EngineSpec], issues: Sequence[KnownIssue],
               max_bad: Mapping[str, Any]) -> dict[str, Any]:
    registered = [e.version for e in engines if architecture in e.architectures]
    # only issues that raise the minimum above the first registration say something here
    mine = [i for i in _issues_for(architecture, issues)
            if registered and Version(i.min_sglang) > Version(registered[0])]
    runs = _runs(architecture, engines, mine)
    removed = [r["from"] for r in runs if r["state"] == "removed"]
    served = [e.version for e in engines if architecture in e.architectures
              and not any(Version(i.min_sglang) > Version(e.version) for i in mine)]
    return {
        "architecture": architecture,
        "first_registered": registered[0] if registered else None,
        "first_served": served[0] if served else None,
        "last_registered": registered[-1] if registered else None,
        "removed_in": removed,
        "known_issues": [{"id": i.id, "min_sglang": i.min_sglang, "max_bad": max_bad.get(i.id),
                          "reason": i.reason, "link": first_link(i.source), "source": i.source} for i in mine],
        "runs": runs,
    }


def _label(heads: list[str]) -> str:
    """The spelling most classes of a family use ('Qwen', not 'QWen' of QWenLMHeadModel)."""
    return max(sorted(set(heads)), key=heads.count)


def architecture_grid(matrix: Matrix) -> dict[str, Any]:
    """Every class any release registers, by family (alphabetical), against the releases."""
    engines = matrix.engines
    classes = sorted(set().union(*(e.architectures for e in engines)) if engines else set())
    max_bad = {str(r.get("id")): r.get("max_bad") for r in matrix.raw.get("known_issues") or [] if isinstance(r, Mapping)}
    families: dict[str, list[dict[str, Any]]] = {}
    for arch in classes:
        families.setdefault(family_of(arch).lower(), []).append(_class_row(arch, engines, matrix.known_issues, max_bad))
    return {
        "releases": [e.version for e in engines],
        "families": [{"family": _label([family_of(r["architecture"]) for r in rows]), "classes": rows}
                     for _, rows in sorted(families.items())],
        "class_count": len(classes),
    }


def _lock_imports(engine: EngineSpec, kind: str = "as_of_release") -> bool | None:
    """Whether matrix.yaml's lock_smoke (scripts/lock_all.py) records ``kind``'s lock as importing; None unmeasured."""
    record = engine.lock_smoke.get(kind)
    return None if record is None else bool(record["imports"])


def _lock_failure(engine: EngineSpec, kind: str = "as_of_release") -> str | None:
    """The failing step and root error line of ``kind``'s lock, for the cell's title."""
    record = engine.lock_smoke.get(kind) or {}
    if record.get("imports") is not False:
        return None
    where = f" (in {', '.join(record['packages'])})" if record.get("packages") else ""
    return f"{record.get('step')}: {record.get('root')}{where}"


def _pin(pins: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        if name in pins:
            return f"{name}{pins[name]}" if pins[name] else f"{name} (unpinned)"
    return None


def recommended_engine(matrix: Matrix) -> str | None:
    """The newest release with a CUDA stack whose lock the matrix does not record as failing to import
    (and, where any release records it, one recorded as importing)."""
    recorded = {e.version: _lock_imports(e) for e in matrix.engines}
    need_yes = any(ok is True for ok in recorded.values())
    for engine in reversed(matrix.engines):
        ok = recorded.get(engine.version)
        if engine.cuda and ok is not False and (ok is True or not need_yes):
            return engine.version
    return None


def release_rows(matrix: Matrix) -> list[dict[str, Any]]:
    """One row per engine, newest first."""
    recommended = recommended_engine(matrix)
    drivers = {c.version: c.min_driver for c in matrix.cuda}
    rows = []
    previous: frozenset[str] = frozenset()
    for engine in matrix.engines:
        pins = engine.pins
        rows.append({
            "version": engine.version, "recommended": engine.version == recommended,
            "released": engine.released, "torch": engine.torch, "cuda": engine.cuda,
            "min_driver": drivers.get(engine.cuda or ""),
            "kernel": _pin(pins, "sglang-kernel", "sgl-kernel"),
            "flashinfer": _pin(pins, "flashinfer-python", "flashinfer"),
            "transformers": _pin(pins, "transformers"),
            "glibc": engine.glibc, "python": engine.requires_python,
            "lock_imports": _lock_imports(engine), "lock_failure": _lock_failure(engine),
            "lock_imports_today": _lock_imports(engine, "latest"), "lock_failure_today": _lock_failure(engine, "latest"),
            "architectures": len(engine.architectures),
            "added": len(engine.architectures - previous), "removed": len(previous - engine.architectures),
        })
        previous = engine.architectures
    rows.reverse()
    return rows


def gpu_rows(matrix: Matrix, *, runs_on: Callable[[str, tuple[str, ...]], bool]) -> list[dict[str, Any]]:
    """Each GPU with the CUDA releases whose torch wheels carry kernels for it (``runs_on``:
    imgbuild.flows.check.kernels_run_on, the rule check applies)."""
    return [{
        "name": g.name, "memory_mib": g.memory_mib, "memory_gib": round(g.memory_mib / 1024, 2),
        "compute_capability": g.compute_capability, "aliases": list(g.aliases),
        "cuda_kernels": [c.version for c in matrix.cuda if runs_on(g.compute_capability, c.sm)],
        "cuda_without": [c.version for c in matrix.cuda if not runs_on(g.compute_capability, c.sm)],
    } for g in matrix.gpus]


def bar_segments(plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One GPU's plan (PlanResult.to_dict()) as stacked segments in GiB that add up to the
    GPU's memory.total; a negative headroom is what the plan lacks."""
    per = plan.get("per_gpu") or {}
    total = float(per.get("total_gib") or 0)
    parts = {
        "weights": float(per.get("weights_gib") or 0),
        "kv_cache": float(per.get("kv_gib") or 0),
        # conv + ssm state of the hybrid layers, and the speculative intermediate states beside them
        "hybrid_state": float(per.get("mamba_state_gib") or 0) + float(per.get("reserve_gib") or 0),
        "draft": float(per.get("draft_gib") or 0),
        # CUDA context + NCCL (imgbuild's allowance) and activations + CUDA graphs (runtime need)
        "reserve": float(per.get("startup_allowance_gib") or 0) + float(per.get("runtime_need_gib") or 0),
    }
    parts["headroom"] = total - sum(parts.values())
    return [{"segment": k, "gib": round(v, 3)} for k, v in parts.items()]


def gpu_bars(plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A bar per GPU the launch uses (TP x PP x DP ranks, at most the target's GPUs): under
    tensor parallelism each holds the same share, which is what SGLang plans (the smallest GPU)."""
    gpu = plan.get("gpu") or {}
    count = int(gpu.get("count") or 1)
    segments = bar_segments(plan)
    total = float((plan.get("per_gpu") or {}).get("total_gib") or 0)
    return [{"index": i, "name": gpu.get("name"), "total_gib": total, "segments": segments} for i in range(count)]


def _newest(certs: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    ordered = sorted(certs, key=lambda c: (str(c.get("created_at", "")), str(c.get("id", ""))))
    return ordered[-1] if ordered else None


def certificate_summary(cert: Mapping[str, Any] | None, plan: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Verdict, hardware, and the log's figures beside the plan's (the certificate's own plan
    figures, else this report's plan)."""
    if not cert:
        return None
    hw = cert.get("hardware") if isinstance(cert.get("hardware"), Mapping) else {}
    figures = cert.get("figures") if isinstance(cert.get("figures"), Mapping) else {}
    log_f = dict(figures.get("log") or {})
    plan_f = dict(figures.get("plan") or {})
    if not plan_f and plan:
        per = plan.get("per_gpu") or {}
        plan_f = {"weights_gib": per.get("weights_gib"), "avail_after_load_gib": per.get("avail_after_load_gib"),
                  "kv_tokens": per.get("kv_tokens"), "kv_gib": per.get("kv_gib"), "state_slots": per.get("mamba_slots"),
                  "state_gib": per.get("mamba_state_gib"), "avail_after_pool_gib": per.get("memory_pool_end_avail_gib"),
                  "max_running_requests": plan.get("max_running_requests"), "context_len": plan.get("context_length")}
    keys = [k for k in dict.fromkeys([*plan_f, *log_f]) if plan_f.get(k) is not None or log_f.get(k) is not None]
    rows = []
    for key in keys:
        lv, pv = log_f.get(key), plan_f.get(key)
        diff = round(lv - pv, 4) if isinstance(lv, (int, float)) and isinstance(pv, (int, float)) else None
        rows.append({"figure": key, "log": lv, "plan": pv, "difference": diff})
    return {
        "id": cert.get("id"), "verdict": cert.get("verdict"), "created_at": cert.get("created_at"),
        "gpus": [{"name": g.get("name"), "uuid": g.get("uuid"), "memory_total_mib": g.get("memory_total_mib")}
                 for g in hw.get("gpus") or [] if isinstance(g, Mapping)],
        "driver_version": hw.get("driver_version"), "cuda_driver_version": hw.get("cuda_driver_version"),
        "failure": cert.get("failure"), "diagnosis": (cert.get("diagnosis") or {}).get("class")
        if isinstance(cert.get("diagnosis"), Mapping) else None,
        "attestation_gaps": list(cert.get("attestation_gaps") or []), "figures": rows,
    }


def build_summary(steps: Mapping[str, Mapping[str, Any]], record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The image make built (its state) and the build record beside it; None when neither exists."""
    build = (steps.get("build") or {}).get("result") or {}
    render = (steps.get("render") or {}).get("result") or {}
    rec = dict(record or {})
    if not build and not rec:
        return None
    size = rec.get("size_bytes") or build.get("size_bytes")
    return {
        "image": build.get("image") or rec.get("image"), "image_id": build.get("image_id") or rec.get("image_id"),
        "repo_digest": build.get("repo_digest") or rec.get("repo_digest"),
        "recipe_digest": render.get("recipe_digest") or rec.get("recipe_digest"),
        "tag": render.get("tag"), "base": rec.get("base"), "size_bytes": size,
        "duration_s": rec.get("duration_s"), "packages": len(rec.get("pins") or {}) or None,
        "record": rec.get("record_path"),
    }
