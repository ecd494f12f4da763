"""A simulated Kubeflow Trainer v2 controller (``trainer.kubeflow.org/v1alpha1`` TrainJob), after
kubeflow/trainer's, as far as Kueue's examples use it.

What it does, as the real controller does it:

- the TrainJob's runtime (``spec.runtimeRef``: a ClusterTrainingRuntime, or a TrainingRuntime in
  its namespace) is made into a JobSet named as the TrainJob and owned by it (``controller:
  true``: the garbage collector deletes it with the TrainJob), by
  :func:`hub.api.trainjob_kind.child_jobset_spec` (the trainer step's ``numNodes`` and ``node``
  container overrides, ``spec.runtimePatches``); the dev-cluster's JobSet controller runs it;
  while the runtime is missing nothing is made;
- ``spec.suspend`` is the JobSet's; on resume the JobSet's replicated jobs are built again, so
  what Kueue put in its runtime patch on admission (nodeSelector, tolerations, labels,
  annotations) reaches the pod templates while the JobSet is still suspended, as JobSet allows;
- status: ``jobsStatus`` is the JobSet's ``replicatedJobsStatus``; conditions ``Suspended``
  (``Suspended`` / ``Resumed``), ``Complete`` and ``Failed`` with the JobSet's reason and
  message;
- a TrainJob whose ``spec.managedBy`` names another controller (MultiKueue) is left alone;
- a runtime created or changed makes the TrainJobs naming it look again (:class:`RuntimeWatcher`).

Not done (the real controller does): initializer overrides, the ML policies' environment
(``PET_*``, MPI hostfiles), pod group policies, ``trainerStatus``, Events.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any

from hub.api.trainjob_kind import RUNTIME, TRAINER_API_VERSION, TRAINJOB_CONTROLLER, child_jobset_spec
from hub.store.interface import AlreadyExists, Conflict, NotFound, Object, Store

from .jobs import condition_true
from .jobsets import set_condition
from .operators import JOBSET_API_VERSION, JOBSET_KIND

TRAINJOB_KIND = "TrainJob"
COMPLETE, FAILED, SUSPENDED = "Complete", "Failed", "Suspended"

Clock = Callable[[], float]


def _runtime_key(tj: Object) -> tuple[str, str, str]:
    ref = (tj.get("spec") or {}).get("runtimeRef") or {}
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    return kind, tj["metadata"].get("namespace", "") if kind == RUNTIME else "", str(ref.get("name") or "")


def new_jobset(tj: Object, runtime: Object) -> Object:
    meta = tj["metadata"]
    owner = {"apiVersion": TRAINER_API_VERSION, "kind": TRAINJOB_KIND, "name": meta["name"],
             "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": JOBSET_API_VERSION, "kind": JOBSET_KIND,
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace", ""), "ownerReferences": [owner],
                         "labels": {"trainer.kubeflow.org/trainjob-name": meta["name"]}},
            "spec": child_jobset_spec(tj.get("spec") or {}, runtime.get("spec") or {})}


class TrainJobController:
    """Reconciles one TrainJob at a time (no timers: every change it waits for is an event)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def reconcile_all(self) -> None:
        jobs, _ = self.store.list(TRAINJOB_KIND)
        for tj in jobs:
            self.reconcile(tj["metadata"].get("namespace", ""), tj["metadata"]["name"])

    def reconcile(self, namespace: str, name: str) -> None:
        for _ in range(5):  # a conflicting writer (Kueue, kubectl) moved it: read again
            try:
                self._reconcile(namespace, name)
                return
            except NotFound:
                return
            except Conflict:
                continue

    def runtime_watcher(self, kind: str) -> RuntimeWatcher:
        """What the dev-cluster runs for a runtime kind's events: the TrainJobs naming it look again
        (the Trainer watches its runtimes)."""
        return RuntimeWatcher(self, kind)

    def _reconcile(self, namespace: str, name: str) -> None:
        tj = self.store.get(TRAINJOB_KIND, namespace, name)
        if tj is None or tj["metadata"].get("deletionTimestamp"):
            return
        spec = tj.get("spec") or {}
        if spec.get("managedBy") not in (None, "", TRAINJOB_CONTROLLER):
            return
        runtime = self.store.get(*_runtime_key(tj))
        if runtime is None:
            return  # the Trainer cannot build the JobSet; it looks again when the runtime appears
        js = self.store.get(JOBSET_KIND, namespace, name)
        uid = tj["metadata"].get("uid")
        if js is not None and not any(r.get("uid") == uid and r.get("controller")
                                      for r in js["metadata"].get("ownerReferences") or []):
            return  # someone else's JobSet of that name: not ours to touch
        suspend = bool(spec.get("suspend"))
        with self.store.batch():
            if js is None:
                with contextlib.suppress(AlreadyExists):
                    js = self.store.create(new_jobset(tj, runtime))
            elif bool((js.get("spec") or {}).get("suspend")) != suspend:
                js_spec = copy.deepcopy(js.get("spec") or {})
                if not suspend:  # resumed: the templates as the runtime and the patches make them now
                    js_spec["replicatedJobs"] = new_jobset(tj, runtime)["spec"].get("replicatedJobs") or []
                js_spec["suspend"] = suspend
                js = self.store.update({**js, "spec": js_spec})
            status = self._status(tj, js, suspend)
            if status != (tj.get("status") or {}):
                self.store.update_status({**tj, "status": status})

    def _status(self, tj: Object, js: Object | None, suspend: bool) -> dict[str, Any]:
        now = self.clock()
        status: dict[str, Any] = copy.deepcopy(tj.get("status") or {})
        js_status = (js or {}).get("status") or {}
        if js_status.get("replicatedJobsStatus") is not None:
            status["jobsStatus"] = copy.deepcopy(js_status["replicatedJobsStatus"])
        if suspend:
            set_condition(status, (SUSPENDED, "True", "Suspended", "TrainJob is suspended"), now)
        else:
            set_condition(status, (SUSPENDED, "False", "Resumed", "TrainJob is resumed"), now)
        for js_type, type_ in (("Completed", COMPLETE), ("Failed", FAILED)):
            if condition_true(js_status, js_type):
                cond = next(c for c in js_status["conditions"] if c.get("type") == js_type)
                set_condition(status, (type_, "True", str(cond.get("reason") or ""), str(cond.get("message") or "")), now)
        return status


class RuntimeWatcher:
    """A ClusterTrainingRuntime or TrainingRuntime changed: reconcile the TrainJobs that name it."""

    def __init__(self, trainer: TrainJobController, kind: str) -> None:
        self.trainer = trainer
        self.kind = kind

    def reconcile(self, namespace: str, name: str) -> None:
        jobs, _ = self.trainer.store.list(TRAINJOB_KIND, namespace or None)
        for tj in jobs:
            if _runtime_key(tj) == (self.kind, namespace, name):
                self.trainer.reconcile(tj["metadata"].get("namespace", ""), tj["metadata"]["name"])

    def reconcile_all(self) -> None:
        return None  # the Trainer's own pass covers every TrainJob
