"""init for a project whose venv uv made (`uv sync`): uv's install commands, not pip's
(commands/init_env.py `Toolchain.pip_install`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from codegen_ci.cli import cli


def test_a_venv_uv_made_gets_uvs_install_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """itsdangerous set up as its users do (`uv sync`): the venv has no pip, so init's
    `.venv/bin/python -m pip install -e .` suggestion failed there ("No module named pip")."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "m"\n[dependency-groups]\ntyping = ["mypy"]\n'
        '[tool.mypy]\nfiles = ["src"]\n[tool.pytest.ini_options]\n'
    )
    (tmp_path / "uv.lock").write_text("version = 1\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")  # no mypy there
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\nuv = 0.7.8\n")

    result = CliRunner().invoke(cli, ["init", "--repo", str(tmp_path)])

    assert result.exit_code == 0, result.output
    # uv's way to the group that names mypy (uv.lock is there); a tool nothing names goes in
    # with `uv pip install --python .venv/bin/python` (test_init_install_hints.py)
    assert "missing: mypy is not installed; install it with: uv sync --group typing\n" in (
        result.output
    )
    assert '# setup: ["uv sync --locked"' in (tmp_path / ".codegen.yml").read_text()
