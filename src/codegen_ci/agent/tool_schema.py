"""The tools' argument models (names fixed by docs/contract.md) and the JSON schemas derived from
them, in the shape of OpenAI function tools."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListFilesArgs(ToolArgs):
    """List files and directories under a path of the repository (recursive, bounded)."""

    path: str = Field(default=".", description="Directory relative to the repository root.")


class ReadFileArgs(ToolArgs):
    """Read a text file; lines come numbered as `N<TAB>text` (the number is not file content).
    Large files come in windows: pass start_line/end_line to read more."""

    path: str = Field(description="File path relative to the repository root.")
    start_line: int | None = Field(default=None, ge=1, description="First line (1-based).")
    end_line: int | None = Field(default=None, ge=1, description="Last line (inclusive).")


class WriteFileArgs(ToolArgs):
    """Create or overwrite a whole file."""

    path: str = Field(description="File path relative to the repository root.")
    content: str = Field(description="The complete new file content.")


class EditFileArgs(ToolArgs):
    """Replace one exact, unique occurrence of old_text with new_text."""

    path: str = Field(description="File path relative to the repository root.")
    old_text: str = Field(description="Exact text to replace; must occur exactly once.")
    new_text: str = Field(description="Replacement text.")


class SearchFilesArgs(ToolArgs):
    """Search file contents with a regular expression (Python syntax)."""

    pattern: str = Field(description="Regular expression.")
    path: str | None = Field(default=None, description="Directory or file to search in.")


class RunCommandArgs(ToolArgs):
    """Run a shell command in the repository root (no network assumptions, bounded time);
    returns the exit code and the head and tail of the output."""

    command: str = Field(description="Shell command.")


def function_schema(name: str, model: type[BaseModel]) -> dict[str, Any]:
    params = model.model_json_schema()
    params.pop("title", None)
    for prop in params.get("properties", {}).values():
        prop.pop("title", None)
        if "anyOf" in prop:  # `int | None` -> a plain optional integer, which all servers accept
            kinds = [a for a in prop.pop("anyOf") if a.get("type") != "null"]
            prop.update(kinds[0])
    description = " ".join((model.__doc__ or "").split())
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": params},
    }
