"""`imgbuild report`: gather what the page shows, plan each target, write one HTML file.

Each target is planned with imgbuild.flows.plan (the target's engine, GPUs and flags) on
the model's config read, in this order, from ``--model-dir MODEL=DIR``, from the shipped
example of that model (examples/<name>/, e.g. the seed's Qwen3.6-27B), or from the Hub's
local cache only (the report never waits on the network); a target that cannot be planned
says why. Certificates come from the store, steps and results from make's state, build
records from the build step's record files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from imgbuild.knowledge.atomicfile import replace_text
from imgbuild.errors import ImgbuildError, UsageError
from imgbuild.knowledge import report as report_mod
from imgbuild.knowledge.matrix import Matrix, data_root
from imgbuild.knowledge.recipe import TargetSpec


@dataclass(frozen=True, kw_only=True)
class ReportOptions:
    out_dir: Path
    state_dir: Path | None = None
    store_dir: Path | None = None
    model_dirs: Mapping[str, str] = field(default_factory=dict)  # model id -> local directory
    builds_dir: Path | None = None  # build records (default: the build step's, ~/.cache/imgbuild/builds)
    generated_at: str = ""


@dataclass(frozen=True)
class ReportResult:
    path: Path
    document: dict[str, Any]
    html_bytes: int


def model_source(target: TargetSpec, model_dirs: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(where to read the target's model, why it cannot be read): --model-dir, the shipped
    example named like the Hub id's repository, else the Hub id itself (read from the cache)."""
    if not target.model:
        return None, "the target names no model"
    if target.model in model_dirs:
        return model_dirs[target.model], None
    example = data_root() / "examples" / target.model.rsplit("/", 1)[-1].lower()
    if (example / "config.json").is_file():
        return str(example), None
    return target.model, None


def plan_target(target: TargetSpec, matrix: Matrix, model_dirs: Mapping[str, str]) -> dict[str, Any]:
    """{"plan": PlanResult.to_dict() | None, "not_planned": why, "model_source": what was read}."""
    from imgbuild.adapters.hub import HubClient, hub_for
    from imgbuild.flows.plan import PlanOptions, plan_launch

    source, why = model_source(target, model_dirs)
    if source is None:
        return {"plan": None, "not_planned": why, "model_source": None}
    if not target.gpus:
        return {"plan": None, "not_planned": "the target names no GPUs", "model_source": source}
    hub = HubClient(offline=True) if hub_for(source) is not None else None
    try:
        result = plan_launch(PlanOptions(model=source, flags=target.launch_flags, gpu=target.gpus, sglang=target.engine,
                                         suggest=False), matrix=matrix, hub=hub)
    except ImgbuildError as exc:
        return {"plan": None, "not_planned": str(exc).splitlines()[0], "model_source": source}
    return {"plan": result.to_dict(), "not_planned": None, "model_source": source}


def _build_records(targets: list[TargetSpec], steps: Mapping[str, Mapping[str, Any]], builds_dir: Path | None) -> dict[str, Any]:
    """The newest build record per target: the file make's render tag names, else any record for the target."""
    from imgbuild.flows.build import default_record_path

    root = builds_dir or default_record_path("x").parent
    out: dict[str, Any] = {}
    for t in targets:
        tag = ((steps.get(t.name) or {}).get("render") or {}).get("result", {}).get("tag")
        candidates = [root / f"{tag}.json"] if tag else []
        if root.is_dir():
            candidates += sorted(root.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for path in candidates:
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(record, dict) and record.get("target") == t.name:
                out[t.name] = record
                break
    return out


def write_report(options: ReportOptions, *, matrix: Matrix) -> ReportResult:
    """Plan, gather and write ``out_dir/index.html`` (replaced whole, never half-written)."""
    from imgbuild.flows.check import kernels_run_on
    from imgbuild.flows.make import StateStore
    from imgbuild.flows.publish import load_certificates
    from imgbuild.knowledge.render import targets_of
    from imgbuild.knowledge.report_html import render_page

    targets = list(targets_of(matrix.raw).values())
    state = StateStore(options.state_dir).all()
    rows = report_mod.build_rows([t.to_dict() for t in targets], load_certificates(options.store_dir), state)
    plans = {t.name: plan_target(t, matrix, options.model_dirs) for t in targets}
    document = report_mod.report_document(matrix, rows, plans=plans, builds=_build_records(targets, state, options.builds_dir),
                                          runs_on=kernels_run_on, generated_at=options.generated_at)
    page = render_page(document)
    path = write_page(page, options.out_dir)
    return ReportResult(path=path, document=document, html_bytes=len(page.encode("utf-8")))


def write_page(page: str, out_dir: Path) -> Path:
    """``out_dir/index.html`` through a temporary name of this process's own and os.replace;
    an -o that is a device, under a file, in /proc or too long a name is a usage error."""
    path = out_dir / "index.html"
    try:
        if out_dir.exists() and not out_dir.is_dir():  # /dev/null: mkdir's "File exists" says less
            raise NotADirectoryError(20, "not a directory")
        out_dir.mkdir(parents=True, exist_ok=True)
        replace_text(path, page)  # a page to serve: 0644
    except OSError as exc:
        raise UsageError(f"cannot write the report to {out_dir}: {exc.strerror or exc}",
                         hint="give -o a directory you can write to") from None
    return path
