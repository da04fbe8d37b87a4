"""The team's targets file (imgbuild.yaml) laid over the shipped matrix, through the real CLI.

Each test works in its own empty directory, as a team's repository would: the file is found
there, or named by --targets or $IMGBUILD_TARGETS; every command sees its targets and GPUs;
`matrix validate` reports each problem as imgbuild.yaml:LINE: path: message, exit 2.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from imgbuild.cli.app import main

ROOT = Path(__file__).resolve().parent.parent
SEED = str(ROOT / "examples" / "qwen3.6-27b")
FAKE_DIGEST = "sha256:" + "ab" * 32  # render only writes the reference; nothing is pulled

TEAM = """\
# our team's targets, over the matrix imgbuild ships
gpus:
  - name: RTX 5000 Ada
    aliases: [5000-ada, rtx-5000-ada]
    smi_names: [NVIDIA RTX 5000 Ada Generation]
    compute_capability: "8.9"
    memory_mib: 32760
bases:
  - name: team-cuda-13.0.1-devel
    image: registry.example/team/cuda
    tag: 13.0.1-devel-ubuntu24.04
    digest: "{digest}"
    glibc: "2.39"
    python: "3.12"
targets:
  - name: qwen-5000ada-x2
    kind: sglang
    engine: "0.5.11"
    cuda: "13.0"
    base: cuda-13.0.1-devel-ubuntu24.04
    python: "3.12"
    model: Qwen/Qwen3.6-27B
    gpus: "RTX 5000 Adax2"
    launch_flags: ["--tp", "2", "--context-length", "32768"]
  - name: qwen-team-base
    kind: sglang
    engine: "0.5.11"
    base: team-cuda-13.0.1-devel
    python: "3.12"
    gpus: "5000-ada x2"
""".format(digest=FAKE_DIGEST)
TEAM_TARGET_LINE = 16  # "  - name: qwen-5000ada-x2"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    seen = capsys.readouterr()
    return int(done.value.code or 0), seen.out, seen.err


@pytest.fixture
def team_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory of the team's own, with its imgbuild.yaml, as the working directory."""
    monkeypatch.delenv("IMGBUILD_TARGETS", raising=False)
    monkeypatch.delenv("IMGBUILD_MATRIX", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "imgbuild.yaml").write_text(TEAM)
    return tmp_path


def shown_targets(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, str]:
    code, out, err = run(capsys, *args, "matrix", "show", "--json")
    assert code == 0, err
    return {t["name"]: t["source"] for t in json.loads(out)["targets"]}


def test_imgbuild_yaml_in_the_working_directory_is_laid_over_the_shipped_matrix(
        capsys: pytest.CaptureFixture[str], team_dir: Path) -> None:
    sources = shown_targets(capsys)
    assert sources["qwen-5000ada-x2"] == f"imgbuild.yaml:{TEAM_TARGET_LINE}"
    assert re.fullmatch(r".*matrix\.yaml:\d+", sources["qwen3.6-27b-a6000x2"])  # the shipped ones stay
    code, out, _ = run(capsys, "matrix", "show")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("qwen-5000ada-x2 "))
    assert row.endswith(f"imgbuild.yaml:{TEAM_TARGET_LINE}") and "RTX 5000 Adax2" in row
    assert any(line.startswith("RTX 5000 Ada ") for line in out.splitlines())  # the team's GPU row


