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

``SlurmCertifier`` is the same for ``make --on slurm``: make calls it once per target, from
one thread each, so every job is submitted at once; its job names carry no run token, and
srun writes to files under make's state, so a later make finds each job again.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from datetime import datetime, timezone
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imgbuild.adapters import slurm
from imgbuild.adapters.certstore import CertStore, new_certificate_id
from imgbuild.errors import ImgbuildError, NegativeVerdict, UsageError
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
    time_limit_min: int | None = None  # --time; default: the ready deadline plus TIME_MARGIN_S


@dataclass
class _Submitted:
    target: TargetSpec
    request: slurm.JobRequest
    job: slurm.Job | None = None
    cert_line: str | None = None
    tail: list[str] = field(default_factory=list)
    info: slurm.JobInfo | None = None
    said: str = ""
    files: slurm.JobFiles | None = None  # make --on slurm: srun's output and pid files
    adopted: bool = False  # a job an earlier make submitted, waited on instead of submitting again
    finished: bool = False
    image: str = ""
    ended_before: frozenset[str] = frozenset()  # ids of jobs of this name that had ended before this make


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
            gres=gres, time_limit_s=_time_limit_s(options), partition=options.partition,
            constraint=feature, environment=dict(options.environment)))
    return requests


def _time_limit_s(options: FleetOptions | SlurmMakeOptions) -> float:
    if options.time_limit_min is not None:
        return options.time_limit_min * 60.0
    return options.ready_timeout_s + TIME_MARGIN_S


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
    except BaseException as exc:
        # Each srun runs in a session of its own and outlives this process: whatever stopped us
        # (Ctrl-C, a submit or squeue that failed), the jobs already submitted are cancelled.
        interrupted = isinstance(exc, KeyboardInterrupt)
        if any(r.job is not None for r in runs):
            _cancel_all(runs, options.cancel_wait_s, progress,
                        why="interrupted" if interrupted else f"stopped by {type(exc).__name__}")
        if interrupted:
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
            _look_up(runs, progress)
        if not open_runs:
            break
        open_runs[0].job.wait(poll_s)  # type: ignore[union-attr]
    # srun returns before the job has left the node (COMPLETING): wait for Slurm's final state
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline and any(r.info is not None and r.info.state not in slurm.ENDED_STATES
                                              for r in runs):
        time.sleep(0.25)
        _look_up(runs, progress)


def _look_up(runs: list[_Submitted], progress: Callable[[str], None]) -> None:
    """One squeue for all the runs; say each job's state as it changes."""
    jobs = slurm.jobs_by_name([run.request.name for run in runs])
    for run in runs:
        if not jobs.get(run.request.name):
            continue
        run.info = jobs[run.request.name][-1]
        said = f"job {run.info.job_id} {run.info.state.lower()}" + (f" on {run.info.node}" if run.info.node else "")
        if said != run.said:
            run.said = said
            progress(f"[{run.target.name}] {said}" + (f" ({run.info.reason})" if run.info.state == "PENDING" else ""))


def _cancel_all(runs: list[_Submitted], wait_s: float, progress: Callable[[str], None], *,
                why: str = "interrupted") -> None:
    names = [r.request.name for r in runs if r.job is not None]
    progress(f"slurm: {why}: cancelling {len(names)} jobs (scancel)")
    slurm.cancel(names)
    deadline = time.monotonic() + wait_s
    for run in runs:
        if run.job is not None and run.job.wait(max(0.0, deadline - time.monotonic())) is None:
            run.job.proc.kill()  # the job itself is cancelled; this is only our srun
            run.job.wait(5)
    # srun returns before the job has left the node (COMPLETING): wait for Slurm to say it ended.
    while time.monotonic() < deadline:
        try:
            _look_up(runs, progress)
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
    elif not interrupted and facts.get("state") in SLURM_ENDED_IT and cert.get("verdict") == "fail":
        _blame_slurm(cert, facts)
    cert["slurm"] = {**facts, **(cert.get("slurm") or {})}
    store.save(cert)
    return cert


