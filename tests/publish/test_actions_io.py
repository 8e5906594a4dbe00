from __future__ import annotations

import io
import re
import uuid
from pathlib import Path

import pytest
from markdown_view import outside_code

from codegen_ci.publish.actions import ActionsIO
from codegen_ci.publish.report_text import summary_markdown
from codegen_ci.report import (
    CommandResult,
    Failure,
    Refusal,
    Report,
    Round,
    TestTotals,
    Usage,
)
from codegen_ci.security.redact import REDACTOR


def parse_outputs(text: str) -> dict[str, str]:
    """Read a GITHUB_OUTPUT file the way the runner does (`name<<DELIM` ... `DELIM`)."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i]:
            i += 1
            continue
        name, delimiter = lines[i].split("<<", 1)
        end = lines.index(delimiter, i + 1)
        outputs[name] = "\n".join(lines[i + 1 : end])
        i = end + 1
    return outputs


def make_io(tmp_path: Path, **kwargs: object) -> tuple[ActionsIO, io.StringIO]:
    stream = io.StringIO()
    actions = ActionsIO(
        output_file=tmp_path / "output",
        summary_file=tmp_path / "summary.md",
        stream=stream,
        **kwargs,  # type: ignore[arg-type]
    )
    return actions, stream


def test_outputs_round_trip(tmp_path: Path) -> None:
    actions, _ = make_io(tmp_path)
    tricky = "line one\nEOF\nghadelimiter_1234\nname<<EOF\n\nlast"
    actions.set_output("status", "success")
    actions.set_output("report-path", str(tmp_path / "out"))
    actions.set_output("summary", tricky)
    actions.set_output("empty", "")
    text = (tmp_path / "output").read_text(encoding="utf-8")
    assert parse_outputs(text) == {
        "status": "success",
        "report-path": str(tmp_path / "out"),
        "summary": tricky,
        "empty": "",
    }
    delimiters = re.findall(r"<<(ghadelimiter_[0-9a-f-]{36})\n", text)
    assert len(set(delimiters)) == 4


def test_outputs_are_a_no_op_outside_actions(tmp_path: Path) -> None:
    actions = ActionsIO(output_file=None, summary_file=None, stream=io.StringIO())
    actions.set_output("status", "success")
    actions.append_summary("# hi")
    assert list(tmp_path.iterdir()) == []


def test_bad_output_name(tmp_path: Path) -> None:
    actions, _ = make_io(tmp_path)
    with pytest.raises(ValueError, match="output name"):
        actions.set_output("a\nb", "x")


def test_everything_written_is_redacted(tmp_path: Path) -> None:
    secret = f"sk-secret-{uuid.uuid4().hex}"  # registered like the action's own secrets
    REDACTOR.add_secret(secret)
    actions, stream = make_io(tmp_path)
    actions.set_output("x", f"key {secret}")
    actions.append_summary(f"token {secret}")
    actions.warning(f"saw {secret}", title=f"{secret} here")
    actions.untrusted_block(f"log with {secret}")
    actions.log(f"plain {secret}")
    with actions.group(f"group {secret}"):
        pass
    written = stream.getvalue() + "".join(p.read_text() for p in tmp_path.iterdir())
    assert "sk-secret" not in written
    assert written.count("***") == 7


def test_summary_appends(tmp_path: Path) -> None:
    actions, _ = make_io(tmp_path)
    actions.append_summary("# one")
    actions.append_summary("two\n")
    assert (tmp_path / "summary.md").read_text(encoding="utf-8") == "# one\ntwo\n"


def test_annotations_escape_data_and_properties(tmp_path: Path) -> None:
    actions, stream = make_io(tmp_path)
    actions.error("100% broken\r\nsecond line", file="src/a,b:c.py", line=12, title="x: y, z")
    actions.notice("done")
    actions.warning("careful", title="T")
    assert stream.getvalue().splitlines() == [
        "::error file=src/a%2Cb%3Ac.py,line=12,title=x%3A y%2C z::100%25 broken%0D%0Asecond line",
        "::notice::done",
        "::warning title=T::careful",
    ]


def test_group(tmp_path: Path) -> None:
    actions, stream = make_io(tmp_path)
    with actions.group("Round 1: tests"):
        stream.write("inside\n")
    assert stream.getvalue() == "::group::Round 1: tests\ninside\n::endgroup::\n"


def test_untrusted_block_cannot_issue_commands(tmp_path: Path) -> None:
    actions, stream = make_io(tmp_path)
    hostile = "::add-mask::x\n::endgroup::\n::error::fake\n::stop-commands::abc\nno newline"
    actions.untrusted_block(hostile)
    lines = stream.getvalue().split("\n")
    start = re.fullmatch(r"::stop-commands::([0-9a-f-]{36})", lines[0])
    assert start is not None
    token = start[1]
    assert token not in hostile
    assert lines[-2] == f"::{token}::" and lines[-1] == ""
    assert "\n".join(lines[1:-2]) == hostile


def test_add_mask_bypasses_redaction_and_masks_each_line(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]  # every line a registered secret, unique to this test
    REDACTOR.add_secret(f"-----BEGIN KEY {tag}-----\nabc%def{tag}\n-----END KEY {tag}-----")
    actions, stream = make_io(tmp_path)
    actions.add_mask(f"-----BEGIN KEY {tag}-----\nabc%def{tag}\n-----END KEY {tag}-----")
    lines = stream.getvalue().splitlines()
    assert lines[0] == (
        f"::add-mask::-----BEGIN KEY {tag}-----%0Aabc%25def{tag}%0A-----END KEY {tag}-----"
    )
    assert lines[1:] == [
        f"::add-mask::-----BEGIN KEY {tag}-----",
        f"::add-mask::abc%25def{tag}",
        f"::add-mask::-----END KEY {tag}-----",
    ]


# --- the job summary -------------------------------------------------------------------------


def failed_report() -> Report:
    commands = [
        CommandResult(command="ruff check .", kind="lint", exit_code=0, duration_s=0.4),
        CommandResult(command="pytest -k 'a|b'", kind="test", exit_code=1, duration_s=3.2),
    ]
    failures = [
        Failure(id="tests/test_x.py::test_pipe[a|b]", message="assert 1 == 2\nmore detail"),
        Failure(id="tests/test_x.py::test_html", message="<img src=x onerror=alert(1)> `code`"),
        *(Failure(id=f"tests/test_many.py::test_{i}", message="boom") for i in range(25)),
    ]
    return Report(
        status="failed",
        reason="max_iterations",
        iterations=2,
        title="Reset patch | in <bump_minor>",
        rounds=[
            Round(iteration=1, commands=commands, tests=TestTotals(total=5, passed=3, failed=2)),
            Round(
                iteration=2,
                commands=[
                    CommandResult(
                        command="pytest",
                        kind="test",
                        exit_code=None,
                        duration_s=600,
                        timed_out=True,
                    ),
                    CommandResult(
                        command="npm test", kind="test", exit_code=None, duration_s=0, skipped=True
                    ),
                ],
                tests=TestTotals(total=30, passed=3, failed=26, errors=1, skipped=0),
                failures=failures,
            ),
        ],
        files_changed=["src/semver/version.py"],
        branch="codegen/reset-patch",
        pr_url="https://github.com/octo/hello/pull/7",
        usage=Usage(
            prompt_tokens=12345, cached_tokens=10240, completion_tokens=678, cost_usd=0.01234
        ),
        duration_s=125.4,
        refusals=[Refusal(path=".github/workflows/ci.yml", reason="protected | path")],
    )


def test_summary_of_a_failed_run() -> None:
    md = summary_markdown(failed_report(), run_url="https://github.com/octo/hello/actions/runs/9")
    assert md.startswith("## ❌ codegen-ci failed: Reset patch \\| in &lt;bump\\_minor&gt;\n")
    assert "| Reason | max\\_iterations |" in md
    assert "| Iterations | 2 |" in md
    assert "| Branch | `codegen/reset-patch` |" in md
    assert "| Pull request | [https://github.com/octo/hello/pull/7](<https://" in md
    assert "| Tokens | 12,345 prompt (10,240 cached) + 678 completion |" in md
    assert "| Cost | $0.0123 as billed |" in md
    assert "| Duration | 2m 05s |" in md
    assert "[logs and artifacts](<https://github.com/octo/hello/actions/runs/9>)" in md
    assert "| 1 | lint: `ruff check .` → exit 0<br>test: `pytest -k 'a\\|b'` → exit 1 |" in md
    assert "3 passed, 2 failed, 0 errors, 0 skipped" in md
    assert "test: `pytest` → timed out<br>test: `npm test` → skipped" in md
    assert "### Failing in round 2" in md
    assert "| `tests/test_x.py::test_pipe[a\\|b]` | `assert 1 == 2` |" in md
    assert "… and 7 more (see report.json)." in md
    assert "- `src/semver/version.py`" in md
    assert "| `.github/workflows/ci.yml` | protected \\| path |" in md


def test_summary_escapes_untrusted_text() -> None:
    md = summary_markdown(failed_report(), run_url=None)
    # test output shows as code: its HTML is text there, and nowhere outside a code span
    assert "<img" not in outside_code(md) and "`` <img src=x onerror=alert(1)> `code` ``" in md
    assert "logs and artifacts" not in md
    table_rows = [line for line in md.splitlines() if line.startswith("| `tests/")]
    assert all(line.count(" | ") == 1 for line in table_rows)  # no cell broke out


def test_summary_code_span_survives_backticks() -> None:
    report = Report(
        status="success",
        iterations=1,
        rounds=[
            Round(
                iteration=1,
                commands=[
                    CommandResult(command="echo `date`", kind="test", exit_code=0, duration_s=1)
                ],
            )
        ],
    )
    md = summary_markdown(report, run_url=None)
    assert md.startswith("## ✅ codegen-ci success\n")
    assert "test: `` echo `date` `` → exit 0" in md
    assert "tests: unknown (no JUnit report)" in md  # the command wrote no JUnit
    assert "Failing" not in md and "Pull request" not in md


def test_oversized_summary_is_truncated(tmp_path: Path) -> None:
    actions, _ = make_io(tmp_path)
    actions.append_summary("x" * (2 * 1024 * 1024))
    written = (tmp_path / "summary.md").read_bytes()
    assert len(written) <= 1024 * 1024
    assert written.endswith(b"(summary truncated: GitHub allows 1 MiB)\n")
