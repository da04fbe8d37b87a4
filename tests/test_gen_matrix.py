"""scripts/gen_matrix: the release-derived part of matrix.yaml and server_args.json.

Most tests build small sglang-shaped wheels (zip files with dist-info METADATA, WHEEL,
RECORD, a few sglang/srt/models/*.py and a server_args.py) and run the generator on them;
one downloads the real 0.5.9 wheel from PyPI.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from imgbuild.knowledge.sglanginstall import parse_entry_classes

REPO = Path(__file__).resolve().parent.parent
# scripts/ is no package of the project: the generator is imported as `gen_matrix` the way
# `python scripts/gen_matrix` runs it (scripts/gen_matrix/__main__.py puts scripts/ first).
if str(REPO / "scripts") not in sys.path:
    sys.path.insert(0, str(REPO / "scripts"))
import gen_matrix.emit as gen_emit  # noqa: E402
import gen_matrix.main as gen_main  # noqa: E402
import gen_matrix.messages as gen_messages  # noqa: E402
import gen_matrix.server_args as gen_server_args  # noqa: E402
import gen_matrix.torch_cuda as gen_torch_cuda  # noqa: E402
import gen_matrix.vllm_messages as gen_vllm_messages  # noqa: E402
import gen_matrix.wheels as gen_wheels  # noqa: E402

MARKER = gen_emit.MARKER_LINE


# --------------------------------------------------------------------------------------
# Small wheels
# --------------------------------------------------------------------------------------


def build_wheel(
    directory: Path,
    version: str,
    *,
    tag: str = "py3-none-any",
    requires_python: str = ">=3.10",
    requires: list[str] = (),
    extras: list[str] = (),
    models: dict[str, str] | None = None,
    server_args: str = "",
    other_files: dict[str, str] | None = None,
) -> Path:
    """A wheel as setuptools lays one out, with a RECORD of sha256 digests."""
    dist_info = f"sglang-{version}.dist-info"
    metadata = [
        "Metadata-Version: 2.4",
        "Name: sglang",
        f"Version: {version}",
        f"Requires-Python: {requires_python}",
        *[f"Requires-Dist: {r}" for r in requires],
        *[f"Provides-Extra: {e}" for e in extras],
        "",
        "SGLang (a test wheel).",
    ]
    files: dict[str, str] = {
        f"{dist_info}/METADATA": "\n".join(metadata) + "\n",
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: {'true' if tag.endswith('any') else 'false'}\nTag: {tag}\n",
        "sglang/__init__.py": "",
        "sglang/srt/models/registry.py": "# registry: imports every module and reads EntryClass\n",
        "sglang/srt/server_args.py": server_args,
    }
    for name, source in (models or {}).items():
        files[f"sglang/srt/models/{name}"] = source
    files.update(other_files or {})
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    path = directory / f"sglang-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return path


SERVER_ARGS_OLD = '''
import argparse
import dataclasses
from typing import List, Optional

QUANTIZATION_CHOICES = ["awq", "fp8"]
SPEC_CHOICES = ["EAGLE"] + ["NEXTN"]


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    tp_size: int = 1
    mem_fraction_static: Optional[float] = None
    api_keys: List[str] = dataclasses.field(default_factory=list)

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--model-path", type=str, required=True)
        parser.add_argument("--tp-size", "--tp", type=int, default=ServerArgs.tp_size)
        parser.add_argument("--mem-fraction-static", type=float, default=ServerArgs.mem_fraction_static)
        parser.add_argument("--quantization", type=str, choices=QUANTIZATION_CHOICES)
        parser.add_argument("--speculative-algorithm", type=str, choices=SPEC_CHOICES)
        parser.add_argument("--disable-radix-cache", action="store_true")
        parser.add_argument("--json-model-override-args", type=json.loads, default="{}")
        parser.add_argument("--api-keys", type=str, nargs="+", default=ServerArgs.api_keys)
'''

SERVER_ARGS_NEW = SERVER_ARGS_OLD.replace(
    'SPEC_CHOICES = ["EAGLE"] + ["NEXTN"]', 'SPEC_CHOICES = ["EAGLE"] + ["NEXTN", "NGRAM"]'
).replace(
    '        parser.add_argument("--disable-radix-cache", action="store_true")\n',
    '        parser.add_argument("--disable-radix-cache", action="store_true")\n'
    '        parser.add_argument("--enable-old-thing", action=DeprecatedAction, help="Removed.")\n',
)

MODELS_OLD = {
    "llama.py": "class LlamaForCausalLM:\n    pass\n\nEntryClass = LlamaForCausalLM\n",
    "qwen2.py": "class Qwen2ForCausalLM:\n    pass\n\nEntryClass = [Qwen2ForCausalLM]\n",
    "grok.py": "class Grok1ForCausalLM:\n    pass\n\nEntryClass = [Grok1ForCausalLM]\n",
}
MODELS_NEW = {
    "llama.py": MODELS_OLD["llama.py"],
    "qwen2.py": MODELS_OLD["qwen2.py"],
    "qwen3_next.py": (
        "from sglang.srt.models.qwen2 import Qwen2ForCausalLM as Base\n"
        "class Qwen3NextForCausalLM(Base):\n    pass\n"
        "class Qwen3NextForCausalLMMTP(Qwen3NextForCausalLM):\n    pass\n"
        "EntryClass = [Qwen3NextForCausalLM, Qwen3NextForCausalLMMTP]\n"
    ),
}

# 0.4.x layout: the CUDA runtime pins sit in the `srt` extra, which pulls in
# `sglang[runtime_common]`; srt_hip pins another torch for ROCm.
REQUIRES_SRT_EXTRA = [
    "requests",
    'transformers==4.48.3; extra == "runtime-common"',
    'sglang[runtime_common]; extra == "srt"',
    'sgl-kernel==0.0.3.post6; extra == "srt"',
    'flashinfer_python==0.2.2.post1; extra == "srt"',
    'torch==2.5.1; extra == "srt"',
    'cuda-python; extra == "srt"',
    'sglang[runtime_common]; extra == "srt-hip"',
    'torch==2.4.0; extra == "srt-hip"',
]
# 0.5.9+ layout: everything in the base requirements.
REQUIRES_BASE = [
    "torch==2.9.1",
    "sgl-kernel==0.3.21",
    "flashinfer_python==0.6.3",
    "transformers==4.57.1",
    "cuda-python==12.9",
    'av; sys_platform == "linux" and platform_machine == "aarch64"',
    'pytest; extra == "test"',
]
REQUIRES_MANYLINUX = [
    "torch==2.11.0",
    "sglang-kernel==0.4.2",
    "flashinfer_python==0.6.8.post1",
    "transformers==5.6.0",
    "cuda-python>=13.0",
]

# torch's own Requires-Dist lines (from the torch wheels' METADATA on PyPI).
TORCH_REQUIRES = {
    "2.5.1": ['nvidia-cuda-runtime-cu12==12.4.127; platform_system == "Linux" and platform_machine == "x86_64"'],
    "2.9.1": ['nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"'],
    "2.11.0": [
        'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2; platform_system == "Linux"',
        'cuda-bindings<14,>=13.0.3; platform_system == "Linux"',
    ],
}

CURATED = (
    "# curated part: kept byte for byte (CRLF, trailing spaces, unicode: ±)\r\n"
    "schema: 1\n"
    "gpus:   \n"
    "  - name: RTX A6000   # 49140 MiB\n"
    "\n"
    f"{MARKER}\n"
)


@pytest.fixture
def fake_release(tmp_path: Path) -> dict[str, Path]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_wheel(wheels, "0.4.3.post3", requires_python=">=3.8", requires=REQUIRES_SRT_EXTRA,
                extras=["runtime-common", "srt", "srt-hip"], models=MODELS_OLD, server_args=SERVER_ARGS_OLD)
    build_wheel(wheels, "0.5.9", requires=REQUIRES_BASE, extras=["test"], models=MODELS_NEW,
                server_args=SERVER_ARGS_NEW)
    build_wheel(wheels, "0.5.11", tag="cp312-cp312-manylinux_2_34_x86_64", requires=REQUIRES_MANYLINUX,
                models=MODELS_NEW, server_args=SERVER_ARGS_NEW)
    # Another wheel of 0.5.11 for ARM and a pre-release: neither is read.
    build_wheel(wheels, "0.5.11", tag="cp312-cp312-manylinux_2_34_aarch64", requires=["torch==9.9.9"])
    build_wheel(wheels, "0.5.12rc0", requires=["torch==9.9.9"])
    cache = tmp_path / "cache"
    (cache / "torch").mkdir(parents=True)
    for version, requires in TORCH_REQUIRES.items():
        (cache / "torch" / f"{version}.json").write_text(json.dumps({"source": "test", "requires_dist": requires}))
    matrix = tmp_path / "matrix.yaml"
    matrix.write_bytes(CURATED.encode() + b"engines: [stale]\n")
    return {"wheels": wheels, "cache": cache, "matrix": matrix, "server_args": tmp_path / "server_args.json"}


def run_script(paths: dict[str, Path], *extra: str) -> int:
    return gen_main.main([
        "--wheel-dir", str(paths["wheels"]), "--cache", str(paths["cache"]), "--matrix", str(paths["matrix"]),
        "--server-args", str(paths["server_args"]), "--offline", "--jobs", "1", *extra,
    ])


# --------------------------------------------------------------------------------------
# End to end on small wheels
# --------------------------------------------------------------------------------------


def test_engines_are_generated_from_the_wheels(fake_release: dict[str, Path]) -> None:
    assert run_script(fake_release) == 0
    engines = yaml.safe_load(fake_release["matrix"].read_text(encoding="utf-8"))["engines"]
    assert [e["version"] for e in engines] == ["0.4.3.post3", "0.5.9", "0.5.11"]
    old, mid, new = engines
    assert old["requires_python"] == ">=3.8"
    assert old["pins"] == {  # from the srt extra and the runtime_common extra it pulls in
        "torch": "==2.5.1", "sgl-kernel": "==0.0.3.post6", "flashinfer-python": "==0.2.2.post1",
        "transformers": "==4.48.3", "cuda-python": "",
    }
    assert (old["torch"], old["cuda"], old["glibc"]) == ("2.5.1", "12.4", None)
    assert mid["pins"] == {
        "torch": "==2.9.1", "sgl-kernel": "==0.3.21", "flashinfer-python": "==0.6.3",
        "transformers": "==4.57.1", "cuda-python": "==12.9",
    }
    assert (mid["torch"], mid["cuda"], mid["glibc"]) == ("2.9.1", "12.8", None)
    assert new["pins"]["sglang-kernel"] == "==0.4.2" and new["pins"]["cuda-python"] == ">=13.0"
    assert (new["torch"], new["cuda"], new["glibc"]) == ("2.11.0", "13.0", "2.34")
    assert old["architectures_added"] == ["Grok1ForCausalLM", "LlamaForCausalLM", "Qwen2ForCausalLM"]
    assert old["architectures_removed"] == []
    assert mid["architectures_added"] == ["Qwen3NextForCausalLM", "Qwen3NextForCausalLMMTP"]
    assert mid["architectures_removed"] == ["Grok1ForCausalLM"]
    assert new["architectures_added"] == [] and new["architectures_removed"] == []


def test_curated_part_is_kept_byte_for_byte(fake_release: dict[str, Path]) -> None:
    assert run_script(fake_release) == 0
    data = fake_release["matrix"].read_bytes()
    assert data.startswith(CURATED.encode())
    assert b"stale" not in data


def test_rerun_gives_identical_files(fake_release: dict[str, Path]) -> None:
    assert run_script(fake_release) == 0
    first = fake_release["matrix"].read_bytes(), fake_release["server_args"].read_bytes()
    assert run_script(fake_release) == 0
    assert (fake_release["matrix"].read_bytes(), fake_release["server_args"].read_bytes()) == first


def test_lock_smoke_and_release_dates_survive_regeneration(fake_release: dict[str, Path]) -> None:
    """scripts/lock_all.py writes lock_smoke into a generated row; a rerun (offline: no PyPI dates) keeps
    it and the released date byte for byte, and lock_all's own edit equals what the generator writes."""
    assert run_script(fake_release) == 0
    text = fake_release["matrix"].read_text(encoding="utf-8")
    failing = {"imports": False, "python": "3.11", "as_of": "2026-12-03", "checked": "2026-12-03",
               "step": "import sglang", "root": "ValueError: Either a revision or a version must be specified.",
               "packages": ["kernels 0.17.2", "transformers 5.6.0"]}
    text = gen_emit.set_engine_lock_smoke(text, "0.5.11", "latest", failing)
    text = gen_emit.set_engine_lock_smoke(text, "0.5.11", "as_of_release", {"imports": True, "python": "3.11",
                                                                             "as_of": "2026-05-07T00:07:15Z", "checked": "2026-12-03"})
    text = text.replace('  - version: "0.5.9"\n', '  - version: "0.5.9"\n    released: "2026-02-23"\n')
    fake_release["matrix"].write_text(text, encoding="utf-8")
    row = {e["version"]: e for e in yaml.safe_load(text)["engines"]}["0.5.11"]
    assert row["lock_smoke"]["latest"] == failing and row["lock_smoke"]["as_of_release"]["imports"] is True
    assert run_script(fake_release) == 0
    assert fake_release["matrix"].read_text(encoding="utf-8") == text
    with pytest.raises(gen_main.GenError):
        gen_emit.set_engine_lock_smoke(text, "9.9.9", "latest", failing)


