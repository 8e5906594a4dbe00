"""Benchmark 12: a command whose cache is warm outside, run inside the sandbox (issue 33.2).

For each command: the median wall time run directly (the user's warm cache) and run confined
through the real runner (`proc.run_shell`) with the sandbox's environment (Go's build cache
copied into the phase's scratch, security/warm_caches.py; cargo's `target/` copied into the
worktree, workspace/dependency_links.py, its files with the checkout's times,
workspace/file_times.py), on each backend that can be set up. Also the one-off
cost of copying the caches (opening the sandbox, making the worktree). Projects are made in a
temporary HOME: a Go module of a few packages (standard library only), a crate with a path
dependency (Debian's cargo and rustc), a pytest suite."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen_ci.security.sandbox import SandboxUnavailable, open_sandbox
from codegen_ci.workspace.dependency_links import link_dependencies
from codegen_ci.workspace.file_times import copy_times
from codegen_ci.workspace.proc import run_shell

GO_PACKAGE = """package p{n}

import (
\t"encoding/json"
\t"net/http"
\t"strings"
)

func Name(r *http.Request) string {{
\tb, _ := json.Marshal(strings.ToUpper(r.URL.Path))
\treturn string(b)
}}
"""
GO_TEST = """package p{n}

import (
\t"net/http/httptest"
\t"testing"
)

func TestName(t *testing.T) {{
\tif Name(httptest.NewRequest("GET", "/x", nil)) != `"/X"` {{
\t\tt.Fatal("no")
\t}}
}}
"""
LIB_RS = "pub fn add(a: i32, b: i32) -> i32 {{ a + b }}\n"
APP_RS = (
    "pub fn three() -> i32 {{ dep::add(1, 2) }}\n"
    "#[cfg(test)]\nmod tests {{\n    #[test]\n"
    "    fn three() {{ assert_eq!(super::three(), 3); }}\n}}\n"
)
PY_TEST = "def test_{n}():\n    assert sum(range({n})) == {total}\n"


def warm_caches(
    runs: int = 5, only: tuple[str, ...] = (), *, py_modules: int = 40
) -> dict[str, Any]:
    """`only`: the commands to time (`go_vet`, `go_test`, `cargo_test`, `pytest`; all);
    `py_modules`: the pytest suite's test modules (the smoke test's tiny configuration)."""
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GO", "CARGO"))}
        env.update(HOME=str(home), GOPROXY="off", GOFLAGS="-mod=mod", RUSTC="/usr/bin/rustc")
        env.pop("XDG_CACHE_HOME", None)
        env["PATH"] = f"/usr/bin:{env.get('PATH', '')}"
        projects = _projects(root, env, only, py_modules)
        result: dict[str, Any] = {"runs": runs}
        for name, (cwd, command) in projects.items():
            _sh(command, cwd, env)  # warm the user's cache
            result[f"{name}_direct_ms"] = _median(runs, lambda c=command, d=cwd: _sh(c, d, env))
        for mode in ("bwrap", "landlock"):
            menv = {**env, "CODEGEN_SANDBOX": mode}
            started = time.perf_counter()
            try:
                sandbox = open_sandbox(menv, git_dir=None, checkout=root)
            except SandboxUnavailable as exc:
                result[f"{mode}_unavailable"] = exc.message.split(". ")[0]
                continue
            result[f"{mode}_open_ms"] = round((time.perf_counter() - started) * 1000)
            try:
                inside = sandbox.environment(menv)
                for name, (cwd, command) in projects.items():
                    tree = _worktree(cwd, root, name, mode)
                    wrap = sandbox.prefix(tree, network=False)

                    def once(
                        c: str = command,
                        t: Path = tree,
                        w: list[str] = wrap,
                        e: dict[str, str] = inside,
                    ) -> None:
                        proc = run_shell(
                            c, cwd=t, env=e, timeout=600, output_path=root / "log", wrap=w
                        )
                        if proc.exit_code != 0:
                            raise RuntimeError(f"{c} failed inside: {proc.output[-2000:]}")

                    started = time.perf_counter()
                    once()
                    result[f"{name}_{mode}_first_ms"] = round(
                        (time.perf_counter() - started) * 1000
                    )
                    result[f"{name}_{mode}_ms"] = _median(runs, once)
                    direct = result[f"{name}_direct_ms"]
                    result[f"{name}_{mode}_ratio"] = round(result[f"{name}_{mode}_ms"] / direct, 2)
            finally:
                sandbox.close()
        return result


def _projects(
    root: Path, env: dict[str, str], only: tuple[str, ...], py_modules: int
) -> dict[str, tuple[Path, str]]:
    """The projects of the commands `only` names (all without it)."""
    found: dict[str, tuple[Path, str]] = {}
    if shutil.which("go") and (not only or {"go_vet", "go_test"} & set(only)):
        go = root / "gomod"
        for n in range(6):
            (go / f"p{n}").mkdir(parents=True)
            (go / f"p{n}" / "p.go").write_text(GO_PACKAGE.format(n=n))
            (go / f"p{n}" / "p_test.go").write_text(GO_TEST.format(n=n))
        (go / "go.mod").write_text("module example.com/bench\n\ngo 1.19\n")
        found["go_vet"] = (go, "go vet ./...")
        found["go_test"] = (go, "go test ./...")
    cargo = Path("/usr/bin/cargo").exists() and Path("/usr/bin/rustc").exists()
    if cargo and (not only or "cargo_test" in only):
        dep, app = root / "dep", root / "app"
        for where, name, text in ((dep, "dep", LIB_RS), (app, "app", APP_RS)):
            (where / "src").mkdir(parents=True)
            manifest = f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n'
            if name == "app":
                manifest += f'\n[dependencies]\ndep = {{ path = "{dep}" }}\n'
            (where / "Cargo.toml").write_text(manifest)
            (where / "src" / "lib.rs").write_text(text.format())
        found["cargo_test"] = (app, "cargo test --offline -q")
    if not only or "pytest" in only:
        py = root / "pysuite"
        py.mkdir()
        for n in range(py_modules):
            (py / f"test_m{n}.py").write_text(PY_TEST.format(n=n, total=sum(range(n))))
        found["pytest"] = (py, f"{sys.executable} -m pytest -q -p no:cacheprovider")
    found = {name: project for name, project in found.items() if not only or name in only}
    for path in {p for p, _ in found.values()}:
        _sh(
            "git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm p",
            path,
            env,
        )
    return found


def _worktree(checkout: Path, root: Path, name: str, mode: str) -> Path:
    """The run's worktree of `checkout`, with its caches copied and the times of its files
    the checkout's (as a run makes it: workspace/file_times.py)."""
    tree = root / f"tree-{name}-{mode}"
    subprocess.run(
        ["git", "worktree", "add", "-q", "--detach", str(tree), "HEAD"], cwd=checkout, check=True
    )
    copy_times(checkout, tree)
    link_dependencies(checkout, tree)
    return tree


def _sh(command: str, cwd: Path, env: dict[str, str]) -> None:
    proc = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{command} failed: {proc.stdout[-1000:]}{proc.stderr[-1000:]}")


def _median(runs: int, once: Any) -> int:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        once()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times))
