"""Simulated apps/v1 controllers of the dev-cluster: Deployment -> ReplicaSet -> Pods, and
StatefulSet -> Pods, after Kubernetes' pkg/controller/deployment, replicaset and statefulset.

What they do, as the real ones:

- a Deployment owns one ReplicaSet per pod template, named ``<deployment>-<pod-template-hash>``
  (the hash of the template, in Kubernetes' safe alphabet), labelled ``pod-template-hash`` in
  its selector and template, annotated ``deployment.kubernetes.io/revision``,
  ``desired-replicas`` and ``max-replicas``; the Deployment carries its current revision
  (a rollback makes the old ReplicaSet the newest revision), as ``kubectl rollout`` reads it; the Deployment's status (``replicas``,
  ``updatedReplicas``, ``readyReplicas``, ``availableReplicas``, ``unavailableReplicas``,
  ``observedGeneration``, conditions ``Available`` and ``Progressing`` with the real reasons)
  sums its ReplicaSets'; old ReplicaSets beyond ``revisionHistoryLimit`` are deleted;
- a ReplicaSet keeps ``replicas`` pods named ``<replicaset>-<5 random characters>`` (finished
  pods do not count), removing the least far along first; status ``replicas``,
  ``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas`` (ready for
  ``minReadySeconds``), ``observedGeneration``;
- a StatefulSet's pods are ``<statefulset>-<ordinal>`` (from ``spec.ordinals.start``), labelled
  ``apps.kubernetes.io/pod-index``, ``statefulset.kubernetes.io/pod-name`` and
  ``controller-revision-hash``, with ``hostname``/``subdomain``; ``OrderedReady`` creates one
  at a time, each after the lower ones are Running and Ready, and removes the highest ordinal
  first, one at a time; ``Parallel`` does both at once; a finished pod is replaced; with
  ``RollingUpdate`` a template change replaces the pods highest ordinal first, one at a time,
  once all are ready (from ``partition`` up); status as the real controller writes it;
- every object is owned by its parent (``controller: true``, ``blockOwnerDeletion``), so the
  garbage collector cascades deletions; ReplicaSets and pods are created through ``create``
  (mkhub dev-cluster passes its API, so admission webhooks such as Kueue's pod webhook see
  them; a refused pod is tried again after 5 s).

A paused Deployment (``kubectl rollout pause``) scales its newest ReplicaSet but starts no new
one (``Progressing`` Unknown, ``DeploymentPaused``).

What they are not: a template change moves a Deployment to its new ReplicaSet at once (old
ones scaled to 0 in the same pass; no ``maxSurge``/``maxUnavailable`` pacing, no
``progressDeadlineSeconds``); no ControllerRevision objects, no PersistentVolumeClaims from
``volumeClaimTemplates``, no Events; pods run until deleted unless they carry
``mkhub.dev/sim-duration`` (see :mod:`.kubelet`), and a finished pod is not restarted in place.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from hub.api.meta import parse_time
from hub.store.interface import AlreadyExists, Conflict, InvalidObject, NotFound, Object, Store

from .jobs import format_time, pod_ready

log = logging.getLogger(__name__)

Clock = Callable[[], float]
RETRY_SECONDS = 5.0
Key = tuple[str, str, str]  # (kind, namespace, name)

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
POD_INDEX = "apps.kubernetes.io/pod-index"
POD_NAME = "statefulset.kubernetes.io/pod-name"
REVISION_HASH = "controller-revision-hash"
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand: no vowels, no look-alikes
FINISHED = ("Succeeded", "Failed")
KINDS = ("Deployment", "ReplicaSet", "StatefulSet")


def template_hash(template: Any) -> str:
    """A stable hash of a pod template, spelled as Kubernetes' SafeEncodeString spells it."""
    digest = zlib.crc32(json.dumps(template, sort_keys=True, separators=(",", ":")).encode())
    return "".join(_ALPHABET[ord(ch) % len(_ALPHABET)] for ch in str(digest))


