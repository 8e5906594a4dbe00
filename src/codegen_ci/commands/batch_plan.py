"""Which specs a `codegen-ci batch` runs: arguments expanded to spec files, every spec resolved
against `.codegen.yml` and checked before anything runs, and the GitHub Actions matrix."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegen_ci.commands.run import environment_layer
from codegen_ci.errors import InputError, SpecError, SpecProblem
from codegen_ci.report import Report
from codegen_ci.spec.layers import REPO_CONFIG_NAME, load_layer_file, load_repo_config, resolve_spec
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git

SPEC_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Planned:
    path: Path  # as the user named it
    name: str  # the spec's output sub-directory; unique within the batch
    spec: Spec


def expand(args: tuple[str, ...]) -> list[Path]:
    """Spec files named by the arguments, in order, each once. A directory gives its own
    `*.yaml`/`*.yml` files, sorted, not its sub-directories' (a `**` glob reaches those), and
    never `.codegen.yml` or other hidden files; a glob expands with `glob` semantics."""
    found: dict[Path, Path] = {}
    unmatched = []
    for arg in args:
        matched = _expand_one(arg)
        if not matched:
            unmatched.append(arg)
        for path in matched:
            found.setdefault(path.resolve(), path)
    if unmatched:
        raise InputError("no spec files match: " + ", ".join(repr(a) for a in unmatched))
    return list(found.values())


def _expand_one(arg: str) -> list[Path]:
    path = Path(arg)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in SPEC_SUFFIXES and _is_spec(p))
    if path.is_file():
        return [path]
    if glob.has_magic(arg):
        # glob.glob, not Path.glob: the pattern may be absolute
        matched = glob.glob(arg, recursive=True)  # noqa: PTH207
        return sorted(Path(m) for m in matched if _is_spec(Path(m)))
    return []


def _is_spec(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".") and path.name != REPO_CONFIG_NAME


def plan(paths: list[Path], root: Path, *, check_git: bool) -> list[Planned]:
    """Resolve every spec against `.codegen.yml` and the environment; all problems at once."""
    repo_layer, _ = load_repo_config(root)
    env_layer = environment_layer(os.environ)
    problems: list[SpecProblem] = []
    plans: list[Planned] = []
    names: set[str] = set()
    for path in paths:
        try:
            spec = resolve_spec(
                env_layer, repo_layer, load_layer_file(path, is_spec=True), name=str(path)
            )
            if check_git:
                _check_git(root, spec, str(path))
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        plans.append(Planned(path, _unique(path.stem, names), spec))
    if problems:
        raise SpecError(problems)
    return plans


def _check_git(root: Path, spec: Spec, name: str) -> None:
    """What would stop the run before it starts: the base commit and the branch name."""
    problems = []
    try:
        git.rev_parse(root, spec.git.base or "HEAD")
    except InputError as exc:
        problems.append(SpecProblem(name, None, "git.base", exc.message))
    try:
        git.check_branch_name(root, spec.git.branch.replace("{slug}", spec.slug))
    except InputError as exc:
        problems.append(SpecProblem(name, None, "git.branch", exc.message))
    if problems:
        raise SpecError(problems)


def _unique(stem: str, taken: set[str]) -> str:
    name, n = stem, 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}"
    taken.add(name)
    return name


def matrix_of(plans: list[Planned], root: Path) -> dict[str, Any]:
    """Spec paths relative to the repository root, as the action's `spec` input takes them."""
    include = []
    for p in plans:
        resolved = p.path.resolve()
        rel = resolved.relative_to(root) if resolved.is_relative_to(root) else p.path
        include.append(
            {"spec": rel.as_posix(), "title": p.spec.title or p.spec.slug, "slug": p.spec.slug}
        )
    return {"include": include}


@dataclass
class Outcome:
    planned: Planned
    exit_code: int  # what this spec alone would exit with
    report: Report | None = None
    error: str | None = None

    @property
    def status(self) -> str:
        return self.report.status if self.report else "error"
