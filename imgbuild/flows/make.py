"""``imgbuild make``: check, plan, render, build, certify and publish each target in turn.

Each step has inputs (a JSON document) and a result. The state directory keeps,
per target, each step's input digest, status and result
(``<state>/<target>.json``, written atomically after every step), so:

- a step whose inputs have the same digest as its last successful run is
  skipped ("skipped-same") when its result is still there (the image still on
  the engine, the rendered context still on disk);
- after a failure, the next run starts where it stopped: the steps before it
  are skipped, the failed one runs again;
- a step that does not apply to a target (no model: no check or plan; no GPUs:
  no certify; no ``--to``: no publish) is "skipped" with the reason.

Two phases. First check, plan and render every target (cheap, a few ms each, so
a matrix of 50 targets is planned and rendered before any build starts). Then
build, certify and publish in one queue per GPU set: targets on the same GPUs
run one after another (certify needs those GPUs alone), targets on different
GPU sets run in parallel threads. On Slurm (``certify_all_at_once``) every build runs
first, then every certify at once, one thread per target: Slurm queues the jobs.

The steps are composed from the other flows (check, plan, render, build,
certify, publish) by ``default_steps``; the orchestration takes any steps.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from imgbuild.errors import ImgbuildError, NegativeVerdict, UsageError
from imgbuild.knowledge.recipe import TargetSpec

if TYPE_CHECKING:
    from imgbuild.knowledge.matrix import Matrix

STEPS = ("check", "plan", "render", "build", "certify", "publish")
PREPARE = ("check", "plan", "render")
DONE = ("done", "skipped-same")

Progress = Callable[[str], None]


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "imgbuild" / "make"


def digest_of(inputs: Mapping[str, Any]) -> str:
    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# --- state ----------------------------------------------------------------------------


class StateStore:
    """``<root>/<target>.json``: {step: {"inputs", "status", "detail", "result", "exit_code", "finished_at"}}."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_state_dir()
        self._lock = threading.Lock()

    def _path(self, target: str) -> Path:
        return self.root / f"{target}.json"

    def load(self, target: str) -> dict[str, dict[str, Any]]:
        try:
            return json.loads(self._path(target).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise UsageError(f"{self._path(target)}: make state is not JSON ({exc})",
                             hint="delete the file: make then runs every step of the target again") from None

    def all(self) -> dict[str, dict[str, dict[str, Any]]]:
        if not self.root.is_dir():
            return {}
        return {p.stem: self.load(p.stem) for p in sorted(self.root.glob("*.json"))}

    def record(self, target: str, step: str, entry: dict[str, Any]) -> None:
        with self._lock:
            state = self.load(target)
            state[step] = entry
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(state, fh, indent=2, sort_keys=True, default=str)
                fh.write("\n")
            os.replace(tmp, self._path(target))


# --- steps ----------------------------------------------------------------------------


class NotApplicable(Exception):
    """A step's inputs() raises this when the step does not apply to the target."""


@dataclass(frozen=True)
class Step:
    name: str
    # The inputs that decide the result (hashed); raise NotApplicable to skip the step.
    inputs: Callable[[TargetSpec, Mapping[str, Any]], dict[str, Any]]
    # Do the work; return (one line for the table, the result as JSON-able data).
    run: Callable[[TargetSpec, Mapping[str, Any]], tuple[str, dict[str, Any]]]
    # Is a stored result still usable (the image still there)? Default: yes.
    still_valid: Callable[[Mapping[str, Any]], bool] | None = None


@dataclass(frozen=True, kw_only=True)
class MakeOptions:
    targets: tuple[TargetSpec, ...]
    until: str = "publish"
    force: bool = False
    workers: int | None = None  # parallel queues at most (default: one per GPU set)
    # --on slurm: build every target first, then run every certify at once (Slurm queues them)
    certify_all_at_once: bool = False
    on_interrupt: Callable[[], None] | None = None  # Ctrl-C / SIGTERM: before the threads are waited on


@dataclass(frozen=True)
class TargetOutcome:
    target: str
    engine: str
    gpus: str
    steps: dict[str, dict[str, Any]]  # step -> {"status", "detail", "result"}

    @property
    def failed_step(self) -> str | None:
        return next((s for s, e in self.steps.items() if e.get("status") == "failed"), None)

    @property
    def verdict(self) -> str:
        failed = self.failed_step
        if failed:
            return f"failed at {failed}"
        cert = (self.steps.get("certify") or {}).get("result") or {}
        if cert.get("verdict"):
            return str(cert["verdict"])
        last = [s for s in STEPS if s in self.steps and self.steps[s].get("status") in DONE]
        return f"{last[-1]} done" if last else "nothing done"

    def result(self, step: str) -> dict[str, Any]:
        entry = self.steps.get(step) or {}
        return dict(entry.get("result") or {}) if entry.get("status") in DONE else {}

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "engine": self.engine, "gpus": self.gpus, "verdict": self.verdict,
                "image": self.result("build").get("image"), "certificate": self.result("certify").get("id"),
                "published": self.result("publish").get("reference"), "steps": self.steps}


