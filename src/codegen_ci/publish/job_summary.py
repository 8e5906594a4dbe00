"""The Actions job summary of a command that is not the action (`batch`, `eval`, `eval merge`):
Markdown appended to `$GITHUB_STEP_SUMMARY` when running in GitHub Actions, nothing elsewhere.
(The action writes its own through `ActionsIO.append_summary`.)"""

from __future__ import annotations

import os


def job_summary(text: str) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if os.environ.get("GITHUB_ACTIONS") == "true" and path:
        with open(path, "a", encoding="utf-8") as summary:
            summary.write(text)
