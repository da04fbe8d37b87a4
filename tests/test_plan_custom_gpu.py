"""plan --gpu SIZE[xN] for a GPU matrix.yaml does not list: memory.total in MiB (or GiB), a count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from imgbuild.cli import cli
from imgbuild.errors import UsageError
from imgbuild.knowledge.customgpu import parse_custom_gpu

LLAMA = Path(__file__).resolve().parent / "data" / "models" / "llama-3.1-8b"


@pytest.mark.parametrize("text, want", [
    ("46068MiB", ("46068MiB", 1, 46068)),
    ("24GiBx2", ("24576MiB", 2, 24576)),
    ("23.5 GB x 4", ("24064MiB", 4, 24064)),
    ("L40S", None),
    ("RTX A6000x2", None),
])
def test_sizes_parse_and_names_pass_through(text: str, want: tuple | None) -> None:
    assert parse_custom_gpu(text) == want


@pytest.mark.parametrize("text", ["0MiB", "512MiB", "5000000GiB", "24GiBx0", "24GiBx5000", "24GiBx123456", "24GiBx2x2", "24 TB", "24.5.1GiB"])
def test_bad_sizes_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_custom_gpu(text)


def test_a_sized_gpu_plans_like_the_listed_one_of_that_memory() -> None:
    def plan(gpu: str) -> dict:
        result = CliRunner().invoke(cli, ["plan", str(LLAMA), "--gpu", gpu, "--sglang", "0.5.11", "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    listed, sized = plan("L40S"), plan("46068MiB")
    assert sized["gpu"] == {"name": "46068MiB", "count": 1, "source": "--gpu", "platform": "cuda"}
    assert sized["per_gpu"] == listed["per_gpu"] and sized["mem_fraction_static"] == listed["mem_fraction_static"]


def test_a_bad_size_is_one_line_and_exit_2() -> None:
    result = subprocess.run([sys.executable, "-m", "imgbuild.cli", "plan", str(LLAMA), "--gpu", "0MiB", "--sglang", "0.5.11"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "imgbuild: error: --gpu '0MiB': 0 MiB per GPU is not a GPU's memory (give 1,024 to 4,194,304 MiB, e.g. '46068MiB')"
    ]
