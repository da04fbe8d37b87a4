"""The OCI distribution API over httpx: manifests, blobs, referrers, auth.

What imgbuild needs from a registry, and nothing else:

- auth: the registry's ``WWW-Authenticate`` challenge decides the flow, as the
  distribution spec and Docker's token spec describe it: ``Basic`` (htpasswd
  registries) sends the credentials with each request; ``Bearer`` fetches a token
  from the realm for the scope (``repository:NAME:pull,push``), with the
  credentials as basic auth, or as a refresh token when the Docker config holds
  an identity token (username ``<token>``).
- credentials: given explicitly, or from the Docker config
  (``$DOCKER_CONFIG/config.json``, default ``~/.docker/config.json``): ``auths``
  entries, ``credHelpers`` per registry and the ``credsStore``, whose helpers
  (``docker-credential-NAME get``) are run as the Docker CLI runs them.
  Credentials are never logged, printed or put into an error message; their
  ``repr`` hides the secret.
- TLS: the system's CAs, the Docker daemon's ``/etc/docker/certs.d/HOST:PORT/*.crt``
  (so imgbuild trusts what the daemon trusts) and an explicit ``ca_bundle``. A
  loopback registry that does not speak TLS is spoken to over plain HTTP, as
  dockerd does for 127.0.0.0/8.
- manifests (HEAD, GET, PUT), blobs (HEAD, GET, monolithic upload: POST then PUT),
  tags, and referrers: ``GET /v2/NAME/referrers/DIGEST`` (OCI distribution 1.1),
  falling back to the referrers tag schema (an image index tagged
  ``sha256-<hex>``) when the registry answers 404 there, which is what
  distribution 2.x (Debian's docker-registry) does.

Every httpx error becomes an imgbuild error here (EnvironmentUnavailable for a
registry that is unreachable, refuses the credentials or answers 5xx).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import os
import re
import ssl
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from imgbuild.errors import EnvironmentUnavailable, ImgbuildError, UsageError

if TYPE_CHECKING:
    import httpx

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_TYPES = (OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST)
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
EMPTY_JSON = b"{}"
DOCKER_HUB = "docker.io"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_REPO = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(obj: Any) -> bytes:
    """Deterministic bytes for a manifest: the same content always has the same digest."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def referrers_tag(digest: str) -> str:
    """The OCI 1.1 referrers tag schema: ``sha256:abc...`` -> ``sha256-abc...``."""
    algorithm, _, hex_part = digest.partition(":")
    return f"{algorithm}-{hex_part}"[:128]


# --- references -------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """``HOST[:PORT]/REPO[:TAG][@DIGEST]`` split as the Docker CLI splits it."""

    host: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    def __str__(self) -> str:
        text = f"{self.host}/{self.repository}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    @property
    def name(self) -> str:
        return f"{self.host}/{self.repository}"

    @property
    def lookup(self) -> str:
        """What to ask the registry for: the digest when there is one, else the tag."""
        return self.digest or self.tag or "latest"


def parse_reference(text: str, *, require_host: bool = False) -> Reference:
    """Docker's rule: the first path component is a host when it has a '.' or ':'
    or is 'localhost'; otherwise the reference is on Docker Hub (library/ for one
    component)."""
    ref = text.strip()
    digest = None
    if "@" in ref:
        ref, digest = ref.split("@", 1)
        if not _DIGEST.match(digest):
            raise UsageError(f"reference {text!r}: {digest!r} is not sha256:<64 hex>")
    tag = None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        ref, tag = ref.rsplit(":", 1)
        if not _TAG.match(tag):
            raise UsageError(f"reference {text!r}: tag {tag!r} is not a valid tag")
    parts = ref.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        host, repo = parts[0], "/".join(parts[1:])
    else:
        if require_host:
            raise UsageError(
                f"{text!r} names no registry host",
                hint="write HOST[:PORT]/REPO, e.g. registry.example.com/team/sglang or 127.0.0.1:5000/sglang",
            )
        host, repo = DOCKER_HUB, ("library/" + ref if len(parts) == 1 else ref)
    if not repo or not _REPO.match(repo):
        raise UsageError(f"reference {text!r}: repository {repo!r} is not a valid name",
                         hint="lowercase letters, digits and . _ - separated by /")
    return Reference(host=host, repository=repo, tag=tag, digest=digest)


