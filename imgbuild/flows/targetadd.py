"""``imgbuild target add``: from a model and its GPUs to a target row, each choice with its reason.

What a user did by hand with ``check``, ``plan`` and matrix.yaml, in the same order:

1. the engine: the newest release in the matrix that serves the model (check's
   ``model_blockers``), whose CUDA the driver runs and whose torch wheels carry kernels for
   the GPU (check's ``host_blockers``), that has a ``-devel`` base for that CUDA, accepts that
   base's Python, and has a lock for that Python in locks/ that imports (matrix.yaml
   ``lock_smoke``); or the one ``--sglang`` names, held to the same tests;
2. the base and the Python: ``flows.targets.target_from_request``, the one resolution of a
   target and its base (the newest ``-devel`` base for the engine's CUDA, and its Python);
3. TP: the GPU count unless ``--tp`` or the flags give it;
4. the flags: the user's, planned on those GPUs (``flows.plan.plan_launch``); where they do
   not fit, the cheapest change of plan's search (``knowledge.suggest``) that fits on the same
   GPUs, re-planned to confirm.

Where nothing fits the decision carries the refusal and the smallest GPU set that would fit
(more of the same GPU, or a bigger GPU of the matrix's ``gpus:``). ``add_target_text`` puts
the row into a targets file's text with the reasons as YAML comments; ``write_targets_file``
replaces the file atomically. Nothing here prints; adapters (the Hub, the GPU probe) come in
as arguments.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from imgbuild.errors import EnvironmentUnavailable, ImgbuildError, UsageError
from imgbuild.flows.check import GpuSeen, HostView, host_blockers, model_blockers
from imgbuild.flows.plan import PlanOptions, PlanResult, plan_launch
from imgbuild.flows.targets import TargetRequest, locks_dir_of, recipe_inputs, target_from_request
from imgbuild.knowledge.matrix import normalize_gpu_name
from imgbuild.knowledge.recipe import TargetSpec, engine_lock_name, glibc_satisfies
from imgbuild.knowledge.render import LOCK_GLIBC, bases_of

if TYPE_CHECKING:
    from imgbuild.knowledge.matrix import Matrix
    from imgbuild.knowledge.modelinfo import HubFetcher, ModelInfo
    from imgbuild.knowledge.specs import EngineSpec, GpuSpec

ARCH = "x86_64"  # the platform of every target imgbuild renders (linux/amd64)
GPU_COUNTS = (1, 2, 4, 8)  # the GPU sets tried when nothing fits: TP sizes SGLang serves on one node
_TP_FLAGS = ("--tp", "--tp-size", "--tensor-parallel-size")
_TARGET_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")  # recipe.validate_target's, bounded (it names files)


@dataclass(frozen=True, kw_only=True)
class TargetAddOptions:
    model: str  # the model id recorded in the target (a Hugging Face id, or a local directory)
    gpu: str  # NAME[xN]
    model_dir: str | None = None  # where its config.json is read (default: MODEL itself)
    driver: str | None = None  # the NVIDIA driver the target runs on (default: this host's, when seen)
    name: str | None = None
    sglang: str | None = None  # the engine, instead of the newest that fits
    base_name: str | None = None  # a base of the matrix's bases:, instead of the newest -devel for the CUDA
    tp: int | None = None
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reason:
    """One decision: what (``engine``, ``base``, ``python``, ``tp``, ``flags``), the value, and why."""

    step: str
    value: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"step": self.step, "value": self.value, "why": self.why}

    def line(self) -> str:
        return f"{self.step}: {self.value}: {self.why}"


@dataclass(frozen=True)
class TargetDecision:
    """A target decided (``target`` set), or the refusal and the GPU sets that would fit."""

    model: str
    gpus: str
    reasons: tuple[Reason, ...]
    target: TargetSpec | None = None
    refusal: str | None = None
    fits_on: tuple[str, ...] = ()  # the smallest GPU sets that would fit, as --gpu values
    plan: dict[str, Any] = field(default_factory=dict)  # the final plan's verdict, KV tokens, requests

    def row(self) -> dict[str, Any]:
        """The target as a targets file holds it (the fields a user writes; render fills the rest)."""
        t = self.target
        if t is None:
            return {}
        return {"name": t.name, "kind": t.kind, "engine": t.engine, "cuda": t.cuda, "base": t.base,
                "python": t.python, "model": t.model, "gpus": t.gpus, "launch_flags": list(t.launch_flags),
                "source": t.source}

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "gpus": self.gpus, "fits": self.target is not None, "target": self.row() or None,
                "reasons": [r.to_dict() for r in self.reasons], "refusal": self.refusal,
                "fits_on": list(self.fits_on), "plan": self.plan}


# ----------------------------------------------------------------------------- the engine


@dataclass(frozen=True)
class _EngineChoice:
    engine: EngineSpec
    base: str
    python: str
    passed_over: tuple[tuple[str, str], ...]  # (version, why) of the newer releases not taken


def _host(spec: GpuSpec, count: int, driver: str | None) -> HostView:
    return HostView(checked=True, source="--gpu", driver_version=driver,
                    gpus=(GpuSeen(spec.name, count, spec.compute_capability, spec.memory_mib, spec.platform),))


def _engine_problem(engine: EngineSpec, host: HostView, matrix: Matrix, locks_dir: Path,
                    base_name: str | None) -> tuple[str | None, str, str]:
    """(why ``engine`` cannot be this target's on ``host``, or None; its base; its Python)."""
    if engine.cuda is None:
        return "no CUDA pin known for its torch", "", ""
    blockers = host_blockers(engine, host, matrix)
    if blockers:  # check's words, less the release and its torch (the same for a run of releases)
        return re.sub(r" for SGLang \S+ \(torch [^)]*\)", "", blockers[0]), "", ""
    try:
        spec = target_from_request(matrix, TargetRequest(engine=engine.version, cuda=engine.cuda,
                                                         base_name=base_name))
    except UsageError as exc:
        return exc.message.split(" (")[0], "", ""
    base_glibc, need = bases_of(matrix.raw)[spec.base].glibc, engine.glibc or LOCK_GLIBC
    if base_glibc and not glibc_satisfies(base_glibc, need):  # render's check (knowledge/render.py)
        return f"its wheels need glibc {need}; base {spec.base} has {base_glibc}", spec.base, spec.python
    try:
        if engine.requires_python and spec.python not in SpecifierSet(engine.requires_python):
            return f"requires Python {engine.requires_python}; base {spec.base} has {spec.python}", spec.base, spec.python
    except InvalidSpecifier:
        pass
    lock = engine_lock_name(engine.version, python=spec.python, arch=ARCH)
    if not (locks_dir / lock).is_file():
        return f"no lock for Python {spec.python} (locks/{lock})", spec.base, spec.python
    failure = engine.lock_failure()
    if failure:
        return failure, spec.base, spec.python
    return None, spec.base, spec.python


def choose_engine(info: ModelInfo, host: HostView, matrix: Matrix, *, locks_dir: Path,
                  wanted: str | None = None, base_name: str | None = None) -> _EngineChoice:
    """The newest release that passes every test (or ``wanted``); NoTargetFits naming why none does."""
    candidates = [matrix.engine(wanted)] if wanted else list(reversed(matrix.engines))
    passed: list[tuple[str, str]] = []
    served = False
    for engine in candidates:
        blockers = model_blockers(info, engine.version, engine.architectures, matrix)
        if blockers:  # e.g. a newer release that dropped the architecture, or a known issue
            passed.append((engine.version, blockers[0]))
            continue
        served = True
        why, base, python = _engine_problem(engine, host, matrix, locks_dir, base_name)
        if why is None:
            return _EngineChoice(engine, base, python, tuple(passed))
        passed.append((engine.version, why))
    if not served and not wanted:
        arch = ", ".join(info.architectures) or info.model_type
        raise NoTargetFits(f"no SGLang release in the matrix serves {arch}", reasons=())
    summary = "; ".join(_grouped(passed)[:3])
    hint = None
    if wanted and "locks/" in passed[-1][1]:
        python = re.search(r"Python (\S+) \(locks/", passed[-1][1])
        hint = f"make the lock with `imgbuild lock {wanted} --python {python.group(1) if python else '3.12'} --arch {ARCH}`"
    raise NoTargetFits(f"no release fits: {summary}", reasons=(), hint=hint)


def _grouped(passed: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> list[str]:
    """'0.5.23 to 0.5.12 (9 releases): no lock ...' for runs of releases passed over for one reason."""
    runs: list[list[Any]] = []
    for version, why in passed:
        key = re.sub(r"\d+\.\d+\.\d+(\.post\d+)?", "V", why) if "locks/" in why else why
        if runs and runs[-1][0] == key:
            runs[-1][2].append(version)
        else:
            runs.append([key, why, [version]])
    out = []
    for _, why, versions in runs:
        span = versions[0] if len(versions) == 1 else f"{versions[0]} to {versions[-1]} ({len(versions)} releases)"
        if len(versions) > 1 and "locks/" in why:
            why = re.sub(r"\(locks/[^)]*\)", "(no file in locks/)", why)
        out.append(f"{span}: {why}")
    return out


class NoTargetFits(ImgbuildError):
    """Raised inside the decision; decide_target turns it into a refusal."""

    def __init__(self, message: str, *, reasons: tuple[Reason, ...] = (), fits_on: tuple[str, ...] = (),
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reasons = reasons
        self.fits_on = fits_on


# ----------------------------------------------------------------------------- the flags


def _flag_value(flags: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    for i, word in enumerate(flags):
        key, eq, value = word.partition("=")
        if key in names:
            return value if eq else (flags[i + 1] if i + 1 < len(flags) else None)
    return None


def merge_flags(flags: tuple[str, ...], change: tuple[str, ...]) -> tuple[str, ...]:
    """``flags`` with each flag of ``change`` set to its new value (a flag given twice is SGLang's
    last-wins, but one occurrence reads better): ``--tp``/``--tp-size`` count as one."""
    out = list(flags)
    i = 0
    while i < len(change):
        name = change[i]
        value = [change[i + 1]] if i + 1 < len(change) and not change[i + 1].startswith("--") else []
        names = _TP_FLAGS if name in _TP_FLAGS else (name,)
        j = 0
        while j < len(out):
            key = out[j].partition("=")[0]
            if key in names:
                takes = 0 if "=" in out[j] or j + 1 >= len(out) or out[j + 1].startswith("--") else 1
                del out[j: j + 1 + takes]
                continue
            j += 1
        out += [name, *value]
        i += 1 + len(value)
    return tuple(out)


def _plan(info: ModelInfo, flags: tuple[str, ...], gpu: str, engine: str, matrix: Matrix, *,
          suggest: bool) -> PlanResult:
    return plan_launch(PlanOptions(model=info.source, flags=flags, gpu=gpu, sglang=engine, suggest=suggest),
                       matrix=matrix, model_info=info)


def _plan_summary(result: PlanResult) -> dict[str, Any]:
    p = result.plan
    return {"verdict": result.verdict, "kv_tokens": p.kv_tokens, "max_running_requests": p.max_running_requests,
            "context_length": p.context_length, "weights_gib": round(p.weights_gib, 2),
            "gpu": f"{result.gpu_count} x {result.gpu_name}"}


# A change that fits but leaves the KV pool smaller than this (or than the context, if shorter) is
# passed over for the next one: SGLang starts, yet serves one short request at a time.
USEFUL_KV_TOKENS = 4096


def fit_flags(info: ModelInfo, flags: tuple[str, ...], gpu: str, engine: str, matrix: Matrix,
              ) -> tuple[tuple[str, ...], PlanResult, str | None]:
    """(the flags that fit, their plan, what was changed and why) or the first plan that does not
    fit with None as the reason; the change is plan's cheapest on the same GPUs. A borderline plan
    (inside plan's own error) takes a change that leaves a safe margin where one exists."""
    first = _plan(info, flags, gpu, engine, matrix, suggest=True)
    if first.verdict == "fits":
        return flags, first, None
    problem = first.problems[0] if first.problems else first.verdict
    scant: tuple[tuple[str, ...], PlanResult, str, tuple[str, ...]] | None = None  # flags, plan, why, the change
    for s in first.suggestions:
        if s.verdict != "fits" or s.gpu or any(f.startswith("(") for f in s.flags):
            continue  # another GPU set, or a change that is not a flag (drop speculative decoding)
        changed = merge_flags(flags, s.flags)
        again = _plan(info, changed, gpu, engine, matrix, suggest=False)
        if again.verdict != "fits":
            continue
        why = f"{' '.join(s.flags)} ({s.description}); as given: {problem}"
        if again.plan.kv_tokens >= min(again.plan.context_length, USEFUL_KV_TOKENS):
            if scant is not None:
                why += (f"; the cheaper {' '.join(scant[3])} leaves only {scant[1].plan.kv_tokens:,} KV tokens "
                        f"(under {USEFUL_KV_TOKENS:,}) and was passed over")
            return changed, again, why
        if scant is None:  # starts, but a pool this small serves one short request at a time
            scant = changed, again, why, tuple(s.flags)
    if scant is not None:
        flags_, result, why, _change = scant
        return flags_, result, why + f"; only {result.plan.kv_tokens:,} KV tokens: no change found leaves more"
    return flags, first, None


# ----------------------------------------------------------------------------- the whole decision


def default_name(model: str, spec: GpuSpec, count: int, base_name: str | None = None) -> str:
    """'meta-llama/Llama-3.1-8B-Instruct' on 1 x L4 -> 'llama-3.1-8b-instruct-l4x1' (and '-BASE'
    after it for a base given by name)."""
    stem = re.sub(r"[^a-z0-9._-]+", "-", Path(model.rstrip("/")).name.lower()).strip("-._") or "model"
    gpu = spec.aliases[0] if spec.aliases else normalize_gpu_name(spec.name)
    base = "-" + re.sub(r"[^a-z0-9._-]+", "-", base_name.lower()) if base_name else ""
    return f"{stem}-{gpu}x{count}{base}"


def _tp_of(opts: TargetAddOptions, count: int) -> tuple[int, str]:
    given = _flag_value(opts.flags, _TP_FLAGS)
    if given is not None and opts.tp is not None and str(opts.tp) != given:
        raise UsageError(f"--tp {opts.tp} and the launch flag's TP {given} differ", hint="give one of them")
    if opts.tp is not None:
        return opts.tp, "given with --tp"
    if given is not None:
        if not given.isdigit():
            raise UsageError(f"launch flag TP {given!r} is not a number")
        return int(given), "given in the launch flags"
    return count, f"the GPU count ({count} x GPU, one tensor-parallel rank each)"


def decide_target(opts: TargetAddOptions, *, matrix: Matrix, hub: HubFetcher | None = None,
                  host_driver: Callable[[], str | None] | None = None,
                  taken: Mapping[str, str] | None = None) -> TargetDecision:
    """Decide the target (see the module docstring); a refusal is in the result, not raised.

    ``host_driver`` reads this host's driver (NVML) when ``--driver`` is not given; ``taken``
    maps the target names already in use to where (a name clash is a UsageError)."""
    from imgbuild.knowledge.modelinfo import inspect_model

    spec, count = matrix.resolve_gpu(opts.gpu)
    gpus = f"{spec.name}x{count}"
    name = opts.name or default_name(opts.model, spec, count, opts.base_name)
    if not _TARGET_NAME.fullmatch(name):
        what = (f"--name {name[:64]!r}" if opts.name
                else f"the target name {name[:64]!r} made from MODEL and --base-name")
        raise UsageError(f"{what}: a target name is 1 to 128 lowercase letters, digits, '.', '_' or '-'",
                         hint="e.g. --name llama-3.1-8b-l4x1")
    if name in (taken or {}):
        raise UsageError(f"target {name!r} already exists ({(taken or {})[name]})",
                         hint="give another --name, or use that target: imgbuild make " + name)
    bases = bases_of(matrix.raw)
    if opts.base_name and opts.base_name not in bases:
        raise UsageError(f"--base-name {opts.base_name!r} is not in the matrix's bases:",
                         hint="known: " + ", ".join(sorted(bases)))
    info = inspect_model(opts.model_dir or opts.model, hub=hub)
    driver, driver_why = _driver(opts, host_driver)
    reasons = [Reason("driver", driver or "not known", driver_why)]
    tp, tp_why = _tp_of(opts, count)
    flags = opts.flags if _flag_value(opts.flags, _TP_FLAGS) or tp == 1 else merge_flags(opts.flags, ("--tp", str(tp)))
    try:
        choice = choose_engine(info, _host(spec, count, driver), matrix, locks_dir=locks_dir_of(matrix),
                               wanted=opts.sglang, base_name=opts.base_name)
        reasons += _engine_reasons(choice, info, opts, driver, pinned=bool(bases[choice.base].digest))
        reasons.append(Reason("tp", str(tp), tp_why + ("; SGLang's default, no flag" if tp == 1 and flags == opts.flags
                                                        else "")))
        fitted, result, change = fit_flags(info, flags, gpus, choice.engine.version, matrix)
        if not result.fits:
            problem = result.problems[0] if result.problems else result.verdict
            raise NoTargetFits(f"{opts.model} does not fit on {count} x {spec.name} with SGLang "
                               f"{choice.engine.version}: {problem}", reasons=tuple(reasons),
                               fits_on=smallest_fits(info, spec, count, opts.flags, choice.engine, matrix))
    except NoTargetFits as exc:
        return TargetDecision(model=opts.model, gpus=gpus, reasons=tuple(reasons), refusal=exc.one_line(),
                              fits_on=exc.fits_on)
    reasons.append(_flags_reason(opts.flags, fitted, result, change))
    target = target_from_request(matrix, TargetRequest(
        engine=choice.engine.version, cuda=choice.engine.cuda, base_name=opts.base_name, model=opts.model, gpus=gpus,
        launch_flags=fitted))
    target = replace(target, name=name, source=_source(opts))
    if bases[target.base].digest:  # a base made per machine is resolved at render, with --base REF@sha256:
        recipe_inputs(matrix, target)  # the lock reads and the base's glibc serves the wheels, as render checks
    return TargetDecision(model=opts.model, gpus=gpus, reasons=tuple(reasons), target=target,
                          plan=_plan_summary(result))


def _driver(opts: TargetAddOptions, host_driver: Callable[[], str | None] | None) -> tuple[str | None, str]:
    if opts.driver:
        return opts.driver, "given with --driver"
    if host_driver is not None:
        try:
            seen = host_driver()
        except EnvironmentUnavailable:
            seen = None
        if seen:
            return seen, "this host's, read through NVML (give --driver for another machine's)"
    return None, "no --driver, and no NVIDIA driver seen here: any CUDA release is taken as runnable"


def _engine_reasons(choice: _EngineChoice, info: ModelInfo, opts: TargetAddOptions, driver: str | None, *,
                    pinned: bool) -> list[Reason]:
    e = choice.engine
    arch = next((a for a in info.architectures if a in e.architectures), info.architectures[0])
    runs = f", which driver {driver} runs" if driver else ""
    imports = " that imports (matrix.yaml lock_smoke)" if e.lock_smoke.get("as_of_release", {}).get("imports") else ""
    why = ("given with --sglang: it" if opts.sglang else "the newest release in the matrix that") + (
        f" registers {arch}, is built for CUDA {e.cuda} (torch {e.torch}){runs}, and has a lock for "
        f"Python {choice.python}{imports}")
    if choice.passed_over:
        why += "; passed over: " + "; ".join(_grouped(choice.passed_over))
    glibc = f" (its glibc serves the wheels' manylinux {e.glibc})" if e.glibc else ""
    base_why = (f"given with --base-name{glibc}" if opts.base_name
                else f"the newest -devel base for CUDA {e.cuda} in the matrix's bases:{glibc}")
    if not pinned:
        base_why += "; made per machine (no digest): make and build take it as --base REF@sha256:..."
    return [Reason("engine", e.version, why),
            Reason("base", choice.base, base_why),
            Reason("python", choice.python, f"the Python of base {choice.base}, which the lock "
                                            f"{engine_lock_name(e.version, python=choice.python, arch=ARCH)} is for")]


def _flags_reason(given: tuple[str, ...], fitted: tuple[str, ...], result: PlanResult, change: str | None) -> Reason:
    p = result.plan
    figures = (f"plan: {result.verdict} on {result.gpu_count} x {result.gpu_name}, {p.kv_tokens:,} KV tokens per GPU, "
               f"{p.max_running_requests} running requests, context {p.context_length:,}")
    if change:
        return Reason("flags", " ".join(fitted), f"the given flags plus plan's cheapest change that fits: {change}; "
                                                 + figures)
    what = "the given flags fit as they are" if given else "no flags needed"
    return Reason("flags", " ".join(fitted) or "(none)", f"{what}; {figures}")


def _source(opts: TargetAddOptions) -> str:
    words = ["imgbuild target add", opts.model, "--gpu", opts.gpu]
    for flag, value in (("--driver", opts.driver), ("--sglang", opts.sglang), ("--tp", opts.tp),
                        ("--base-name", opts.base_name)):
        if value is not None:
            words += [flag, str(value)]
    if opts.flags:
        words += ["--", *opts.flags]
    return " ".join(words)


def smallest_fits(info: ModelInfo, spec: GpuSpec, count: int, flags: tuple[str, ...], engine: EngineSpec,
                  matrix: Matrix) -> tuple[str, ...]:
    """The smallest GPU sets that fit with ``engine`` (TP = their count, plan's cheapest change
    allowed): more of the same GPU, and the smallest set by total memory of any GPU the matrix
    lists whose kernels the engine's CUDA carries."""
    base_flags = tuple(f for i, f in enumerate(flags) if f.partition("=")[0] not in _TP_FLAGS
                       and not (i and flags[i - 1] in _TP_FLAGS))
    same = [(spec, n) for n in GPU_COUNTS if n > count]
    others = sorted(((g, n) for g in matrix.gpus if g.platform == "cuda" for n in GPU_COUNTS
                     if g.name != spec.name and g.memory_mib * n > spec.memory_mib * count),
                    key=lambda gn: (gn[0].memory_mib * gn[1], gn[1], gn[0].name))
    out: list[str] = []
    for group in (same, others):
        for gpu, n in group:
            if host_blockers(engine, _host(gpu, n, None), matrix):
                continue
            tried = base_flags if n == 1 else merge_flags(base_flags, ("--tp", str(n)))
            try:
                _, result, _ = fit_flags(info, tried, f"{gpu.name}x{n}", engine.version, matrix)
            except UsageError:
                continue  # TP n does not divide the model's heads
            if result.fits:
                if f"{gpu.name}x{n}" not in out:
                    out.append(f"{gpu.name}x{n}")
                break
    return tuple(out)


# ----------------------------------------------------------------------------- the file


HEADER = ("# The team's imgbuild targets, laid over the matrix.yaml imgbuild ships (`imgbuild matrix validate`).\n"
          "# `imgbuild target add MODEL --gpu NAME[xN]` appends to it; `imgbuild make` builds every target here.\n")


def target_text(decision: TargetDecision, *, made_on: str) -> str:
    """The target as a YAML list item under ``targets:``, its reasons as comments above it."""
    row = decision.row()
    lines = [f"  # {row['name']}: made by `imgbuild target add` on {made_on}"]
    for reason in decision.reasons:
        wrapped = textwrap.wrap(reason.line(), width=104, break_long_words=False, break_on_hyphens=False)
        lines += [f"  # {wrapped[0]}"] + [f"  #   {w}" for w in wrapped[1:]]
    lines.append(f"  - name: {json.dumps(row['name'])}")
    for key in ("kind", "engine", "cuda", "base", "python", "model", "gpus"):
        lines.append(f"    {key}: {json.dumps(row[key])}")
    lines.append(f"    launch_flags: {json.dumps(row['launch_flags'])}")
    lines.append(f"    source: {json.dumps(row['source'])}")
    return "\n".join(lines) + "\n"


_TARGETS_KEY = re.compile(r"^targets:\s*(\[\s*\])?\s*(#.*)?$")


def add_target_text(text: str, item: str) -> str:
    """``text`` (a targets file, or "" for a new one) with ``item`` appended to its targets: list;
    every other line stays as it is."""
    if not text.strip():
        return HEADER + "targets:\n" + item
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start = next((i for i, line in enumerate(lines) if _TARGETS_KEY.match(line.rstrip("\n"))), None)
    if start is None:
        return "".join(lines) + "\ntargets:\n" + item
    if "[" in lines[start]:  # `targets: []`: the list begins here
        lines[start] = "targets:\n"
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].strip() and not lines[i].startswith((" ", "\t", "#", "-"))), len(lines))
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1  # blank lines and comments before the next section belong to it
    return "".join(lines[:end] + [item] + lines[end:])


def write_targets_file(path: Path, text: str, *, expected: str | None,
                       validate: Callable[[Path], None] | None = None) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and os.replace.

    ``expected`` is the text the new one was made from (None: the file did not exist): a file
    that changed meanwhile is not overwritten. ``validate`` reads the temporary file first (the
    targets file reader), so a file that would not load is never put in place."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name[:50]}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write the targets file {path}: {exc.strerror or exc}",
                         hint="give --targets a file in a folder you can write to") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, (path.stat().st_mode & 0o777) if path.exists() else 0o644)  # the team's file keeps its mode
        if validate is not None:
            validate(Path(tmp))
        now = path.read_text(encoding="utf-8") if path.exists() else None
        if now != expected:
            raise UsageError(f"{path} changed while the target was decided", hint="run `imgbuild target add` again")
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write the targets file {path}: {exc.strerror or exc}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def team_target_for(matrix: Matrix, model: str, gpu: str, base_name: str | None = None) -> TargetSpec | None:
    """The team file's target for ``model`` on these GPUs (same GPU and count) and, where given,
    that base, if there is one."""
    from imgbuild.knowledge.recipe import parse_targets

    spec, count = matrix.resolve_gpu(gpu)
    team = set(getattr(matrix, "target_sources", {}) or {})
    for target in parse_targets(matrix.raw.get("targets")).values():
        if target.name in team and target.model == model and target.gpus and base_name in (None, target.base):
            try:
                if matrix.resolve_gpu(target.gpus) == (spec, count):
                    return target
            except UsageError:
                continue
    return None


def save_target(decision: TargetDecision, path: Path, *, shipped: Matrix, made_on: str) -> str:
    """Append the decided target to the targets file at ``path`` (made when missing) and return
    where it landed ("FILE:LINE"), as the targets file reader reads the file written."""
    from imgbuild.knowledge.targetsfile import overlay_matrix, read_targets_file

    if decision.target is None:
        raise UsageError("no target to write: the decision is a refusal")
    try:
        existing = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the targets file {path}: {exc}") from None
    text = add_target_text(existing or "", target_text(decision, made_on=made_on))

    def validate(written: Path) -> None:
        overlay_matrix(shipped, read_targets_file(written))

    write_targets_file(path, text, expected=existing, validate=validate)
    merged = overlay_matrix(shipped, read_targets_file(path))
    return merged.target_sources.get(decision.target.name, str(path))


__all__ = [
    "NoTargetFits",
    "Reason",
    "TargetAddOptions",
    "TargetDecision",
    "add_target_text",
    "choose_engine",
    "decide_target",
    "default_name",
    "fit_flags",
    "merge_flags",
    "save_target",
    "team_target_for",
    "smallest_fits",
    "target_text",
    "write_targets_file",
]
