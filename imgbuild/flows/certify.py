"""`imgbuild certify`: launch an image on its target GPUs, prove it serves, record a certificate.

Stages, each with its own failure reason:
  preflight  GPUs exist and match the target (name, count, memory), are clean (no compute
             processes, little memory used), the driver is new enough for the image's CUDA,
             the compute capability is among the image's kernel targets, the plan fits, the
             HTTP port is free, and the GPUs' locks are ours. Failures raise NegativeVerdict
             before anything starts.
  launch     a new container with the chosen GPUs, ipc=host, the model read-only, the port on
             127.0.0.1 and the target's exact flags; its log streams into a new file and
             through triage (imgbuild.knowledge.triage.LogWatcher).
  ready      /health_generate answers 200 before the deadline. A fatal log line or the
             container's exit ends the wait at once, with the diagnosis.
  verify     /server_info (else /get_server_info) shows the flags asked for ("flags not
             applied" otherwise); two greedy /generate calls return the same tokens; with
             speculation the acceptance length exceeds 1; the log's memory figures are
             recorded beside the plan's.
  teardown   always (success, failure, deadline, Ctrl-C, SIGTERM turned into
             KeyboardInterrupt by the CLI): the container is stopped and removed and the
             GPUs' memory is seen released through the probe.

A certificate says "pass" only when real GPUs of the target's kind were attached and read
through NVML, and the image has a repository digest. A run that passes every check
without that (a stand-in image with --no-gpus, a GPU snapshot) is "pass-unattested" and
lists what it could not attest. Any failed check is "fail".
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from imgbuild import __version__
from imgbuild.adapters import engine
from imgbuild.adapters.certstore import CertStore, new_certificate_id
from imgbuild.adapters.containers import ServerHttp, ServerRequestFailed, exec_client
from imgbuild.flows.check import kernels_run_on
from imgbuild.errors import NegativeVerdict, UsageError
from imgbuild.adapters.gpulock import GpuLock
from imgbuild.adapters.gpus import GpuDevice, GpuProbe, HostGpus
from imgbuild.knowledge.matrix import Matrix
from imgbuild.knowledge.triage import Diagnosis, LogWatcher, diagnose_log, read_figures

MODEL_MOUNT = "/model"
HF_CACHE_MOUNT = "/root/.cache/huggingface"
MEMORY_TOLERANCE = 0.02  # memory.total differs by a few MiB between driver versions

VERDICT_PASS = "pass"
VERDICT_UNATTESTED = "pass-unattested"
VERDICT_FAIL = "fail"

# server_info keys checked against the flags that set them (server_args.py dests)
_CHECKED_FLAGS = {
    "--tp-size": "tp_size",
    "--tp": "tp_size",
    "--mem-fraction-static": "mem_fraction_static",
    "--context-length": "context_length",
    "--speculative-algorithm": "speculative_algorithm",
    "--speculative-num-steps": "speculative_num_steps",
}
# Flags certify sets itself: the model's path inside the container, host and port.
_OWNED_FLAGS = {"--model-path", "--model", "--host", "--port"}


@dataclass(frozen=True, kw_only=True)
class CertifyOptions:
    image: str
    gpus: str = ""  # the GPUs to certify on, e.g. "RTX A6000x2" (default: the target's)
    target_gpus: str | None = None  # the GPUs the target (or the image's recipe) names
    launch_flags: tuple[str, ...] = ()  # default: the image's recipe
    target_name: str | None = None
    engine_version: str | None = None  # the target's SGLang version, for the record
    cuda: str | None = None  # the image's CUDA when its labels do not say
    model_dir: str | None = None  # host directory, mounted read-only at /model
    model_ref: str | None = None  # --model-path when no model_dir (a Hugging Face id)
    hf_cache: str | None = None  # host Hugging Face cache, mounted read-only
    gpu_uuids: tuple[str, ...] = ()  # use these GPUs (default: the first matching ones)
    attach_gpus: bool = True  # False: no device request (stand-in images, tests)
    probe_source: str = "nvml"  # "nvml", or "snapshot:PATH" when the probe replays a file
    host_port: int = 30000
    container_port: int = 30000
    ready_timeout_s: float = 1800.0
    max_used_mib: int = 1024  # a GPU using more than this before launch is not clean
    release_timeout_s: float = 60.0
    stop_timeout_s: int = 10
    fatal_grace_s: float = 2.0  # after a fatal line, how long SGLang may take to exit by itself
    prompt: str = "The capital of France is"
    max_new_tokens: int = 16
    python: str = "python3"
    environment: dict[str, str] = field(default_factory=dict)
    lock_dir: Path | None = None
    # Talk HTTP from inside the server container (docker exec) instead of through the port
    # published on 127.0.0.1: for a remote engine (DOCKER_HOST=ssh://, tcp://), whose
    # loopback this machine cannot reach.
    http_in_container: bool = False
    read_kernel_targets: bool = True  # read torch's CUDA arch list in a throwaway container of the image


@dataclass
class _Run:
    """What one attempt has seen so far; turned into the certificate at the end."""

    cert_id: str
    log_path: Path
    started: float = 0.0
    container_id: str | None = None
    watcher: LogWatcher = field(default_factory=LogWatcher)
    fatal: threading.Event = field(default_factory=threading.Event)
    log_done: threading.Event = field(default_factory=threading.Event)
    weights_loaded_s: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    fatal_line_at: float | None = None  # monotonic time the fatal line arrived
    verdict_at: float | None = None  # monotonic time the wait ended with the verdict
    cert: dict[str, Any] = field(default_factory=dict)  # the certificate being written
    checks: list[dict[str, Any]] = field(default_factory=list)
    failure: dict[str, Any] | None = None  # the first failed stage and its reason
    diagnosis: Diagnosis | None = None

    def fail(self, stage: str, reason: str) -> None:
        """Record a failed check; the first one is the certificate's failure."""
        if self.failure is None:
            self.failure = {"stage": stage, "reason": reason}
        self.checks.append({"name": stage, "ok": False, "detail": reason})


