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
    ("encoder-only-and-language-only", "0.5.11", {"encoder_only": True, "language_only": True},
     "ValueError: Cannot set --encoder-only and --language-only together"),
    ("encoder-only-with-pd-decode", "0.5.11", {"encoder_only": True, "disaggregation_mode": "decode"},
     "ValueError: Cannot set --encoder-only and --disaggregation-mode prefill/decode together"),
    ("encoder-only-alone", "0.5.11", {"encoder_only": True}, None),
    # handle_hicache's external-linker checks (0.5.20 on; the radix one from 0.5.23)
    ("linker-without-radix", "0.5.23", {"enable_unified_cache_external_linker": True, "disable_radix_cache": True},
     "ValueError: --enable-unified-cache-external-linker requires the default UnifiedRadixCache with radix caching "
     "enabled."),
    ("linker-without-radix-0.5.21", "0.5.21", {"enable_unified_cache_external_linker": True, "disable_radix_cache": True},
     None),
    ("linker-with-hicache-storage", "0.5.21", {"enable_unified_cache_external_linker": True,
                                               "hicache_storage_backend": "file"},
     "ValueError: --enable-unified-cache-external-linker does not use --hicache-storage-backend."),
    # the two legacy prefill-CP flags together (0.5.13-0.5.18; found by a held-back sample against 0.5.14's parser)
    ("legacy-prefill-cp-pair", "0.5.14", {"enable_prefill_context_parallel": True,
                                          "enable_dsa_prefill_context_parallel": True},
     "ValueError: --enable-prefill-context-parallel and --enable-nsa-prefill-context-parallel are mutually exclusive. "
     "Use --enable-nsa-prefill-context-parallel for DeepSeek V3.2 (NSA) models and --enable-prefill-context-parallel "
     "for MLA-based models (DeepSeek V3/R1, Kimi K2.5) or MHA/GQA-based models."),
    ("legacy-prefill-cp-pair-0.5.19", "0.5.19", {"enable_prefill_context_parallel": True,
                                                 "enable_dsa_prefill_context_parallel": True}, None),
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
        assert check.handler.startswith(("_handle_", "prepare_server_args", "arg_groups/", "configs/", "speculative/",
                                         "dllm/")), \
            check.name
        assert Version(check.since) <= Version(check.until), check.name


# Cases the differential (tests/test_sglang_oracle.py, one seed model, 0.5.9/0.5.11/0.5.23, mostly one
# flag at a time) does not reach: other releases' support lists, other architectures, the values that pass.
ARCH_CASES = [
    ("layernorm-sp-0.5.22-list", "0.5.22", {"enable_layernorm_sp": True}, ("MuseSparkForConditionalGeneration",),
     "ValueError: --enable-layernorm-sp is only supported for ['Qwen3ForCausalLM']; got MuseSparkForConditionalGeneration."),
    ("layernorm-sp-supported", "0.5.23", {"enable_layernorm_sp": True}, ("Qwen3ForCausalLM",), None),
    ("layernorm-sp-before-0.5.19", "0.5.18", {"enable_layernorm_sp": True}, ("LlamaForCausalLM",), None),
    ("megamoe-0.5.20-list", "0.5.20", {"moe_a2a_backend": "flashinfer_megamoe"}, ("GlmMoeDsaForCausalLM",),
     "ValueError: FlashInfer MegaMOE is not validated for model architectures ['GlmMoeDsaForCausalLM']. Supported "
     "architectures: ['DeepseekV2ForCausalLM', 'DeepseekV32ForCausalLM', 'DeepseekV3ForCausalLM', 'DeepseekV4ForCausalLM', "
     "'Glm4MoeForCausalLM', 'NemotronHForCausalLM', 'NemotronHPuzzleForCausalLM', 'Qwen2MoeForCausalLM', "
     "'Qwen3MoeForCausalLM']."),
    ("megamoe-supported", "0.5.23", {"moe_a2a_backend": "flashinfer_megamoe"}, ("Qwen3MoeForCausalLM",), None),
    ("language-model-only-0.5.19", "0.5.19", {"language_model_only": True}, ("DeepseekV4ForCausalLM",),
     "ValueError: --language-model-only does not support ['DeepseekV4ForCausalLM']. "
     "Supported: ['MuseGlimmerForConditionalGeneration']."),
    ("language-model-only-0.5.22", "0.5.22", {"language_model_only": True}, ("DeepseekV4ForCausalLM",), None),
    # handle_encoder_disaggregation runs the list check after elastic EP's (a held-back sample of
    # tests/oracle/differential.py against 0.5.21's parser, seed 2026)
    ("language-model-only-after-elastic-ep", "0.5.21", {"language_model_only": True, "ep_join_rank_offset": 4},
     ("Qwen3_5ForConditionalGeneration",),
     "AssertionError: --elastic-ep-join-rank-offset is only valid with --elastic-ep-join-mode scale."),
    ("dsa-split-on-deepseek-v32", "0.5.23", {"enable_dsa_cache_layer_split": True}, ("DeepseekV32ForCausalLM",), None),
    ("no-config-no-list-check", "0.5.23", {"enable_layernorm_sp": True}, (), None),
]


