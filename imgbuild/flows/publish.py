"""Publish certified images with their certificates, and verify them from a registry.

publish: the image goes to the registry through the Docker engine (its push
knows layers, mounts and resumes); the certificate goes next to it through the
registry's HTTP API as an OCI 1.1 artifact whose ``subject`` is the image's
manifest, so anyone can ask the registry for the proof with the image's digest:

    manifest (artifactType application/vnd.imgbuild.certificate.v1+json)
      config  = the empty descriptor (application/vnd.oci.empty.v1+json, "{}")
      layers  = [the certificate JSON, byte for byte as certify wrote it]
      subject = the image manifest's descriptor

Binding: a certificate belongs to an image when the digest it recorded is the
manifest digest in the registry, or (for a certificate made before the image was
ever pushed) the image id it recorded is the manifest's config digest, which is
the same content address. ``verify`` checks both sides: the artifact's subject
is this manifest, and the certificate inside names this image.

Idempotent: nothing is pushed when the registry already has it; artifacts are
canonical JSON without timestamps of their own, so the same certificate gives the
same artifact digest. An interrupted publish leaves nothing that points at a
missing blob (the registry refuses such manifests), and the next run completes it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from imgbuild.errors import NegativeVerdict, UsageError
from imgbuild.adapters.registry import Credentials, Descriptor, Reference, RegistryClient, parse_reference

CERT_ARTIFACT_TYPE = "application/vnd.imgbuild.certificate.v1+json"
UNCERTIFIED_ARTIFACT_TYPE = "application/vnd.imgbuild.uncertified.v1+json"
LABEL_RECIPE_DIGEST = "io.imgbuild.recipe-digest"
LABEL_RECIPE = "io.imgbuild.recipe"
LABEL_TARGET = "io.imgbuild.target"
LABEL_ENGINE = "io.imgbuild.engine"
LABEL_CUDA = "io.imgbuild.cuda"
# certify's verdicts: "pass", "pass-unattested" (ran without the NVIDIA driver or GPUs
# attached: the certificate lists the gaps, verify prints them), "fail".
PASSING = ("pass", "pass-unattested")
_TAG_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")

Progress = Callable[[str], None]


# --- what publish needs from the engine (imgbuild.adapters.engine implements it) ------------


class LocalImage(Protocol):
    """A local image as the engine describes it (imgbuild.adapters.engine.ImageInfo)."""

    id: str  # sha256:... (the config digest)
    repo_digests: tuple[str, ...]  # "host/repo@sha256:..."
    labels: Mapping[str, str]


def image_digests(image: LocalImage) -> set[str]:
    return {ref.split("@", 1)[1] for ref in image.repo_digests if "@" in ref}


class PushEngine(Protocol):
    """imgbuild.adapters.engine.PushAdapter."""

    def inspect_image(self, ref: str) -> LocalImage | None: ...

    def images_with_label(self, key: str, value: str) -> Sequence[LocalImage]:
        """Oldest first."""
        ...

    def push_image(
        self, image_id: str, repository: str, tag: str, *, credentials: Credentials | None, progress: Progress | None
    ) -> str:
        """Tag ``image_id`` as repository:tag, push it, return the manifest digest."""
        ...


# --- certificates --------------------------------------------------------------------


def cert_image(cert: Mapping[str, Any]) -> Mapping[str, Any]:
    image = cert.get("image")
    return image if isinstance(image, Mapping) else {}


def cert_digests(cert: Mapping[str, Any]) -> set[str]:
    """Every manifest digest the certificate names for its image."""
    image = cert_image(cert)
    found: set[str] = set()
    for key in ("repo_digest", "repository_digest", "digest", "manifest_digest"):
        value = image.get(key)
        if isinstance(value, str) and "sha256:" in value:
            found.add("sha256:" + value.split("sha256:", 1)[1][:64])
    for value in image.get("repo_digests") or []:
        if isinstance(value, str) and "sha256:" in value:
            found.add("sha256:" + value.split("sha256:", 1)[1][:64])
    return found


def cert_image_id(cert: Mapping[str, Any]) -> str | None:
    image = cert_image(cert)
    value = image.get("id") or image.get("image_id")
    return str(value) if value else None


def cert_passed(cert: Mapping[str, Any]) -> bool:
    return str(cert.get("verdict", "")).lower() in PASSING


def cert_target_name(cert: Mapping[str, Any]) -> str | None:
    target = cert.get("target")
    if isinstance(target, Mapping):
        return target.get("name")
    return str(target) if target else None


def cert_flags(cert: Mapping[str, Any]) -> list[str]:
    target = cert.get("target") if isinstance(cert.get("target"), Mapping) else {}
    for source in (target.get("launch_flags"), cert.get("flags")):
        if isinstance(source, list):
            return [str(x) for x in source]
    return []


def cert_gpus(cert: Mapping[str, Any]) -> list[str]:
    hardware = cert.get("hardware") if isinstance(cert.get("hardware"), Mapping) else {}
    gpus = hardware.get("gpus") or hardware.get("devices") or []
    return [str(g.get("name", "?")) if isinstance(g, Mapping) else str(g) for g in gpus]


def cert_driver(cert: Mapping[str, Any]) -> str | None:
    hardware = cert.get("hardware") if isinstance(cert.get("hardware"), Mapping) else {}
    return hardware.get("driver_version") or hardware.get("driver")


def bound_to(cert: Mapping[str, Any], *, digest: str | None, image_id: str | None) -> bool:
    if digest and digest in cert_digests(cert):
        return True
    return bool(image_id) and not cert_digests(cert) and cert_image_id(cert) == image_id


def certificates_for(certs: Iterable[Mapping[str, Any]], image: LocalImage) -> list[Mapping[str, Any]]:
    """The certificates that name this local image (by a repo digest, or by id when they name no digest)."""
    digests = image_digests(image)
    out = []
    for cert in certs:
        named = cert_digests(cert)
        if named & digests or cert_image_id(cert) == image.id:
            out.append(cert)
    return out


# --- tags ---------------------------------------------------------------------------


def _gpu_slug(gpus: str) -> str:
    match = re.match(r"^(.*?)\s*[xX×]\s*(\d+)$", gpus.strip())
    name, count = (match.group(1), match.group(2)) if match else (gpus, "1")
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and w not in ("nvidia", "rtx", "geforce", "tesla")]
    return "-".join(words) + f"x{count}"


def _flag_value(flags: Sequence[str], names: tuple[str, ...]) -> str | None:
    for i, flag in enumerate(flags):
        for name in names:
            if flag == name and i + 1 < len(flags):
                return flags[i + 1]
            if flag.startswith(name + "="):
                return flag.split("=", 1)[1]
    return None


def describe_tag(labels: Mapping[str, str]) -> str:
    """A tag that says what is inside, from the image's own labels:
    ``sglang0.5.11-cu13.0-qwen3.6-27b-tp2-a6000x2``."""
    engine = labels.get(LABEL_ENGINE)
    if not engine:
        raise UsageError("the image has no io.imgbuild.engine label: it was not built by imgbuild",
                         hint="build it with `imgbuild build TARGET`")
    try:
        target = json.loads(labels.get(LABEL_RECIPE) or "{}")
    except ValueError:
        target = {}
    parts = [f"sglang{engine}"]
    cuda = labels.get(LABEL_CUDA)
    if cuda and cuda != "none":
        parts.append(f"cu{cuda}")
    if target.get("model"):
        parts.append(str(target["model"]).rstrip("/").rsplit("/", 1)[-1].lower())
        tp = _flag_value(target.get("launch_flags") or [], ("--tp", "--tp-size", "--tensor-parallel-size"))
        if tp:
            parts.append(f"tp{tp}")
    if target.get("gpus"):
        parts.append(_gpu_slug(str(target["gpus"])))
    if not target.get("model") and not target.get("gpus") and labels.get(LABEL_TARGET):
        parts.append(labels[LABEL_TARGET])
    tag = _TAG_CHARS.sub("-", "-".join(parts)).strip("-.")
    return tag[:110]


def publish_tags(labels: Mapping[str, str], *, uncertified: bool) -> list[str]:
    """The descriptive tag and the same with the recipe digest: ``...-r<12 hex>``."""
    base = describe_tag(labels)
    if uncertified:
        base += "-uncertified"
    tags = [base]
    recipe = labels.get(LABEL_RECIPE_DIGEST, "")
    if recipe.startswith("sha256:"):
        tags.append(f"{base}-r{recipe.split(':', 1)[1][:12]}")
    return tags


# --- publish ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PublishOptions:
    source: str  # a local image reference, or a target name from matrix.yaml
    destination: str  # HOST[:PORT]/REPO
    allow_uncertified: bool = False
    targets: tuple[str, ...] = ()  # target names known to the matrix (so SOURCE can be one)


@dataclass(frozen=True)
class PublishResult:
    image_id: str
    repository: str  # HOST[:PORT]/REPO
    digest: str
    tags: list[str]
    certificates: list[dict[str, Any]]  # {"id", "artifact", "verdict", "target"}
    uncertified: bool
    changed: bool
    actions: list[str] = field(default_factory=list)

    @property
    def reference(self) -> str:
        return f"{self.repository}@{self.digest}"

    def to_dict(self) -> dict[str, Any]:
        return {"image_id": self.image_id, "repository": self.repository, "digest": self.digest,
                "reference": self.reference, "tags": self.tags, "certificates": self.certificates,
                "uncertified": self.uncertified, "changed": self.changed, "actions": self.actions}


def find_local_image(source: str, *, engine: PushEngine, targets: Sequence[str] = ()) -> LocalImage:
    if source in targets:
        found = engine.images_with_label(LABEL_TARGET, source)
        if not found:
            raise UsageError(f"target {source!r} has no image built on this engine",
                             hint=f"run `imgbuild build {source}` first")
        return found[-1]  # the newest build
    image = engine.inspect_image(source)
    if image is None:
        hint = "build it, or pull it, first" + (f"; targets: {', '.join(targets)}" if targets else "")
        raise UsageError(f"image {source!r} is not on this engine and is not a target in matrix.yaml", hint=hint)
    return image


def publish_image(
    opts: PublishOptions,
    *,
    engine: PushEngine,
    registry: RegistryClient,
    certificates: Iterable[Mapping[str, Any]],
    progress: Progress | None = None,
) -> PublishResult:
    say = progress or (lambda line: None)
    dest = _destination(opts, registry)
    image = find_local_image(opts.source, engine=engine, targets=opts.targets)
    passing = _passing_certificates(opts, image, certificates)
    uncertified = not passing
    tags = publish_tags(image.labels, uncertified=uncertified)
    registry.ping()  # wrong credentials fail here, before the engine pushes anything
    pub = _Publication(registry=registry, dest=dest, image=image, say=say)
    digest = pub.push(engine, tags, progress)
    subject = registry.head_manifest(dest.repository, digest)
    if subject is None:
        raise UsageError(f"{dest.name}@{digest} is not in the registry after the push")
    manifest = registry.get_manifest(dest.repository, digest)
    config_digest = (manifest.data.get("config") or {}).get("digest") if manifest else None
    if uncertified:
        pub.mark_uncertified(subject, digest)
    attached = [pub.attach_certificate(cert, subject, digest, config_digest) for cert in passing]
    return PublishResult(image_id=image.id, repository=dest.name, digest=digest, tags=tags, certificates=attached,
                         uncertified=uncertified, changed=bool(pub.actions), actions=pub.actions)


def _destination(opts: PublishOptions, registry: RegistryClient) -> Reference:
    dest = parse_reference(opts.destination, require_host=True)
    if dest.tag or dest.digest:
        raise UsageError(f"--to {opts.destination}: give HOST[:PORT]/REPO without a tag or digest",
                         hint="imgbuild chooses the tags from the image's labels")
    if dest.host != registry.host:
        raise UsageError(f"--to {opts.destination} is on {dest.host}, the registry client is for {registry.host}")
    return dest


def _passing_certificates(
    opts: PublishOptions, image: LocalImage, certificates: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The image's passing certificates; NegativeVerdict when it has none and
    uncertified images are not allowed."""
    mine = certificates_for(certificates, image)
    passing = [c for c in mine if cert_passed(c)]
    if not passing and not opts.allow_uncertified:
        detail = (f"its {len(mine)} certificate(s) did not pass ({', '.join(str(c.get('verdict')) for c in mine)})"
                  if mine else "no certificate names its digest or id")
        raise NegativeVerdict(
            f"image {opts.source} ({image.id[:19]}) is not certified: {detail}",
            hint="run `imgbuild certify` on it, or pass --allow-uncertified to publish it marked as uncertified",
        )
    return passing


