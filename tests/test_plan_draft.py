"""--speculative-draft-model-path: the draft's config.json read with the same reader, its weights
and its own KV pool (the target's token count, its own layers) counted per SGLang's draft worker."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from imgbuild.cli import cli

DATA = Path(__file__).resolve().parent / "data"
TARGET = DATA / "models" / "llama-3.1-8b"
EAGLE3 = DATA / "drafts" / "llama-3.1-8b-eagle3"
SPEC = ["--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


def _plan(*flags: str, sglang: str = "0.5.11", model: Path = TARGET) -> tuple[int, dict | str]:
    result = CliRunner().invoke(cli, ["plan", str(model), "--gpu", "H100 80GB HBM3x1", "--sglang", sglang, "--json", "--", *flags])
    try:
        return result.exit_code, json.loads(result.stdout)
    except ValueError:
        return result.exit_code, result.output


def test_an_eagle3_draft_is_counted_from_its_config() -> None:
    code, plan = _plan("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(EAGLE3), *SPEC)
    assert code == 0 and isinstance(plan, dict)
    gpu = plan["per_gpu"]
    # one layer (qkv over 2H), fc 3H -> H, a head over 31,960 tokens: ~811 MiB ("~811MB")
    assert abs(gpu["draft_weights_gib"] * 1024 / 811 - 1) < 0.02
    # its own embed_tokens exists until the target's is swapped in (eagle_worker.py set_embed)
    assert abs(gpu["draft_transient_gib"] - 128256 * 4096 * 2 / 2**30) < 0.01
    # 1 layer x 8 KV heads x (128 + 128) x 2 bytes for each of the target's tokens
    assert abs(gpu["draft_kv_gib"] - (gpu["kv_tokens"] + 1) * 4096 / 2**30) < 0.002
    assert not any("not inspected" in n for n in plan["notes"])


def test_draft_weights_shrink_the_target_pool_from_0_5_14() -> None:
    flags = ("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(EAGLE3), *SPEC,
             "--mem-fraction-static", "0.8")
    _, without = _plan("--speculative-algorithm", "EAGLE3", *SPEC, "--mem-fraction-static", "0.8", sglang="0.5.23")
    _, with_draft = _plan(*flags, sglang="0.5.23")
    assert isinstance(without, dict) and isinstance(with_draft, dict)
    # 0.5.14+: the draft loads before the KV pool is sized (its weights and embed copy come out of it)
    assert with_draft["per_gpu"]["kv_tokens"] < without["per_gpu"]["kv_tokens"]


def test_a_standalone_draft_is_a_whole_second_model() -> None:
    code, plan = _plan("--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", str(TARGET),
                       *SPEC, model=DATA / "models" / "qwq-32b")
    assert isinstance(plan, dict), plan
    # Llama 3.1 8B: 8.03 B parameters in bf16, nothing shared with the target
    assert 14.5 < plan["per_gpu"]["draft_weights_gib"] < 15.5


def test_a_missing_draft_is_bad_input_naming_the_flag() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "imgbuild.cli", "plan", str(TARGET), "--gpu", "H100 80GB HBM3x1", "--sglang", "0.5.11", "--",
         "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/nonexistent/draft"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "--speculative-draft-model-path: model /nonexistent/draft" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_table_labels_an_external_draft_by_its_algorithm_and_mtp_layers_as_mtp() -> None:
    def table(*flags: str, model: Path = TARGET, gpu: str = "H100 80GB HBM3x1") -> str:
        result = CliRunner().invoke(cli, ["plan", str(model), "--gpu", gpu, "--sglang", "0.5.14", "--", *flags])
        assert result.exit_code in (0, 1), result.output
        return result.stdout

    eagle3 = table("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(EAGLE3), *SPEC)
    assert "EAGLE3 draft model weights, counted above" in eagle3 and "MTP" not in eagle3
    standalone = table("--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", str(TARGET), *SPEC,
                       model=DATA / "models" / "qwq-32b")
    assert "STANDALONE draft model weights" in standalone and "MTP" not in standalone
    # the target's own MTP layers (Qwen3.6's NEXTN) are the MTP draft
    mtp = table("--tp", "2", "--speculative-algorithm", "NEXTN", *SPEC, model=DATA.parent.parent / "examples" / "qwen3.6-27b",
                gpu="H100 80GB HBM3x2")
    assert "draft (MTP) weights" in mtp
