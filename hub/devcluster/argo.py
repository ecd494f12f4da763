"""A simulated Argo Workflows controller (``argoproj.io/v1alpha1`` Workflow), as far as Kueue's
examples use it (site/static/examples/pod-based-workloads/workflow-*.yaml): Kueue queues the Pods
of a Workflow through its plain-Pod integration, one Workload per Pod, the queue label coming from
``spec.podMetadata`` or from a template's ``metadata``.

From ``spec.entrypoint`` the templates unfold into pod nodes: a ``container`` or ``script``
template is one Pod; a ``steps`` template runs its outer list one group after the other, the steps
of a group side by side; a ``dag`` template runs a task once the tasks it ``dependencies`` on have
succeeded. Each Pod is ``<workflow>-<template>-<hash of its node name>`` with one container
``main``, ``{{inputs.parameters.NAME}}`` and ``{{workflow.parameters.NAME}}`` substituted,
``restartPolicy: Never``, labelled ``workflows.argoproj.io/workflow`` and ``completed``, annotated
with its node name (``<workflow>[0].hello1``), owned by the Workflow; created through the API, so
Kueue's pod webhook gates it. Status: ``phase`` (Running, then Succeeded, or Failed once a Pod
failed: nothing more starts), ``startedAt``, ``finishedAt``, ``progress`` (``done/total``) and
``nodes`` (one per Pod and the root, with ``phase`` and ``templateName``).

Not done (the real controller does): ``suspend``/``resource``/``http`` templates and ``when``,
``withItems``, retries, ``onExit``, outputs and artifacts, the wait/init sidecars, ``depends``
expressions (plain ``dependencies`` only), pod GC strategies, ``spec.suspend``, Events.
"""

from __future__ import annotations

import copy
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from hub.store.interface import Object

from .jobs import format_time
from .podbased import OwnerObjectController, owner_ref
from .podbased_crds import ARGO_API_VERSION

WORKFLOW = "workflows.argoproj.io/workflow"
COMPLETED = "workflows.argoproj.io/completed"
NODE_NAME = "workflows.argoproj.io/node-name"
NODE_ID = "workflows.argoproj.io/node-id"
_EXPR = re.compile(r"\{\{\s*(inputs|workflow)\.parameters\.([A-Za-z0-9_.-]+)\s*\}\}")


@dataclass(slots=True)
class PodNode:
    id: str
    display: str  # Argo's node name: <workflow>[0].hello1
    template: dict[str, Any]
    inputs: dict[str, str]
    after: set[str] = field(default_factory=set)  # node ids that must have succeeded first


def _node_id(workflow: str, display: str) -> str:
    return f"{workflow}-{zlib.crc32(display.encode())}"


def _arguments(args: Any) -> dict[str, str]:
    return {str(p["name"]): str(p.get("value", "")) for p in (args or {}).get("parameters") or []
            if isinstance(p, dict) and "name" in p}


def unfold(wf: Object) -> list[PodNode]:
    """The Workflow's pod nodes in the order they may start, each with the nodes it waits for."""
    name, spec = wf["metadata"]["name"], wf.get("spec") or {}
    templates = {str(t.get("name")): t for t in spec.get("templates") or [] if isinstance(t, dict)}
    nodes: list[PodNode] = []

    def expand(tname: str, inputs: dict[str, str], display: str, after: set[str], depth: int) -> set[str]:
        template = templates.get(tname)
        if template is None or depth > 20:
            return after
        defaults = {str(p["name"]): str(p["value"]) for p in (template.get("inputs") or {}).get("parameters") or []
                    if isinstance(p, dict) and "value" in p}
        inputs = {**defaults, **inputs}
        if "container" in template or "script" in template:
            node = PodNode(_node_id(name, display), display, template, inputs, set(after))
            nodes.append(node)
            return {node.id}
        if "steps" in template:
            exits = after
            for i, group in enumerate(template.get("steps") or []):
                group_exits: set[str] = set()
                for step in group if isinstance(group, list) else [group]:
                    if isinstance(step, dict):
                        group_exits |= expand(str(step.get("template")), _arguments(step.get("arguments")),
                                              f"{display}[{i}].{step.get('name')}", exits, depth + 1)
                exits = group_exits or exits
            return exits
        if "dag" in template:
            tasks = [t for t in (template.get("dag") or {}).get("tasks") or [] if isinstance(t, dict)]
            done: dict[str, set[str]] = {}
            while len(done) < len(tasks):
                progressed = False
                for task in tasks:
                    deps = [str(d) for d in task.get("dependencies") or []]
                    if task.get("name") in done or not all(d in done for d in deps):
                        continue
                    waits = set().union(*(done[d] for d in deps)) if deps else set(after)
                    done[str(task.get("name"))] = expand(str(task.get("template")), _arguments(task.get("arguments")),
                                                         f"{display}.{task.get('name')}", waits, depth + 1)
                    progressed = True
                if not progressed:  # a dependency that names no task: the rest never runs
                    break
            depended = {str(d) for t in tasks for d in t.get("dependencies") or []}
            return set().union(*(ids for task, ids in done.items() if task not in depended)) or after
        return after  # suspend, resource, http: no pod

    expand(str(spec.get("entrypoint", "")), {}, name, set(), 0)
    return nodes