def test_versions_option_limits_the_engines(fake_release: dict[str, Path]) -> None:
    assert run_script(fake_release, "--versions", "0.5.9,0.5.11") == 0
    engines = yaml.safe_load(fake_release["matrix"].read_text(encoding="utf-8"))["engines"]
    assert [e["version"] for e in engines] == ["0.5.9", "0.5.11"]
    # The first engine lists all of its classes as added.
    assert engines[0]["architectures_added"] == ["LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3NextForCausalLM", "Qwen3NextForCausalLMMTP"]


def test_server_args_json_shares_identical_specs(fake_release: dict[str, Path]) -> None:
    assert run_script(fake_release) == 0
    data = json.loads(fake_release["server_args"].read_text())
    assert set(data) == {"generated_by", "specs", "versions"}
    assert list(data["versions"]) == ["0.4.3.post3", "0.5.9", "0.5.11"]
    specs = data["specs"]
    assert len({json.dumps(s, sort_keys=True) for s in specs}) == len(specs)

    def flags(version: str) -> dict[str, dict]:
        return {specs[i]["flags"][0]: specs[i] for i in data["versions"][version]}

    old, mid, new = flags("0.4.3.post3"), flags("0.5.9"), flags("0.5.11")
    assert data["versions"]["0.5.9"] == data["versions"]["0.5.11"]
    assert old["--tp-size"] == mid["--tp-size"]
    assert old["--speculative-algorithm"]["choices"] == ["EAGLE", "NEXTN"]
    assert new["--speculative-algorithm"]["choices"] == ["EAGLE", "NEXTN", "NGRAM"]
    assert "--enable-old-thing" not in old and new["--enable-old-thing"]["deprecated"] is True


