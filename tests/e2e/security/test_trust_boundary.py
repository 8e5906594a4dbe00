"""One trust boundary: the tool's own, unconfined process never trusts what confined code could
have shaped (SECURITY.md, "The tool never trusts what confined code can shape").

Each attack is a real `codegen-ci run` (in this process: sandbox_attacks.run_in_process, as
the subject is our reader, not the process) with a hostile scripted model or hostile test code,
real git and a real sandbox, parametrised over the sandbox backends
(bubblewrap, Landlock) where the backend takes part; where the subject is our own reader of
what a command left, under one (sandbox_attacks.ONE_BACKEND). Each has a positive control:
the same planted thing shown to work when the defence is not in its way (done directly, or in
the same run with the defence undone).
"""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import struct
import sys
import sysconfig
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from action_env import TOKEN, ActionWorld, open_world, push_branch
from pr_loop_env import junit_zip, workflow_run_payload
from sample_repo import FIX, QUICK_GATE, VERSION_FILE, SampleRepo, fixing_script
from sandbox_attacks import BACKENDS, ONE_BACKEND, proof_spec, results, run_in_process

from codegen_ci.publish import ci_artifacts
from codegen_ci.security import guarded_read
from codegen_ci.testing.github_double import add_workflow_run
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

# An interpreter outside any virtualenv (a venv turns user site-packages off by itself), with
# pytest from ours on its path: a repository tested with the system Python.
SYSTEM_PYTHON = "/usr/bin/python3"
CI_BRANCH = "codegen/3-speed-up-parse"
SYSTEM_PYTEST = (
    f'env PYTHONPATH="$PYTHONPATH:{sysconfig.get_paths()["purelib"]}" '
    f"{SYSTEM_PYTHON} -m pytest -q -p no:cacheprovider tests"
)


def inline(code: str) -> str:
    """A test command running `code` with our interpreter. Inline, not a file in `tmp_path`:
    under Landlock a command reads nothing outside its allowlist, the test's folder included."""
    return f"{sys.executable} -c {shlex.quote(code)}"


# Planted in the model's user site-packages: on the base-commit tree only, `Version.parse`
# raises, so every test the model broke also "fails on the base".
HOOK = """\
import os, sys
if os.getcwd().endswith("-base"):
    class PlantedFinder:
        def find_spec(self, name, path, target=None):
            if name != "semver.version":
                return None
            sys.meta_path.remove(self)
            import importlib.util
            spec = importlib.util.find_spec(name)
            run = spec.loader.exec_module
            def exec_module(module):
                run(module)
                def parse(cls, text):
                    raise ValueError("planted")
                module.Version.parse = classmethod(parse)
            spec.loader.exec_module = exec_module
            return spec
    sys.meta_path.insert(0, PlantedFinder())
"""
BREAK_PARSE = call(
    "edit_file", path=VERSION_FILE, old_text='text.split(".")', new_text='text.split(",")'
)


def plant_user_site(
    python: str, hook: str = HOOK, use: str = 'Version.parse("1.2.3")', folder: str = "probe-base"
) -> str:
    """A command that leaves a `.pth` in its user site-packages (under its HOME), then shows
    it working (the control) when user site-packages are on, from a folder named like the
    base tree; `PLANTED-OFF` is what it prints with them off, as codegen-ci runs commands."""
    site = f'"$(env -u PYTHONNOUSERSITE {python} -m site --user-site)"'
    probe = f"{python} -c 'from semver.version import Version; {use}' 2>&1 | tail -1"
    return (
        f"src=$PWD/src; mkdir -p {site} && printf %s {shlex.quote(hook)} > {site}/planted_hook.py"
        f" && echo 'import planted_hook' > {site}/planted.pth"
        f' && mkdir -p "$TMPDIR/{folder}" && cd "$TMPDIR/{folder}"'
        f' && echo "PLANTED-ON: $(env -u PYTHONNOUSERSITE PYTHONPATH=$src {probe})"'
        f' && echo "PLANTED-OFF: $(PYTHONPATH=$src {probe}) ok"'
    )


