"""build and verify-repro against the real engine and registry (scripts/services), lock with uv,
and base digests over the registry HTTP API."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from conftest import HOST_CA_BUNDLE
from imgbuild.adapters.baseimages import fetch_digests
from imgbuild.flows.build import BuildOptions, build_image, lock_pins, registry_host
from imgbuild.cli import cli, main
from imgbuild.adapters.engine import BuildEnvironmentFailed
from imgbuild.errors import EnvironmentUnavailable
from imgbuild.knowledge.matrix import load_matrix
from imgbuild.knowledge.recipe import with_base_override
from imgbuild.knowledge.render import bases_of, find_target, render_context, resolve_inputs
from imgbuild.flows.repro import compare_manifests

ROOT = Path(__file__).resolve().parent.parent


def _rendered(base_ref: str):  # noqa: ANN202
    matrix = load_matrix()
    target = with_base_override(find_target(matrix.raw, "test-sglang-0.5.9"), base_ref)
    inputs = resolve_inputs(target, bases=bases_of(matrix.raw), engine=None, locks_dir=ROOT / "locks")
    return render_context(inputs)


# -- pure parts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "repository, host",
    [("imgbuild/sglang", None), ("127.0.0.1:5055/imgbuild/sglang", "127.0.0.1:5055"), ("ghcr.io/org/x", "ghcr.io"), ("sglang", None)],
    ids=["local-name", "local-registry", "ghcr", "bare"],
)
def test_registry_host_is_read_from_the_repository(repository: str, host: str | None) -> None:
    assert registry_host(repository) == host


def test_lock_pins_reads_every_pinned_package() -> None:
    pins = lock_pins((ROOT / "locks" / "test-sglang-0.5.9-x86_64.txt").read_text())
    assert pins == {"idna": "3.10", "sglang": "0.5.9", "six": "1.17.0"}


@pytest.mark.parametrize(
    "first, second, expected",
    [
        ({"packages": {}, "files": {"a": "1"}}, {"packages": {}, "files": {"a": "1"}}, []),
        ({"packages": {}, "files": {"a": "1"}}, {"packages": {}, "files": {"a": "2"}}, ["file a: content 1 != 2"]),
        ({"packages": {"six": {"version": "1", "sha256": "x"}}, "files": {}}, {"packages": {}, "files": {}}, ["package six 1: only in the original"]),
        (
            {"packages": {"six": {"version": "1", "sha256": "x"}}, "files": {}},
            {"packages": {"six": {"version": "2", "sha256": "x"}}, "files": {}},
            ["package six: version 1 != 2"],
        ),
    ],
    ids=["identical", "file-differs", "package-missing", "version-differs"],
)
def test_compare_manifests_lists_exact_differences(first: dict, second: dict, expected: list[str]) -> None:
    assert compare_manifests(first, second) == expected


def _hub_transport(index_digest: str, manifests: list[dict]) -> httpx.MockTransport:
    """A stand-in for Docker Hub speaking its token + manifest protocol."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "auth.docker.io":
            assert request.url.params["scope"] == "repository:nvidia/cuda:pull"
            return httpx.Response(200, json={"token": "t0ken"})
        assert request.headers["Authorization"] == "Bearer t0ken"
        if request.url.path == "/v2/nvidia/cuda/manifests/13.0.1-devel-ubuntu24.04":
            return httpx.Response(
                200,
                headers={"Docker-Content-Digest": index_digest},
                json={"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests},
            )
        return httpx.Response(404, json={"errors": [{"code": "MANIFEST_UNKNOWN"}]})

    return httpx.MockTransport(handler)


def test_fetch_digests_reads_index_and_platform_digests() -> None:
    manifests = [
        {"digest": "sha256:" + "a" * 64, "platform": {"os": "linux", "architecture": "amd64"}},
        {"digest": "sha256:" + "b" * 64, "platform": {"os": "linux", "architecture": "arm64"}},
        {"digest": "sha256:" + "c" * 64, "platform": {"os": "unknown", "architecture": "unknown"}},
    ]
    with httpx.Client(transport=_hub_transport("sha256:" + "f" * 64, manifests)) as client:
        digest, platforms = fetch_digests(client, "nvidia/cuda", "13.0.1-devel-ubuntu24.04")
    assert digest == "sha256:" + "f" * 64
    assert platforms == {"linux/amd64": "sha256:" + "a" * 64, "linux/arm64": "sha256:" + "b" * 64}


def test_fetch_digests_unreachable_registry_is_environment_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Name or service not known", request=request)

    with httpx.Client(transport=httpx.MockTransport(refuse)) as client, pytest.raises(EnvironmentUnavailable):
        fetch_digests(client, "nvidia/cuda", "13.0.1-devel-ubuntu24.04")


# -- lock (uv, PyPI) ----------------------------------------------------------------------


@pytest.mark.network
def test_lock_of_the_test_target_reproduces_the_committed_lock(tmp_path: Path) -> None:
    """uv resolves the same pins and hashes again: the committed lock is reproducible."""
    pytest.importorskip("uv", reason="uv is not installed (pip install uv)")
    matrix_copy = tmp_path / "matrix.yaml"
    matrix_copy.write_text((ROOT / "matrix.yaml").read_text())
    result = CliRunner().invoke(cli, ["lock", "--target", "test-sglang-0.5.9", "--matrix", str(matrix_copy)])
    assert result.exit_code == 0, result.output
    made = (tmp_path / "locks" / "test-sglang-0.5.9-x86_64.txt").read_text()
    committed = (ROOT / "locks" / "test-sglang-0.5.9-x86_64.txt").read_text()
    assert lock_pins(made) == lock_pins(committed)
    assert sorted(ln.strip() for ln in made.splitlines() if "--hash" in ln) == sorted(
        ln.strip() for ln in committed.splitlines() if "--hash" in ln
    )


# -- against the real engine (scripts/services) --------------------------------------------


@pytest.mark.docker
def test_build_installs_real_packages_from_pypi_and_pushes(built_test_image, docker_engine) -> None:  # noqa: ANN001
    record = built_test_image
    assert record.skipped is False and record.image_id
    assert record.repo_digest and "@sha256:" in record.repo_digest
    info = docker_engine.require_image(record.image)
    assert info.labels["io.imgbuild.recipe-digest"] == record.recipe_digest
    assert info.labels["io.imgbuild.engine"] == "0.5.9" and info.user == "sglang"
    saved = json.loads(Path(record.record_path).read_text())
    assert saved["pins"]["sglang"] == "0.5.9" and saved["image_id"] == record.image_id
    assert saved["size_bytes"] == info.size_bytes and info.size_bytes > 10_000_000  # the daemon's Size, for the report


def test_push_progress_is_one_line_per_layer_status_and_quarter_of_its_bytes() -> None:
    from imgbuild.adapters.engine import LayerProgress

    layers = LayerProgress()
    stream = [{"status": "Preparing", "id": "a1"}, {"status": "Waiting", "id": "a1"}]
    stream += [{"status": "Pushing", "id": "a1", "progressDetail": {"current": n * 100_000_000, "total": 4_000_000_000}}
               for n in range(41)]
    stream += [{"status": "Pushed", "id": "a1"}, {"status": "Layer already exists", "id": "b2"}, {"status": "x"}]
    lines = [line for line in map(layers.line, stream) if line]
    assert lines == ["a1: Preparing", "a1: Waiting", "a1: Pushing 0.0 MB / 4.00 GB", "a1: Pushing 1.00 GB / 4.00 GB",
                     "a1: Pushing 2.00 GB / 4.00 GB", "a1: Pushing 3.00 GB / 4.00 GB", "a1: Pushing 4.00 GB / 4.00 GB",
                     "a1: Pushed", "b2: Layer already exists"]


@pytest.mark.docker
def test_push_reports_each_layer(built_test_image, docker_engine, local_registry) -> None:  # noqa: ANN001
    repo, tag = f"{local_registry}/imgbuild-test/push-progress", "t1"
    docker_engine.tag(built_test_image.image_id, repo, tag)
    events: list = []
    try:
        digest = docker_engine.push(repo, tag, on_event=events.append)
    finally:
        docker_engine.api.remove_image(f"{repo}:{tag}")
    assert digest.startswith(repo + "@sha256:")
    assert events and {e.kind for e in events} == {"push"} and all(e.layer and e.text.startswith(e.layer) for e in events)
    assert len({e.layer for e in events}) >= 2  # the base's layer and the install's at least


@pytest.mark.docker
def test_rebuild_of_an_unchanged_recipe_is_skipped(built_test_image, test_base_ref, tmp_path: Path) -> None:  # noqa: ANN001
    result = CliRunner().invoke(
        cli,
        ["build", "test-sglang-0.5.9", "--base", test_base_ref, "--repository", built_test_image.image.rsplit(":", 1)[0],
         "--record", str(tmp_path / "r.json"), "--json"],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout if hasattr(result, "stdout") else result.output)
    assert out["skipped"] is True and "locally" in out["reason"]
    assert out["image_id"] == built_test_image.image_id


@pytest.mark.docker
def test_rebuild_is_skipped_when_the_registry_has_the_recipe(built_test_image, docker_engine, local_registry, test_base_ref, tmp_path: Path) -> None:  # noqa: ANN001
    repo = f"{local_registry}/imgbuild-test/registry-only"
    tag = built_test_image.image.rsplit(":", 1)[1]
    docker_engine.tag(built_test_image.image_id, repo, tag)
    docker_engine.push(repo, tag)
    docker_engine.api.remove_image(f"{repo}:{tag}")  # the tag only: the image keeps its other tag
    record = build_image(
        docker_engine,
        BuildOptions(rendered=_rendered(test_base_ref), repository=repo, record_path=tmp_path / "r.json"),
    )
    assert record.skipped is True and "registry" in record.reason
    assert record.repo_digest == built_test_image.repo_digest.replace("imgbuild-test/sglang", "imgbuild-test/registry-only")


_FIND_BUNDLE = r"""
import hashlib, json, os, sys
size, digest = int(sys.argv[1]), sys.argv[2]
hits = []
for root, dirs, names in os.walk("/"):
    if root in ("/proc", "/sys", "/dev"):
        dirs[:] = []
        continue
    for name in names:
        path = os.path.join(root, name)
        try:
            if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) == size:
                if hashlib.sha256(open(path, "rb").read()).hexdigest() == digest:
                    hits.append(path)
        except OSError:
            pass
print(json.dumps({"hits": hits, "pip_conf": [p for p in ("/etc/pip.conf", "/opt/venv/pip.conf", os.path.expanduser("~/.config/pip/pip.conf"), os.path.expanduser("~/.pip/pip.conf")) if os.path.exists(p)], "tmp": sorted(os.listdir("/tmp/imgbuild")) if os.path.isdir("/tmp/imgbuild") else []}))
"""


@pytest.mark.docker
def test_ca_bundle_is_not_left_in_the_final_image(built_test_image, docker_engine) -> None:  # noqa: ANN001
    data = HOST_CA_BUNDLE.read_bytes()
    info = docker_engine.require_image(built_test_image.image)
    assert not [e for e in info.env if e.split("=")[0] in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")]
    history = " ".join(h.get("CreatedBy", "") for h in docker_engine.api.history(info.id))
    assert "ca-bundle.crt" not in history and "BEGIN CERTIFICATE" not in history
    # the bundle came from the loopback CA server: only its URL (sha256 of public certificates) is in the history
    assert "IMGBUILD_CA_URL=http://127.0.0.1:" in history
    code = _FIND_BUNDLE.replace("int(sys.argv[1]), sys.argv[2]", f"{len(data)}, {hashlib.sha256(data).hexdigest()!r}")
    status, output = docker_engine.run_python(built_test_image.image, code)
    assert status == 0, output
    found = json.loads(output.strip().splitlines()[-1])
    assert found == {"hits": [], "pip_conf": [], "tmp": ["requirements.lock"]}  # no ca.pem, no uv


@pytest.mark.docker
def test_failing_step_names_the_step_its_output_and_the_fix_and_tags_nothing(docker_engine, test_base_ref, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:  # noqa: ANN001
    """Without --ca-bundle pip meets the intercepting proxy: exit 3, the step, its last lines, the fix."""
    repo = f"imgbuild-test/failing-{os.getpid()}"
    with pytest.raises(SystemExit) as exit_info:
        main(["build", "test-sglang-0.5.9", "--base", test_base_ref, "--repository", repo, "--force",
              "--record", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 3
    line = [ln for ln in err.splitlines() if ln.startswith("imgbuild: error:")][0]
    assert "failed at step 7/13 (RUN " in line and "No matching distribution found for" in line
    assert "pass --ca-bundle FILE" in line
    assert "CERTIFICATE_VERIFY_FAILED" in err  # the step's output, printed above the error
    assert docker_engine.image_info(f"{repo}:{_rendered(test_base_ref).tag}") is None
    assert not (tmp_path / "r.json").exists()


@pytest.mark.docker
def test_failing_step_error_carries_step_and_last_lines(docker_engine, test_base_ref, tmp_path: Path) -> None:  # noqa: ANN001
    with pytest.raises(BuildEnvironmentFailed) as err:
        build_image(
            docker_engine,
            BuildOptions(rendered=_rendered(test_base_ref), repository="imgbuild-test/failing", force=True,
                         record_path=tmp_path / "r.json"),
        )
    assert err.value.step.startswith("RUN set -e;")
    assert any("No matching distribution found for" in ln for ln in err.value.last_lines)


@pytest.mark.docker
def test_verify_repro_reports_identical_environments(built_test_image, capsys: pytest.CaptureFixture) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit) as exit_info:
        main(["verify-repro", built_test_image.image, "--ca-bundle", str(HOST_CA_BUNDLE), "--json"])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, err[-2000:]
    report = json.loads(out)
    assert report["identical"] is True and report["differences"] == []
    assert report["packages_compared"] >= 3 and report["files_compared"] > 1000


@pytest.mark.docker
def test_verify_repro_of_an_image_not_built_by_imgbuild_is_refused(test_base_ref, docker_engine, capsys: pytest.CaptureFixture) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit) as exit_info:
        main(["verify-repro", test_base_ref])
    assert exit_info.value.code == 2
    assert "has no io.imgbuild.recipe label" in capsys.readouterr().err


@pytest.mark.docker
def test_changing_the_launch_flags_reuses_the_installed_environment_layers(built_test_image, docker_engine, test_base_ref, tmp_path: Path) -> None:  # noqa: ANN001
    """Layer order: the model-specific part comes after the heavy layers, so they come from cache."""
    from dataclasses import replace

    matrix = load_matrix()
    target = with_base_override(find_target(matrix.raw, "test-sglang-0.5.9"), test_base_ref)
    target = replace(target, launch_flags=("--tp", "1", "--port", str(30000 + os.getpid() % 1000)))
    rendered = render_context(resolve_inputs(target, bases=bases_of(matrix.raw), engine=None, locks_dir=ROOT / "locks"))
    assert rendered.recipe_digest != built_test_image.recipe_digest
    events = []
    record = build_image(
        docker_engine,
        BuildOptions(rendered=rendered, repository="imgbuild-test/layers", ca_bundle=HOST_CA_BUNDLE, force=True,
                     record_path=tmp_path / "r.json", on_progress=events.append),
    )
    cached: dict[str, bool] = {}
    current = ""
    for event in events:
        if event.kind == "step":
            current = event.text
            cached[current] = False
        elif event.kind == "layer" and event.text == "cached":
            cached[current] = True
    # The install step (torch's layer in a real image) must come from cache: the CA server's URL,
    # part of its cache key, is the same for the same bundle.
    heavy = [step for step in cached if step.startswith("RUN set -e;")]
    assert len(heavy) == 1 and cached[heavy[0]], cached
    assert not cached[next(step for step in cached if step.startswith("CMD "))]
    docker_engine.remove_image(record.image)


@pytest.mark.docker
@pytest.mark.parametrize(
    "registry_kind, fix",
    [("local", "the base image is not in its registry"), ("closed-port", "cannot reach the registry of the base image")],
    ids=["unknown-digest", "unreachable-registry"],
)
def test_unreachable_base_exits_3_with_the_fix(docker_engine, local_registry, registry_kind: str, fix: str, capsys: pytest.CaptureFixture) -> None:  # noqa: ANN001
    host = local_registry if registry_kind == "local" else "127.0.0.1:9"
    base = f"{host}/imgbuild-test/no-such-base@sha256:" + "0" * 64
    with pytest.raises(SystemExit) as exit_info:
        main(["build", "test-sglang-0.5.9", "--base", base, "--repository", "imgbuild-test/unreachable", "--force"])
    assert exit_info.value.code == 3
    line = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("imgbuild: error:")][0]
    assert "failed at step 1/13 (FROM " in line and fix in line


@pytest.mark.docker
def test_same_recipe_under_another_repository_is_tagged_not_rebuilt(built_test_image, docker_engine, test_base_ref, tmp_path: Path) -> None:  # noqa: ANN001
    repo = f"imgbuild-test/other-name-{os.getpid()}"
    record = build_image(
        docker_engine,
        BuildOptions(rendered=_rendered(test_base_ref), repository=repo, record_path=tmp_path / "r.json"),
    )
    assert record.skipped is True and record.image_id == built_test_image.image_id
    assert docker_engine.require_image(record.image).id == built_test_image.image_id
    docker_engine.api.remove_image(record.image)  # the new tag only


@pytest.mark.docker
def test_the_sglang_template_fails_at_the_import_smoke_naming_the_missing_module(docker_engine, test_base_ref, tmp_path: Path) -> None:  # noqa: ANN001
    """The real image's Dockerfile (apt Python, venv, user, hash lock) on the debootstrap base with
    the small test lock: the real sglang 0.5.9 wheel without its dependencies installs, then the
    import smoke fails the build on the module that is missing, and nothing is tagged. (The whole
    stack, which passes the smoke, is built by tests/test_realstack.py.)"""
    from imgbuild.adapters.engine import BuildFailed
    from imgbuild.knowledge.recipe import TargetSpec

    matrix = load_matrix()
    target = TargetSpec(
        name="sglang-template-check", kind="sglang", engine="0.5.11", base=test_base_ref, python="3.11",
        lock="test-sglang-0.5.9-x86_64.txt", model="Qwen/Qwen3.6-27B", launch_flags=("--tp", "2"),
    )
    inputs = resolve_inputs(target, bases=bases_of(matrix.raw), engine=matrix.engine("0.5.11"), locks_dir=ROOT / "locks")
    rendered = render_context(inputs)
    with pytest.raises(BuildFailed) as err:
        build_image(
            docker_engine,
            BuildOptions(rendered=rendered, repository="imgbuild-test/sglang-template", ca_bundle=HOST_CA_BUNDLE,
                         force=True, record_path=tmp_path / "r.json"),
        )
    message = str(err.value.message)
    assert "(the import smoke): the installation cannot start the server: import sglang fails: " in message
    assert "ModuleNotFoundError: No module named '" in message and "(in sglang 0.5.9)" in message
    assert err.value.step == "RUN /opt/venv/bin/python /tmp/imgbuild/import-smoke.py"
    assert "is not installed: install the whole lock (`imgbuild lock 0.5.9`" in (err.value.hint or "")
    assert docker_engine.image_info(f"imgbuild-test/sglang-template:{rendered.tag}") is None


def test_ca_server_serves_the_bundle_at_a_url_fixed_by_its_bytes_and_shares_the_port() -> None:
    """The URL is the install step's cache key: the same bundle gets the same URL, even while
    another build serves it; another bundle gets another path."""
    from imgbuild.adapters.caserver import preferred_port, serve_ca_bundle

    data = HOST_CA_BUNDLE.read_bytes()
    with serve_ca_bundle(data) as first:
        with serve_ca_bundle(data) as second:
            assert second == first
            assert httpx.get(second, timeout=5, trust_env=False).content == data
        assert httpx.get(first, timeout=5, trust_env=False).content == data  # the other build's server is still up
        assert httpx.get(first.rsplit("/", 1)[0] + "/other.pem", timeout=5, trust_env=False).status_code == 404
        with serve_ca_bundle(b"another bundle") as other:
            assert other != first
    assert f":{preferred_port(data)}/{hashlib.sha256(data).hexdigest()}.pem" in first


def test_ca_bundle_with_an_engine_on_another_host_is_refused_naming_the_fix() -> None:
    """Its builds could not reach this machine's loopback: exit 2 (UsageError) before any build."""
    import docker

    from imgbuild.adapters.engine import Engine
    from imgbuild.errors import UsageError
    from imgbuild.flows.build import build_settings

    remote = Engine(docker.DockerClient(base_url="tcp://192.0.2.1:2375", version="1.41"))
    with pytest.raises(UsageError) as err:
        with build_settings(remote, HOST_CA_BUNDLE, None):
            pass
    assert "is not on this machine" in str(err.value) and "run imgbuild build on the engine's host" in err.value.hint
    with build_settings(remote, None, None) as (buildargs, network_mode):  # no bundle: nothing to serve
        assert (buildargs, network_mode) == ({}, None)
