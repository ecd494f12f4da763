"""Turning Dispatch manifests into Workloads, parsing and validating each distinct spec once.

Workloads from the same Job template share their spec; parsing it (pod
templates, quantities, validation) is most of an agent's work per copy. The
parsed spec of a manifest is kept (a bounded LRU keyed by the spec's canonical
JSON) and later manifests with the same spec only get their own metadata.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from hub.api.errors import ValidationError
from hub.api.meta import ObjectMeta
from hub.api.registry import parse_object
from hub.api.workload import Workload, WorkloadStatus


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


class WorkloadParser:
    def __init__(self, *, partial_admission: bool = True, cache_size: int = 4096) -> None:
        self.partial_admission = partial_admission
        self.cache_size = cache_size
        self._specs: OrderedDict[str, Workload] = OrderedDict()
        self.hits = 0

    def parse(self, manifest: dict[str, Any], text: str = "") -> Workload:
        """A Workload from a manifest; raises ValidationError (or ValueError) when it is not one.

        ``text``: the JSON the manifest was decoded from, if any. Its suffix from the top-level
        ``"spec"`` member on (the hub writes keys sorted, so spec comes last) is a cheap cache key:
        any suffix that starts at a ``,"spec":`` holds the whole spec value, so equal suffixes mean
        equal specs even when the match lands earlier than the top level.
        """
        if manifest.get("kind") != "Workload":
            raise ValueError(f"expected a Workload, got {manifest.get('kind')!r}")
        at = text.find(',"spec":') if text else -1
        if at >= 0:
            key = f"{manifest.get('apiVersion')}{text[at:]}"
        else:
            key = json.dumps([manifest.get("apiVersion"), manifest.get("spec")], sort_keys=True, separators=(",", ":"))
        template = self._specs.get(key)
        meta = manifest.get("metadata")
        if template is not None and isinstance(meta, dict) and meta.get("name") and meta.get("namespace"):
            self._specs.move_to_end(key)
            self.hits += 1
            return replace(
                template,
                meta=ObjectMeta(
                    name=str(meta["name"]),
                    namespace=str(meta["namespace"]),
                    uid=str(meta.get("uid") or ""),
                    labels=_strings(meta.get("labels")),
                    annotations=_strings(meta.get("annotations")),
                ),
                status=WorkloadStatus(),
            )
        wl = parse_object(manifest, partial_admission=self.partial_admission)
        if not isinstance(wl, Workload):
            raise ValidationError("Workload", "", "", [])
        # Keep a pristine copy: the engine changes the returned object (status, priority).
        self._specs[key] = replace(wl, status=WorkloadStatus())
        if len(self._specs) > self.cache_size:
            self._specs.popitem(last=False)
        return wl
