"""verify-repro: rebuild an image from its recipe without cache and compare environments.

The image's labels hold its recipe (the target, as JSON) and its recipe digest;
the recipe is rendered again from the matrix's bases and the locks, and must
give the same digest (else the inputs changed and a comparison means nothing).
The rebuild's installed packages (name, version, a hash over their files) and
the content hashes of every file of the Python environment are compared with
the original's; mtimes and bytecode are ignored. The rebuilt image is removed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imgbuild.adapters.engine import BuildEvent, Engine, environment_manifest
from imgbuild.errors import UsageError
from imgbuild.flows.build import build_settings
from imgbuild.knowledge.recipe import BaseSpec, TargetSpec
from imgbuild.knowledge.render import render_context, resolve_inputs
from imgbuild.knowledge.specs import EngineSpec

RECIPE_LABEL = "io.imgbuild.recipe"
DIGEST_LABEL = "io.imgbuild.recipe-digest"


@dataclass(frozen=True, kw_only=True)
class ReproOptions:
    image: str
    bases: dict[str, BaseSpec]
    engine_spec: Callable[[str], EngineSpec | None]  # SGLang version -> its matrix row, if any
    locks_dir: Path
    ca_bundle: Path | None = None
    pip_index_url: str | None = None
    keep_rebuild: bool = False
    on_progress: Callable[[BuildEvent], None] | None = None


@dataclass(frozen=True)
class ReproReport:
    image: str
    rebuilt_id: str
    recipe_digest: str
    identical: bool
    packages_compared: int
    files_compared: int
    differences: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "image": self.image,
            "rebuilt_id": self.rebuilt_id,
            "recipe_digest": self.recipe_digest,
            "identical": self.identical,
            "packages_compared": self.packages_compared,
            "files_compared": self.files_compared,
            "differences": self.differences,
        }


def compare_manifests(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """Every difference between two environment manifests, one line each, sorted."""
    out: list[str] = []
    a_pk, b_pk = first.get("packages", {}), second.get("packages", {})
    for name in sorted(set(a_pk) | set(b_pk)):
        a, b = a_pk.get(name), b_pk.get(name)
        if a is None:
            out.append(f"package {name} {b['version']}: only in the rebuild")
        elif b is None:
            out.append(f"package {name} {a['version']}: only in the original")
        elif a["version"] != b["version"]:
            out.append(f"package {name}: version {a['version']} != {b['version']}")
        elif a["sha256"] != b["sha256"]:
            out.append(f"package {name} {a['version']}: files differ")
    a_f, b_f = first.get("files", {}), second.get("files", {})
    for path in sorted(set(a_f) | set(b_f)):
        a, b = a_f.get(path), b_f.get(path)
        if a is None:
            out.append(f"file {path}: only in the rebuild")
        elif b is None:
            out.append(f"file {path}: only in the original")
        elif a != b:
            out.append(f"file {path}: content {a[:12]} != {b[:12]}")
    return out


def verify_repro(engine: Engine, options: ReproOptions) -> ReproReport:
    info = engine.require_image(options.image)
    recipe_json = info.labels.get(RECIPE_LABEL)
    digest = info.labels.get(DIGEST_LABEL)
    if not recipe_json or not digest:
        raise UsageError(
            f"image {options.image!r} has no {RECIPE_LABEL} label",
            hint="verify-repro works on images built by imgbuild build",
        )
    try:
        target = TargetSpec.from_dict(json.loads(recipe_json))
    except (ValueError, TypeError) as exc:
        raise UsageError(f"image {options.image!r}: label {RECIPE_LABEL} is not a recipe: {exc}") from exc
    inputs = resolve_inputs(
        target, bases=options.bases, engine=options.engine_spec(target.engine), locks_dir=options.locks_dir
    )
    rendered = render_context(inputs)
    if rendered.recipe_digest != digest:
        raise UsageError(
            f"the recipe of {options.image} changed since it was built: {digest} then, {rendered.recipe_digest} now",
            hint="the template, lock, base or imgbuild version differ: check out the commit it was built from",
        )
    layers: list[str] = []
    with build_settings(engine, options.ca_bundle, options.pip_index_url) as (buildargs, network_mode):
        rebuilt = engine.build(
            dict(rendered.files),
            buildargs=buildargs,
            nocache=True,
            on_event=options.on_progress,
            what=f"{options.image} (rebuild)",
            layers_out=layers,
            network_mode=network_mode,
        )
    try:
        original = environment_manifest(engine, info.id)
        again = environment_manifest(engine, rebuilt)
    finally:
        if not options.keep_rebuild and rebuilt != info.id:
            engine.remove_layers(layers)
    differences = compare_manifests(original, again)
    return ReproReport(
        image=options.image,
        rebuilt_id=rebuilt,
        recipe_digest=digest,
        identical=not differences,
        packages_compared=len(original.get("packages", {})),
        files_compared=len(original.get("files", {})),
        differences=differences,
    )
