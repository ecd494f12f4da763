"""What the embedded store checks of a write before it changes anything: the resourceVersion
precondition, the key, and which fields the server keeps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hub.store.interface import Conflict, InvalidObject, ObjectKey

# Server-managed metadata an update cannot change.
SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "generation", "resourceVersion")


def spec_part(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What generation tracks: everything but metadata and status (and the type fields)."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def check_rv(key: ObjectKey, given: object, stored: int) -> None:
    if given is None or given == "":
        return
    try:
        want = int(str(given))
    except ValueError:
        raise Conflict(key, f"invalid resourceVersion {given!r}") from None
    if want != stored:
        raise Conflict(key, f"given resourceVersion {want}, stored {stored}")


def key_or_refusal(obj: Mapping[str, Any]) -> ObjectKey | InvalidObject:
    try:
        return ObjectKey.of(obj)
    except InvalidObject as e:
        return e
