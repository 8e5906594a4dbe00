"""The GitHub writes of publishing: comments, reactions, the status comment and the pull
request; the connection, retries, redaction and reads are `GitHubClient`'s (github_client).
"""

from __future__ import annotations

from github.IssueComment import IssueComment

from codegen_ci.publish.github_client import GitHubClient
from codegen_ci.publish.github_pulls import (
    create_pull,
    listed,
    open_pull,
    pull_info,
    request_reviewers,
)
from codegen_ci.publish.github_types import PullInfo
from codegen_ci.publish.neutral import with_markers
from codegen_ci.security.inert_text import break_references
from codegen_ci.security.redact import REDACTOR

PR_MARKER = "<!-- codegen-ci -->"  # on every pull request body the tool writes

__all__ = ["GitHubPublisher"]


class GitHubPublisher(GitHubClient):
    def react(self, comment_id: int, content: str = "eyes") -> None:
        """React to an issue or PR comment (GitHub ignores a repeated reaction)."""
        url = f"/repos/{self.target.repository}/issues/comments/{comment_id}"
        comment = IssueComment(self._gh.requester, url=url)  # lazy: no GET first
        self._call(f"reacting to comment {comment_id}", lambda: comment.create_reaction(content))

    def react_to_issue(self, issue_number: int, content: str = "eyes") -> None:
        issue = self._repo.get_issue(issue_number)
        self._call(f"reacting to #{issue_number}", lambda: issue.create_reaction(content))

    def comment(self, issue_number: int, body: str) -> str:
        """Post a comment on an issue or PR; returns its html_url."""
        text = self._clean(body)
        issue = self._repo.get_issue(issue_number)
        return self._call(
            f"commenting on #{issue_number}", lambda: issue.create_comment(text).html_url
        )

    def upsert_status_comment(self, issue_number: int, body: str, marker: str,
                              hidden: str = "") -> int:  # fmt: skip
        """Edit the comment that carries `marker` (a hidden `<!-- codegen-ci:... -->`), or
        create it, so re-runs keep one status comment; returns its id. Only a comment the
        token's own user wrote counts: anyone can paste the marker into a comment. `hidden`:
        one more marker of the tool's, put last (the run history's records).

        `body` is neutralised (no `<!--` of its own survives), then the markers are attached:
        text the body relays can never carry a marker into the comment."""
        tail = [REDACTOR.redact(hidden)] if hidden else []
        text = with_markers(self._clean(body), head=[marker], tail=tail)
        issue = self._repo.get_issue(issue_number)
        me = self.own_login().casefold()

        def run() -> int:
            found = next((c for c in issue.get_comments()
                          if marker in (c.body or "") and _login(c) == me),
                         None)  # fmt: skip
            if found is None:
                return issue.create_comment(text).id
            if found.body != text:
                found.edit(text)
            return found.id

        return self._call(f"updating the status comment on #{issue_number}", run)

    def open_or_update_pr(
        self,
        *,
        head: str,
        base: str,
        title: str,
        body: str,
        draft: bool = False,
        labels: list[str] | tuple[str, ...] = (),
        reviewers: list[str] | tuple[str, ...] = (),
    ) -> PullInfo:
        """Open a PR from `head` into `base`, or adopt the open one for `head` and update its
        title and body. Reviewers named `org/team` are requested as teams. A draft flag is
        applied only on creation (the REST API cannot convert an existing PR)."""
        # The title is the issue's: no reference in it links another issue's timeline.
        title = break_references(self._clean(title))
        body = with_markers(self._clean(body), head=[PR_MARKER])

        def run() -> PullInfo:
            pull = open_pull(self._repo, self.target, head) or create_pull(
                self._repo, self.target, head, base, title, body, draft
            )
            if (pull.title, pull.body or "") != (title, body):  # an adopted PR
                pull.edit(title=title, body=body)
            present = {label.name for label in listed(lambda: pull.labels)}
            if missing := [name for name in labels if name not in present]:
                pull.add_to_labels(*missing)
            request_reviewers(pull, reviewers)
            return pull_info(pull)

        return self._call(f"opening a pull request from {head} into {base}", run)


def _login(comment: IssueComment) -> str:
    """The comment author's login, casefolded ("" for a deleted account)."""
    return comment.user.login.casefold() if comment.user is not None else ""
