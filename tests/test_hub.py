"""Hugging Face ids: fetched over real HTTP from a local stand-in Hub, cached, offline, errors."""

from __future__ import annotations

import shutil
import time
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


# ----------------------------------------------------------------------------- hostile ids and servers

def _outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside"
    target.mkdir()
    return target


TRAVERSALS = [
    ("revision-dotdot", "Qwen/Qwen3.6-27B@../../../../../../../../{outside}"),
    ("revision-dot-part", "Qwen/Qwen3.6-27B@main/../../x"),
    ("revision-hidden-part", "Qwen/Qwen3.6-27B@.git"),
    ("revision-300-chars", "Qwen/Qwen3.6-27B@" + "r" * 300),
    ("id-dotdot", "Qwen/..@main"),
    ("id-double-dash", "Qwen/a--b"),
    ("id-5000-chars", "Qwen/" + "x" * 5000),
]


@pytest.mark.parametrize("source", [t[1] for t in TRAVERSALS], ids=[t[0] for t in TRAVERSALS])
def test_an_id_or_revision_that_would_leave_the_cache_is_refused_before_any_request(
        hub_root: Path, tmp_path: Path, source: str) -> None:
    outside = _outside(tmp_path)
    # The stand-in serves the file for any revision, as a hostile HF_ENDPOINT would.
    answer = {"config.json": lambda h: _send(h, (SEED_MODEL / "config.json").read_bytes())}
    with HubServer(hub_root, answer=answer) as hub:
        with pytest.raises(UsageError, match="not a valid Hu"):
            inspect_model(source.format(outside=outside), hub=client(hub.url, tmp_path / "cache"))
        assert hub.requests == []
    assert list(outside.iterdir()) == []


def test_a_symlink_in_the_cache_cannot_redirect_a_write(hub_root: Path, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    cache = tmp_path / "cache"
    (cache / "Qwen").mkdir(parents=True)
    (cache / "Qwen" / "Qwen3.6-27B").symlink_to(outside)
    with HubServer(hub_root) as hub, pytest.raises(UsageError, match="outside"):
        inspect_model("Qwen/Qwen3.6-27B", hub=client(hub.url, cache))
    assert list(outside.iterdir()) == []


def _send(handler, body: bytes, content_type: str = "application/json") -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _endless(handler) -> None:
    """A body with no Content-Length that never ends (read until the client hangs up)."""
    handler.send_response(200)
    handler.end_headers()
    block = b" " * 65536
    try:
        while True:
            handler.wfile.write(block)
    except OSError:
        pass


def _drip(handler) -> None:
    """One byte every 0.2 s: each read is quick, so only an overall deadline stops it."""
    handler.send_response(200)
    handler.send_header("Content-Length", "1000000")
    handler.end_headers()
    try:
        for _ in range(1_000_000):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.2)
    except OSError:
        pass


def _declared_huge(handler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", str(2 * 2**30))
    handler.end_headers()
    try:
        handler.wfile.write(b"{")
    except OSError:
        pass


HOSTILE_ANSWERS = [
    ("endless-body", _endless, "larger than 16 MiB"),
    ("declared-2-GB", _declared_huge, "larger than 16 MiB"),
    ("slow-drip", _drip, r"did not arrive within 1 s"),
]


@pytest.mark.parametrize("answer, message", [h[1:] for h in HOSTILE_ANSWERS], ids=[h[0] for h in HOSTILE_ANSWERS])
def test_a_hostile_server_is_stopped_by_the_size_cap_or_the_deadline_and_nothing_is_cached(
        hub_root: Path, tmp_path: Path, answer, message: str) -> None:
    cache = tmp_path / "cache"
    started = time.monotonic()
    with HubServer(hub_root, answer={"config.json": answer}) as hub:
        with pytest.raises(EnvironmentUnavailable, match=message):
            inspect_model("Qwen/Qwen3.6-27B", hub=HubClient(endpoint=hub.url, cache_dir=cache, offline=False,
                                                             deadline_s=1.0))
    assert time.monotonic() - started < 5
    assert not [p for p in cache.rglob("*") if p.is_file()]


def _drip_unsized(handler) -> None:
    """One byte every 0.5 s with no Content-Length (HTTP/1.0 style: the body ends when the connection does)."""
    handler.send_response(200)
    handler.end_headers()
    try:
        for _ in range(1_000):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.5)
    except OSError:
        pass


@pytest.mark.parametrize("answer", [_drip, _drip_unsized], ids=["declared-length", "unknown-length"])
def test_a_trickling_body_is_given_up_after_seconds_not_at_the_deadline(hub_root: Path, tmp_path: Path,
                                                                       answer) -> None:
    """With the default 30 s deadline: a body whose rate cannot bring it in time (declared length) or
    that arrives under 1 KiB/s (unknown length) is stopped at hub.SLOW_AFTER_S."""
    from imgbuild.adapters import hub as hub_module

    started = time.monotonic()
    with HubServer(hub_root, answer={"config.json": answer}) as hub:
        with pytest.raises(EnvironmentUnavailable, match=r"did not arrive within 30 s: \d+ bytes in [5-7]\.\d s, too slow to finish in time"):
            inspect_model("Qwen/Qwen3.6-27B", hub=HubClient(endpoint=hub.url, cache_dir=tmp_path / "c", offline=False))
    assert time.monotonic() - started < hub_module.SLOW_AFTER_S + 3


def test_an_html_answer_is_not_cached_and_the_fixed_server_is_asked_again(hub_root: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    html = {"config.json": lambda h: _send(h, b"<html>proxy login</html>", "text/html")}
    with HubServer(hub_root, answer=html) as hub:
        with pytest.raises(EnvironmentUnavailable, match="not a JSON object") as refused:
            inspect_model("Qwen/Qwen3.6-27B", hub=client(hub.url, cache))
        assert "nothing was cached" in (refused.value.hint or "")
    with HubServer(hub_root) as fixed:
        assert inspect_model("Qwen/Qwen3.6-27B", hub=client(fixed.url, cache)).parameters == 27_781_427_952


def test_a_corrupt_cache_entry_from_an_older_run_is_dropped_and_fetched_again(hub_root: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    entry = cache / "Qwen" / "Qwen3.6-27B" / "main" / "config.json"
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"<html>cached by an older imgbuild</html>")
    with HubServer(hub_root) as hub:
        assert inspect_model("Qwen/Qwen3.6-27B", hub=client(hub.url, cache)).model_type == "qwen3_5"
    assert entry.read_bytes() == (SEED_MODEL / "config.json").read_bytes()


def test_json_nested_100000_deep_is_refused_not_a_crash(hub_root: Path, tmp_path: Path) -> None:
    deep = {"config.json": lambda h: _send(h, b"[" * 100_000 + b"]" * 100_000)}
    with HubServer(hub_root, answer=deep) as hub, pytest.raises(EnvironmentUnavailable, match="not a JSON object"):
        inspect_model("Qwen/Qwen3.6-27B", hub=client(hub.url, tmp_path / "cache"))


def test_a_branch_with_a_slash_is_quoted_as_the_hub_client_does(hub_root: Path, tmp_path: Path) -> None:
    with HubServer(hub_root) as hub:
        with pytest.raises(UsageError, match="not found"):
            inspect_model("Qwen/Qwen3.6-27B@refs/pr/1", hub=client(hub.url, tmp_path / "cache"))
        assert hub.requests[0][0] == "/Qwen/Qwen3.6-27B/resolve/refs%2Fpr%2F1/config.json"
