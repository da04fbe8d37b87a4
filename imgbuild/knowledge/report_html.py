"""The report as one self-contained HTML page, drawn from ``report_document``'s data.

Inline CSS, inline SVG bars and a few lines of inline script for the grid's filter box
(the page reads in full without it): no network at view time, so it works from a file,
from any static host and on paper (print CSS: landscape, no filter, details opened by
the reader's choice). Every element a test or a reader looks for carries a data-
attribute (data-target, data-release, data-arch, data-state, data-segment).
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, Mapping, Sequence

from imgbuild.knowledge.report import STEPS
from imgbuild.knowledge.report_data import BAR_SEGMENTS

SEGMENT_COLOURS = {"weights": "#4c6ef5", "kv_cache": "#2f9e44", "hybrid_state": "#e8590c", "draft": "#ae3ec9",
                   "reserve": "#868e96", "headroom": "#dee2e6"}
SEGMENT_LABELS = {"weights": "weights", "kv_cache": "KV cache", "hybrid_state": "hybrid state", "draft": "draft",
                  "reserve": "reserve (context, activations, graphs)", "headroom": "headroom"}
GRID_LABELS = {"served": "served", "issue": "registered, but a known issue raises the minimum",
               "absent": "not registered yet", "removed": "removed"}

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.5rem;color:#1d2330;font-size:14px}
h1{font-size:1.4rem;margin:0 0 .3rem}h2{font-size:1.15rem;margin:1.6rem 0 .4rem;border-bottom:1px solid #d5dae3}
h3{font-size:1rem;margin:1rem 0 .3rem}
p.meta,.muted{color:#5b6475}nav a{margin-right:.8rem}
table.t{border-collapse:collapse}table.t th,table.t td{border:1px solid #d5dae3;padding:.25rem .45rem;vertical-align:top;text-align:left}
table.t th{background:#f2f4f8}table.matrix{width:100%}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:.85em}
.badge{display:inline-block;padding:.1rem .45rem;border-radius:.6rem;font-size:.8rem;font-weight:600;white-space:nowrap}
.certified,.rec{background:#d3f4dc;color:#0e5a26}.certified-unattested{background:#e6f1d0;color:#41561a}
.published-uncertified{background:#fde9c8;color:#7a4a00}.built{background:#dde8fb;color:#1c3e7a}
.failed,.no{background:#fad4d4;color:#8a1414}.not-built{background:#eceef2;color:#4b5261}
.step{font-size:.8rem;white-space:nowrap}.step-done,.step-skipped-same{color:#0e5a26}
.step-failed{color:#8a1414;font-weight:600}.step-skipped,.step-pending{color:#7b8294}
.step-detail{display:block;font-size:.75rem;color:#8a1414;max-width:22rem}
details summary{cursor:pointer}details table{border-collapse:collapse;margin:.4rem 0}details td{border:none;padding:.1rem .6rem .1rem 0}
pre{background:#f6f7f9;padding:.5rem;max-height:24rem;overflow:auto;font-size:.75rem}
tr.recommended td{background:#f1faf3}
table.grid{border-collapse:collapse;font-size:12px}table.grid td,table.grid th{border:1px solid #e3e6ec;padding:0 .3rem;height:16px}
table.grid th.v{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:400;font-size:8px;line-height:9px;padding:2px 0;box-sizing:border-box;width:10px}
table.grid td.run{padding:0;min-width:9px}table.grid td.cls{white-space:nowrap;font-size:11px}table.grid tr.fam th{text-align:left;background:#f2f4f8;font-size:12px}
.g-served{background:#8ce99a}.g-issue{background:#ffc078}.g-absent{background:#fff}.g-removed{background:#ced4da;background-image:repeating-linear-gradient(45deg,transparent 0 3px,#adb5bd 3px 5px)}
div.support{font-size:11px;white-space:normal;max-width:21rem;color:#5b6475;padding-bottom:2px}.key span.sw{display:inline-block;width:1.4em;height:.9em;border:1px solid #adb5bd;vertical-align:middle;margin:0 .25rem 0 .8rem}
#grid-filter{font-size:14px;padding:.25rem .4rem;width:22rem}
.target{border:1px solid #d5dae3;border-radius:.4rem;padding:.6rem .9rem;margin:.8rem 0;page-break-inside:avoid}
.plan{display:flex;gap:1.5rem;flex-wrap:wrap;align-items:flex-start}.bars svg{display:block;margin:.2rem 0}
.legend span{display:inline-block;margin-right:.8rem;font-size:12px}.legend i{display:inline-block;width:.8em;height:.8em;margin-right:.25rem;vertical-align:middle}
.not-planned{color:#8a1414}
@media print{body{margin:.5cm;font-size:10px}nav,#grid-filter,.noprint{display:none}a{color:inherit;text-decoration:none}
 h2{page-break-after:avoid}table.t,table.grid{page-break-inside:auto}tr{page-break-inside:avoid}
 .g-served,.g-issue,.g-removed,.badge,.legend i,rect{-webkit-print-color-adjust:exact;print-color-adjust:exact}
 pre{max-height:none}table.grid th.v{font-size:6px;line-height:6px;width:7px}
 table.grid td.run{min-width:6px}table.grid td.cls,div.support{font-size:7px}}
@page{size:A4 landscape;margin:1cm}
"""

