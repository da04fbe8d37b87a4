"""report: the rows from certificates and make's state, the matrix's own sections (grid,
releases, GPUs), each target's plan as bars, the HTML, and the page in a real headless
browser (Debian's chromium: --dump-dom for the DOM it built, --screenshot)."""

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
from imgbuild.flows.check import kernels_run_on
from imgbuild.knowledge.matrix import load_matrix
from imgbuild.knowledge.report import build_rows, report_document
from imgbuild.knowledge.report_data import bar_segments, family_of
from imgbuild.knowledge.report_html import render_page

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


def page_of(rows: list, plans: dict | None = None) -> str:
    doc = report_document(load_matrix(), rows, plans=plans or {}, builds={}, runs_on=kernels_run_on)
    return render_page(doc)


def test_html_escapes_what_it_shows() -> None:
    evil = {**SEED, "model": "<script>alert(1)</script>"}
    page = page_of(build_rows([evil], [cert(SEED["name"], "pass", failure={"stage": "x", "reason": "<b>"})]))
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize(("architecture", "family"), [
    ("Qwen3_5ForConditionalGeneration", "Qwen"), ("DeepseekV3ForCausalLM", "Deepseek"),
    ("MiniCPM3ForCausalLM", "MiniCPM"), ("ChatGLMModel", "ChatGLM"), ("GptOssForCausalLM", "GptOss"),
    ("LlamaForCausalLMEagle", "Llama"), ("K2HorizonForCausalLM", "K"),
], ids=["digits", "version-V", "caps", "model-suffix", "camel", "eagle-suffix", "one-letter"])
def test_family_is_the_name_up_to_its_version_or_role(architecture: str, family: str) -> None:
    assert family_of(architecture) == family


def test_bar_segments_add_up_to_the_gpu_and_headroom_goes_negative_when_short() -> None:
    per_gpu = {"total_gib": 48.0, "weights_gib": 25.0, "kv_gib": 3.0, "mamba_state_gib": 2.0, "reserve_gib": 9.0,
               "draft_gib": 0.5, "startup_allowance_gib": 1.2, "runtime_need_gib": 3.3}
    parts = {s["segment"]: s["gib"] for s in bar_segments({"per_gpu": per_gpu})}
    assert parts == {"weights": 25.0, "kv_cache": 3.0, "hybrid_state": 11.0, "draft": 0.5, "reserve": 4.5, "headroom": 4.0}
    short = {s["segment"]: s["gib"] for s in bar_segments({"per_gpu": {**per_gpu, "weights_gib": 40.0}})}
    assert short["headroom"] == -11.0


def test_grid_shows_where_support_starts_where_an_issue_raises_it_and_where_a_class_went() -> None:
    doc = report_document(load_matrix(), [], plans={}, builds={}, runs_on=kernels_run_on)
    classes = {c["architecture"]: c for f in doc["grid"]["families"] for c in f["classes"]}
    qwen = classes["Qwen3_5ForConditionalGeneration"]
    assert (qwen["first_registered"], qwen["first_served"]) == ("0.5.9", "0.5.11")
    assert [(r["state"], r["from"]) for r in qwen["runs"]] == [("absent", "0.4.0"), ("issue", "0.5.9"), ("served", "0.5.11")]
    assert qwen["known_issues"][0]["link"] == "https://github.com/sgl-project/sglang/pull/19070"
    assert any(c["removed_in"] for c in classes.values())
    releases = len(doc["releases"])
    assert all(sum(r["count"] for r in c["runs"]) == releases for c in classes.values())
    assert [r["version"] for r in doc["releases"]][:1] == [load_matrix().newest_engine().version]
    assert sum(r["recommended"] for r in doc["releases"]) == 1


def test_releases_carry_their_release_date_and_whether_their_lock_imports() -> None:
    """matrix.yaml's released (the wheel's upload date) and lock_smoke (scripts/lock_all.py) reach the table."""
    doc = report_document(load_matrix(), [], plans={}, builds={}, runs_on=kernels_run_on)
    rows = {r["version"]: r for r in doc["releases"]}
    assert rows["0.5.11"]["released"] == "2026-05-07" and rows["0.5.9"]["released"] == "2026-02-23"
    assert rows["0.5.11"]["lock_imports"] is True and rows["0.5.11"]["lock_failure"] is None
    assert rows["0.4.0"]["lock_imports"] is None  # not measured: before 0.5.9


