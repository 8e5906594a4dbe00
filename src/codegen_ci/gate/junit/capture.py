"""Run a test command and capture the JUnit reports it wrote; for one that wrote none, how to
make its runner write some (`junit_hint`).

Without `junit` globs, the command gets `--junitxml` (through PYTEST_ADDOPTS) to a file in
the output's `junit/` directory; with globs, or when the command passes `--junitxml` itself,
the reports it wrote (new or changed during the run) are copied there. Locations are made
relative to the repository, and what the command's output says that its JUnit leaves unsaid
is the runners' (`runners.from_output`): Go's packages that did not compile become error
cases; a command that wrote no report but printed libtest's own lines (plain `cargo test`)
has the tests they name as its cases. A command cannot write the output
directory: its `--junitxml` goes to a fresh folder of its own (`drop_dir`), and every report is
copied out through the guarded reader (security/guarded_read.py: no symlink followed, regular
files only, size checked first); what it refuses is a JUnit problem with its reason.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath

from codegen_ci import runners
from codegen_ci.gate.junit.cases import JUnitCase, locate
from codegen_ci.gate.junit.parse import DEFAULT_MAX_BYTES, JUnitResult, parse_files
from codegen_ci.runners.base import Folder, in_folder, keep_tool_paths
from codegen_ci.security import guarded_read
from codegen_ci.security.untrusted import Untrusted, strip_ansi
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.proc import ProcResult, run_shell

MAX_REPORT_FILES = 100  # reports copied per command (a glob may match a million files)
MAX_REPORT_BYTES = 256 * 1024 * 1024  # their total, per command


def run_test_command(
    command: str,
    cwd: Path,
    env: Mapping[str, str],
    validation: Validation,
    junit_dir: Path,
    tag: str,
    log: Path,
    *,
    wrap: Sequence[str] = (),
    drop_dir: Path,
    anchors: Sequence[Path] = (),
) -> tuple[ProcResult, JUnitResult]:
    """Run a test command and parse the JUnit reports it wrote, copied into `junit_dir`.

    `drop_dir`: a fresh folder this command may write (its `--junitxml` goes there), made in
    a directory the command cannot replace. `anchors`: the other places a command may write
    (the scratch), beside `cwd`; a report in any of them is read through the guarded reader
    (security/guarded_read.py), relative to that place."""
    env = dict(env)
    drop = drop_dir / f"{tag}.xml"
    auto = junit_dir / f"{tag}.xml"
    junit_dir.mkdir(parents=True, exist_ok=True)
    if not validation.junit:
        env = runners.junit_env(env, str(drop))  # pytest's PYTEST_ADDOPTS
    places = [cwd, *anchors]
    globs = [expand_glob(pattern, env) for pattern in validation.junit]
    globs = globs or runners.configured_reports(command, env, _reader(cwd))  # nextest's profile
    before = _report_candidates(command, places, globs)
    result = run_shell(
        # cargo: a failing test binary stops no other; the tool's plugins stay importable
        keep_tool_paths(runners.every_test(command), env),
        cwd=cwd,
        env=env,
        timeout=validation.timeout,
        output_path=log,
        wrap=wrap,
    )
    problems: list[str] = []
    copies: list[Path] = []
    if not validation.junit:
        _copy(
            drop_dir.parent, f"{drop_dir.name}/{drop.name}", auto, copies, problems, missing_ok=True
        )
    after = _report_candidates(command, places, globs)
    written = [key for key, stamp in after.items() if before.get(key) != stamp]
    total = 0
    for n, (root, rel) in enumerate(written):
        size = after[(root, rel)][1]
        too_many = len(copies) >= MAX_REPORT_FILES or total + size > MAX_REPORT_BYTES
        if too_many and size <= DEFAULT_MAX_BYTES:  # a larger one is refused by its own size
            problems.append(
                f"{root / rel}: not read: more than {MAX_REPORT_FILES} reports or "
                f"{MAX_REPORT_BYTES} bytes of them from one command"
            )
            continue
        total += size
        _copy(root, rel, junit_dir / f"{tag}-{n}-{PurePosixPath(rel).name}", copies, problems)
    junit = parse_files(copies, root=cwd)
    junit.problems[:0] = problems
    ran = runners.Ran(
        ok=result.ok,
        output=lambda chars: strip_ansi(result.excerpt(chars)),
        cases=tuple(c.shown_to_runners() for c in junit.cases) if copies else None,
    )
    add_from_output(ran, junit, log=log, root=cwd)
    folder, _ = in_folder(command)
    if folder.path:
        junit.cases = [from_folder(c, folder, cwd) for c in junit.cases]
    return result, junit


def from_folder(case: JUnitCase, folder: Folder, tree: Path) -> JUnitCase:
    """A case of a command run from a folder (`cd tests && python -m pytest`, base.py's
    `in_folder`) whose file its runner named from there (pytest rooted in the folder:
    `test_x.py`), named as the repository does (`tests/test_x.py`): where the folder has
    that file and the repository's root does not (rooted above the folder, pytest names it
    from there already)."""
    file = case.file
    if file is None or file.startswith("/") or (tree / file).is_file():
        return case
    inside = folder.outward(file)
    return replace(case, file=inside) if (tree / inside).is_file() else case


def add_from_output(ran: runners.Ran, junit: JUnitResult, *, log: Path, root: Path) -> None:
    """The cases a runner reads from the command's output (`runners.from_output`) added to
    its JUnit (`junit`), or, where they are the whole result (plain `cargo test`, 0 tests
    too), in its place, the command's log standing as its one file."""
    found = runners.from_output(ran)
    if found is None:
        return
    cases = [_case(c, root) for c in found.cases]
    if found.instead:
        junit.cases, junit.files = cases, [str(log)]
    else:
        junit.cases.extend(cases)


