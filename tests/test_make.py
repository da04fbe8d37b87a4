"""make: skip steps whose inputs did not change, resume after a failure, a queue per GPU
set; the real steps on real matrix targets; and a real build + publish through the engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Mapping

import pytest
import yaml

from imgbuild.cli.make import exit_code_of
from imgbuild.errors import EnvironmentUnavailable, NegativeVerdict
from imgbuild.flows.make import MakeOptions, NotApplicable, StateStore, Step, gpu_queues, run_make, summary_lines
from imgbuild.knowledge.recipe import TargetSpec

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI") == "true"
SEED_FLAGS = ["--tp", "2", "--mem-fraction-static", "0.85", "--context-length", "32768",
              "--max-running-requests", "32", "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
              "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4", "--disable-radix-cache"]


def target(name: str, gpus: str | None = "RTX A6000x2", **kw: Any) -> TargetSpec:
    return TargetSpec(name=name, kind="test", engine="0.5.9", base="b", python="3.11", gpus=gpus,
                      packages=("six==1.17.0",), **kw)


class Workshop:
    """Steps that do real, small work in a directory: each writes its output file from its
    inputs, so a rerun is visible on disk and in ``runs``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs: list[tuple[str, str]] = []
        self.fail: set[tuple[str, str]] = set()
        self.lock = threading.Lock()
        self.hooks: dict[str, Any] = {}

    def step(self, name: str, *, applies: Any = None) -> Step:
        def inputs(t: TargetSpec, prior: Mapping[str, Any]) -> dict[str, Any]:
            if applies is not None and not applies(t):
                raise NotApplicable(f"{name} does not apply to {t.name}")
            return {"target": t.to_dict(), "prior": {k: v.get("out") for k, v in prior.items()}}

        def run(t: TargetSpec, prior: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
            with self.lock:
                self.runs.append((t.name, name))
            if name in self.hooks:
                self.hooks[name](t)
            if (t.name, name) in self.fail:
                raise NegativeVerdict(f"{name} of {t.name} failed")
            out = self.root / t.name / f"{name}.txt"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(" ".join(t.launch_flags))
            return f"wrote {out.name}", {"out": str(out)}

        return Step(name, inputs, run, lambda result: Path(result["out"]).exists())

    def steps(self) -> list[Step]:
        return [self.step("check"), self.step("plan"), self.step("render"), self.step("build"),
                self.step("certify", applies=lambda t: bool(t.gpus)), self.step("publish")]


def make(ws: Workshop, state: StateStore, *targets: TargetSpec, **kw: Any):  # noqa: ANN201
    return run_make(MakeOptions(targets=targets, **kw), steps=ws.steps(), state=state)


def test_a_second_make_skips_every_step_whose_inputs_did_not_change(tmp_path: Path) -> None:
    ws, state = Workshop(tmp_path / "work"), StateStore(tmp_path / "state")
    a, b = target("a"), target("b", gpus="L4x1")
    make(ws, state, a, b)
    assert len(ws.runs) == 12
    ws.runs.clear()
    summary = make(ws, state, a, b)
    assert ws.runs == []
    assert {e["status"] for o in summary.outcomes for e in o.steps.values()} == {"skipped-same"}
    assert exit_code_of(summary) == 0


def test_a_changed_input_reruns_that_target_only(tmp_path: Path) -> None:
    ws, state = Workshop(tmp_path / "work"), StateStore(tmp_path / "state")
    make(ws, state, target("a"), target("b"))
    ws.runs.clear()
    make(ws, state, target("a", launch_flags=("--tp", "2")), target("b"))
    assert {name for name, _ in ws.runs} == {"a"} and len(ws.runs) == 6


def test_after_a_failure_the_next_make_resumes_at_the_failed_step(tmp_path: Path) -> None:
    ws, state = Workshop(tmp_path / "work"), StateStore(tmp_path / "state")
    ws.fail.add(("a", "build"))
    first = make(ws, state, target("a"))
    assert first.outcomes[0].failed_step == "build" and exit_code_of(first) == 1
    assert "certify" not in first.outcomes[0].steps  # nothing after the failure ran
    assert any("a: build failed: build of a failed" in line for line in summary_lines(first))
    ws.fail.clear()
    ws.runs.clear()
    second = make(ws, state, target("a"))
    assert ws.runs == [("a", "build"), ("a", "certify"), ("a", "publish")]
    assert [second.outcomes[0].steps[s]["status"] for s in ("check", "plan", "render")] == ["skipped-same"] * 3


def test_a_step_that_does_not_apply_is_skipped_with_the_reason(tmp_path: Path) -> None:
    ws, state = Workshop(tmp_path / "work"), StateStore(tmp_path / "state")
    [outcome] = make(ws, state, target("cpu", gpus=None)).outcomes
    assert outcome.steps["certify"]["status"] == "skipped"
    assert outcome.steps["certify"]["detail"] == "certify does not apply to cpu"
    assert outcome.steps["publish"]["status"] == "done"


def test_a_result_that_is_gone_is_made_again(tmp_path: Path) -> None:
    ws, state = Workshop(tmp_path / "work"), StateStore(tmp_path / "state")
    make(ws, state, target("a"))
    (tmp_path / "work" / "a" / "build.txt").unlink()  # the image was removed from the engine
    ws.runs.clear()
    make(ws, state, target("a"))
    assert ws.runs == [("a", "build")]


def test_every_target_is_prepared_before_any_build_starts(tmp_path: Path) -> None:
    ws, state = Workshop(tmp_path / "work"), StateStore(tmp_path / "state")
    make(ws, state, *[target(f"t{i}", gpus=f"L4x{i + 1}") for i in range(4)])
    first_build = next(i for i, (_, step) in enumerate(ws.runs) if step == "build")
    assert all(step in ("check", "plan", "render") for _, step in ws.runs[:first_build])
    assert sum(1 for _, step in ws.runs[:first_build] if step == "render") == 4


def test_until_stops_after_that_step(tmp_path: Path) -> None:
    ws, state = Workshop(tmp_path / "work"), StateStore(tmp_path / "state")
    make(ws, state, target("a"), until="render")
    assert [step for _, step in ws.runs] == ["check", "plan", "render"]


def test_targets_on_different_gpu_sets_build_in_parallel_and_one_set_in_turn(tmp_path: Path) -> None:
    ws, state = Workshop(tmp_path / "work"), StateStore(tmp_path / "state")
    # Two GPU sets: their builds must meet at the barrier (a serial make would break it);
    # the two targets on one set must never hold that set at the same time.
    meet = threading.Barrier(2, timeout=60)
    held: dict[str, threading.Lock] = {"rtx a6000x2": threading.Lock(), "l4x1": threading.Lock()}
    met: list[str] = []

    def build(t: TargetSpec) -> None:
        lock = held[t.gpus.lower()]  # type: ignore[union-attr]
        assert lock.acquire(blocking=False), f"two targets on {t.gpus} at once"
        try:
            if t.name.endswith("-1"):
                meet.wait()
                met.append(t.name)
        finally:
            lock.release()

    ws.hooks["build"] = build
    targets = [target("a6000-1"), target("a6000-2"), target("l4-1", gpus="L4x1"), target("l4-2", gpus="L4x1")]
    summary = make(ws, state, *targets)
    assert sorted(met) == ["a6000-1", "l4-1"]
    assert summary.queues == {"rtx a6000x2": ["a6000-1", "a6000-2"], "l4x1": ["l4-1", "l4-2"]}
    assert exit_code_of(summary) == 0


def test_exit_code_is_the_worst_failure(tmp_path: Path) -> None:
    ws, state = Workshop(tmp_path / "work"), StateStore(tmp_path / "state")

    def no_engine(t: TargetSpec) -> None:
        if t.name == "b":
            raise EnvironmentUnavailable("no Docker engine")

    ws.hooks["build"] = no_engine
    ws.fail.add(("a", "build"))
    assert exit_code_of(make(ws, state, target("a"), target("b", gpus="L4x1"))) == 3


def test_queues_group_targets_by_gpu_set_ignoring_case_and_spaces() -> None:
    queues = gpu_queues([target("a", gpus="RTX A6000x2"), target("b", gpus="rtx  a6000x2"), target("c", gpus=None)])
    assert {k: [t.name for t in v] for k, v in queues.items()} == {"rtx a6000x2": ["a", "b"], "none": ["c"]}


# ---------------------------------------------------------------- the real steps, through the CLI


def write_matrix(directory: Path, targets: list[dict[str, Any]]) -> Path:
    text = (ROOT / "matrix.yaml").read_text(encoding="utf-8")
    start = text.index("\ntargets:\n") + 1
    end = text.index("# ---- GENERATED")
    path = directory / "matrix.yaml"
    path.write_text(text[:start] + yaml.safe_dump({"targets": targets}, sort_keys=False, width=200) + "\n" + text[end:])
    if not (directory / "locks").exists():
        (directory / "locks").symlink_to(ROOT / "locks")
    return path


def seed_variant(name: str, flags: list[str], gpus: str = "RTX A6000x2") -> dict[str, Any]:
    return {"name": name, "kind": "sglang", "engine": "0.5.11", "cuda": "13.0", "base": "cuda-13.0.1-devel-ubuntu24.04",
            "python": "3.12", "model": "Qwen/Qwen3.6-27B", "gpus": gpus, "launch_flags": flags}


def cli(*args: str, cwd: Path = ROOT, stdin: str | None = None, env: dict[str, str] | None = None,
        timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgbuild.cli", *args], capture_output=True, text=True, cwd=cwd,
                          input=stdin, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}, timeout=timeout_s)


