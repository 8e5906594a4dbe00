"""Small real projects in other ecosystems, each with a real bug and its own test runner: a
TypeScript package tested by jest (ts-jest, jest-junit) and a Go module tested by gotestsum
(standard library only: the Go module proxy is not reachable from CI); and what a Rust crate
tested by Debian's cargo needs (the tests hold their own `src/lib.rs`).

The npm packages are installed once per test session from the npm registry into a shared
directory (a file lock keeps xdist workers from installing twice), then hard-linked into each
project's `node_modules`, as if the workflow had run `npm ci` in the checkout before the run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from sample_repo import NO_PROOF, SampleRepo, sh

from codegen_ci.testing.scripted_model import Reply, call

NPM_PACKAGES = ("jest@29.7.0", "ts-jest@29.2.5", "typescript@5.6.3", "jest-junit@16.0.0")
JEST_JUNIT = "jest --ci --reporters=default --reporters=jest-junit"
JEST_CONFIG = {
    "testEnvironment": "node",
    "transform": {"^.+\\.ts$": ["ts-jest", {"isolatedModules": True}]},
}

PRICE_TS = """\
export interface Item {
  name: string;
  cents: number;
  quantity: number;
}

/** Total of a cart in cents, after a percentage discount on the sum. */
export function total(items: Item[], discountPercent = 0): number {
  const sum = items.reduce((acc, item) => acc + item.cents, 0);
  return Math.round(sum * (1 - discountPercent / 100));
}
"""
PRICE_TEST_TS = """\
import { describe, expect, test } from "@jest/globals";
import { total } from "./price";

describe("total", () => {
  test("multiplies cents by quantity", () => {
    expect(total([{ name: "pen", cents: 150, quantity: 3 }])).toBe(450);
  });

  test("applies the discount", () => {
    expect(total([{ name: "pad", cents: 1000, quantity: 1 }], 10)).toBe(900);
  });
});
"""
LEGACY_TEST_TS = """\
import { expect, test } from "@jest/globals";

test("legacy rounding was never right", () => {
  expect(Math.round(2.5)).toBe(2);
});
"""
TS_BUG = "acc + item.cents, 0)"
TS_FIX = "acc + item.cents * item.quantity, 0)"
TS_FILE = "src/price.ts"

GO_MOD = "module example.com/inventory\n\ngo 1.19\n"
STORE_GO = """\
package inventory

// Item is a stock entry.
type Item struct {
\tName  string
\tCount int
}

// Store keeps counts by name.
type Store struct {
\titems map[string]*Item
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{items: map[string]*Item{}} }

// Add puts n more of name in stock.
func (s *Store) Add(name string, n int) {
\tit := s.items[name]
\tif it == nil {
\t\tit = &Item{Name: name}
\t\ts.items[name] = it
\t}
\tit.Count += n
}

// Count is how many of name are in stock.
func (s *Store) Count(name string) int {
\tif it := s.items[name]; it != nil {
\t\treturn it.Count
\t}
\treturn 0
}

// Remove takes up to n of name; stock never goes below zero. It returns how many it took.
func (s *Store) Remove(name string, n int) int {
\tit := s.items[name]
\tif it == nil {
\t\treturn 0
\t}
\tit.Count -= n
\treturn n
}
"""
STORE_TEST_GO = """\
package inventory

import "testing"

func TestAdd(t *testing.T) {
\ts := NewStore()
\ts.Add("bolt", 2)
\ts.Add("bolt", 3)
\tif got := s.Count("bolt"); got != 5 {
\t\tt.Fatalf("Count = %d, want 5", got)
\t}
}

func TestRemoveMissing(t *testing.T) {
\tif got := NewStore().Remove("ghost", 1); got != 0 {
\t\tt.Fatalf("Remove = %d, want 0", got)
\t}
}

