"""certify: preflight checks (no engine needed), then real containers on the test base image
running the stand-in SGLang server (tests/standin), GPUs through snapshots (tests/data/gpus).

The Docker tests need the engine, registry and base image of scripts/services; they skip
where none runs, and never in CI (CI=true makes a missing engine a failure).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from imgbuild.flows.certify import CertifyOptions, certify, flag_values, preflight, server_flags
from imgbuild.adapters.certstore import CertStore
from imgbuild.errors import NegativeVerdict, UsageError
from imgbuild.adapters.gpulock import GpuLock
from imgbuild.adapters.gpus import SnapshotProbe
from imgbuild.knowledge.matrix import load_matrix
from conftest import run_on_unused_port, unused_tcp_port

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
GPUS = TESTS / "data" / "gpus"
SERVICES_ENV = Path("/run/imgbuild-services.env")
SEED_FLAGS = ("--tp", "2", "--mem-fraction-static", "0.85", "--context-length", "32768",
              "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
              "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4", "--disable-radix-cache")


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def options(**kw) -> CertifyOptions:
    base = dict(image="standin", gpus="RTX A6000x2", launch_flags=SEED_FLAGS, model_dir=str(TESTS),
                cuda="13.0", host_port=unused_tcp_port(), probe_source="snapshot:test", attach_gpus=False)
    base.update(kw)
    return CertifyOptions(**base)


# ------------------------------------------------------------------ preflight (no engine)

PREFLIGHT_FAILURES = [
    ("leftover-process", "a6000x2-leftover.json", {}, "pid 41872 python3 (40960 MiB)"),
    ("old-driver", "a6000x2-old-driver.json", {}, "driver 535.161.08 is older than 580.65.06"),
    ("other-hardware", "l4x1-clean.json", {}, "target needs 2 x RTX A6000; found 0"),
    ("too-few-gpus", "a6000x2-clean.json", {"gpus": "RTX A6000x4"}, "target needs 4 x RTX A6000; found 2"),
    ("unknown-uuid", "a6000x2-clean.json", {"gpu_uuids": ("GPU-not-here",)}, "GPU GPU-not-here is not on this host"),
    ("kernels-not-built-for-sm", "a6000x2-clean.json", {"cuda": "13.0"}, "built for 9.0 (label io.imgbuild.sm)"),
]


@pytest.mark.parametrize("snapshot, overrides, message", [c[1:] for c in PREFLIGHT_FAILURES],
                         ids=[c[0] for c in PREFLIGHT_FAILURES])
def test_preflight_refuses_with_a_clear_reason(matrix, snapshot, overrides, message):
    labels = {"io.imgbuild.sm": "9.0"} if "cuda" in overrides else {}
    host = SnapshotProbe(GPUS / snapshot).read()
    with pytest.raises(NegativeVerdict) as err:
        preflight(options(**overrides), host=host, matrix=matrix, labels=labels)
    assert message in err.value.message
    assert err.value.exit_code == 1


def test_preflight_refuses_a_port_in_use(matrix):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(NegativeVerdict, match=f"port {port} on 127.0.0.1 is in use"):
            preflight(options(host_port=port), host=SnapshotProbe(GPUS / "a6000x2-clean.json").read(),
                      matrix=matrix, labels={})


def test_preflight_refuses_a_plan_that_does_not_fit(matrix):
    plan = {"fits": False, "verdict": "does-not-fit", "problems": ["Not enough memory for the KV cache"]}
    with pytest.raises(NegativeVerdict, match="the plan does not fit.*Not enough memory"):
        preflight(options(), host=SnapshotProbe(GPUS / "a6000x2-clean.json").read(), matrix=matrix,
                  labels={}, plan=plan)


def test_preflight_chooses_the_target_gpus_and_notes_a_skipped_plan(matrix):
    pre = preflight(options(), host=SnapshotProbe(GPUS / "a6000x2-clean.json").read(), matrix=matrix, labels={})
    assert [d.index for d in pre.devices] == [0, 1]
    assert all(c["ok"] for c in pre.checks)
    assert any("plan check skipped" in n for n in pre.notes)


def test_server_flags_keep_the_targets_flags_and_own_model_host_port():
    flags = server_flags(options(launch_flags=("--port", "8000", "--tp", "2", "--host=0.0.0.0"), host_port=1))
    assert flags == ("--model-path", "/model", "--tp", "2", "--host", "0.0.0.0", "--port", "30000")
    assert flag_values(SEED_FLAGS)["--speculative-algorithm"] == "NEXTN"


def test_gpu_lock_keeps_a_second_run_off_the_same_gpu(tmp_path):
    with GpuLock(["GPU-a"], lock_dir=tmp_path, purpose="first"):
        with pytest.raises(NegativeVerdict, match="GPU GPU-a is locked by pid"):
            GpuLock(["GPU-b", "GPU-a"], lock_dir=tmp_path).acquire()
        GpuLock(["GPU-b"], lock_dir=tmp_path).acquire()  # other GPUs stay free
    with GpuLock(["GPU-a"], lock_dir=tmp_path):
        pass  # released with the first holder


# ------------------------------------------------------------------ real containers


def services() -> dict[str, str]:
    env = {k: os.environ[k] for k in ("DOCKER_HOST", "IMGBUILD_REGISTRY", "IMGBUILD_TEST_BASE") if k in os.environ}
    if SERVICES_ENV.exists():
        for line in SERVICES_ENV.read_text().splitlines():
            key, _, value = line.partition("=")
            env.setdefault(key.strip(), value.strip())
    return env


@pytest.fixture(scope="module")
def docker_env():
    env = services()
    if "IMGBUILD_TEST_BASE" not in env:
        if os.environ.get("CI") == "true":
            pytest.fail("CI without scripts/services: no IMGBUILD_TEST_BASE")
        pytest.skip("no Docker services (sudo scripts/services start)")
    from imgbuild.adapters import engine

    # certify() in this process reads DOCKER_HOST from os.environ: set for this module, restored after.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCKER_HOST", env["DOCKER_HOST"])
        try:
            eng = engine.connect(timeout_s=30)
        except Exception as exc:  # EnvironmentUnavailable
            if os.environ.get("CI") == "true":
                raise
            pytest.skip(f"no Docker engine: {exc}")
        yield env, eng


def standin_context(base: str) -> tuple[bytes, str]:
    """The stand-in image's build context (a tar) and a recipe digest over its inputs."""
    files = {p.relative_to(TESTS / "standin").as_posix(): p.read_bytes()
             for p in sorted((TESTS / "standin" / "sglang").rglob("*.py"))}
    digest = hashlib.sha256(base.encode() + b"".join(k.encode() + v for k, v in files.items())).hexdigest()
    dockerfile = (
        f"FROM {base}\n"
        "COPY sglang /opt/standin/sglang\n"
        "ENV PYTHONPATH=/opt/standin PYTHONUNBUFFERED=1\n"
        f'LABEL io.imgbuild.recipe-digest="sha256:{digest}" io.imgbuild.cuda="13.0" '
        'io.imgbuild.target="standin-sglang" io.imgbuild.sm="7.5,8.0,8.6,9.0,10.0,12.0"\n'
    )
    files["Dockerfile"] = dockerfile.encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue(), digest


