"""scripts/lock_all.py's record in matrix.yaml (lock_smoke per engine) and what reads it:
`matrix show` and `check` name a release whose lock does not import. The locking, installing and
smoking of real releases is what the script does on a machine with the network (README); here the
engine selection and the record it writes are tested, and the commands that read it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED = str(ROOT / "examples" / "qwen3.6-27b")
sys.path.insert(0, str(ROOT / "scripts"))

import lock_all  # noqa: E402
from gen_matrix.emit import set_engine_lock_smoke  # noqa: E402

from imgbuild.knowledge.matrix import load_matrix  # noqa: E402
from imgbuild.knowledge.sglanginstall import SmokeResult  # noqa: E402

FAILING = {"imports": False, "python": "3.11", "as_of": "2026-05-07T00:07:15Z", "checked": "2026-12-03",
           "step": "import sglang", "root": "ValueError: Either a revision or a version must be specified.",
           "packages": ["kernels 0.17.2", "transformers 5.6.0"]}


@pytest.fixture()
def failing_matrix(tmp_path: Path) -> Path:
    """The repository's matrix with 0.5.11's as-of-release lock recorded as not importing."""
    path = tmp_path / "matrix.yaml"
    path.write_text(set_engine_lock_smoke((ROOT / "matrix.yaml").read_text(encoding="utf-8"), "0.5.11",
                                          "as_of_release", FAILING), encoding="utf-8")
    return path


def imgbuild(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "imgbuild.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, check=False, timeout=120)


def test_matrix_show_names_a_release_whose_lock_does_not_import(failing_matrix: Path, tmp_path: Path) -> None:
    done = imgbuild("matrix", "show", "--matrix", str(failing_matrix), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("0.5.11 "))
    assert "2026-05-07" in row and " NO (today: " in row
    assert "warning: SGLang 0.5.11: its lock as of the release" in done.stderr and "kernels 0.17.2" in done.stderr
    one = json.loads(imgbuild("matrix", "show", "--sglang", "0.5.11", "--json", "--matrix", str(failing_matrix),
                              tmp_path=tmp_path).stdout)
    assert one["lock_smoke"]["as_of_release"] == FAILING and one["released"] == "2026-05-07"


def test_check_warns_that_the_release_lock_does_not_import(failing_matrix: Path, tmp_path: Path) -> None:
    done = imgbuild("check", SEED, "--sglang", "0.5.11", "--json", "--matrix", str(failing_matrix), tmp_path=tmp_path)
    notes = json.loads(done.stdout)["notes"]
    assert any(n.startswith("warning: SGLang 0.5.11: its lock as of the release") and "ValueError" in n for n in notes)


def test_a_malformed_lock_smoke_row_is_a_matrix_error(tmp_path: Path) -> None:
    path = tmp_path / "matrix.yaml"
    text = set_engine_lock_smoke((ROOT / "matrix.yaml").read_text(encoding="utf-8"), "0.5.11", "latest", FAILING)
    path.write_text(text.replace('latest: {imports: false', 'latest: {imports: "maybe"'), encoding="utf-8")
    done = imgbuild("matrix", "validate", str(path), tmp_path=tmp_path)
    assert done.returncode == 2 and "lock_smoke" in done.stderr


def test_engines_from_0_5_9_that_take_the_python() -> None:
    args = lock_all._parse_args(["--python", "3.10"])
    chosen = lock_all.select_engines(load_matrix(), args)
    assert chosen[0] == "0.5.9" and "0.5.11" in chosen and "0.5.22" not in chosen  # 0.5.22 needs Python >= 3.11
    assert lock_all.select_engines(load_matrix(), lock_all._parse_args(["--versions", "0.5.11,0.5.9"])) == ["0.5.9", "0.5.11"]


def test_record_of_a_failing_smoke_keeps_step_root_and_packages() -> None:
    smoke = SmokeResult(ok=False, steps=(), step="import sglang", root=FAILING["root"], packages=tuple(FAILING["packages"]))
    assert lock_all.smoke_record(smoke, python="3.11", as_of="2026-05-07T00:07:15Z", today="2026-12-03") == FAILING
    ok = lock_all.smoke_record(SmokeResult(ok=True, steps=("import sglang",)), python="3.11", as_of=None, today="2026-12-03")
    assert ok == {"imports": True, "python": "3.11", "as_of": "2026-12-03", "checked": "2026-12-03"}


def test_an_install_failure_is_one_line_with_uvs_error_and_the_build_exception() -> None:
    """sglang 0.5.18-0.5.22 pin cuda-tile==1.6.0rc5, on PyPI only as NVIDIA's wheel-stub sdist (uv's output, cut)."""
    from imgbuild.adapters.uvlock import install_failure

    stderr = """Resolved 203 packages in 511ms
   Building cuda-tile==1.6.0rc5
error: Failed to build `cuda-tile==1.6.0rc5`
  cause: The build backend returned an error
         [stderr]
             raise URLError(err)
         urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>
         wheel_stub.error.InstallFailedError:
         This is a special placeholder package which downloads a real wheel package
         from https://pypi.nvidia.com/. If https://pypi.nvidia.com/ is not reachable, we
hint: Build failures usually indicate a problem with the package or the build environment
"""
    assert install_failure(stderr) == (
        "error: Failed to build `cuda-tile==1.6.0rc5`: urllib.error.URLError: <urlopen error [Errno -2] Name or "
        "service not known> (a placeholder sdist that downloads its wheel from https://pypi.nvidia.com/ while it builds)")