func TestRemoveNeverBelowZero(t *testing.T) {
\ts := NewStore()
\ts.Add("nut", 2)
\tif got := s.Remove("nut", 5); got != 2 {
\t\tt.Fatalf("Remove = %d, want 2", got)
\t}
\tif got := s.Count("nut"); got != 0 {
\t\tt.Fatalf("Count = %d, want 0", got)
\t}
}
"""
GO_FILE = "store.go"
GO_BUG = "\tit.Count -= n\n\treturn n\n"
GO_FIX = "\tif n > it.Count {\n\t\tn = it.Count\n\t}\n\tit.Count -= n\n\treturn n\n"
# A wrong first fix: drops the nil check, so Remove of a missing name panics.
GO_NIL_CHECK = "\tit := s.items[name]\n\tif it == nil {\n\t\treturn 0\n\t}\n"
GO_PANIC_OLD = GO_NIL_CHECK + GO_BUG
GO_PANIC_NEW = "\tit := s.items[name]\n" + GO_FIX
GO_RIGHT = GO_NIL_CHECK + GO_FIX
GOTESTSUM = "gotestsum --format standard-verbose --junitfile junit.xml -- ./..."
needs_node = pytest.mark.skipif(not shutil.which("npm"), reason="needs node and npm")
needs_go = pytest.mark.skipif(
    not (shutil.which("go") and shutil.which("gotestsum")), reason="needs go and gotestsum"
)
# A Rust crate, built offline (crates.io is not reachable) by Debian's cargo and rustc.
CARGO_TOML = '[package]\nname = "stock"\nversion = "0.1.0"\nedition = "2021"\n'
needs_debians_cargo = pytest.mark.skipif(
    not (shutil.which("cargo", path="/usr/bin") and shutil.which("rustc", path="/usr/bin")),
    reason="needs Debian's cargo and rustc",
)


# The ecosystems' fixtures, for the tests of tests/e2e/gate (its conftest.py names them).


@pytest.fixture(scope="session")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The parent of the base temp dir is shared by all xdist workers of the session.
    return npm_packages(tmp_path_factory.getbasetemp().parent / "ecosystems")


@pytest.fixture
def go_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A build cache shared by the session's tests, warm (`warm_go_cache`); no module proxy
    (none is reachable)."""
    shared = tmp_path_factory.getbasetemp().parent / "ecosystems"
    go_settings(monkeypatch, shared)


def go_settings(monkeypatch: pytest.MonkeyPatch, shared: Path) -> None:
    """`go_env`'s variables, the build cache warmed once for the session (`shared`)."""
    monkeypatch.setenv("GOCACHE", str(warm_go_cache(shared)))
    monkeypatch.setenv("GOPATH", str(shared / "gopath"))
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")


def warm_go_cache(shared: Path) -> Path:
    """Go's build cache as a user's machine has it after one `go test` and `go vet` of the
    module (once per session, a file lock for xdist): a run copies the user's cache into each
    phase (security/warm_caches.py), whose `go test` then links the module's test binary from
    it instead of compiling the packages again (0.5 s of CPU a phase, not 3.7). Nothing of a
    run's own is in it (a phase never writes back)."""
    root = shared / "go-warm"
    cache = root / "go-build"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / "go-build.warmed"
        if not marker.exists() and shutil.which("go"):
            module = root / "module"
            shutil.rmtree(module, ignore_errors=True)
            for rel, text in {
                "go.mod": GO_MOD,
                GO_FILE: STORE_GO,
                "store_test.go": STORE_TEST_GO,
            }.items():
                (module / rel).parent.mkdir(parents=True, exist_ok=True)
                (module / rel).write_text(text)
            env = {
                **os.environ,
                "GOCACHE": str(cache),
                "GOPATH": str(shared / "gopath"),
                "GOPROXY": "off",
                "GOFLAGS": "-mod=mod",
            }
            for argv in (["go", "vet", "./..."], ["go", "test", "-count=1", "./..."]):
                # the module's bug fails its test: the cache is what is wanted, not the verdict
                subprocess.run(argv, cwd=module, env=env, capture_output=True, timeout=300)
            marker.write_text("ok\n")
    cache.mkdir(parents=True, exist_ok=True)
    return cache


def edit(path: str, old: str, new: str) -> Reply:
    """A model reply with a single edit."""
    return Reply(tool_calls=[call("edit_file", path=path, old_text=old, new_text=new)])


def edit_turn(path: str, old: str, new: str, note: str = "done") -> list[Reply]:
    """One model turn: a single edit, then an answer without tool calls."""
    return [edit(path, old, new), Reply(note)]


def write(path: str, content: str) -> Reply:
    """A model reply that writes one file."""
    return Reply(tool_calls=[call("write_file", path=path, content=content)])


def npm_packages(shared_root: Path) -> Path:
    """A node_modules with jest, ts-jest, typescript and jest-junit, installed once."""
    key = hashlib.sha1(" ".join(NPM_PACKAGES).encode()).hexdigest()[:10]
    root = shared_root / f"npm-{key}"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / "node_modules" / ".codegen-installed"
        if not marker.exists():
            (root / "package.json").write_text('{"name": "deps", "private": true}\n')
            # npm's own cache in the real home (tests get a temporary HOME)
            cache = str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".npm")
            subprocess.run(
                [
                    "npm",
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--prefer-offline",  # the cache's packages without asking again
                    "--cache",
                    cache,
                    "--save-dev",
                    *NPM_PACKAGES,
                ],
                cwd=root,
                check=True,
                capture_output=True,
                timeout=600,
            )
            marker.write_text("ok\n")
    return root / "node_modules"


def git_repo(tmp: Path, files: dict[str, str]) -> SampleRepo:
    """`files` committed on `main` in `tmp/repo`, with a bare `origin` beside it."""
    repo = tmp / "repo"
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sh(["git", "init", "-q", "-b", "main"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "initial"], repo)
    origin = tmp / "origin.git"
    sh(["git", "init", "-q", "--bare", "-b", "main", str(origin)], tmp)
    sh(["git", "remote", "add", "origin", str(origin)], repo)
    return SampleRepo(repo, origin, tmp)


