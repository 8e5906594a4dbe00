"""Judging fail to pass from two JUnit results: the passing round's and the base run's (the
change's tests applied)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.gate.proof import judge
from codegen_ci.report import ProofStatus
from codegen_ci.runners.go import BUILD_FAILED
from codegen_ci.security.untrusted import Untrusted


def case(classname: str, name: str, outcome: str = "passed", file: str | None = None) -> JUnitCase:
    test_id = f"{classname}::{name}" if classname else name
    return JUnitCase(
        Untrusted(test_id),
        name,
        classname,
        file,
        3 if file else None,
        outcome,
        Untrusted(""),
        Untrusted(""),
        None,
        False,
    )  # type: ignore[arg-type]


def result(*cases: JUnitCase) -> JUnitResult:
    return JUnitResult(list(cases), [], ["junit.xml"])


AFTER = result(
    case("tests.test_a", "test_old"),
    case("tests.test_new", "test_fix"),
    case("tests.test_new", "test_idle"),
)


def test_a_test_failing_on_the_base_is_proof_one_passing_there_is_not() -> None:
    base = result(
        case("tests.test_a", "test_old"),
        case("tests.test_new", "test_fix", "failure", "tests/test_new.py"),
        case("tests.test_new", "test_idle"),
    )
    proof = judge(AFTER, base, ["tests/test_new.py"])
    assert proof.status == ProofStatus.PROVEN
    assert [(t.key, t.file, t.on_base) for t in proof.fail_to_pass] == [
        ("tests.test_new::test_fix", "tests/test_new.py", "failure")
    ]
    assert proof.pass_to_pass == 2 and proof.not_proof == [Untrusted("tests.test_new::test_idle")]
    # a flaky test is never proof
    flaky = judge(
        AFTER, base, ["tests/test_new.py"], exclude=frozenset({"tests.test_new::test_fix"})
    )
    assert flaky.status == ProofStatus.UNPROVEN and "1 of them pass there" in flaky.reason
    # the reason is the tool's words: the ids are data, in `not_proof` (and `fail_to_pass`)
    assert flaky.not_proof == [Untrusted("tests.test_new::test_idle")]
    assert "test_idle" not in flaky.reason and "test_fix" not in proof.reason


def test_a_test_whose_module_could_not_load_on_the_base_counts_only_if_it_is_the_changes() -> None:
    base = result(case("", "tests.test_new", "error"), case("tests.test_a", "test_old"))
    proof = judge(AFTER, base, ["tests/test_new.py"])
    assert {(t.key, t.on_base) for t in proof.fail_to_pass} == {
        ("tests.test_new::test_fix", "not run"),
        ("tests.test_new::test_idle", "not run"),
    }
    assert judge(AFTER, base, []).status == ProofStatus.UNPROVEN  # not the change's tests


def test_a_go_package_that_did_not_build_on_the_base_proves_its_new_tests() -> None:
    after = result(case("example.com/m", "TestOld"), case("example.com/m", "TestHas"))
    base = result(case("example.com/m", BUILD_FAILED, "error", "has_test.go"))
    proof = judge(after, base, ["has_test.go"], go_tests=frozenset({"TestHas"}))
    assert [t.key for t in proof.fail_to_pass] == ["example.com/m::TestHas"]


def test_a_vitest_case_belongs_to_the_file_its_classname_names() -> None:
    """vitest's JUnit names a case's file only as its classname (no `file` attribute)."""
    after = result(case("src/calc.test.js", "keeps lo"), case("src/above.test.js", "idle"))
    base = result(case("src/calc.test.js", "keeps lo"), case("src/above.test.js", "idle"))
    proof = judge(after, base, ["src/above.test.js"])
    assert proof.status == ProofStatus.UNPROVEN
    assert proof.not_proof == [Untrusted("src/above.test.js::idle")] and proof.pass_to_pass == 2


COMMON_TEST_GO = """package ordinals

import "testing"

func check(t *testing.T, got, want string) {
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
"""
NEGATIVE_TEST_GO = """package ordinals

import "testing"

func TestOrdinalsNegative(t *testing.T) {
	check(t, Ordinal(-1), "-1st")
	if Ordinal(-2) != "-2nd" {
		t.Fatal("-2")
	}
}
"""


def go_module(root: Path) -> Path:
    (root / "ord").mkdir(parents=True)
    (root / "go.mod").write_text("module example.com/demo\n\ngo 1.19\n")
    (root / "ord" / "common_test.go").write_text(COMMON_TEST_GO)
    (root / "ord" / "ordinals_negative_test.go").write_text(NEGATIVE_TEST_GO)
    return root


def go_proof(root: Path, file: str, line: int) -> tuple[str | None, int | None]:
    after = result(case("example.com/demo/ord", "TestOrdinalsNegative"))
    failing = case("example.com/demo/ord", "TestOrdinalsNegative", "failure", file)
    base = result(replace(failing, line=line))
    proof = judge(after, base, ["ord/ordinals_negative_test.go"], root=root)
    assert proof.status == ProofStatus.PROVEN
    return proof.fail_to_pass[0].file, proof.fail_to_pass[0].line


def test_a_go_proving_test_is_where_its_function_is_not_where_a_helper_failed(
    tmp_path: Path,
) -> None:
    root = go_module(tmp_path)
    # the failure's line in a helper's file: the test's own function instead
    assert go_proof(root, "ord/common_test.go", 7) == ("ord/ordinals_negative_test.go", 5)
    # a failure inside the test's own function keeps its line
    assert go_proof(root, "ord/ordinals_negative_test.go", 8) == (
        "ord/ordinals_negative_test.go",
        8,
    )
