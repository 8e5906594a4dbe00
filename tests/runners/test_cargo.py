"""cargo: where `cargo nextest run` writes JUnit, read from the repository's nextest config."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.runners.cargo import configured_reports

CONFIG = '[profile.ci.junit]\npath = "junit.xml"\n[profile.default.junit]\npath = "all.xml"\n'


def nextest_reports(command: str, root: Path, env: dict[str, str]) -> list[str]:
    def read(rel: str) -> str | None:
        path = root / rel
        return path.read_text() if path.is_file() else None

    return configured_reports(command, env, read)


def repo(tmp_path: Path, text: str) -> Path:
    (tmp_path / ".config").mkdir()
    (tmp_path / ".config" / "nextest.toml").write_text(text)
    return tmp_path


def test_the_profile_from_the_command_the_environment_or_the_default(tmp_path: Path) -> None:
    root = repo(tmp_path, CONFIG)
    assert nextest_reports("cargo nextest run --profile ci", root, {}) == [
        "target/nextest/ci/junit.xml"
    ]
    assert nextest_reports("cargo nextest run -P ci --workspace", root, {}) == [
        "target/nextest/ci/junit.xml"
    ]
    assert nextest_reports("cargo nextest run", root, {"NEXTEST_PROFILE": "ci"}) == [
        "target/nextest/ci/junit.xml"
    ]
    assert nextest_reports("cargo nextest run", root, {}) == ["target/nextest/default/all.xml"]


def test_no_junit_path_no_nextest_or_an_escaping_path_gives_nothing(tmp_path: Path) -> None:
    root = repo(tmp_path, '[store]\ndir = "../../elsewhere"\n' + CONFIG)
    assert nextest_reports("cargo nextest run --profile nope", root, {}) == []
    assert nextest_reports("cargo test", root, {}) == []
    assert nextest_reports("cargo nextest run --profile ci", root, {}) == []


def test_the_store_dir_is_honoured(tmp_path: Path) -> None:
    root = repo(tmp_path, '[store]\ndir = "out/nt"\n' + CONFIG)
    assert nextest_reports("cargo nextest run -P ci", root, {}) == ["out/nt/ci/junit.xml"]
