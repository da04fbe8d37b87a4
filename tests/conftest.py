"""Shared test set-up. tests/ is on sys.path so tests can import their stand-ins."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
