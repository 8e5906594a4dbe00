"""A failed `workflow_run` on a pull request codegen-ci works on -> a task: make the failing
tests pass again.

The payload settles what never gets a run: another conclusion than failure, the default
branch, a branch in a fork (its code must not run with this repository's secrets). Whether the
branch is one codegen-ci pushed (or its pull request carries the configured label), and how
many attempts were made already, is the action's to check with the API. CI output is written
by the code under test, so it reaches the model fenced as data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codegen_ci.security.untrusted import clean_untrusted, fence
from codegen_ci.sources.event_task import CiRun, EventTask, Ignore, TriggerRules
from codegen_ci.sources.github_event import _short
from codegen_ci.sources.payload_fields import field, int_field, user_of

MAX_FAILURES = 30
MAX_MESSAGE = 1500


@dataclass(frozen=True)
class CiFailures:
    """What a failed run left to go on: failing tests from its JUnit artifacts, or else the
    tails of its failed jobs' logs."""

    tests: tuple[tuple[str, str], ...] = ()  # (test id, message)
    logs: tuple[tuple[str, str], ...] = ()  # (job name, log tail)

    def signature(self) -> str:
        keys = sorted(t for t, _ in self.tests) or sorted(job for job, _ in self.logs)
        return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]

    def summary(self) -> str:
        names = [t for t, _ in self.tests] or [f"job {job}" for job, _ in self.logs]
        shown = ", ".join(names[:5])
        return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def workflow_run_event(payload: Mapping[str, Any], rules: TriggerRules) -> EventTask | Ignore:
    run = field(payload, "workflow_run")
    if payload.get("action") != "completed" or run.get("conclusion") != "failure":
        return Ignore(f"workflow run {payload.get('action')}/{run.get('conclusion')}: "
                      "only a completed run that failed is fixed")  # fmt: skip
    repository = str(field(payload, "repository", "full_name"))
    head_repo = str((run.get("head_repository") or {}).get("full_name") or "")
    branch = str(run.get("head_branch") or "")
    if head_repo != repository:
        return Ignore(f"the failed run is on a fork's branch ({head_repo or 'unknown'}); "
                      "codegen-ci never works on those")  # fmt: skip
    if not branch or branch == payload["repository"].get("default_branch"):
        return Ignore(f"the failed run is on the default branch {branch!r}, not on a pull request")
    pulls = [p for p in run.get("pull_requests") or [] if isinstance(p, Mapping)]
    number = int(pulls[0]["number"]) if pulls else None
    actor, actor_type = user_of(run.get("triggering_actor") or run.get("actor") or
                              payload.get("sender"))  # fmt: skip
    name = clean_untrusted(str(run.get("name") or "CI"))
    run_id = int_field(payload, "workflow_run", "id")
    head_sha, url = str(run.get("head_sha") or ""), str(run.get("html_url") or "")
    ci = CiRun(run_id, name, branch, head_sha, url)
    return EventTask(
        kind="ci_failure", task="", title=_short(f"Fix failing CI ({name}) on {branch}"),
        issue_number=number, pr_number=number, comment_id=None, actor=actor,
        actor_type=actor_type, spec_overrides={}, spec_path=None,
        delivery_key=f"ci-{branch}", ci_run=ci,
    )  # fmt: skip


def ci_task_text(ci: CiRun, failures: CiFailures, where: str) -> str:
    parts = [
        f"The CI workflow {ci.name!r} failed on {where} (branch {ci.head_branch}, commit "
        f"{ci.head_sha[:12]}). Make the failing checks pass with the smallest correct change "
        "to the code; do not weaken or skip the tests.",
    ]
    if failures.tests:
        listed = "\n\n".join(f"{test}\n{message[:MAX_MESSAGE]}".strip()
                             for test, message in failures.tests[:MAX_FAILURES])  # fmt: skip
        more = len(failures.tests) - MAX_FAILURES
        parts.append(f"Failing tests from the run's JUnit reports ({len(failures.tests)}):\n"
                     + fence("failing tests reported by CI", listed)
                     + (f"\n({more} more not shown)" if more > 0 else ""))  # fmt: skip
    for job, tail in failures.logs:
        parts.append(f"The run left no JUnit report; the end of the log of job {job!r}:\n"
                     + fence(f"CI log of job {job}", tail))  # fmt: skip
    return "\n\n".join(parts)


def branch_prefixes(git_branch: str) -> tuple[str, ...]:
    """The prefixes of branches codegen-ci pushes: `codegen/`, and the spec's own."""
    own = git_branch.split("{", 1)[0]
    return tuple(dict.fromkeys(p for p in ("codegen/", own) if p and p.endswith("/")))
