"""Reading user manifests: multi-document YAML (or JSON) text into plain dicts."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import yaml

from hub.api.meta import format_time


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


def read_documents(text: str, source: str = "") -> list[Document]:
    """Every non-empty document; a ``kind: List`` contributes its ``items``."""
    where = source or "<input>"
    docs: list[Document] = []
    try:
        loaded = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        at = f" line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise ManifestError(f"error parsing {where}:{at}: {problem}") from None
    for raw in loaded:
        if raw is None:
            continue
        manifest = _jsonable(raw)
        if isinstance(manifest, dict) and manifest.get("kind") == "List" and isinstance(manifest.get("items"), list):
            docs.extend(Document(len(docs) + 1, item) for item in manifest["items"])
        else:
            docs.append(Document(len(docs) + 1, manifest))
    try:
        json.dumps([d.manifest for d in docs], allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ManifestError(f"error parsing {where}: not representable as JSON: {exc}") from None
    return docs
