"""make --on slurm against the real Slurm of scripts/services (one node, gpu:a6000:2 and
gpu:l4:1 on dummy devices) and the CI's Docker engine: make builds each target on the
stand-in SGLang image, then submits every certify at once as its own job; Slurm runs the
two GPU types in parallel and queues the second job on the same GPUs. An interrupted make
cancels its jobs; the next one submits only what is not certified, and waits on jobs a
killed make left running instead of submitting them again. Nothing is left behind: no job
in squeue, no certify container, no GPU lock held, no srun."""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from test_certify import docker_env, model_dir, standin_image  # noqa: F401 - fixtures
from test_make import write_matrix
from test_slurm import NODE_SNAPSHOT, slurm_up  # noqa: F401 - fixture

# six alone: the build's pip step downloads one 11 kB wheel; SGLang is the stand-in of the base
SIX_LOCK = """# imgbuild lock: the Slurm tests' targets (the stand-in SGLang comes from the base image)
# input: six==1.17.0
six==1.17.0 \\
    --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274 \\
    --hash=sha256:ff70335d468e7eb6ec65b95b99d3a2836546063f63acc5171de367e834932a81
"""


class Make:
    """`imgbuild make --all --on slurm` over three targets named for this test run (job names
    are per image and target, and Slurm keeps ended jobs for MinJobAge)."""

    def __init__(self, tmp_path: Path, docker: dict[str, str], base: str, model: Path) -> None:
        token = secrets.token_hex(2)
        self.names = {"a1": f"a6000-1-{token}", "a2": f"a6000-2-{token}", "l4": f"l4-{token}"}
        (tmp_path / "locks").mkdir()
        (tmp_path / "locks" / "slurm-six-x86_64.txt").write_text(SIX_LOCK)
        common = {"kind": "test", "engine": "0.5.9", "base": "debootstrap-bookworm", "python": "3.11",
                  "model": "test/standin", "packages": ["six==1.17.0"], "lock": "slurm-six-x86_64.txt"}
        self.matrix = write_matrix(tmp_path, [
            {"name": self.names["a1"], "gpus": "RTX A6000x2", "launch_flags": ["--tp", "2"], **common},
            {"name": self.names["a2"], "gpus": "RTX A6000x2", "launch_flags": ["--tp", "2"], **common},
            {"name": self.names["l4"], "gpus": "L4", "launch_flags": ["--tp", "1"], **common},
        ])
        self.tmp = tmp_path
        self.args = [sys.executable, "-m", "imgbuild.cli", "make", "--on", "slurm", "--matrix",
                     str(self.matrix), "--state", str(tmp_path / "state"), "--store", str(tmp_path / "certs"),
                     "--base", base, "--ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "--no-gpus",
                     "--model-dir", f"test/standin={model}"]
        home = tmp_path / "home"
        self.env = {**os.environ, "DOCKER_HOST": docker["DOCKER_HOST"], "IMGBUILD_GPU_SNAPSHOT": str(NODE_SNAPSHOT),
                    "HF_HUB_OFFLINE": "1", "XDG_RUNTIME_DIR": str(tmp_path), "XDG_DATA_HOME": str(home / "data"),
                    "XDG_CACHE_HOME": str(home / "cache"), "XDG_STATE_HOME": str(home / "state")}
        self.jobs_before = self.job_ids()

    def run(self, keys: str, *extra: str) -> subprocess.CompletedProcess[str]:
        """make the targets named by ``keys`` ("a1 l4"), or --all ("all")."""
        return subprocess.run([*self.args, *self.targets(keys), *extra], capture_output=True, text=True,
                              env=self.env, timeout=400)

    def start(self, keys: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*self.args, *self.targets(keys)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                text=True, env=self.env)

    def targets(self, keys: str) -> list[str]:
        return ["--all"] if keys == "all" else [self.names[k] for k in keys.split()]

    def job_name(self, key: str) -> str:
        [path] = (self.tmp / "state" / "slurm").glob(f"imgbuild-certify-*-{self.names[key]}.pid")
        return path.stem

    def job_ids(self) -> dict[str, list[tuple[str, str]]]:
        """Per target: (job id, state) of every job of its name Slurm knows."""
        out = subprocess.run(["squeue", "-h", "--states=all", "--format=%i|%T|%j"], capture_output=True, text=True,
                             check=True).stdout
        jobs: dict[str, list[tuple[str, str]]] = {k: [] for k in self.names}
        for line in out.splitlines():
            job_id, state, name = line.strip().split("|")
            for key, target in self.names.items():
                if name.startswith("imgbuild-certify-") and name.endswith(f"-{target}"):
                    jobs[key].append((job_id, state))
        return {k: sorted(v) for k, v in jobs.items()}

    def new_jobs(self) -> dict[str, list[tuple[str, str]]]:
        before = {k: {j for j, _ in v} for k, v in self.jobs_before.items()}
        return {k: [j for j in v if j[0] not in before[k]] for k, v in self.job_ids().items()}

    def certificates(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted((self.tmp / "certs").glob("*.json"))]

    def assert_nothing_left(self, eng: Any) -> None:
        from imgbuild.adapters import engine

        for key, jobs in self.new_jobs().items():
            assert all(state in ("COMPLETED", "CANCELLED") for _, state in jobs), (key, jobs)
        for cert in self.certificates():
            assert engine.containers_labelled(eng, engine.CERTIFY_LABEL, cert["id"]) == [], cert["id"]
        for lock in (self.tmp / "imgbuild" / "gpu-locks").glob("*.lock"):
            with open(lock) as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while a run still holds it
        sruns = [p for p in Path("/proc").glob("[0-9]*") if _cmdline(p).startswith("srun")
                 and any(n in _cmdline(p) for n in self.names.values())]
        assert sruns == []


