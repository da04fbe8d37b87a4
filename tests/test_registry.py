"""imgbuild.adapters.registry against Debian's real docker-registry (TLS from a test CA, htpasswd auth)."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.adapters.registry import (
    OCI_INDEX,
    OCI_MANIFEST,
    Credentials,
    Descriptor,
    RegistryClient,
    canonical_json,
    docker_config_credentials,
    parse_reference,
    referrers_tag,
    sha256_digest,
)
from registryserver import RegistryServer

USER, PASSWORD = "alice", "reg-pw-7c1f9e"
CERT_TYPE = "application/vnd.imgbuild.certificate.v1+json"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> RegistryServer:
    with RegistryServer(tmp_path_factory.mktemp("registry"), users={USER: PASSWORD}) as server:
        yield server


@pytest.fixture()
def client(registry: RegistryServer) -> RegistryClient:
    with RegistryClient(registry.host, credentials=Credentials(USER, PASSWORD), ca_bundle=registry.ca) as c:
        yield c


def push_image_manifest(client: RegistryClient, repo: str, tag: str, seed: str) -> Descriptor:
    """A small real OCI image: one layer blob and a config that names it."""
    layer = f"layer {seed}".encode()
    config = canonical_json({"architecture": "amd64", "os": "linux",
                             "rootfs": {"type": "layers", "diff_ids": [sha256_digest(layer)]}})
    client.put_blob(repo, layer)
    client.put_blob(repo, config)
    body = canonical_json({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha256_digest(config),
                   "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": sha256_digest(layer),
                    "size": len(layer)}],
    })
    client.put_manifest(repo, tag, body, OCI_MANIFEST)
    found = client.head_manifest(repo, tag)
    assert found is not None
    return found


@pytest.mark.parametrize(("text", "host", "repo", "tag", "digest"), [
    ("127.0.0.1:5000/team/sglang:v1", "127.0.0.1:5000", "team/sglang", "v1", None),
    ("localhost/sglang", "localhost", "sglang", None, None),
    ("registry.example.com/a/b@sha256:" + "0" * 64, "registry.example.com", "a/b", None, "sha256:" + "0" * 64),
    ("lmsysorg/sglang:latest", "docker.io", "lmsysorg/sglang", "latest", None),
    ("ubuntu", "docker.io", "library/ubuntu", None, None),
], ids=["host-port-tag", "localhost", "digest", "hub-org", "hub-library"])
def test_parse_reference_splits_host_like_the_docker_cli(text: str, host: str, repo: str, tag: str | None,
                                                          digest: str | None) -> None:
    ref = parse_reference(text)
    assert (ref.host, ref.repository, ref.tag, ref.digest) == (host, repo, tag, digest)


@pytest.mark.parametrize("text", ["team/sglang", "sglang"], ids=["org-repo", "bare"])
def test_destination_without_host_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="names no registry host"):
        parse_reference(text, require_host=True)


def test_referrers_tag_follows_the_oci_tag_schema() -> None:
    assert referrers_tag("sha256:" + "ab" * 32) == "sha256-" + "ab" * 32


def test_blob_manifest_and_tags_round_trip_over_tls_with_basic_auth(client: RegistryClient) -> None:
    subject = push_image_manifest(client, "rt/img", "v1", "round-trip")
    manifest = client.get_manifest("rt/img", "v1")
    assert manifest is not None and manifest.descriptor.digest == subject.digest
    layer_digest = manifest.data["layers"][0]["digest"]
    assert client.get_blob("rt/img", layer_digest) == b"layer round-trip"
    assert client.list_tags("rt/img") == ["v1"]
    assert client.head_manifest("rt/img", "nope") is None


def test_attach_artifact_uses_the_referrers_tag_where_the_registry_has_no_referrers_api(
    client: RegistryClient, registry: RegistryServer
) -> None:
    subject = push_image_manifest(client, "att/img", "v1", "attach")
    payload = b'{"verdict": "pass"}'
    desc, changed = client.attach_artifact("att/img", subject=subject, artifact_type=CERT_TYPE, payload=payload,
                                           payload_media_type="application/json")
    assert changed
    assert client.has_referrers_api("att/img", subject.digest) is False  # distribution 2.8 answers 404
    index = client.get_manifest("att/img", referrers_tag(subject.digest))
    assert index is not None and index.data["mediaType"] == OCI_INDEX
    assert [m["digest"] for m in index.data["manifests"]] == [desc.digest]
    artifact = client.get_manifest("att/img", desc.digest)
    assert artifact is not None
    assert artifact.data["subject"]["digest"] == subject.digest
    assert artifact.data["artifactType"] == CERT_TYPE
    assert artifact.data["config"]["mediaType"] == "application/vnd.oci.empty.v1+json"
    assert client.get_blob("att/img", artifact.data["layers"][0]["digest"]) == payload
    assert [d.digest for d in client.referrers("att/img", subject.digest, artifact_type=CERT_TYPE)] == [desc.digest]
    assert client.referrers("att/img", subject.digest, artifact_type="application/other") == []


def test_attaching_the_same_artifact_twice_changes_nothing_in_the_registry(
    client: RegistryClient, registry: RegistryServer
) -> None:
    subject = push_image_manifest(client, "idem/img", "v1", "idempotent")
    kwargs = dict(subject=subject, artifact_type=CERT_TYPE, payload=b'{"n": 1}', payload_media_type="application/json")
    first, _ = client.attach_artifact("idem/img", **kwargs)
    before = registry.snapshot()
    again, changed = client.attach_artifact("idem/img", **kwargs)
    assert (again.digest, changed) == (first.digest, False)
    assert registry.snapshot() == before


def test_a_second_artifact_joins_the_referrers_index(client: RegistryClient) -> None:
    subject = push_image_manifest(client, "two/img", "v1", "two")
    a, _ = client.attach_artifact("two/img", subject=subject, artifact_type=CERT_TYPE, payload=b'{"a":1}',
                                  payload_media_type="application/json")
    b, _ = client.attach_artifact("two/img", subject=subject, artifact_type=CERT_TYPE, payload=b'{"b":2}',
                                  payload_media_type="application/json")
    assert {d.digest for d in client.referrers("two/img", subject.digest)} == {a.digest, b.digest}


def test_wrong_password_is_environment_unavailable_and_never_echoes_the_password(registry: RegistryServer) -> None:
    with RegistryClient(registry.host, credentials=Credentials(USER, "not-the-password"), ca_bundle=registry.ca) as c:
        with pytest.raises(EnvironmentUnavailable, match="refused the credentials of user 'alice'") as info:
            c.ping()
    assert info.value.exit_code == 3
    assert "not-the-password" not in info.value.one_line()


def test_no_credentials_names_docker_login(registry: RegistryServer) -> None:
    with RegistryClient(registry.host, ca_bundle=registry.ca) as c:
        with pytest.raises(EnvironmentUnavailable, match="requires authentication") as info:
            c.ping()
    assert "docker login" in (info.value.hint or "")


def test_untrusted_ca_says_how_to_trust_it(registry: RegistryServer, tmp_path: Path) -> None:
    with RegistryClient(registry.host, credentials=Credentials(USER, PASSWORD), certs_d=tmp_path) as c:
        with pytest.raises(EnvironmentUnavailable, match="TLS certificate is not trusted") as info:
            c.ping()
    assert "--ca-bundle" in (info.value.hint or "")


def test_the_docker_daemons_certs_d_is_trusted(registry: RegistryServer, tmp_path: Path) -> None:
    host_dir = tmp_path / registry.host
    host_dir.mkdir()
    assert registry.ca is not None
    (host_dir / "ca.crt").write_bytes(registry.ca.read_bytes())
    with RegistryClient(registry.host, credentials=Credentials(USER, PASSWORD), certs_d=tmp_path) as c:
        c.ping()


def test_credentials_repr_hides_the_secret() -> None:
    creds = Credentials(USER, PASSWORD)
    assert PASSWORD not in repr(creds) and PASSWORD not in str(creds)
    assert PASSWORD not in repr(RegistryClient("127.0.0.1:1", credentials=creds))


def _write_config(directory: Path, config: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_docker_config_auths_entry_is_read(tmp_path: Path) -> None:
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    d = _write_config(tmp_path, {"auths": {"127.0.0.1:5999": {"auth": auth}}})
    creds = docker_config_credentials("127.0.0.1:5999", config_dir=d)
    assert creds is not None and (creds.username, creds.password) == (USER, PASSWORD)
    assert docker_config_credentials("other.example.com", config_dir=d) is None


def _helper(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / f"docker-credential-{name}"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize("key", ["credHelpers", "credsStore"], ids=["per-registry-helper", "default-store"])
def test_credential_helpers_are_run_as_the_docker_cli_runs_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                key: str) -> None:
    # A helper speaks docker-credential-helpers' protocol: "get" with the server URL on stdin.
    _helper(tmp_path / "bin", "imgbuildtest",
            'read server\n[ "$1" = get ] && [ "$server" = "127.0.0.1:5998" ] || exit 1\n'
            f'printf \'{{"ServerURL":"%s","Username":"{USER}","Secret":"{PASSWORD}"}}\' "$server"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    config = {"credHelpers": {"127.0.0.1:5998": "imgbuildtest"}} if key == "credHelpers" else {"credsStore": "imgbuildtest"}
    d = _write_config(tmp_path / "cfg", config)
    creds = docker_config_credentials("127.0.0.1:5998", config_dir=d)
    assert creds is not None and (creds.username, creds.password) == (USER, PASSWORD)
    assert "imgbuildtest" in creds.source


def test_missing_credential_helper_is_environment_unavailable(tmp_path: Path) -> None:
    d = _write_config(tmp_path, {"credsStore": "does-not-exist-anywhere"})
    with pytest.raises(EnvironmentUnavailable, match="docker-credential-does-not-exist-anywhere"):
        docker_config_credentials("127.0.0.1:5997", config_dir=d)


def test_plain_http_loopback_registry_is_reached_over_http(tmp_path: Path) -> None:
    with RegistryServer(tmp_path, tls=False) as server:
        with RegistryClient(server.host) as c:
            c.ping()
            subject = push_image_manifest(c, "plain/img", "v1", "plain")
            assert c.referrers("plain/img", subject.digest) == []


def test_bearer_token_flow_against_a_token_service(tmp_path: Path) -> None:
    """docker-registry with ``auth: token``: the client follows the Bearer challenge to the
    realm with its credentials, then pushes and reads with the token alone."""
    from tokenserver import TokenServer

    with TokenServer(tmp_path / "tokens", {USER: PASSWORD}) as tokens:
        with RegistryServer(tmp_path / "reg", auth_lines=tokens.registry_config()) as server:
            with RegistryClient(server.host, credentials=Credentials(USER, PASSWORD), ca_bundle=server.ca) as c:
                c.ping()
                subject = push_image_manifest(c, "tok/img", "v1", "token")
                desc, _ = c.attach_artifact("tok/img", subject=subject, artifact_type=CERT_TYPE, payload=b"{}",
                                            payload_media_type="application/json")
                assert [d.digest for d in c.referrers("tok/img", subject.digest)] == [desc.digest]
            assert {"user": USER, "path": "/token", "scopes": ["repository:tok/img:pull,push"]} in tokens.requests
            with RegistryClient(server.host, credentials=Credentials(USER, "wrong"), ca_bundle=server.ca) as bad:
                with pytest.raises(EnvironmentUnavailable, match="refused the credentials"):
                    bad.head_manifest("tok/img", "v1")
