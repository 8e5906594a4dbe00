"""A doctest whose failing example the change deletes is a weakened test, not a fix: real
pytest with `--doctest-modules` (as boltons' CI runs it), through the CLI and the scripted
model. pytest makes one test of the docstring, so with the example gone the test is still
listed and passes, in a source file no test-file check reads; the kept-tests check counts the
examples (gate/kept_tests.py, runners/pytest.py's `doctest_examples`).

One run for both rounds: round 1 deletes the failing example (refused, the model told which
docstring), round 2 puts it back and fixes the code (success). The counting's cases (a `+SKIP`,
an example added, a docstring reflowed, a nested method, text files) are unit tests:
tests/runners/test_pytest_doctests.py."""

from __future__ import annotations

import pytest
from gate_repos import reflections, run_cli
from sample_repo import FIX, TEST_VERSION_PY, VERSION_FILE, VERSION_PY, SampleRepo

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = pytest.mark.e2e

# bump_minor documented with two examples: the first passes on the base commit, the second is
# the bug (the patch number is kept), the suite's only failing test.
SIGNATURE = '    def bump_minor(self) -> "Version":\n'
PASSING_EXAMPLE = "        >>> Version(3, 4, 0).bump_minor().minor\n        5\n"
FAILING_EXAMPLE = "        >>> str(Version(3, 4, 5).bump_minor())\n        '3.5.0'\n"
DOCSTRING = (
    '        """The next minor version, its patch number reset.\n\n'
    + PASSING_EXAMPLE
    + FAILING_EXAMPLE
    + '        """\n'
)
DOCUMENTED = VERSION_PY.replace(SIGNATURE, SIGNATURE + DOCSTRING)
# The test file's own tests pass on the base: the doctest is the one that fails.
PASSING_SUITE = TEST_VERSION_PY.split("\n\ndef test_bump_minor_resets_patch")[0] + "\n"
# pytest's JUnit id of the docstring's test (`src/semver/version.py`, imported as
# `semver.version`): what the reflection names
DOCTEST_ID = "src.semver.version::semver.version.Version.bump_minor"


def test_a_deleted_doctest_example_is_refused_then_restored_and_fixed(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    assert SIGNATURE in VERSION_PY
    sample_repo.commit(
        {VERSION_FILE: DOCUMENTED, "tests/test_version.py": PASSING_SUITE}, "bump_minor doctest"
    )
    model_env.add(
        Reply(
            tool_calls=[call("edit_file", path=VERSION_FILE, old_text=FAILING_EXAMPLE, new_text="")]
        ),
        Reply("Removed the example that did not hold."),
        Reply(
            tool_calls=[
                call(
                    "edit_file",
                    path=VERSION_FILE,
                    old_text=PASSING_EXAMPLE,
                    new_text=PASSING_EXAMPLE + FAILING_EXAMPLE,
                )
            ]
        ),
        Reply(tool_calls=[FIX]),
        Reply("Restored the example and fixed bump_minor."),
    )
    spec = sample_repo.write_spec(
        validation={"test": ["python -m pytest -q -p no:cacheprovider --doctest-modules src tests"]}
    )

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert (report["status"], report["iterations"]) == ("success", 2)
    first, second = report["rounds"]
    # round 1: the tests passed (the doctest still listed, one example fewer), and were refused
    assert first["passed"] is False
    assert [(f["id"], f["kind"]) for f in first["failures"]] == [(DOCTEST_ID, "removed")]
    assert first["failures"][0]["message"] == "existing test weakened by the change"
    assert first["removed_tests"] == [{"id": DOCTEST_ID, "how": "weakened", "count": 1}]
    assert "refused: the change weakened 1 existing doctest" in output
    [told] = reflections(model_env)
    assert "Existing tests removed, skipped or weakened by the change (1)" in told
    assert f"{DOCTEST_ID}: 1 doctest example(s) fewer run than on the base commit" in told
    assert "doctest example, its `+SKIP`" in told
    # the rule came first, in the task's prompt
    task = next(m for m in model_env.tool_requests[0]["messages"] if m["role"] == "user")
    assert "no removed assertions or doctest examples, no doctest +SKIP" in task["content"]
    # round 2: the example back, the code fixed; every doctest example runs and passes
    assert second["passed"] is True and second["failures"] == []
    assert report["removed_tests"] == []
    fixed = sample_repo.git("show", f"{report['branch']}:{VERSION_FILE}")
    assert FAILING_EXAMPLE in fixed and "self.minor + 1, 0)" in fixed
