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
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.gate.junit.go_build import MAX_SOURCE_BYTES, module_dirs, package_dir
from codegen_ci.security import guarded_read

GO_MARKERS = ("=== RUN", "--- FAIL:", "\npanic: ", "\ngoroutine ")
_LOG_LINE = re.compile(r"^\s+([\w.-]+\.go):(\d+): (.*)$", re.MULTILINE)
_OWN_OUTPUT = re.compile(r"^(?!=== (?:RUN|PAUSE|CONT|NAME)\b|\s*--- FAIL: |\s*$).+", re.MULTILINE)
_TEST_FUNC = re.compile(r"^func (Test(?:[^a-z\W]\w*)?)\(\s*\w+\s+\*testing\.T\s*\)", re.MULTILINE)
# gotestsum writes "Failed"; go-junit-report "Failed", "Runtime error" and "Build error".
_GENERIC_MESSAGES = ("", "Failed", "Runtime error", "Build error")
_COMPILER_LINE = re.compile(r"^(?:vet: )?[^\s:]+\.go:\d+(?::\d+)?: (.+)$", re.MULTILINE)
_MAX_NAMED = 10


def is_go_case(case: JUnitCase) -> bool:
    """Go's test output: RUN/FAIL lines, a goroutine dump, or go-junit-report's generic
    messages over `file.go:N:` lines."""
    details = case.details
    if any(marker in details for marker in GO_MARKERS) or details.startswith("panic: "):
        return True
    return case.message in _GENERIC_MESSAGES[1:] and (
        not details.strip() or bool(_LOG_LINE.search(details) or _COMPILER_LINE.search(details))
    )


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
            better = replace(better, message=better.message + _not_run(case, cases, pkg_dir, root))
        refined[id(case)] = better
    return [refined.get(id(c), c) for c in cases if id(c) not in folded]


def _only_a_parent(case: JUnitCase, failing: list[JUnitCase]) -> bool:
    prefix = case.name + "/"
    has_failing_child = any(
        c.classname == case.classname and c.name.startswith(prefix) for c in failing
    )
    return has_failing_child and not _OWN_OUTPUT.search(case.details)


def _panicked(case: JUnitCase) -> bool:
    return case.details.startswith("panic: ") or "\npanic: " in case.details


def _message(case: JUnitCase) -> str:
    if case.message not in _GENERIC_MESSAGES:
        return case.message
    for line in case.details.splitlines():
        if line.startswith("panic: "):
            return line.removesuffix(" [recovered]")
    if log := _LOG_LINE.search(case.details) or _COMPILER_LINE.search(case.details):
        return log[log.lastindex or 1].strip()
    return case.message


def _location(
    case: JUnitCase, pkg_dir: Path | None, root: Path | None
) -> tuple[str | None, int | None]:
    """The first log line (where the message comes from), its base name resolved in the
    package's directory (nested packages share base names: `store_test.go` alone does not
    say which)."""
    file, line = case.file, case.line
    log = _LOG_LINE.search(case.details)
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
