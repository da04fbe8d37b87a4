"""check --python and the current environment, against real SGLang wheels installed with --no-deps
(whose import smoke fails for real, on a missing dependency), and release boundaries in the matrix
held against the wheels themselves."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from imgbuild.knowledge.matrix import load_matrix
from imgbuild.knowledge.sglanginstall import parse_entry_classes

ROOT = Path(__file__).resolve().parent.parent
SEED = str(ROOT / "examples" / "qwen3.6-27b")
WHEELS = ROOT / ".cache" / "wheels"

pytestmark = pytest.mark.network


def wheel(version: str, *, installable: bool = False) -> Path:
    """The real sglang wheel from PyPI (cached under .cache/wheels, shared with scripts/gen_matrix).

    ``installable`` asks for one this interpreter can install (the generator keeps cp312 wheels).
    """
    WHEELS.mkdir(parents=True, exist_ok=True)
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"

    def matching() -> list[Path]:
        found = sorted(WHEELS.glob(f"sglang-{version}-*.whl"))
        if installable:
            found = [w for w in found if f"-{tag}-" in w.name or "-py3-none-any" in w.name]
        return found

    if not matching():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--retries", "10", "--timeout", "60", "--no-deps",
             "--only-binary=:all:",
             f"sglang=={version}", "-d", str(WHEELS)],
            check=True,
        )
    return matching()[-1]


@pytest.fixture(scope="module")
def venv_with_sglang_0_5_11(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target", purelib,
         str(wheel("0.5.11", installable=True))],
        check=True,
    )
    return python


def test_check_python_on_an_installation_that_cannot_import_is_a_negative_verdict(venv_with_sglang_0_5_11: Path) -> None:
    """The real 0.5.11 wheel without its dependencies: its files say 0.5.11 serves the model, but
    `import sglang` dies on a missing module, so the verdict is no (exit 1) and says why."""
    done = subprocess.run(
        [sys.executable, "-m", "imgbuild.cli", "check", SEED, "--python", str(venv_with_sglang_0_5_11), "--json"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["sglang"]["version"] == "0.5.11"
    assert data["sglang"]["source"] == f"python:{venv_with_sglang_0_5_11}"
    assert data["sglang"]["cuda"] == "13.0"
    smoke = data["import_smoke"]
    assert smoke["ok"] is False and smoke["step"] == "import sglang"
    assert smoke["missing_module"] == "numpy" and smoke["packages"] == ["sglang 0.5.11"]
    assert data["reasons"] == [
        "the installation cannot start the server: import sglang fails: "
        "ModuleNotFoundError: No module named 'numpy' (in sglang 0.5.11)"
    ]
    assert any("module 'numpy' is not installed" in note for note in data["notes"])


def test_check_python_text_names_the_missing_module(venv_with_sglang_0_5_11: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "imgbuild.cli", "check", SEED, "--python", str(venv_with_sglang_0_5_11)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert done.returncode == 1
    assert "NOT SUPPORTED by SGLang 0.5.11" in done.stdout
    assert "No module named 'numpy'" in done.stdout and "Traceback" not in done.stderr


def test_installed_architectures_equal_the_matrix_row(venv_with_sglang_0_5_11: Path) -> None:
    from imgbuild.flows.check import _install_of_python

    install = _install_of_python(str(venv_with_sglang_0_5_11))
    assert install.architectures == load_matrix().engine("0.5.11").architectures


def wheel_classes(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as zf:
        return {
            name
            for member in zf.namelist()
            if member.startswith("sglang/srt/models/") and member.endswith(".py")
            for name in parse_entry_classes(zf.read(member).decode("utf-8-sig", "replace"))[0]
        }


@pytest.mark.parametrize(
    "architecture",
    ["Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "DeepseekV3ForCausalLM", "GptOssForCausalLM"],
)
def test_release_boundary_matches_the_wheels(architecture: str) -> None:
    """The first release the matrix says registers a class has it in its wheel; the release before lacks it."""
    engines = load_matrix().engines
    first = next(i for i, e in enumerate(engines) if architecture in e.architectures)
    assert architecture in wheel_classes(wheel(engines[first].version))
    if first > 0:
        assert architecture not in wheel_classes(wheel(engines[first - 1].version))
