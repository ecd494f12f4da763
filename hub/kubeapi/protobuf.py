"""Kubernetes' protobuf encoding, read: what kubectl's typed clients send.

kubectl's typed clients (``kubectl create namespace|deployment|job|cronjob|priorityclass|
configmap|secret|serviceaccount|service|role|...``) send built-in kinds as
``application/vnd.kubernetes.protobuf`` and do not fall back to JSON when the
server answers 415 (client-go 1.32 falls back only from CBOR). They accept JSON
answers (``Accept: application/vnd.kubernetes.protobuf,application/json``), so a
JSON-only server must read the request body. This module reads the envelope
(``k8s\\x00`` + ``runtime.Unknown``) and the object of any kind of :data:`ROOTS` into its
JSON form, walking the message's fields as Kubernetes' generated.proto numbers them
(:mod:`hub.kubeapi.protobuf_fields`); other kinds are refused with 415.
"""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime
from typing import Any

from .protobuf_fields import MESSAGES

MAGIC = b"k8s\x00"

Fields = dict[int, list[Any]]


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def fields(data: bytes) -> Fields:
    """Field number -> values (ints for varints, bytes for length-delimited)."""
    out: Fields = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated field")
            value, pos = data[pos : pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


# The kinds kubectl's typed clients send as protobuf (kubectl create deployment, job, cronjob,
# priorityclass, configmap, secret, serviceaccount, service, role, rolebinding, ...) and the
# message each is; the fields come from Kubernetes' generated.proto (protobuf_fields.py).
ROOTS = {
    ("v1", "Namespace"): "core.Namespace", ("v1", "Pod"): "core.Pod", ("v1", "ConfigMap"): "core.ConfigMap",
    ("v1", "Secret"): "core.Secret", ("v1", "ServiceAccount"): "core.ServiceAccount", ("v1", "Service"): "core.Service",
    ("apps/v1", "Deployment"): "apps.Deployment", ("apps/v1", "ReplicaSet"): "apps.ReplicaSet",
    ("apps/v1", "StatefulSet"): "apps.StatefulSet", ("batch/v1", "Job"): "batch.Job",
    ("batch/v1", "CronJob"): "batch.CronJob", ("scheduling.k8s.io/v1", "PriorityClass"): "scheduling.PriorityClass",
    **{("rbac.authorization.k8s.io/v1", k): f"rbac.{k}" for k in ("Role", "RoleBinding", "ClusterRole",
                                                                   "ClusterRoleBinding")},
}
# Go pointer fields whose zero value is meaningful (replicas: 0, suspend: false): kept when sent.
# Other scalar zeros are Go's unset values, which the JSON form omits.
_KEEP_ZERO = frozenset({
    "replicas", "value", "parallelism", "completions", "backoffLimit", "suspend", "activeDeadlineSeconds",
    "terminationGracePeriodSeconds", "automountServiceAccountToken", "enableServiceLinks", "immutable",
    "startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit", "globalDefault",
    "ttlSecondsAfterFinished", "revisionHistoryLimit", "partition",
})
_MAX_DEPTH = 64


def _signed(value: int, bits: int) -> int:
    value &= (1 << 64) - 1
    value = value - (1 << 64) if value >= 1 << 63 else value
    return value if bits == 64 else max(min(value, 2**31 - 1), -(2**31))


def _scalar(type_: str, raw: Any) -> Any:
    if type_ == "string":
        return raw.decode()
    if type_ == "bytes":
        return base64.b64encode(raw).decode()
    if type_ == "bool":
        return bool(raw)
    if type_ in ("int32", "int64"):
        return _signed(raw, 64 if type_ == "int64" else 32)
    if type_ == "double":
        return struct.unpack("<d", raw)[0]
    if type_ == "float":
        return struct.unpack("<f", raw)[0]
    raise ProtobufError(f"unknown type {type_}")


def _special(type_: str, raw: bytes) -> tuple[bool, Any]:
    """The types whose JSON form is not an object: times, quantities, int-or-strings, raw JSON."""
    if type_ in ("meta.Time", "meta.MicroTime"):
        f = fields(raw)
        seconds = _signed(f.get(1, [0])[-1], 64)
        nanos = _signed(f.get(2, [0])[-1], 32)
        if not seconds and not nanos:
            return True, None
        when = datetime.fromtimestamp(seconds, tz=UTC)
        if type_ == "meta.MicroTime":
            return True, when.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
        return True, when.strftime("%Y-%m-%dT%H:%M:%SZ")
    if type_ == "resource.Quantity":
        return True, _text(fields(raw), 1)
    if type_ == "intstr.IntOrString":
        f = fields(raw)
        if f.get(1, [0])[-1] == 1:
            return True, _text(f, 3)
        return True, _signed(f.get(2, [0])[-1], 32)
    if type_ in ("runtime.RawExtension", "meta.FieldsV1"):
        data = fields(raw).get(1, [b""])[-1]
        return True, json.loads(data) if data else None
    if type_ == "meta.Duration":
        return True, f"{_signed(fields(raw).get(1, [0])[-1], 64) / 1e9:g}s"
    return False, None


def _value(type_: str, raw: Any, depth: int) -> Any:
    if type_ in MESSAGES:
        special, value = _special(type_, raw)
        return value if special else _message(type_, raw, depth + 1)
    return _scalar(type_, raw)


def _repeated(type_: str, values: list[Any]) -> list[Any]:
    """Scalars of a repeated numeric field may come packed (one length-delimited run of varints)."""
    if type_ not in ("int32", "int64", "bool") or not any(isinstance(v, bytes) for v in values):
        return values
    out: list[Any] = []
    for v in values:
        if isinstance(v, bytes):
            pos = 0
            while pos < len(v):
                n, pos = _varint(v, pos)
                out.append(n)
        else:
            out.append(v)
    return out


def _message(name: str, raw: bytes, depth: int = 0) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        raise ProtobufError("nested too deep")
    schema = MESSAGES[name]
    out: dict[str, Any] = {}
    for number, values in fields(raw).items():
        field = schema.get(number)
        if field is None:
            continue  # a field this server does not know: pruned, as JSON's unknown fields are
        key, type_, mode = field
        if mode == 2:
            entries = [fields(v) for v in values]
            out[key] = {_text(e, 1): _value(type_, e.get(2, [b"" if type_ != "bool" else 0])[-1], depth)
                        for e in entries}
        elif mode == 1:
            out[key] = [_value(type_, v, depth) for v in _repeated(type_, values)]
        else:
            value = _value(type_, values[-1], depth)
            if value in ("", 0, False, None) and type_ not in MESSAGES and key not in _KEEP_ZERO or value is None:
                continue
            out[key] = value
    return out


def decode(body: bytes) -> dict[str, Any] | None:
    """The JSON form of a protobuf-encoded object mkhub can read, or None."""
    if not body.startswith(MAGIC):
        return None
    try:
        unknown = fields(body[len(MAGIC) :])
        type_meta = fields(unknown[1][-1]) if unknown.get(1) else {}
        key = (_text(type_meta, 1), _text(type_meta, 2))
        root = ROOTS.get(key)
        if root is None or not unknown.get(2):
            return None
        return {"apiVersion": key[0], "kind": key[1], **_message(root, unknown[2][-1])}
    except (ProtobufError, UnicodeDecodeError, IndexError, ValueError, struct.error, OverflowError):
        return None


def _text(f: Fields, number: int) -> str:
    values = f.get(number)
    return values[-1].decode() if values else ""