@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="needs a system Python")
@pytest.mark.parametrize("sandbox", BACKENDS)
def test_what_the_model_leaves_in_home_does_not_run_in_the_base_commit_rerun(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str
) -> None:
    """The reported attack: new failures passed off as pre-existing. The model breaks
    `Version.parse` (every test fails) and plants a `.pth` in its user site that makes the
    base commit fail the same way; with `allow_preexisting_failures` that was a success."""
    model_server.add(
        Reply(
            tool_calls=[call("run_command", command=plant_user_site(SYSTEM_PYTHON)), BREAK_PARSE]
        ),
        Reply("Done."),
    )
    # no flaky re-run of the failing tests in the worktree (`validation.proof.reruns: 0`): the
    # planted file acts in a tree named like the base's only; the base re-run is the subject
    # (the next test keeps the re-runs: its planted fix would act in them)
    sample_repo.proof = False
    spec = sample_repo.write_spec(
        limits={"max_iterations": 1},
        validation={"test": [SYSTEM_PYTEST], "timeout": 120, "allow_preexisting_failures": True},
    )
    proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)

    seen = results(model_server)
    # control: the planted file is live in the model's HOME once user site-packages are on
    assert "PLANTED-ON: ValueError: planted" in seen, seen
    assert "PLANTED-OFF:  ok" in seen or "PLANTED-OFF: ok" in seen  # and inert with them off
    # the base re-run started afresh: the tests the model broke pass there, so they are new
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [out_dir] = sample_repo.tmp.glob("out-*")
    base = "".join(p.read_text() for p in (out_dir / "baseline" / "logs").glob("*.log"))
    assert base and "planted" not in base
    report = (out_dir / "report.json").read_text()
    assert '"status": "failed"' in report and '"new": true' in report


# Planted in the model's user site-packages: `bump_minor` made right in every later Python,
# so the round's tests pass with the bug still in the code.
FAKE_FIX_HOOK = HOOK.replace('if os.getcwd().endswith("-base"):', "if True:").replace(
    """                def parse(cls, text):
                    raise ValueError("planted")
                module.Version.parse = classmethod(parse)""",
    """                def bump_minor(self):
                    return module.Version(self.major, self.minor + 1, 0)
                module.Version.bump_minor = bump_minor""",
)


@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="needs a system Python")
@pytest.mark.parametrize("sandbox", BACKENDS)
def test_what_the_model_leaves_in_home_does_not_run_in_the_validation_round(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str
) -> None:
    """The gate stays honest: a `.pth` the model plants instead of fixing the code would make
    the round's tests pass; the round starts with a fresh HOME and user site-packages off."""
    plant = plant_user_site(
        SYSTEM_PYTHON, FAKE_FIX_HOOK, "print(Version(1, 2, 3).bump_minor())", "probe"
    )
    model_server.add(Reply(tool_calls=[call("run_command", command=plant)]), Reply("Done."))
    spec = sample_repo.write_spec(
        limits={"max_iterations": 1}, validation={"test": [SYSTEM_PYTEST], "timeout": 120}
    )
    proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)

    seen = results(model_server)
    assert "PLANTED-ON: 1.3.0" in seen, seen  # control: the planted fix works with user site on
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the bug is still there
    [out_dir] = sample_repo.tmp.glob("out-*")
    assert '"status": "failed"' in (out_dir / "report.json").read_text()


HOSTILE_CONFTEST = """\
import atexit, os, shutil

SECRET = {secret!r}


def swap():
    if not os.environ.get("CODEGEN_FIRST_STATUS"):
        return  # round 1: its report names the failing test, which round 2 runs first
    # after pytest wrote its report: the report's folder and the plugin's status file become
    # links to a directory the sandbox hides (outside it they reach the user's secrets)
    status = os.environ.get("CODEGEN_FIRST_STATUS")
    if status and os.path.exists(os.path.dirname(status)):
        try:
            os.remove(status)
        except OSError:
            pass
        os.symlink(os.path.join(SECRET, "hosts.yml"), status)
    ids = os.environ.get("CODEGEN_FIRST_IDS")
    if ids:  # the tool's own folder: read-only here
        try:
            os.remove(ids)
            os.symlink(os.path.join(SECRET, "hosts.yml"), ids)
            print("IDS-REPLACED")
        except OSError as exc:
            print("IDS-KEPT", exc.errno)
    for word in os.environ.get("PYTEST_ADDOPTS", "").split():
        if word.startswith("--junitxml="):
            folder = os.path.dirname(word.split("=", 1)[1])
            shutil.rmtree(folder, ignore_errors=True)
            os.symlink(SECRET, folder)
            print("SWAPPED-JUNIT-FOLDER")
    scratch = os.path.dirname(os.environ["HOME"])  # the old plugin folder's place
    try:
        os.symlink(SECRET, os.path.join(scratch, "pytest_plugin"))
    except OSError:
        pass


atexit.register(swap)
"""


