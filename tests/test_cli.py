"""The command line as users run it: exit codes, one-line errors on stderr, --json on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED = str(ROOT / "examples" / "qwen3.6-27b")


def imgbuild(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "imgbuild.cli", *args], capture_output=True, text=True, cwd=ROOT, env=env, check=False
    )


def test_check_seed_on_0_5_9_is_not_supported_and_names_0_5_11() -> None:
    done = imgbuild("check", SEED, "--sglang", "0.5.9")
    assert done.returncode == 1, done.stderr
    assert "NOT SUPPORTED by SGLang 0.5.9" in done.stdout
    assert "oldest SGLang that serves this model: 0.5.11" in done.stdout


def test_check_seed_on_0_5_11_is_supported_with_cuda_13_and_its_driver() -> None:
    done = imgbuild("check", SEED, "--sglang", "0.5.11", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["supported"] is True and data["reasons"] == []
    assert data["sglang"]["cuda"] == "13.0" and data["sglang"]["min_driver"].startswith("580")
    assert data["model"]["architectures"] == ["Qwen3_5ForConditionalGeneration"]
    assert data["min_sglang"] == "0.5.11"
    assert set(data["recommended"]) >= {"sglang", "torch", "cuda", "min_driver"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(["check", SEED, "--sglang", "five"], "SGLang version 'five' is not a version", id="bad-version"),
        pytest.param(["check", SEED, "--sglang", "0.5.11", "--gpu", "Voodoo 5"], "unknown GPU 'Voodoo 5'", id="bad-gpu"),
        pytest.param(["check", "/nonexistent/model", "--sglang", "0.5.11"], "no such file or directory", id="no-model"),
        pytest.param(["check", SEED, "--sglang", "0.5.11", "--matrix", "/nonexistent.yaml"], "does not exist",
                     id="no-matrix"),
        pytest.param(["inspect", "not a model id"], "neither a local path nor a Hugging Face id", id="bad-id"),
        pytest.param(["check"], "Missing argument 'MODEL'", id="usage"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], needle: str) -> None:
    done = imgbuild(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""


def test_matrix_with_errors_is_exit_2_listing_each(tmp_path: Path) -> None:
    bad = tmp_path / "m.yaml"
    bad.write_text('cuda:\n  - {version: 12.8, min_driver: "570"}\ngpus:\n  - {name: X}\n')
    done = imgbuild("matrix", "validate", str(bad))
    assert done.returncode == 2
    assert f"{bad}:2: cuda[0].version: must be a quoted string" in done.stderr
    assert f"{bad}:4: gpus[0].compute_capability: is missing" in done.stderr


def test_debug_shows_the_traceback() -> None:
    done = imgbuild("--debug", "check", SEED, "--sglang", "five")
    assert done.returncode != 0 and "Traceback" in done.stderr


def test_matrix_show_lists_engines_and_one_engine_in_full() -> None:
    table = imgbuild("matrix", "show")
    assert table.returncode == 0 and "0.5.11" in table.stdout and "RTX A6000" in table.stdout
    one = json.loads(imgbuild("matrix", "show", "--sglang", "0.5.11", "--json").stdout)
    assert one["cuda"] == "13.0" and "Qwen3_5ForConditionalGeneration" in one["architectures"]


def test_inspect_json_reports_layers_and_weights() -> None:
    data = json.loads(imgbuild("inspect", SEED, "--json").stdout)
    assert data["linear_attention_layers"] == 48 and data["weight_bytes"] == 55_562_855_904


def test_inspect_names_the_sliding_layers_and_their_own_kv_shape() -> None:
    gemma4 = Path(__file__).parent / "data" / "published_sizes" / "gemma-4-31b-it"
    done = imgbuild("inspect", str(gemma4))
    assert done.returncode == 0
    assert "attention       32 heads, 4 KV heads, head_dim 512" in done.stdout
    assert "sliding window  1024 on 50 layers (16 KV heads, head_dim 256)" in done.stdout


def render_json(tmp_path: Path, *args: str) -> dict:
    done = imgbuild("render", "--sglang", "0.5.11", "-o", str(tmp_path / "ctx"), "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "ctx" / "recipe.json").read_text())


@pytest.mark.parametrize(("old", "new"), [
    pytest.param(["--gpus", "RTX A6000x2"], ["--gpu", "RTX A6000x2"], id="render-gpus"),
])
def test_an_old_option_spelling_still_works_and_means_the_same(tmp_path: Path, old: list[str], new: list[str]) -> None:
    assert render_json(tmp_path / "old", *old) == render_json(tmp_path / "new", *new)
    assert render_json(tmp_path / "new", *new)["target"]["gpus"] == "RTX A6000x2"


@pytest.mark.parametrize(("command", "shown", "hidden"), [
    pytest.param("certify", ["--gpu NAME[xN]", "--model-dir", "--model-ref"], ["--gpus", "--model "], id="certify"),
    pytest.param("render", ["--gpu NAME[xN]", "--model ID", "--sglang VERSION"], ["--gpus", "--engine"], id="render"),
    pytest.param("matrix show", ["--sglang VERSION"], ["--engine"], id="matrix-show"),
    pytest.param("bases refresh", ["--request-timeout"], ["--timeout"], id="bases-refresh"),
    pytest.param("publish", ["--registry-ca"], ["--ca-bundle"], id="publish"),
    pytest.param("verify", ["--registry-ca"], ["--ca-bundle"], id="verify"),
    pytest.param("make", ["--registry-ca", "--ca-bundle"], [], id="make"),
    pytest.param("lock", ["--pip-index-url"], ["--index-url"], id="lock"),
    pytest.param("check", ["--interpreter", "--gpu NAME[xN]"], ["--python"], id="check"),
])
def test_help_shows_one_name_per_option_and_hides_the_old_spellings(command: str, shown: list[str],
                                                                    hidden: list[str]) -> None:
    text = imgbuild(*command.split(), "--help").stdout
    assert all(name in text for name in shown), text
    assert not any(name in text for name in hidden), text


def test_an_sglang_release_is_named_by_sglang_everywhere_and_engine_still_works() -> None:
    new = imgbuild("matrix", "show", "--sglang", "0.5.11", "--json")
    old = imgbuild("matrix", "show", "--engine", "0.5.11", "--json")
    assert new.returncode == old.returncode == 0 and new.stdout == old.stdout
    assert json.loads(new.stdout)["version"] == "0.5.11"


def test_publish_reads_the_registry_ca_under_its_old_name_too(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-ca.pem")
    for name in ("--registry-ca", "--ca-bundle"):
        done = imgbuild("publish", "img", "--to", "127.0.0.1:1/x", name, missing)
        assert done.returncode == 2 and f"'{name}'" in done.stderr and "does not exist" in done.stderr, done.stderr


def test_plan_keeps_kv_only_for_lfm2s_attention_layers() -> None:
    # LiquidAI's LFM2-1.2B (tests/data/published_sizes/lfm2-1.2b): 6 attention layers of 16 hold KV (SGLang's
    # ModelConfig says the same, tests/test_sglang_oracle.py), the 10 ShortConv layers a conv state each
    # (sglang configs/lfm2.py: the full width x (conv_L_cache - 1), no SSM state)
    lfm2 = Path(__file__).parent / "data" / "published_sizes" / "lfm2-1.2b"
    done = imgbuild("plan", str(lfm2), "--gpu", "L4", "--sglang", "0.5.23")
    assert done.returncode == 0, done.stderr
    assert "(12288 B/token)" in done.stdout  # 6 layers x 8 KV heads x 64 x (K, V) x 2 bytes
    assert "conv_state size / ssm_state size" in done.stdout and "/ 0.00" in done.stdout