def is_loopback(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    name = name.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


# --- descriptors ------------------------------------------------------------------


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    artifact_type: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        if self.artifact_type:
            data["artifactType"] = self.artifact_type
        if self.annotations:
            data["annotations"] = dict(sorted(self.annotations.items()))
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Descriptor:
        return cls(
            media_type=str(data.get("mediaType", "")),
            digest=str(data.get("digest", "")),
            size=int(data.get("size", 0)),
            artifact_type=data.get("artifactType"),
            annotations=dict(data.get("annotations") or {}),
        )


EMPTY_DESCRIPTOR = Descriptor(OCI_EMPTY, sha256_digest(EMPTY_JSON), len(EMPTY_JSON))


@dataclass(frozen=True)
class Manifest:
    descriptor: Descriptor
    body: bytes

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.body)


# --- credentials ------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    """A username and a secret. The secret never appears in repr() or str()."""

    username: str
    password: str = field(repr=False)
    source: str = "explicit"

    @property
    def identity_token(self) -> bool:
        # docker login against an OAuth2 registry stores a refresh token under
        # this username (docker/cli: credentials/file_store, types.AuthConfig).
        return self.username == "<token>"

    def __str__(self) -> str:
        return f"{self.username} (from {self.source})"


def docker_config_dir() -> Path:
    return Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker")


def _config_keys(host: str) -> list[str]:
    # docker/cli keys Docker Hub as its v1 URL; other registries by host[:port],
    # sometimes written with a scheme.
    if host in (DOCKER_HUB, "index.docker.io", "registry-1.docker.io"):
        return ["https://index.docker.io/v1/", "index.docker.io", "docker.io"]
    return [host, f"https://{host}", f"http://{host}", f"https://{host}/v2/"]


def docker_config_credentials(
    host: str,
    *,
    config_dir: Path | None = None,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> Credentials | None:
    """The credentials the Docker CLI would use for ``host``, or None."""
    path = (config_dir or docker_config_dir()) / "config.json"
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read the Docker config: {exc}",
                         hint="fix or move the file, or pass --username with --password-stdin") from None
    keys = _config_keys(host)
    helper = next((config.get("credHelpers", {}).get(k) for k in keys if config.get("credHelpers", {}).get(k)), None)
    helper = helper or config.get("credsStore")
    if helper:
        creds = _from_helper(helper, keys[0], run=run)
        if creds is not None:
            return creds
    auths = config.get("auths") or {}
    for key in keys:
        entry = auths.get(key)
        if not entry:
            continue
        if entry.get("identitytoken"):
            return Credentials("<token>", entry["identitytoken"], source=str(path))
        if entry.get("auth"):
            try:
                user, _, secret = base64.b64decode(entry["auth"]).decode("utf-8").partition(":")
            except (ValueError, UnicodeDecodeError):
                raise UsageError(f"{path}: auths[{key!r}].auth is not base64 of user:password",
                                 hint=f"run docker login {host} again") from None
            return Credentials(user, secret, source=str(path))
        if entry.get("username") and entry.get("password"):
            return Credentials(entry["username"], entry["password"], source=str(path))
    return None


