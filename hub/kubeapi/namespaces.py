"""A Namespace's life as kube-apiserver and Kubernetes' namespace controller run it.

- Create: ``spec.finalizers`` gets ``kubernetes``, as the API server adds it to every new
  Namespace. Updates keep ``spec.finalizers``; only the ``finalize`` subresource
  (``PUT /api/v1/namespaces/NAME/finalize``) changes it.
- Delete: a Namespace with no finalizer at all goes at once; otherwise it gets a
  deletionTimestamp and phase ``Terminating``, and no new object may be created in it.
- The namespace controller (:func:`finalize`, run until it reports done): deletes every
  object in the namespace. Objects with finalizers are only marked and stay until whoever
  owns the finalizer removes it; while anything is left the Namespace's conditions
  ``NamespaceContentRemaining`` and ``NamespaceFinalizersRemaining`` say what, in the
  controller's words. Once the namespace is empty it removes ``kubernetes`` from
  ``spec.finalizers``; the Namespace goes when no finalizer (spec or metadata) is left.

The store holds a deleted object only while ``metadata.finalizers`` is non-empty, so a
terminating Namespace whose ``spec.finalizers`` is not empty carries :data:`HOLD` there
too; reads never show it (:func:`without_hold`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from hub.store.interface import Conflict, NotFound, Object, Store

from .resources import RESOURCES, Resource

SPEC_FINALIZER = "kubernetes"
# The store-level stand-in for spec.finalizers while terminating (the name earlier versions used).
HOLD = "kubernetes"

_OK = (  # the namespace controller's conditions while all is well: type, reason, message
    ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered"),
    ("NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
    ("NamespaceDeletionContentFailure", "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    ("NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"),
    ("NamespaceFinalizersRemaining", "ContentHasNoFinalizers", "All content-preserving finalizers finished"),
)


def spec_finalizers(ns: Object) -> list[str]:
    """A Namespace written straight to the store (no spec.finalizers) has the one every Namespace gets."""
    spec = ns.get("spec")
    if not isinstance(spec, dict) or "finalizers" not in spec:
        return [SPEC_FINALIZER]
    return [str(f) for f in spec.get("finalizers") or []]


def prepare_create(obj: Object) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return  # validation names the field
    finalizers = list(spec.get("finalizers") or [])
    if SPEC_FINALIZER not in finalizers:
        finalizers.append(SPEC_FINALIZER)
    spec["finalizers"] = finalizers


def prepare_update(current: Object, new: Object, subresource: str) -> Object:
    """``spec.finalizers`` from the finalize subresource only; the hold follows it."""
    if subresource == "finalize":
        finalizers = list((new.get("spec") or {}).get("finalizers") or [])
        new = {**current, "metadata": {**current["metadata"], "resourceVersion": new["metadata"].get("resourceVersion")}}
        new["spec"] = {**(current.get("spec") or {}), "finalizers": finalizers}
    else:
        new["spec"] = {**(new.get("spec") or {}), "finalizers": spec_finalizers(current)}
    meta = new["metadata"]
    held = [f for f in meta.get("finalizers") or [] if f != HOLD]
    if current["metadata"].get("deletionTimestamp") and new["spec"]["finalizers"]:
        held.append(HOLD)
    if held:
        meta["finalizers"] = held
    else:
        meta.pop("finalizers", None)
    return new


def without_hold(ns: Object) -> Object:
    """A Namespace as clients see it: the hold is the store's business."""
    finalizers = ns["metadata"].get("finalizers")
    if not finalizers or HOLD not in finalizers:
        return ns
    meta = {**ns["metadata"], "finalizers": [f for f in finalizers if f != HOLD]}
    if not meta["finalizers"]:
        del meta["finalizers"]
    return {**ns, "metadata": meta}


