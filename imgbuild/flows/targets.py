"""The one resolution of a target and its base, and the one certify set-up.

Both the command line (``render``, ``build``, ``certify``) and ``make`` come here:

- ``resolve_target``: a matrix target by name, or one given as options
  (``--engine V [--cuda X.Y] [--base-name NAME]``), with its base chosen and a
  ``--base`` override applied, turned into the RecipeInputs of one render;
- ``default_repository``: where builds are tagged when no repository is given;
- ``certify_host`` and ``certify_options``: which GPU probe reads the engine's host
  (NVML here, a snapshot, or nvidia-smi in a container on a remote DOCKER_HOST),
  whether the HTTP checks run inside the container, and the CertifyOptions of a
  target.

Importing this module loads no docker or httpx (``make --until render`` and
``render`` must not): the certify helpers import their adapters when called.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from imgbuild.knowledge.atomicfile import replace_text
from imgbuild.errors import UsageError
from imgbuild.knowledge import recipe, render
from imgbuild.knowledge.recipe import BaseSpec, RecipeInputs, TargetSpec

if TYPE_CHECKING:
    from imgbuild.flows.certify import CertifyOptions
    from imgbuild.knowledge.matrix import Matrix

DEFAULT_REPOSITORY = "imgbuild/sglang"
REGISTRY_ENV = "IMGBUILD_REGISTRY"
DEFAULT_PYTHON = "3.12"


@dataclass(frozen=True, kw_only=True)
class TargetRequest:
    """A target as asked for: a name from matrix.yaml, or the parts of one (``engine`` set)."""

    name: str | None = None
    engine: str | None = None
    cuda: str | None = None
    base_name: str | None = None  # a base of matrix.yaml bases: (default: the newest -devel for cuda)
    python: str | None = None
    model: str | None = None
    gpus: str | None = None
    launch_flags: tuple[str, ...] = ()
    base_ref: str | None = None  # --base REF@sha256:..., replacing the target's base
    # True (make): the override applies only to targets whose matrix base has no digest
    # (bases made per machine); False (render, build): it always applies.
    override_unpinned_only: bool = False


def locks_dir_of(matrix: Matrix) -> Path:
    return Path(matrix.path).parent / "locks"


def default_repository(env: Mapping[str, str] | None = None) -> str:
    """imgbuild/sglang, under $IMGBUILD_REGISTRY when that is set."""
    registry = (os.environ if env is None else env).get(REGISTRY_ENV)
    return f"{registry}/{DEFAULT_REPOSITORY}" if registry else DEFAULT_REPOSITORY


def newest_devel_base(bases: Mapping[str, BaseSpec], cuda: str | None) -> str:
    """The newest ``-devel`` base for a CUDA version (tags sort by their version)."""
    devel = sorted(
        (b for b in bases.values() if b.tag and cuda and b.tag.startswith(f"{cuda}.") and "-devel-" in b.tag),
        key=lambda b: b.tag or "",
    )
    if not devel:
        raise UsageError(f"no -devel base for CUDA {cuda} in matrix.yaml bases: (give --base-name or --base)")
    return devel[-1].name


def target_from_request(matrix: Matrix, request: TargetRequest) -> TargetSpec:
    """The TargetSpec a request names, before any base override."""
    if request.name and request.engine:
        raise UsageError("give a TARGET name or --engine, not both")
    if request.name:
        return render.find_target(matrix.raw, request.name)
    if not request.engine:
        raise UsageError("give a TARGET from matrix.yaml targets: or a target with --engine V [--cuda X.Y]")
    bases = render.bases_of(matrix.raw)
    cuda = request.cuda or matrix.engine(request.engine).cuda
    base_name = request.base_name
    if not base_name and not request.base_ref:
        base_name = newest_devel_base(bases, cuda)
    known = bases[base_name].python if base_name in bases else None
    return render.target_from_options(render.TargetOptions(
        engine=request.engine,
        base=request.base_ref or base_name or "",
        python=request.python or known or DEFAULT_PYTHON,
        cuda=cuda,
        model=request.model,
        gpus=request.gpus,
        launch_flags=request.launch_flags,
    ))


def with_base(target: TargetSpec, bases: Mapping[str, BaseSpec], base_ref: str | None, *,
              unpinned_only: bool) -> TargetSpec:
    """The target on ``base_ref`` (validated as pinned by digest) where the override applies."""
    if not base_ref:
        return target
    pinned = target.base in bases and bool(bases[target.base].digest)
    if unpinned_only and pinned:
        return target
    return recipe.with_base_override(target, base_ref)


def recipe_inputs(matrix: Matrix, target: TargetSpec, *, locks_dir: Path | None = None) -> RecipeInputs:
    """RecipeInputs of a resolved target; a target on an engine the matrix lacks is its UsageError."""
    engine_spec = matrix.engine(target.engine) if target.kind == "sglang" else None
    return render.resolve_inputs(target, bases=render.bases_of(matrix.raw), engine=engine_spec,
                                 locks_dir=locks_dir or locks_dir_of(matrix))


def resolve_target(matrix: Matrix, request: TargetRequest, *, locks_dir: Path | None = None) -> RecipeInputs:
    """A request (by name or by parts, with a base override) -> the inputs of one render."""
    target = target_from_request(matrix, request)
    target = with_base(target, render.bases_of(matrix.raw), request.base_ref,
                       unpinned_only=request.override_unpinned_only)
    return recipe_inputs(matrix, target, locks_dir=locks_dir)


# --- bases -------------------------------------------------------------------------


@dataclass(frozen=True)
class BaseChange:
    base: str
    old: str | None
    digest: str
    platforms: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "old": self.old, "digest": self.digest, "platforms": self.platforms}


def refresh_base_digests(matrix: Matrix, *, client: Any, progress: Callable[[str], None] | None = None,
                         ) -> list[BaseChange]:
    """Re-read each base's digests from its registry (``client``: an httpx.Client) and write
    them into the matrix file, as a line edit that keeps its comments."""
    from imgbuild.adapters.baseimages import fetch_digests

    say = progress or (lambda line: None)
    path = Path(matrix.path)
    text = path.read_text(encoding="utf-8")
    changes = []
    for base in render.bases_of(matrix.raw).values():
        if not base.tag or base.image.startswith("127.0.0.1"):
            continue  # made per machine (scripts/services): nothing to refresh
        say(f"reading {base.image}:{base.tag} ...")
        digest, platforms = fetch_digests(client, base.image, base.tag)
        changes.append(BaseChange(base.name, base.digest, digest, platforms))
        text = recipe.update_base_digests(text, base.name, digest, platforms)
    replace_text(path, text, mode=None)  # the matrix keeps its mode
    return changes


# --- certify ------------------------------------------------------------------------


@dataclass(frozen=True)
class CertifyHost:
    """How certify reads and reaches the engine's host."""

    probe: Any  # a GpuProbe: .read() -> HostGpus
    probe_source: str  # recorded in the certificate: "nvml", "snapshot:PATH", "nvidia-smi on HOST"
    http_in_container: bool  # a remote engine's published port is not on this machine's loopback


