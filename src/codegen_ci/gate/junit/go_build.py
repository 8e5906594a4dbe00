"""Go packages: where an import path lives in the repository, and the build failures that a
test run prints but gotestsum's JUnit leaves out (it counts them in the root's `errors=`
and lists no case, so a package that does not compile would read as "0 errors")."""

from __future__ import annotations

import re
from pathlib import Path

from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.security import guarded_read

_MODULE = re.compile(r"^module\s+(\S+)", re.MULTILINE)
# `# example.com/demo/broken [example.com/demo/broken.test]` heads a package's compiler or
# vet errors; `go vet` prefixes a type-check error with `vet: `.
_PACKAGE_HEADER = re.compile(r"^# ([\w.~-]+(?:/[\w.~-]+)*)(?: \[[^\]]+\])?$")
_ERROR_LINE = re.compile(r"^(?:vet: )?(?:\./)?([^\s:]+\.go):(\d+)(?::\d+)?: (.+)$")
BUILD_FAILED = "[build failed]"
_SKIP_DIRS = ("vendor", "node_modules", "testdata")
MAX_SOURCE_BYTES = 4 * 1024 * 1024


def module_dirs(root: Path) -> list[tuple[str, Path]]:
    """(module path, directory) of `go.mod` at the root and one or two levels below,
    longest module path first (a nested module wins over its parent)."""
    found: list[tuple[str, Path]] = []
    # The tree the tests ran in: read through the guarded reader (a go.mod that is a link to
    # /dev/zero, or a FIFO, would otherwise hang or fill the tool's memory).
    mods = [m for pattern in ("go.mod", "*/go.mod", "*/*/go.mod")
            for m in guarded_read.glob(root, pattern)]  # fmt: skip
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


def build_failures(output: str, known_packages: set[str]) -> list[JUnitCase]:
    """One error case per package whose compiler or vet errors the output shows and that has
    no case in the JUnit (a package that did not build ran no tests)."""
    errors: dict[str, list[tuple[str, int, str]]] = {}
    package: str | None = None
    for line in output.splitlines():
        if header := _PACKAGE_HEADER.match(line):
            package = header[1]
        elif package and (error := _ERROR_LINE.match(line)):
            errors.setdefault(package, []).append((error[1], int(error[2]), error[3]))
        else:
            package = None
    return [_build_case(pkg, found) for pkg, found in errors.items() if pkg not in known_packages]


def _build_case(package: str, errors: list[tuple[str, int, str]]) -> JUnitCase:
    file, line, message = errors[0]
    details = "\n".join(f"{f}:{n}: {m}" for f, n, m in errors)
    return JUnitCase(
        id=f"{package}::{BUILD_FAILED}",
        name=BUILD_FAILED,
        classname=package,
        file=file,
        line=line,
        outcome="error",
        message=message,
        details=details,
        time=None,
        flaky=False,
    )