def terminate(store: Store, current: Object) -> tuple[Object, bool]:
    """Delete a Namespace: (what is left of it, whether it is gone)."""
    meta = current["metadata"]
    name = meta["name"]
    if meta.get("deletionTimestamp"):
        return current, False
    if not spec_finalizers(current) and not meta.get("finalizers"):
        return store.delete("Namespace", "", name), True
    if spec_finalizers(current) and HOLD not in (meta.get("finalizers") or []):
        current = store.update({**current, "metadata": {**meta, "finalizers": [*(meta.get("finalizers") or []), HOLD]}})
    marked = store.delete("Namespace", "", name)
    status = {**(marked.get("status") or {}), "phase": "Terminating"}
    return store.update_status({**marked, "status": status}), False


def _conditions(remaining: dict[str, int], by_finalizer: dict[str, int], now: str) -> list[dict[str, Any]]:
    out = []
    for ctype, reason, message in _OK:
        status = "False"
        if ctype == "NamespaceContentRemaining" and remaining:
            parts = sorted(f"{res} has {n} resource instances" for res, n in remaining.items())
            status, reason, message = "True", "SomeResourcesRemain", f"Some resources are remaining: {', '.join(parts)}"
        elif ctype == "NamespaceFinalizersRemaining" and by_finalizer:
            parts = sorted(f"{f} in {n} resource instances" for f, n in by_finalizer.items())
            status, reason = "True", "SomeFinalizersRemain"
            message = f"Some content in the namespace has finalizers remaining: {', '.join(parts)}"
        out.append({"type": ctype, "status": status, "lastTransitionTime": now, "reason": reason, "message": message})
    return out


def _set_conditions(store: Store, ns: Object, conditions: list[dict[str, Any]]) -> None:
    old = {c.get("type"): c for c in (ns.get("status") or {}).get("conditions") or []}
    for c in conditions:  # a condition that did not change keeps its transition time
        before = old.get(c["type"])
        if before and (before.get("status"), before.get("reason"), before.get("message")) == (
                c["status"], c["reason"], c["message"]):
            c["lastTransitionTime"] = before.get("lastTransitionTime", c["lastTransitionTime"])
    if conditions != (ns.get("status") or {}).get("conditions"):
        with contextlib.suppress(NotFound, Conflict):
            store.update_status({**ns, "status": {**(ns.get("status") or {}), "conditions": conditions}})


def finalize(store: Store, name: str, now: str, extra: Sequence[Resource] = ()) -> bool:
    """One pass of the namespace controller over a terminating Namespace; True when it has no
    more to do (the Namespace is gone, or no longer waits on the ``kubernetes`` finalizer)."""
    ns = store.get("Namespace", "", name)
    if ns is None or not ns["metadata"].get("deletionTimestamp"):
        return True
    if SPEC_FINALIZER not in spec_finalizers(ns):
        return True
    remaining: dict[str, int] = {}
    by_finalizer: dict[str, int] = {}
    for res in (*RESOURCES, *extra):
        if not res.namespaced:
            continue
        objects, _ = store.list(res.kind, name)
        for obj in objects:
            meta = obj["metadata"]
            if not meta.get("deletionTimestamp"):
                with contextlib.suppress(NotFound, Conflict):
                    obj = store.delete(res.kind, name, meta["name"])
            if store.get(res.kind, name, meta["name"]) is None:
                continue
            key = f"{res.plural}.{res.group}"
            remaining[key] = remaining.get(key, 0) + 1
            for finalizer in obj["metadata"].get("finalizers") or []:
                by_finalizer[finalizer] = by_finalizer.get(finalizer, 0) + 1
    ns = store.get("Namespace", "", name) or ns
    _set_conditions(store, ns, _conditions(remaining, by_finalizer, now))
    if remaining:
        return False
    ns = store.get("Namespace", "", name)
    if ns is None:
        return True
    rest = [f for f in spec_finalizers(ns) if f != SPEC_FINALIZER]
    updated = prepare_update(ns, {**ns, "spec": {**(ns.get("spec") or {}), "finalizers": rest}}, "finalize")
    with contextlib.suppress(NotFound):
        store.update(updated)  # the store removes it once no metadata finalizer is left
    return True
