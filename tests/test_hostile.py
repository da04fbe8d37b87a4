"""Hostile and careless input: each case ends in one line and exit 2, quickly, never exit 70."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from imgbuild.cli.app import main
from imgbuild.knowledge.triage import _HIT_EXCEPTION

SEED = str(Path(__file__).resolve().parent.parent / "examples" / "qwen3.6-27b")
TARGET = ["--sglang", "0.5.11", "--gpu", "RTX A6000x2"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code, _out, err = run_out(capsys, *args)
    return code, err


def run_out(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    started = time.monotonic()
    with pytest.raises(SystemExit) as done:
        main(list(args))
    assert time.monotonic() - started < 10
    seen = capsys.readouterr()
    return int(done.value.code or 0), seen.out, seen.err


def test_the_hit_an_exception_pattern_is_linear_on_a_long_line() -> None:
    started = time.monotonic()
    assert _HIT_EXCEPTION.search("a" * 1_000_000) is None  # the old \w+ took 29 s on 100 KB
    assert time.monotonic() - started < 0.5
    assert _HIT_EXCEPTION.search("[TP0] Scheduler hit an exception: boom")


def test_concurrent_renders_into_one_folder_never_share_a_temporary_file(tmp_path: Path) -> None:
    from imgbuild.knowledge.render import Rendered, write_context

    rendered = Rendered.__new__(Rendered)
    object.__setattr__(rendered, "files", {"Dockerfile": b"FROM x\n" * 1000, "recipe.json": b"{}\n"})
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(30):
                write_context(rendered, tmp_path)
        except BaseException as exc:  # noqa: BLE001 - collected for the assert
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Dockerfile", "recipe.json"]


BAD_INPUTS = [
    ("render-to-dev-null", ["render", "qwen3.6-27b-a6000x2", "-o", "/dev/null"], "cannot write the build context"),
    ("render-under-a-file", ["render", "qwen3.6-27b-a6000x2", "-o", "/etc/passwd/x"], "cannot write the build context"),
    ("report-to-dev-null", ["report", "-o", "/dev/null"], "cannot write the report to /dev/null: not a directory"),
    ("report-under-a-file", ["report", "-o", "/etc/passwd/x"], "cannot write the report to /etc/passwd/x"),
    ("report-into-proc", ["report", "-o", "/proc/imgbuild"], "cannot write the report to /proc/imgbuild"),
    ("sglang-5000-digits", ["check", SEED, "--sglang", "1" * 5000, "--gpu", "RTX A6000x2", "--driver", "580.95.05"],
     "is not a version"),
    ("sglang-empty", ["check", SEED, "--sglang", "", "--gpu", "RTX A6000x2"], "'--sglang': SGLang version '' is not"),
    ("sglang-blank-plan", ["plan", SEED, "--sglang", "  ", "--gpu", "RTX A6000x2"], "'--sglang': SGLang version '  '"),
    ("sglang-words-plan", ["plan", SEED, "--sglang", "abc", "--gpu", "RTX A6000x2"], "'--sglang': SGLang version 'abc'"),
    ("engine-alias-empty", ["render", "--engine", "", "-o", "/tmp/never"], "'--sglang': SGLang version '' is not"),
    ("driver-words", ["check", SEED, *TARGET, "--driver", "abc"], "'--driver': 'abc' is not an NVIDIA driver version"),
    ("driver-empty", ["check", SEED, *TARGET, "--driver", ""], "'--driver': '' is not an NVIDIA driver version"),
    ("driver-negative", ["check", SEED, *TARGET, "--driver", "-1"], "'--driver': '-1' is not"),
    ("driver-5000-digits", ["check", SEED, *TARGET, "--driver", "9" * 5000], "'--driver': '9999"),
    ("gpu-empty-check", ["check", SEED, "--sglang", "0.5.11", "--gpu", ""], "'--gpu': an empty GPU"),
    ("gpu-empty-plan", ["plan", SEED, "--sglang", "0.5.11", "--gpu", ""], "'--gpu': an empty GPU"),
    ("gpu-blank", ["check", SEED, "--sglang", "0.5.11", "--gpu", "   "], "'--gpu': an empty GPU"),
    ("gpu-5000-chars", ["plan", SEED, "--gpu", "a" * 5000], "'--gpu': 'aaaa.*longer than 100 characters"),
    ("gpu-x0", ["check", SEED, "--sglang", "0.5.11", "--gpu", "RTX A6000x0"], "GPU count in 'RTX A6000x0' must be 1 to"),
    ("gpu-bare-x0", ["plan", SEED, "--sglang", "0.5.11", "--gpu", "x0"], "unknown GPU 'x0'"),
    ("gpu-x-1", ["plan", SEED, "--sglang", "0.5.11", "--gpu", "A6000x-1"], "unknown GPU 'A6000x-1'"),
    ("gpu-a-million", ["check", SEED, "--sglang", "0.5.11", "--gpu", "RTX A6000x1000000"],
     "GPU count in 'RTX A6000x1000000' must be 1 to 1,024"),
    ("certify-timeout-nan", ["certify", "x:1", "--timeout", "nan"], "'--timeout': nan is not a number of seconds"),
    ("certify-timeout-negative", ["certify", "x:1", "--timeout", "-5"], "'--timeout': -5.0 is not a number of seconds"),
    ("certify-port-too-big", ["certify", "x:1", "--port", "70000"], "'--port': 70000 is not in the range"),
    ("certify-port-negative", ["certify", "x:1", "--port", "-1"], "'--port': -1 is not in the range"),
    ("certify-max-used-negative", ["certify", "x:1", "--max-used-mib", "-5"], "'--max-used-mib': -5 is not in the range"),
    ("certify-gpu-uuid-empty", ["certify", "x:1", "--gpu-uuid", ""], "'--gpu-uuid': an empty value"),
    ("certify-gpus-alias-empty", ["certify", "x:1", "--gpus", ""], "'--gpu': an empty GPU"),
    ("make-workers-zero", ["make", "--all", "--workers", "0"], "'--workers': 0 is not in the range x>=1"),
    ("bases-refresh-timeout-inf", ["bases", "refresh", "--request-timeout", "inf"],
     "'--request-timeout': inf is not a number of seconds"),
    ("mem-fraction-nan", ["plan", SEED, *TARGET, "--", "--mem-fraction-static", "nan"], "invalid float value"),
    ("mem-fraction-inf", ["plan", SEED, *TARGET, "--", "--mem-fraction-static", "inf"], "invalid float value"),
    ("inspect-dev-zero", ["inspect", "/dev/zero"], r"model /dev/zero: a device, pipe or socket, not a directory or a file \(give a model directory"),
    ("inspect-empty", ["inspect", ""], r"model '': an empty model path \(give a model directory"),
    ("plan-blank-model", ["plan", " ", "--gpu", "H200"], r"model ' ': an empty model path"),
    ("debug-after-the-command", ["check", "/nope", "--debug"], "no such file or directory"),
    ("debug-first", ["--debug", "check", "/nope"], "no such file or directory"),
    ("certs-show-glob", ["certs", "show", "*"], "is not a certificate id"),
    ("certs-show-path", ["certs", "show", "../main/examples/qwen3.6-27b/config"], "is not a certificate id"),
]


@pytest.mark.parametrize("args, message", [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, err = run(capsys, *args)
    assert code == 2, err
    assert re.search(message, err.splitlines()[-1])


def test_a_binary_command_file_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "cmd.txt"
    path.write_bytes(b"\xff\xfe\x00")
    code, err = run(capsys, "plan", SEED, *TARGET, "--command-file", str(path))
    assert code == 2 and "not UTF-8 text" in err


def test_a_weights_file_given_as_the_model_is_refused_without_reading_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    with weights.open("wb") as fh:  # sparse: 3 GB on paper
        fh.truncate(3 * 2**30)
    code, err = run(capsys, "check", str(weights), *TARGET, "--driver", "580.95.05")
    assert code == 2 and "larger than 16 MiB" in err


@pytest.mark.parametrize("gpu, driver", [("RTX 5090", "390.144"), ("RTX A6000x1024", "580.126.09"), ("8xH100", "580")],
                         ids=["name-ending-in-digits", "the-most-gpus", "count-first"])
def test_good_gpus_and_drivers_still_pass_the_option_checks(
        capsys: pytest.CaptureFixture[str], gpu: str, driver: str) -> None:
    code, err = run(capsys, "check", SEED, "--sglang", "0.5.11", "--gpu", gpu, "--driver", driver)
    assert code in (0, 1), err  # a verdict either way, not a usage error


def _cached_hub_model(tmp_path: Path) -> Path:
    """A stand-in Hub folder serving the seed model as Qwen/Qwen3.6-27B@main."""
    import shutil

    root = tmp_path / "hubroot"
    repo = root / "Qwen" / "Qwen3.6-27B" / "main"
    repo.mkdir(parents=True)
    for name in ("config.json", "model.safetensors.index.json"):
        shutil.copy(Path(SEED) / name, repo / name)
    return root


def test_a_bad_answer_kept_in_the_cache_is_named_with_its_path_and_cleared_by_the_cache_command(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import json

    from hubserver import HubServer

    def not_a_config(handler: Any) -> None:  # a JSON object, so the hub adapter keeps it
        body = b'{"error": "Repository not found"}'
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = _cached_hub_model(tmp_path)
    folder = tmp_path / "cache" / "imgbuild" / "hub" / "Qwen" / "Qwen3.6-27B" / "main"
    with HubServer(root, answer={"config.json": not_a_config}) as bad:
        monkeypatch.setenv("HF_ENDPOINT", bad.url)
        code, err = run(capsys, "inspect", "Qwen/Qwen3.6-27B")
    assert code == 2 and len(err.splitlines()) == 1
    assert f"cached in {folder}: `imgbuild cache clear Qwen/Qwen3.6-27B@main` drops them" in err
    with HubServer(root) as fixed:
        monkeypatch.setenv("HF_ENDPOINT", fixed.url)
        assert run(capsys, "inspect", "Qwen/Qwen3.6-27B")[0] == 2  # still the cached answer
        assert fixed.requests == []
        code, out, _ = run_out(capsys, "cache", "show", "--json")
        hub = json.loads(out)["caches"][0]
        assert code == 0 and hub["name"] == "hub" and hub["files"] == 2
        assert [(e["repo"], e["revision"], e["path"]) for e in hub["entries"]] == [
            ("Qwen/Qwen3.6-27B", "main", str(folder))]
        code, out, _ = run_out(capsys, "cache", "clear", "Qwen/Qwen3.6-27B@main", "--json")
        assert code == 0 and json.loads(out)["removed"][0]["files"] == 2
        assert not folder.exists() and not folder.parent.exists()
        assert run(capsys, "inspect", "Qwen/Qwen3.6-27B")[0] == 0
        assert len(fixed.requests) == 2


def test_cache_clear_all_empties_both_caches_and_keeps_build_records(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    base = tmp_path / "imgbuild"
    for path in (base / "hub" / "Qwen" / "X" / "refs" / "pr" / "1" / "config.json",
                 base / "matrix" / "m.yaml.json", base / "builds" / "tag.json"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    code, out, _ = run_out(capsys, "cache", "show")
    assert code == 0 and "Qwen/X@refs/pr/1  1 file, 2 B" in out
    code, out, _ = run_out(capsys, "cache", "clear")
    assert code == 0 and "matrix" in out
    assert [p.name for p in base.rglob("*") if p.is_file()] == ["tag.json"]
    assert (base / "hub").is_dir() and not (base / "hub" / "Qwen").exists()


@pytest.mark.parametrize("args, message", [
    (["cache", "clear", "Qwen/../x"], "'Qwen/../x' is not a Hugging Face id"),
    (["cache", "clear", "Qwen/X@../../etc"], "revision '../../etc' is not a valid Hub revision"),
    (["cache", "clear", "--hub", "Qwen/X"], "give model ids or --hub/--matrix/--all, not both"),
], ids=["dotdot-id", "dotdot-revision", "ids-and-a-flag"])
def test_cache_clear_refuses_what_is_not_a_cache_entry(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        args: list[str], message: str) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "etc").mkdir()
    code, err = run(capsys, *args)
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert (tmp_path / "etc").is_dir()


def _matrix_with(tmp_path: Path, old: str, new: str, *, count: int = 1) -> str:
    text = (Path(SEED).parent.parent / "matrix.yaml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "matrix.yaml"
    path.write_text(text.replace(old, new, count), encoding="utf-8")
    return str(path)


def _seed_target_block() -> str:
    text = (Path(SEED).parent.parent / "matrix.yaml").read_text(encoding="utf-8")
    start = text.index("  - name: qwen3.6-27b-a6000x2\n")
    return text[start:text.index("\n  - name:", start + 1) + 1]


@pytest.mark.parametrize("old, new, message", [
    ('    engine: "0.5.11"\n    cuda: "13.0"\n    base: cuda-13.0.1', '    engine: "9.9.9"\n    cuda: "13.0"\n    base: cuda-13.0.1',
     r":\d+: targets\[0\]\.engine: SGLang 9\.9\.9 is not in engines:"),
    ("    base: cuda-13.0.1-devel-ubuntu24.04\n    python: \"3.12\"\n    model: Qwen",
     "    base: nowhere\n    python: \"3.12\"\n    model: Qwen",
     r"targets\[0\]\.base: 'nowhere' is neither a name in bases: nor a REF@sha256: reference"),
    ('    gpus: "RTX A6000x2"\n    # Flags', '    gpus: "RTX A6000x0"\n    # Flags', r"targets\[0\]\.gpus: GPU count in 'RTX A6000x0'"),
    ("duplicate", "", r":\d+: targets\[1\]\.name: 'qwen3\.6-27b-a6000x2' is used twice \(first at targets\[0\]\)"),
], ids=["engine-not-in-engines", "unknown-base", "zero-gpus", "duplicate-name"])
def test_matrix_validate_checks_the_targets_against_the_rest_of_the_file(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, old: str, new: str, message: str) -> None:
    if old == "duplicate":
        block = _seed_target_block()
        old, new = block, block + block
    code, err = run(capsys, "matrix", "validate", _matrix_with(tmp_path, old, new))
    assert code == 2 and len(err.splitlines()) == 1 and re.search(message, err), err


def test_the_shipped_matrix_and_its_targets_validate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_out(capsys, "matrix", "validate")
    assert code == 0 and "valid" in out, err


# ---------------------------------------------------------------- a fuzzer over config.json and the index
HOSTILE_VALUES: list[Any] = [
    None, True, False, -1, 0, 1, 2, 3, 8, 64, 4096, -4, 2**31 + 1, 10**30, 1e308, -1e308, 1.5, -0.0, 2.0,
    float("nan"), float("inf"),
    "", "abc", "9" * 5000, [], [1], ["a"] * 3, {}, {"x": 1}, [[[[[[1]]]]]], {"a": {"b": {"c": []}}},
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, prefix + (key,))
    elif isinstance(value, list) and value:
        out += _paths(value[0], prefix + (0,))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        doc = doc[part]
    if value is _DELETE:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


_DELETE = object()


def _mutants(count: int, seed: int) -> list[tuple[str, str, str]]:
    """(id, config text, index text): 1-3 fields of the seed's files each set to a hostile value or removed."""
    import copy
    import json
    import random

    rng = random.Random(seed)
    config = json.loads((Path(SEED) / "config.json").read_text())
    index = json.loads((Path(SEED) / "model.safetensors.index.json").read_text())
    targets = [("config", p) for p in _paths(config)] + [("index", p) for p in _paths(index)]
    out = []
    for n in range(count):
        docs = {"config": copy.deepcopy(config), "index": copy.deepcopy(index)}
        changed = []
        for which, path in rng.sample(targets, rng.randint(1, 3)):
            value = rng.choice(HOSTILE_VALUES + [_DELETE])
            try:
                _set(docs[which], path, value if value is _DELETE else copy.deepcopy(value))
            except (KeyError, IndexError, TypeError):  # a path an earlier change of this case removed
                continue
            changed.append(f"{which}.{'.'.join(map(str, path))}={'del' if value is _DELETE else type(value).__name__}")
        out.append((f"{n}:{','.join(changed)}", json.dumps(docs["config"]), json.dumps(docs["index"])))
    return out