@dataclass(frozen=True)
class Preflight:
    devices: tuple[GpuDevice, ...]
    host: HostGpus
    checks: tuple[dict[str, Any], ...]
    notes: tuple[str, ...]


def options_from_recipe(options: CertifyOptions, labels: dict[str, str]) -> CertifyOptions:
    """Fill what the caller left out from the image's own recipe (label io.imgbuild.recipe,
    the target it was built for: GPUs, model, launch flags, engine, CUDA)."""
    raw = labels.get("io.imgbuild.recipe")
    try:
        recipe = json.loads(raw) if raw else {}
    except ValueError:
        recipe = {}
    if not isinstance(recipe, dict):
        recipe = {}
    filled = replace(
        options,
        target_gpus=options.target_gpus or recipe.get("gpus"),
        gpus=options.gpus or options.target_gpus or recipe.get("gpus") or "",
        launch_flags=options.launch_flags or tuple(recipe.get("launch_flags") or ()),
        target_name=options.target_name or recipe.get("name"),
        engine_version=options.engine_version or recipe.get("engine") or labels.get("io.imgbuild.engine"),
        cuda=options.cuda or recipe.get("cuda"),
        model_ref=options.model_ref or (None if options.model_dir else recipe.get("model")),
    )
    if not filled.gpus:
        raise UsageError(f"certify {options.image}: no GPUs to certify on",
                         hint="pass --gpus 'NAME xN' or --target (the image's recipe names none)")
    return filled


def flag_values(flags: tuple[str, ...]) -> dict[str, str | None]:
    """'--tp 2 --x=y --flag' -> {'--tp': '2', '--x': 'y', '--flag': None} (last one wins)."""
    out: dict[str, str | None] = {}
    i = 0
    while i < len(flags):
        word = flags[i]
        if word.startswith("--") and "=" in word:
            key, _, value = word.partition("=")
            out[key] = value
        elif word.startswith("--"):
            nxt = flags[i + 1] if i + 1 < len(flags) else None
            if nxt is not None and not nxt.startswith("--"):
                out[word] = nxt
                i += 1
            else:
                out[word] = None
        i += 1
    return out


def server_flags(options: CertifyOptions) -> tuple[str, ...]:
    """The target's flags minus those certify owns, then the model path, host and port."""
    kept: list[str] = []
    flags = options.launch_flags
    i = 0
    while i < len(flags):
        word = flags[i]
        key = word.partition("=")[0]
        if key in _OWNED_FLAGS:
            if "=" not in word and i + 1 < len(flags) and not flags[i + 1].startswith("--"):
                i += 1
        else:
            kept.append(word)
        i += 1
    model = MODEL_MOUNT if options.model_dir else options.model_ref
    if not model:
        raise UsageError("certify needs the model: --model DIR (mounted read-only) or a target with a model")
    return ("--model-path", model, *kept, "--host", "0.0.0.0", "--port", str(options.container_port))


# Runs in a throwaway container of the image (no GPU needed): the CUDA architectures
# torch was compiled for, from torch._C._cuda_getArchFlags (what torch.cuda.get_arch_list
# returns once a GPU is present).
_KERNEL_ARCHS = r"""
import json
try:
    import torch
    flags = torch._C._cuda_getArchFlags() if hasattr(torch._C, "_cuda_getArchFlags") else ""
    print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, "arch_flags": flags or ""}))
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__ + ": " + str(exc)}))
"""


@dataclass(frozen=True)
class KernelTargets:
    """Compute capabilities an image's kernels carry: SASS per capability, PTX to JIT."""

    sass: tuple[str, ...]  # "8.6"
    ptx: tuple[str, ...]  # "9.0" from compute_90
    source: str

    def runs_on(self, compute_capability: str) -> bool:
        if kernels_run_on(compute_capability, self.sass):
            return True
        # PTX is compiled by the driver for the GPU at hand: any capability at or above it
        return any(_version_tuple(compute_capability) >= _version_tuple(p) for p in self.ptx)

    def describe(self) -> str:
        parts = list(self.sass) + [f"PTX {p}" for p in self.ptx]
        return f"{', '.join(parts)} ({self.source})"


