"""Hugging Face Hub files over HTTP (httpx), cached on disk.

Honours HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (sent as a bearer
token, never logged) and HF_HUB_OFFLINE (cache only). Files are cached under
$XDG_CACHE_HOME/imgbuild/hub/<org>/<name>/<revision>/, with a marker for files
the repository does not have, so a second look needs no network.

Everything that reaches the cache is bounded: ids and revisions are validated as
the Hub defines them before a path is built from them (and the path is checked to
stay inside the cache), each download has a size cap and a wall-clock deadline
that a slow drip cannot restart, and only a body that parses as a JSON object is
cached (a proxy's HTML page is refused, not kept). ``imgbuild cache show`` lists the
entries and ``imgbuild cache clear [ORG/NAME[@REV]]`` drops them (cache_entries, clear_cache).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from imgbuild.errors import EnvironmentUnavailable, UsageError

if TYPE_CHECKING:
    import httpx

_MISSING = b"\x00imgbuild:missing\x00"

# config.json is a few KiB and the largest safetensors index on the Hub a few MiB.
MAX_FILE_BYTES = {
    "config.json": 16 * 2**20,
    "model.safetensors.index.json": 64 * 2**20,
}
DEFAULT_MAX_BYTES = 16 * 2**20
DEADLINE_S = 30.0  # per file, start of the request to the last byte
READ_TIMEOUT_S = 10.0
# A body trickling in is given up early instead of at the deadline: after SLOW_AFTER_S, one whose
# declared length cannot arrive in time at its rate so far, or one of unknown length arriving under
# SLOW_RATE bytes/s (a config.json is a few KiB: a healthy link sends it in well under a second).
SLOW_AFTER_S = 5.0
SLOW_RATE = 1024

# huggingface_hub/utils/_validators.py (validate_repo_id): 1-96 characters per part,
# letters, digits, '-', '_', '.', not starting or ending with '-' or '.', no '--' or '..'.
_REPO_PART = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")
# A git ref name as the Hub serves it (a branch, a tag, refs/pr/N, a commit hash), with
# git check-ref-format's rules that matter for a path: no empty, '.'-led or '..' part.
_REVISION_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}")
MAX_REVISION_CHARS = 200


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "imgbuild" / "hub"


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def validate_repo_id(repo: str) -> None:
    """Refuse an id the Hub would refuse: it becomes two path components of the cache."""
    parts = repo.split("/")
    valid = (
        len(parts) == 2
        and all(_REPO_PART.fullmatch(part) for part in parts)
        and "--" not in repo
        and ".." not in repo
        and not repo.endswith(".git")
    )
    if not valid:
        shown = repo if len(repo) <= 120 else repo[:120] + "..."
        raise UsageError(
            f"model {shown!r} is not a valid Hugging Face id",
            hint="write org/name: letters, digits, '-', '_' and '.', at most 96 characters each, no '--' or '..'",
        )


def validate_revision(revision: str) -> None:
    """Refuse a revision that is not a git ref name: it becomes path components of the cache."""
    parts = revision.split("/")
    valid = (
        0 < len(revision) <= MAX_REVISION_CHARS
        and all(_REVISION_PART.fullmatch(part) and not part.endswith((".", ".lock")) for part in parts)
        and ".." not in revision
    )
    if not valid:
        shown = revision if len(revision) <= 120 else revision[:120] + "..."
        raise UsageError(
            f"revision {shown!r} is not a valid Hub revision",
            hint=f"give a branch, tag or commit hash (at most {MAX_REVISION_CHARS} characters, "
                 "no '..' or empty parts), e.g. org/name@main",
        )


def _json_object(data: bytes) -> bool:
    """Whether data parses as a JSON object (nesting too deep for the parser counts as no)."""
    try:
        return isinstance(json.loads(data), dict)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False


class HubClient:
    """Fetches single files of a model repository: ``/{repo}/resolve/{revision}/{file}``."""

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        endpoint: str | None = None,
        token: str | None = None,
        cache_dir: Path | None = None,
        offline: bool | None = None,
        deadline_s: float = DEADLINE_S,
        max_bytes: dict[str, int] | None = None,
    ) -> None:
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
        self._token = token if token is not None else os.environ.get("HF_TOKEN")
        self.cache_dir = cache_dir or default_cache_dir()
        self.offline = _offline() if offline is None else offline
        self.deadline_s = deadline_s
        self.max_bytes = dict(MAX_FILE_BYTES if max_bytes is None else max_bytes)
        self._client = client

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            self._client = httpx.Client(follow_redirects=True)
        return self._client

    def cache_path(self, repo: str, revision: str, filename: str) -> Path:
        """Where a file is cached; refuses an id, revision or name that would leave the cache."""
        validate_repo_id(repo)
        validate_revision(revision)
        if filename not in self.max_bytes and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}", filename):
            raise UsageError(f"{filename!r} is not a file name imgbuild fetches from the Hub")
        root = self.cache_dir.resolve()
        path = (root / repo / revision / filename).resolve()
        if not path.is_relative_to(root):  # a symlink planted in the cache
            raise UsageError(f"{repo}@{revision}: {filename} would be cached outside {root}",
                             hint=f"remove the links under {root}")
        return path

    def fetch(self, repo: str, revision: str, filename: str) -> bytes | None:
        cached = self.cache_path(repo, revision, filename)
        data = self._read_cache(cached, f"{repo}@{revision}")
        if data is not None:
            return None if data == _MISSING else data
        if self.offline:
            raise EnvironmentUnavailable(
                f"{repo}@{revision}: {filename} is not in the cache and HF_HUB_OFFLINE is set",
                hint="unset HF_HUB_OFFLINE once, or pass a local model directory",
            )
        status, body = self._download(repo, revision, filename)
        if status == 404:
            if filename == "config.json":
                raise UsageError(
                    f"model {repo}@{revision} not found on {self.endpoint}",
                    hint="check the id and the revision",
                )
            self._store(cached, _MISSING)
            return None
        if not _json_object(body):
            raise EnvironmentUnavailable(
                f"{self._url(repo, revision, filename)} answered 200 with {len(body)} bytes that are not a JSON object",
                hint="check HF_ENDPOINT (a proxy's page?); nothing was cached",
            )
        self._store(cached, body)
        return body

    def _read_cache(self, path: Path, model: str) -> bytes | None:
        """A cached entry, or None when there is none; a corrupt one is dropped so it is fetched again."""
        try:
            if not path.is_file():
                return None
            size_cap = self.max_bytes.get(path.name, DEFAULT_MAX_BYTES)
            with path.open("rb") as fh:
                data = fh.read(size_cap + 1)
        except OSError as exc:
            raise EnvironmentUnavailable(f"cannot read the Hub cache entry {path}: {exc.strerror}",
                                         hint=_clear_hint(model, path)) from None
        if data == _MISSING or (len(data) <= size_cap and _json_object(data)):
            return data
        try:
            path.unlink()
        except OSError:
            raise UsageError(f"the Hub cache entry {path} is corrupt and cannot be removed",
                             hint=_clear_hint(model, path)) from None
        return None

    def cache_note(self, repo: str, revision: str) -> str | None:
        """Where repo@revision's files are cached and how to drop them, when any are: for an
        error about what they hold (a server's answer that parsed as JSON but is no config)."""
        try:
            folder = self.cache_path(repo, revision, "config.json").parent
            cached = folder.is_dir() and any(p.is_file() for p in folder.iterdir())
        except (UsageError, OSError):
            return None
        if not cached:
            return None
        return f"the Hub's files are cached in {folder}: `imgbuild cache clear {repo}@{revision}` drops them"

    def _url(self, repo: str, revision: str, filename: str) -> str:
        # huggingface_hub/file_download.py quotes the revision whole (refs/pr/1 -> refs%2Fpr%2F1)
        return f"{self.endpoint}/{repo}/resolve/{quote(revision, safe='')}/{quote(filename)}"

    def _download(self, repo: str, revision: str, filename: str) -> tuple[int, bytes]:
        """(status, body) of one GET, within the size cap and the deadline; errors raised for the rest."""
        import httpx

        url = self._url(repo, revision, filename)
        cap = self.max_bytes.get(filename, DEFAULT_MAX_BYTES)
        headers = {"Accept-Encoding": "identity"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        started = time.monotonic()
        # httpx's read timeout restarts on every byte: the deadline is checked between chunks,
        # and no single read may wait past it.
        read_s = min(READ_TIMEOUT_S, self.deadline_s)
        timeout = httpx.Timeout(read_s, connect=min(10.0, self.deadline_s))
        try:
            with self._http().stream("GET", url, headers=headers, timeout=timeout) as response:
                self._check_status(response, repo, filename)
                if response.status_code == 404:
                    return 404, b""
                declared = response.headers.get("Content-Length", "")
                if declared.isdigit() and int(declared) > cap:
                    raise self._too_big(url, cap)
                chunks: list[bytes] = []
                received = 0
                for chunk in response.iter_bytes():
                    received += len(chunk)
                    if received > cap:
                        raise self._too_big(url, cap)
                    elapsed = time.monotonic() - started
                    if elapsed > self.deadline_s or self._trickling(elapsed, received, declared):
                        raise self._too_slow(url, received, elapsed)
                    chunks.append(chunk)
                return response.status_code, b"".join(chunks)
        except httpx.TimeoutException as exc:
            raise self._too_slow(url, None) from exc
        except httpx.HTTPError as exc:
            raise EnvironmentUnavailable(
                f"cannot reach the Hugging Face Hub at {self.endpoint} for {repo}: {type(exc).__name__}",
                hint="check the network or HF_ENDPOINT; HF_HUB_OFFLINE=1 uses the cache only",
            ) from exc

    def _check_status(self, response: httpx.Response, repo: str, filename: str) -> None:
        if response.status_code in (401, 403):
            raise UsageError(
                f"model {repo}: the Hub refused access ({response.status_code})",
                hint="the repository may be gated or private: set HF_TOKEN to a token with access",
            )
        if response.status_code >= 400 and response.status_code != 404:
            raise EnvironmentUnavailable(
                f"the Hugging Face Hub answered {response.status_code} for {repo}/{filename}",
                hint="try again later",
            )

    @staticmethod
    def _too_big(url: str, cap: int) -> EnvironmentUnavailable:
        return EnvironmentUnavailable(
            f"{url} is larger than {cap // 2**20} MiB, the cap for this file",
            hint="check HF_ENDPOINT; nothing was cached",
        )

    def _trickling(self, elapsed: float, received: int, declared: str) -> bool:
        if elapsed < min(SLOW_AFTER_S, self.deadline_s):
            return False
        if declared.isdigit():
            return elapsed * int(declared) / received > self.deadline_s
        return received / elapsed < SLOW_RATE

    def _too_slow(self, url: str, received: int | None, elapsed: float | None = None) -> EnvironmentUnavailable:
        if received is None or elapsed is None:
            what = f"did not arrive within {self.deadline_s:g} s"
        elif elapsed <= self.deadline_s:  # given up early: the rate so far cannot make the deadline
            what = (f"did not arrive within {self.deadline_s:g} s: {received} bytes in {elapsed:.1f} s, "
                    f"too slow to finish in time")
        else:
            what = f"did not arrive within {self.deadline_s:g} s ({received} bytes received)"
        return EnvironmentUnavailable(f"{url} {what}", hint="check the network or HF_ENDPOINT; nothing was cached")

    @staticmethod
    def _store(path: Path, data: bytes) -> None:
        """Atomically (a temp file in the same folder, then rename); best effort, as the
        cache only saves a download: a read-only or full disk costs the next run a fetch."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)


def _clear_hint(model: str, path: Path) -> str:
    return f"drop it: imgbuild cache clear {model} (or rm {path})"


@dataclass(frozen=True)
class CacheEntry:
    """One model revision in the cache: its folder, how many files and bytes it holds."""

    repo: str
    revision: str
    path: Path
    files: int
    size_bytes: int

    def to_dict(self) -> dict[str, object]:
        return {"repo": self.repo, "revision": self.revision, "path": str(self.path),
                "files": self.files, "bytes": self.size_bytes}


def cache_entries(cache_dir: Path | None = None) -> list[CacheEntry]:
    """Every repo@revision under the cache, sorted; a file in no revision folder (left by
    something else) counts under the revision '?'. Links are counted, never followed."""
    root = cache_dir or default_cache_dir()
    grouped: dict[tuple[str, str], list[int]] = {}
    for dirpath, _dirs, files in os.walk(root):
        parts = Path(dirpath).relative_to(root).parts
        repo = "/".join(parts[:2]) or "?"
        revision = "/".join(parts[2:]) or "?"
        tally = grouped.setdefault((repo, revision), [0, 0])
        for name in files:
            try:
                tally[1] += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:  # removed while we looked
                continue
            tally[0] += 1
    return [CacheEntry(repo, revision, root.joinpath(repo, revision) if "?" not in (repo, revision) else root,
                       files, size) for (repo, revision), (files, size) in sorted(grouped.items()) if files]


def clear_cache(cache_dir: Path | None = None, *, repo: str | None = None,
                revision: str | None = None) -> tuple[int, int]:
    """Remove the whole cache, one repository's revisions or one revision; (files, bytes) removed.

    The folder removed is built from a validated id and revision, so it is inside the cache;
    a link inside it is removed, not followed."""
    root = cache_dir or default_cache_dir()
    target = root
    if repo is not None:
        validate_repo_id(repo)
        target = root / repo
        if revision is not None:
            validate_revision(revision)
            target = target / revision
    elif revision is not None:
        raise UsageError("a revision without a model id", hint="write ORG/NAME@REVISION")
    gone = [e for e in cache_entries(root) if target == root or e.path == target or target in e.path.parents]
    removed = (sum(e.files for e in gone), sum(e.size_bytes for e in gone))
    try:
        if target == root:  # the root stays: it may be a link to another disk
            for child in root.iterdir() if root.is_dir() else ():
                _remove(child)
        else:
            _remove(target)
    except OSError as exc:
        raise UsageError(f"cannot remove {exc.filename or target}: {exc.strerror or exc}",
                         hint=f"remove it by hand: rm -r {target}") from None
    for parent in target.parents:  # the empty org/name (and refs/pr) folders left behind
        if parent == root or root not in parent.parents:
            break
        try:
            parent.rmdir()
        except OSError:
            break
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink() or path.exists():
        path.unlink()


def hub_for(source: str) -> HubClient | None:
    """A hub client when ``source`` is a Hugging Face id, else None (local paths need none)."""
    from imgbuild.knowledge.modelinfo import is_local_source, split_hub_id

    if is_local_source(source) or split_hub_id(source) is None:
        return None
    return HubClient()