def test_make_checks_plans_and_renders_real_targets_and_skips_them_the_second_time(tmp_path: Path) -> None:
    fits = seed_variant("seed-fits", SEED_FLAGS)
    too_big = seed_variant("seed-too-big", [f for f in SEED_FLAGS if f not in ("--max-running-requests", "32")])
    matrix = write_matrix(tmp_path, [fits, too_big])
    args = ["make", "--all", "--until", "render", "--matrix", str(matrix), "--state", str(tmp_path / "state"),
            "--model-dir", f"Qwen/Qwen3.6-27B={ROOT / 'examples' / 'qwen3.6-27b'}"]
    first = cli(*args, "--json")
    assert first.returncode == 1, first.stderr  # one plan does not fit: a negative verdict
    by_name = {t["target"]: t for t in json.loads(first.stdout)["targets"]}
    assert [by_name["seed-fits"]["steps"][s]["status"] for s in ("check", "plan", "render")] == ["done"] * 3
    assert by_name["seed-too-big"]["verdict"] == "failed at plan"
    assert "Not enough memory" in by_name["seed-too-big"]["steps"]["plan"]["detail"]
    rendered = Path(by_name["seed-fits"]["steps"]["render"]["result"]["dir"])
    assert "--require-hashes" in (rendered / "Dockerfile").read_text()

    second = cli(*args)
    assert second.returncode == 1
    assert "seed-fits: render: same inputs as before, skipped" in second.stderr
    header = second.stdout.splitlines()[0].split()
    assert header == ["target", "engine", "verdict", "image", "certificate", "published"]
    assert "seed-too-big: plan failed: " in second.stdout


