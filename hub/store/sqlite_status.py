"""The text layout of bodies the bulk status write stores, so that the next status write of the
same object can replace the status without decoding the body.

Decoding a stored body (orjson, about 8 µs for a 1.5 KB Workload on the benchmark machine) was
the largest single cost of a status write that misses the store's cache of recent bodies,
which is every admission of a long-pending workload. A body in this layout is written as:

    {"apiVersion":…,"kind":…,"metadata":{"resourceVersion":"<rv>",…},…,"status":{…}}

with ``apiVersion`` and ``kind`` plain strings, ``resourceVersion`` the first field of metadata
and ``status`` the last field, beginning at the offset kept beside the body (``status_at``).
JSON strings escape every quote, so the first ``"metadata":{"resourceVersion":"`` in the text
is the object's own metadata; the status is then replaced by slicing. The result is the text
the layout would give for the decoded object with the new status and resourceVersion. Bodies
written any other way keep no offset and are decoded as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hub.store.interface import Object

_META_RV = '"metadata":{"resourceVersion":"'
_STATUS = ',"status":'
_HEAD = frozenset(("apiVersion", "kind", "metadata", "status"))


def encode_status_layout(obj: Object, encode: Callable[[Any], str]) -> tuple[str, int | None]:
    """``obj`` as text in the layout, and where its status begins; (plain ``encode(obj)``, None)
    when the object cannot take the layout (no status, or type fields that are not strings)."""
    api, kind, meta = obj.get("apiVersion"), obj.get("kind"), obj.get("metadata")
    if (
        "status" not in obj
        or not isinstance(kind, str)
        or not (api is None or isinstance(api, str))
        or not isinstance(meta, dict)
        or not isinstance(meta.get("resourceVersion"), str)
    ):
        return encode(obj), None
    head: Object = {} if api is None else {"apiVersion": api}
    head["kind"] = kind
    layout_meta = {"resourceVersion": meta["resourceVersion"]}
    layout_meta.update(meta)  # resourceVersion keeps the first place
    head["metadata"] = layout_meta
    for field, value in obj.items():
        if field not in _HEAD:
            head[field] = value
    text = encode(head)
    status = encode(obj["status"])
    return f"{text[:-1]}{_STATUS}{status}}}", len(text) - 1


def stored_status(body: str, status_at: int) -> str | None:
    """The status text of a body in the layout; None when the offset does not fit the body."""
    if status_at < 0 or not body.startswith(_STATUS, status_at) or not body.endswith("}"):
        return None
    return body[status_at + len(_STATUS) : -1]


def splice_status(body: str, status_at: int, stored_rv: int, rv: int, status: str) -> tuple[str, int] | None:
    """A body in the layout with ``status`` (text) and ``rv`` in place of its own, and the new
    offset of its status; None when the body is not in the layout after all."""
    if stored_status(body, status_at) is None:
        return None
    at = body.find(_META_RV)
    if at < 0 or at > status_at:
        return None
    at += len(_META_RV)
    old, new = str(stored_rv), str(rv)
    if not body.startswith(f'{old}"', at):
        return None
    moved = status_at + len(new) - len(old)
    return f"{body[:at]}{new}{body[at + len(old) : status_at]}{_STATUS}{status}}}", moved
