"""fleet certify against the real Slurm of scripts/services (slurmctld + slurmd + munge on
127.0.0.1, one node with gpu:a6000:2 and gpu:l4:1 on dummy devices): one job per target,
the real certify of the stand-in image on the node's Docker engine with --no-gpus."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from imgbuild.flows.fleet import gres_of
from imgbuild.knowledge.matrix import load_matrix
from test_certify import docker_env, model_dir, standin_image  # noqa: F401 - fixtures
from test_make import write_matrix

TESTS = Path(__file__).resolve().parent
NODE_SNAPSHOT = TESTS / "data" / "gpus" / "node-a6000x2-l4x1.json"


@pytest.fixture(scope="module")
def slurm_up():
    ok = shutil.which("scontrol") and subprocess.run(["scontrol", "ping"], capture_output=True, text=True).returncode == 0
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail("CI without Slurm: scripts/services start brings it up")
        pytest.skip("no Slurm (sudo scripts/services start)")


GRES = [
    ("alias-a6000", "RTX A6000x2", {}, "gpu:a6000:2"),
    ("alias-l4", "L4", {}, "gpu:l4:1"),
    ("site-table", "RTX A6000x2", {"RTX A6000": "rtxa6000"}, "gpu:rtxa6000:2"),
]


@pytest.mark.parametrize("gpus, table, gres", [g[1:] for g in GRES], ids=[g[0] for g in GRES])
def test_gres_of_maps_target_gpus_to_typed_gres(gpus, table, gres):
    assert gres_of(load_matrix(), gpus, table)[0] == gres


def fleet_matrix(tmp_path: Path) -> Path:
    common = {"kind": "test", "engine": "0.5.9", "base": "debootstrap-bookworm", "python": "3.11", "model": "m",
              "packages": ["six==1.17.0"]}
    return write_matrix(tmp_path, [
        {"name": "standin-a6000x2", "gpus": "RTX A6000x2", "launch_flags": ["--tp", "2"], **common},
        {"name": "standin-l4", "gpus": "L4", "launch_flags": ["--tp", "1"], **common},
        {"name": "standin-h100", "gpus": "H100 SXM", "launch_flags": ["--tp", "1"], **common},
    ])


def fleet(args: list[str], env: dict[str, str], tmp_path: Path, **kw) -> subprocess.CompletedProcess[str]:
    run_env = {**os.environ, "DOCKER_HOST": env["DOCKER_HOST"], "IMGBUILD_GPU_SNAPSHOT": str(NODE_SNAPSHOT),
               "XDG_RUNTIME_DIR": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "node-data")}
    return subprocess.run([sys.executable, "-m", "imgbuild.cli", "fleet", "certify", *args,
                           "--matrix", str(fleet_matrix(tmp_path)), "--store", str(tmp_path / "certs")],
                          capture_output=True, text=True, env=run_env, timeout=240, check=False, **kw)


@pytest.mark.docker
def test_fleet_certifies_two_gpu_types_in_parallel_jobs(slurm_up, docker_env, standin_image, model_dir, tmp_path):
    env, _ = docker_env
    proc = fleet([standin_image[0], "--target", "standin-a6000x2", "--target", "standin-l4", "--model-dir",
                  str(model_dir), "--no-gpus", "--no-plan", "--timeout", "60", "--env", "STANDIN_STEP_S=0.05",
                  "--json"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["target"]: r for r in json.loads(proc.stdout)}
    assert rows["standin-a6000x2"]["verdict"] == rows["standin-l4"]["verdict"] == "pass-unattested"
    a, l4 = rows["standin-a6000x2"]["slurm"], rows["standin-l4"]["slurm"]
    assert (a["gres"], l4["gres"]) == ("gpu:a6000:2", "gpu:l4:1")
    assert a["gpu_indices"] == [0, 1] and l4["gpu_indices"] == [2]
    assert l4["gpu_uuids"] == ["GPU-l4-0000-standin"] and a["job_id"] != l4["job_id"]
    assert a["node"] and a["state"] == "COMPLETED"
    stored = json.loads((tmp_path / "certs" / f"{rows['standin-l4']['certificate']}.json").read_text())
    assert stored["slurm"]["job_id"] == l4["job_id"] and stored["hardware"]["gpus"][0]["name"] == "NVIDIA L4"
    assert subprocess.run(["squeue", "-h", "-n", a["job_name"]], capture_output=True, text=True).stdout.strip() == ""


@pytest.mark.docker
def test_fleet_refuses_gpus_no_node_has_at_once_with_slurms_message(slurm_up, docker_env, standin_image, tmp_path):
    env, _ = docker_env
    proc = fleet([standin_image[0], "--target", "standin-l4", "--target", "standin-h100", "--no-gpus"], env, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "--gres=gpu:h100-sxm" in proc.stderr or "gres=gpu:h100" in proc.stderr, proc.stderr
    assert "Requested node configuration is not available" in proc.stderr
    assert not (tmp_path / "certs").exists() or not list((tmp_path / "certs").glob("*.json"))


@pytest.mark.docker
def test_fleet_sigterm_cancels_its_jobs_and_leaves_no_container(slurm_up, docker_env, standin_image, model_dir,
                                                                 tmp_path):
    import signal
    import time

    from imgbuild.adapters import engine

    env, eng = docker_env
    run_env = {**os.environ, "DOCKER_HOST": env["DOCKER_HOST"], "IMGBUILD_GPU_SNAPSHOT": str(NODE_SNAPSHOT),
               "XDG_RUNTIME_DIR": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "node-data")}
    proc = subprocess.Popen([sys.executable, "-m", "imgbuild.cli", "fleet", "certify", standin_image[0],
                             "--target", "standin-l4", "--model-dir", str(model_dir), "--no-gpus", "--no-plan",
                             "--env", "STANDIN_FAIL=hang", "--matrix", str(fleet_matrix(tmp_path)),
                             "--store", str(tmp_path / "certs")], stderr=subprocess.PIPE, text=True, env=run_env)
    seen = []
    for line in proc.stderr:  # type: ignore[union-attr]
        seen.append(line)
        if "starting " in line and "[standin-l4]" in line:
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()  # type: ignore[union-attr]
    assert proc.wait(90) == 130, "".join(seen) + rest
    assert "cancelling 1 jobs (scancel)" in rest
    certs = [json.loads(p.read_text()) for p in (tmp_path / "certs").glob("*.json")]
    assert [c["failure"]["stage"] for c in certs] == ["interrupted"]
    name = certs[0]["slurm"]["job_name"]
    assert subprocess.run(["squeue", "-h", "-n", name], capture_output=True, text=True).stdout.strip() == ""
    assert engine.containers_labelled(eng, engine.CERTIFY_LABEL, certs[0]["id"]) == []
    assert certs[0]["teardown"]["container_removed"], "the node's certify removed its container"


@pytest.mark.docker
def test_fleet_job_over_its_time_limit_fails_with_slurm_state_timeout(slurm_up, docker_env, standin_image, model_dir,
                                                                      tmp_path):
    """--job-time 1: Slurm ends the job 60-90 s in (whole minutes, limits checked every 30 s);
    the node's certify gets SIGTERM, removes its container, and the verdict names TIMEOUT."""
    from imgbuild.adapters import engine

    env, eng = docker_env
    proc = fleet([standin_image[0], "--target", "standin-l4", "--model-dir", str(model_dir), "--no-gpus", "--no-plan",
                  "--env", "STANDIN_FAIL=hang", "--timeout", "600", "--job-time", "1", "--json"], env, tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    [row] = json.loads(proc.stdout)
    assert row["verdict"] == "fail" and row["slurm"]["state"] == "TIMEOUT", row
    assert row["failure"]["stage"] == "timeout" and "time limit (1 min)" in row["failure"]["reason"]
    cert = json.loads((tmp_path / "certs" / f"{row['certificate']}.json").read_text())
    assert engine.containers_labelled(eng, engine.CERTIFY_LABEL, cert["id"]) == []
    assert subprocess.run(["squeue", "-h", "-n", row["slurm"]["job_name"]], capture_output=True,
                          text=True).stdout.strip() == ""


@pytest.mark.docker
def test_fleet_failing_launch_comes_back_as_the_nodes_failed_certificate(slurm_up, docker_env, standin_image,
                                                                         model_dir, tmp_path):
    proc = fleet([standin_image[0], "--target", "standin-l4", "--model-dir", str(model_dir), "--no-gpus", "--no-plan",
                  "--env", "STANDIN_FAIL=early-exit", "--timeout", "60", "--json"], docker_env[0], tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    [row] = json.loads(proc.stdout)
    assert row["verdict"] == "fail" and row["failure"]["stage"] == "launch", row
    assert row["slurm"]["state"] == "FAILED" and row["slurm"]["srun_exit_code"] == 1
    cert = json.loads((tmp_path / "certs" / f"{row['certificate']}.json").read_text())
    assert cert["slurm"]["gpu_indices"] == [2] and cert["slurm"]["node"], cert["slurm"]
    assert "the container exited with code 3 before it was ready; last lines: " in cert["failure"]["reason"]


def node_state(node: str) -> str:
    return subprocess.run(["sinfo", "-h", "-n", node, "-o", "%T"], capture_output=True, text=True).stdout.strip()


@pytest.mark.docker
def test_fleet_node_set_down_under_a_running_job_fails_it_with_node_fail(slurm_up, docker_env, standin_image,
                                                                        model_dir, tmp_path):
    """scontrol sets the node DOWN while the job runs: Slurm kills the job (NODE_FAIL) and the
    node's certify removes its container. ReturnToService=2 brings the node back at once
    (slurmd answers); the test makes sure it is idle again for the tests after it."""
    import time

    from imgbuild.adapters import engine

    env, eng = docker_env
    run_env = {**os.environ, "DOCKER_HOST": env["DOCKER_HOST"], "IMGBUILD_GPU_SNAPSHOT": str(NODE_SNAPSHOT),
               "XDG_RUNTIME_DIR": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "node-data")}
    containers_before = set(engine.containers_labelled(eng, engine.CERTIFY_LABEL))
    proc = subprocess.Popen([sys.executable, "-m", "imgbuild.cli", "fleet", "certify", standin_image[0],
                             "--target", "standin-l4", "--model-dir", str(model_dir), "--no-gpus", "--no-plan",
                             "--env", "STANDIN_FAIL=hang", "--timeout", "120", "--matrix", str(fleet_matrix(tmp_path)),
                             "--store", str(tmp_path / "certs"), "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=run_env)
    seen = []
    node = ""
    for line in proc.stderr:  # type: ignore[union-attr]
        seen.append(line)
        if "running on " in line and "[standin-l4] job " in line:
            node = line.rsplit("running on ", 1)[1].strip()
        if node and any("starting " in s for s in seen):  # the node's certify has begun
            break
    assert node, "".join(seen)
    # Down only once the node's certify has its container: on a loaded 2-core machine its preflight
    # took a minute after "starting", and a job killed before that leaves nothing to clean up.
    deadline = time.monotonic() + 240
    def launched() -> set[str]:  # the launch's container, not the GPU probe's
        return (set(engine.containers_labelled(eng, engine.CERTIFY_LABEL)) - containers_before
                - set(engine.containers_labelled(eng, engine.CERTIFY_LABEL, "gpu-probe")))

    while not launched():
        if time.monotonic() > deadline:
            subprocess.run(["scancel", "--name", "imgbuild-certify", "--full"], capture_output=True)
            proc.kill()
            pytest.fail("the node's certify started no container in 240 s")
        time.sleep(0.3)
    try:
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=down", "reason=imgbuild-test-node-fail"],
                       check=True, capture_output=True, text=True)
        out, rest = proc.communicate(timeout=90)
    finally:
        deadline = time.monotonic() + 30
        while node and node_state(node) not in ("idle", "mixed") and time.monotonic() < deadline:
            if node_state(node).startswith("down"):
                subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], capture_output=True)
            time.sleep(0.5)
    assert proc.returncode == 1, "".join(seen) + rest
    [row] = json.loads(out)
    assert row["slurm"]["state"] == "NODE_FAIL" and row["failure"]["stage"] == "node_fail", row
    assert "Node failure on" in rest
    assert node_state(node) in ("idle", "mixed")
    deadline = time.monotonic() + 60  # the step's SIGTERM reaches the node's certify, which records its certificate
    while not (node_certs := [p.stem for p in (tmp_path / "node-data" / "imgbuild" / "certs").glob("*.json")]):
        assert time.monotonic() < deadline, "the node's certify recorded no certificate"
        time.sleep(0.5)
    deadline = time.monotonic() + 30  # the step's SIGTERM reaches the node's certify, which removes its container
    while any(engine.containers_labelled(eng, engine.CERTIFY_LABEL, c) for c in node_certs):
        assert time.monotonic() < deadline, "a certify container outlived the failed node's job"
        time.sleep(0.5)
