"""matrix.yaml: loading, delta expansion, GPU names, and located validation errors."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from imgbuild.errors import MatrixError, UsageError
from imgbuild.knowledge.matrix import load_matrix, normalize_gpu_name

SMALL = textwrap.dedent(
    """\
    schema: 1
    cuda:
      - {version: "12.8", min_driver: "570.26", sm: ["8.0", "8.6", "9.0"]}
    gpus:
      - {name: RTX A6000, aliases: [a6000], smi_names: [NVIDIA RTX A6000], compute_capability: "8.6", memory_mib: 49140}
      - {name: RTX 5090, aliases: ["5090"], smi_names: [NVIDIA GeForce RTX 5090], compute_capability: "12.0", memory_mib: 32607}
    features: []
    known_issues: []
    engines:
      - {version: "0.5.1", requires_python: ">=3.10", pins: {torch: "==2.8.0"}, torch: "2.8.0", cuda: "12.8",
         architectures_added: [LlamaForCausalLM, OldForCausalLM]}
      - {version: "0.5.2", requires_python: ">=3.10", pins: {torch: "==2.8.0"}, torch: "2.8.0", cuda: "12.8",
         architectures_added: [Qwen3NextForCausalLM], architectures_removed: [OldForCausalLM]}
    """
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return path


def test_engine_architectures_expand_from_deltas(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, SMALL))
    assert m.engine("0.5.1").architectures == {"LlamaForCausalLM", "OldForCausalLM"}
    assert m.engine("0.5.2").architectures == {"LlamaForCausalLM", "Qwen3NextForCausalLM"}
    assert m.newest_engine().version == "0.5.2"


@pytest.mark.parametrize(
    ("text", "name", "count"),
    [
        pytest.param("RTX A6000x2", "RTX A6000", 2, id="suffix-x"),
        pytest.param("a6000 x 4", "RTX A6000", 4, id="alias-spaced"),
        pytest.param("2xA6000", "RTX A6000", 2, id="prefix"),
        pytest.param("NVIDIA RTX A6000", "RTX A6000", 1, id="smi-name"),
        pytest.param("RTX 5090", "RTX 5090", 1, id="name-ending-in-x-digits"),
        pytest.param("RTX 5090x8", "RTX 5090", 8, id="name-ending-in-x-digits-with-count"),
    ],
)
def test_resolve_gpu_reads_names_aliases_and_counts(tmp_path: Path, text: str, name: str, count: int) -> None:
    spec, n = load_matrix(write(tmp_path, SMALL)).resolve_gpu(text)
    assert (spec.name, n) == (name, count)


def test_unknown_gpu_is_bad_input_naming_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown GPU 'Voodoo 5'"):
        load_matrix(write(tmp_path, SMALL)).resolve_gpu("Voodoo 5")


def test_unknown_engine_and_bad_version_are_bad_input(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, SMALL))
    with pytest.raises(UsageError, match="SGLang 0.9.0 is not in the matrix"):
        m.engine("0.9.0")
    with pytest.raises(UsageError, match="'five' is not a version"):
        m.engine("five")


def test_validation_reports_every_problem_with_line_and_path(tmp_path: Path) -> None:
    bad = SMALL.replace('cuda: "12.8",\n     architectures_added: [Qwen3NextForCausalLM]',
                        'cuda: "13.2",\n     architectures_added: [Qwen3NextForCausalLM]')
    bad = bad.replace('aliases: ["5090"]', 'aliases: ["a6000"]').replace('version: "0.5.1"', 'version: "zero"')
    path = write(tmp_path, bad)
    with pytest.raises(MatrixError) as caught:
        load_matrix(path)
    problems = caught.value.problems
    assert any(p.startswith(f"{path}:6: gpus[1].aliases[0]: alias 'a6000' is already used") for p in problems), problems
    assert any(f"{path}:10: engines[0].version: 'zero' is not a PEP 440 version" == p for p in problems), problems
    assert any(f"{path}:12: engines[1].cuda: '13.2' is not in cuda:" in p for p in problems), problems
    assert len(problems) == 3


def test_unquoted_versions_are_reported_not_misread(tmp_path: Path) -> None:
    path = write(tmp_path, SMALL.replace('version: "12.8"', "version: 12.8"))
    with pytest.raises(MatrixError, match=r"cuda\[0\]\.version: must be a quoted string"):
        load_matrix(path)


def test_broken_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "schema: 1\ncuda: [\n")
    with pytest.raises(MatrixError, match=rf"^{path}:\d+: not valid YAML"):
        load_matrix(path)


def test_missing_matrix_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_matrix(tmp_path / "nope.yaml")


def test_shipped_matrix_is_valid_and_covers_the_seed() -> None:
    m = load_matrix()
    assert m.engine("0.5.11").cuda == "13.0"
    assert m.engine("0.5.9").cuda == "12.8"
    spec, n = m.resolve_gpu("RTX A6000x2")
    assert (spec.memory_mib, spec.compute_capability, n) == (49140, "8.6", 2)
    for gpu in ["A10", "A100 40GB", "A100 80GB", "L4", "L40S", "RTX 4090", "RTX 5090", "H100 PCIe", "H100 SXM",
                "H200", "B200", "GB10", "RTX PRO 6000 Blackwell Workstation", "rtx-pro-6000"]:
        m.resolve_gpu(gpu)
    versions = [e.version for e in m.engines]
    assert versions[0] == "0.4.0"
    assert "0.5.23" in versions


def test_normalize_gpu_name_drops_vendor_and_punctuation() -> None:
    assert normalize_gpu_name("NVIDIA  RTX A6000") == "rtx-a6000"
    assert normalize_gpu_name("NVIDIA H100 80GB HBM3") == "h100-80gb-hbm3"


def test_parsed_matrix_is_cached_and_an_edit_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = write(tmp_path, SMALL)
    first = load_matrix(path)
    cached = list((tmp_path / "cache" / "imgbuild" / "matrix").glob("*.json"))
    assert len(cached) == 1
    assert load_matrix(path).engines == first.engines
    path.write_text(SMALL.replace("memory_mib: 49140", "memory_mib: 49000"))
    assert load_matrix(path).resolve_gpu("a6000")[0].memory_mib == 49000
    path.write_text(SMALL.replace("memory_mib: 49140", "memory_mib: 4914"))  # same size, later mtime
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert load_matrix(path).resolve_gpu("a6000")[0].memory_mib == 4914


def test_an_invalid_matrix_is_never_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = write(tmp_path, SMALL.replace('version: "0.5.1"', 'version: "zero"'))
    for _ in range(2):
        with pytest.raises(MatrixError, match="'zero' is not a PEP 440 version"):
            load_matrix(path)
    assert not list((tmp_path / "cache").rglob("*.json"))


LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip([None, *"abcdefgh"], "abcdefghi")
)  # 9 levels of 9 aliases: 9^9 = 387 million nodes from about 350 bytes

HOSTILE_FILES = [
    ("billion-laughs", LAUGHS.encode(), "aliases expand to more than 1,000,000 YAML nodes"),
    ("recursive-alias", b"engines: &a [*a]\n", "refer to themselves"),
    ("binary", b"\xff\xfe\x00\x01engines: []", "not UTF-8 text"),
    ("no-sections", b"foo: 1\nbar: [2]\n", "none of the sections"),
    ("nested-deep", b"engines: " + b"[" * 100_000 + b"]" * 100_000, "not valid YAML|nested too deeply"),
    ("python-tag", b"engines: !!python/object:os.system {}\n", "not valid YAML"),
]


@pytest.mark.parametrize("content, message", [h[1:] for h in HOSTILE_FILES], ids=[h[0] for h in HOSTILE_FILES])
def test_a_hostile_matrix_is_refused_quickly_and_nothing_is_cached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, message: str) -> None:
    import time

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "matrix.yaml"
    path.write_bytes(content)
    started = time.monotonic()
    with pytest.raises(MatrixError, match=message):
        load_matrix(path)
    assert time.monotonic() - started < 2
    assert not (tmp_path / "cache").exists()


def test_a_matrix_over_the_size_cap_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "matrix.yaml"
    with path.open("wb") as fh:  # sparse: 2 GB on paper, nothing on disk
        fh.truncate(2 * 2**30)
    with pytest.raises(MatrixError, match="larger than 8 MiB"):
        load_matrix(path)


def test_a_cache_that_was_tampered_into_a_huge_file_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from imgbuild.knowledge.matrix import _cache_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = write(tmp_path, SMALL)
    load_matrix(path)
    with _cache_path(path).open("r+b") as fh:
        fh.truncate(3 * 2**30)
    assert load_matrix(path).engine("0.5.2").version == "0.5.2"


def test_nvlink_is_read_and_must_be_a_boolean(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, SMALL.replace("memory_mib: 49140}", "memory_mib: 49140, nvlink: false}")))
    assert m.resolve_gpu("a6000")[0].nvlink is False and m.resolve_gpu("5090")[0].nvlink is None
    path = write(tmp_path, SMALL.replace("memory_mib: 49140}", 'memory_mib: 49140, nvlink: "pcie"}'))
    with pytest.raises(MatrixError) as caught:
        load_matrix(path)
    assert caught.value.problems == [f"{path}:5: gpus[0].nvlink: must be true or false, not 'pcie'"]