def _cmdline(proc_dir: Path) -> str:
    try:
        return (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.fixture()
def maker(slurm_up, docker_env, standin_image, model_dir, tmp_path):  # noqa: F811
    env, eng = docker_env
    digests = eng.client.images.get(standin_image[0]).attrs["RepoDigests"]
    return Make(tmp_path, env, digests[0], model_dir), eng


def lines_until(proc: subprocess.Popen[str], needle: str, seen: list[str], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    for line in proc.stderr:  # type: ignore[union-attr]
        seen.append(line)
        if needle in line:
            return
        assert time.monotonic() < deadline, "".join(seen)
    raise AssertionError(f"make ended before {needle!r}:\n" + "".join(seen))


def index_of(lines: list[str], needle: str) -> int:
    return next(i for i, line in enumerate(lines) if needle in line)


@pytest.mark.docker
def test_make_on_slurm_runs_two_gpu_types_in_parallel_jobs_and_a_second_make_submits_nothing(maker):
    make, eng = maker
    first = make.run("a1 l4", "--json")
    assert first.returncode == 0, first.stderr[-4000:]
    rows = {t["target"]: t for t in json.loads(first.stdout)["targets"]}
    a1, l4 = (rows[make.names[k]]["steps"]["certify"]["result"] for k in ("a1", "l4"))
    assert a1["verdict"] == l4["verdict"] == "pass-unattested"
    assert (a1["slurm"]["gres"], l4["slurm"]["gres"]) == ("gpu:a6000:2", "gpu:l4:1")
    assert a1["slurm"]["node"] == l4["slurm"]["node"] and a1["slurm"]["state"] == l4["slurm"]["state"] == "COMPLETED"
    assert a1["slurm"]["gpu_indices"] == [0, 1] and l4["slurm"]["gpu_indices"] == [2]
    err = first.stderr.splitlines()
    # both submitted, then both seen running, before either ended: Slurm ran them at once
    first_end = index_of(err, " ended: ")
    for key, job in (("a1", a1), ("l4", l4)):
        assert index_of(err, f"[{make.names[key]}] submitted ") < first_end
        assert index_of(err, f"[{make.names[key]}] job {job['slurm']['job_id']} running on ") < first_end, first.stderr

    again = make.run("a1 l4")
    assert again.returncode == 0, again.stderr[-3000:]
    assert all(f"{make.names[k]}: certify: same inputs as before, skipped" in again.stderr for k in ("a1", "l4"))
    assert {k: len(v) for k, v in make.new_jobs().items()} == {"a1": 1, "a2": 0, "l4": 1}
    make.assert_nothing_left(eng)


@pytest.mark.docker
def test_make_on_slurm_sigterm_cancels_its_jobs_and_the_next_make_submits_only_the_uncertified(maker):
    make, eng = maker
    proc = make.start("a1 a2")
    seen: list[str] = []
    lines_until(proc, "pending (Resources)", seen)  # the second A6000 target waits for the first
    waiting = next(k for k, n in make.names.items() if f"[{n}] job " in seen[-1])
    lines_until(proc, f"[{make.names[waiting]}] job ", seen)  # it runs: the first has ended
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()  # type: ignore[union-attr]
    assert proc.wait(90) == 130, "".join(seen) + rest
    state = json.loads((make.tmp / "state" / f"{make.names[waiting]}.json").read_text())
    # The stand-in certifies in seconds: on a loaded machine the job can finish between the signal and
    # scancel, and then its certificate is kept (status done) and nothing is left to resubmit.
    finished_first = state["certify"]["status"] == "done"
    if not finished_first:
        assert "slurm: interrupted: cancelling 1 jobs (scancel)" in rest, "".join(seen) + rest
        assert state["certify"]["status"] == "failed" and "fail at interrupted" in state["certify"]["detail"]
        [interrupted] = [c for c in make.certificates() if c["verdict"] == "fail"]
        assert interrupted["failure"]["stage"] == "interrupted" and interrupted["slurm"]["state"] == "CANCELLED"

    resumed = make.run("a1 a2", "--json")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    jobs = make.new_jobs()
    for key in ("a1", "a2"):
        if key == waiting and not finished_first:  # cancelled once, submitted once more
            assert [s for _, s in jobs[key]] == ["CANCELLED", "COMPLETED"], jobs
        elif key == waiting:
            # its certificate was stored before scancel reached the job, which Slurm may then still record
            # as CANCELLED (seen in CI): either way one job, and the certificate is reused, not resubmitted
            assert [s for _, s in jobs[key]] in (["COMPLETED"], ["CANCELLED"]), jobs
            assert f"{make.names[key]}: certify: same inputs as before, skipped" in resumed.stderr
        else:
            assert [s for _, s in jobs[key]] == ["COMPLETED"], jobs
            assert f"{make.names[key]}: certify: same inputs as before, skipped" in resumed.stderr
    verdicts = {t["target"]: t["verdict"] for t in json.loads(resumed.stdout)["targets"]}
    assert set(verdicts.values()) == {"pass-unattested"}
    make.assert_nothing_left(eng)


@pytest.mark.docker
def test_make_on_slurm_after_a_kill_waits_on_the_jobs_left_running_instead_of_submitting_again(maker):
    """SIGKILL cancels nothing: the sruns (their own session, output to files) go on; the next
    make finds each job by name, pending or running, waits on it and reads its certificate."""
    make, eng = maker
    proc = make.start("all")
    seen: list[str] = []
    lines_until(proc, "pending (Resources)", seen)
    proc.kill()
    proc.wait(30)
    live = {k: [s for _, s in v] for k, v in make.new_jobs().items()}
    assert "PENDING" in [s for v in live.values() for s in v], live

    resumed = make.run("all", "--json")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert "from an earlier make: waiting on it, not submitting again" in resumed.stderr
    assert " submitted " not in resumed.stderr
    assert {k: [s for _, s in v] for k, v in make.new_jobs().items()} == {k: ["COMPLETED"] for k in make.names}
    verdicts = {t["target"]: t["verdict"] for t in json.loads(resumed.stdout)["targets"]}
    assert set(verdicts.values()) == {"pass-unattested"}
    make.assert_nothing_left(eng)


def test_make_site_options_without_on_slurm_are_a_usage_error():
    done = subprocess.run([sys.executable, "-m", "imgbuild.cli", "make", "--all", "--until", "render",
                           "--partition", "gpu"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith("--partition is for certifying on Slurm (add --on slurm)")
