"""The certificate store: atomic JSON files, time-ordered ids, prefixes, the default place."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from imgbuild.adapters.certstore import CertStore, default_store_dir, new_certificate_id
from imgbuild.errors import UsageError


def cert(cert_id: str, verdict: str = "pass", reason: str | None = None) -> dict:
    return {"id": cert_id, "created_at": "2026-05-01T10:00:00+00:00", "verdict": verdict,
            "image": {"ref": "reg/img:tag"}, "target": {"name": "t"},
            "failure": {"stage": "launch", "reason": reason} if reason else None}


DEFAULT_DIRS = [
    ("xdg-data-home", {"XDG_DATA_HOME": "/data"}, Path("/data/imgbuild/certs")),
    ("home-fallback", {"HOME": "/home/u"}, Path("/home/u/.local/share/imgbuild/certs")),
]


@pytest.mark.parametrize("env, expected", [d[1:] for d in DEFAULT_DIRS], ids=[d[0] for d in DEFAULT_DIRS])
def test_default_store_is_under_the_users_data_dir(monkeypatch, env, expected):
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert default_store_dir() == expected


def test_ids_sort_by_time_and_never_repeat():
    early = new_certificate_id(datetime(2026, 5, 1, 10, 0, 0, tzinfo=timezone.utc))
    late = new_certificate_id(datetime(2026, 5, 1, 10, 0, 1, tzinfo=timezone.utc))
    assert early.startswith("20260501T100000Z-") and early < late
    assert len({new_certificate_id() for _ in range(100)}) == 100


def test_saved_certificates_list_in_order_and_load_by_prefix(tmp_path):
    store = CertStore(tmp_path)
    store.save(cert("20260501T100000Z-aaaa0001", "fail", "not ready within 60 s"))
    store.save(cert("20260501T110000Z-bbbb0002"))
    rows = store.list()
    assert [(r.id, r.verdict, r.failure) for r in rows] == [
        ("20260501T100000Z-aaaa0001", "fail", "not ready within 60 s"),
        ("20260501T110000Z-bbbb0002", "pass", None),
    ]
    assert store.load("20260501T11")["verdict"] == "pass"
    assert not list(tmp_path.glob(".tmp-*")), "no temporary file is left behind"


LOAD_ERRORS = [
    ("unknown", "2027", "no certificate '2027'"),
    ("ambiguous", "20260501", "is ambiguous"),
    ("empty", "", "no certificate ''"),
]


@pytest.mark.parametrize("prefix, message", [e[1:] for e in LOAD_ERRORS], ids=[e[0] for e in LOAD_ERRORS])
def test_load_names_the_problem(tmp_path, prefix, message):
    store = CertStore(tmp_path)
    store.save(cert("20260501T100000Z-aaaa0001"))
    store.save(cert("20260501T110000Z-bbbb0002"))
    with pytest.raises(UsageError, match=message):
        store.load(prefix)


def test_each_run_gets_its_own_log_file(tmp_path):
    store = CertStore(tmp_path)
    assert store.log_path("a") != store.log_path("b")
    assert store.log_path("a").parent == tmp_path / "logs"


def test_an_empty_or_missing_store_lists_nothing(tmp_path):
    assert CertStore(tmp_path / "nothing-here").list() == []


def test_show_reads_only_ids_the_store_wrote_never_a_path(tmp_path):
    store_dir = tmp_path / "store"
    store = CertStore(store_dir)
    store.save(cert("20260501T100000Z-aaaa0001"))
    (tmp_path / "config.json").write_text('{"verdict": "pass", "image": {"ref": "x"}}')
    for hostile in ("../config", str(tmp_path / "config"), "*", "2026*", "../store/20260501T100000Z-aaaa0001", "x" * 5000):
        with pytest.raises(UsageError, match="is not a certificate id"):
            store.load(hostile)


BROKEN_FILES = [
    ("a-list", "[1, 2]", "does not hold a JSON object"),
    ("no-image", '{"id": "x", "verdict": "pass"}', "has no image.ref"),
    ("no-verdict", '{"id": "x", "image": {"ref": "r"}}', "has no verdict"),
    ("failure-a-string", '{"verdict": "fail", "image": {"ref": "r"}, "failure": "oops"}', "failure that is not an object"),
    ("nested-deep", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("not-utf8", "\udcff", "not valid JSON"),
]


@pytest.mark.parametrize("content, message", [b[1:] for b in BROKEN_FILES], ids=[b[0] for b in BROKEN_FILES])
def test_a_broken_file_in_the_store_is_named_by_show_and_skipped_by_list(tmp_path, content, message):
    store = CertStore(tmp_path)
    store.save(cert("20260501T100000Z-aaaa0001"))
    (tmp_path / "20260501T110000Z-bbbb0002.json").write_bytes(content.encode("utf-8", "surrogateescape"))
    assert [r.id for r in store.list()] == ["20260501T100000Z-aaaa0001"]
    with pytest.raises(UsageError, match=message):
        store.load("20260501T11")