def secret_home(tmp_path: Path) -> tuple[Path, Path, str]:
    """A HOME whose `.config/gh` (hidden from commands) holds a token."""
    home = tmp_path / "home"
    secret_dir = home / ".config" / "gh"
    secret_dir.mkdir(parents=True)
    token = f"gho_{uuid.uuid4().hex}"
    (secret_dir / "hosts.yml").write_text(f"github.com:\n    oauth_token: {token}\n")
    return home, secret_dir, token


def holding(root: Path, token: str) -> list[Path]:
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and token.encode() in p.read_bytes()
    ]


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_links_test_code_leaves_in_its_folders_are_never_followed(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str, tmp_path: Path
) -> None:
    """Test code (a conftest the model wrote) turns its JUnit folder, the plugin's status
    file and the old plugin folder into links to a hidden directory, and tries to replace the
    id list, once pytest is done. The tool reads none of them and writes nothing there."""
    home, secret_dir, token = secret_home(tmp_path)
    conftest = HOSTILE_CONFTEST.format(secret=str(secret_dir))
    model_server.add(
        Reply(tool_calls=[call("write_file", path="tests/conftest.py", content=conftest)]),
        Reply("Added a fixture."),  # round 1 fails: round 2 re-runs the failing test first
        Reply(tool_calls=[FIX]),
        Reply("Fixed."),
    )
    spec = sample_repo.write_spec(limits={"max_iterations": 2})
    proc = run_in_process(
        sample_repo, model_server, spec, sandbox=sandbox, extra={"HOME": str(home)}
    )

    assert "Traceback" not in proc.stderr, proc.stderr
    [out_dir] = sample_repo.tmp.glob("out-*")
    logs = "".join(p.read_text() for p in (out_dir / "logs").glob("*test*.log"))
    assert "SWAPPED-JUNIT-FOLDER" in logs  # the attack ran
    assert "IDS-KEPT" in logs and "IDS-REPLACED" not in logs  # the tool's folder is read-only
    assert holding(out_dir, token) == []  # nothing of the hidden directory was copied out
    assert sorted(p.name for p in secret_dir.iterdir()) == ["hosts.yml"]  # nor written there
    report = (out_dir / "report.json").read_text()
    assert "symlink (never followed)" in report  # the refused report is named, with why

    # control, done directly: the plain reads the tool once made reach the secret
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "pytest_plugin").symlink_to(secret_dir)
    plain = [p for p in (scratch / "pytest_plugin").glob("*") if p.is_file()]
    assert token in plain[0].read_text()
    with pytest.raises(guarded_read.Refused):
        guarded_read.read_bytes(scratch, "pytest_plugin/hosts.yml", max_bytes=1 << 20)


SPARSE_AND_SWAPS = """\
import os, sys
secret = sys.argv[1]
# a report made 4 GiB sparse (a few bytes on disk), in the command's TMPDIR
big = os.path.join(os.environ["TMPDIR"], "big.xml")
with open(big, "wb") as f:
    f.truncate(4 << 30)
print("APPARENT", os.stat(big).st_size)
# a 1 TiB sparse file in the worktree: a generated file the tool's change detection must not
# read whole
with open("huge.bin", "wb") as f:
    f.truncate(1 << 40)
# a report folder that is a link to a hidden directory
if not os.path.islink("validation.junit"):
    os.symlink(secret, "validation.junit")
# a FIFO where a report should be: reading it would block forever
if not os.path.exists("pipe.xml"):
    os.mkfifo("pipe.xml")
sys.exit(1)
"""