def test_missing_marker_is_refused_and_the_file_left_alone(fake_release: dict[str, Path], capsys) -> None:
    fake_release["matrix"].write_text("schema: 1\nengines: []\n")
    assert run_script(fake_release) == 2
    assert fake_release["matrix"].read_text() == "schema: 1\nengines: []\n"
    assert not fake_release["server_args"].exists()
    assert "GENERATED" in capsys.readouterr().err


def test_unknown_version_is_refused(fake_release: dict[str, Path], capsys) -> None:
    assert run_script(fake_release, "--versions", "0.5.10") == 2
    assert "0.5.10" in capsys.readouterr().err


def test_script_runs_as_a_command(fake_release: dict[str, Path]) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_matrix"), "--wheel-dir", str(fake_release["wheels"]),
         "--cache", str(fake_release["cache"]), "--matrix", str(fake_release["matrix"]),
         "--server-args", str(fake_release["server_args"]), "--offline", "--versions", "0.5.9"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "1 engines" in result.stderr


# --------------------------------------------------------------------------------------
# The parts
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requires", "expected"),
    [
        pytest.param(REQUIRES_SRT_EXTRA, {"torch": "==2.5.1", "sgl-kernel": "==0.0.3.post6",
                                          "flashinfer-python": "==0.2.2.post1", "transformers": "==4.48.3",
                                          "cuda-python": ""}, id="srt-extra-and-runtime-common"),
        pytest.param(["torch>=2.5,<2.6", 'torch!=2.5.0; platform_machine == "x86_64"'],
                     {"torch": "!=2.5.0,<2.6,>=2.5"}, id="specifiers-combined"),
        pytest.param(['torch==2.4.0; extra == "srt-xpu"', 'flashinfer==0.1.6; extra == "srt"'],
                     {"flashinfer": "==0.1.6"}, id="other-accelerator-extras-ignored"),
        pytest.param(['torch==2.9.1; platform_machine == "aarch64"'], {}, id="arm-only-pin-ignored"),
    ],
)
def test_cuda_pins(requires: list[str], expected: dict[str, str]) -> None:
    assert gen_wheels.cuda_pins(requires) == expected


