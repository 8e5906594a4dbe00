"""pytest commands: spotting one, re-running only chosen tests of it, and the harness's side
of `codegen_first`, the pytest plugin that runs previously failing tests first and stops after
them when one still fails (gate/codegen_first.py).

Node ids: pytest's JUnit ids look like `tests.unit.test_version.TestBump::test_minor[3.4-x]`
(`classname::name`, the classname being the module's dotted path plus any classes); pytest
wants node ids like `tests/unit/test_version.py::TestBump::test_minor[3.4-x]`. A JUnit id is
mapped by finding the longest dotted prefix of the classname that is a file in the repository.
`targeted_command` is the plugin's fallback (the plugin refused, xdist on the command line), in
validation and in the baseline's re-runs on the base commit alike (gate/test_runs.py).

The plugin: `prepare` copies it out of the package into a folder of the tool's own that
commands can read and not write (`Sandbox.tool_dir`: the repository's pytest may run in another
interpreter, where codegen_ci is not importable), and returns the environment that loads it:
PYTHONPATH gets the plugin's directory, and PYTEST_ADDOPTS `-p codegen_first` (`-p` loads a
plugin even with PYTEST_DISABLE_PLUGIN_AUTOLOAD). `read_status` tells what the plugin did.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codegen_ci.runners.base import Folder, in_folder, plain_tokens, with_tool_path
from codegen_ci.runners.pytest import mentions_pytest as mentions_pytest
from codegen_ci.security import guarded_read, guarded_write

# pytest options that take a separate value, so the value is not mistaken for a test path.
VALUE_OPTIONS = {
    "-k",
    "-m",
    "-p",
    "-c",
    "-o",
    "-n",
    "-W",
    "--rootdir",
    "--confcutdir",
    "--basetemp",
    "--deselect",
    "--ignore",
    "--ignore-glob",
    "--cov",
    "--cov-report",
    "--maxfail",
    "--junitxml",
    "--junit-xml",
    "--tb",
    "--durations",
    "--import-mode",
    "--log-level",
    "--timeout",
    "--dist",
    "-r",
    "--cov-config",
    "--cov-fail-under",
    "--override-ini",
}
# Past this many ids the command line gets unwieldy and the full suite is about as cheap.
MAX_TARGETS = 200


def node_id(junit_id: str, repo: Path) -> str | None:
    """The pytest node id for a JUnit id, when the test file can be found in `repo`."""
    if "::" not in junit_id:
        return None
    classname, name = junit_id.split("::", 1)
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        candidate = "/".join(parts[:cut]) + ".py"
        if (repo / candidate).is_file():
            return "::".join([candidate, *parts[cut:], name])
    return None


def targeted_command(command: str, junit_ids: list[str], repo: Path) -> str | None:
    """`command` with its test paths replaced by the node ids of `junit_ids`.

    None when the command is not one plain pytest invocation (pipes, `&&`, redirections...;
    one run from a folder, `cd DIR && pytest ...`, is: its node ids relative to DIR), when
    there are no ids or too many, or when an id cannot be mapped to a file in `repo`: the
    caller then runs the full command, which is always correct, only slower.
    """
    folder, inner = in_folder(command)
    if not mentions_pytest(inner) or not junit_ids or len(junit_ids) > MAX_TARGETS:
        return None
    tokens = plain_tokens(inner)
    if tokens is None:
        return None
    here = folder.tree(repo)
    nodes = [_folder_node_id(i, repo, folder) for i in dict.fromkeys(junit_ids)]
    if not all(nodes):
        return None
    rewritten = with_paths(tokens, [n for n in nodes if n], here)
    return None if rewritten is None else folder.wrap(rewritten)


def _folder_node_id(junit_id: str, repo: Path, folder: Folder) -> str | None:
    """The node id of `junit_id` for a pytest run in `folder`: its classname's module found
    in the folder (pytest rooted there), else in the repository (rooted at a configuration
    above it), relative to the folder either way."""
    found = node_id(junit_id, folder.tree(repo))
    if found is None and folder.path and (outer := node_id(junit_id, repo)):
        found = folder.inward(outer)
    return found


def with_paths(tokens: list[str], paths: Sequence[str], repo: Path) -> str | None:
    """The pytest invocation `tokens` with its own test paths (those that exist in `repo`)
    replaced by `paths`, its options and their values kept; None when no pytest is named."""
    start = next((i for i, t in enumerate(tokens) if t.endswith(("pytest", "py.test"))), None)
    if start is None:
        return None
    kept, takes_value = tokens[: start + 1], False
    for token in tokens[start + 1 :]:
        if takes_value:
            kept.append(token)
            takes_value = False
        elif token in VALUE_OPTIONS:
            kept.append(token)
            takes_value = True
        elif token.startswith("-") or not (repo / token.split("::", 1)[0]).exists():
            kept.append(token)
    return shlex.join([*kept, *paths])


# The plugin's harness side: loading it into a pytest command and reading what it did.

PLUGIN = "codegen_first"
# The plugin's file, found beside this one and never imported here: it imports pytest, which
# the tool's own process does not have (a plain `pip install codegen-ci`). Only the
# repository's own pytest process loads it. The environment names below are the plugin's.
PLUGIN_SOURCE = Path(__file__).with_name(f"{PLUGIN}.py")
IDS_ENV = "CODEGEN_FIRST_IDS"
MODE_ENV = "CODEGEN_FIRST_MODE"
STATUS_ENV = "CODEGEN_FIRST_STATUS"
COLLECTED_ENV = "CODEGEN_FIRST_COLLECTED"
MAX_COLLECTED_BYTES = 64 * 1024 * 1024  # one line per collected test
MAX_STATUS_BYTES = 1024 * 1024  # one short JSON line per pytest process
# xdist on the command line: workers cannot stop early, so the command-rewriting path
# (re-run only the failing node ids, under xdist too) is cheaper there.
XDIST_OPTIONS = ("-n", "--numprocesses", "--dist", "-d", "--tx")
XDIST_WORD = re.compile(r"-n\S+|--(numprocesses|dist|tx)=\S*")

Mode = Literal["first", "only", "except"]


@dataclass(frozen=True)
class FirstStatus:
    """What the plugin reported, over every pytest process the command started."""

    loaded: bool = False  # some pytest process loaded the plugin
    matched: int = 0  # previously failing tests found among the collected ones
    stopped: bool = False  # a process stopped after them, because one still failed


def applies(command: str) -> bool:
    """Whether a test command should run with the plugin: it runs pytest, not under xdist."""
    return mentions_pytest(command) and not any(
        word in XDIST_OPTIONS or XDIST_WORD.fullmatch(word) for word in command.split()
    )


def prepare(
    env: Mapping[str, str],
    junit_ids: list[str],
    tool_dir: Path,
    tag: str,
    mode: Mode = "first",
    *,
    io_dir: Path | None = None,
    collect: bool = False,
) -> tuple[dict[str, str], Path]:
    """The environment for one command run with the plugin, and the status file it writes.

    `tool_dir` (the tool's own, read-only to commands: `Sandbox.tool_dir`) gets
    `pytest_plugin/codegen_first.py` and this command's id list; the plugin writes its status
    into `io_dir` (the command's fresh writable folder; default: `tool_dir`, for callers that
    run pytest unconfined)."""
    plugin_dir = tool_dir / "pytest_plugin"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    plugin = plugin_dir / f"{PLUGIN}.py"
    if not plugin.is_file():
        shutil.copyfile(PLUGIN_SOURCE, plugin)
    ids_file = plugin_dir / f"{tag}-ids.txt"
    ids_file.write_text("".join(f"{i}\n" for i in dict.fromkeys(junit_ids)), encoding="utf-8")
    status = (io_dir or plugin_dir) / f"{tag}-status.jsonl"
    out = with_tool_path(env, plugin_dir)
    out["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} -p {PLUGIN}".strip()
    out[IDS_ENV] = str(ids_file)
    out[MODE_ENV] = mode
    out[STATUS_ENV] = str(status)
    if collect:  # the collected tests' ids, beside the status (`collected_tests`)
        out[COLLECTED_ENV] = str(status.with_name(f"{tag}-collected.txt"))
    return out, status


def collected_tests(status: Path, work_dir: Path) -> dict[str, bool] | None:
    """The tests a collection run listed (`prepare(collect=True)`): JUnit id -> True when a
    marker skips it; None when the plugin wrote no list. Read through the guarded reader (the
    command could write its folder), a copy kept in `work_dir`/pytest_plugin."""
    name = status.name.replace("-status.jsonl", "-collected.txt")
    copy = work_dir / "pytest_plugin" / name
    copy.parent.mkdir(parents=True, exist_ok=True)
    try:
        guarded_read.copy_file(
            status.parent.parent,
            f"{status.parent.name}/{name}",
            copy,
            max_bytes=MAX_COLLECTED_BYTES,
        )
        text = guarded_read.read_text(copy.parent, copy.name, max_bytes=MAX_COLLECTED_BYTES)
    except (guarded_read.Refused, OSError):
        return None
    tests: dict[str, bool] = {}
    for line in text.splitlines():
        mark, _, test_id = line.partition(" ")
        if mark in ("R", "S") and test_id:
            tests[test_id] = tests.get(test_id, True) and mark == "S"
    return tests


def keep(status: Path, tool_dir: Path, work_dir: Path) -> FirstStatus:
    """Copy this command's id list and the plugin's status file into the output directory, for
    inspection, and say what the plugin did. The status file lies in a folder the command
    could write: it is read through the guarded reader (a symlink, a FIFO or a huge file there
    reads as no status)."""
    target = work_dir / "pytest_plugin"
    target.mkdir(parents=True, exist_ok=True)
    ids = tool_dir / "pytest_plugin" / status.name.replace("-status.jsonl", "-ids.txt")
    for path in (ids, tool_dir / "pytest_plugin" / f"{PLUGIN}.py"):  # the tool's own files
        if path.is_file() and tool_dir != work_dir:
            with contextlib.suppress(guarded_read.Refused):  # a link there: not written through
                guarded_write.copy_into(path, target / path.name)
    copy = target / status.name
    try:
        guarded_read.copy_file(
            status.parent.parent,
            f"{status.parent.name}/{status.name}",
            copy,
            max_bytes=MAX_STATUS_BYTES,
        )
    except guarded_read.Refused:
        copy.unlink(missing_ok=True)
    return read_status(copy)


def read_status(path: Path) -> FirstStatus:
    try:
        text = guarded_read.read_text(path.parent, path.name, max_bytes=MAX_STATUS_BYTES)
    except guarded_read.Refused:
        return FirstStatus()
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a process killed mid-write
        if isinstance(record, dict):
            records.append(record)
    return FirstStatus(
        loaded=bool(records),
        matched=sum(_count(r.get("matched")) for r in records),
        stopped=any(r.get("stopped") is True for r in records),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def failed_to_load(status: FirstStatus, output: str) -> bool:
    """pytest refused the plugin (`-I`, or a tool that passed PYTEST_ADDOPTS on but not
    PYTHONPATH): the run proves nothing and is repeated without it."""
    return not status.loaded and f'plugin "{PLUGIN}"' in output