def _substitute(value: Any, inputs: dict[str, str], workflow: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _EXPR.sub(lambda m: (inputs if m.group(1) == "inputs" else workflow).get(m.group(2), m.group(0)), value)
    if isinstance(value, list):
        return [_substitute(v, inputs, workflow) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, inputs, workflow) for k, v in value.items()}
    return value


def pod_name(workflow: str, node: PodNode) -> str:
    return f"{workflow}-{node.template.get('name')}-{zlib.crc32(node.display.encode())}"


class WorkflowController(OwnerObjectController):
    KIND = "Workflow"

    def _reconcile(self, wf: Object) -> float | None:
        meta = wf["metadata"]
        ns, name, now = meta.get("namespace", ""), meta["name"], self.clock()
        status: dict[str, Any] = copy.deepcopy(wf.get("status") or {})
        if status.get("phase") in ("Succeeded", "Failed", "Error"):
            return None
        nodes = unfold(wf)
        pods = {n.id: self.store.get("Pod", ns, pod_name(name, n)) for n in nodes}
        phases = {i: ((p or {}).get("status") or {}).get("phase", "Pending") if p is not None else None
                  for i, p in pods.items()}
        failed = any(ph == "Failed" for ph in phases.values())
        retry = None
        if not failed:
            for node in nodes:
                if pods[node.id] is None and all(phases.get(a) == "Succeeded" for a in node.after):
                    pods[node.id], again = self._make(self._pod(wf, node), f"Workflow {ns}/{name}")
                    phases[node.id] = "Pending" if pods[node.id] is not None else None
                    retry = again if retry is None else retry
        status.setdefault("startedAt", format_time(now))
        done = sum(1 for ph in phases.values() if ph == "Succeeded")
        status["progress"] = f"{done}/{len(nodes)}"
        status["nodes"] = self._nodes(wf, nodes, pods, phases, status.get("nodes") or {}, now)
        running = any(ph in ("Pending", "Running") for ph in phases.values())
        if failed and not running:
            status.update(phase="Failed", finishedAt=format_time(now), message="child failed")
        elif nodes and done == len(nodes) or not nodes:
            status.update(phase="Succeeded", finishedAt=format_time(now))
        else:
            status["phase"] = "Running"
        root = status["nodes"].get(name)
        if root is not None:
            root["phase"] = status["phase"]
        self._write_status(wf, status)
        return retry

    def _nodes(self, wf: Object, nodes: list[PodNode], pods: dict[str, Object | None], phases: dict[str, str | None],
               before: dict[str, Any], now: float) -> dict[str, Any]:
        name = wf["metadata"]["name"]
        entry = str((wf.get("spec") or {}).get("entrypoint", ""))
        out: dict[str, Any] = {name: {"id": name, "name": name, "displayName": name, "type": "Steps",
                                      "templateName": entry, "phase": "Running",
                                      "children": [n.id for n in nodes if not n.after]}}
        for node in nodes:
            phase = phases.get(node.id)
            if phase is None:
                continue
            entry_node = dict(before.get(node.id) or {})
            entry_node.update(id=node.id, name=node.display, displayName=node.display.rpartition(".")[2],
                              type="Pod", templateName=str(node.template.get("name")), phase=phase)
            entry_node.setdefault("startedAt", format_time(now))
            if phase in ("Succeeded", "Failed"):
                entry_node.setdefault("finishedAt", format_time(now))
            out[node.id] = entry_node
        return out

    def _pod(self, wf: Object, node: PodNode) -> Object:
        meta, spec = wf["metadata"], wf.get("spec") or {}
        template = node.template
        workflow_params = _arguments(spec.get("arguments"))
        pod_meta, tmeta = spec.get("podMetadata") or {}, template.get("metadata") or {}
        labels = {**(pod_meta.get("labels") or {}), **(tmeta.get("labels") or {}),
                  WORKFLOW: meta["name"], COMPLETED: "false"}
        annotations = {**(pod_meta.get("annotations") or {}), **(tmeta.get("annotations") or {}),
                       NODE_NAME: node.display, NODE_ID: node.id}
        if "container" in template:
            main = copy.deepcopy(template["container"])
        else:
            script = copy.deepcopy(template["script"])
            source = script.pop("source", "")
            main = {**script, "args": [*(script.get("args") or []), source]}
        main = _substitute(main, node.inputs, workflow_params)
        main["name"] = "main"
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name(meta["name"], node), "namespace": meta.get("namespace", ""),
                         "labels": labels, "annotations": annotations,
                         "ownerReferences": [owner_ref(wf, ARGO_API_VERSION, "Workflow")]},
            "spec": {"containers": [main], "restartPolicy": "Never"},
        }
