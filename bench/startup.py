"""Benchmark 1b: start-up. `codegen-ci --help` against `python -c "import openai"` (median of
fresh subprocesses), whether importing the CLI loads openai or github, and the slowest imports
of `--help` from `python -X importtime`."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import median

PYTHON = sys.executable
# The installed console script beside this interpreter; `python -m` when there is none.
_SCRIPT = Path(PYTHON).with_name("codegen-ci")
CODEGEN = [str(_SCRIPT)] if _SCRIPT.is_file() else [PYTHON, "-m", "codegen_ci"]
LAZY_CHECK = "import codegen_ci.cli, sys; print('openai' in sys.modules, 'github' in sys.modules)"


def startup(runs: int = 10) -> dict[str, Any]:
    help_s = _median_seconds([*CODEGEN, "--help"], runs)
    openai_s = _median_seconds([PYTHON, "-c", "import openai"], runs)
    bare_s = _median_seconds([PYTHON, "-c", "pass"], runs)
    loaded = _run([PYTHON, "-c", LAZY_CHECK]).split()
    lazy = loaded == ["False", "False"]
    ratio = help_s / openai_s
    rows = import_times()
    return {
        "runs": runs,
        "help_ms": round(help_s * 1e3, 1),
        "import_openai_ms": round(openai_s * 1e3, 1),
        "python_pass_ms": round(bare_s * 1e3, 1),
        "ratio": round(ratio, 3),
        "cli_loads_openai": loaded[0] == "True",
        "cli_loads_github": loaded[1] == "True",
        "cli_import_ms": next(r["cumulative_ms"] for r in rows if r["module"] == "codegen_ci.cli"),
        "top_imports": sorted(rows, key=lambda r: -float(r["self_ms"]))[:8],
        "target": "--help faster than `import openai`; openai and github not imported",
        "holds": lazy and ratio < 1.0,
    }


def top_imports(count: int = 8) -> list[dict[str, Any]]:
    """The modules `codegen-ci --help` spends most import time on (their own time, any depth),
    from one `python -X importtime` run."""
    return sorted(import_times(), key=lambda r: -float(r["self_ms"]))[:count]


def import_times() -> list[dict[str, Any]]:
    done = subprocess.run(
        [PYTHON, "-X", "importtime", "-m", "codegen_ci", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows: list[dict[str, Any]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative_us, name = line.removeprefix("import time:").split("|")
        rows.append(
            {
                "module": name.strip(),
                "self_ms": round(int(self_us) / 1e3, 1),
                "cumulative_ms": round(int(cumulative_us) / 1e3, 1),
            }
        )
    return rows


def _median_seconds(argv: list[str], runs: int) -> float:
    if runs > 1:
        _run(argv)  # warm the page cache and .pyc files
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        _run(argv)
        times.append(time.perf_counter() - started)
    return median(times)


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout
