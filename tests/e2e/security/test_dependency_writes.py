"""Tools write inside the dependency folders the run brings into its worktrees, and the
checkout's copies stay as they were; a failure the environment caused (a read-only or full
file system) ends the run as an environment error, never as the model's failure."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from real_repos import (
    DEFU_BUG,
    DEFU_TASK,
    SharedRun,
    checkout,
    codegen_init,
    files_under,
    fixed_defu_run,
    pnpm_bin,
    pnpm_install,
)
from sample_repo import FIX, VERSION_FILE, SampleRepo, sh

from codegen_ci.cli import cli
from codegen_ci.gate.environment_check import Places, find_problem
from codegen_ci.report import CommandResult, Failure, Round
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer
from codegen_ci.workspace.dependency_links import (
    give_back,
    link_dependencies,
    unlink_dependencies,
)

needs_node = pytest.mark.skipif(not shutil.which("npm"), reason="needs node and npm")
needs_bwrap = pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bubblewrap")


def run(repo: SampleRepo, spec: Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    out = repo.tmp / "out"
    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out), *args]
    )
    path = out / "report.json"
    return result.exit_code, result.output, json.loads(path.read_text()) if path.exists() else {}


def task_spec(repo: SampleRepo, task: str) -> Path:
    path = repo.tmp / "task.yaml"
    path.write_text(json.dumps({"version": 1, "task": task}))
    return path


@pytest.fixture
def defu(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> SampleRepo:
    """unjs/defu with its bug, pnpm-installed from the npm registry, configured by init."""
    shared = tmp_path_factory.getbasetemp().parent / "real-repos"
    pnpm = pnpm_bin(shared)
    monkeypatch.setenv("PATH", f"{pnpm}{os.pathsep}{os.environ['PATH']}")
    repo = checkout(tmp_path, "defu", bug=DEFU_BUG)
    pnpm_install(repo, pnpm, shared / "pnpm-store")
    codegen_init(repo)
    return repo


# --- the dependency folders, directly --------------------------------------------------------


def test_each_worktree_gets_its_own_writable_copy_and_the_checkout_keeps_its_own(
    tmp_path: Path,
) -> None:
    checkout_dir, tree = tmp_path / "checkout", tmp_path / "tree"
    checkout_dir.mkdir()
    sh(["git", "init", "-q", "-b", "main"], checkout_dir)
    (checkout_dir / ".gitignore").write_text("node_modules/\n")
    (checkout_dir / "node_modules" / "tool" / "dist").mkdir(parents=True)
    (checkout_dir / "node_modules" / "tool" / "dist" / "index.js").write_text("// tool\n")
    (checkout_dir / "node_modules" / ".bin").mkdir()
    (checkout_dir / "node_modules" / ".bin" / "tool").symlink_to("../tool/dist/index.js")
    sh(["git", "add", "-A"], checkout_dir)
    sh(["git", "commit", "-q", "-m", "init"], checkout_dir)
    sh(["git", "worktree", "add", "-q", "--detach", str(tree)], checkout_dir)

    placed = link_dependencies(checkout_dir, tree)

    assert placed == ("node_modules",)
    copy = tree / "node_modules"
    assert copy.is_dir() and not copy.is_symlink()
    assert (copy / ".bin" / "tool").readlink() == Path("../tool/dist/index.js")  # links stay
    (copy / "tool" / "dist" / "tsconfig.tmp.tsbuildinfo").write_text("{}")  # what vitest does
    (copy / "tool" / "dist" / "index.js").write_text("// rewritten in place\n")
    original = checkout_dir / "node_modules" / "tool" / "dist"
    assert sorted(p.name for p in original.iterdir()) == ["index.js"]
    assert (original / "index.js").read_text() == "// tool\n"
    assert link_dependencies(checkout_dir, tree) == ("node_modules",)  # a resumed run: kept
    unlink_dependencies(tree, placed)
    assert not copy.exists() and (original / "index.js").is_file()


def node_checkout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A checkout with an installed `node_modules`, a run's worktree with its copy, and the
    (not yet made) place of the proof's tree beside it."""
    checkout_dir, tree, proof = tmp_path / "checkout", tmp_path / "tree", tmp_path / "proof"
    checkout_dir.mkdir()
    sh(["git", "init", "-q", "-b", "main"], checkout_dir)
    (checkout_dir / ".gitignore").write_text("node_modules/\n")
    (checkout_dir / "node_modules" / "tool" / "dist").mkdir(parents=True)
    (checkout_dir / "node_modules" / "tool" / "dist" / "index.js").write_text("// tool\n")
    sh(["git", "add", "-A"], checkout_dir)
    sh(["git", "commit", "-q", "-m", "init"], checkout_dir)
    for place in (tree, proof):
        sh(["git", "worktree", "add", "-q", "--detach", str(place)], checkout_dir)
    link_dependencies(checkout_dir, tree)
    return checkout_dir, tree, proof


