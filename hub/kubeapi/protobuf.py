"""Just enough of Kubernetes' protobuf encoding to read what kubectl sends for a Namespace.

kubectl's typed clients (``kubectl create namespace``) send built-in kinds as
``application/vnd.kubernetes.protobuf`` and do not fall back to JSON when the
server answers 415 (client-go 1.32 falls back only from CBOR). They accept JSON
answers (``Accept: application/vnd.kubernetes.protobuf,application/json``), so a
JSON-only server must read the request body. This module reads the envelope
(``k8s\\x00`` + ``runtime.Unknown``) and a ``v1.Namespace`` (ObjectMeta's
user-set fields, spec.finalizers) into its JSON form; other kinds are refused
with 415, as before.
"""

from __future__ import annotations

from typing import Any

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


def _text(f: Fields, number: int) -> str:
    values = f.get(number)
    return values[-1].decode() if values else ""


def _texts(f: Fields, number: int) -> list[str]:
    return [v.decode() for v in f.get(number, [])]


def _string_map(f: Fields, number: int) -> dict[str, str]:
    out = {}
    for entry in f.get(number, []):
        kv = fields(entry)
        out[_text(kv, 1)] = _text(kv, 2)
    return out


def _object_meta(data: bytes) -> dict[str, Any]:
    f = fields(data)
    meta: dict[str, Any] = {}
    for number, key in ((1, "name"), (2, "generateName"), (3, "namespace"), (6, "resourceVersion"), (5, "uid")):
        value = _text(f, number)
        if value:
            meta[key] = value
    for number, key in ((11, "labels"), (12, "annotations")):
        values = _string_map(f, number)
        if values:
            meta[key] = values
    finalizers = _texts(f, 14)
    if finalizers:
        meta["finalizers"] = finalizers
    return meta


def _namespace(raw: bytes) -> dict[str, Any]:
    f = fields(raw)
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {}}
    if f.get(1):
        obj["metadata"] = _object_meta(f[1][-1])
    if f.get(2):
        finalizers = _texts(fields(f[2][-1]), 1)
        if finalizers:
            obj["spec"] = {"finalizers": finalizers}
    return obj


_DECODERS = {("v1", "Namespace"): _namespace}


def decode(body: bytes) -> dict[str, Any] | None:
    """The JSON form of a protobuf-encoded object mkhub can read, or None."""
    if not body.startswith(MAGIC):
        return None
    try:
        unknown = fields(body[len(MAGIC) :])
        type_meta = fields(unknown[1][-1]) if unknown.get(1) else {}
        key = (_text(type_meta, 1), _text(type_meta, 2))
        decoder = _DECODERS.get(key)
        if decoder is None or not unknown.get(2):
            return None
        return decoder(unknown[2][-1])
    except (ProtobufError, UnicodeDecodeError, IndexError):
        return None
