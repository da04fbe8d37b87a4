"""Shared test set-up. tests/ is on sys.path so tests can import their stand-ins."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_sessionfinish(session, exitstatus):  # noqa: ANN001, ANN201 - pytest hook
    """In CI a skipped test is a failure: everything the suite needs is installed there."""
    import os

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if os.environ.get("CI") == "true" and skipped and exitstatus == 0:
        reporter.write_line(f"CI=true: {skipped} test(s) skipped; a skip in CI is a failure", red=True)
        session.exitstatus = 1


# --- Ports -----------------------------------------------------------------------------
# Servers the tests run in-process bind to port 0 themselves and report the port they
# got (tokenserver, hubserver). An outside program cannot: docker-registry reads its
# address from a config file, and a certify container's published port is passed to the
# engine. For those, unused_tcp_port() names a port that was free a moment ago; another
# process may take it before the program binds it, so their callers retry on a
# collision (see port_collision and registryserver.RegistryServer.start).

import os  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
from collections.abc import Callable  # noqa: E402

import pytest  # noqa: E402

# docker-registry's bind error, the engine's error for a taken published port, and
# certify's preflight refusal of a port someone listens on.
PORT_COLLISION_MARKERS = ("address already in use", "port is already allocated", "on 127.0.0.1 is in use")


def unused_tcp_port() -> int:
    """A TCP port on 127.0.0.1 that no socket holds now (for a program told its port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_collision(output: str) -> bool:
    """Whether a program's output says its port was taken (the race unused_tcp_port leaves)."""
    lowered = output.lower()
    return any(marker in lowered for marker in PORT_COLLISION_MARKERS)


def run_on_unused_port(
    run: Callable[[int], subprocess.CompletedProcess[str]], *, attempts: int = 3
) -> subprocess.CompletedProcess[str]:
    """run(port) for a command told its port; again on another port while its output says
    the port was taken, so the race unused_tcp_port leaves cannot fail a test."""
    for _attempt in range(attempts - 1):
        done = run(unused_tcp_port())
        if not port_collision(done.stdout + done.stderr):
            return done
    return run(unused_tcp_port())


# --- Docker fixtures ---------------------------------------------------------------------
# The engine, registry and base come from scripts/services (scripts/test starts them
# in CI). Outside CI without an engine the Docker tests skip with the reason; in CI
# (CI=true) they fail instead, so a missing engine cannot pass unnoticed.

SERVICES_ENV_FILE = Path("/run/imgbuild-services.env")
HOST_CA_BUNDLE = Path(os.environ.get("IMGBUILD_TEST_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt"))


def _docker_unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI needs the Docker engine and registry (scripts/services start): {reason}")
    pytest.skip(f"no Docker engine: {reason}")


def _services_env() -> dict[str, str]:
    """The running services' variables (scripts/services), for a shell that did not eval them."""
    if not SERVICES_ENV_FILE.exists():
        return {}
    pairs = (line.split("=", 1) for line in SERVICES_ENV_FILE.read_text().splitlines() if "=" in line)
    return {key: value for key, value in pairs}


@pytest.fixture(scope="session")
def docker_engine():  # noqa: ANN201 - yields an imgbuild.adapters.engine.Engine
    """A connected engine (DOCKER_HOST, else the one scripts/services started).

    The services' variables fill in what the environment lacks for the session and are
    removed again at its end."""
    from imgbuild.adapters.engine import connect
    from imgbuild.errors import EnvironmentUnavailable

    with pytest.MonkeyPatch.context() as patch:
        for key, value in _services_env().items():
            if key not in os.environ:
                patch.setenv(key, value)
        try:
            engine = connect(timeout_s=300)
        except EnvironmentUnavailable as exc:
            _docker_unavailable(exc.one_line())
        yield engine


@pytest.fixture(scope="session")
def test_base_ref(docker_engine) -> str:  # noqa: ANN001
    """The debootstrap base in the local registry, pinned by digest."""
    ref = os.environ.get("IMGBUILD_TEST_BASE")
    if not ref:
        _docker_unavailable("IMGBUILD_TEST_BASE is not set (scripts/services start records it)")
    return ref


@pytest.fixture(scope="session")
def local_registry(docker_engine) -> str:  # noqa: ANN001
    registry = os.environ.get("IMGBUILD_REGISTRY")
    if not registry:
        _docker_unavailable("IMGBUILD_REGISTRY is not set (scripts/services start records it)")
    return registry


@pytest.fixture(scope="session")
def built_test_image(docker_engine, test_base_ref, local_registry, tmp_path_factory):  # noqa: ANN001, ANN201
    """The test target (sglang 0.5.9 --no-deps + small wheels from PyPI through the CA
    bundle) built on the debootstrap base and pushed to the local registry: a BuildRecord."""
    from imgbuild.flows.build import BuildOptions, build_image
    from imgbuild.knowledge.matrix import load_matrix
    from imgbuild.knowledge.recipe import with_base_override
    from imgbuild.knowledge.render import bases_of, find_target, render_context, resolve_inputs

    matrix = load_matrix()
    target = with_base_override(find_target(matrix.raw, "test-sglang-0.5.9"), test_base_ref)
    inputs = resolve_inputs(target, bases=bases_of(matrix.raw), engine=None, locks_dir=matrix.path.parent / "locks")
    record_dir = tmp_path_factory.mktemp("build")
    return build_image(
        docker_engine,
        BuildOptions(
            rendered=render_context(inputs),
            repository=f"{local_registry}/imgbuild-test/sglang",
            ca_bundle=HOST_CA_BUNDLE,
            force=True,
            record_path=record_dir / "record.json",
        ),
    )


# --- No certify container outlives its test -------------------------------------------
# A container labelled io.imgbuild.certify that a test leaves behind fails that test, not a
# later one that happens to count them (a real-stack test once found two it had not made).
_ENGINE_FIXTURES = {"docker_engine", "docker_env", "standin_image", "real_image", "built_test_image", "slurm_up"}


def _engine_api(timeout_s: int):  # noqa: ANN202 - a docker.APIClient, or None without an engine
    import docker

    host = os.environ.get("DOCKER_HOST") or _services_env().get("DOCKER_HOST")
    return docker.APIClient(base_url=host, timeout=timeout_s) if host else None


def _certify_containers() -> dict[str, dict]:
    import docker

    try:
        client = _engine_api(30)
        if client is None:
            return {}
        return {c["Id"]: c for c in client.containers(all=True, filters={"label": "io.imgbuild.certify"})}
    except docker.errors.DockerException:
        return {}


@pytest.fixture(autouse=True)
def _no_certify_container_left(request):  # noqa: ANN001, ANN202
    if not _ENGINE_FIXTURES & set(request.fixturenames):
        yield
        return
    before = set(_certify_containers())
    yield
    import time

    deadline = time.monotonic() + 15  # a container being removed as the test returns
    while (left := {cid: c for cid, c in _certify_containers().items() if cid not in before}):
        if time.monotonic() > deadline:
            pytest.fail("certify containers left behind by this test: " + "; ".join(
                f"{cid[:12]} {c.get('Names')} {c.get('State')} {c.get('Status')} labels={c.get('Labels')}"
                for cid, c in left.items()))
        time.sleep(0.5)


# --- The images the session made are removed at its end --------------------------------
# Every build and push test tags images (about 500 after one full run, kept by the engine's
# data-root from one CI run to the next). What the session added goes at its end; the
# real-stack test handles its own image (tests/test_realstack.py, IMGBUILD_REALSTACK_KEEP).
# CI turns it on (scripts/test, IMGBUILD_TEST_CLEANUP=1 when CI=true): elsewhere the engine may be
# the user's own, where images pulled or built in another terminal during the session are not ours.
_OWN_CLEANUP = ("imgbuild-test/realstack",)


def _image_ids() -> dict[str, list[str]] | None:
    """Image id -> tags; None when the engine cannot be asked (then nothing is removed)."""
    import docker

    try:
        client = _engine_api(60)
        if client is None:
            return None
        return {i["Id"]: list(i.get("RepoTags") or []) for i in client.images(all=False)}
    except docker.errors.DockerException:
        return None


@pytest.fixture(autouse=True, scope="session")
def _remove_the_sessions_images():  # noqa: ANN202
    if os.environ.get("IMGBUILD_TEST_CLEANUP") != "1":
        yield
        return
    before = _image_ids()
    yield
    import docker

    after = _image_ids()
    if before is None or after is None:
        return  # without both listings every image would look new
    made = {i: tags for i, tags in after.items() if i not in before}
    if not made:
        return
    client = _engine_api(120)
    for image_id, tags in made.items():
        if any(t.startswith(_OWN_CLEANUP) for t in tags):
            continue
        try:
            client.remove_image(image_id, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:  # e.g. a container of another run still uses it
            print(f"conftest: image {image_id[:19]} {tags} kept: {exc.explanation or exc}", file=sys.stderr)
