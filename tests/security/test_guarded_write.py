"""The guarded writer: no link is followed on the way or at the name; each refusal paired with
the same write through real folders."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from codegen_ci.errors import InputError
from codegen_ci.publish.ci_artifacts import _Budget, _junit_members
from codegen_ci.report import Report
from codegen_ci.run.directory import make_output_dir
from codegen_ci.security import guarded_write
from codegen_ci.security.guarded_read import Refused, copy_file


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    return root, outside


def test_a_linked_folder_on_the_way_is_refused(places: tuple[Path, Path]) -> None:
    root, outside = places
    (root / "a").symlink_to(outside, target_is_directory=True)

    with pytest.raises(Refused, match="symlink"):
        guarded_write.write_text(root, "a/b/file.txt", "x")

    assert list(outside.iterdir()) == []
    guarded_write.write_text(root, "c/b/file.txt", "x")  # control: a real folder
    assert (root / "c" / "b" / "file.txt").read_text() == "x"


def test_a_link_at_the_name_is_refused_and_left_alone(places: tuple[Path, Path]) -> None:
    root, outside = places
    (outside / "secret").write_text("keep")
    (root / "file.txt").symlink_to(outside / "secret")

    with pytest.raises(Refused, match="symlink"):
        guarded_write.write_text(root, "file.txt", "overwritten")

    assert (outside / "secret").read_text() == "keep"
    assert (root / "file.txt").is_symlink()


def test_an_existing_file_is_replaced_only_when_meant(places: tuple[Path, Path]) -> None:
    root, _ = places
    guarded_write.write_text(root, "f", "one")
    with pytest.raises(Refused, match="already exists"):
        guarded_write.write_text(root, "f", "two", replace=False)
    guarded_write.write_text(root, "f", "two")
    assert (root / "f").read_text() == "two"
    assert sorted(p.name for p in root.iterdir()) == ["f"]  # no temporary file left


def test_an_output_directory_with_a_planted_link_is_refused(places: tuple[Path, Path]) -> None:
    root, outside = places
    out = root / "out"
    (out / "logs").mkdir(parents=True)
    (out / "report.json.tmp").symlink_to(outside / "x")

    with pytest.raises(InputError, match=r"holds a symlink \(report.json.tmp\)"):
        make_output_dir(out)

    (out / "report.json.tmp").unlink()
    assert make_output_dir(out) == out  # control: the same folder without the link
    Report().write(out)
    assert (out / "report.json").is_file()
    assert list(outside.iterdir()) == []


def test_a_report_is_never_written_through_a_link(places: tuple[Path, Path]) -> None:
    root, outside = places
    (outside / "target").write_text("keep")
    (root / "report.json").symlink_to(outside / "target")

    with pytest.raises(Refused):
        Report().write(root)

    assert (outside / "target").read_text() == "keep"


def test_an_artifact_copy_whose_name_is_a_link_is_not_written_through(
    places: tuple[Path, Path],
) -> None:
    root, outside = places
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("junit.xml", "<testsuite/>")
        archive.writestr("other.xml", "<testsuite/>")
    (outside / "target").write_text("keep")
    (root / "7-0-junit.xml").symlink_to(outside / "target")

    written = _junit_members(buffer.getvalue(), root, "7", _Budget())

    assert written == [root / "7-1-other.xml"]  # control: the name without a link
    assert (outside / "target").read_text() == "keep"
    assert os.readlink(root / "7-0-junit.xml") == str(outside / "target")


def test_a_junit_copy_whose_destination_is_a_link_writes_nothing_outside(
    places: tuple[Path, Path],
) -> None:
    root, outside = places
    (root / "report.xml").write_text("<testsuite/>")
    junit = root / "junit"
    junit.mkdir()
    (outside / "target").write_text("keep")
    (junit / "copy.xml").symlink_to(outside / "target")

    copy_file(root, "report.xml", junit / "copy.xml", max_bytes=1 << 20)

    assert (outside / "target").read_text() == "keep"
    assert not (junit / "copy.xml").is_symlink()
    assert (junit / "copy.xml").read_text() == "<testsuite/>"
