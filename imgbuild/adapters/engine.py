"""The Docker engine adapter: the only module that imports docker.

Everything the engine says is turned into imgbuild's errors here: no engine ->
EnvironmentUnavailable (exit 3); an unknown image -> UsageError (exit 2); a
failing build step -> BuildFailed (a UsageError: the step, its last output
lines and the fix), or EnvironmentUnavailable when the step failed on the
network (a TLS-intercepting proxy, an unreachable base image).

Builds use the low-level API (``APIClient.build`` with a decoded stream) so the
caller sees every step as it happens through a callback. The image is tagged
only after the build succeeded, so a failed build leaves no half-tagged image.
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import docker
import docker.errors

from imgbuild.errors import EnvironmentUnavailable, ImgbuildError, UsageError
from imgbuild.knowledge.sglanginstall import smoke_from_build_line

_STEP = re.compile(r"^Step (\d+)/(\d+) : (.*)$")
_LAYER = re.compile(r"^ ---> ([0-9a-f]{12,64})$")
_BUILD_TAIL_LINES = 20
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class BuildFailed(UsageError):
    """A build step failed; ``step`` is its Dockerfile line, ``last_lines`` its output."""

    def __init__(self, message: str, *, step: str, last_lines: list[str], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.step = step
        self.last_lines = list(last_lines)


class BuildEnvironmentFailed(EnvironmentUnavailable):
    """A build step failed because the network or the base image was not there."""

    def __init__(self, message: str, *, step: str, last_lines: list[str], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.step = step
        self.last_lines = list(last_lines)


@dataclass(frozen=True)
class BuildEvent:
    """One thing a build reported: a new step, a line of output, or a finished layer."""

    kind: str  # "step" | "output" | "layer" (text: "base", "cached" or "built") | "pull"
    step: int
    total: int
    text: str
    elapsed_s: float
    layer: str | None = None


@dataclass(frozen=True)
class ImageInfo:
    id: str
    tags: tuple[str, ...]
    repo_digests: tuple[str, ...]
    labels: dict[str, str] = field(default_factory=dict)
    env: tuple[str, ...] = ()
    user: str = ""
    size_bytes: int | None = None  # the daemon's Size: the image's uncompressed layers


def _no_engine(exc: Exception) -> EnvironmentUnavailable:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return EnvironmentUnavailable(
        f"no Docker engine answers at DOCKER_HOST={host} ({type(exc).__name__}: {str(exc)[:200]})",
        hint="start one (sudo scripts/services start; eval \"$(scripts/services env)\") or set DOCKER_HOST",
    )


class Engine:
    """A connected Docker engine. Create it with ``connect()``."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client
        self.api: docker.APIClient = client.api

    # -- images ---------------------------------------------------------------

    def image_info(self, ref: str) -> ImageInfo | None:
        """The local image ``ref`` (name:tag, name@digest or id), or None if absent."""
        try:
            data = self.api.inspect_image(ref)
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.APIError as exc:
            if exc.status_code == 404:
                return None
            raise UsageError(f"cannot inspect image {ref!r}: {exc.explanation or exc}") from exc
        except docker.errors.DockerException as exc:
            raise _no_engine(exc) from exc
        config = data.get("Config") or {}
        return ImageInfo(
            id=data["Id"],
            tags=tuple(data.get("RepoTags") or ()),
            repo_digests=tuple(data.get("RepoDigests") or ()),
            labels=dict(config.get("Labels") or {}),
            env=tuple(config.get("Env") or ()),
            user=config.get("User") or "",
            size_bytes=data.get("Size") if isinstance(data.get("Size"), int) else None,
        )

    def require_image(self, ref: str) -> ImageInfo:
        info = self.image_info(ref)
        if info is None:
            raise UsageError(f"image {ref!r} is not in the local engine", hint="build it (imgbuild build) or docker pull it")
        return info

    def images_with_label(self, key: str, value: str) -> list[ImageInfo]:
        try:
            found = self.api.images(filters={"label": f"{key}={value}"})
        except docker.errors.DockerException as exc:
            raise _no_engine(exc) from exc
        infos = [self.image_info(row["Id"]) for row in found]
        return [i for i in infos if i is not None]

    def registry_digest(self, ref: str) -> str | None:
        """The manifest digest of ``ref`` in its registry, or None when it is not there."""
        try:
            data = self.api.inspect_distribution(ref)
        except docker.errors.NotFound:
            return None
        except docker.errors.APIError as exc:
            text = str(exc.explanation or exc).lower()
            if exc.status_code in (401, 403, 404) or "not found" in text or "manifest unknown" in text:
                return None
            raise EnvironmentUnavailable(f"registry for {ref!r} did not answer: {exc.explanation or exc}") from exc
        except docker.errors.DockerException as exc:
            raise _no_engine(exc) from exc
        return (data.get("Descriptor") or {}).get("digest")

    def tag(self, image_id: str, repository: str, tag: str) -> None:
        try:
            self.api.tag(image_id, repository, tag)
        except docker.errors.DockerException as exc:
            raise UsageError(f"cannot tag {image_id} as {repository}:{tag}: {exc}") from exc

    def push(self, repository: str, tag: str, *, on_event: Callable[[BuildEvent], None] | None = None) -> str:
        """Push ``repository:tag``; return the repository digest (``repo@sha256:...``).
        ``on_event`` gets "push" events: each layer's status and bytes done / total."""
        digest = None
        layers, started = LayerProgress(), time.monotonic()
        try:
            for item in self.api.push(repository, tag=tag, stream=True, decode=True):
                if "error" in item:
                    raise EnvironmentUnavailable(
                        f"push of {repository}:{tag} failed: {item['error']}",
                        hint="is the registry running? (scripts/services status)",
                    )
                aux = item.get("aux") or {}
                if aux.get("Digest"):
                    digest = aux["Digest"]
                line = layers.line(item) if on_event is not None else None
                if line and on_event is not None:
                    on_event(BuildEvent("push", 0, 0, line, time.monotonic() - started, item.get("id")))
        except docker.errors.DockerException as exc:
            raise EnvironmentUnavailable(f"push of {repository}:{tag} failed: {exc}") from exc
        if not digest:
            raise EnvironmentUnavailable(f"push of {repository}:{tag} reported no digest")
        return f"{repository}@{digest}"

    def remove_image(self, ref: str) -> None:
        try:
            self.api.remove_image(ref, force=True, noprune=False)
        except docker.errors.ImageNotFound:
            pass
        except docker.errors.DockerException as exc:
            raise UsageError(f"cannot remove image {ref}: {exc}") from exc

    def remove_layers(self, layer_ids: list[str]) -> None:
        """Remove untagged intermediate images of a throwaway build, newest first.

        Without it, a no-cache rebuild leaves a second set of cache candidates
        that later builds may pick, and its COPY --from layers then miss the cache.
        Layers still in use or tagged are left alone."""
        for layer_id in reversed(layer_ids):
            try:
                info = self.api.inspect_image(layer_id)
                if info.get("RepoTags"):
                    continue
                self.api.remove_image(layer_id, force=False, noprune=True)
            except docker.errors.DockerException:
                continue

    # -- builds ---------------------------------------------------------------

    def is_local(self) -> bool:
        """Whether the engine runs on this machine, so its builds can share the host's loopback.

        docker-py names a unix socket (and an npipe) ``http+docker://localhost``; ssh:// and
        tcp:// engines keep their host name."""
        url = urllib.parse.urlsplit(self.api.base_url)
        if url.scheme == "http+docker":
            return url.hostname in ("localhost", "localunixsocket")
        return url.hostname in ("127.0.0.1", "localhost", "::1")

    def where(self) -> str:
        return os.environ.get("DOCKER_HOST") or self.api.base_url

    def build(
        self,
        files: dict[str, bytes],
        *,
        buildargs: dict[str, str] | None = None,
        nocache: bool = False,
        labels: dict[str, str] | None = None,
        on_event: Callable[[BuildEvent], None] | None = None,
        what: str = "image",
        layers_out: list[str] | None = None,
        network_mode: str | None = None,
    ) -> str:
        """Build from an in-memory context; return the image id. Nothing is tagged.

        ``network_mode`` "host" lets the RUN steps reach the host's loopback (the CA server of
        adapters/caserver.py). ``layers_out`` collects the layer (intermediate image) ids of every step
        but FROM, so a throwaway build can be removed with ``remove_layers``."""
        context = _tar_context(files)
        progress = _BuildProgress(what=what, on_event=on_event, layers_out=layers_out)
        try:
            stream: Iterator[dict[str, Any]] = self.api.build(
                fileobj=context,
                custom_context=True,
                encoding=None,
                decode=True,
                rm=True,
                forcerm=True,
                nocache=nocache,
                buildargs=buildargs or {},
                labels=labels,
                network_mode=network_mode,
            )
            for item in stream:
                progress.read(item)
        except docker.errors.BuildError as exc:
            raise progress.error(str(exc)) from exc
        except docker.errors.APIError as exc:
            raise progress.error(str(exc.explanation or exc)) from exc
        except docker.errors.DockerException as exc:
            raise _no_engine(exc) from exc
        if not progress.image_id:
            raise progress.error("the engine reported no image id")
        return progress.image_id

    # -- throwaway containers -------------------------------------------------

    def run_python(self, image_ref: str, code: str, *, timeout_s: float = 300.0) -> tuple[int, str]:
        """Run ``python3 -c code`` (falling back to ``python``) in a throwaway container
        with no GPU and no network; return (exit code, output). The container is removed."""
        return self._run_and_keep(image_ref, code, timeout_s=timeout_s, keep=None)

    def _run_and_keep(
        self, image_ref: str, code: str, *, timeout_s: float, keep: Callable[[Any], None] | None
    ) -> tuple[int, str]:
        self.require_image(image_ref)
        last_error: Exception | None = None
        for python in ("python3", "python"):
            container = None
            try:
                container = self.client.containers.create(
                    image_ref, entrypoint=[python, "-c", code], command=[], network_disabled=True, detach=True
                )
                try:
                    container.start()
                except docker.errors.APIError as exc:  # no such executable in the image
                    last_error = exc
                    if "executable file not found" in str(exc) or "no such file" in str(exc).lower():
                        continue
                    raise
                result = container.wait(timeout=timeout_s)
                output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
                if keep is not None:
                    keep(container)
                return int(result.get("StatusCode", -1)), output
            except docker.errors.ImageNotFound as exc:
                raise UsageError(f"image {image_ref!r} is not in the local engine") from exc
            except docker.errors.DockerException as exc:
                raise EnvironmentUnavailable(f"cannot run a container of {image_ref}: {exc}") from exc
            except Exception as exc:  # requests' ReadTimeout from wait()
                if "timed out" in str(exc).lower():
                    raise EnvironmentUnavailable(f"{image_ref}: python did not finish within {timeout_s:.0f} s") from exc
                raise
            finally:
                if container is not None:
                    try:
                        container.remove(force=True)
                    except docker.errors.DockerException:
                        pass
        raise UsageError(f"image {image_ref!r} has no python3 or python on its PATH ({last_error})")


