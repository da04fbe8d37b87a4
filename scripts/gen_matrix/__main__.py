"""`python scripts/gen_matrix`: run the generator from a checkout, from any directory.

Python runs a directory's __main__.py with that directory (not its parent) on sys.path,
so the parent goes on it first to make `gen_matrix` importable as a package (which also
lets `python -m scripts.gen_matrix` work from the checkout's root)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gen_matrix.main import main  # noqa: E402  (needs the sys.path entry above)

sys.exit(main())
