"""Our own git is literal and shallow: a changed path is a name, never a pathspec with magic;
no git command the tool runs unconfined descends into a nested repository, or runs a filter
that the worktree (the model's) points at a file, whatever the config defines.

The filters write to a file outside the worktree, which no confined command can write, and
record which global git config they ran under (ours is a `codegen-git-*` file). Each attack has
a control: plain git, given the same names in the same state, runs the filter.

The attacks share two runs (`plant_in_one_run`), each planted by a command of its own whose
result is told apart by its place, each filter writing a marker of its own: those needing
nothing of the base but the sample (a repository the model made, names like options, git
settings in the tool's environment: `planted_run`), and those of a base with a gitlink and a
clean filter of its own (magic names, the filter's script rewritten: `gitlink_run`). Each test
asserts its own attack on its run, and keeps its control in a repository of its own.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sample_repo import FIX, SampleRepo, copy_sample_repo, sh
from sandbox_attacks import ONE_BACKEND, proof_spec, results_each, run_in_process
from tests.conftest import isolate_git
from tests.e2e.security.test_nested_repo_filters import (
    BRANCH,
    GITMODULES,
    POPULATE,
    add_gitlink,
    arm,
    naive,
)

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

GITLINK_REFUSED = "gitlink (nested repository) refused in the commit"
# Names that are pathspec magic, or options, to a git that reads them as such; each one, given
# to `git add -A --`, reaches the populated gitlink `vendor/lib` (or every path).
MAGIC = {
    "glob": ":(glob)**",
    "star": "*",
    "top": ":(top)",
    "icase": ":(icase)VENDOR",
    "prefix": "vendor",  # a plain name, not magic: a file beside the gitlink's folder
}


def report_of(repo: SampleRepo) -> dict[str, object]:
    [out_dir] = repo.tmp.glob("out-*")
    report: dict[str, object] = json.loads((out_dir / "report.json").read_text())
    return report


MAGIC_NAMES = sorted(set(MAGIC) - {"prefix"})


def plant_magic_names(marker: Path) -> str:
    plant = " && ".join(f"printf x > {shlex.quote(MAGIC[name])}" for name in MAGIC_NAMES)
    return f"{POPULATE} && {plant} && echo PLANTED && {arm(marker)}"


def filter_script(repo: SampleRepo) -> None:
    """The repository's own config defines a clean filter running a script of the checkout."""
    repo.commit({"tools/clean.sh": "cat\n"}, "a clean filter script")
    repo.git("config", "filter.fmt.clean", "sh tools/clean.sh")
    repo.git("config", "filter.fmt.required", "true")


def rewrite_filter_script(marker: Path) -> str:
    """The model rewrites the filter's script and points `.gitattributes` at its files."""
    evil = f'echo "config=$GIT_CONFIG_GLOBAL" >> {shlex.quote(str(marker))}\ncat\n'
    return (
        f"printf %s {shlex.quote(evil)} > tools/clean.sh && "
        "echo '*.py filter=fmt' > .gitattributes && echo ARMED"
    )


@pytest.fixture(scope="module")
def gitlink_run(
    sample_template: SampleRepo, tmp_path_factory: pytest.TempPathFactory
) -> PlantedRun:
    """In a repository with a gitlink `vendor/lib` and a clean filter of its own, the model
    populates the gitlink and plants files named like pathspec magic (the nested repository's
    filter armed), and rewrites the repository's filter script; each asserted on its own."""
    tmp = tmp_path_factory.mktemp("gitlink-run")
    markers = {name: tmp / f"{name}-filter-ran" for name in ("magic", "filter")}
    attacks = {
        "magic": plant_magic_names(markers["magic"]),
        "filter": rewrite_filter_script(markers["filter"]),
    }

    def setup(repo: SampleRepo) -> None:
        filter_script(repo)  # first: its commit adds all, and the gitlink is not populated
        add_gitlink(repo, GITMODULES)

    return plant_in_one_run(sample_template, tmp, attacks, markers, setup=setup)


def test_files_named_like_pathspec_magic_are_only_names(
    sample_repo: SampleRepo, gitlink_run: PlantedRun, tmp_path: Path
) -> None:
    """Every magic name planted in one run, each with its own control and asserted on its
    own."""
    marker = tmp_path / "filter-ran"
    sha = add_gitlink(sample_repo, GITMODULES)
    for name in MAGIC_NAMES:
        magic = MAGIC[name]
        alone = f"{POPULATE} && printf x > {shlex.quote(magic)} && echo PLANTED && {arm(marker)}"
        # control: a tool passing that changed path to plain git after `--` runs the filter
        # (the magic survives `--`), in `add` as in the diff step's `add -N`
        for add in (["add", "-A"], ["add", "-A", "-N"]):
            ran = naive(
                sample_repo, alone, marker, "-c", "diff.ignoreSubmodules=all", *add, "--", magic
            )
            assert "config=" in ran, (name, add)

    run = gitlink_run
    assert run.returncode == 0, run.output
    seen = run.seen["magic"]
    assert f"HEAD={sha}" in seen and "PLANTED" in seen and "ARMED" in seen, run.seen
    ran = run.markers["magic"]
    assert not ran.exists(), f"one of {MAGIC_NAMES} reached the filter: {ran.read_text()}"
    tree = run.repo.git("ls-tree", "-r", BRANCH)
    for name in MAGIC_NAMES:
        line = f"100644 blob c1b0730e0133447badcfd47fd144e254807b06e1\t{MAGIC[name]}"
        assert line in tree, (name, tree)
    assert f"160000 commit {sha}\tvendor/lib" in tree  # the base's gitlink, untouched
    assert "src/semver/version.py" in tree
    assert run.report["status"] == "success"


