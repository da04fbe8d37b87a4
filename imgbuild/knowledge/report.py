"""A static HTML page of the compatibility matrix: each target against its status.

One row per target of matrix.yaml: engine, CUDA, model, GPUs, launch flags, the
state of each step ``imgbuild make`` ran (check, plan, render, build, certify,
publish) and the newest certificate, whose details (hardware, driver, flags,
timings, diagnosis, the whole JSON) are one click away in a ``<details>``
element. No JavaScript, no external resources: the page works from a file and
from any static host.

Pure data: the caller gathers targets, certificates and make's state and writes
the page; nothing here imports docker, httpx or click.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from typing import Any, Iterable, Mapping, Sequence

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


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#1d2330}
h1{font-size:1.4rem;margin:0 0 .3rem}
p.meta{color:#5b6475;margin:0 0 1.2rem}
table.matrix{border-collapse:collapse;width:100%}
table.matrix th,table.matrix td{border:1px solid #d5dae3;padding:.4rem .5rem;vertical-align:top;text-align:left}
table.matrix th{background:#f2f4f8}
code{font-size:.85em}
.badge{display:inline-block;padding:.1rem .45rem;border-radius:.6rem;font-size:.8rem;font-weight:600;white-space:nowrap}
.certified{background:#d3f4dc;color:#0e5a26}
.certified-unattested{background:#e6f1d0;color:#41561a}
.published-uncertified{background:#fde9c8;color:#7a4a00}
.built{background:#dde8fb;color:#1c3e7a}
.failed{background:#fad4d4;color:#8a1414}
.not-built{background:#eceef2;color:#4b5261}
.step{font-size:.8rem;white-space:nowrap}
.step-done,.step-skipped-same{color:#0e5a26}
.step-failed{color:#8a1414;font-weight:600}
.step-skipped,.step-pending{color:#7b8294}
.step-detail{display:block;font-size:.75rem;color:#8a1414;max-width:22rem}
details summary{cursor:pointer}
details table{border-collapse:collapse;margin:.4rem 0}
details td{border:none;padding:.1rem .6rem .1rem 0}
pre{background:#f6f7f9;padding:.5rem;max-height:24rem;overflow:auto;font-size:.75rem}
"""


def _cell(text: str, *, cls: str | None = None) -> str:
    return f'<td{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>{text}</td>'


def _steps_html(steps: Mapping[str, Mapping[str, Any]]) -> str:
    parts = []
    for step in STEPS:
        s = steps.get(step) or {}
        status = str(s.get("status") or "pending")
        detail = escape(str(s.get("detail") or ""), quote=True)
        parts.append(f'<span class="step step-{escape(status)}" data-step="{step}" data-step-status="{escape(status)}" '
                     f'title="{detail}">{step}: {escape(status)}</span>')
        if status == "failed" and detail:
            parts.append(f'<span class="step-detail">{detail}</span>')
    return "<br>".join(parts)


def _certificate_html(cert: Mapping[str, Any] | None) -> str:
    if not cert:
        return "none"
    hw = cert.get("hardware") if isinstance(cert.get("hardware"), Mapping) else {}
    gpus = ", ".join(f"{g.get('name')} ({g.get('uuid')}, {g.get('memory_total_mib')} MiB)"
                     for g in hw.get("gpus") or [] if isinstance(g, Mapping))
    timings = cert.get("timings") if isinstance(cert.get("timings"), Mapping) else {}
    image = cert.get("image") if isinstance(cert.get("image"), Mapping) else {}
    diag = cert.get("diagnosis") if isinstance(cert.get("diagnosis"), Mapping) else None
    failure = cert.get("failure") if isinstance(cert.get("failure"), Mapping) else None
    rows = [
        ("id", cert.get("id")), ("verdict", cert.get("verdict")), ("created", cert.get("created_at")),
        ("image", image.get("ref")), ("image id", image.get("id")),
        ("repo digests", ", ".join(image.get("repo_digests") or []) or "-"),
        ("recipe digest", image.get("recipe_digest")),
        ("GPUs", gpus or "-"), ("driver", f"{hw.get('driver_version')} (CUDA {hw.get('cuda_driver_version')})"),
        ("flags", " ".join(str(f) for f in cert.get("flags") or []) or "-"),
        ("timings", ", ".join(f"{k} {v} s" for k, v in timings.items() if v is not None) or "-"),
    ]
    if failure:
        rows.append(("failure", f"{failure.get('stage')}: {failure.get('reason')}"))
    if diag:
        rows.append(("diagnosis", f"{diag.get('class')}: {diag.get('cause')}"))
    for gap in cert.get("attestation_gaps") or []:
        rows.append(("not attested", gap))
    table = "".join(f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>" for k, v in rows)
    full = escape(json.dumps(cert, indent=2, sort_keys=True, default=str))
    cert_id = escape(str(cert.get("id", "")), quote=True)
    return (f'<details class="certificate" data-cert-id="{cert_id}"><summary>{escape(str(cert.get("verdict")))} '
            f'<code>{escape(str(cert.get("id")))}</code></summary><table>{table}</table>'
            f'<details><summary>certificate JSON</summary><pre>{full}</pre></details></details>')


def render_html(rows: Sequence[ReportRow], *, title: str = "imgbuild compatibility matrix",
                generated_at: str = "", source: str = "") -> str:
    """The whole page. Deterministic for the same rows and stamps."""
    counts = {s: sum(1 for r in rows if r.status == s) for s in STATUSES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    body = []
    for r in rows:
        flags = " ".join(r.launch_flags) or "-"
        published = f"<code>{escape(r.published)}</code>" if r.published else "-"
        body.append(
            f'<tr data-target="{escape(r.target, quote=True)}" data-status="{r.status}">'
            + _cell(f"<b>{escape(r.target)}</b>")
            + _cell(f'<span class="badge {r.status}">{escape(r.status)}</span>', cls="status")
            + _cell(escape(r.engine)) + _cell(escape(r.cuda)) + _cell(escape(r.model)) + _cell(escape(r.gpus))
            + _cell(f"<code>{escape(flags)}</code>")
            + _cell(_steps_html(r.steps))
            + _cell(_certificate_html(r.certificate), cls="cert")
            + _cell(published)
            + "</tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in ("target", "status", "SGLang", "CUDA", "model", "GPUs", "launch flags",
                                             "steps", "certificate", "published"))
    meta = " · ".join(x for x in (f"{len(rows)} targets", summary, source and f"matrix: {escape(source)}",
                                  generated_at and f"generated {escape(generated_at)}") if x)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1><p class=\"meta\">{meta}</p>"
        f"<table class=\"matrix\"><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        "</body></html>\n"
    )
