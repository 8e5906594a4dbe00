"""codegen-ci's pytest plugin: run the previously failing tests first, stop after them if
any still fails.

Standalone on purpose: codegen-ci copies this file next to the run's output and loads it with
`-p codegen_first` (PYTHONPATH points there), in whatever interpreter and virtualenv the
repository's pytest uses, so it imports nothing but the standard library and pytest and keeps
to syntax old Pythons read.

The environment says what to do:
- CODEGEN_FIRST_IDS: a file with one JUnit id a line, `classname::name` as pytest's junitxml
  writes them (codegen-ci reads ids from the JUnit report of the round before).
- CODEGEN_FIRST_MODE: `first` (default) puts those tests first; when they have all finished
  and one of them failed, the session stops, so a still-broken fix costs only those tests.
  When they all pass the same process goes on through the rest of the suite. `only`
  deselects every other test; `except` deselects these tests and runs the others (on the
  base commit: which tests a change no longer runs, gate/kept_tests.py).
- CODEGEN_FIRST_STATUS: a file this plugin appends one JSON line to per pytest process:
  how many tests it matched and whether it stopped the session early.
- CODEGEN_FIRST_COLLECTED: a file this plugin appends each collected test's JUnit id to, one
  a line, `R <id>` or, when a skip or xfail marker already skips it at collection, `S <id>`
  (the pre-flight's collection: which tests the base commit has, gate/kept_tests.py).

Under pytest-xdist the tests are only reordered: a worker cannot tell when the others have
finished the previously failing tests, so it never stops the session.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence

IDS_ENV = "CODEGEN_FIRST_IDS"
MODE_ENV = "CODEGEN_FIRST_MODE"
STATUS_ENV = "CODEGEN_FIRST_STATUS"
COLLECTED_ENV = "CODEGEN_FIRST_COLLECTED"
STOP_MESSAGE = "codegen-ci: previously failing tests still fail; the rest of the suite was not run"


def junit_id(nodeid: str, prefix: str | None = None) -> str:
    """The id codegen-ci gives the JUnit case pytest's junitxml writes for `nodeid`."""
    names = _mangled(nodeid)
    classname = ".".join([prefix, *names[:-1]] if prefix else names[:-1])
    name = names[-1]
    if classname and name and classname != name:
        return classname + "::" + name
    return name or classname


def _mangled(nodeid: str) -> list[str]:
    """junitxml's own split of a node id into a dotted module path, classes and the name."""
    try:
        from _pytest.junitxml import mangle_test_address

        return list(mangle_test_address(nodeid))
    except Exception:  # an internal helper; its older shape, should it move
        path, bracket, params = nodeid.partition("[")
        names = path.split("::")
        names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
        names[-1] += bracket + params
        return names


def _skipped_by_marker(item: pytest.Item) -> bool:
    """A `skip`, a true `skipif` or an `xfail` (run=False too) marker: skipped before it runs.
    pytest's own evaluation; False where it cannot be had (it is not public API)."""
    try:
        from _pytest.skipping import evaluate_skip_marks, evaluate_xfail_marks

        return bool(evaluate_skip_marks(item) or evaluate_xfail_marks(item))
    except Exception:
        return False


class FailingFirst:
    def __init__(self, ids: set[str], mode: str, status_path: str, xdist_worker: bool) -> None:
        self.ids, self.mode, self.status_path = ids, mode, status_path
        self.can_stop = mode == "first" and not xdist_worker
        self.xdist_worker = xdist_worker
        self.pending: set[str] = set()
        self.matched = 0
        self.rest = 0
        self.failed = False
        self.stopped = False
        self.session: pytest.Session | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(trylast=True)  # after -k/-m deselection and any reordering plugin
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        prefix = getattr(config.option, "junitprefix", None)
        collected = os.environ.get(COLLECTED_ENV, "")
        if collected and not self.xdist_worker:
            with open(collected, "a", encoding="utf-8") as out:
                for item in items:
                    mark = "S" if _skipped_by_marker(item) else "R"
                    out.write(mark + " " + junit_id(item.nodeid, prefix) + "\n")
        first = [item for item in items if junit_id(item.nodeid, prefix) in self.ids]
        rest = [item for item in items if junit_id(item.nodeid, prefix) not in self.ids]
        self.matched, self.rest = len(first), len(rest)
        self.pending = {item.nodeid for item in first}
        if self.mode == "only":
            items[:] = first
            if rest:
                config.hook.pytest_deselected(items=rest)
        elif self.mode == "except":
            items[:] = rest
            if first:
                config.hook.pytest_deselected(items=first)
        else:
            items[:] = first + rest

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid in self.pending and report.failed:
            self.failed = True

    def pytest_runtest_logfinish(self, nodeid: str, location: Sequence[object]) -> None:
        if nodeid not in self.pending:
            return
        self.pending.discard(nodeid)
        stop = not self.pending and self.failed and self.can_stop and self.rest
        if stop and self.session is not None:
            # shouldfail, as --maxfail does: the session ends as "tests failed" (exit 1)
            self.session.shouldfail = STOP_MESSAGE
            self.stopped = True

    def pytest_sessionfinish(self) -> None:
        if not self.status_path:
            return
        line = {
            "pid": os.getpid(),
            "matched": self.matched,
            "rest": self.rest,
            "stopped": self.stopped,
            "xdist_worker": self.xdist_worker,
        }
        with open(self.status_path, "a", encoding="utf-8") as status:
            status.write(json.dumps(line) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    ids_path = os.environ.get(IDS_ENV, "")
    ids: set[str] = set()
    if ids_path:
        with open(ids_path, encoding="utf-8") as lines:
            ids = {line.rstrip("\n") for line in lines if line.strip()}
    mode = os.environ.get(MODE_ENV, "first")
    worker = hasattr(config, "workerinput")
    plugin = FailingFirst(ids, mode, os.environ.get(STATUS_ENV, ""), worker)
    config.pluginmanager.register(plugin, "codegen-first")
