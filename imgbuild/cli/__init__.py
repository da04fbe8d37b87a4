"""The command line: click only. Parses, calls one flow, prints; the only layer that exits."""

from __future__ import annotations

from imgbuild.cli.main import cli, main

__all__ = ["cli", "main"]
