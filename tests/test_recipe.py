"""imgbuild.knowledge.recipe: targets and bases as matrix.yaml records them, references
pinned by digest, the recipe digest, and the line edit of `bases refresh`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from imgbuild.errors import UsageError
from imgbuild.knowledge.matrix import load_matrix
from imgbuild.knowledge.recipe import (
    RecipeInputs,
    TargetSpec,
    glibc_satisfies,
    image_tag,
    is_pinned_ref,
    parse_bases,
    parse_targets,
    split_ref,
    update_base_digests,
    validate_target,
    with_base_override,
)

ROOT = Path(__file__).resolve().parent.parent
DIGEST = "sha256:" + "ab" * 32
OTHER_DIGEST = "sha256:" + "cd" * 32


@pytest.fixture(scope="module")
def raw() -> dict:
    return load_matrix().raw


@pytest.fixture(scope="module")
def targets(raw: dict) -> dict[str, TargetSpec]:
    return parse_targets(raw["targets"])


@pytest.mark.parametrize(("name", "lock"), [
    ("qwen3.6-27b-a6000x2", "sglang-0.5.11-cp312-x86_64.txt"),
    ("test-sglang-0.5.9", "test-sglang-0.5.9-x86_64.txt"),
], ids=["sglang-target-uses-the-engine-lock", "test-target-uses-its-own-lock"])
def test_each_matrix_target_names_a_lock_that_is_in_locks(targets: dict[str, TargetSpec], name: str, lock: str) -> None:
    assert targets[name].lock_name() == lock
    assert (ROOT / "locks" / lock).is_file()


def test_a_target_survives_to_dict_and_from_dict(targets: dict[str, TargetSpec]) -> None:
    for spec in targets.values():
        assert TargetSpec.from_dict(spec.to_dict()) == spec


def test_an_unknown_target_field_is_named() -> None:
    with pytest.raises(UsageError, match=r"target fields \['colour'\] are unknown"):
        TargetSpec.from_dict({"name": "x", "kind": "test", "engine": "0.5.9", "base": "b", "python": "3.11",
                              "colour": "red"})


@pytest.mark.parametrize(("change", "message"), [
    ({"name": "Upper"}, "must be lowercase letters"),
    ({"kind": "other"}, "kind 'other' is not one of sglang, test"),
    ({"platform": "linux/riscv64"}, "platform 'linux/riscv64' is not one of"),
    ({"packages": ()}, "a test target needs packages:"),
    ({"kind": "sglang"}, "packages: is for test targets"),
], ids=["name", "kind", "platform", "test-without-packages", "sglang-with-packages"])
def test_validate_target_refuses_each_bad_field(targets: dict[str, TargetSpec], change: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        validate_target(replace(targets["test-sglang-0.5.9"], **change))


def test_a_target_name_used_twice_is_refused(raw: dict) -> None:
    rows = [row for row in raw["targets"] if row["name"] == "test-sglang-0.5.9"] * 2
    with pytest.raises(UsageError, match=r"targets\[1\]: name 'test-sglang-0.5.9' is used twice"):
        parse_targets(rows)


def test_real_bases_give_pinned_references(raw: dict) -> None:
    bases = parse_bases(raw["bases"])
    ref = bases["cuda-13.0.1-devel-ubuntu24.04"].ref()
    assert ref.startswith("nvidia/cuda:13.0.1-devel-ubuntu24.04@sha256:")
    assert is_pinned_ref(ref)


def test_a_base_made_per_machine_needs_base_given(raw: dict) -> None:
    with pytest.raises(UsageError, match="has no digest") as err:
        parse_bases(raw["bases"])["debootstrap-bookworm"].ref()
    assert "--base" in (err.value.hint or "")


@pytest.mark.parametrize(("row", "message"), [
    ({"image": "x"}, r"bases\[0\] needs name and image"),
    ({"name": "x", "image": "x", "digest": "sha256:short"}, "is not sha256:<64 hex>"),
], ids=["no-name", "short-digest"])
def test_a_malformed_base_row_is_refused(row: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_bases([row])


@pytest.mark.parametrize(("ref", "parts"), [
    (f"nvidia/cuda:13.0.1-devel-ubuntu24.04@{DIGEST}", ("nvidia/cuda", "13.0.1-devel-ubuntu24.04", DIGEST)),
    (f"127.0.0.1:5055/imgbuild-test-base@{DIGEST}", ("127.0.0.1:5055/imgbuild-test-base", None, DIGEST)),
    (f"127.0.0.1:5055/x/y:tag@{DIGEST}", ("127.0.0.1:5055/x/y", "tag", DIGEST)),
], ids=["hub-with-tag", "registry-port-no-tag", "registry-port-and-tag"])
def test_split_ref_separates_repository_tag_and_digest(ref: str, parts: tuple) -> None:
    assert split_ref(ref) == parts


@pytest.mark.parametrize("ref", ["nvidia/cuda:13.0.1", "nvidia/cuda@sha256:abc", "Upper/case@" + DIGEST],
                         ids=["tag-only", "short-digest", "uppercase-name"])
def test_a_reference_not_pinned_by_digest_is_refused(ref: str) -> None:
    assert not is_pinned_ref(ref)
    with pytest.raises(UsageError, match="is not pinned by digest"):
        split_ref(ref)


def test_base_override_replaces_the_base_only_when_pinned(targets: dict[str, TargetSpec]) -> None:
    spec = targets["test-sglang-0.5.9"]
    assert with_base_override(spec, None) is spec
    assert with_base_override(spec, f"127.0.0.1:5055/b@{DIGEST}").base == f"127.0.0.1:5055/b@{DIGEST}"
    with pytest.raises(UsageError):
        with_base_override(spec, "127.0.0.1:5055/b:latest")


@pytest.mark.parametrize(("have", "need", "ok"), [
    ("2.39", "2.34", True), ("2.36", "2.36", True), ("2.36", "2.39", False), ("2.4", "2.17", False),
], ids=["newer", "equal", "older", "numeric-not-text"])
def test_glibc_satisfies_compares_numerically(have: str, need: str, ok: bool) -> None:
    assert glibc_satisfies(have, need) is ok


def _inputs(target: TargetSpec) -> RecipeInputs:
    return RecipeInputs(target=target, base_ref=f"b@{DIGEST}", template_name="test.Dockerfile",
                        template_text="FROM x\n", lock_text="six==1.17.0\n", imgbuild_version="1.0")


@pytest.mark.parametrize("change", [
    {"base_ref": f"b@{OTHER_DIGEST}"},
    {"template_text": "FROM y\n"},
    {"template_name": "other.Dockerfile"},
    {"lock_text": "six==1.16.0\n"},
    {"imgbuild_version": "1.1"},
    {"extra": {"ca": "x"}},
], ids=["base", "template-text", "template-name", "lock", "imgbuild-version", "extra"])
def test_the_recipe_digest_changes_with_every_input(targets: dict[str, TargetSpec], change: dict) -> None:
    inputs = _inputs(targets["test-sglang-0.5.9"])
    assert replace(inputs, **change).digest() != inputs.digest()


def test_the_recipe_digest_changes_with_a_target_field_and_names_the_tag(targets: dict[str, TargetSpec]) -> None:
    target = targets["test-sglang-0.5.9"]
    digest = _inputs(target).digest()
    assert _inputs(target).digest() == digest
    assert _inputs(replace(target, launch_flags=("--tp", "2"))).digest() != digest
    assert image_tag(target, digest) == f"test-sglang-0.5.9-{digest[7:19]}"


def test_update_base_digests_edits_one_base_and_keeps_every_other_line() -> None:
    text = (ROOT / "matrix.yaml").read_text()
    name = "cuda-12.9.1-devel-ubuntu24.04"
    updated = update_base_digests(text, name, DIGEST, {"linux/arm64": OTHER_DIGEST, "linux/amd64": DIGEST})
    bases = parse_bases(yaml.safe_load(updated)["bases"])
    assert (bases[name].digest, bases[name].platforms) == (DIGEST, {"linux/amd64": DIGEST, "linux/arm64": OTHER_DIGEST})
    before, after = text.splitlines(), updated.splitlines()
    assert len(after) == len(before)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    start = before.index(f"  - name: {name}")
    assert len(changed) == 3 and all(start < i < start + 10 for i in changed)  # digest and two platform lines


def test_update_base_digests_of_an_unknown_base_is_refused() -> None:
    with pytest.raises(UsageError, match="base 'nope' is not in matrix.yaml bases:"):
        update_base_digests((ROOT / "matrix.yaml").read_text(), "nope", DIGEST, {})