def test_a_lock_that_does_not_import_shows_no_with_its_root_line() -> None:
    from imgbuild.knowledge.report_html import releases_table

    row = {"version": "0.5.11", "recommended": False, "released": "2026-05-07", "torch": "2.11.0", "cuda": "13.0",
           "min_driver": "580.65.06", "kernel": None, "flashinfer": None, "transformers": "transformers==5.6.0",
           "glibc": "2.34", "python": ">=3.10", "architectures": 1, "added": 1, "removed": 0,
           "lock_imports": True, "lock_failure": None, "lock_imports_today": False,
           "lock_failure_today": "import sglang: ValueError: Either a revision or a version must be specified. (in kernels 0.17.2)"}
    html = releases_table([row])
    assert 'data-lock data-lock-ok="1"' in html and "(today: NO)" in html and "kernels 0.17.2" in html
    html = releases_table([{**row, "lock_imports": False, "lock_failure": "import sglang: ValueError: x"}])
    assert 'data-lock-ok="0"' in html and ">NO" in html and "ValueError: x</span>" in html


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
        self.releases: list[dict[str, str | None]] = []
        self.arch_cells: dict[str, list[dict[str, str | None]]] = {}
        self.bars: dict[str, list[list[str]]] = {}  # target -> one list of segment names per GPU bar
        self.not_planned: list[str] = []
        self.lines: list[str] = []  # the whole text, for what a reader looks for
        self._row: str | None = None
        self._arch: str | None = None
        self._section: str | None = None
        self._depth = 0  # <tr> nesting inside a target's row (the certificate's own table)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and a.get("data-release"):
            self.releases.append(a)
        if tag == "tr" and a.get("data-arch"):
            self._arch = str(a["data-arch"])
            self.arch_cells[self._arch] = []
        if tag == "td" and self._arch and a.get("data-state"):
            self.arch_cells[self._arch].append(a)
        if tag == "section" and a.get("data-target-detail"):
            self._section = str(a["data-target-detail"])
            self.bars[self._section] = []
        if tag == "div" and self._section and a.get("data-gpu") is not None:
            self.bars[self._section].append([])
        if tag == "g" and self._section and a.get("data-segment") and self.bars[self._section]:
            self.bars[self._section][-1].append(str(a["data-segment"]))
        if tag == "p" and a.get("data-not-planned"):
            self.not_planned.append(str(self._section))
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
        if tag == "section":
            self._section = None
        if tag == "tr" and not self._row:
            self._arch = None
        if tag == "tr" and self._depth:
            self._depth -= 1
        elif tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        self.lines.append(data)
        if self._row:
            self.rows[self._row]["text"] += data


FIGURES = {"log": {"weights_gib": 25.7, "kv_tokens": 86990}, "plan": {"weights_gib": 25.663, "kv_tokens": 86980},
           "difference": {"weights_gib": 0.037, "kv_tokens": 10}}


