"""`.codegen.yml` as committed on the default branch.

It chooses the commands that run, so it is read from the default branch's commit (fetched from
origin), never from the working tree or a pull request head: a fork or a PR author could
otherwise pick the commands that run with the workflow's secrets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codegen_ci.spec.layers import REPO_CONFIG_NAME, parse_layer_text
from codegen_ci.workspace import git


def default_branch_config(root: Path, commit: str) -> dict[str, Any]:
    """The validated `.codegen.yml` layer at `commit` ({} when the file is not there)."""
    blob = f"{commit}:{REPO_CONFIG_NAME}"
    if not git.ok(["cat-file", "-e", blob], root):
        return {}
    text = git.git(["show", blob], root)
    return parse_layer_text(text, f"{REPO_CONFIG_NAME} (default branch)", is_spec=False)
