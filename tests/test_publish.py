"""publish and verify: a real Docker engine pushing to Debian's real docker-registry,
with TLS from a CA made here and htpasswd auth; the commands run as subprocesses.

The Docker tests need scripts/services (a private dockerd); they skip where none
runs, and never in CI (CI=true makes a missing engine a failure).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from imgbuild.adapters.certstore import CertStore
from imgbuild.flows.publish import (
    CERT_ARTIFACT_TYPE,
    cert_digests,
    describe_tag,
    publish_tags,
)
from imgbuild.adapters.registry import Credentials, RegistryClient, parse_reference
from registryserver import RegistryServer

IN_CI = os.environ.get("CI") == "true"
SERVICES_ENV = Path("/run/imgbuild-services.env")
USER, PASSWORD = "publisher", "Pw-publish-3b9e1d77"
SECRETS = [PASSWORD.encode(), base64.b64encode(f"{USER}:{PASSWORD}".encode()),
           base64.b64encode(PASSWORD.encode()).rstrip(b"=")]


def _seed_target() -> dict[str, Any]:
    from imgbuild.knowledge.matrix import load_matrix
    from imgbuild.knowledge.render import find_target

    return find_target(load_matrix().raw, "qwen3.6-27b-a6000x2").to_dict()


TARGET = _seed_target()  # the seed's target in matrix.yaml: what `verify --for` compares with


# ---------------------------------------------------------------- pure: tags


@pytest.mark.parametrize(("target", "cuda", "expected"), [
    ({**TARGET, "launch_flags": ["--tp", "2"]}, "13.0", "sglang0.5.11-cu13.0-qwen3.6-27b-tp2-a6000x2"),
    ({**TARGET, "gpus": "H100 SXM x8", "launch_flags": ["--tp-size=8"]}, "12.9", "sglang0.5.11-cu12.9-qwen3.6-27b-tp8-h100-sxmx8"),
    ({"name": "test-sglang-0.5.9", "kind": "test", "engine": "0.5.9"}, "none", "sglang0.5.11-test-sglang-0.5.9"),
], ids=["seed-target", "flag-equals-form", "no-model-no-gpus"])
def test_tags_say_what_is_inside_and_carry_the_recipe_digest(target: dict, cuda: str, expected: str) -> None:
    labels = {"io.imgbuild.engine": "0.5.11", "io.imgbuild.cuda": cuda, "io.imgbuild.target": target["name"],
              "io.imgbuild.recipe": json.dumps(target), "io.imgbuild.recipe-digest": "sha256:" + "c0ffee" * 10 + "abcd"}
    assert describe_tag(labels) == expected
    assert publish_tags(labels, uncertified=False) == [expected, f"{expected}-rc0ffeec0ffee"]
    assert publish_tags(labels, uncertified=True)[0] == f"{expected}-uncertified"


def test_certificate_digests_come_from_its_repo_digests() -> None:
    cert = {"image": {"repo_digests": ["127.0.0.1:5055/x@sha256:" + "1" * 64]}}
    assert cert_digests(cert) == {"sha256:" + "1" * 64}


# ---------------------------------------------------------------- engine + registry


def services() -> dict[str, str]:
    env = {k: os.environ[k] for k in ("DOCKER_HOST", "IMGBUILD_TEST_BASE") if k in os.environ}
    if SERVICES_ENV.exists():
        for line in SERVICES_ENV.read_text().splitlines():
            key, _, value = line.partition("=")
            env.setdefault(key.strip(), value.strip())
    return env


@pytest.fixture(scope="module")
def engine():  # noqa: ANN201 - yields an imgbuild.adapters.engine.Engine
    env = services()
    if "DOCKER_HOST" not in env:
        if IN_CI:
            pytest.fail("CI without scripts/services: no DOCKER_HOST")
        pytest.skip("no Docker services (sudo scripts/services start)")
    from imgbuild.adapters import engine as engine_mod

    # The subprocesses (imgbuild()) read DOCKER_HOST from os.environ: set for this module, restored after.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCKER_HOST", env["DOCKER_HOST"])
        try:
            connected = engine_mod.connect(timeout_s=60)
        except Exception as exc:  # EnvironmentUnavailable
            if IN_CI:
                raise
            pytest.skip(f"no Docker engine: {exc}")
        yield connected


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> RegistryServer:
    with RegistryServer(tmp_path_factory.mktemp("registry"), users={USER: PASSWORD}) as server:
        yield server


@pytest.fixture()
def client(registry: RegistryServer) -> RegistryClient:
    with RegistryClient(registry.host, credentials=Credentials(USER, PASSWORD), ca_bundle=registry.ca) as c:
        yield c


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    """A fresh HOME / DOCKER_CONFIG / XDG dirs for the subprocesses: every file they write lands here."""
    for sub in ("home", "docker", "data", "cache", "store"):
        (tmp_path / sub).mkdir()
    return tmp_path


def build_image(engine: Any, target: dict, *, base: str = "scratch") -> str:
    """A small real image with imgbuild's labels (what `imgbuild build` puts on)."""
    recipe = json.dumps(target, sort_keys=True).replace("'", "")
    dockerfile = (
        f"FROM {base}\nCOPY marker /imgbuild-marker\n"
        f"LABEL io.imgbuild.engine=\"{target['engine']}\" io.imgbuild.cuda=\"{target.get('cuda') or 'none'}\" "
        f"io.imgbuild.target=\"{target['name']}\" io.imgbuild.recipe-digest=\"sha256:{uuid.uuid4().hex * 2}\" "
        f"io.imgbuild.recipe='{recipe}'\n"
    )
    return engine.build({"Dockerfile": dockerfile.encode(), "marker": uuid.uuid4().hex.encode()}, what="test image")