def parse_arch_flags(flags: str, source: str) -> KernelTargets | None:
    """'sm_80 sm_86 sm_90a compute_90' (or ';'-separated) -> KernelTargets; None when empty."""
    sass: list[str] = []
    ptx: list[str] = []
    for word in flags.replace(";", " ").replace(",", " ").split():
        kind, _, num = word.partition("_")
        digits = "".join(ch for ch in num if ch.isdigit())
        if not digits or kind not in ("sm", "compute"):
            continue
        cc = f"{digits[:-1]}.{digits[-1]}"
        (sass if kind == "sm" else ptx).append(cc)
    if not sass and not ptx:
        return None
    return KernelTargets(tuple(dict.fromkeys(sass)), tuple(dict.fromkeys(ptx)), source)


def read_kernel_targets(eng: engine.Engine, image: str) -> tuple[KernelTargets | None, str]:
    """The image's torch arch list, read in a throwaway container; (None, why) when it cannot."""
    try:
        code, output = eng.run_python(image, _KERNEL_ARCHS, timeout_s=300.0)
    except UsageError as exc:
        return None, f"cannot read the image's kernel targets: {exc.one_line()}"
    lines = [ln for ln in output.splitlines() if ln.startswith("{")]
    if code != 0 or not lines:
        return None, f"cannot read the image's kernel targets (exit {code})"
    answer = json.loads(lines[-1])
    if "error" in answer:
        return None, f"the image's torch cannot be read ({answer['error'][:120]})"
    targets = parse_arch_flags(answer.get("arch_flags", ""), f"torch {answer.get('torch')} in the image")
    return targets, "" if targets else f"torch {answer.get('torch')} in the image names no CUDA architectures"


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for p in text.split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class _Checks:
    """Preflight's findings: every check with its verdict, the failures, and notes."""

    checks: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append({"name": name, "ok": ok, "detail": detail})
        if not ok:
            self.problems.append(detail)


def preflight(
    options: CertifyOptions, *, host: HostGpus, matrix: Matrix, labels: dict[str, str],
    plan: dict[str, Any] | None = None, plan_note: str | None = None,
    kernel_targets: KernelTargets | None = None,
) -> Preflight:
    """Every check that needs nothing started; raise NegativeVerdict naming each failure."""
    found = _Checks()
    chosen = _check_gpus(found, options, host, matrix)
    _check_driver_and_kernels(found, options, host, matrix, labels, chosen, kernel_targets)
    if plan is None:
        found.notes.append(plan_note or "plan check skipped: no planner")
    else:
        found.check("plan-fits", bool(plan.get("fits")),
                    f"the plan does not fit ({plan.get('verdict')}): {'; '.join(plan.get('problems') or [])}")
    if options.http_in_container:
        found.notes.append(f"port check skipped: the engine is remote; port {options.host_port} is on its host")
    else:
        found.check("port-free", _port_free(options.host_port), f"port {options.host_port} on 127.0.0.1 is in use")
    if found.problems:
        raise NegativeVerdict("certify preflight failed: " + "; ".join(found.problems),
                              hint="nothing was started")
    return Preflight(devices=chosen, host=host, checks=tuple(found.checks), notes=tuple(found.notes))


def _check_gpus(found: _Checks, options: CertifyOptions, host: HostGpus, matrix: Matrix) -> tuple[GpuDevice, ...]:
    """The GPUs to certify on: of the target's kind and count, with its memory, unused."""
    check = found.check
    spec, count = matrix.resolve_gpu(options.gpus)
    if options.target_gpus:
        t_spec, t_count = matrix.resolve_gpu(options.target_gpus)
        # a certificate is for the target's hardware; other GPUs cannot certify it
        check("target-hardware", (t_spec, t_count) == (spec, count),
              f"target {options.target_name or ''} is for {t_count} x {t_spec.name}; "
              f"{count} x {spec.name} is other hardware".replace("target  is", "the target is"))
    wanted = [d for d in host.devices if options.gpu_uuids == () or d.uuid in options.gpu_uuids]
    if options.gpu_uuids:
        missing = sorted(set(options.gpu_uuids) - {d.uuid for d in host.devices})
        if missing:
            check("gpus-exist", False, f"GPU {', '.join(missing)} is not on this host "
                  f"(it has {', '.join(d.uuid for d in host.devices) or 'no GPUs'})")
    matching = [d for d in wanted if matrix.gpu_by_smi_name(d.name) == spec]
    chosen = tuple(matching[:count])
    seen = ", ".join(f"{d.index}: {d.name}" for d in host.devices) or "none"
    check("gpus-match-target", len(chosen) == count,
          f"target needs {count} x {spec.name}; found {len(matching)} (GPUs seen: {seen})")
    for d in chosen:
        off = abs(d.memory_total_mib - spec.memory_mib) / spec.memory_mib
        check("gpu-memory", off <= MEMORY_TOLERANCE,
              f"GPU {d.index} ({d.uuid}) has {d.memory_total_mib} MiB, the target's {spec.name} {spec.memory_mib} MiB")
        procs = ", ".join(f"pid {p.pid} {p.name} ({p.used_memory_mib} MiB)" for p in d.processes)
        check("gpu-clean", not d.processes and d.memory_used_mib <= options.max_used_mib,
              f"GPU {d.index} ({d.uuid}) is in use: {d.memory_used_mib} MiB used"
              + (f" by {procs}" if procs else "") + f" (at most {options.max_used_mib} MiB allowed)")
    return chosen


