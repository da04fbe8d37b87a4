"""report: the rows from certificates and make's state, the HTML, and the page in a real
headless browser (Debian's chromium: --dump-dom for the DOM it built, --screenshot)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from imgbuild.adapters.certstore import CertStore
from imgbuild.flows.make import StateStore
from imgbuild.knowledge.report import build_rows, render_html

IN_CI = os.environ.get("CI") == "true"
ROOT = Path(__file__).resolve().parent.parent
SEED = {"name": "qwen3.6-27b-a6000x2", "engine": "0.5.11", "cuda": "13.0", "model": "Qwen/Qwen3.6-27B",
        "gpus": "RTX A6000x2", "launch_flags": ["--tp", "2"]}
OTHER = {"name": "test-sglang-0.5.9", "engine": "0.5.9", "launch_flags": []}


def cert(target: str, verdict: str, created: str = "2026-01-01T00:00:00Z", **extra: Any) -> dict[str, Any]:
    return {"id": f"{created[:10].replace('-', '')}T000000Z-{verdict[:4]}", "created_at": created, "verdict": verdict,
            "target": {"name": target, "launch_flags": ["--tp", "2"]},
            "image": {"ref": "127.0.0.1:5055/imgbuild/sglang:x", "id": "sha256:" + "a" * 64,
                      "repo_digests": ["127.0.0.1:5055/imgbuild/sglang@sha256:" + "b" * 64]},
            "hardware": {"driver_version": "580.95.05", "cuda_driver_version": "13.0",
                         "gpus": [{"name": "NVIDIA RTX A6000", "uuid": "GPU-1", "memory_total_mib": 49140}]},
            "flags": ["--tp", "2"], "timings": {"ready_s": 61.5}, **extra}


@pytest.mark.parametrize(("certs", "steps", "status"), [
    ([cert("qwen3.6-27b-a6000x2", "pass")], {}, "certified"),
    ([cert("qwen3.6-27b-a6000x2", "pass-unattested")], {}, "certified-unattested"),
    ([cert("qwen3.6-27b-a6000x2", "pass", "2026-01-01T00:00:00Z"),
      cert("qwen3.6-27b-a6000x2", "fail", "2026-02-01T00:00:00Z")], {}, "failed"),
    ([], {"plan": {"status": "failed", "detail": "does not fit"}}, "failed"),
    ([], {"build": {"status": "done", "result": {"image": "x"}}}, "built"),
    ([], {"build": {"status": "done"}, "publish": {"status": "done", "result": {"reference": "h/r@sha256:1"}}},
     "published-uncertified"),
    ([cert("another-target", "pass")], {}, "not-built"),
], ids=["pass", "unattested", "newest-cert-wins", "failed-step", "built", "published-uncertified", "other-targets-cert"])
def test_each_target_gets_the_status_of_its_newest_certificate_and_steps(certs: list, steps: dict, status: str) -> None:
    [row] = build_rows([SEED], certs, {SEED["name"]: steps})
    assert row.status == status


def test_html_escapes_what_it_shows() -> None:
    evil = {**SEED, "model": "<script>alert(1)</script>"}
    page = render_html(build_rows([evil], [cert(SEED["name"], "pass", failure={"stage": "x", "reason": "<b>"})]))
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if IN_CI:
        pytest.fail("chromium is not installed (scripts/services start installs it)")
    pytest.skip("chromium is not installed (apt-get install chromium)")


def browser(page: Path, profile: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
            f"--user-data-dir={profile}", *mode, page.resolve().as_uri()]
    return subprocess.run(args, capture_output=True, text=True, timeout=180)


class Dom(HTMLParser):
    """The elements of the DOM chromium dumped, with their attributes and the text inside each row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        self.details: list[dict[str, str | None]] = []
        self.steps: list[dict[str, str | None]] = []
        self._row: str | None = None
        self._depth = 0  # <tr> nesting inside a target's row (the certificate's own table)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and a.get("data-target"):
            self._row, self._depth = str(a["data-target"]), 0
            self.rows[self._row] = {"status": a.get("data-status"), "text": ""}
        elif tag == "tr" and self._row:
            self._depth += 1
        if tag == "details":
            self.details.append({**a, "row": self._row})
        if tag == "span" and a.get("data-step"):
            self.steps.append({**a, "row": self._row})

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._depth:
            self._depth -= 1
        elif tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row:
            self.rows[self._row]["text"] += data


def test_report_page_in_a_headless_browser(tmp_path: Path) -> None:
    store, state = tmp_path / "store", tmp_path / "state"
    good = cert(SEED["name"], "pass")
    CertStore(store).save(good)
    StateStore(state).record(OTHER["name"], "render", {"status": "failed", "detail": "base has no digest"})
    out = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "imgbuild.cli", "report", "-o", str(out), "--store", str(store),
                           "--state", str(state), "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    page = Path(json.loads(done.stdout)["path"])
    assert page == out / "index.html"

    dumped = browser(page, tmp_path / "profile", "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = Dom()
    dom.feed(dumped.stdout)
    assert dom.rows[SEED["name"]]["status"] == "certified"
    assert dom.rows[OTHER["name"]]["status"] == "failed"
    assert "render: failed" in dom.rows[OTHER["name"]]["text"]
    seed_text = dom.rows[SEED["name"]]["text"]
    for shown in ("0.5.11", "Qwen/Qwen3.6-27B", "RTX A6000x2", "--tp 2", good["id"], "580.95.05"):
        assert shown in seed_text
    # the certificate is one click away: a closed <details> in the target's row
    [details] = [d for d in dom.details if d.get("data-cert-id") == good["id"]]
    assert details["row"] == SEED["name"] and "open" not in details
    assert {s["data-step"] for s in dom.steps if s["row"] == SEED["name"]} == {
        "check", "plan", "render", "build", "certify", "publish"}

    shot = tmp_path / "report.png"
    taken = browser(page, tmp_path / "profile2", f"--screenshot={shot}", "--window-size=1400,900")
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_report_is_pure_data_and_imports_no_adapter_library() -> None:
    probe = ("import imgbuild.knowledge.report, json, sys\n"
             "print(json.dumps(sorted(m for m in ('docker', 'httpx', 'pynvml', 'click') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(done.stdout) == []
