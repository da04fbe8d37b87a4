"""Hand a build its CA bundle over the host's loopback, so that no image layer holds it.

The classic builder (dockerd 20.10 through docker-py: no BuildKit, so no ``RUN --mount`` or build
secrets) keeps every COPY'd file in its layer even when a later step deletes it, and shows build-arg
values in ``docker history``. So the templates' install step fetches the bundle from the URL this
module serves (``http://127.0.0.1:PORT/SHA256.pem``, the build running with the host's network),
uses it and deletes it within the same RUN.

The URL goes into the install step's cache key (a build arg the RUN reads), so it is kept the same
for the same bytes: the port is derived from the bundle's sha256, and a server already answering
there with the same bytes (a concurrent build of this user's) shares the port (SO_REUSEPORT) instead of moving on. A CA
bundle holds public certificates only; serving it on loopback for the length of a build discloses
nothing.
"""

from __future__ import annotations

import errno
import hashlib
import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from imgbuild.errors import EnvironmentUnavailable

PORT_BASE = 20000
PORT_SPAN = 20000
PORT_TRIES = 16


def preferred_port(data: bytes) -> int:
    """The first port tried for these bytes: the same bundle, the same port, the same cache key."""
    return PORT_BASE + int(hashlib.sha256(data).hexdigest()[:8], 16) % PORT_SPAN


def _handler(path: str, data: bytes) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path != path:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-pem-file")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
            return  # library code never prints

    return Handler


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self) -> None:
        # Two builds of the same bundle share the port, each with its own server: the first
        # one to finish then leaves the other's build still served.
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


def _answer(url: str) -> bytes | None:
    """What a server at ``url`` answers now; None when nothing answers (or not 200)."""
    try:
        response = httpx.get(url, timeout=2.0, trust_env=False)  # loopback: never through a proxy
    except httpx.HTTPError:
        return None
    return response.content if response.status_code == 200 else None


def _start(port: int, path: str, data: bytes) -> _Server | None:
    try:
        server = _Server(("127.0.0.1", port), _handler(path, data))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return None
        raise EnvironmentUnavailable(f"cannot serve the CA bundle on 127.0.0.1:{port}: {exc}") from exc
    threading.Thread(target=server.serve_forever, name="imgbuild-ca-server", daemon=True).start()
    return server


@contextmanager
def serve_ca_bundle(data: bytes) -> Iterator[str]:
    """Serve ``data`` on 127.0.0.1 while the block runs; yield its URL."""
    path = f"/{hashlib.sha256(data).hexdigest()}.pem"
    first = preferred_port(data)
    for offset in range(PORT_TRIES):
        port = PORT_BASE + (first - PORT_BASE + offset) % PORT_SPAN
        url = f"http://127.0.0.1:{port}{path}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                taken = True
        except OSError:
            taken = False
        same = taken and _answer(url) == data
        if taken and not same:
            continue  # another service, or another bundle's server
        server = _start(port, path, data)
        if server is None:
            # a server that does not share its port (another user's) could end before this build does
            continue
        try:
            yield url
        finally:
            server.shutdown()
            server.server_close()
        return
    raise EnvironmentUnavailable(
        f"cannot serve the CA bundle: ports {first} and the {PORT_TRIES - 1} after it are taken on 127.0.0.1",
        hint="free one of those ports, or build without --ca-bundle",
    )