@pytest.mark.parametrize(
    ("filenames", "expected"),
    [
        pytest.param(["sglang-0.5.11-cp311-cp311-manylinux_2_34_x86_64.whl",
                      "sglang-0.5.11-cp312-cp312-manylinux_2_34_x86_64.whl",
                      "sglang-0.5.11-cp312-cp312-manylinux_2_34_aarch64.whl"],
                     "sglang-0.5.11-cp312-cp312-manylinux_2_34_x86_64.whl", id="cp312-x86_64"),
        pytest.param(["sglang-0.5.30-cp313-cp313-manylinux_2_34_x86_64.whl",
                      "sglang-0.5.30-cp314-cp314-manylinux_2_34_x86_64.whl"],
                     "sglang-0.5.30-cp314-cp314-manylinux_2_34_x86_64.whl", id="newest-python-without-cp312"),
        pytest.param(["sglang-0.5.9-py3-none-any.whl"], "sglang-0.5.9-py3-none-any.whl", id="pure"),
        pytest.param(["sglang-0.5.9-cp312-cp312-manylinux_2_34_aarch64.whl", "sglang-0.5.9.tar.gz"], None,
                     id="nothing-for-x86_64"),
    ],
)
def test_select_wheel(filenames: list[str], expected: str | None) -> None:
    assert gen_wheels.select_wheel(filenames) == expected


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        pytest.param("sglang-0.5.11-cp312-cp312-manylinux_2_34_x86_64.whl", "2.34", id="pep600"),
        pytest.param("x-1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "2.17", id="compressed"),
        pytest.param("x-1.0-cp39-cp39-manylinux1_x86_64.whl", "2.5", id="manylinux1"),
        pytest.param("sglang-0.5.9-py3-none-any.whl", None, id="pure"),
    ],
)
def test_wheel_glibc(filename: str, expected: str | None) -> None:
    assert gen_wheels.wheel_glibc(filename) == expected


