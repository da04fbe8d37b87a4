"""A stand-in for the Hugging Face Hub's file endpoint, for tests.

The real Hub cannot be reached from CI. This serves the same protocol that
imgbuild.adapters.hub uses, ``GET /{org}/{name}/resolve/{revision}/{file}``, from a
folder, on 127.0.0.1, answering 404 for missing files and 401 for repositories
marked gated when the bearer token is wrong. It records the requests it saw.
``answer`` (filename -> callable taking the request handler) replaces the answer for
that file: a hostile server (a huge body, a slow drip, an HTML page) for the tests.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable


class HubServer:
    def __init__(self, root: Path, *, gated_token: str | None = None,
                 answer: dict[str, Callable[[BaseHTTPRequestHandler], None]] | None = None) -> None:
        self.root = root
        self.answer = answer or {}
        self.gated_token = gated_token
        self.requests: list[tuple[str, str | None]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                auth = self.headers.get("Authorization")
                hub.requests.append((self.path, auth))
                parts = self.path.strip("/").split("/")
                if len(parts) < 5 or parts[2] != "resolve":
                    self.send_error(400)
                    return
                org, name, _, revision, *rest = parts
                repo_dir = hub.root / org / name
                if (repo_dir / ".gated").exists() and auth != f"Bearer {hub.gated_token}":
                    self.send_error(401)
                    return
                if rest[-1] in hub.answer:
                    hub.answer[rest[-1]](self)
                    return
                path = repo_dir / revision / "/".join(rest)
                if not path.is_file():
                    self.send_error(404)
                    return
                body = path.read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
