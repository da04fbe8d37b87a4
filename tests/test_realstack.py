"""The seed engine's real image: SGLang 0.5.11's whole hash-locked stack (torch, the CUDA
libraries) from dockerfiles/sglang.Dockerfile.tmpl on the debootstrap bookworm base of
scripts/services (Python 3.11, so locks/sglang-0.5.11-cp311-x86_64.txt), built as a user would
with `imgbuild build`, then held to what it must do without a GPU:

- the build's import smoke passes (it runs inside the build: a failure fails the build);
- `check --image` reads 0.5.11 from the image and its import smoke passes in a container;
- `certify --no-gpus` with the seed target's flags fails with SGLang's own "No accelerator"
  message, triaged, and leaves no container.

Cost: about 5 minutes cold on 2 cores (the stack's ~4 GB of wheels from PyPI and their install
by uv, in the one stage of the template: the build 244 s, the whole module 302 s measured; it was
452 s and 535 s with pip and a COPY --from of the 8.6 GB environment).
At the end the test removes its image and the layers the build added (the disk returns to where
it was) unless IMGBUILD_REALSTACK_KEEP=1 keeps them: the next run then reuses the image (build
0 s, the whole module 77 s measured) and, without the variable, removes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import HOST_CA_BUNDLE, run_on_unused_port

ROOT = Path(__file__).resolve().parent.parent
SEED_MODEL = ROOT / "examples" / "qwen3.6-27b"
GPUS = ROOT / "tests" / "data" / "gpus"
REPOSITORY = "imgbuild-test/realstack"
KEEP = os.environ.get("IMGBUILD_REALSTACK_KEEP") == "1"
KEPT = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "imgbuild-tests" / "realstack-kept.json"

pytestmark = [pytest.mark.docker, pytest.mark.network]


def imgbuild(*args: str, timeout_s: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgbuild.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=timeout_s, check=False)


def _image_ids(docker_engine) -> set[str]:  # noqa: ANN001
    return {row["Id"] for row in docker_engine.api.images(all=True)}


@pytest.fixture(scope="module")
def real_image(docker_engine, test_base_ref: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:  # noqa: ANN001
    """`imgbuild build` of SGLang 0.5.11 for Python 3.11 on the test base; yields the build record
    (with "wall_s"); removes the image and the layers the build added afterwards."""
    before = _image_ids(docker_engine)
    record_path = tmp_path_factory.mktemp("realstack") / "build.json"
    started = time.monotonic()
    done = imgbuild("build", "--sglang", "0.5.11", "--cuda", "13.0", "--base", test_base_ref, "--python", "3.11",
                    "--ca-bundle", str(HOST_CA_BUNDLE), "--repository", REPOSITORY, "--record", str(record_path),
                    "--json", timeout_s=2400)
    wall_s = time.monotonic() - started
    print(f"realstack: imgbuild build took {wall_s:.0f} s", file=sys.stderr)
    assert done.returncode == 0, done.stderr[-4000:]
    record = json.loads(done.stdout)
    record["wall_s"] = wall_s
    record["build_log"] = done.stderr
    try:
        yield record
    finally:
        # What a kept run added is listed in KEPT, so the next run without the variable removes it
        # too (its own "before" already holds those layers).
        kept = set(json.loads(KEPT.read_text())) if KEPT.is_file() else set()
        added = (_image_ids(docker_engine) - before) | kept
        if KEEP:
            KEPT.parent.mkdir(parents=True, exist_ok=True)
            KEPT.write_text(json.dumps(sorted(added)))
        else:
            docker_engine.remove_image(record["image"])
            # The stack stage and the steps' intermediate images: newest first, as the engine
            # refuses to remove a layer another still builds on.
            rows = sorted((r for r in docker_engine.api.images(all=True) if r["Id"] in added),
                          key=lambda r: r.get("Created", 0), reverse=True)
            for _ in range(2):  # Created is whole seconds: a second pass takes what a tie left
                docker_engine.remove_layers([r["Id"] for r in reversed(rows)])
            KEPT.unlink(missing_ok=True)


def test_the_real_stack_builds_and_its_import_smoke_passes(real_image: dict, docker_engine) -> None:  # noqa: ANN001
    log = real_image["build_log"]
    # The smoke runs in the build, or came from the layer cache of a run that passed it, or the
    # image a kept run (IMGBUILD_REALSTACK_KEEP=1) built is reused: build tags only a build that passed.
    assert "imgbuild-smoke: ok: import sglang; import sglang.srt.server_args; import sglang.launch_server; " \
           "pip check; python -m sglang.launch_server --help" in log \
        or "RUN /opt/venv/bin/python /tmp/imgbuild/import-smoke.py" in log \
        or (real_image.get("skipped") and "recipe digest exists locally" in real_image.get("reason", "")), log[-3000:]
    assert "imgbuild-smoke: FAILED" not in log
    assert real_image["pins"]["sglang"] == "0.5.11" and real_image["pins"]["torch"] == "2.11.0"
    assert real_image["pins"].get("kernels", "").startswith("0.12.")  # the as-of-release lock's constraint
    info = docker_engine.require_image(real_image["image"])
    assert info.labels["io.imgbuild.engine"] == "0.5.11" and info.labels["io.imgbuild.cuda"] == "13.0"
    status, output = docker_engine.run_python(real_image["image"], "import os, sys; print(sys.prefix, os.getuid())")
    assert (status, output.split()[-2:]) == (0, ["/opt/venv", "1000"])


def test_check_image_reads_0_5_11_and_its_import_smoke_passes(real_image: dict) -> None:
    done = imgbuild("check", str(SEED_MODEL), "--image", real_image["image"], "--gpu", "RTX A6000x2", "--json",
                    timeout_s=1200)
    data = json.loads(done.stdout)
    assert data["sglang"]["version"] == "0.5.11" and data["sglang"]["source"] == f"image:{real_image['image']}"
    assert data["import_smoke"]["ok"] is True, data["import_smoke"]
    assert done.returncode == 0, (data["reasons"], done.stderr[-2000:])


def test_certify_without_gpus_fails_with_sglangs_own_message_and_leaves_no_container(
        real_image: dict, docker_engine, tmp_path: Path) -> None:  # noqa: ANN001
    from imgbuild.adapters.engine import CERTIFY_LABEL, containers_labelled
    from imgbuild.knowledge.matrix import load_matrix
    from imgbuild.knowledge.render import find_target

    flags = find_target(load_matrix().raw, "qwen3.6-27b-a6000x2").launch_flags
    env = {"IMGBUILD_GPU_SNAPSHOT": str(GPUS / "a6000x2-clean.json"), "XDG_RUNTIME_DIR": str(tmp_path)}
    done = run_on_unused_port(lambda port: imgbuild(
        "certify", real_image["image"], "--gpus", "RTX A6000x2", "--model", str(SEED_MODEL), "--no-gpus", "--no-plan",
        "--flags", " ".join(flags), "--port", str(port), "--timeout", "600", "--store", str(tmp_path / "certs"),
        "--json", timeout_s=900, env=env))
    assert done.returncode == 1, done.stderr[-3000:]
    cert = json.loads(done.stdout)
    assert cert["verdict"] == "fail"
    text = json.dumps(cert)
    assert "No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) is available" in text, text[-3000:]
    assert cert["diagnosis"]["class"] == "no-gpu-visible", cert["diagnosis"]
    assert containers_labelled(docker_engine, CERTIFY_LABEL, cert["id"]) == []  # this run's (conftest checks the rest)