# The grid's filter: hide class rows that do not match, and family headers left empty.
_SCRIPT = """
(function(){var box=document.getElementById('grid-filter');if(!box)return;
box.addEventListener('input',function(){var q=box.value.trim().toLowerCase();
document.querySelectorAll('table.grid tbody').forEach(function(tb){var any=false;
tb.querySelectorAll('tr[data-arch]').forEach(function(tr){var hit=!q||tr.getAttribute('data-arch').toLowerCase().indexOf(q)>=0||tr.getAttribute('data-family').toLowerCase().indexOf(q)>=0;
tr.style.display=hit?'':'none';any=any||hit;});tb.style.display=any?'':'none';});});})();
"""


def _e(value: Any) -> str:
    return escape("-" if value is None or value == "" else str(value), quote=True)


def _cell(text: str, *, cls: str | None = None) -> str:
    return f'<td class="{cls}">{text}</td>' if cls else f"<td>{text}</td>"


def _link(url: str | None, text: str) -> str:
    return f'<a href="{escape(url, quote=True)}">{escape(text)}</a>' if url else escape(text)


# ----------------------------------------------------------------------------- targets table


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


def targets_table(targets: Sequence[Mapping[str, Any]]) -> str:
    """One row per target: status, engine, model, GPUs, flags, make's steps, certificate, publication."""
    body = []
    for t in targets:
        flags = " ".join(t["launch_flags"]) or "-"
        published = f"<code>{escape(t['published'])}</code>" if t.get("published") else "-"
        body.append(
            f'<tr data-target="{escape(t["target"], quote=True)}" data-status="{t["status"]}">'
            + _cell(f'<b><a href="#t-{escape(t["target"], quote=True)}">{escape(t["target"])}</a></b>')
            + _cell(f'<span class="badge {t["status"]}">{escape(t["status"])}</span>', cls="status")
            + _cell(escape(t["engine"])) + _cell(escape(t["cuda"])) + _cell(escape(t["model"])) + _cell(escape(t["gpus"]))
            + _cell(f"<code>{escape(flags)}</code>") + _cell(_steps_html(t["steps"]))
            + _cell(_certificate_html(t.get("certificate_full")), cls="cert") + _cell(published) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("target", "status", "SGLang", "CUDA", "model", "GPUs", "launch flags",
                                             "steps", "certificate", "published"))
    return f'<table class="t matrix" id="targets-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


# ----------------------------------------------------------------------------- a target's plan


