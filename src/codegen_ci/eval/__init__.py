"""`codegen-ci eval`: tasks from a repository's own history, the check that keeps them, and
the judging and tables of runs on them (the command itself is commands/eval.py)."""
