#!/usr/bin/env python3
"""Benchmark: `imgbuild report` on the whole matrix: page size, render time, browser load time.

Prints the size of index.html (bytes, and gzip'd as a static host would serve it), the
median wall time of `imgbuild report` (a new process each run: matrix, plans, page),
the median time of the page's data and HTML alone (in this process, warm), and what a
real headless chromium takes to load it: the navigation timing the page itself reports
(DOMContentLoaded, load, and a forced layout of the whole page), read from a copy of the
page with a probe script appended, and chromium's wall time for --dump-dom beside a blank
page's.
Usage: .venv/bin/python scripts/bench_report.py [--runs N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_PROBE = """<script>window.addEventListener('load',function(){setTimeout(function(){
var n=performance.getEntriesByType('navigation')[0];var t0=performance.now();
document.body.getBoundingClientRect();var h=document.documentElement.scrollHeight;var layout=performance.now()-t0;
var p=document.createElement('pre');p.id='bench-probe';
p.textContent=JSON.stringify({dom_content_loaded_ms:n.domContentLoadedEventEnd,load_ms:n.loadEventEnd,
layout_ms:layout,height_px:h,elements:document.getElementsByTagName('*').length});
document.body.appendChild(p);},0);});</script>"""


def median_s(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def chromium_dump(browser: str, url: str, profile: Path) -> str:
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
            f"--user-data-dir={profile}", "--window-size=1400,900", "--dump-dom", url]
    return subprocess.run(args, capture_output=True, text=True, timeout=180, check=True).stdout


def render_in_process() -> None:
    from imgbuild.flows.report import ReportOptions, write_report
    from imgbuild.knowledge.matrix import load_matrix

    with tempfile.TemporaryDirectory() as out:
        write_report(ReportOptions(out_dir=Path(out)), matrix=load_matrix())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    imgbuild = str(Path(sys.executable).with_name("imgbuild"))
    work = Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        out = work / "site"
        cli_s = median_s(lambda: subprocess.run([imgbuild, "report", "-o", str(out)], cwd=ROOT, check=True,
                                                stdout=subprocess.DEVNULL), args.runs)
        page = out / "index.html"
        data = page.read_bytes()
        render_in_process()  # warm the imports and the matrix cache
        inproc_s = median_s(render_in_process, args.runs)
        doc = json.loads(subprocess.run([imgbuild, "report", "-o", str(work / "j"), "--json"], cwd=ROOT, check=True,
                                        capture_output=True, text=True).stdout)["report"]
        cells = sum(len(c["runs"]) for f in doc["grid"]["families"] for c in f["classes"])
        print(f"page: {len(data):,} bytes ({len(gzip.compress(data)):,} gzip'd); {len(doc['releases'])} releases, "
              f"{doc['grid']['class_count']} classes in {len(doc['grid']['families'])} families "
              f"({cells:,} grid cells for {doc['grid']['class_count'] * len(doc['releases']):,} class-release pairs), "
              f"{len(doc['gpus'])} GPUs, {len(doc['targets'])} targets")
        print(f"imgbuild report (new process, median of {args.runs}): {cli_s:.3f} s")
        print(f"data + HTML in process (warm, median of {args.runs}): {inproc_s * 1000:.0f} ms")
        browser = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
        if browser is None:
            print("browser: chromium is not installed (apt-get install chromium); load time not measured")
            return
        probed = work / "probe.html"
        probed.write_text(page.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"), encoding="utf-8")
        blank = work / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body></body></html>", encoding="utf-8")
        timings, walls, blank_walls = [], [], []
        for i in range(args.runs):
            start = time.perf_counter()
            dumped = chromium_dump(browser, probed.as_uri(), work / f"profile{i}")
            walls.append(time.perf_counter() - start)
            found = re.search(r'<pre id="bench-probe">(.*?)</pre>', dumped)
            if found:
                timings.append(json.loads(found.group(1).replace("&quot;", '"')))
            start = time.perf_counter()
            chromium_dump(browser, blank.as_uri(), work / f"blank{i}")
            blank_walls.append(time.perf_counter() - start)
        if timings:
            med = {k: statistics.median(t[k] for t in timings) for k in timings[0]}
            print(f"chromium (headless, median of {len(timings)}): DOMContentLoaded {med['dom_content_loaded_ms']:.0f} ms, "
                  f"load {med['load_ms']:.0f} ms, full layout {med['layout_ms']:.0f} ms; "
                  f"{med['elements']:.0f} elements, {med['height_px']:.0f} px tall")
        print(f"chromium --dump-dom wall: {statistics.median(walls):.2f} s (a blank page: {statistics.median(blank_walls):.2f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
