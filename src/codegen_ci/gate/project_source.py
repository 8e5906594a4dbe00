"""Where the lint and test commands import the repository's own Python code from.

The run works in a separate git worktree, but the everyday Python setup points elsewhere: the
project installed editable into an activated virtualenv (setuptools' `__editable__` finder,
or an older `.pth`/`.egg-link`) imports the user's checkout, and a release of the package in
the interpreter's site-packages imports that release. Tests would then judge the checkout, not
the change: a break passes, a fix fails.

The pre-flight asks, after `setup` and before the first lint or test command, each command's
own interpreter (a `python` the command names, the interpreter in the shebang of the script it
starts, else the `python3` on the commands' PATH for `make`, `tox` and the like), inside the
sandbox with the commands' environment, where each of the repository's top-level packages
(`src/<name>/`, `<name>/` with an `__init__.py`, `src/<name>.py`) resolves from, without the
current directory on the path (a console script such as `pytest` has none). A package that
resolves outside the worktree's own copy is redirected: the worktree's import root (`src`, or
the worktree itself) goes first on PYTHONPATH for every command of the run (PYTHONPATH comes
before site-packages, `.pth` entries and the editable meta-path finder), and the probe runs
again to prove it. When the package still resolves elsewhere (a `.pth` that puts itself first,
a `sitecustomize`), the run stops before any model call with a configuration error (exit 2)
naming the interpreter and the path it imports from. A package that resolves nowhere is left
to gate/project_imports.py (not installed: a configuration error when the tests cannot import
it).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci.workspace.proc import read_head_tail, run_shell

MAX_MODULES = 20
PROBE_TIMEOUT = 60.0
MARK = "codegen-ci-imports:"
PYTHON_NAME = re.compile(r"python(?:\d+(?:\.\d+)?)?$")
# Commands that start Python without naming it: their interpreter is the PATH's.
PYTHON_DRIVERS = re.compile(
    r"\b(?:python\d*(?:\.\d+)?|pytest|py\.test|tox|nox|unittest|make|hatch|pdm|mypy|pylint)\b"
)
NOT_PROJECT = frozenset(
    {"tests", "test", "testing", "docs", "doc", "examples", "example", "scripts", "benchmarks"}
)
SKIP_DIRS = frozenset({"node_modules", "venv", "build", "dist", "site-packages"})

# Run by the interpreter under test (`-c`): where each name resolves from, the current
# directory left out of the path as a console script leaves it out.
PROBE = """
import importlib.util, json, sys
if sys.path and sys.path[0] == "":
    del sys.path[0]
out = {}
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except BaseException as exc:
        out[name] = None
        continue
    where = None
    if spec is not None:
        where = spec.origin if spec.has_location else None
        if where is None and spec.submodule_search_locations:
            where = list(spec.submodule_search_locations)[0]
    out[name] = where
print("%s" + json.dumps({"python": sys.executable, "modules": out}))
"""


@dataclass(frozen=True)
class Module:
    """One of the repository's own top-level modules, and where it lives in a tree."""

    name: str
    rel: str  # `src/calc`, `calc`, `src/calc.py`
    root: str  # the import root it needs on the path: `src` or `.`


@dataclass(frozen=True)
class Stray:
    """A project module an interpreter imports from somewhere else than the worktree."""

    python: str
    module: Module
    where: str


@dataclass
class ImportCheck:
    """What the pre-flight found: the import roots to put first (relative to the tree the
    commands run in), what it saw, and the problem that stops the run, if any."""

    roots: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)  # for the dry run: what was checked
    problem: str | None = None

    def apply(self, env: Mapping[str, str], tree: Path) -> dict[str, str]:
        """`env` with the worktree's import roots first on PYTHONPATH."""
        return with_roots(env, tree, self.roots)


def with_roots(env: Mapping[str, str], tree: Path, roots: Sequence[str]) -> dict[str, str]:
    out = dict(env)
    if not roots:
        return out
    paths = [os.path.normpath(tree / root) for root in roots]
    rest = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and p not in paths]
    out["PYTHONPATH"] = os.pathsep.join([*paths, *rest])
    return out


def project_modules(tree: Path) -> list[Module]:
    """The repository's own top-level Python modules in `tree`, at most `MAX_MODULES`."""
    found: list[Module] = []
    src = tree / "src"
    if src.is_dir() and not src.is_symlink():
        for entry in sorted(src.iterdir()):
            name = entry.stem if entry.suffix == ".py" else entry.name
            if not name.isidentifier() or entry.is_symlink():
                continue
            if entry.is_dir() and any(entry.glob("*.py")):
                found.append(Module(name, f"src/{name}", "src"))
            elif entry.is_file() and entry.suffix == ".py" and name != "conftest":
                found.append(Module(name, f"src/{entry.name}", "src"))
    for entry in sorted(tree.iterdir()):
        name = entry.name
        if name.startswith(".") or name in SKIP_DIRS | NOT_PROJECT or entry.is_symlink():
            continue
        if name.isidentifier() and (entry / "__init__.py").is_file():
            found.append(Module(name, name, "."))
    return found[:MAX_MODULES]


