"""nox's sessions unfolded to their commands, for `codegen-ci init` (init_tox.py's sibling).
nox would build a virtualenv per session and download its dependencies (`session.install`),
which a sandboxed run without network cannot do; the commands its sessions run go to the
repository's interpreter instead, as tox's do.

`noxfile.py` is the repository's code: it is read with `ast`, never imported or run. A session
is a function decorated with `@nox.session` (or `@session`), named by its `name=` or its
function name; `nox -s a b`, `--session a`, `-e a,b` and `--sessions a` name sessions, and with
none named nox runs `nox.options.sessions`, else every session not marked `default=False`.
Each `session.run(...)` of a session's body is a command when its arguments are plain: string
literals, `*session.posargs` (the arguments after CI's `--`), and `*NAME` of a list or tuple of
strings assigned in the session or at the top of the file. Of an `if`, the branch taken is
unknown to init: its first branch is read (`if coverage: coverage run -m pytest`, `else:
pytest`: one of the two, not both). A `session.run` with any other argument, a parametrized
session (its parameters are nox's to fill in), and sessions that build, publish or serve
documents are left out, and said. A literal `env={...}` goes in front of the command as
assignments, as a tox env's `setenv` does; any other is left out (and said), the command kept."""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci.commands.init_checks import quote_argv
from codegen_ci.commands.init_ci import LeftOut
from codegen_ci.commands.init_tox import SKIP_ENV, Unfolded, take

NOXFILE = "noxfile.py"
SESSION_OPTION = re.compile(r"^(?:-s|-e|--sessions?)(?:=(.+))?$")


@dataclass
class Session:
    name: str
    function: ast.FunctionDef
    default: bool = True
    parametrized: bool = False


@dataclass
class Noxfile:
    sessions: dict[str, Session] = field(default_factory=dict)
    default: list[str] | None = None  # nox.options.sessions
    constants: dict[str, list[str]] = field(default_factory=dict)  # top-level NAME = [strs]


def nox_sessions(root: Path, only: list[str] | None, posargs: list[str]) -> Unfolded:
    """The commands of the sessions `only` names (default: the ones nox runs by default),
    `*session.posargs` given `posargs`. `source` stays None when there is no noxfile that
    `ast` can read (the CI line is then written as it is)."""
    found = Unfolded()
    noxfile = _read(root / NOXFILE)
    if noxfile is None:
        return found
    found.source = NOXFILE
    if only is None:
        names = noxfile.default
        if names is None:
            names = [n for n, s in noxfile.sessions.items() if s.default]
    else:
        names = only
    seen: set[str] = set()
    for name in names:
        where = f"nox session {name}"
        session = noxfile.sessions.get(name.split("(", 1)[0])
        if session is None:
            found.left_out.append(LeftOut(where, f"{NOXFILE} has no such session"))
        elif session.parametrized:
            found.left_out.append(LeftOut(where, "a parametrized session: nox fills it in"))
        elif SKIP_ENV.search(session.name):
            found.left_out.append(LeftOut(where, "builds, publishes or serves"))
        else:
            for argv, env in _runs(session, noxfile.constants, posargs, found, where):
                line, taken = quote_argv(argv), len(found.commands)
                take(root, found, where, session.name, line, env or "", seen)
                if env is None and len(found.commands) > taken:  # kept, without it (as tox's)
                    why = "a value only nox can resolve"
                    found.left_out.append(LeftOut(f"{where}: the env= of {line}", why))
    return found


def sessions_named(args: str) -> tuple[list[str] | None, list[str]]:
    """`nox -s tests lint -- -x` -> (["tests", "lint"], ["-x"]); (None, posargs) when the
    line names no session."""
    try:
        words = shlex.split(args)
    except ValueError:
        return None, []
    posargs: list[str] = []
    if "--" in words:
        at = words.index("--")
        words, posargs = words[:at], words[at + 1 :]
    named: list[str] = []
    taking = False
    for word in words:
        option = SESSION_OPTION.match(word)
        if option:
            taking = option[1] is None
            named.extend(n for n in (option[1] or "").split(",") if n)
        elif word.startswith("-"):
            taking = False
        elif taking:
            named.extend(n for n in word.split(",") if n)
    return (named or None), posargs


# -- reading noxfile.py -----------------------------------------------------------------------


