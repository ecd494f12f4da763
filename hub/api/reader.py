"""A small path-tracking reader for manifest dicts.

Every typed getter records a :class:`~hub.api.errors.FieldError` with the full
field path instead of raising, so one pass over a manifest reports every
problem at once and parsing never crashes on bad input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import FieldErrors
from .limits import int_range
from .quantity import QuantityError, resource_value

_MISSING = object()


class Reader:
    """A view of one mapping inside a manifest, at ``path``."""

    __slots__ = ("data", "path", "errors")

    def __init__(self, data: Mapping[str, Any] | None, path: str, errors: FieldErrors) -> None:
        self.data: Mapping[str, Any] = data if data is not None else {}
        self.path = path
        self.errors = errors

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str) -> Any:
        return self.data.get(key)

    def child(self, key: str) -> Reader:
        value = self.data.get(key)
        if value is None:
            return Reader({}, self.at(key), self.errors)
        if not isinstance(value, Mapping):
            self.errors.invalid(self.at(key), value, "must be an object")
            return Reader({}, self.at(key), self.errors)
        return Reader(value, self.at(key), self.errors)

    def opt_child(self, key: str) -> Reader | None:
        if self.data.get(key) is None:
            return None
        return self.child(key)

    def items(self, key: str) -> list[Reader]:
        """A list of objects, each as a Reader at ``key[i]``."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.errors.invalid(self.at(key), value, "must be a list")
            return []
        out: list[Reader] = []
        for i, item in enumerate(value):
            path = f"{self.at(key)}[{i}]"
            if not isinstance(item, Mapping):
                self.errors.invalid(path, item, "must be an object")
                continue
            out.append(Reader(item, path, self.errors))
        return out

    def string(self, key: str, default: str = "") -> str:
        value = self.data.get(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        if not isinstance(value, str):
            self.errors.invalid(self.at(key), value, "must be a string")
            return default
        return value

    def opt_string(self, key: str) -> str | None:
        if self.data.get(key) is None:
            return None
        return self.string(key)

    def strings(self, key: str) -> list[str]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.errors.invalid(self.at(key), value, "must be a list of strings")
            return []
        return list(value)

    def string_map(self, key: str) -> dict[str, str]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.errors.invalid(self.at(key), value, "must be a map of strings")
            return {}
        out: dict[str, str] = {}
        for k, v in value.items():
            if not isinstance(k, str) or not isinstance(v, str | int | float | bool):
                self.errors.invalid(f"{self.at(key)}[{k}]", v, "must be a string")
                continue
            out[k] = v if isinstance(v, str) else _scalar_text(v)
        return out

    def integer(
        self, key: str, default: int | None = None, *, minimum: int | None = None, bits: int = 64
    ) -> int | None:
        """An integer field (``bits``: 32 for Kubernetes' int32 fields); a string is a type error, as in Kubernetes."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.errors.invalid(self.at(key), value, f"must be an integer, not {_type_name(value)}")
            return default
        low, high = int_range(bits)
        if not low <= value <= high:
            self.errors.invalid(self.at(key), value, f"must fit in a {bits}-bit signed integer")
            return default
        if minimum is not None and value < minimum:
            self.errors.invalid(self.at(key), value, f"must be greater than or equal to {minimum}")
        return int(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.errors.invalid(self.at(key), value, "must be a boolean")
            return default
        return value

    def quantity(self, key: str, resource: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        try:
            return resource_value(resource, value)
        except QuantityError as exc:
            self.errors.invalid(self.at(key), value, str(exc))
            return None

    def resource_list(self, key: str) -> dict[str, int]:
        """A ``corev1.ResourceList``: resource name -> quantity."""
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.errors.invalid(self.at(key), value, "must be a map of resource name to quantity")
            return {}
        out: dict[str, int] = {}
        for name, qty in value.items():
            try:
                out[str(name)] = resource_value(str(name), qty)
            except QuantityError as exc:
                self.errors.invalid(f"{self.at(key)}[{name}]", qty, str(exc))
        return out

    def enum(self, key: str, allowed: tuple[str, ...], default: str) -> str:
        value = self.string(key, default)
        if value not in allowed:
            self.errors.invalid(self.at(key), value, f"supported values: {', '.join(repr(a) for a in allowed)}")
            return default
        return value


def _type_name(value: object) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _scalar_text(value: int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
