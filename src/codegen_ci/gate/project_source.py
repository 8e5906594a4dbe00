"""Where the lint and test commands take the repository's own code from: Python imports,
Node workspace packages linked through `node_modules`, Go `replace` directives and workspaces.

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

Node: a workspace package is reached through a link in `node_modules` (`node_modules/lib ->
../packages/lib`). The worktree's `node_modules` is its own copy, whose relative links lead to
the worktree's packages (workspace/dependency_links.py rewrites absolute ones, and when no copy
can be made, makes a folder of links whose workspace entries lead to the worktree). A package
link that still resolves into the checkout's code stops the run (exit 2), naming it.

Go: a `replace` directive (in `go.mod` or `go.work`) or a `go.work` `use` that names the
checkout by its absolute path builds the checkout's packages; so does GOWORK naming the
checkout's `go.work`, which is redirected to the worktree's. Any other stops the run (exit 2),
naming the file and the directive.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci.security import guarded_read
from codegen_ci.workspace.dependency_links import DEPENDENCY_DIRS, package_entries
from codegen_ci.workspace.proc import read_head_tail, run_shell

MAX_MODULES = 20
PROBE_TIMEOUT = 60.0
SCRIPT_BYTES = 4_000_000  # a script in the worktree whose shebang is read; bigger: not a script
GO_FILE_BYTES = 1_000_000
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

    gowork: str | None = None  # GOWORK for the commands, relative to the tree

    def apply(self, env: Mapping[str, str], tree: Path) -> dict[str, str]:
        """`env` with the worktree's import roots first on PYTHONPATH (and GOWORK its own)."""
        out = with_roots(env, tree, self.roots)
        if self.gowork is not None:
            out["GOWORK"] = str(tree / self.gowork)
        return out


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


def command_python(
    command: str, env: Mapping[str, str], cwd: Path, tree: Path | None = None
) -> str | None:
    """The interpreter a command run in `cwd` starts first: `python ...` itself, or the
    shebang's of the script it names (`pytest`, `.venv/bin/pytest`); None when it starts
    something else. `tree`: the worktree `cwd` is a folder of (default: `cwd`), whose files
    are read through the guarded reader."""
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
    relative = "/" in first and not first.startswith("/")
    program = os.path.normpath(cwd / first) if relative else first
    if PYTHON_NAME.match(Path(first).name):
        return program if "/" in first else shutil.which(first, path=path)
    script = program if "/" in first else shutil.which(first, path=path)
    if script is None:
        return None
    line = _first_line(Path(script), tree or cwd)
    if not line.startswith("#!"):
        return None
    parts = line[2:].split()
    if parts and Path(parts[0]).name == "env":
        parts = [p for p in parts[1:] if not p.startswith("-")]
        found = shutil.which(parts[0], path=path) if parts else None
        return found if parts and PYTHON_NAME.match(Path(parts[0]).name) else None
    return parts[0] if parts and PYTHON_NAME.match(Path(parts[0]).name) else None


def _first_line(script: Path, tree: Path) -> str:
    """A script's first line; one in the worktree (which commands shape) read only through
    the guarded reader, one elsewhere only if it is a regular file."""
    try:
        if script.is_relative_to(tree):
            rel = script.relative_to(tree).as_posix()
            head = guarded_read.read_bytes(tree, rel, max_bytes=SCRIPT_BYTES)
        else:
            fd = os.open(script, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return ""
                head = os.read(fd, 1024)
            finally:
                os.close(fd)
    except (OSError, guarded_read.Refused):
        return ""
    return head[:1024].split(b"\n", 1)[0].decode("utf-8", "replace").strip()


def check_sources(
    commands: Sequence[str],
    tree: Path,
    env: Mapping[str, str],
    wrap: Sequence[str],
    log_dir: Path,
    *,
    checkout: Path,
    links: Sequence[str] = (),
) -> ImportCheck:
    """Node's links and Go's directives (see the module docstring), then Python's imports."""
    go, gowork = go_strays(tree, checkout, env)
    node = node_strays(tree, checkout, links)
    if go or node:
        check = ImportCheck(problem=_explain_links(go, node, checkout))
        return check
    check = check_imports(commands, tree, env, wrap, log_dir)
    if gowork is not None:
        check.gowork = gowork
        check.seen.append(f"GOWORK named the checkout's {gowork}: the commands get the worktree's")
    return check


def _explain_links(go: Sequence[str], node: Sequence[str], checkout: Path) -> str:
    found = "; ".join([*node, *go][:10])
    return (
        f"the commands would build or import the checkout's code ({checkout}), not the run's "
        f"worktree: {found}. The tests would judge that copy, not the change. Name the "
        "repository's own packages by relative paths (a `replace` or `use` relative to the "
        "module, workspace links as the package manager makes them), then run again"
    )


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


# Node: workspace packages through node_modules.


def node_strays(tree: Path, checkout: Path, links: Sequence[str]) -> list[str]:
    """Package links in the worktree's `node_modules` folders that lead into the checkout's
    own code (`node_modules/<name> -> <checkout>/<path>`), as `name -> path`."""
    found = []
    for rel in links:
        modules = tree / rel
        if modules.name != "node_modules":
            continue
        for entry in package_entries(modules):
            if (into := _into_checkout(entry, checkout)) is not None:
                found.append(f"{rel}/{entry.relative_to(modules).as_posix()} -> {into}")
    return found


def _into_checkout(entry: Path, checkout: Path) -> str | None:
    """The checkout's own code (outside its dependency folders) that `entry` resolves to."""
    try:
        real, top = entry.resolve(), checkout.resolve()
    except (OSError, RuntimeError):
        return None
    if top not in real.parents:
        return None
    if any(part in DEPENDENCY_DIRS for part in real.relative_to(top).parts):
        return None
    return str(real)


# Go: replace directives and workspaces.

REPLACE = re.compile(r"^\s*(?:replace\s+)?\S+(?:\s+\S+)?\s+=>\s+(?P<path>/\S*)", re.M)
USE = re.compile(r"^\s*(?:use\s+)?\(?\s*(?P<path>/[^\s)]*)", re.M)


def go_strays(tree: Path, checkout: Path, env: Mapping[str, str]) -> tuple[list[str], str | None]:
    """Go directives that build the checkout's code (`file: directive`), and the GOWORK the
    commands should use instead of one in the checkout (relative to `tree`), if any."""
    found: list[str] = []
    gowork: str | None = None
    top = checkout.resolve()
    named = env.get("GOWORK", "")
    if named and named != "off":
        path = Path(named).resolve()
        if top in path.parents:
            inside = path.relative_to(top)
            if (tree / inside).is_file():
                gowork = inside.as_posix()
            else:
                found.append(f"GOWORK={named}: the checkout's workspace file")
    files = [tree / "go.work", *sorted(tree.glob("go.mod")), *sorted(tree.glob("*/go.mod"))]
    for file in files:
        try:
            rel = file.relative_to(tree).as_posix()
            text = guarded_read.read_text(tree, rel, max_bytes=GO_FILE_BYTES)
        except (OSError, guarded_read.Refused):
            continue  # none, or not a plain file: nothing go reads either
        patterns = (REPLACE, USE) if file.name == "go.work" else (REPLACE,)
        for pattern in patterns:
            for match in pattern.finditer(text):
                target = Path(match["path"]).resolve()
                if target == top or top in target.parents:
                    found.append(f"{rel}: {match.group(0).strip()}")
    return found, gowork
