"""A GPU matrix.yaml does not list, given by its memory: ``--gpu 24GiBx2``, ``--gpu 46068MiB``. Pure.

plan needs only memory.total (MiB, as nvidia-smi reports it) and the count: SGLang's defaults
(server_args.py ``_handle_gpu_memory_settings``) and F0 follow from them. GiB (or GB, as people
write it) is 1024 MiB; give MiB for the exact figure nvidia-smi prints (an RTX 4090 is 24564 MiB,
not 24 GiB), since the tiers of chunked_prefill_size and cuda_graph_max_bs turn on it.
"""

from __future__ import annotations

import re

from imgbuild.errors import UsageError

_CUSTOM = re.compile(
    r"^\s*(?P<size>\d{1,7}(?:\.\d{1,3})?)\s*(?P<unit>mib|gib|gb)(?:\s*[x×]\s*(?P<count>\d{1,7}))?\s*$", re.IGNORECASE
)
# A size, then anything but a letter other than the count's x ("24GiBx2x2" is a malformed size, not a name)
_LOOKS_CUSTOM = re.compile(r"^\s*[\d.]+\s*(mib|gib|gb|mb|tib|tb)(?![a-wyz])", re.IGNORECASE)
MIN_MIB, MAX_MIB = 1024, 4 * 1024 * 1024  # 1 GiB .. 4 TiB per GPU
MAX_COUNT = 1024


def parse_custom_gpu(text: str) -> tuple[str, int, int] | None:
    """(display name, count, memory.total MiB) for a memory-sized GPU; None when ``text`` names
    no size (then it is a matrix name); UsageError for a size that is out of range or malformed."""
    match = _CUSTOM.match(text)
    if match is None:
        if _LOOKS_CUSTOM.match(text):
            raise UsageError(
                f"--gpu {text.strip()!r}: a GPU by its memory is SIZE MiB or GiB with an optional count",
                hint="write e.g. '46068MiB', '24GiBx2' (memory.total as nvidia-smi prints it, in MiB, is exact)",
            )
        return None
    size = float(match.group("size"))
    mib = round(size if match.group("unit").lower() == "mib" else size * 1024)
    count = int(match.group("count") or 1)
    if not MIN_MIB <= mib <= MAX_MIB:
        raise UsageError(f"--gpu {text.strip()!r}: {mib:,} MiB per GPU is not a GPU's memory",
                         hint=f"give {MIN_MIB:,} to {MAX_MIB:,} MiB, e.g. '46068MiB'")
    if not 1 <= count <= MAX_COUNT:
        raise UsageError(f"--gpu {text.strip()!r}: the GPU count must be 1 to {MAX_COUNT:,}", hint="write e.g. '24GiBx2'")
    return f"{mib}MiB", count, mib  # the name re-enters as --gpu NAMExN in hints
