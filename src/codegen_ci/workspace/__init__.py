"""Where the model works: a git worktree on its own branch, our guarded git calls,
the one subprocess runner, and the model's shell.

Takes a `Spec` and the user's repository; returns a `Worktree` (and, at the end, one commit
of exactly the agent's changes). Nothing here knows about models or GitHub.
"""