def test_make_without_targets_is_a_usage_error() -> None:
    done = cli("make")
    assert done.returncode == 2
    assert "give one or more TARGET names, or --all" in done.stderr


# ---------------------------------------------------------------- engine + registry


def services() -> dict[str, str]:
    env = {k: os.environ[k] for k in ("DOCKER_HOST", "IMGBUILD_TEST_BASE") if k in os.environ}
    path = Path("/run/imgbuild-services.env")
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, value = line.partition("=")
            env.setdefault(key.strip(), value.strip())
    return env


@pytest.mark.docker
def test_make_builds_and_publishes_a_test_target_then_changes_nothing_the_second_time(tmp_path: Path) -> None:
    env = services()
    if "IMGBUILD_TEST_BASE" not in env:
        if IN_CI:
            pytest.fail("CI without scripts/services")
        pytest.skip("no Docker services (sudo scripts/services start)")
    from registryserver import RegistryServer

    user, password = "maker", "Make-pw-51f0"
    with RegistryServer(tmp_path / "registry", users={user: password}) as registry:
        args = ["make", "test-sglang-0.5.9", "--state", str(tmp_path / "state"), "--store", str(tmp_path / "store"),
                "--base", env["IMGBUILD_TEST_BASE"], "--ca-bundle", "/etc/ssl/certs/ca-certificates.crt",
                "--to", f"{registry.host}/made/sglang", "--allow-uncertified", "--registry-ca", str(registry.ca),
                "-u", user, "--password-stdin"]
        home = tmp_path / "home"  # every file make writes (build records, caches) lands under tmp_path
        run_env = {"DOCKER_HOST": env["DOCKER_HOST"], "IMGBUILD_REGISTRY": "", "HOME": str(home),
                   "XDG_CACHE_HOME": str(home / "cache"), "XDG_DATA_HOME": str(home / "data"),
                   "XDG_STATE_HOME": str(home / "state"), "DOCKER_CONFIG": str(home / "docker")}
        first = cli(*args, "--json", stdin=password + "\n", env=run_env, timeout_s=900)
        assert first.returncode == 0, first.stderr[-3000:]
        [outcome] = json.loads(first.stdout)["targets"]
        assert outcome["steps"]["certify"]["status"] == "skipped"  # a test target names no GPUs
        assert outcome["published"].startswith(f"{registry.host}/made/sglang@sha256:")
        before = registry.snapshot()
        second = cli(*args, "--json", stdin=password + "\n", env=run_env, timeout_s=300)
        assert second.returncode == 0, second.stderr[-3000:]
        [again] = json.loads(second.stdout)["targets"]
        assert {s: e["status"] for s, e in again["steps"].items() if e["status"] != "skipped"} == {
            "render": "skipped-same", "build": "skipped-same", "publish": "skipped-same"}
        assert registry.snapshot() == before
        assert password not in first.stderr + first.stdout + second.stderr + second.stdout
        written = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert any("builds" in p.parts for p in written)  # the build record is among them
        assert not [p for p in written if password.encode() in p.read_bytes()]

        site = cli("report", "-o", str(tmp_path / "site"), "--state", str(tmp_path / "state"),
                   "--store", str(tmp_path / "store"))
        assert site.returncode == 0, site.stderr
        page = (tmp_path / "site" / "index.html").read_text()
        assert 'data-target="test-sglang-0.5.9" data-status="published-uncertified"' in page


