"""The embedded hub's Deployment, ReplicaSet, StatefulSet, CronJob and LeaderWorkerSet controllers,
and the pod-based frameworks' (Tekton, Argo Workflows, Sandbox, Flux MiniCluster: :mod:`hub.devcluster.tekton`,
:mod:`.argo`, :mod:`.sandbox_flux`).

``mkhub serve`` over SQLite has no cluster behind it, so it runs the dev-cluster's simulated
controllers (:mod:`hub.devcluster.apps`, :mod:`.cronjobs`, :mod:`.leaderworkersets`) on its own
store, in a thread of their own, driven by the store's watch and their timers, with the garbage
collector for what they own (ReplicaSets, Pods, Jobs). What a cluster's admission webhooks do to
the objects they create happens in :meth:`EmbeddedOperators.create`, through the checks of
``mkhub apply`` (:class:`hub.service.apply.Applier`): a CronJob's queued Job is created suspended,
a Pod of a parent Kueue manages gets Kueue's gate, label and finalizer (and a LeaderWorkerSet's its
group); the hub's reconciler then queues, admits and runs them as any Job or Pod
(:mod:`hub.controllers.pods`; a serving Workload runs until its Pods are deleted,
:mod:`hub.controllers.run_length`). The parents' templates are marked by ``mkhub apply``
(:mod:`.parent_marks`).

What they are not, beyond what the dev-cluster's controllers are not: nothing runs a Pod Kueue does
not manage (it stays Pending); the Pods' statuses are the simulated runner's (Running and Ready once
admitted, for a serving Workload until deleted); no deletion propagation policies (``mkhub delete``
deletes in the background: dependents go once their owner is gone).
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable

from hub.api.config import Configuration
from hub.api.errors import ValidationError
from hub.api.jobkinds import leaderworkerset as lws
from hub.api.jobkinds.serving import statefulset_owner, with_current_total_count
from hub.devcluster.apps import AppsController, Key, controller_ref
from hub.devcluster.argo import WorkflowController
from hub.devcluster.cronjobs import CronJobController
from hub.devcluster.gc import GarbageCollector
from hub.devcluster.leaderworkersets import LeaderWorkerSetController
from hub.devcluster.podbased import OwnerObjectController
from hub.devcluster.sandbox_flux import MiniClusterController, SandboxController
from hub.devcluster.tekton import PipelineRunController, TaskRunController
from hub.store.interface import EventType, Gone, InvalidObject, Object, Store, Watch, WatchEvent

from .apply import Applier

log = logging.getLogger(__name__)

Clock = Callable[[], float]
# The pod-based frameworks' operators (Tekton, Argo Workflows, Sandbox, Flux MiniCluster): Kueue queues
# the Pods (a MiniCluster: the Job) they make, through its plain-Pod (Job) integration.
POD_BASED = ("PipelineRun", "TaskRun", "Workflow", "Sandbox", "MiniCluster")
OWNER_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "CronJob", lws.KIND, *POD_BASED)
WATCHED = (*OWNER_KINDS, "Pod", "Job")
DEPENDENTS = ("ReplicaSet", "Pod", "Job", "TaskRun")  # what these controllers create, collected when the owner goes
MAX_ROUNDS = 50


class EmbeddedOperators:
    """The controllers; :meth:`step` does what is due now (tests drive it with their clock),
    :meth:`start`/:meth:`stop` run it in a thread."""

    def __init__(self, store: Store, config: Configuration, *, clock: Clock = time.time) -> None:
        self.store = store
        self.clock = clock
        self.applier = Applier(store, partial_admission=config.gate("PartialAdmission"), clock=clock, pod_webhook=config)
        self.apps = AppsController(store, clock, self.create)
        self.cronjobs = CronJobController(store, clock, self.create)
        self.lws = LeaderWorkerSetController(store, clock, self.create)
        self.pod_based: dict[str, OwnerObjectController] = {c.KIND: c for c in (
            PipelineRunController(store, clock, self.create), TaskRunController(store, clock, self.create),
            WorkflowController(store, clock, self.create), SandboxController(store, clock, self.create),
            MiniClusterController(store, clock, self.create))}
        self.gc = GarbageCollector(store, DEPENDENTS)
        self._by_kind = {kind: c for c in (self.apps, self.cronjobs) for kind in c.KINDS}
        self._dirty: set[Key] = set()
        self._gc_namespaces: set[str] = set()
        self._timers: list[tuple[float, str, str, str]] = []
        self._watch: Watch | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def create(self, obj: Object) -> Object:
        """Create what a controller made, as an API server with Kueue's webhooks would store it;
        InvalidObject when refused (the controllers try again later)."""
        if obj.get("kind") == "Pod":  # as the pod webhook: a LeaderWorkerSet Pod's group, a StatefulSet's count
            obj = lws.group_defaults(obj)
            owner = statefulset_owner(obj)
            if owner is not None:
                obj = with_current_total_count(obj, self.store.get("StatefulSet", str(obj["metadata"].get("namespace")), owner))
        try:
            with self.store.batch():
                manifest, _ = self.applier.admit(obj, None)
                return self.store.create(manifest)
        except ValidationError as exc:
            raise InvalidObject(str(exc)) from None

    # --- events

    def handle(self, event: WatchEvent) -> None:
        obj = event.object
        kind, meta = str(obj.get("kind") or ""), obj["metadata"]
        ns = str(meta.get("namespace") or "")
        self._dirty.update(k for c in (self.apps, self.cronjobs) for k in c.keys_for(obj))
        if (kind == lws.KIND or kind in self.pod_based) and event.type != EventType.DELETED:
            self._dirty.add((kind, ns, str(meta["name"])))
        ref = controller_ref(obj)  # a child changed (a Pod, a Job, a TaskRun): its owner looks again
        if ref is not None and (ref.get("kind") == lws.KIND or ref.get("kind") in self.pod_based):
            self._dirty.add((str(ref["kind"]), ns, str(ref.get("name") or "")))
        if event.type == EventType.DELETED and kind in OWNER_KINDS:
            self._gc_namespaces.add(ns)

    def _reconcile(self, kind: str, ns: str, name: str) -> float | None:
        if kind == lws.KIND:
            return self.lws.reconcile(ns, name)
        if kind in self.pod_based:
            return self.pod_based[kind].reconcile(ns, name)
        return self._by_kind[kind].reconcile(kind, ns, name)

    def resync(self) -> None:
        """Everything once (start-up: what changed while the hub was down)."""
        self._dirty.update(k for c in (self.apps, self.cronjobs) for k in c.all_keys())
        for kind in (lws.KIND, *self.pod_based):
            objs, _ = self.store.list(kind)
            self._dirty.update((kind, o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objs)
        self.gc.collect()

    def step(self) -> float | None:
        """Reconcile what is dirty or due; returns the next timer (None: none)."""
        for _ in range(MAX_ROUNDS):
            self._drain()
            now = self.clock()
            while self._timers and self._timers[0][0] <= now:
                _, kind, ns, name = heapq.heappop(self._timers)
                self._dirty.add((kind, ns, name))
            if not (self._dirty or self._gc_namespaces):
                break
            namespaces, self._gc_namespaces = sorted(self._gc_namespaces), set()
            for ns in namespaces:
                self.gc.collect(ns)
            keys, self._dirty = sorted(self._dirty), set()
            for kind, ns, name in keys:
                due = self._reconcile(kind, ns, name)
                if due is not None:
                    heapq.heappush(self._timers, (due, kind, ns, name))
        return self._timers[0][0] if self._timers else None

    def _drain(self) -> None:
        while self._watch is not None:
            try:
                event = self._watch.next(timeout=0)
            except Gone:
                self._rewatch()
                return
            if event is None:
                return
            self.handle(event)

    def _rewatch(self) -> None:
        log.warning("embedded controllers' watch fell behind the change log; resyncing")
        self.close()
        self.open()

    # --- running

    def open(self) -> None:
        """Watch from now, then everything once."""
        _, rv = self.store.list("Namespace")
        self._watch = self.store.watch(WATCHED, since=rv)
        self.resync()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def run(self, max_wait: float = 1.0) -> None:
        while not self._stop.is_set():
            try:
                due = self.step()
            except Exception:  # a controller bug must not stop the hub: log and go on
                log.exception("the embedded controllers failed a step")
                due = None
            watch = self._watch
            if watch is None:
                return
            wait = max_wait if due is None else min(max_wait, max(0.0, due - self.clock()))
            try:
                event = watch.next(timeout=wait)
            except Gone:
                self._rewatch()
                continue
            if event is not None:
                self.handle(event)

    def start(self) -> None:
        self.open()
        self._thread = threading.Thread(target=self.run, name="embedded-operators", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.close()  # wakes the thread's wait
        if self._thread is not None:
            self._thread.join(timeout=5.0)
