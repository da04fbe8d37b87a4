"""Base image digests from a registry's HTTP API (Docker Hub's token flow), over httpx.

``fetch_digests(client, image, tag)`` returns the tag's manifest digest (the
multi-platform index for nvidia/cuda) and each platform's manifest digest, as
``imgbuild bases refresh`` records them in matrix.yaml. Takes an httpx.Client so
tests can pass a transport or a local server.
"""

from __future__ import annotations

import httpx

from imgbuild.errors import EnvironmentUnavailable, UsageError

DOCKER_HUB_REGISTRY = "https://registry-1.docker.io"
DOCKER_HUB_AUTH = "https://auth.docker.io/token"
_ACCEPT = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)


def _split(image: str) -> tuple[str, str]:
    """'nvidia/cuda' -> (Docker Hub URL, 'nvidia/cuda'); 'host:5000/x' -> ('http(s)://host:5000', 'x')."""
    first = image.split("/", 1)[0]
    if "/" in image and ("." in first or ":" in first or first == "localhost"):
        scheme = "http" if first.startswith(("127.", "localhost")) else "https"
        return f"{scheme}://{first}", image.split("/", 1)[1]
    name = image if "/" in image else f"library/{image}"
    return DOCKER_HUB_REGISTRY, name


def fetch_digests(client: httpx.Client, image: str, tag: str) -> tuple[str, dict[str, str]]:
    registry, name = _split(image)
    headers = {"Accept": _ACCEPT}
    try:
        if registry == DOCKER_HUB_REGISTRY:
            token = client.get(
                DOCKER_HUB_AUTH, params={"service": "registry.docker.io", "scope": f"repository:{name}:pull"}
            )
            token.raise_for_status()
            headers["Authorization"] = f"Bearer {token.json()['token']}"
        resp = client.get(f"{registry}/v2/{name}/manifests/{tag}", headers=headers)
    except httpx.HTTPStatusError as exc:
        raise EnvironmentUnavailable(
            f"{image}:{tag}: the registry's token service answered {exc.response.status_code}"
        ) from exc
    except httpx.HTTPError as exc:
        raise EnvironmentUnavailable(
            f"{image}:{tag}: registry {registry} is not reachable ({type(exc).__name__}: {exc})",
            hint="run `imgbuild bases refresh` where the registry can be reached",
        ) from exc
    if resp.status_code == 404:
        raise UsageError(f"{image}:{tag} is not in {registry}", hint="check the tag in matrix.yaml bases:")
    if resp.status_code != 200:
        raise EnvironmentUnavailable(f"{image}:{tag}: {registry} answered {resp.status_code}")
    digest = resp.headers.get("Docker-Content-Digest")
    if not digest:
        raise EnvironmentUnavailable(f"{image}:{tag}: {registry} sent no Docker-Content-Digest header")
    body = resp.json()
    platforms: dict[str, str] = {}
    for entry in body.get("manifests") or []:
        plat = entry.get("platform") or {}
        if plat.get("os") == "unknown":  # attestation manifests
            continue
        key = f"{plat.get('os')}/{plat.get('architecture')}" + (f"/{plat['variant']}" if plat.get("variant") else "")
        platforms[key] = entry["digest"]
    return digest, platforms
