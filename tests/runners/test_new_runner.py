"""The recipe for a new test runner, proved: one new module, written here into a temporary
folder and registered in `RUNNERS` (the one line a new runner adds to runners/__init__.py),
is all the gate, the JUnit reader, the coverage run and `codegen-ci init` need. Nothing else
of codegen_ci is touched: each answer below comes from the new module through the registry.

"quill" is an invented runner: `quill run` writes JUnit with `--junit FILE` (its cases named
`file > test` within classname `file`) and LCov with `--lcov FILE`; `quill.toml` marks a
repository that uses it."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import FunctionType, ModuleType

import pytest
import yaml

from codegen_ci import runners
from codegen_ci.commands.init_detect import detect
from codegen_ci.commands.init_env import install_hints
from codegen_ci.gate.coverage import coverage_ask
from codegen_ci.gate.junit.parse import parse_file
from codegen_ci.runners import RUNNERS, CoveragePlan
from codegen_ci.runners import TestRunner as RunnerProtocol  # not a test class

QUILL = '''\
"""quill: an invented runner, for the recipe's test."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from codegen_ci.runners import base
from codegen_ci.runners.base import (
    CoverageAsk,
    CoveragePlan,
    EnvironmentAdvice,
    InitAsk,
    InitJUnit,
    InitTests,
    Location,
    Signature,
)

NAME = "quill"
COMMAND = re.compile(r"\\bquill\\b")

MARKERS: tuple[str, ...] = ("quill.toml",)
SCRIPT_WORD: str | None = None
INIT: InitJUnit | None = InitJUnit(
    report="reports/junit-quill.xml",
    options="--junit {report}",
    command="quill run {options}",
    tools=("quill",),
    ecosystem="quill",
)
CI_TEST: re.Pattern[str] | None = re.compile(r"^quill\\s+run\\b\\s*(.*)$")
INSTALLS: tuple[tuple[str, str], ...] = (("quill", "install quill (https://quill.invalid)"),)


def ci_tests(line: str, ask: InitAsk) -> InitTests | None:
    found = CI_TEST.match(line)
    if found is None or INIT is None:
        return None
    options = INIT.options.format(report=INIT.report)
    return InitTests((f"quill run {options} {found[1]}".strip(),), junit=(INIT.report,))


JUNIT_HINT: str | None = base.junit_hint(NAME, "run `quill run --junit junit.xml`")
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--junit\\b")
JUNIT_FILE: re.Pattern[str] | None = base.report_after("--junit[= ]")
junit_command = base.no_junit_command
junit_env = base.no_junit_env
junit_arg = base.no_junit_arg
every_test = base.as_written
configured_reports = base.no_configured_reports
NESTED_CASES: base.NestedCases | None = None


def case_id(name: str, classname: str) -> str | None:
    """Its reporter names a case `file > test` within classname `file`: the name alone."""
    return name if classname and name.startswith(classname + " > ") else None


SIGNATURES: tuple[Signature, ...] = (
    Signature(re.compile(r"^quill: no tests found", re.M), "no tests"),
)
NO_TESTS_EXIT: int | None = None
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
BACKTRACE: re.Pattern[str] | None = None
FAILED_TEST: str | None = r"QUILL FAIL "
FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""
LOCATIONS: tuple[Location, ...] = (base.PATH_LINE,)
LIBRARY_PATHS: tuple[str, ...] = ()
failed_at = base.no_failed_at

CONFIG_GLOBS: tuple[str, ...] = ("quill.toml",)
ARTIFACT_GLOBS: tuple[str, ...] = (".quill-cache/**",)
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()
TMPDIR_CACHES: tuple[str, ...] = ()
user_caches = base.no_user_caches
is_checkout_cache = base.no_checkout_cache

RAN_COUNT: re.Pattern[str] | None = None
named_tests = base.no_named_tests
totals = base.no_totals

