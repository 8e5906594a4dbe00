"""The recipe for a new test runner, proved: one new module, written here into a temporary
folder and registered in `RUNNERS` (the one line a new runner adds to runners/__init__.py),
is all the gate, the JUnit reader, the coverage run and `codegen-ci init` need. Nothing else
of codegen_ci is touched: each answer below comes from the new module through the registry.

"quill" is an invented runner: `quill run` writes JUnit with `--junit FILE` (its cases named
`file > test` within classname `file`) and LCov with `--lcov FILE`; without `--junit` it
prints `ok NAME` / `not ok NAME` lines and a `quill: N tests` summary, read as its cases; a
source that does not parse is only in its output (`QUILL SYNTAX file:line: why`), never in
its JUnit, and becomes an error case (as Go's packages that do not compile do); `quill.toml`
marks a repository that uses it, where init writes `quill run` with its JUnit and leaves
`quill fmt --check` out unless CI runs it (as cargo's clippy), and its workflow sets quill up
(`quill-lang/setup-quill`, as Go's `actions/setup-go`). Its JUnit says only "quill failed" and
names files relative to the `root` its quill.toml sets: its `refine` reads the failure's words
and place from the case's text and that root (as Go's are read against go.mod), and leaves out
the `[retry]` records it writes beside a failure (as Go's parents of failing subtests); a
source that did not parse stands for its file's tests (`whole_unit`: they could not run, as a
Go package that did not build); a test is defined at its `test "name" {` block
(`defined_at`)."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import FunctionType, ModuleType

import pytest
import yaml

from codegen_ci import runners
from codegen_ci.commands.init import render_workflow, workflow_template
from codegen_ci.commands.init_detect import detect
from codegen_ci.commands.init_env import install_hints
from codegen_ci.gate.coverage import coverage_ask
from codegen_ci.gate.junit.capture import run_test_command
from codegen_ci.gate.junit.parse import JUnitResult, parse_file
from codegen_ci.gate.proof import judge
from codegen_ci.runners import RUNNERS, CoveragePlan
from codegen_ci.runners import TestRunner as RunnerProtocol  # not a test class
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.spec.model import Validation

QUILL = '''\
"""quill: an invented runner, for the recipe's test."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path