def test_fuzzed_configs_and_indexes_are_planned_or_refused_never_a_crash(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """200 seeded mutants of the seed's config.json and index through inspect and plan: each is
    described (exit 0), does not fit (1) or is one line of bad input (2); never 70, never 10 s."""
    started = time.monotonic()
    crashes = []
    codes: dict[int, int] = {}
    for n, (case, config_text, index_text) in enumerate(_mutants(200, seed=12)):
        model = tmp_path / f"m{n}"
        model.mkdir()
        (model / "config.json").write_text(config_text)
        (model / "model.safetensors.index.json").write_text(index_text)
        for args in (["inspect", str(model), "--json"], ["plan", str(model), *TARGET, "--json", "--no-suggest"]):
            code, err = run(capsys, *args)
            codes[code] = codes.get(code, 0) + 1
            if code not in (0, 1, 2) or (code == 2 and len(err.strip().splitlines()) != 1):
                crashes.append(f"{case}: {args[0]} exit {code}: {err.strip()[-300:]}")
    assert crashes == [], "\n".join(crashes[:10])
    assert codes.get(2, 0) > 50 and codes.get(0, 0) + codes.get(1, 0) > 100  # the mutants reach both sides
    assert time.monotonic() - started < 60


# ---------------------------------------------------------------- time and memory, per case, in a process of its own
# A parent of one child reads that child's peak RSS from RUSAGE_CHILDREN: the figure is the case's own.
_MEASURE = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
            "print(f'@rss_kib {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr); "
            "sys.exit(done.returncode)")


