"""The error tree. Every failure the user should see is a `CodegenError`; the CLI maps its
`exit_code` to the process exit status in one place (`cli.main`).

    CodegenError
    ├── InputError (2)          bad spec, config, arguments, event payload
    │   └── SpecError           carries file, line and key of each problem
    ├── InfraError (3)          a service failed after retries
    │   ├── ModelServiceError   the OpenAI-compatible endpoint
    │   ├── GitHubError         the GitHub REST API
    │   └── GitError            a git command
    └── Interrupted (3)         SIGINT/SIGTERM while running

A task that simply did not succeed (tests never passed, stuck, budget) is not an error: the
pipeline returns a report with status "failed" and the CLI exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """The process exit status (docs/contract.md): the one list of them."""

    SUCCESS = 0
    FAILED = 1  # the task did not succeed (a report with status "failed"), or a spec failed
    INPUT = 2  # bad input: spec, config, arguments, event payload; nothing ran
    INFRA = 3  # a service failed, or the run was interrupted
    KEYBOARD = 130  # Ctrl-C reached the command itself (the shell's convention: 128 + SIGINT)


class CodegenError(Exception):
    exit_code: ExitCode = ExitCode.INFRA

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(CodegenError):
    exit_code = ExitCode.INPUT


@dataclass(frozen=True)
class SpecProblem:
    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        key = f" {self.key}:" if self.key else ""
        return f"{where}:{key} {self.message}"


class SpecError(InputError):
    def __init__(self, problems: list[SpecProblem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


class InfraError(CodegenError):
    exit_code = ExitCode.INFRA


class ModelServiceError(InfraError):
    pass


class GitHubError(InfraError):
    pass


class GitError(InfraError):
    pass


class Interrupted(CodegenError):
    exit_code = ExitCode.INFRA