def certificate(engine: Any, image_id: str, *, verdict: str = "pass", digests: list[str] | None = None,
                target: dict = TARGET) -> dict[str, Any]:
    """A certificate in certify's format (schema 1) for a local image."""
    info = engine.image_info(image_id)
    return {
        "schema": 1, "id": f"20260101T000000Z-{uuid.uuid4().hex[:8]}", "created_at": "2026-01-01T00:00:00Z",
        "verdict": verdict, "attested": verdict == "pass", "attestation_gaps": [],
        "image": {"ref": image_id, "id": info.id if digests is None else "sha256:" + "e" * 64,
                  "repo_digests": list(info.repo_digests) if digests is None else digests,
                  "recipe_digest": info.labels.get("io.imgbuild.recipe-digest"), "labels": {}},
        "target": {"name": target["name"], "gpus": target.get("gpus"), "engine": target["engine"],
                   "model": target.get("model"), "launch_flags": target.get("launch_flags", [])},
        "hardware": {"source": "nvml", "attached": True, "driver_version": "580.95.05", "cuda_driver_version": "13.0",
                     "gpus": [{"index": i, "uuid": f"GPU-{i}", "name": "NVIDIA RTX A6000", "memory_total_mib": 49140}
                              for i in range(2)]},
        "flags": target.get("launch_flags", []),
    }


