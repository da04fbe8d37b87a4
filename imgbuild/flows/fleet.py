"""Certify one image across a GPU fleet on Slurm: one job per target, on the GPUs it names.

Per target: its GPUs (``RTX A6000x2``) become a typed gres (``gpu:a6000:2``; the type is
the GPU's first alias in matrix.yaml ``gpus:``, or the site's own from ``gres_types``),
its certify deadline becomes the job's ``--time``, and the job runs imgbuild's own
certify on the node (``imgbuild fleet node-certify``, behind the site's launcher if any)
against the node's container runtime, with the GPUs Slurm granted. The certificate comes
back on the job's stdout (one ``IMGBUILD-CERT {json}`` line), so no shared filesystem is
needed; it is stored here with the job's Slurm facts.

Every request is put to ``srun --test-only`` before any job is submitted: one that no
node can satisfy stops the run at once (NegativeVerdict, exit 1). A job that ends
without a certificate (TIMEOUT, CANCELLED, NODE_FAIL, a launch that failed on the node)
gets a failed certificate with Slurm's state and the job's last lines. Ctrl-C or SIGTERM
(KeyboardInterrupt) cancels every job submitted (scancel; the node's certify gets SIGTERM
and removes its container), waits for them to end, records the interrupted ones, and
re-raises.
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import datetime, timezone
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from imgbuild.adapters import slurm
from imgbuild.adapters.certstore import CertStore, new_certificate_id
from imgbuild.errors import UsageError
from imgbuild.knowledge.matrix import Matrix
from imgbuild.knowledge.recipe import TargetSpec

CERT_MARKER = "IMGBUILD-CERT "
# Beyond the ready deadline: image pull, preflight, verify and teardown on the node.
TIME_MARGIN_S = 300.0
_TAIL_LINES = 12


@dataclass(frozen=True, kw_only=True)
class FleetOptions:
    image: str
    image_digest: str  # "sha256:..." (or the image id): it names the jobs
    targets: tuple[TargetSpec, ...]
    node_imgbuild: tuple[str, ...]  # how the node runs imgbuild, e.g. ("imgbuild",)
    launcher: tuple[str, ...] = ()  # a prefix the site configures (pyxis/enroot, apptainer exec ...)
    node_args: tuple[str, ...] = ()  # passed on to node-certify: --model-dir, --no-gpus, --env ...
    partition: str | None = None
    gres_types: Mapping[str, str] = field(default_factory=dict)  # GPU name or alias -> gres type
    constraints: Mapping[str, str] = field(default_factory=dict)  # GPU name or alias -> node feature
    ready_timeout_s: float = 1800.0
    environment: Mapping[str, str] = field(default_factory=dict)  # exported to the jobs, and only this
    poll_s: float = 0.5
    cancel_wait_s: float = 60.0  # after scancel: how long the jobs get to end (Slurm's KillWait and teardown)


@dataclass
class _Submitted:
    target: TargetSpec
    request: slurm.JobRequest
    job: slurm.Job | None = None
    cert_line: str | None = None
    tail: list[str] = field(default_factory=list)
    info: slurm.JobInfo | None = None
    said: str = ""


def gres_of(matrix: Matrix, gpus: str, gres_types: Mapping[str, str],
            constraints: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """'RTX A6000x2' -> ('gpu:a6000:2', node feature or None), through the site's table first."""
    spec, count = matrix.resolve_gpu(gpus)
    names = [spec.name, *spec.aliases]
    lowered = {k.lower(): v for k, v in gres_types.items()}
    kind = next((lowered[n.lower()] for n in names if n.lower() in lowered), None)
    if kind is None:
        if not spec.aliases:
            raise UsageError(f"no gres type for GPU {spec.name!r}",
                             hint=f"give --gres-type '{spec.name}=TYPE' (the Type= of gres.conf)")
        kind = spec.aliases[0]
    feature_table = {k.lower(): v for k, v in (constraints or {}).items()}
    feature = next((feature_table[n.lower()] for n in names if n.lower() in feature_table), None)
    return f"gpu:{kind}:{count}", feature


