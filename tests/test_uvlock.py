"""uvlock: locks as of a release (uv --exclude-newer), curated constraints, lock names per Python, render's refusal.

The resolutions run the real uv against PyPI (``network``); PyPI's JSON API is
served through an ``httpx.MockTransport`` where the answer must be fixed.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import date
from pathlib import Path

import httpx
import pytest

from imgbuild.adapters.uvlock import (
    AsOf,
    LockOptions,
    date_as_of,
    engine_as_of,
    engine_lock_options,
    latest_as_of,
    lock_requirements,
    release_as_of,
)
from imgbuild.cli import main
from imgbuild.errors import EnvironmentUnavailable, MatrixError, UsageError
from imgbuild.knowledge.matrix import LockConstraint, load_matrix
from imgbuild.knowledge.recipe import TargetSpec
from imgbuild.knowledge.render import bases_of, find_target, resolve_inputs

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


def _pins(text: str) -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", text, re.M))


# -- the as-of time ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, exclude_newer",
    [
        ("2026-05-07", "2026-05-08T00:00:00Z"),
        ("2026-05-07T00:07:15Z", "2026-05-07T00:07:15Z"),
        ("2026-05-07T02:07:15+02:00", "2026-05-07T00:07:15Z"),
    ],
    ids=["date-is-the-end-of-that-day", "utc-time", "offset-time-to-utc"],
)
def test_as_of_date_becomes_an_exclude_newer_time_in_utc(text: str, exclude_newer: str) -> None:
    assert date_as_of(text).exclude_newer == exclude_newer


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"as_of": "May 7"}, "is not a date"),
        ({"as_of": "2026-05-07T00:07:15"}, "has no time zone"),
        ({"as_of": "2026-05-07", "latest": True}, "exclude each other"),
    ],
    ids=["not-a-date", "no-time-zone", "as-of-and-latest"],
)
def test_bad_as_of_is_a_usage_error(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        engine_as_of("0.5.11", **kwargs)


def test_latest_reads_todays_index_and_names_the_day() -> None:
    as_of = latest_as_of(date(2026, 12, 3))
    assert as_of.exclude_newer is None and "2026-12-03" in as_of.how


def _pypi(status: int, body: object) -> httpx.Client:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/pypi/sglang/json"
        return httpx.Response(status, content=json.dumps(body).encode())

    return httpx.Client(transport=httpx.MockTransport(answer))


def _files(*times: str) -> dict:
    return {"releases": {"0.5.11": [{"filename": f"f{i}.whl", "upload_time_iso_8601": t} for i, t in enumerate(times)]}}


@pytest.mark.parametrize(
    "times, exclude_newer",
    [
        (("2026-05-05T08:23:46.097691Z", "2026-05-07T00:07:14.473052Z", "2026-05-07T00:07:03.076290Z"), "2026-05-07T00:07:15Z"),
        (("2026-05-07T00:07:14Z",), "2026-05-07T00:07:15Z"),
    ],
    ids=["last-of-many-uploads-rounded-up", "whole-second-still-after-it"],
)
def test_release_as_of_is_just_after_the_last_upload_of_the_release(times: tuple[str, ...], exclude_newer: str) -> None:
    with _pypi(200, _files(*times)) as client:
        as_of = release_as_of("0.5.11", client=client)
    assert as_of.exclude_newer == exclude_newer
    assert max(times).rstrip("Z") in as_of.how and "https://pypi.org/pypi/sglang/json" in as_of.how


@pytest.mark.parametrize(
    "status, body, error",
    [
        (200, {"releases": {}}, UsageError),
        (404, {}, EnvironmentUnavailable),
        (200, {"no": "releases"}, EnvironmentUnavailable),
    ],
    ids=["release-not-on-pypi", "http-404", "not-the-json-api"],
)
def test_release_as_of_errors(status: int, body: object, error: type[Exception]) -> None:
    with _pypi(status, body) as client, pytest.raises(error):
        release_as_of("0.5.11", client=client)


@pytest.mark.network
def test_release_as_of_0_5_11_on_pypi() -> None:
    """sglang 0.5.11's wheels were uploaded on 05-05 (cp310 x86_64) and 05-07 (the rest)."""
    assert engine_as_of("0.5.11").exclude_newer == "2026-05-07T00:07:15Z"


# -- uv: the as-of time and the constraints reach the resolver -------------------------


@pytest.mark.network
@pytest.mark.parametrize(
    "requirement, as_of, constraints, pin, header",
    [
        ("six", date_as_of("2024-01-01"), (), ("six", "1.16.0"), "--exclude-newer 2024-01-02T00:00:00Z"),
        ("six", latest_as_of(date.today()), (), ("six", "1.17.0"), "# as of: today (--latest"),
        (
            "idna",
            date_as_of("2024-12-31"),
            (LockConstraint(engines=">=0", requirement="idna<3.5", reason="test", source="test"),),
            ("idna", "3.4"),
            "# constraint: idna<3.5",
        ),
    ],
    ids=["as-of-gives-the-older-release", "latest-gives-todays", "constraint-bounds-the-pin"],
)
def test_uv_resolves_as_of_the_time_and_under_the_constraints(
    tmp_path: Path, requirement: str, as_of: AsOf, constraints: tuple[LockConstraint, ...], pin: tuple[str, str], header: str
) -> None:
    options = LockOptions(
        requirements=(requirement,),
        python="3.11",
        arch="x86_64",
        out_path=tmp_path / "lock.txt",
        title=requirement,
        as_of=as_of,
        constraints=constraints,
        timeout_s=120,
    )
    result = lock_requirements(options)
    text = result.path.read_text()
    assert _pins(text)[pin[0]] == pin[1]
    assert header in text and result.hashes >= 1
    assert result.as_of == as_of.exclude_newer