def remote_docker_host(env: Mapping[str, str] | None = None) -> str | None:
    """DOCKER_HOST when it names another machine (ssh:// or tcp://, not loopback), else None."""
    docker_host = (os.environ if env is None else env).get("DOCKER_HOST", "")
    if not docker_host.startswith(("ssh://", "tcp://")):
        return None
    if any(local in docker_host for local in ("://127.0.0.1", "://localhost")):
        return None
    return docker_host


def certify_host(eng: Any, image: str, *, env: Mapping[str, str] | None = None,
                 local_probe: Any = None) -> CertifyHost:
    """The GPU probe for certifying ``image`` on ``eng``: a snapshot when
    IMGBUILD_GPU_SNAPSHOT is set; nvidia-smi in a container of the image when DOCKER_HOST
    is remote (NVML here would read this machine); else ``local_probe`` or NVML."""
    from imgbuild.adapters.gpus import SNAPSHOT_ENV, default_probe

    env = os.environ if env is None else env
    remote = remote_docker_host(env)
    snapshot = env.get(SNAPSHOT_ENV)
    if snapshot:
        return CertifyHost(default_probe(), f"snapshot:{snapshot}", remote is not None)
    if remote:
        from imgbuild.adapters.containers import ContainerGpuProbe

        return CertifyHost(ContainerGpuProbe(eng, image), f"nvidia-smi on {remote}", True)
    return CertifyHost(local_probe if local_probe is not None else default_probe(), "nvml", False)


def certify_options(*, image: str, target: TargetSpec | None, host: CertifyHost, gpus: str | None = None,
                    launch_flags: tuple[str, ...] | None = None, model_dir: str | None = None,
                    model_ref: str | None = None, **rest: Any) -> CertifyOptions:
    """CertifyOptions for ``image``: what is given, else the target's (GPUs, flags, model);
    without a target the flow fills the rest from the image's recipe."""
    from imgbuild.flows.certify import CertifyOptions

    flags = launch_flags if launch_flags is not None else tuple(target.launch_flags if target else ())
    return CertifyOptions(
        image=image,
        gpus=gpus or (target.gpus if target else None) or "",
        launch_flags=flags,
        target_name=target.name if target else None,
        target_gpus=target.gpus if target else None,
        engine_version=target.engine if target else None,
        cuda=target.cuda if target else None,
        model_dir=model_dir,
        model_ref=model_ref or (target.model if target and not model_dir else None),
        probe_source=host.probe_source,
        http_in_container=host.http_in_container,
        **rest,
    )


__all__ = [
    "DEFAULT_REPOSITORY",
    "BaseChange",
    "refresh_base_digests",
    "CertifyHost",
    "TargetRequest",
    "certify_host",
    "certify_options",
    "default_repository",
    "recipe_inputs",
    "remote_docker_host",
    "resolve_target",
    "target_from_request",
    "with_base",
]