@dataclass(frozen=True)
class MakeSummary:
    outcomes: list[TargetOutcome]
    prepare_s: float  # check + plan + render of every target
    total_s: float
    queues: dict[str, list[str]]  # GPU set -> targets, in order

    @property
    def failed(self) -> list[TargetOutcome]:
        return [o for o in self.outcomes if o.failed_step]

    def failures(self) -> list[dict[str, Any]]:
        """The failed step's entry of each failed target (its "exit_code" is the error's own)."""
        return [o.steps[o.failed_step] for o in self.failed if o.failed_step]

    def to_dict(self) -> dict[str, Any]:
        return {"targets": [o.to_dict() for o in self.outcomes], "prepare_s": round(self.prepare_s, 3),
                "total_s": round(self.total_s, 3), "queues": self.queues}


def gpu_set(target: TargetSpec) -> str:
    """The queue key: the GPUs a target certifies on ("none" without GPUs)."""
    if not target.gpus:
        return "none"
    return re.sub(r"\s+", " ", target.gpus.strip().lower())


def gpu_queues(targets: Sequence[TargetSpec]) -> dict[str, list[TargetSpec]]:
    queues: dict[str, list[TargetSpec]] = {}
    for target in targets:
        queues.setdefault(gpu_set(target), []).append(target)
    return queues


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_step(step: Step, target: TargetSpec, prior: dict[str, Any], state: StateStore,
              stored: Mapping[str, Any], force: bool, say: Progress) -> dict[str, Any]:
    """Run (or skip) one step; returns the entry recorded for it."""
    started = time.monotonic()
    try:
        inputs = step.inputs(target, prior)
    except NotApplicable as why:
        entry = {"status": "skipped", "detail": str(why), "inputs": None, "result": {}, "finished_at": _now()}
        state.record(target.name, step.name, entry)
        return entry
    except ImgbuildError as exc:
        entry = {"status": "failed", "detail": exc.one_line(), "exit_code": exc.exit_code, "inputs": None,
                 "result": {}, "finished_at": _now()}
        state.record(target.name, step.name, entry)
        return entry
    key = digest_of(inputs)
    old = stored.get(step.name) or {}
    if (not force and old.get("inputs") == key and old.get("status") in DONE
            and (step.still_valid is None or step.still_valid(old.get("result") or {}))):
        entry = {**old, "status": "skipped-same", "detail": old.get("detail", "")}
        say(f"{target.name}: {step.name}: same inputs as before, skipped")
        state.record(target.name, step.name, entry)
        return entry
    say(f"{target.name}: {step.name} ...")
    try:
        detail, result = step.run(target, prior)
        entry = {"status": "done", "detail": detail, "inputs": key, "result": result,
                 "duration_s": round(time.monotonic() - started, 3), "finished_at": _now()}
    except ImgbuildError as exc:
        entry = {"status": "failed", "detail": exc.one_line(), "exit_code": exc.exit_code, "inputs": key,
                 "result": {}, "duration_s": round(time.monotonic() - started, 3), "finished_at": _now()}
    say(f"{target.name}: {step.name}: {entry['status']}: {entry['detail']}")
    state.record(target.name, step.name, entry)
    return entry