def job_name(image_digest: str, target: str, token: str) -> str:
    """imgbuild-certify-<12 hex of the digest>-<target>-<run token>: unique per run, and says what it certifies."""
    hexpart = image_digest.split(":", 1)[-1][:12]
    return f"imgbuild-certify-{hexpart}-{target}-{token}"


def node_command(options: FleetOptions, target: TargetSpec) -> tuple[str, ...]:
    return (*options.launcher, *options.node_imgbuild, "fleet", "node-certify", options.image,
            "--target", target.name, "--timeout", f"{options.ready_timeout_s:g}", *options.node_args)


def plan_jobs(options: FleetOptions, matrix: Matrix, token: str | None = None) -> list[slurm.JobRequest]:
    """The srun request of each target (UsageError for a target without GPUs)."""
    token = token or secrets.token_hex(3)
    requests = []
    for target in options.targets:
        if not target.gpus:
            raise UsageError(f"target {target.name} names no GPUs: nothing to schedule it on",
                             hint="give the target gpus: in matrix.yaml")
        gres, feature = gres_of(matrix, target.gpus, options.gres_types, options.constraints)
        requests.append(slurm.JobRequest(
            name=job_name(options.image_digest, target.name, token), command=node_command(options, target),
            gres=gres, time_limit_s=options.ready_timeout_s + TIME_MARGIN_S, partition=options.partition,
            constraint=feature, environment=dict(options.environment)))
    return requests


def certify_fleet(options: FleetOptions, *, matrix: Matrix, store: CertStore,
                  progress: Callable[[str], None] = lambda _line: None) -> list[dict[str, Any]]:
    """Submit one job per target, follow them, store one certificate per target; returns them in target order."""
    slurm.check_controller()
    requests = plan_jobs(options, matrix)
    for request in requests:
        estimate = slurm.probe_request(request)
        progress(f"slurm: {request.name}: --gres={request.gres} --time={request.time_limit()} min"
                 + (f": {estimate}" if estimate else ""))
    runs = [_Submitted(target=t, request=r) for t, r in zip(options.targets, requests)]
    try:
        for run in runs:
            run.job = slurm.submit(run.request, on_stdout=_stdout_sink(run, progress),
                                   on_stderr=_stderr_sink(run, progress))
        _follow(runs, options.poll_s, progress)
    except KeyboardInterrupt:
        _cancel_all(runs, options.cancel_wait_s, progress)
        for run in runs:
            _store_result(run, options.image, store, interrupted=True)
        raise
    return [_store_result(run, options.image, store, interrupted=False) for run in runs]


def _stdout_sink(run: _Submitted, progress: Callable[[str], None]) -> Callable[[str], None]:
    def sink(line: str) -> None:
        if line.startswith(CERT_MARKER):
            run.cert_line = line[len(CERT_MARKER):]
        else:
            _keep(run, line)
            progress(f"[{run.target.name}] {line}")
    return sink


def _stderr_sink(run: _Submitted, progress: Callable[[str], None]) -> Callable[[str], None]:
    def sink(line: str) -> None:
        _keep(run, line)
        progress(f"[{run.target.name}] {line}")
    return sink


def _keep(run: _Submitted, line: str) -> None:
    run.tail.append(line)
    del run.tail[:-_TAIL_LINES]


def _follow(runs: list[_Submitted], poll_s: float, progress: Callable[[str], None]) -> None:
    """Until every srun has returned: say each job's state as it changes (pending, running on NODE, ended)."""
    last_look = 0.0
    while True:
        open_runs = [r for r in runs if r.job is not None and r.job.poll() is None]
        if time.monotonic() - last_look >= 2.0 or not open_runs:
            last_look = time.monotonic()
            for run in runs:
                _look_up(run, progress)
        if not open_runs:
            return
        open_runs[0].job.wait(poll_s)  # type: ignore[union-attr]