def test_the_proof_tree_borrows_an_unwritten_copy_and_gives_it_back(tmp_path: Path) -> None:
    """No second copy: the run's own is moved (same inode) with the caches at its top, and
    comes back when the proof's tree is done."""
    checkout_dir, tree, proof = node_checkout(tmp_path)
    index = "node_modules/tool/dist/index.js"
    (tree / "node_modules" / ".vite").mkdir()  # vitest's results cache: lent along
    inode = (tree / index).stat().st_ino

    links = link_dependencies(checkout_dir, proof, lender=tree)

    assert links == ("node_modules",)
    assert (proof / index).stat().st_ino == inode and (proof / "node_modules/.vite").is_dir()
    assert not (tree / "node_modules").exists()
    give_back(proof, tree, links, checkout_dir)
    unlink_dependencies(proof, links)
    assert (tree / index).stat().st_ino == inode and not (proof / "node_modules").exists()
    assert (checkout_dir / index).read_text() == "// tool\n"


def test_a_copy_the_change_wrote_into_is_not_lent_to_the_base(tmp_path: Path) -> None:
    """The base run sees the checkout's install, never what the change's commands wrote: a
    written copy stays, the proof's tree gets a fresh one, and a copy the base run removed
    comes back as a fresh copy."""
    checkout_dir, tree, proof = node_checkout(tmp_path)
    (tree / "node_modules" / "tool" / "dist" / "index.js").write_text("// patched\n")

    links = link_dependencies(checkout_dir, proof, lender=tree)

    assert (proof / "node_modules/tool/dist/index.js").read_text() == "// tool\n"
    assert (tree / "node_modules/tool/dist/index.js").read_text() == "// patched\n"
    unlink_dependencies(proof, links)
    index = "node_modules/tool/dist/index.js"
    shutil.copy2(checkout_dir / index, tree / index)  # as the checkout's again: lent
    links = link_dependencies(checkout_dir, proof, lender=tree)
    assert not (tree / "node_modules").exists()
    shutil.rmtree(proof / "node_modules")  # what the base run may do
    give_back(proof, tree, links, checkout_dir)
    assert (tree / "node_modules/tool/dist/index.js").read_text() == "// tool\n"


