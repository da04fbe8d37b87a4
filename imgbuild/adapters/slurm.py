"""Slurm: the only code that runs srun, squeue, scontrol and scancel.

A job is one ``srun`` (it allocates, runs the command on the node, streams the command's
stdout and stderr back and returns its exit code, so no shared filesystem is needed).
Its failures become the ImgbuildError tree:

- a request no node can satisfy (``srun --test-only``: "Requested node configuration is
  not available") -> NegativeVerdict (exit 1), with Slurm's message and the gres asked for;
- an unknown partition or a malformed request -> UsageError (exit 2);
- no Slurm commands, or a slurmctld that does not answer ``scontrol ping`` -> EnvironmentUnavailable (exit 3).

Facts measured on Debian's slurm 22.05: the time limit is whole minutes (``--time=0:05``
becomes 1:00), and slurmctld checks limits every 30 s, so a job over time ends about
25-75 s late with state TIMEOUT; ``squeue --states=all`` still lists a job for MinJobAge
seconds after it ended (no slurmdbd needed, unlike sacct).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from imgbuild.errors import EnvironmentUnavailable, NegativeVerdict, UsageError

# States of a job that has ended (squeue %T); the others are PENDING, RUNNING, ...
ENDED_STATES = frozenset({"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "PREEMPTED", "NODE_FAIL",
                          "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"})
_COMMANDS_TIMEOUT_S = 20.0


@dataclass(frozen=True, kw_only=True)
class JobRequest:
    """One srun: what runs, on which GPUs (typed gres), for how long, with which environment."""

    name: str  # the job name; also how a job is found again (squeue --name)
    command: tuple[str, ...]
    gres: str  # "gpu:a6000:2"
    time_limit_s: float
    partition: str | None = None
    constraint: str | None = None  # a node feature (--constraint), where the site needs one
    environment: Mapping[str, str] = field(default_factory=dict)  # the only variables the job gets

    def time_limit(self) -> str:
        """--time in whole minutes (Slurm's granularity), at least one."""
        return str(max(1, math.ceil(self.time_limit_s / 60.0)))

    def srun_args(self) -> list[str]:
        args = ["srun", f"--job-name={self.name}", f"--gres={self.gres}", f"--time={self.time_limit()}",
                "--ntasks=1", "--nodes=1", "--quiet", "--kill-on-bad-exit=1"]
        if self.partition:
            args.append(f"--partition={self.partition}")
        if self.constraint:
            args.append(f"--constraint={self.constraint}")
        # --export of names only: the job gets these (and SLURM_*), nothing else of the submitter's
        args.append("--export=" + (",".join(sorted(self.environment)) or "NONE"))
        return args + list(self.command)


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, TIMEOUT, CANCELLED, ...
    node: str  # "" while pending
    reason: str


class Job:
    """A submitted srun: its output streams to ``on_stdout`` / ``on_stderr`` line by line."""

    def __init__(self, request: JobRequest, proc: subprocess.Popen[str],
                 on_stdout: Callable[[str], None], on_stderr: Callable[[str], None]) -> None:
        self.request = request
        self.proc = proc
        self.stderr_lines: list[str] = []
        self._readers = [threading.Thread(target=self._pump, args=(proc.stdout, on_stdout, None), daemon=True),
                         threading.Thread(target=self._pump, args=(proc.stderr, on_stderr, self.stderr_lines),
                                          daemon=True)]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _pump(stream: object, sink: Callable[[str], None], keep: list[str] | None) -> None:
        for line in stream:  # type: ignore[attr-defined]
            line = line.rstrip("\n")
            if keep is not None:
                keep.append(line)
            sink(line)

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout_s: float | None = None) -> int | None:
        """srun's exit code (the command's, or Slurm's 1 / 128+signal); None if still running."""
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None
        for reader in self._readers:
            reader.join(5)
        return code