def clean_filter(marker: Path) -> str:
    return f'echo "config=$GIT_CONFIG_GLOBAL" >> {shlex.quote(str(marker))}; cat'


def nested_repository(marker: Path) -> str:
    """A repository of the model's own (no gitlink in the base), with a filter in its config
    and changed files in it; a file named `*` would widen any pathspec to reach it. Its filter
    is named apart from `hostile_settings`' (planted in the same run), whose definition would
    win in a git that took both."""
    return (
        "git init -q nested/repo && echo one > nested/repo/data.txt && "
        "git -C nested/repo add data.txt && "
        "git -C nested/repo -c user.name=m -c user.email=m@x commit -qm one && "
        f"git -C nested/repo config filter.nest.clean {shlex.quote(clean_filter(marker))} && "
        "echo 'data.txt filter=nest' > nested/repo/.gitattributes && "
        "echo two > nested/repo/data.txt && printf x > '*' && echo ARMED"
    )


OPTION_NAMES = ["-A", "--pathspec-from-file=list", ":!README.md"]
MAKE_OPTION_NAMES = (
    " && ".join(f"printf x > ./{shlex.quote(name)}" for name in OPTION_NAMES)
    + " && echo list > list && echo MADE"
)
SETTINGS_ATTRIBUTES = "echo '*.py filter=evil' > .gitattributes && echo ARMED"


def hostile_settings(marker: Path) -> dict[str, str]:
    """A job's exported git config (`GIT_CONFIG_COUNT`...) defining a clean filter."""
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "filter.evil.clean",
        "GIT_CONFIG_VALUE_0": clean_filter(marker),
    }


@dataclass(frozen=True)
class PlantedRun:
    repo: SampleRepo
    returncode: int
    output: str
    seen: dict[str, str]  # the result of each attack's command, by attack
    markers: dict[str, Path]  # what each attack's filter wrote, if it ran, by attack
    report: dict[str, object]


def plant_in_one_run(
    template: SampleRepo,
    tmp: Path,
    attacks: dict[str, str],
    markers: dict[str, Path],
    *,
    setup: Callable[[SampleRepo], object] = lambda repo: None,
    extra: dict[str, str] | None = None,
) -> PlantedRun:
    """One run (Landlock: our git is the subject, sandbox_attacks.py) of the model running each
    of `attacks` as a command of its own, then the fix, in a copy of `template` that `setup`
    prepared; with conftest.py's isolated environment, for a module's tests to share."""
    with pytest.MonkeyPatch.context() as monkeypatch:  # conftest.py's isolated_env, for it
        (tmp / "home").mkdir()
        isolate_git(monkeypatch, tmp / "home")
        monkeypatch.setenv("CI", "true")
        monkeypatch.setenv("CODEGEN_RETRY_BACKOFF", "0.01")
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        repo = copy_sample_repo(template, tmp)
        setup(repo)
        with ScriptedModelServer() as server:
            commands = [call("run_command", command=c) for c in attacks.values()]
            server.add(Reply(tool_calls=[*commands, FIX]), Reply("ok"))
            proc = run_in_process(
                repo, server, proof_spec(repo), sandbox=ONE_BACKEND[0], extra=extra
            )
            seen = dict(zip(attacks, results_each(server), strict=False))
    output = proc.stdout + proc.stderr
    return PlantedRun(repo, proc.returncode, output, seen, markers, report_of(repo))


@pytest.fixture(scope="module")
def planted_run(
    sample_template: SampleRepo, tmp_path_factory: pytest.TempPathFactory
) -> PlantedRun:
    """The model plants a nested repository, names like options, and a `.gitattributes` for
    the filter that git settings in the tool's environment define; each asserted on its own
    by the tests below."""
    tmp = tmp_path_factory.mktemp("planted-run")
    markers = {name: tmp / f"{name}-filter-ran" for name in ("nested", "settings")}
    attacks = {
        "nested": nested_repository(markers["nested"]),
        "names": MAKE_OPTION_NAMES,
        "settings": SETTINGS_ATTRIBUTES,
    }
    extra = hostile_settings(markers["settings"])
    return plant_in_one_run(sample_template, tmp, attacks, markers, extra=extra)


