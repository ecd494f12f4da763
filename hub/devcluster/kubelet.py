"""The dev-cluster's scheduler and kubelet: pods bound to a fitting node, then run for
a simulated time.

A pod with ``spec.schedulingGates`` stays Pending (``PodScheduled=False``,
``SchedulingGated``) until they are removed. A pod without ``spec.nodeName`` is bound to the least-loaded node it fits (see
:mod:`.nodes`); one that fits none stays Pending with ``PodScheduled=False``
(``Unschedulable``) and the scheduler's message. The scheduler's Events go with it, as kube-scheduler writes them
(``default-scheduler``): ``Scheduled`` "Successfully assigned NS/POD to NODE", or a
``FailedScheduling`` warning with the message of the condition (written once per
message; ``kubectl describe pod`` shows it). A bound pod starts Running at once
(``startTime``, conditions ``PodScheduled``, ``PodReadyToStartContainers``,
``Initialized``, ``ContainersReady``, ``Ready``) and ends after its run time:
``mkhub.dev/sim-duration`` on the pod (from the Job's pod template) or on the Job
that owns it, else the default. ``mkhub.dev/sim-exit-code`` (pod or Job) makes it
end Failed with that code instead of Succeeded. A pod with ``restartPolicy: Always`` and no
run time of its own (a LeaderWorkerSet's) runs until deleted, as its containers would be
restarted for ever. A pod with ``spec.schedulingGates`` is not scheduled until they are
removed: Pending with ``PodScheduled=False`` (``SchedulingGated``), as kube-scheduler
reports it. A pod deleted while it runs ends
Failed (exit code 137). A run resumes after a restart from the stored
``startTime``, so it is neither repeated nor cut short.

Each pod has a few log lines (``kubectl logs``): built when read (:meth:`Kubelet.log_lines`) from what the
kubelet wrote in the pod's status (``startTime``, the containers' ``terminated`` states) and its run time, as a
kubelet serves a container's log from its node and Kubernetes stores no log object. They go with the pod.
"""

from __future__ import annotations

import copy
import logging
import zlib
from collections.abc import Callable
from typing import Any

from hub.api.annotations import duration_annotation
from hub.api.meta import format_time as _format_time
from hub.api.meta import parse_time
from hub.obs.events import NORMAL, WARNING, EventRecorder, ObjectRef
from hub.store.interface import Conflict, NotFound, Object, Store

from .job_pods import not_newer
from .nodes import Node, host_ip, pick_node, pod_requests

log = logging.getLogger(__name__)

EXIT_CODE_ANNOTATION = "mkhub.dev/sim-exit-code"
KILLED_EXIT_CODE = 137
SCHEDULER = "default-scheduler"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"

Clock = Callable[[], float]


def format_time(t: float) -> str:
    """metav1.Time: RFC 3339 in whole seconds, as the API server writes it."""
    return _format_time(float(int(t)))


def _cond(type_: str, status: str, stamp: str, reason: str = "", message: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_, "status": status, "lastProbeTime": None, "lastTransitionTime": stamp}
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def _containers(pod: Object) -> list[dict[str, Any]]:
    return [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]


