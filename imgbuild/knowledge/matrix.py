"""Load and validate matrix.yaml, the compatibility matrix.

The file has curated sections (cuda, gpus, features, speculative, known_issues,
constraints, bases, targets) and a generated one (engines, written by scripts/gen_matrix.py
from SGLang's wheels). Engine rows store their architecture classes as deltas
against the previous release; loading expands them into full sets.

Validation reports every problem at once as ``file:line: path: message``.
Nothing here runs at import time; the file is read by ``load_matrix``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from imgbuild.errors import MatrixError, UsageError
from imgbuild.knowledge.specs import (
    CudaSpec,
    EngineSpec,
    FeatureSpec,
    GpuSpec,
    KnownIssue,
    SpeculativeSpec,
)

_CHECKOUT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class LockConstraint:
    """A row of ``constraints:``: a bound that ``imgbuild lock`` applies to engines in a range.

    SGLang leaves some dependencies unbounded that its own pins cannot work with
    (transformers 5.6.0 needs kernels < 0.13 but says so only under an extra).
    """

    engines: str  # a specifier over SGLang versions, e.g. ">=0.5.11,<0.5.13"
    requirement: str  # a PEP 508 requirement for uv's constraints file, e.g. "kernels<0.13"
    reason: str
    source: str

    def applies_to(self, engine: str) -> bool:
        from packaging.specifiers import SpecifierSet

        return SpecifierSet(self.engines).contains(engine, prereleases=True)


def data_root() -> Path:
    """Where matrix.yaml, dockerfiles/ and locks/ live: the checkout imgbuild runs from
    (an editable install, as scripts/setup makes), else the copies a wheel installs
    under <prefix>/share/imgbuild (pyproject's data-files)."""
    if (_CHECKOUT_ROOT / "matrix.yaml").is_file():
        return _CHECKOUT_ROOT
    return Path(sys.prefix) / "share" / "imgbuild"
_GPU_COUNT_SUFFIX = re.compile(r"^(?P<name>.+?)\s*[x×*]\s*(?P<count>\d+)$", re.IGNORECASE)
_GPU_COUNT_PREFIX = re.compile(r"^(?P<count>\d+)\s*[x×*]\s*(?P<name>.+)$", re.IGNORECASE)
MAX_GPU_COUNT = 1024  # 128 nodes of 8: past any one deployment a plan describes
GPU_PLATFORMS = ("cuda", "rocm")  # gpus: platform (AMD Instinct GPUs: plan only)


def normalize_gpu_name(text: str) -> str:
    """'NVIDIA RTX A6000' -> 'rtx-a6000'; used to compare names and aliases."""
    text = text.strip().lower()
    text = re.sub(r"^nvidia\s+", "", text)
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")


@dataclass(frozen=True)
class Matrix:
    path: Path
    raw: dict[str, Any]
    engines: tuple[EngineSpec, ...]
    gpus: tuple[GpuSpec, ...]
    cuda: tuple[CudaSpec, ...]
    features: tuple[FeatureSpec, ...]
    speculative: tuple[SpeculativeSpec, ...]
    known_issues: tuple[KnownIssue, ...]
    constraints: tuple[LockConstraint, ...] = ()
    # Laid over by knowledge/targetsfile.py: the team's file, and each of its targets' "FILE:LINE".
    targets_file: Path | None = None
    target_sources: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    _gpu_index: dict[str, GpuSpec] = field(default_factory=dict, repr=False, compare=False)

    def engine(self, version: str) -> EngineSpec:
        wanted = _parse_version_arg(version, what="SGLang version")
        for engine in self.engines:
            if Version(engine.version) == wanted:
                return engine
        known = ", ".join(e.version for e in self.engines[-5:])
        raise UsageError(
            f"SGLang {version} is not in the matrix ({self.path})",
            hint=f"use a released version (newest: {known}), or regenerate with scripts/gen_matrix.py",
        )

    def newest_engine(self) -> EngineSpec:
        if not self.engines:
            raise UsageError(f"{self.path}: no engines", hint="run scripts/gen_matrix.py")
        return self.engines[-1]

    def constraints_for(self, engine: str) -> tuple[LockConstraint, ...]:
        """The curated constraints that apply to locking SGLang ``engine``."""
        return tuple(c for c in self.constraints if c.applies_to(engine))

    def cuda_spec(self, version: str) -> CudaSpec:
        for spec in self.cuda:
            if spec.version == version:
                return spec
        raise UsageError(
            f"CUDA {version} is not in the matrix's cuda: section ({self.path})",
            hint="known: " + ", ".join(c.version for c in self.cuda),
        )

    def gpu_by_smi_name(self, name: str) -> GpuSpec | None:
        return self._gpu_index.get(normalize_gpu_name(name))

    def resolve_gpu(self, text: str, *, platforms: tuple[str, ...] = ("cuda",)) -> tuple[GpuSpec, int]:
        """'RTX A6000x2', 'a6000 x 2', '2xH100-SXM', 'H200' -> (spec, count). A GPU of a platform
        outside ``platforms`` (an AMD GPU where an image is built or certified) is a UsageError."""
        spec, count = self._resolve_gpu(text.strip())
        if spec.platform not in platforms:
            raise UsageError(
                f"{text.strip()!r} is an AMD GPU (ROCm): imgbuild builds and certifies CUDA images only",
                hint=f"imgbuild plan --gpu '{spec.name}x{count}' plans an SGLang launch on it; "
                "build and certify for an NVIDIA GPU",
            )
        return spec, count

    def _resolve_gpu(self, raw_text: str) -> tuple[GpuSpec, int]:
        whole = self.gpu_by_smi_name(raw_text)
        if whole is not None:  # names such as 'RTX 5090' end in 'X <digits>' themselves
            return whole, 1
        match = _GPU_COUNT_SUFFIX.match(raw_text) or _GPU_COUNT_PREFIX.match(raw_text)
        spec = self.gpu_by_smi_name(match.group("name")) if match else None
        if spec is None or match is None:
            raise UsageError(
                f"unknown GPU {raw_text!r}",
                hint="use a name or alias from the matrix's gpus: section, e.g. 'RTX A6000x2' "
                "(see `imgbuild matrix show`)",
            )
        count = int(match.group("count"))
        if not 1 <= count <= MAX_GPU_COUNT:
            raise UsageError(f"GPU count in {raw_text!r} must be 1 to {MAX_GPU_COUNT:,}", hint="write e.g. 'RTX A6000x2'")
        return spec, count

    @cached_property
    def cuda_versions(self) -> frozenset[str]:
        return frozenset(c.version for c in self.cuda)


def _parse_version_arg(text: str, *, what: str) -> Version:
    try:
        if len(text) > 64:  # packaging's int() of a 5,000-digit part raises ValueError, not InvalidVersion
            raise InvalidVersion(text)
        return Version(text)
    except InvalidVersion:
        shown = text if len(text) <= 64 else text[:64] + "..."
        raise UsageError(
            f"{what} {shown!r} is not a version", hint="write it like 0.5.11 or 0.5.10.post1"
        ) from None


# matrix.yaml is about 80 KB and 20,000 YAML nodes; these leave room for growth while
# refusing a "billion laughs" file (aliases nested into 10^9 nodes) before it is expanded.
MAX_MATRIX_BYTES = 8 * 2**20
MAX_MATRIX_NODES = 1_000_000
MATRIX_SECTIONS = frozenset({"engines", "cuda", "gpus", "features", "speculative", "known_issues", "constraints",
                             "bases", "targets"})


def load_matrix(path: str | os.PathLike[str] | None = None) -> Matrix:
    """Read, validate and index a matrix file; raise MatrixError listing every problem.

    A valid file's parsed content is kept as JSON under the user's cache directory
    and used while the file's size and modification time are unchanged (as Python
    does for .pyc files): JSON loads in well under a millisecond where YAML takes
    tens, which was most of `imgbuild check`'s start-up.
    """
    chosen = path or os.environ.get("IMGBUILD_MATRIX") or data_root() / "matrix.yaml"
    matrix_path = Path(chosen)
    try:
        stat = matrix_path.stat()
        stamp = [stat.st_size, stat.st_mtime_ns]
        cache = _cache_path(matrix_path)
        cached = _read_cache(cache, stamp)
        if cached is not None:
            # Only content that validated is cached, so the costlier specifier checks can be skipped.
            return build_matrix(cached, path=matrix_path, validated=True)
        with matrix_path.open("rb") as fh:
            raw = fh.read(MAX_MATRIX_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(
            f"matrix file {matrix_path} does not exist",
            hint="pass --matrix FILE or set IMGBUILD_MATRIX",
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot read matrix file {matrix_path}: {exc.strerror}") from exc
    if len(raw) > MAX_MATRIX_BYTES:
        raise MatrixError([f"{matrix_path}: larger than {MAX_MATRIX_BYTES // 2**20} MiB, not a matrix file"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatrixError([f"{matrix_path}: not UTF-8 text (byte {exc.start}): not a matrix file"]) from None
    data = _parse_yaml(text, matrix_path)
    if isinstance(data, dict) and not set(data) & MATRIX_SECTIONS:
        raise MatrixError([f"{matrix_path}:1: none of the sections {', '.join(sorted(MATRIX_SECTIONS))}: "
                           "not a matrix file"])
    matrix = build_matrix(data, path=matrix_path, text=text)
    _write_cache(cache, {"stamp": stamp, "data": data})
    return matrix


def matrix_cache_dir() -> Path:
    """Where load_matrix keeps each validated file's parsed JSON (`imgbuild cache clear --matrix`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "imgbuild" / "matrix"


def _cache_files(folder: Path) -> list[Path]:
    """The cache's own files (NAME.json and its temporaries), links included, never followed."""
    return [c for c in folder.iterdir() if c.is_file() or c.is_symlink()] if folder.is_dir() else []


def matrix_cache_usage(folder: Path) -> tuple[int, int]:
    """(files, bytes) of the matrix cache: what clear_matrix_cache removes."""
    files = size = 0
    for child in _cache_files(folder):
        try:
            size += child.lstat().st_size
        except OSError:
            continue
        files += 1
    return files, size


def clear_matrix_cache(folder: Path) -> dict[str, Any]:
    """Remove the cache's own files (the folder stays): {"path", "files", "bytes"} removed."""
    files, size = matrix_cache_usage(folder)
    try:
        for child in _cache_files(folder):
            child.unlink()
    except OSError as exc:
        raise UsageError(f"cannot remove {exc.filename or folder}: {exc.strerror or exc}",
                         hint=f"remove it by hand: rm -r {folder}") from None
    return {"path": str(folder), "files": files, "bytes": size}


def _cache_path(matrix_path: Path) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(matrix_path.resolve()).strip("/"))
    if len(name) > 200:  # NAME_MAX is 255: keep the tail, which tells files apart
        name = name[-200:]
    return matrix_cache_dir() / f"{name}.json"


def _read_cache(cache: Path, stamp: list[int]) -> Any:
    """The cached data when the cache is for this stamp; None on any doubt (it is only a speed-up)."""
    try:
        with cache.open("rb") as fh:
            raw = fh.read(4 * MAX_MATRIX_BYTES + 1)
        if len(raw) > 4 * MAX_MATRIX_BYTES:
            return None
        cached = json.loads(raw)
        if cached.get("stamp") == stamp:
            return cached["data"]
    except (OSError, ValueError, KeyError, AttributeError, RecursionError):
        pass
    return None


def _write_cache(cache: Path, data: Any) -> None:
    """Best effort: a read-only home only costs the speed-up. A temp name per process in
    the same folder, then a rename, so concurrent runs never read half a file."""
    import tempfile

    try:
        text = json.dumps(data)
        if len(text) > 4 * MAX_MATRIX_BYTES:
            return
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=f".{cache.stem[-50:]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, cache)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
    except (OSError, TypeError, ValueError, RecursionError):
        pass


def _parse_yaml(text: str, matrix_path: Path) -> Any:
    """YAML's safe loader, with the document's size counted as if every alias were
    expanded before anything is constructed (a shared node is built once, but the
    validator and the JSON cache would walk every copy)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_nodes(node) > MAX_MATRIX_NODES:
            raise MatrixError([f"{matrix_path}: its aliases expand to more than {MAX_MATRIX_NODES:,} YAML nodes "
                               "(or refer to themselves): not a matrix file"])
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{matrix_path}:{mark.line + 1}" if mark else str(matrix_path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise MatrixError([f"{where}: not valid YAML: {problem}"]) from None
    except RecursionError:
        raise MatrixError([f"{matrix_path}: nested too deeply to be a matrix file"]) from None
    finally:
        loader.dispose()


def _expanded_nodes(root: Any) -> int:
    """How many nodes the document has once aliases are expanded, in time linear in its
    distinct nodes (each node's expanded size is computed once, children first)."""
    import yaml

    sizes: dict[int, int] = {}
    on_path: set[int] = set()  # the nodes whose children are being counted: an ancestor again is a cycle
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        if not children_done and id(node) in on_path:
            return MAX_MATRIX_NODES + 1  # a recursive alias (&a [*a]) expands without end
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            sizes[id(node)] = 1
            continue
        if children_done:
            on_path.discard(id(node))
            sizes[id(node)] = min(1 + sum(sizes.get(id(child), 1) for child in children), MAX_MATRIX_NODES + 1)
            continue
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def build_matrix(data: Any, *, path: Path, text: str | None = None, validated: bool = False) -> Matrix:
    problems: list[tuple[tuple[Any, ...], str]] = []
    if not isinstance(data, dict):
        raise MatrixError([f"{path}:1: the matrix must be a mapping of sections"])
    checker = _Checker(problems, check_specifiers=not validated)
    cuda = checker.cuda(data.get("cuda", []))
    gpus = checker.gpus(data.get("gpus", []))
    features = checker.features(data.get("features", []))
    speculative = checker.speculative(data.get("speculative", []))
    known_issues = checker.known_issues(data.get("known_issues", []))
    constraints = checker.constraints(data.get("constraints", []))
    engines = checker.engines(data.get("engines", []), {c.version for c in cuda})
    if problems:
        raise MatrixError(_locate(problems, path, text))
    index: dict[str, GpuSpec] = {}
    for gpu in gpus:
        for key in (gpu.name, *gpu.aliases, *gpu.smi_names):
            index.setdefault(normalize_gpu_name(key), gpu)
    return Matrix(
        path=path,
        raw=data,
        engines=engines,
        gpus=gpus,
        cuda=cuda,
        features=features,
        speculative=speculative,
        known_issues=known_issues,
        constraints=constraints,
        _gpu_index=index,
    )


class _Checker:
    """Turns raw sections into specs, collecting (path, message) problems."""

    def __init__(self, problems: list[tuple[tuple[Any, ...], str]], *, check_specifiers: bool = True) -> None:
        self.problems = problems
        self.check_specifiers = check_specifiers

    def specifier(self, where: tuple[Any, ...], value: str) -> None:
        if not self.check_specifiers:
            return
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            SpecifierSet(value)
        except InvalidSpecifier:
            self.problem(where, f"{value!r} is not a version specifier")

    def problem(self, where: tuple[Any, ...], message: str) -> None:
        self.problems.append((where, message))

    def rows(self, section: str, value: Any) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem((section,), "must be a list")
            return []
        out = []
        for i, row in enumerate(value):
            if isinstance(row, dict):
                out.append(((section, i), row))
            else:
                self.problem((section, i), "must be a mapping")
        return out

    def text(self, where: tuple[Any, ...], row: dict[str, Any], key: str, *, required: bool = True) -> str | None:
        value = row.get(key)
        if value is None:
            if required:
                self.problem(where + (key,), "is missing")
            return None
        if not isinstance(value, str):
            self.problem(where + (key,), f"must be a quoted string, not {value!r}")
            return None
        return value

    def version(self, where: tuple[Any, ...], row: dict[str, Any], key: str, *, required: bool = True) -> str | None:
        value = self.text(where, row, key, required=required)
        if value is not None:
            try:
                Version(value)
            except InvalidVersion:
                self.problem(where + (key,), f"{value!r} is not a PEP 440 version")
                return None
        return value

    def strings(self, where: tuple[Any, ...], row: dict[str, Any], key: str) -> tuple[str, ...]:
        value = row.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(where + (key,), "must be a list of strings")
            return ()
        return tuple(value)

    def cuda(self, value: Any) -> tuple[CudaSpec, ...]:
        out = []
        for where, row in self.rows("cuda", value):
            version = self.version(where, row, "version")
            min_driver = self.text(where, row, "min_driver")
            sm = self.strings(where, row, "sm")
            if version and min_driver:
                out.append(CudaSpec(version=version, min_driver=min_driver, sm=sm))
        return tuple(out)

    def gpus(self, value: Any) -> tuple[GpuSpec, ...]:
        out = []
        seen: dict[str, tuple[Any, ...]] = {}
        for where, row in self.rows("gpus", value):
            name = self.text(where, row, "name")
            aliases = self.strings(where, row, "aliases")
            smi_names = self.strings(where, row, "smi_names")
            cc = self.text(where, row, "compute_capability")
            if cc is not None and not re.fullmatch(r"\d+\.\d+", cc):
                self.problem(where + ("compute_capability",), f"{cc!r} must look like '8.6'")
            memory = row.get("memory_mib")
            if not isinstance(memory, int) or memory <= 0:
                self.problem(where + ("memory_mib",), f"must be a positive integer (MiB), not {memory!r}")
            nvlink = row.get("nvlink")
            if nvlink is not None and not isinstance(nvlink, bool):
                self.problem(where + ("nvlink",), f"must be true or false, not {nvlink!r}")
                nvlink = None
            platform = row.get("platform", "cuda")
            if platform not in GPU_PLATFORMS:
                self.problem(where + ("platform",), f"must be one of {', '.join(GPU_PLATFORMS)}, not {platform!r}")
                platform = "cuda"
            for j, alias in enumerate(aliases):
                key = normalize_gpu_name(alias)
                if key in seen and seen[key] != where:
                    self.problem(where + ("aliases", j), f"alias {alias!r} is already used by gpus[{seen[key][1]}]")
                seen[key] = where
            if name and cc and isinstance(memory, int):
                out.append(
                    GpuSpec(name=name, aliases=aliases, smi_names=smi_names, compute_capability=cc, memory_mib=memory,
                            nvlink=nvlink, platform=platform)
                )
        return tuple(out)

    def features(self, value: Any) -> tuple[FeatureSpec, ...]:
        out = []
        for where, row in self.rows("features", value):
            name = self.text(where, row, "name")
            min_sglang = self.version(where, row, "min_sglang", required=False)
            if name:
                out.append(
                    FeatureSpec(
                        name=name,
                        description=str(row.get("description", "")),
                        detect=str(row.get("detect", "")),
                        min_sglang=min_sglang,
                    )
                )
        return tuple(out)

    def speculative(self, value: Any) -> tuple[SpeculativeSpec, ...]:
        out = []
        for where, row in self.rows("speculative", value):
            algorithm = self.text(where, row, "algorithm")
            min_sglang = self.version(where, row, "min_sglang", required=False)
            if algorithm:
                out.append(SpeculativeSpec(algorithm=algorithm, min_sglang=min_sglang, needs=str(row.get("needs", ""))))
        return tuple(out)

    def known_issues(self, value: Any) -> tuple[KnownIssue, ...]:
        out = []
        for where, row in self.rows("known_issues", value):
            issue_id = self.text(where, row, "id")
            min_sglang = self.version(where, row, "min_sglang")
            reason = self.text(where, row, "reason")
            source = self.text(where, row, "source")
            match = row.get("match") or {}
            if not isinstance(match, dict) or not match:
                self.problem(where + ("match",), "must map model_types/architectures/features to lists")
                match = {}
            m_where = where + ("match",)
            if issue_id and min_sglang and reason and source:
                out.append(
                    KnownIssue(
                        id=issue_id,
                        model_types=self.strings(m_where, match, "model_types"),
                        architectures=self.strings(m_where, match, "architectures"),
                        features=self.strings(m_where, match, "features"),
                        min_sglang=min_sglang,
                        reason=reason,
                        source=source,
                    )
                )
        return tuple(out)

    def constraints(self, value: Any) -> tuple[LockConstraint, ...]:
        out = []
        for where, row in self.rows("constraints", value):
            engines = self.text(where, row, "engines")
            requirement = self.text(where, row, "requirement")
            reason = self.text(where, row, "reason")
            source = self.text(where, row, "source")
            if engines is not None:
                self.specifier(where + ("engines",), engines)
            if requirement is not None and self.check_specifiers:
                from packaging.requirements import InvalidRequirement, Requirement

                try:
                    Requirement(requirement)
                except InvalidRequirement:
                    self.problem(where + ("requirement",), f"{requirement!r} is not a PEP 508 requirement")
            if engines and requirement and reason and source:
                out.append(LockConstraint(engines=engines, requirement=requirement, reason=reason, source=source))
        return tuple(out)

    def engines(self, value: Any, cuda_versions: set[str]) -> tuple[EngineSpec, ...]:
        out: list[EngineSpec] = []
        current: set[str] = set()
        previous: Version | None = None
        for where, row in self.rows("engines", value):
            version = self.version(where, row, "version")
            requires_python = self.text(where, row, "requires_python", required=False) or ""
            if requires_python:
                self.specifier(where + ("requires_python",), requires_python)
            pins = row.get("pins") or {}
            if not isinstance(pins, dict):
                self.problem(where + ("pins",), "must map package names to specifiers")
                pins = {}
            for name, spec in pins.items():
                self.specifier(where + ("pins", name), str(spec))
            cuda = row.get("cuda")
            if cuda is not None and str(cuda) not in cuda_versions:
                self.problem(where + ("cuda",), f"{cuda!r} is not in cuda: (add a row for it)")
            torch = row.get("torch")
            glibc = row.get("glibc")
            current |= set(self.strings(where, row, "architectures_added"))
            current -= set(self.strings(where, row, "architectures_removed"))
            if version:
                parsed = Version(version)
                if previous is not None and parsed <= previous:
                    self.problem(where + ("version",), f"{version} is not after the engine before it")
                previous = parsed
                out.append(
                    EngineSpec(
                        version=version,
                        requires_python=requires_python,
                        glibc=None if glibc is None else str(glibc),
                        pins={str(k): str(v) for k, v in pins.items()},
                        torch=None if torch is None else str(torch),
                        cuda=None if cuda is None else str(cuda),
                        architectures=frozenset(current),
                        released=None if row.get("released") is None else str(row["released"]),
                        lock_smoke=self.lock_smoke(where, row.get("lock_smoke")),
                    )
                )
        return tuple(out)

    def lock_smoke(self, where: tuple[Any, ...], value: Any) -> dict[str, dict[str, Any]]:
        """An engine's ``lock_smoke:`` (written by scripts/lock_all.py): kinds of lock to records."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(where + ("lock_smoke",), "must map as_of_release / latest to a record")
            return {}
        out: dict[str, dict[str, Any]] = {}
        for kind, record in value.items():
            if kind not in ("as_of_release", "latest") or not isinstance(record, dict) \
                    or not isinstance(record.get("imports"), bool):
                self.problem(where + ("lock_smoke", kind), "must be as_of_release or latest: {imports: true|false, ...}")
                continue
            out[str(kind)] = dict(record)
        return out


def check_targets(matrix: Matrix) -> None:
    """The targets: section against the rest of the file, every problem at once (MatrixError).

    load_matrix leaves targets to their use (render, build and make resolve one at a time,
    so a test fixture may name an engine it lacks); `matrix validate` checks them all: each
    a mapping that recipe.parse_targets would take, a name used once, an sglang target's
    engine in engines:, its base a bases: name or a REF@sha256: reference, its gpus known."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    rows = matrix.raw.get("targets") or []
    if not isinstance(rows, list):
        problems.append((("targets",), "must be a list of targets"))
        rows = []
    problems += target_problems(matrix, rows)
    if problems:
        text = None
        try:
            text = matrix.path.read_text(encoding="utf-8")  # for the line numbers; load_matrix read it already
        except (OSError, UnicodeDecodeError):
            pass
        raise MatrixError(_locate(problems, matrix.path, text))


def target_problems(matrix: Matrix, rows: list[Any], *, engines_in: str = "engines:",
                    engine_fix: str = "a release listed there, or regenerate them with scripts/gen_matrix.py",
                    ) -> list[tuple[tuple[Any, ...], str]]:
    """check_targets' rules for target rows against ``matrix``, as (path, message) problems
    (knowledge/targetsfile.py checks the team's rows with them too)."""
    from imgbuild.knowledge.recipe import is_pinned_ref, parse_targets

    problems: list[tuple[tuple[Any, ...], str]] = []
    bases = {str(b.get("name")) for b in matrix.raw.get("bases") or [] if isinstance(b, dict)}
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        where: tuple[Any, ...] = ("targets", i)
        try:
            parse_targets([row])
        except UsageError as exc:
            problems.append((where, exc.message.split("targets[0]", 1)[-1].lstrip(": ") or exc.message))
            continue
        name = str(row["name"])
        if name in seen:
            problems.append((where + ("name",), f"{name!r} is used twice (first at targets[{seen[name]}])"))
        seen.setdefault(name, i)
        if row.get("kind") == "sglang":
            engine = str(row.get("engine"))
            try:
                matrix.engine(engine)
            except UsageError as exc:
                absent = exc.message.startswith("SGLang ") and "is not in the matrix" in exc.message
                problems.append((where + ("engine",), f"SGLang {engine} is not in {engines_in} ({engine_fix})"
                                 if absent else exc.message))
        base = str(row.get("base") or "")
        if base not in bases and not is_pinned_ref(base):
            problems.append((where + ("base",), f"{base!r} is neither a name in bases: nor a REF@sha256: reference"))
        if row.get("gpus") is not None:
            try:
                matrix.resolve_gpu(str(row["gpus"]))
            except UsageError as exc:
                problems.append((where + ("gpus",), exc.message))
    return problems


def format_path(where: tuple[Any, ...]) -> str:
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _locate(problems: list[tuple[tuple[Any, ...], str]], path: Path, text: str | None) -> list[str]:
    """Prefix each problem with file:line, found by composing the YAML node tree (errors only)."""
    import yaml

    root = None
    if text is not None:
        try:
            root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError:
            root = None
    out = []
    for where, message in problems:
        line = _line_of(root, where)
        prefix = f"{path}:{line}" if line else str(path)
        out.append(f"{prefix}: {format_path(where)}: {message}")
    return out


def _line_of(node: Any, where: tuple[Any, ...]) -> int | None:
    import yaml

    best = None
    for part in where:
        if node is None:
            break
        best = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for key, value in node.value:
                if key.value == part:
                    nxt = value
                    best = key.start_mark.line + 1
                    break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            node = None
    if node is not None:
        best = node.start_mark.line + 1
    return best
