"""imgbuild.flows.repro: comparing two environment manifests, and verify_repro's refusals
against the real engine (scripts/services); the full rebuild is in tests/test_build.py."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from imgbuild.errors import UsageError
from imgbuild.flows.repro import DIGEST_LABEL, RECIPE_LABEL, ReproOptions, compare_manifests, verify_repro
from imgbuild.knowledge.matrix import load_matrix
from imgbuild.knowledge.recipe import with_base_override
from imgbuild.knowledge.render import bases_of, find_target

ROOT = Path(__file__).resolve().parent.parent
SIX = {"version": "1.17.0", "sha256": "a" * 64}
MANIFEST = {"packages": {"six": SIX}, "files": {"lib/six.py": "1" * 64}}


@pytest.mark.parametrize(("second", "expected"), [
    (MANIFEST, []),
    ({**MANIFEST, "packages": {}}, ["package six 1.17.0: only in the original"]),
    ({**MANIFEST, "packages": {"six": SIX, "idna": {"version": "3.10", "sha256": "b" * 64}}},
     ["package idna 3.10: only in the rebuild"]),
    ({**MANIFEST, "packages": {"six": {**SIX, "version": "1.16.0"}}}, ["package six: version 1.17.0 != 1.16.0"]),
    ({**MANIFEST, "packages": {"six": {**SIX, "sha256": "c" * 64}}}, ["package six 1.17.0: files differ"]),
    ({**MANIFEST, "files": {}}, ["file lib/six.py: only in the original"]),
    ({**MANIFEST, "files": {"lib/six.py": "1" * 64, "lib/new.py": "2" * 64}}, ["file lib/new.py: only in the rebuild"]),
    ({**MANIFEST, "files": {"lib/six.py": "3" * 64}}, ["file lib/six.py: content 111111111111 != 333333333333"]),
], ids=["identical", "package-missing", "package-added", "version-differs", "package-files-differ",
        "file-missing", "file-added", "file-content-differs"])
def test_compare_manifests_names_each_difference(second: dict[str, Any], expected: list[str]) -> None:
    assert compare_manifests(MANIFEST, second) == expected


def test_differences_are_sorted_packages_first() -> None:
    empty: dict[str, Any] = {"packages": {}, "files": {}}
    full = {"packages": {"b": SIX, "a": SIX}, "files": {"z": "0" * 64, "y": "0" * 64}}
    assert compare_manifests(full, empty) == [
        "package a 1.17.0: only in the original", "package b 1.17.0: only in the original",
        "file y: only in the original", "file z: only in the original"]


@pytest.fixture()
def labelled_image(docker_engine: Any) -> Any:
    """Builds tiny real images carrying given labels; removes them after the test."""
    built: list[str] = []

    def build(labels: dict[str, str]) -> str:
        label_line = "LABEL " + " ".join(f"{key}='{value}'" for key, value in labels.items()) + "\n" if labels else ""
        dockerfile = f"FROM scratch\nCOPY marker /marker\n{label_line}"
        image = docker_engine.build({"Dockerfile": dockerfile.encode(), "marker": uuid.uuid4().hex.encode()},
                                    what="repro test image")
        built.append(image)
        return image

    yield build
    for image in built:
        docker_engine.remove_image(image)


def _options(image: str) -> ReproOptions:
    matrix = load_matrix()
    return ReproOptions(image=image, bases=bases_of(matrix.raw), engine_spec=lambda _v: None,
                        locks_dir=ROOT / "locks")


def _test_recipe(base_ref: str) -> str:
    target = with_base_override(find_target(load_matrix().raw, "test-sglang-0.5.9"), base_ref)
    return json.dumps(target.to_dict(), sort_keys=True)


@pytest.mark.docker
def test_an_image_without_recipe_labels_is_refused(docker_engine: Any, labelled_image: Any) -> None:
    with pytest.raises(UsageError, match=f"has no {RECIPE_LABEL} label") as err:
        verify_repro(docker_engine, _options(labelled_image({})))
    assert err.value.hint == "verify-repro works on images built by imgbuild build"


@pytest.mark.docker
def test_a_recipe_label_that_is_no_target_is_refused(docker_engine: Any, labelled_image: Any) -> None:
    image = labelled_image({RECIPE_LABEL: '{"name": "x", "colour": "red"}',
                           DIGEST_LABEL: "sha256:" + "0" * 64})
    with pytest.raises(UsageError, match="target fields"):
        verify_repro(docker_engine, _options(image))


@pytest.mark.docker
def test_a_recipe_whose_inputs_changed_since_the_build_is_refused_before_rebuilding(
    docker_engine: Any, labelled_image: Any, test_base_ref: str
) -> None:
    stale = "sha256:" + "0" * 64
    image = labelled_image({RECIPE_LABEL: _test_recipe(test_base_ref), DIGEST_LABEL: stale})
    with pytest.raises(UsageError, match=f"changed since it was built: {stale} then, sha256:[0-9a-f]{{64}} now") as err:
        verify_repro(docker_engine, _options(image))
    assert "check out the commit it was built from" in (err.value.hint or "")