@pytest.mark.parametrize(
    ("source", "names", "has_problem"),
    [
        pytest.param("class A:\n    pass\nEntryClass = A\n", ["A"], False, id="single"),
        pytest.param("class A: ...\nclass B(A): ...\nEntryClass = [B, A]\n", ["A", "B"], False, id="list"),
        pytest.param("class A: ...\nB = A\nEntryClass = [B]\n", ["A"], False, id="alias-registers-class-name"),
        pytest.param("from .x import Real as Alias\nEntryClass = Alias\n", ["Real"], False, id="import-as"),
        pytest.param("class A: ...\nclass B: ...\nEntryClass = [A]\nEntryClass += [B]\n", ["A", "B"], False,
                     id="augmented"),
        pytest.param("EntryClass = [make_class()]\n", [], True, id="unresolved-call"),
        pytest.param("EntryClass = [Missing]\n", ["Missing"], True, id="unknown-name-kept"),
        pytest.param("class Helper: ...\n", [], False, id="no-entry-class"),
    ],
)
def test_parse_entry_classes(source: str, names: list[str], has_problem: bool) -> None:
    found, problems = parse_entry_classes(source)
    assert found == names
    assert bool(problems) == has_problem


def test_parse_server_args_reads_add_argument_calls() -> None:
    specs = {s["flags"][0]: s for s in gen_server_args.parse_server_args(SERVER_ARGS_NEW)}
    assert specs["--tp-size"] == {
        "flags": ["--tp-size", "--tp"], "dest": "tp_size", "action": "store", "type": "int",
        "choices": None, "default": 1, "nargs": None, "deprecated": False,
    }
    assert specs["--quantization"]["choices"] == ["awq", "fp8"]
    assert specs["--speculative-algorithm"]["choices"] == ["EAGLE", "NEXTN", "NGRAM"]
    assert specs["--disable-radix-cache"]["action"] == "store_true"
    assert specs["--disable-radix-cache"]["default"] is False
    assert specs["--json-model-override-args"]["type"] == "json"
    assert specs["--api-keys"]["nargs"] == "+" and specs["--api-keys"]["default"] == []
    assert specs["--enable-old-thing"]["action"] == "DeprecatedAction"
    assert specs["--enable-old-thing"]["deprecated"] is True