def _read(path: Path) -> Noxfile | None:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    noxfile = Noxfile()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            value = _strings(node.value, {})
            for target in node.targets:
                if isinstance(target, ast.Name) and value is not None:
                    noxfile.constants[target.id] = value
                elif ast.unparse(target) == "nox.options.sessions" and value is not None:
                    noxfile.default = value
        elif isinstance(node, ast.FunctionDef) and (session := _session(node)) is not None:
            noxfile.sessions[session.name] = session
    return noxfile


def _session(function: ast.FunctionDef) -> Session | None:
    found: Session | None = None
    parametrized = False
    for decorator in function.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = ast.unparse(call.func if call else decorator)
        if target in ("nox.session", "session"):
            found = Session(function.name, function)
            for keyword in call.keywords if call else []:
                value = keyword.value
                if keyword.arg == "name" and isinstance(value, ast.Constant):
                    found.name = str(value.value)
                elif keyword.arg == "default" and isinstance(value, ast.Constant):
                    found.default = bool(value.value)
        elif target in ("nox.parametrize", "parametrize"):
            parametrized = True
    if found is not None:
        # `def test_pickle(session, version)`: a parameter nox fills in
        found.parametrized = parametrized or len(function.args.args) > 1
    return found


def _runs(
    session: Session,
    constants: dict[str, list[str]],
    posargs: list[str],
    found: Unfolded,
    where: str,
) -> list[tuple[list[str], str | None]]:
    """Each `session.run(...)` of the session's body, in order, with its `env=` assignments
    (None: an `env=` init cannot read)."""
    function = session.function
    first = function.args.args[0].arg if function.args.args else "session"
    names = dict(constants)
    runs: list[tuple[list[str], str | None]] = []
    for statement in _taken(function.body):
        if isinstance(statement, ast.Assign):
            value = _strings(statement.value, names)
            for target in statement.targets:
                if isinstance(target, ast.Name) and value is not None:
                    names[target.id] = value
            continue
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) == f"{first}.run"
                and not any(isinstance(n, ast.Lambda) for n in ast.walk(node))
            ):
                argv = _argv(node.args, names, posargs, first)
                if argv is None:
                    found.left_out.append(
                        LeftOut(f"{where}: {ast.unparse(node)}", "an argument only nox can resolve")
                    )
                    continue
                runs.append((argv, _env(node)))
    return runs


def _taken(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements init reads: an `if`'s first branch only, the bodies of `with`, `for`
    and `try` (nested), everything else as it is."""
    out: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, ast.If | ast.With | ast.For | ast.Try):
            out.extend(_taken(statement.body))  # an `if`'s first branch; never its `else`
        else:
            out.append(statement)
    return out


def _argv(
    args: list[ast.expr], names: dict[str, list[str]], posargs: list[str], session: str
) -> list[str] | None:
    argv: list[str] = []
    for arg in args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            argv.append(arg.value)
        elif isinstance(arg, ast.Starred):
            inner = ast.unparse(arg.value)
            if inner == f"{session}.posargs" or inner == "posargs":
                argv.extend(posargs)
            elif inner in names:
                argv.extend(names[inner])
            else:
                return None
        else:
            return None
    return argv or None


def _env(call: ast.Call) -> str | None:
    """`KEY=value ` for a literal `env={...}`; "" without one; None for any other."""
    for keyword in call.keywords:
        if keyword.arg != "env":
            continue
        value = keyword.value
        if not isinstance(value, ast.Dict):
            return None
        out = []
        for key, item in zip(value.keys, value.values, strict=True):
            if not (
                isinstance(key, ast.Constant)
                and isinstance(key.value, str)
                and isinstance(item, ast.Constant)
                and isinstance(item.value, str)
                and re.fullmatch(r"[A-Za-z_]\w*", key.value)
            ):
                return None
            out.append(f"{key.value}={shlex.quote(item.value)} ")
        return "".join(out)
    return ""


def _strings(node: ast.expr, names: dict[str, list[str]]) -> list[str] | None:
    """A list or tuple of string literals (and `*NAME` of one already known), or None."""
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    out: list[str] = []
    for item in node.elts:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value)
        elif isinstance(item, ast.Starred) and ast.unparse(item.value) in names:
            out.extend(names[ast.unparse(item.value)])
        else:
            return None
    return out
