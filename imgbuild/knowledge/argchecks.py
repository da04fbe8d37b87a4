"""The checks SGLang's ServerArgs.__post_init__ runs on the launch flags after argparse, that do
not depend on the memory plan: each raises and the server never starts.

Each rule follows sglang/srt/server_args.py of 0.5.11 (the handler it names) and applies to the
releases whose server_args.py (or arg_groups/*.py) carries its exact message: the ranges below
were read off the release wheels (.cache/wheels) by searching for the message text, and the
0.5.11 behaviour was held against SGLang's own parser (tests/test_sglang_oracle.py). Rules are
listed in __post_init__'s order, so the first one that applies is the error SGLang prints.

Deliberately not here: checks that need the machine (--enable-http2 needs the granian package,
--mamba-backend flashinfer needs flashinfer's mamba module, SSL files must exist), and those that
depend on the attention backend SGLang resolves for the model (--enable-mis).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import Version

Values = Mapping[str, Any]


@dataclass(frozen=True)
class ArgCheck:
    name: str
    handler: str  # the ServerArgs method in server_args.py
    since: str
    until: str  # the last release checked that has the rule (the newest in the matrix)
    applies: Callable[[Values], bool]
    message: Callable[[Values], str]

    def in_release(self, version: str) -> bool:
        return Version(self.since) <= Version(version) <= Version(self.until)


def _v(values: Values, dest: str, default: Any = None) -> Any:
    value = values.get(dest, default)
    return default if value is None else value


def _int(values: Values, dest: str) -> int:
    return int(_v(values, dest, 1))


def _log_level_known(values: Values) -> bool:
    # server_args.py prepare_server_args: getattr(logging, raw_args.log_level.upper())
    import logging

    return hasattr(logging, str(_v(values, "log_level", "info")).upper())


def _spec_algorithm(values: Values) -> str | None:
    algo = _v(values, "speculative_algorithm")
    return "EAGLE" if algo == "NEXTN" else algo  # _handle_speculative_decoding renames NEXTN first


CHECKS: tuple[ArgCheck, ...] = (
    ArgCheck("log-level", "prepare_server_args", "0.5.11", "0.5.23",
             lambda v: not _log_level_known(v),
             lambda v: f"AttributeError: module 'logging' has no attribute '{str(_v(v, 'log_level')).upper()}'"),
    ArgCheck("ssl-keyfile-alone", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: bool(_v(v, "ssl_keyfile")) and not _v(v, "ssl_certfile"),
             lambda v: "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."),
    ArgCheck("ssl-certfile-alone", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: bool(_v(v, "ssl_certfile")) and not _v(v, "ssl_keyfile"),
             lambda v: "ValueError: --ssl-certfile requires --ssl-keyfile to be specified as well."),
    ArgCheck("ssl-ca-certs-alone", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: not _v(v, "ssl_certfile") and not _v(v, "ssl_keyfile") and bool(_v(v, "ssl_ca_certs")),
             lambda v: "ValueError: --ssl-ca-certs has no effect without --ssl-certfile and --ssl-keyfile."),
    ArgCheck("ssl-keyfile-password-alone", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: not _v(v, "ssl_certfile") and not _v(v, "ssl_keyfile") and bool(_v(v, "ssl_keyfile_password")),
             lambda v: "ValueError: --ssl-keyfile-password has no effect without --ssl-certfile and --ssl-keyfile."),
    ArgCheck("ssl-refresh-without-files", "_handle_ssl_validation", "0.5.10", "0.5.23",
             lambda v: bool(_v(v, "enable_ssl_refresh")) and not (_v(v, "ssl_certfile") and _v(v, "ssl_keyfile")),
             lambda v: "ValueError: --enable-ssl-refresh requires --ssl-certfile and --ssl-keyfile to be specified."),
    ArgCheck("attn-cp-divides-tp", "_handle_context_parallelism", "0.5.9", "0.5.23",
             lambda v: _int(v, "attention_context_parallel_size") > 1
             and _int(v, "tensor_parallel_size") % _int(v, "attention_context_parallel_size") != 0,
             lambda v: "AssertionError: tp_size must be divisible by attn_cp_size"),
    ArgCheck("moe-dp-divides-tp", "_handle_context_parallelism", "0.5.9", "0.5.23",
             lambda v: _int(v, "moe_data_parallel_size") > 1
             and _int(v, "tensor_parallel_size") % _int(v, "moe_data_parallel_size") != 0,
             lambda v: "AssertionError: tp_size must be divisible by moe_dp_size"),
    ArgCheck("flashinfer-a2a-runner", "_handle_a2a_moe", "0.5.9", "0.5.12.post1",
             lambda v: _v(v, "moe_a2a_backend") == "flashinfer" and _v(v, "moe_runner_backend", "auto") != "flashinfer_cutlass",
             lambda v: "AssertionError: Flashinfer MoE A2A is only supported with flashinfer_cutlass moe runner backend"),
    ArgCheck("eplb-needs-ep", "_handle_eplb_and_dispatch", "0.4.10.post2", "0.5.14",
             lambda v: bool(_v(v, "enable_eplb")) and _int(v, "expert_parallel_size") <= 1,
             lambda v: "AssertionError: "),  # a bare `assert self.ep_size > 1`
    ArgCheck("elastic-ep-rejoin-backend", "_handle_elastic_ep", "0.5.11", "0.5.15.post1",
             lambda v: bool(_v(v, "elastic_ep_rejoin")) and _v(v, "elastic_ep_backend") in (None, "none"),
             lambda v: "AssertionError: Elastic EP rejoin requires elastic_ep_backend to be set."),
    ArgCheck("spec-skip-dp-mlp-sync", "_handle_speculative_decoding", "0.5.11", "0.5.22",
             lambda v: bool(_v(v, "speculative_skip_dp_mlp_sync")) and _spec_algorithm(v) != "EAGLE",
             lambda v: "AssertionError: --speculative-skip-dp-mlp-sync is only supported with speculative_algorithm == "
                       f"EAGLE, got {_spec_algorithm(v)}."),
    ArgCheck("prefix-mm-cache-encoder-only", "_handle_encoder_disaggregation", "0.5.7", "0.5.23",
             lambda v: bool(_v(v, "enable_prefix_mm_cache")) and not _v(v, "encoder_only"),
             lambda v: "ValueError: --enable-prefix-mm-cache requires --encoder-only to be enabled"),
    ArgCheck("language-only-encoder-urls", "_handle_encoder_disaggregation", "0.5.7", "0.5.12.post1",
             lambda v: bool(_v(v, "language_only")) and not _v(v, "encoder_urls") and not _v(v, "encoder_only"),
             lambda v: "ValueError: requires at least one encoder urls to be set via --encoder-urls"),
    ArgCheck("hicache-without-radix", "_handle_cache_compatibility", "0.5.1", "0.5.23",
             lambda v: bool(_v(v, "enable_hierarchical_cache")) and bool(_v(v, "disable_radix_cache")),
             lambda v: "ValueError: The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive "
                       "and cannot be used at the same time. Please use only one of them."),
    ArgCheck("decode-offload-kvcache-mode", "_handle_cache_compatibility", "0.5.3", "0.5.23",
             lambda v: bool(_v(v, "disaggregation_decode_enable_offload_kvcache")) and _v(v, "disaggregation_mode") != "decode",
             lambda v: "ValueError: The argument disaggregation-decode-enable-offload-kvcache is only supported for decode side."),
)


def first_refusal(version: str, values: Values) -> str | None:
    """The error SGLang `version` raises after parsing these flag values, if one of the rules applies."""
    for check in CHECKS:
        if check.in_release(version) and check.applies(values):
            return check.message(values)
    return None