class LayerProgress:
    """Per-layer bytes done / total from a push or pull stream (``status``, ``id``,
    ``progressDetail: {current, total}``), as one line per layer per status change and per
    quarter of its bytes: the daemon sends an item every few KiB, a 9 GB push tens of thousands."""

    def __init__(self) -> None:
        self.shown: dict[str, tuple[str, int]] = {}

    def line(self, item: dict[str, Any]) -> str | None:
        layer, status = item.get("id"), str(item.get("status") or "")
        if not layer or not status:
            return None
        detail = item.get("progressDetail") or {}
        current, total = detail.get("current"), detail.get("total")
        quarter = int(4 * current / total) if isinstance(current, int) and isinstance(total, int) and total > 0 else -1
        if self.shown.get(layer) == (status, quarter):
            return None
        self.shown[layer] = (status, quarter)
        if quarter < 0:
            return f"{layer}: {status}"
        return f"{layer}: {status} {_size(current)} / {_size(total)}"


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


@dataclass
class _BuildProgress:
    """A build's decoded stream read item by item: the current step, its last output lines,
    the layers made, and the image id once the engine names it."""

    what: str
    on_event: Callable[[BuildEvent], None] | None
    layers_out: list[str] | None
    started: float = field(default_factory=time.monotonic)
    step: int = 0
    total: int = 0
    step_text: str = ""
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=_BUILD_TAIL_LINES))
    image_id: str | None = None
    step_cached: bool = False
    pulls: LayerProgress = field(default_factory=LayerProgress)

    def emit(self, kind: str, text: str, layer: str | None = None) -> None:
        if self.on_event is not None:
            self.on_event(BuildEvent(kind, self.step, self.total, text, time.monotonic() - self.started, layer))

    def error(self, message: str) -> ImgbuildError:
        return _build_error(self.what, self.step, self.total, self.step_text, list(self.tail), message)

    def read(self, item: dict[str, Any]) -> None:
        if "error" in item:
            raise self.error((item.get("errorDetail") or {}).get("message") or item["error"])
        if "aux" in item and isinstance(item["aux"], dict) and item["aux"].get("ID"):
            self.image_id = item["aux"]["ID"]
            return
        if "status" in item:  # pulling the base image
            status = item["status"]
            if item.get("id") and status in ("Downloading", "Pull complete", "Already exists"):
                line = self.pulls.line(item)
                if line:
                    self.emit("pull", line)
            elif not item.get("id"):
                self.emit("pull", status)
            return
        for line in _ANSI.sub("", item.get("stream") or "").splitlines():
            line = line.rstrip()
            if line:
                self._read_line(line)

    def _read_line(self, line: str) -> None:
        match = _STEP.match(line)
        if match:
            self.step, self.total, self.step_text = int(match.group(1)), int(match.group(2)), match.group(3)
            self.tail.clear()
            self.emit("step", self.step_text)
            return
        if line.strip() == "---> Using cache":
            self.step_cached = True
            return
        layer = _LAYER.match(line)
        if layer:
            is_from = self.step_text.upper().startswith("FROM ")
            if self.layers_out is not None and self.step_text and not is_from:
                self.layers_out.append(layer.group(1))
            self.emit("layer", "base" if is_from else "cached" if self.step_cached else "built", layer.group(1))
            self.step_cached = False
            return
        if line.startswith(" ---> Running in ") or line.startswith("Removing intermediate container"):
            return
        if line.startswith("Successfully built "):
            self.image_id = self.image_id or line.split()[-1]
            return
        self.tail.append(line)
        self.emit("output", line)


