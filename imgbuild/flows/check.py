"""check: can this SGLang serve this model, on this driver and these GPUs?

Composes the matrix (what each release registers and needs), the model's
config, an SGLang installation (a matrix version, a Python environment's files,
or an image's files) and the host (NVML, or a named target via --gpu).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from packaging.version import InvalidVersion, Version

from imgbuild.errors import EnvironmentUnavailable, UsageError
from imgbuild.knowledge.argchecks import gptq_without_kernel
from imgbuild.knowledge.matrix import Matrix
from imgbuild.knowledge.modelinfo import HubFetcher, ModelInfo, inspect_model
from imgbuild.knowledge.specs import EngineSpec

if TYPE_CHECKING:
    from imgbuild.adapters.gpus import GpuProbe
    from imgbuild.flows.plan import PlanResult
    from imgbuild.knowledge.sglanginstall import SglangInstall, SmokeResult

ImageExporter = Callable[[str, Path], Path]
# Runs the import smoke in a throwaway container of an image: (exit code, output).
ImageSmoker = Callable[[str], tuple[int, str]]
SMOKE_TIMEOUT_S = 900.0  # torch and the CUDA libraries take a minute to import on 2 cores


@dataclass(frozen=True, kw_only=True)
class CheckOptions:
    model: str
    sglang: str | None = None
    python: str | None = None
    image: str | None = None
    gpu: str | None = None
    driver: str | None = None
    flags: tuple[str, ...] = ()  # launch flags: when given, the planner checks that they fit


@dataclass(frozen=True)
class SglangUnderTest:
    version: str
    source: str  # "matrix", "python:PATH", "image:REF", "environment"
    architectures: frozenset[str]
    engine: EngineSpec | None  # the matrix row for this version, when there is one


@dataclass(frozen=True)
class GpuSeen:
    name: str
    count: int
    compute_capability: str
    memory_mib: int
    platform: str = "cuda"  # matrix.yaml's platform; NVML sees only NVIDIA GPUs


@dataclass(frozen=True)
class HostView:
    checked: bool
    source: str  # "nvml", "--gpu", or why it was not checked
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpus: tuple[GpuSeen, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "source": self.source,
            "driver_version": self.driver_version,
            "cuda_driver_version": self.cuda_driver_version,
            "gpus": [g.__dict__ for g in self.gpus],
        }


@dataclass(frozen=True)
class CheckResult:
    supported: bool
    model: ModelInfo
    sglang: SglangUnderTest
    host: HostView
    reasons: tuple[str, ...]
    min_sglang: str | None
    recommended: EngineSpec | None
    recommended_min_driver: str | None
    sglang_min_driver: str | None = None
    notes: tuple[str, ...] = field(default=())
    plan: PlanResult | None = None
    smoke: SmokeResult | None = None  # the import smoke of --python / --image; None for --sglang

    def to_dict(self) -> dict[str, Any]:
        rec = self.recommended
        return {
            "supported": self.supported,
            "model": {
                "source": self.model.source,
                "architectures": list(self.model.architectures),
                "model_type": self.model.model_type,
                "features": list(self.model.features),
                "parameters": self.model.parameters,
                "weight_bytes": self.model.weight_bytes,
            },
            "sglang": {
                "version": self.sglang.version,
                "source": self.sglang.source,
                "torch": self.sglang.engine.torch if self.sglang.engine else None,
                "cuda": self.sglang.engine.cuda if self.sglang.engine else None,
                "min_driver": self.sglang_min_driver,
            },
            "host": self.host.to_dict(),
            "min_sglang": self.min_sglang,
            "reasons": list(self.reasons),
            "recommended": None
            if rec is None
            else {
                "sglang": rec.version,
                "torch": rec.torch,
                "cuda": rec.cuda,
                "min_driver": self.recommended_min_driver,
                "pins": dict(rec.pins),
            },
            "notes": list(self.notes),
            "plan": None if self.plan is None else self.plan.to_dict(),
            "import_smoke": None if self.smoke is None else {
                "ok": self.smoke.ok, "steps": list(self.smoke.steps), "step": self.smoke.step,
                "root": self.smoke.root, "packages": list(self.smoke.packages),
                "missing_module": self.smoke.missing_module,
            },
        }


def check_model(
    options: CheckOptions,
    *,
    matrix: Matrix,
    probe: GpuProbe | None,
    hub: HubFetcher | None = None,
    export_image: ImageExporter | None = None,
    smoke_image: ImageSmoker | None = None,
) -> CheckResult:
    chosen = [o for o in ("sglang", "python", "image") if getattr(options, o)]
    if len(chosen) > 1:
        raise UsageError(f"--{chosen[0]} and --{chosen[1]} both name an SGLang", hint="give one of them")
    model = inspect_model(options.model, hub=hub)
    sglang = _sglang_under_test(options, matrix, export_image)
    host = read_host(options, matrix=matrix, probe=probe)

    reasons = model_blockers(model, sglang.version, sglang.architectures, matrix)
    reasons += host_blockers(sglang.engine, host, matrix) + kernel_blockers(model, sglang.version, host)
    notes = []
    smoke = _import_smoke(options, smoke_image)
    if smoke is not None and not smoke.ok:
        # An installation that would serve the model on paper but cannot import is no answer.
        reasons.append(smoke.reason())
        notes.append("fix: " + smoke.hint(sglang.version))
    if sglang.engine is None:
        notes.append(f"SGLang {sglang.version} is not in the matrix: its torch/CUDA pins are unknown, host not compared")

    if not host.checked:
        notes.append(f"host not checked: {host.source}")

    min_sglang, recommended = _recommend(model, host, matrix)
    rec_driver = _min_driver(recommended, matrix) if recommended else None
    notes += _lock_warnings(sglang.engine if smoke is None else None, recommended)
    plan = None
    if options.flags and host.checked:
        # The same planner as `imgbuild plan` and certify's preflight; imported here so that
        # a check without flags does not pay for loading it.
        from imgbuild.flows.plan import PlanOptions, plan_launch

        plan_options = PlanOptions(model=options.model, flags=options.flags, gpu=options.gpu, sglang=sglang.version)
        plan = plan_launch(plan_options, matrix=matrix, probe=probe, hub=hub, model_info=model)
        if not plan.fits:
            reasons.append(f"launch flags {plan.verdict} on {plan.gpu_count}x {plan.gpu_name}: {plan.problems[0]}"
                           if plan.problems else f"launch flags {plan.verdict}")
    elif options.flags:
        notes.append("launch flags not planned: no GPUs known (pass --gpu NAME[xN])")
    return CheckResult(
        supported=not reasons,
        model=model,
        sglang=sglang,
        host=host,
        reasons=tuple(reasons),
        min_sglang=min_sglang,
        recommended=recommended,
        recommended_min_driver=rec_driver,
        sglang_min_driver=_min_driver(sglang.engine, matrix),
        notes=tuple(notes),
        plan=plan,
        smoke=smoke,
    )


def _lock_warnings(engine: EngineSpec | None, recommended: EngineSpec | None) -> list[str]:
    """matrix.yaml lock_smoke (scripts/lock_all.py): the release checked, or the one recommended,
    whose lock as of its release does not import; an image of it would fail the build's import smoke."""
    out = [f"warning: SGLang {engine.version}: {engine.lock_failure()}"] if engine and engine.lock_failure() else []
    if recommended is not None and recommended is not engine and recommended.lock_failure():
        out.append(f"warning: recommended SGLang {recommended.version}: {recommended.lock_failure()}")
    return out


