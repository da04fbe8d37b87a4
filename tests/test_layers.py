"""STYLE.md's layers: data modules import no adapter library, so check and plan start fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("docker", "httpx", "pynvml", "click", "torch")
DATA_MODULES = ["imgbuild.errors", "imgbuild.specs", "imgbuild.matrix", "imgbuild.modelinfo", "imgbuild.sglanginstall"]
DATA_MODULES += [m for m in ("imgbuild.memory", "imgbuild.render", "imgbuild.triage", "imgbuild.launchflags")
                 if (ROOT / (m.replace(".", "/") + ".py")).exists()]


def loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", DATA_MODULES)
def test_data_module_imports_no_adapter_library(module: str) -> None:
    assert loaded_after(f"import {module}") == []


def test_check_with_gpu_target_loads_neither_docker_nor_httpx_nor_pynvml() -> None:
    code = (
        "from imgbuild.cli import main\n"
        "try:\n"
        "    main(['check', 'examples/qwen3.6-27b', '--sglang', '0.5.11', '--gpu', 'RTX A6000x2', '--json'])\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert loaded_after(code) == ["click"]