def _case(found: runners.OutputCase, root: Path) -> JUnitCase:
    """A case a runner read from the command's output, as the JUnit reader's cases are (its
    text the repository's output: `Untrusted`); a failure without a place is located in it."""
    file, line = found.file, found.line
    if file is None and found.outcome in ("failure", "error"):
        file, line = locate(None, None, found.details, root)
    return JUnitCase(
        id=Untrusted(f"{found.classname}::{found.name}"),  # the repository's test names
        name=found.name,
        classname=found.classname,
        file=file,
        line=line,
        outcome=found.outcome,
        message=Untrusted(found.message),
        details=Untrusted(found.details),
        time=None,
        flaky=False,
    )


def _reader(cwd: Path) -> runners.Read:
    """A runner's config file in the worktree, read through the guarded reader."""

    def read(rel: str) -> str | None:
        try:
            return guarded_read.read_text(cwd, rel, max_bytes=1024 * 1024)
        except guarded_read.Refused:
            return None

    return read


def _copy(
    root: Path,
    rel: str,
    dest: Path,
    copies: list[Path],
    problems: list[str],
    *,
    missing_ok: bool = False,
) -> None:
    """Copy one report the command wrote into the output, through the guarded reader: no
    symlink followed, regular files only, its size checked before a byte is read."""
    try:
        guarded_read.copy_file(root, rel, dest, max_bytes=DEFAULT_MAX_BYTES)
    except guarded_read.Refused as exc:
        if not (missing_ok and exc.reason == "does not exist"):
            problems.append(f"{root / rel}: not read: {exc.reason}")
        return
    copies.append(dest)


Stamp = tuple[int, int]


def _report_candidates(
    command: str, places: Sequence[Path], globs: list[str]
) -> dict[tuple[Path, str], Stamp]:
    """Report files a command may write, found without following a symlink: the spec's globs,
    and a `--junitxml` the command passes itself (a command-line option beats PYTEST_ADDOPTS).
    Each as (the place it lies under, its path there) with its modification time and size."""
    patterns = [*globs, *runners.junit_args(command)]
    found: dict[tuple[Path, str], Stamp] = {}
    for pattern in patterns:
        root, rel = _anchor(pattern, places)
        if root is None:
            continue
        for info in guarded_read.glob_files(root, rel):
            found[(root, info.rel)] = (info.mtime_ns, info.size)
    return found


