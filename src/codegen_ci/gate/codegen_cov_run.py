"""codegen-ci's coverage run, in the repository's interpreter: the tests run once, the changed
files' lines they ran recorded, a Cobertura report written by coverage.py.

    python -c "import codegen_cov_run; codegen_cov_run.main()" DATA REPORT --include=A,B TARGET

TARGET is `-m MODULE ARGS` or `SCRIPT ARGS` (runners/_python.py makes the command). Two
ways to record, one report:
- **slipcover** on CPython 3.10 and 3.11 when it loads: the copy of the tool's own slipcover
  in `vendor/` beside this file (its probe is a stable-ABI extension, `abi3`, so one build
  serves both versions on the tool's platform). slipcover rewrites the bytecode of the
  included files only, as they are imported, to call a probe the first times a line runs;
  nothing else is traced, so the eval loop keeps its specialised instructions. coverage.py's C
  tracer, the only core these Pythons have, takes every line event of every file and costs
  about 2x a loop-heavy suite (docs/benchmarks.md, benchmark 13). The lines slipcover saw are
  handed to coverage.py (`CoverageData.add_lines`), which writes the report as `coverage xml`
  would: its own statements, its exclusions, a multi-line statement counted once, the
  repository's coverage configuration read (a configured `source` measured as `coverage run`
  measures it: `under`).
- **coverage.py** everywhere else (3.12+ with `COVERAGE_CORE=sysmon`, older Pythons, other
  platforms, slipcover not loading): its own command line, `coverage run --data-file=DATA
  --include=... TARGET`, then `coverage xml -o REPORT`, both in this one interpreter.

Either way coverage.py must be installed for the repository's Python; slipcover need not be.
slipcover's run starts by saying so on stderr (`codegen-ci coverage: slipcover ... records the
lines run`, the first line of coverage/logs/coverage.log), as does a slipcover that does not
load.

Standalone on purpose, like codegen_cov_select beside it: it runs in the repository's
interpreter, imports only the standard library (slipcover and coverage.py when it uses them)
and keeps to syntax old Pythons read.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

VENDOR = "vendor"  # beside this file: the tool's slipcover, copied by gate/coverage.py
NOTE = "codegen-ci coverage: "


def slipcover_here() -> Any:
    """The tool's slipcover when this Python can use it (CPython 3.10 or 3.11, its probe
    loading); None otherwise."""
    if sys.implementation.name != "cpython" or not (3, 10) <= sys.version_info[:2] < (3, 12):
        return None
    folder = Path(__file__).resolve().parent / VENDOR
    if not folder.is_dir():
        return None
    vendor = str(folder)
    sys.path.insert(0, vendor)  # ours first: a repository's own slipcover may be another version
    try:
        import slipcover
        from slipcover import probe  # noqa: F401  (the extension: the ABI and platform agree)

        return slipcover
    except Exception as exc:  # an old interpreter, another platform: coverage.py's tracer
        sys.stderr.write(f"{NOTE}slipcover does not load here ({exc}); coverage.py traces\n")
        for name in [m for m in sys.modules if m == "slipcover" or m.startswith("slipcover.")]:
            del sys.modules[name]
        return None
    finally:
        sys.path.remove(vendor)


def run_target(target: list[str]) -> int:
    """`-m MODULE ARGS` or `SCRIPT ARGS` as `python` would run it (and as `coverage run` does:
    sys.path[0] the current folder for a module, the script's folder for a script); its exit
    status."""
    try:
        if target[0] == "-m":
            sys.argv = [target[1], *target[2:]]
            sys.path[0] = str(Path.cwd())
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(target)
            sys.path[0] = str(Path(target[0]).resolve().parent)
            runpy.run_path(target[0], run_name="__main__")
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            return done.code or 0
        sys.stderr.write(f"{done.code}\n")
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    return 0


def with_slipcover(
    slipcover: Any, data: str, report: str, include: list[str], target: list[str]
) -> int:
    """The tests under slipcover (the included files instrumented at import, pytest's rewritten
    modules too), then coverage.py's report of the lines it saw. coverage.py is imported first,
    as `coverage run` has it before the tests: they may change sys.path."""
    from coverage import Coverage

    files = [str(Path(f).resolve()) for f in include]
    sci = slipcover.Slipcover(exclude_lines=[])  # exclusions are coverage.py's, in its report
    matcher = slipcover.FileMatcher(sources=files)  # a file is "relative to" itself: only these
    slipcover.wrap_pytest(sci, matcher)
    slipcover.wrap_spec_from_file_location(sci, matcher)
    with slipcover.ImportManager(sci, matcher):
        status = run_target(target)
    seen = sci.get_coverage()["files"]
    lines = {os.path.realpath(f): sorted(found["executed_lines"]) for f, found in seen.items()}
    cov = Coverage(data_file=data, include=include)
    source = cov.get_option("run:source")
    named = source if isinstance(source, list) else []
    roots = [Path(r).resolve() for r in named if Path(r).is_dir()]
    if roots:  # as `coverage run` does with a configured `source` (`--include` is then ignored)
        lines = under(lines, roots, [os.path.realpath(f) for f in files])
    cov.get_data().add_lines(lines)
    cov.xml_report(outfile=report)
    return status


def under(
    lines: dict[str, list[int]], roots: list[Path], included: list[str]
) -> dict[str, list[int]]:
    """What `coverage run` measures when the repository's configuration names `source`
    folders: only files under them, and those that never ran reported too, with no line run."""
    inside = {
        f: found for f, found in lines.items() if any(Path(f).is_relative_to(r) for r in roots)
    }
    for f in included:
        if any(Path(f).is_relative_to(r) for r in roots) and Path(f).is_file():
            inside.setdefault(f, [])
    return inside


def with_coverage_py(data: str, report: str, rest: list[str]) -> int:
    """coverage.py's own command line, twice (`run`, then `xml`), in this interpreter."""
    from coverage.cmdline import main as coverage_main

    status = coverage_main(["run", "--data-file=" + data, *rest])
    coverage_main(["xml", "-q", "--data-file=" + data, "-o", report])
    return status or 0


def main() -> None:
    data, report, include_arg, *target = sys.argv[1:]
    include = [f for f in include_arg.split("=", 1)[1].split(",") if f]
    slipcover = slipcover_here()
    if slipcover is None:
        sys.exit(with_coverage_py(data, report, [include_arg, *target]))
    sys.stderr.write(f"{NOTE}slipcover {slipcover.__version__} records the lines run\n")
    sys.exit(with_slipcover(slipcover, data, report, include, target))