@dataclass
class _Publication:
    """One image going to one repository, and what was done for it."""

    registry: RegistryClient
    dest: Reference
    image: LocalImage
    say: Progress
    actions: list[str] = field(default_factory=list)

    def push(self, engine: PushEngine, tags: Sequence[str], progress: Progress | None) -> str:
        """Push the image under every tag; skip the engine's push when every tag already
        names a manifest of this image. Returns the manifest digest."""
        image, dest = self.image, self.dest
        digest = _already_pushed(self.registry, dest.repository, tags, image.id)
        if digest:
            self.say(f"image {image.id[:19]} already at {dest.name}:{tags[0]} ({digest[:19]})")
            return digest
        for tag in tags:
            self.say(f"pushing {image.id[:19]} as {dest.name}:{tag}")
            pushed = engine.push_image(image.id, dest.name, tag, credentials=self.registry.credentials,
                                       progress=progress)
            if digest and pushed != digest:
                raise UsageError(f"the engine pushed {tag} as {pushed}, the first tag as {digest}")
            digest = pushed
            self.actions.append(f"pushed {dest.name}:{tag}")
        assert digest
        return digest

    def mark_uncertified(self, subject: Descriptor, digest: str) -> None:
        note = {"uncertified": True, "reason": "published with --allow-uncertified", "image_id": self.image.id,
                "digest": digest, "recipe_digest": self.image.labels.get(LABEL_RECIPE_DIGEST)}
        desc, changed = self.registry.attach_artifact(
            self.dest.repository, subject=subject, artifact_type=UNCERTIFIED_ARTIFACT_TYPE,
            payload=json.dumps(note, sort_keys=True).encode(), payload_media_type="application/json",
            annotations={"io.imgbuild.certified": "false", "io.imgbuild.image.digest": digest},
            title="uncertified.json")
        if changed:
            self.actions.append(f"marked {digest[:19]} uncertified ({desc.digest[:19]})")

    def attach_certificate(
        self, cert: Mapping[str, Any], subject: Descriptor, digest: str, config_digest: str | None
    ) -> dict[str, Any]:
        """Attach ``cert`` to the pushed manifest; NegativeVerdict when it names another image."""
        dest = self.dest
        if not bound_to(cert, digest=digest, image_id=config_digest):
            raise NegativeVerdict(
                f"certificate {cert.get('id')} names {', '.join(sorted(cert_digests(cert))) or cert_image_id(cert)}, "
                f"but the registry holds this image as {digest}",
                hint=f"certify the pushed image: imgbuild certify {dest.name}@{digest}",
            )
        annotations = {"io.imgbuild.certified": "true", "io.imgbuild.image.digest": digest,
                       "io.imgbuild.certificate.id": str(cert.get("id", "")),
                       "io.imgbuild.verdict": str(cert.get("verdict", ""))}
        if cert_target_name(cert):
            annotations["io.imgbuild.target"] = str(cert_target_name(cert))
        if cert.get("created_at"):
            annotations["org.opencontainers.image.created"] = str(cert["created_at"])
        desc, changed = self.registry.attach_artifact(
            dest.repository, subject=subject, artifact_type=CERT_ARTIFACT_TYPE, payload=_certificate_bytes(cert),
            payload_media_type="application/json", annotations=annotations, title="certificate.json")
        if changed:
            self.actions.append(f"attached certificate {cert.get('id')} as {desc.digest[:19]}")
            self.say(f"attached certificate {cert.get('id')} to {dest.name}@{digest[:19]}")
        return {"id": cert.get("id"), "artifact": desc.digest, "verdict": cert.get("verdict"),
                "target": cert_target_name(cert)}