def _recommend(model: ModelInfo, host: HostView, matrix: Matrix) -> tuple[str | None, EngineSpec | None]:
    """The first release that serves the model, and the newest that serves it on this host."""
    min_sglang = next((e.version for e in matrix.engines if not model_blockers(model, e.version, e.architectures, matrix)), None)
    for engine in reversed(matrix.engines):
        if not model_blockers(model, engine.version, engine.architectures, matrix) and not host_blockers(engine, host, matrix) \
                and not kernel_blockers(model, engine.version, host):
            return min_sglang, engine
    return min_sglang, None


def model_blockers(model: ModelInfo, version: str, architectures: frozenset[str], matrix: Matrix) -> list[str]:
    """Why SGLang ``version`` (registering ``architectures``) cannot serve ``model``; empty when it can."""
    reasons = []
    here = Version(version)
    if not any(a in architectures for a in model.architectures):
        for arch in model.architectures:
            first = next((e.version for e in matrix.engines if arch in e.architectures), None)
            if first is None:
                reasons.append(f"architecture {arch} is not registered by any SGLang release in the matrix")
            elif Version(first) > here:
                reasons.append(f"architecture {arch} is not registered in SGLang {version}; first registered in {first}")
            else:
                last = max((e.version for e in matrix.engines if arch in e.architectures), key=Version)
                reasons.append(f"architecture {arch} is not registered in SGLang {version} (registered {first} to {last})")
    for feature in matrix.features:
        if feature.name in model.features and feature.min_sglang and Version(feature.min_sglang) > here:
            reasons.append(f"feature {feature.name} ({feature.description}) needs SGLang >= {feature.min_sglang}")
    for issue in matrix.known_issues:
        if _issue_matches(issue, model) and Version(issue.min_sglang) > here:
            reasons.append(f"needs SGLang >= {issue.min_sglang}: {issue.reason} [known issue {issue.id}: {_first_url(issue.source)}]")
    return reasons


