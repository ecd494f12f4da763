"""What the dev-cluster's simulated pod-based operators (:mod:`.tekton`, :mod:`.argo`,
:mod:`.sandbox_flux`) share: one object of a kind reconciled at a time, its Pods (or Jobs) created
through ``create`` (mkhub dev-cluster passes its API, so Kueue's webhooks see them) and owned by it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hub.store.interface import AlreadyExists, Conflict, InvalidObject, NotFound, Object, Store

from .apps import RETRY_SECONDS

log = logging.getLogger(__name__)

Clock = Callable[[], float]


def owner_ref(obj: Object, api_version: str, kind: str) -> dict[str, Any]:
    meta = obj["metadata"]
    return {"apiVersion": api_version, "kind": kind, "name": meta["name"], "uid": meta.get("uid", ""),
            "controller": True, "blockOwnerDeletion": True}


class OwnerObjectController:
    """Reconciles one object of ``KIND`` at a time: events only, a timer after a refused create."""

    KIND = ""

    def __init__(self, store: Store, clock: Clock, create: Callable[[Object], Object] | None = None) -> None:
        self.store = store
        self.clock = clock
        self.create = create or store.create

    def reconcile_all(self) -> None:
        objs, _ = self.store.list(self.KIND)
        for obj in objs:
            self.reconcile(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    def reconcile(self, namespace: str, name: str) -> float | None:
        for _ in range(5):
            try:
                obj = self.store.get(self.KIND, namespace, name)
                if obj is None or obj["metadata"].get("deletionTimestamp"):
                    return None
                return self._reconcile(obj)
            except NotFound:
                return None
            except Conflict:
                continue
        return None

    def _reconcile(self, obj: Object) -> float | None:
        raise NotImplementedError

    def _make(self, obj: Object, what: str) -> tuple[Object | None, float | None]:
        """Create ``obj`` through ``create``: (the object, None), or (None, when to try again) if refused."""
        try:
            return self.create(obj), None
        except AlreadyExists:
            return self.store.get(obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"]), None
        except InvalidObject as exc:
            log.warning("%s: %s refused: %s", what, obj["kind"], exc)
            return None, self.clock() + RETRY_SECONDS

    def _write_status(self, obj: Object, status: dict[str, Any]) -> None:
        if status != (obj.get("status") or {}):
            self.store.update_status({**obj, "status": status})
