"""Request bodies as the API server reads them: at most ``MaxRequestBodyBytes`` (413 as soon as
more is announced or read), decoded from JSON, YAML or protobuf, no deeper than
:data:`hub.api.limits.MAX_DEPTH` (400 before anything walks it), YAML whose aliases would expand
past :data:`hub.api.limits.MAX_NODES` refused before it is built, and the keys a JSON object
repeats reported for ``fieldValidation`` (``duplicate field``)."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from aiohttp import web

from hub.api import fastjson
from hub.api.limits import MAX_DEPTH, MAX_REQUEST_BYTES, TooDeep, check_depth
from hub.api.yamlshape import YamlShapeError, check_yaml_shape

from . import errors, protobuf
from .patch import APPLY_PATCH_CBOR, APPLY_PATCH_YAML, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH_YAML)


def encode_json(obj: Any) -> bytes:
    """Compact JSON of a response or watch event, through orjson (the encoding was a tenth of the
    dev-cluster's CPU); UTF-8 as Go's encoder writes it. A value orjson and ``allow_nan=False``
    refuse (a NaN a client sent) is written as the standard library writes it."""
    try:
        return fastjson.dumps(obj).encode()
    except ValueError:
        return json.dumps(obj, separators=(",", ":")).encode()


def media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def _yaml_shape(text: str) -> None:
    """Refuse YAML that nests too deep or whose aliases expand too far, before anything is built."""
    try:
        check_yaml_shape(text)
    except YamlShapeError as exc:
        raise errors.bad_request(f"the request body {exc.what}") from None


async def read_body(request: web.BaseRequest) -> bytes:
    """The body, refused with 413 as soon as its announced or read size passes the API server's
    limit (``MaxRequestBodyBytes``): the rest is never read."""
    length = request.content_length
    if length is not None and length > MAX_REQUEST_BYTES:
        raise errors.too_large(MAX_REQUEST_BYTES)
    content = request.content
    # What has arrived: a small request's whole body comes with its headers, and then needs no
    # async iteration (two awaits and an iterator per write, about 1% of a small write's CPU).
    first = content.read_nowait()
    if len(first) > MAX_REQUEST_BYTES:
        raise errors.too_large(MAX_REQUEST_BYTES)
    if content.at_eof():
        return first
    chunks: list[bytes] = [first]
    size = len(first)
    async for chunk in content.iter_any():
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise errors.too_large(MAX_REQUEST_BYTES)
        chunks.append(chunk)
    return b"".join(chunks)


# A JSON string literal (escapes included): what is left of a valid text without them holds
# colons only between keys and values.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_SLOW = object()  # _fast_json: left to the standard library's decoder


def _keys(value: Any) -> int:
    """The keys of every object in ``value``; no recursion (the depth is checked after decoding)."""
    count = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            count += len(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def _fast_json(raw: bytes) -> Any:
    """The text decoded by orjson when it provably repeats no key within an object, else
    :data:`_SLOW` (as for what orjson reads differently: integers past 64 bits, NaN, lone
    surrogates, invalid text). Each key of a text is followed by one colon outside its strings.
    Without escapes (no backslash) the strings decoded are the strings written, so orjson's
    re-encoding, which escapes no colon, holds as many colons as the text unless a repeated key
    (and its value) was dropped. With escapes, the colons outside strings are counted against
    the keys decoded."""
    decoded = fastjson.loads_utf8(raw)
    if decoded is fastjson.UNDECODED:
        return _SLOW
    if b"\\" not in raw:
        again = fastjson.dumps_utf8(decoded)
        if again is not None and again.count(b":") == raw.count(b":"):
            return decoded
    elif _STRING.sub(b"", raw).count(b":") == _keys(decoded):
        return decoded
    return _SLOW


def _json(raw: bytes) -> tuple[Any, list[str]]:
    """Decoded JSON and the keys repeated within one object (the last value wins, as in Go's decoder)."""
    decoded = _fast_json(raw)
    if decoded is not _SLOW:
        return decoded, []
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    repeated.append(key)
                seen.add(key)
        return out

    return json.loads(raw, object_pairs_hook=pairs), repeated


def decode_body(raw: bytes, content_type: str) -> tuple[Any, list[str]]:
    """The decoded body and its repeated keys; 400 for text that is not JSON (or YAML) or that
    nests deeper than :data:`MAX_DEPTH` (checked before anything walks it recursively)."""
    body, repeated = _decode(raw, content_type)
    try:
        check_depth(body)
    except TooDeep as exc:
        where = exc.path if len(exc.path) <= 120 else exc.path[:120] + "..."
        raise errors.bad_request(f"the request body is nested deeper than {MAX_DEPTH} levels (at {where})") from None
    return body, repeated


def _decode(raw: bytes, content_type: str) -> tuple[Any, list[str]]:
    media = media_type(content_type)
    if media == PROTOBUF:
        decoded = protobuf.decode(raw)
        if decoded is None:
            raise errors.unsupported_media_type(media)
        return decoded, []
    if media in ("application/cbor", APPLY_PATCH_CBOR):
        raise errors.unsupported_media_type(media)
    if media not in ("", JSON, "application/yaml", "*/*", *_PATCH_TYPES):
        raise errors.unsupported_media_type(media)
    if not raw:
        return None, []
    try:
        if media in ("application/yaml", APPLY_PATCH_YAML):
            text = raw.decode()
            _yaml_shape(text)
            return yaml.safe_load(text), []
        return _json(raw)
    except RecursionError:
        raise errors.bad_request(f"the request body is nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, yaml.YAMLError) as exc:  # UnicodeDecodeError is a ValueError
        raise errors.bad_request(f"the request body is not valid {'YAML' if 'yaml' in media else 'JSON'}: {exc}") from None