# our reader of what the command left: sandbox_attacks.py
@pytest.mark.parametrize("sandbox", ONE_BACKEND)
def test_reports_are_read_bounded_and_without_links(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str, tmp_path: Path
) -> None:
    """The spec's JUnit globs meet a 4 GiB sparse file, a folder turned into a link to a
    hidden directory and a FIFO, and the worktree a 1 TiB sparse file: each is refused with
    its reason or left unread, nothing is copied whole, nothing hangs, and the run ends with
    a clear message (well within the launcher's timeout)."""
    home, secret_dir, token = secret_home(tmp_path)
    (secret_dir / "hosts.xml").write_text(f"<x>{token}</x>")
    command = f"{inline(SPARSE_AND_SWAPS)} {secret_dir}"
    model_server.add(Reply("Nothing to do."))
    spec = sample_repo.write_spec(
        limits={"max_iterations": 1},
        validation={
            "test": [command],
            "timeout": 60,
            "junit": ["$TMPDIR/big.xml", "validation.junit/*", "pipe.xml"],
        },
    )
    proc = run_in_process(
        sample_repo, model_server, spec, sandbox=sandbox, extra={"HOME": str(home)}
    )

    # The hostile test is on the base commit: the pre-flight finds that nothing the globs
    # matched can be read, a configuration error before any model call.
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "matched only reports that could not be read" in proc.stderr
    assert "Traceback" not in proc.stderr
    [out_dir] = sample_repo.tmp.glob("out-*")
    logs = "".join(p.read_text() for p in (out_dir / "logs").glob("*.log"))
    assert f"APPARENT {4 << 30}" in logs  # control: the file the command made is 4 GiB
    copied = sum(p.stat().st_size for p in out_dir.rglob("*") if p.is_file())
    assert copied < 64 << 20
    assert holding(out_dir, token) == []
    report = (out_dir / "report.json").read_text()
    assert "too large (4294967296 bytes" in report
    # control, done directly: a plain glob through the link reaches the hidden file
    link = tmp_path / "validation.junit"
    link.symlink_to(secret_dir)
    assert any(token in p.read_text() for p in tmp_path.glob("validation.junit/*.xml"))
    assert guarded_read.glob(tmp_path, "validation.junit/*") == []


FOLDER_TO_FILE = """\
import os, shutil
for word in os.environ.get("PYTEST_ADDOPTS", "").split():
    if word.startswith("--junitxml="):
        folder = os.path.dirname(word.split("=", 1)[1])
        shutil.rmtree(folder, ignore_errors=True)
        with open(folder, "w") as f:
            f.write("a file where a folder was")
        print("FOLDER-IS-A-FILE")
raise SystemExit(1)
"""


# our reader of what the command left: sandbox_attacks.py
@pytest.mark.parametrize("sandbox", ONE_BACKEND)
def test_a_report_folder_replaced_by_a_file_is_a_clear_message(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str, tmp_path: Path
) -> None:
    model_server.add(Reply("Nothing to do."))
    # the round's report folder is the subject: no flaky re-run of the failed command after it
    # (`validation.proof.reruns: 0`), which would meet the same reader once more
    sample_repo.proof = False
    spec = sample_repo.write_spec(
        limits={"max_iterations": 1}, validation={"test": [inline(FOLDER_TO_FILE)]}
    )
    proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    [out_dir] = sample_repo.tmp.glob("out-*")
    logs = "".join(p.read_text() for p in (out_dir / "logs").glob("*.log"))
    assert "FOLDER-IS-A-FILE" in logs  # control: the command did replace it
    report = (out_dir / "report.json").read_text()
    assert "a file is there" in report or "where a folder was expected" in report


def test_the_guarded_reader_refuses_what_a_plain_read_follows(tmp_path: Path) -> None:
    """The reader itself, both ways of opening (openat2, and the per-component walk kept for
    kernels without it): links at any level, `..`, special files, sizes."""
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "ok.xml").write_text("fine")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (root / "a" / "link.xml").symlink_to(outside)
    (root / "dirlink").symlink_to(root / "a")
    os.mkfifo(root / "a" / "fifo.xml")
    with (root / "a" / "sparse.xml").open("wb") as f:
        f.truncate(1 << 32)
    for openat2 in (True, False):
        guarded_read._openat2_works = openat2 and None  # None: probe the kernel again
        assert guarded_read.read_bytes(root, "a/b/ok.xml", max_bytes=100) == b"fine"
        for rel, why in [
            ("a/link.xml", "symlink"),
            ("dirlink/b/ok.xml", "symlink"),
            ("a/fifo.xml", "not a regular file"),
            ("a/sparse.xml", "too large"),
            ("../outside.txt", "leaves its folder"),
            ("a/b", "a folder is there"),
        ]:
            with pytest.raises(guarded_read.Refused, match=why):
                guarded_read.read_bytes(root, rel, max_bytes=1 << 20)
        assert guarded_read.glob(root, "**/*.xml") == ["a/b/ok.xml", "a/sparse.xml"]
    guarded_read._openat2_works = None
    (root / "a" / "b" / "two.xml").write_text("x" * 100)
    done = guarded_read.copy_tree(
        root, "a", tmp_path / "tree", max_files=5, max_bytes=50, max_file_bytes=1 << 20
    )
    assert sorted(p.name for p in (tmp_path / "tree").rglob("*") if p.is_file()) == ["ok.xml"]
    assert done.files == 1 and len(done.left_out) == 2  # two.xml over the total, sparse.xml
    with pytest.raises(guarded_read.Refused, match="already exists"):
        guarded_read.make_fresh_dir(root, "dirlink")  # a name taken in advance
    # control: the plain reads follow every one of these links
    assert (root / "a" / "link.xml").read_text() == "secret"
    assert (root / "dirlink" / "b" / "ok.xml").read_text() == "fine"
    dest = tmp_path / "copy"
    shutil.copyfile(root / "a" / "link.xml", dest)
    assert dest.read_text() == "secret"


