"""The values the GitHub publisher takes and returns, free of PyGithub types."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from codegen_ci.errors import GitHubError, InputError


@dataclass(frozen=True)
class GitHubTarget:
    api_url: str
    repository: str  # "owner/name"
    token: str = field(repr=False)
    server_url: str = "https://github.com"
    run_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitHubTarget:
        """Read the target the way GitHub Actions sets it; the token from input
        `github-token` (either spelling) or GITHUB_TOKEN."""
        names = ("INPUT_GITHUB-TOKEN", "INPUT_GITHUB_TOKEN", "GITHUB_TOKEN")
        token = next((env[n] for n in names if env.get(n)), "")
        repository = env.get("GITHUB_REPOSITORY", "")
        if not token or "/" not in repository:
            raise InputError("GitHub needs GITHUB_REPOSITORY=owner/name and a github-token")
        server = env.get("GITHUB_SERVER_URL") or "https://github.com"
        run_id = env.get("GITHUB_RUN_ID")
        return cls(
            api_url=env.get("GITHUB_API_URL") or "https://api.github.com",
            repository=repository,
            token=token,
            server_url=server,
            run_url=f"{server}/{repository}/actions/runs/{run_id}" if run_id else None,
        )


@dataclass(frozen=True)
class PullInfo:
    number: int
    html_url: str
    title: str
    state: str
    draft: bool
    head_ref: str
    head_sha: str
    head_repo: str | None  # full name; None when the fork was deleted
    base_ref: str
    is_fork: bool  # the head lives in another repository: never push there


@dataclass(frozen=True)
class IssueInfo:
    number: int
    title: str
    body: str
    author: str
    html_url: str
    is_pull_request: bool
    labels: tuple[str, ...]


class PullRequestsNotPermitted(GitHubError):
    """The repository does not let the workflow token open pull requests."""

    def __init__(self, repository: str, compare_url: str) -> None:
        super().__init__(
            f"GitHub Actions may not create pull requests in {repository}; allow it under "
            "Settings > Actions > General > Workflow permissions, or use a token that may. "
            f"The branch is pushed; open the pull request by hand: {compare_url}"
        )
        self.compare_url = compare_url
