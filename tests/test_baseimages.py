"""imgbuild.adapters.baseimages: a base image's index and platform digests, read over the
registry HTTP API from Debian's real docker-registry (tests/registryserver.py) and from
the local registry of scripts/services (Docker-marked)."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest

from conftest import unused_tcp_port
from imgbuild.adapters.baseimages import DOCKER_HUB_REGISTRY, _split, fetch_digests
from imgbuild.errors import EnvironmentUnavailable, UsageError
from registryserver import RegistryServer

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"


@pytest.mark.parametrize(("image", "registry", "name"), [
    ("nvidia/cuda", DOCKER_HUB_REGISTRY, "nvidia/cuda"),
    ("ubuntu", DOCKER_HUB_REGISTRY, "library/ubuntu"),
    ("127.0.0.1:5055/imgbuild-test-base", "http://127.0.0.1:5055", "imgbuild-test-base"),
    ("localhost/team/base", "http://localhost", "team/base"),
    ("nvcr.io/nvidia/cuda", "https://nvcr.io", "nvidia/cuda"),
], ids=["hub-org", "hub-library", "loopback-is-http", "localhost-is-http", "other-host-is-https"])
def test_an_image_name_picks_its_registry_like_the_docker_cli(image: str, registry: str, name: str) -> None:
    assert _split(image) == (registry, name)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _push_blob(http: httpx.Client, base: str, repo: str, data: bytes) -> dict[str, object]:
    started = http.post(f"{base}/v2/{repo}/blobs/uploads/")
    assert started.status_code == 202, started.text
    location = started.headers["Location"]
    # The upload URL carries its own query (_state=...): the digest is added to it, not put in its place.
    url = httpx.URL(location if location.startswith("http") else base + location).copy_merge_params({"digest": _digest(data)})
    done = http.put(url, content=data,
                    headers={"Content-Type": "application/octet-stream"})
    assert done.status_code == 201, done.text
    return {"digest": _digest(data), "size": len(data)}


def _push_manifest(http: httpx.Client, base: str, repo: str, ref: str | None, body: dict, media_type: str) -> dict:
    """PUT a manifest under a tag, or (ref None) under its own digest as an index's members are."""
    data = json.dumps(body, sort_keys=True).encode()
    done = http.put(f"{base}/v2/{repo}/manifests/{ref or _digest(data)}", content=data, headers={"Content-Type": media_type})
    assert done.status_code == 201, done.text
    return {"mediaType": media_type, "digest": _digest(data), "size": len(data)}


def _push_platform_image(http: httpx.Client, base: str, repo: str, arch: str) -> dict:
    layer = _push_blob(http, base, repo, f"layer for {arch}".encode())
    config = _push_blob(http, base, repo, json.dumps({"architecture": arch, "os": "linux"}).encode())
    return _push_manifest(http, base, repo, None, {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer}],
    }, OCI_MANIFEST)


@pytest.fixture(scope="module")
def cuda_like_registry(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A plain-HTTP registry holding `nvidia/cuda:13.0.1-devel` shaped like the real one:
    an OCI index over amd64 and arm64/v8 manifests plus an attestation (platform unknown)."""
    with RegistryServer(tmp_path_factory.mktemp("registry"), tls=False) as server, httpx.Client() as http:
        base, repo = f"http://{server.host}", "nvidia/cuda"
        amd64 = _push_platform_image(http, base, repo, "amd64")
        arm64 = _push_platform_image(http, base, repo, "arm64")
        attestation = _push_platform_image(http, base, repo, "attestation")
        index = _push_manifest(http, base, repo, "13.0.1-devel", {
            "schemaVersion": 2, "mediaType": OCI_INDEX,
            "manifests": [
                {**amd64, "platform": {"os": "linux", "architecture": "amd64"}},
                {**arm64, "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
                {**attestation, "platform": {"os": "unknown", "architecture": "unknown"}},
            ],
        }, OCI_INDEX)
        yield {"image": f"{server.host}/{repo}", "index": index["digest"],
               "platforms": {"linux/amd64": amd64["digest"], "linux/arm64/v8": arm64["digest"]}}


def test_an_index_gives_its_digest_and_each_platforms_manifest_without_attestations(
    cuda_like_registry: dict[str, object]
) -> None:
    with httpx.Client() as client:
        digest, platforms = fetch_digests(client, str(cuda_like_registry["image"]), "13.0.1-devel")
    assert digest == cuda_like_registry["index"]
    assert platforms == cuda_like_registry["platforms"]


def test_a_tag_the_registry_lacks_is_a_usage_error_pointing_at_matrix_bases(cuda_like_registry: dict[str, object]) -> None:
    with httpx.Client() as client, pytest.raises(UsageError, match=r"nvidia/cuda:99\.9 is not in http://") as err:
        fetch_digests(client, str(cuda_like_registry["image"]), "99.9")
    assert err.value.hint == "check the tag in matrix.yaml bases:"


def test_an_unreachable_registry_is_an_environment_error_with_a_hint() -> None:
    port = unused_tcp_port()  # nothing listens there: the connection is refused
    with httpx.Client(timeout=5) as client, pytest.raises(EnvironmentUnavailable, match="is not reachable") as err:
        fetch_digests(client, f"127.0.0.1:{port}/base", "latest")
    assert "bases refresh" in (err.value.hint or "")


@pytest.mark.docker
def test_the_services_test_base_tag_has_the_digest_the_services_recorded(local_registry: str, test_base_ref: str) -> None:
    """scripts/services pushes the debootstrap base as imgbuild-test-base:bookworm and records
    its digest in $IMGBUILD_TEST_BASE: the registry's answer for the tag is that digest."""
    repository, _, recorded = test_base_ref.partition("@")
    assert repository == f"{local_registry}/imgbuild-test-base"
    with httpx.Client(timeout=30) as client:
        digest, platforms = fetch_digests(client, repository, "bookworm")
    assert digest == recorded
    assert platforms == {}  # a single-platform manifest, no index