ZIP_MEMBERS, MEMBER_BYTES = 40, 20 * 1024 * 1024 - 1


@pytest.fixture
def ci_world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    with open_world(sample_repo, token=TOKEN) as world:
        head = push_branch(sample_repo, CI_BRANCH, {"NOTES.md": "faster parse\n"}, "speed up")
        world.github.add_pull(
            CI_BRANCH, title="Speed up parse", user="github-actions[bot]", head_sha=head
        )
        yield world


def deflated_zip(members: dict[str, bytes]) -> bytes:
    """The zip archive `zipfile` writes with ZIP_DEFLATED, each content object deflated once
    (zipfile deflates all 40 x 20 MB again: 2-3 s of CPU): local headers, the data, the
    central directory, the end record (APPNOTE.TXT 4.3)."""
    packed: dict[int, tuple[bytes, int]] = {}  # by the content's id: one object, one deflate
    local, central = io.BytesIO(), io.BytesIO()
    for name, content in members.items():
        if id(content) not in packed:
            deflate = zlib.compressobj(6, zlib.DEFLATED, -15)  # raw deflate, as zipfile's
            packed[id(content)] = (deflate.compress(content) + deflate.flush(), zlib.crc32(content))
        data, crc = packed[id(content)]
        sizes = struct.pack("<III", crc, len(data), len(content))
        head = struct.pack("<HHHHH", 20, 0, zipfile.ZIP_DEFLATED, 0, 0x21) + sizes
        offset = local.tell()
        local.write(struct.pack("<I", 0x04034B50) + head)
        local.write(struct.pack("<HH", len(name), 0) + name.encode() + data)
        central.write(struct.pack("<IH", 0x02014B50, 20) + head)
        central.write(struct.pack("<HHHHHII", len(name), 0, 0, 0, 0, 0, offset) + name.encode())
    end = struct.pack(
        "<IHHHHIIH",
        0x06054B50,
        0,
        0,
        len(members),
        len(members),
        len(central.getvalue()),
        local.tell(),
        0,
    )
    return local.getvalue() + central.getvalue() + end


def test_a_ci_artifact_is_bounded_in_total_not_only_per_member(ci_world: ActionWorld) -> None:
    """A CI artifact of well under a megabyte whose 40 members each decompress to just under
    the per-member cap (20 MB): the run takes the real report and writes a bounded total."""
    report = zipfile.ZipFile(io.BytesIO(junit_zip(ci_world.sample, ci_world.tmp)))
    members = {"reports/junit.xml": report.read("reports/junit.xml")}
    zeros = b"\0" * MEMBER_BYTES  # one object: hashed and compared once
    members.update((f"reports/bulk-{n}.xml", zeros) for n in range(ZIP_MEMBERS))
    data = deflated_zip(members)
    # control: small to download, 800 MB written by a per-member cap alone
    infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    assert len(data) < 2 << 20 and all(i.file_size <= ci_artifacts.MAX_XML_BYTES for i in infos)
    assert sum(i.file_size for i in infos) > 800 * 1024 * 1024
    ci_world.model.add(*fixing_script())
    run = add_workflow_run(ci_world.github, CI_BRANCH, artifacts={"junit": data})

    result = ci_world.run("workflow_run", workflow_run_payload(ci_world, run.id, CI_BRANCH, 1))

    assert result.code == 0, result.log
    assert "test_bump_minor_resets_patch" in ci_world.model.requests[0]["messages"][1]["content"]
    written = ci_world.sample.path / ".git" / "codegen" / "ci-artifacts"
    total = sum(p.stat().st_size for p in written.rglob("*") if p.is_file())
    assert total <= ci_artifacts.MAX_TOTAL_XML_BYTES