def _from_helper(helper: str, server: str, *, run: Callable[..., subprocess.CompletedProcess[str]]) -> Credentials | None:
    program = f"docker-credential-{helper}"
    try:
        done = run([program, "get"], input=server, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise EnvironmentUnavailable(
            f"the Docker config names the credential helper {helper!r}, but {program} is not on PATH",
            hint="install it, or pass --username with --password-stdin",
        ) from None
    except subprocess.TimeoutExpired:
        raise EnvironmentUnavailable(f"the credential helper {program} did not answer within 30 s") from None
    if done.returncode != 0:
        # "credentials not found in native keychain": no entry for this registry.
        return None
    try:
        data = json.loads(done.stdout)
    except ValueError:
        raise EnvironmentUnavailable(f"the credential helper {program} printed something that is not JSON") from None
    user, secret = data.get("Username", ""), data.get("Secret", "")
    if not secret:
        return None
    return Credentials(user, secret, source=f"credential helper {helper}")


# --- the client -------------------------------------------------------------------


def _parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    scheme, _, rest = header.strip().partition(" ")
    params = {k.lower(): v for k, v in re.findall(r'(\w+)="([^"]*)"', rest)}
    return scheme.lower(), params


def _ssl_context(host: str, ca_bundle: str | os.PathLike[str] | None, certs_d: Path) -> ssl.SSLContext:
    context = ssl.create_default_context()
    host_dir = certs_d / host
    if host_dir.is_dir():
        for crt in sorted(host_dir.glob("*.crt")):
            context.load_verify_locations(cafile=str(crt))
    if ca_bundle:
        try:
            context.load_verify_locations(cafile=os.fspath(ca_bundle))
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(f"--ca-bundle {os.fspath(ca_bundle)}: not a readable PEM file ({exc})") from None
    return context


def _registry_message(response: httpx.Response) -> str:
    try:
        errors = response.json().get("errors") or []
        return "; ".join(f"{e.get('code', '')}: {e.get('message', '')}".strip(": ") for e in errors)
    except (ValueError, AttributeError):
        return response.text[:200].strip()


class RegistryClient:
    """One registry host. Pass ``client`` to reuse a connection pool or a transport."""

    def __init__(
        self,
        host: str,
        *,
        credentials: Credentials | None = None,
        ca_bundle: str | os.PathLike[str] | None = None,
        client: httpx.Client | None = None,
        scheme: str | None = None,
        timeout_s: float = 60.0,
        certs_d: Path = Path("/etc/docker/certs.d"),
    ) -> None:
        self.host = host
        self.credentials = credentials
        self._ca_bundle = ca_bundle
        self._certs_d = certs_d
        self._client = client
        self._scheme = scheme
        self._timeout_s = timeout_s
        self._basic = False  # the registry asked for Basic auth
        self._tokens: dict[str, str] = {}  # scope -> bearer token
        self._referrers_api: dict[str, bool] = {}  # repository -> has GET /referrers

    def __repr__(self) -> str:
        return f"RegistryClient({self.host!r}, user={self.credentials.username if self.credentials else None!r})"

    # -- transport ---------------------------------------------------------------

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            self._client = httpx.Client(
                verify=_ssl_context(self.host, self._ca_bundle, self._certs_d),
                timeout=httpx.Timeout(self._timeout_s, connect=10.0),
                follow_redirects=True,
                trust_env=False,
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _base(self) -> str:
        # Docker Hub's references say docker.io; its API is served from registry-1.docker.io.
        api_host = "registry-1.docker.io" if self.host in (DOCKER_HUB, "index.docker.io") else self.host
        return f"{self._scheme or 'https'}://{api_host}"

    def _raw(self, method: str, url: str, *, headers: dict[str, str], content: bytes | None) -> httpx.Response:
        import httpx

        try:
            return self._http().request(method, url, headers=headers, content=content)
        except httpx.ConnectError as exc:
            text = str(exc)
            if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
                raise EnvironmentUnavailable(
                    f"registry {self.host}: its TLS certificate is not trusted ({text.split(']')[-1].strip()[:120]})",
                    hint=f"pass --ca-bundle FILE with the CA that signed it, or put it in "
                         f"{self._certs_d / self.host}/ca.crt as for the Docker daemon",
                ) from exc
            if self._scheme is None and is_loopback(self.host):
                # dockerd speaks plain HTTP to 127.0.0.0/8 registries that do not
                # speak TLS; do the same, once, then remember.
                self._scheme = "http"
                return self._raw(method, url.replace("https://", "http://", 1), headers=headers, content=content)
            raise EnvironmentUnavailable(f"cannot reach registry {self.host}: {text or type(exc).__name__}",
                                         hint="check the host and port, and that the registry runs") from exc
        except httpx.HTTPError as exc:
            raise EnvironmentUnavailable(f"registry {self.host}: {type(exc).__name__}: {exc}",
                                         hint="check the network and the registry") from exc

    def _auth_header(self, scope: str) -> dict[str, str]:
        if scope in self._tokens:
            return {"Authorization": f"Bearer {self._tokens[scope]}"}
        if self._basic and self.credentials:
            raw = f"{self.credentials.username}:{self.credentials.password}".encode("utf-8")
            return {"Authorization": "Basic " + base64.b64encode(raw).decode("ascii")}
        return {}

    def request(
        self,
        method: str,
        path: str,
        *,
        scope: str,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
        url: str | None = None,
    ) -> httpx.Response:
        """One API call, authenticating on the registry's 401 challenge and retrying once."""
        target = url or f"{self._base()}{path}"
        response = self._raw(method, target, headers={**(headers or {}), **self._auth_header(scope)}, content=content)
        if response.status_code != 401:
            return response
        self._authenticate(response.headers.get("WWW-Authenticate", ""), scope)
        target = url or f"{self._base()}{path}"
        response = self._raw(method, target, headers={**(headers or {}), **self._auth_header(scope)}, content=content)
        if response.status_code == 401:
            raise self._auth_refused()
        return response

    def _auth_refused(self) -> ImgbuildError:
        if self.credentials is None:
            return EnvironmentUnavailable(
                f"registry {self.host} requires authentication and no credentials were found",
                hint=f"pass --username and --password-stdin, or run docker login {self.host}",
            )
        return EnvironmentUnavailable(
            f"registry {self.host} refused the credentials of user {self.credentials.username!r} "
            f"(from {self.credentials.source})",
            hint="check the username and password (the password is read from stdin with --password-stdin)",
        )

    def _authenticate(self, challenge: str, scope: str) -> None:
        scheme, params = _parse_challenge(challenge)
        if scheme == "basic":
            if self.credentials is None or self._basic:
                raise self._auth_refused()
            self._basic = True
            return
        if scheme != "bearer" or "realm" not in params:
            raise EnvironmentUnavailable(f"registry {self.host} asked for an authentication scheme imgbuild does not speak: "
                                         f"{challenge[:80]!r}")
        self._tokens[scope] = self._fetch_token(params, scope)

    def _fetch_token(self, params: dict[str, str], scope: str) -> str:
        import httpx

        realm = params["realm"]
        query = {"service": params.get("service", ""), "scope": scope}
        creds = self.credentials
        try:
            if creds is not None and creds.identity_token:
                response = self._http().post(realm, data={
                    "grant_type": "refresh_token", "refresh_token": creds.password,
                    "service": query["service"], "scope": scope, "client_id": "imgbuild"})
            else:
                auth = (creds.username, creds.password) if creds else None
                response = self._http().get(realm, params=query, auth=auth)
        except httpx.HTTPError as exc:
            raise EnvironmentUnavailable(f"registry {self.host}: cannot reach its token service: {type(exc).__name__}",
                                         hint="check the network") from exc
        if response.status_code in (401, 403):
            raise self._auth_refused()
        if response.status_code >= 400:
            raise EnvironmentUnavailable(f"registry {self.host}: its token service answered {response.status_code}")
        try:
            body = response.json()
            return str(body.get("token") or body["access_token"])
        except (ValueError, KeyError):
            raise EnvironmentUnavailable(f"registry {self.host}: its token service answered without a token") from None

    def _fail(self, response: httpx.Response, what: str) -> ImgbuildError:
        message = _registry_message(response)
        if response.status_code == 403:
            return EnvironmentUnavailable(f"registry {self.host} denied {what}: {message or 'forbidden'}",
                                          hint="the user needs push (and pull) rights on the repository")
        return EnvironmentUnavailable(f"registry {self.host} answered {response.status_code} to {what}"
                                      + (f": {message}" if message else ""))

    @staticmethod
    def _scope(repository: str, push: bool) -> str:
        return f"repository:{repository}:{'pull,push' if push else 'pull'}"

    # -- the API -----------------------------------------------------------------

    def ping(self) -> None:
        """GET /v2/: the registry is there and accepts these credentials."""
        response = self.request("GET", "/v2/", scope="registry:catalog:*")
        if response.status_code >= 400 and response.status_code != 404:
            raise self._fail(response, "GET /v2/")

    def head_manifest(self, repository: str, reference: str, *, push: bool = False) -> Descriptor | None:
        response = self.request("HEAD", f"/v2/{repository}/manifests/{reference}", scope=self._scope(repository, push),
                                headers={"Accept": ", ".join(MANIFEST_TYPES)})
        if response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise self._fail(response, f"HEAD manifest {repository}:{reference}")
        digest = response.headers.get("Docker-Content-Digest", "")
        size = int(response.headers.get("Content-Length", "0") or 0)
        media = response.headers.get("Content-Type", "").split(";")[0].strip()
        if not digest:  # some registries omit it on HEAD; GET to learn it
            manifest = self.get_manifest(repository, reference)
            return manifest.descriptor if manifest else None
        return Descriptor(media, digest, size)

    def get_manifest(self, repository: str, reference: str) -> Manifest | None:
        response = self.request("GET", f"/v2/{repository}/manifests/{reference}", scope=self._scope(repository, False),
                                headers={"Accept": ", ".join(MANIFEST_TYPES)})
        if response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise self._fail(response, f"GET manifest {repository}:{reference}")
        body = response.content
        digest = sha256_digest(body)
        if reference.startswith("sha256:") and digest != reference:
            raise EnvironmentUnavailable(f"registry {self.host} sent a manifest for {repository}@{reference} "
                                         f"whose content is {digest}")
        media = response.headers.get("Content-Type", "").split(";")[0].strip()
        try:
            media = json.loads(body).get("mediaType") or media
        except ValueError:
            raise EnvironmentUnavailable(f"registry {self.host}: manifest {repository}:{reference} is not JSON") from None
        return Manifest(Descriptor(media, digest, len(body)), body)

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> tuple[str, bool]:
        """PUT a manifest; returns (digest, registry indexed its subject itself)."""
        response = self.request("PUT", f"/v2/{repository}/manifests/{reference}", scope=self._scope(repository, True),
                                headers={"Content-Type": media_type}, content=body)
        if response.status_code >= 400:
            raise self._fail(response, f"PUT manifest {repository}:{reference}")
        return response.headers.get("Docker-Content-Digest") or sha256_digest(body), "OCI-Subject" in response.headers

    def blob_exists(self, repository: str, digest: str) -> bool:
        response = self.request("HEAD", f"/v2/{repository}/blobs/{digest}", scope=self._scope(repository, True))
        if response.status_code == 404:
            return False
        if response.status_code >= 400:
            raise self._fail(response, f"HEAD blob {repository}@{digest}")
        return True

    def get_blob(self, repository: str, digest: str, *, max_bytes: int = 16 * 2**20) -> bytes:
        response = self.request("GET", f"/v2/{repository}/blobs/{digest}", scope=self._scope(repository, False))
        if response.status_code >= 400:
            raise self._fail(response, f"GET blob {repository}@{digest}")
        data = response.content
        if len(data) > max_bytes:
            raise EnvironmentUnavailable(f"blob {repository}@{digest} is {len(data)} bytes, more than expected")
        if sha256_digest(data) != digest:
            raise EnvironmentUnavailable(f"registry {self.host} sent blob {digest} with other content "
                                         f"({sha256_digest(data)})")
        return data

    def put_blob(self, repository: str, data: bytes) -> str:
        """Monolithic upload (POST, then PUT with ?digest=); skipped when the blob exists."""
        digest = sha256_digest(data)
        if self.blob_exists(repository, digest):
            return digest
        scope = self._scope(repository, True)
        started = self.request("POST", f"/v2/{repository}/blobs/uploads/", scope=scope,
                               headers={"Content-Length": "0"}, content=b"")
        if started.status_code != 202 or "Location" not in started.headers:
            raise self._fail(started, f"start a blob upload to {repository}")
        location = started.headers["Location"]
        if location.startswith("/"):
            location = f"{self._base()}{location}"
        separator = "&" if "?" in location else "?"
        done = self.request("PUT", "", url=f"{location}{separator}digest={digest}", scope=scope,
                            headers={"Content-Type": "application/octet-stream"}, content=data)
        if done.status_code != 201:
            raise self._fail(done, f"finish the upload of {digest} to {repository}")
        return digest

    def list_tags(self, repository: str) -> list[str]:
        response = self.request("GET", f"/v2/{repository}/tags/list?n=10000", scope=self._scope(repository, False))
        if response.status_code == 404:
            return []
        if response.status_code >= 400:
            raise self._fail(response, f"list the tags of {repository}")
        return sorted(response.json().get("tags") or [])

    def has_referrers_api(self, repository: str, digest: str) -> bool:
        self.referrers(repository, digest)
        return self._referrers_api.get(repository, False)

    def referrers(self, repository: str, digest: str, *, artifact_type: str | None = None) -> list[Descriptor]:
        """The manifests whose subject is ``digest``: the referrers API, else the tag schema."""
        response = self.request("GET", f"/v2/{repository}/referrers/{digest}", scope=self._scope(repository, False),
                                headers={"Accept": OCI_INDEX})
        if response.status_code == 200 and response.headers.get("Content-Type", "").startswith(OCI_INDEX):
            self._referrers_api[repository] = True
            found = [Descriptor.from_dict(d) for d in response.json().get("manifests") or []]
        elif response.status_code in (404, 405, 400):
            self._referrers_api[repository] = False
            index = self.get_manifest(repository, referrers_tag(digest))
            found = [Descriptor.from_dict(d) for d in (index.data.get("manifests") or [])] if index else []
        else:
            raise self._fail(response, f"GET referrers of {repository}@{digest}")
        if artifact_type:
            found = [d for d in found if d.artifact_type == artifact_type]
        return found

    def attach_artifact(
        self,
        repository: str,
        *,
        subject: Descriptor,
        artifact_type: str,
        payload: bytes,
        payload_media_type: str,
        annotations: Mapping[str, str] | None = None,
        title: str = "payload.json",
    ) -> tuple[Descriptor, bool]:
        """Push an OCI 1.1 artifact whose subject is ``subject``.

        The manifest is canonical JSON with no timestamps of its own, so the same
        payload always makes the same digest: attaching twice changes nothing.
        Order: blobs, then the manifest, then (without a referrers API) the
        referrers tag; each step is skipped when done, so an interrupted attach
        is completed by the next one. Returns (descriptor, changed).
        """
        changed = False
        for blob in (EMPTY_JSON, payload):
            if not self.blob_exists(repository, sha256_digest(blob)):
                self.put_blob(repository, blob)
                changed = True
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "artifactType": artifact_type,
            "config": EMPTY_DESCRIPTOR.to_dict(),
            "layers": [Descriptor(payload_media_type, sha256_digest(payload), len(payload),
                                  annotations={"org.opencontainers.image.title": title}).to_dict()],
            "subject": Descriptor(subject.media_type, subject.digest, subject.size).to_dict(),
        }
        if annotations:
            manifest["annotations"] = dict(sorted(annotations.items()))
        body = canonical_json(manifest)
        descriptor = Descriptor(OCI_MANIFEST, sha256_digest(body), len(body), artifact_type=artifact_type,
                                annotations=dict(annotations or {}))
        if self.head_manifest(repository, descriptor.digest, push=True) is None:
            self.put_manifest(repository, descriptor.digest, body, OCI_MANIFEST)
            changed = True
        if not self.has_referrers_api(repository, subject.digest):
            changed = self._add_to_referrers_tag(repository, subject.digest, descriptor) or changed
        return descriptor, changed

    def _add_to_referrers_tag(self, repository: str, subject_digest: str, descriptor: Descriptor) -> bool:
        tag = referrers_tag(subject_digest)
        index = self.get_manifest(repository, tag)
        entries = list(index.data.get("manifests") or []) if index else []
        if any(e.get("digest") == descriptor.digest for e in entries):
            return False
        entries.append(descriptor.to_dict())
        entries.sort(key=lambda e: (str(e.get("artifactType", "")), str(e.get("digest", ""))))
        body = canonical_json({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries})
        self.put_manifest(repository, tag, body, OCI_INDEX)
        return True
