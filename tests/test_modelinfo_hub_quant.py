"""A Hub checkpoint whose quantization is only in hf_quant_config.json (ModelOpt): read over real
HTTP from the stand-in Hub when its index is evidently quantized, and only then."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hubserver import HubServer
from imgbuild.adapters.hub import HubClient
from imgbuild.knowledge.modelinfo import inspect_model

NVFP4 = Path(__file__).resolve().parent / "data" / "quantized" / "llama-3.3-70b-nvfp4"


def _repo(root: Path, total_size: int) -> None:
    repo = root / "nvidia" / "Llama-3.3-70B-Instruct-NVFP4" / "main"
    repo.mkdir(parents=True)
    for name in ("config.json", "hf_quant_config.json"):
        shutil.copy(NVFP4 / name, repo / name)
    (repo / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total_size}}))


def test_an_evidently_quantized_index_fetches_hf_quant_config(tmp_path: Path) -> None:
    _repo(tmp_path / "hub", 42_709_045_632)  # the published total: a third of the BF16 shapes
    with HubServer(tmp_path / "hub") as hub:
        client = HubClient(endpoint=hub.url, cache_dir=tmp_path / "cache", offline=False)  # type: ignore[arg-type]
        info = inspect_model("nvidia/Llama-3.3-70B-Instruct-NVFP4", hub=client)
        assert info.quantization == "modelopt"
        assert info.geometry.quant is not None and info.geometry.quant.kv_cache_quant_algo == "FP8"
        assert info.weight_bytes == 42_709_045_632  # the index's bytes win over the estimate
        assert len(hub.requests) == 3


def test_a_bf16_sized_index_does_not_ask_for_it(tmp_path: Path) -> None:
    _repo(tmp_path / "hub", 141_107_412_992)  # what the same shapes take in BF16
    with HubServer(tmp_path / "hub") as hub:
        client = HubClient(endpoint=hub.url, cache_dir=tmp_path / "cache", offline=False)  # type: ignore[arg-type]
        info = inspect_model("nvidia/Llama-3.3-70B-Instruct-NVFP4", hub=client)
        assert info.quantization is None and len(hub.requests) == 2