def test_without_a_targets_file_only_the_shipped_targets_are_there(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IMGBUILD_TARGETS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert "qwen-5000ada-x2" not in shown_targets(capsys)


def test_targets_option_and_env_name_the_file_from_anywhere(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team = tmp_path / "repo" / "ci" / "team.yaml"
    team.parent.mkdir(parents=True)
    team.write_text(TEAM)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("IMGBUILD_TARGETS", raising=False)
    want = f"{team}:{TEAM_TARGET_LINE}"
    assert shown_targets(capsys, "--targets", str(team))["qwen-5000ada-x2"] == want
    code, out, err = run(capsys, "matrix", "show", "--json", "--targets", str(team))  # after the command too
    assert code == 0 and want in out, err
    monkeypatch.setenv("IMGBUILD_TARGETS", str(team))
    assert shown_targets(capsys)["qwen-5000ada-x2"] == want


def test_the_option_wins_over_the_variable_and_the_variable_over_the_working_directory(
        capsys: pytest.CaptureFixture[str], team_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = team_dir / "other.yaml"
    other.write_text(TEAM.replace("qwen-5000ada-x2", "from-env").replace("qwen-team-base", "from-env-2"))
    monkeypatch.setenv("IMGBUILD_TARGETS", str(other))
    assert "from-env" in shown_targets(capsys) and "qwen-5000ada-x2" not in shown_targets(capsys)
    assert "qwen-5000ada-x2" in shown_targets(capsys, "--targets", "imgbuild.yaml")


@pytest.mark.parametrize(("args", "env", "needle"), [
    (["--targets", "nope.yaml"], None, "--targets nope.yaml: no such targets file"),
    ([], "nope.yaml", "$IMGBUILD_TARGETS nope.yaml: no such targets file"),
    (["--targets", "."], None, "--targets': File '.' is a directory"),
], ids=["option-missing", "env-missing", "a-directory"])
def test_a_named_file_that_is_not_there_is_one_line_and_exit_2(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        args: list[str], env: str | None, needle: str) -> None:
    monkeypatch.chdir(tmp_path)
    if env:
        monkeypatch.setenv("IMGBUILD_TARGETS", env)
    else:
        monkeypatch.delenv("IMGBUILD_TARGETS", raising=False)
    code, out, err = run(capsys, *args, "render", "qwen-5000ada-x2", "-o", "ctx")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and needle in err, err
    assert "Traceback" not in err and not (tmp_path / "ctx").exists()


def test_render_builds_the_context_of_a_team_target_and_of_one_on_a_team_base(
        capsys: pytest.CaptureFixture[str], team_dir: Path) -> None:
    code, out, err = run(capsys, "render", "qwen-5000ada-x2", "-o", "ctx", "--json")
    assert code == 0, err
    assert json.loads(out)["target"] == "qwen-5000ada-x2"
    recipe = json.loads((team_dir / "ctx" / "recipe.json").read_text())
    assert recipe["target"]["gpus"] == "RTX 5000 Adax2" and recipe["target"]["engine"] == "0.5.11"
    assert "--hash=sha256:" in (team_dir / "ctx" / "requirements.lock").read_text()  # the shipped lock
    code, _out, err = run(capsys, "render", "qwen-team-base", "-o", "ctx2")
    assert code == 0, err
    assert f"FROM registry.example/team/cuda:13.0.1-devel-ubuntu24.04@{FAKE_DIGEST}" in \
        (team_dir / "ctx2" / "Dockerfile").read_text()


def test_plan_and_check_know_the_team_gpu_row(capsys: pytest.CaptureFixture[str], team_dir: Path,
                                              tmp_path: Path) -> None:
    code, out, err = run(capsys, "plan", SEED, "--gpu", "RTX 5000 Adax2", "--json", "--", "--tp", "2",
                         "--context-length", "32768")
    assert code in (0, 1), err  # a verdict on the team's GPU, not "unknown GPU"
    planned = json.loads(out)
    assert planned["gpu"]["name"] == "RTX 5000 Ada" and planned["gpu"]["count"] == 2, planned["gpu"]
    code, out, err = run(capsys, "check", SEED, "--sglang", "0.5.11", "--gpu", "5000-ada x2",
                         "--driver", "580.126.09", "--json")
    assert code == 0, err
    assert json.loads(out)["supported"] is True
    (team_dir / "imgbuild.yaml").unlink()  # without the file the GPU is unknown again
    code, _out, err = run(capsys, "plan", SEED, "--gpu", "RTX 5000 Adax2", "--", "--tp", "2")
    assert code == 2 and "unknown GPU 'RTX 5000 Adax2'" in err


def test_the_team_constraints_rows_apply_to_locking(team_dir: Path) -> None:
    from imgbuild.knowledge.matrix import load_matrix
    from imgbuild.knowledge.targetsfile import overlay_targets_file

    (team_dir / "imgbuild.yaml").write_text(TEAM + """\
constraints:
  - engines: "==0.5.11"
    requirement: "numpy<2.3"
    reason: "our site's numpy"
    source: "team"
""")
    merged = overlay_targets_file(load_matrix())
    assert "numpy<2.3" in [c.requirement for c in merged.constraints_for("0.5.11")]
    assert "numpy<2.3" not in [c.requirement for c in merged.constraints_for("0.5.9")]


def test_matrix_option_still_replaces_the_shipped_matrix_under_the_team_file(
        capsys: pytest.CaptureFixture[str], team_dir: Path) -> None:
    golden = ROOT / "tests" / "golden" / "matrix.yaml"
    sources = shown_targets(capsys)
    code, out, err = run(capsys, "matrix", "show", "--json", "--matrix", str(golden))
    assert code == 0, err
    shown = json.loads(out)
    assert shown["targets_file"] == "imgbuild.yaml"
    assert {t["name"] for t in shown["targets"]} >= {"qwen-5000ada-x2"}
    assert all(s.startswith(str(golden)) or s.startswith("imgbuild.yaml")
               for s in (t["source"] for t in shown["targets"])), sources


def test_matrix_validate_says_both_files_are_valid(capsys: pytest.CaptureFixture[str], team_dir: Path) -> None:
    code, out, err = run(capsys, "matrix", "validate")
    assert code == 0, err
    assert out.splitlines()[1].startswith("imgbuild.yaml: valid over ") and "2 targets, 1 gpus, 1 bases" in out
    code, out, err = run(capsys, "matrix", "validate", "imgbuild.yaml", "--json")  # FILE: a targets file
    assert code == 0, err
    assert json.loads(out)["targets_file"]["targets"] == 2


def test_matrix_validate_warns_of_a_team_target_without_a_shipped_lock(
        capsys: pytest.CaptureFixture[str], team_dir: Path) -> None:
    (team_dir / "imgbuild.yaml").write_text(TEAM.replace('python: "3.12"\n    model', 'python: "3.11"\n    model')
                                             .replace('engine: "0.5.11"\n    cuda', 'engine: "0.5.12"\n    cuda'))
    code, _out, err = run(capsys, "matrix", "validate")
    assert code == 0
    assert f"warning: imgbuild.yaml:{TEAM_TARGET_LINE}: qwen-5000ada-x2: no lock sglang-0.5.12-cp311-x86_64.txt" in err
    assert "imgbuild lock 0.5.12 --python 3.11 --arch x86_64" in err


TARGET_ROW = TEAM.split("targets:\n", 1)[1].split("  - name: qwen-team-base", 1)[0]

BAD_FILES = [
    ("not-yaml", "targets: [\n  {name: x\n", r"^imgbuild\.yaml:\d+: not valid YAML"),
    ("not-a-mapping", "- just\n- a list\n", r"^imgbuild\.yaml:1: a targets file is a mapping of sections"),
    ("unknown-section", "engines: []\n", r"^imgbuild\.yaml:1: engines: is not a section of a targets file"),
    ("section-not-a-list", "targets: {name: x}\n", r"^imgbuild\.yaml:1: targets: must be a list of rows"),
    ("unknown-target-field", "targets:\n" + TARGET_ROW.replace("    kind:", "    engin: x\n    kind:"),
     r"^imgbuild\.yaml:3: targets\[0\]\.engin: is not a target field \(known: name, kind, engine, "),
    ("bare-number", "targets:\n" + TARGET_ROW.replace('python: "3.12"', "python: 3.10"),
     r'^imgbuild\.yaml:7: targets\[0\]\.python: must be a quoted string, not 3\.10: write python: "3\.10"'),
    ("flags-not-a-list", "targets:\n" + TARGET_ROW.replace('launch_flags: ["--tp", "2", "--context-length", "32768"]',
                                                          'launch_flags: "--tp 2"'),
     r"^imgbuild\.yaml:10: targets\[0\]\.launch_flags: must be a list of quoted strings"),
    ("engine-not-released", "targets:\n" + TARGET_ROW.replace('engine: "0.5.11"', 'engine: "9.9.9"'),
     r"^imgbuild\.yaml:4: targets\[0\]\.engine: SGLang 9\.9\.9 is not in the shipped matrix's engines:"),
    ("unknown-gpu", "targets:\n" + TARGET_ROW, r"^imgbuild\.yaml:9: targets\[0\]\.gpus: unknown GPU 'RTX 5000 Adax2' \(a name or alias from "),
    ("unknown-base", "targets:\n" + TARGET_ROW.replace("base: cuda-13.0.1-devel-ubuntu24.04", "base: nowhere"),
     r"^imgbuild\.yaml:6: targets\[0\]\.base: 'nowhere' is neither a name in bases:"),
    ("clash-shipped-target", "targets:\n" + TARGET_ROW.replace("qwen-5000ada-x2", "qwen3.6-27b-a6000x2")
     .replace('gpus: "RTX 5000 Adax2"', 'gpus: "RTX A6000x2"'),
     r"^imgbuild\.yaml:2: targets\[0\]\.name: 'qwen3\.6-27b-a6000x2' is already a target of the shipped matrix"),
    ("twice-in-the-file", "targets:\n" + TARGET_ROW.replace('"RTX 5000 Adax2"', '"RTX A6000x2"') * 2,
     r"^imgbuild\.yaml:11: targets\[1\]\.name: 'qwen-5000ada-x2' is used twice \(first at targets\[0\]\)"),
    ("clash-shipped-gpu-alias", "gpus:\n  - {name: My Card, aliases: [a6000], compute_capability: '8.6', "
     "memory_mib: 49140}\n", r"^imgbuild\.yaml:2: gpus\[0\]\.aliases\[0\]: 'a6000' is already the shipped GPU 'RTX A6000'"),
    ("gpu-memory-missing", "gpus:\n  - name: My Card\n    compute_capability: '8.6'\n",
     r"^imgbuild\.yaml:2: gpus\[0\]\.memory_mib: must be a positive integer"),
    ("unknown-gpu-field", "gpus:\n  - {name: My Card, compute_capability: '8.6', memory_mib: 1, vram: 2}\n",
     r"^imgbuild\.yaml:2: gpus\[0\]\.vram: is not a field of a gpus row"),
    ("clash-shipped-base", "bases:\n  - name: debootstrap-bookworm\n    image: x/y\n",
     r"^imgbuild\.yaml:2: bases\[0\]\.name: 'debootstrap-bookworm' is already a base of the shipped matrix"),
    ("bad-base-digest", "bases:\n  - name: mine\n    image: x/y\n    digest: sha256:abc\n",
     r"^imgbuild\.yaml:4: bases\[0\]\.digest: 'sha256:abc' is not sha256:<64 hex>"),
    ("bad-constraint", "constraints:\n  - {engines: '>=0.5', requirement: 'numpy<<2', reason: r, source: s}\n",
     r"^imgbuild\.yaml:2: constraints\[0\]\.requirement: 'numpy<<2' is not a PEP 508 requirement"),
]


@pytest.mark.parametrize(("text", "pattern"), [(t, p) for _, t, p in BAD_FILES], ids=[i for i, _, _ in BAD_FILES])
def test_a_bad_targets_file_is_its_file_line_and_exit_2_in_validate_and_every_command(
        capsys: pytest.CaptureFixture[str], team_dir: Path, text: str, pattern: str) -> None:
    (team_dir / "imgbuild.yaml").write_text(text)
    code, out, err = run(capsys, "matrix", "validate")
    assert code == 2 and "Traceback" not in err, err
    # one problem is main's one error line; several are listed a line each, then main's
    assert any(re.search(pattern, line.removeprefix("imgbuild: error: ")) for line in err.splitlines()), err
    code, out, err = run(capsys, "render", "qwen3.6-27b-a6000x2", "-o", "ctx")
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("imgbuild: error: imgbuild.yaml") and not (team_dir / "ctx").exists()


def test_validate_lists_every_problem_in_line_order_and_as_json(
        capsys: pytest.CaptureFixture[str], team_dir: Path) -> None:
    text = "targets:\n" + TARGET_ROW.replace('engine: "0.5.11"', 'engine: "9.9.9"').replace(
        "base: cuda-13.0.1-devel-ubuntu24.04", "base: nowhere") + "schema: 1\n"
    (team_dir / "imgbuild.yaml").write_text(text)
    code, out, err = run(capsys, "matrix", "validate", "--json")
    assert code == 2
    problems = json.loads(out)["problems"]
    lines = [int(p.split(":")[1]) for p in problems]
    assert lines == sorted(lines) and len(problems) == 4, problems  # engine, base, gpus, schema
    code, _out, err = run(capsys, "matrix", "validate")
    assert code == 2 and err.count("imgbuild.yaml:") >= 4


@pytest.mark.parametrize("kind", ["binary", "oversized", "alias-bomb"])
def test_a_file_that_is_no_targets_file_at_all_is_refused_quickly(
        capsys: pytest.CaptureFixture[str], team_dir: Path, kind: str) -> None:
    path = team_dir / "imgbuild.yaml"
    if kind == "binary":
        path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
        needle = "imgbuild.yaml: not UTF-8 text"
    elif kind == "oversized":
        path.write_text("# padding\n" * (900 * 1024))
        needle = "imgbuild.yaml: larger than 8 MiB"
    else:
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
                  f"*a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 10)]
        path.write_text("\n".join(lines) + "\n")
        needle = "imgbuild.yaml: its aliases expand to more than"
    code, out, err = run(capsys, "plan", SEED, "--gpu", "a6000x2")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and needle in err, err


def test_the_installed_command_finds_imgbuild_yaml_in_the_working_directory(team_dir: Path) -> None:
    """As a user runs it: the console script in a directory of the team's own."""
    env = {k: v for k, v in os.environ.items() if k not in ("IMGBUILD_TARGETS", "IMGBUILD_MATRIX")}
    exe = Path(sys.executable).with_name("imgbuild")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "imgbuild.cli"]
    done = subprocess.run([*command, "render", "qwen-5000ada-x2", "-o", "ctx"], cwd=team_dir, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (team_dir / "ctx" / "Dockerfile").is_file()


def test_the_target_fields_a_targets_file_takes_are_targetspec_s() -> None:
    from imgbuild.knowledge import targetsfile
    from imgbuild.knowledge.recipe import TargetSpec

    assert set(targetsfile._TARGET_TEXT + targetsfile._TARGET_LISTS) == set(TargetSpec.__dataclass_fields__)


def test_a_target_missing_fields_or_on_an_amd_gpu_is_named_in_the_files_terms(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row without kind and base says which fields are missing (not Python's constructor error);
    a row for an AMD GPU says imgbuild builds CUDA images only."""
    monkeypatch.delenv("IMGBUILD_TARGETS", raising=False)
    monkeypatch.delenv("IMGBUILD_MATRIX", raising=False)
    monkeypatch.chdir(tmp_path)
    row = '  - name: q\n    engine: "0.5.11"\n    python: "3.12"\n    model: Qwen/Qwen3.6-27B\n    gpus: "MI300Xx2"\n'
    (tmp_path / "imgbuild.yaml").write_text("targets:\n" + row)
    code, _, err = run(capsys, "matrix", "validate")
    assert code == 2 and "imgbuild.yaml:2: targets[0]: kind, base missing: each target needs name, kind, engine, base, python" in err
    assert "__init__" not in err and "Traceback" not in err
    full = row.replace('    engine:', '    kind: sglang\n    cuda: "13.0"\n    base: cuda-13.0.1-devel-ubuntu24.04\n    engine:')
    (tmp_path / "imgbuild.yaml").write_text("targets:\n" + full)
    code, _, err = run(capsys, "matrix", "validate")
    assert code == 2 and "targets[0].gpus: 'MI300Xx2' is an AMD GPU (ROCm): imgbuild builds and certifies CUDA images only" in err