def _run_steps(names: Sequence[str], steps: Mapping[str, Step], target: TargetSpec, done: dict[str, dict[str, Any]],
               state: StateStore, force: bool, say: Progress) -> None:
    stored = state.load(target.name)
    for name in names:
        if any(e.get("status") == "failed" for e in done.values()):
            return  # a failed step stops this target; the next run resumes there
        prior = {s: dict(e.get("result") or {}) for s, e in done.items()}
        done[name] = _run_step(steps[name], target, prior, state, stored, force, say)


def _drain_queues(names: Sequence[str], queues: Mapping[str, list[TargetSpec]], workers: int | None,
                  steps: Mapping[str, Step], done: dict[str, dict[str, dict[str, Any]]], state: StateStore,
                  opts: MakeOptions, say: Progress) -> None:
    """Each queue in its own thread, its targets in turn."""
    def drain(queue: list[TargetSpec]) -> None:
        for target in queue:
            _run_steps(names, steps, target, done[target.name], state, opts.force, say)

    with ThreadPoolExecutor(max_workers=max(1, min(len(queues), workers or len(queues))),
                            thread_name_prefix="make-queue") as pool:
        futures = [pool.submit(drain, q) for q in queues.values()]
        try:
            for future in futures:
                future.result()  # a bug in a step surfaces here
        except BaseException:
            if opts.on_interrupt is not None:
                opts.on_interrupt()  # cancel what the threads wait on, or leaving the pool waits for it
            raise


def run_make(opts: MakeOptions, *, steps: Sequence[Step], state: StateStore, progress: Progress | None = None) -> MakeSummary:
    say = progress or (lambda line: None)
    if opts.until not in STEPS:
        raise UsageError(f"--until {opts.until!r} is not a step", hint=f"steps: {', '.join(STEPS)}")
    by_name = {s.name: s for s in steps}
    wanted = [s for s in STEPS[: STEPS.index(opts.until) + 1] if s in by_name]
    names = [t.name for t in opts.targets]
    if len(set(names)) != len(names):
        raise UsageError("a target is named twice")
    started = time.monotonic()
    done: dict[str, dict[str, dict[str, Any]]] = {t.name: {} for t in opts.targets}
    for target in opts.targets:
        _run_steps([s for s in wanted if s in PREPARE], by_name, target, done[target.name], state, opts.force, say)
    prepare_s = time.monotonic() - started
    say(f"make: checked, planned and rendered {len(opts.targets)} targets in {prepare_s:.2f} s")

    heavy = [s for s in wanted if s not in PREPARE]
    queues = gpu_queues(opts.targets)
    phases = [(heavy, queues, opts.workers)]
    if opts.certify_all_at_once and "certify" in heavy:
        cut = heavy.index("certify")  # no queue of ours for certify: one thread per target
        phases = [(heavy[:cut], queues, opts.workers),
                  (heavy[cut:], {t.name: [t] for t in opts.targets}, len(opts.targets))]
    for names_, queues_, workers_ in phases:
        if names_:
            _drain_queues(names_, queues_, workers_, by_name, done, state, opts, say)
    outcomes = [TargetOutcome(t.name, t.engine, t.gpus or "-", done[t.name]) for t in opts.targets]
    return MakeSummary(outcomes=outcomes, prepare_s=prepare_s, total_s=time.monotonic() - started,
                       queues={k: [t.name for t in v] for k, v in queues.items()})