def _certificate_bytes(cert: Mapping[str, Any]) -> bytes:
    # Stable bytes for the same certificate, so a second publish finds the same blob.
    return (json.dumps(cert, indent=2, sort_keys=True, default=str) + "\n").encode("utf-8")


def _already_pushed(registry: RegistryClient, repository: str, tags: Sequence[str], image_id: str) -> str | None:
    digests = set()
    for tag in tags:
        found = registry.head_manifest(repository, tag)
        if found is None:
            return None
        digests.add(found.digest)
    if len(digests) != 1:
        return None
    digest = digests.pop()
    manifest = registry.get_manifest(repository, digest)
    if manifest is None or (manifest.data.get("config") or {}).get("digest") != image_id:
        return None
    return digest


# --- verify -------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetWant:
    """What ``verify --for TARGET`` asks of a certificate."""

    name: str
    gpu_name: str | None = None  # the matrix's canonical name, e.g. "RTX A6000"
    gpu_count: int | None = None
    gpu_names_ok: frozenset[str] = frozenset()  # names the hardware may report for it (nvidia-smi names)
    launch_flags: tuple[str, ...] | None = None
    min_driver: str | None = None  # the NVIDIA driver the target's CUDA needs (matrix cuda: min_driver)


@dataclass(frozen=True)
class CertificateCheck:
    artifact: str
    certificate: dict[str, Any] | None
    bound: bool
    passed: bool
    problems: list[str]
    matches_target: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        cert = self.certificate or {}
        return {
            "artifact": self.artifact, "bound": self.bound, "passed": self.passed, "problems": self.problems,
            "matches_target": self.matches_target, "id": cert.get("id"), "verdict": cert.get("verdict"),
            "target": cert_target_name(cert), "gpus": cert_gpus(cert), "driver": cert_driver(cert),
            "flags": cert_flags(cert), "created_at": cert.get("created_at"), "certificate": self.certificate,
        }