# States in which Slurm, not the certification, ended the job (the node's certify then saw only SIGTERM).
SLURM_ENDED_IT = frozenset({"TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "DEADLINE", "CANCELLED", "BOOT_FAIL"})


def _blame_slurm(cert: dict[str, Any], facts: Mapping[str, Any]) -> None:
    """The node's certificate says 'interrupted'; the verdict names Slurm's state instead."""
    state = str(facts["state"])
    stage = "timeout" if state == "TIMEOUT" else state.lower()
    reason = (f"the job ran past its time limit ({facts['time_limit_min']} min): Slurm state TIMEOUT"
              if state == "TIMEOUT" else f"Slurm ended the job: state {state}")
    node_failure = cert.get("failure") or {}
    if node_failure.get("reason"):
        reason += f"; on the node: {node_failure.get('stage')}: {node_failure['reason']}"
    cert["failure"] = {"stage": stage, "reason": reason}
    cert["checks"] = [*(cert.get("checks") or []), {"name": stage, "ok": False, "detail": reason}]


def _node_certificate(run: _Submitted) -> dict[str, Any] | None:
    if run.cert_line is None:
        return None
    try:
        cert = json.loads(run.cert_line)
    except ValueError:
        return None
    return cert if isinstance(cert, dict) and cert.get("id") else None


def _job_failure_certificate(run: _Submitted, image: str, facts: dict[str, Any], interrupted: bool) -> dict[str, Any]:
    state = facts.get("state") or ("NOT_SUBMITTED" if run.job is None and not run.adopted else "UNKNOWN")
    if interrupted:
        stage, reason = "interrupted", "interrupted (Ctrl-C or SIGTERM): the job was cancelled (scancel)"
    elif state == "TIMEOUT":
        stage, reason = "timeout", f"the job ran past its time limit ({facts['time_limit_min']} min): Slurm state TIMEOUT"
    elif state in SLURM_ENDED_IT:
        stage = state.lower()
        reason = f"Slurm ended the job: state {state}, srun exit {facts.get('srun_exit_code')}"
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


# --- make --on slurm ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SlurmMakeOptions:
    """How make's certify step runs on this cluster (the site's part of FleetOptions)."""

    node_imgbuild: tuple[str, ...]
    jobs_dir: Path  # <make state>/slurm: each job's srun output and pid, found again by job name
    launcher: tuple[str, ...] = ()
    node_args: tuple[str, ...] = ()  # for every job: --no-gpus, --env, --matrix
    model_dirs: Mapping[str, str] = field(default_factory=dict)  # model id -> its directory on the nodes
    partition: str | None = None
    gres_types: Mapping[str, str] = field(default_factory=dict)
    constraints: Mapping[str, str] = field(default_factory=dict)
    ready_timeout_s: float = 1800.0
    time_limit_min: int | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    poll_s: float = 0.5
    look_s: float = 2.0  # one squeue for every job at most this often
    cancel_wait_s: float = 60.0


def make_job_name(image_digest: str, target: str) -> str:
    """imgbuild-certify-<12 hex of the digest>-<target>: the same in every make of this image,
    so a resumed make finds the job an earlier one submitted."""
    digest = image_digest.rsplit("@", 1)[-1]  # a repo digest names its repository first
    return f"imgbuild-certify-{digest.split(':', 1)[-1][:12]}-{target}"


class SlurmCertifier:
    """make --on slurm's certify: ``certify(target, image, digest)`` from make's threads, one per
    target, each submitting its job at once (Slurm queues them) and waiting for it.

    A target is never submitted twice: a passing certificate stored for the job name
    (``<jobs_dir>/<name>.cert``) is used again; a job of that name still pending or running
    (a make killed without cancelling it) is waited on and its certificate read from the
    output file its srun writes; an srun that ended while no make was there leaves its
    certificate in that file too. ``interrupt()`` (Ctrl-C, SIGTERM) cancels every job
    being waited on, waits until Slurm has ended them, and records them as interrupted.
    """

    def __init__(self, options: SlurmMakeOptions, *, matrix: Matrix, store: CertStore,
                 progress: Callable[[str], None] = lambda _line: None) -> None:
        self.options = options
        self.matrix = matrix
        self.store = store
        self.progress = progress
        self._lock = threading.Lock()
        self._runs: dict[str, _Submitted] = {}
        self._last_look = 0.0
        self._interrupted = False
        self._checked = False

    def request_of(self, target: TargetSpec, image: str, image_digest: str) -> slurm.JobRequest:
        if not target.gpus:
            raise UsageError(f"target {target.name} names no GPUs: nothing to schedule it on")
        o = self.options
        gres, feature = gres_of(self.matrix, target.gpus, o.gres_types, o.constraints)
        model_dir = o.model_dirs.get(target.model or "")
        command = (*o.launcher, *o.node_imgbuild, "fleet", "node-certify", image, "--target", target.name,
                   "--timeout", f"{o.ready_timeout_s:g}", "--no-plan",
                   *(["--model-dir", model_dir] if model_dir else []), *o.node_args)
        return slurm.JobRequest(name=make_job_name(image_digest, target.name), command=command, gres=gres,
                                time_limit_s=_time_limit_s(o), partition=o.partition, constraint=feature,
                                environment=dict(o.environment))

    def certify(self, target: TargetSpec, image: str, image_digest: str) -> dict[str, Any]:
        """The target's certificate: stored earlier, from a job still running, or from a new job."""
        if not self._checked:
            slurm.check_controller()
            self._checked = True
        request = self.request_of(target, image, image_digest)
        run = _Submitted(target=target, request=request, files=slurm.JobFiles(self.options.jobs_dir, request.name),
                         image=image)
        with self._lock:
            self._runs[request.name] = run
        earlier = self._earlier_certificate(run)
        if earlier is not None:
            run.finished = True
            return earlier
        known = slurm.jobs_named(request.name)
        run.ended_before = frozenset(j.job_id for j in known if j.state in slurm.ENDED_STATES)
        live = [j for j in known if j.state not in slurm.ENDED_STATES]
        if live or run.files.srun_alive():  # type: ignore[union-attr]
            run.adopted, run.info = True, (live[-1] if live else None)
            what = f"job {run.info.job_id} {run.info.state.lower()}" if run.info else "its srun"
            self.progress(f"[{target.name}] {what} from an earlier make: waiting on it, not submitting again")
            self._wait_adopted(run)
        else:
            slurm.probe_request(request)  # a request no node can satisfy fails this target at once
            self._submit(run)
            self._wait_own(run)
        return self._finish(run)

    def _earlier_certificate(self, run: _Submitted) -> dict[str, Any] | None:
        files = run.files
        assert files is not None
        index = files.directory / f"{files.name}.cert"
        cert: dict[str, Any] | None = None
        if index.exists():
            try:
                cert = self.store.load(index.read_text().strip())
            except ImgbuildError:
                cert = None
        if cert is None and files.out.exists() and not files.srun_alive():
            # the job ended while no make was waiting on it: its certificate is in srun's output
            run.cert_line = _cert_line(files.lines()[0])
            cert = _node_certificate(run)
            if cert is not None and cert.get("verdict") != "fail":
                self.store.save(cert)
                index.write_text(cert["id"] + "\n")
        if cert is None or cert.get("verdict") == "fail":
            return None  # a failed certification runs again, as make reruns a failed step
        job = cert.get("slurm") or {}
        self.progress(f"[{run.target.name}] certified earlier by job {job.get('job_id', '?')} ({cert['id']}, "
                      f"{cert['verdict']}): not submitting again")
        return cert

    def _submit(self, run: _Submitted) -> None:
        with self._lock:  # interrupt() takes the lock too: no job starts after it has cancelled
            if self._interrupted:
                raise NegativeVerdict(f"interrupted before {run.request.name} was submitted")
            run.job = slurm.submit_detached(run.request, run.files)  # type: ignore[arg-type,assignment]
        self.progress(f"[{run.target.name}] submitted {run.request.name}: --gres={run.request.gres} "
                      f"--time={run.request.time_limit()} min (output: {run.files.out})")  # type: ignore[union-attr]

    def _wait_own(self, run: _Submitted) -> None:
        while run.job.wait(self.options.poll_s) is None:  # type: ignore[union-attr]
            self._refresh()
        self._settle(run)

    def _wait_adopted(self, run: _Submitted) -> None:
        # Bounded by the job's own time limit: a job Slurm has purged (MinJobAge, a restarted
        # slurmctld) keeps its last state here, and its srun may be long gone.
        deadline = time.monotonic() + _time_limit_s(self.options) + self.options.cancel_wait_s
        while time.monotonic() < deadline:
            self._refresh()
            if not run.files.srun_alive():  # type: ignore[union-attr]
                if run.info is None or run.info.state in slurm.ENDED_STATES:
                    break
                if not slurm.jobs_by_name([run.request.name]).get(run.request.name):
                    break  # neither our srun nor Slurm knows the job any more
            time.sleep(self.options.poll_s)
        self._settle(run)

    def _settle(self, run: _Submitted) -> None:
        """srun returns before the job has left the node (COMPLETING): wait for Slurm's final state."""
        deadline = time.monotonic() + 15.0
        while time.monotonic() < deadline:
            self._refresh(force=True)
            if run.info is None or run.info.state in slurm.ENDED_STATES:
                return
            time.sleep(0.25)

    def _refresh(self, *, force: bool = False) -> None:
        """One squeue for every job being waited on; say each state change (pending, running on NODE, done)."""
        with self._lock:
            if not force and time.monotonic() - self._last_look < self.options.look_s:
                return
            self._last_look = time.monotonic()
            runs = [r for r in self._runs.values() if not r.finished]
            jobs = slurm.jobs_by_name([r.request.name for r in runs])
            for run in runs:
                mine = [j for j in jobs.get(run.request.name) or [] if j.job_id not in run.ended_before]
                if mine:
                    run.info = mine[-1]
                    self._say(run)

    def _say(self, run: _Submitted) -> None:
        info = run.info
        assert info is not None
        if info.state == "PENDING":
            said = f"job {info.job_id} pending ({info.reason})"
        elif info.state in slurm.ENDED_STATES:
            said = f"job {info.job_id} ended: {info.state}" + (f" on {info.node}" if info.node else "")
        else:
            said = f"job {info.job_id} {info.state.lower()}" + (f" on {info.node}" if info.node else "")
        if said != run.said:
            run.said = said
            self.progress(f"[{run.target.name}] {said}")

    def _finish(self, run: _Submitted) -> dict[str, Any]:
        out, err = run.files.lines()  # type: ignore[union-attr]
        run.cert_line = _cert_line(out)
        run.tail = [line for line in out + err if not line.startswith(CERT_MARKER)][-_TAIL_LINES:]
        with self._lock:
            interrupted = self._interrupted
        cert = _store_result(run, run.image, self.store, interrupted=interrupted)
        if cert.get("verdict") != "fail":
            (self.options.jobs_dir / f"{run.request.name}.cert").write_text(cert["id"] + "\n")
        run.finished = True
        self.progress(f"[{run.target.name}] done: {cert['verdict']} ({cert['id']})"
                      + (f": {cert['failure']['stage']}" if cert.get("failure") else ""))
        return cert

    def interrupt(self) -> None:
        """Cancel every job being waited on (scancel) and wait until each is recorded."""
        with self._lock:
            self._interrupted = True
            live = [r for r in self._runs.values() if not r.finished and (r.job is not None or r.adopted)]
        if not live:
            return
        self.progress(f"slurm: interrupted: cancelling {len(live)} jobs (scancel)")
        slurm.cancel([r.request.name for r in live])
        deadline = time.monotonic() + self.options.cancel_wait_s
        while time.monotonic() < deadline and not all(r.finished for r in live):
            time.sleep(0.2)
        for run in live:
            if not run.finished and run.job is not None:
                run.job.proc.kill()  # the job itself is cancelled; this is only our srun


def _cert_line(lines: list[str]) -> str | None:
    found = [line[len(CERT_MARKER):] for line in lines if line.startswith(CERT_MARKER)]
    return found[-1] if found else None