def test_make_until_render_loads_neither_docker_nor_httpx(tmp_path: Path) -> None:
    code = ("import json, sys\nfrom imgbuild.cli import main\n"
            "try:\n"
            f"    main(['make', '--all', '--until', 'render', '--state', {str(tmp_path)!r}, '--model-dir',\n"
            f"          'Qwen/Qwen3.6-27B={ROOT / 'examples' / 'qwen3.6-27b'}'])\n"
            "except SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in ('docker', 'httpx', 'pynvml') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


# ---------------------------------------------------------------- make's certify on a remote DOCKER_HOST


class TcpToDockerSocket:
    """dockerd's unix socket served on a TCP port of this machine, counting connections, so
    DOCKER_HOST can name the real engine as tcp://HOSTNAME:PORT (what a remote engine looks like)."""

    def __init__(self, socket_path: str) -> None:
        import socket

        self.socket_path = socket_path
        self.connections = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))  # the port is chosen by the server that uses it
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        import socket

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.connections += 1
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.socket_path)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: Any, dst: Any) -> None:
        import socket

        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


def standin_image(eng: Any, base: str) -> str:
    """tests/standin (an SGLang that answers like one, on CPU) on the test base, built on ``eng``."""
    import io
    import tarfile

    standin = ROOT / "tests" / "standin"
    files = {p.relative_to(standin).as_posix(): p.read_bytes() for p in sorted((standin / "sglang").rglob("*.py"))}
    files["Dockerfile"] = (
        f"FROM {base}\nCOPY sglang /opt/standin/sglang\nENV PYTHONPATH=/opt/standin PYTHONUNBUFFERED=1\n"
        'LABEL io.imgbuild.cuda="13.0" io.imgbuild.target="standin-sglang" io.imgbuild.sm="7.5,8.0,8.6,9.0,10.0,12.0"\n'
    ).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    image, _ = eng.client.images.build(fileobj=buf, custom_context=True, tag="imgbuild-test/make-remote-standin:1", rm=True)
    return "imgbuild-test/make-remote-standin:1"


