"""Launch flags read the way each SGLang release's argparse reads them.

The flag tables are the shipped imgbuild/data/server_args.json, which scripts/gen_matrix
extracts from the real wheels.
"""

from __future__ import annotations

import pytest

from imgbuild.errors import UsageError
from imgbuild.knowledge.launchflags import parse_flags, split_command, with_flags
from imgbuild.knowledge.serverargs import load_server_args

from imgbuild.knowledge.serverargs import DATA_PATH as DATA


@pytest.fixture(scope="module")
def server_args():
    return load_server_args(DATA)


def parse(server_args, version: str, argv: list[str]):
    others = {v: server_args.flags_for(v) for v in server_args.versions() if v != version}
    return parse_flags(argv, server_args.flags_for(version), version=version, other_versions=others)


@pytest.mark.parametrize(
    ("argv", "tp"),
    [(["--tp", "2"], 2), (["--tp-size", "4"], 4), (["--tensor-parallel-size=8"], 8), ([], 1)],
    ids=["abbrev-tp", "tp-size", "long-equals", "default"],
)
def test_tp_aliases_resolve_to_tp_size(server_args, argv: list[str], tp: int) -> None:
    assert parse(server_args, "0.5.11", argv).tp_size == tp


def test_seed_flags_parse_into_typed_values(server_args) -> None:
    cfg = parse(
        server_args,
        "0.5.11",
        "--tp 2 --mem-fraction-static 0.85 --context-length 32768 --speculative-algorithm NEXTN "
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 "
        "--reasoning-parser qwen3 --disable-radix-cache".split(),
    )
    assert (cfg.tp_size, cfg.mem_fraction_static, cfg.context_length) == (2, 0.85, 32768)
    assert cfg.speculative_algorithm == "NEXTN" and cfg.disable_radix_cache
    assert cfg.get("speculative_num_draft_tokens") == 4
    assert cfg.is_set("mem_fraction_static") and not cfg.is_set("max_running_requests")
    assert cfg.mamba_strategy == "auto"


def test_unknown_flag_names_the_close_match(server_args) -> None:
    with pytest.raises(UsageError) as err:
        parse(server_args, "0.5.11", ["--mem-fraction-statik", "0.8"])
    assert "--mem-fraction-static" in err.value.one_line()


def test_flag_renamed_in_a_later_release_says_where_it_exists(server_args) -> None:
    with pytest.raises(UsageError) as err:
        parse(server_args, "0.5.23", ["--mamba-scheduler-strategy", "no_buffer"])
    text = err.value.one_line()
    assert "SGLang 0.5.23 does not know the flag --mamba-scheduler-strategy" in text
    assert "exists in SGLang 0.5." in text and "SGLang 0.5.23 calls it --mamba-radix-cache-strategy" in text