def _issue_matches(issue: Any, model: ModelInfo) -> bool:
    types = {model.model_type, str(model.text_config.get("model_type", ""))}
    checks = []
    if issue.model_types:
        checks.append(bool(types & set(issue.model_types)))
    if issue.architectures:
        checks.append(bool(set(model.architectures) & set(issue.architectures)))
    if issue.features:
        checks.append(set(issue.features) <= set(model.features))
    return bool(checks) and all(checks)


def _first_url(source: str) -> str:
    match = re.search(r"https?://\S+?(?=[\s,;)]|$)", source)
    return match.group(0) if match else source


def _min_driver(engine: EngineSpec | None, matrix: Matrix) -> str | None:
    if engine is None or engine.cuda is None:
        return None
    spec = next((c for c in matrix.cuda if c.version == engine.cuda), None)
    return spec.min_driver if spec else None


def host_blockers(engine: EngineSpec | None, host: HostView, matrix: Matrix) -> list[str]:
    if engine is None or engine.cuda is None or not host.checked:
        return []
    reasons = []
    spec = next((c for c in matrix.cuda if c.version == engine.cuda), None)
    if spec is None:
        return [f"CUDA {engine.cuda} of SGLang {engine.version} has no row in the matrix's cuda: section"]
    if host.driver_version and _older(host.driver_version, spec.min_driver):
        reasons.append(
            f"driver {host.driver_version} is older than CUDA {spec.version} needs (>= {spec.min_driver}) "
            f"for SGLang {engine.version} (torch {engine.torch})"
        )
    if spec.sm:
        for gpu in host.gpus:
            if not kernels_run_on(gpu.compute_capability, spec.sm):
                reasons.append(
                    f"{gpu.name} has compute capability {gpu.compute_capability}, which torch's CUDA {spec.version} "
                    f"wheels are not built for ({', '.join(spec.sm)})"
                )
    return reasons


def kernel_blockers(model: ModelInfo, version: str, host: HostView) -> list[str]:
    """Why SGLang ``version`` has no kernel for this checkpoint's format on the host's CUDA GPUs (a GPTQ checkpoint
    Marlin cannot take, from 0.5.20: knowledge/argchecks.py gptq_without_kernel); empty when it has one."""
    found = (gptq_without_kernel(version, {}, checkpoint_quantization=model.quantization,
                                 checkpoint_scheme=model.geometry.quant, compute_capability=gpu.compute_capability)
             for gpu in host.gpus if host.checked and gpu.platform == "cuda")
    return list(dict.fromkeys(reason for reason in found if reason))


def kernels_run_on(compute_capability: str, built_for: tuple[str, ...]) -> bool:
    """True when code built for ``built_for`` runs on a GPU of ``compute_capability``.

    CUDA binaries (SASS) built for X.y run on X.z with z >= y, so sm_86 wheels
    serve an sm_89 card; a different major needs its own build.
    """
    major, _, minor = compute_capability.partition(".")
    for arch in built_for:
        a_major, _, a_minor = arch.partition(".")
        if a_major == major and int(a_minor or 0) <= int(minor or 0):
            return True
    return False


def _older(have: str, need: str) -> bool:
    try:
        return Version(have) < Version(need)
    except InvalidVersion:
        return False


def read_host(options: CheckOptions, *, matrix: Matrix, probe: GpuProbe | None) -> HostView:
    if options.gpu:
        spec, count = matrix.resolve_gpu(options.gpu)
        gpus = (GpuSeen(spec.name, count, spec.compute_capability, spec.memory_mib, spec.platform),)
        return HostView(checked=True, source="--gpu", driver_version=options.driver, gpus=gpus)
    if probe is None:
        return HostView(checked=False, source="no GPU probe")
    try:
        seen = probe.read()
    except EnvironmentUnavailable as exc:
        return HostView(checked=False, source=exc.message)
    counts: dict[tuple[str, str, int], int] = {}
    for dev in seen.devices:
        key = (dev.name, dev.compute_capability, dev.memory_total_mib)
        counts[key] = counts.get(key, 0) + 1
    gpus = tuple(GpuSeen(n, c, cc, m) for (n, cc, m), c in counts.items())
    return HostView(
        checked=True,
        source="nvml",
        driver_version=options.driver or seen.driver_version,
        cuda_driver_version=seen.cuda_driver_version,
        gpus=gpus,
    )


