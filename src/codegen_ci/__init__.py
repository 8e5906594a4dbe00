"""codegen-ci: turn a task into a tested pull request."""

__version__ = "0.1.0"
