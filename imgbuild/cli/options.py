"""Click options shared by several commands, each declared once (pip-tools' style).

Stack them as decorators: ``@options.json_output``. Only cli.py imports this module.
"""

from __future__ import annotations

import click

json_output = click.option(
    "--json", "as_json", is_flag=True, help="Print the result as one JSON object on stdout."
)
matrix_file = click.option(
    "--matrix",
    "matrix_path",
    type=click.Path(dir_okay=False),
    envvar="IMGBUILD_MATRIX",
    default=None,
    help="The compatibility matrix to use (default: the matrix.yaml shipped with imgbuild).",
)
gpu_target = click.option(
    "--gpu",
    "gpu",
    default=None,
    metavar="NAME[xN]",
    help="Plan for GPUs you are not on, e.g. 'RTX A6000x2' or 'h100-sxm x8' (default: the live GPUs via NVML).",
)
sglang_version = click.option(
    "--sglang", "sglang", default=None, metavar="VERSION", help="An SGLang release, e.g. 0.5.11."
)
