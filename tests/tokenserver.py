"""A stand-in for a registry's token service (Docker's token authentication spec), for tests.

docker-registry's ``auth: token`` delegates logins to such a service: a client that
gets ``401 WWW-Authenticate: Bearer realm=...,service=...,scope=...`` asks the realm
for a token with its credentials as basic auth, then sends ``Authorization: Bearer``.
Real ones (Harbor, GitLab, Docker Hub) cannot run here. This one serves
``GET /token?service=S&scope=repository:NAME:pull,push`` on 127.0.0.1, checks the
user's password, and answers a JWT (RS256, the signing certificate in ``x5c``) that
the registry verifies against ``rootcertbundle``. Signatures are made with the
openssl CLI. It records the requests it saw.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

SERVICE = "imgbuild-test-registry"
ISSUER = "imgbuild-test-tokens"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class TokenServer:
    def __init__(self, root: Path, users: dict[str, str]) -> None:
        self.users = dict(users)
        self.requests: list[dict[str, object]] = []
        root.mkdir(parents=True, exist_ok=True)
        self.key, self.cert = root / "token.key", root / "token.crt"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(self.key),
                        "-out", str(self.cert), "-days", "2", "-subj", "/CN=imgbuild test token signer"],
                       check=True, capture_output=True)
        der = subprocess.run(["openssl", "x509", "-in", str(self.cert), "-outform", "DER"], check=True,
                             capture_output=True).stdout
        self._x5c = base64.b64encode(der).decode("ascii")
        tokens = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urlparse(self.path)
                query = parse_qs(url.query)
                user = tokens._user(self.headers.get("Authorization", ""))
                tokens.requests.append({"path": url.path, "scopes": query.get("scope", []), "user": user})
                if url.path != "/token" or user is None:
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps(tokens._token(user, query.get("service", [""])[0], query.get("scope", []))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.realm = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _user(self, header: str) -> str | None:
        if not header.startswith("Basic "):
            return None
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        return user if self.users.get(user) == password else None

    def _token(self, user: str, service: str, scopes: list[str]) -> dict[str, object]:
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            access.append({"type": kind, "name": name, "actions": [a for a in actions.split(",") if a]})
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "x5c": [self._x5c]}
        claims = {"iss": ISSUER, "sub": user, "aud": service, "exp": now + 600, "nbf": now - 30, "iat": now,
                  "jti": secrets.token_hex(8), "access": access}
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(self.key)], input=signing_input.encode(),
                                   check=True, capture_output=True).stdout
        token = f"{signing_input}.{_b64url(signature)}"
        return {"token": token, "access_token": token, "expires_in": 600}

    def registry_config(self) -> list[str]:
        """The ``auth:`` lines of a docker-registry config that trusts this service."""
        return ["auth:", "  token:", f"    realm: {self.realm}", f"    service: {SERVICE}", f"    issuer: {ISSUER}",
                f"    rootcertbundle: {self.cert}"]

    def __enter__(self) -> TokenServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