def _anchor(pattern: str, places: Sequence[Path]) -> tuple[Path | None, str]:
    """The directory a pattern is read under, and the pattern relative to it: the worktree
    for a relative pattern; for an absolute one, the place commands may write that holds it,
    else (a folder commands cannot write) the pattern's fixed leading folders."""
    path = PurePosixPath(pattern)
    if not path.is_absolute():
        return places[0], pattern
    for place in places:
        for base in dict.fromkeys([str(place), os.path.realpath(place)]):
            if pattern.startswith(base.rstrip("/") + "/"):
                return Path(base), pattern[len(base.rstrip("/")) + 1 :]
    parts = path.parts[1:]
    fixed = 0
    while fixed < len(parts) - 1 and not any(c in parts[fixed] for c in "*?["):
        fixed += 1
    folder = Path("/", *parts[:fixed])
    return (folder, "/".join(parts[fixed:])) if folder.is_dir() else (None, "")


def expand_glob(pattern: str, env: Mapping[str, str]) -> str:
    """`$NAME`, `${NAME}` and a leading `~` expanded from the commands' environment (so
    `$RUNNER_TEMP/reports/*.xml` works); an unknown variable is left as written."""

    def value(match: re.Match[str]) -> str:
        return env.get(match.group(1) or match.group(2), match.group(0))

    expanded = re.sub(r"\$(?:\{(\w+)\}|(\w+))", value, pattern)
    return str(Path(expanded).expanduser()) if expanded.startswith("~") else expanded


# A test command that wrote no JUnit: how to make its runner write some. Without JUnit the gate
# can only go by exit codes: no failing test ids for the reflection, no baseline per test,
# "tests: unknown" in reports. The hint names the runner the command uses (looking through
# `npm test`/`pnpm run x`/`yarn x` into package.json's scripts).

SCRIPT = re.compile(r"^\s*(?:npm|pnpm|yarn|bun)\s+(?:run(?:-script)?\s+)?([\w:.-]+)")
GENERIC = (
    "make the command write a JUnit XML report and list the file in `validation.junit` "
    "(pytest gets one automatically)"
)


# A typecheck written as a test command (`npm test`'s `&& npm run check:type:ts`, `tsd`): it
# names no tests, so no JUnit report is to be had from it.
TYPECHECK = re.compile(r"(?:^|[\s&;|(])(?:npx\s+)?(?:tsc|tsd|vue-tsc|svelte-check|mypy|pyright)\b")
TYPECHECK_HINT = (
    "a typecheck, not a test runner: it names no tests, its exit code decides (its place "
    "could be `validation.lint`)"
)


def is_typecheck(command: str, cwd: Path) -> bool:
    """A typecheck (`tsc`, `tsd`, `mypy`, ... directly or through a package.json script)
    that asks for no JUnit: a command that never names tests, so none is to be expected."""
    text = command + " " + _script(command, cwd)
    return (
        TYPECHECK.search(text) is not None
        and not runners.asks_for_junit(text)
        and runners.junit_hint(text) is None
    )


def junit_hint(command: str, cwd: Path) -> str:
    """The way to get JUnit from the runner `command` uses; when it already asks for JUnit,
    where the report goes instead (what `validation.junit` must match)."""
    text = command + " " + _script(command, cwd)
    if runners.asks_for_junit(text):
        written = runners.junit_file(text)
        if written and re.match(r"^(?:/|~|\.\./|\$)", written):
            return (
                f"the command writes its JUnit outside the repository (`{written}`), where the "
                "gate does not read: write it inside (e.g. `reports/junit.xml`) and list that "
                "in `validation.junit`"
            )
        target = f"`{written}`" if written else "the file it writes"
        default = " (jest-junit's default is junit.xml)" if "jest-junit" in text else ""
        return (
            f"the command already asks for JUnit; list {target}{default} in "
            "`validation.junit` (a glob relative to the repository) so the gate reads it"
        )
    if is_typecheck(command, cwd):
        return TYPECHECK_HINT
    return runners.junit_hint(text) or GENERIC


def _script(command: str, cwd: Path) -> str:
    """The package.json script an `npm test`-style command runs ("" if none)."""
    match = SCRIPT.match(command)
    if not match:
        return ""
    try:
        text = guarded_read.read_text(cwd, "package.json", max_bytes=1024 * 1024)
        scripts = json.loads(text).get("scripts")
    except (guarded_read.Refused, ValueError, AttributeError):
        return ""
    value = scripts.get(match.group(1)) if isinstance(scripts, dict) else None
    return value if isinstance(value, str) else ""
