"""Reading YAML layers so that every problem names its file, line and key.

The models are passed in, so this module knows YAML and pydantic errors, not the spec.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from codegen_ci.errors import SpecError, SpecProblem

MAX_SPEC_BYTES = 1_000_000
# A spec has a few hundred nodes; aliases may not multiply that into a "billion laughs".
MAX_YAML_NODES = 20_000


def load_yaml_mapping(path: Path) -> dict[str, Any]:
    """Read a YAML file that must hold a mapping; errors are `SpecError`s naming the file."""
    return parse_yaml_mapping(read_spec_text(path), str(path))


def read_spec_text(path: Path) -> str:
    """The file's text, read at most `MAX_SPEC_BYTES` + 1 bytes (`/dev/zero` ends too)."""
    name = str(path)
    try:
        if path.is_dir() or path.is_fifo() or path.is_socket():
            kind = "a directory" if path.is_dir() else "a pipe or socket"
            raise SpecError([SpecProblem(name, None, "", f"is {kind}, not a YAML file")])
        with path.open("rb") as stream:
            raw = stream.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SpecError([SpecProblem(name, None, "", f"cannot read: {reason}")]) from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError([SpecProblem(name, None, "", f"larger than {MAX_SPEC_BYTES} bytes")])
    return raw.decode("utf-8", errors="replace")


def parse_yaml_mapping(text: str, name: str) -> dict[str, Any]:
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError([SpecProblem(name, None, "", f"larger than {MAX_SPEC_BYTES} bytes")])
    try:
        data = bounded_yaml(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or str(exc)
        raise SpecError([SpecProblem(name, line, "", f"YAML error: {problem}")]) from None
    except yaml.YAMLError as exc:
        raise SpecError([SpecProblem(name, None, "", f"YAML error: {exc}")]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise SpecError([SpecProblem(name, 1, "", f"expected a mapping of keys, got a {kind}")])
    return data


def bounded_yaml(text: str) -> Any:
    """`yaml.safe_load`, refusing documents that aliases expand past `MAX_YAML_NODES` nodes
    and nesting too deep for the parser; the node graph is checked before anything is built."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node, {})
        if size > MAX_YAML_NODES:
            raise yaml.YAMLError(
                f"the document expands to more than {MAX_YAML_NODES} values "
                "(aliases repeated to build a huge value are refused)"
            )
        return loader.construct_document(node)
    except RecursionError:
        raise yaml.YAMLError("the document is nested too deeply") from None
    finally:
        loader.dispose()


def _expanded_size(node: yaml.Node, seen: dict[int, int]) -> int:
    """How many nodes `node` stands for once every alias is expanded (memoised per node)."""
    if id(node) in seen:
        return seen[id(node)]
    seen[id(node)] = MAX_YAML_NODES + 1  # a node that contains itself expands without end
    size = 1
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            size += _expanded_size(item, seen)
            if size > MAX_YAML_NODES:
                break
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            size += _expanded_size(key, seen) + _expanded_size(value, seen)
            if size > MAX_YAML_NODES:
                break
    seen[id(node)] = size
    return size


def validation_problems(
    exc: ValidationError, name: str, text: str | None, model: type[BaseModel]
) -> list[SpecProblem]:
    """One problem per pydantic error, with the line of the key in `text` when there is one."""
    lines = _line_index(text) if text else {}
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        key = ".".join(str(p) for p in loc)
        line = _nearest_line(lines, loc)
        if err["type"] == "extra_forbidden":
            message = f"unknown key '{loc[-1]}'" + _suggest(model, loc)
        elif err["type"] == "missing":
            message = "required key is missing"
        else:
            message = f"{err['msg']} (got {_short(err.get('input'))})"
        problems.append(SpecProblem(name, line, key, message))
    return problems


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _suggest(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    fields = _fields_at(model, loc[:-1])
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1)
    return f" (did you mean '{close[0]}'?)" if close else f"; known keys: {', '.join(fields)}"


def _fields_at(model: type[BaseModel], path: Sequence[Any]) -> list[str]:
    current: type[BaseModel] = model
    for part in path:
        field = current.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        current = annotation
    return list(current.model_fields)


def _line_index(text: str) -> dict[tuple[Any, ...], int]:
    """Map each key path in a YAML document to the 1-based line where it appears."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    index: dict[tuple[Any, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[Any, ...]) -> None:
        index[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value
                walk(value_node, (*path, key))
                index[(*path, key)] = key_node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, i))

    if root is not None:
        walk(root, ())
    return index


def _nearest_line(lines: Mapping[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int | None:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None
