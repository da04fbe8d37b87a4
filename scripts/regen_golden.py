#!/usr/bin/env python3
"""Regenerate the golden Dockerfiles in tests/golden/ from tests/golden/matrix.yaml.

Usage: .venv/bin/python scripts/regen_golden.py   (then review `git diff tests/golden`)
tests/test_render.py compares `imgbuild render` of these targets with the files, byte for byte.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from imgbuild.knowledge.matrix import load_matrix  # noqa: E402
from imgbuild.knowledge.render import bases_of, find_target, render_context, resolve_inputs  # noqa: E402

GOLDEN = ROOT / "tests" / "golden"
TARGETS = ("golden-sglang", "golden-test")


def render_golden(name: str) -> bytes:
    matrix = load_matrix(GOLDEN / "matrix.yaml")
    target = find_target(matrix.raw, name)
    engine = matrix.engine(target.engine) if target.kind == "sglang" else None
    inputs = resolve_inputs(target, bases=bases_of(matrix.raw), engine=engine, locks_dir=GOLDEN / "locks")
    return render_context(inputs).files["Dockerfile"]


def main() -> None:
    for name in TARGETS:
        path = GOLDEN / f"{name}.Dockerfile"
        path.write_bytes(render_golden(name))
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