def bar_svg(bar: Mapping[str, Any], *, scale_gib: float, width: int = 560) -> str:
    """One GPU's plan as a horizontal stacked bar; past the GPU's memory (negative headroom) in red."""
    segments = {s["segment"]: float(s["gib"]) for s in bar["segments"]}
    total = float(bar.get("total_gib") or 0)
    px = width / max(scale_gib, 1e-9)
    x, rects = 0.0, []
    for name in BAR_SEGMENTS:
        gib = segments.get(name, 0.0)
        if gib <= 0:
            continue
        w = gib * px
        label = f"{SEGMENT_LABELS[name]}: {gib:.2f} GiB"
        text = (f'<text x="{x + w / 2:.1f}" y="17" text-anchor="middle" font-size="10" fill="#fff">{gib:.1f}</text>'
                if w > 28 and name != "headroom" else "")
        rects.append(f'<g data-segment="{name}" data-gib="{gib:.3f}"><rect x="{x:.1f}" y="4" width="{w:.1f}" height="18" '
                     f'fill="{SEGMENT_COLOURS[name]}"><title>{escape(label)}</title></rect>{text}</g>')
        x += w
    over = -segments.get("headroom", 0.0)
    if over > 0:
        rects.append(f'<g data-segment="over"><rect x="{total * px:.1f}" y="2" width="{over * px:.1f}" height="22" fill="none" '
                     f'stroke="#c92a2a" stroke-width="2" stroke-dasharray="4 2"><title>lacks {over:.2f} GiB</title></rect></g>')
    edge = f'<line x1="{total * px:.1f}" x2="{total * px:.1f}" y1="0" y2="26" stroke="#1d2330" stroke-width="1.5"/>'
    name = escape(f"GPU {bar['index']}: {bar.get('name')} ({total:.2f} GiB)")
    return (f'<div class="bar" data-gpu="{bar["index"]}"><span>{name}</span>'
            f'<svg role="img" aria-label="{name}" width="{width + 4}" height="26" viewBox="0 0 {width + 4} 26">'
            f'{"".join(rects)}{edge}</svg></div>')


def _legend() -> str:
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{SEGMENT_COLOURS[n]}"></i>{escape(SEGMENT_LABELS[n])}</span>' for n in BAR_SEGMENTS) + "</div>"


_PLAN_NUMBERS = (("weights_gib", "weights (GiB)"), ("kv_tokens", "KV tokens"), ("kv_gib", "KV cache (GiB)"),
                 ("mamba_slots", "hybrid state slots"), ("mamba_state_gib", "hybrid state (GiB)"),
                 ("reserve_gib", "speculative intermediate states (GiB)"), ("draft_gib", "draft weights + KV (GiB)"),
                 ("startup_allowance_gib", "CUDA context + NCCL (GiB)"), ("runtime_need_gib", "activations + graphs (GiB)"),
                 ("memory_pool_end_avail_gib", "avail after pools (GiB)"), ("total_gib", "memory.total (GiB)"))


def _plan_html(t: Mapping[str, Any]) -> str:
    plan = t.get("plan")
    if not plan:
        return f'<p class="not-planned" data-not-planned="1">not planned: {escape(str(t.get("not_planned")))}</p>'
    per = plan.get("per_gpu") or {}
    bars = plan.get("bars") or []
    scale = max([float(b["total_gib"]) - min(0.0, float(b["segments"][-1]["gib"])) for b in bars] or [1.0])
    numbers = "".join(f"<tr><td>{escape(label)}</td><td class=num>{_e(per.get(key))}</td></tr>" for key, label in _PLAN_NUMBERS)
    settings = (f"SGLang {_e(plan.get('sglang'))} (rules {_e(plan.get('rules'))}) · verdict <b>{_e(plan.get('verdict'))}</b> · "
                f"mem_fraction_static {_e(plan.get('mem_fraction_static'))} · max_running_requests {_e(plan.get('max_running_requests'))}"
                f" · context {_e(plan.get('context_length'))} · radix cache {'on' if plan.get('radix_cache') else 'off'}"
                + (f" · speculative {_e(plan.get('speculative_algorithm'))}" if plan.get("speculative_algorithm") else ""))
    problems = "".join(f"<li>{escape(str(p))}</li>" for p in plan.get("problems") or [])
    notes = "".join(f"<li class=muted>{escape(str(n))}</li>" for n in plan.get("notes") or [])
    return (f'<p>{settings}</p><div class="plan"><div class="bars">{"".join(bar_svg(b, scale_gib=scale) for b in bars)}{_legend()}</div>'
            f'<table class="t plan-numbers"><thead><tr><th>per GPU</th><th>plan</th></tr></thead><tbody>{numbers}</tbody></table></div>'
            + (f"<ul>{problems}{notes}</ul>" if problems or notes else ""))


