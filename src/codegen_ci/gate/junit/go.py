"""Go test results (gotestsum, go-junit-report): what their JUnit leaves unsaid.

- The message: both write message="Failed"; the panic line or the test's first log line
  (`store_test.go:13: got 1, want 2`) says what failed.
- The location: a test's log names the file's base name only; the package (the classname,
  an import path) gives its directory, through the module path in `go.mod`.
- Subtests: a parent whose only output is its RUN/FAIL lines failed because a subtest did;
  it is folded into its failing subtests instead of being a second failure.
- A panic ends the test binary: the package's tests that never ran are counted from its
  `_test.go` sources (top-level `func TestXxx(t *testing.T)`, what `go test -list .` lists;
  the JUnit file cannot tell, since gotestsum's `tests=` counts only what ran) and named in the
  panicking test's message. Build tags are not evaluated, so a test behind a tag counts too.
- Build failures: a package that does not compile is in the output only (gotestsum counts it in
  the root's `errors=` and lists no case); runners/go.py's `from_output` makes it an error case
  (`BUILD_FAILED`), so it cannot read as "0 errors".
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.runners import go
from codegen_ci.security import guarded_read
from codegen_ci.security.untrusted import Untrusted

BUILD_FAILED = go.BUILD_FAILED  # a package's case when it did not compile
_LOG_LINE = go.LOG_LINE
_OWN_OUTPUT = re.compile(r"^(?!=== (?:RUN|PAUSE|CONT|NAME)\b|\s*--- FAIL: |\s*$).+", re.MULTILINE)
_TEST_FUNC = re.compile(r"^func (Test(?:[^a-z\W]\w*)?)\(\s*\w+\s+\*testing\.T\s*\)", re.MULTILINE)
_GENERIC_MESSAGES = go.GENERIC_MESSAGES
_COMPILER_LINE = go.COMPILER_LINE
_MAX_NAMED = 10


def _details(case: JUnitCase) -> str:
    """The case's output, searched for Go's shapes (`Untrusted`: read, never shown from here)."""
    return case.details.raw_for("matching")


def _said(case: JUnitCase) -> str:
    return case.message.raw_for("matching")


def is_go_case(case: JUnitCase) -> bool:
    """Go's test output (runners/go.py's `is_go_output`)."""
    return go.is_go_output(_said(case), _details(case))


def refine_go(cases: list[JUnitCase], root: Path | None) -> list[JUnitCase]:
    """`cases` from one report with Go's failures made precise (see the module docstring)."""
    go_failing = [c for c in cases if c.outcome in ("failure", "error") and is_go_case(c)]
    if not go_failing:
        return cases
    modules = module_dirs(root) if root is not None else []
    folded = {id(c) for c in go_failing if _only_a_parent(c, go_failing)}
    refined: dict[int, JUnitCase] = {}
    for case in go_failing:
        if id(case) in folded:
            continue
        pkg_dir = package_dir(case.classname, modules, root)
        file, line = _location(case, pkg_dir, root)
        better = replace(case, message=_message(case), file=file, line=line)
        if pkg_dir is not None and _panicked(case):
            not_run = Untrusted(_not_run(case, cases, pkg_dir, root))
            better = replace(better, message=better.message + not_run)
        refined[id(case)] = better
    return [refined.get(id(c), c) for c in cases if id(c) not in folded]


def _only_a_parent(case: JUnitCase, failing: list[JUnitCase]) -> bool:
    prefix = case.name + "/"
    has_failing_child = any(
        c.classname == case.classname and c.name.startswith(prefix) for c in failing
    )
    return has_failing_child and not _OWN_OUTPUT.search(_details(case))


def _panicked(case: JUnitCase) -> bool:
    details = _details(case)
    return details.startswith("panic: ") or "\npanic: " in details


def _message(case: JUnitCase) -> Untrusted:
    """The words of the failure (the test's output: `Untrusted`, as the case's message is)."""
    if _said(case) not in _GENERIC_MESSAGES:
        return case.message
    details = _details(case)
    for line in details.splitlines():
        if line.startswith("panic: "):
            return Untrusted(line.removesuffix(" [recovered]"))
    if log := _LOG_LINE.search(details) or _COMPILER_LINE.search(details):
        return Untrusted(str(log[log.lastindex or 1]).strip())
    return case.message


