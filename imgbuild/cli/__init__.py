"""The command line: click only. Parses, calls one flow, prints; the only layer that exits.

``app`` holds the click group, ``main`` and the output helpers; each other module adds
one group of commands to it, and ``options`` declares every option once.
"""

from __future__ import annotations

from imgbuild.cli.app import cli, main
from imgbuild.cli import build, cache, certify, check, diagnose, fleet, make, matrix, plan, publish, target  # noqa: F401 - they add the commands

__all__ = ["cli", "main"]
