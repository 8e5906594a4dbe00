"""Run a test command and capture the JUnit reports it wrote.

Without `junit` globs, the command gets `--junitxml` (through PYTEST_ADDOPTS) to a file in
the output's `junit/` directory; with globs, or when the command passes `--junitxml` itself,
the reports it wrote (new or changed during the run) are copied there. Locations are made
relative to the repository, and Go packages that did not compile (which gotestsum's JUnit
leaves out) become error cases from the command's output. A sandboxed command cannot write the
output directory: its `--junitxml` goes to `drop_dir` (writable inside the sandbox) and is
copied out only when it is a regular file.
"""

from __future__ import annotations

import glob
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.gate.junit.go import is_go_case
from codegen_ci.gate.junit.go_build import BUILD_FAILED, build_failures
from codegen_ci.gate.junit.parse import JUnitResult, parse_files
from codegen_ci.gate.runners import pytest_ids
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.proc import ProcResult, run_shell

OUTPUT_SCAN_CHARS = 400_000


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
    drop_dir: Path | None = None,
) -> tuple[ProcResult, JUnitResult]:
    """Run a test command and parse the JUnit reports it wrote, copied into `junit_dir`."""
    env = dict(env)
    drop = (drop_dir or junit_dir) / f"{tag}.xml"
    auto = junit_dir / f"{tag}.xml"
    if not validation.junit:
        junit_dir.mkdir(parents=True, exist_ok=True)
        drop.parent.mkdir(parents=True, exist_ok=True)
        drop.unlink(missing_ok=True)
        addopts = f"{env.get('PYTEST_ADDOPTS', '')} --junitxml={shlex.quote(str(drop))}"
        env["PYTEST_ADDOPTS"] = addopts.strip()
    globs = [expand_glob(pattern, env) for pattern in validation.junit]
    before = {p: _stamp(p) for p in _report_candidates(command, cwd, globs)}
    result = run_shell(command, cwd=cwd, env=env, timeout=validation.timeout, output_path=log,
                       wrap=wrap)  # fmt: skip
    if drop != auto and drop.is_file() and not drop.is_symlink():
        shutil.copyfile(drop, auto)
    written = [p for p in _report_candidates(command, cwd, globs) if _stamp(p) != before.get(p)]
    copies = [auto] if auto.is_file() else []
    for n, path in enumerate(written):
        copies.append(junit_dir / f"{tag}-{n}-{path.name}")
        junit_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copies[-1])
    junit = parse_files(copies, root=cwd)
    if copies:
        junit.cases.extend(_go_build_failures(result, junit))
    return result, junit


def _go_build_failures(result: ProcResult, junit: JUnitResult) -> list[JUnitCase]:
    """Packages that did not compile: in the output only (see junit_go_build)."""
    if result.ok:
        return []
    output = result.excerpt(OUTPUT_SCAN_CHARS)
    if BUILD_FAILED not in output and not any(is_go_case(c) for c in junit.cases):
        return []
    return build_failures(output, {case.classname for case in junit.cases})


def _report_candidates(command: str, root: Path, globs: list[str]) -> list[Path]:
    """Report files in `root` a command may write: the spec's globs, and a `--junitxml` the
    command passes itself (a command-line option beats PYTEST_ADDOPTS)."""
    found = {p for pattern in globs for p in _glob(root, pattern)}
    if explicit := pytest_ids.junitxml_arg(command):
        found.add(root / explicit)
    return sorted(p for p in found if not p.is_symlink())


def expand_glob(pattern: str, env: Mapping[str, str]) -> str:
    """`$NAME`, `${NAME}` and a leading `~` expanded from the commands' environment (so
    `$RUNNER_TEMP/reports/*.xml` works); an unknown variable is left as written."""

    def value(match: re.Match[str]) -> str:
        return env.get(match.group(1) or match.group(2), match.group(0))

    expanded = re.sub(r"\$(?:\{(\w+)\}|(\w+))", value, pattern)
    return str(Path(expanded).expanduser()) if expanded.startswith("~") else expanded


def _glob(root: Path, pattern: str) -> list[Path]:
    """Relative patterns from `root`; absolute ones (outside the worktree) as they are."""
    if Path(pattern).is_absolute():  # Path.glob takes relative patterns only
        return [Path(p) for p in glob.glob(pattern, recursive=True)]  # noqa: PTH207
    return list(root.glob(pattern))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size) if path.is_file() else None
