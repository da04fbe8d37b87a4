"""imgbuild.knowledge.serverargs: SGLang's launch flags per release, from the shipped
imgbuild/data/server_args.json (generated from the real wheels by scripts/gen_matrix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from imgbuild.errors import UsageError
from imgbuild.knowledge.serverargs import DATA_PATH, ENV_PATH, FlagSpec, flags_for, load_server_args, parse_server_args


@pytest.mark.parametrize(("version", "flag", "dest", "takes_value", "default"), [
    ("0.5.9", "--tp-size", "tensor_parallel_size", True, 1),
    ("0.5.9", "--tensor-parallel-size", "tensor_parallel_size", True, 1),
    ("0.5.9", "--disable-radix-cache", "disable_radix_cache", False, False),
    ("0.4.0", "--tp-size", "tensor_parallel_size", True, 1),
], ids=["alias", "long-name", "store-true-takes-no-value", "oldest-release"])
def test_each_option_string_of_a_release_names_its_flag(
    version: str, flag: str, dest: str, takes_value: bool, default: object
) -> None:
    spec = flags_for(version)[flag]
    assert (spec.dest, spec.takes_value, spec.default) == (dest, takes_value, default)


def test_aliases_share_one_spec() -> None:
    table = flags_for("0.5.9")
    assert table["--tp-size"] is table["--tensor-parallel-size"]


@pytest.mark.parametrize(("asked", "nearest"), [
    ("0.5.9", "0.5.9"),
    ("0.5.9.post9", "0.5.9"),
    ("99.0", "0.5.23"),
    ("0.3.0", None),
], ids=["known", "unknown-post-release", "newer-than-all", "older-than-all"])
def test_nearest_version_is_the_newest_not_newer(asked: str, nearest: str | None) -> None:
    assert load_server_args().nearest_version(asked) == nearest


def test_the_shipped_file_covers_every_release_from_0_4_0_in_order() -> None:
    versions = load_server_args().versions()
    assert versions[0] == "0.4.0" and "0.5.11" in versions
    assert list(versions) == sorted(versions, key=Version)


def test_an_unknown_version_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match=r"no flag data for SGLang 0\.1\.0 \(known: 0\.4\.0, ") as err:
        flags_for("0.1.0")
    assert "gen_matrix" in (err.value.hint or "")


def test_from_dict_fills_argparse_defaults() -> None:
    spec = FlagSpec.from_dict({"flags": ["--x"], "dest": "x"})
    assert spec == FlagSpec(flags=("--x",), dest="x", action="store", type=None, choices=None, default=None,
                            nargs=None, deprecated=False)


def test_the_environment_variable_points_at_another_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = {"generated_by": "test", "specs": [{"flags": ["--only"], "dest": "only", "action": "store_true"}],
            "versions": {"9.9.9": [0]}}
    path = tmp_path / "server_args.json"
    path.write_text(json.dumps(data))
    monkeypatch.setenv(ENV_PATH, str(path))
    assert load_server_args().versions() == ("9.9.9",)
    assert not flags_for("9.9.9")["--only"].takes_value
    monkeypatch.delenv(ENV_PATH)
    assert load_server_args().path == DATA_PATH


@pytest.mark.parametrize(("text", "message"), [
    (None, "SGLang flag data is missing"),
    ("{\n  oops", ":2: invalid JSON"),
    ('{"specs": []}', "not a server_args data file (KeyError"),
    ('{"specs": [], "versions": {"1.0": [3]}}', "not a server_args data file (IndexError"),
], ids=["missing", "invalid-json", "no-versions", "index-out-of-range"])
def test_a_broken_data_file_is_a_usage_error_naming_it(tmp_path: Path, text: str | None, message: str) -> None:
    path = tmp_path / "server_args.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(UsageError, match="server_args.json") as err:
        load_server_args(path)
    assert message in err.value.message


def test_parse_reads_specs_stored_once_for_many_versions() -> None:
    data = {"specs": [{"flags": ["--a", "-a"], "dest": "a"}], "versions": {"1.0": [0], "1.1": [0]}}
    parsed = parse_server_args(data, path=Path("x.json"))
    assert parsed.flags_for("1.0")["-a"] == parsed.flags_for("1.1")["--a"]


@pytest.mark.parametrize("flags, choices, takes_value", [
    # sglang 0.5.23 arg_groups/argparse_actions.py DeprecatedStoreConstAction: no value for a retired boolean
    # (--disable-piecewise-cuda-graph), one of `choices` for a retired valued flag (--monokernel-backend amd)
    (["--disable-piecewise-cuda-graph"], None, False),
    (["--monokernel-backend"], ["amd"], True),
])
def test_a_deprecated_store_const_flag_takes_a_value_only_with_choices(flags, choices, takes_value) -> None:
    spec = FlagSpec.from_dict({"flags": flags, "dest": "x", "action": "DeprecatedStoreConstAction", "choices": choices})
    assert spec.takes_value is takes_value