# -- lock names carry the Python and the platform ----------------------------------------


@pytest.mark.parametrize(
    "engine, python, arch, name",
    [
        ("0.5.11", "3.12", "x86_64", "sglang-0.5.11-cp312-x86_64.txt"),
        ("0.5.11", "3.11", "x86_64", "sglang-0.5.11-cp311-x86_64.txt"),
        ("0.5.9", "3.12", "aarch64", "sglang-0.5.9-cp312-aarch64.txt"),
    ],
    ids=["cp312-x86_64", "cp311-x86_64", "cp312-aarch64"],
)
def test_lock_file_name_carries_python_and_platform(engine: str, python: str, arch: str, name: str) -> None:
    as_of = AsOf(exclude_newer="2026-05-07T00:07:15Z", how="test")
    made = engine_lock_options(engine, python=python, arch=arch, locks_dir=Path("locks"), as_of=as_of).out_path.name
    platform = {"x86_64": "linux/amd64", "aarch64": "linux/arm64"}[arch]
    read = TargetSpec(name="t", kind="sglang", engine=engine, base="b", python=python, platform=platform).lock_name()
    assert made == read == name


def test_committed_locks_are_as_of_their_release_and_0_5_11_does_not_pin_kernels_0_17() -> None:
    locks = sorted((ROOT / "locks").glob("sglang-*.txt"))
    assert locks, "no committed engine locks"
    for path in locks:
        text = path.read_text()
        assert re.match(r"sglang-[0-9.a-z]+-cp3\d+-(x86_64|aarch64)\.txt$", path.name), path.name
        assert re.search(r"^# as of: \d{4}-\d\d-\d\dT", text, re.M), path.name
        if path.name.startswith("sglang-0.5.11-"):
            assert _pins(text)["kernels"].startswith("0.12."), path.name


# -- render refuses a target whose Python has no lock -----------------------------------


def test_render_refuses_a_python_without_a_lock_naming_the_lock_command() -> None:
    matrix = load_matrix(GOLDEN / "matrix.yaml")
    target = replace(find_target(matrix.raw, "golden-sglang"), python="3.13")
    with pytest.raises(UsageError) as err:
        resolve_inputs(target, bases=bases_of(matrix.raw), engine=matrix.engine("0.5.11"), locks_dir=GOLDEN / "locks")
    line = err.value.one_line()
    assert "no lock for Python 3.13 on x86_64" in line and "`imgbuild lock 0.5.11 --python 3.13 --arch x86_64`" in line


@pytest.mark.parametrize(
    "python, code, stderr",
    [
        ("3.13", 2, "imgbuild lock 0.5.11 --python 3.13 --arch x86_64"),
        ("3.11", 0, ""),
    ],
    ids=["no-cp313-lock-exit-2", "cp311-lock-renders"],
)
def test_cli_render_checks_the_lock_of_the_targets_python(
    tmp_path: Path, capsys: pytest.CaptureFixture, python: str, code: int, stderr: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["render", "--engine", "0.5.11", "--python", python, "-o", str(tmp_path / "ctx")])
    assert exit_info.value.code == code
    err = capsys.readouterr().err
    assert stderr in err and "Traceback" not in err
    if code == 0:
        assert "sglang==0.5.11" in (tmp_path / "ctx" / "requirements.lock").read_text()
    else:
        assert len(err.strip().splitlines()) == 1 and not (tmp_path / "ctx").exists()


# -- matrix.yaml constraints: --------------------------------------------------------------


def test_matrix_constraints_apply_to_their_engine_range() -> None:
    matrix = load_matrix(ROOT / "matrix.yaml")
    assert [c.requirement for c in matrix.constraints_for("0.5.11")] == ["kernels>=0.12.0,<0.13"]
    assert [c.requirement for c in matrix.constraints_for("0.5.12.post1")] == ["kernels>=0.12.0,<0.13"]
    assert matrix.constraints_for("0.5.13") == () and matrix.constraints_for("0.5.10") == ()


@pytest.mark.parametrize(
    "row, line_in_row, message",
    [
        ('engines: ">=0.5.11"\n    requirement: "kernels<<0.13"\n    reason: "r"\n    source: "s"', 1, "constraints[0].requirement: 'kernels<<0.13' is not a PEP 508 requirement"),
        ('engines: "0.5.11"\n    requirement: "kernels<0.13"\n    reason: "r"\n    source: "s"', 0, "constraints[0].engines: '0.5.11' is not a version specifier"),
        ('engines: ">=0.5.11"\n    requirement: "kernels<0.13"\n    reason: "r"', 0, "constraints[0].source: is missing"),
    ],
    ids=["bad-requirement", "bad-engines", "no-source"],
)
def test_matrix_validate_reports_bad_constraints_with_file_and_line(tmp_path: Path, row: str, line_in_row: int, message: str) -> None:
    text = (GOLDEN / "matrix.yaml").read_text()
    path = tmp_path / "matrix.yaml"
    path.write_text(text + f"\nconstraints:\n  - {row}\n")
    with pytest.raises(MatrixError) as err:
        load_matrix(path)
    line = len(text.splitlines()) + 3 + line_in_row  # after the blank line and "constraints:"
    assert f"{path}:{line}: {message}" in err.value.problems
