"""kubectl's JSONPath templates (``-o jsonpath=``, ``-o custom-columns=``, ``--sort-by``).

A template is text with ``{...}`` actions, as in kubectl:

    {.metadata.name}  {.items[*].metadata.name}  {.items[0].spec}  {.spec.podSets[-1].count}
    {..name}  {.metadata.labels['kueue\\.x-k8s\\.io/queue-name']}  {.items[?(@.spec.queueName=="q")].metadata.name}
    {range .items[*]}{.metadata.name}{"\\t"}{.spec.queueName}{"\\n"}{end}

Several results of one action print space-separated; strings print as they
are, numbers and booleans as JSON, maps and lists as JSON. A path that finds
nothing is an error (``is not found``), as kubectl reports it, except in
custom columns, where it prints ``<none>``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any


class JSONPathError(ValueError):
    """The template cannot be parsed, or a path finds nothing."""


@dataclass(frozen=True, slots=True)
class _Step:
    op: str  # "key", "index", "slice", "wild", "recurse", "filter"
    arg: Any = None


_FILTER = re.compile(r"^\?\(@((?:\.[^=!<>\s]+)*)\s*(==|!=|<=|>=|<|>)?\s*(.*?)\)$")


def _parse_path(text: str) -> list[_Step]:
    """``.a.b[0]['c.d'][*]..e`` into steps."""
    path = text.strip()
    if path.startswith("$"):
        path = path[1:]
    steps: list[_Step] = []
    i = 0
    while i < len(path):
        ch = path[i]
        if path.startswith("..", i):
            i += 2
            m = re.match(r"[^.\[]+", path[i:])
            if not m:
                raise JSONPathError(f"invalid path {text!r}: a name must follow '..'")
            steps.append(_Step("recurse", m.group(0)))
            i += len(m.group(0))
        elif ch == ".":
            i += 1
            m = re.match(r"(?:\\.|[^.\[\\])+", path[i:])
            if not m:
                continue  # "." alone: the current object
            name = m.group(0).replace("\\.", ".")
            steps.append(_Step("wild") if name == "*" else _Step("key", name))
            i += len(m.group(0))
        elif ch == "[":
            end = _closing_bracket(path, i)
            inner = path[i + 1 : end].strip()
            i = end + 1
            steps.append(_bracket(inner, text))
        else:
            m = re.match(r"[^.\[]+", path[i:])
            assert m is not None
            steps.append(_Step("key", m.group(0)))
            i += len(m.group(0))
    return steps


def _closing_bracket(path: str, start: int) -> int:
    depth = 0
    quote = ""
    for j in range(start, len(path)):
        ch = path[j]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return j
    raise JSONPathError(f"invalid path {path!r}: unclosed '['")


def _bracket(inner: str, text: str) -> _Step:
    if inner == "*":
        return _Step("wild")
    if inner[:1] in "'\"" and inner[-1:] == inner[:1]:
        return _Step("key", inner[1:-1].replace("\\.", "."))
    if inner.startswith("?"):
        m = _FILTER.match(inner)
        if not m:
            raise JSONPathError(f"invalid filter {inner!r} in {text!r}")
        path, op, literal = m.group(1), m.group(2), m.group(3).strip()
        value: Any = None
        if op:
            try:
                value = json.loads(literal.replace("'", '"')) if literal else None
            except json.JSONDecodeError:
                value = literal
        return _Step("filter", (_parse_path(path), op, value))
    if ":" in inner:
        parts = [p.strip() for p in inner.split(":")]
        try:
            bounds = tuple(int(p) if p else None for p in parts[:2])
        except ValueError:
            raise JSONPathError(f"invalid slice [{inner}] in {text!r}") from None
        return _Step("slice", bounds)
    try:
        return _Step("index", int(inner))
    except ValueError:
        return _Step("key", inner)


def _apply(step: _Step, values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if step.op == "key":
            if isinstance(value, dict) and step.arg in value:
                out.append(value[step.arg])
        elif step.op == "index":
            if isinstance(value, list) and -len(value) <= step.arg < len(value):
                out.append(value[step.arg])
        elif step.op == "slice":
            if isinstance(value, list):
                out.extend(value[step.arg[0] : step.arg[1]])
        elif step.op == "wild":
            if isinstance(value, dict):
                out.extend(value.values())
            elif isinstance(value, list):
                out.extend(value)
        elif step.op == "recurse":
            out.extend(_recurse(value, step.arg))
        elif step.op == "filter":
            path, op, expected = step.arg
            for item in value if isinstance(value, list) else []:
                found = _walk(path, [item])
                if _compare(found, op, expected):
                    out.append(item)
    return out


def _compare(found: list[Any], op: str | None, expected: Any) -> bool:
    if op is None:
        return bool(found)
    if not found:
        return False
    got = found[0]
    try:
        if op == "==":
            return bool(got == expected or str(got) == str(expected))
        if op == "!=":
            return bool(got != expected and str(got) != str(expected))
        a, b = float(got), float(expected)
    except (TypeError, ValueError):
        return False
    return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]


def _recurse(value: Any, name: str) -> list[Any]:
    out: list[Any] = []
    if isinstance(value, dict):
        if name in value:
            out.append(value[name])
        for child in value.values():
            out.extend(_recurse(child, name))
    elif isinstance(value, list):
        for child in value:
            out.extend(_recurse(child, name))
    return out


def _walk(steps: list[_Step], values: list[Any]) -> list[Any]:
    for step in steps:
        values = _apply(step, values)
    return values


def find(path: str, data: Any) -> list[Any]:
    """Every value ``path`` (with or without braces) selects in ``data``."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    return _walk(_parse_path(text), [data])


