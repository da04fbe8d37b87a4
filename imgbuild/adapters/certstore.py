"""The local certificate store: one JSON file per certificate, plus each run's log.

Default place: $XDG_DATA_HOME/imgbuild/certs, else ~/.local/share/imgbuild/certs
(``--store`` overrides). Layout: ``<store>/<id>.json`` and ``<store>/logs/<id>.log``.
Ids are time-ordered (``20260501T100000Z-<8 hex>``), so a listing sorts by time and a
log from an earlier run is never taken for this one.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from imgbuild.errors import UsageError


def default_store_dir() -> Path:
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "imgbuild" / "certs"


def new_certificate_id(now: datetime | None = None) -> str:
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(4)}"


@dataclass(frozen=True)
class CertSummary:
    id: str
    created_at: str
    verdict: str
    image: str
    target: str | None
    failure: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class CertStore:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_store_dir()

    def log_path(self, cert_id: str) -> Path:
        path = self.root / "logs" / f"{cert_id}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def save(self, cert: dict[str, Any]) -> Path:
        """Write atomically (temp file + rename): a reader never sees half a certificate."""
        if not _ID.fullmatch(str(cert["id"])):
            raise UsageError(f"certificate id {cert['id']!r} is not a name the store can hold")
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / f"{cert['id']}.json"
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(cert, fh, indent=2, default=str)
            fh.write("\n")
        os.replace(tmp, path)
        return path

    def load(self, cert_id: str) -> dict[str, Any]:
        """By full id or a unique prefix: only ids the store wrote, never a path."""
        if cert_id and not _ID_PREFIX.fullmatch(cert_id):
            shown = cert_id if len(cert_id) <= 80 else cert_id[:80] + "..."
            raise UsageError(f"{shown!r} is not a certificate id",
                             hint="give an id or a prefix of one, like 20260501T100000Z; `imgbuild certs list` shows them")
        matches = [p for p in self._files() if p.stem.startswith(cert_id)] if cert_id else []
        if not matches:
            raise UsageError(f"no certificate {cert_id!r} in {self.root}", hint="`imgbuild certs list` shows the ids")
        if len(matches) > 1:
            raise UsageError(f"certificate id {cert_id!r} is ambiguous in {self.root}: "
                             f"{', '.join(p.stem for p in matches[:5])}")
        cert, problem = _read_certificate(matches[0])
        if cert is None:
            raise UsageError(f"{matches[0]} {problem}", hint="remove the file, or certify again")
        return cert

    def _files(self) -> list[Path]:
        """The store's certificate files: names the store writes (an id, .json), in id order."""
        try:
            return sorted(p for p in self.root.iterdir() if p.suffix == ".json" and _ID.fullmatch(p.stem))
        except OSError:
            return []

    def list(self) -> list[CertSummary]:
        """Every readable certificate; a file that is not one (hand-edited, truncated) is skipped."""
        out = []
        for path in self._files():
            cert, _ = _read_certificate(path)
            if cert is None:
                continue
            failure = cert.get("failure") or {}
            out.append(CertSummary(
                id=path.stem,
                created_at=str(cert.get("created_at", "")),
                verdict=str(cert["verdict"]),
                image=str(cert["image"]["ref"]),
                target=str((cert.get("target") or {}).get("name") or "") or None,
                failure=str(failure.get("reason")) if failure.get("reason") is not None else None,
            ))
        return out


# new_certificate_id's form and any id save() accepted: a name, never a path
_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,99}")
_ID_PREFIX = _ID
MAX_CERTIFICATE_BYTES = 16 * 2**20  # a certificate is a few KiB; its log lives beside it
_SECTIONS = ("target", "failure", "diagnosis", "generation", "figures", "timings", "hardware")


def _read_certificate(path: Path) -> tuple[dict[str, Any] | None, str]:
    """(certificate, "") or (None, what is wrong with the file): bounded, and the fields
    every reader uses checked for their type."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_CERTIFICATE_BYTES + 1)
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror}"
    if len(raw) > MAX_CERTIFICATE_BYTES:
        return None, f"is larger than {MAX_CERTIFICATE_BYTES // 2**20} MiB: not a certificate"
    try:
        cert = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"is not valid JSON: {exc}"
    except RecursionError:
        return None, "is nested too deeply to be a certificate"
    if not isinstance(cert, dict):
        return None, "does not hold a JSON object: not a certificate"
    if not isinstance(cert.get("verdict"), str):
        return None, "has no verdict: not a certificate"
    if not isinstance(cert.get("image"), dict) or not isinstance(cert["image"].get("ref"), str):
        return None, "has no image.ref: not a certificate"
    for key in _SECTIONS:
        if cert.get(key) is not None and not isinstance(cert[key], dict):
            return None, f"has a {key} that is not an object: not a certificate"
    cert.setdefault("id", path.stem)
    return cert, ""
