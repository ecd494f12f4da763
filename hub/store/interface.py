"""The state store contract shared by every back end.

Objects are plain JSON-able Kubernetes-style manifests (``apiVersion``, ``kind``,
``metadata``, ``spec``, ``status``) keyed by (kind, namespace, name); cluster-scoped
objects have namespace ``""``. The store knows no schemas.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

Object = dict[str, Any]
"""A manifest as stored and returned: a plain, JSON-able dict."""

ObjectList = list[Object]


# --------------------------------------------------------------------------- errors


class StoreError(Exception):
    """Base class of every error the store raises."""


class InvalidObject(StoreError, ValueError):
    """The manifest cannot be stored (no kind or name, not JSON-able...)."""


class _KeyedError(StoreError):
    """An error about one object; the message names its kind, namespace and name."""

    reason = ""

    def __init__(self, key: ObjectKey, detail: str = "") -> None:
        self.key = key
        super().__init__(f"{key}: {self.reason}" + (f" ({detail})" if detail else ""))


class NotFound(_KeyedError):
    reason = "not found"


class AlreadyExists(_KeyedError):
    reason = "already exists"


class Conflict(_KeyedError):
    """Optimistic concurrency failure: the caller's resourceVersion is stale."""

    reason = "conflict: the object has been modified; re-read it and retry"


class Gone(StoreError):
    """The requested resourceVersion is no longer (or not yet) in the change log: re-list."""

    def __init__(self, resource_version: int, oldest: int, newest: int) -> None:
        self.resource_version = resource_version
        super().__init__(
            f"resourceVersion {resource_version} is gone: the change log holds "
            f"({oldest}, {newest}]; list again and watch from the list's resourceVersion"
        )


# --------------------------------------------------------------------------- keys & events


class ObjectKey(NamedTuple):
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectKey:
        """The key of a manifest; raises InvalidObject when kind or name is missing."""
        if not isinstance(obj, Mapping):
            raise InvalidObject(f"an object must be a mapping, not {type(obj).__name__}")
        kind = obj.get("kind")
        meta = obj.get("metadata")
        if not isinstance(kind, str) or not kind:
            raise InvalidObject("object has no kind")
        if not isinstance(meta, Mapping):
            raise InvalidObject(f"{kind} has no metadata")
        name = meta.get("name")
        namespace = meta.get("namespace") or ""
        if not isinstance(name, str) or not name:
            raise InvalidObject(f"{kind} has no metadata.name")
        if not isinstance(namespace, str):
            raise InvalidObject(f"{kind} {name}: metadata.namespace must be a string")
        return cls(kind, namespace, name)

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


