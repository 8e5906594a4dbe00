"""Where the model works: a git worktree on its own branch, our guarded git calls,
the one subprocess runner, and the model's shell.

Takes a `Spec` and the user's repository; returns a `Worktree` (and, at the end, one commit
of exactly the agent's changes). Nothing here knows about models or GitHub.

The rooms: `worktree.py` (the `Worktree`: making it, its guarded git, change tracking, the
commit), `git.py` (our git calls and the environment they run in), `git_guard.py` (git files
and refs a command must not change), `commit_guard.py` (what one of our commits may hold),
`paths.py` (globs, the path guard, symlinks), `finalize.py` (after each turn and at the end:
protected paths, refusals, the commit and its message), `proc.py` (the one subprocess runner)
with `process_reaper.py` (the reaper it starts as a program of its own), `output_cap.py`
(bounded logs and the output directory's cap), `shell.py` (the model's `run_command`),
`private_dir.py` (folders of the run's own), `dependency_links.py` (installed dependencies in
the worktree).
"""
