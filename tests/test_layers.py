"""The layers of STYLE.md as folders: knowledge -> adapters -> flows -> cli, imports flowing one way.

knowledge/ modules import no adapter library (docker, httpx, pynvml, click), so check and plan
start fast; nothing imports from a layer above its own.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "imgbuild"
HEAVY = ("docker", "httpx", "pynvml", "click", "torch")
# Lower rank may not import higher rank. errors.py and __init__.py sit at the bottom.
RANK = {"": 0, "knowledge": 1, "adapters": 2, "flows": 3, "cli": 4}
KNOWLEDGE_MODULES = sorted(f"imgbuild.knowledge.{p.stem}" for p in (PACKAGE / "knowledge").glob("*.py") if p.stem != "__init__")


def loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in RANK else ""


def imports_of(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("imgbuild"):
            names = [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, node.module if layer_of(node.module) else n) for n in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("imgbuild")]
    return found


@pytest.mark.parametrize("module", ["imgbuild.errors", *KNOWLEDGE_MODULES])
def test_knowledge_module_imports_no_adapter_library(module: str) -> None:
    assert loaded_after(f"import {module}") == []


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    climbing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = layer_of("imgbuild." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        for line, target in imports_of(path):
            if RANK[layer_of(target)] > RANK[own]:
                climbing.append(f"{path.relative_to(ROOT)}:{line}: imports {target}")
    assert climbing == []


def test_every_module_lives_in_a_layer_folder() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py", "errors.py"))
    assert loose == []


def test_check_with_gpu_target_loads_neither_docker_nor_httpx_nor_pynvml() -> None:
    code = (
        "from imgbuild.cli import main\n"
        "try:\n"
        "    main(['check', 'examples/qwen3.6-27b', '--sglang', '0.5.11', '--gpu', 'RTX A6000x2', '--json'])\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert loaded_after(code) == ["click"]


def test_no_function_over_60_lines_without_a_reason_in_its_docstring() -> None:
    """STYLE: a function over 60 lines says why in its docstring ("Over 60 lines because ...")."""
    long_ones = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 60 and "Over 60 lines" not in (ast.get_docstring(node) or ""):
                    long_ones.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name} ({lines} lines)")
    assert long_ones == []
