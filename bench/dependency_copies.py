"""Benchmark 15: a large `node_modules` given to a run's worktrees (issue 33's stranger check).

A checkout with an installed `node_modules` of `files` files (synthetic: `packages` packages
of small JavaScript files and a `package.json` each, about 10 KB a file, the shape of an `npm
ci` of a TypeScript + vitest project: mesqueeb/is-what's is 259 MB in 26.6k files). Timed,
with the real functions of workspace/dependency_links.py on this machine's file system:

* `before`: what a passing run did until now: a copy into the run's worktree, a second copy
  into the proof's tree on the base commit, and both removed;
* `after`: one copy into the run's worktree, the proof's tree borrowing it (the check that it
  still holds what the checkout's does, then a rename), giving it back, one removal;
* each step on its own (copy, inventory check, removal)."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen_ci.workspace.dependency_links import (
    give_back,
    inventory,
    link_dependencies,
    unlink_dependencies,
)

FILE = "// generated\n" + "export const x = {n};\n" * 450  # about 10 KB


def dependency_copies(files: int = 26_600, packages: int = 1_300) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-deps-") as tmp:
        root = Path(tmp)
        checkout = _checkout(root / "checkout", files, packages)
        trees = root / "worktrees"
        trees.mkdir()
        run, proof = trees / "run", trees / "run-proof"
        for place in (run, proof):
            _git(["worktree", "add", "-q", "--detach", str(place)], checkout)
        result: dict[str, Any] = {"files": files, "packages": packages}
        result["size_mb"] = round(_size(checkout / "node_modules") / 1e6)

        started = time.perf_counter()  # before: two copies, two removals
        links = link_dependencies(checkout, run)
        result["copy_ms"] = _ms(started)
        mark = time.perf_counter()
        proof_links = link_dependencies(checkout, proof)
        result["second_copy_ms"] = _ms(mark)
        mark = time.perf_counter()
        unlink_dependencies(proof, proof_links)
        result["removal_ms"] = _ms(mark)
        mark = time.perf_counter()
        unlink_dependencies(run, links)
        result["before_ms"] = _ms(started)
        result["second_removal_ms"] = _ms(mark)

        started = time.perf_counter()  # after: one copy, lent, given back, one removal
        links = link_dependencies(checkout, run)
        result["after_copy_ms"] = _ms(started)
        mark = time.perf_counter()
        proof_links = link_dependencies(checkout, proof, lender=run)
        give_back(proof, run, proof_links, checkout)
        unlink_dependencies(proof, proof_links)
        result["borrow_and_give_back_ms"] = _ms(mark)
        result["lent"] = not (proof / "node_modules").exists() and (run / "node_modules").is_dir()
        mark = time.perf_counter()
        unlink_dependencies(run, links)
        result["after_removal_ms"] = _ms(mark)
        result["after_ms"] = _ms(started)
        result["saved_ms"] = round(result["before_ms"] - result["after_ms"], 1)
        mark = time.perf_counter()  # the check alone: both folders listed and compared
        inventory(checkout / "node_modules", checkout)
        result["inventory_ms"] = _ms(mark)
        return result


def _checkout(path: Path, files: int, packages: int) -> Path:
    path.mkdir()
    _git(["init", "-q", "-b", "main"], path)
    (path / ".gitignore").write_text("node_modules/\n")
    (path / "package.json").write_text('{"name": "bench"}\n')
    _git(["add", "-A"], path)
    _git(["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "init"], path)
    per = max(1, files // packages)
    for p in range(packages):
        pkg = path / "node_modules" / f"pkg-{p}" / "dist"
        pkg.mkdir(parents=True)
        (pkg.parent / "package.json").write_text(f'{{"name": "pkg-{p}"}}\n')
        for n in range(per - 1):
            (pkg / f"m{n}.js").write_text(FILE.format(n=n))
    return path


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 1)


def _git(args: list[str], cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
