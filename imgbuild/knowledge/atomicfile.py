"""One way to replace a file: a temporary name of this call's own in the same folder, then os.replace.

Two processes writing the same file never share a temporary name, and a reader sees the old
file or the new one, never half of one. Errors are the OSError of the step that failed (the
temporary file is gone by then); callers word them for their own input.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def replace_text(path: Path, text: str, *, mode: int | None = 0o644) -> None:
    """Write ``text`` to ``path`` atomically; ``mode`` None keeps the existing file's mode
    (0644 for a new one). mkstemp's 0600 would hide the file from other users."""
    if mode is None:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:50]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
