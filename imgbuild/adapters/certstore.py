"""The local certificate store: one JSON file per certificate, plus each run's log.

Default place: $XDG_DATA_HOME/imgbuild/certs, else ~/.local/share/imgbuild/certs
(``--store`` overrides). Layout: ``<store>/<id>.json`` and ``<store>/logs/<id>.log``.
Ids are time-ordered (``20260501T100000Z-<8 hex>``), so a listing sorts by time and a
log from an earlier run is never taken for this one.
"""

from __future__ import annotations

import json
import os
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
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / f"{cert['id']}.json"
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(cert, fh, indent=2, default=str)
            fh.write("\n")
        os.replace(tmp, path)
        return path

    def load(self, cert_id: str) -> dict[str, Any]:
        """By full id or a unique prefix."""
        matches = sorted(self.root.glob(f"{cert_id}*.json")) if cert_id else []
        if not matches:
            raise UsageError(f"no certificate {cert_id!r} in {self.root}", hint="`imgbuild certs list` shows the ids")
        if len(matches) > 1:
            raise UsageError(f"certificate id {cert_id!r} is ambiguous in {self.root}: "
                             f"{', '.join(p.stem for p in matches[:5])}")
        try:
            return json.loads(matches[0].read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UsageError(f"{matches[0]} is not valid JSON: {exc}") from None

    def list(self) -> list[CertSummary]:
        if not self.root.is_dir():
            return []
        out = []
        for path in sorted(self.root.glob("*.json")):
            try:
                cert = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                continue
            failure = cert.get("failure") or {}
            out.append(CertSummary(
                id=str(cert.get("id", path.stem)),
                created_at=str(cert.get("created_at", "")),
                verdict=str(cert.get("verdict", "?")),
                image=str((cert.get("image") or {}).get("ref", "?")),
                target=(cert.get("target") or {}).get("name"),
                failure=failure.get("reason") if isinstance(failure, dict) else None,
            ))
        return out