def connect(*, timeout_s: float = 120.0) -> Engine:
    """The engine at DOCKER_HOST (or the default socket); EnvironmentUnavailable if none answers."""
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except docker.errors.DockerException as exc:
        raise _no_engine(exc) from exc
    except Exception as exc:  # requests' ConnectionError and friends
        raise _no_engine(exc) from exc
    return Engine(client)


def _tar_context(files: dict[str, bytes]) -> io.BytesIO:
    """A reproducible tar of the build context: fixed mtimes, owners and modes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            data = files[name]
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            info.uid = info.gid = 0
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


# Fixes for the failures a build step meets most; first match wins.
_BUILD_FIXES: tuple[tuple[str, str, bool], ...] = (
    (
        "CERTIFICATE_VERIFY_FAILED",
        "the build reaches the package index through a TLS-intercepting proxy: pass --ca-bundle FILE "
        "(e.g. --ca-bundle /etc/ssl/certs/ca-certificates.crt)",
        True,
    ),
    (
        "invalid peer certificate",  # uv's (rustls') words for the same failure
        "the build reaches the package index through a TLS-intercepting proxy: pass --ca-bundle FILE "
        "(e.g. --ca-bundle /etc/ssl/certs/ca-certificates.crt)",
        True,
    ),
    (
        "<urlopen error",  # the install step's fetch of the CA bundle from imgbuild's loopback server
        "the build could not fetch the CA bundle from imgbuild's server on 127.0.0.1: this engine's host network is "
        "not this machine's (rootless Docker, Docker Desktop, a VM): build on the engine's host, or without --ca-bundle "
        "from a --pip-index-url it reaches",
        True,
    ),
    ("DO NOT MATCH THE HASHES", "the lock's hashes do not match the index: regenerate it with `imgbuild lock`", False),
    ("Hashes are required", "every requirement needs --hash: regenerate the lock with `imgbuild lock`", False),
    (
        "No matching distribution",
        "the index has no wheel for this Python/platform: check --pip-index-url and the lock's platform",
        False,
    ),
    ("manifest unknown", "the base image is not in its registry: check the digest (imgbuild bases refresh) or --base", True),
    ("not found: manifest", "the base image is not in its registry: check the digest (imgbuild bases refresh) or --base", True),
    ("pull access denied", "the base image cannot be pulled: check its name, or log in to its registry", True),
    ("dial tcp", "the engine cannot reach the registry of the base image: check the network or pass --base", True),
    ("Temporary failure in name resolution", "the build has no DNS: check the engine's network", True),
    ("Network is unreachable", "the build has no network: check the engine's network", True),
    ("glibc", "choose a base image with a newer glibc (Ubuntu 24.04 has 2.39)", False),
)


def _build_error(what: str, step: int, total: int, step_text: str, tail: list[str], message: str) -> ImgbuildError:
    smoke = next((s for s in map(smoke_from_build_line, reversed(tail)) if s is not None), None)
    if smoke is not None:
        # The template's import smoke said what broke: its root line and packages are the message.
        where = f"step {step}/{total} (the import smoke)" if step else "the import smoke"
        return BuildFailed(f"building {what} failed at {where}: {smoke.reason()}", step=step_text,
                           last_lines=tail, hint=smoke.hint())
    haystack = "\n".join(tail) + "\n" + message
    hint, network = "fix the step above, then rerun the build", False
    for needle, fix, is_network in _BUILD_FIXES:
        if needle.lower() in haystack.lower():
            hint, network = fix, is_network
            break
    where = f"step {step}/{total} ({_short(step_text)})" if step else "before the first step"
    code = re.search(r"returned a non-zero code: (\d+)", message)
    reason = f"exit code {code.group(1)}" if code else _short(message.strip(), 300)
    # The whole tail is on BuildFailed.last_lines (the CLI prints it); the message keeps the last lines.
    last = " | ".join(_short(line, 200) for line in tail[-3:]) if tail else "(no output)"
    text = f"building {what} failed at {where}: {reason}; last output: {last}"
    cls = BuildEnvironmentFailed if network else BuildFailed
    return cls(text, step=step_text, last_lines=tail, hint=hint)



def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- the environment inside an image, read without importing sglang -------------

_FIND_SGLANG = r"""
import json, sys
from importlib import metadata
try:
    dist = metadata.distribution("sglang")