def _look_up(run: _Submitted, progress: Callable[[str], None]) -> None:
    jobs = slurm.jobs_named(run.request.name)
    if not jobs:
        return
    run.info = jobs[-1]
    said = f"job {run.info.job_id} {run.info.state.lower()}" + (f" on {run.info.node}" if run.info.node else "")
    if said != run.said:
        run.said = said
        progress(f"[{run.target.name}] {said}" + (f" ({run.info.reason})" if run.info.state == "PENDING" else ""))


def _cancel_all(runs: list[_Submitted], wait_s: float, progress: Callable[[str], None]) -> None:
    names = [r.request.name for r in runs if r.job is not None]
    progress(f"slurm: interrupted: cancelling {len(names)} jobs (scancel)")
    slurm.cancel(names)
    deadline = time.monotonic() + wait_s
    for run in runs:
        if run.job is not None and run.job.wait(max(0.0, deadline - time.monotonic())) is None:
            run.job.proc.kill()  # the job itself is cancelled; this is only our srun
            run.job.wait(5)
    # srun returns before the job has left the node (COMPLETING): wait for Slurm to say it ended.
    while time.monotonic() < deadline:
        try:
            for run in runs:
                _look_up(run, progress)
        except Exception:  # noqa: BLE001 - the record of an interrupted run must still be written
            break
        if all(r.info is None or r.info.state in slurm.ENDED_STATES for r in runs):
            break
        time.sleep(0.25)


def _store_result(run: _Submitted, image: str, store: CertStore, *, interrupted: bool) -> dict[str, Any]:
    """The node's certificate with the job's Slurm facts, or a failed one saying how the job ended."""
    code = run.job.poll() if run.job is not None else None
    facts = {"job_name": run.request.name, "gres": run.request.gres, "time_limit_min": int(run.request.time_limit()),
             "partition": run.request.partition, "constraint": run.request.constraint, "srun_exit_code": code}
    if run.info is not None:
        facts.update({"job_id": run.info.job_id, "state": run.info.state, "node": run.info.node or None})
    cert = _node_certificate(run)
    if cert is None:
        cert = _job_failure_certificate(run, image, facts, interrupted)
    cert["slurm"] = {**facts, **(cert.get("slurm") or {})}
    store.save(cert)
    return cert


def _node_certificate(run: _Submitted) -> dict[str, Any] | None:
    if run.cert_line is None:
        return None
    try:
        cert = json.loads(run.cert_line)
    except ValueError:
        return None
    return cert if isinstance(cert, dict) and cert.get("id") else None


def _job_failure_certificate(run: _Submitted, image: str, facts: dict[str, Any], interrupted: bool) -> dict[str, Any]:
    state = facts.get("state") or ("NOT_SUBMITTED" if run.job is None else "UNKNOWN")
    if interrupted:
        stage, reason = "interrupted", "interrupted (Ctrl-C or SIGTERM): the job was cancelled (scancel)"
    elif state == "TIMEOUT":
        stage, reason = "timeout", f"the job ran past its time limit ({facts['time_limit_min']} min): Slurm state TIMEOUT"
    else:
        stage = "slurm"
        reason = f"the job ended without a certificate: Slurm state {state}, srun exit {facts.get('srun_exit_code')}"
    if run.tail:
        reason += "; last lines: " + " | ".join(run.tail[-3:])
    target = run.target
    return {
        "schema": 1, "id": new_certificate_id(), "created_at": _now(), "finished_at": _now(),
        "verdict": "fail", "attested": False, "attestation_gaps": [],
        "image": {"ref": image, "id": None, "repo_digests": [],
                  "recipe_digest": None, "labels": {}},
        "target": {"name": target.name, "gpus": target.gpus, "engine": target.engine, "model": target.model,
                   "launch_flags": list(target.launch_flags)},
        "hardware": {"source": "slurm", "attached": False, "gpus": []},
        "checks": [{"name": stage, "ok": False, "detail": reason}],
        "failure": {"stage": stage, "reason": reason}, "diagnosis": None,
        "log_tail": list(run.tail), "timings": {},
    }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
