"""A run's lifecycle, one room: every command (`run`, `resume`, `batch`, `eval`, `action`)
starts a run here. `directory.py` owns the output directory and `run.json`; `attempt.py` one
pipeline run (its worktree, the model adapter, signals); `candidates.py` K attempts of one run
and the choice between them.
"""