PLUGINS: tuple[str, ...] = ()


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    if not CI_TEST.match(command):
        return None
    sources = tuple(p for p in ask.sources if p.endswith(".ql"))
    if not sources:
        return "the change has no quill source file to measure"
    return CoveragePlan(
        command=f"{command} --lcov {shlex.quote(str(ask.io_dir / 'quill.lcov'))}",
        report="quill.lcov",
        format="lcov",
        sources=sources,
        missing="no coverage report: quill wrote no LCov",
    )


COVERAGE = "quill's own `--lcov`"
'''


@pytest.fixture
def quill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The new runner's one file, imported, and its one line in `RUNNERS`."""
    path = tmp_path / "runner" / "quill.py"
    path.parent.mkdir()
    path.write_text(QUILL)
    spec = importlib.util.spec_from_file_location("quill_runner", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "quill_runner", module)
    spec.loader.exec_module(module)
    monkeypatch.setitem(RUNNERS, "quill", module)  # its line, last in the registry
    return module


def test_the_new_file_provides_the_whole_protocol(quill: ModuleType) -> None:
    functions = {n for n, v in vars(RunnerProtocol).items() if isinstance(v, FunctionType)}
    members = (set(RunnerProtocol.__annotations__) | functions) - {
        n for n in functions if n.startswith("_")
    }
    assert not [name for name in members if not hasattr(quill, name)]
    for name in functions & members:
        wanted = list(inspect.signature(vars(RunnerProtocol)[name]).parameters)[1:]
        assert list(inspect.signature(getattr(quill, name)).parameters) == wanted, name


def test_the_gate_asks_it_about_commands_and_their_output(quill: ModuleType) -> None:
    assert runners.junit_hint("quill run") == quill.JUNIT_HINT
    assert runners.asks_for_junit("quill run --junit out.xml")
    assert runners.junit_file("quill run --junit out/r.xml") == "out/r.xml"
    (no_tests,) = [
        s for s in runners.start_failures("no tests") if s.pattern.pattern[1:6] == "quill"
    ]
    assert no_tests.found("quill: no tests found\n")
    assert runners.failed_test().search("QUILL FAIL test_one\n")


def test_the_junit_reader_names_its_cases_as_it_says(quill: ModuleType, tmp_path: Path) -> None:
    report = tmp_path / "junit-quill.xml"
    report.write_text(
        '<testsuite name="quill"><testcase classname="cart.ql" name="cart.ql &gt; adds"/>'
        '<testcase classname="pkg.mod" name="test_a"/></testsuite>'
    )
    assert [c.key for c in parse_file(report).cases] == ["cart.ql > adds", "pkg.mod::test_a"]


def test_its_coverage_is_planned_by_its_file(quill: ModuleType, tmp_path: Path) -> None:
    ask = coverage_ask(tmp_path, ["lib/cart.ql", "README.md"], tmp_path / "io", tmp_path, {})
    plan = runners.coverage_plan("quill run", ask)
    assert isinstance(plan, CoveragePlan)
    assert (plan.format, plan.sources, plan.report) == ("lcov", ("lib/cart.ql",), "quill.lcov")
    assert plan.command == f"quill run --lcov {tmp_path}/io/quill.lcov"
    assert "quill" in runners.measured()


def test_init_finds_it_by_its_root_file_and_its_ci_line(quill: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "quill.toml").write_text("")
    found = detect(tmp_path)
    assert found.test == ["quill run --junit reports/junit-quill.xml"]
    assert "quill" in found.ecosystems and found.junit == ["reports/junit-quill.xml"]
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    steps = [{"uses": "actions/checkout@v4"}, {"run": "quill run --shuffle"}]
    ci = {"on": "push", "jobs": {"test": {"runs-on": "ubuntu-latest", "steps": steps}}}
    (workflows / "ci.yml").write_text(yaml.safe_dump(ci))
    found = detect(tmp_path)
    assert found.test == ["quill run --junit reports/junit-quill.xml --shuffle"]
    assert install_hints()["quill"] == "install quill (https://quill.invalid)"
