"""The team's own targets file, laid over the shipped matrix.

A team keeps a small YAML file in its own repository: ``imgbuild.yaml`` in the working
directory, or the file ``--targets FILE`` or ``$IMGBUILD_TARGETS`` names. It holds only its
``targets:`` and, where it needs them, its own ``gpus:``, ``bases:`` and ``constraints:``
rows; engines, CUDA releases and the rest come from the shipped matrix.yaml, so an imgbuild
upgrade brings new releases without the team editing a copy of the whole matrix.

``overlay_matrix`` appends the team's rows to the shipped sections. A name the shipped
matrix already uses (a target, a base, a GPU name or alias) is refused rather than
replaced, so an upgrade never silently changes what a team target means. Problems are
reported all at once as ``imgbuild.yaml:LINE: targets[0].engine: ...``, in line order.

Pure: reads files, imports no click, docker or httpx.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from imgbuild.errors import MatrixError, UsageError
from imgbuild.knowledge.matrix import (
    MAX_MATRIX_BYTES,
    LockConstraint,
    Matrix,
    _Checker,
    _line_of,
    _parse_yaml,
    format_path,
    normalize_gpu_name,
    target_problems,
)
from imgbuild.knowledge.specs import GpuSpec

TARGETS_ENV = "IMGBUILD_TARGETS"
DEFAULT_FILE = "imgbuild.yaml"
TEAM_SECTIONS = ("targets", "gpus", "bases", "constraints")
# The keys each row may have (the shipped matrix's rows have these and no others).
ROW_KEYS = {
    "gpus": ("name", "aliases", "smi_names", "compute_capability", "memory_mib", "nvlink", "source"),
    "bases": ("name", "image", "tag", "digest", "platforms", "glibc", "python", "source"),
    "constraints": ("engines", "requirement", "reason", "source"),
}
# TargetSpec fields that are text: a bare YAML number there is refused, since 3.10 reads as 3.1.
_TARGET_TEXT = ("name", "kind", "engine", "base", "python", "platform", "cuda", "torch", "glibc", "model", "gpus",
                "lock", "source")
_TARGET_LISTS = ("launch_flags", "packages")

Problem = tuple[tuple[Any, ...], str]


@dataclass(frozen=True)
class TeamFile:
    """A targets file as read: its path as found, its text (for line numbers) and its data."""

    path: Path
    text: str
    data: dict[str, Any]

    def rows(self, section: str) -> list[Any]:
        value = self.data.get(section)
        return value if isinstance(value, list) else []


def find_targets_file(explicit: str | os.PathLike[str] | None = None, *, env: Mapping[str, str] | None = None,
                      cwd: Path | None = None) -> Path | None:
    """``explicit`` (--targets), else $IMGBUILD_TARGETS, else ./imgbuild.yaml where there is one, else None.

    A file named by the option or the variable must exist (UsageError naming which); the
    one in the working directory is returned as the relative ``imgbuild.yaml`` when ``cwd``
    is not given, so messages read ``imgbuild.yaml:7: ...``."""
    env = os.environ if env is None else env
    named = os.fspath(explicit) if explicit else env.get(TARGETS_ENV)
    if named:
        how = "--targets" if explicit else f"${TARGETS_ENV}"
        path = Path(named)
        if path.is_dir():
            raise UsageError(f"{how} {named}: is a directory, not a targets file",
                             hint=f"name the file itself, e.g. {path / DEFAULT_FILE}")
        if not path.is_file():
            raise UsageError(f"{how} {named}: no such targets file",
                             hint="check the path, or make one with `imgbuild target add MODEL --gpu NAME[xN]`")
        return path
    local = Path(DEFAULT_FILE) if cwd is None else Path(cwd) / DEFAULT_FILE
    return local if local.is_file() else None


def read_targets_file(path: str | os.PathLike[str]) -> TeamFile:
    """The file's text and data; MatrixError (file:line) for what is not a targets file."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_MATRIX_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read targets file {path}: {exc.strerror}",
                         hint="check the path and its permissions") from exc
    if len(raw) > MAX_MATRIX_BYTES:
        raise MatrixError([f"{path}: larger than {MAX_MATRIX_BYTES // 2**20} MiB: not a targets file "
                           f"(it holds {', '.join(TEAM_SECTIONS)} rows)"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatrixError([f"{path}: not UTF-8 text (byte {exc.start}): not a targets file "
                           "(a YAML file of targets:, gpus:, bases:, constraints:)"]) from None
    data = _parse_yaml(text, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise MatrixError([f"{path}:1: a targets file is a mapping of sections ({', '.join(TEAM_SECTIONS)}), "
                           f"not a {type(data).__name__}"])
    return TeamFile(path=path, text=text, data=data)


def overlay_matrix(shipped: Matrix, team: TeamFile) -> Matrix:
    """The shipped matrix with the team's rows appended; MatrixError listing every problem.

    The merged matrix keeps the shipped path (locks/ and dockerfiles/ are found beside it);
    ``targets_file`` and ``target_sources`` say where the team's targets came from."""
    problems = _section_problems(team)
    gpus, constraints = _own_gpus_and_constraints(team, shipped, problems)
    _check_bases(team, shipped, problems)
    data = dict(shipped.raw)
    for section in ("gpus", "bases", "constraints"):
        data[section] = list(shipped.raw.get(section) or []) + [r for r in team.rows(section) if isinstance(r, dict)]
    index = dict(shipped._gpu_index)
    for gpu in gpus:
        for key in (gpu.name, *gpu.aliases, *gpu.smi_names):
            index.setdefault(normalize_gpu_name(key), gpu)
    merged = replace(shipped, raw=data, gpus=shipped.gpus + gpus, constraints=shipped.constraints + constraints,
                     targets_file=team.path, _gpu_index=index)
    rows = team.rows("targets")
    root = _compose(team.text)
    _check_target_rows(rows, shipped, merged, root, problems)
    if problems:
        more = "`imgbuild matrix validate` lists them all" if len(problems) > 1 else None
        raise MatrixError(_located(problems, team.path, root), hint=more)
    data["targets"] = list(shipped.raw.get("targets") or []) + rows
    sources = dict(shipped.target_sources)
    for i, row in enumerate(rows):
        sources[str(row["name"])] = f"{team.path}:{_line_of(root, ('targets', i)) or 1}"
    return replace(merged, raw=data, target_sources=sources)


def overlay_targets_file(shipped: Matrix, explicit: str | os.PathLike[str] | None = None, *,
                         env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Matrix:
    """What every command loads: the matrix with the team's file over it, where there is one."""
    path = find_targets_file(explicit, env=env, cwd=cwd)
    if path is None:
        return shipped
    return overlay_matrix(shipped, read_targets_file(path))


def target_sources(matrix: Matrix) -> dict[str, str]:
    """Each target's "FILE:LINE": the team's file for its own, the matrix file for the rest."""
    rows = [r for r in matrix.raw.get("targets") or [] if isinstance(r, dict)]
    root = None
    if any(str(r.get("name")) not in matrix.target_sources for r in rows):
        try:
            root = _compose(Path(matrix.path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            root = None
    out: dict[str, str] = {}
    for i, row in enumerate(rows):
        name = str(row.get("name"))
        if name in matrix.target_sources:
            out[name] = matrix.target_sources[name]
        else:
            line = _line_of(root, ("targets", i)) if root is not None else None
            out[name] = f"{matrix.path}:{line}" if line else str(matrix.path)
    return out


def missing_locks(matrix: Matrix, locks_dir: Path) -> list[str]:
    """The team's targets whose lock file is not in ``locks_dir``: "FILE:LINE: name: ... (make it: ...)".

    Not a problem of the file (render says the same when it needs the lock), so
    ``matrix validate`` prints these as warnings."""
    from imgbuild.knowledge.recipe import parse_targets
    from imgbuild.knowledge.render import lock_command

    out = []
    team = set(matrix.target_sources)
    for spec in parse_targets(matrix.raw.get("targets")).values():
        if spec.name in team and not (locks_dir / spec.lock_name()).is_file():
            out.append(f"{matrix.target_sources[spec.name]}: {spec.name}: no lock {spec.lock_name()} in {locks_dir} "
                       f"(make it: {lock_command(spec)})")
    return out


def _section_problems(team: TeamFile) -> list[Problem]:
    problems: list[Problem] = []
    for section, value in team.data.items():
        if section not in TEAM_SECTIONS:
            problems.append(((section,), f"is not a section of a targets file (it holds {', '.join(TEAM_SECTIONS)}; "
                                         "engines, cuda and the rest come from the shipped matrix)"))
        elif value is not None and not isinstance(value, list):
            problems.append(((section,), f"must be a list of rows (- name: ...), not {type(value).__name__}"))
    for section, keys in ROW_KEYS.items():
        for i, row in enumerate(team.rows(section)):
            for key in row if isinstance(row, dict) else ():
                if key not in keys:
                    problems.append(((section, i, key), f"is not a field of a {section} row (known: {', '.join(keys)})"))
    return problems


def _own_gpus_and_constraints(team: TeamFile, shipped: Matrix, problems: list[Problem],
                              ) -> tuple[tuple[GpuSpec, ...], tuple[LockConstraint, ...]]:
    """The team's gpus and constraints rows by the matrix's own checker, and no GPU name the
    shipped gpus: already resolve."""
    checker = _Checker(problems)
    gpus = checker.gpus(team.data.get("gpus") if isinstance(team.data.get("gpus"), list) else None)
    constraints = checker.constraints(team.data.get("constraints")
                                      if isinstance(team.data.get("constraints"), list) else None)
    for i, row in enumerate(team.rows("gpus")):
        if not isinstance(row, dict):
            continue
        names = [("name", row.get("name"))]
        for field_name in ("aliases", "smi_names"):
            value = row.get(field_name)
            names += [((field_name, j), v) for j, v in enumerate(value)] if isinstance(value, list) else []
        for key, value in names:
            clash = shipped.gpu_by_smi_name(value) if isinstance(value, str) else None
            if clash is not None:
                where = ("gpus", i) + (key if isinstance(key, tuple) else (key,))
                problems.append((where, f"{value!r} is already the shipped GPU {clash.name!r} "
                                        f"(use that name, or another name for this row)"))
    return gpus, constraints


def _check_bases(team: TeamFile, shipped: Matrix, problems: list[Problem]) -> None:
    shipped_names = {str(b.get("name")) for b in shipped.raw.get("bases") or [] if isinstance(b, dict)}
    seen: dict[str, int] = {}
    for i, row in enumerate(team.rows("bases")):
        where: tuple[Any, ...] = ("bases", i)
        if not isinstance(row, dict):
            problems.append((where, "must be a mapping (name:, image:, tag:, digest:, ...)"))
            continue
        for key in ("name", "image"):
            if row.get(key) is None:
                problems.append((where + (key,), "is missing"))
        for key in ("name", "image", "tag", "digest", "glibc", "python", "source"):
            if row.get(key) is not None and not isinstance(row[key], str):
                problems.append((where + (key,), f"must be a quoted string, not {row[key]!r}"))
        digest = row.get("digest")
        if isinstance(digest, str) and not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
            problems.append((where + ("digest",), f"{digest!r} is not sha256:<64 hex> "
                                                  "(docker buildx imagetools inspect IMAGE:TAG prints it)"))
        name = row.get("name")
        if isinstance(name, str):
            if name in shipped_names:
                problems.append((where + ("name",), f"{name!r} is already a base of the shipped matrix "
                                                    "(use it as it is, or give this row another name)"))
            elif name in seen:
                problems.append((where + ("name",), f"{name!r} is used twice (first at bases[{seen[name]}])"))
            seen.setdefault(name, i)


def _check_target_rows(rows: list[Any], shipped: Matrix, merged: Matrix, root: Any,
                       problems: list[Problem]) -> None:
    """The team's targets: quoted text, then the shipped matrix's own target rules against
    the merged matrix, then no name the shipped targets: already use."""
    shipped_names = {str(t.get("name")) for t in shipped.raw.get("targets") or [] if isinstance(t, dict)}
    checked: list[Any] = []
    for i, row in enumerate(rows):
        where: tuple[Any, ...] = ("targets", i)
        if not isinstance(row, dict):
            problems.append((where, "must be a mapping (name:, kind:, engine:, base:, python:, ...)"))
            checked.append(row)
            continue
        row = dict(row)
        for key in [k for k in row if k not in _TARGET_TEXT + _TARGET_LISTS]:
            problems.append((where + (key,), f"is not a target field (known: {', '.join(_TARGET_TEXT + _TARGET_LISTS)})"))
            row.pop(key)
        for key in _TARGET_TEXT:
            if row.get(key) is not None and not isinstance(row[key], str):
                written = _scalar_text(root, where + (key,))
                problems.append((where + (key,), f"must be a quoted string, not {written}: write {key}: \"{written}\" "
                                                 "(YAML reads a bare 3.10 as the number 3.1)"))
                row[key] = written  # the rest of the row is still checked
        for key in _TARGET_LISTS:
            value = row.get(key)
            if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                example = '["--tp", "2"]' if key == "launch_flags" else '["pytest==8.3.4"]'
                problems.append((where + (key,), f"must be a list of quoted strings, e.g. {example}"))
                row.pop(key)
        checked.append(row)
    newest = shipped.engines[-1].version if shipped.engines else "none"
    for where, message in target_problems(merged, checked, engines_in="the shipped matrix's engines:",
                                          engine_fix=f"`imgbuild matrix show` lists them, newest {newest}; "
                                                     "a newer release needs a newer imgbuild"):
        if where[-1] == "gpus" and message.startswith("unknown GPU"):
            message += " (a name or alias from the shipped gpus: or this file's gpus:, see `imgbuild matrix show`)"
        problems.append((where, message))
    for i, row in enumerate(checked):
        name = row.get("name") if isinstance(row, dict) else None
        if isinstance(name, str) and name in shipped_names:
            problems.append((("targets", i, "name"), f"{name!r} is already a target of the shipped matrix "
                                                     f"({shipped.path}): give this one another name"))


def _scalar_text(root: Any, where: tuple[Any, ...]) -> str:
    """A value as written in the file (3.10, not the 3.1 YAML made of it)."""
    import yaml

    node = root
    for part in where:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            node = None
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "..."


def _compose(text: str) -> Any:
    import yaml

    try:
        return yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None


def _located(problems: list[Problem], path: Path, root: Any) -> list[str]:
    """Each problem as "FILE:LINE: path: message", in the order of the file's lines."""
    lines = [(_line_of(root, where) if root is not None else None, where, message) for where, message in problems]
    lines.sort(key=lambda item: item[0] or 0)
    return [f"{path}:{line}: {format_path(where)}: {message}" if line else f"{path}: {format_path(where)}: {message}"
            for line, where, message in lines]


__all__ = [
    "DEFAULT_FILE",
    "TARGETS_ENV",
    "TEAM_SECTIONS",
    "TeamFile",
    "find_targets_file",
    "missing_locks",
    "overlay_matrix",
    "overlay_targets_file",
    "read_targets_file",
    "target_sources",
]
