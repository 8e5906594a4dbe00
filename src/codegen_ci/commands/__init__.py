"""The CLI's commands, each a function taking the parsed arguments and returning an exit code;
`cli.py` maps the error tree to the contract's exit codes in one place. A command never imports
another (import-linter's independence contract): what they share lives below, a run's
lifecycle in `run/` (every command starts a run through `run.start`, once), publishing in
`publish/`.

`run.py` starts a run and resumes one (`run`, `resume`) and shows the result.
`action/` is the GitHub Actions entrypoint (`pr_loop.py`: its work on an existing pull
request), `batch.py` many specs at once, `eval.py` the history evaluation (`eval_merge.py`:
shards joined), `init.py` the starter configuration and workflows (`init_detect.py`,
`init_node.py`, `init_ci.py`, `init_checks.py`, `init_tox.py`, `init_env.py`: the
repository's commands), `validate.py` the commands that read files and
report (`validate`, `schema`, `junit`).
"""
