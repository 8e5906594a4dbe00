"""Benchmark 15: jest's and vitest's caches, direct and inside the sandbox (issue 33.2).

`python -m bench.warm_node NODE_MODULES [FILES] [RUNS]`: NODE_MODULES holds jest 29, ts-jest,
typescript and vitest 2 (`npm install --save-dev jest@29.7.0 ts-jest@29.2.5 typescript@5.6.3
vitest@2.1.9`), hard-linked into each project (`cp -al`, as the tests do). Two projects of FILES
TypeScript modules with a test file each: one tested by jest through ts-jest, one by vitest.

Direct: the first run on an empty cache (jest's under the user's TMPDIR; vitest's
`node_modules/.vite` removed), then the median of RUNS warm runs. Confined, per backend, as a
run does it: a worktree made by `link_dependencies`, the sandbox opened as a run opens it, the
pre-flight's phase (the first confined run), its caches kept (`Sandbox.keep_caches`), then
RUNS phases each started by `new_phase` (a round's): their median is "warm inside". A phase
that starts without the kept cache is what every round paid before: the first run's figure.

`python -m bench.warm_node --next-run NODE_MODULES [FILES] [RUNS] [isolated]`: jest's
pre-flight in the next run on the same repository (workspace/slots.py). Per backend: a
worktree at the repository's stable path; the first run's pre-flight on an empty cache
("cold"), its cache kept for the repository (`Sandbox.keep_caches` with `caches`); then RUNS
times a new run: a fresh worktree at the same path, a new sandbox seeded from the kept
caches, its pre-flight timed ("warm"; the median). Before, every run's pre-flight was cold.
`isolated`: ts-jest with `isolatedModules` (no type-check), whose cache keys hold no
imported file's modification time (the type-checking ts-jest's do: a fresh checkout misses
every file that imports another)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen_ci.security.sandbox import Sandbox, SandboxUnavailable, open_sandbox
from codegen_ci.workspace.dependency_links import link_dependencies
from codegen_ci.workspace.file_times import copy_times
from codegen_ci.workspace.proc import run_shell

MODULE = (
    "export interface Box{n} {{ value: number; label: string }}\n"
    "export function make{n}(v: number): Box{n} {{ return {{ value: v * {n}, label: `m{n}` }}; }}\n"
    "export class Counter{n} {{ private n = 0; inc(): number {{ return ++this.n; }} }}\n"
)
TEST = (
    'import {{ describe, expect, it }} from "{lib}";\n'
    'import {{ make{n}, Counter{n} }} from "./m{n}";\n\n'
    'describe("m{n}", () => {{\n'
    '  it("makes", () => expect(make{n}(2).value).toBe(2 * {n}));\n'
    '  it("counts", () => {{ const c = new Counter{n}(); c.inc(); expect(c.inc()).toBe(2); }});\n'
    "}});\n"
)
JEST = "node node_modules/jest/bin/jest.js --ci"
VITEST = "node node_modules/vitest/vitest.mjs run"


def warm_node(node_modules: Path, files: int = 60, runs: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-warm-node-") as tmp:
        root = Path(tmp)
        user_tmp = root / "user-tmp"
        user_tmp.mkdir()
        env = {**os.environ, "TMPDIR": str(user_tmp)}
        projects = {
            "jest": (_project(root / "jest", node_modules, files, "@jest/globals"), JEST),
            "vitest": (_project(root / "vitest", node_modules, files, "vitest"), VITEST),
        }
        result: dict[str, Any] = {"files": files, "runs": runs}
        for name, (checkout, command) in projects.items():
            shutil.rmtree(checkout / "node_modules" / ".vite", ignore_errors=True)
            result[f"{name}_direct_cold_ms"] = _time(lambda c=command, d=checkout: _sh(c, d, env))
            result[f"{name}_direct_warm_ms"] = _median(
                runs, lambda c=command, d=checkout: _sh(c, d, env)
            )
        for mode in ("bwrap", "landlock"):
            menv = {**env, "CODEGEN_SANDBOX": mode}
            for name, (checkout, command) in projects.items():
                tree = _worktree(checkout, root, f"{name}-{mode}")
                try:
                    sandbox = open_sandbox(menv, git_dir=checkout / ".git", checkout=checkout)
                except SandboxUnavailable as exc:
                    result[f"{mode}_unavailable"] = exc.message.split(". ")[0]
                    break
                try:
                    inside = sandbox.environment(menv)

                    def once(
                        c: str = command,
                        t: Path = tree,
                        e: dict[str, str] = inside,
                        s: Sandbox = sandbox,
                    ) -> None:
                        wrap = s.prefix(t, network=False)
                        proc = run_shell(
                            c, cwd=t, env=e, timeout=900, output_path=root / "log", wrap=wrap
                        )
                        if proc.exit_code != 0:
                            raise RuntimeError(f"{c} failed inside: {proc.excerpt(2000)}")

                    sandbox.new_phase()
                    result[f"{name}_{mode}_first_ms"] = _time(once)
                    sandbox.keep_caches()

                    def round_(once: Any = once, s: Sandbox = sandbox) -> None:
                        s.new_phase()
                        once()

                    result[f"{name}_{mode}_warm_ms"] = _median(runs, round_)
                    warm = result[f"{name}_direct_warm_ms"]
                    result[f"{name}_{mode}_ratio"] = round(
                        result[f"{name}_{mode}_warm_ms"] / warm, 2
                    )
                finally:
                    sandbox.close()
        return result


def next_run(
    node_modules: Path, files: int = 60, runs: int = 3, isolated: bool = False
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-next-run-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "TMPDIR": str(root)}
        checkout = _project(root / "jest", node_modules, files, "@jest/globals", isolated)
        _sh(JEST, checkout, env)  # the user's own cache, warm (it never matches a worktree)
        result: dict[str, Any] = {"files": files, "runs": runs}
        result["direct_warm_ms"] = _median(runs, lambda: _sh(JEST, checkout, env))
        for mode in ("bwrap", "landlock"):
            menv = {**env, "CODEGEN_SANDBOX": mode}
            caches = root / f"caches-{mode}"
            tree = _worktree(checkout, root, mode)  # the slot's path, the same in every run

            written: list[int] = []  # transformed files the last pre-flight wrote (misses)

            def preflight(
                t: Path = tree, e: dict[str, str] = menv, c: Path = caches, w: list[int] = written
            ) -> int:
                subprocess.run(["git", "worktree", "remove", "--force", str(t)], cwd=checkout)
                subprocess.run(
                    ["git", "worktree", "add", "-q", "--detach", str(t), "HEAD"], cwd=checkout
                )
                copy_times(checkout, t)
                link_dependencies(checkout, t)
                sandbox = open_sandbox(e, git_dir=checkout / ".git", checkout=checkout, caches=c)
                try:
                    sandbox.new_phase()
                    wrap = sandbox.prefix(t, network=False)
                    inside = sandbox.environment(e)
                    started = time.perf_counter()
                    proc = run_shell(
                        JEST, cwd=t, env=inside, timeout=900, output_path=root / "log", wrap=wrap
                    )
                    took = round((time.perf_counter() - started) * 1000)
                    if proc.exit_code != 0:
                        raise RuntimeError(f"jest failed inside: {proc.excerpt(2000)}")
                    tmp = sandbox.scratch / "tmp"
                    since = started - time.perf_counter() + time.time()
                    w.append(
                        sum(
                            1
                            for f in tmp.glob("jest_*/jest-transform-cache-*/*/*")
                            if f.is_file() and f.stat().st_mtime >= since
                        )
                    )
                    sandbox.keep_caches()
                    return took
                finally:
                    sandbox.close()

            try:
                result[f"{mode}_cold_ms"] = preflight()
            except SandboxUnavailable as exc:
                result[f"{mode}_unavailable"] = exc.message.split(". ")[0]
                continue
            result[f"{mode}_cold_transformed"] = written[-1]
            warm = round(statistics.median(preflight() for _ in range(runs)))
            result[f"{mode}_warm_ms"] = warm
            result[f"{mode}_warm_transformed"] = written[-1]
            result[f"{mode}_ratio"] = round(warm / result["direct_warm_ms"], 2)
        return result


def _project(where: Path, node_modules: Path, files: int, lib: str, isolated: bool = False) -> Path:
    (where / "src").mkdir(parents=True)
    package: dict[str, Any] = {"name": where.name, "private": True}
    if where.name == "jest" and isolated:  # no type-check: its keys hold no imports' times
        ts_jest = ["ts-jest", {"isolatedModules": True}]
        package["jest"] = {"transform": {"^.+\\.ts$": ts_jest}, "testEnvironment": "node"}
    elif where.name == "jest":
        package["jest"] = {"preset": "ts-jest", "testEnvironment": "node"}
    else:
        package["type"] = "module"
    (where / "package.json").write_text(json.dumps(package) + "\n")
    (where / "tsconfig.json").write_text(
        '{"compilerOptions": {"target": "es2020", "module": "commonjs", "strict": true, '
        '"esModuleInterop": true}}\n'
    )
    (where / ".gitignore").write_text("node_modules/\n")
    for n in range(1, files + 1):
        (where / "src" / f"m{n}.ts").write_text(MODULE.format(n=n))
        (where / "src" / f"m{n}.test.ts").write_text(TEST.format(n=n, lib=lib))
    _sh("git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm p", where)
    subprocess.run(["cp", "-al", str(node_modules), str(where / "node_modules")], check=True)
    return where


def _worktree(checkout: Path, root: Path, name: str) -> Path:
    """The run's worktree of `checkout`, its node_modules copied and its files the checkout's
    times (as a run makes it)."""
    folder = root / f"tree-{name}"
    folder.mkdir(mode=0o700)
    tree = folder / "tree"
    subprocess.run(
        ["git", "worktree", "add", "-q", "--detach", str(tree), "HEAD"], cwd=checkout, check=True
    )
    copy_times(checkout, tree)
    link_dependencies(checkout, tree)
    return tree


def _sh(command: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{command} failed: {proc.stdout[-1000:]}{proc.stderr[-1000:]}")


def _time(once: Any) -> int:
    started = time.perf_counter()
    once()
    return round((time.perf_counter() - started) * 1000)


def _median(runs: int, once: Any) -> int:
    return round(statistics.median(_time(once) for _ in range(runs)))


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    measure = next_run if args[0] == "--next-run" else warm_node
    args = args[1:] if args[0] == "--next-run" else args
    numbers = [int(a) for a in args[1:3]]
    extra = {"isolated": True} if "isolated" in args[3:] else {}
    print(json.dumps(measure(Path(args[0]), *numbers, **extra), indent=2))
