"""SGLang's post-parse argument checks (knowledge/argchecks.py), case by case.

Each expected text is SGLang 0.5.11's own, as its prepare_server_args raised it on this machine
(tests/oracle/sglang_parse.py on the real wheel); tests/test_sglang_oracle.py holds the whole table
against the real parser.
"""

from __future__ import annotations

import pytest

from imgbuild.knowledge.argchecks import CHECKS, first_refusal

CASES = [
    ("hicache-and-no-radix", "0.5.11", {"enable_hierarchical_cache": True, "disable_radix_cache": True},
     "ValueError: The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive and cannot be "
     "used at the same time. Please use only one of them."),
    ("hicache-alone-is-fine", "0.5.11", {"enable_hierarchical_cache": True}, None),
    ("ssl-keyfile-alone", "0.5.11", {"ssl_keyfile": "k.pem"},
     "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."),
    ("ssl-pair-is-fine", "0.5.11", {"ssl_keyfile": "k.pem", "ssl_certfile": "c.pem"}, None),
    ("ssl-rule-absent-before-0.5.10", "0.5.9", {"ssl_keyfile": "k.pem"}, None),
    ("attn-cp-4-on-tp-2", "0.5.11", {"tensor_parallel_size": 2, "attention_context_parallel_size": 4},
     "AssertionError: tp_size must be divisible by attn_cp_size"),
    ("attn-cp-2-on-tp-4", "0.5.11", {"tensor_parallel_size": 4, "attention_context_parallel_size": 2}, None),
    ("skip-dp-mlp-sync-with-nextn", "0.5.11", {"speculative_skip_dp_mlp_sync": True, "speculative_algorithm": "NEXTN"}, None),
    ("skip-dp-mlp-sync-without-spec", "0.5.11", {"speculative_skip_dp_mlp_sync": True},
     "AssertionError: --speculative-skip-dp-mlp-sync is only supported with speculative_algorithm == EAGLE, got None."),
    ("flashinfer-a2a-with-auto-runner", "0.5.11", {"moe_a2a_backend": "flashinfer"},
     "AssertionError: Flashinfer MoE A2A is only supported with flashinfer_cutlass moe runner backend"),
    ("flashinfer-a2a-with-cutlass-runner", "0.5.11", {"moe_a2a_backend": "flashinfer", "moe_runner_backend": "flashinfer_cutlass"},
     None),
    ("eplb-without-ep", "0.5.11", {"enable_eplb": True}, "AssertionError: "),
    ("eplb-with-ep-4", "0.5.11", {"enable_eplb": True, "expert_parallel_size": 4}, None),
    ("log-level-unknown", "0.5.11", {"log_level": "x"}, "AttributeError: module 'logging' has no attribute 'X'"),
    ("log-level-known", "0.5.11", {"log_level": "debug"}, None),
    ("decode-offload-on-prefill", "0.5.11", {"disaggregation_decode_enable_offload_kvcache": True,
                                            "disaggregation_mode": "prefill"},
     "ValueError: The argument disaggregation-decode-enable-offload-kvcache is only supported for decode side."),
]


@pytest.mark.parametrize(("version", "values", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_first_refusal_gives_sglangs_own_error(version: str, values: dict, expected: str | None) -> None:
    assert first_refusal(version, values) == expected


def test_first_applying_rule_wins_in_post_init_order() -> None:
    both = {"ssl_keyfile": "k.pem", "enable_hierarchical_cache": True, "disable_radix_cache": True}
    assert first_refusal("0.5.11", both) == "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."


def test_every_rule_names_its_handler_and_a_valid_release_range() -> None:
    from packaging.version import Version

    for check in CHECKS:
        # a ServerArgs method of server_args.py, or (0.5.16+) the file and function under sglang/srt that raises
        assert check.handler.startswith(("_handle_", "prepare_server_args", "arg_groups/", "configs/", "speculative/")), \
            check.name
        assert Version(check.since) <= Version(check.until), check.name
