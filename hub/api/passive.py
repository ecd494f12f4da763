"""Kinds mkhub stores and lists but does not act on.

Kueue's ``ProvisioningRequestConfig`` (the ProvisioningRequest admission check's
parameters) is, after Job and Topology, the kind Kueue's published examples use
most; a file mixing it with queues must go in unchanged. mkhub keeps them (with their schema's basic rules checked) so
that ``get``/``delete`` work, and says at apply time that it does not act on
them. Core ``Event`` objects are kept the same way, for ``mkhub get events``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import FieldErrors
from .meta import ObjectMeta
from .reader import Reader
from .validation import validate_name

PROVISIONING_VERSIONS = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
EVENT_VERSIONS = ("v1", "events.k8s.io/v1")


@dataclass(slots=True)
class Passive:
    """A stored object the engine never sees; ``spec`` is kept as written."""

    meta: ObjectMeta
    kind: str
    spec: dict[str, Any] = field(default_factory=dict)


def _spec(r: Reader) -> dict[str, Any]:
    raw = r.raw("spec")
    return dict(raw) if isinstance(raw, dict) else {}


def read_provisioning_config(r: Reader, meta: ObjectMeta) -> Passive:
    spec = r.child("spec")
    if not spec.string("provisioningClassName"):
        r.errors.required(spec.at("provisioningClassName"))
    spec.string_map("parameters")
    spec.strings("managedResources")
    return Passive(meta, "ProvisioningRequestConfig", _spec(r))


def validate_passive(obj: Passive, errs: FieldErrors) -> None:
    validate_name(obj.meta, errs, namespaced=False)


def read_event(r: Reader, meta: ObjectMeta) -> Passive:
    r.child("involvedObject")
    r.string("reason")
    r.string("message")
    r.string("type")
    return Passive(meta, "Event", {})


def validate_event(obj: Passive, errs: FieldErrors) -> None:
    validate_name(obj.meta, errs, namespaced=True)