# --- the real steps -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class StepSettings:
    """What the real steps need besides the target (from make's command line)."""

    matrix: Matrix
    locks_dir: Path
    render_dir: Path  # <render_dir>/<target>/ holds each rendered build context
    repository: str | None = None  # where builds are tagged; None: targets.default_repository()
    base_override: str | None = None  # --base REF for targets whose base has no digest (made per machine)
    ca_bundle: Path | None = None
    pip_index_url: str | None = None
    model_dirs: Mapping[str, str] = field(default_factory=dict)  # model id -> local directory
    destination: str | None = None  # HOST[:PORT]/REPO; None: no publish
    allow_uncertified: bool = False
    certify_attach_gpus: bool = True
    certify_timeout_s: float = 1800.0
    certify_port: int = 30000
    certify_environment: Mapping[str, str] = field(default_factory=dict)  # for the server container
    store_dir: Path | None = None
    # --on slurm: certify(target, image, image digest) -> certificate, instead of on the local engine
    remote_certify: Callable[[TargetSpec, str, str], dict[str, Any]] | None = None


def _matrix_sha(matrix: Matrix) -> str:
    try:
        return hashlib.sha256(Path(matrix.path).read_bytes()).hexdigest()
    except OSError:
        return "unknown"


class _RealSteps:
    """The six steps over the real flows. Adapters are made on first use, so a make that
    stops after render never needs a Docker engine or a registry."""

    def __init__(self, settings: StepSettings, *, connect_engine: Callable[[], Any], registry: Any,
                 gpu_probe: Callable[[], Any] | None, progress: Progress | None) -> None:
        self.settings = settings
        self.matrix = settings.matrix
        self.matrix_sha = _matrix_sha(settings.matrix)
        self.connect_engine = connect_engine
        self.registry = registry
        self.gpu_probe = gpu_probe
        self.say: Progress = progress or (lambda line: None)
        self.rendered: dict[str, Any] = {}
        self._engine: Any = None
        self._lock = threading.Lock()

    def engine(self) -> Any:
        with self._lock:
            if self._engine is None:
                self._engine = self.connect_engine()
            return self._engine

    def model_of(self, target: TargetSpec) -> str:
        if not target.model:
            raise NotApplicable("the target names no model")
        return self.settings.model_dirs.get(target.model, target.model)

    def steps(self) -> list[Step]:
        return [
            Step("check", self.check_inputs, self.check_run),
            Step("plan", self.plan_inputs, self.plan_run),
            Step("render", self.render_inputs, self.render_run, self.render_valid),
            Step("build", self.build_inputs, self.build_run, self.build_valid),
            Step("certify", self.certify_inputs, self.certify_run),
            Step("publish", self.publish_inputs, self.publish_run),
        ]

    # check ---------------------------------------------------------------
    def check_inputs(self, target: TargetSpec, prior: Mapping[str, Any]) -> dict[str, Any]:
        return {"model": self.model_of(target), "engine": target.engine, "gpus": target.gpus, "matrix": self.matrix_sha}

    def check_run(self, target: TargetSpec, prior: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        from imgbuild.adapters.hub import hub_for
        from imgbuild.flows.check import CheckOptions, check_model

        model = self.model_of(target)
        result = check_model(CheckOptions(model=model, sglang=target.engine, gpu=target.gpus), matrix=self.matrix,
                             probe=None, hub=hub_for(model))
        if not result.supported:
            raise NegativeVerdict(f"SGLang {target.engine} does not support {target.model}: "
                                  + "; ".join(result.reasons))
        return f"SGLang {target.engine} supports {target.model}", {"supported": True}

    # plan ----------------------------------------------------------------
    def plan_inputs(self, target: TargetSpec, prior: Mapping[str, Any]) -> dict[str, Any]:
        if not target.gpus:
            raise NotApplicable("the target names no GPUs")
        return {"model": self.model_of(target), "flags": list(target.launch_flags), "gpus": target.gpus,
                "engine": target.engine, "matrix": self.matrix_sha}

    def plan_run(self, target: TargetSpec, prior: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        from imgbuild.adapters.hub import hub_for
        from imgbuild.flows.plan import PlanOptions, plan_launch

        model = self.model_of(target)
        result = plan_launch(PlanOptions(model=model, flags=target.launch_flags, gpu=target.gpus,
                                         sglang=target.engine, suggest=False), matrix=self.matrix, hub=hub_for(model))
        if not result.fits:
            raise NegativeVerdict(f"the launch flags do not fit on {target.gpus}: "
                                  + "; ".join(result.problems[:2]), hint=f"imgbuild plan {target.model} for fixes")
        return f"fits: {result.verdict}", {"fits": True, "verdict": result.verdict}

    # render --------------------------------------------------------------
    def render_target(self, target: TargetSpec) -> Any:
        from imgbuild.flows.targets import recipe_inputs, with_base
        from imgbuild.knowledge.render import bases_of, render_context

        if target.name not in self.rendered:
            spec = with_base(target, bases_of(self.matrix.raw), self.settings.base_override, unpinned_only=True)
            inputs = recipe_inputs(self.matrix, spec, locks_dir=self.settings.locks_dir)
            self.rendered[target.name] = render_context(inputs)
        return self.rendered[target.name]

    def render_inputs(self, target: TargetSpec, prior: Mapping[str, Any]) -> dict[str, Any]:
        return {"recipe_digest": self.render_target(target).recipe_digest}

    def render_run(self, target: TargetSpec, prior: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        from imgbuild.knowledge.render import write_context

        r = self.render_target(target)
        out = self.settings.render_dir / target.name
        write_context(r, out)
        return f"{r.tag} in {out}", {"recipe_digest": r.recipe_digest, "tag": r.tag, "dir": str(out)}

    @staticmethod
    def render_valid(result: Mapping[str, Any]) -> bool:
        return bool(result.get("dir")) and (Path(result["dir"]) / "Dockerfile").is_file()

    # build ---------------------------------------------------------------
    def repository(self) -> str:
        from imgbuild.flows.targets import default_repository

        return self.settings.repository or default_repository()

    def build_inputs(self, target: TargetSpec, prior: Mapping[str, Any]) -> dict[str, Any]:
        return {"recipe_digest": prior["render"]["recipe_digest"], "repository": self.repository()}

    def build_run(self, target: TargetSpec, prior: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        from imgbuild.flows.build import BuildOptions, build_image

        eng = self.engine()
        record = build_image(eng, BuildOptions(rendered=self.render_target(target), repository=self.repository(),
                                               ca_bundle=self.settings.ca_bundle,
                                               pip_index_url=self.settings.pip_index_url))
        image_id = record.image_id or (eng.image_info(record.image).id if eng.image_info(record.image) else None)
        return (f"{record.image} ({record.reason})",
                {"image": record.image, "image_id": image_id, "repo_digest": record.repo_digest})

    def build_valid(self, result: Mapping[str, Any]) -> bool:
        return self.engine().image_info(result.get("image_id") or result.get("image") or "") is not None

    # certify -------------------------------------------------------------
    def certify_inputs(self, target: TargetSpec, prior: Mapping[str, Any]) -> dict[str, Any]:
        if not target.gpus:
            raise NotApplicable("the target names no GPUs to certify on")
        return {"image_id": prior["build"]["image_id"], "gpus": target.gpus, "flags": list(target.launch_flags),
                "model": target.model, "attach_gpus": self.settings.certify_attach_gpus}

    def certify_run(self, target: TargetSpec, prior: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        import httpx

        from imgbuild.adapters.certstore import CertStore
        from imgbuild.flows import certify as flow
        from imgbuild.flows.targets import certify_host, certify_options

        image, settings = prior["build"]["image"], self.settings
        if settings.remote_certify is not None:
            build = prior["build"]
            cert = settings.remote_certify(target, image, build.get("repo_digest") or build.get("image_id") or image)
            return self._certified(cert)
        # The engine DOCKER_HOST names, as `imgbuild certify` does: a remote one is read with
        # nvidia-smi on its host and spoken to through docker exec.
        host = certify_host(self.engine(), image, local_probe=self.gpu_probe() if self.gpu_probe else None)
        opts = certify_options(
            image=image, target=target, host=host, model_dir=settings.model_dirs.get(target.model or ""),
            attach_gpus=settings.certify_attach_gpus, host_port=settings.certify_port,
            ready_timeout_s=settings.certify_timeout_s, environment=dict(settings.certify_environment))
        with httpx.Client(trust_env=False) as http:
            cert = flow.certify(opts, eng=self.engine(), probe=host.probe, matrix=self.matrix, http=http,
                                store=CertStore(settings.store_dir), planner=None, progress=self.say)
        return self._certified(cert)

    @staticmethod
    def _certified(cert: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        failure, job = cert.get("failure") or {}, cert.get("slurm")
        where = (f" job {job.get('job_id')}" + (f" on {job['node']}" if job.get("node") else "")) if job else ""
        if cert.get("verdict") == "fail":
            raise NegativeVerdict(f"certificate {cert['id']}{where}: fail at {failure.get('stage')}: "
                                  f"{failure.get('reason')}")
        return (f"{cert['verdict']} ({cert['id']}){where}",
                {"id": cert["id"], "verdict": cert["verdict"], **({"slurm": job} if job else {})})

    # publish -------------------------------------------------------------
    def publish_inputs(self, target: TargetSpec, prior: Mapping[str, Any]) -> dict[str, Any]:
        if not self.settings.destination:
            raise NotApplicable("no --to registry")
        return {"image_id": prior["build"]["image_id"], "certificate": (prior.get("certify") or {}).get("id"),
                "destination": self.settings.destination, "allow_uncertified": self.settings.allow_uncertified}

    def publish_run(self, target: TargetSpec, prior: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        from imgbuild.adapters.engine import PushAdapter
        from imgbuild.flows.publish import PublishOptions, load_certificates, publish_image

        if self.registry is None:
            raise UsageError("publish needs a registry client")
        settings = self.settings
        result = publish_image(
            PublishOptions(source=prior["build"]["image_id"], destination=settings.destination or "",
                           allow_uncertified=settings.allow_uncertified),
            engine=PushAdapter(self.engine()), registry=self.registry,
            certificates=load_certificates(settings.store_dir), progress=self.say)
        return (f"{result.reference}" + (" (uncertified)" if result.uncertified else ""),
                {"reference": result.reference, "digest": result.digest, "tags": result.tags,
                 "uncertified": result.uncertified})


def default_steps(
    settings: StepSettings,
    *,
    connect_engine: Callable[[], Any],
    registry: Any = None,
    gpu_probe: Callable[[], Any] | None = None,
    progress: Progress | None = None,
) -> list[Step]:
    """The six steps over the real flows (check, plan, render, build, certify, publish)."""
    return _RealSteps(settings, connect_engine=connect_engine, registry=registry, gpu_probe=gpu_probe,
                      progress=progress).steps()


def summary_lines(summary: MakeSummary) -> list[str]:
    """The table make ends with: target, engine, verdict, image, certificate (and where it went)."""
    rows = [("target", "engine", "verdict", "image", "certificate", "published")]
    for o in summary.outcomes:
        d = o.to_dict()
        rows.append((o.target, o.engine, o.verdict, d["image"] or "-", d["certificate"] or "-", d["published"] or "-"))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    for o in summary.failed:
        step = o.failed_step or ""
        lines.append(f"{o.target}: {step} failed: {o.steps[step].get('detail')}")
    return lines