def imgbuild(home: Path, *args: str, stdin: str | None = None, password: str | None = PASSWORD,
             outputs: list[bytes] | None = None, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home / "home"), "DOCKER_CONFIG": str(home / "docker"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache")}
    if "DOCKER_HOST" in os.environ:
        env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
    auth = ["-u", USER, "--password-stdin"] if password is not None else []
    done = subprocess.run([sys.executable, "-m", "imgbuild.cli", *args, *auth], env=env, capture_output=True, text=True,
                          input=(password + "\n") if password is not None else stdin, timeout=timeout_s)
    if outputs is not None:
        outputs += [done.stdout.encode(), done.stderr.encode()]
    return done


def publish_args(image: str, registry: RegistryServer, home: Path, repo: str, *extra: str) -> list[str]:
    return ["publish", image, "--to", f"{registry.host}/{repo}", "--ca-bundle", str(registry.ca),
            "--store", str(home / "store"), *extra]


def verify_args(ref: str, registry: RegistryServer, *extra: str) -> list[str]:
    return ["verify", ref, "--ca-bundle", str(registry.ca), *extra]


def save(home: Path, cert: dict[str, Any]) -> None:
    CertStore(home / "store").save(cert)


def registry_state(client: RegistryClient, repo: str) -> dict[str, str]:
    """Every tag and the digest it names."""
    return {tag: client.head_manifest(repo, tag).digest for tag in client.list_tags(repo)}  # type: ignore[union-attr]


def assert_consistent(client: RegistryClient, repo: str) -> None:
    """Every tagged manifest's blobs are in the registry (nothing points at a missing blob)."""
    for tag in client.list_tags(repo):
        manifest = client.get_manifest(repo, tag)
        assert manifest is not None
        data = manifest.data
        for desc in [data.get("config") or {}, *(data.get("layers") or []), *(data.get("manifests") or [])]:
            if desc.get("mediaType", "").endswith("manifest.v1+json"):
                assert client.get_manifest(repo, desc["digest"]) is not None
            elif desc:
                assert client.blob_exists(repo, desc["digest"]), f"{tag}: blob {desc['digest']} missing"


def wait_until_uploads_stop(registry: RegistryServer, *, timeout_s: float = 30.0, settle_s: float = 0.5) -> None:
    """Until the registry's in-progress uploads stop growing: the engine has noticed that
    its client is gone and cancelled the push."""

    def upload_sizes() -> dict[Path, int]:
        sizes = {}
        for path in registry.files():
            if "_uploads" in path.parts:
                try:
                    sizes[path] = path.stat().st_size
                except FileNotFoundError:  # removed between listing and stat
                    continue
        return sizes

    deadline = time.monotonic() + timeout_s
    last, still_since = upload_sizes(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = upload_sizes()
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= settle_s:
            return
    pytest.fail(f"the registry's uploads still grow after {timeout_s:.0f} s: the killed push was not cancelled")


@pytest.mark.docker
def test_publish_refuses_an_image_without_a_certificate(engine: Any, registry: RegistryServer, client: RegistryClient,
                                                       home: Path) -> None:
    image = build_image(engine, TARGET)
    done = imgbuild(home, *publish_args(image, registry, home, "refused/none"))
    assert done.returncode == 1, done.stderr
    assert "is not certified: no certificate names its digest or id" in done.stderr
    assert "--allow-uncertified" in done.stderr
    assert client.list_tags("refused/none") == []


@pytest.mark.docker
@pytest.mark.parametrize("case", ["failed-verdict", "another-digest"])
def test_publish_refuses_a_failed_certificate_or_one_for_another_image(case: str, engine: Any, registry: RegistryServer,
                                                                        client: RegistryClient, home: Path) -> None:
    image = build_image(engine, TARGET)
    if case == "failed-verdict":
        save(home, certificate(engine, image, verdict="fail"))
    else:
        save(home, certificate(engine, image, digests=[f"{registry.host}/x@sha256:" + "d" * 64]))
    done = imgbuild(home, *publish_args(image, registry, home, f"refused/{case}"))
    assert done.returncode == 1, done.stderr
    assert "is not certified" in done.stderr
    assert client.list_tags(f"refused/{case}") == []


@pytest.mark.docker
def test_publish_a_certified_image_then_verify_it_from_the_registry(engine: Any, registry: RegistryServer,
                                                                    client: RegistryClient, home: Path) -> None:
    image = build_image(engine, TARGET)
    cert = certificate(engine, image)
    save(home, cert)
    done = imgbuild(home, *publish_args(image, registry, home, "team/sglang", "--json"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["tags"][0] == "sglang0.5.11-cu13.0-qwen3.6-27b-tp2-a6000x2"
    assert result["tags"][1].startswith("sglang0.5.11-cu13.0-qwen3.6-27b-tp2-a6000x2-r")
    assert [c["id"] for c in result["certificates"]] == [cert["id"]]
    assert_consistent(client, "team/sglang")
    # The artifact: subject = the image manifest, one layer = the certificate, empty config.
    referrers = client.referrers("team/sglang", result["digest"], artifact_type=CERT_ARTIFACT_TYPE)
    assert [r.digest for r in referrers] == [result["certificates"][0]["artifact"]]

    ref = f"{registry.host}/team/sglang:{result['tags'][0]}"
    shown = imgbuild(home, *verify_args(ref, registry, "--json"))
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["digest"] == result["digest"] and report["certified"]
    [check] = report["certificates"]
    assert check["bound"] and check["verdict"] == "pass" and check["id"] == cert["id"]
    assert check["gpus"] == ["NVIDIA RTX A6000"] * 2 and check["driver"] == "580.95.05"
    assert check["flags"] == TARGET["launch_flags"]

    text = imgbuild(home, *verify_args(ref, registry, "--for", TARGET["name"]))
    assert text.returncode == 0, text.stderr
    assert f"certificate  {cert['id']}: BOUND, verdict pass" in text.stdout
    assert f"CERTIFIED for {TARGET['name']}" in text.stdout

    other = imgbuild(home, *verify_args(ref, registry, "--for", "test-sglang-0.5.9"))
    assert other.returncode == 1
    assert "certifies target 'qwen3.6-27b-a6000x2', not 'test-sglang-0.5.9'" in other.stdout
    assert "is not certified for target test-sglang-0.5.9" in other.stderr


@pytest.mark.docker
def test_a_second_publish_changes_nothing(engine: Any, registry: RegistryServer, client: RegistryClient,
                                          home: Path) -> None:
    image = build_image(engine, TARGET)
    save(home, certificate(engine, image))
    first = imgbuild(home, *publish_args(image, registry, home, "idem/sglang"))
    assert first.returncode == 0, first.stderr
    tags_before, files_before = registry_state(client, "idem/sglang"), registry.snapshot()
    second = imgbuild(home, *publish_args(image, registry, home, "idem/sglang", "--json"))
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["changed"] is False
    assert registry_state(client, "idem/sglang") == tags_before
    assert registry.snapshot() == files_before


@pytest.mark.docker
def test_allow_uncertified_publishes_and_marks_it(engine: Any, registry: RegistryServer, client: RegistryClient,
                                                  home: Path) -> None:
    image = build_image(engine, TARGET)
    done = imgbuild(home, *publish_args(image, registry, home, "loose/sglang", "--allow-uncertified", "--json"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["uncertified"] and result["tags"][0].endswith("-uncertified")
    shown = imgbuild(home, *verify_args(f"{registry.host}/loose/sglang@{result['digest']}", registry))
    assert shown.returncode == 1
    assert "UNCERTIFIED (published with --allow-uncertified)" in shown.stdout


@pytest.mark.docker
def test_verify_rejects_a_certificate_for_another_digest(engine: Any, registry: RegistryServer, client: RegistryClient,
                                                         home: Path) -> None:
    image = build_image(engine, TARGET)
    done = imgbuild(home, *publish_args(image, registry, home, "forged/sglang", "--allow-uncertified", "--json"))
    digest = json.loads(done.stdout)["digest"]
    subject = client.head_manifest("forged/sglang", digest)
    assert subject is not None
    other = "sha256:" + "7" * 64
    forged = certificate(engine, image, digests=[f"{registry.host}/forged/sglang@{other}"])
    client.attach_artifact("forged/sglang", subject=subject, artifact_type=CERT_ARTIFACT_TYPE,
                           payload=json.dumps(forged).encode(), payload_media_type="application/json")
    shown = imgbuild(home, *verify_args(f"{registry.host}/forged/sglang@{digest}", registry, "--json"))
    assert shown.returncode == 1
    [check] = json.loads(shown.stdout)["certificates"]
    assert not check["bound"]
    assert any(f"the certificate is for {other}, not for this image ({digest})" in p for p in check["problems"])


@pytest.mark.docker
def test_wrong_password_is_a_clear_error_with_exit_3(engine: Any, registry: RegistryServer, home: Path) -> None:
    image = build_image(engine, TARGET)
    save(home, certificate(engine, image))
    done = imgbuild(home, *publish_args(image, registry, home, "team/wrong"), password="Wrong-" + PASSWORD[::-1])
    assert done.returncode == 3
    assert f"refused the credentials of user '{USER}'" in done.stderr
    assert "Traceback" not in done.stderr and PASSWORD[::-1] not in done.stderr


@pytest.mark.docker
def test_credentials_from_the_docker_config_are_used(engine: Any, registry: RegistryServer, client: RegistryClient,
                                                     home: Path) -> None:
    image = build_image(engine, TARGET)
    save(home, certificate(engine, image))
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    (home / "docker" / "config.json").write_text(json.dumps({"auths": {registry.host: {"auth": auth}}}))
    done = imgbuild(home, *publish_args(image, registry, home, "cfg/sglang"), password=None)
    assert done.returncode == 0, done.stderr
    assert client.list_tags("cfg/sglang")


@pytest.mark.docker
def test_no_credential_appears_in_any_output_or_file(engine: Any, registry: RegistryServer, client: RegistryClient,
                                                     home: Path) -> None:
    image = build_image(engine, TARGET)
    save(home, certificate(engine, image))
    outputs: list[bytes] = []
    published = imgbuild(home, *publish_args(image, registry, home, "secret/sglang", "--json"), outputs=outputs)
    assert published.returncode == 0, published.stderr
    digest = json.loads(published.stdout)["digest"]
    imgbuild(home, *publish_args(image, registry, home, "secret/sglang"), outputs=outputs)
    imgbuild(home, *verify_args(f"{registry.host}/secret/sglang@{digest}", registry, "--json"), outputs=outputs)
    imgbuild(home, *verify_args(f"{registry.host}/secret/sglang@{digest}", registry), outputs=outputs)
    imgbuild(home, *publish_args(image, registry, home, "secret/wrong"), password="x" + PASSWORD, outputs=outputs)
    imgbuild(home, "--debug", *publish_args(image, registry, home, "secret/wrong"), password="x" + PASSWORD,
             outputs=outputs)
    files = [p for p in home.rglob("*") if p.is_file()] + registry.stored_bytes()
    assert len(files) > 5 and len(outputs) == 12
    for secret in SECRETS:
        assert not [i for i, out in enumerate(outputs) if secret in out], f"{secret!r} in an output"
        assert not [p for p in files if secret in p.read_bytes()], f"{secret!r} in a file"
    labels = json.dumps(engine.image_info(image).labels).encode()
    assert not any(secret in labels for secret in SECRETS)


@pytest.mark.docker
def test_an_image_pushed_without_its_certificate_is_completed_by_the_next_publish(
    engine: Any, registry: RegistryServer, client: RegistryClient, home: Path
) -> None:
    """The first run stopped after the image and before the certificate (the engine pushed, nothing else)."""
    from imgbuild.adapters.engine import PushAdapter

    image = build_image(engine, TARGET)
    save(home, certificate(engine, image))
    labels = engine.image_info(image).labels
    tag = publish_tags(labels, uncertified=False)[0]
    PushAdapter(engine).push_image(image, f"{registry.host}/half/sglang", tag, credentials=Credentials(USER, PASSWORD))
    ref = f"{registry.host}/half/sglang:{tag}"
    before = imgbuild(home, *verify_args(ref, registry))
    assert before.returncode == 1 and "certificates none attached" in before.stdout
    done = imgbuild(home, *publish_args(image, registry, home, "half/sglang", "--json"))
    assert done.returncode == 0, done.stderr
    assert any(a.startswith("attached certificate") for a in json.loads(done.stdout)["actions"])
    assert imgbuild(home, *verify_args(ref, registry, "--for", TARGET["name"])).returncode == 0
    assert_consistent(client, "half/sglang")


@pytest.mark.docker
def test_a_push_killed_midway_leaves_the_registry_consistent_and_the_next_publish_completes_it(
    engine: Any, registry: RegistryServer, client: RegistryClient, home: Path
) -> None:
    base = services().get("IMGBUILD_TEST_BASE")
    if not base:
        if IN_CI:
            pytest.fail("no IMGBUILD_TEST_BASE in CI")
        pytest.skip("no test base image (scripts/services start)")
    image = build_image(engine, TARGET, base=base)  # ~190 MB: the push takes long enough to kill
    save(home, certificate(engine, image))
    env = {"PATH": os.environ["PATH"], "HOME": str(home / "home"), "DOCKER_CONFIG": str(home / "docker"),
           "DOCKER_HOST": os.environ["DOCKER_HOST"]}
    proc = subprocess.Popen([sys.executable, "-m", "imgbuild.cli", *publish_args(image, registry, home, "killed/sglang"),
                             "-u", USER, "--password-stdin"], env=env, stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stdin and proc.stderr
    proc.stdin.write(PASSWORD + "\n")
    proc.stdin.close()
    seen = []
    deadline = time.monotonic() + 120
    for line in proc.stderr:
        seen.append(line)
        if ": Pushing" in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert any(": Pushing" in line for line in seen), "".join(seen)
    wait_until_uploads_stop(registry)
    tags = client.list_tags("killed/sglang")
    assert not [t for t in tags if t.startswith("sha256-")], "no certificate was attached"
    assert_consistent(client, "killed/sglang")

    done = imgbuild(home, *publish_args(image, registry, home, "killed/sglang", "--json"), timeout_s=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert_consistent(client, "killed/sglang")
    ref = f"{registry.host}/killed/sglang:{result['tags'][0]}"
    assert imgbuild(home, *verify_args(ref, registry, "--for", TARGET["name"])).returncode == 0
    assert parse_reference(ref).tag == result["tags"][0]


@pytest.mark.docker
def test_a_certificate_naming_the_build_registrys_digest_binds_in_another_registry(
    engine: Any, registry: RegistryServer, client: RegistryClient, home: Path, tmp_path: Path
) -> None:
    """certify records the digest from the registry the build pushed to; the same manifest
    (same config, same compressed layers) has that digest in the registry it is published to."""
    from imgbuild.adapters.engine import PushAdapter

    image = build_image(engine, TARGET)
    with RegistryServer(tmp_path / "build-registry", tls=False) as build_registry:
        PushAdapter(engine).push_image(image, f"{build_registry.host}/imgbuild/sglang", "built", credentials=None)
    info = engine.image_info(image)
    assert info.repo_digests
    cert = certificate(engine, image, digests=list(info.repo_digests))  # its id field names no image
    save(home, cert)
    done = imgbuild(home, *publish_args(image, registry, home, "rebind/sglang", "--json"))
    assert done.returncode == 0, done.stderr
    digest = json.loads(done.stdout)["digest"]
    assert any(ref.endswith(digest) for ref in info.repo_digests)
    shown = imgbuild(home, *verify_args(f"{registry.host}/rebind/sglang@{digest}", registry, "--json"))
    assert shown.returncode == 0 and json.loads(shown.stdout)["certificates"][0]["bound"]


@pytest.mark.docker
def test_publish_a_target_by_name_takes_its_newest_build(engine: Any, registry: RegistryServer,
                                                         client: RegistryClient, home: Path) -> None:
    build_image(engine, TARGET)
    newest = build_image(engine, TARGET)
    save(home, certificate(engine, newest))
    done = imgbuild(home, *publish_args(TARGET["name"], registry, home, "bytarget/sglang", "--json"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["image_id"] == newest


@pytest.mark.docker
def test_verify_require_attested_refuses_a_pass_unattested_certificate(
    engine: Any, registry: RegistryServer, home: Path
) -> None:
    image = build_image(engine, TARGET)
    cert = certificate(engine, image, verdict="pass-unattested")
    cert["attestation_gaps"] = ["no GPU was attached to the container (--no-gpus)"]
    save(home, cert)
    done = imgbuild(home, *publish_args(image, registry, home, "unattested/sglang", "--json"))
    assert done.returncode == 0, done.stderr  # certify's pass-unattested is a passing verdict
    ref = f"{registry.host}/unattested/sglang@{json.loads(done.stdout)['digest']}"
    shown = imgbuild(home, *verify_args(ref, registry))
    assert shown.returncode == 0 and "not attested: no GPU was attached" in shown.stdout
    strict = imgbuild(home, *verify_args(ref, registry, "--require-attested"))
    assert strict.returncode == 1
    assert "verdict 'pass-unattested' is not attested: no GPU was attached" in strict.stdout


def test_verify_rejects_an_artifact_listed_for_this_image_whose_subject_is_another(
    registry: RegistryServer, client: RegistryClient
) -> None:
    """A referrers index can be rewritten by anyone with push rights; the artifact's own
    subject decides, so one image's certificate cannot be moved onto another."""
    from imgbuild.flows.publish import VerifyOptions, verify_image
    from imgbuild.adapters.registry import OCI_INDEX, canonical_json, referrers_tag
    from test_registry import push_image_manifest

    a = push_image_manifest(client, "moved/img", "a", "image a")
    b = push_image_manifest(client, "moved/img", "b", "image b")
    cert = {"id": "c1", "verdict": "pass", "target": {"name": TARGET["name"]},
            "image": {"repo_digests": [f"{registry.host}/moved/img@{a.digest}"]}}
    desc, _ = client.attach_artifact("moved/img", subject=a, artifact_type=CERT_ARTIFACT_TYPE,
                                     payload=json.dumps(cert).encode(), payload_media_type="application/json")
    assert verify_image(VerifyOptions(reference=f"{registry.host}/moved/img:a"), registry=client).certified
    index = canonical_json({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [desc.to_dict()]})
    client.put_manifest("moved/img", referrers_tag(b.digest), index, OCI_INDEX)
    result = verify_image(VerifyOptions(reference=f"{registry.host}/moved/img:b"), registry=client)
    assert not result.certified
    [check] = result.checks
    assert not check.bound
    assert f"artifact subject is {a.digest}, not this image ({b.digest})" in check.problems


@pytest.mark.parametrize(("driver", "gpu", "count", "problem"), [
    ("580.95.05", "NVIDIA RTX A6000", 2, None),
    ("535.161.08", "NVIDIA RTX A6000", 2, "ran on driver 535.161.08; the target's CUDA needs 580.65.06 or newer"),
    ("580.95.05", "NVIDIA L40S", 2, "ran on NVIDIA L40S, the target needs RTX A6000"),
    ("580.95.05", "NVIDIA RTX A6000", 1, "ran on 1 GPU(s), the target needs 2"),
], ids=["matches", "old-driver", "other-gpu", "fewer-gpus"])
def test_verify_for_a_target_checks_gpus_and_driver_of_the_certificate(
    driver: str, gpu: str, count: int, problem: str | None, registry: RegistryServer, client: RegistryClient,
    home: Path
) -> None:
    from test_registry import push_image_manifest

    repo = f"hw/{uuid.uuid4().hex[:8]}"
    subject = push_image_manifest(client, repo, "v1", repo)
    cert = {"id": "hw", "verdict": "pass", "target": {"name": TARGET["name"], "launch_flags": TARGET["launch_flags"]},
            "image": {"repo_digests": [f"{registry.host}/{repo}@{subject.digest}"]},
            "hardware": {"driver_version": driver, "gpus": [{"name": gpu}] * count}}
    client.attach_artifact(repo, subject=subject, artifact_type=CERT_ARTIFACT_TYPE,
                           payload=json.dumps(cert).encode(), payload_media_type="application/json")
    shown = imgbuild(home, *verify_args(f"{registry.host}/{repo}:v1", registry, "--for", TARGET["name"], "--json"))
    assert shown.returncode == (0 if problem is None else 1), shown.stderr
    [check] = json.loads(shown.stdout)["certificates"]
    assert check["bound"] and check["matches_target"] is (problem is None)
    if problem:
        assert problem in check["problems"]
