"""Hugging Face ids: fetched over real HTTP from a local stand-in Hub, cached, offline, errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hubserver import HubServer
from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.adapters.hub import HubClient
from imgbuild.knowledge.modelinfo import inspect_model

SEED_MODEL = Path(__file__).resolve().parent.parent / "examples" / "qwen3.6-27b"


@pytest.fixture
def hub_root(tmp_path: Path) -> Path:
    root = tmp_path / "hub"
    repo = root / "Qwen" / "Qwen3.6-27B" / "main"
    repo.mkdir(parents=True)
    for name in ("config.json", "model.safetensors.index.json"):
        shutil.copy(SEED_MODEL / name, repo / name)
    gated = root / "org" / "gated"
    (gated / "main").mkdir(parents=True)
    shutil.copy(SEED_MODEL / "config.json", gated / "main" / "config.json")
    (gated / ".gated").write_text("")
    return root


def client(url: str, cache: Path, **kw: object) -> HubClient:
    return HubClient(endpoint=url, cache_dir=cache, offline=False, **kw)  # type: ignore[arg-type]


def test_hub_id_is_fetched_then_served_from_the_cache(hub_root: Path, tmp_path: Path) -> None:
    with HubServer(hub_root) as hub:
        info = inspect_model("Qwen/Qwen3.6-27B", hub=client(hub.url, tmp_path / "cache"))
        assert info.parameters == 27_781_427_952
        seen = len(hub.requests)
        again = inspect_model("Qwen/Qwen3.6-27B", hub=client(hub.url, tmp_path / "cache"))
        assert again.parameters == info.parameters
        assert len(hub.requests) == seen == 2


def test_missing_index_is_remembered_and_not_refetched(hub_root: Path, tmp_path: Path) -> None:
    (hub_root / "Qwen" / "Qwen3.6-27B" / "main" / "model.safetensors.index.json").unlink()
    with HubServer(hub_root) as hub:
        info = inspect_model("Qwen/Qwen3.6-27B@main", hub=client(hub.url, tmp_path / "cache"))
        inspect_model("Qwen/Qwen3.6-27B@main", hub=client(hub.url, tmp_path / "cache"))
        assert info.parameters_source == "shapes"
        assert len(hub.requests) == 2


def test_offline_without_cache_is_a_clear_environment_error(tmp_path: Path) -> None:
    hub = HubClient(endpoint="http://127.0.0.1:9", cache_dir=tmp_path, offline=True)
    with pytest.raises(EnvironmentUnavailable, match="not in the cache and HF_HUB_OFFLINE is set"):
        inspect_model("Qwen/Qwen3.6-27B", hub=hub)


def test_unreachable_hub_is_an_environment_error(tmp_path: Path) -> None:
    hub = HubClient(endpoint="http://127.0.0.1:9", cache_dir=tmp_path, offline=False)
    with pytest.raises(EnvironmentUnavailable, match="cannot reach the Hugging Face Hub"):
        inspect_model("Qwen/Qwen3.6-27B", hub=hub)


def test_unknown_repository_is_bad_input(hub_root: Path, tmp_path: Path) -> None:
    with HubServer(hub_root) as hub, pytest.raises(UsageError, match="not found"):
        inspect_model("Qwen/Nope", hub=client(hub.url, tmp_path))


def test_gated_repository_needs_the_token_which_is_sent_as_bearer(hub_root: Path, tmp_path: Path) -> None:
    with HubServer(hub_root, gated_token="s3cret") as hub:
        with pytest.raises(UsageError, match=r"refused access \(401\)") as refused:
            inspect_model("org/gated", hub=client(hub.url, tmp_path / "a", token=""))
        assert "set HF_TOKEN" in (refused.value.hint or "")
        info = inspect_model("org/gated", hub=client(hub.url, tmp_path / "b", token="s3cret"))
        assert info.model_type == "qwen3_5"
        assert hub.requests[-2][1] == "Bearer s3cret"


def test_endpoint_and_offline_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.example/")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub = HubClient(cache_dir=tmp_path)
    assert hub.endpoint == "http://mirror.example" and hub.offline