def _build_html(build: Mapping[str, Any] | None) -> str:
    if not build:
        return '<p class="muted">not built (no make state, no build record)</p>'
    size = build.get("size_bytes")
    rows = [("image", build.get("image")), ("image id", build.get("image_id")), ("repo digest", build.get("repo_digest")),
            ("size", f"{size / 1e9:.2f} GB" if isinstance(size, (int, float)) else "not recorded"),
            ("recipe digest", build.get("recipe_digest")), ("tag", build.get("tag")), ("base", build.get("base")),
            ("locked packages", build.get("packages")), ("build time (s)", build.get("duration_s")), ("record", build.get("record"))]
    return '<table class="t build">' + "".join(f"<tr><td>{k}</td><td><code>{_e(v)}</code></td></tr>" for k, v in rows) + "</table>"


def _cert_figures_html(cert: Mapping[str, Any] | None) -> str:
    if not cert:
        return '<p class="muted">no certificate</p>'
    hw = "; ".join(f"{g.get('name')} {g.get('memory_total_mib')} MiB" for g in cert.get("gpus") or []) or "-"
    head = (f'<p>verdict <b>{_e(cert.get("verdict"))}</b> · <code>{_e(cert.get("id"))}</code> · {_e(cert.get("created_at"))}'
            f' · hardware: {escape(hw)}, driver {_e(cert.get("driver_version"))} (CUDA {_e(cert.get("cuda_driver_version"))})</p>')
    if cert.get("failure"):
        head += f'<p class="not-planned">failed: {escape(json.dumps(cert["failure"], default=str))}</p>'
    rows = "".join(f'<tr data-figure="{escape(r["figure"])}"><td>{escape(r["figure"])}</td><td class=num>{_e(r["log"])}</td>'
                   f'<td class=num>{_e(r["plan"])}</td><td class=num>{_e(r["difference"])}</td></tr>' for r in cert.get("figures") or [])
    table = (f'<table class="t figures"><thead><tr><th>figure</th><th>log</th><th>plan</th><th>log - plan</th></tr></thead>'
             f"<tbody>{rows}</tbody></table>") if rows else '<p class="muted">the certificate holds no log figures</p>'
    return head + table


def target_section(t: Mapping[str, Any]) -> str:
    name = escape(t["target"], quote=True)
    flags = " ".join(t["launch_flags"]) or "(none)"
    published = f"<code>{escape(t['published'])}</code>" if t.get("published") else "not published"
    source = f' <span class="muted">(model read from {escape(str(t["model_source"]))})</span>' if t.get("model_source") else ""
    return (f'<section class="target" id="t-{name}" data-target-detail="{name}"><h3>{escape(t["target"])} '
            f'<span class="badge {t["status"]}">{escape(t["status"])}</span></h3>'
            f'<p>SGLang {_e(t["engine"])} · CUDA {_e(t["cuda"])} · {_e(t["model"])}{source} · {_e(t["gpus"])}</p>'
            f'<p>flags: <code>{escape(flags)}</code></p><h4>plan</h4>{_plan_html(t)}'
            f"<h4>build</h4>{_build_html(t.get('build'))}<h4>certificate</h4>{_cert_figures_html(t.get('certificate'))}"
            f"<h4>published</h4><p>{published}</p></section>")


# ----------------------------------------------------------------------------- the matrix