def _check_driver_and_kernels(
    found: _Checks, options: CertifyOptions, host: HostGpus, matrix: Matrix, labels: dict[str, str],
    chosen: tuple[GpuDevice, ...], kernel_targets: KernelTargets | None,
) -> None:
    """The driver is new enough for the image's CUDA; the chosen GPUs' compute capability is
    among the image's kernel targets (torch's arch list, else the label, else matrix.yaml)."""
    cuda = labels.get("io.imgbuild.cuda") or options.cuda
    cuda_spec = None
    if cuda and cuda != "none":
        try:
            cuda_spec = matrix.cuda_spec(cuda)
        except UsageError:
            found.notes.append(f"CUDA {cuda} is not in matrix.yaml: driver and kernel checks skipped")
    else:
        found.notes.append("the image names no CUDA version: driver and kernel checks skipped")
    if cuda_spec is None:
        return
    found.check("driver", _version_tuple(host.driver_version) >= _version_tuple(cuda_spec.min_driver),
                f"driver {host.driver_version} is older than {cuda_spec.min_driver}, the minimum for CUDA {cuda}")
    sm_label = labels.get("io.imgbuild.sm", "")
    labelled = tuple(s.strip() for s in sm_label.replace(";", ",").split(",") if s.strip())
    targets = kernel_targets or (
        KernelTargets(labelled, (), "label io.imgbuild.sm") if labelled
        else KernelTargets(cuda_spec.sm, (), f"matrix.yaml cuda {cuda} torch wheels"))
    for d in chosen:
        found.check("compute-capability", targets.runs_on(d.compute_capability),
                    f"GPU {d.index} has compute capability {d.compute_capability}; the image's kernels are "
                    f"built for {targets.describe()}")


def _expected_flags(flags: tuple[str, ...]) -> dict[str, Any]:
    values = flag_values(flags)
    out: dict[str, Any] = {}
    for flag, key in _CHECKED_FLAGS.items():
        if flag in values and values[flag] is not None:
            out[key] = values[flag]
    return out


def _flags_applied(expected: dict[str, Any], info: dict[str, Any]) -> list[str]:
    """Differences between the flags asked for and what the server reports."""
    wrong = []
    for key, want in expected.items():
        have = info.get(key)
        if key == "speculative_algorithm":
            # server_args.py turns NEXTN into EAGLE
            norm = {"NEXTN": "EAGLE"}
            ok = have is not None and norm.get(str(want).upper(), str(want).upper()) == norm.get(
                str(have).upper(), str(have).upper())
        elif key == "mem_fraction_static":
            ok = have is not None and abs(float(have) - float(want)) < 1e-6
        else:
            try:
                ok = have is not None and int(have) == int(want)
            except (TypeError, ValueError):
                ok = False
        if not ok:
            wrong.append(f"{key}: asked {want}, server has {have}")
    return wrong


def _follow_log(eng: engine.Engine, run: _Run) -> None:
    with open(run.log_path, "w", encoding="utf-8") as fh:
        try:
            for line in engine.follow_container_log(eng, run.container_id or ""):
                fh.write(line + "\n")
                fh.flush()
                with run.lock:
                    if run.weights_loaded_s is None and "Load weight end" in line:
                        run.weights_loaded_s = time.monotonic() - run.started
                    if run.watcher.feed(line) is not None:
                        run.fatal_line_at = time.monotonic()
                        run.fatal.set()
        finally:
            run.log_done.set()


def certify(
    options: CertifyOptions,
    *,
    eng: engine.Engine,
    probe: GpuProbe,
    matrix: Matrix,
    http: httpx.Client,
    store: CertStore,
    planner: Callable[[CertifyOptions], dict[str, Any]] | None = None,
    progress: Callable[[str], None] = lambda _line: None,
) -> dict[str, Any]:
    """Run one certification and store its certificate; returns the certificate.

    ``options`` is the one options record; the keyword arguments are the adapters it
    runs on (engine, GPU probe, HTTP client, certificate store) and the planner."""
    facts = engine.image_for_certify(eng, options.image)
    options = options_from_recipe(options, facts.labels)
    entrypoint = _server_entrypoint(eng, options)
    plan, pre = _plan_and_preflight(options, eng=eng, host=probe.read(), matrix=matrix, labels=facts.labels,
                                    planner=planner)
    uuids = tuple(d.uuid for d in pre.devices)
    cert_id = new_certificate_id()
    run = _Run(cert_id=cert_id, log_path=store.log_path(cert_id), checks=list(pre.checks))
    flags = server_flags(options)
    run.cert = _new_certificate(options, facts, pre, flags, run)
    spec = _server_spec(options, cert_id, entrypoint, flags, uuids)
    interrupted: BaseException | None = None
    with GpuLock(uuids, lock_dir=options.lock_dir, purpose=f"imgbuild certify {cert_id} {options.image}"):
        try:
            _serve_and_verify(options, eng, http, run, spec, progress)
        except KeyboardInterrupt as exc:
            interrupted = exc
            run.fail("interrupted", "interrupted (Ctrl-C or SIGTERM) before the certification finished")
        finally:
            teardown, late = _teardown_to_the_end(options, eng, probe, run, uuids, progress)
            _record_teardown(run, teardown)
            if late is not None and interrupted is None:
                interrupted = late
                run.fail("interrupted", "interrupted (Ctrl-C or SIGTERM) while the container was torn down; "
                         "the teardown was finished")
    _conclude(options, run, plan)
    store.save(run.cert)
    if interrupted is not None:
        raise interrupted
    return run.cert