def controller_ref(obj: Object) -> dict[str, Any] | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def _owned(store: Store, kind: str, namespace: str, uid: str, selector: Any = None) -> list[Object]:
    """``kind`` objects ``uid`` controls; ``selector`` (the owner's, when it has one) narrows the listing."""
    usable = isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions"))
    try:
        objs, _ = store.list(kind, namespace, selector if usable else None)
    except ValueError:  # a selector the store cannot read: list them all
        objs, _ = store.list(kind, namespace)
    return [o for o in objs if (controller_ref(o) or {}).get("uid") == uid]


def _finished(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in FINISHED


def _alive(pod: Object) -> bool:
    return not _finished(pod) and not pod["metadata"].get("deletionTimestamp")


def _owner(obj: Object, kind: str) -> dict[str, Any]:
    meta = obj["metadata"]
    return {"apiVersion": "apps/v1", "kind": kind, "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _ready_since(pod: Object) -> float | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "True":
            try:
                return parse_time(str(c.get("lastTransitionTime") or ""))
            except ValueError:
                return None
    return None


def _available(pods: Iterable[Object], min_ready: int, now: float) -> tuple[int, float | None]:
    """Pods ready for ``minReadySeconds``, and when the next one becomes available (a timer)."""
    count, due = 0, None
    for pod in pods:
        since = _ready_since(pod)
        if since is None:
            continue
        if since + min_ready <= now:
            count += 1
        else:
            due = min(due or since + min_ready, since + min_ready)
    return count, due


def _new_pod(owner: Object, kind: str, template: dict[str, Any], labels: dict[str, str], **meta: Any) -> Object:
    tmeta = template.get("metadata") or {}
    spec = copy.deepcopy(template.get("spec") or {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    pod_meta: dict[str, Any] = {"namespace": owner["metadata"].get("namespace", ""), "labels": labels,
                                "ownerReferences": [_owner(owner, kind)], **meta}
    if tmeta.get("annotations"):
        pod_meta["annotations"] = dict(tmeta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec,
            "status": {"phase": "Pending", "qosClass": "BestEffort"}}


class AppsController:
    """Reconciles Deployments, ReplicaSets and StatefulSets; :meth:`reconcile` returns when it
    needs another look (a pod becoming available after ``minReadySeconds``), or None."""

    KINDS = KINDS

    def __init__(self, store: Store, clock: Clock, create: Callable[[Object], Object] | None = None) -> None:
        self.store = store
        self.clock = clock
        self.create = create or store.create  # raises AlreadyExists, or InvalidObject when refused

    def keys_for(self, obj: Object) -> list[Key]:
        """What an event on ``obj`` makes due: the object itself, and its controlling owner."""
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        out: list[Key] = [(obj["kind"], ns, meta["name"])] if obj.get("kind") in KINDS else []
        ref = controller_ref(obj)
        if ref is not None and ref.get("kind") in KINDS:
            out.append((str(ref["kind"]), ns, str(ref.get("name", ""))))
        return out

    def all_keys(self) -> list[Key]:
        out: list[Key] = []
        for kind in KINDS:
            objs, _ = self.store.list(kind)
            out.extend((kind, o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objs)
        return out

    def reconcile(self, kind: str, namespace: str, name: str) -> float | None:
        step = {"Deployment": self._deployment, "ReplicaSet": self._replicaset, "StatefulSet": self._statefulset}[kind]
        for _ in range(5):  # a conflicting writer (kubectl scale) moved the object: read again
            try:
                obj = self.store.get(kind, namespace, name)
                if obj is None or obj["metadata"].get("deletionTimestamp"):
                    return None
                return step(obj)
            except (NotFound, AlreadyExists):
                return None
            except Conflict:
                continue
        return None

    def _write_status(self, obj: Object, status: dict[str, Any]) -> None:
        if status != (obj.get("status") or {}):
            self.store.update_status({**obj, "status": status})

    # ------------------------------------------------------------------ Deployment

    def _deployment(self, deploy: Object) -> float | None:
        meta, spec = deploy["metadata"], deploy.get("spec") or {}
        ns, replicas = meta.get("namespace", ""), int(spec.get("replicas", 1))
        template = spec.get("template") or {}
        pod_hash = template_hash(template)
        owned = _owned(self.store, "ReplicaSet", ns, meta["uid"], spec.get("selector"))
        current = next((rs for rs in owned if (rs["metadata"].get("labels") or {}).get(HASH_LABEL) == pod_hash), None)
        revisions = [int((rs["metadata"].get("annotations") or {}).get(REVISION, "0") or 0) for rs in owned]
        newest = max(revisions, default=0)
        if spec.get("paused") and owned:  # paused: no rollout (nor rollback), the newest one scales
            current = max(owned, key=lambda rs: int((rs["metadata"].get("annotations") or {}).get(REVISION, "0") or 0))
        if current is None:
            current = self.create(self._new_replicaset(deploy, pod_hash, newest + 1))
            owned.append(current)
        else:
            notes = {**(current["metadata"].get("annotations") or {}), DESIRED: str(replicas), MAX_REPLICAS: str(replicas)}
            if int(notes.get(REVISION, "0") or 0) < newest:  # a rollback to an old template: it becomes the newest
                notes[REVISION] = str(newest + 1)
            rs_spec = {**(current.get("spec") or {}), "replicas": replicas}
            if rs_spec != current.get("spec") or notes != current["metadata"].get("annotations"):
                current = self.store.update({**current, "metadata": {**current["metadata"], "annotations": notes},
                                             "spec": rs_spec})
        revision = (current["metadata"].get("annotations") or {}).get(REVISION, "1")
        if (meta.get("annotations") or {}).get(REVISION) != revision:  # kubectl rollout history/undo read it
            deploy = self.store.update({**deploy, "metadata": {**meta, "annotations": {
                **(meta.get("annotations") or {}), REVISION: revision}}})
        old = [rs for rs in owned if rs["metadata"]["uid"] != current["metadata"]["uid"]]
        for rs in old:
            if (rs.get("spec") or {}).get("replicas"):
                self.store.update({**rs, "spec": {**(rs.get("spec") or {}), "replicas": 0}})
        self._prune_history(old, int(spec.get("revisionHistoryLimit", 10)))
        self._write_status(deploy, self._deployment_status(deploy, current, owned, replicas))
        return None

    def _new_replicaset(self, deploy: Object, pod_hash: str, revision: int) -> Object:
        meta, spec = deploy["metadata"], deploy.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: pod_hash}
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: pod_hash}
        replicas = int(spec.get("replicas", 1))
        rs_spec: dict[str, Any] = {"replicas": replicas, "selector": selector, "template": template}
        if spec.get("minReadySeconds"):
            rs_spec["minReadySeconds"] = spec["minReadySeconds"]
        return {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{meta['name']}-{pod_hash}", "namespace": meta.get("namespace", ""),
                         "labels": dict(tmeta["labels"]),
                         "annotations": {REVISION: str(revision), DESIRED: str(replicas), MAX_REPLICAS: str(replicas)},
                         "ownerReferences": [_owner(deploy, "Deployment")]},
            "spec": rs_spec,
        }

    def _prune_history(self, old: list[Object], limit: int) -> None:
        idle = [rs for rs in old if not (rs.get("spec") or {}).get("replicas") and not (rs.get("status") or {}).get("replicas")]
        idle.sort(key=lambda rs: int((rs["metadata"].get("annotations") or {}).get(REVISION, "0") or 0))
        for rs in idle[: max(0, len(idle) - limit)]:
            with contextlib.suppress(NotFound):
                self.store.delete("ReplicaSet", rs["metadata"].get("namespace", ""), rs["metadata"]["name"])

    def _deployment_status(self, deploy: Object, current: Object, owned: list[Object], replicas: int) -> dict[str, Any]:
        def total(key: str) -> int:
            return sum(int((rs.get("status") or {}).get(key) or 0) for rs in owned)

        now = self.clock()
        available = total("availableReplicas")
        updated = int((current.get("status") or {}).get("replicas") or 0)
        status: dict[str, Any] = copy.deepcopy(deploy.get("status") or {})
        status.update(observedGeneration=deploy["metadata"].get("generation", 1), replicas=total("replicas"),
                      updatedReplicas=updated, readyReplicas=total("readyReplicas"), availableReplicas=available,
                      unavailableReplicas=max(0, replicas - available))
        for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"):
            if not status[key]:
                status.pop(key)  # omitted when zero, as the API writes them
        rs_name = current["metadata"]["name"]
        conds = [c for c in status.get("conditions") or [] if c.get("type") not in ("Available", "Progressing")]
        old = {c.get("type"): c for c in status.get("conditions") or []}
        # maxUnavailable 25% (rounded down) of replicas may be missing for the Deployment to be Available.
        enough = available >= replicas - replicas // 4
        done = updated == replicas and available >= replicas and total("replicas") == replicas
        wanted = [
            ("Available", "True" if enough else "False",
             "MinimumReplicasAvailable" if enough else "MinimumReplicasUnavailable",
             "Deployment has minimum availability." if enough else "Deployment does not have minimum availability."),
            ("Progressing", "True", "NewReplicaSetAvailable" if done else "ReplicaSetUpdated",
             f'ReplicaSet "{rs_name}" has successfully progressed.' if done else f'ReplicaSet "{rs_name}" is progressing.'),
        ]
        if (deploy.get("spec") or {}).get("paused"):
            wanted[1] = ("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
        stamp = format_time(now)
        for type_, value, reason, message in wanted:
            prev = old.get(type_) or {}
            same = prev.get("status") == value and prev.get("reason") == reason and prev.get("message") == message
            conds.append(prev if same else {
                "type": type_, "status": value, "reason": reason, "message": message, "lastUpdateTime": stamp,
                "lastTransitionTime": prev.get("lastTransitionTime", stamp) if prev.get("status") == value else stamp})
        status["conditions"] = sorted(conds, key=lambda c: {"Available": 0, "Progressing": 1}.get(c.get("type"), 2))
        return status

    # ------------------------------------------------------------------ ReplicaSet

    def _replicaset(self, rs: Object) -> float | None:
        meta, spec = rs["metadata"], rs.get("spec") or {}
        want = int(spec.get("replicas", 1))
        template = spec.get("template") or {}
        pods = [p for p in _owned(self.store, "Pod", meta.get("namespace", ""), meta["uid"], spec.get("selector"))
                if _alive(p)]
        if len(pods) > want:
            # As the real controller: the least far along go first (unscheduled, not ready, newest).
            ranked = sorted(pods, key=lambda p: (bool((p.get("spec") or {}).get("nodeName")), pod_ready(p),
                                                 "~" + str(p["metadata"].get("creationTimestamp", ""))))
            for pod in ranked[: len(pods) - want]:
                with contextlib.suppress(NotFound):
                    self.store.delete("Pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
            pods = ranked[len(pods) - want:]
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        now = self.clock()
        retry = None
        try:
            for _ in range(want - len(pods)):
                pods.append(self.create(_new_pod(rs, "ReplicaSet", template, labels, generateName=f"{meta['name']}-")))
        except InvalidObject as exc:  # refused (a webhook, validation): try again shortly, as the real one backs off
            log.warning("ReplicaSet %s/%s: pod refused: %s", meta.get("namespace", ""), meta["name"], exc)
            retry = now + RETRY_SECONDS
        available, due = _available(pods, int(spec.get("minReadySeconds") or 0), now)
        due = min((d for d in (due, retry) if d is not None), default=None)
        status: dict[str, Any] = {"replicas": len(pods), "fullyLabeledReplicas": len(pods),
                                  "readyReplicas": sum(1 for p in pods if pod_ready(p)), "availableReplicas": available,
                                  "observedGeneration": meta.get("generation", 1)}
        for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if not status[key]:
                status.pop(key)
        self._write_status(rs, status)
        return due

    # ------------------------------------------------------------------ StatefulSet

    def _statefulset(self, sts: Object) -> float | None:
        meta, spec = sts["metadata"], sts.get("spec") or {}
        ns, name = meta.get("namespace", ""), meta["name"]
        template = spec.get("template") or {}
        revision = f"{name}-{template_hash(template)}"
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        replicas = int(spec.get("replicas", 1))
        parallel = spec.get("podManagementPolicy") == "Parallel"
        pods = {p["metadata"]["name"]: p for p in _owned(self.store, "Pod", ns, meta["uid"], spec.get("selector"))}
        wanted = [f"{name}-{i}" for i in range(start, start + replicas)]
        for pod_name, old in list(pods.items()):
            if _finished(old) and not old["metadata"].get("deletionTimestamp"):
                self._delete_pod(ns, pod_name)  # replaced below or on the next pass
                del pods[pod_name]
        blocked = False
        for i, pod_name in enumerate(wanted, start=start):
            if pod_name not in pods:
                try:
                    pods[pod_name] = self.create(self._sts_pod(sts, pod_name, i, revision))
                except InvalidObject as exc:
                    log.warning("StatefulSet %s/%s: pod %s refused: %s", ns, name, pod_name, exc)
                    return self.clock() + RETRY_SECONDS
            pod = pods[pod_name]
            if not parallel and not (_alive(pod) and pod_ready(pod)):
                blocked = True
                break
        extras = sorted((p for n, p in pods.items() if n not in wanted), key=_ordinal, reverse=True)
        # OrderedReady removes the highest ordinal only while every lower pod is Running and Ready.
        for pod in extras if parallel else [] if blocked else extras[:1]:
            self._delete_pod(ns, pod["metadata"]["name"])
            pods.pop(pod["metadata"]["name"], None)
        if not extras and not blocked:
            self._roll(sts, pods, wanted, revision)
        now = self.clock()
        live = [p for p in pods.values() if _alive(p)]
        available, due = _available(live, int(spec.get("minReadySeconds") or 0), now)
        updated = sum(1 for p in live if (p["metadata"].get("labels") or {}).get(REVISION_HASH) == revision)
        status: dict[str, Any] = {
            "observedGeneration": meta.get("generation", 1), "replicas": len(live),
            "readyReplicas": sum(1 for p in live if pod_ready(p)), "availableReplicas": available,
            "currentReplicas": updated, "updatedReplicas": updated,
            "currentRevision": revision, "updateRevision": revision, "collisionCount": 0,
        }
        for key in ("readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"):
            if not status[key]:
                status.pop(key)
        self._write_status(sts, status)
        return due

    def _roll(self, sts: Object, pods: dict[str, Object], wanted: list[str], revision: str) -> None:
        """RollingUpdate: once every pod is ready, replace the highest outdated ordinal (from ``partition``)."""
        strategy = (sts.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        if not all(n in pods and _alive(pods[n]) and pod_ready(pods[n]) for n in wanted):
            return
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        outdated = [pods[n] for n in wanted if _ordinal(pods[n]) >= partition
                    and (pods[n]["metadata"].get("labels") or {}).get(REVISION_HASH) != revision]
        if outdated:
            victim = max(outdated, key=_ordinal)
            self._delete_pod(victim["metadata"].get("namespace", ""), victim["metadata"]["name"])
            pods.pop(victim["metadata"]["name"], None)

    def _delete_pod(self, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFound):
            self.store.delete("Pod", namespace, name)

    def _sts_pod(self, sts: Object, pod_name: str, ordinal: int, revision: str) -> Object:
        spec = sts.get("spec") or {}
        template = spec.get("template") or {}
        labels = {**((template.get("metadata") or {}).get("labels") or {}), POD_INDEX: str(ordinal),
                  POD_NAME: pod_name, REVISION_HASH: revision}
        pod = _new_pod(sts, "StatefulSet", template, labels, name=pod_name)
        pod["spec"]["hostname"] = pod_name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        return pod


def _ordinal(pod: Object) -> int:
    text = str(pod["metadata"]["name"]).rsplit("-", 1)[-1]
    return int(text) if text.isdigit() else -1