from codegen_ci.runners import base
from codegen_ci.runners.base import (
    CoverageAsk,
    CoveragePlan,
    EnvironmentAdvice,
    FromOutput,
    InitAsk,
    InitJUnit,
    InitLeftOut,
    InitTests,
    Location,
    OutputCase,
    Ran,
    ReportedCase,
    Signature,
    Tree,
    WorkflowAsk,
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


def marked_tests(ask: InitAsk) -> InitTests | None:
    """quill.toml: `quill run` with its JUnit; its formatter only when CI runs it."""
    tests = base.init_written(INIT)
    if tests is None:
        return None
    fmt = InitLeftOut("quill fmt --check", "no CI workflow runs it", re.compile(r"quill fmt"))
    note = "quill writes JUnit with --junit" if ask.read("quill.toml") is not None else ""
    return InitTests(
        tests.test, junit=tests.junit, notes=(note,), tools=tests.tools,
        ecosystem=tests.ecosystem, left_out=(fmt,),
    )


def ci_tests(line: str, ask: InitAsk) -> InitTests | None:
    found = CI_TEST.match(line)
    if found is None or INIT is None:
        return None
    options = INIT.options.format(report=INIT.report)
    return InitTests((f"quill run {options} {found[1]}".strip(),), junit=(INIT.report,))


def workflow_steps(ask: WorkflowAsk) -> tuple[str, ...]:
    if "quill" not in ask.ecosystems:
        return ()
    return ("      - uses: quill-lang/setup-quill@v1\\n",)


JUNIT_HINT: str | None = base.junit_hint(NAME, "run `quill run --junit junit.xml`")
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--junit\\b")
JUNIT_FILE: re.Pattern[str] | None = base.report_after("--junit[= ]")
junit_command = base.no_junit_command
junit_env = base.no_junit_env
junit_arg = base.no_junit_arg
every_test = base.as_written
configured_reports = base.no_configured_reports
NESTED_CASES: base.NestedCases | None = None

TAP = re.compile(r"^(ok|not ok) (\\S.*)$", re.M)
SUMMARY = re.compile(r"^quill: \\d+ tests?$", re.M)
SYNTAX = re.compile(r"^QUILL SYNTAX ([^\\s:]+):(\\d+): (.*)$", re.M)


def from_output(ran: Ran) -> FromOutput | None:
    """Without JUnit, its `ok`/`not ok` lines are the result; with JUnit, a source that did
    not parse (only in its output) is an error case."""
    text = ran.output(100_000)
    if ran.cases is None:
        if not SUMMARY.search(text):
            return None
        cases = tuple(
            OutputCase("quill", name, "passed" if state == "ok" else "failure", details=text)
            for state, name in TAP.findall(text)
        )
        return FromOutput(cases, instead=True)
    syntax = tuple(
        OutputCase(file, "[syntax]", "error", why, m[0], file, int(line))
        for m in SYNTAX.finditer(text)
        for file, line, why in [m.groups()]
    )
    return FromOutput(syntax) if syntax else None


WHERE = re.compile(r"^at ([^\\s:]+):(\\d+): (.*)$", re.M)


def _root(tree: Tree | None) -> str:
    config = tree.read("quill.toml") if tree is not None else None
    found = re.search(r'^root = "([^"]+)"', config or "", re.M)
    return found[1] + "/" if found else ""


def refine(
    cases: tuple[ReportedCase, ...], tree: Tree | None
) -> tuple[ReportedCase | None, ...] | None:
    """Its "quill failed": the words and place of its `at file:line: why` line, the file
    under quill.toml's root; its `[retry]` records left out."""
    if not any(c.message == "quill failed" for c in cases):
        return None
    root = _root(tree)
    out: list[ReportedCase | None] = []
    for case in cases:
        where = WHERE.search(case.details)
        if case.name.endswith(" [retry]"):
            out.append(None)
        elif case.message == "quill failed" and where:
            file, line, why = where.groups()
            out.append(replace(case, message=why, file=root + file, line=int(line)))
        else:
            out.append(case)
    return tuple(out)


def whole_unit(classname: str, name: str) -> str | None:
    """A source that did not parse: none of its file's tests ran."""
    return classname if name == "[syntax]" else None


def defined_at(classname: str, name: str, tree: Tree) -> base.DefinedAt | None:
    """`test "adds" {` to its `}` in the file (`classname`, under quill.toml's root)."""
    file = _root(tree) + classname
    text = tree.read(file) or ""
    lines = text.splitlines()
    title = name.removeprefix(classname + " > ")
    for first, line in enumerate(lines, 1):
        if line.startswith(f'test "{title}" {{'):
            last = next((n for n in range(first, len(lines) + 1) if lines[n - 1] == "}"), first)
            return base.DefinedAt(file, first, last)
    return None


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
doctest_examples = base.no_doctest_examples

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
    assert "quill.toml (quill)" in found.found
    assert "quill writes JUnit with --junit" in found.notes
    assert [(o.what, o.why) for o in found.left_out] == [
        ("quill fmt --check", "no CI workflow runs it")
    ]
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    steps = [{"uses": "actions/checkout@v4"}, {"run": "quill run --shuffle"}]
    ci = {"on": "push", "jobs": {"test": {"runs-on": "ubuntu-latest", "steps": steps}}}
    (workflows / "ci.yml").write_text(yaml.safe_dump(ci))
    found = detect(tmp_path)
    assert found.test == ["quill run --junit reports/junit-quill.xml --shuffle"]
    assert install_hints()["quill"] == "install quill (https://quill.invalid)"


def test_the_junit_reader_has_it_make_its_cases_precise(quill: ModuleType, tmp_path: Path) -> None:
    """Its "quill failed" becomes the failure's words and place (under quill.toml's root, read
    through the reader the gate hands it); its `[retry]` record is left out."""
    (tmp_path / "quill.toml").write_text('root = "lib"\n')
    failed = '<failure message="quill failed">at cart.ql:7: want 2</failure>'
    report = tmp_path / "junit-quill.xml"
    report.write_text(
        "<testsuite>"
        f'<testcase classname="cart.ql" name="cart.ql &gt; drops">{failed}</testcase>'
        f'<testcase classname="cart.ql" name="cart.ql &gt; drops [retry]">{failed}</testcase>'
        '<testcase classname="cart.ql" name="cart.ql &gt; adds"/></testsuite>'
    )
    cases = parse_file(report, root=tmp_path).cases
    assert [(c.key, c.outcome, c.file, c.line) for c in cases] == [
        ("cart.ql > drops", "failure", "lib/cart.ql", 7),
        ("cart.ql > adds", "passed", None, None),
    ]
    assert cases[0].message == Untrusted("want 2")


def test_proof_asks_it_what_a_failed_case_stands_for_and_where_a_test_is(
    quill: ModuleType, tmp_path: Path
) -> None:
    """A source that did not parse on the base stands for its file: the change's new test in it
    is proof (it could not run there), placed at its `test` block."""
    (tmp_path / "quill.toml").write_text('root = "lib"\n')
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "cart.ql").write_text(
        'use cart\n\ntest "adds" {\n  expect add(1, 1) == 2\n}\n'
    )
    report = tmp_path / "after.xml"
    report.write_text(
        '<testsuite><testcase classname="cart.ql" name="cart.ql &gt; adds" file="lib/cart.ql"/>'
        "</testsuite>"
    )
    after = parse_file(report, root=tmp_path)
    written = '<testsuite><testcase classname="other.ql" name="other.ql &gt; idle"/></testsuite>'
    command = f"printf '{written}' > base.xml; printf 'QUILL SYNTAX cart.ql:4: no add\\n'; exit 1"
    (tmp_path / "base.xml").write_text("")
    base = _result(command, tmp_path, ["base.xml"])
    assert [c.key for c in base.cases] == ["other.ql > idle", "cart.ql::[syntax]"]
    proof = judge(after, base, ["lib/cart.ql"], root=tmp_path)
    assert [(t.key, t.file, t.line, t.on_base) for t in proof.fail_to_pass] == [
        ("cart.ql > adds", "lib/cart.ql", 3, "not run")
    ]


