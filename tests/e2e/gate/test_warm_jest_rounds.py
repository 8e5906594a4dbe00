"""A run's validation rounds start from the jest cache its pre-flight wrote on the untouched code
(gate/validation.py `preflight`, security/warm_caches.py `TMPDIR_CACHES`): with real jest 29,
inside the sandbox, the round transforms only the file the change touched. Without it every
round started from an empty TMPDIR and transformed every file again. A transformer of the
repository's own (TypeScript's `transpileModule`) says on stderr which files it transforms:
jest calls it only on a cache miss."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from eco_projects import edit_turn, git_repo, npm_packages, write_spec
from gate_repos import run_cli
from sample_repo import SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import ScriptedModelServer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not shutil.which("npm"), reason="needs node and npm"),
]
TRANSFORM_JS = """\
const crypto = require("crypto");
const path = require("path");
const ts = require("typescript");
module.exports = {
  getCacheKey(src, file) {
    return crypto.createHash("sha1").update(src).update(path.basename(file)).digest("hex");
  },
  process(src, file) {
    process.stderr.write(`TRANSFORMED ${path.basename(file)}\\n`);
    const options = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020 };
    return { code: ts.transpileModule(src, { compilerOptions: options }).outputText };
  },
};
"""
JEST_CONFIG = {"testEnvironment": "node", "transform": {"\\.ts$": "<rootDir>/transform.js"}}
# jest by its own script, not through npx (npx loads npm first: 0.5 s of CPU a start; the
# kept-tests jest case, test_tests_kept_ecosystems_e2e.py, runs it through npx)
TEST = (
    "JEST_JUNIT_OUTPUT_FILE=junit.xml node_modules/.bin/jest --ci --reporters=default"
    " --reporters=jest-junit"
)
TEST_TS = 'import {{ f{i} }} from "./m{i}";\n\ntest("f{i}", () => expect(f{i}(1)).toBe({v}));\n'
BUG, FIX = "n + 0", "n + 1"


@pytest.fixture(scope="module")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return npm_packages(tmp_path_factory.getbasetemp().parent / "ecosystems")


def dry_run(spec: Path, repo: SampleRepo, out: Path) -> tuple[list[str], str]:
    """A dry run (the pre-flight alone, its tests run in full): the files its test command
    transformed, and the run's worktree."""
    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out), "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    preflight = (out / "logs/preflight-01-test.log").read_text()
    tree = json.loads((out / "run.json").read_text())["worktree"]
    return sorted(re.findall(r"TRANSFORMED (\S+)", preflight)), tree


def test_a_round_transforms_only_what_the_change_touched_and_the_next_run_starts_warm(
    tmp_path: Path,
    node_modules: Path,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two cases, one after the other: a run's round transforms only what the change touched
    (the rest from its pre-flight's cache), and the next run's pre-flight (a dry run) starts
    from the cache the run kept (landlock's case of
    `test_the_next_runs_preflight_starts_from_the_jest_cache_the_last_one_kept`)."""
    monkeypatch.setenv("CODEGEN_SANDBOX", "landlock")
    files = {
        "package.json": json.dumps({"name": "w", "private": True, "jest": JEST_CONFIG}) + "\n",
        ".gitignore": "node_modules/\njunit.xml\n",
        "transform.js": TRANSFORM_JS,
    }
    for i in (1, 2, 3):
        body = BUG if i == 1 else f"n + {i}"
        files[f"src/m{i}.ts"] = f"export const f{i} = (n: number): number => {body};\n"
        files[f"src/m{i}.test.ts"] = TEST_TS.format(i=i, v=i + 1)
    repo = git_repo(tmp_path, files)
    subprocess.run(["cp", "-al", str(node_modules), str(repo.path / "node_modules")], check=True)
    model_env.add(*edit_turn("src/m1.ts", BUG, FIX))
    spec = write_spec(
        repo,
        task="f1(n) must return n + 1.",
        context=["src/m1.ts"],
        validation={"test": [TEST], "junit": ["junit.xml"]},
    )

    code, output, out, report = run_cli(repo, spec)

    assert code == 0, output
    assert report["status"] == "success" and report["iterations"] == 1
    transformed = {
        log.name: sorted(re.findall(r"TRANSFORMED (\S+)", log.read_text()))
        for log in (out / "logs").glob("*-test.log")
    }
    every = ["m1.test.ts", "m1.ts", "m2.test.ts", "m2.ts", "m3.test.ts", "m3.ts"]
    assert transformed == {
        "preflight-01-test.log": every,
        "round-1-01-test.log": ["m1.ts"],  # the rest came from the pre-flight's cache
    }
    # the next run: its pre-flight transforms nothing, in the same worktree
    tree = json.loads((out / "run.json").read_text())["worktree"]
    assert dry_run(spec, repo, tmp_path / "out-next") == ([], tree), "the next run"
    assert "/.cache/codegen-ci/" in tree


# landlock's case: the second half of the test above (a run, then the next run's pre-flight)
@pytest.mark.parametrize("backend", ["bwrap"])
def test_the_next_runs_preflight_starts_from_the_jest_cache_the_last_one_kept(
    backend: str, tmp_path: Path, node_modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's worktree is at the same path each time (workspace/slots.py), so jest's cache,
    keyed by that path, kept for the repository from the last pre-flight, is warm in the next
    run's pre-flight: it transforms nothing. Without it each run's pre-flight was cold. (Two
    dry runs: a dry run is the pre-flight alone, its tests run in full.)"""
    monkeypatch.setenv("CODEGEN_SANDBOX", backend)
    files = {
        "package.json": json.dumps({"name": "w", "private": True, "jest": JEST_CONFIG}) + "\n",
        ".gitignore": "node_modules/\njunit.xml\n",
        "transform.js": TRANSFORM_JS,
        "src/m1.ts": f"export const f1 = (n: number): number => {FIX};\n",
        "src/m1.test.ts": TEST_TS.format(i=1, v=2),
    }
    repo = git_repo(tmp_path, files)
    subprocess.run(["cp", "-al", str(node_modules), str(repo.path / "node_modules")], check=True)
    spec = write_spec(repo, task="Keep f1.", validation={"test": [TEST], "junit": ["junit.xml"]})
    logs, trees = zip(*(dry_run(spec, repo, tmp_path / f"out-{n}") for n in (1, 2)), strict=True)

    assert list(logs) == [["m1.test.ts", "m1.ts"], []]
    assert trees[0] == trees[1]
    assert "/.cache/codegen-ci/" in trees[0]
