"""target add and make MODEL --gpu: real model configs (tests/data/models) on GPUs matrix.yaml has
no target for, the real matrix, locks/ and planner; the targets file read back through the
targets file reader; certify of the written target against the stand-in server image."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from imgbuild.flows.targetadd import (
    TargetAddOptions,
    add_target_text,
    decide_target,
    fit_flags,
    merge_flags,
)
from imgbuild.flows.targets import newest_devel_base
from imgbuild.knowledge.matrix import load_matrix
from imgbuild.knowledge.recipe import engine_lock_name
from imgbuild.knowledge.render import bases_of
from imgbuild.knowledge.targetsfile import overlay_matrix, read_targets_file

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "data" / "models"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN_MOE = "Qwen/Qwen3-30B-A3B"
QWEN_BIG = "Qwen/Qwen3-235B-A22B"
MODEL_DIRS = {LLAMA: MODELS / "llama-3.1-8b", QWEN_MOE: MODELS / "qwen3-30b-a3b", QWEN_BIG: MODELS / "qwen3-235b-a22b"}
MATRIX = load_matrix(ROOT / "matrix.yaml")


def opts(model: str, gpu: str, **kw: Any) -> TargetAddOptions:
    return TargetAddOptions(model=model, gpu=gpu, model_dir=str(MODEL_DIRS[model]), **kw)


def imgbuild(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command line as a user runs it, in a directory of their own (nothing read from $HOME)."""
    home = cwd / ".home"
    base = {k: v for k, v in os.environ.items() if k not in ("IMGBUILD_TARGETS", "IMGBUILD_MATRIX")}
    run_env = {**base, "HF_HUB_OFFLINE": "1", "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"),
               "XDG_STATE_HOME": str(home / "state"), "XDG_DATA_HOME": str(home / "data"), **(env or {})}
    run_env.pop("IMGBUILD_GPU_SNAPSHOT", None)
    return subprocess.run([sys.executable, "-m", "imgbuild.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=run_env, timeout=120)


def model_dir_args(*models: str) -> list[str]:
    return [a for m in models for a in ("--model-dir", f"{m}={MODEL_DIRS[m]}")]


def newest_with_lock(architecture: str, python: str) -> str:
    """What the engine choice must be with no driver given: the newest release registering the
    architecture whose lock for the base's Python is in locks/ (computed, so new locks move it)."""
    for engine in reversed(MATRIX.engines):
        if architecture in engine.architectures and engine.cuda and not engine.lock_failure() and \
                (ROOT / "locks" / engine_lock_name(engine.version, python=python, arch="x86_64")).is_file():
            return engine.version
    raise AssertionError("no engine with a lock")


def test_the_models_gpus_have_no_target_in_the_matrix() -> None:
    gpus = {MATRIX.resolve_gpu(t["gpus"])[0].name for t in MATRIX.raw["targets"] if t.get("gpus")}
    assert not gpus & {"L4", "H100 SXM"}


# ---------------------------------------------------------------- the decision


def test_llama_on_one_l40s_takes_the_newest_locked_release_its_base_and_no_flags() -> None:
    d = decide_target(opts(LLAMA, "L40S"), matrix=MATRIX)
    t = d.target
    assert t is not None, d.refusal
    assert t.engine == newest_with_lock("LlamaForCausalLM", "3.12")
    assert t.base == newest_devel_base(bases_of(MATRIX.raw), MATRIX.engine(t.engine).cuda)
    assert (t.python, t.gpus, t.launch_flags, t.model, t.name) == ("3.12", "L40Sx1", (), LLAMA, "llama-3.1-8b-instruct-l40sx1")
    why = {r.step: r.why for r in d.reasons}
    assert list(why) == ["driver", "engine", "base", "python", "tp", "flags"]
    assert "registers LlamaForCausalLM" in why["engine"] and "has a lock for Python 3.12" in why["engine"]
    assert why["flags"].startswith("no flags needed; plan: fits on 1 x L40S")
    assert "SGLang's default" in why["tp"]


def test_llama_on_one_l4_gets_flags_that_leave_a_useful_kv_pool() -> None:
    """On 1 x L4, SGLang 0.5.23's default leaves Llama-3.1-8B no KV cache; plan's cheapest change
    (a higher --mem-fraction-static) starts with a few hundred tokens, so the next one is taken."""
    from imgbuild.flows.targetadd import USEFUL_KV_TOKENS

    d = decide_target(opts(LLAMA, "L4"), matrix=MATRIX)
    assert d.target is not None, d.refusal
    assert d.target.engine == newest_with_lock("LlamaForCausalLM", "3.12")
    assert d.plan["verdict"] == "fits"
    assert d.plan["kv_tokens"] >= min(d.plan["context_length"], USEFUL_KV_TOKENS)
    why = {r.step: r.why for r in d.reasons}["flags"]
    if d.target.launch_flags:  # the release's defaults do not fit: the reason says what was changed and why
        assert why.startswith("the given flags plus plan's cheapest change that fits: ")
        assert "--mem-fraction-static" in d.target.launch_flags
    else:
        assert why.startswith("no flags needed")


def test_qwen3_moe_on_two_h100_gets_tp_2() -> None:
    d = decide_target(opts(QWEN_MOE, "H100x2"), matrix=MATRIX)
    assert d.target is not None and d.target.launch_flags == ("--tp", "2")
    assert d.target.gpus == "H100 SXMx2" and d.plan["verdict"] == "fits"
    assert "the GPU count" in {r.step: r.why for r in d.reasons}["tp"]


def test_an_older_driver_takes_the_newest_release_on_a_cuda_it_runs() -> None:
    d = decide_target(opts(LLAMA, "L4", driver="575.51.03"), matrix=MATRIX)
    assert d.target is not None
    cuda = MATRIX.engine(d.target.engine).cuda
    assert cuda in ("12.8", "12.9") and d.target.base.startswith(f"cuda-{cuda}.")
    engine_why = {r.step: r.why for r in d.reasons}["engine"]
    assert "which driver 575.51.03 runs" in engine_why
    assert "driver 575.51.03 is older than CUDA 13.0 needs (>= 580.65.06)" in engine_why


def test_flags_that_do_not_fit_get_plans_cheapest_change_that_fits() -> None:
    given = ("--mem-fraction-static", "0.7")  # 0.7 of an H100 holds less than Qwen3-30B-A3B's 57 GiB of weights
    d = decide_target(opts(QWEN_MOE, "H100", flags=given), matrix=MATRIX)
    assert d.target is not None, d.refusal
    flags = d.target.launch_flags
    assert flags[0] == "--mem-fraction-static" and float(flags[1]) > 0.7 and flags.count("--mem-fraction-static") == 1
    assert "plan's cheapest change that fits" in {r.step: r.why for r in d.reasons}["flags"]
    _, again, _ = fit_flags(decide_info(QWEN_MOE), flags, "H100x1", d.target.engine, MATRIX)
    assert again.fits


def test_a_borderline_launch_takes_the_change_that_leaves_a_margin_outside_plans_error() -> None:
    """Flags inside plan's own error (knowledge/planerror.py) are not written as they are when a change
    leaves a safe margin: the target gets the change, and its plan says fits."""
    from imgbuild.flows.plan import PlanOptions, plan_launch

    def plan(flags: tuple[str, ...]) -> Any:
        opts_ = PlanOptions(model=str(MODEL_DIRS[LLAMA]), flags=flags, gpu="L4x1", sglang="0.5.11", suggest=False)
        return plan_launch(opts_, matrix=MATRIX)

    given = next(f for m in range(850, 1000, 5)
                 if plan(f := ("--mem-fraction-static", f"{m / 1000:.3f}", "--context-length", "8192")).verdict == "borderline")
    flags, result, why = fit_flags(decide_info(LLAMA), given, "L4x1", "0.5.11", MATRIX)
    assert result.verdict == "fits" and flags != given and why is not None, (flags, result.verdict, why)
    assert "borderline" in why


def decide_info(model: str) -> Any:
    from imgbuild.knowledge.modelinfo import inspect_model

    return inspect_model(str(MODEL_DIRS[model]))


def test_weights_beyond_the_gpus_are_refused_naming_the_smallest_gpu_sets_that_fit() -> None:
    d = decide_target(opts(QWEN_BIG, "H100x2"), matrix=MATRIX)
    assert d.target is None
    assert "does not fit on 2 x H100 SXM" in (d.refusal or "") and "loading weights" in (d.refusal or "")
    assert d.fits_on[0] == "H100 SXMx8"  # 4 of them do not hold 438 GiB of weights and a KV cache
    info = decide_info(QWEN_BIG)
    _, four, _ = fit_flags(info, ("--tp", "4"), "H100x4", {r.step: r.value for r in d.reasons}["engine"], MATRIX)
    assert not four.fits
    other = MATRIX.resolve_gpu(d.fits_on[1])
    assert other[0].name != "H100 SXM" and other[0].memory_mib * other[1] < 8 * 81559


def test_merge_flags_replaces_a_flag_and_its_tp_spellings() -> None:
    assert merge_flags(("--tp-size", "2", "--disable-radix-cache"), ("--tp", "4")) == ("--disable-radix-cache", "--tp", "4")
    assert merge_flags(("--mem-fraction-static=0.7",), ("--mem-fraction-static", "0.8")) == ("--mem-fraction-static", "0.8")
    assert merge_flags((), ("--disable-radix-cache",)) == ("--disable-radix-cache",)


@pytest.mark.parametrize("text", [
    pytest.param("targets: []\ngpus:\n  - name: X\n", id="empty-list-then-gpus"),
    pytest.param("# team\ngpus: []\n", id="no-targets-section"),
    pytest.param("targets:\n  - name: a\n\n# the bases\nbases: []\n", id="targets-then-bases"),
])
def test_a_new_target_goes_into_targets_and_every_other_line_stays(text: str) -> None:
    item = '  - name: "b"\n'
    out = add_target_text(text, item)
    data = yaml.safe_load(out)
    assert [t["name"] for t in data["targets"]][-1] == "b"
    kept = [line for line in out.splitlines() if line.strip() and line not in item.splitlines() and line != "targets:"]
    assert kept == [line for line in text.splitlines() if line.strip() and not line.startswith("targets:")]


# ---------------------------------------------------------------- the command line and the file


def test_target_add_writes_the_team_file_then_appends_and_refuses_a_name_twice(tmp_path: Path) -> None:
    first = imgbuild("target", "add", LLAMA, "--gpu", "L4", *model_dir_args(LLAMA), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    path = tmp_path / "imgbuild.yaml"
    text = path.read_text()
    assert "written: imgbuild.yaml:" in first.stdout and "next: imgbuild make llama-3.1-8b-instruct-l4x1" in first.stdout
    for step in ("driver", "engine", "base", "python", "tp", "flags"):
        assert f"  # {step}: " in text  # the reasons, as comments above the row

    second = imgbuild("target", "add", QWEN_MOE, "--gpu", "H100x2", "--json", *model_dir_args(QWEN_MOE), cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    doc = json.loads(second.stdout)
    assert doc["fits"] and doc["target"]["launch_flags"] == ["--tp", "2"] and doc["written"].startswith("imgbuild.yaml:")
    assert path.read_text().startswith(text)  # the first target's lines are as they were
    merged = overlay_matrix(MATRIX, read_targets_file(path))
    assert sorted(merged.target_sources) == ["llama-3.1-8b-instruct-l4x1", "qwen3-30b-a3b-h100x2"]

    again = imgbuild("target", "add", LLAMA, "--gpu", "l4x1", *model_dir_args(LLAMA), cwd=tmp_path)
    shipped = imgbuild("target", "add", LLAMA, "--gpu", "L4", "--name", "qwen3.6-27b-a6000x2",
                       *model_dir_args(LLAMA), cwd=tmp_path)
    assert (again.returncode, shipped.returncode) == (2, 2)
    assert "target 'llama-3.1-8b-instruct-l4x1' already exists (imgbuild.yaml:" in again.stderr
    assert "already exists (" in shipped.stderr and "matrix.yaml" in shipped.stderr
    assert len(again.stderr.strip().splitlines()) == 1 and "Traceback" not in again.stderr
    valid = imgbuild("matrix", "validate", cwd=tmp_path)
    assert valid.returncode == 0 and "imgbuild.yaml: valid" in valid.stdout


def test_target_add_refuses_with_exit_1_and_writes_nothing(tmp_path: Path) -> None:
    done = imgbuild("target", "add", QWEN_BIG, "--gpu", "H100x2", "--targets", str(tmp_path / "team.yaml"),
                    *model_dir_args(QWEN_BIG), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "refused: " in done.stdout and "would fit on: H100 SXMx8" in done.stdout
    assert "smallest GPU sets that fit: H100 SXMx8" in done.stderr
    assert not (tmp_path / "team.yaml").exists()


def test_make_model_gpu_adds_the_target_renders_it_and_reuses_it_next_time(tmp_path: Path) -> None:
    args = ["--until", "render", "--state", str(tmp_path / "state"), *model_dir_args(LLAMA)]
    first = imgbuild("make", LLAMA, "--gpu", "L4", *args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "written: imgbuild.yaml:" in first.stderr and "render: done" in first.stderr
    dockerfile = tmp_path / "state" / "contexts" / "llama-3.1-8b-instruct-l4x1" / "Dockerfile"
    assert "sglang-0.5" in dockerfile.read_text() or "SGLang" in dockerfile.read_text()
    second = imgbuild("make", LLAMA, "--gpu", "l4x1", *args, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "target llama-3.1-8b-instruct-l4x1 (imgbuild.yaml:" in second.stderr
    assert "render: same inputs as before, skipped" in second.stderr
    every = imgbuild("make", *args, "--json", cwd=tmp_path)  # no TARGET: the team file's targets
    assert every.returncode == 0, every.stderr
    assert [t["target"] for t in json.loads(every.stdout)["targets"]] == ["llama-3.1-8b-instruct-l4x1"]



def test_make_model_gpu_makes_the_targets_file_it_is_given(tmp_path: Path) -> None:
    """--targets (or $IMGBUILD_TARGETS) naming a file that does not exist yet: make, like target add, makes it."""
    args = ["--until", "render", "--state", str(tmp_path / "state"), *model_dir_args(LLAMA)]
    done = imgbuild("--targets", "team/new.yaml", "make", LLAMA, "--gpu", "L4", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "written: team/new.yaml:" in done.stderr and "render: done" in done.stderr
    assert "llama-3.1-8b-instruct-l4x1" in (tmp_path / "team" / "new.yaml").read_text()


# ---------------------------------------------------------------- certify on the stand-in


@pytest.mark.docker
def test_the_written_target_certifies_on_the_standin_image_without_gpus(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_engine: Any, test_base_ref: str) -> None:
    """make's certify step on the target `target add` wrote (its GPUs, flags and model), run against
    tests/standin's server image with no GPU attached (an unattested pass), through the real engine."""
    from test_make import standin_image

    from imgbuild.adapters import engine
    from imgbuild.flows.make import StepSettings, default_steps
    from imgbuild.flows.targetadd import save_target
    from imgbuild.knowledge.render import find_target

    decision = decide_target(opts(LLAMA, "L4"), matrix=MATRIX)
    save_target(decision, tmp_path / "imgbuild.yaml", shipped=MATRIX, made_on="2026-12-03")
    merged = overlay_matrix(MATRIX, read_targets_file(tmp_path / "imgbuild.yaml"))
    spec = find_target(merged.raw, "llama-3.1-8b-instruct-l4x1")
    image = standin_image(docker_engine, test_base_ref)
    monkeypatch.setenv("IMGBUILD_GPU_SNAPSHOT", str(ROOT / "tests" / "data" / "gpus" / "l4x1-clean.json"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # the GPU locks
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = StepSettings(
        matrix=merged, locks_dir=ROOT / "locks", render_dir=tmp_path / "contexts",
        model_dirs={LLAMA: str(MODEL_DIRS[LLAMA])}, certify_attach_gpus=False, certify_timeout_s=120,
        certify_port=port, certify_environment={"STANDIN_STEP_S": "0.05"}, store_dir=tmp_path / "certs")
    steps = {s.name: s for s in default_steps(settings, connect_engine=lambda: engine.connect(timeout_s=60))}
    detail, result = steps["certify"].run(spec, {"build": {"image": image}})
    assert result["verdict"] == "pass-unattested", detail


def test_make_model_gpu_on_a_base_made_per_machine_renders_from_the_base_given(tmp_path: Path) -> None:
    """--base-name debootstrap-bookworm (no digest: scripts/services makes it) picks the newest release
    with a lock for its Python 3.11; make's --base REF@sha256: is what the Dockerfile starts FROM."""
    ref = "127.0.0.1:5055/imgbuild-test-base@sha256:" + "ab" * 32
    done = imgbuild("make", LLAMA, "--gpu", "L4", "--base-name", "debootstrap-bookworm", "--base", ref,
                    "--until", "render", "--state", str(tmp_path / "state"), *model_dir_args(LLAMA), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    row = read_targets_file(tmp_path / "imgbuild.yaml").data["targets"][0]
    assert (row["base"], row["python"]) == ("debootstrap-bookworm", "3.11")
    assert row["engine"] == newest_with_lock("LlamaForCausalLM", "3.11")
    assert "made per machine (no digest)" in " ".join(done.stderr.split())
    name = "llama-3.1-8b-instruct-l4x1-debootstrap-bookworm"
    dockerfile = (tmp_path / "state" / "contexts" / name / "Dockerfile").read_text()
    assert f"\nFROM {ref}\n" in dockerfile
