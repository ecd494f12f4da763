"""Reading user manifests: multi-document YAML (or JSON) text into plain dicts."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import yaml

from hub.api import fastjson
from hub.api.limits import MAX_DEPTH, MAX_REQUEST_BYTES, TooDeep, check_depth
from hub.api.meta import format_time
from hub.api.yamlshape import YamlShapeError, check_yaml_shape


class ManifestError(Exception):
    """The text is not YAML, or a document is not an object. One line, naming where."""


@dataclass(frozen=True, slots=True)
class Document:
    index: int  # 1-based position in the text, for messages
    manifest: Any  # a dict unless the document is malformed (parse_object reports that)


def _jsonable(value: Any) -> Any:
    """YAML turns unquoted timestamps into datetimes; the store keeps JSON only."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.datetime):
        return format_time((value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp())
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _check_shape(text: str, where: str) -> None:
    """Refuse, before PyYAML's recursive composer runs, text that nests too deep or expands too far."""
    try:
        check_yaml_shape(text)
    except YamlShapeError as exc:
        at = f" line {exc.line} column {exc.column}" if exc.line is not None else ""
        raise ManifestError(f"error parsing {where}:{at}: the document {exc.what}") from None


# libyaml's loader when PyYAML was built with it: several times faster than the pure-Python one.
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not representable in JSON")


def _load_json(text: str) -> list[Any] | None:
    """The one document of a JSON text (JSON is YAML too, only much cheaper to parse), or None
    when the text is not plain JSON: then the YAML loader reads it and reports any error."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return None
    try:
        return [fastjson.loads(stripped, parse_constant=_no_constant)]
    except ValueError:
        return None


def read_documents(text: str, source: str = "") -> list[Document]:
    """Every non-empty document; a ``kind: List`` contributes its ``items``."""
    where = source or "<input>"
    size = len(text.encode())
    if size > MAX_REQUEST_BYTES:
        raise ManifestError(f"error parsing {where}: request entity too large: {size} bytes, the limit is {MAX_REQUEST_BYTES}")
    docs: list[Document] = []
    try:
        as_json = _load_json(text)
        if as_json is not None:
            check_depth(as_json)
            if fastjson.utf8_size(as_json) is None:  # orjson refuses lone surrogates: let json say so
                json.dumps(as_json, ensure_ascii=False).encode()
    except TooDeep:
        raise ManifestError(f"error parsing {where}: nested deeper than {MAX_DEPTH} levels") from None
    except RecursionError:
        raise ManifestError(f"error parsing {where}: nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeEncodeError:
        raise ManifestError(f"error parsing {where}: not valid UTF-8 (a lone surrogate escape)") from None
    if as_json is not None:
        # Strings, numbers, booleans, null, lists and objects only: nothing to convert or check.
        for manifest in as_json:
            if isinstance(manifest, dict) and manifest.get("kind") == "List" and isinstance(manifest.get("items"), list):
                docs.extend(Document(len(docs) + 1, item) for item in manifest["items"])
            else:
                docs.append(Document(len(docs) + 1, manifest))
        return docs
    try:
        _check_shape(text, where)
        loaded = list(yaml.load_all(text, Loader=_YAML_LOADER))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        at = f" line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise ManifestError(f"error parsing {where}:{at}: {problem}") from None
    except RecursionError:  # cannot happen below MAX_DEPTH; one line rather than a traceback if it does
        raise ManifestError(f"error parsing {where}: nested too deep") from None
    for raw in loaded:
        if raw is None:
            continue
        manifest = _jsonable(raw)
        if isinstance(manifest, dict) and manifest.get("kind") == "List" and isinstance(manifest.get("items"), list):
            docs.extend(Document(len(docs) + 1, item) for item in manifest["items"])
        else:
            docs.append(Document(len(docs) + 1, manifest))
    try:
        json.dumps([d.manifest for d in docs], allow_nan=False, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise ManifestError(f"error parsing {where}: not valid UTF-8 (a lone surrogate escape)") from None
    except (TypeError, ValueError) as exc:
        raise ManifestError(f"error parsing {where}: not representable as JSON: {exc}") from None
    return docs
