"""Build a rendered target through the engine: skip what exists, tag only on success.

``build_image(engine, options)`` returns a BuildRecord (also written as JSON):
the image, its id, the repository digest where pushed, the recipe digest, how
long it took and the pins. An image whose recipe digest is already present
locally, or in the registry the repository names, is not built again unless
``force``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from imgbuild.knowledge.atomicfile import replace_text
from imgbuild.adapters.caserver import serve_ca_bundle
from imgbuild.adapters.engine import BuildEvent, Engine
from imgbuild.errors import UsageError
from imgbuild.flows.targets import DEFAULT_REPOSITORY
from imgbuild.knowledge.render import Rendered

RECIPE_LABEL = "io.imgbuild.recipe-digest"
CA_URL_ARG = "IMGBUILD_CA_URL"  # the build arg the templates' install step reads
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    rendered: Rendered
    # with a registry host (127.0.0.1:5055/x) the image is pushed; targets.default_repository()
    # adds $IMGBUILD_REGISTRY
    repository: str = DEFAULT_REPOSITORY
    ca_bundle: Path | None = None
    pip_index_url: str | None = None
    force: bool = False
    nocache: bool = False
    record_path: Path | None = None
    on_progress: Callable[[BuildEvent], None] | None = None


@dataclass(frozen=True)
class BuildRecord:
    image: str  # repository:tag
    image_id: str | None
    repo_digest: str | None
    recipe_digest: str
    target: str
    base: str
    skipped: bool
    reason: str
    duration_s: float
    pins: dict[str, str] = field(default_factory=dict)
    record_path: str | None = None
    size_bytes: int | None = None  # the local image's size as the daemon reports it; None when only in a registry

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def registry_host(repository: str) -> str | None:
    """'127.0.0.1:5055/imgbuild/sglang' -> '127.0.0.1:5055'; None for a local name."""
    first = repository.split("/", 1)[0]
    if "/" in repository and ("." in first or ":" in first or first == "localhost"):
        return first
    return None


def lock_pins(lock_text: str) -> dict[str, str]:
    pins = {}
    for line in lock_text.splitlines():
        match = _PIN.match(line)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def default_record_path(tag: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "imgbuild" / "builds" / f"{tag}.json"


def write_record(record: BuildRecord, record_path: Path) -> None:
    text = json.dumps(record.to_dict(), indent=2) + "\n"
    if record_path.exists() and not record_path.is_file():
        record_path.write_text(text, encoding="utf-8")  # a device or pipe: never replace it
    else:
        record_path.parent.mkdir(parents=True, exist_ok=True)
        replace_text(record_path, text)  # two builds of one tag never share a temporary name


def _already_built(engine: Engine, options: BuildOptions, ref: str, push: bool,
                   ) -> tuple[str | None, str | None, str] | None:
    """(image id, repo digest, why) of an image with this recipe digest, named ``ref`` now; None if none."""
    recipe_digest = options.rendered.recipe_digest
    local = engine.image_info(ref)
    if local is not None and local.labels.get(RECIPE_LABEL) == recipe_digest:
        digest = next((d for d in local.repo_digests if d.startswith(options.repository + "@")), None)
        return local.id, digest, "an image with this recipe digest exists locally"
    if push:
        remote = engine.registry_digest(ref)
        if remote:
            return None, f"{options.repository}@{remote}", "an image with this recipe digest is in the registry"
    same = engine.images_with_label(RECIPE_LABEL, recipe_digest)
    if local is None and same:
        # Built before under another name: name it, as a build would have.
        repository, tag = ref.rsplit(":", 1)
        engine.tag(same[0].id, repository, tag)
        repo_digest = engine.push(repository, tag, on_event=options.on_progress) if push else None
        return same[0].id, repo_digest, f"an image with this recipe digest exists locally ({same[0].id[:19]})"
    return None


def _read_ca_bundle(ca_bundle: Path) -> bytes:
    try:
        return ca_bundle.read_bytes()
    except OSError as exc:
        raise UsageError(f"--ca-bundle {ca_bundle}: {exc.strerror}", hint="give a PEM file of CA certificates") from exc


@contextmanager
def build_settings(engine: Engine, ca_bundle: Path | None, pip_index_url: str | None,
                   ) -> Iterator[tuple[dict[str, str], str | None]]:
    """(build args, network mode) for a build of a rendered template, for the length of the block.

    With a CA bundle, the bundle is served on the host's loopback (adapters/caserver.py) and the
    build runs with the host's network; the templates' install step fetches it from the URL in
    IMGBUILD_CA_URL and deletes it in the same step, so no layer and no history entry holds it.
    Without one: no server, the engine's default network, the argument unset (the step skips it)."""
    buildargs = {"PIP_INDEX_URL": pip_index_url} if pip_index_url else {}
    if ca_bundle is None:
        yield buildargs, None
        return
    data = _read_ca_bundle(ca_bundle)
    if not engine.is_local():
        # A remote engine's loopback is not this machine's: its build could not reach the server.
        raise UsageError(
            f"--ca-bundle {ca_bundle}: the engine at {engine.where()} is not on this machine, and the build "
            "fetches the CA bundle from this machine's loopback",
            hint="run imgbuild build on the engine's host (DOCKER_HOST unset or a unix socket there), "
                 "or give --pip-index-url an index the engine reaches without the proxy",
        )
    with serve_ca_bundle(data) as url:
        yield {**buildargs, CA_URL_ARG: url}, "host"


def build_image(engine: Engine, options: BuildOptions) -> BuildRecord:
    """Build (or find) the rendered target's image, tag it, push it where the repository has a host."""
    rendered = options.rendered
    started = time.monotonic()
    ref = f"{options.repository}:{rendered.tag}"
    push = registry_host(options.repository) is not None
    record_path = options.record_path or default_record_path(rendered.tag)

    def finish(image_id: str | None, repo_digest: str | None, skipped: bool, reason: str) -> BuildRecord:
        local = engine.image_info(image_id) if image_id else None
        record = BuildRecord(
            image=ref, image_id=image_id, repo_digest=repo_digest, recipe_digest=rendered.recipe_digest,
            target=rendered.target.name, base=rendered.base_ref, skipped=skipped, reason=reason,
            duration_s=round(time.monotonic() - started, 3), pins=lock_pins(rendered.lock_text),
            record_path=str(record_path), size_bytes=local.size_bytes if local else None,
        )
        write_record(record, record_path)
        return record

    found = None if options.force else _already_built(engine, options, ref, push)
    if found is not None:
        return finish(*found[:2], True, found[2])
    with build_settings(engine, options.ca_bundle, options.pip_index_url) as (buildargs, network_mode):
        image_id = engine.build(
            dict(rendered.files), buildargs=buildargs, nocache=options.nocache, on_event=options.on_progress, what=ref,
            network_mode=network_mode,
        )
    repository, tag = ref.rsplit(":", 1)
    engine.tag(image_id, repository, tag)
    repo_digest = engine.push(repository, tag, on_event=options.on_progress) if push else None
    return finish(image_id, repo_digest, False, "built")