def test_parse_server_args_follows_declared_fields_across_modules() -> None:
    """0.5.14+: flags come from `A[T, ...]` fields via add_cli_args_from_dataclass, and
    from 0.5.20 the fields live in namespace classes in other modules."""
    server_args = '''
import argparse
from typing import Optional
from sglang.srt.arg_groups.arg_utils import A, Arg, add_cli_args_from_dataclass
from sglang.srt.arg_groups.fields import collect_input_fields
from sglang.srt.arg_groups.fields.spec import Spec

class ServerArgs:
    host: A[str, "The host."] = "127.0.0.1"

    @staticmethod
    def add_cli_args(parser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        parser.add_argument("--page-size", type=int, default=_declared_default("page_size"))
        parser.add_argument("--old-flag", action="store_true", help="(Deprecated) does nothing.")

_INPUT_NAMESPACES = [Spec]
_annotations, _defaults, _namespaces = collect_input_fields(_INPUT_NAMESPACES)
ServerArgs = msgspec.defstruct("ServerArgs", [])
'''
    spec_module = '''
from typing import List, Literal, Optional
import msgspec
from sglang.srt.arg_groups.arg_utils import A, Arg
from sglang.srt.arg_groups.choices import ALGORITHMS

class Spec(msgspec.Struct):
    _NS_PATH = "spec"
    speculative_algorithm: A[Optional[str], Arg(help="Algorithm.", choices=ALGORITHMS)] = None
    speculative_num_steps: A[Optional[int], "Steps."] = None
    mamba_ssm_dtype: A[Literal["float32", "bfloat16"], "SSM dtype."] = "float32"
    disable_radix_cache: A[bool, "No radix cache."] = False
    tp_size: A[int, Arg(help="TP.", aliases=["--tp"], cli_name="--tensor-parallel-size")] = 1
    modules: A[List[str], "Modules."] = msgspec.field(default_factory=list)
    page_size: A[int, Arg(help="Page size.", no_cli=True)] = 64
    internal: int = 3
'''
    modules = {
        "sglang/srt/arg_groups/fields/spec.py": spec_module,
        "sglang/srt/arg_groups/choices.py": 'BASE = ["EAGLE", "NEXTN"]\nALGORITHMS = [*BASE, "NGRAM"]\n',
    }
    specs = {s["flags"][0]: s for s in gen_server_args.parse_server_args(server_args, modules)}
    assert set(specs) == {
        "--host", "--speculative-algorithm", "--speculative-num-steps", "--mamba-ssm-dtype",
        "--disable-radix-cache", "--tensor-parallel-size", "--modules", "--page-size", "--old-flag",
    }
    assert specs["--speculative-algorithm"]["choices"] == ["EAGLE", "NEXTN", "NGRAM"]
    assert specs["--speculative-num-steps"]["type"] == "int"
    assert specs["--mamba-ssm-dtype"]["choices"] == ["float32", "bfloat16"]
    assert specs["--mamba-ssm-dtype"]["default"] == "float32"
    assert specs["--disable-radix-cache"]["action"] == "store_true"
    assert specs["--tensor-parallel-size"]["flags"] == ["--tensor-parallel-size", "--tp"]
    assert specs["--tensor-parallel-size"]["dest"] == "tp_size"
    assert specs["--modules"]["nargs"] == "+" and specs["--modules"]["default"] == []
    assert specs["--page-size"]["default"] == 64  # _declared_default reads the no_cli field
    assert specs["--old-flag"]["deprecated"] is True