def interpreters(commands: Iterable[str], env: Mapping[str, str], cwd: Path) -> list[str]:
    """The Python interpreters the commands start, as they name them (first found first)."""
    found: list[str] = []
    drivers = False
    for command in commands:
        python = command_python(command, env, cwd)
        if python is not None:
            found.append(python)
        elif PYTHON_DRIVERS.search(command):
            drivers = True
    if drivers or not found:
        path = env.get("PATH", os.defpath)
        default = shutil.which("python3", path=path) or shutil.which("python", path=path)
        if default is not None and (drivers or not found):
            found.append(default)
    return list(dict.fromkeys(found))


def command_python(command: str, env: Mapping[str, str], cwd: Path) -> str | None:
    """The interpreter a command starts first: `python ...` itself, or the shebang's of the
    script it names (`pytest`, `.venv/bin/pytest`); None when it starts something else."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and (re.fullmatch(r"\w+=.*", words[0]) or words[0] == "env"):
        words.pop(0)
    if not words:
        return None
    first = words[0]
    path = env.get("PATH", os.defpath)
    program = str(cwd / first) if "/" in first and not first.startswith("/") else first
    if PYTHON_NAME.match(Path(first).name):
        return program if "/" in first else shutil.which(first, path=path)
    script = program if "/" in first else shutil.which(first, path=path)
    if script is None:
        return None
    try:
        with open(script, "rb") as handle:
            line = handle.readline(1024).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not line.startswith("#!"):
        return None
    parts = line[2:].split()
    if parts and Path(parts[0]).name == "env":
        parts = [p for p in parts[1:] if not p.startswith("-")]
        found = shutil.which(parts[0], path=path) if parts else None
        return found if parts and PYTHON_NAME.match(Path(parts[0]).name) else None
    return parts[0] if parts and PYTHON_NAME.match(Path(parts[0]).name) else None


def check_imports(
    commands: Sequence[str],
    tree: Path,
    env: Mapping[str, str],
    wrap: Sequence[str],
    log_dir: Path,
) -> ImportCheck:
    """Probe every interpreter of `commands` (see the module docstring); redirect what
    resolves outside `tree`, then probe again."""
    check = ImportCheck()
    modules = project_modules(tree)
    if not modules:
        return check
    pythons = interpreters(commands, env, tree)
    strays: list[Stray] = []
    for n, python in enumerate(pythons):
        found = probe(python, modules, tree, env, wrap, log_dir / f"imports-{n}.log")
        strays += [s for s in found if not _inside(s.where, tree, s.module)]
        check.seen += [f"{python}: `{s.module.name}` from {s.where}" for s in found]
    if not strays:
        return check
    check.roots = sorted({s.module.root for s in strays}, key=lambda r: r != "src")
    redirected = check.apply(env, tree)
    for n, python in enumerate(dict.fromkeys(s.python for s in strays)):
        log = log_dir / f"imports-again-{n}.log"
        for stray in probe(python, modules, tree, redirected, wrap, log):
            if not _inside(stray.where, tree, stray.module):
                check.problem = _explain(stray, tree)
                return check
    check.seen = [
        f"{s.python} imported `{s.module.name}` from {s.where}, not from the worktree: the "
        f"commands get the worktree's `{s.module.root}` first on PYTHONPATH"
        for s in strays
    ]
    return check


def probe(
    python: str,
    modules: Sequence[Module],
    tree: Path,
    env: Mapping[str, str],
    wrap: Sequence[str],
    log: Path,
) -> list[Stray]:
    """Where `python`, started as the commands start, finds each module (those it finds)."""
    names = " ".join(m.name for m in modules)
    command = f"{shlex.quote(python)} -c {shlex.quote(PROBE % MARK)} {names}"
    result = run_shell(
        command, cwd=tree, env=env, timeout=PROBE_TIMEOUT, output_path=log, wrap=wrap
    )
    if result.exit_code != 0:
        return []
    text = read_head_tail(log, 200_000)
    line = next((ln for ln in text.splitlines() if ln.startswith(MARK)), None)
    if line is None:
        return []
    try:
        answer = json.loads(line[len(MARK) :])
        where = answer["modules"]
    except (ValueError, KeyError, TypeError):
        return []
    by_name = {m.name: m for m in modules}
    return [
        Stray(python, by_name[name], str(path))
        for name, path in where.items()
        if name in by_name and isinstance(path, str)
    ]


def _inside(where: str, tree: Path, module: Module) -> bool:
    own = Path(os.path.normpath(tree / module.rel))
    path = Path(os.path.normpath(where))
    return path == own or own in path.parents


def _explain(stray: Stray, tree: Path) -> str:
    return (
        f"the commands' interpreter `{stray.python}` imports the repository's own module "
        f"`{stray.module.name}` from {stray.where}, not from the run's worktree ({tree}), even "
        f"with the worktree's `{stray.module.root}` first on PYTHONPATH (something on its "
        "start-up path, a `.pth` file or a `sitecustomize`, puts that copy first). The tests "
        "would judge that copy, not the change. Install the project into a virtualenv of its "
        "own in validation.setup (e.g. `python -m venv .venv && .venv/bin/pip install -e .`, "
        "with `network: [setup]`) and run the tests with it, or remove the installed copy "
        "from that interpreter"
    )
