"""imgbuild.knowledge.sglanginstall: the model classes and METADATA of an SGLang install,
read from the real sglang 0.5.9 wheel (fetched once into .cache/wheels by pip download)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from imgbuild.errors import UsageError
from imgbuild.knowledge.sglanginstall import parse_entry_classes, parse_metadata, read_installation
from test_check_installed import wheel

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def wheel_0_5_9() -> zipfile.ZipFile:
    with zipfile.ZipFile(wheel("0.5.9")) as archive:
        yield archive


@pytest.fixture(scope="module")
def site_0_5_9(wheel_0_5_9: zipfile.ZipFile, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel unpacked as pip --target lays it out: a site-packages folder."""
    site = tmp_path_factory.mktemp("site-packages")
    wheel_0_5_9.extractall(site)
    return site


@pytest.mark.parametrize(("member", "expected"), [
    ("sglang/srt/models/qwen3.py", ["Qwen3ForCausalLM"]),
    ("sglang/srt/models/llama.py", ["IQuestCoderForCausalLM", "InternLM3ForCausalLM", "LlamaForCausalLM", "Phi3ForCausalLM"]),
    ("sglang/srt/models/deepseek_v2.py", ["DeepseekV2ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM"]),
], ids=["single-class", "list-with-a-subclass", "list-on-one-line"])
def test_entry_classes_of_real_model_files_are_the_names_sglang_registers(
    wheel_0_5_9: zipfile.ZipFile, member: str, expected: list[str]
) -> None:
    names, problems = parse_entry_classes(wheel_0_5_9.read(member).decode("utf-8-sig"))
    assert (names, problems) == (expected, [])


@pytest.mark.parametrize(("source", "expected"), [
    ("class A: pass\nB = A\nEntryClass = B\n", ["A"]),
    ("from x import Real as Alias\nEntryClass = [Alias]\n", ["Real"]),
    ("class A: pass\nclass B: pass\nEntryClass = [A]\nEntryClass.append(B)\n", ["A", "B"]),
    ("class A: pass\n", []),
], ids=["alias-registers-the-class-name", "import-alias-registers-the-imported-name", "append-adds", "no-entry-class"])
def test_entry_classes_follow_aliases_to_cls_name(source: str, expected: list[str]) -> None:
    assert parse_entry_classes(source) == (expected, [])


def test_a_file_newer_than_this_python_falls_back_to_the_names_as_written() -> None:
    names, problems = parse_entry_classes("match := (\nEntryClass = [Foo, Bar]\n")
    assert names == ["Bar", "Foo"]
    assert len(problems) == 1 and "EntryClass names taken as written: Bar, Foo" in problems[0]


def test_metadata_of_the_real_wheel_gives_version_python_and_requirements(wheel_0_5_9: zipfile.ZipFile) -> None:
    version, requires_python, requires_dist = parse_metadata(
        wheel_0_5_9.read("sglang-0.5.9.dist-info/METADATA").decode("utf-8"))
    assert (version, requires_python) == ("0.5.9", ">=3.10")
    assert any(r.startswith("torch==") for r in requires_dist)


def test_an_installed_release_is_read_with_every_model_class(site_0_5_9: Path, wheel_0_5_9: zipfile.ZipFile) -> None:
    install = read_installation(site_0_5_9)
    assert install is not None
    assert (install.version, install.location) == ("0.5.9", str(site_0_5_9))
    # qwen2_classification.py starts with a byte-order mark: it is read all the same.
    assert {"Qwen3ForCausalLM", "LlamaForCausalLM", "Qwen2ForSequenceClassification"} <= install.architectures
    models = [n for n in wheel_0_5_9.namelist() if n.startswith("sglang/srt/models/") and n.endswith(".py")]
    assert len(install.architectures) >= len(models) // 2


def test_a_folder_without_sglang_is_no_installation(tmp_path: Path) -> None:
    assert read_installation(tmp_path) is None


def test_metadata_without_the_models_folder_is_an_incomplete_install(site_0_5_9: Path, tmp_path: Path) -> None:
    dist_info = next(site_0_5_9.glob("sglang-*.dist-info"))
    (tmp_path / dist_info.name).mkdir()
    (tmp_path / dist_info.name / "METADATA").write_bytes((dist_info / "METADATA").read_bytes())
    with pytest.raises(UsageError, match="sglang 0.5.9 is listed but .*models is missing") as err:
        read_installation(tmp_path)
    assert err.value.hint == "the installation is incomplete: reinstall sglang"
