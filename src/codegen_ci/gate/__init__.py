"""Validation: the repository's own lint and test commands decide.

Takes a `Worktree` and the spec's `validation`; returns a `RoundOutcome` per round (commands,
parsed JUnit, lint errors), classified against the base commit (baseline), and the
reflection message the model gets next.
"""
