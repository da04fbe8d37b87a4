"""imgbuild.knowledge.specs: the frozen records load_matrix() reads from the real
matrix.yaml (engines generated from the wheels, GPUs, CUDA, features, known issues)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from imgbuild.knowledge.matrix import Matrix, load_matrix
from imgbuild.knowledge.specs import CudaSpec, EngineSpec, FeatureSpec, GpuSpec, KnownIssue, SpeculativeSpec


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


@pytest.mark.parametrize(("version", "requires_python", "glibc", "torch", "cuda"), [
    ("0.5.9", ">=3.10", None, "2.9.1", "12.8"),
    ("0.5.11", ">=3.10", "2.34", "2.11.0", "13.0"),
], ids=["pure-wheel-has-no-glibc", "manylinux-wheel-needs-glibc-2.34"])
def test_an_engine_row_holds_what_its_wheel_declares(
    matrix: Matrix, version: str, requires_python: str, glibc: str | None, torch: str, cuda: str
) -> None:
    engine = matrix.engine(version)
    assert isinstance(engine, EngineSpec)
    assert (engine.requires_python, engine.glibc, engine.torch, engine.cuda) == (requires_python, glibc, torch, cuda)
    assert engine.pins["torch"] == f"=={torch}"


def test_an_engine_lists_its_model_classes_as_a_frozenset(matrix: Matrix) -> None:
    architectures = matrix.engine("0.5.9").architectures
    assert isinstance(architectures, frozenset)
    assert {"Qwen3ForCausalLM", "LlamaForCausalLM"} <= architectures


def test_a_gpu_row_carries_its_nvidia_smi_name_and_memory(matrix: Matrix) -> None:
    gpu, count = matrix.resolve_gpu("RTX A6000x2")
    assert gpu == GpuSpec(name="RTX A6000", aliases=("a6000", "rtx-a6000"), smi_names=("NVIDIA RTX A6000",),
                          compute_capability="8.6", memory_mib=49140, nvlink=False)
    assert count == 2


def test_a_cuda_row_carries_its_minimum_driver_and_compute_capabilities(matrix: Matrix) -> None:
    cuda = matrix.cuda_spec("13.0")
    assert isinstance(cuda, CudaSpec)
    assert cuda.min_driver == "580.65.06"
    assert "8.6" in cuda.sm


RECORDS: list[tuple[str, Callable[[Matrix], Any], type, str]] = [
    ("engine", lambda m: m.engine("0.5.9"), EngineSpec, "torch"),
    ("gpu", lambda m: m.resolve_gpu("RTX A6000")[0], GpuSpec, "memory_mib"),
    ("cuda", lambda m: m.cuda_spec("13.0"), CudaSpec, "min_driver"),
    ("feature", lambda m: m.features[0], FeatureSpec, "min_sglang"),
    ("speculative", lambda m: next(s for s in m.speculative if s.algorithm == "NEXTN"), SpeculativeSpec, "min_sglang"),
    ("known-issue", lambda m: m.known_issues[0], KnownIssue, "min_sglang"),
]


@pytest.mark.parametrize(("pick", "kind", "attr"), [r[1:] for r in RECORDS], ids=[r[0] for r in RECORDS])
def test_every_record_is_frozen(matrix: Matrix, pick: Callable[[Matrix], Any], kind: type, attr: str) -> None:
    record = pick(matrix)
    assert isinstance(record, kind)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, attr, "changed")


def test_a_known_issue_names_its_fix_release_and_a_source(matrix: Matrix) -> None:
    issue = next(i for i in matrix.known_issues if i.id == "qwen3_5-dense-tp-allreduce")
    assert issue.min_sglang == "0.5.11"
    assert "Qwen3_5ForCausalLM" in issue.architectures
    assert issue.source.startswith("https://")


def test_the_nextn_algorithm_needs_mtp_layers_from_0_4_3_post1(matrix: Matrix) -> None:
    nextn = next(s for s in matrix.speculative if s.algorithm == "NEXTN")
    assert nextn.min_sglang == "0.4.3.post1"
    assert "MTP" in nextn.needs


def test_engine_spec_architectures_default_to_empty() -> None:
    spec = EngineSpec(version="1.0", requires_python=">=3.10", glibc=None, pins={}, torch=None, cuda=None)
    assert spec.architectures == frozenset()