def _server_entrypoint(eng: engine.Engine, options: CertifyOptions) -> tuple[str, ...]:
    image_entry = engine.image_entrypoint(eng, options.image)
    # imgbuild's images start `python -m sglang.launch_server`; keep an entrypoint like that
    if any(w.endswith("sglang.launch_server") for w in image_entry):
        return image_entry
    return (options.python, "-m", "sglang.launch_server")


def _plan_and_preflight(
    options: CertifyOptions, *, eng: engine.Engine, host: HostGpus, matrix: Matrix, labels: dict[str, str],
    planner: Callable[[CertifyOptions], dict[str, Any]] | None,
) -> tuple[dict[str, Any] | None, Preflight]:
    """The plan (None without a planner or when it cannot run) and the preflight, with the
    image's kernel targets read from its torch when the options ask for it."""
    plan: dict[str, Any] | None = None
    plan_note = "plan check skipped: no planner"
    if planner is not None:
        try:
            plan = planner(options)
        except UsageError as exc:
            plan_note = f"plan check could not run: {exc.one_line()}"
    kernel_targets, kernel_note = read_kernel_targets(eng, options.image) if options.read_kernel_targets else (None, "")
    pre = preflight(options, host=host, matrix=matrix, labels=labels, plan=plan, plan_note=plan_note,
                    kernel_targets=kernel_targets)
    if kernel_note:
        pre = replace(pre, notes=pre.notes + (kernel_note + "; used the label or matrix.yaml instead",))
    return plan, pre


def _server_spec(options: CertifyOptions, cert_id: str, entrypoint: tuple[str, ...], flags: tuple[str, ...],
                 uuids: tuple[str, ...]) -> engine.ServerContainerSpec:
    return engine.ServerContainerSpec(
        image=options.image,
        name=f"imgbuild-certify-{cert_id}",
        entrypoint=entrypoint,
        command=flags,
        container_port=options.container_port,
        host_port=options.host_port,
        labels={engine.CERTIFY_LABEL: cert_id, "io.imgbuild.certify.image": options.image},
        gpu_uuids=uuids if options.attach_gpus else (),
        mounts=_mounts(options),
        environment=dict(options.environment),
    )


def _serve_and_verify(options: CertifyOptions, eng: engine.Engine, http: httpx.Client, run: _Run,
                      spec: engine.ServerContainerSpec, progress: Callable[[str], None]) -> None:
    """Start the server container, follow its log, wait until it is ready, verify it."""
    progress(f"certify {run.cert_id}: starting {options.image} (log {run.log_path})")
    run.started = time.monotonic()
    run.container_id = engine.start_server_container(eng, spec)
    run.cert["container"]["id"] = run.container_id
    follower = threading.Thread(target=_follow_log, args=(eng, run), daemon=True)
    follower.start()
    client = exec_client(eng, run, options.container_port, options.python) if options.http_in_container else http
    server = ServerHttp(client, f"http://127.0.0.1:{options.host_port}")
    run.diagnosis = _wait_ready(options, eng, server, run, progress)
    if run.failure is None:
        run.cert["timings"]["ready_s"] = round(time.monotonic() - run.started, 3)
        run.checks.append({"name": "ready", "ok": True, "detail": "/health_generate answered 200"})
        progress(f"certify {run.cert_id}: ready after {run.cert['timings']['ready_s']} s; verifying")
        _verify(options, server, run)


def _record_teardown(run: _Run, teardown: dict[str, Any]) -> None:
    run.cert["teardown"] = teardown
    if not teardown["container_removed"]:
        run.fail("teardown", f"container {run.container_id} could not be removed")
    elif not teardown["gpu_memory_released"]:
        run.fail("teardown", "GPU memory was not released after the container was removed: "
                 + teardown["detail"])