@pytest.fixture(scope="module")
def standin_image(docker_env):
    """The test base image + tests/standin, pushed to the local registry (so it has a repo digest)."""
    env, eng = docker_env
    context, digest = standin_context(env["IMGBUILD_TEST_BASE"])
    repo = f"{env['IMGBUILD_REGISTRY']}/imgbuild-standin-sglang"
    tag = digest[:12]
    image, _ = eng.client.images.build(fileobj=io.BytesIO(context), custom_context=True, tag=f"{repo}:{tag}", rm=True)
    eng.client.images.push(repo, tag=tag)
    return f"{repo}:{tag}", digest


@pytest.fixture()
def model_dir(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
        "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 32000, "max_position_embeddings": 32768}))
    return d


def leftover_containers(eng, cert_id: str) -> list[str]:
    """This run's containers only: other test runs may share the engine."""
    from imgbuild.adapters import engine

    return engine.containers_labelled(eng, engine.CERTIFY_LABEL, cert_id)


def run_certify(eng, image, model_dir, tmp_path, *, env=None, flags=SEED_FLAGS, timeout_s=60.0, snapshot="a6000x2-clean.json"):
    import httpx

    store = CertStore(tmp_path / "certs")
    opts = options(image=image, model_dir=str(model_dir), launch_flags=flags, ready_timeout_s=timeout_s,
                   environment={"STANDIN_STEP_S": "0.05", **(env or {})}, lock_dir=tmp_path / "locks",
                   probe_source=f"snapshot:{GPUS / snapshot}", cuda=None)
    with httpx.Client(trust_env=False) as http:
        cert = certify(opts, eng=eng, probe=SnapshotProbe(GPUS / snapshot), matrix=load_matrix(), http=http,
                       store=store)
    return cert, store


@pytest.mark.docker
def test_certify_passes_on_the_standin_and_says_it_is_unattested(docker_env, standin_image, model_dir, tmp_path):
    _, eng = docker_env
    image, digest = standin_image
    cert, store = run_certify(eng, image, model_dir, tmp_path)
    assert cert["verdict"] == "pass-unattested", cert["failure"]
    assert not cert["attested"]
    gaps = " ".join(cert["attestation_gaps"])
    assert "no GPU was attached" in gaps and "snapshot" in gaps
    assert cert["image"]["recipe_digest"] == f"sha256:{digest}"
    assert any("@sha256:" in d for d in cert["image"]["repo_digests"])
    hw = cert["hardware"]
    assert [g["uuid"] for g in hw["gpus"]] == ["GPU-a6000-0000-4c1e-9d1b-standin0", "GPU-a6000-0001-4c1e-9d1b-standin1"]
    assert (hw["driver_version"], hw["cuda_driver_version"], hw["attached"]) == ("580.126.09", "13.0", False)
    assert cert["flags"][:2] == ["--model-path", "/model"] and "--speculative-num-steps" in cert["flags"]
    assert cert["server_info"]["tp_size"] == 2 and cert["server_info"]["speculative_algorithm"] == "EAGLE"
    gen = cert["generation"]
    assert gen["deterministic"] and len(gen["output_ids"]) == 16
    assert gen["spec_accept_length"] > 1
    assert cert["figures"]["log"]["kv_tokens"] > 0 and cert["figures"]["log"]["weights_gib"] is not None
    assert all(cert["timings"][k] is not None for k in ("weights_loaded_s", "ready_s", "first_generation_s"))
    assert cert["teardown"]["container_removed"] and cert["teardown"]["gpu_memory_released"]
    assert leftover_containers(eng, cert["id"]) == []
    assert store.load(cert["id"])["verdict"] == "pass-unattested"
    assert "The server is fired up and ready to roll!" in Path(cert["log_file"]).read_text()
    # the stand-in image has no torch: the kernel targets come from its label, and the certificate says so
    assert any("the image's torch cannot be read (ModuleNotFoundError" in n for n in cert["preflight_notes"])


FAILURES = [
    ("not-enough-memory", {"STANDIN_FAIL": "not-enough-memory"}, "launch", "not-enough-memory", None),
    ("child-traceback-then-sigquit", {"STANDIN_FAIL": "child-traceback"}, "launch", "cuda-oom", "cuda-graph-capture"),
    ("early-exit", {"STANDIN_FAIL": "early-exit"}, "launch", None, None),
    ("hang-until-the-deadline", {"STANDIN_FAIL": "hang"}, "ready", None, None),
    ("flags-not-applied", {"STANDIN_FAIL": "ignore-flags"}, "verify", None, None),
]


@pytest.mark.docker
@pytest.mark.parametrize("env, stage, klass, phase", [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES])
def test_certify_failure_is_classified_and_leaves_no_container(docker_env, standin_image, model_dir, tmp_path,
                                                               env, stage, klass, phase):
    _, eng = docker_env
    timeout_s = 4.0 if env["STANDIN_FAIL"] == "hang" else 60.0
    cert, _ = run_certify(eng, standin_image[0], model_dir, tmp_path, env=env, timeout_s=timeout_s)
    assert cert["verdict"] == "fail"
    assert cert["failure"]["stage"] == stage
    if klass:
        assert cert["diagnosis"]["class"] == klass
        assert cert["diagnosis"]["phase"] == phase
        assert cert["diagnosis"]["via"] == "child-failed"
    reason = cert["failure"]["reason"]
    if env["STANDIN_FAIL"] == "early-exit":
        assert "exited with code 3 before it was ready" in reason
    if env["STANDIN_FAIL"] == "hang":
        assert "not ready within 4 s" in reason and "Load weight end" in reason
    if env["STANDIN_FAIL"] == "ignore-flags":
        assert reason.startswith("flags not applied: tp_size: asked 2, server has 1")
    assert cert["teardown"]["container_removed"]
    assert leftover_containers(eng, cert["id"]) == []


@pytest.mark.docker
def test_certify_falls_back_to_get_server_info_on_older_servers(docker_env, standin_image, model_dir, tmp_path):
    _, eng = docker_env
    cert, _ = run_certify(eng, standin_image[0], model_dir, tmp_path, env={"STANDIN_OLD_API": "1"},
                          flags=("--tp", "2", "--context-length", "4096"))
    assert cert["server_info"]["endpoint"] == "/get_server_info"
    assert cert["verdict"] == "pass-unattested"
    assert "spec_accept_length" not in cert["generation"]


@pytest.mark.docker
def test_each_attempt_gets_its_own_id_and_log(docker_env, standin_image, model_dir, tmp_path):
    _, eng = docker_env
    first, store = run_certify(eng, standin_image[0], model_dir, tmp_path, env={"STANDIN_FAIL": "not-enough-memory"})
    second, _ = run_certify(eng, standin_image[0], model_dir, tmp_path)
    assert first["id"] != second["id"] and first["log_file"] != second["log_file"]
    assert "Not enough memory" not in Path(second["log_file"]).read_text()
    assert [c.id for c in store.list()] == sorted([first["id"], second["id"]])


@pytest.mark.docker
def test_cli_certify_then_certs_list_and_show(docker_env, standin_image, model_dir, tmp_path):
    env, eng = docker_env
    store = tmp_path / "certs"
    cmd = [sys.executable, "-m", "imgbuild.cli"]
    run_env = {**os.environ, "DOCKER_HOST": env["DOCKER_HOST"], "IMGBUILD_GPU_SNAPSHOT": str(GPUS / "a6000x2-clean.json"),
               "XDG_RUNTIME_DIR": str(tmp_path)}
    proc = run_on_unused_port(lambda port: subprocess.run(
            cmd + ["certify", standin_image[0], "--gpus", "RTX A6000x2", "--model", str(model_dir), "--no-gpus",
                   "--flags", " ".join(SEED_FLAGS), "--port", str(port), "--timeout", "60", "--no-plan",
                   "--env", "STANDIN_STEP_S=0.05", "--store", str(store), "--json"],
            capture_output=True, text=True, env=run_env, timeout=180, check=False))
    assert proc.returncode == 0, proc.stderr
    cert = json.loads(proc.stdout)
    assert cert["verdict"] == "pass-unattested"
    listed = subprocess.run(cmd + ["certs", "list", "--store", str(store)], capture_output=True, text=True,
                            env=run_env, check=True).stdout
    assert cert["id"] in listed and "pass-unattested" in listed
    shown = subprocess.run(cmd + ["certs", "show", cert["id"][:18], "--store", str(store)], capture_output=True,
                           text=True, env=run_env, check=True).stdout
    assert f"certificate {cert['id']}: pass-unattested" in shown and "not attested: no GPU was attached" in shown


@pytest.mark.docker
def test_cli_certify_fails_with_exit_1_and_the_diagnosis(docker_env, standin_image, model_dir, tmp_path):
    env, _ = docker_env
    run_env = {**os.environ, "DOCKER_HOST": env["DOCKER_HOST"], "IMGBUILD_GPU_SNAPSHOT": str(GPUS / "a6000x2-clean.json"),
               "XDG_RUNTIME_DIR": str(tmp_path)}
    proc = run_on_unused_port(lambda port: subprocess.run(
            [sys.executable, "-m", "imgbuild.cli", "certify", standin_image[0], "--gpus", "RTX A6000x2", "--model",
             str(model_dir), "--no-gpus", "--flags", "--tp 2", "--port", str(port), "--no-plan",
             "--env", "STANDIN_STEP_S=0.05", "--env", "STANDIN_FAIL=not-enough-memory", "--store", str(tmp_path / "c")],
            capture_output=True, text=True, env=run_env, timeout=180, check=False))
    assert proc.returncode == 1, proc.stderr
    assert "diagnosis: not-enough-memory" in proc.stdout and "imgbuild plan" in proc.stdout


@pytest.mark.docker
def test_sigterm_during_startup_tears_down_and_records_the_interruption(docker_env, standin_image, model_dir, tmp_path):
    env, eng = docker_env
    store = tmp_path / "certs"
    run_env = {**os.environ, "DOCKER_HOST": env["DOCKER_HOST"], "IMGBUILD_GPU_SNAPSHOT": str(GPUS / "a6000x2-clean.json"),
               "XDG_RUNTIME_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "imgbuild.cli", "certify", standin_image[0], "--gpus", "RTX A6000x2", "--model",
         str(model_dir), "--no-gpus", "--flags", "--tp 2", "--port", str(unused_tcp_port()), "--no-plan",
         "--env", "STANDIN_FAIL=hang", "--store", str(store)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=run_env)
    try:
        cert_id = None
        deadline = time.monotonic() + 30
        while cert_id is None and time.monotonic() < deadline:  # until its container runs (the log file comes first, named by the id)
            logs = list((store / "logs").glob("*.log")) if (store / "logs").is_dir() else []
            if logs and leftover_containers(eng, logs[0].stem):
                cert_id = logs[0].stem
            else:
                time.sleep(0.1)
        assert cert_id, "the certify container never started within 30 s"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert leftover_containers(eng, cert_id) == []
    (cert,) = [json.loads(p.read_text()) for p in store.glob("*.json")]
    assert cert["failure"]["stage"] == "interrupted" and cert["teardown"]["container_removed"]



@pytest.mark.docker
def test_teardown_removes_a_container_dockerd_finishes_after_the_first_removal(docker_env, standin_image, monkeypatch):
    """An interrupted create or start request that dockerd completes later: the container
    appears only after teardown removed what it listed. Teardown lists the label again and
    removes it too (a stand-in left Exited by an interrupted run, seen under load in CI)."""
    from imgbuild.adapters import engine
    from imgbuild.flows import certify as flow

    env, eng = docker_env
    cert_id = flow.new_certificate_id()
    labels = {engine.CERTIFY_LABEL: cert_id}
    first = eng.client.containers.create(standin_image[0], command=["true"], labels=labels)
    late: list[str] = []
    real_remove = engine.remove_container

    def remove_then_dockerd_finishes(e, cid, **kwargs):  # noqa: ANN001, ANN202
        done = real_remove(e, cid, **kwargs)
        if not late:  # the request the client gave up on: dockerd creates its container now
            late.append(eng.client.containers.create(standin_image[0], command=["true"], labels=labels).id)
        return done

    monkeypatch.setattr(engine, "remove_container", remove_then_dockerd_finishes)
    run = flow._Run(cert_id=cert_id, log_path=Path("/dev/null"), checks=[])
    run.container_id = first.id
    options = flow.CertifyOptions(image=standin_image[0], gpus="RTX A6000x2", stop_timeout_s=1)
    try:
        assert flow._remove_run_containers(options, eng, run) is True
        assert late and leftover_containers(eng, cert_id) == []
    finally:
        for cid in leftover_containers(eng, cert_id):
            real_remove(eng, cid)

@pytest.mark.docker
def test_an_interrupt_during_teardown_restarts_it_and_no_container_is_left(docker_env, standin_image, monkeypatch):
    """scancel's SIGTERM (turned into KeyboardInterrupt by the CLI) landing after the checks passed,
    while teardown had stopped the container but not yet removed it: teardown starts again and
    removes it, and the interrupt is still reported (seen in CI: a stand-in left Exited (0))."""
    from imgbuild.adapters import engine
    from imgbuild.adapters.gpus import SnapshotProbe
    from imgbuild.flows import certify as flow

    env, eng = docker_env
    cert_id = flow.new_certificate_id()
    container = eng.client.containers.create(standin_image[0], command=["true"], labels={engine.CERTIFY_LABEL: cert_id})
    real_remove = engine.remove_container
    interrupts: list[str] = []

    def stop_then_interrupt(e, cid, **kwargs):  # noqa: ANN001, ANN202
        if not interrupts:
            e.client.containers.get(cid).stop(timeout=1)
            interrupts.append(cid)
            raise KeyboardInterrupt
        return real_remove(e, cid, **kwargs)

    monkeypatch.setattr(engine, "remove_container", stop_then_interrupt)
    run = flow._Run(cert_id=cert_id, log_path=Path("/dev/null"), checks=[])
    run.container_id = container.id
    options = flow.CertifyOptions(image=standin_image[0], gpus="RTX A6000x2", stop_timeout_s=1, release_timeout_s=0)
    try:
        teardown, late = flow._teardown_to_the_end(options, eng, SnapshotProbe(GPUS / "a6000x2-clean.json"), run, (),
                                                   lambda _line: None)
        assert interrupts == [container.id] and isinstance(late, KeyboardInterrupt)
        assert teardown["container_removed"] and leftover_containers(eng, cert_id) == []
    finally:
        for cid in leftover_containers(eng, cert_id):
            real_remove(eng, cid)


def test_options_come_from_the_images_recipe_when_not_given():
    recipe = {"name": "qwen3.6-27b-a6000x2", "engine": "0.5.11", "cuda": "13.0", "gpus": "RTX A6000x2",
              "model": "Qwen/Qwen3.6-27B", "launch_flags": list(SEED_FLAGS)}
    filled = __import__("imgbuild.flows.certify", fromlist=["x"]).options_from_recipe(
        CertifyOptions(image="img"), {"io.imgbuild.recipe": json.dumps(recipe)})
    assert (filled.gpus, filled.launch_flags, filled.model_ref) == ("RTX A6000x2", SEED_FLAGS, "Qwen/Qwen3.6-27B")
    assert (filled.target_name, filled.engine_version, filled.cuda) == ("qwen3.6-27b-a6000x2", "0.5.11", "13.0")


def test_an_image_without_recipe_and_no_gpus_is_a_usage_error():
    from imgbuild.flows.certify import options_from_recipe

    with pytest.raises(UsageError, match="no GPUs to certify on"):
        options_from_recipe(CertifyOptions(image="img"), {})


@pytest.mark.docker
def test_certify_records_log_figures_beside_the_plan(docker_env, standin_image, model_dir, tmp_path):
    """The real planner (imgbuild.flows.plan) on the test model; the stand-in's figures differ from it."""
    import httpx

    from imgbuild.flows.certify import imgbuild_planner

    _, eng = docker_env
    matrix = load_matrix()
    opts = options(image=standin_image[0], model_dir=str(model_dir), engine_version="0.5.11",
                   launch_flags=("--tp", "2", "--context-length", "4096"), cuda=None,
                   environment={"STANDIN_STEP_S": "0.05"}, lock_dir=tmp_path / "locks")
    with httpx.Client(trust_env=False) as http:
        cert = certify(opts, eng=eng, probe=SnapshotProbe(GPUS / "a6000x2-clean.json"), matrix=matrix, http=http,
                       store=CertStore(tmp_path / "certs"), planner=imgbuild_planner(matrix))
    assert cert["verdict"] == "pass-unattested", cert["failure"]
    assert cert["plan"]["fits"] is True
    figures = cert["figures"]
    assert figures["plan"]["kv_tokens"] > 0 and figures["log"]["kv_tokens"] > 0
    assert figures["difference"]["kv_tokens"] == figures["log"]["kv_tokens"] - figures["plan"]["kv_tokens"]


NVIDIA_SMI_OUTPUT = """0, GPU-5c1b7e4e-0000-4c1e-9d1b-3a2f00000000, NVIDIA RTX A6000, 49140, 4, 48669, 8.6, 580.126.09
1, GPU-5c1b7e4e-0001-4c1e-9d1b-3a2f00000001, NVIDIA RTX A6000, 49140, 40964, 7709, 8.6, 580.126.09
---
GPU-5c1b7e4e-0001-4c1e-9d1b-3a2f00000001, 41872, python3, 40960
---
Wed May  1 10:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.126.09             Driver Version: 580.126.09     CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
"""


def test_nvidia_smi_output_becomes_the_hosts_gpus(matrix):
    from imgbuild.adapters.containers import parse_nvidia_smi

    host = parse_nvidia_smi(NVIDIA_SMI_OUTPUT)
    assert (host.driver_version, host.cuda_driver_version) == ("580.126.09", "13.0")
    assert [(d.index, d.name, d.memory_total_mib, d.compute_capability) for d in host.devices] == [
        (0, "NVIDIA RTX A6000", 49140, "8.6"), (1, "NVIDIA RTX A6000", 49140, "8.6")]
    assert host.devices[1].processes[0].pid == 41872
    with pytest.raises(NegativeVerdict, match="pid 41872 python3"):
        preflight(options(), host=host, matrix=matrix, labels={})


@pytest.mark.docker
def test_a_command_runs_once_in_a_throwaway_container(docker_env):
    """The runner ContainerGpuProbe uses (there with every GPU and nvidia-smi; here without)."""
    env, eng = docker_env
    from imgbuild.adapters import engine

    code, output = engine.run_with_all_gpus(eng, env["IMGBUILD_TEST_BASE"], ["sh", "-c", "echo one; echo ---; exit 3"],
                                            gpus=False)
    assert (code, output) == (3, "one\n---\n")
    assert engine.containers_labelled(eng, engine.CERTIFY_LABEL, "gpu-probe") == []


@pytest.mark.docker
def test_certify_through_docker_exec_as_for_a_remote_engine(docker_env, standin_image, model_dir, tmp_path):
    """With a remote DOCKER_HOST the published port is on the engine's host: the HTTP checks
    run inside the server container instead."""
    import httpx

    _, eng = docker_env
    opts = options(image=standin_image[0], model_dir=str(model_dir), cuda=None, http_in_container=True,
                   environment={"STANDIN_STEP_S": "0.05"}, lock_dir=tmp_path / "locks")
    with httpx.Client(trust_env=False) as http:
        cert = certify(opts, eng=eng, probe=SnapshotProbe(GPUS / "a6000x2-clean.json"), matrix=load_matrix(),
                       http=http, store=CertStore(tmp_path / "certs"))
    assert cert["verdict"] == "pass-unattested", cert["failure"]
    assert cert["server_info"]["tp_size"] == 2 and cert["generation"]["deterministic"]
    assert any("port check skipped" in n for n in cert["preflight_notes"])
    assert leftover_containers(eng, cert["id"]) == []


def test_other_gpus_than_the_targets_cannot_certify_it(matrix):
    opts = options(gpus="L4", target_gpus="RTX A6000x2", target_name="qwen3.6-27b-a6000x2")
    with pytest.raises(NegativeVerdict, match="target qwen3.6-27b-a6000x2 is for 2 x RTX A6000; 1 x L4 is other hardware"):
        preflight(opts, host=SnapshotProbe(GPUS / "l4x1-clean.json").read(), matrix=matrix, labels={})


ARCH_FLAGS = [
    ("sass-exact", "sm_80 sm_86 sm_90", "8.6", True),
    ("sass-newer-minor", "sm_80 sm_86 sm_90", "8.9", True),
    ("no-sass-for-major", "sm_80 sm_86 sm_90", "12.0", False),
    ("ptx-jit-for-newer", "sm_80 sm_90a compute_90", "12.0", True),
    ("ptx-not-for-older", "compute_90", "8.6", False),
    ("semicolons", "sm_75;sm_80;sm_86;sm_90;sm_100;sm_120", "12.0", True),
]


@pytest.mark.parametrize("flags, cc, runs", [a[1:] for a in ARCH_FLAGS], ids=[a[0] for a in ARCH_FLAGS])
def test_torch_arch_flags_decide_whether_the_kernels_run(flags, cc, runs):
    from imgbuild.flows.certify import parse_arch_flags

    assert parse_arch_flags(flags, "torch").runs_on(cc) is runs


def test_kernels_read_from_the_image_refuse_a_gpu_they_lack(matrix):
    from imgbuild.flows.certify import parse_arch_flags

    targets = parse_arch_flags("sm_90 sm_100 compute_100", "torch 2.11.0 in the image")
    with pytest.raises(NegativeVerdict, match=r"compute capability 8.6; the image's kernels are built for 9.0, 10.0, PTX 10.0 \(torch"):
        preflight(options(), host=SnapshotProbe(GPUS / "a6000x2-clean.json").read(), matrix=matrix, labels={},
                  kernel_targets=targets)


@pytest.mark.docker
def test_cli_certify_takes_gpus_and_flags_from_the_images_recipe(docker_env, standin_image, model_dir, tmp_path):
    """An image built by imgbuild carries its target (label io.imgbuild.recipe): `certify IMAGE` needs no more."""
    env, eng = docker_env
    recipe = {"name": "standin-a6000x2", "kind": "test", "engine": "0.5.11", "gpus": "RTX A6000x2",
              "launch_flags": ["--tp", "2", "--context-length", "8192"]}
    label = json.dumps(recipe).replace('"', '\\"')
    dockerfile = f'FROM {standin_image[0]}\nLABEL io.imgbuild.recipe="{label}"\n'.encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    ref = f"{standin_image[0]}-recipe"
    eng.client.images.build(fileobj=io.BytesIO(buf.getvalue()), custom_context=True, tag=ref, rm=True)
    run_env = {**os.environ, "DOCKER_HOST": env["DOCKER_HOST"], "IMGBUILD_GPU_SNAPSHOT": str(GPUS / "a6000x2-clean.json"),
               "XDG_RUNTIME_DIR": str(tmp_path)}
    proc = run_on_unused_port(lambda port: subprocess.run(
            [sys.executable, "-m", "imgbuild.cli", "certify", ref, "--model", str(model_dir), "--no-gpus", "--no-plan",
             "--port", str(port), "--env", "STANDIN_STEP_S=0.05", "--store", str(tmp_path / "c"), "--json"],
            capture_output=True, text=True, env=run_env, timeout=180, check=False))
    assert proc.returncode == 0, proc.stderr
    cert = json.loads(proc.stdout)
    assert cert["target"]["name"] == "standin-a6000x2" and cert["target"]["gpus"] == "RTX A6000x2"
    assert cert["server_info"]["context_length"] == 8192 and cert["server_info"]["tp_size"] == 2
    assert "unattested" in cert["verdict"]
    # the image was never pushed: nothing names it but its local id, and the certificate says so
    assert any("no repository digest" in g for g in cert["attestation_gaps"])