@pytest.mark.parametrize(
    ("requires", "expected"),
    [
        pytest.param(TORCH_REQUIRES["2.9.1"], "12.8", id="cu12-runtime"),
        pytest.param(TORCH_REQUIRES["2.11.0"], "13.0", id="cuda-toolkit"),
        pytest.param(['nvidia-cuda-runtime==13.0.96; platform_system == "Linux"'], "13.0", id="cu13-runtime"),
        pytest.param(["filelock", "sympy"], None, id="cpu-only"),
    ],
)
def test_torch_cuda_from_requires(requires: list[str], expected: str | None) -> None:
    assert gen_torch_cuda.torch_cuda_from_requires(requires) == expected


def test_render_engines_writes_deltas_in_version_order() -> None:
    row = {"requires_python": ">=3.10", "glibc": None, "pins": {"torch": "==2.9.1"}, "torch": "2.9.1", "cuda": "12.8"}
    text = gen_emit.render_engines([
        {**row, "version": "0.5.10", "architectures": ["A", "C"]},
        {**row, "version": "0.5.9", "architectures": ["A", "B"]},
    ])
    engines = yaml.safe_load(text)["engines"]
    assert [e["version"] for e in engines] == ["0.5.9", "0.5.10"]
    assert engines[1]["architectures_added"] == ["C"] and engines[1]["architectures_removed"] == ["B"]


def test_extract_messages_keeps_raises_asserts_and_error_logs_with_readable_texts() -> None:
    source = """
def check(args):
    assert args.tp > 0, f"--tp must be positive, got {args.tp}"
    assert args.ok
    assert args.x, compute_message()
    if args.bad:
        raise ValueError("--bad is " + "refused")
    logger.error("pool too small")
    logger.info("not an error")
"""
    assert gen_messages.extract_messages(source) == [
        ("assert", "--tp must be positive, got {...}"),
        ("raise ValueError", "--bad is refused"),
        ("logger.error", "pool too small"),
    ]


# --------------------------------------------------------------------------------------
# A real wheel
# --------------------------------------------------------------------------------------


def _sglang_0_5_9_wheel(request: pytest.FixtureRequest) -> Path:
    directory = Path(request.config.cache.mkdir("sglang-wheels"))
    wheel = directory / "sglang-0.5.9-py3-none-any.whl"
    if not wheel.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--retries", "10", "--no-deps", "--only-binary=:all:", "--quiet",
             "-d", str(directory), "sglang==0.5.9"],
            check=True, timeout=300,
        )
    return wheel


