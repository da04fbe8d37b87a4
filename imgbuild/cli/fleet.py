"""fleet certify: one Slurm job per target, each running certify on a node with the GPUs Slurm granted.

``imgbuild fleet certify IMAGE --target A --target B`` submits the jobs (srun, typed gres,
--time from --timeout), streams their output, and stores one certificate per target.
``imgbuild fleet node-certify`` is what a job runs on the node (hidden: Slurm calls it).
Exit 0 when every target passes, 1 when one fails or Slurm refuses a request (no node has
its GPUs), 2 for bad input, 3 when slurmctld does not answer, 130 when interrupted (the jobs
are cancelled first).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from imgbuild.cli import options
from imgbuild.cli.app import cli, emit_json, load_matrix, progress
from imgbuild.cli.certify import env_pairs_of, sigterm_as_interrupt
from imgbuild.errors import UsageError

# What a job needs of the submitter's environment; the rest stays behind (srun --export).
_EXPORTED = ("PATH", "HOME", "LANG", "DOCKER_HOST", "DOCKER_CONFIG", "IMGBUILD_GPU_SNAPSHOT", "IMGBUILD_MATRIX",
             "XDG_DATA_HOME", "XDG_RUNTIME_DIR")


def _pairs(option: str, pairs: tuple[str, ...]) -> dict[str, str]:
    bad = [p for p in pairs if "=" not in p or p.startswith("=") or p.endswith("=")]
    if bad:
        raise UsageError(f"{option} {bad[0]!r}: expected GPU=VALUE, e.g. 'RTX A6000=a6000'")
    return dict(p.split("=", 1) for p in pairs)


def _words(option: str, text: str | None) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(text or ""))
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


@cli.group()
def fleet() -> None:
    """Certify across a GPU fleet with Slurm: one job per target."""


@fleet.command("certify")
@click.argument("image")
@options.fleet_targets
@options.slurm_partition
@options.gres_types
@options.node_constraints
@options.node_launcher
@options.node_imgbuild
@options.job_export
@options.model_dir
@options.model_ref
@options.no_gpus
@options.no_plan
@options.ready_timeout
@options.job_time
@options.container_env
@options.cert_store
@options.matrix_file
@options.json_output
def fleet_certify(image: str, target_names: tuple[str, ...], partition: str | None, gres_pairs: tuple[str, ...],
                  constraint_pairs: tuple[str, ...], launcher_text: str | None, node_imgbuild_text: str | None,
                  export_names: tuple[str, ...], model_dir: str | None, model_ref: str | None, no_gpus: bool,
                  no_plan: bool, timeout_s: float, job_time_min: int | None, env_pairs: tuple[str, ...],
                  store_dir: str | None, matrix_path: str | None, as_json: bool) -> None:
    """Certify IMAGE for each --target in its own Slurm job, on the GPUs the target names."""
    from imgbuild.adapters.certstore import CertStore
    from imgbuild.flows import fleet as flow
    from imgbuild.knowledge.render import find_target

    if not target_names:
        raise UsageError("fleet certify needs at least one --target NAME")
    matrix = load_matrix(matrix_path)
    targets = tuple(find_target(matrix.raw, name) for name in target_names)
    env_pairs_of(env_pairs)  # checked here, before anything is submitted
    node_args = [*(["--model-dir", os.path.abspath(model_dir)] if model_dir else []),
                 *(["--model-ref", model_ref] if model_ref else []), *(["--no-gpus"] if no_gpus else []),
                 *(["--no-plan"] if no_plan else []), *(a for p in env_pairs for a in ("--env", p)),
                 *(["--matrix", os.path.abspath(matrix_path)] if matrix_path else []),
                 *(["--targets", os.path.abspath(matrix.targets_file)] if matrix.targets_file else [])]
    exported = {k: os.environ[k] for k in (*_EXPORTED, *export_names) if k in os.environ}
    opts = flow.FleetOptions(
        image=image, image_digest=_image_digest(image), targets=targets,
        node_imgbuild=_words("--node-imgbuild", node_imgbuild_text) or (sys.executable, "-m", "imgbuild.cli"),
        launcher=_words("--launcher", launcher_text), node_args=tuple(node_args), partition=partition,
        gres_types=_pairs("--gres-type", gres_pairs), constraints=_pairs("--constraint", constraint_pairs),
        ready_timeout_s=timeout_s, time_limit_min=job_time_min, environment=exported)
    with sigterm_as_interrupt():
        certs = flow.certify_fleet(opts, matrix=matrix, store=CertStore(store_dir), progress=progress)
    if as_json:
        emit_json([{"target": c["target"]["name"], "verdict": c["verdict"], "certificate": c["id"],
                    "failure": c.get("failure"), "slurm": c.get("slurm")} for c in certs])
    else:
        for c in certs:
            s = c.get("slurm") or {}
            click.echo(f"{c['target']['name']:<24} job {s.get('job_id', '?'):<6} {s.get('node') or '-':<10} "
                       f"{s.get('gres'):<14} {s.get('state', '?'):<10} {c['verdict']:<15} {c['id']}"
                       + (f"  ({c['failure']['reason']})" if c.get("failure") else ""))
    if any(c["verdict"] == "fail" for c in certs):
        raise SystemExit(1)


def _image_digest(image: str) -> str:
    """The image's digest for the job names: from the reference, else the local engine, else the reference's hash."""
    if "@sha256:" in image:
        return image.split("@", 1)[1]
    try:
        from imgbuild.adapters import engine

        facts = engine.image_for_certify(engine.connect(timeout_s=10), image)
        digests = [d.split("@", 1)[1] for d in facts.repo_digests if "@" in d]
        return digests[0] if digests else facts.id
    except Exception:  # noqa: BLE001 - a submit host without the image or an engine still submits
        import hashlib

        return "ref:" + hashlib.sha256(image.encode()).hexdigest()


@fleet.command("node-certify", hidden=True)
@click.argument("image")
@options.target_name
@options.model_dir
@options.model_ref
@options.no_gpus
@options.no_plan
@options.node_port
@options.ready_timeout
@options.container_env
@options.cert_store
@options.matrix_file
def node_certify(image: str, target_name: str | None, model_dir: str | None, model_ref: str | None, no_gpus: bool,
                 no_plan: bool, host_port: int, timeout_s: float, env_pairs: tuple[str, ...], store_dir: str | None,
                 matrix_path: str | None) -> None:
    """What a Slurm job runs on its node: certify IMAGE on the GPUs gres granted; the
    certificate (with the job, node and GPUs) goes to stdout as one IMGBUILD-CERT line."""
    import httpx

    from imgbuild.adapters import engine, slurm
    from imgbuild.adapters.certstore import CertStore
    from imgbuild.flows import certify as flow
    from imgbuild.flows.fleet import CERT_MARKER
    from imgbuild.flows.targets import certify_host, certify_options
    from imgbuild.knowledge.render import find_target

    job = slurm.job_of_this_process()
    if job is None:
        raise UsageError("fleet node-certify runs inside a Slurm job (no SLURM_JOB_ID)",
                         hint="use imgbuild fleet certify, or imgbuild certify on this machine")
    matrix = load_matrix(matrix_path)
    target = find_target(matrix.raw, target_name) if target_name else None
    eng = engine.connect()
    host = certify_host(eng, image)
    indices = slurm.granted_gpu_indices(os.environ)
    seen = {d.index: d.uuid for d in host.probe.read().devices}
    missing = [i for i in indices or () if i not in seen]
    if missing:
        raise UsageError(f"Slurm granted GPU {missing} but the node's driver shows only {sorted(seen)}",
                         hint="gres.conf File= must follow the NVIDIA device numbering")
    uuids = tuple(seen[i] for i in indices or ())
    store = CertStore(store_dir)
    opts = certify_options(
        image=image, target=target, host=host, model_dir=model_dir, model_ref=model_ref, gpu_uuids=uuids,
        attach_gpus=not no_gpus, host_port=host_port or _free_port(), ready_timeout_s=timeout_s,
        environment=env_pairs_of(env_pairs))
    before = {c.id for c in store.list()}
    planner = None if no_plan else flow.imgbuild_planner(matrix)
    cert = None
    try:
        with sigterm_as_interrupt(), httpx.Client(trust_env=False) as http:
            cert = flow.certify(opts, eng=eng, probe=host.probe, matrix=matrix, http=http, store=store,
                                planner=planner, progress=progress)
    finally:
        if cert is None:  # interrupted (scancel's SIGTERM): the flow stored an interrupted certificate
            new = sorted({c.id for c in store.list()} - before)
            cert = store.load(new[-1]) if new else None
        if cert is not None:
            cert["slurm"] = {"job_id": job.get("SLURM_JOB_ID"), "node": job.get("SLURMD_NODENAME"),
                             "partition": job.get("SLURM_JOB_PARTITION"), "gpu_indices": list(indices or ()),
                             "gpu_uuids": list(uuids), "environment": job}
            store.save(cert)
            click.echo(CERT_MARKER + json.dumps(cert, default=str, separators=(",", ":")))
    if cert is not None and cert["verdict"] == flow.VERDICT_FAIL:
        raise SystemExit(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# make --on slurm's options (see cli/make.py), in the order they are stacked there
SITE_OPTIONS = (options.slurm_partition, options.gres_types, options.node_constraints, options.node_launcher,
                options.node_imgbuild, options.job_export, options.job_time)
_SITE_FLAGS = {"partition": "--partition", "gres_pairs": "--gres-type", "constraint_pairs": "--constraint",
               "launcher_text": "--launcher", "node_imgbuild_text": "--node-imgbuild", "export_names": "--export",
               "job_time_min": "--job-time"}


def site_options(command: Any) -> Any:
    """Stack make's Slurm options on ``command`` (the same as fleet certify's)."""
    for option in reversed(SITE_OPTIONS):
        command = option(command)
    return command


def make_certifier(site: dict[str, Any], *, run_on: str, state_root: Path, matrix: Any, matrix_path: str | None,
                   model_dirs: dict[str, str], attach_gpus: bool, store_dir: str | None) -> Any:
    """make's Slurm certifier for ``--on slurm`` (None for local), from the site options given."""
    from imgbuild.adapters.certstore import CertStore
    from imgbuild.flows import fleet as flow

    given = [flag for key, flag in _SITE_FLAGS.items() if site.get(key)]
    if run_on != "slurm":
        if given:
            raise UsageError(f"{given[0]} is for certifying on Slurm", hint="add --on slurm")
        return None
    exported = {k: os.environ[k] for k in (*_EXPORTED, *site["export_names"]) if k in os.environ}
    node_args = [*([] if attach_gpus else ["--no-gpus"]),
                 *(["--matrix", os.path.abspath(matrix_path)] if matrix_path else []),
                 *(["--targets", os.path.abspath(team)] if (team := getattr(matrix, "targets_file", None)) else [])]
    opts = flow.SlurmMakeOptions(
        node_imgbuild=_words("--node-imgbuild", site["node_imgbuild_text"]) or (sys.executable, "-m", "imgbuild.cli"),
        jobs_dir=state_root.absolute() / "slurm", launcher=_words("--launcher", site["launcher_text"]),
        node_args=tuple(node_args), model_dirs={m: os.path.abspath(d) for m, d in model_dirs.items()},
        partition=site["partition"], gres_types=_pairs("--gres-type", site["gres_pairs"]),
        constraints=_pairs("--constraint", site["constraint_pairs"]), time_limit_min=site["job_time_min"],
        environment=exported)
    return flow.SlurmCertifier(opts, matrix=matrix, store=CertStore(Path(store_dir) if store_dir else None),
                               progress=progress)


def uninterrupted(cancel: Callable[[], None]) -> Callable[[], None]:
    """``cancel`` with Ctrl-C and SIGTERM ignored while it runs: a second one must not cut the
    cancelling short and leave jobs running (it ends within the certifier's cancel_wait_s)."""
    def run() -> None:
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            cancel()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return run
