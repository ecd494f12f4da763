"""The dev-cluster's control loop: the Job controller, the scheduler/kubelet, the apps and
CronJob controllers, the simulated operators (JobSet, LeaderWorkerSet) and the garbage
collector, driven by the store's watch and their own timers.

Deterministic for tests: everything reads the injected clock, and :meth:`DevCluster.step`
does all the work that is due without blocking; :meth:`DevCluster.run` is the loop a
process runs (a thread), waiting on the watch until the next timer.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Protocol

from hub.api.trainjob_kind import CLUSTER_RUNTIME, RUNTIME
from hub.store.interface import EventType, Gone, Object, ObjectKey, Store, Watch, WatchEvent
from hub.store.sqlite import SQLiteStore

from .apps import AppsController, Key
from .appwrappers import AppWrapperController
from .argo import WorkflowController
from .cronjobs import CronJobController
from .gc import DEPENDENT_KINDS, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, GarbageCollector
from .job_pods import PodIndex
from .jobs import JobController, managed_elsewhere
from .jobsets import JobSetController
from .kubeflow import controllers as kubeflow_controllers
from .kubelet import Kubelet, format_time
from .kuberay import kuberay_controllers
from .leaderworkersets import LeaderWorkerSetController
from .mpijobs import MPIJOB_KIND, MPIJobController
from .node_lifecycle import NodeLifecycle
from .nodes import DEFAULT_NODES, Node, sync_nodes
from .operators import JOBSET_KIND, LWS_KIND
from .sandbox_flux import MiniClusterController, SandboxController
from .sparkapps import SparkOperator
from .tekton import PipelineRunController, TaskRunController
from .trainjobs import TRAINJOB_KIND, TrainJobController

log = logging.getLogger(__name__)

Clock = Callable[[], float]
MAX_ROUNDS = 50
# After a wakeup the controllers let commits gather this long before they wait on the watch again: woken
# per commit (a futex wake on the API server's loop, a context switch and a step here) was the largest
# share of the dev-cluster's CPU per admission once the API server's watches left their threads.
GATHER = 0.005
# Kinds whose commits alone do not wake the controllers (their changes are read with the next other commit's, or
# within run's max_wait): no controller acts on them, only the GC's owner index reads an Event's (Kubernetes sets
# no ownerReferences on Events) or a Lease's, and the GC is eventual. Events were ~40% of the manager's commits.
QUIET_KINDS = frozenset({"Event", "Lease"})
# Pods and Jobs stepped in one transaction at most (DevCluster._pods_and_jobs).
ROUND_WRITES = 64


def scaled_clock(scale: float, real: Clock = time.time) -> Clock:
    """A clock that starts at ``real()`` and runs ``scale`` times as fast (``mkhub dev-cluster
    --time-scale``: tests reach a CronJob's next minute in a second, not a minute)."""
    start = real()
    return lambda: start + (real() - start) * scale


class OwnerController(Protocol):
    """A controller of a kind that owns Jobs or Pods (an operator's): reconciled when the object
    or one of its controlled dependents changes."""

    def reconcile(self, namespace: str, name: str) -> float | None:
        """Returns when to reconcile again (a refused create), else None: events only."""

    def reconcile_all(self) -> None: ...


class KeyedController(Protocol):
    """A controller reconciling objects by (kind, namespace, name): the apps, CronJob, AppWrapper and
    Spark controllers."""

    @property
    def KINDS(self) -> tuple[str, ...]: ...  # noqa: N802 (the controllers' class constant)

    def keys_for(self, obj: Object) -> list[Key]: ...

    def all_keys(self) -> list[Key]: ...

    def reconcile(self, kind: str, namespace: str, name: str) -> float | None: ...


class DevCluster:
    def __init__(
        self,
        store: Store,
        nodes: tuple[Node, ...] = DEFAULT_NODES,
        *,
        clock: Clock = time.time,
        default_duration: float = 5.0,
        operators: bool = True,
        create: Callable[[Object], Object] | None = None,
        clock_rate: float = 1.0,
    ) -> None:
        """``create``: how the apps, CronJob and LeaderWorkerSet controllers create objects (default: the store; mkhub
        dev-cluster passes its API, so they meet admission webhooks, as on a cluster). ``clock_rate``:
        clock seconds per real second (a :func:`scaled_clock`'s scale), for :meth:`run`'s waits."""
        self.store = store
        self.clock = clock
        self.clock_rate = clock_rate
        self.jobs = JobController(store, clock)
        self.pod_index = PodIndex()  # the Job controller's, from the watch once start() lists the pods
        self.kubelet = Kubelet(store, nodes, clock, default_duration)
        self.node_lifecycle = NodeLifecycle(store, nodes)  # kubectl's Node changes (delete, taint, NotReady)
        self.gc = GarbageCollector(store)
        # The simulated operators (JobSet, LeaderWorkerSet); none with --without-operators.
        self.owners: dict[str, OwnerController] = {}
        if operators:
            self.owners = {JOBSET_KIND: JobSetController(store, clock), LWS_KIND: LeaderWorkerSetController(store, clock, create),
                           **kuberay_controllers(store, clock)}
            # Pod-based frameworks Kueue queues through its plain-Pod (or Job) integration.
            self.owners.update({c.KIND: c for c in (
                PipelineRunController(store, clock, create), TaskRunController(store, clock, create),
                WorkflowController(store, clock, create), SandboxController(store, clock, create),
                MiniClusterController(store, clock, create))})
            self.owners.update(kubeflow_controllers(store, clock, create))  # PyTorchJob, TFJob, ... (kubeflow.org/v1)
            self.owners[MPIJOB_KIND] = MPIJobController(store, clock)
            trainer = self.owners[TRAINJOB_KIND] = TrainJobController(store, clock)
            self.owners.update({kind: trainer.runtime_watcher(kind) for kind in (CLUSTER_RUNTIME, RUNTIME)})
        self._dirty_owned: set[tuple[str, str, str]] = set()  # (kind, namespace, name) of owners' objects
        # Controllers keyed by (kind, namespace, name): what an event makes due, and their reconcile.
        workloads: list[KeyedController] = [AppsController(store, clock, create), CronJobController(store, clock, create)]
        if operators:  # the simulated operators that run as keyed controllers
            workloads += [AppWrapperController(store, clock, create), SparkOperator(store, clock, create)]
        self.workloads = tuple(workloads)
        self._by_kind = {kind: c for c in self.workloads for kind in c.KINDS}
        self._dirty: set[Key] = set()
        self._watch: Watch | None = None
        self._timers: list[tuple[float, str, str, str]] = []  # (due, "Job"|"Pod", namespace, name)
        self._dirty_jobs: set[tuple[str, str]] = set()
        self._dirty_pods: set[tuple[str, str]] = set()
        self._gc_keys: set[ObjectKey] = set()
        self._finalize: set[ObjectKey] = set()
        # owner uid -> dependents, and dependent -> its owners' uids (from events).
        self._dependents: dict[str, set[ObjectKey]] = defaultdict(set)
        self._owners_of: dict[ObjectKey, frozenset[str]] = {}

    # ------------------------------------------------------------------ start-up

    def start(self) -> None:
        """Watch from now, then reconcile everything once (catches up after a restart)."""
        sync_nodes(self.store, self.node_lifecycle.configured, format_time(self.clock()))
        self.kubelet.set_nodes(self.node_lifecycle.load())
        _, rv = self.store.list("Namespace")
        self._watch = self.store.watch(None, since=rv)
        quiet = getattr(self._watch, "quiet_kinds", None)  # SQLiteWatch's
        if quiet is not None:
            quiet(QUIET_KINDS)
        # After the watch opened: a pod written since is in the list, its event replayed, or both.
        self.pod_index.reset(self.store.list("Pod")[0])
        self.jobs.pods = self.pod_index
        self._resync()

    def _resync(self) -> None:
        self._dependents.clear()
        self._owners_of.clear()
        for kind in DEPENDENT_KINDS:
            objs, _ = self.store.list(kind)
            for obj in objs:
                self._index(obj)
        self.gc.finalize_owners(self.gc.owners_being_deleted())
        self.gc.collect()
        self._arm("Job", "", "", self.jobs.reconcile_all())
        self._arm("Pod", "", "", self.kubelet.reconcile_all())
        for controller in self.owners.values():
            controller.reconcile_all()
        self._dirty.update(k for c in self.workloads for k in c.all_keys())
        self._rearm_all()

    def _rearm_all(self) -> None:
        """After a full pass: a timer per live pod and Job (cheap to over-arm; reconcile is idempotent)."""
        self._timers = [t for t in self._timers if t[2] or t[3]]
        heapq.heapify(self._timers)
        pods, _ = self.store.list("Pod")
        for pod in pods:
            if (pod.get("status") or {}).get("phase") == "Running":
                self._dirty_pods.add((pod["metadata"].get("namespace", ""), pod["metadata"]["name"]))
        jobs, _ = self.store.list("Job")
        for job in jobs:
            if (job.get("spec") or {}).get("activeDeadlineSeconds") is not None:
                self._dirty_jobs.add((job["metadata"].get("namespace", ""), job["metadata"]["name"]))

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    # ------------------------------------------------------------------ events

    def _index(self, obj: Object) -> None:
        key = ObjectKey.of(obj)
        uids = frozenset(r.get("uid", "") for r in obj["metadata"].get("ownerReferences") or [] if isinstance(r, dict))
        for uid in self._owners_of.get(key, frozenset()) - uids:
            self._dependents[uid].discard(key)
        for uid in uids:
            self._dependents[uid].add(key)
        if uids:
            self._owners_of[key] = uids
        else:
            self._owners_of.pop(key, None)

    def _unindex(self, key: ObjectKey) -> None:
        for uid in self._owners_of.pop(key, frozenset()):
            self._dependents[uid].discard(key)
            if not self._dependents[uid]:
                del self._dependents[uid]

    def handle(self, event: WatchEvent) -> None:
        obj = event.object
        key = ObjectKey.of(obj)
        meta = obj["metadata"]
        if key.kind in DEPENDENT_KINDS:
            if event.type == EventType.DELETED:
                self._unindex(key)
            else:
                self._index(obj)
        if event.type == EventType.DELETED:
            uid = meta.get("uid", "")
            self._gc_keys.update(self._dependents.pop(uid, set()))
        elif meta.get("deletionTimestamp") and {ORPHAN_FINALIZER, FOREGROUND_FINALIZER} & set(meta.get("finalizers") or []):
            self._finalize.add(key)
        if key.kind in self.owners and event.type != EventType.DELETED:
            self._dirty_owned.add((key.kind, key.namespace, key.name))
        if self.owners:  # an owner's object may itself be an owner's child (a TaskRun, a RayJob's RayCluster, a TrainJob's JobSet)
            for ref in meta.get("ownerReferences") or []:  # a child changed or went: its owner looks again
                if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") in self.owners:
                    self._dirty_owned.add((str(ref["kind"]), key.namespace, str(ref.get("name", ""))))
        for controller in self.workloads:
            self._dirty.update(controller.keys_for(obj))
        if key.kind == "Job":
            if event.type == EventType.DELETED:
                self.jobs.forget(key.namespace, key.name)
            elif not managed_elsewhere(obj) and not self.jobs.acted_on(
                    key.namespace, key.name, str(meta.get("resourceVersion", ""))):
                # A Job managed elsewhere (the manager's MultiKueue Jobs) is not read again only to be left alone;
                # the event of a later change of its managedBy (immutable on Kubernetes) says so in its turn.
                self._dirty_jobs.add((key.namespace, key.name))
        elif key.kind == "Node" and (changed := self.node_lifecycle.handle(event)) is not None:
            self.kubelet.set_nodes(changed)
        elif key.kind == "Pod":
            rv = str(meta.get("resourceVersion", ""))
            if event.type == EventType.DELETED:
                self.kubelet.forget(key.namespace, key.name)
                self.pod_index.drop(key.namespace, key.name)
            else:
                self.pod_index.put(obj)
                if not self.kubelet.acted_on(key.namespace, key.name, rv):
                    self._dirty_pods.add((key.namespace, key.name))
            for ref in meta.get("ownerReferences") or []:
                if isinstance(ref, dict) and ref.get("kind") == "Job" and (
                        event.type == EventType.DELETED
                        or not self.jobs.saw_pod(key.namespace, str(ref.get("name", "")), key.name, rv)):
                    self._dirty_jobs.add((key.namespace, str(ref.get("name", ""))))

    def _drain(self) -> None:
        if self._watch is None:
            return
        while True:
            try:
                event = self._watch.next(timeout=0)
            except Gone:
                log.warning("dev-cluster watch fell behind the change log; resyncing")
                self.close()
                self.start()
                return
            if event is None:
                return
            self.handle(event)

    # ------------------------------------------------------------------ work

    def _arm(self, kind: str, namespace: str, name: str, due: float | None) -> None:
        if due is not None:
            heapq.heappush(self._timers, (due, kind, namespace, name))

    def step(self) -> float | None:
        """Do everything due now; returns the time of the next timer (None: none armed)."""
        self.kubelet.events.collect(self.store)  # --event-ttl (an hour), as kube-apiserver's; rate-limited inside
        for _ in range(MAX_ROUNDS):
            self._drain()
            now = self.clock()
            while self._timers and self._timers[0][0] <= now:
                _, kind, ns, name = heapq.heappop(self._timers)
                if not name:
                    continue
                if kind in self._by_kind:
                    self._dirty.add((kind, ns, name))
                elif kind in self.owners:
                    self._dirty_owned.add((kind, ns, name))
                else:
                    (self._dirty_jobs if kind == "Job" else self._dirty_pods).add((ns, name))
            if not (self._dirty_jobs or self._dirty_pods or self._dirty or self._gc_keys or self._finalize
                    or self._dirty_owned):
                break
            self._pods_and_jobs()
            owned, self._dirty_owned = sorted(self._dirty_owned), set()
            for kind, ns, name in owned:
                self._arm(kind, ns, name, self.owners[kind].reconcile(ns, name))
            keys, self._dirty = sorted(self._dirty), set()
            for kind, ns, name in keys:
                self._arm(kind, ns, name, self._by_kind[kind].reconcile(kind, ns, name))
            if self._finalize:
                owners = [o for o in (self.store.get(*k) for k in sorted(self._finalize)) if o is not None]
                self._finalize = set()
                self.gc.finalize_owners(owners)
            if self._gc_keys:
                keys, self._gc_keys = sorted(self._gc_keys), set()
                self.gc.collect_keys(keys)
        return self._timers[0][0] if self._timers else None

    def _pods_and_jobs(self) -> None:
        """The kubelet's and the Job controller's work of a round, in transactions of up to ROUND_WRITES objects
        where the store nests batches as savepoints (SQLite): one commit, one wake-up of each watcher, for the pods
        started and Jobs synced together, not one each (the bound keeps the API server's writes, which wait for
        the store's lock, from waiting on a whole burst). Each object's step is still undone alone on a refusal
        (its savepoint), and one that fails otherwise is logged and left for its next event or timer, as a failed
        step would leave it. If a commit fails, what the two remember of their writes (echoes they skip) is
        forgotten (its versions may be given again) and the objects not committed are looked at again."""
        items = [("Pod", *key) for key in sorted(self._dirty_pods)] + [("Job", *key) for key in sorted(self._dirty_jobs)]
        self._dirty_pods, self._dirty_jobs = set(), set()
        if not isinstance(self.store, SQLiteStore) or len(items) < 2:
            for kind, ns, name in items:
                self._arm(kind, ns, name, self._reconciler(kind)(ns, name))
        else:
            for at in range(0, len(items), ROUND_WRITES):
                try:
                    with self.store.batch():
                        for kind, ns, name in items[at:at + ROUND_WRITES]:
                            self._arm(kind, ns, name, self._guarded(self._reconciler(kind), ns, name))
                except BaseException:
                    self.kubelet.written.clear()
                    self.jobs.seen.clear()
                    for kind, ns, name in items[at:]:  # none of their steps landed: looked at again next step
                        (self._dirty_pods if kind == "Pod" else self._dirty_jobs).add((ns, name))
                    raise
        self._dirty_pods.update(self.kubelet.take_freed())  # room freed: unbound pods tried again

    def _reconciler(self, kind: str) -> Callable[[str, str], float | None]:
        return self.kubelet.reconcile if kind == "Pod" else self.jobs.reconcile

    def _guarded(self, reconcile: Callable[[str, str], float | None], namespace: str, name: str) -> float | None:
        """One object's step inside the round's transaction: a savepoint, so that its failure undoes only its
        own writes; logged, as run logs a failed step, and the round goes on (if SQLite itself rolled the
        transaction back, the store refuses the round's further writes and its commit fails)."""
        try:
            with self.store.batch():
                return reconcile(namespace, name)
        except Exception:
            log.exception("dev-cluster controllers failed on %s/%s", namespace, name)
            return None

    def run(self, stop: threading.Event, *, max_wait: float = 1.0) -> None:
        """Serve until ``stop`` is set: block on the watch until an event or the next timer."""
        if self._watch is None:
            self.start()
        while not stop.is_set():
            try:
                due = self.step()
            except Exception:  # a controller bug must not stop the cluster; log and go on
                log.exception("dev-cluster controllers failed a step")
                due = None
            wait = max_wait if due is None else min(max_wait, max(0.0, (due - self.clock()) / self.clock_rate))
            if self._watch is None:
                return
            try:
                event = self._watch.next(timeout=wait)
            except Gone:
                self.close()
                self.start()
                continue
            if event is not None:
                self.handle(event)
                stop.wait(GATHER)