def _location(
    case: JUnitCase, pkg_dir: Path | None, root: Path | None
) -> tuple[str | None, int | None]:
    """The first log line (where the message comes from), its base name resolved in the
    package's directory (nested packages share base names: `store_test.go` alone does not
    say which)."""
    file, line = case.file, case.line
    log = _LOG_LINE.search(_details(case))
    if file is None or "/" not in file:
        if log and not _panicked(case):
            file, line = log[1], int(log[2])
        if pkg_dir is not None and root is not None and file and (pkg_dir / file).is_file():
            file = (pkg_dir / file).relative_to(root).as_posix()
    return file, line


def _not_run(case: JUnitCase, cases: list[JUnitCase], pkg_dir: Path, root: Path | None) -> str:
    declared: list[str] = []
    base = root if root is not None and pkg_dir.is_relative_to(root) else pkg_dir
    folder = pkg_dir.relative_to(base).as_posix()
    pattern = f"{folder}/*_test.go" if folder != "." else "*_test.go"
    for rel in guarded_read.glob(base, pattern):  # the tree the tests ran in
        try:
            text = guarded_read.read_text(base, rel, max_bytes=MAX_SOURCE_BYTES)
        except guarded_read.Refused:
            continue
        declared += _TEST_FUNC.findall(text)
    ran = {c.name.split("/")[0] for c in cases if c.classname == case.classname}
    missing = [name for name in dict.fromkeys(declared) if name not in ran]
    if not missing:
        return ""
    named = ", ".join(missing[:_MAX_NAMED]) + (", ..." if len(missing) > _MAX_NAMED else "")
    total = len(set(declared) | ran)
    return (
        f" (the panic stopped the test binary: {len(missing)} of {total} tests in "
        f"{case.classname} did not run: {named})"
    )


# Go packages: where an import path lives in the repository.

_MODULE = re.compile(r"^module\s+(\S+)", re.MULTILINE)
_SKIP_DIRS = ("vendor", "node_modules", "testdata")
MAX_SOURCE_BYTES = 4 * 1024 * 1024


def module_dirs(root: Path) -> list[tuple[str, Path]]:
    """(module path, directory) of `go.mod` at the root and one or two levels below,
    longest module path first (a nested module wins over its parent)."""
    found: list[tuple[str, Path]] = []
    # The tree the tests ran in: read through the guarded reader (a go.mod that is a link to
    # /dev/zero, or a FIFO, would otherwise hang or fill the tool's memory).
    mods = [
        m
        for pattern in ("go.mod", "*/go.mod", "*/*/go.mod")
        for m in guarded_read.glob(root, pattern)
    ]
    for rel in mods:
        if any(part in _SKIP_DIRS for part in Path(rel).parts):
            continue
        try:
            text = guarded_read.read_text(root, rel, max_bytes=MAX_SOURCE_BYTES)
        except guarded_read.Refused:
            continue
        if match := _MODULE.search(text):
            found.append((match[1].strip('"'), (root / rel).parent))
    return sorted(found, key=lambda item: len(item[0]), reverse=True)


def package_dir(package: str, modules: list[tuple[str, Path]], root: Path | None) -> Path | None:
    """The directory of import path `package`, if it lies in one of `modules`."""
    for module, directory in modules:
        if package == module:
            return directory
        if package.startswith(module + "/"):
            candidate = directory / package[len(module) + 1 :]
            if root is not None and candidate.resolve().is_relative_to(root.resolve()):
                return candidate if candidate.is_dir() else None
    return None


def test_defined_at(case: JUnitCase, root: Path) -> tuple[str, int, int] | None:
    """Where Go case `case`'s top-level test function is defined in `root`: the `_test.go`
    file of its package (relative to `root`), the function's first and last line; None for a
    case that is not a Go package's test."""
    pkg_dir = package_dir(case.classname, module_dirs(root), root)
    if pkg_dir is None or not pkg_dir.is_relative_to(root):
        return None
    folder = pkg_dir.relative_to(root).as_posix()
    name = case.name.split("/")[0]
    pattern = f"{folder}/*_test.go" if folder != "." else "*_test.go"
    for rel in sorted(guarded_read.glob(root, pattern)):
        try:
            text = guarded_read.read_text(root, rel, max_bytes=MAX_SOURCE_BYTES)
        except guarded_read.Refused:
            continue
        if span := go.test_function(text, name):
            return rel, *span
    return None
