"""The task's description, as the rest of the run sees it.

Takes YAML (a spec file, `.codegen.yml` from the default branch, a settings block) and the
action's inputs; returns one validated, frozen `Spec` (pydantic), layered by the contract's
precedence: flag > spec > action input > .codegen.yml > environment > default.
"""