@pytest.mark.docker
def test_make_certifies_on_the_engine_docker_host_names_even_a_remote_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_engine: Any, test_base_ref: str) -> None:
    """DOCKER_HOST=tcp://HOST:PORT (not loopback by name) is a remote engine to make as to
    `imgbuild certify`: make reaches the engine through that URL, and certify's HTTP checks run
    inside the server container (the published port is on the engine's host, not here)."""
    import socket

    from imgbuild.adapters import engine
    from imgbuild.adapters.certstore import CertStore
    from imgbuild.flows.make import StepSettings, default_steps
    from imgbuild.knowledge.matrix import load_matrix

    image = standin_image(docker_engine, test_base_ref)
    local = os.environ.get("DOCKER_HOST", "unix:///run/imgbuild-docker.sock")
    if not local.startswith("unix://"):
        pytest.skip(f"the test engine is not on a unix socket here: {local}")
    proxy = TcpToDockerSocket(local.removeprefix("unix://"))
    try:
        monkeypatch.setenv("DOCKER_HOST", f"tcp://{socket.gethostname()}:{proxy.port}")
        monkeypatch.setenv("IMGBUILD_GPU_SNAPSHOT", str(ROOT / "tests" / "data" / "gpus" / "a6000x2-clean.json"))
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # the GPU locks
        model = tmp_path / "model"
        model.mkdir()
        (model / "config.json").write_text(json.dumps({
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
            "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 128,
            "vocab_size": 32000, "max_position_embeddings": 32768}))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]  # certify publishes it; with a remote engine nothing here binds it
        settings = StepSettings(
            matrix=load_matrix(), locks_dir=ROOT / "locks", render_dir=tmp_path / "contexts",
            model_dirs={"test/standin": str(model)}, certify_attach_gpus=False, certify_timeout_s=120,
            certify_port=port, certify_environment={"STANDIN_STEP_S": "0.05"}, store_dir=tmp_path / "certs")
        steps = {s.name: s for s in default_steps(settings, connect_engine=lambda: engine.connect(timeout_s=60))}
        spec = target("standin-remote", model="test/standin", launch_flags=tuple(SEED_FLAGS))
        detail, result = steps["certify"].run(spec, {"build": {"image": image}})
    finally:
        proxy.close()
    cert = CertStore(tmp_path / "certs").load(result["id"])
    assert result["verdict"] == "pass-unattested", detail
    assert proxy.connections > 0  # the engine was reached through DOCKER_HOST's URL
    assert any(n.startswith("port check skipped: the engine is remote") for n in cert["preflight_notes"])
    assert cert["generation"]["deterministic"]
