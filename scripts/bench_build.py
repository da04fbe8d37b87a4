#!/usr/bin/env python3
"""Benchmarks for render/build; prints figures, asserts nothing.

  1. rendering every target of matrix.yaml (target: under 1 s), in process and as `imgbuild render`
  2. a no-op rebuild of an unchanged recipe (target: under 2 s): `imgbuild build` of the test
     target when its image exists; needs the engine (scripts/services) and builds it once first.

Usage: .venv/bin/python scripts/bench_build.py   (eval "$(scripts/services env)" first for 2.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from imgbuild.errors import ImgbuildError  # noqa: E402
from imgbuild.knowledge.matrix import load_matrix  # noqa: E402
from imgbuild.knowledge.recipe import with_base_override  # noqa: E402
from imgbuild.knowledge.render import bases_of, render_context, resolve_inputs, targets_of, write_context  # noqa: E402

PLACEHOLDER_BASE = "127.0.0.1:5055/imgbuild-test-base@sha256:" + "0" * 64
IMGBUILD = str(ROOT / ".venv" / "bin" / "imgbuild")


def render_all(out_dir: Path) -> int:
    matrix = load_matrix()
    bases = bases_of(matrix.raw)
    count = 0
    for target in targets_of(matrix.raw).values():
        base = bases.get(target.base)
        if base is not None and not base.digest:  # made per machine: the test base
            target = with_base_override(target, os.environ.get("IMGBUILD_TEST_BASE", PLACEHOLDER_BASE))
        engine = matrix.engine(target.engine) if target.kind == "sglang" else None
        inputs = resolve_inputs(target, bases=bases, engine=engine, locks_dir=matrix.path.parent / "locks")
        write_context(render_context(inputs), out_dir / target.name)
        count += 1
    return count


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        count = render_all(Path(tmp))
        in_process = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run([IMGBUILD, "render", "qwen3.6-27b-a6000x2", "-o", f"{tmp}/cli"], check=True, capture_output=True)
        cli_one = time.perf_counter() - start
    print(f"render every target ({count}) in process: {in_process:.3f} s  (target < 1 s)")
    print(f"`imgbuild render qwen3.6-27b-a6000x2` wall time, interpreter start included: {cli_one:.3f} s")

    base = os.environ.get("IMGBUILD_TEST_BASE")
    tmp = tempfile.mkdtemp(prefix="imgbuild-bench-")
    if not base:
        print("no-op rebuild: skipped (no IMGBUILD_TEST_BASE: run scripts/services start and eval its env)")
        return
    ca = "/etc/ssl/certs/ca-certificates.crt"
    cmd = [IMGBUILD, "build", "test-sglang-0.5.9", "--base", base, "--ca-bundle", ca, "--record", f"{tmp}/record.json"]
    first = subprocess.run(cmd, capture_output=True, text=True)
    if first.returncode != 0:
        print(f"no-op rebuild: the first build failed: {first.stderr.strip().splitlines()[-1:]}")
        return
    times = []
    for _ in range(3):
        start = time.perf_counter()
        run = subprocess.run(cmd, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        assert "skipped" in run.stdout, run.stdout
    print(f"no-op rebuild (`imgbuild build` of an unchanged recipe, skipped): best {min(times):.3f} s, "
          f"worst {max(times):.3f} s of 3  (target < 2 s)")


if __name__ == "__main__":
    try:
        main()
    except ImgbuildError as exc:
        print(f"bench_build: {exc.one_line()}", file=sys.stderr)
        sys.exit(exc.exit_code)
