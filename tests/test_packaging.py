"""A wheel install (pip install . or from git), not only the editable checkout, carries the
matrix, the Dockerfile templates and the locks, and finds them outside the checkout."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.network  # building the wheel fetches setuptools into pip's build environment


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--retries", "10", "-w", str(tmp / "dist"), str(ROOT)],
        check=True,
    )
    env_dir = tmp / "env"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    wheel = next((tmp / "dist").glob("imgbuild-*.whl"))
    # --python installs into that environment only (with --prefix, pip would also uninstall the
    # editable imgbuild of the environment running the tests).
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
                   check=True)
    # imgbuild's dependencies come from the test environment, after the wheel's own copy of imgbuild.
    (Path(site) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "imgbuild.cli", *args], capture_output=True, text=True, cwd=cwd, check=False)


def test_installed_wheel_checks_and_renders_outside_the_checkout(wheel_venv: Path, tmp_path: Path) -> None:
    where = run(wheel_venv, "matrix", "validate", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert "share/imgbuild/matrix.yaml" in where.stdout and str(ROOT) not in where.stdout
    check = run(wheel_venv, "check", str(ROOT / "examples" / "qwen3.6-27b"), "--sglang", "0.5.11", "--gpu", "a6000x2",
                cwd=tmp_path)
    assert check.returncode == 0 and "SUPPORTED by SGLang 0.5.11" in check.stdout, check.stderr
    rendered = run(wheel_venv, "render", "qwen3.6-27b-a6000x2", "-o", str(tmp_path / "ctx"), cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    dockerfile = (tmp_path / "ctx" / "Dockerfile").read_text()
    # the stack's hashes live in the lock; the Dockerfile pins only uv, the installer (its three wheels)
    assert [line for line in dockerfile.splitlines() if "--hash=" in line and not line.strip().startswith('echo "uv==')] == []
    assert "--hash=sha256:" in (tmp_path / "ctx" / "requirements.lock").read_text()
    from_checkout = subprocess.run(
        [sys.executable, "-m", "imgbuild.cli", "render", "qwen3.6-27b-a6000x2", "-o", str(tmp_path / "ctx2")],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )
    assert from_checkout.returncode == 0
    for name in ("Dockerfile", "requirements.lock", "recipe.json"):
        assert (tmp_path / "ctx" / name).read_bytes() == (tmp_path / "ctx2" / name).read_bytes(), name
