"""matrix.yaml's gpus: section as shipped: every row is reachable by what users type, and cited."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbuild.flows.check import CheckOptions, check_model
from imgbuild.errors import UsageError
from imgbuild.knowledge.matrix import GPU_PLATFORMS, load_matrix, normalize_gpu_name

SEED_MODEL = str(Path(__file__).resolve().parent.parent / "examples" / "qwen3.6-27b")


@pytest.fixture(scope="module")
def shipped():
    return load_matrix()


def test_every_gpu_name_and_alias_resolves_to_its_own_row(shipped) -> None:
    """A name or alias that another row's name or smi name shadows would silently plan the wrong card."""
    wrong = []
    for gpu in shipped.gpus:
        for text in (gpu.name, *gpu.aliases):
            spec, count = shipped.resolve_gpu(text, platforms=GPU_PLATFORMS)
            if spec is not gpu or count != 1:
                wrong.append(f"{text!r} -> {spec.name} x{count}, expected {gpu.name}")
    assert wrong == []


def test_an_smi_name_shared_by_two_rows_resolves_to_one_with_the_same_compute_capability(shipped) -> None:
    """nvidia-smi prints one name for e.g. the 10 GB and 12 GB RTX 3080; whichever row a
    probed device lands on must agree on the compute capability, the only thing plan reads from it."""
    by_smi: dict[str, list] = {}
    for gpu in shipped.gpus:
        for smi in gpu.smi_names:
            by_smi.setdefault(normalize_gpu_name(smi), []).append(gpu)
    for key, rows in by_smi.items():
        listed = shipped.gpu_by_smi_name(key)
        assert listed in rows, key
        assert {r.compute_capability for r in rows} == {listed.compute_capability}, key


def test_every_gpu_row_cites_a_public_url(shipped) -> None:
    rows = shipped.raw["gpus"]
    assert len(rows) == len(shipped.gpus)
    uncited = [r["name"] for r in rows if "https://" not in str(r.get("source", ""))]
    assert uncited == []


@pytest.mark.parametrize(
    "gpu,sglang,refused",
    [
        pytest.param("Tesla V100-SXM2-32GB", "0.5.11", True, id="volta-on-cuda-13.0"),
        pytest.param("Tesla V100-SXM2-32GB", "0.5.9", False, id="volta-on-cuda-12.8"),
        pytest.param("Tesla T4", "0.5.11", False, id="turing-on-cuda-13.0"),
        pytest.param("NVIDIA GB200", "0.5.11", False, id="blackwell-on-cuda-13.0"),
    ],
)
def test_check_reads_compute_capability_of_the_added_rows(shipped, gpu: str, sglang: str, refused: bool) -> None:
    opts = CheckOptions(model=SEED_MODEL, sglang=sglang, gpu=gpu, driver="580.126.09")
    result = check_model(opts, matrix=shipped, probe=None)
    assert any("compute capability" in r for r in result.reasons) is refused, result.reasons


def test_an_amd_gpu_is_planned_but_not_built_or_checked_for(shipped) -> None:
    """The MI300X row (platform rocm) resolves for plan; check, build and certify resolve GPUs
    with the default CUDA-only platforms and refuse it in one line that points at plan."""
    spec, count = shipped.resolve_gpu("MI300Xx4", platforms=GPU_PLATFORMS)
    assert (spec.name, spec.platform, count) == ("MI300X", "rocm", 4)
    with pytest.raises(UsageError) as refused:
        check_model(CheckOptions(model=SEED_MODEL, sglang="0.5.11", gpu="MI300Xx4"), matrix=shipped, probe=None)
    assert "AMD GPU (ROCm)" in refused.value.message
    assert "imgbuild plan --gpu 'MI300Xx4'" in (refused.value.hint or "")
