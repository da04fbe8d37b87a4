"""Generate the release-derived part of matrix.yaml and imgbuild/data/server_args.json.

Source: the SGLang wheels on PyPI, one per final release from 0.4.0 on (post releases
included, pre/dev releases not). Each wheel is read as a zip file and never installed or
imported:

- ``*.dist-info/METADATA``: Requires-Python and the Requires-Dist pins that apply to a
  CUDA install on Linux x86_64 (the base requirements plus the ``srt`` extra, which older
  releases needed for the runtime: ``pip install "sglang[srt]"``);
- the wheel's file name: the glibc of its manylinux tag (null for a pure wheel);
- ``sglang/srt/models/*.py``: the ``EntryClass`` names, which
  ``sglang/srt/models/registry.py:import_model_classes`` registers by ``cls.__name__``;
- ``sglang/srt/server_args.py``: every ``add_argument(...)`` call.

The CUDA of an engine is the CUDA that its torch pin's default PyPI wheel (Linux x86_64)
is built for, read from that torch release's own Requires-Dist on PyPI
(``nvidia-cuda-runtime-cu12==12.8.90`` means 12.8, ``cuda-toolkit[...]==13.0.2`` 13.0).

Only the part of matrix.yaml below the GENERATED marker line is rewritten; everything
above it is kept byte for byte, read at the moment of writing.

Modules, each one step of the pipeline:
  wheels       choose one wheel per release, download it, read its METADATA and files
  ast_eval     evaluate literals and module constants of the wheel's sources statically
  server_args  the flags of sglang/srt/server_args.py (add_argument calls, declared fields)
  torch_cuda   the CUDA a torch release is built for, from its PyPI metadata
  emit         the YAML and JSON text, and writing it below the marker
  main         the command line

Steps of their own, each run with `python -m scripts.gen_matrix.<module>`:
  messages               SGLang's start-up failure texts -> imgbuild/data/sglang_messages.json
  vllm_messages          vLLM's configuration refusals, from its sdists -> imgbuild/data/vllm_config_refusals.json
  transformers_defaults  the config-class defaults of the transformers release SGLang pins
                         (read from its wheel the same way) -> imgbuild/data/transformers_defaults.json

Usage: .venv/bin/python scripts/gen_matrix [--versions 0.5.9,0.5.11] [--offline]
       [--wheel-dir DIR] [--cache DIR] [--matrix PATH] [--server-args PATH]
"""

from __future__ import annotations


class GenError(Exception):
    """A problem the user must fix (bad option, missing marker, no network)."""
