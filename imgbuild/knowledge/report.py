"""The report of ``imgbuild report``: the compatibility matrix and each target against its status.

``build_rows`` sums each target of matrix.yaml up (its make steps, its newest certificate,
where it was published); ``report_document`` puts those rows beside the matrix itself
(imgbuild.knowledge.report_data: the architectures x releases grid, the releases, the GPUs)
and each target's plan, build and certificate, as one JSON-able document. ``--json`` prints
it; imgbuild.knowledge.report_html draws the page from it.

Pure data: the caller (imgbuild.flows.report) plans, reads the stores and writes the page;
nothing here imports docker, httpx or click.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from imgbuild.knowledge import report_data
from imgbuild.knowledge.matrix import Matrix

STEPS = ("check", "plan", "render", "build", "certify", "publish")
# How a row is summed up, from best to worst; also the CSS class of the badge.
STATUSES = ("certified", "certified-unattested", "published-uncertified", "built", "failed", "not-built")


@dataclass(frozen=True)
class ReportRow:
    target: str
    engine: str
    cuda: str
    model: str
    gpus: str
    launch_flags: tuple[str, ...]
    status: str  # one of STATUSES
    steps: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # step -> {"status", "detail"}
    certificate: Mapping[str, Any] | None = None
    published: str | None = None  # HOST/REPO@sha256:...


def _newest(certs: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    ordered = sorted(certs, key=lambda c: (str(c.get("created_at", "")), str(c.get("id", ""))))
    return ordered[-1] if ordered else None


def build_rows(
    targets: Sequence[Mapping[str, Any]],
    certificates: Iterable[Mapping[str, Any]],
    make_state: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[ReportRow]:
    """One row per target (TargetSpec.to_dict() form); a certificate belongs to the
    target it names; make_state is {target: {step: {"status", "detail", "result"}}}."""
    by_target: dict[str, list[Mapping[str, Any]]] = {}
    for cert in certificates:
        target = cert.get("target")
        name = target.get("name") if isinstance(target, Mapping) else target
        if name:
            by_target.setdefault(str(name), []).append(cert)
    rows = []
    for t in targets:
        name = str(t["name"])
        steps = dict((make_state or {}).get(name, {}))
        cert = _newest(by_target.get(name, []))
        publish = steps.get("publish") or {}
        published = (publish.get("result") or {}).get("reference") if publish.get("status") in ("done", "skipped-same") else None
        rows.append(ReportRow(
            target=name, engine=str(t.get("engine") or "?"), cuda=str(t.get("cuda") or "-"),
            model=str(t.get("model") or "-"), gpus=str(t.get("gpus") or "-"),
            launch_flags=tuple(str(f) for f in t.get("launch_flags") or ()),
            status=_status(cert, steps, published), steps=steps, certificate=cert, published=published,
        ))
    return rows


def _status(cert: Mapping[str, Any] | None, steps: Mapping[str, Mapping[str, Any]], published: str | None) -> str:
    verdict = str((cert or {}).get("verdict", ""))
    if verdict == "pass":
        return "certified"
    if verdict == "pass-unattested":
        return "certified-unattested"
    if verdict == "fail" or any(s.get("status") == "failed" for s in steps.values()):
        return "failed"
    if published:
        return "published-uncertified"
    if (steps.get("build") or {}).get("status") in ("done", "skipped-same"):
        return "built"
    return "not-built"


def _target_entry(row: ReportRow, planned: Mapping[str, Any], record: Mapping[str, Any] | None) -> dict[str, Any]:
    plan = planned.get("plan")
    entry: dict[str, Any] = {
        "target": row.target, "status": row.status, "engine": row.engine, "cuda": row.cuda, "model": row.model,
        "gpus": row.gpus, "launch_flags": list(row.launch_flags), "steps": {k: dict(v) for k, v in row.steps.items()},
        "published": row.published, "model_source": planned.get("model_source"),
        "not_planned": None if plan else (planned.get("not_planned") or "no plan"),
        "plan": None, "build": report_data.build_summary(row.steps, record),
        "certificate": report_data.certificate_summary(row.certificate, plan),
        "certificate_full": dict(row.certificate) if row.certificate else None,
    }
    if plan:
        entry["plan"] = {**{k: plan.get(k) for k in (
            "sglang", "rules", "gpu", "fits", "verdict", "sglang_error", "mem_fraction_static", "max_running_requests",
            "context_length", "chunked_prefill_size", "cuda_graph_max_bs", "radix_cache", "mamba_strategy",
            "speculative_algorithm", "speculative_num_draft_tokens", "per_gpu", "problems", "notes")},
            "bars": report_data.gpu_bars(plan)}
    return entry


def report_document(
    matrix: Matrix,
    rows: Sequence[ReportRow],
    *,
    plans: Mapping[str, Mapping[str, Any]],
    builds: Mapping[str, Mapping[str, Any]],
    runs_on: Callable[[str, tuple[str, ...]], bool],
    generated_at: str = "",
) -> dict[str, Any]:
    """The whole report as data. ``plans``: {target: {"plan": PlanResult.to_dict() | None,
    "not_planned": why, "model_source": what was read}}; ``builds``: {target: build record}."""
    releases = report_data.release_rows(matrix)
    return {
        "generated_at": generated_at, "matrix": str(matrix.path),
        "statuses": {s: sum(1 for r in rows if r.status == s) for s in STATUSES},
        "recommended": next((r["version"] for r in releases if r["recommended"]), None),
        "releases": releases,
        "gpus": report_data.gpu_rows(matrix, runs_on=runs_on),
        "grid": report_data.architecture_grid(matrix),
        "known_issues": [{"id": i.id, "min_sglang": i.min_sglang, "model_types": list(i.model_types),
                          "architectures": list(i.architectures), "reason": i.reason,
                          "link": report_data.first_link(i.source)} for i in matrix.known_issues],
        "targets": [_target_entry(r, plans.get(r.target) or {}, builds.get(r.target)) for r in rows],
    }
