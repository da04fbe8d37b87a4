"""Hugging Face Hub files over HTTP (httpx), cached on disk.

Honours HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (sent as a bearer
token, never logged) and HF_HUB_OFFLINE (cache only). Files are cached under
$XDG_CACHE_HOME/imgbuild/hub/<org>/<name>/<revision>/, with a marker for files
the repository does not have, so a second look needs no network.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from imgbuild.errors import EnvironmentUnavailable, UsageError

if TYPE_CHECKING:
    import httpx

_MISSING = b"\x00imgbuild:missing\x00"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "imgbuild" / "hub"


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


class HubClient:
    """Fetches single files of a model repository: ``/{repo}/resolve/{revision}/{file}``."""

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        endpoint: str | None = None,
        token: str | None = None,
        cache_dir: Path | None = None,
        offline: bool | None = None,
    ) -> None:
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
        self._token = token if token is not None else os.environ.get("HF_TOKEN")
        self.cache_dir = cache_dir or default_cache_dir()
        self.offline = _offline() if offline is None else offline
        self._client = client

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=httpx.Timeout(20.0, connect=10.0), follow_redirects=True)
        return self._client

    def fetch(self, repo: str, revision: str, filename: str) -> bytes | None:
        cached = self.cache_dir / repo / revision / filename
        if cached.is_file():
            data = cached.read_bytes()
            return None if data == _MISSING else data
        if self.offline:
            raise EnvironmentUnavailable(
                f"{repo}@{revision}: {filename} is not in the cache and HF_HUB_OFFLINE is set",
                hint="unset HF_HUB_OFFLINE once, or pass a local model directory",
            )
        import httpx

        url = f"{self.endpoint}/{repo}/resolve/{revision}/{filename}"
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        try:
            response = self._http().get(url, headers=headers)
        except httpx.HTTPError as exc:
            raise EnvironmentUnavailable(
                f"cannot reach the Hugging Face Hub at {self.endpoint} for {repo}: {type(exc).__name__}",
                hint="check the network or HF_ENDPOINT; HF_HUB_OFFLINE=1 uses the cache only",
            ) from exc
        if response.status_code == 404:
            if filename == "config.json":
                raise UsageError(
                    f"model {repo}@{revision} not found on {self.endpoint}",
                    hint="check the id and the revision",
                )
            self._store(cached, _MISSING)
            return None
        if response.status_code in (401, 403):
            raise UsageError(
                f"model {repo}: the Hub refused access ({response.status_code})",
                hint="the repository may be gated or private: set HF_TOKEN to a token with access",
            )
        if response.status_code >= 400:
            raise EnvironmentUnavailable(
                f"the Hugging Face Hub answered {response.status_code} for {repo}/{filename}",
                hint="try again later",
            )
        self._store(cached, response.content)
        return response.content

    @staticmethod
    def _store(path: Path, data: bytes) -> None:
        import tempfile

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)


def hub_for(source: str) -> HubClient | None:
    """A hub client when ``source`` is a Hugging Face id, else None (local paths need none)."""
    from imgbuild.knowledge.modelinfo import is_local_source, split_hub_id

    if is_local_source(source) or split_hub_id(source) is None:
        return None
    return HubClient()
