"""Raw REST calls for what PyGithub has no method for: review threads and their replies, a
workflow run's artifacts, jobs and logs. Each call is retried like every publisher operation.

Downloads (an artifact's zip, a job's log) answer with a redirect to short-lived storage:
the token goes only to the API host, never along the redirect.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from github import GithubException

from codegen_ci.publish.github import GitHubPublisher

PAGE = 100
MAX_PAGES = 30


def rest_json(gh: GitHubPublisher, what: str, method: str, path: str,
              body: dict[str, Any] | None = None) -> Any:  # fmt: skip
    return gh.retried(what, lambda: gh.request_json(method, path, body))


def rest_list(gh: GitHubPublisher, what: str, path: str, key: str | None = None) -> list[Any]:
    """Every item of a paginated list (`key`: where the list sits in an object answer)."""
    items: list[Any] = []
    for page in range(1, MAX_PAGES + 1):
        sep = "&" if "?" in path else "?"
        data = rest_json(gh, what, "GET", f"{path}{sep}per_page={PAGE}&page={page}")
        batch = data.get(key, []) if key and isinstance(data, dict) else data
        if not isinstance(batch, list):
            break
        items += batch
        if len(batch) < PAGE:
            break
    return items


def download(gh: GitHubPublisher, what: str, path: str, max_bytes: int) -> bytes:
    """The body of `path` (following GitHub's redirect without the token), at most
    `max_bytes`; a larger body is cut there."""
    url = gh.target.api_url.rstrip("/") + path

    def run() -> bytes:
        accept = {"Accept": "application/vnd.github+json"}
        request = urllib.request.Request(url, headers=accept)  # noqa: S310 (the API URL)
        request.add_unredirected_header("Authorization", f"Bearer {gh.target.token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 (the API URL)
                return bytes(answer.read(max_bytes))
        except urllib.error.HTTPError as exc:  # as PyGithub's error: 4xx are not retried
            raise GithubException(exc.code, _error_body(exc), dict(exc.headers)) from None

    return gh.retried(what, run)


def _error_body(exc: urllib.error.HTTPError) -> Any:
    try:
        return json.loads(exc.read() or b"{}")
    except ValueError:
        return {"message": exc.reason}
