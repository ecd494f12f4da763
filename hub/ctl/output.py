"""``-o`` formats, ``--sort-by`` and ``--show-labels`` of ``mkhub get``, as kubectl prints them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import printers
from .args import FORMATS
from .errors import CliError
from .jsonpath import JSONPathError, find, render, text_of

Object = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Output:
    """One ``-o`` value, checked: ``kind`` is "", wide, yaml, json, name, jsonpath or custom-columns."""

    kind: str
    arg: str = ""

    @classmethod
    def parse(cls, value: str | None) -> Output:
        if not value:
            return cls("")
        if value in ("wide", "yaml", "json", "name"):
            return cls(value)
        for prefix in ("jsonpath", "custom-columns"):
            if value.startswith(prefix + "="):
                arg = value[len(prefix) + 1 :]
                if not arg:
                    raise CliError(f"{prefix} format specified but no {'template' if prefix == 'jsonpath' else 'column spec'} given")
                out = cls(prefix, arg)
                if prefix == "custom-columns":
                    out.columns()  # check the spec before asking the hub
                return out
        allowed = ", ".join(FORMATS)
        raise CliError(f'unable to match a printer suitable for the output format "{value}", the allowed formats are: {allowed}')

    def columns(self) -> list[tuple[str, str]]:
        out = []
        for part in self.arg.split(","):
            header, sep, path = part.partition(":")
            if not sep or not header or not path:
                raise CliError(f'custom-columns format: expected HEADER:PATH (e.g. NAME:.metadata.name), got "{part}"')
            out.append((header, path))
        return out


def sort_objects(objects: list[Object], expression: str) -> list[Object]:
    """kubectl's ``--sort-by``: by the first value the JSONPath finds (numbers as numbers); missing ones first."""

    def key(obj: Object) -> tuple[int, float, str]:
        try:
            found = find(expression, obj)
        except JSONPathError as exc:
            raise CliError(f"couldn't parse --sort-by {expression!r}: {exc}") from None
        if not found:
            return (0, 0.0, "")
        value = found[0]
        if isinstance(value, int | float) and not isinstance(value, bool):
            return (1, float(value), "")
        return (2, 0.0, text_of(value))

    return sorted(objects, key=key)


def custom_columns(spec: Output, objects: Sequence[Object], header: bool = True) -> str:
    columns = spec.columns()
    rows: list[list[str]] = [[h for h, _ in columns]] if header else []
    for obj in objects:
        row = []
        for _, path in columns:
            try:
                found = find(path, obj)
            except JSONPathError as exc:
                raise CliError(f"custom-columns: {exc}") from None
            row.append(",".join(text_of(v) for v in found) if found else "<none>")
        rows.append(row)
    return printers.format_table(rows) if rows else ""


def jsonpath(template: str, data: Any) -> str:
    try:
        return render(template, data)
    except JSONPathError as exc:
        raise CliError(f"error executing jsonpath {template!r}: {exc}") from None