@pytest.mark.network
def test_real_sglang_0_5_9_wheel(request: pytest.FixtureRequest) -> None:
    wheel = _sglang_0_5_9_wheel(request)
    info = gen_wheels.read_wheel(wheel)
    assert info["version"] == "0.5.9"
    assert {"Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "DeepseekV3ForCausalLM"} <= set(info["architectures"])
    assert info["pins"]["torch"] == "==2.9.1" and info["glibc"] is None
    specs = {flag: s for s in info["server_args"] for flag in s["flags"]}
    # `--tp 2` works only through argparse's prefix matching: 0.5.9 declares no --tp.
    assert specs["--tensor-parallel-size"] is specs["--tp-size"] and "--tp" not in specs
    assert {"EAGLE", "NEXTN"} <= set(specs["--speculative-algorithm"]["choices"])
    assert specs["--mamba-scheduler-strategy"]["choices"] == ["auto", "no_buffer", "extra_buffer"]
    assert specs["--mem-fraction-static"]["type"] == "float"
    assert info["problems"] == []


@pytest.mark.network
def test_real_sglang_0_5_9_wheel_gives_the_start_up_texts_the_shipped_data_holds(request: pytest.FixtureRequest) -> None:
    """Every text scripts/gen_matrix/messages.py reads from the real 0.5.9 wheel is in
    imgbuild/data/sglang_messages.json with 0.5.9 inside its releases, the directories' files included."""
    keys = gen_messages.read_release(_sglang_0_5_9_wheel(request))
    shipped = json.loads((REPO / "imgbuild" / "data" / "sglang_messages.json").read_text(encoding="utf-8"))
    held = {(m["step"], m["file"], m["kind"], m["text"]): m for m in shipped["messages"]}
    steps = {step for step, *_ in keys}
    assert {"server-args", "caches", "speculative", "quantization"} <= steps and len(keys) > 400
    for step, rel, kind, text in keys:
        row = held[(step, f"sglang/srt/{rel}", kind, text)]
        assert Version(row["first"]) <= Version("0.5.9") <= Version(row["last"]), text
    hiradix = "HiRadixCache only supports MHA and MLA yet"
    assert any(t.startswith(hiradix) and rel.startswith("mem_cache/") for _, rel, _, t in keys)


def test_message_steps_take_a_directorys_python_files_in_order() -> None:
    names = {"sglang/srt/arg_groups/b.py", "sglang/srt/arg_groups/a.py", "sglang/srt/arg_groups/README.md",
             "sglang/srt/server_args.py", "sglang/srt/arg_groupsx.py"}
    assert gen_messages._members(names, ("server_args.py", "arg_groups/", "missing.py")) == [
        "sglang/srt/server_args.py", "sglang/srt/arg_groups/a.py", "sglang/srt/arg_groups/b.py"]


@pytest.mark.network
def test_real_vllm_0_5_5_sdist_gives_the_refusals_the_shipped_data_holds(request: pytest.FixtureRequest) -> None:
    """The generator reads vLLM's real source distribution (1.1 MB) from PyPI; every refusal it finds
    there is in imgbuild/data/vllm_config_refusals.json with 0.5.5 among its releases."""
    directory = Path(request.config.cache.mkdir("vllm-sdists"))
    (sdist,) = gen_vllm_messages.download_sdists(["0.5.5"], directory)
    data = gen_vllm_messages.build([sdist])
    texts = {m["text"]: m for m in data["messages"]}
    assert data["releases"] == ["0.5.5"] and len(texts) > 40
    heads = "Total number of attention heads ({...}) must be divisible by tensor parallel size ({...})."
    assert texts[heads]["file"] == "vllm/config.py" and texts[heads]["kind"] == "raise ValueError"
    shipped = json.loads((REPO / "imgbuild" / "data" / "vllm_config_refusals.json").read_text(encoding="utf-8"))
    held = {(m["file"], m["kind"], m["text"]): m for m in shipped["messages"]}
    for m in data["messages"]:
        row = held[(m["file"], m["kind"], m["text"])]
        assert row["first"] == "0.5.5", m["text"]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        pytest.param('p.add_argument("--enable-x", action=argparse.BooleanOptionalAction, default=True)',
                     {"flags": ["--enable-x", "--no-enable-x"], "action": "BooleanOptionalAction", "default": True},
                     id="boolean-optional-adds-no-flag"),
        pytest.param('p.add_argument("--mode", choices=sorted({"b", "a"}), default=MODES[0])',
                     {"choices": ["a", "b"], "default": "fast"}, id="sorted-set-and-subscript"),
        pytest.param('p.add_argument("--cap", type=int, default=10 * 1000 * 1000)',
                     {"type": "int", "default": 10_000_000}, id="arithmetic-default"),
        pytest.param('p.add_argument("--backend", choices=LOCAL, help="Deprecated: ignored.")',
                     {"choices": None, "deprecated": True}, id="local-unresolved-choices"),
        pytest.param('p.add_argument("--x", dest="y", nargs=argparse.ONE_OR_MORE, type=parse_thing)',
                     {"dest": "y", "nargs": "+", "type": None}, id="dest-nargs-constant-unknown-type"),
    ],
)
def test_parse_server_args_call_details(call: str, expected: dict) -> None:
    source = f'MODES = ("fast", "slow")\n\ndef add(p, LOCAL):\n    {call}\n'
    (spec,) = gen_server_args.parse_server_args(source)
    assert {key: spec[key] for key in expected} == expected


def test_function_parameter_hides_module_constant() -> None:
    source = 'CHOICES = ["a"]\n\ndef add(p, CHOICES):\n    p.add_argument("--x", choices=CHOICES)\n'
    (spec,) = gen_server_args.parse_server_args(source)
    assert spec["choices"] is None


def test_choices_changed_under_a_module_level_if_keep_their_default() -> None:
    source = (
        'CHOICES = {"flashinfer", "pytorch"}\n'
        'if envs.ENABLE_ORACLE.get():\n    CHOICES.add("token_oracle")\n'
        'def add(p):\n    p.add_argument("--sampling-backend", choices=CHOICES)\n'
    )
    (spec,) = gen_server_args.parse_server_args(source)
    assert spec["choices"] == ["flashinfer", "pytorch"]