def releases_table(releases: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("SGLang", "released", "torch", "CUDA", "min driver", "kernel", "flashinfer",
                                             "transformers", "glibc", "Python", "lock imports", "classes (+/-)"))
    rows = []
    for r in releases:
        rec = ' <span class="badge rec" title="recommended">recommended</span>' if r["recommended"] else ""
        lock_cell = _lock_cell(r.get("lock_imports"), r.get("lock_failure"), r.get("lock_imports_today"),
                               r.get("lock_failure_today"))
        rows.append(
            f'<tr data-release="{_e(r["version"])}"{" data-recommended=1 class=recommended" if r["recommended"] else ""}>'
            f'<td><b>{_e(r["version"])}</b>{rec}</td><td>{_e(r["released"])}</td><td>{_e(r["torch"])}</td><td>{_e(r["cuda"])}</td>'
            f'<td>{_e(r["min_driver"])}</td><td>{_e(r["kernel"])}</td><td>{_e(r["flashinfer"])}</td><td>{_e(r["transformers"])}</td>'
            f'<td>{_e(r["glibc"])}</td><td>{_e(r["python"])}</td>{lock_cell}'
            f'<td class=num>{r["architectures"]} (+{r["added"]}/-{r["removed"]})</td></tr>')
    return f'<table class="t" id="releases"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _lock_cell(as_of: bool | None, failure: str | None, today: bool | None, failure_today: str | None) -> str:
    """As of the release: yes / NO (the root line as its title, and in print); today's lock beside it."""
    def word(ok: bool | None) -> str:
        return "-" if ok is None else ("yes" if ok else "NO")

    title = "; ".join(f"{k}: {v}" for k, v in (("as of the release", failure), ("today", failure_today)) if v)
    state = "" if as_of is None else f' data-lock-ok="{int(as_of)}"'
    text = escape(word(as_of)) + (f' <span class="muted">(today: {escape(word(today))})</span>' if today is not None else "")
    detail = f'<span class="step-detail">{escape(failure)}</span>' if failure else ""
    return f'<td data-lock{state} title="{escape(title, quote=True)}">{text}{detail}</td>'


def gpus_table(gpus: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("GPU", "memory (MiB)", "GiB", "compute capability",
                                             "torch wheels with kernels for it (CUDA)", "without"))
    rows = "".join(
        f'<tr data-gpu-name="{_e(g["name"])}"><td>{_e(g["name"])}</td><td class=num>{g["memory_mib"]}</td>'
        f'<td class=num>{g["memory_gib"]}</td><td>{_e(g["compute_capability"])}</td>'
        f'<td>{escape(", ".join(g["cuda_kernels"]) or "none")}</td><td class=muted>{escape(", ".join(g["cuda_without"]) or "-")}</td></tr>'
        for g in gpus)
    return f'<table class="t" id="gpus"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _support_plain(c: Mapping[str, Any]) -> str:
    text = f"{c['architecture']}: registered from {c['first_registered']}"
    if c["first_served"] != c["first_registered"]:
        text += f", served from {c['first_served']}"
    return text + (f"; removed in {', '.join(c['removed_in'])}" if c["removed_in"] else "")


def _support_text(c: Mapping[str, Any]) -> str:
    parts = [f"registered from {escape(str(c['first_registered']))}"]
    for issue in c["known_issues"]:
        bad = f" ({escape(str(issue['max_bad']))} fails)" if issue.get("max_bad") else ""
        parts.append(f'<b>use &ge; {escape(issue["min_sglang"])}</b>{bad}: '
                     f'<span title="{escape(issue["reason"], quote=True)}">{escape(issue["reason"][:160])}'
                     f'{"…" if len(issue["reason"]) > 160 else ""}</span> '
                     + _link(issue.get("link"), f"[{issue['id']}]"))
    if c["removed_in"]:
        parts.append("removed in " + ", ".join(escape(v) for v in c["removed_in"]))
    return "; ".join(parts)


def _class_row(family: str, c: Mapping[str, Any]) -> str:
    cells = []
    for run in c["runs"]:
        span = f' colspan="{run["count"]}"' if run["count"] > 1 else ""
        what = GRID_LABELS[run["state"]] + (f" ({run['issue']})" if run["issue"] else "")
        title = f"{c['architecture']}, {run['from']}" + (f" to {run['to']}" if run["count"] > 1 else "") + f": {what}"
        cells.append(f'<td class="run g-{run["state"]}"{span} data-state="{run["state"]}" data-from="{escape(run["from"])}" '
                     f'data-count="{run["count"]}" title="{escape(title, quote=True)}"></td>')
    arch = escape(c["architecture"], quote=True)
    support = f'<div class="support">{_support_text(c)}</div>' if c["known_issues"] or c["removed_in"] else ""
    return (f'<tr data-arch="{arch}" data-family="{escape(family, quote=True)}" data-first-registered="{_e(c["first_registered"])}" '
            f'data-first-served="{_e(c["first_served"])}" title="{escape(_support_plain(c), quote=True)}">'
            f'<td class="cls">{escape(c["architecture"])}{support}</td>{"".join(cells)}</tr>')