def _sglang_under_test(options: CheckOptions, matrix: Matrix, export_image: ImageExporter | None) -> SglangUnderTest:
    if options.sglang:
        engine = matrix.engine(options.sglang)
        return SglangUnderTest(engine.version, "matrix", engine.architectures, engine)
    if options.python:
        install = _install_of_python(options.python)
        return _from_install(install, f"python:{options.python}", matrix)
    # Reading an installation's files is needed only for these sources: imported here.
    import tempfile

    from imgbuild.knowledge.sglanginstall import read_installation

    if options.image:
        if export_image is None:
            raise UsageError("--image needs a Docker engine adapter")
        with tempfile.TemporaryDirectory(prefix="imgbuild-image-") as tmp:
            site = export_image(options.image, Path(tmp))
            install = read_installation(Path(site))
            if install is None:
                raise UsageError(f"image {options.image} holds no sglang installation", hint="check the image reference")
            return _from_install(install, f"image:{options.image}", matrix)
    install = _install_of_current_environment()
    return _from_install(install, "environment", matrix)


def _import_smoke(options: CheckOptions, smoke_image: ImageSmoker | None) -> SmokeResult | None:
    """The import smoke in the interpreter of --python, or in a throwaway container of --image."""
    import subprocess

    from imgbuild.knowledge.sglanginstall import IMPORT_SMOKE, parse_smoke_output

    if options.image:
        if smoke_image is None:
            return None
        status, output = smoke_image(options.image)
        return parse_smoke_output(output, status)
    if not options.python:
        return None
    try:
        done = subprocess.run([options.python, "-I", "-c", IMPORT_SMOKE], capture_output=True, text=True,
                              timeout=SMOKE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise EnvironmentUnavailable(
            f"--python {options.python}: the import smoke did not finish within {SMOKE_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        raise UsageError(f"--python {options.python}: cannot run it ({exc})") from None
    return parse_smoke_output(done.stderr + "\n" + done.stdout, done.returncode)


def _from_install(install: SglangInstall, source: str, matrix: Matrix) -> SglangUnderTest:
    engine = next((e for e in matrix.engines if Version(e.version) == Version(install.version)), None)
    return SglangUnderTest(install.version, source, install.architectures, engine)


def _install_of_current_environment() -> SglangInstall:
    import sys

    return _install_in_dirs([Path(p) for p in sys.path if p], "this Python environment", hint_python=False)


def _install_of_python(python: str) -> SglangInstall:
    """The SGLang in another interpreter's environment: ask it for its paths, never import sglang."""
    import json
    import subprocess

    code = "import json, sys; print(json.dumps([p for p in sys.path if p]))"
    try:
        done = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError:
        raise UsageError(f"--python {python}: no such interpreter", hint="give the path of a python executable") from None
    except (PermissionError, OSError) as exc:
        raise UsageError(f"--python {python}: cannot run it ({exc})", hint="give the path of a python executable") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--python {python}: did not answer within 30 s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise UsageError(f"--python {python}: exited {done.returncode}: {last}", hint="give the path of a python executable")
    try:
        paths = [Path(p) for p in json.loads(done.stdout)]
    except ValueError:
        raise UsageError(f"--python {python}: did not print its sys.path", hint="is it a Python 3 interpreter?") from None
    return _install_in_dirs(paths, f"the environment of {python}", hint_python=True)


def _install_in_dirs(paths: list[Path], where: str, *, hint_python: bool) -> SglangInstall:
    from imgbuild.knowledge.sglanginstall import read_installation

    for path in paths:
        if path.is_dir():
            install = read_installation(path)
            if install is not None:
                return install
    hint = "pass --sglang VERSION, --python PATH or --image REF"
    if hint_python:
        raise UsageError(f"no sglang is installed in {where}", hint="install it there, or " + hint)
    raise EnvironmentUnavailable(f"no sglang is installed in {where}", hint=hint)
