#!/usr/bin/env python3
"""Benchmark: `imgbuild diagnose` on big logs and long lines, seconds and peak RSS per case.

The logs are built from real excerpts in tests/data/failure-logs: a real SGLang start-up log
(ok-startup.sglang-pr4826.txt) repeated, with a 2 KB request line (--log-requests style)
every tenth line, ending in a real failure (public/cuda-oom.sglang-4547.txt); so each log
must still be classified cuda-oom. The single lines are the shapes that make a backtracking
regex quadratic: one long word, dotted and dashed names, a path, repeated signature words.

Each case runs `imgbuild diagnose --json FILE` in a fresh interpreter (the user's path,
reading the file included); the peak RSS is that process's ru_maxrss.

Usage: .venv/bin/python scripts/bench_diagnose.py [--sizes 1,20,200] [--line-kb 200] [--root DIR] [--log FILE]
(--root: another checkout's directory holding imgbuild/, to measure it the same way).
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "data" / "failure-logs"
RUN = "import sys; from imgbuild.cli import main; sys.argv[0] = 'imgbuild'; main()"


def corpus_lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("# ")]


def write_big_log(path: Path, size_mb: int) -> None:
    """A real start-up log repeated to size_mb, long request lines among it, a real failure last."""
    body = [ln for ln in corpus_lines(LOGS / "ok-startup.sglang-pr4826.txt") if "ready to roll" not in ln]
    prompt = "Summarise the following passage in three sentences. " * 40
    request = (f"[2025-03-27 21:40:02 TP0] Receive: obj=GenerateReqInput(text='{prompt}', "
               "sampling_params={'max_new_tokens': 512, 'temperature': 0.7}, rid='5f0c', stream=False)")
    block: list[str] = []
    for i, line in enumerate(body * 4):
        block.append(line)
        if i % 10 == 9:
            block.append(request)
    chunk = ("\n".join(block) + "\n").encode()
    tail = ("\n".join(corpus_lines(LOGS / "public" / "cuda-oom.sglang-4547.txt")) + "\n").encode()
    target = size_mb * 1024 * 1024 - len(tail)
    with path.open("wb") as fh:
        written = 0
        while written < target:
            fh.write(chunk)
            written += len(chunk)
        fh.write(tail)


LINE_SHAPES = {
    "one word": "x",
    "dotted name": "a.",
    "dashed name": "a-",
    "words": "some words ",
    "site-packages path": "/site-packages/a",
    "signature words": "Model architectures [x] ",
}


def write_line(path: Path, shape: str, size_kb: int) -> None:
    unit = LINE_SHAPES[shape]
    text = (unit * (size_kb * 1024 // len(unit) + 1))[: size_kb * 1024]
    path.write_text(f'  File "{text}' if shape == "site-packages path" else text, encoding="utf-8")


def run_diagnose(root: Path, log: Path) -> tuple[float, float, str]:
    """Seconds, peak RSS in MiB and the class of one `imgbuild diagnose --json` run."""
    env = dict(os.environ, PYTHONPATH=str(root))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", RUN, "diagnose", "--json", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=root)
    out = proc.stdout.read() if proc.stdout else b""  # not communicate(): wait4 must reap it for ru_maxrss
    err = proc.stderr.read() if proc.stderr else b""  # one line at most
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4
    seconds = time.perf_counter() - t0
    try:
        klass = json.loads(out)["class"]
    except (ValueError, KeyError):
        # a refusal (exit 2) says why on one line: a log over diagnose's size limit, say
        klass = "(no answer: " + (err.decode(errors="replace").strip().splitlines() or ["nothing on stderr"])[-1][:90] + ")"
    return seconds, usage.ru_maxrss / 1024, klass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,20,200", help="log sizes in MB, comma-separated")
    parser.add_argument("--line-kb", type=int, default=200, help="size of each single-line case")
    parser.add_argument("--shapes", default=",".join(LINE_SHAPES), help="single-line shapes, comma-separated")
    parser.add_argument("--root", type=Path, default=ROOT, help="the directory holding imgbuild/ to measure")
    parser.add_argument("--log", type=Path, action="append", default=[], help="also an existing log file")
    args = parser.parse_args()
    print(f"imgbuild diagnose from {args.root}")
    for log in args.log:
        seconds, rss, klass = run_diagnose(args.root, log)
        print(f"  {log} ({log.stat().st_size / 2**20:.0f} MiB):  {seconds:7.2f} s  peak RSS {rss:7.0f} MiB  class {klass}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",") if s):
            log = Path(tmp) / f"log-{size}mb.txt"
            write_big_log(log, size)
            seconds, rss, klass = run_diagnose(args.root, log)
            print(f"  {size:>4} MB log ({log.stat().st_size / 2**20:.0f} MiB):  {seconds:7.2f} s  "
                  f"peak RSS {rss:7.0f} MiB  class {klass}")
            log.unlink()
        for shape in (s for s in args.shapes.split(",") if s):
            log = Path(tmp) / "line.txt"
            write_line(log, shape, args.line_kb)
            seconds, rss, klass = run_diagnose(args.root, log)
            print(f"  {args.line_kb} KB single line, {shape + ':':<20} {seconds:7.2f} s  "
                  f"peak RSS {rss:7.0f} MiB  class {klass}")


if __name__ == "__main__":
    main()