class EventType(enum.StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    object: Object
    """The object after the change; for DELETED, the last state with the deletion's resourceVersion."""
    resource_version: int

    @property
    def key(self) -> ObjectKey:
        return ObjectKey.of(self.object)


@runtime_checkable
class Watch(Protocol):
    """A stream of changes in commit order. Single consumer; close() may come from any thread."""

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event; None on timeout or once closed. May raise Gone if the
        consumer fell behind the retained change log."""
        ...

    def close(self) -> None: ...

    def __iter__(self) -> Iterator[WatchEvent]:
        """Blocks for events until close()."""
        ...

    def __enter__(self) -> Watch: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


# --------------------------------------------------------------------------- the store


@runtime_checkable
class Store(Protocol):
    """Synchronous, thread-safe object store with optimistic concurrency and watch.

    Every returned dict is the caller's own deep copy. resourceVersions are strings of
    one global, strictly increasing integer counter shared by all kinds.
    """

    def create(self, obj: Mapping[str, Any]) -> Object:
        """Store a new object; sets uid and creationTimestamp (unless present),
        generation=1 and resourceVersion. Raises AlreadyExists."""
        ...

    def update(self, obj: Mapping[str, Any]) -> Object:
        """Replace metadata and spec, keeping the stored status. generation grows only
        when the spec changes. A no-op update writes nothing. Raises NotFound, Conflict."""
        ...

    def update_status(self, obj: Mapping[str, Any]) -> Object:
        """Replace only status. Raises NotFound, Conflict."""
        ...

    def delete(
        self, kind: str, namespace: str, name: str, *, resource_version: str | int | None = None
    ) -> Object:
        """Delete and return the object. With finalizers it is only marked
        (metadata.deletionTimestamp) and goes once an update clears them.
        Raises NotFound, Conflict."""
        ...

    def get(self, kind: str, namespace: str, name: str) -> Object | None: ...

    def list(
        self, kind: str, namespace: str | None = None, label_selector: Selector | None = None
    ) -> tuple[ObjectList, int]:
        """Objects sorted by (namespace, name), and the store's resourceVersion at that
        moment, to watch from. namespace None means all namespaces."""
        ...

    def watch(self, kinds: Iterable[str] | None = None, since: int = 0) -> Watch:
        """Changes with resourceVersion > since. Raises Gone if since is older than the
        retained change log (or newer than the store)."""
        ...

    def batch(self) -> AbstractContextManager[None]:
        """All writes inside commit together or not at all; events are published after
        commit. Nested batches join the outer one."""
        ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------- label selectors

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
_OPERATORS: frozenset[str] = frozenset(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))

# Kubernetes label syntax: an optional DNS-subdomain prefix and a name of at most 63 chars.
_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_KEY_RE = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}$")
_VALUE_RE = re.compile(rf"^{_NAME}?$")


class LabelSelectorError(ValueError):
    """A label selector that does not parse."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op == "NotIn":  # an absent label is "not in" any set, as in Kubernetes
            return labels.get(self.key) not in self.values
        value = labels.get(self.key)
        if value is None:
            return False
        if op == "In":
            return value in self.values
        try:
            have, want = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want

    def __str__(self) -> str:
        op, key, values = self.operator, self.key, self.values
        if op == "Exists":
            return key
        if op == "DoesNotExist":
            return "!" + key
        if op in ("Gt", "Lt"):
            return f"{key}{'>' if op == 'Gt' else '<'}{values[0]}"
        if len(values) == 1:
            return f"{key}{'=' if op == 'In' else '!='}{values[0]}"
        return f"{key} {'in' if op == 'In' else 'notin'} ({','.join(values)})"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed selector: the AND of its requirements. Empty matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        """The Kubernetes string form (what the API server's labelSelector= takes)."""
        return ",".join(str(r) for r in self.requirements)


Selector = str | Mapping[str, Any] | LabelSelector
"""What selector arguments accept: string form, dict form or an already parsed selector."""


def _requirement(key: str, operator: str, values: Iterable[Any] = ()) -> Requirement:
    if operator not in _OPERATORS:
        raise LabelSelectorError(f"unknown operator {operator!r} for key {key!r}")
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise LabelSelectorError(f"invalid label key {key!r}")
    vals = tuple(values)
    for v in vals:
        if not isinstance(v, str) or not _VALUE_RE.match(v):
            raise LabelSelectorError(f"invalid label value {v!r} for key {key!r}")
    if operator in ("In", "NotIn") and not vals:
        raise LabelSelectorError(f"{operator} on {key!r} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and vals:
        raise LabelSelectorError(f"{operator} on {key!r} takes no values")
    if operator in ("Gt", "Lt"):
        if len(vals) != 1 or not re.fullmatch(r"-?[0-9]+", vals[0]):
            raise LabelSelectorError(f"{operator} on {key!r} needs exactly one integer value")
    else:
        vals = tuple(sorted(set(vals)))
    return Requirement(key, operator, vals)  # type: ignore[arg-type]  # operator checked above


# One token: an operator, a parenthesis, a comma, or a run of anything else.
_TOKEN_RE = re.compile(r"\s*(==|!=|=|!|<|>|\(|\)|,|[^\s=!<>(),]+)")


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:  # pragma: no cover - the pattern accepts every non-space character
            raise LabelSelectorError(f"cannot parse label selector {text!r} at {pos}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


_SPECIAL = frozenset(("==", "!=", "=", "!", "<", ">", "(", ")", ","))


def _parse_string(text: str) -> list[Requirement]:
    toks = _tokenize(text)
    reqs: list[Requirement] = []
    i = 0

    def error(msg: str) -> LabelSelectorError:
        return LabelSelectorError(f"label selector {text!r}: {msg}")

    def word(what: str) -> str:
        nonlocal i
        if i >= len(toks) or toks[i] in _SPECIAL:
            raise error(f"expected {what}")
        i += 1
        return toks[i - 1]

    while i < len(toks):
        if toks[i] == "!":
            i += 1
            reqs.append(_requirement(word("a key after '!'"), "DoesNotExist"))
        else:
            key = word("a key")
            op = toks[i] if i < len(toks) else ","
            if op == ",":
                reqs.append(_requirement(key, "Exists"))
            elif op in ("=", "==", "!="):
                i += 1
                # "key=" selects the empty value, as Kubernetes allows.
                value = "" if i >= len(toks) or toks[i] == "," else word("a value")
                reqs.append(_requirement(key, "NotIn" if op == "!=" else "In", [value]))
            elif op in ("<", ">"):
                i += 1
                reqs.append(_requirement(key, "Gt" if op == ">" else "Lt", [word("an integer")]))
            elif op in ("in", "notin"):
                i += 1
                if i >= len(toks) or toks[i] != "(":
                    raise error(f"expected '(' after {op}")
                i += 1
                values: list[str] = []
                while True:
                    values.append(word("a value"))
                    if i < len(toks) and toks[i] == ",":
                        i += 1
                        continue
                    if i < len(toks) and toks[i] == ")":
                        i += 1
                        break
                    raise error("expected ',' or ')' in value list")
                reqs.append(_requirement(key, "In" if op == "in" else "NotIn", values))
            else:
                raise error(f"unexpected {op!r} after key {key!r}")
        if i < len(toks):
            if toks[i] != ",":
                raise error(f"expected ',' but found {toks[i]!r}")
            i += 1
            if i >= len(toks):
                raise error("trailing ','")
    return reqs


def _parse_mapping(sel: Mapping[str, Any]) -> list[Requirement]:
    unknown = set(sel) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise LabelSelectorError(f"unknown label selector fields: {sorted(unknown)}")
    reqs: list[Requirement] = []
    match_labels = sel.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise LabelSelectorError("matchLabels must be a mapping")
    for key, value in match_labels.items():
        reqs.append(_requirement(key, "In", [value]))
    expressions = sel.get("matchExpressions") or []
    if not isinstance(expressions, list | tuple):
        raise LabelSelectorError("matchExpressions must be a list")
    for expr in expressions:
        if not isinstance(expr, Mapping):
            raise LabelSelectorError(f"matchExpressions entry must be a mapping, not {expr!r}")
        op = expr.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise LabelSelectorError(
                f"matchExpressions operator must be In, NotIn, Exists or DoesNotExist, not {op!r}"
            )
        values = expr.get("values") or []
        if not isinstance(values, list | tuple):
            raise LabelSelectorError(f"matchExpressions values must be a list, not {values!r}")
        reqs.append(_requirement(expr.get("key", ""), op, values))
    return reqs


def parse_label_selector(selector: Selector | None) -> LabelSelector:
    """Parse a selector given in the Kubernetes string form
    (``a=b,c!=d,e in (x,y),f notin (z),g,!h``, also ``==``, ``k>1``, ``k<1``) or the
    metav1.LabelSelector dict form (``matchLabels`` / ``matchExpressions``).
    None and empty select everything. Raises LabelSelectorError."""
    if selector is None:
        return LabelSelector()
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, str):
        return LabelSelector(tuple(_parse_string(selector)))
    if isinstance(selector, Mapping):
        return LabelSelector(tuple(_parse_mapping(selector)))
    raise LabelSelectorError(f"a label selector must be a string or a mapping, not {type(selector).__name__}")


def selector_matches(selector: Selector | None, labels: Mapping[str, str] | None) -> bool:
    """Whether labels satisfy selector (any form accepted by parse_label_selector)."""
    return parse_label_selector(selector).matches(labels)