def test_a_nested_repository_the_model_made_is_refused_and_never_entered(
    sample_repo: SampleRepo, planted_run: PlantedRun, tmp_path: Path
) -> None:
    """A repository of the model's own (no gitlink in the base), with a filter in its config
    and changed files in it; a file named `*` would widen any pathspec to reach it."""
    marker = tmp_path / "filter-ran"
    script = nested_repository(marker)
    # control: asking that repository about its files (a status inside it, as a recursive
    # status or an add of a path in it does) runs the filter
    copy = tmp_path / "copy"
    sh(["git", "clone", "-q", str(sample_repo.path), str(copy)], tmp_path)
    subprocess.run(["/bin/sh", "-c", script], cwd=copy, check=True, capture_output=True)
    sh(["git", "-C", "nested/repo", "status", "--porcelain"], copy)
    assert "config=" in marker.read_text()

    run = planted_run
    assert run.returncode == 0, run.output
    assert "ARMED" in run.seen["nested"], run.seen
    assert not run.markers["nested"].exists(), run.markers["nested"].read_text()
    tree = run.repo.git("ls-tree", "-r", "--name-only", BRANCH).splitlines()
    assert "*" in tree and "src/semver/version.py" in tree
    assert not [p for p in tree if p.startswith("nested")]
    report = run.report
    assert {"path": "nested/repo/", "reason": GITLINK_REFUSED, "tool": None} in report["refusals"]  # type: ignore[operator]
    assert "nested/repo/" not in report["files_changed"]  # type: ignore[operator]


def test_a_filter_the_repository_defines_never_runs_on_the_models_files(
    sample_repo: SampleRepo, gitlink_run: PlantedRun, tmp_path: Path
) -> None:
    """The repository's own config defines a clean filter running a script of the checkout
    (a formatter, say); the model rewrites that script in its worktree and points
    `.gitattributes` at its files. Our git (add, the diff step, status) must not run it."""
    marker = tmp_path / "filter-ran"
    filter_script(sample_repo)
    # control: in that state, plain git (the repository's config) runs the model's script
    copy = tmp_path / "copy"
    sh(["git", "clone", "-q", str(sample_repo.path), str(copy)], tmp_path)
    sh(["git", "config", "filter.fmt.clean", "sh tools/clean.sh"], copy)
    script = rewrite_filter_script(marker)
    subprocess.run(["/bin/sh", "-c", script], cwd=copy, check=True, capture_output=True)
    (copy / "src" / "semver" / "version.py").write_text("changed = 1\n")
    sh(["git", "add", "-A"], copy)
    assert "config=" in marker.read_text()

    run = gitlink_run
    assert run.returncode == 0, run.output
    assert "ARMED" in run.seen["filter"], run.seen
    assert not run.markers["filter"].exists(), run.markers["filter"].read_text()
    tree = run.repo.git("ls-tree", "-r", "--name-only", BRANCH).splitlines()
    assert ".gitattributes" in tree and "tools/clean.sh" in tree  # committed, as plain files
    assert run.report["status"] == "success"


def test_names_like_options_or_exclusions_are_committed_as_files(
    sample_repo: SampleRepo, planted_run: PlantedRun
) -> None:
    """Every name planted in one run, each asserted on its own."""
    run = planted_run
    assert run.returncode == 0, run.output
    assert "MADE" in run.seen["names"], run.seen
    tree = run.repo.git("ls-tree", "-r", "--name-only", BRANCH).splitlines()
    assert "list" in tree and "src/semver/version.py" in tree
    assert "README.md" in tree
    diff = (Path(str(run.report["output_dir"])) / "diff.patch").read_text()
    for name in OPTION_NAMES:
        assert name in tree, name
        assert f"b/{name}" in diff, name
    # control: to git without `--literal-pathspecs`, the exclusion is a pattern
    listed = sh(["git", "ls-files", "--", ":!README.md"], sample_repo.path)
    assert "src/semver/version.py" in listed


def test_git_settings_in_the_tools_environment_never_reach_our_git(
    sample_repo: SampleRepo, planted_run: PlantedRun, tmp_path: Path
) -> None:
    """A job that exports git config (`GIT_CONFIG_COUNT`...): our git takes none of it, so a
    filter so defined never runs on the files `.gitattributes` names."""
    marker = tmp_path / "filter-ran"
    # control: plain git with that environment, in that state, runs the filter
    copy = tmp_path / "copy"
    sh(["git", "clone", "-q", str(sample_repo.path), str(copy)], tmp_path)
    subprocess.run(
        ["/bin/sh", "-c", SETTINGS_ATTRIBUTES], cwd=copy, check=True, capture_output=True
    )
    (copy / "src" / "semver" / "version.py").write_text("changed = 1\n")
    subprocess.run(
        ["git", "add", "-A"],
        cwd=copy,
        check=True,
        capture_output=True,
        env={**os.environ, **hostile_settings(marker)},
    )
    assert "config=" in marker.read_text()

    run = planted_run
    assert run.returncode == 0, run.output
    assert "ARMED" in run.seen["settings"], run.seen
    assert not run.markers["settings"].exists(), run.markers["settings"].read_text()
    assert ".gitattributes" in run.repo.git("ls-tree", "-r", "--name-only", BRANCH)
