"""check: verdicts and reasons against a small matrix, then the shipped one."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from imgbuild.flows.check import CheckOptions, check_model, kernels_run_on
from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.adapters.gpus import GpuDevice, HostGpus, SnapshotProbe
from imgbuild.knowledge.matrix import load_matrix

SEED_MODEL = str(Path(__file__).resolve().parent.parent / "examples" / "qwen3.6-27b")

SMALL = textwrap.dedent(
    """\
    cuda:
      - {version: "12.8", min_driver: "570.26", sm: ["8.0", "8.6", "9.0", "10.0", "12.0"]}
      - {version: "13.0", min_driver: "580.65.06", sm: ["8.0", "8.6", "9.0", "10.0", "12.0"]}
    gpus:
      - {name: RTX A6000, aliases: [a6000], smi_names: [NVIDIA RTX A6000], compute_capability: "8.6", memory_mib: 49140}
      - {name: Tesla V100, aliases: [v100], smi_names: [Tesla V100-SXM2-32GB], compute_capability: "7.0", memory_mib: 32768}
    features:
      - {name: gdn-hybrid, description: Gated DeltaNet hybrid, detect: layer_types, min_sglang: "0.5.2"}
    known_issues:
      - id: qwen3.6-gdn
        match: {model_types: [qwen3_5]}
        min_sglang: "0.5.11"
        reason: Qwen3.6 GDN hybrid checkpoints fail to load
        source: the seed
    engines:
      - {version: "0.5.1", requires_python: ">=3.10", pins: {torch: "==2.8.0"}, torch: "2.8.0", cuda: "12.8",
         architectures_added: [LlamaForCausalLM]}
      - {version: "0.5.9", requires_python: ">=3.10", pins: {torch: "==2.9.1"}, torch: "2.9.1", cuda: "12.8",
         architectures_added: [Qwen3_5ForConditionalGeneration]}
      - {version: "0.5.11", requires_python: ">=3.10", pins: {torch: "==2.11.0"}, torch: "2.11.0", cuda: "13.0"}
    """
)


@pytest.fixture
def small(tmp_path: Path):
    path = tmp_path / "matrix.yaml"
    path.write_text(SMALL)
    return load_matrix(path)


def snapshot(tmp_path: Path, *, driver: str, name: str = "NVIDIA RTX A6000", cc: str = "8.6") -> SnapshotProbe:
    devices = tuple(
        GpuDevice(index=i, uuid=f"GPU-{i}", name=name, memory_total_mib=49140, memory_used_mib=0,
                  memory_free_mib=48600, compute_capability=cc)
        for i in range(2)
    )
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(HostGpus(driver, "13.0", devices).to_dict()))
    return SnapshotProbe(path)


def test_known_issue_blocks_0_5_9_and_names_0_5_11_as_minimum(small) -> None:
    result = check_model(CheckOptions(model=SEED_MODEL, sglang="0.5.9"), matrix=small, probe=None)
    assert not result.supported
    assert result.min_sglang == "0.5.11"
    assert any("needs SGLang >= 0.5.11" in r and "qwen3.6-gdn" in r for r in result.reasons)


def test_architecture_not_yet_registered_names_the_first_release(small) -> None:
    result = check_model(CheckOptions(model=SEED_MODEL, sglang="0.5.1"), matrix=small, probe=None)
    assert any("not registered in SGLang 0.5.1; first registered in 0.5.9" in r for r in result.reasons)
    assert any("gdn-hybrid" in r and ">= 0.5.2" in r for r in result.reasons)


def test_supported_on_0_5_11_with_cuda_and_driver(small) -> None:
    result = check_model(CheckOptions(model=SEED_MODEL, sglang="0.5.11"), matrix=small, probe=None)
    assert result.supported and result.reasons == ()
    data = result.to_dict()
    assert data["sglang"] == {"version": "0.5.11", "source": "matrix", "torch": "2.11.0", "cuda": "13.0",
                              "min_driver": "580.65.06"}
    assert data["recommended"]["sglang"] == "0.5.11" and data["recommended"]["min_driver"] == "580.65.06"
    assert "host not checked: no GPU probe" in data["notes"]


def test_old_driver_on_live_host_is_a_reason_and_changes_the_recommendation(small, tmp_path: Path) -> None:
    probe = snapshot(tmp_path, driver="570.86.15")
    result = check_model(CheckOptions(model=SEED_MODEL, sglang="0.5.11"), matrix=small, probe=probe)
    assert not result.supported
    assert result.reasons == (
        "driver 570.86.15 is older than CUDA 13.0 needs (>= 580.65.06) for SGLang 0.5.11 (torch 2.11.0)",
    )
    assert result.recommended is None  # 0.5.9 would run on that driver but cannot serve the model


def test_gpu_target_compute_capability_not_built_for(small) -> None:
    opts = CheckOptions(model=SEED_MODEL, sglang="0.5.11", gpu="v100x2", driver="580.126.09")
    result = check_model(opts, matrix=small, probe=None)
    assert any("compute capability 7.0" in r for r in result.reasons)


def test_no_driver_leaves_the_host_unchecked_not_failed(small) -> None:
    class NoDriver:
        def read(self) -> HostGpus:
            raise EnvironmentUnavailable("no NVIDIA driver: NVML could not start")

    result = check_model(CheckOptions(model=SEED_MODEL, sglang="0.5.11"), matrix=small, probe=NoDriver())
    assert result.supported and not result.host.checked
    assert "no NVIDIA driver" in result.host.source


def test_two_sglang_sources_are_refused(small) -> None:
    with pytest.raises(UsageError, match="--sglang and --python both name an SGLang"):
        check_model(CheckOptions(model=SEED_MODEL, sglang="0.5.11", python="/usr/bin/python3"), matrix=small, probe=None)


def test_python_without_sglang_is_bad_input(small) -> None:
    with pytest.raises(UsageError, match="no sglang is installed in the environment of"):
        check_model(CheckOptions(model=SEED_MODEL, python="/usr/bin/python3"), matrix=small, probe=None)


@pytest.mark.parametrize(
    ("cc", "built", "runs"),
    [
        pytest.param("8.9", ("8.0", "8.6", "9.0"), True, id="ada-on-sm86"),
        pytest.param("8.6", ("8.0",), True, id="same-major-lower-minor"),
        pytest.param("7.0", ("8.0", "9.0"), False, id="volta-not-built"),
        pytest.param("12.1", ("10.0", "12.0"), True, id="gb10-on-sm120"),
        pytest.param("10.0", ("8.0", "9.0"), False, id="blackwell-needs-its-own"),
    ],
)
def test_kernels_run_on(cc: str, built: tuple[str, ...], runs: bool) -> None:
    assert kernels_run_on(cc, built) is runs


def test_shipped_matrix_seed_verdicts() -> None:
    matrix = load_matrix()
    old = check_model(CheckOptions(model=SEED_MODEL, sglang="0.5.9"), matrix=matrix, probe=None)
    new = check_model(CheckOptions(model=SEED_MODEL, sglang="0.5.11"), matrix=matrix, probe=None)
    assert not old.supported and old.min_sglang == "0.5.11"
    assert new.supported and new.sglang.engine.cuda == "13.0"
    assert new.sglang_min_driver and new.sglang_min_driver.startswith("580")


def test_check_with_launch_flags_uses_the_planner_and_reports_its_refusal() -> None:
    flags = ("--tp", "2", "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
             "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4")
    opts = CheckOptions(model=SEED_MODEL, sglang="0.5.11", gpu="RTX A6000x2", flags=flags)
    result = check_model(opts, matrix=load_matrix(), probe=None)
    assert not result.supported and result.plan is not None and result.plan.verdict == "refused"
    assert any("not compatible with radix cache" in r for r in result.reasons)
    fixed = check_model(
        CheckOptions(model=SEED_MODEL, sglang="0.5.11", gpu="RTX A6000x2",
                     flags=(*flags, "--disable-radix-cache", "--mamba-ssm-dtype", "bfloat16",
                            "--mem-fraction-static", "0.85")),
        matrix=load_matrix(), probe=None,
    )
    assert fixed.supported and fixed.plan.fits and fixed.to_dict()["plan"]["per_gpu"]["kv_tokens"] > 0


def test_check_with_flags_but_no_known_gpus_says_they_were_not_planned(small) -> None:
    opts = CheckOptions(model=SEED_MODEL, sglang="0.5.11", flags=("--tp", "2"))
    result = check_model(opts, matrix=small, probe=None)
    assert result.plan is None and "launch flags not planned: no GPUs known (pass --gpu NAME[xN])" in result.notes


def test_a_gptq_checkpoint_on_a_gpu_without_marlin_is_not_supported_from_0_5_20(tmp_path: Path) -> None:
    """The shipped matrix (0.5.19 and 0.5.23 in it); Llama 3.1 8B's published config with transformers'
    GPTQConfig(bits=4, group_size=128, desc_act=False, sym=True) quantization_config."""
    config = json.loads((Path(__file__).resolve().parent / "data" / "models" / "llama-3.1-8b" / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
    (tmp_path / "config.json").write_text(json.dumps(config))
    shipped = load_matrix()
    t4 = check_model(CheckOptions(model=str(tmp_path), sglang="0.5.23", gpu="T4x1", driver="580.126.09"),
                     matrix=shipped, probe=None)
    assert not t4.supported
    assert any("Marlin needs a GPU of sm80 or newer (this one is sm75)" in r for r in t4.reasons)
    assert t4.recommended is not None and t4.recommended.version == "0.5.19"  # the newest that runs plain GPTQ
    a6000 = check_model(CheckOptions(model=str(tmp_path), sglang="0.5.23", gpu="RTX A6000x1", driver="580.126.09"),
                        matrix=shipped, probe=None)
    assert a6000.supported and a6000.reasons == ()
