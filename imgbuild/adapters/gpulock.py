"""One lock file per GPU, so two certifications never share a GPU.

``fcntl.flock`` on ``<lock_dir>/<uuid>.lock``: the kernel drops the lock when the
holder exits, however it exits, so a crashed run leaves no stale lock behind. The
holder writes its pid and what it is doing into the file for the next one's message.
Locks are per machine: with a remote DOCKER_HOST they keep this machine's runs apart,
not runs started from elsewhere.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
from pathlib import Path
from types import TracebackType

from imgbuild.errors import NegativeVerdict


def default_lock_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "imgbuild" / "gpu-locks"
    return Path("/tmp") / f"imgbuild-gpu-locks-{os.getuid()}"


class GpuLock:
    """Holds the locks of every GPU in ``uuids`` (all or none); a context manager."""

    def __init__(self, uuids: list[str] | tuple[str, ...], *, lock_dir: Path | None = None, purpose: str = "") -> None:
        self.uuids = tuple(sorted(uuids))  # one order for everyone: no deadlock between two runs
        self.lock_dir = lock_dir or default_lock_dir()
        self.purpose = purpose
        self._fds: list[int] = []

    def acquire(self) -> None:
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        try:
            for uuid in self.uuids:
                path = self.lock_dir / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', uuid)}.lock"
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                    os.close(fd)
                    if exc.errno in (errno.EAGAIN, errno.EACCES):
                        raise NegativeVerdict(
                            f"GPU {uuid} is locked by {holder}",
                            hint=f"wait for that run to end; lock file {path}",
                        ) from None
                    raise
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"pid {os.getpid()} {self.purpose}".strip().encode(), 0)
                self._fds.append(fd)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        while self._fds:
            fd = self._fds.pop()
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> GpuLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
