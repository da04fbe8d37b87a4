"""flows.targets: the one target/base resolution (render, build, make) and certify's host set-up."""

from __future__ import annotations

import pytest

from imgbuild.errors import UsageError
from imgbuild.flows.targets import (
    CertifyHost,
    TargetRequest,
    certify_options,
    default_repository,
    remote_docker_host,
    resolve_target,
    target_from_request,
    with_base,
)
from imgbuild.knowledge.matrix import load_matrix
from imgbuild.knowledge.render import bases_of, find_target

PINNED = "127.0.0.1:5055/imgbuild-test-base@sha256:" + "0" * 64


@pytest.fixture(scope="module")
def matrix():  # noqa: ANN201 - Matrix
    return load_matrix()


@pytest.mark.parametrize(("docker_host", "remote"), [
    pytest.param("", False, id="unset"),
    pytest.param("unix:///run/imgbuild-docker.sock", False, id="unix-socket"),
    pytest.param("tcp://127.0.0.1:2375", False, id="tcp-loopback"),
    pytest.param("ssh://localhost", False, id="ssh-localhost"),
    pytest.param("tcp://gpu-box:2376", True, id="tcp-remote"),
    pytest.param("ssh://me@10.0.0.7", True, id="ssh-remote"),
])
def test_a_docker_host_is_remote_when_it_names_another_machine(docker_host: str, remote: bool) -> None:
    assert (remote_docker_host({"DOCKER_HOST": docker_host}) is not None) == remote


def test_default_repository_is_under_imgbuild_registry_when_set() -> None:
    assert default_repository({}) == "imgbuild/sglang"
    assert default_repository({"IMGBUILD_REGISTRY": "127.0.0.1:5055"}) == "127.0.0.1:5055/imgbuild/sglang"


def test_a_named_target_resolves_to_the_bytes_of_its_matrix_entry(matrix) -> None:  # noqa: ANN001
    inputs = resolve_target(matrix, TargetRequest(name="qwen3.6-27b-a6000x2"))
    assert inputs.target.name == "qwen3.6-27b-a6000x2" and inputs.base_ref.endswith(
        bases_of(matrix.raw)["cuda-13.0.1-devel-ubuntu24.04"].digest or "")


def test_a_command_line_target_takes_the_newest_devel_base_of_its_cuda(matrix) -> None:  # noqa: ANN001
    target = target_from_request(matrix, TargetRequest(engine="0.5.11", model="Qwen/Qwen3.6-27B"))
    assert target.name == "sglang-0.5.11-cu130" and target.base == "cuda-13.0.1-devel-ubuntu24.04"
    assert target.python == "3.12" and target.source == "command line"


@pytest.mark.parametrize(("request_", "needle"), [
    pytest.param(TargetRequest(name="qwen3.6-27b-a6000x2", engine="0.5.11"), "not both", id="name-and-engine"),
    pytest.param(TargetRequest(), "give a TARGET", id="neither"),
    pytest.param(TargetRequest(engine="0.5.11", cuda="11.0"), "no -devel base for CUDA 11.0", id="no-base"),
    pytest.param(TargetRequest(name="nope"), "unknown target 'nope'", id="unknown-name"),
])
def test_a_request_that_names_no_target_is_a_usage_error(matrix, request_: TargetRequest, needle: str) -> None:  # noqa: ANN001
    with pytest.raises(UsageError, match=needle):
        target_from_request(matrix, request_)


def test_base_override_replaces_any_base_for_build_and_only_unpinned_ones_for_make(matrix) -> None:  # noqa: ANN001
    bases = bases_of(matrix.raw)
    pinned_target = find_target(matrix.raw, "qwen3.6-27b-a6000x2")
    unpinned_target = find_target(matrix.raw, "test-sglang-0.5.9")
    assert with_base(pinned_target, bases, PINNED, unpinned_only=False).base == PINNED
    assert with_base(pinned_target, bases, PINNED, unpinned_only=True) == pinned_target
    if not bases[unpinned_target.base].digest:
        assert with_base(unpinned_target, bases, PINNED, unpinned_only=True).base == PINNED
    with pytest.raises(UsageError):
        with_base(pinned_target, bases, "ubuntu:24.04", unpinned_only=False)  # not pinned by digest


def test_certify_options_take_the_targets_gpus_flags_and_model_unless_given(matrix) -> None:  # noqa: ANN001
    target = find_target(matrix.raw, "qwen3.6-27b-a6000x2")
    remote = CertifyHost(probe=None, probe_source="nvidia-smi on tcp://gpu-box:2376", http_in_container=True)
    opts = certify_options(image="img", target=target, host=remote)
    assert (opts.gpus, opts.target_gpus, opts.model_ref) == ("RTX A6000x2", "RTX A6000x2", "Qwen/Qwen3.6-27B")
    assert opts.launch_flags == target.launch_flags and opts.http_in_container
    given = certify_options(image="img", target=target, host=remote, gpus="L4", launch_flags=(), model_dir="/m")
    assert (given.gpus, given.launch_flags, given.model_dir, given.model_ref) == ("L4", (), "/m", None)
    bare = certify_options(image="img", target=None, host=remote)
    assert (bare.gpus, bare.target_name, bare.launch_flags) == ("", None, ())  # the image's recipe fills them
