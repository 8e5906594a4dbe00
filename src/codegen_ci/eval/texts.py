"""A history task's text: the commit message, and, when GitHub can be asked (in Actions, or
with GITHUB_TOKEN / GH_TOKEN), the pull request the commit came from and the issues it closed.

The pull request is the one GitHub's own merge messages name (`Merge pull request #N from ...`
or a squash merge's `Subject (#N)`); the issues are those the commit message or the pull
request's body closes (`closes #N`, `fixes #N`, `resolves #N`; at most three). They are read
through the normal GitHub client (publish/github.py: retried, exit 3 when GitHub stays
down); a number GitHub does not know, or any lookup that fails, leaves the commit message alone
as the text, with a note. All of it is the repository's and its contributors' text: cleaned of
hidden content and fenced as data (security/untrusted.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from codegen_ci.errors import CodegenError
from codegen_ci.eval.history import Task
from codegen_ci.security.untrusted import Untrusted, clean_untrusted, fence
from codegen_ci.workspace import git

PULL_IN_SUBJECT = re.compile(r"^Merge pull request #(\d+)\b|\(#(\d+)\)\s*$")
CLOSES = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d+)\b", re.IGNORECASE)
GITHUB_REMOTE = re.compile(r"(?:github\.com[:/])(?P<repo>[\w.-]+/[\w.-]+?)(?:\.git)?/?$")
MAX_CHARS = 20_000
MAX_ISSUES = 3

# number -> (title, body); raises CodegenError
Lookup = Callable[[int], tuple[Untrusted, Untrusted]]


def task_text(task: Task, lookup: Lookup | None) -> tuple[str, list[str]]:
    """The text the model gets for `task`, and notes on lookups that failed."""
    parts = [fence("commit message", task.message.map(clean_untrusted), max_chars=MAX_CHARS)]
    notes: list[str] = []
    if lookup is not None:
        bodies = [task.message.raw_for("matching")]
        if pull := pull_number(task.subject.raw_for("matching")):
            found = _read(lookup, pull, "pull request", parts, notes)
            bodies.append(found)
        for number in closed_issues(bodies, exclude=pull):
            _read(lookup, number, "issue", parts, notes)
    intro = "Make the change described below in this repository."
    return intro + "\n\n" + "\n".join(parts), notes


def pull_number(subject: str) -> int | None:
    match = PULL_IN_SUBJECT.search(subject)
    return int(match[1] or match[2]) if match else None


def closed_issues(texts: list[str], *, exclude: int | None) -> list[int]:
    found: list[int] = []
    for text in texts:
        for match in CLOSES.finditer(text):
            number = int(match[1])
            if number != exclude and number not in found:
                found.append(number)
    return found[:MAX_ISSUES]


def _read(lookup: Lookup, number: int, kind: str, parts: list[str], notes: list[str]) -> str:
    try:
        title, body = lookup(number)
    except CodegenError as exc:
        notes.append(f"{kind} #{number}: {exc.message.splitlines()[0][:200]}")
        return ""
    text = (title + Untrusted("\n\n") + body).map(lambda t: clean_untrusted(t.strip()))
    parts.append(fence(f"{kind} #{number}", text, max_chars=MAX_CHARS))
    return body.raw_for("matching")  # searched for the issues it closes


def github_lookup(root: Path) -> Lookup | None:
    """Issue and pull-request reads for the repository, when a token and the repository's name
    are known (GITHUB_REPOSITORY, else origin's URL); None otherwise."""
    names = ("INPUT_GITHUB-TOKEN", "INPUT_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN")
    token = next((os.environ[n] for n in names if os.environ.get(n)), "")
    if not token:
        return None
    repository = os.environ.get("GITHUB_REPOSITORY", "")
    if not repository:
        url = git.git(["remote", "get-url", "origin"], root, check=False).strip()
        match = GITHUB_REMOTE.search(url)
        if not match:
            return None
        repository = match["repo"]
    from codegen_ci.publish.github import GitHubPublisher, GitHubTarget

    target = GitHubTarget(
        api_url=os.environ.get("GITHUB_API_URL") or "https://api.github.com",
        repository=repository,
        token=token,
        server_url=os.environ.get("GITHUB_SERVER_URL") or "https://github.com",
    )
    backoff = float(os.environ.get("CODEGEN_RETRY_BACKOFF", "1.0"))
    client = GitHubPublisher(target, backoff=backoff, retries=2)

    def lookup(number: int) -> tuple[Untrusted, Untrusted]:
        issue = client.get_issue(number)  # a pull request is an issue too
        return issue.title, issue.body

    return lookup
