"""The engine adapter against the real engine: export_sglang_install, throwaway containers, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbuild.adapters import engine as engine_mod
from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.knowledge.sglanginstall import parse_metadata, read_installation


def test_no_engine_is_environment_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    with pytest.raises(EnvironmentUnavailable, match="no Docker engine answers"):
        engine_mod.connect(timeout_s=5)


def test_export_without_engine_is_environment_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    with pytest.raises(EnvironmentUnavailable):
        engine_mod.export_sglang_install("imgbuild/sglang:any", tmp_path / "out")


def _containers_of(engine, image_id: str) -> list:  # noqa: ANN001
    return engine.api.containers(all=True, filters={"ancestor": image_id})


@pytest.mark.docker
def test_export_sglang_install_copies_metadata_and_models(built_test_image, docker_engine, tmp_path: Path) -> None:  # noqa: ANN001
    before = _containers_of(docker_engine, built_test_image.image_id)
    out = engine_mod.export_sglang_install(built_test_image.image, tmp_path / "export")
    assert out == tmp_path / "export"
    version, requires_python, _ = parse_metadata((out / "sglang-0.5.9.dist-info" / "METADATA").read_text())
    assert (version, requires_python) == ("0.5.9", ">=3.10")
    models = sorted(p.name for p in (out / "sglang" / "srt" / "models").glob("*.py"))
    assert "llama.py" in models and "qwen3.py" in models
    install = read_installation(out)
    assert install is not None and "LlamaForCausalLM" in install.architectures
    assert _containers_of(docker_engine, built_test_image.image_id) == before


@pytest.mark.docker
def test_export_from_an_image_without_sglang_is_usage_error(test_base_ref, docker_engine, tmp_path: Path) -> None:  # noqa: ANN001
    with pytest.raises(UsageError, match="holds no sglang"):
        engine_mod.export_sglang_install(test_base_ref, tmp_path)


@pytest.mark.docker
def test_export_from_an_unknown_image_is_usage_error(docker_engine, tmp_path: Path) -> None:  # noqa: ANN001
    with pytest.raises(UsageError, match="is not in the local engine"):
        engine_mod.export_sglang_install("imgbuild-test/no-such-image:never", tmp_path)


@pytest.mark.docker
def test_environment_manifest_ignores_bytecode_and_hashes_packages(built_test_image, docker_engine) -> None:  # noqa: ANN001
    manifest = engine_mod.environment_manifest(docker_engine, built_test_image.image)
    assert manifest["prefix"] == "/opt/venv"
    assert manifest["packages"]["sglang"]["version"] == "0.5.9"
    assert len(manifest["packages"]["six"]["sha256"]) == 64
    assert not [f for f in manifest["files"] if f.endswith(".pyc") or "__pycache__" in f]


@pytest.mark.docker
def test_run_python_reports_exit_code_and_output(test_base_ref, docker_engine) -> None:  # noqa: ANN001
    status, output = docker_engine.run_python(test_base_ref, "import sys; print('hi'); sys.exit(3)")
    assert (status, output.strip()) == (3, "hi")
