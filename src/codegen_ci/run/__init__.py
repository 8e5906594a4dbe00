"""A run's lifecycle, one room: every command (`run`, `batch`, `eval`, `action`) starts a run
here, once, through `start.start(RunRequest) -> Report`; `resume.resume(run_dir)` continues
a stopped one. `start.py` owns the run id, the output directory, the maintainers'
instructions (read once, from the base commit), one attempt or K candidates and the exit
code; `directory.py` the output directory and `run.json`; `attempt.py` one pipeline run (its
worktree, the model adapter, signals); `candidates.py` K attempts of one run and the choice
between them.
"""