@dataclass(frozen=True)
class VerifyResult:
    reference: str
    repository: str
    digest: str
    media_type: str
    checks: list[CertificateCheck]
    uncertified_marks: list[str]
    target: str | None

    @property
    def certified(self) -> bool:
        good = [c for c in self.checks if c.bound and c.passed]
        if self.target is not None:
            good = [c for c in good if c.matches_target]
        return bool(good)

    def to_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "repository": self.repository, "digest": self.digest,
                "media_type": self.media_type, "target": self.target, "certified": self.certified,
                "uncertified_marks": self.uncertified_marks, "certificates": [c.to_dict() for c in self.checks]}


@dataclass(frozen=True, kw_only=True)
class VerifyOptions:
    reference: str
    target: TargetWant | None = None
    require_attested: bool = False  # "pass-unattested" (no driver or no GPUs attached) does not count


def verify_image(opts: VerifyOptions, *, registry: RegistryClient) -> VerifyResult:
    ref = parse_reference(opts.reference, require_host=True)
    manifest = registry.get_manifest(ref.repository, ref.lookup)
    if manifest is None:
        raise UsageError(f"{opts.reference}: no such manifest in {ref.host}/{ref.repository}",
                         hint="check the repository and tag (`imgbuild publish` prints the reference)")
    digest = manifest.descriptor.digest
    if ref.digest and ref.digest != digest:
        raise UsageError(f"{opts.reference}: the registry's manifest is {digest}")
    config_digest = (manifest.data.get("config") or {}).get("digest")
    checks: list[CertificateCheck] = []
    for desc in registry.referrers(ref.repository, digest, artifact_type=CERT_ARTIFACT_TYPE):
        checks.append(_check_artifact(registry, ref.repository, desc, digest, config_digest, opts.target,
                                      require_attested=opts.require_attested))
    marks = [d.digest for d in registry.referrers(ref.repository, digest, artifact_type=UNCERTIFIED_ARTIFACT_TYPE)]
    return VerifyResult(reference=str(ref), repository=ref.name, digest=digest, media_type=manifest.descriptor.media_type,
                        checks=checks, uncertified_marks=marks, target=opts.target.name if opts.target else None)