def _run(args: list[str], *, timeout_s: float = _COMMANDS_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    if shutil.which(args[0]) is None:
        raise EnvironmentUnavailable(f"{args[0]} is not installed: no Slurm client on this machine",
                                     hint="install slurm-client, or run scripts/services start for a local Slurm")
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentUnavailable(f"{' '.join(args[:2])} did not answer within {timeout_s:g} s",
                                     hint="is slurmctld up? (scontrol ping)") from exc


def check_controller() -> str:
    """'Slurmctld(primary) at HOST is UP'; EnvironmentUnavailable when it does not answer."""
    proc = _run(["scontrol", "ping"])
    text = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0 or " is UP" not in text:
        raise EnvironmentUnavailable(f"slurmctld does not answer: {text or f'scontrol ping exit {proc.returncode}'}",
                                     hint="check SLURM_CONF and that slurmctld runs (scontrol ping)")
    return text.splitlines()[0]


def probe_request(request: JobRequest) -> str:
    """``srun --test-only``: Slurm's own answer to whether any node can ever run the request.

    NegativeVerdict (exit 1) when no node has the GPUs, UsageError (exit 2) for a bad
    partition or option; returns Slurm's estimate ("Job N to start at ...") otherwise."""
    args = [a for a in request.srun_args()[: -len(request.command)] if not a.startswith("--export")]
    proc = _run(args[:1] + ["--test-only"] + args[1:] + ["true"])
    text = " ".join(line.replace("srun: error: ", "").replace("srun: ", "").strip()
                    for line in (proc.stderr + proc.stdout).splitlines() if line.strip())
    if proc.returncode == 0:
        return text
    where = f"partition {request.partition}" if request.partition else "the default partition"
    if "node configuration is not available" in text or "Requested node" in text:
        raise NegativeVerdict(f"Slurm refused {request.name}: no node in {where} has --gres={request.gres}"
                              + (f" --constraint={request.constraint}" if request.constraint else "")
                              + f": {text}", hint="see sinfo -o '%N %G %f' for what the nodes offer")
    if "partition" in text.lower() or "invalid" in text.lower():
        raise UsageError(f"Slurm refused {request.name}: {text}", hint="see sinfo for the partitions")
    check_controller()
    raise NegativeVerdict(f"Slurm refused {request.name} (--gres={request.gres}): {text}")


def _job_env(request: JobRequest) -> dict[str, str]:
    """srun's environment: only what it needs to reach slurmctld, and what the job exports."""
    env = {k: v for k, v in os.environ.items() if k.startswith("SLURM_CONF") or k in ("PATH", "HOME", "USER")}
    env.update(request.environment)
    return env


def submit(request: JobRequest, *, on_stdout: Callable[[str], None], on_stderr: Callable[[str], None]) -> Job:
    """Start srun for ``request``; it waits in Slurm's queue until the GPUs are free."""
    env = _job_env(request)
    try:
        # A new session: a terminal's Ctrl-C reaches imgbuild, which cancels the jobs itself
        # (srun on a lone SIGINT only prints the job's state and keeps waiting).
        proc = subprocess.Popen(request.srun_args(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True, stdin=subprocess.DEVNULL, bufsize=1)
    except OSError as exc:
        raise EnvironmentUnavailable(f"cannot run srun: {exc}", hint="install slurm-client") from exc
    return Job(request, proc, on_stdout, on_stderr)


class DetachedJob:
    """An srun whose output goes to files (``<dir>/<name>.out``, ``.err``, its pid in ``.pid``),
    so a later process can wait on the job and read its certificate if this one dies."""

    def __init__(self, proc: subprocess.Popen[bytes], paths: JobFiles) -> None:
        self.proc = proc
        self.paths = paths

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout_s: float | None = None) -> int | None:
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None


@dataclass(frozen=True)
class JobFiles:
    """Where a detached srun of this job name writes: its stdout, stderr and pid."""

    directory: Path
    name: str

    @property
    def out(self) -> Path:
        return self.directory / f"{self.name}.out"

    @property
    def err(self) -> Path:
        return self.directory / f"{self.name}.err"

    @property
    def pid(self) -> Path:
        return self.directory / f"{self.name}.pid"

    def srun_alive(self) -> bool:
        """Is the srun that wrote ``.pid`` still running (the pid is checked against the job name)?"""
        try:
            pid = int(self.pid.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return False
        return f"--job-name={self.name}".encode() in cmdline

    def lines(self) -> tuple[list[str], list[str]]:
        """(stdout lines, stderr lines) written so far."""
        return tuple(p.read_text(encoding="utf-8", errors="replace").splitlines() if p.exists() else []
                     for p in (self.out, self.err))  # type: ignore[return-value]


def submit_detached(request: JobRequest, files: JobFiles) -> DetachedJob:
    """Start srun for ``request`` with its output in ``files`` (earlier files of the name are replaced).

    A new session, and files rather than pipes: the job outlives this process (a SIGKILL,
    a closed terminal) and its output stays readable; Ctrl-C and SIGTERM reach imgbuild,
    which cancels the job itself."""
    env = _job_env(request)
    files.directory.mkdir(parents=True, exist_ok=True)
    try:
        with open(files.out, "wb") as out, open(files.err, "wb") as err:
            proc = subprocess.Popen(request.srun_args(), stdout=out, stderr=err, env=env, start_new_session=True,
                                    stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise EnvironmentUnavailable(f"cannot run srun: {exc}", hint="install slurm-client") from exc
    try:
        files.pid.write_text(f"{proc.pid}\n")
    except OSError as exc:  # without its pid file a resumed make could not tell the srun is ours
        proc.kill()
        proc.wait()
        raise EnvironmentUnavailable(f"cannot write {files.pid}: {exc.strerror or exc}",
                                     hint="give make a state folder it can write to") from exc
    return DetachedJob(proc, files)


def jobs_by_name(names: list[str]) -> dict[str, list[JobInfo]]:
    """Every job of these names Slurm still knows, per name, oldest first (one squeue call)."""
    out: dict[str, list[JobInfo]] = {name: [] for name in names}
    if not names:
        return out
    proc = _run(["squeue", "--noheader", "--states=all", "--name=" + ",".join(names), "--format=%i|%T|%N|%r|%j"])
    if proc.returncode != 0:
        check_controller()
        raise EnvironmentUnavailable(f"squeue failed: {proc.stderr.strip()}")
    for line in proc.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 5 and parts[4] in out:
            node = "" if parts[2] in ("", "(null)") else parts[2]
            out[parts[4]].append(JobInfo(parts[0], parts[1].split()[0], node, parts[3]))
    for jobs in out.values():
        jobs.sort(key=lambda j: int(j.job_id) if j.job_id.isdigit() else 0)
    return out


def jobs_named(name: str) -> list[JobInfo]:
    """This name's jobs Slurm still knows (pending, running, or ended within MinJobAge), oldest first."""
    return jobs_by_name([name])[name]


def cancel(names: list[str]) -> None:
    """scancel every job of these names (pending or running): Slurm sends the job SIGTERM,
    then SIGKILL after KillWait, so the command on the node can clean up first."""
    for name in names:  # scancel takes one --name at a time
        _run(["scancel", "--quiet", f"--name={name}"])


# What the command on a node reads about its own job (srun sets these in the job's environment).
NODE_VARIABLES = ("SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURMD_NODENAME", "SLURM_JOB_PARTITION",
                  "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES")


def job_of_this_process(env: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The Slurm job this process runs in (its id, node, partition, granted GPUs), or None."""
    env = os.environ if env is None else env
    if not env.get("SLURM_JOB_ID"):
        return None
    return {k: env[k] for k in NODE_VARIABLES if env.get(k)}


def granted_gpu_indices(env: Mapping[str, str]) -> tuple[int, ...] | None:
    """The device indices gres granted: SLURM_STEP_GPUS (global ids, File= numbers), else
    CUDA_VISIBLE_DEVICES; None when the job got no GPUs through gres."""
    for key in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"):
        text = env.get(key, "").strip()
        if text and text != "NoDevFiles":
            try:
                return tuple(int(part) for part in text.split(","))
            except ValueError:
                raise UsageError(f"{key}={text!r} is not a list of GPU indices") from None
    return None
