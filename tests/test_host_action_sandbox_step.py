"""The runner-host action's "Prepare the sandbox" step (host/action.yml), run as the bash
script it is, with `sudo`, `apt-get`, `apparmor_parser` and `sysctl` stood in for by programs
that record their calls (this machine has no AppArmor 4 and must not change its kernel
settings). What it shows: bubblewrap is installed when missing; on a kernel that restricts
unprivileged user namespaces (Ubuntu 24.04), bwrap gets its own AppArmor profile, and the
restriction is lifted only when that profile cannot be loaded; nothing happens when the
workflow chose no bubblewrap."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RECORDER = '#!/bin/sh\necho "$(basename "$0") $*" >> "$CALLS"\n'


def step_script() -> str:
    steps = yaml.safe_load((ROOT / "host" / "action.yml").read_text())["runs"]["steps"]
    [step] = [s for s in steps if s.get("id") == "sandbox"]
    assert step["shell"] == "bash"
    return str(step["run"])


def run_step(
    tmp: Path,
    *,
    sandbox: str = "auto",
    restricted: str = "1",
    has_bwrap: bool = True,
    parser_fails: bool = False,
) -> tuple[list[str], Path]:
    bin_dir, apparmor = tmp / "bin", tmp / "apparmor.d"
    bin_dir.mkdir()
    apparmor.mkdir()
    for tool in ("cat", "tee", "basename", "chmod"):  # what the step and stand-ins need
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    programs = {
        "sudo": '#!/bin/sh\necho "sudo $1" >> "$CALLS"\nexec "$@"\n',
        "apt-get": RECORDER + f'[ "$1" = install ] && printf "#!/bin/sh\\n" > {bin_dir}/bwrap '
        f"&& chmod +x {bin_dir}/bwrap\nexit 0\n",
        "apparmor_parser": RECORDER + f"exit {1 if parser_fails else 0}\n",
        "sysctl": RECORDER,
    }
    if has_bwrap:
        programs["bwrap"] = "#!/bin/sh\n"
    for name, text in programs.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    sysctl_file = tmp / "apparmor_restrict_unprivileged_userns"
    sysctl_file.write_text(restricted + "\n")
    calls = tmp / "calls"
    calls.touch()
    env = {
        "PATH": str(bin_dir),
        "SANDBOX": sandbox,
        "CALLS": str(calls),
        "CODEGEN_USERNS_SYSCTL": str(sysctl_file),
        "CODEGEN_APPARMOR_DIR": str(apparmor),
        "HOME": str(tmp),
    }
    bash = shutil.which("bash") or "/bin/bash"
    proc = subprocess.run(
        [bash, "-e", "-c", step_script()], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return calls.read_text().splitlines(), apparmor / "codegen-ci-bwrap"


def test_on_a_restricting_kernel_bwrap_gets_its_own_profile(tmp_path: Path) -> None:
    calls, profile = run_step(tmp_path)
    text = profile.read_text()
    assert f"profile codegen-ci-bwrap {tmp_path / 'bin' / 'bwrap'} flags=(unconfined) {{" in text
    assert "  userns," in text and text.startswith("abi <abi/4.0>,")
    assert f"apparmor_parser -r {profile}" in calls
    assert not any(c.startswith("sysctl") for c in calls)  # the machine-wide switch stays


def test_the_restriction_is_lifted_only_when_the_profile_cannot_be_loaded(tmp_path: Path) -> None:
    calls, _ = run_step(tmp_path, parser_fails=True)
    assert calls[-1] == "sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0"


def test_a_missing_bwrap_is_installed_and_an_open_kernel_is_left_alone(tmp_path: Path) -> None:
    calls, profile = run_step(tmp_path, restricted="0", has_bwrap=False)
    assert "apt-get install -y -qq --no-install-recommends bubblewrap" in calls
    assert not profile.exists() and not any("apparmor" in c for c in calls)
    assert os.access(tmp_path / "bin" / "bwrap", os.X_OK)


@pytest.mark.parametrize("sandbox", ["off", "landlock"])
def test_nothing_is_touched_when_bubblewrap_is_not_wanted(tmp_path: Path, sandbox: str) -> None:
    calls, profile = run_step(tmp_path, sandbox=sandbox, has_bwrap=False)
    assert calls == [] and not profile.exists()
