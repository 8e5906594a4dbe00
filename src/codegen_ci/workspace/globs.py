"""Path globs with gitignore-like rules, and the globs that name tests and tool artifacts."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

# Caches and reports tools write without being asked; never part of a change.
ARTIFACT_GLOBS = (
    "**/__pycache__/**", "*.pyc", ".pytest_cache/**", ".mypy_cache/**", ".ruff_cache/**",
    ".coverage", ".coverage.*", "coverage.xml", "htmlcov/**", ".tox/**", ".nox/**",
    "*.egg-info/**", "node_modules/**", ".hypothesis/**", "junit*.xml", ".cache/**",
    # Go, Node, Rust, JVM toolchains: coverage profiles, caches, build output, dependencies.
    "coverage.out", "*.coverprofile", "cover.out", "lcov.info", "**/node_modules/**",
    ".nyc_output/**", ".jest-cache/**", ".parcel-cache/**",
    ".turbo/**", ".eslintcache", "*.tsbuildinfo", ".gradle/**", ".next/**", ".nuxt/**",
    ".vite/**", ".vitest/**", "test-results/**",
)  # fmt: skip
# Build output: generated when the base commit has no such file (a rebuilt `dist/` that the
# repository commits, as JavaScript actions do, is the change).
GENERATED_GLOBS = ("dist/**", "build/**", "out/**", "target/**", "coverage/**", "lib-cov/**")
TEST_GLOBS = (
    "tests/**", "test/**", "**/tests/**", "**/test/**", "**/test_*.py", "**/*_test.py",
    "**/*_test.go", "**/*.test.[jt]s", "**/*.test.[jt]sx", "**/*.spec.[jt]s", "**/*.spec.[jt]sx",
    "**/__tests__/**", "conftest.py", "**/conftest.py", "pytest.ini", "tox.ini", "setup.cfg",
    "jest.config.*", "vitest.config.*", "phpunit.xml*", ".coveragerc", "noxfile.py",
)  # fmt: skip


def matches(path: str, globs: Iterable[str]) -> bool:
    """Glob match with gitignore-like rules: `**/` spans zero or more directories, `*` stays
    within one, and a pattern without a slash matches the file name at any depth."""
    name = path.rsplit("/", 1)[-1]
    for pattern in globs:
        regex = _glob_regex(pattern)
        if regex.match(path) or ("/" not in pattern and regex.match(name)):
            return True
    return False


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def is_test_path(path: str) -> bool:
    return matches(path, TEST_GLOBS)