def _conclude(options: CertifyOptions, run: _Run, plan: dict[str, Any] | None) -> None:
    """The certificate's figures, timings, checks, diagnosis and verdict, once the container is gone."""
    cert = run.cert
    with run.lock:
        lines = list(run.watcher.lines)
    if run.failure is not None and lines:
        # The whole log, now that the container is gone: the fast verdict came at the first
        # fatal line; the lines after it (the parent's sigquit line) complete the evidence.
        final = diagnose_log(lines)
        if final.failed:
            run.diagnosis = final
    figures = read_figures(lines)
    cert["figures"] = _figures(figures.to_dict(), (plan or {}).get("figures"))
    cert["plan"] = None if plan is None else {k: plan.get(k) for k in ("fits", "verdict", "sglang", "problems")}
    cert["timings"]["weights_loaded_s"] = None if run.weights_loaded_s is None else round(run.weights_loaded_s, 3)
    if run.fatal_line_at is not None and run.verdict_at is not None:
        # fail fast: when the fatal line arrived and when the wait ended, beside the deadline
        cert["timings"]["fatal_line_s"] = round(run.fatal_line_at - run.started, 3)
        cert["timings"]["verdict_s"] = round(run.verdict_at - run.started, 3)
        cert["timings"]["ready_deadline_s"] = options.ready_timeout_s
    cert["checks"] = run.checks
    cert["failure"] = run.failure
    cert["diagnosis"] = run.diagnosis.to_dict() if run.diagnosis is not None else None
    gaps = cert["attestation_gaps"]
    cert["verdict"] = VERDICT_FAIL if run.failure else (VERDICT_UNATTESTED if gaps else VERDICT_PASS)
    cert["attested"] = cert["verdict"] == VERDICT_PASS
    cert["finished_at"] = _now()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _mounts(options: CertifyOptions) -> tuple[tuple[str, str, bool], ...]:
    mounts = []
    if options.model_dir:
        mounts.append((str(Path(options.model_dir).resolve()), MODEL_MOUNT, True))
    if options.hf_cache:
        mounts.append((str(Path(options.hf_cache).resolve()), HF_CACHE_MOUNT, True))
    return tuple(mounts)


def _new_certificate(options: CertifyOptions, facts: Any, pre: Preflight, flags: tuple[str, ...], run: _Run) -> dict[str, Any]:
    gaps = []
    if not options.attach_gpus:
        gaps.append("no GPU was attached to the container (--no-gpus): it ran without the target's GPUs")
    if options.probe_source.startswith("snapshot"):
        gaps.append(f"the GPUs were read from {options.probe_source}, not from the NVIDIA driver")
    if not facts.repo_digests:
        gaps.append("the image has no repository digest (it was never pushed or pulled): "
                    "only its local id names it")
    return {
        "schema": 1,
        "id": run.cert_id,
        "created_at": _now(),
        "imgbuild_version": __version__,
        "verdict": None,
        "attested": False,
        "attestation_gaps": gaps,
        "image": {
            "ref": options.image,
            "id": facts.id,
            "repo_digests": list(facts.repo_digests),
            "recipe_digest": facts.labels.get("io.imgbuild.recipe-digest"),
            "labels": {k: v for k, v in facts.labels.items() if k.startswith("io.imgbuild.")},
        },
        "target": {
            "name": options.target_name,
            "gpus": options.gpus,
            "engine": options.engine_version,
            "model": options.model_ref or options.model_dir,
            "launch_flags": list(options.launch_flags),
        },
        "hardware": {
            "source": options.probe_source,
            "attached": options.attach_gpus,
            "driver_version": pre.host.driver_version,
            "cuda_driver_version": pre.host.cuda_driver_version,
            "gpus": [
                {"index": d.index, "uuid": d.uuid, "name": d.name, "memory_total_mib": d.memory_total_mib,
                 "memory_used_mib": d.memory_used_mib, "compute_capability": d.compute_capability}
                for d in pre.devices
            ],
        },
        "preflight_notes": list(pre.notes),
        "flags": list(flags),
        "container": {"id": None, "exit_code": None},
        "log_file": str(run.log_path),
        "timings": {"weights_loaded_s": None, "ready_s": None, "first_generation_s": None},
    }


def _wait_ready(options: CertifyOptions, eng: engine.Engine, server: ServerHttp, run: _Run,
                progress: Callable[[str], None]) -> Diagnosis | None:
    deadline = run.started + options.ready_timeout_s
    while True:
        if run.fatal.is_set():
            with run.lock:
                d = run.watcher.verdict
            assert d is not None
            run.verdict_at = time.monotonic()
            run.fail("launch", f"fatal log line: {d.failure_class}: {d.cause}")
            progress(f"certify {run.cert_id}: {d.failure_class} ({d.cause})")
            # The verdict stands; give SGLang a moment to finish its own exit so the log
            # keeps the lines after the fatal one (the parent's sigquit line), then stop it.
            run.log_done.wait(options.fatal_grace_s)
            return d
        status, code = engine.container_state(eng, run.container_id or "")
        if status in ("exited", "dead", "gone"):
            run.log_done.wait(5)  # the rest of the log, for the diagnosis
            with run.lock:
                d = run.watcher.diagnose()
                tail = " | ".join(run.watcher.lines[-3:])
            run.fail("launch", f"the container exited with code {code} before it was ready"
                     + (f": {d.failure_class}: {d.cause}" if d.failed else f"; last lines: {tail}"))
            return d if d.failed else None
        try:
            code_http, _ = server.get_json("/health_generate", 5.0)
            if code_http == 200:
                return None
        except ServerRequestFailed:
            pass  # not listening yet: SGLang binds its port after the model has loaded
        now = time.monotonic()
        if now >= deadline:
            with run.lock:
                d = run.watcher.diagnose()
                last = run.watcher.lines[-1] if run.watcher.lines else "(no log output)"
            run.fail("ready", f"not ready within {options.ready_timeout_s:g} s (deadline); last log line: {last}")
            return d if d.failed else None
        run.fatal.wait(min(0.25, max(0.0, deadline - now)))


