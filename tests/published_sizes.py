"""Published configs with their published checkpoint sizes: the cases of tests/test_published_sizes.py
and scripts/bench_model_sizes.py.

A case is a model folder under tests/data whose SOURCE.md cites config.json's origin and quotes the
checkpoint's `"total_size": N` (model.safetensors.index.json's metadata, vendored in a public
repository it names) or, for a single-file checkpoint, its Git LFS pointer's `"size N"` or a Hub file
listing's `"size": N` (the file's bytes: the tensors plus a safetensors header of kilobytes). The config is copied alone into a scratch folder, so imgbuild counts it as
a local copy without its index: from the shapes (and the quantization config), never the index.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imgbuild.knowledge.modelinfo import inspect_model

DATA = Path(__file__).resolve().parent / "data"
MODEL_ROOTS = (DATA / "models", DATA / "plan_logs" / "models", DATA / "published_sizes")
_TOTAL_SIZE = re.compile(r'"total_size":\s*(\d+)|"size (\d+)"|"size":\s*(\d+)')


@dataclass(frozen=True)
class SizeCase:
    name: str
    folder: Path
    published: int


def cases() -> list[SizeCase]:
    found = []
    for root in MODEL_ROOTS:
        for source in sorted(root.glob("*/SOURCE.md")):
            m = _TOTAL_SIZE.search(source.read_text(encoding="utf-8"))
            if m and (source.parent / "config.json").is_file():
                found.append(SizeCase(source.parent.name, source.parent, int(m.group(1) or m.group(2) or m.group(3))))
    return found


def measure(case: SizeCase) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(case.folder / "config.json", Path(scratch) / "config.json")
        info = inspect_model(scratch)
    counted = info.weight_bytes
    return {
        "name": case.name,
        "model_type": info.model_type,
        "counted": counted,
        "source": info.weight_bytes_source,
        "published": case.published,
        "error": None if counted is None else counted / case.published - 1,
    }
