"""Tool arguments nested too deeply are refused by a limit of ours (agent/tools.py:
`nesting`, `MAX_NESTING`), not by the interpreter's recursion limit, which a library loaded in
the same process (mypy's API raises it to 16384) can move."""

from __future__ import annotations

import json
import sys

from codegen_ci.agent.tools import MAX_NESTING, nesting


def test_nesting_counts_arrays_and_objects_not_brackets_in_strings() -> None:
    assert nesting("") == 0
    assert nesting("{}") == 1
    assert nesting('{"path": "a[{[{.txt", "content": "\\"]]]{{{"}') == 1
    assert nesting('{"a": [[1], {"b": [2]}]}') == 4


def test_arguments_deeper_than_the_limit_are_refused_though_json_would_parse_them() -> None:
    deep = '{"path": "a.txt", "content": ' + "[" * 200 + "]" * 200 + "}"
    assert sys.getrecursionlimit() >= 1000
    json.loads(deep)  # control: 201 levels parse under the default limit
    assert nesting(deep) == 201 > MAX_NESTING
