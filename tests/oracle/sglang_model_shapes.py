"""Reads model configs with SGLang's own ModelConfig (configs/model_config.py) inside an environment
that has the real sglang stack installed, and prints the shapes SGLang sizes the KV pool from.

Stands in for nothing: ModelConfig needs no GPU to read a config. Each argument is a folder holding
one config.json. Prints one JSON object: {folder: {"hidden_size", "num_hidden_layers", "vocab_size",
"head_dim", "v_head_dim", "num_kv_heads", "hybrid_swa", "swa_layers", "full_layers", "swa_head_dim",
"swa_num_kv_heads", "attention_arch", "context_len", "kv_lora_rank", "qk_rope_head_dim", "full_attention_layers"}
or {"error": text}} (an error where this release cannot read it:
an architecture it lacks, a config needing remote code).

Usage: VENV/bin/python tests/oracle/sglang_model_shapes.py DIR [DIR ...]
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import warnings


def shapes(folder: str) -> dict:
    from sglang.srt.configs import model_config as mc

    cfg = mc.ModelConfig(folder)
    text = cfg.hf_text_config
    archs = list(getattr(cfg.hf_config, "architectures", None) or [])
    hybrid = bool(getattr(mc, "is_hybrid_swa_model", lambda a: False)(archs))
    swa_ids, full_ids = mc.get_hybrid_layer_ids(archs, text) if hybrid else (None, None)
    swa_heads = None
    if hybrid and hasattr(cfg, "get_swa_num_kv_heads"):
        swa_heads = cfg.get_swa_num_kv_heads(1)
    return {
        "hidden_size": getattr(text, "hidden_size", None),
        "num_hidden_layers": getattr(text, "num_hidden_layers", None),
        "vocab_size": cfg.vocab_size,
        "head_dim": cfg.head_dim,
        "v_head_dim": getattr(cfg, "v_head_dim", None),
        "num_kv_heads": cfg.get_total_num_kv_heads(),
        "hybrid_swa": hybrid,
        "swa_layers": None if swa_ids is None else len(swa_ids),
        "full_layers": None if full_ids is None else len(full_ids),
        "swa_head_dim": getattr(cfg, "swa_head_dim", None),
        "swa_num_kv_heads": swa_heads,
        "attention_arch": str(getattr(cfg, "attention_arch", "")),
        "context_len": cfg.context_len,
        # MLA's latent cache (kv_lora_rank + qk_rope_head_dim a token and layer)
        "kv_lora_rank": getattr(cfg, "kv_lora_rank", None),
        "qk_rope_head_dim": getattr(cfg, "qk_rope_head_dim", None),
        # a hybrid linear-attention model's KV layers (configs/qwen3_next.py and the like)
        "full_attention_layers": _count(getattr(text, "full_attention_layer_ids", None)),
    }


def _count(ids: object) -> int | None:
    return len(ids) if isinstance(ids, (list, tuple)) else None


def main() -> None:
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    out = {}
    for folder in sys.argv[1:]:
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                out[folder] = shapes(folder)
        except Exception as exc:  # noqa: BLE001 (a release that cannot read a config says why, per config)
            out[folder] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