def _check_artifact(
    registry: RegistryClient, repository: str, desc: Descriptor, digest: str, config_digest: str | None,
    want: TargetWant | None, *, require_attested: bool = False,
) -> CertificateCheck:
    problems: list[str] = []
    artifact = registry.get_manifest(repository, desc.digest)
    if artifact is None:
        return CertificateCheck(desc.digest, None, False, False, ["the artifact manifest is missing"])
    data = artifact.data
    subject = (data.get("subject") or {}).get("digest")
    if subject != digest:
        problems.append(f"artifact subject is {subject}, not this image ({digest})")
    layers = data.get("layers") or []
    cert: dict[str, Any] | None = None
    if len(layers) != 1:
        problems.append(f"artifact has {len(layers)} layers, expected the certificate alone")
    else:
        try:
            cert = json.loads(registry.get_blob(repository, layers[0]["digest"]))
        except ValueError:
            problems.append("the certificate is not JSON")
    if cert is not None and not bound_to(cert, digest=digest, image_id=config_digest):
        named = ", ".join(sorted(cert_digests(cert))) or str(cert_image_id(cert))
        problems.append(f"the certificate is for {named}, not for this image ({digest})")
    bound = not problems
    passed = bool(cert) and cert_passed(cert)
    if cert is not None and not passed:
        problems.append(f"verdict {cert.get('verdict')!r}")
    elif cert is not None and require_attested and cert.get("verdict") != "pass":
        passed = False
        problems.append(f"verdict {cert.get('verdict')!r} is not attested: "
                        + "; ".join(str(g) for g in cert.get("attestation_gaps") or []))
    matches = _matches(cert, want, problems) if (want is not None and cert is not None) else None
    return CertificateCheck(desc.digest, cert, bound, passed, problems, matches)


