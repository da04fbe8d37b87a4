"""Lock every SGLang release as of its publication, install each lock, and record whether it imports.

For each engine in matrix.yaml from --from (0.5.9) on, for this machine's Python:
  1. `imgbuild lock`'s as-of-release lock (uv --exclude-newer at the release's last upload
     on PyPI, matrix.yaml `constraints:` applied), the same code path as the command;
  2. `uv venv` + `uv pip install --require-hashes` of it into a throwaway venv, from a shared
     uv cache (default .cache/uv: each torch's CUDA wheels are about 4 GB there, once);
  3. the import smoke of the image build and `check --python` (knowledge/sglanginstall.py) in
     that venv; the venv is deleted afterwards;
  4. the result goes into the engine's row of matrix.yaml as `lock_smoke: {as_of_release: ...}`
     (and `latest:` with --latest, a lock of today's index), right away, so a run cut short keeps
     what it found. scripts/gen_matrix carries these rows over when it regenerates.

Usage:
  .venv/bin/python scripts/lock_all.py                    # 0.5.9 .. newest, as of each release
  .venv/bin/python scripts/lock_all.py --latest           # and a lock of today's index too
  .venv/bin/python scripts/lock_all.py --versions 0.5.11,0.5.23 --cache-dir ~/.cache/uv
Exit: 0 every lock tried imports; 1 some do not; 2 bad input; 3 no network, uv or disk.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "scripts"))

from packaging.specifiers import SpecifierSet  # noqa: E402
from packaging.version import InvalidVersion, Version  # noqa: E402

from gen_matrix.emit import set_engine_lock_smoke  # noqa: E402
from imgbuild.adapters import uvlock  # noqa: E402
from imgbuild.errors import EnvironmentUnavailable, ImgbuildError, UsageError  # noqa: E402
from imgbuild.knowledge.matrix import Matrix, load_matrix  # noqa: E402
from imgbuild.knowledge.sglanginstall import IMPORT_SMOKE, SmokeResult, parse_smoke_output  # noqa: E402

SMOKE_TIMEOUT_S = 900.0


@dataclass
class Outcome:
    """One engine and one kind of lock (as of its release, or today's index)."""

    engine: str
    kind: str  # "as_of_release" | "latest"
    record: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--from", dest="first", default="0.5.9", help="first engine (default 0.5.9)")
    parser.add_argument("--to", dest="last", default=None, help="last engine (default: the newest)")
    parser.add_argument("--versions", help="comma-separated engines instead of --from/--to")
    parser.add_argument("--python", default=f"{sys.version_info[0]}.{sys.version_info[1]}",
                        help="Python X.Y of the locks and venvs (default: this interpreter's)")
    parser.add_argument("--interpreter", default=sys.executable, help="the interpreter uv makes each venv from")
    parser.add_argument("--latest", action="store_true", help="also lock today's index and record whether it imports")
    parser.add_argument("--only-latest", action="store_true", help="only the lock of today's index")
    parser.add_argument("--cache-dir", type=Path, default=REPO_ROOT / ".cache" / "uv", help="uv cache (default .cache/uv)")
    parser.add_argument("--work-dir", type=Path, default=REPO_ROOT / ".cache" / "lock-all",
                        help="where the locks and venvs go (default .cache/lock-all; venvs are deleted)")
    parser.add_argument("--matrix", type=Path, default=REPO_ROOT / "matrix.yaml")
    parser.add_argument("--no-record", action="store_true", help="do not write matrix.yaml")
    parser.add_argument("--min-free-gb", type=float, default=6.0, help="stop before an engine when less is free")
    parser.add_argument("--ca-bundle", type=Path, default=None, help="CA of a TLS-intercepting proxy")
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON on stdout")
    return parser.parse_args(argv)


def select_engines(matrix: Matrix, args: argparse.Namespace) -> list[str]:
    """The engines to lock, oldest first, that accept --python."""
    known = [e for e in matrix.engines if e.cuda]
    try:
        return _select(known, args)
    except InvalidVersion as exc:
        raise UsageError(f"--from/--to/--versions: {exc}", hint="give versions such as 0.5.9") from None


def _select(known: list[Any], args: argparse.Namespace) -> list[str]:
    if args.versions:
        wanted = {str(Version(v.strip())) for v in args.versions.split(",") if v.strip()}
        missing = sorted(wanted - {e.version for e in known}, key=Version)
        if missing:
            raise UsageError(f"--versions: {', '.join(missing)} not in {args.matrix} engines (with a CUDA stack)")
        chosen = [e for e in known if e.version in wanted]
    else:
        low = Version(args.first)
        high = Version(args.last) if args.last else None
        chosen = [e for e in known if Version(e.version) >= low and (high is None or Version(e.version) <= high)]
    return [e.version for e in chosen if not e.requires_python or args.python in SpecifierSet(e.requires_python)]


def run_smoke(python: Path) -> SmokeResult:
    """The import smoke in the venv's interpreter, as `check --python` runs it."""
    try:
        done = subprocess.run([str(python), "-I", "-c", IMPORT_SMOKE], capture_output=True, text=True,
                              timeout=SMOKE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return SmokeResult(ok=False, steps=(), step="the import smoke", root=f"did not finish within {SMOKE_TIMEOUT_S:.0f} s")
    return parse_smoke_output(done.stderr + "\n" + done.stdout, done.returncode)


def smoke_record(smoke: SmokeResult, *, python: str, as_of: str | None, today: str) -> dict[str, Any]:
    """What matrix.yaml keeps: imports, and where not the step, root line and packages."""
    record: dict[str, Any] = {"imports": smoke.ok, "python": python, "as_of": as_of or today, "checked": today}
    if not smoke.ok:
        record.update({"step": smoke.step, "root": smoke.root, "packages": list(smoke.packages)})
    return record


def resolver_root(message: str) -> str:
    """uv's explanation of an unsatisfiable lock, from its first "Because" on, as one line."""
    text = message[message.find("Because"):] if "Because" in message else message.split(": ", 1)[-1]
    text = " ".join(text.replace(" | ", " ").split())
    return text if len(text) <= 500 else text[:497] + "..."


def try_engine(engine: str, kind: str, args: argparse.Namespace, matrix: Matrix, today: str) -> Outcome:
    """Lock, install, smoke and clean up one engine; a lock or install failure is recorded too."""
    outcome = Outcome(engine=engine, kind=kind)
    when = uvlock.latest_as_of(datetime.now(timezone.utc).date()) if kind == "latest" else \
        uvlock.engine_as_of(engine, ca_bundle=args.ca_bundle)
    locks_dir = args.work_dir / ("locks-latest" if kind == "latest" else "locks")
    options = uvlock.engine_lock_options(engine, python=args.python, arch="x86_64", locks_dir=locks_dir, as_of=when,
                                         constraints=matrix.constraints_for(engine), ca_bundle=args.ca_bundle)
    started = time.monotonic()
    try:
        result = uvlock.lock_requirements(options)
    except UsageError as exc:  # the resolver found no solution: the release cannot be locked at all
        outcome.record = {"imports": False, "python": args.python, "as_of": when.exclude_newer or today,
                          "checked": today, "step": "uv pip compile", "root": resolver_root(exc.message),
                          "packages": []}
        return outcome
    outcome.seconds["lock"] = time.monotonic() - started
    args.work_dir.mkdir(parents=True, exist_ok=True)
    venv = Path(tempfile.mkdtemp(prefix=f"venv-{engine}-", dir=args.work_dir))
    try:
        try:
            installed = uvlock.install_lock(result.path, venv, interpreter=args.interpreter,
                                            cache_dir=args.cache_dir, ca_bundle=args.ca_bundle)
        except UsageError as exc:  # the lock does not install here: recorded, the run goes on
            outcome.record = {"imports": False, "python": args.python, "as_of": when.exclude_newer or today,
                              "checked": today, "step": "uv pip install",
                              "root": exc.message.split(" failed: ", 1)[-1], "packages": []}
            return outcome
        outcome.seconds["install"] = installed.seconds
        started = time.monotonic()
        smoke = run_smoke(installed.python)
        outcome.seconds["smoke"] = time.monotonic() - started
    finally:
        shutil.rmtree(venv, ignore_errors=True)
    outcome.record = smoke_record(smoke, python=args.python, as_of=when.exclude_newer, today=today)
    return outcome


def _say(outcome: Outcome) -> str:
    r = outcome.record
    times = ", ".join(f"{k} {v:.0f} s" for k, v in outcome.seconds.items())
    verdict = "imports" if r["imports"] else f"DOES NOT import: {r.get('step')}: {r.get('root')}"
    where = f" (in {', '.join(r['packages'])})" if r.get("packages") else ""
    return f"sglang {outcome.engine} {outcome.kind} (as of {r['as_of']}): {verdict}{where}" + (f" [{times}]" if times else "")


def _record(args: argparse.Namespace, outcome: Outcome) -> None:
    if args.no_record:
        return
    text = args.matrix.read_text(encoding="utf-8")
    new = set_engine_lock_smoke(text, outcome.engine, outcome.kind, outcome.record)
    tmp = args.matrix.with_name(args.matrix.name + ".lock-all.tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(args.matrix)


def run(args: argparse.Namespace) -> list[Outcome]:
    matrix = load_matrix(args.matrix)
    engines = select_engines(matrix, args)
    if not engines:
        raise UsageError("no engine to lock: check --from/--to/--versions and --python")
    kinds = ["latest"] if args.only_latest else ["as_of_release"] + (["latest"] if args.latest else [])
    today = datetime.now(timezone.utc).date().isoformat()
    outcomes: list[Outcome] = []
    for kind in kinds:
        for engine in engines:
            free_gb = shutil.disk_usage(args.work_dir.parent if not args.work_dir.exists() else args.work_dir).free / 2**30
            if free_gb < args.min_free_gb:
                print(f"lock_all: stopping before sglang {engine} {kind}: {free_gb:.1f} GB free "
                      f"(< --min-free-gb {args.min_free_gb})", file=sys.stderr)
                return outcomes
            outcome = try_engine(engine, kind, args, matrix, today)
            outcomes.append(outcome)
            print(_say(outcome), file=sys.stderr, flush=True)
            _record(args, outcome)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        outcomes = run(args)
    except EnvironmentUnavailable as exc:
        print(f"lock_all: {exc}" + (f" ({exc.hint})" if getattr(exc, "hint", None) else ""), file=sys.stderr)
        return 3
    except ImgbuildError as exc:
        print(f"lock_all: {exc}" + (f" ({exc.hint})" if getattr(exc, "hint", None) else ""), file=sys.stderr)
        return 2
    counts: dict[str, list[int]] = {}
    for o in outcomes:
        counts.setdefault(o.kind, [0, 0])[0 if o.record["imports"] else 1] += 1
    for kind, (good, bad) in counts.items():
        print(f"{kind}: {good} import, {bad} do not", file=sys.stderr)
    if args.json:
        print(json.dumps([{"engine": o.engine, "kind": o.kind, **o.record, "seconds": o.seconds} for o in outcomes], indent=1))
    return 0 if all(o.record["imports"] for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