def _verify(options: CertifyOptions, server: ServerHttp, run: _Run) -> None:
    """The flags applied, two greedy generations alike, and with speculation, accepted drafts."""
    if not _verify_server_info(options, server, run):
        return
    meta = _verify_generation(options, server, run)
    if meta is not None and run.cert["server_info"].get("speculative_algorithm"):
        _verify_speculation(server, run, meta)


def _verify_server_info(options: CertifyOptions, server: ServerHttp, run: _Run) -> bool:
    try:
        code, info = server.get_json("/server_info", 30.0)
        endpoint = "/server_info"
        if code == 404:
            code, info = server.get_json("/get_server_info", 30.0)
            endpoint = "/get_server_info"
    except ServerRequestFailed as exc:
        run.fail("verify", f"/server_info failed: {exc}")
        return False
    if code != 200 or not isinstance(info, dict):
        run.fail("verify", f"{endpoint} answered {code}")
        return False
    keys = ("tp_size", "speculative_algorithm", "speculative_num_steps", "context_length",
            "mem_fraction_static", "max_total_num_tokens", "version")
    run.cert["server_info"] = {"endpoint": endpoint, **{k: info.get(k) for k in keys}}
    wrong = _flags_applied(_expected_flags(options.launch_flags), info)
    if wrong:
        run.fail("verify", "flags not applied: " + "; ".join(wrong))
        return False
    run.checks.append({"name": "flags-applied", "ok": True, "detail": f"{endpoint} shows the flags asked for"})
    return True


def _verify_generation(options: CertifyOptions, server: ServerHttp, run: _Run) -> dict[str, Any] | None:
    """Two greedy /generate calls; the first one's meta_info when they agree, else None."""
    body = {"text": options.prompt, "sampling_params": {"max_new_tokens": options.max_new_tokens, "temperature": 0}}
    outputs = []
    for attempt in range(2):
        try:
            t0 = time.monotonic()
            status, content = server.post_json("/generate", body, 120.0)
            if attempt == 0:
                run.cert["timings"]["first_generation_s"] = round(time.monotonic() - t0, 3)
            data = json.loads(content)
        except (ServerRequestFailed, ValueError) as exc:
            run.fail("generate", f"/generate failed: {exc}")
            return None
        if status != 200 or not data.get("output_ids"):
            run.fail("generate", f"/generate answered {status} without tokens: {str(data)[:200]}")
            return None
        outputs.append(data)
    first, second = outputs
    meta = first.get("meta_info") or {}
    run.cert["generation"] = {
        "prompt": options.prompt,
        "output_ids": first["output_ids"],
        "text": first.get("text"),
        "completion_tokens": meta.get("completion_tokens"),
        "deterministic": first["output_ids"] == second["output_ids"],
    }
    if not run.cert["generation"]["deterministic"]:
        run.fail("generate", "two greedy /generate calls returned different tokens")
        return None
    run.checks.append({"name": "generate", "ok": True, "detail": f"{len(first['output_ids'])} tokens, deterministic"})
    return meta


def _verify_speculation(server: ServerHttp, run: _Run, meta: dict[str, Any]) -> None:
    generation = run.cert["generation"]
    accept = meta.get("spec_accept_length")
    if accept is None and meta.get("spec_verify_ct"):
        accept = (meta.get("completion_tokens") or 0) / meta["spec_verify_ct"]
    try:
        _, info2 = server.get_json(run.cert["server_info"]["endpoint"], 30.0)
        states = (info2 or {}).get("internal_states") or [{}]
        generation["avg_spec_accept_length"] = states[0].get("avg_spec_accept_length")
    except ServerRequestFailed:
        generation["avg_spec_accept_length"] = None
    generation["spec_accept_length"] = accept
    if accept is None or float(accept) <= 1.0:
        run.fail("speculation", f"speculative decoding accepted no draft tokens (acceptance length {accept})")
        return
    run.checks.append({"name": "speculation", "ok": True, "detail": f"acceptance length {accept:.2f}"})


def _teardown_to_the_end(
    options: CertifyOptions, eng: engine.Engine, probe: GpuProbe, run: _Run, uuids: tuple[str, ...],
    progress: Callable[[str], None],
) -> tuple[dict[str, Any], KeyboardInterrupt | None]:
    """The teardown, run to its end: an interrupt that lands in it (scancel's SIGTERM right after
    the checks passed, a second Ctrl-C) restarts it instead of leaving a stopped container behind
    (seen in CI: a stand-in left Exited, its certificate never stored). Returns the teardown and the
    interrupt, if one came; removal is by label, so running it again is safe."""
    late: KeyboardInterrupt | None = None
    for _ in range(TEARDOWN_RESTARTS):
        try:
            return _teardown(options, eng, probe, run, uuids, progress), late
        except KeyboardInterrupt as exc:
            late = exc
    return _teardown(options, eng, probe, run, uuids, progress), late