def _matches(cert: Mapping[str, Any], want: TargetWant, problems: list[str]) -> bool:
    ok = True
    name = cert_target_name(cert)
    if name != want.name:
        problems.append(f"certifies target {name!r}, not {want.name!r}")
        ok = False
    gpus = cert_gpus(cert)
    if want.gpu_count is not None and gpus and len(gpus) != want.gpu_count:
        problems.append(f"ran on {len(gpus)} GPU(s), the target needs {want.gpu_count}")
        ok = False
    if want.gpu_names_ok and gpus and not all(g in want.gpu_names_ok for g in gpus):
        problems.append(f"ran on {', '.join(sorted(set(gpus)))}, the target needs {want.gpu_name}")
        ok = False
    driver = cert_driver(cert)
    if want.min_driver and driver and _version(driver) < _version(want.min_driver):
        problems.append(f"ran on driver {driver}; the target's CUDA needs {want.min_driver} or newer")
        ok = False
    if want.launch_flags is not None and cert_flags(cert) and tuple(cert_flags(cert)) != want.launch_flags:
        problems.append("launch flags differ from the target's: " + " ".join(cert_flags(cert)))
        ok = False
    return ok


def _version(text: str) -> tuple[int, ...]:
    return tuple(int("".join(ch for ch in part if ch.isdigit()) or 0) for part in str(text).split("."))


def load_certificates(store_dir: Path | None) -> list[dict[str, Any]]:
    """Every certificate in the local store (imgbuild.adapters.certstore's layout)."""
    from imgbuild.adapters.certstore import CertStore

    store = CertStore(store_dir)
    return [store.load(s.id) for s in store.list()]
