"""render: golden Dockerfiles, byte-identical output, the recipe digest over every input, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from imgbuild.cli import cli, main
from imgbuild.errors import UsageError
from imgbuild.knowledge.matrix import load_matrix
from imgbuild.knowledge.recipe import TargetSpec, update_base_digests
from imgbuild.knowledge.render import bases_of, find_target, render_context, resolve_inputs

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
sys.path.insert(0, str(ROOT / "scripts"))
from regen_golden import TARGETS, render_golden  # noqa: E402


def _inputs(name: str, **changes):  # noqa: ANN003, ANN202
    matrix = load_matrix(GOLDEN / "matrix.yaml")
    target = replace(find_target(matrix.raw, name), **changes)
    engine = matrix.engine(target.engine) if target.kind == "sglang" else None
    return resolve_inputs(target, bases=bases_of(matrix.raw), engine=engine, locks_dir=GOLDEN / "locks")


@pytest.mark.parametrize("name", TARGETS, ids=TARGETS)
def test_rendered_dockerfile_matches_the_golden_file(name: str) -> None:
    expected = (GOLDEN / f"{name}.Dockerfile").read_bytes()
    assert render_golden(name) == expected, "run scripts/regen_golden.py and review the diff"


def test_sglang_dockerfile_pins_base_by_digest_and_orders_heavy_layer_before_target_part() -> None:
    text = render_context(_inputs("golden-sglang")).dockerfile
    lines = text.splitlines()
    assert next(ln for ln in lines if ln.startswith("FROM ")).startswith("FROM nvidia/cuda:13.0.1-devel-ubuntu24.04@sha256:7d2f6a8c")
    copy_venv = next(i for i, ln in enumerate(lines) if ln.startswith("RUN set -e;"))  # the install
    cmd = next(i for i, ln in enumerate(lines) if ln.startswith("CMD "))
    label = next(i for i, ln in enumerate(lines) if ln.startswith("LABEL "))
    assert copy_venv < label < cmd
    assert "--require-hashes" in text and "USER sglang" in text
    assert 'ENTRYPOINT ["python", "-m", "sglang.launch_server"]' in text
    assert json.loads(lines[cmd][4:]) == ["--model-path", "Qwen/Qwen3.6-27B", "--tp", "2", "--speculative-algorithm", "NEXTN"]


def test_one_stage_installs_with_uv_and_takes_the_ca_bundle_from_a_url_not_a_copy() -> None:
    text = render_context(_inputs("golden-sglang")).dockerfile
    assert text.count("\nFROM ") == 1 and "COPY --from" not in text
    assert "ca-bundle.crt" not in text and "PIP_CERT=/tmp/imgbuild/ca.pem" in text and "ARG IMGBUILD_CA_URL=" in text
    install = next(ln for ln in text.split("\nRUN ") if "uv pip install" in ln)
    # fetched, used and deleted in the one step: no layer keeps it
    assert "$IMGBUILD_CA_URL" in install and "rm -rf /tmp/imgbuild/uv /tmp/imgbuild/uv.txt /tmp/imgbuild/ca.pem" in install
    assert "uv==0.13.9 --hash=sha256:" in install and "--require-hashes" in install


def test_render_twice_gives_identical_bytes(tmp_path: Path) -> None:
    runner = CliRunner()
    for out in ("a", "b"):
        result = runner.invoke(cli, ["render", "qwen3.6-27b-a6000x2", "-o", str(tmp_path / out)])
        assert result.exit_code == 0, result.output
    assert not (tmp_path / "a" / "ca-bundle.crt").exists()
    for name in ("Dockerfile", "requirements.lock", "recipe.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    lock = (tmp_path / "a" / "requirements.lock").read_text()
    assert lock.count("--hash=sha256:") > 1000 and "\ntorch==2.11.0 " in lock
    assert "FROM nvidia/cuda:13.0.1-devel-ubuntu24.04@sha256:" in (tmp_path / "a" / "Dockerfile").read_text()


@pytest.mark.parametrize(
    "change",
    [
        {"launch_flags": ("--tp", "4")},
        {"model": "Qwen/Qwen3-8B"},
        {"base": "nvidia/cuda@sha256:" + "3" * 64},
        {"python": "3.11"},
    ],
    ids=["flags", "model", "base", "python"],
)
def test_recipe_digest_changes_with_each_target_input(change: dict) -> None:
    assert _inputs("golden-sglang").digest() != _inputs("golden-sglang", **change).digest()


@pytest.mark.parametrize(
    "field_name, value",
    [("template_text", "FROM x\n"), ("lock_text", "six==1 --hash=sha256:" + "4" * 64 + "\n"), ("imgbuild_version", "9.9")],
    ids=["template", "lock", "imgbuild-version"],
)
def test_recipe_digest_changes_with_template_lock_and_version(field_name: str, value: str) -> None:
    inputs = _inputs("golden-sglang")
    assert inputs.digest() != replace(inputs, **{field_name: value}).digest()


def test_tag_is_target_name_and_digest_prefix() -> None:
    rendered = render_context(_inputs("golden-sglang"))
    assert rendered.tag == "golden-sglang-" + rendered.recipe_digest.split(":")[1][:12]


def test_recipe_label_round_trips_to_the_same_target() -> None:
    rendered = render_context(_inputs("golden-sglang"))
    label_line = next(ln for ln in rendered.dockerfile.splitlines() if "io.imgbuild.recipe=" in ln)
    raw = label_line.split('io.imgbuild.recipe="', 1)[1].rsplit('"', 1)[0]
    assert TargetSpec.from_dict(json.loads(raw.replace('\\"', '"'))) == rendered.target


@pytest.mark.parametrize(
    "name, message",
    [
        ("golden-old-glibc", "glibc 2.31"),
        ("golden-no-lock", "lock"),
        ("golden-no-digest", "has no digest"),
    ],
    ids=["old-glibc", "missing-lock", "base-without-digest"],
)
def test_bad_targets_are_refused_with_the_fix(name: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        _inputs(name)
    assert message in err.value.one_line()


def test_cuda_major_different_from_the_engines_torch_is_refused() -> None:
    with pytest.raises(UsageError, match="CUDA 12.8 but SGLang 0.5.11's torch"):
        _inputs("golden-sglang", cuda="12.8")


@pytest.mark.parametrize(
    "args, stderr",
    [
        (["render", "no-such-target"], "unknown target 'no-such-target'"),
        (["render", "test-sglang-0.5.9", "--base", "debian:bookworm"], "is not pinned by digest"),
        (["render"], "give a TARGET"),
        (["render", "--engine", "0.0.1"], "0.0.1"),
    ],
    ids=["unknown-target", "unpinned-base", "no-target", "unknown-engine"],
)
def test_cli_render_bad_input_exits_2_with_one_line(args: list[str], stderr: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert stderr in err and "Traceback" not in err


def test_cli_render_target_from_the_command_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["render", "--engine", "0.5.11", "--flags", "--tp 2", "-o", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["base"].startswith("nvidia/cuda:13.0.1-devel-ubuntu24.04@sha256:")
    assert 'CMD ["--tp", "2"]' in (tmp_path / "Dockerfile").read_text()


def test_update_base_digests_rewrites_only_that_base_and_keeps_comments() -> None:
    import yaml

    text = (GOLDEN / "matrix.yaml").read_text()
    new = update_base_digests(text, "old-glibc", "sha256:" + "5" * 64, {"linux/amd64": "sha256:" + "6" * 64})
    before, after = bases_of(yaml.safe_load(text)), bases_of(yaml.safe_load(new))
    assert after["old-glibc"].digest == "sha256:" + "5" * 64
    assert after["old-glibc"].platforms == {"linux/amd64": "sha256:" + "6" * 64}
    assert {k: v for k, v in after.items() if k != "old-glibc"} == {k: v for k, v in before.items() if k != "old-glibc"}
    assert [ln for ln in new.splitlines() if ln.startswith("#")] == [ln for ln in text.splitlines() if ln.startswith("#")]


def test_render_module_imports_no_adapter_libraries() -> None:
    code = "import sys, imgbuild.knowledge.render, imgbuild.knowledge.recipe; print(sorted(m for m in ('docker','httpx','pynvml','click') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
