"""The CLI's commands, each a function taking the parsed arguments and returning an exit code;
`cli.py` maps the error tree to the contract's exit codes in one place.

`run.py` starts a run and resumes one (`run`, `resume`) and shows the result; `run_driver.py`
is one pipeline run as every command starts it (its id, its worktree, signals, the progress
display); `run_dir.py` owns the run directory and its `run.json`; `run_candidates.py` drives
several candidates of one run; `publish_local.py` is `run --push`/`--pr` outside Actions.
`action.py` is the GitHub Actions entrypoint (`action_pr_loop.py`: its work on an existing
pull request), `batch.py` many specs at once, `eval.py` the history evaluation, `init.py` the
starter configuration and workflows (`init_detect.py`, `init_node.py`, `init_ci.py`,
`init_checks.py`, `init_tox.py`, `init_env.py`: the repository's commands), `validate.py`
the commands that read files and report (`validate`, `schema`, `junit`).
"""
