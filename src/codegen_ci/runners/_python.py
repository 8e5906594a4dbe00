"""What pytest's and unittest's coverage runs share (a module whose name starts with `_` holds
what several runners share; it is no runner): the coverage run of a Python test command.

Three shapes of command are measured, each run once more by `codegen_cov_run`
(gate/codegen_cov_run.py, put in the run's plugin folder with the tool's slipcover) in the
command's interpreter, the change's source files included, the tests run and the report
written in one process (`ONE_PROCESS`):
- `<python> -m pytest ARGS` -> `... -m pytest ARGS` in `<python>` (runners/pytest.py);
- `<python> -m unittest ARGS` -> `... -m codegen_cov_select ARGS` in `<python>`: unittest's
  own program (the coverage run needs no JUnit, the gate's run had it), which leaves out
  tests as below (runners/unittest.py);
- a bare `pytest ARGS` (`py.test`, `.venv/bin/pytest`, `VAR=x pytest`) -> `... <the script>
  ARGS` in the interpreter of the script's shebang (`CoverageAsk.python`, found as the
  pre-flight finds a command's interpreter): the same script, so the same `sys.path[0]` as
  the plain run (not `-m pytest`, which would add the current folder) (runners/pytest.py).
Anything else (a Makefile, `tox`, shell operators, an interpreter option) is not rewritten:
what it would run under coverage is not known.

How the lines are recorded, and what it costs (docs/benchmarks.md, benchmark 13):
- Python 3.12+: coverage.py with `COVERAGE_CORE=sysmon`, which keeps sys.monitoring's events
  to the included files (`coverage run --include=...`, then `coverage xml`).
- CPython 3.10 and 3.11: slipcover (the tool's own, a dependency; its probe is a stable-ABI
  extension, so the copy loads in any 3.10+ CPython of the tool's platform) rewrites the
  bytecode of the included files alone as they are imported; no tracer is on, so the rest of
  the suite keeps the specialising interpreter, and every test runs. coverage.py then writes
  the report from the lines slipcover saw: its statements, exclusions and multi-line
  statements, line for line what its own tracer reports (tests/e2e/gate/test_codegen_cov_run.py).
  coverage.py's own core there would be the C tracer, which takes every line event of every
  file and makes the eval loop give up its specialised instructions while it is on: about 2x
  a loop-heavy suite, whatever `--include` says.
- Where slipcover does not load (an older Python, another platform or ABI than the tool's,
  PyPy, the tool installed without it), coverage.py's C tracer, made cheaper by
  `codegen_cov_select` (gate/codegen_cov_select.py, put beside codegen_cov_run; a pytest
  plugin and a unittest program): it keeps the tests whose file, or a `conftest.py` above it,
  imports a changed module (directly or through the repository's other modules, read with
  `ast`), and all tests when none does (a changed module reached only dynamically). pytest
  does not even collect the others (collecting under the C tracer costs as much as running).
  The tests left out are those that do not import the changed code: they can run it only by
  a dynamic import or a subprocess, which coverage.py does not follow either; a test that
  reaches it through a fixture of a `conftest.py` that imports it is kept. When every test
  imports the changed module, this path still costs about 2x.
Either way the repository's Python needs coverage.py; it need not have slipcover.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from codegen_ci.runners.base import CoverageAsk, CoveragePlan, plain_tokens, with_tool_path

# The interpreter a command starts (`python`, `python3.11`, `.venv/bin/python`).
PYTHON = re.compile(r"(?:\S*/)?python(?:\d+(?:\.\d+)?)?")
SELECT_PLUGIN = "codegen_cov_select"
SELECT_ENV = "CODEGEN_COV_SELECT"  # the changed files, os.pathsep-separated
ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=.*")
PYTEST_SCRIPT = re.compile(r"(?:\S*/)?(?:pytest|py\.test)")
REPORT = "coverage.xml"
RUN_MODULE = "codegen_cov_run"
# The harness files the run loads (gate/coverage.py puts them in the plugin folder): the two
# modules of gate/, and the tool's slipcover where codegen_cov_run looks for it (`vendor/`).
PLUGINS = (f"{SELECT_PLUGIN}.py", f"{RUN_MODULE}.py", "vendor/slipcover")
# The tests under coverage and then the report, in one interpreter (gate/codegen_cov_run.py:
# slipcover on CPython 3.10/3.11, else coverage.py's own command line, `run` then `xml`): a
# second interpreter start and import of coverage.py cost about 0.1 s of CPU, a tenth of a
# small suite's run.
ONE_PROCESS = f"import {RUN_MODULE}; {RUN_MODULE}.main()"

Shape = Literal["pytest", "unittest", "script"]


def shape(command: str) -> Shape | None:
    """Which measured shape `command` has (`python -m pytest`, `python -m unittest`, a bare
    pytest script), None for any other."""
    tokens = plain_tokens(command) or []
    while tokens and ASSIGNMENT.fullmatch(tokens[0]):
        tokens.pop(0)
    if not tokens:
        return None
    if PYTHON.fullmatch(tokens[0]) and len(tokens) >= 3 and tokens[1] == "-m":
        return (
            "pytest" if tokens[2] == "pytest" else "unittest" if tokens[2] == "unittest" else None
        )
    return "script" if PYTEST_SCRIPT.fullmatch(tokens[0]) else None


def coverage_command(
    command: str,
    sources: Sequence[str],
    io_dir: Path,
    cwd: Path,
    env: Mapping[str, str],
    python: Callable[[str, Path], str | None],
) -> str | None:
    """`command` run by codegen_cov_run (slipcover or coverage.py, above), its Cobertura
    report in `io_dir/coverage.xml`; None when it is not one of the shapes above (or a bare
    script's interpreter is not found: `python`, the interpreter a command starts)."""
    tokens = plain_tokens(command)
    if not tokens:
        return None
    assignments: list[str] = []
    while tokens and ASSIGNMENT.fullmatch(tokens[0]):
        assignments.append(tokens.pop(0))
    if not tokens:
        return None
    target: list[str]
    if PYTHON.fullmatch(tokens[0]) and len(tokens) >= 3 and tokens[1] == "-m":
        if tokens[2] not in ("pytest", "unittest"):
            return None
        interpreter, target = tokens[0], ["-m", *tokens[2:]]
        if tokens[2] == "unittest":  # unittest's own program, which selects (see above)
            target = ["-m", SELECT_PLUGIN, *tokens[3:]]
    elif PYTEST_SCRIPT.fullmatch(tokens[0]):
        path = env.get("PATH", os.defpath)
        first = tokens[0]
        script = str(cwd / first) if "/" in first else shutil.which(first, path=path)
        found = python(shlex.join(tokens), cwd)
        if script is None or found is None:
            return None
        interpreter, target = found, [script, *tokens[1:]]
    else:
        return None
    run = [
        "COVERAGE_CORE=sysmon",
        interpreter,
        "-c",
        ONE_PROCESS,
        str(io_dir / ".coverage"),
        str(io_dir / REPORT),
        f"--include={','.join(sources)}",
        *target,
    ]
    # `X='a b'`, not `'X=a b'`: quoted whole, an assignment is a command's name
    kept = [f"{a.split('=', 1)[0]}={shlex.quote(a.split('=', 1)[1])}" for a in assignments]
    return " ".join([*kept, shlex.join(run)])


def coverage_env(
    env: Mapping[str, str], plugin_dir: Path, sources: Sequence[str]
) -> dict[str, str]:
    """The environment of a coverage run: the plugin folder (`codegen_cov_run`, the tool's
    slipcover in `vendor/` and `codegen_cov_select`, which acts only under coverage.py's C
    tracer) on PYTHONPATH; the selection loaded into pytest by PYTEST_ADDOPTS `-p
    codegen_cov_select`, run by unittest commands as `-m codegen_cov_select`."""
    out = with_tool_path(env, plugin_dir)
    out["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} -p {SELECT_PLUGIN}".strip()
    out[SELECT_ENV] = os.pathsep.join(sources)
    return out


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """coverage.py's (or slipcover's) run of a Python test command, its Cobertura report."""
    sources = tuple(p for p in ask.sources if p.endswith(".py"))
    covered = coverage_command(command, sources, ask.io_dir, ask.tree, ask.env, ask.python)
    if covered is None:  # before "no Python source": a Makefile's change may be Go
        return None
    if not sources:
        return "the change has no Python source file to measure"
    return CoveragePlan(
        command=covered,
        env=coverage_env(ask.env, ask.plugin_dir, sources),
        report=REPORT,
        format="cobertura",
        sources=sources,
        plugins=PLUGINS,
        missing="no coverage report: is coverage.py installed for the repository's "
        "Python? (see coverage/logs/coverage.log)",
    )