def test_a_copied_virtualenv_runs_from_its_new_place(tmp_path: Path) -> None:
    checkout_dir, tree = tmp_path / "checkout", tmp_path / "tree"
    checkout_dir.mkdir()
    sh(["git", "init", "-q", "-b", "main"], checkout_dir)
    (checkout_dir / ".gitignore").write_text(".venv/\n")
    sh(["git", "add", "-A"], checkout_dir)
    sh(["git", "commit", "-q", "-m", "init"], checkout_dir)
    sh(["python3", "-m", "venv", "--without-pip", ".venv"], checkout_dir)
    site = next((checkout_dir / ".venv").glob("lib/python*/site-packages"))
    (checkout_dir / "src").mkdir()
    (site / "__editable__.demo.pth").write_text(f"{checkout_dir / 'src'}\n")
    script = checkout_dir / ".venv" / "bin" / "where"
    script.write_text(f"#!{checkout_dir}/.venv/bin/python\nimport sys\nprint(sys.prefix)\n")
    script.chmod(0o755)
    sh(["git", "worktree", "add", "-q", "--detach", str(tree)], checkout_dir)

    link_dependencies(checkout_dir, tree)

    copied = tree / ".venv"
    assert sh([str(copied / "bin" / "where")], tree).strip() == str(copied)
    assert next(copied.glob("lib/python*/site-packages/__editable__.demo.pth")).read_text() == (
        f"{tree / 'src'}\n"
    )
    assert script.read_text().startswith(f"#!{checkout_dir}/.venv/bin/python")  # theirs: as was
    assert sh([str(script)], checkout_dir).strip() == str(checkout_dir / ".venv")


# --- vitest --typecheck on a real project (unjs/defu), pnpm-installed ------------------------


def assert_build_info_written_in_the_copy(
    ran: dict[str, Any], checkout: SampleRepo, status_before: str
) -> None:
    """`ran` (a round: vitest with its typecheck on the unfixed code) ran every test (runtime
    and type tests) and exited for the failing one only: no EROFS, no unhandled error from
    writing tsconfig.tmp.tsbuildinfo; the checkout is as it was."""
    assert ran["tests"]["failed"] >= 1 and ran["tests"]["passed"] >= 40
    failing = {f["id"] for f in ran["failures"]}
    assert any("should fill in values that are null" in f for f in failing), failing
    assert not any("EROFS" in f["message"] for f in ran["failures"])
    test_log = Path(ran["commands"][-1]["output_path"]).read_text()
    assert "EROFS" not in test_log and "Unhandled Errors" not in test_log
    checkout_modules = checkout.path / "node_modules"
    assert files_under(checkout_modules, "*.tsbuildinfo") == []  # theirs: untouched
    assert not (checkout_modules / ".vite-temp").exists()
    assert checkout.git("status", "--porcelain", "--ignored") == status_before


@pytest.mark.slow
@needs_node
def test_vitest_typecheck_writes_its_build_info_and_the_checkout_stays_unchanged(
    defu: SampleRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unconfined (`CODEGEN_SANDBOX=off`), a dry run; under the sandbox: the test below."""
    monkeypatch.setenv("CODEGEN_SANDBOX", "off")
    assert files_under(defu.path / "node_modules", "*.tsbuildinfo") == []
    status_before = defu.git("status", "--porcelain", "--ignored")

    code, output, report = run(defu, task_spec(defu, DEFU_TASK), "--dry-run")

    assert code == 0, output
    assert report["reason"] == "dry-run"
    (dry,) = report["rounds"]
    assert_build_info_written_in_the_copy(dry, defu, status_before)


@pytest.mark.slow
@needs_node
def test_vitest_typecheck_under_the_sandbox_writes_its_build_info_and_the_checkout_stays_unchanged(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    model_env: ScriptedModelServer,
) -> None:
    """Under the default sandbox: the session's run of `defu` (real_repos.fixed_defu_run, the
    test below) read, not a dry run of its own: its pre-flight is that dry run's one command
    (vitest with its typecheck, on the unfixed code, in the run's worktree with its copy of
    node_modules), and its round writes the build info once more, on the fixed code."""
    fixed = defu_fixed_run(tmp_path_factory, monkeypatch, model_env)
    report = fixed.report

    if shutil.which("bwrap"):
        assert report["sandbox"] in ("bwrap", "landlock")
    assert fixed.build_info_before == ()
    assert_build_info_written_in_the_copy(report["preflight"], fixed.repo, fixed.status_before)
    round_log = Path(report["rounds"][-1]["commands"][-1]["output_path"]).read_text()
    assert "EROFS" not in round_log and "Unhandled Errors" not in round_log


def defu_fixed_run(
    factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, model: ScriptedModelServer
) -> SharedRun:
    """The session's one run of it (real_repos.fixed_defu_run, which test_real_repos_e2e.py
    reads too): init's config, the scripted model's right edit, no proof (its base run is
    vitest with the typecheck once more, not what these tests are about: the proof's tree and
    the copy it borrows are test_proof_node.py's and the tests above)."""
    shared = factory.getbasetemp().parent / "real-repos"
    pnpm = pnpm_bin(shared)
    monkeypatch.setenv("PATH", f"{pnpm}{os.pathsep}{os.environ['PATH']}")
    return fixed_defu_run(factory, shared, pnpm, model)


@pytest.mark.slow
@needs_node
def test_vitest_typecheck_under_the_sandbox_fixes_the_bug_with_every_test_green(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    model_env: ScriptedModelServer,
) -> None:
    fixed = defu_fixed_run(tmp_path_factory, monkeypatch, model_env)
    code, output, report, defu = fixed.code, fixed.output, fixed.report, fixed.repo

    assert code == 0, output
    assert report["status"] == "success" and report["iterations"] == 1
    tests = report["rounds"][-1]["tests"]
    assert tests["failed"] == tests["errors"] == 0 and tests["passed"] >= 40
    base = defu.git("rev-parse", "main").strip()
    assert defu.git("diff", "--name-only", base, report["branch"]).split() == ["src/defu.ts"]
    assert files_under(defu.path / "node_modules", "*.tsbuildinfo") == []


# --- environment errors ----------------------------------------------------------------------

# Real output, from vitest 4.1.2 --typecheck with node_modules read-only (46/46 passed, exit 1)
VITEST_EROFS = (
    "Error: error TS5033: Could not write file '{tree}/node_modules/.pnpm/vitest@4.1.2/"
    "node_modules/vitest/dist/tsconfig.tmp.tsbuildinfo': EROFS: read-only file system, open "
    "'{tree}/node_modules/.pnpm/vitest@4.1.2/node_modules/vitest/dist/tsconfig.tmp.tsbuildinfo'."
)


def _round(
    tmp_path: Path, output: str, *, kind: str = "test", failures: list[Failure] | None = None
) -> Round:
    log = tmp_path / "log.txt"
    log.write_text(output)
    command = CommandResult(
        command="pnpm test",
        kind=kind,
        exit_code=1,
        duration_s=1.0,  # type: ignore[arg-type]
        output_path=str(log),
    )
    return Round(iteration=1, commands=[command], failures=failures or [])


@pytest.mark.parametrize(
    ("output", "errno"),
    [
        (VITEST_EROFS, "EROFS"),
        ("PermissionError: [Errno 13] Permission denied: '/usr/lib/semver/cache.json'", "EACCES"),
        ("OSError: [Errno 30] Read-only file system: '{checkout}/node_modules/.cache/x'", "EROFS"),
        ("Error: ENOSPC: no space left on device, write", "ENOSPC"),
        ("cp: cannot create regular file '.git/hooks/pre-commit': Permission denied", "EACCES"),
    ],
)
def test_environment_failures_are_recognised(tmp_path: Path, output: str, errno: str) -> None:
    tree = tmp_path / "tree"
    text = output.format(tree=tree, checkout=tmp_path / "checkout")
    places = Places(tree, ("node_modules",), (tmp_path / "scratch",), frozenset({"src/a.ts"}))

    problem = find_problem(_round(tmp_path, text), places)

    assert problem is not None and problem.errno.startswith(errno)
    assert "environment error" in problem.message() and "pnpm test" in problem.message()


@pytest.mark.parametrize(
    "output",
    [
        "Error: EACCES: permission denied, open '{tree}/src/a.ts'",  # what the model changed
        "PermissionError: [Errno 13] Permission denied: '{scratch}/tmp/locked'",  # the tests' own
        "PermissionError: [Errno 13] Permission denied: 'data/readonly.txt'",  # the repository's
        "AssertionError: expected 'read-only file system' to equal 'ok'",  # no path: a test's text
        "FAIL test/a.test.ts > rejects writes\nAssertionError: expected 2 to be 3",
    ],
)
def test_failures_of_the_code_are_not_blamed_on_the_environment(
    tmp_path: Path, output: str
) -> None:
    tree, scratch = tmp_path / "tree", tmp_path / "scratch"
    text = output.format(tree=tree, scratch=scratch)
    places = Places(tree, ("node_modules",), (scratch,), frozenset({"src/a.ts"}))

    assert find_problem(_round(tmp_path, text), places) is None


def test_a_passing_test_that_logs_a_permission_error_is_not_the_cause(tmp_path: Path) -> None:
    """With JUnit failures to go by, the log's other lines are not read."""
    tree = tmp_path / "tree"
    log = "PermissionError: [Errno 13] Permission denied: '/etc/shadow'\n1 failed, 9 passed"
    failures = [Failure(id="tests/test_a.py::test_sum", message="assert 3 == 4")]
    places = Places(tree, (), (tmp_path / "scratch",))

    assert find_problem(_round(tmp_path, log, failures=failures), places) is None
    failures.append(Failure(id="tests/test_a.py::test_cache", message=log.splitlines()[0]))
    assert find_problem(_round(tmp_path, log, failures=failures), places) is not None


def test_a_tool_that_cannot_write_its_dependency_folder_is_found_beside_failing_tests(
    tmp_path: Path,
) -> None:
    """vitest with a real failing test and an unwritable build-info file (the pre-flight of
    the issue's run): the test failure is the code's, the EROFS is the environment's."""
    tree = tmp_path / "tree"
    failures = [Failure(id="test/defu.test.ts > defu > fills null", message="expected 1 to be 2")]
    places = Places(tree, ("node_modules",), (tmp_path / "scratch",))

    problem = find_problem(
        _round(tmp_path, VITEST_EROFS.format(tree=tree), failures=failures), places
    )

    assert problem is not None and problem.errno.startswith("EROFS")
    assert problem.path is not None and "node_modules/.pnpm/vitest" in problem.path
    # the same through a link to the checkout's folder (when no copy could be made)
    checkout_dir = tmp_path / "checkout"
    linked = Places(tree, ("node_modules",), (tmp_path / "scratch",), checkout=checkout_dir)
    text = VITEST_EROFS.format(tree=checkout_dir)
    assert find_problem(_round(tmp_path, text, failures=failures), linked) is not None
    assert (
        find_problem(
            _round(tmp_path, text.replace("node_modules", "src"), failures=failures), linked
        )
        is None
    )


WRITES_OUTSIDE = """\
from pathlib import Path

from semver.version import Version


def test_version_cache():
    cache = Path("/usr/local/share/semver-test-cache")  # a machine-wide cache, as some suites keep
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "last.txt").write_text(str(Version(1, 2, 3)))
"""


@needs_bwrap
def test_a_read_only_file_system_ends_the_run_as_an_environment_error_not_a_model_round(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", "bwrap")
    sample_repo.commit({"tests/test_cache.py": WRITES_OUTSIDE}, "a test that keeps a cache")
    model_env.add(Reply(tool_calls=[FIX]), Reply("fixed"))
    spec = sample_repo.write_spec()
    out = sample_repo.tmp / "out"

    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]
    )

    report = json.loads((out / "report.json").read_text())
    assert result.exit_code == 3, result.output
    assert (report["status"], report["reason"]) == ("error", "environment")
    assert "EROFS" in report["error"] and "/usr/local/share/semver-test-cache" in report["error"]
    assert "environment error" in result.output
    # one model turn, then the run stopped: no round of feedback, no further turn
    assert report["iterations"] == 1 and len(report["rounds"]) == 1
    assert len(model_env.tool_requests) == 2
    assert not any(
        "EROFS" in str(m.get("content"))
        for r in model_env.tool_requests
        for m in r["messages"]
        if m.get("role") == "user"
    )
    assert VERSION_FILE in report["files_changed"]
