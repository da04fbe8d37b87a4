"""Render a target into a Dockerfile and its build context. Pure: same inputs, same bytes.

The templates live in dockerfiles/ (``{{NAME}}`` placeholders, no logic); the
lock in locks/. ``resolve_target`` turns a target of the matrix (or one given on
the command line) into RecipeInputs, checking the base's glibc against what the
engine's wheels need; ``render_dockerfile`` fills the template; ``render_context``
returns every file of the build context; ``write_context`` writes them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from imgbuild import __version__
from imgbuild.errors import UsageError
from imgbuild.knowledge.matrix import data_root
from imgbuild.knowledge.sglanginstall import IMPORT_SMOKE, SMOKE_FILE
from imgbuild.knowledge.specs import EngineSpec
from imgbuild.knowledge.recipe import (
    BaseSpec,
    RecipeInputs,
    TargetSpec,
    glibc_satisfies,
    image_tag,
    is_pinned_ref,
    parse_bases,
    parse_targets,
    split_ref,
    validate_target,
)

# Locks are compiled for manylinux_2_34 (what SGLang 0.5.11's own wheels are
# tagged with), so no locked wheel needs a newer glibc than this.
LOCK_GLIBC = "2.34"
TEMPLATES = {"sglang": "sglang.Dockerfile.tmpl", "test": "test.Dockerfile.tmpl"}
CONTEXT_FILES = ("Dockerfile", "requirements.lock", "recipe.json", SMOKE_FILE)


@dataclass(frozen=True)
class Rendered:
    target: TargetSpec
    recipe_digest: str
    tag: str  # TARGET-<12 hex of the recipe digest>
    base_ref: str
    dockerfile: str
    lock_text: str
    files: dict[str, bytes]  # the build context, name -> content


def targets_of(raw: dict) -> dict[str, TargetSpec]:
    return parse_targets(raw.get("targets"))


def bases_of(raw: dict) -> dict[str, BaseSpec]:
    return parse_bases(raw.get("bases"))


def find_target(raw: dict, name: str) -> TargetSpec:
    targets = targets_of(raw)
    if name not in targets:
        known = ", ".join(sorted(targets)) or "none"
        raise UsageError(f"unknown target {name!r}", hint=f"targets in matrix.yaml: {known}; or give --engine/--base")
    return targets[name]


def lock_command(target: TargetSpec) -> str:
    """The ``imgbuild lock`` command that makes ``target``'s lock file."""
    if target.kind == "test":
        return f"imgbuild lock --target {target.name}"
    return f"imgbuild lock {target.engine} --python {target.python} --arch {target.arch}"


def _resolve_base(target: TargetSpec, bases: dict[str, BaseSpec]) -> tuple[str, str | None]:
    """(the base reference pinned by digest, its glibc when the matrix knows it)."""
    if is_pinned_ref(target.base):
        base_ref = target.base
        base_glibc = None  # unknown for an override: the Dockerfile checks it while building
    elif target.base in bases:
        base = bases[target.base]
        base_ref = base.ref()
        base_glibc = base.glibc
    elif "@" in target.base or ":" in target.base or "/" in target.base:
        split_ref(target.base)  # raises: not pinned by digest
        raise AssertionError("unreachable")
    else:
        known = ", ".join(sorted(bases)) or "none"
        raise UsageError(f"target {target.name}: unknown base {target.base!r}", hint=f"bases in matrix.yaml: {known}")
    return base_ref, base_glibc


def _read_lock(target: TargetSpec, locks_dir: Path) -> str:
    """The text of the target's hash lock; UsageError naming the command that makes a missing one."""
    lock_path = locks_dir / target.lock_name()
    try:
        lock_text = lock_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(
            f"target {target.name}: no lock for Python {target.python} on {target.arch} ({lock_path} is missing)",
            hint=f"make it with `{lock_command(target)}`",
        ) from None
    if "--hash=sha256:" not in lock_text:
        raise UsageError(f"{lock_path}: no --hash lines", hint="a lock must be made with --generate-hashes (imgbuild lock)")
    return lock_text


def resolve_inputs(
    target: TargetSpec,
    *,
    bases: dict[str, BaseSpec],
    engine: EngineSpec | None,
    locks_dir: Path,
    templates_dir: Path | None = None,
) -> RecipeInputs:
    """The inputs of one render; UsageError for a missing lock, unknown base or old glibc."""
    validate_target(target, where=f"target {target.name}")
    base_ref, base_glibc = _resolve_base(target, bases)
    if target.kind != "sglang":
        engine = None  # a test target installs its own packages, not the engine's stack
    if engine is not None:  # fill what the matrix knows about the engine
        if target.cuda and engine.cuda and target.cuda.split(".")[0] != engine.cuda.split(".")[0]:
            raise UsageError(
                f"target {target.name}: CUDA {target.cuda} but SGLang {target.engine}'s torch {engine.torch} is built for CUDA {engine.cuda}",
                hint=f"use a CUDA {engine.cuda.split('.')[0]}.x base",
            )
        target = replace(target, cuda=target.cuda or engine.cuda, torch=target.torch or engine.torch)
    need = target.glibc or (engine.glibc if engine else None) or LOCK_GLIBC
    if base_glibc and not glibc_satisfies(base_glibc, need):
        raise UsageError(
            f"target {target.name}: base {target.base} has glibc {base_glibc}, SGLang {target.engine}'s wheels need {need}",
            hint="choose a base with a newer glibc (Ubuntu 24.04 has 2.39)",
        )
    lock_text = _read_lock(target, locks_dir)
    template_name = TEMPLATES[target.kind]
    templates_dir = templates_dir or data_root() / "dockerfiles"
    try:
        template_text = (templates_dir / template_name).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"template {templates_dir / template_name} is missing") from None
    resolved = replace(target, glibc=need)
    return RecipeInputs(
        target=resolved,
        base_ref=base_ref,
        template_name=template_name,
        template_text=template_text,
        lock_text=lock_text,
    )