def grid_table(grid: Mapping[str, Any]) -> str:
    """Classes (rows, grouped by family in their own tbody) x releases (columns, oldest left)."""
    releases = grid["releases"]
    head = "<th>class</th>" + "".join(f'<th class="v" title="{escape(v)}">{escape(v)}</th>' for v in releases)
    bodies = []
    for fam in grid["families"]:
        rows = "".join(_class_row(fam["family"], c) for c in fam["classes"])
        bodies.append(f'<tbody data-family-group="{escape(fam["family"], quote=True)}"><tr class="fam"><th colspan="{len(releases) + 1}">'
                      f'{escape(fam["family"])} ({len(fam["classes"])})</th></tr>{rows}</tbody>')
    key = '<p class="key">' + "".join(f'<span class="sw g-{s}"></span>{escape(label)}' for s, label in GRID_LABELS.items()) + "</p>"
    return (f'{key}<p class="noprint"><input id="grid-filter" type="search" placeholder="filter: family or class, e.g. qwen3_5" '
            f'aria-label="filter architectures"></p><table class="grid" id="grid"><thead><tr>{head}</tr></thead>{"".join(bodies)}</table>')


def known_issues_list(issues: Sequence[Mapping[str, Any]]) -> str:
    items = "".join(f'<li data-issue="{escape(i["id"], quote=True)}"><b>{escape(i["id"])}</b>: SGLang &ge; {escape(i["min_sglang"])} for '
                    f'{escape(", ".join(i["architectures"] + i["model_types"]))}. {escape(i["reason"])} {_link(i.get("link"), "source")}</li>'
                    for i in issues)
    return f'<ul id="known-issues">{items}</ul>'


def render_page(doc: Mapping[str, Any], *, title: str = "imgbuild compatibility matrix") -> str:
    """The whole page. Deterministic for the same document."""
    targets = doc["targets"]
    summary = ", ".join(f"{n} {s}" for s, n in doc["statuses"].items() if n)
    meta = " · ".join(x for x in (
        f"{len(targets)} targets", summary, f"{len(doc['releases'])} SGLang releases",
        f"{doc['grid']['class_count']} architecture classes", f"{len(doc['gpus'])} GPUs",
        doc.get("matrix") and f"matrix: {escape(str(doc['matrix']))}",
        doc.get("generated_at") and f"generated {escape(str(doc['generated_at']))}") if x)
    rec = doc.get("recommended")
    nav = "".join(f'<a href="#{a}">{t}</a>' for a, t in (("targets", "targets"), ("releases-h", "releases"),
                                                        ("grid-h", "architectures x releases"), ("gpus-h", "GPUs"),
                                                        ("issues-h", "known issues")))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width\"><title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1><p class=\"meta\">{meta}</p><nav>{nav}</nav>"
        f"<h2 id=\"targets\">Targets</h2>{targets_table(targets)}{''.join(target_section(t) for t in targets)}"
        f"<h2 id=\"releases-h\">SGLang releases</h2><p class=\"muted\">Newest first. Recommended: "
        f"<b>{_e(rec)}</b>, the newest release with a CUDA stack whose lock is not recorded as failing to import. "
        "min driver: the CUDA toolkit's Linux driver floor.</p>"
        f"{releases_table(doc['releases'])}"
        f"<h2 id=\"grid-h\">Architectures x releases</h2>{grid_table(doc['grid'])}"
        f"<h2 id=\"gpus-h\">GPUs</h2>{gpus_table(doc['gpus'])}"
        f"<h2 id=\"issues-h\">Known issues</h2>{known_issues_list(doc['known_issues'])}"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
