"""A runner's coverage question as gate/coverage.py asks it (`coverage_ask`), for tests of
the runners' plans."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from codegen_ci import runners
from codegen_ci.gate import coverage, project_source
from codegen_ci.gate.coverage import install_plugins
from codegen_ci.runners import CoverageAsk, CoveragePlan, _python


def coverage_ask(
    tree: Path, change: list[str], io_dir: Path, env: Mapping[str, str] | None = None
) -> CoverageAsk:
    """The question for a change of `tree`, its plugin folder under `io_dir/tool`."""
    return coverage.coverage_ask(tree, change, io_dir, io_dir / "tool", env or {})


def plan(
    command: str, change: list[str], tree: Path, io_dir: Path, env: Mapping[str, str] | None = None
) -> CoveragePlan | str | None:
    """The registry's answer: the first runner whose command `command` is."""
    return runners.coverage_plan(command, coverage_ask(tree, change, io_dir, env))


def python_command(
    command: str, sources: list[str], io_dir: Path, cwd: Path, env: Mapping[str, str]
) -> str | None:
    """pytest's and unittest's coverage command, the interpreter found as gate/coverage.py
    finds it."""
    return _python.coverage_command(
        command, sources, io_dir, cwd, env, lambda c, d: project_source.command_python(c, env, d)
    )


def python_env(env: Mapping[str, str], tool_dir: Path, sources: list[str]) -> dict[str, str]:
    """Their coverage run's environment, its plugins put in place as gate/coverage.py does."""
    plugin_dir = tool_dir / "coverage_plugin"
    install_plugins(_python.PLUGINS, plugin_dir)
    return _python.coverage_env(env, plugin_dir, sources)
