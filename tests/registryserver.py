"""Debian's real docker-registry (distribution 2.8) on 127.0.0.1, for tests.

Each ``RegistryServer`` has its own storage, port and config: optionally TLS with
a certificate signed by a CA made here with the openssl CLI, and htpasswd auth
(bcrypt, the only hash distribution accepts) made with apache2-utils' htpasswd.
In CI (CI=true) a missing binary is a failure, elsewhere a skip.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from conftest import port_collision, unused_tcp_port

IN_CI = os.environ.get("CI") == "true"


def need(binary: str, package: str) -> str:
    path = shutil.which(binary)
    if path:
        return path
    message = f"{binary} is not installed (apt-get install {package}; scripts/services start installs it)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def make_ca(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1/localhost. Returns (ca.crt, server.crt, server.key)."""
    need("openssl", "openssl")
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = directory / "ca.key", directory / "ca.crt"
    key, csr, crt, ext = directory / "server.key", directory / "server.csr", directory / "server.crt", directory / "ext.cnf"

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca_crt),
            "-days", "2", "-subj", "/CN=imgbuild test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
                   "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial",
            "-out", str(crt), "-days", "2", "-extfile", str(ext))
    return ca_crt, crt, key


class _PortTaken(Exception):
    """docker-registry exited because another process holds its port."""


class RegistryServer:
    def __init__(self, root: Path, *, tls: bool = True, users: dict[str, str] | None = None,
                 auth_lines: list[str] | None = None) -> None:
        self.binary = need("docker-registry", "docker-registry")
        self.root = root
        self.storage = root / "storage"
        # docker-registry reads its address from the config: a port is chosen for it (and
        # chosen again if another process takes it first, see start).
        self.port = unused_tcp_port()
        self.host = f"127.0.0.1:{self.port}"
        self.tls = tls
        self.users = dict(users or {})
        self.auth_lines = list(auth_lines or [])  # e.g. TokenServer.registry_config()
        self.ca: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.log = root / "registry.log"

    def _config(self) -> str:
        lines = [
            "version: 0.1",
            "log:", "  level: info", "  accesslog:", "    disabled: true",
            "storage:", "  filesystem:", f"    rootdirectory: {self.storage}", "  delete:", "    enabled: true",
            "http:", f"  addr: {self.host}",
        ]
        if self.tls:
            ca, crt, key = make_ca(self.root / "tls")
            self.ca = ca
            lines += ["  tls:", f"    certificate: {crt}", f"    key: {key}"]
        if self.users:
            need("htpasswd", "apache2-utils")
            htpasswd = self.root / "htpasswd"
            htpasswd.write_text("")
            for user, password in self.users.items():
                # -B bcrypt (distribution accepts nothing else), -i password on stdin.
                subprocess.run(["htpasswd", "-B", "-i", str(htpasswd), user], input=password.encode(),
                               check=True, capture_output=True)
            lines += ["auth:", "  htpasswd:", "    realm: imgbuild-test", f"    path: {htpasswd}"]
        lines += self.auth_lines
        return "\n".join(lines) + "\n"

    def start(self, *, attempts: int = 3) -> RegistryServer:
        """Run docker-registry until it answers on /v2/; on a port taken between choosing
        and binding it (the log says so), again on another port."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.storage.mkdir(exist_ok=True)
        for attempt in range(attempts):
            try:
                return self._start_once()
            except _PortTaken:
                if attempt == attempts - 1:
                    raise RuntimeError(f"docker-registry: {attempts} ports taken in a row: {self.log.read_text()[-2000:]}") from None
                self.port = unused_tcp_port()
                self.host = f"127.0.0.1:{self.port}"
        raise AssertionError("unreachable")

    def _start_once(self) -> RegistryServer:
        config = self.root / "config.yml"
        config.write_text(self._config())
        self.process = subprocess.Popen([self.binary, "serve", str(config)], stdout=self.log.open("wb"),
                                        stderr=subprocess.STDOUT, start_new_session=True)
        url = f"{'https' if self.tls else 'http'}://{self.host}/v2/"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.log.read_text()
                if port_collision(log):
                    raise _PortTaken
                raise RuntimeError(f"docker-registry exited: {log[-2000:]}")
            try:
                verify = ssl.create_default_context(cafile=str(self.ca)) if self.ca else False
                httpx.get(url, verify=verify, timeout=1.0)
                return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"docker-registry did not answer on {url}: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> RegistryServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def files(self) -> list[Path]:
        """Every file under the storage, listed while the registry may still be
        removing a cancelled upload: a folder or file that vanishes mid-walk is
        skipped (os.walk ignores a folder it cannot list; Path.rglob raises)."""
        return [Path(top, name) for top, _, names in os.walk(self.storage) for name in names]

    def snapshot(self) -> dict[str, str]:
        """Every file the registry stores (path -> sha256 of its content), except
        in-progress uploads, whose names and 'startedat' stamps are per attempt."""
        out: dict[str, str] = {}
        for path in sorted(self.files()):
            if "_uploads" not in path.parts:
                out[str(path.relative_to(self.storage))] = hashlib.sha256(path.read_bytes()).hexdigest()
        return out

    def stored_bytes(self) -> list[Path]:
        return self.files()