def test_inits_workflow_sets_it_up_with_its_step(quill: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "quill.toml").write_text("")
    workflow = render_workflow(workflow_template("issue-labeled.yml"), detect(tmp_path))
    assert "      - uses: quill-lang/setup-quill@v1\n" in workflow
    assert "uses: codegen-ci/codegen-ci/host@v0" in workflow  # the runner-host variant


def _run(command: str, tmp_path: Path, junit: list[str]) -> list[tuple[str, str, str | None]]:
    """The cases the gate reads from `command` (a shell line standing in for quill)."""
    result = _result(command, tmp_path, junit)
    return [(c.key, c.outcome, c.file and f"{c.file}:{c.line}") for c in result.cases]


def _result(command: str, tmp_path: Path, junit: list[str]) -> JUnitResult:
    """What the gate reads from `command`'s JUnit and output."""
    drop = tmp_path / "drops" / "one"
    drop.mkdir(parents=True)
    _, result = run_test_command(
        command,
        tmp_path,
        {"PATH": "/usr/bin:/bin"},
        Validation(test=[command], junit=junit),
        tmp_path / "out" / "junit",
        "test-1",
        tmp_path / "out" / "test-1.log",
        drop_dir=drop,
    )
    return result


def test_the_gate_reads_its_cases_from_its_output_where_it_wrote_no_junit(
    quill: ModuleType, tmp_path: Path
) -> None:
    printed = (
        "ok cart.ql > adds\\nnot ok cart.ql > drops\\n  lib/cart.ql:7: want 2\\nquill: 2 tests\\n"
    )
    assert _run(f"printf '{printed}'; exit 1", tmp_path, []) == [
        ("quill::cart.ql > adds", "passed", None),
        ("quill::cart.ql > drops", "failure", "lib/cart.ql:7"),
    ]


def test_the_gate_adds_what_its_junit_leaves_out(quill: ModuleType, tmp_path: Path) -> None:
    report = '<testsuite><testcase classname="cart.ql" name="cart.ql &gt; adds"/></testsuite>'
    (tmp_path / "report.xml").write_text("")
    command = (
        f"printf '{report}' > report.xml; "
        "printf 'QUILL SYNTAX lib/bad.ql:4: unexpected token\\n'; exit 1"
    )
    assert _run(command, tmp_path, ["report.xml"]) == [
        ("cart.ql > adds", "passed", None),
        ("lib/bad.ql::[syntax]", "error", "lib/bad.ql:4"),
    ]