def text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None or isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------- templates


@dataclass(frozen=True, slots=True)
class _Node:
    kind: str  # "text", "path", "range"
    value: Any


def _tokens(template: str) -> list[tuple[str, str]]:
    """("text", ...) and ("action", ...) pieces."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(template):
        start = template.find("{", i)
        if start < 0:
            out.append(("text", template[i:]))
            break
        if start > i:
            out.append(("text", template[i:start]))
        depth, j, quote = 0, start, ""
        while j < len(template):
            ch = template[j]
            if quote:
                if ch == "\\":
                    j += 1
                elif ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= len(template):
            raise JSONPathError(f"unclosed action in template {template!r}")
        out.append(("action", template[start + 1 : j].strip()))
        i = j + 1
    return out


def _parse_template(tokens: list[tuple[str, str]], pos: int, template: str) -> tuple[list[_Node], int]:
    nodes: list[_Node] = []
    while pos < len(tokens):
        kind, text = tokens[pos]
        pos += 1
        if kind == "text":
            nodes.append(_Node("text", text))
        elif text == "end":
            return nodes, pos
        elif text.startswith("range "):
            body, pos = _parse_template(tokens, pos, template)
            nodes.append(_Node("range", (_parse_path(text[len("range ") :]), body)))
        elif text[:1] in "'\"" and text[-1:] == text[:1] and len(text) >= 2:
            nodes.append(_Node("text", _unescape(text[1:-1])))
        else:
            nodes.append(_Node("path", (text, _parse_path(text))))
    return nodes, pos


def _unescape(text: str) -> str:
    """A quoted literal's escapes (``\\n``, ``\\t``, ``\\"``) as kubectl's Go strconv.Unquote reads them."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), text)


def _render(nodes: list[_Node], data: Any, out: list[str]) -> None:
    for node in nodes:
        if node.kind == "text":
            out.append(node.value)
        elif node.kind == "range":
            steps, body = node.value
            for item in _walk(steps, [data]):
                _render(body, item, out)
        else:
            text, steps = node.value
            found = _walk(steps, [data])
            if not found and text not in ("", "."):
                raise JSONPathError(f"{text} is not found")
            out.append(" ".join(text_of(v) for v in found))


def render(template: str, data: Any) -> str:
    """The template applied to ``data`` (kubectl's ``-o jsonpath=TEMPLATE``)."""
    if not template.strip():
        raise JSONPathError("the jsonpath template is empty")
    tokens = _tokens(template)
    nodes, pos = _parse_template(tokens, 0, template)
    if pos < len(tokens):
        raise JSONPathError(f"unexpected {{end}} in template {template!r}")
    out: list[str] = []
    _render(nodes, data, out)
    return "".join(out)
