"""Benchmark 8: what confinement costs per command.

`true` through the real runner (`proc.run_shell`, with its reaper) in a worktree-sized folder
of `files` files, unconfined, under bubblewrap, and under Landlock (the launcher's interpreter
start-up, the ruleset and the seccomp filter). Backends that cannot be set up on this machine
are reported as unavailable."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen_ci.security.sandbox import SandboxUnavailable, open_sandbox
from codegen_ci.workspace.proc import run_shell


def sandbox_cost(calls: int = 20, files: int = 2000) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        tree = Path(tmp) / "worktree"
        for n in range(files):
            path = tree / f"pkg{n % 40}" / f"mod{n}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x = 1\n")
        result: dict[str, Any] = {"calls": calls, "files": files}
        for mode in ("off", "bwrap", "landlock"):
            env = {**os.environ, "CODEGEN_SANDBOX": mode}
            try:
                sandbox = open_sandbox(env, git_dir=None)
            except SandboxUnavailable as exc:
                result[f"{mode}_ms"] = None
                result[f"{mode}_unavailable"] = exc.message.split(". ")[0]
                continue
            try:
                times = []
                for i in range(calls):
                    started = time.perf_counter()
                    run_shell(
                        "true",
                        cwd=tree,
                        env=sandbox.environment(env),
                        timeout=60,
                        output_path=Path(tmp) / f"{mode}-{i}.log",
                        wrap=sandbox.prefix(tree, network=False),
                    )
                    times.append((time.perf_counter() - started) * 1000)
                result[f"{mode}_ms"] = round(statistics.median(times), 1)
                if sandbox.landlock_abi is not None:
                    result["landlock_abi"] = sandbox.landlock_abi
            finally:
                sandbox.close()
        return result
