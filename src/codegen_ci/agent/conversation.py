"""The conversation with the model: every message, appended to `transcript.jsonl` as it
happens (redacted), and loaded back from it when a stopped run is resumed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codegen_ci.report import Round
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.untrusted import Untrusted, fence, strip_invisible


class Conversation:
    """All messages, appended to `transcript.jsonl` as they happen (redacted)."""

    def __init__(
        self,
        transcript: Path,
        messages: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.messages: list[dict[str, Any]] = list(messages)
        self._transcript = transcript
        transcript.parent.mkdir(parents=True, exist_ok=True)

    def add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        # Redact each string, then serialise: masking the serialised line could cut an
        # escape sequence and leave a line that no longer parses (and `resume` could not load).
        stamped = {"ts": round(time.time(), 3), **message}
        line = json.dumps(_redact_strings(stamped, REDACTOR.redact), ensure_ascii=False)
        with self._transcript.open("a", encoding="utf-8") as f:
            f.write(line + "\n")

    @classmethod
    def load(cls, transcript: Path) -> Conversation:
        messages = []
        for line in transcript.read_text(encoding="utf-8").splitlines():
            if line.strip():
                data = json.loads(line)
                data.pop("ts", None)
                messages.append(data)
        return cls(transcript, _complete_steps(messages))

    def resume_note(self, last_rounds: Sequence[Round] = ()) -> None:
        """Tell the model the run was stopped, and what the last validation round found (test
        ids and messages are the repository's text: fenced as data)."""
        lines = [
            "[The run was stopped and is now resumed. The files on disk are current; "
            "continue the task.]"
        ]
        for rnd in last_rounds:
            if not rnd.passed and rnd.failures:
                listed = Untrusted.join(
                    "\n",
                    (
                        Untrusted("- ")
                        + f.id.map(strip_invisible)
                        + Untrusted(": ")
                        + f.message.map(lambda m: strip_invisible(m[:300]))
                        for f in rnd.failures[:20]
                    ),
                )
                lines.append(f"Validation round {rnd.iteration} failed:")
                lines.append(fence("failing tests", listed).rstrip("\n"))
        self.add({"role": "user", "content": "\n".join(lines)})


def _redact_strings(obj: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {key: _redact_strings(value, redact) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [_redact_strings(item, redact) for item in obj]
    return obj


def _complete_steps(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop a trailing assistant step whose tool results were cut off by an interruption."""
    for i in range(len(messages) - 1, -1, -1):
        calls = messages[i].get("tool_calls")
        if messages[i]["role"] == "assistant" and calls:
            answered = {m.get("tool_call_id") for m in messages[i + 1 :] if m["role"] == "tool"}
            if not {c["id"] for c in calls} <= answered:
                return messages[:i]
            break
    return messages
