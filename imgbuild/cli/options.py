"""Every click option of imgbuild, each declared once (pip-tools' style): one name, one meaning.

Stack them as decorators: ``@options.json_output``. Only the cli package imports this module.

Old spellings stay for one release as hidden aliases (``alias``) that fill the same
parameter: certify's ``--gpus`` and ``--model DIR`` (now ``--gpu``, ``--model-dir``),
render's and build's ``--gpus`` (``--gpu``), publish's and verify's ``--ca-bundle`` for the
registry's CA (``--registry-ca``; ``--ca-bundle`` is the package downloads' CA), lock's
``--index-url`` (``--pip-index-url``) and check's ``--python PATH`` (``--interpreter``).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _is_empty(value: Any) -> bool:
    return value is None or value == ()


def _main(dest: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """The callback of an option that has a hidden alias: the alias's value when only it was given.

    Whichever of the two click processes first, the value given on the command line wins
    (click processes the options given first, then the rest with their defaults)."""

    def pick(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if _is_empty(value) and not _is_empty(ctx.params.get(dest)):
            return ctx.params[dest]
        return value

    return pick


def _checked(dest: str, check: Callable[[str], None]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """_main's pick, then ``check`` on the value given (an empty or blank one included): a bad
    value is one usage line naming the option, before any command runs."""
    pick = _main(dest)

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        value = pick(ctx, param, value)
        if value is not None:
            check(value)
        return value

    return callback


def _shown(value: str) -> str:
    return repr(value if len(value) <= 64 else value[:64] + "...")


def check_sglang_version(value: str) -> None:
    """A PEP 440 release as SGLang numbers them; packaging's int() of a 5,000-digit part
    raises ValueError, so the length is bounded first."""
    from packaging.version import InvalidVersion, Version

    try:
        if not value.strip() or len(value) > 64:
            raise InvalidVersion(value)
        Version(value)
    except InvalidVersion:
        raise click.BadParameter(f"SGLang version {_shown(value)} is not a version "
                                 "(write it like 0.5.11 or 0.5.10.post1)") from None


# nvidia-smi's driver_version: 580.126.09, 535.54.03, 470.82.01, 390.144.
_DRIVER = re.compile(r"\d{1,4}(?:\.\d{1,4}){0,3}")


def check_driver_version(value: str) -> None:
    if not _DRIVER.fullmatch(value):
        raise click.BadParameter(f"{_shown(value)} is not an NVIDIA driver version "
                                 "(write it as nvidia-smi prints it, e.g. 580.126.09)")


MAX_GPU_TEXT = 100  # the longest GPU name in matrix.yaml is under 40 characters


def check_gpu_text(value: str) -> None:
    """The shape only; the name and the count are checked against the matrix's gpus: when resolved."""
    if not value.strip():
        raise click.BadParameter("an empty GPU (give NAME[xN], e.g. 'RTX A6000x2', or leave --gpu out "
                                 "to read the live GPUs)")
    if len(value) > MAX_GPU_TEXT:
        raise click.BadParameter(f"{_shown(value)} is longer than {MAX_GPU_TEXT} characters: not a GPU "
                                 "(give NAME[xN], e.g. 'RTX A6000x2')")


def check_seconds(value: float) -> None:
    """A wait or a request limit: a finite number above 0 (nan compares false with any bound)."""
    if not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"{value!r} is not a number of seconds (give one above 0, e.g. 600)")


def _seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None:
        check_seconds(value)
    return value


