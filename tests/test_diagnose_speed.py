"""diagnose is linear in the log: a keyword pre-filter picks the lines worth reading, and no
regex backtracks over a long line. These tests check that the shortcuts change no answer (the
same diagnosis as reading every line with every full regex) and that long lines finish: their
bounds are loose (several times what a loaded 2-core CI runner takes), so only a quadratic scan,
minutes to hours at these sizes, fails them. scripts/bench_diagnose.py prints the seconds and peak
RSS for big logs and long lines."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from imgbuild.cli import cli
from imgbuild.knowledge import triage
from imgbuild.knowledge.triage import CATALOG, diagnose_log, strip_prefix

DATA = Path(__file__).parent / "data"
CORPUS = sorted(DATA.glob("failure-logs/**/*.txt")) + sorted(DATA.glob("failure-logs-heldout/*.txt"))
MESSAGES = json.loads((Path(__file__).parents[1] / "imgbuild" / "data" / "sglang_messages.json").read_text())


def excerpt(path: Path) -> list[str]:
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("# ")]


def every_line() -> list[str]:
    lines = [ln for path in CORPUS for ln in excerpt(path)]
    return lines + [m["text"].replace("{...}", "1") for m in MESSAGES["messages"]]


MARKERS = [triage._SIGQUIT, triage._TRACEBACK, triage._FRAME, triage._HIT_EXCEPTION, triage._CPP_EXCEPTION,
           triage._IMPORT_IGNORED, triage._READY, triage._M_LOAD_BEGIN, triage._M_LOAD_END, triage._M_POOL,
           triage._M_CAPTURE_BEGIN, triage._M_CAPTURE_END, triage._CPU_HINTS]


def test_each_catalog_regex_matches_the_lines_its_full_regex_matches():
    """Keys and the `A.*B` split change nothing: the same lines match as with re.search."""
    lines = every_line()
    for sig in CATALOG:
        for rx in sig.patterns:
            full = re.compile(rx.source, re.IGNORECASE)
            for line in lines:
                assert rx.search(line) == bool(full.search(line)), (rx.source, line)


def test_a_line_that_any_regex_of_diagnose_matches_is_hot():
    full = [re.compile(rx.source, re.IGNORECASE) for sig in CATALOG for rx in sig.patterns]
    for line in every_line():
        msg = strip_prefix(line)
        if any(p.search(msg) for p in full + MARKERS) or triage._EXCEPTION.match(msg.strip()):
            assert triage._is_hot(line), line
    assert triage._is_hot("\x1b[31mTrace\x1b[0mback (most recent call last):"), "a colour code inside the word"
    # letters re.IGNORECASE takes for ASCII ones: the Kelvin sign for k, the dotless ı for i
    for line in ("\u212ailled", "The NVIDIA drıver on your system is too old"):
        assert diagnose_log([line]).failure_class in ("killed", "driver-too-old") and triage._is_hot(line)
    assert not triage._is_hot("[2025-03-27 21:40:02 TP0] Decode batch. #running-req: 1, #token: 38, token usage: 0.00")


def _reshaped(path: Path) -> list[tuple[str, list[str]]]:
    lines = excerpt(path)
    return [(path.name, lines), (path.name + " ansi", ["\x1b[36m" + ln + "\x1b[0m" for ln in lines]),
            (path.name + " tail", lines[len(lines) // 2:])]


def test_the_pre_filter_changes_no_diagnosis(monkeypatch):
    """Reading every line (every line hot) gives the same diagnosis, field for field."""
    cases = [case for path in CORPUS for case in _reshaped(path)]
    filtered = [diagnose_log(lines).to_dict() for _, lines in cases]
    monkeypatch.setattr(triage, "_is_hot", lambda line: True)
    for (name, lines), expect in zip(cases, filtered):
        assert diagnose_log(lines).to_dict() == expect, name


SHAPES = {
    "one word": "x",
    "dotted name": "a.",
    "dashed name": "a-",
    "words": "some words ",
    "spaces": " ",
    "site-packages path": "/site-packages/a",
    "signature words": "Model architectures [x] ",
    "no accelerator": "No accelerator (",
    "process group": "ProcessGroupNCCL ",
    "bracketed times": "[00:00:00 ",
    "dist-info": "a.b-1.2.",
}


@pytest.mark.parametrize("unit", SHAPES.values(), ids=list(SHAPES))
def test_a_1_mb_line_of_any_shape_is_diagnosed_in_linear_time(unit):
    """A backtracking regex is quadratic on these: 200 KB of the path shape took 108 s."""
    line = (unit * (2**20 // len(unit) + 1))[: 2**20]
    started = time.monotonic()
    for variant in (line, f'  File "{line}', f"ImportError: {line}", line + " [repeated 3x across cluster]"):
        diagnose_log([variant, "ImportError: cannot import name 'x'"])
    assert time.monotonic() - started < 15


def test_a_10_mb_single_line_is_diagnosed_in_seconds():
    """About 5 s here (2 cores), linear: every catalog literal is looked for once in the line."""
    started = time.monotonic()
    assert diagnose_log(["a" * 10_000_000 + " hit an exception"]).failure_class == "unknown"
    assert time.monotonic() - started < 30


def test_diagnose_reads_a_file_line_by_line_as_splitlines_splits_it(tmp_path):
    text = "\n".join(excerpt(DATA / "failure-logs" / "nccl.sglang-4289.txt"))
    text = text.replace("\n", "\r\n", 3).replace("\n", "\x0c", 1).replace("\n", "\u2028", 1)
    log = tmp_path / "log.txt"
    log.write_text(text, encoding="utf-8", newline="")
    result = CliRunner().invoke(cli, ["diagnose", "--json", str(log)])
    assert json.loads(result.output) == diagnose_log(text.splitlines()).to_dict()