# How often an interrupted teardown starts again before a further interrupt is let through.
TEARDOWN_RESTARTS = 3


def _teardown(options: CertifyOptions, eng: engine.Engine, probe: GpuProbe, run: _Run, uuids: tuple[str, ...],
              progress: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {"container_removed": True, "gpu_memory_released": True, "detail": ""}
    if run.container_id:
        _, code = engine.container_state(eng, run.container_id)
        out["exit_code_before_stop"] = code
    out["container_removed"] = _remove_run_containers(options, eng, run)
    if run.container_id:
        run.log_done.wait(5)
    deadline = time.monotonic() + options.release_timeout_s
    while True:
        seen = {d.uuid: d for d in probe.read().devices}
        held = [f"{u} {seen[u].memory_used_mib} MiB" + (f" ({len(seen[u].processes)} processes)" if seen[u].processes else "")
                for u in uuids if u in seen and (seen[u].processes or seen[u].memory_used_mib > options.max_used_mib)]
        if not held or time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    out["gpu_memory_released"] = not held
    out["detail"] = "; ".join(held)
    out["gpu_memory_used_mib"] = {u: seen[u].memory_used_mib for u in uuids if u in seen}
    progress(f"certify {run.cert_id}: container removed={out['container_removed']}, "
             f"GPU memory released={out['gpu_memory_released']}")
    return out


# How long teardown keeps looking for the run's containers after removing them.
REMOVE_SETTLE_S = 10.0


def _remove_run_containers(options: CertifyOptions, eng: engine.Engine, run: _Run) -> bool:
    """Remove every container of this run, found by label as well as by id; True when none is left.

    An interrupt (Ctrl-C, scancel's SIGTERM) during the create or start request leaves dockerd
    finishing that request after the client gave up on it: a container left in state Created,
    or one that starts after it was listed (seen under load: a stand-in left Exited, never
    removed). So the label is listed again after each removal until it names nothing."""
    ids = set(engine.containers_labelled(eng, engine.CERTIFY_LABEL, run.cert_id))
    if run.started and not run.container_id and not ids:
        time.sleep(1.0)  # the create request may still be under way in dockerd
        ids = set(engine.containers_labelled(eng, engine.CERTIFY_LABEL, run.cert_id))
    if run.container_id:
        ids.add(run.container_id)
    deadline = time.monotonic() + REMOVE_SETTLE_S
    while ids:
        for cid in sorted(ids):
            engine.remove_container(eng, cid, stop_timeout_s=options.stop_timeout_s)
        ids = set(engine.containers_labelled(eng, engine.CERTIFY_LABEL, run.cert_id))
        if not ids or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    return not ids


def imgbuild_planner(matrix: Matrix) -> Callable[[CertifyOptions], dict[str, Any]] | None:
    """``imgbuild plan`` for the target's model, GPUs and flags, as certify's preflight wants it;
    None when the planner is not installed."""
    try:
        from imgbuild.flows.plan import PlanOptions, plan_launch
    except ImportError:
        return None
    def run(options: CertifyOptions) -> dict[str, Any]:
        model = options.model_dir or options.model_ref
        result = plan_launch(
            PlanOptions(model=model, flags=options.launch_flags, gpu=options.gpus,
                        sglang=options.engine_version, suggest=False),
            matrix=matrix,
        ).to_dict()
        per_gpu = result.get("per_gpu") or {}
        # the plan's names for the figures read_figures takes from the log
        figures = {
            "weights_gib": per_gpu.get("weights_gib"),
            "avail_after_load_gib": per_gpu.get("avail_after_load_gib"),
            "kv_tokens": per_gpu.get("kv_tokens"),
            "kv_gib": per_gpu.get("kv_gib"),
            "state_slots": per_gpu.get("mamba_slots"),
            "state_gib": per_gpu.get("mamba_state_gib"),
            "avail_after_pool_gib": per_gpu.get("memory_pool_end_avail_gib"),
            "max_running_requests": result.get("max_running_requests"),
            "context_len": result.get("context_length"),
        }
        return {"fits": result.get("fits"), "verdict": result.get("verdict"), "sglang": result.get("sglang"),
                "problems": result.get("problems") or [], "figures": figures}

    return run


def _figures(log: dict[str, Any], plan: dict[str, Any] | None) -> dict[str, Any]:
    """The log's figures beside the plan's, with the difference (log - plan) per key both have."""
    diff = {}
    if plan:
        for key, value in plan.items():
            if isinstance(value, (int, float)) and isinstance(log.get(key), (int, float)):
                diff[key] = round(log[key] - value, 4)
    return {"log": log, "plan": plan, "difference": diff}
