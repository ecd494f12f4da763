"""Kubernetes' size and shape limits, checked at the API edge before anything is stored.

The figures are the API server's: a request body of at most 3 MiB
(``MaxRequestBodyBytes``), an object of at most 1.5 MiB (etcd's default request
limit), all annotations of an object together at most 256 KiB
(``TotalAnnotationSizeLimitB``), label keys as qualified names and label values
of at most 63 characters. The nesting limit is ours: no Kubernetes or Kueue
manifest nests deeper than a few dozen levels, and refusing deeper input before
any recursive code (the YAML composer, conversions, validation) walks it keeps a
hostile document from exhausting the stack.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import FieldErrors

MAX_REQUEST_BYTES = 3 * 1024 * 1024
MAX_OBJECT_BYTES = 1536 * 1024
MAX_ANNOTATIONS_BYTES = 256 * 1024
MAX_DEPTH = 100
# Nodes a YAML text may expand to through aliases (``*ref``) before it is refused.
MAX_NODES = 1_000_000

LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63
DNS_SUBDOMAIN_MAX = 253
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

NAME_PART_CHARS = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc')"
)
LABEL_VALUE_CHARS = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue', or 'my_value', or '12345')"
)


class TooDeep(ValueError):
    """A document nests deeper than :data:`MAX_DEPTH`; ``path`` names where."""

    def __init__(self, path: str) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")
        self.path = path


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _children(node: Any) -> Any:
    """A container's values (None: not a container)."""
    kind = type(node)
    if kind is dict:
        return node.values()
    if kind is list or kind is tuple:
        return node
    if kind in _LEAVES:
        return None
    if isinstance(node, Mapping):
        return node.values()
    return node if isinstance(node, list | tuple) else None


def _too_deep(children: Any, budget: int) -> bool:
    """Whether a container among ``children`` nests ``budget`` or more levels of containers.
    Recursion, bounded by the budget (at most :data:`MAX_DEPTH` frames): a call per container
    and a type test per leaf, several times faster than an explicit stack of tuples."""
    for child in children:
        if type(child) in _LEAVES:
            continue
        below = _children(child)
        if below is not None and (budget == 0 or _too_deep(below, budget - 1)):
            return True
    return False


def _within_depth(value: Any, limit: int) -> bool:
    """No map or list at depth ``limit`` or deeper (the question of :func:`check_depth`, without paths)."""
    children = _children(value)
    if children is None:
        return True
    return limit > 0 and not _too_deep(children, limit - 1)


class _Unusual(Exception):
    """A node :func:`copy_within_depth` leaves to the general path (not a dict, list or JSON scalar)."""


def _copy_node(node: Any, budget: int) -> Any:
    if budget == 0:
        raise TooDeep("")
    below = budget - 1
    kind = type(node)
    if kind is dict:
        return {k: v if type(v) in _LEAVES else _copy_node(v, below) for k, v in node.items()}
    if kind is list:
        return [v if type(v) in _LEAVES else _copy_node(v, below) for v in node]
    raise _Unusual


def copy_within_depth(value: dict[str, Any], limit: int = MAX_DEPTH) -> dict[str, Any] | None:
    """A deep copy of a JSON document, made in the same walk that checks :func:`check_depth`'s
    limit (one walk instead of two: parsing every restored object paid for both). None when the
    document is too deep or holds something other than dicts, lists and JSON scalars: then
    :func:`check_depth` (which names the path) and a general copy decide."""
    try:
        out: dict[str, Any] = _copy_node(value, limit)
    except (TooDeep, _Unusual):
        return None
    return out


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise :class:`TooDeep` if ``value`` nests maps and lists deeper than ``limit``; no recursion."""
    if _within_depth(value, limit):
        return  # the common case; only a refusal needs the path, built below
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, Mapping):
            children: list[tuple[str, Any]] = [(f"{path}.{k}" if path else str(k), v) for k, v in node.items()]
        elif isinstance(node, list | tuple):
            children = [(f"{path}[{i}]", v) for i, v in enumerate(node)]
        else:
            continue
        if depth >= limit:
            raise TooDeep(path or "<root>")
        stack.extend((child, depth + 1, child_path) for child_path, child in children)


def qualified_name_errors(key: str) -> list[str]:
    """Kubernetes' ``IsQualifiedName``: ``[prefix/]name``, prefix a DNS subdomain, name 1-63 characters."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
        prefix = None
    elif len(parts) == 2:
        prefix, name = parts
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errs: list[str] = []
    if prefix is not None:
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > DNS_SUBDOMAIN_MAX:
            errs.append(f"prefix part must be no more than {DNS_SUBDOMAIN_MAX} characters")
        elif not _DNS_SUBDOMAIN.match(prefix):
            errs.append(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character"
            )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append(f"name part must be no more than {QUALIFIED_NAME_MAX} characters")
    elif not _NAME_PART.match(name):
        errs.append(NAME_PART_CHARS)
    return errs


def label_value_errors(value: str) -> list[str]:
    """Kubernetes' ``IsValidLabelValue``."""
    errs: list[str] = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if not _LABEL_VALUE.match(value):
        errs.append(LABEL_VALUE_CHARS)
    return errs


def validate_labels(labels: Mapping[str, str], path: str, errs: FieldErrors) -> None:
    """``ValidateLabels``: keys are qualified names, values valid label values; errors at ``path``."""
    for key, value in labels.items():
        for reason in qualified_name_errors(key):
            errs.invalid(path, key, reason)
        for reason in label_value_errors(value):
            errs.invalid(path, value, reason)


def validate_annotations(annotations: Mapping[str, str], path: str, errs: FieldErrors) -> None:
    """``ValidateAnnotations``: keys are qualified names (case-insensitively); 256 KiB in all."""
    total = 0
    for key, value in annotations.items():
        for reason in qualified_name_errors(key.lower()):
            errs.invalid(path, key, reason)
        total += len(key.encode()) + len(value.encode())
    if total > MAX_ANNOTATIONS_BYTES:
        errs.add(path, f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes")


def int_range(bits: int) -> tuple[int, int]:
    return (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
