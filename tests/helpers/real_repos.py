"""Three real public repositories (tests/fixtures/repos/*/PROVENANCE), set up as a new user
would have them before a run: the source committed in a git repository with one injected bug,
the dependencies installed from the npm registry or PyPI by the project's own package
manager, and `.codegen.yml` written by `codegen-ci init` alone.

- `defu` (unjs/defu): TypeScript, vitest 4 with `--typecheck`, pnpm (pnpm-lock.yaml,
  `packageManager: pnpm@10.33.0`); pnpm itself is installed from the npm registry, once.
- `python-slugify` (un33k/python-slugify): unittest tests in `test.py`, no pytest
  configuration; its dependency (`text-unidecode`) and the runners are installed from PyPI
  into a virtualenv outside the checkout, put first on PATH as setup-python would.
- `range-parser` (jshttp/range-parser): mocha tests and an eslint `lint` script; a commit
  on its default branch leaves the lint failing before the task starts.

Installs are shared by the session (a file lock keeps xdist workers from installing twice);
each test gets its own checkout.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner
from sample_repo import SampleRepo, sh

from codegen_ci.cli import cli

FIXTURES = Path(__file__).parents[1] / "fixtures" / "repos"
PNPM = "pnpm@10.33.0"  # the version defu's package.json pins (packageManager)
PY_PACKAGES = (
    "text-unidecode==1.3",
    "pytest==8.3.5",
    "flake8==7.1.1",
    "pycodestyle==2.12.1",
    "coverage==7.6.10",
)
NPM_TIMEOUT = 900


def npm_cache() -> str:
    """npm's own cache in the real home (tests get a temporary HOME)."""
    return str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".npm")


@contextmanager
def _installing(root: Path) -> Iterator[bool]:
    """Lock `root`; yields whether the install still has to be done (then marks it done)."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / ".codegen-installed"
        needed = not marker.exists()
        yield needed
        if needed:
            marker.write_text("ok\n")


def _key(*parts: str | Path) -> str:
    digest = hashlib.sha1(usedforsecurity=False)
    for part in parts:
        digest.update(part.read_bytes() if isinstance(part, Path) else part.encode())
    return digest.hexdigest()[:10]


def pnpm_bin(shared: Path) -> Path:
    """A directory holding a `pnpm` installed from the npm registry (the pinned version)."""
    root = shared / f"pnpm-{_key(PNPM)}"
    with _installing(root) as needed:
        if needed:
            subprocess.run(
                [
                    "npm",
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--cache",
                    npm_cache(),
                    "--prefix",
                    str(root),
                    PNPM,
                ],
                check=True,
                capture_output=True,
                timeout=NPM_TIMEOUT,
            )
    return root / "node_modules" / ".bin"


def npm_install_shared(shared: Path, name: str, *extra: str) -> Path:
    """`npm install` of a fixture's package.json, once, then `npm install --no-save` of
    `extra` packages (what `init`'s install line adds: a JUnit reporter); returns its
    node_modules."""
    package = FIXTURES / name / "package.json"
    root = shared / f"npm-{name}-{_key(package, *extra)}"
    with _installing(root) as needed:
        if needed:
            shutil.copy(package, root / "package.json")
            argv = [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--no-package-lock",
                "--cache",
                npm_cache(),
            ]
            subprocess.run(argv, cwd=root, check=True, capture_output=True, timeout=NPM_TIMEOUT)
            if extra:
                subprocess.run(
                    [*argv, "--no-save", *extra],
                    cwd=root,
                    check=True,
                    capture_output=True,
                    timeout=NPM_TIMEOUT,
                )
    return root / "node_modules"


def python_env(shared: Path) -> Path:
    """A virtualenv outside any checkout with the Python project's needs; returns its bin."""
    root = shared / f"venv-{_key(*PY_PACKAGES)}"
    with _installing(root) as needed:
        if needed:
            shutil.rmtree(root / "venv", ignore_errors=True)
            venv.create(root / "venv", with_pip=True)
            pip = [str(root / "venv" / "bin" / "python"), "-m", "pip", "install", "-q"]
            subprocess.run(
                [*pip, *PY_PACKAGES], check=True, capture_output=True, timeout=NPM_TIMEOUT
            )
    return root / "venv" / "bin"


def checkout(
    tmp: Path,
    name: str,
    *,
    bug: tuple[str, str, str] | None = None,
    extra: dict[str, tuple[str, str]] | None = None,
) -> SampleRepo:
    """The fixture committed as upstream, then one commit with the injected `bug` (path, old,
    new) and any `extra` edits (path -> (old, new)); an `origin` beside it."""
    repo = tmp / name
    shutil.copytree(FIXTURES / name, repo, ignore=shutil.ignore_patterns("PROVENANCE"))
    sh(["git", "init", "-q", "-b", "main"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", f"{name} upstream (tests/fixtures/repos/{name})"], repo)
    edits = dict(extra or {})
    if bug is not None:
        edits[bug[0]] = (bug[1], bug[2])
    for rel, (old, new) in edits.items():
        path = repo / rel
        text = path.read_text()
        assert text.count(old) == 1, f"{rel}: {old!r} must occur once"
        path.write_text(text.replace(old, new))
    if edits:
        sh(["git", "commit", "-q", "-am", "a later change"], repo)
    origin = tmp / f"{name}-origin.git"
    sh(["git", "init", "-q", "--bare", "-b", "main", str(origin)], tmp)
    sh(["git", "remote", "add", "origin", str(origin)], repo)
    return SampleRepo(repo, origin, tmp)


def codegen_init(repo: SampleRepo) -> str:
    """`codegen-ci init` in the repository, its `.codegen.yml` committed; returns the file."""
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo.path)])
    assert result.exit_code == 0, result.output
    repo.git("add", ".codegen.yml")
    repo.git("commit", "-q", "-m", "codegen-ci init")
    return (repo.path / ".codegen.yml").read_text()


def pnpm_install(repo: SampleRepo, pnpm: Path, store: Path) -> None:
    """`pnpm install --frozen-lockfile` in the checkout, from the npm registry."""
    subprocess.run(
        [
            str(pnpm / "pnpm"),
            "install",
            "--frozen-lockfile",
            "--store-dir",
            str(store),
            "--reporter=silent",
        ],
        cwd=repo.path,
        check=True,
        capture_output=True,
        timeout=NPM_TIMEOUT,
        env={**os.environ, "CI": "true"},
    )


def link_node_modules(repo: SampleRepo, node_modules: Path) -> None:
    subprocess.run(["cp", "-al", str(node_modules), str(repo.path / "node_modules")], check=True)


def files_under(path: Path, name: str) -> list[Path]:
    return sorted(p for p in path.rglob(name)) if path.exists() else []


PYTHON = sys.executable