def test_flag_added_later_is_unknown_to_the_older_release(server_args) -> None:
    with pytest.raises(UsageError) as err:
        parse(server_args, "0.5.11", ["--mamba-radix-cache-strategy", "extra_buffer"])
    assert "exists in SGLang 0.5.14" in err.value.one_line()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tp", "two"], "invalid int value"),
        (["--kv-cache-dtype", "fp7"], "invalid choice"),
        (["--mem-fraction-static"], "expected a value"),
        (["--disable-radix-cache=yes"], "takes no value"),
        (["stray"], "unexpected argument"),
        (["--tp", "2", "--tp-size", "4"], "conflicting values: --tp 2 and --tp-size 4"),
    ],
    ids=["bad-int", "bad-choice", "missing-value", "flag-with-value", "positional", "conflicting-aliases"],
)
def test_bad_values_are_usage_errors(server_args, argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as err:
        parse(server_args, "0.5.11", argv)
    assert message in err.value.one_line()


def test_with_flags_sets_and_unsets_dests(server_args) -> None:
    cfg = parse(server_args, "0.5.11", ["--max-running-requests", "8"])
    changed = with_flags(cfg, {"max_running_requests": None, "disable_radix_cache": True})
    assert changed.max_running_requests is None and not changed.is_set("max_running_requests")
    assert changed.disable_radix_cache


@pytest.mark.parametrize(
    ("command", "model", "flags"),
    [
        (
            "nohup python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B --port 30000 \\\n"
            "  --tp 2 --mem-fraction-static 0.85 > /var/log/sglang.log 2>&1 &",
            "/models/Qwen3.6-27B",
            ("--port", "30000", "--tp", "2", "--mem-fraction-static", "0.85"),
        ),
        (
            "CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model=Qwen/Qwen3-8B --tp-size 2",
            "Qwen/Qwen3-8B",
            ("--tp-size", "2"),
        ),
        ("sglang serve --model-path m --context-length 8192", "m", ("--context-length", "8192")),
    ],
    ids=["nohup-redirect", "env-and-equals", "sglang-serve"],
)
def test_split_command_finds_model_and_flags(command: str, model: str, flags: tuple[str, ...]) -> None:
    got = split_command(command)
    assert (got.model_path, got.flags) == (model, flags)


def test_split_command_without_launch_server_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        split_command("python train.py --tp 2")


# SGLang's own argparse actions that take no value (server_args.py DeprecatedAction,
# DeprecatedStoreTrueAction; argparse.BooleanOptionalAction); each outcome was checked against
# SGLang 0.5.11's prepare_server_args (tests/oracle/sglang_parse.py).
NO_VALUE_CASES = [
    ("boolean-optional-on", "0.5.11", ["--lora-strict-loading"], "lora_strict_loading", True),
    ("boolean-optional-off", "0.5.11", ["--no-record-nolora-graph"], "record_nolora_graph", False),
    ("deprecated-store-true", "0.5.11", ["--stream-output"], "incremental_streaming_output", True),
    ("deprecated-no-op", "0.5.11", ["--enable-piecewise-cuda-graph"], "enable_piecewise_cuda_graph", None),
    ("deprecated-store-true-0.5.23", "0.5.23", ["--disable-cuda-graph"], "disable_cuda_graph", True),
]


@pytest.mark.parametrize(("version", "argv", "dest", "value"), [c[1:] for c in NO_VALUE_CASES],
                         ids=[c[0] for c in NO_VALUE_CASES])
def test_sglang_actions_without_a_value_parse_as_sglang_does(server_args, version, argv, dest, value) -> None:
    assert parse(server_args, version, argv).values.get(dest) == value


@pytest.mark.parametrize("argv", [["--enable-piecewise-cuda-graph", "1"], ["--record-nolora-graph", "1"]],
                         ids=["deprecated-with-value", "boolean-optional-with-value"])
def test_a_value_after_a_flag_that_takes_none_is_refused(server_args, argv: list[str]) -> None:
    with pytest.raises(UsageError, match="unexpected argument '1'"):
        parse(server_args, "0.5.11", argv)


def test_an_ambiguous_prefix_names_every_candidate_like_argparse(server_args) -> None:
    with pytest.raises(UsageError) as err:
        parse(server_args, "0.5.11", ["--enable-h"])
    assert str(err.value).startswith(
        "ambiguous option: --enable-h could match --enable-hierarchical-cache, --enable-hisparse, --enable-http2")


@pytest.mark.parametrize(
    ("version", "argv", "layout"),
    [
        # 0.4.0-0.4.4's __post_init__: --enable-dp-attention makes one attention group per GPU (dp_size = tp_size)
        ("0.4.0", "--tp 4 --dp 2 --enable-dp-attention", (4, 1, True)),
        # _handle_data_parallelism up to 0.5.21: --dp-size counts the groups under --enable-dp-attention
        ("0.5.11", "--tp 4 --dp 2 --enable-dp-attention", (2, 1, True)),
        ("0.5.11", "--tp 4 --dp 2", (1, 2, False)),
        # 0.5.22+: the deprecated spelling is --attn-dp-size; --dp-size beside it counts whole replicas
        ("0.5.23", "--tp 4 --dp 2 --enable-dp-attention", (2, 1, True)),
        ("0.5.23", "--tp 4 --attn-dp-size 4", (4, 1, True)),
        ("0.5.23", "--tp 4 --attn-dp-size 2 --dp 2", (2, 2, True)),
        ("0.5.23", "--tp 4 --dp 2", (1, 2, False)),
    ],
)
def test_dp_layout_reads_attention_groups_and_replicas_per_release(server_args, version: str, argv: str,
                                                                   layout: tuple[int, int, bool]) -> None:
    got = parse(server_args, version, argv.split()).dp_layout(version)
    assert (got.groups, got.replicas, got.attention) == layout
    assert got.attn_tp_size(4) == (4 // layout[0] if layout[2] else 4)