def test_report_page_in_a_headless_browser(tmp_path: Path) -> None:
    """The page a user opens: the seed target planned from the shipped example (bars per GPU),
    its build and certificate figures, the releases, the grid and the GPUs, as chromium built them."""
    store, state, cache = tmp_path / "store", tmp_path / "state", tmp_path / "cache"
    good = cert(SEED["name"], "pass", figures=FIGURES)
    CertStore(store).save(good)
    StateStore(state).record(OTHER["name"], "render", {"status": "failed", "detail": "base has no digest"})
    StateStore(state).record(SEED["name"], "render", {"status": "done", "result": {"tag": "seed-tag", "recipe_digest": "sha256:" + "c" * 64}})
    StateStore(state).record(SEED["name"], "build", {"status": "done", "result": {
        "image": "127.0.0.1:5055/imgbuild/sglang:seed-tag", "image_id": "sha256:" + "d" * 64, "repo_digest": None}})
    (cache / "imgbuild" / "builds").mkdir(parents=True)
    (cache / "imgbuild" / "builds" / "seed-tag.json").write_text(json.dumps(
        {"target": SEED["name"], "image": "x", "base": "cuda-13.0.1-devel-ubuntu24.04", "duration_s": 468.0,
         "pins": {"torch": "2.11.0"}, "size_bytes": 9_280_000_000}))
    out = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "imgbuild.cli", "report", "-o", str(out), "--store", str(store),
                           "--state", str(state), "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    page = Path(answer["path"])
    assert page == out / "index.html"
    report = answer["report"]
    [seed] = [t for t in report["targets"] if t["target"] == SEED["name"]]
    assert seed["plan"]["verdict"] == "fits" and seed["build"]["size_bytes"] == 9_280_000_000
    assert {r["figure"]: r["difference"] for r in seed["certificate"]["figures"]} == {"weights_gib": 0.037, "kv_tokens": 10}

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

    matrix = load_matrix()
    # releases: one row per engine, newest first, one recommended
    assert [r["data-release"] for r in dom.releases] == [e.version for e in reversed(matrix.engines)]
    assert sum(1 for r in dom.releases if r.get("data-recommended")) == 1
    # the grid: every class any release registers, its runs covering every release
    classes = set().union(*(e.architectures for e in matrix.engines))
    assert set(dom.arch_cells) == classes
    assert {sum(int(c["data-count"] or 0) for c in cells) for cells in dom.arch_cells.values()} == {len(matrix.engines)}
    qwen = dom.arch_cells["Qwen3_5ForConditionalGeneration"]
    assert [(c["data-state"], c["data-from"]) for c in qwen] == [("absent", "0.4.0"), ("issue", "0.5.9"), ("served", "0.5.11")]
    # the seed target: a bar per GPU (RTX A6000x2), each with the plan's segments; the test target says why it has none
    assert dom.bars[SEED["name"]] == [["weights", "kv_cache", "hybrid_state", "draft", "reserve", "headroom"]] * 2
    assert dom.not_planned == [OTHER["name"]]
    text = " ".join(dom.lines)
    for shown in ("not planned: the target names no model", "9.28 GB", "580.65.06", "https://github.com/sgl-project/sglang/pull/19070"):
        assert shown in text or shown in dumped.stdout

    shot = Path(os.environ.get("IMGBUILD_REPORT_SCREENSHOT") or tmp_path / "report.png")
    taken = browser(page, tmp_path / "profile2", f"--screenshot={shot}", "--window-size=1400,2000")
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_report_is_pure_data_and_imports_no_adapter_library() -> None:
    probe = ("import imgbuild.knowledge.report, imgbuild.knowledge.report_data, imgbuild.knowledge.report_html, json, sys\n"
             "print(json.dumps(sorted(m for m in ('docker', 'httpx', 'pynvml', 'click') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(done.stdout) == []


def test_report_refuses_a_malformed_model_dir_with_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "imgbuild.cli", "report", "-o", str(tmp_path / "site"),
                           "--model-dir", "no-equals-sign"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["imgbuild: error: --model-dir 'no-equals-sign': write MODEL_ID=DIRECTORY"]
    assert not (tmp_path / "site").exists()


def test_a_target_whose_model_cannot_be_read_offline_says_why(tmp_path: Path) -> None:
    from imgbuild.flows.report import plan_target
    from imgbuild.knowledge.render import targets_of

    matrix = load_matrix()
    seed = targets_of(matrix.raw)[SEED["name"]]
    planned = plan_target(seed, matrix, {seed.model or "": str(tmp_path / "missing")})
    assert planned["plan"] is None and planned["not_planned"]
    from_dir = plan_target(seed, matrix, {seed.model or "": str(ROOT / "examples" / "qwen3.6-27b")})
    assert from_dir["plan"]["gpu"] == {"name": "RTX A6000", "count": 2, "source": "--gpu", "platform": "cuda"}
