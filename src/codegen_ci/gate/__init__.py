"""Validation: the repository's own lint and test commands decide.

Takes a `Worktree` and the spec's `validation`; returns a `RoundOutcome` per round (commands,
parsed JUnit, lint errors), classified against the base commit (baseline), and the
reflection message the model gets next.

In the order a run meets them: `preflight.py` (the commands on the untouched code, configuration
errors, `--dry-run`; `project_imports.py`: tests that cannot import the repository's own
package; `missing_dependencies.py`: or a module it does not hold, not installed),
`validation.py` (a round), `environment_check.py` (a failure that is the
environment's, not the model's), `baseline.py` (which failures the base commit has too;
`command_baseline.py`: what a failed command printed, and whether it failed the same way
there), `reflection.py` (the model's next message). `test_runs.py` runs one test command and
holds the ladder of targeted re-runs that validation and baseline both climb;
`pytest_commands.py` and the plugin file `codegen_first.py` are pytest's part in it; `junit/`
reads the reports.
"""