except metadata.PackageNotFoundError:
    print(json.dumps({"found": False, "python": sys.version.split()[0]})); sys.exit(0)
meta = [f for f in (dist.files or []) if str(f).endswith(".dist-info/METADATA")]
site = str(dist.locate_file(""))
path = str(dist.locate_file(meta[0])) if meta else None
if path is None and getattr(dist, "_path", None) is not None:  # no RECORD: the dist-info folder itself
    path = str(dist._path) + "/METADATA"
print(json.dumps({"found": True, "version": dist.version, "site": site, "metadata": path}))
"""


def export_sglang_install(image_ref: str, dest_dir: Path) -> Path:
    """Copy SGLang's METADATA and ``sglang/srt/models/`` out of an image into ``dest_dir``.

    Runs the image's python (``-c``, without importing sglang) in a throwaway
    container with no GPU to find the site-packages, then ``get_archive``s the
    files. Writes ``dest_dir/sglang-V.dist-info/METADATA`` and
    ``dest_dir/sglang/srt/models/*.py``; the container is always removed.
    """
    engine = connect()
    found: dict[str, Any] = {}
    copied: dict[str, bytes] = {}

    def keep(container: Any) -> None:
        lines = [ln for ln in container.logs(stdout=True, stderr=False).decode().splitlines() if ln.startswith("{")]
        if not lines:
            return
        found.update(json.loads(lines[-1]))
        if not found.get("found") or not found.get("metadata"):
            return
        for path in (found["metadata"], str(PurePosixPath(found["site"]) / "sglang" / "srt" / "models")):
            chunks, _ = container.get_archive(path)
            copied[path] = b"".join(chunks)

    status, output = engine._run_and_keep(image_ref, _FIND_SGLANG, timeout_s=120.0, keep=keep)
    if status != 0 or not found:
        raise UsageError(f"{image_ref}: python could not list its packages (exit {status}): {output.strip()[-300:]}")
    if not found.get("found"):
        raise UsageError(f"image {image_ref!r} holds no sglang (python {found.get('python')})", hint="build one with imgbuild build")
    if not found.get("metadata"):
        raise UsageError(f"image {image_ref!r}: sglang {found.get('version')} has no dist-info METADATA")
    version = found["version"]
    meta_dir = dest_dir / f"sglang-{version}.dist-info"
    models_dir = dest_dir / "sglang" / "srt" / "models"
    meta_dir.mkdir(parents=True, exist_ok=True)
    models_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(copied[found["metadata"]])) as tar:
        member = tar.extractfile(tar.getmembers()[0])
        (meta_dir / "METADATA").write_bytes(member.read() if member else b"")
    models_key = str(PurePosixPath(found["site"]) / "sglang" / "srt" / "models")
    with tarfile.open(fileobj=io.BytesIO(copied[models_key])) as tar:
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts
            # The archive's top folder is "models"; keep regular .py files, no escapes.
            if not member.isfile() or not member.name.endswith(".py") or ".." in parts or len(parts) < 2:
                continue
            target = models_dir.joinpath(*parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            data = tar.extractfile(member)
            target.write_bytes(data.read() if data else b"")
    return dest_dir


def image_import_smoke(image_ref: str, *, timeout_s: float = 900.0) -> tuple[int, str]:
    """Run the import smoke (knowledge/sglanginstall.py) in a throwaway container of the image,
    with no GPU and no network; (exit code, output). The container is always removed."""
    from imgbuild.knowledge.sglanginstall import IMPORT_SMOKE

    return connect().run_python(image_ref, IMPORT_SMOKE, timeout_s=timeout_s)


# Walks the environment the image's python runs in (sys.prefix: the venv) and
# prints one JSON document: per distribution (name, version, a hash over its
# files) and per file a content hash. Bytecode and mtimes are ignored.
_ENV_MANIFEST = r"""
import hashlib, json, os, sys
from importlib import metadata
prefix = sys.prefix
def skip(rel):
    return rel.endswith((".pyc", ".pyo")) or "/__pycache__/" in "/" + rel + "/"
files = {}
for root, dirs, names in os.walk(prefix):
    dirs.sort()
    for name in sorted(names):
        path = os.path.join(root, name)
        rel = os.path.relpath(path, prefix)
        if skip(rel):
            continue
        if os.path.islink(path):
            files[rel] = "link:" + os.readlink(path)
        elif os.path.isfile(path):
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            files[rel] = h.hexdigest()
packages = {}
for dist in metadata.distributions():
    location = str(dist.locate_file(""))
    if not os.path.realpath(location).startswith(os.path.realpath(prefix)):
        continue
    h = hashlib.sha256()
    for f in sorted(str(p) for p in (dist.files or [])):
        full = os.path.relpath(os.path.realpath(str(dist.locate_file(f))), os.path.realpath(prefix))
        if skip(full):
            continue
        h.update((full + " " + files.get(full, "missing") + "\n").encode())
    packages[dist.metadata["Name"].lower().replace("_", "-")] = {"version": dist.version, "sha256": h.hexdigest()}
print(json.dumps({"prefix": prefix, "python": sys.version.split()[0], "packages": packages, "files": files}))
"""


def environment_manifest(engine: Engine, image_ref: str) -> dict[str, Any]:
    """Installed packages (name, version, hash) and file content hashes of an image's Python environment."""
    status, output = engine.run_python(image_ref, _ENV_MANIFEST, timeout_s=600.0)
    lines = [ln for ln in output.splitlines() if ln.startswith("{")]
    if status != 0 or not lines:
        raise UsageError(f"{image_ref}: could not read its Python environment (exit {status}): {output.strip()[-300:]}")
    return json.loads(lines[-1])


# --- containers for certify ---------------------------------------------------------
# Start an SGLang server container, follow its log, read its state, remove it.
# Everything docker-specific for certify lives here.

CERTIFY_LABEL = "io.imgbuild.certify"  # every certify container carries it (value: the run id)


@dataclass(frozen=True, kw_only=True)
class ServerContainerSpec:
    image: str
    name: str
    entrypoint: tuple[str, ...]
    command: tuple[str, ...]
    container_port: int
    host_port: int  # published on 127.0.0.1 only
    labels: dict[str, str]
    gpu_uuids: tuple[str, ...] = ()  # empty: no device request (no GPU attached)
    mounts: tuple[tuple[str, str, bool], ...] = ()  # (host path, container path, read-only)
    environment: dict[str, str] = field(default_factory=dict)
    ipc_host: bool = True  # NCCL keeps its buffers in /dev/shm; ipc=host lifts the 64 MiB default
    shm_size: str | None = None  # used when ipc_host is False


def image_for_certify(engine: Engine, ref: str) -> ImageInfo:
    """The image, pulled first when the engine does not have it."""
    info = engine.image_info(ref)
    if info is not None:
        return info
    try:
        engine.client.images.pull(ref)
    except docker.errors.ImageNotFound:
        raise UsageError(f"image {ref} is neither on the engine nor pullable", hint="build it (imgbuild build) or push it") from None
    except docker.errors.APIError as exc:
        raise UsageError(f"image {ref}: {exc.explanation or exc}") from exc
    except docker.errors.DockerException as exc:
        raise _no_engine(exc) from exc
    return engine.require_image(ref)


def start_server_container(engine: Engine, spec: ServerContainerSpec) -> str:
    """Create and start the container; a container that fails to start is removed
    before the error is raised (testcontainers' rule)."""
    from docker.types import DeviceRequest, Mount

    kwargs: dict[str, Any] = {
        "name": spec.name,
        "entrypoint": list(spec.entrypoint),
        "command": list(spec.command),
        "labels": dict(spec.labels),
        "environment": dict(spec.environment),
        "ports": {f"{spec.container_port}/tcp": ("127.0.0.1", spec.host_port)},
        "mounts": [Mount(target=c, source=h, type="bind", read_only=ro) for h, c, ro in spec.mounts],
    }
    if spec.ipc_host:
        kwargs["ipc_mode"] = "host"
    elif spec.shm_size:
        kwargs["shm_size"] = spec.shm_size
    if spec.gpu_uuids:
        kwargs["device_requests"] = [
            DeviceRequest(driver="nvidia", device_ids=list(spec.gpu_uuids), capabilities=[["gpu"]])
        ]
    container = None
    try:
        container = engine.client.containers.create(spec.image, **kwargs)
        container.start()
    except docker.errors.APIError as exc:
        if container is not None:
            remove_container(engine, container.id)
        raise EnvironmentUnavailable(
            f"cannot start {spec.image}: {exc.explanation or exc}",
            hint=("GPUs need the NVIDIA container toolkit on the engine host (certify --no-gpus runs a "
                  "stand-in image without them)") if spec.gpu_uuids else None,
        ) from exc
    except docker.errors.DockerException as exc:
        if container is not None:
            remove_container(engine, container.id)
        raise _no_engine(exc) from exc
    return str(container.id)


def follow_container_log(engine: Engine, container_id: str) -> Iterator[str]:
    """This container's stdout+stderr, line by line, from its start until it stops."""

    try:
        stream = engine.api.logs(container_id, stream=True, follow=True, stdout=True, stderr=True)
    except docker.errors.APIError as exc:
        raise EnvironmentUnavailable(f"cannot read the log of {container_id[:12]}: {exc}") from exc
    except docker.errors.DockerException as exc:
        raise _no_engine(exc) from exc
    pending = b""
    try:
        for chunk in stream:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.decode("utf-8", errors="replace").rstrip("\r")
    except docker.errors.APIError:
        pass  # removed while following: the log simply ends
    if pending:
        yield pending.decode("utf-8", errors="replace")


def container_state(engine: Engine, container_id: str) -> tuple[str, int | None]:
    """(status, exit code): ('running', None), ('exited', 1), ('gone', None)."""

    try:
        state = engine.api.inspect_container(container_id)["State"]
    except docker.errors.NotFound:
        return "gone", None
    except docker.errors.APIError as exc:
        raise EnvironmentUnavailable(f"cannot inspect {container_id[:12]}: {exc}") from exc
    except docker.errors.DockerException as exc:
        raise _no_engine(exc) from exc
    status = str(state.get("Status", "unknown"))
    return status, (int(state["ExitCode"]) if status in ("exited", "dead") else None)


def remove_container(engine: Engine, container_id: str, *, stop_timeout_s: int = 10) -> bool:
    """Stop (SIGTERM, then SIGKILL after stop_timeout_s) and remove; True when it is gone."""

    try:
        engine.api.stop(container_id, timeout=stop_timeout_s)
    except docker.errors.NotFound:
        return True
    except docker.errors.APIError:
        pass  # already stopping or dead; remove(force) below settles it
    except docker.errors.DockerException as exc:
        raise _no_engine(exc) from exc
    try:
        engine.api.remove_container(container_id, force=True, v=True)
    except docker.errors.NotFound:
        return True
    except docker.errors.APIError as exc:
        if "already in progress" not in str(exc):
            return False
    except docker.errors.DockerException as exc:
        raise _no_engine(exc) from exc
    return container_state(engine, container_id)[0] == "gone"


def containers_labelled(engine: Engine, label: str, value: str | None = None) -> list[str]:
    """Ids of all containers (running or not) carrying ``label`` (``=value`` if given)."""
    selector = label if value is None else f"{label}={value}"
    try:
        return [c["Id"] for c in engine.api.containers(all=True, filters={"label": selector})]
    except docker.errors.APIError as exc:
        raise EnvironmentUnavailable(f"cannot list containers: {exc}") from exc
    except docker.errors.DockerException as exc:
        raise _no_engine(exc) from exc


def image_entrypoint(engine: Engine, ref: str) -> tuple[str, ...]:
    """The image's ENTRYPOINT (empty when it has none)."""
    try:
        config = engine.api.inspect_image(ref).get("Config") or {}
    except docker.errors.DockerException as exc:
        raise _no_engine(exc) from exc
    return tuple(config.get("Entrypoint") or ())


# Runs inside the server container: one HTTP request to the server on its own loopback,
# answered as one JSON line. Used when the engine is remote (DOCKER_HOST=ssh://, tcp://),
# where the port published on the engine host's 127.0.0.1 is out of this machine's reach.
_EXEC_HTTP = r"""
import base64, json, sys, urllib.request, urllib.error
method, url, body, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
req = urllib.request.Request(url, data=base64.b64decode(body) if body else None, method=method,
                             headers={"Content-Type": "application/json"} if body else {})
try:
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        status, data = resp.status, resp.read()
except urllib.error.HTTPError as exc:
    status, data = exc.code, exc.read()
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"})); sys.exit(0)
print(json.dumps({"status": status, "body": base64.b64encode(data).decode()}))
"""


@dataclass(frozen=True, kw_only=True)
class ExecHttpRequest:
    """One HTTP request for ``exec_http`` to make inside a container."""

    method: str
    port: int  # the server's port inside the container
    path: str
    body: bytes | None = None
    timeout_s: float = 30.0
    python: str = "python3"  # the container's interpreter that makes the request


def exec_http(engine: Engine, container_id: str, request: ExecHttpRequest) -> tuple[int, bytes] | None:
    """One HTTP request made from inside the container to 127.0.0.1:port; (status, body),
    or None when nothing answered (not listening yet, refused, timed out)."""
    import base64

    body = request.body
    cmd = [request.python, "-c", _EXEC_HTTP, request.method, f"http://127.0.0.1:{request.port}{request.path}",
           base64.b64encode(body).decode() if body else "", str(request.timeout_s)]
    try:
        exec_id = engine.api.exec_create(container_id, cmd, stdout=True, stderr=True)["Id"]
        output = engine.api.exec_start(exec_id).decode("utf-8", "replace")
    except docker.errors.NotFound:
        return None
    except docker.errors.APIError as exc:
        if exc.status_code == 409:  # the container is not running (any more)
            return None
        raise EnvironmentUnavailable(f"cannot exec in {container_id[:12]}: {exc.explanation or exc}") from exc
    except docker.errors.DockerException as exc:
        raise _no_engine(exc) from exc
    lines = [ln for ln in output.splitlines() if ln.startswith("{")]
    if not lines:
        return None
    answer = json.loads(lines[-1])
    if "status" not in answer:
        return None
    return int(answer["status"]), base64.b64decode(answer["body"])


def run_with_all_gpus(engine: Engine, image_ref: str, command: list[str], *, timeout_s: float = 120.0,
                      gpus: bool = True) -> tuple[int, str]:
    """Run ``command`` once in a throwaway container of ``image_ref`` (with every GPU of the
    engine's host when ``gpus``); (exit code, output). The container is always removed."""
    from docker.types import DeviceRequest

    kwargs: dict[str, Any] = {"entrypoint": [command[0]], "command": command[1:], "network_disabled": True,
                              "labels": {CERTIFY_LABEL: "gpu-probe"}}
    if gpus:
        # "utility" makes the NVIDIA runtime put nvidia-smi into the container
        kwargs["device_requests"] = [DeviceRequest(driver="nvidia", count=-1, capabilities=[["gpu", "utility"]])]
    container = None
    try:
        container = engine.client.containers.create(image_ref, **kwargs)
        container.start()
        result = container.wait(timeout=timeout_s)
        output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        return int(result.get("StatusCode", -1)), output
    except docker.errors.ImageNotFound as exc:
        raise UsageError(f"image {image_ref!r} is not on the engine") from exc
    except docker.errors.DockerException as exc:
        raise EnvironmentUnavailable(f"cannot run {command[0]} in {image_ref}: {exc}") from exc
    finally:
        if container is not None:
            remove_container(engine, container.id, stop_timeout_s=1)


# --- push for publish ----------------------------------------------------------
# Push with explicit credentials and per-layer progress.


class PushAdapter:
    """What imgbuild.flows.publish needs from the engine: find images, push with credentials.

    Credentials go to the engine in the X-Registry-Auth header of the push call
    only; they are not kept, logged or put into an error message.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def inspect_image(self, ref: str) -> ImageInfo | None:
        return self.engine.image_info(ref)

    def images_with_label(self, key: str, value: str) -> list[ImageInfo]:
        """Oldest first (by the engine's Created time)."""
        try:
            rows = self.engine.api.images(filters={"label": f"{key}={value}"})
        except docker.errors.DockerException as exc:
            raise _no_engine(exc) from exc
        def created(image_id: str) -> str:
            # RFC 3339 with nanoseconds ("...T16:20:01.5Z"); the list's Created is whole seconds only.
            try:
                stamp = str(self.engine.api.inspect_image(image_id).get("Created", ""))
            except docker.errors.DockerException:
                return ""
            head, _, frac = stamp.rstrip("Z").partition(".")
            return f"{head}.{frac.split('+')[0]:0<9}"

        ids = sorted((row["Id"] for row in rows), key=created)
        infos = [self.engine.image_info(image_id) for image_id in ids]
        return [i for i in infos if i is not None]

    def push_image(self, image_id: str, repository: str, tag: str, *, credentials: Any = None,
                   progress: Callable[[str], None] | None = None) -> str:
        """Tag ``image_id`` as repository:tag and push it; return the manifest digest."""
        self.engine.tag(image_id, repository, tag)
        auth = None
        if credentials is not None:
            auth = {"username": credentials.username, "password": credentials.password,
                    "serveraddress": repository.split("/", 1)[0]}
        digest = None
        seen: dict[str, str] = {}
        try:
            for item in self.engine.api.push(repository, tag=tag, stream=True, decode=True, auth_config=auth):
                if "error" in item:
                    raise _push_error(repository, tag, str(item.get("error")))
                aux = item.get("aux") or {}
                if aux.get("Digest"):
                    digest = aux["Digest"]
                layer, status = item.get("id"), item.get("status", "")
                if progress is not None and layer and status and seen.get(layer) != status:
                    seen[layer] = status
                    detail = item.get("progressDetail") or {}
                    size = f" ({detail['total'] / 2**20:.1f} MiB)" if detail.get("total") else ""
                    progress(f"  layer {layer}: {status}{size}")
        except docker.errors.DockerException as exc:
            raise _push_error(repository, tag, str(getattr(exc, "explanation", None) or exc)) from exc
        if not digest:
            raise EnvironmentUnavailable(f"push of {repository}:{tag} reported no digest")
        return digest


def _push_error(repository: str, tag: str, message: str) -> EnvironmentUnavailable:
    lowered = message.lower()
    if "unauthorized" in lowered or "authentication required" in lowered or "denied" in lowered:
        hint = "check --username/--password-stdin or docker login for this registry"
    elif "certificate" in lowered or "x509" in lowered:
        hint = f"the engine does not trust the registry's CA: put it in /etc/docker/certs.d/{repository.split('/', 1)[0]}/ca.crt"
    else:
        hint = "is the registry running and reachable from the engine?"
    return EnvironmentUnavailable(f"push of {repository}:{tag} failed: {message.strip()[:300]}", hint=hint)