# A tiny Python project for changed-line coverage (tests/e2e/gate/test_coverage_runners.py,
# test_folder_command_e2e.py): `add` subtracts; the fix is line 2, and the fixed file adds a
# function whose body no test runs (lines 6-7).
CALC_OPS = "def add(a, b):\n    return a - b\n"
CALC_OPS_FIXED = (
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    difference = a - b\n"
    "    return difference\n"
)
CALC_TEST = """\
import unittest

from calc.ops import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


def calc_repo(tmp: Path, more: dict[str, str] | None = None) -> SampleRepo:
    """The calc project committed (`more`: other files beside it)."""
    files = {
        "calc/__init__.py": "",
        "calc/ops.py": CALC_OPS,
        "tests/__init__.py": "",
        "tests/test_ops.py": CALC_TEST,
        ".gitignore": "__pycache__/\n",
        **(more or {}),
    }
    return git_repo(tmp, files)


def make_ts_repo(
    tmp: Path, node_modules: Path, *, test_script: str = JEST_JUNIT, legacy: bool = False
) -> SampleRepo:
    """The TypeScript project, committed, with node_modules installed (not committed)."""
    package = {
        "name": "cart",
        "version": "1.0.0",
        "private": True,
        "scripts": {"test": test_script},
        "jest": JEST_CONFIG,
    }
    files = {
        "package.json": json.dumps(package, indent=2) + "\n",
        ".gitignore": "node_modules/\njunit.xml\n",
        "tsconfig.json": '{"compilerOptions": {"strict": true, "esModuleInterop": true}}\n',
        TS_FILE: PRICE_TS,
        "src/price.test.ts": PRICE_TEST_TS,
    }
    if legacy:
        files["src/legacy.test.ts"] = LEGACY_TEST_TS
    repo = git_repo(tmp, files)
    subprocess.run(["cp", "-al", str(node_modules), str(repo.path / "node_modules")], check=True)
    return repo


def make_go_repo(tmp: Path) -> SampleRepo:
    files = {
        "go.mod": GO_MOD,
        ".gitignore": "junit.xml\n",
        GO_FILE: STORE_GO,
        "store_test.go": STORE_TEST_GO,
        "units/units.go": "package units\n\n// Dozen is twelve.\nconst Dozen = 12\n",
    }
    return git_repo(tmp, files)


def make_crate(tmp: Path, lib_rs: str, more: dict[str, str] | None = None) -> SampleRepo:
    """The crate `stock` with `lib_rs` as its `src/lib.rs` (and `more` files), committed;
    its `target/` ignored."""
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": lib_rs, ".gitignore": "target/\n"}
    return git_repo(tmp, {**files, **(more or {})})


def debians_cargo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Debian's cargo and rustc for the test's runs, not a rustup proxy earlier on PATH."""
    monkeypatch.setenv("PATH", f"/usr/bin:{os.environ['PATH']}")
    monkeypatch.setenv("RUSTC", "/usr/bin/rustc")


def write_spec(repo: SampleRepo, *, proof: bool = False, **overrides: object) -> Path:
    """A spec for `repo`: its `validation` runs no proof (nor the coverage run after it) unless
    it names `proof` or `proof` is given (the product's default policy then), as
    `SampleRepo.write_spec`: a whole test run of the ecosystem's runner, and one under
    coverage, after each passing round, which only the proof and coverage tests are about."""
    import yaml

    spec: dict[str, object] = {"version": 1, "limits": {"max_iterations": 3}}
    spec.update(overrides)
    validation = spec.get("validation")
    if not proof and isinstance(validation, dict) and "proof" not in validation:
        spec["validation"] = {**validation, "proof": NO_PROOF}
    path = repo.tmp / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


# The TypeScript project's tests: one that passes on the base commit, one of its bug.
TS_PASSING_TEST = """\
import { expect, test } from "@jest/globals";
import { total } from "./price";

test("applies the discount", () => {
  expect(total([{ name: "pad", cents: 1000, quantity: 1 }], 10)).toBe(900);
});
"""
TS_QUANTITY_TEST = """\
import { expect, test } from "@jest/globals";
import { total } from "./price";

test("counts every unit", () => {
  expect(total([{ name: "pen", cents: 100, quantity: 2 }])).toBe(200);
});
"""
# A new function of the Go module, and its test.
GO_HAS = """
// Has tells whether name is in stock.
func (s *Store) Has(name string) bool {
\treturn s.Count(name) > 0
}
"""
GO_HAS_TEST = """\
package inventory

import "testing"

func TestHas(t *testing.T) {
\ts := NewStore()
\ts.Add("nut", 1)
\tif !s.Has("nut") || s.Has("bolt") {
\t\tt.Fatal("Has is wrong")
\t}
}
"""
TS_TASK = textwrap.dedent("""\
    total() must multiply each item's cents by its quantity before summing.""")
GO_TASK = "Store.Remove must never take more than is in stock (stock never below zero)."
