"""Validation errors that name the object, the field and the reason."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem at one field path, e.g. ``spec.resourceGroups[0].flavors[1].name``."""

    path: str
    reason: str
    value: object = None
    has_value: bool = False

    def __str__(self) -> str:
        if self.has_value:
            return f"{self.path}: Invalid value: {_show(self.value)}: {self.reason}"
        return f"{self.path}: {self.reason}"


def _show(value: object) -> str:
    text = repr(value) if not isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # what str.splitlines splits on, and C1


def one_line(text: str) -> str:
    """Control characters (newlines above all) escaped: an error is always exactly one line."""
    return _CONTROL.sub(lambda m: json.dumps(m.group())[1:-1], text)


@dataclass(slots=True)
class ValidationError(Exception):
    """An object Kueue's webhooks would refuse. ``str()`` is one line per field error."""

    kind: str
    name: str
    namespace: str = ""
    errors: list[FieldError] = field(default_factory=list)

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    @property
    def object_ref(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f'{self.kind} "{ns}{self.name}"'

    @property
    def message(self) -> str:
        details = "; ".join(str(e) for e in self.errors) or "invalid"
        return one_line(f"{self.object_ref} is invalid: {details}")

    def __str__(self) -> str:
        return self.message


class FieldErrors:
    """Collects field errors while parsing or validating one object."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def add(self, path: str, reason: str) -> None:
        self.items.append(FieldError(path, reason))

    def invalid(self, path: str, value: object, reason: str) -> None:
        self.items.append(FieldError(path, reason, value, True))

    def required(self, path: str) -> None:
        self.items.append(FieldError(path, "Required value"))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_for(self, kind: str, name: str, namespace: str = "") -> None:
        if self.items:
            raise ValidationError(kind, name or "<unnamed>", namespace, list(self.items))
