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
each test gets its own checkout, except the tests that only read one run's outcome: `defu`
fixed in one round (`fixed_defu_run`) is run once for the session, the same way.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from eco_projects import edit_turn
from sample_repo import NO_PROOF, SampleRepo, sh

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import ScriptedModelServer

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
DEFU_BUG = (
    "src/defu.ts",
    "if (value === null || value === undefined) {",
    "if (value === undefined) {",
)
DEFU_TASK = "defu() must treat null in the object like undefined: the default value fills it."


def npm_cache() -> str:
    """npm's own cache in the real home (tests get a temporary HOME). The installs pass
    `--prefer-offline` with it: what the cache holds is used without asking the registry
    again (range-parser's install: 12.7 CPU-s without it, 9.8 with it)."""
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
                    "--prefer-offline",
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
                "--prefer-offline",
                "--cache",
                npm_cache(),
            ]
            # one npm: the package.json's tree with `extra` added, package.json left as it
            # was (two, the second reading the whole tree again, cost 2.5 s more of CPU)
            extra_argv = ["--no-save", *extra] if extra else []
            subprocess.run(
                [*argv, *extra_argv],
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
            # installed by this session's pip (`--python`): the venv's own pip, which
            # ensurepip would install first, is half the CPU of the whole and nothing uses it
            venv.create(root / "venv", with_pip=False)
            python = str(root / "venv" / "bin" / "python")
            pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q"]
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


@dataclass(frozen=True)
class SharedRun:
    """A run's outcome, read by several tests: the repository it ran on, its exit code,
    terminal output and report.json."""

    repo: SampleRepo
    code: int
    output: str
    report: dict[str, Any]
    # the checkout as the run found it: `git status --porcelain --ignored`, and its
    # node_modules' build-info files
    status_before: str = ""
    build_info_before: tuple[str, ...] = ()


def session_folder(factory: pytest.TempPathFactory) -> Path:
    """A folder of this session alone, the same for all its xdist workers: under xdist the
    parent of each worker's base temp folder, else the base temp folder (pytest makes both
    afresh each session, unlike the parent of a `--basetemp`, which the installs use)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def fixed_defu_run(
    factory: pytest.TempPathFactory, shared: Path, pnpm: Path, model: ScriptedModelServer
) -> SharedRun:
    """`codegen-ci run` on `defu` with its bug (pnpm-installed, configured by init alone) whose
    scripted model makes the one right edit, over a spec with the task and no proof nor flaky
    re-runs. Run once for the session (a file lock, as the installs): each run of it is two of
    vitest with its typecheck, and the tests that need it only read what it left (the report,
    the branch, the checkout's node_modules). `pnpm` must be on PATH; the first caller's
    `model` answers. Its outcome belongs to this session's code: it is kept in the session's
    folder, not beside the installs, which outlive the session. The checkout's state before
    the run is kept with its outcome (`status_before`, `build_info_before`): the run must
    leave it as it was."""
    root = session_folder(factory) / "defu-fixed-run"
    with _installing(root) as needed:
        if needed:
            for stale in ("defu", "defu-origin.git", "out"):  # an earlier caller's, cut short
                shutil.rmtree(root / stale, ignore_errors=True)
            repo = checkout(root, "defu", bug=DEFU_BUG)
            pnpm_install(repo, pnpm, shared / "pnpm-store")
            codegen_init(repo)
            before = {
                "status_before": repo.git("status", "--porcelain", "--ignored"),
                "build_info_before": [
                    str(p) for p in files_under(repo.path / "node_modules", "*.tsbuildinfo")
                ],
            }
            model.add(*edit_turn(DEFU_BUG[0], DEFU_BUG[2], DEFU_BUG[1], "null gets defaults now"))
            spec = root / "task.yaml"
            spec.write_text(
                json.dumps({"version": 1, "task": DEFU_TASK, "validation": {"proof": NO_PROOF}})
            )
            out = root / "out"
            result = CliRunner().invoke(
                cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out)]
            )
            outcome = {"code": result.exit_code, "output": result.output, **before}
            (root / "outcome.json").write_text(json.dumps(outcome))
    outcome = json.loads((root / "outcome.json").read_text())
    path = root / "out" / "report.json"
    report = json.loads(path.read_text()) if path.exists() else {}
    repo = SampleRepo(root / "defu", root / "defu-origin.git", root)
    return SharedRun(
        repo,
        outcome["code"],
        outcome["output"],
        report,
        outcome["status_before"],
        tuple(outcome["build_info_before"]),
    )