def run_bounded(args: list[str], env: dict[str, str], *, max_s: float = 10, max_rss_mib: int = 500) -> tuple[int, str]:
    """imgbuild ARGS in a process of its own, as a user runs it: (exit code, stderr without the
    measurement), with its wall time under max_s and its peak RSS under max_rss_mib."""
    import subprocess
    import sys

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "imgbuild.cli", *args],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True, timeout=max_s + 5)
    elapsed = time.monotonic() - started
    *lines, measured = done.stderr.strip().splitlines()
    rss_mib = int(measured.split()[1]) / 1024
    assert elapsed < max_s and rss_mib < max_rss_mib, f"{args}: {elapsed:.1f} s, {rss_mib:.0f} MiB"
    return done.returncode, "\n".join(lines)


def test_big_and_explosive_inputs_stay_under_10_s_and_500_mib_each(tmp_path: Path) -> None:
    """The issue's resource cases, each in a process of its own: a 3 GB weights file as MODEL, a
    2 GB sparse config.json, a billion-laughs matrix (twice: the second run would read a cache),
    10^9 layers, arrays nested 100,000 deep, and a Hub server sending 2 GB."""
    import os
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), HF_HUB_OFFLINE="0")
    env.pop("IMGBUILD_MATRIX", None)
    weights = tmp_path / "model.safetensors"
    with weights.open("wb") as fh:
        fh.truncate(3 * 2**30)
    sparse = tmp_path / "sparse"
    sparse.mkdir()
    with (sparse / "config.json").open("wb") as fh:
        fh.truncate(2 * 2**30)
    laughs = tmp_path / "lol.yaml"
    laughs.write_text('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n" for p, c in zip("abcdefgh", "bcdefghi")))
    layers = tmp_path / "layers"
    layers.mkdir()
    (layers / "config.json").write_text((Path(SEED) / "config.json").read_text().replace(
        '"num_hidden_layers": 64', '"num_hidden_layers": 1000000000, "num_experts": 512'))
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "config.json").write_text('{"a":' + "[" * 100_000 + "]" * 100_000 + "}")

    class Endless(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(2048):
                    self.wfile.write(b" " * 2**20)
            except OSError:
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    hub_env = dict(env, HF_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}")
    cases = [
        (["check", str(weights), *TARGET, "--driver", "580.95.05"], env, 2, "larger than 16 MiB"),
        (["inspect", str(sparse)], env, 2, "larger than 16 MiB"),
        (["matrix", "validate", str(laughs)], env, 2, "aliases expand to more than"),
        (["matrix", "validate", str(laughs)], env, 2, "aliases expand to more than"),
        (["plan", str(layers), *TARGET], env, 2, "num_hidden_layers is 1000000000"),
        (["inspect", str(deep)], env, 2, "nested too deeply"),
        (["inspect", "Qwen/Qwen3.6-27B"], hub_env, 3, "larger than 16 MiB, the cap for this file"),
        (["diagnose", "/dev/zero"], env, 2, "log /dev/zero: larger than 64 MiB"),  # endless, and no newline
    ]
    try:
        for args, case_env, expected, message in cases:
            code, err = run_bounded(args, case_env)
            assert code == expected and len(err.splitlines()) == 1 and message in err, (args, code, err)
    finally:
        server.shutdown()
    cached = [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert [n for n in cached if "lol" in n or n.startswith(("config", "model"))] == []  # none of them was cached


def test_build_records_and_locks_written_at_once_never_share_a_temporary_file(tmp_path: Path) -> None:
    import stat

    from imgbuild.adapters.uvlock import _write_lock
    from imgbuild.flows.build import write_record

    class Record:
        def __init__(self, n: int) -> None:
            self.n = n

        def to_dict(self) -> dict[str, Any]:
            return {"n": self.n, "pad": "x" * 100_000}

    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for _ in range(20):
                write_record(Record(n), tmp_path / "tag.json")  # type: ignore[arg-type]
                _write_lock(tmp_path / "lock.txt", f"{n}\n" * 10_000)
        except BaseException as exc:  # noqa: BLE001 - collected for the assert
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lock.txt", "tag.json"]
    _write_lock(Path("/dev/null"), "a lock\n")  # -o /dev/null: written to, never replaced
    assert stat.S_ISCHR(Path("/dev/null").stat().st_mode)
