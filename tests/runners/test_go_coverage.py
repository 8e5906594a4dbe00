"""Go coverage (runners/go.py): the packages of changed files by their go.mod, and the
profile as LCov, matched by diff-cover against a diff (the command that writes the profile:
tests/runners/test_go.py)."""

from __future__ import annotations

from pathlib import Path

from diff_cover.git_path import GitPathTool
from diff_cover.violationsreporters.violations_reporter import LcovCoverageReporter

from codegen_ci.gate.coverage import diff_cover_verdict
from codegen_ci.runners.go import GoModule, modules, packages, profile_to_lcov
from codegen_ci.security.untrusted import Untrusted

MODS = [GoModule("example.com/inventory", ""), GoModule("example.com/tools", "tools")]
# What `go test -coverprofile -coverpkg=... ./...` wrote for the sample store (Go 1.19), with a
# second test binary's copy of one block, a block without statements and another module's file.
PROFILE = """\
mode: set
example.com/inventory/store.go:15.24,15.68 1 1
example.com/inventory/store.go:36.48,38.15 2 1
example.com/inventory/store.go:41.2,42.10 2 1
example.com/inventory/store.go:38.15,40.3 1 0
example.com/inventory/store.go:38.15,40.3 1 1
example.com/inventory/store.go:45.30,47.2 1 0
example.com/inventory/store.go:48.20,48.22 0 0
example.com/tools/lint/lint.go:3.14,5.2 1 0
golang.org/x/other/x.go:1.1,2.2 1 1
"""


def test_a_profile_becomes_lcov_lines_with_the_highest_count_of_their_blocks() -> None:
    assert profile_to_lcov(PROFILE, MODS) == (
        "SF:store.go\n"
        "DA:15,1\n"
        "DA:36,1\nDA:37,1\nDA:38,1\nDA:39,1\nDA:40,1\n"  # 38-40: run by the second binary
        "DA:41,1\nDA:42,1\n"
        "DA:45,0\nDA:46,0\nDA:47,0\n"  # line 48's block has no statement: no line
        "end_of_record\n"
        "SF:tools/lint/lint.go\nDA:3,0\nDA:4,0\nDA:5,0\nend_of_record\n"
    )


def test_diff_cover_names_the_changed_lines_no_test_ran(tmp_path: Path) -> None:
    lcov = tmp_path / "cover.lcov"
    lcov.write_text(profile_to_lcov(PROFILE, MODS))
    diff = (
        "diff --git a/store.go b/store.go\n--- a/store.go\n+++ b/store.go\n"
        "@@ -41,3 +41,7 @@\n-\tit.Count -= n\n+\tit.Count -= n // taken\n \treturn n\n }\n"
        "+\n+func (s *Store) Empty() bool {\n+\treturn false\n+}\n"
    )
    GitPathTool._cwd = GitPathTool._root = str(tmp_path)
    report = LcovCoverageReporter([LcovCoverageReporter.parse(str(lcov))], [str(tmp_path)])

    lines = diff_cover_verdict(report, diff, tmp_path)

    # changed: 41 (run), 44 (blank: no statement), 45-47 (the new function: never run)
    assert (lines.measured, lines.covered, lines.total) == (True, 1, 4)
    assert lines.uncovered == [Untrusted(u) for u in ["store.go:45-47"]]


def test_the_packages_of_changed_files_come_from_the_nearest_go_mod(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/inventory\n\ngo 1.19\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "go.mod").write_text('module "example.com/tools"\n')
    files = ["store.go", "units/units.go", "tools/lint/lint.go", "units/more.go"]

    found = modules(
        lambda rel: (tmp_path / rel).read_text() if (tmp_path / rel).is_file() else None, files
    )

    assert sorted(found, key=lambda m: m.folder) == MODS
    assert packages(files, found) == [
        "example.com/inventory",
        "example.com/inventory/units",
        "example.com/tools/lint",
    ]
    assert packages(["elsewhere.go"], []) == []