def render_dockerfile(inputs: RecipeInputs, recipe_digest: str | None = None) -> str:
    target = inputs.target
    digest = recipe_digest or inputs.digest()
    recipe_json = json.dumps(target.to_dict(), sort_keys=True, separators=(",", ":"))
    cmd = list(target.launch_flags)
    if target.model:
        cmd = ["--model-path", target.model, *cmd]
    values = {
        "IMGBUILD_VERSION": inputs.imgbuild_version,
        "TARGET": target.name,
        "ENGINE": target.engine,
        "CUDA": target.cuda or "none",
        "TORCH": target.torch or "none",
        "PYTHON": target.python,
        "PLATFORM": target.platform,
        "GLIBC": target.glibc or LOCK_GLIBC,
        "BASE_REF": inputs.base_ref,
        "RECIPE_DIGEST": digest,
        "RECIPE_JSON": recipe_json.replace("\\", "\\\\").replace('"', '\\"'),
        "CMD_JSON": json.dumps(cmd),
    }
    text = inputs.template_text
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    if "{{" in text:
        start = text.index("{{")
        raise UsageError(
            f"template {inputs.template_name}: unknown placeholder {text[start:text.index('}}', start) + 2]!r}",
            hint=f"known: {', '.join(values)}",
        )
    return text


def render_context(inputs: RecipeInputs) -> Rendered:
    digest = inputs.digest()
    dockerfile = render_dockerfile(inputs, digest)
    record = {
        "recipe_digest": digest,
        "imgbuild": inputs.imgbuild_version,
        "base": inputs.base_ref,
        "template": inputs.template_name,
        "lock": inputs.target.lock_name(),
        "target": inputs.target.to_dict(),
    }
    files = {
        "Dockerfile": dockerfile.encode(),
        "requirements.lock": inputs.lock_text.encode(),
        "recipe.json": (json.dumps(record, indent=2, sort_keys=True) + "\n").encode(),
        # the import smoke the sglang template runs after the install (knowledge/sglanginstall.py)
        SMOKE_FILE: IMPORT_SMOKE.encode(),
    }
    return Rendered(
        target=inputs.target,
        recipe_digest=digest,
        tag=image_tag(inputs.target, digest),
        base_ref=inputs.base_ref,
        dockerfile=dockerfile,
        lock_text=inputs.lock_text,
        files=files,
    )


def write_context(rendered: Rendered, out_dir: Path) -> list[Path]:
    """Write the build context; files are replaced atomically, nothing else is touched.

    Each file goes to a temporary name of its own in the same folder (mkstemp), then
    os.replace: concurrent renders into one folder never share a temporary file.
    """
    import tempfile

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        if not out_dir.is_dir():
            raise NotADirectoryError(20, "Not a directory")
        written = []
        for name, content in rendered.files.items():
            path = out_dir / name
            fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(content)
                os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the context from a build run as another user
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            written.append(path)
    except OSError as exc:
        raise UsageError(f"cannot write the build context to {out_dir}: {exc.strerror or exc}",
                         hint="give -o a directory you can write to") from None
    return written


@dataclass(frozen=True, kw_only=True)
class TargetOptions:
    """A target given on the command line (``--engine 0.5.11 --cuda 13.0 ...``)."""

    engine: str
    base: str
    python: str
    cuda: str | None = None
    name: str | None = None  # default: sglang-ENGINE-cuXY
    torch: str | None = None
    glibc: str | None = None
    model: str | None = None
    gpus: str | None = None
    launch_flags: tuple[str, ...] = ()
    platform: str = "linux/amd64"


def target_from_options(options: TargetOptions) -> TargetSpec:
    """The TargetSpec of a target given on the command line."""
    o = options
    return TargetSpec(
        name=o.name or f"sglang-{o.engine}-cu{(o.cuda or 'none').replace('.', '')}",
        kind="sglang",
        engine=o.engine,
        base=o.base,
        python=o.python,
        platform=o.platform,
        cuda=o.cuda,
        torch=o.torch,
        glibc=o.glibc,
        model=o.model,
        gpus=o.gpus,
        launch_flags=o.launch_flags,
        source="command line",
    )


__all__ = [
    "Rendered",
    "find_target",
    "resolve_inputs",
    "render_context",
    "render_dockerfile",
    "write_context",
    "TargetOptions",
    "target_from_options",
    "__version__",
]