@pytest.mark.parametrize(("version", "values", "architectures", "expected"), [c[1:] for c in ARCH_CASES],
                         ids=[c[0] for c in ARCH_CASES])
def test_per_architecture_support_lists_follow_the_release(version: str, values: dict, architectures: tuple,
                                                           expected: str | None) -> None:
    assert first_refusal(version, values, architectures) == expected


PASSING_0523 = [
    ("tlru-threshold-above-estimate", {"radix_eviction_policy": "tlru",
                                       "radix_eviction_policy_config": '{"threshold": 8, "next_prompt_estimate": 2}'}),
    ("elastic-ep-initial-size-while-scaling", {"elastic_ep_initial_size": 2, "elastic_ep_backend": "mooncake",
                                               "max_ep_size": 8, "tp_size": 2}),
    ("dcp-replicate-q-proj-with-dcp", {"dcp_replicate_q_proj": True, "dcp_size": 2, "dcp_comm_backend": "a2a"}),
    ("shared-experts-tp-divides", {"shared_experts_tp_size": 2, "tp_size": 4}),
    ("ep-dispatch-static-with-a2a", {"ep_dispatch_algorithm": "static", "moe_a2a_backend": "deepep"}),
    ("block-verification-with-nextn", {"speculative_use_block_verification": True, "speculative_algorithm": "NEXTN"}),
]


@pytest.mark.parametrize("values", [c[1] for c in PASSING_0523], ids=[c[0] for c in PASSING_0523])
def test_0523_checks_let_the_valid_combination_through(values: dict) -> None:
    assert first_refusal("0.5.23", values) is None


def test_tlru_names_the_configured_bounds() -> None:
    values = {"radix_eviction_policy": "tlru", "radix_eviction_policy_config": {"threshold": 2, "next_prompt_estimate": 4}}
    assert first_refusal("0.5.23", values) == (
        "ValueError: --radix-eviction-policy tlru needs 'threshold' greater than 'next_prompt_estimate' in "
        "--radix-eviction-policy-config, got 2 <= 4; otherwise no tokens are ever TEL-safe and T-LRU is exactly LRU.")


def test_model_specific_refusals_of_0_5_21_on_read_the_architecture() -> None:
    """Found by held-back samples through SGLang 0.5.23's own parser on Nemotron 3 Nano 30B-A3B
    (arg_groups/parallel_hook.py, arg_groups/model_hook.py)."""
    nemotron = ("NemotronHForCausalLM",)
    cp = {"tp_size": 2, "attn_cp_size": 4}
    assert first_refusal("0.5.23", cp, nemotron) == "ValueError: Nemotron-H does not support --attn-cp-size > 1"
    assert first_refusal("0.5.23", cp, ("LlamaForCausalLM",)) \
        == "AssertionError: tp_size must be divisible by attn_cp_size"
    assert first_refusal("0.5.11", {"tensor_parallel_size": 2, "attention_context_parallel_size": 4}, nemotron) \
        == "AssertionError: tp_size must be divisible by attn_cp_size"  # the model rule came in 0.5.21
    replay = {"enable_encoder_swa_bounded_replay": True}
    assert first_refusal("0.5.23", replay, nemotron) \
        == "ValueError: --enable-encoder-swa-bounded-replay requires DeepSeek-V4.1"
    # DeepSeek V4 and V4.1 share the architecture; the model_type decides, which plan does not read
    assert first_refusal("0.5.23", replay, ("DeepseekV4ForCausalLM",)) is None
    assert first_refusal("0.5.22", replay, nemotron) is None  # 0.5.21-0.5.22 check it for DeepSeek V4 only