def _no_blank(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    if any(not v.strip() for v in values):
        raise click.BadParameter("an empty value (give the GPU's UUID as nvidia-smi -L prints it, GPU-...)")
    return values


def alias(*names: str, dest: str, **kw: Any) -> Decorator:
    """A hidden old spelling that fills ``dest``, the parameter of the option it was renamed to."""

    def keep(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if not _is_empty(value):
            ctx.params[dest] = value
        return value

    return click.option(*names, f"{dest}__alias", hidden=True, expose_value=False, callback=keep, **kw)


def stack(*decorators: Decorator) -> Decorator:
    """Several options as one decorator, in the order given (as written above a function)."""

    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


_file = click.Path(exists=True, dir_okay=False)
_dir = click.Path(file_okay=False)

# --- everywhere ---------------------------------------------------------------------
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
# The imgbuild group's: it comes before the command (main() moves it there from after it).
targets_file = click.option(
    "--targets", "targets_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
    help="The team's targets file, laid over the matrix by every command "
         "(default: $IMGBUILD_TARGETS, else ./imgbuild.yaml where there is one).",
)

# --- what to run on ----------------------------------------------------------------
gpu_target = stack(
    click.option(
        "--gpu", "gpu", default=None, metavar="NAME[xN]", callback=_checked("gpu", check_gpu_text),
        help="The GPUs, e.g. 'RTX A6000x2' or 'h100-sxm x8' (check and plan: default the live GPUs "
             "via NVML; certify: default the target's; render and build: recorded in the image).",
    ),
    alias("--gpus", dest="gpu", default=None, metavar="NAME[xN]"),
)
# One name for an SGLang release in every command; render, build and matrix show's old --engine stays hidden.
sglang_version = stack(
    click.option("--sglang", "sglang", default=None, metavar="VERSION",
                 callback=_checked("sglang", check_sglang_version),
                 help="An SGLang release, e.g. 0.5.11."),
    alias("--engine", dest="sglang", default=None, metavar="VERSION"),
)
driver_version = click.option(
    "--driver", default=None, metavar="VERSION", callback=_checked("driver", check_driver_version),
    help="The NVIDIA driver of the --gpu target, e.g. 580.126.09."
)
interpreter = stack(
    click.option("--interpreter", "python", default=None, metavar="PATH", callback=_main("python"),
                 help="Check the SGLang installed for this Python interpreter."),
    alias("--python", dest="python", default=None, metavar="PATH"),
)
image_to_check = click.option(
    "--image", "image", default=None, metavar="REF", help="Check the SGLang inside this local image."
)
launch_command = click.option(
    "--command", "command", default=None, metavar="'CMD'",
    help="A whole launch command: 'python -m sglang.launch_server --model-path M ...'.",
)
launch_command_file = click.option(
    "--command-file", "command_file", default=None, type=click.Path(dir_okay=False, exists=True),
    help="Read the launch command from a file (a script line).",
)
no_suggest = click.option("--no-suggest", is_flag=True, help="Skip the search for changes that fit.")

# --- targets and images ------------------------------------------------------------
target_name = click.option(
    "--target", "target_name", default=None, metavar="NAME", help="A matrix.yaml target by name."
)
launch_flags = click.option(
    "--flags", "flags_text", default=None, metavar="'FLAGS'",
    help="The launch flags as one quoted string (default: the target's).",
)
model_id = click.option(
    "--model", "model", default=None, metavar="ID", help="The model the image serves by default (a Hugging Face id)."
)
cuda_version = click.option("--cuda", "cuda", default=None, metavar="X.Y", help="CUDA of the base, e.g. 13.0.")
base_name = click.option(
    "--base-name", "base_name", default=None, metavar="NAME",
    help="A base from matrix.yaml bases: (default: the newest -devel for --cuda).",
)
image_python = click.option(
    "--python", "image_python", default=None, metavar="X.Y", help="Python of the image (default: the base's; lock: 3.12)."
)
base_ref = click.option(
    "--base", "base_ref", default=None, metavar="REF@sha256:...",
    help="A base image pinned by digest (make: for the targets whose matrix base has no digest, "
         "made per machine, e.g. $IMGBUILD_TEST_BASE).",
)
repository = click.option(
    "--repository", default=None, metavar="REPO",
    help="Where builds are tagged (default: $IMGBUILD_REGISTRY/imgbuild/sglang or imgbuild/sglang; "
         "with a registry host the image is pushed).",
)
ca_bundle = click.option(
    "--ca-bundle", "ca_bundle", default=None, type=_file,
    help="Extra CA certificates (PEM) for a TLS-intercepting proxy; used for package downloads only.",
)
pip_index_url = stack(
    click.option("--pip-index-url", "pip_index_url", default=None, metavar="URL", callback=_main("pip_index_url"),
                 help="Install (or resolve) from this package index instead of PyPI."),
    alias("--index-url", dest="pip_index_url", default=None, metavar="URL"),
)
force = click.option("--force", is_flag=True, help="Do the work again even where its inputs did not change.")


def output_dir(*, required: bool, help: str) -> Decorator:  # noqa: A002 - click's own name
    return click.option("-o", "--output", "out_dir", required=required, default=None, type=_dir, help=help)


record_path = click.option(
    "--record", "record_path", default=None, type=click.Path(dir_okay=False),
    help="Write the build record JSON here (default: ~/.cache/imgbuild/builds/TAG.json).",
)
lock_arch = click.option(
    "--arch", "arches", multiple=True, type=click.Choice(["x86_64", "aarch64"]), help="Repeat for each (default: both)."
)
index_as_of = click.option(
    "--as-of", "as_of", default=None, metavar="DATE",
    help="Read the index as of DATE (2026-05-07 or an RFC 3339 time), not ENGINE's upload time on PyPI.",
)
index_latest = click.option("--latest", is_flag=True, help="Read today's index (no --exclude-newer).")
keep_rebuild = click.option("--keep", is_flag=True, help="Keep the rebuilt image (untagged) instead of removing it.")
# --timeout is certify's deadline to ready; a per-request limit has its own name (old spelling hidden).
request_timeout = stack(
    click.option("--request-timeout", "timeout_s", type=float, default=None,
                 callback=_checked("timeout_s", check_seconds),
                 help="Seconds per registry request (default 20)."),
    alias("--timeout", dest="timeout_s", type=float, default=None),
)

# --- certify -------------------------------------------------------------------------
model_dir = stack(
    click.option("--model-dir", "model_dir", default=None, type=click.Path(exists=True, file_okay=False),
                 callback=_main("model_dir"),
                 help="The model directory on the engine's host, mounted read-only at /model."),
    alias("--model", dest="model_dir", default=None, type=click.Path(exists=True, file_okay=False)),
)
model_ref = click.option(
    "--model-ref", default=None, metavar="ID",
    help="--model-path inside the container when no --model-dir (a Hugging Face id; see --hf-cache).",
)
hf_cache = click.option(
    "--hf-cache", default=None, type=click.Path(exists=True, file_okay=False),
    help="A Hugging Face cache directory, mounted read-only.",
)
gpu_uuid = click.option("--gpu-uuid", "gpu_uuids", multiple=True, metavar="UUID", callback=_no_blank,
                        help="Use this GPU (repeat for each).")
no_gpus = click.option(
    "--no-gpus", is_flag=True,
    help="Attach no GPU (stand-in images in tests); the certificates are marked unattested.",
)
host_port = click.option("--port", "host_port", type=click.IntRange(1, 65535), default=30000, show_default=True,
                         help="HTTP port on 127.0.0.1.")
ready_timeout = click.option(
    "--timeout", "timeout_s", type=float, default=1800.0, show_default=True, callback=_seconds,
    help="Seconds to wait for the server to become ready.",
)
max_used_mib = click.option(
    "--max-used-mib", type=click.IntRange(min=0), default=1024, show_default=True,
    help="A GPU using more memory than this before launch is not clean.",
)
no_plan = click.option("--no-plan", is_flag=True, help="Skip the plan check of the preflight.")
container_env = click.option(
    "--env", "env_pairs", multiple=True, metavar="KEY=VALUE",
    help="An environment variable for the server container (repeat), e.g. NCCL_P2P_DISABLE=1.",
)
cert_store = click.option(
    "--store", "store_dir", default=None, type=_dir, help="Certificate store (default: $XDG_DATA_HOME/imgbuild/certs)."
)

# --- registries ----------------------------------------------------------------------
username = click.option(
    "--username", "-u", default=None, metavar="USER",
    help="Registry user (with --password-stdin); default: the Docker config's credentials.",
)
password_stdin = click.option(
    "--password-stdin", is_flag=True, help="Read the registry password from stdin (never from the command line)."
)
_registry_ca = click.option("--registry-ca", "registry_ca", default=None, type=_file, callback=_main("registry_ca"),
                            help="A CA file that signed the registry's TLS certificate.")
# publish and verify: --ca-bundle was the registry's CA there (make's --ca-bundle is the build's).
registry_login = stack(username, password_stdin, _registry_ca,
                       alias("--ca-bundle", dest="registry_ca", default=None, type=_file))
registry_login_make = stack(username, password_stdin, _registry_ca)
allow_uncertified = click.option(
    "--allow-uncertified", is_flag=True,
    help="Publish without a passing certificate; the registry then marks it uncertified.",
)


def destination(*, required: bool) -> Decorator:
    return click.option("--to", "destination", required=required, default=None, metavar="HOST[:PORT]/REPO",
                        help="The registry repository to publish to" + ("." if required else " (no --to: no publish)."))


for_target = click.option(
    "--for", "target_name", default=None, metavar="TARGET",
    help="Exit 1 unless a certificate bound to this image certifies this matrix target.",
)
require_attested = click.option(
    "--require-attested", is_flag=True,
    help="Count only certificates made on the real GPUs through the driver (verdict pass, not pass-unattested).",
)

# --- make ----------------------------------------------------------------------------
all_targets = click.option("--all", "all_targets", is_flag=True, help="Every target in matrix.yaml.")
until_step = click.option(
    "--until", default="publish", type=click.Choice(["check", "plan", "render", "build", "certify", "publish"]),
    show_default=True, help="Stop after this step.",
)
model_dir_pairs = click.option(
    "--model-dir", "model_dir_pairs", multiple=True, metavar="ID=DIR",
    help="The model directory for a model id (check, plan, certify); repeat for each.",
)
workers = click.option("--workers", type=click.IntRange(min=1), default=None,
                        help="Parallel GPU-set queues at most (default: one per GPU set).")
state_dir = click.option(
    "--state", "state_dir", default=None, type=_dir,
    help="Where make keeps each step's inputs and results (default: $XDG_STATE_HOME/imgbuild/make).",
)

# --- fleet (Slurm) ---------------------------------------------------------------------
fleet_targets = click.option(
    "--target", "target_names", multiple=True, metavar="NAME",
    help="A matrix.yaml target to certify, one Slurm job each (repeat).",
)
slurm_partition = click.option("--partition", default=None, metavar="NAME", help="The Slurm partition (default: the cluster's).")
gres_types = click.option(
    "--gres-type", "gres_pairs", multiple=True, metavar="GPU=TYPE",
    help="The gres Type= of a GPU on this cluster, e.g. 'RTX A6000=a6000' (default: the GPU's first alias in matrix.yaml).",
)
node_constraints = click.option(
    "--constraint", "constraint_pairs", multiple=True, metavar="GPU=FEATURE",
    help="A node feature the jobs for this GPU ask for (--constraint), where the site needs one.",
)
node_launcher = click.option(
    "--launcher", "launcher_text", default=None, metavar="'CMD'",
    help="A prefix for the job's command on the node (e.g. 'apptainer exec imgbuild.sif').",
)
node_imgbuild = click.option(
    "--node-imgbuild", "node_imgbuild_text", default=None, metavar="'CMD'",
    help="How a node runs imgbuild (default: this Python, -m imgbuild.cli).",
)
job_export = click.option(
    "--export", "export_names", multiple=True, metavar="VAR",
    help="Pass this environment variable on to the jobs too (repeat); only PATH, HOME, DOCKER_HOST and imgbuild's own go by default.",
)
job_time = click.option(
    "--job-time", "job_time_min", type=click.IntRange(1, 525600), default=None, metavar="MINUTES",
    help="Slurm --time of each job, in minutes (default: --timeout plus 5 minutes).",
)
run_on = click.option(
    "--on", "run_on", type=click.Choice(["local", "slurm"]), default="local", show_default=True,
    help="Where certify runs: the engine DOCKER_HOST names, or one Slurm job per target, all submitted at once.",
)
node_port = click.option("--port", "host_port", type=click.IntRange(0, 65535), default=0, show_default=True,
                         help="HTTP port on the node's 127.0.0.1 (0: a free one).")

# --- target add ------------------------------------------------------------------------
new_target_name = click.option(
    "--name", "target_name", default=None, metavar="NAME",
    help="The new target's name (default: MODEL-GPUxN, e.g. llama-3.1-8b-instruct-l4x1).",
)
tp_size = click.option(
    "--tp", "tp", type=click.IntRange(1, 1024), default=None, metavar="N",
    help="Tensor-parallel size (default: the GPU count, or the --tp among the launch flags).",
)