class Kubelet:
    """Binds and runs pods; :meth:`reconcile` returns when the pod needs another look, or None."""

    def __init__(self, store: Store, nodes: tuple[Node, ...], clock: Clock, default_duration: float = 5.0) -> None:
        self.store = store
        self.nodes = nodes
        self.clock = clock
        self.default_duration = default_duration
        self.load: dict[str, int] = {}
        self.used: dict[str, dict[str, int]] = {}  # per node, the requests of its pods that have not ended
        self.bound: dict[tuple[str, str], tuple[str, dict[str, int]]] = {}  # pod -> its node and requests
        self.limited = any(n.allocatable for n in nodes)  # no allocatable anywhere: no requests to add up
        # Pods left unbound: looked at again once a pod ends and frees room (kube-scheduler's requeue).
        self.unschedulable: set[tuple[str, str]] = set()
        self._freed = False
        self.events = EventRecorder(SCHEDULER, clock=clock)
        # Per pod, the resourceVersion of the kubelet's last committed write: an event no newer is the echo of
        # a state it has already acted on (timers armed), so it is not reconciled again (see :meth:`acted_on`).
        self.written: dict[tuple[str, str], int] = {}
        self._writing: dict[tuple[str, str], int] = {}

    def reconcile_all(self) -> float | None:
        pods, _ = self.store.list("Pod")
        self.load, self.used, self.bound = {}, {}, {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                self._hold(node, pod)
        due = [self.reconcile(p["metadata"].get("namespace", ""), p["metadata"]["name"]) for p in pods]
        return min((d for d in due if d is not None), default=None)

    def reconcile(self, namespace: str, name: str) -> float | None:
        for _ in range(5):
            self._writing.clear()
            try:
                # One transaction for the pod's step (bind, its status, the Event, start):
                # one commit, so watchers are woken once, not five times, per pod started.
                with self.store.batch():
                    due = self._reconcile(namespace, name)
            except NotFound:
                return None
            except Conflict:
                continue
            self.written.update(self._writing)  # committed: a rolled-back write's version may be given again
            return due
        return None

    def acted_on(self, namespace: str, name: str, resource_version: str) -> bool:
        """Whether a Pod event is no newer than the kubelet's own last write of it. Its write succeeded
        against the version it read, so that version held every earlier change, and the reconcile that
        made it armed the pod's timer: the event is an echo, with nothing left to do."""
        return not_newer(resource_version, self.written.get((namespace, name)))

    def forget(self, namespace: str, name: str) -> None:
        self.written.pop((namespace, name), None)

    def _wrote(self, pod: Object) -> Object:
        meta = pod["metadata"]
        self._writing[(meta.get("namespace", ""), meta["name"])] = int(meta["resourceVersion"])
        return pod

    def _reconcile(self, namespace: str, name: str) -> float | None:
        pod = self.store.get("Pod", namespace, name)
        if pod is None:
            self._release((namespace, name))  # deleted at once (no finalizer): its room is free
            return None
        status = pod.get("status") or {}
        phase = status.get("phase") or "Pending"
        if phase in ("Succeeded", "Failed"):
            return None
        now = self.clock()
        if pod["metadata"].get("deletionTimestamp"):
            self._finish(pod, now, KILLED_EXIT_CODE, "Error")
            return None
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name and (pod.get("spec") or {}).get("schedulingGates"):
            self._gated(pod, now)
            return None
        if not node_name:
            node, message = pick_node(pod, self.nodes, self.load, self.used)
            if node is None:
                if self.limited:
                    self.unschedulable.add((namespace, name))
                self._unschedulable(pod, message, now)
                return None
            self.unschedulable.discard((namespace, name))
            pod = self._bind(pod, node, now)
            node_name = node.name
        if phase == "Pending":
            pod = self._start(pod, node_name, now)
        duration = self._duration(pod)
        if duration is None:
            return None  # runs until deleted
        ends = parse_time(pod["status"]["startTime"]) + duration
        if now >= ends:
            code = self._exit_code(pod)
            self._finish(pod, ends, code, "Completed" if code == 0 else "Error")
            return None
        return ends

    # ------------------------------------------------------------------ steps

    def _gated(self, pod: Object, now: float) -> None:
        """As kube-scheduler: a pod with scheduling gates is not scheduled (no event), only marked,
        once, as it enters the scheduling queue. A PodScheduled condition it has already is left
        alone: SchedulingGated, or a status another controller writes (Kueue's MultiKueue mirrors
        the worker Pod's status into the manager's gated Pod)."""
        status = copy.deepcopy(pod.get("status") or {})
        if any(c.get("type") == "PodScheduled" for c in status.get("conditions") or []):
            return
        status.update(phase="Pending", conditions=[
            _cond("PodScheduled", "False", format_time(now), "SchedulingGated", GATED_MESSAGE)])
        self._wrote(self.store.update_status({**pod, "status": status}))

    def _unschedulable(self, pod: Object, message: str, now: float) -> None:
        status = copy.deepcopy(pod.get("status") or {})
        cond = _cond("PodScheduled", "False", format_time(now), "Unschedulable", message)
        old = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
        if old and old[0].get("message") == message and old[0].get("status") == "False":
            return
        status.update(phase="Pending", conditions=[cond])
        self._wrote(self.store.update_status({**pod, "status": status}))
        self._event(pod, WARNING, "FailedScheduling", message, now)

    def _bind(self, pod: Object, node: Node, now: float) -> Object:
        """As kube-apiserver's binding subresource: ``spec.nodeName`` and ``PodScheduled=True`` (in place
        of the scheduler's False, the other conditions and the phase kept) in one write, with the store's
        update of both where it has one (SQLite; other stores: two writes in the step's transaction)."""
        spec = dict(pod.get("spec") or {})
        spec["nodeName"] = node.name
        status = dict(pod.get("status") or {})
        status.setdefault("phase", "Pending")
        status["conditions"] = [*(c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"),
                                _cond("PodScheduled", "True", format_time(now))]
        both = getattr(self.store, "update_with_status", None)
        if both is not None:
            pod = self._wrote(both({**pod, "spec": spec, "status": status}))
        else:
            pod = self._wrote(self.store.update({**pod, "spec": spec}))
            pod = self._wrote(self.store.update_status({**pod, "status": status}))
        self._hold(node.name, pod)
        meta = pod["metadata"]
        self._event(pod, NORMAL, "Scheduled", f"Successfully assigned {meta.get('namespace', '')}/{meta['name']} "
                    f"to {node.name}", now)
        return pod

    def _hold(self, node: str, pod: Object) -> None:
        """Count a pod bound to ``node`` (once) and its requests against the node's room."""
        key = (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        if key in self.bound:
            return
        wanted = pod_requests(pod) if self.limited else {}
        self.bound[key] = (node, wanted)
        self.load[node] = self.load.get(node, 0) + 1
        used = self.used.setdefault(node, {})
        for resource, amount in wanted.items():
            used[resource] = used.get(resource, 0) + amount

    def set_nodes(self, nodes: tuple[Node, ...]) -> None:
        """The nodes as the API has them now (:mod:`.node_lifecycle`); unbound pods are tried again."""
        self.nodes = nodes
        self.limited = any(n.allocatable for n in nodes)
        self._freed = True

    def take_freed(self) -> list[tuple[str, str]]:
        """The unbound pods to look at again, once a pod has ended since the last call."""
        if not self._freed:
            return []
        self._freed = False
        out = sorted(self.unschedulable)
        self.unschedulable.clear()
        return out

    def _release(self, key: tuple[str, str]) -> None:
        held = self.bound.pop(key, None)
        if held is None:
            return
        node, wanted = held
        self._freed = bool(self.unschedulable)
        self.load[node] = max(0, self.load.get(node, 0) - 1)
        used = self.used.setdefault(node, {})
        for resource, amount in wanted.items():
            used[resource] = used.get(resource, 0) - amount

    def _event(self, pod: Object, type_: str, reason: str, message: str, now: float) -> None:
        meta = pod["metadata"]
        ref = ObjectRef("Pod", meta.get("namespace", ""), meta["name"], meta.get("uid", ""), "v1")
        if self.events.record(ref, type_, reason, message, now):
            self.events.flush(self.store)

    def _start(self, pod: Object, node_name: str, now: float) -> Object:
        stamp = format_time(now)
        # The binding's condition, kept as a kubelet keeps it (one for a pod created with its nodeName).
        scheduled = next((c for c in (pod.get("status") or {}).get("conditions") or []
                          if c.get("type") == "PodScheduled" and c.get("status") == "True"),
                         _cond("PodScheduled", "True", stamp))
        ip = host_ip(self.nodes, node_name)
        status = {
            "phase": "Running",
            "hostIP": ip,
            "podIP": f"10.244.{ip.split('.')[2]}.{(zlib.crc32(pod['metadata']['uid'].encode()) % 250) + 2}",
            "startTime": stamp,
            "qosClass": (pod.get("status") or {}).get("qosClass", "BestEffort"),
            "conditions": [
                _cond("PodReadyToStartContainers", "True", stamp),
                _cond("Initialized", "True", stamp),
                _cond("Ready", "True", stamp),
                _cond("ContainersReady", "True", stamp),
                scheduled,
            ],
            "containerStatuses": [
                {"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "", "ready": True,
                 "restartCount": 0, "started": True, "state": {"running": {"startedAt": stamp}}}
                for c in _containers(pod)
            ],
        }
        return self._wrote(self.store.update_status({**pod, "status": status}))

    def _finish(self, pod: Object, at: float, code: int, reason: str) -> None:
        stamp = format_time(at)
        status = copy.deepcopy(pod.get("status") or {})
        started = status.get("startTime") or stamp
        status["phase"] = "Succeeded" if code == 0 else "Failed"
        status["conditions"] = [
            _cond("PodReadyToStartContainers", "False", stamp),
            _cond("Initialized", "True", started, "PodCompleted"),
            _cond("Ready", "False", stamp, "PodCompleted"),
            _cond("ContainersReady", "False", stamp, "PodCompleted"),
            _cond("PodScheduled", "True", started),
        ]
        status["containerStatuses"] = [
            {"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "", "ready": False,
             "restartCount": 0, "started": False,
             "state": {"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": stamp}}}
            for c in _containers(pod)
        ]
        self._release((pod["metadata"].get("namespace", ""), pod["metadata"]["name"]))
        self._wrote(self.store.update_status({**pod, "status": status}))

    # ------------------------------------------------------------------ inputs

    def _owner_annotations(self, pod: Object) -> dict[str, str]:
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Job":
                job = self.store.get("Job", pod["metadata"].get("namespace", ""), ref.get("name", ""))
                if job is not None and job["metadata"].get("uid") == ref.get("uid"):
                    return dict(job["metadata"].get("annotations") or {})
        return {}

    def _annotation(self, pod: Object, key: str) -> tuple[dict[str, str], bool]:
        own = dict(pod["metadata"].get("annotations") or {})
        if key in own:
            return own, True
        owner = self._owner_annotations(pod)
        return owner, key in owner

    def _duration(self, pod: Object) -> float | None:
        """The simulated run time; None: until deleted (a ``restartPolicy: Always`` pod, as a
        StatefulSet's, whose containers a kubelet restarts for ever, unless it asks for a time)."""
        annotations, found = self._annotation(pod, "mkhub.dev/sim-duration")
        if not found:
            return None if (pod.get("spec") or {}).get("restartPolicy") == "Always" else self.default_duration
        try:
            value = duration_annotation(annotations)
        except ValueError as exc:
            log.warning("Pod %s/%s: mkhub.dev/sim-duration: %s; using %ss",
                        pod["metadata"].get("namespace"), pod["metadata"]["name"], exc, self.default_duration)
            return self.default_duration
        return self.default_duration if value is None else value

    def _exit_code(self, pod: Object) -> int:
        annotations, found = self._annotation(pod, EXIT_CODE_ANNOTATION)
        if not found:
            return 0
        try:
            return int(annotations[EXIT_CODE_ANNOTATION])
        except ValueError:
            return 1

    def log_lines(self, pod: Object) -> list[str]:
        """The pod's log, all containers' lines: built from its status when read instead of a stored object
        written per start and end (a write, a change and a watch event each). What :meth:`_start` wrote:
        ``startTime`` and the containers (the image each reported running); :meth:`_finish`: each container's
        ``terminated`` state, also for a pod deleted before it was bound. A status not written by a kubelet
        (Kueue's MultiKueue copies the worker Pod's into the manager's gated, unbound Pod) has no lines."""
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        node = spec.get("nodeName")
        if not node and not pod["metadata"].get("deletionTimestamp"):
            return []
        statuses = [s for s in status.get("containerStatuses") or [] if isinstance(s, dict)]
        lines: list[str] = []
        started = status.get("startTime")
        if node and started:
            images = {s.get("name"): s.get("image") for s in statuses}
            for c in _containers(pod):
                name = c.get("name", "")
                image = images.get(name, c.get("image", ""))
                lines.append(f"{started} container {name!r} (image {image!r}) started on node {node}")
            duration = self._duration(pod)
            run = "until deleted" if duration is None else f"of {duration:g}s"
            lines.append(f"{started} simulated run {run} (mkhub dev-cluster: no real containers)")
        for s in statuses:
            ended = (s.get("state") or {}).get("terminated")
            if isinstance(ended, dict):
                lines.append(f"{ended.get('finishedAt')} container {s.get('name', '')!r} exited with code "
                             f"{ended.get('exitCode')} ({ended.get('reason')})")
        return lines


def pod_logs(kubelet: Kubelet, namespace: str, name: str) -> str | None:
    """The simulated log text of a pod (one line per entry), or None when it has none."""
    pod = kubelet.store.get("Pod", namespace, name)
    lines = kubelet.log_lines(pod) if pod is not None else []
    return "".join(f"{line}\n" for line in lines) if lines else None