GO_FIFO = """\
import os
if not os.path.exists("go.mod"):
    os.mkfifo("go.mod")  # reading it would block the reader for ever
    print("FIFO-MADE")
with open("report.xml", "w") as report:
    report.write('<testsuite name="m" tests="1" failures="1"><testcase classname="example.com/m"'
                 ' name="TestParse"><failure message="Failed">panic: boom</failure>'
                 "</testcase></testsuite>")
raise SystemExit(1)
"""


# our reader of what the command left: sandbox_attacks.py
@pytest.mark.parametrize("sandbox", ONE_BACKEND)
def test_a_fifo_where_the_tool_reads_source_files_blocks_nothing(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str, tmp_path: Path
) -> None:
    """A Go panic in the report makes the tool look for `go.mod` files to place it; the test
    command left a FIFO there. The run goes on (the launcher would time out otherwise)."""
    model_server.add(Reply("Nothing to do."))
    # the round's report is the subject: no flaky re-run of the failing test after it
    # (`validation.proof.reruns: 0`), which would meet the same FIFO once more
    sample_repo.proof = False
    spec = sample_repo.write_spec(
        limits={"max_iterations": 1},
        validation={"test": [inline(GO_FIFO)], "junit": ["report.xml"]},
    )
    proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    [out_dir] = sample_repo.tmp.glob("out-*")
    logs = "".join(p.read_text() for p in (out_dir / "logs").glob("*.log"))
    assert "FIFO-MADE" in logs  # control: the FIFO was there when the tool read the report
    assert "TestParse" in (out_dir / "report.json").read_text()


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_a_fifo_in_place_of_the_git_file_neither_hangs_nor_is_written_through(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str
) -> None:
    """Where the worktree's `.git` file is writable (Landlock), the model swaps it for a FIFO:
    the tool's git guard notices without reading it (a FIFO would block the read), puts the
    `.git` file back without writing through the FIFO, and the run ends normally."""
    swap = "rm -f .git 2>/dev/null && mkfifo .git && echo SWAPPED; true"
    model_server.add(
        Reply(tool_calls=[call("run_command", command=swap)]),
        Reply(tool_calls=[FIX]),
        Reply("Done."),
    )
    # no proof: the guard puts the `.git` file back when the command ends, before any git of
    # ours; the proof's git comes after the round's, which already meets what is left; nor is
    # the gate's verdict the subject: a grep of the fixed line (no test suite starts)
    sample_repo.proof = False
    spec = sample_repo.write_spec(limits={"max_iterations": 1}, validation=QUICK_GATE)
    proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    swapped = "SWAPPED" in results(model_server)
    # bubblewrap shows the `.git` file read-only, so the swap fails there; Landlock lets it happen
    assert swapped == (sandbox == "landlock")
    report = (sample_repo.tmp.glob("out-*").__next__() / "report.json").read_text()
    assert '"status": "success"' in report


def test_a_huge_sparse_file_the_model_makes_is_refused_not_hashed(
    sample_repo: SampleRepo, model_server: ScriptedModelServer
) -> None:
    """The model makes a 1 TiB sparse file beside its fix: our git would read it whole to hash
    it (for the diff and the commit). It is refused and reported; the fix is committed."""
    make = "python3 -c \"open('huge.bin', 'wb').truncate(1 << 40)\" && ls -ls huge.bin"
    model_server.add(
        Reply(tool_calls=[call("run_command", command=make), FIX]),
        Reply("Done."),
    )
    spec = proof_spec(sample_repo, limits={"max_iterations": 1})
    proc = run_in_process(sample_repo, model_server, spec)

    # control: the command did make it, 1 TiB apparent
    assert "1099511627776" in results(model_server)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [out_dir] = sample_repo.tmp.glob("out-*")
    report = json.loads((out_dir / "report.json").read_text())
    refused = {r["path"]: r["reason"] for r in report["refusals"]}
    assert "over 100 MB" in refused["huge.bin"]
    committed = sample_repo.git(
        "diff", "--name-only", f"{report['branch']}~1", report["branch"]
    ).split()
    assert committed == [VERSION_FILE]
