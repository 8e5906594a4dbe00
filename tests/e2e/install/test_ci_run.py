"""`.ci/run` (and so CI) runs README's test command in a fresh copy of the repository placed
where nothing is beside it. The installers are stand-ins on PATH that record where
and how they were called, so the script runs in seconds and runs nothing it installs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PYTHON3 = """#!/bin/sh
echo "$PWD|python3 $*" >> "$CALLS"
if [ "$2" = venv ]; then
  mkdir -p "$3/bin"
  echo 'python() { echo "$PWD|python $*" >> "$CALLS"; ls .. >> "$CALLS"; }' \
    > "$3/bin/activate"
fi
"""
RECORDER = '#!/bin/sh\necho "$PWD|$(basename "$0") $*" >> "$CALLS"\n'
# Installers other lines of .ci/run may call: recorded, never run.
OTHERS = ("npm", "apt-get", "sudo", "go", "gotestsum")


def readme_test_command() -> str:
    text = (ROOT / "README.md").read_text()
    block = text.split("**Run the tests:**", 1)[1]
    return re.search(r"```bash\n(.+?)\n```", block, re.S).group(1).strip()  # type: ignore[union-attr]


def test_ci_runs_the_readme_test_command_in_a_fresh_clone_with_nothing_beside_it(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(checkout)], check=True)
    # a folder beside the checkout, like the sibling fixtures folder of the machines that wrote
    # the tests: the fresh clone must not see it
    (tmp_path / "sibling-fixtures").mkdir()
    # the script under test is this working tree's, whatever the clone's HEAD holds
    (checkout / ".ci" / "run").write_text((ROOT / ".ci" / "run").read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in {"python3": PYTHON3, **dict.fromkeys(OTHERS, RECORDER)}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls.txt"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CALLS": str(calls),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    (tmp_path / "tmp").mkdir()

    proc = subprocess.run(
        ["bash", str(checkout / ".ci" / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert proc.returncode == 0, proc.stderr
    lines = calls.read_text().splitlines()
    test_runs = [line for line in lines if line.endswith("|" + readme_test_command())]
    assert len(test_runs) == 1, lines
    where = Path(test_runs[0].split("|")[0])
    assert where != checkout and where.parent.parent == tmp_path / "tmp"
    # the listing of the copy's parent, written when the tests ran: the copy alone
    assert lines[lines.index(test_runs[0]) + 1 :] == [where.name]
    assert all(line.startswith(f"{where}|") for line in lines if "|" in line)
    assert not (tmp_path / "tmp").exists() or not any((tmp_path / "tmp").iterdir())  # cleaned
