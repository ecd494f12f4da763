"""Simulated Tekton Pipelines controllers (``tekton.dev/v1``), as far as Kueue's Tekton example uses
them (site/static/examples/pod-based-workloads/tekton-*.yaml): Kueue queues the Pods Tekton creates
through its plain-Pod integration, one Workload per Pod (the queue label of the PipelineRun is
propagated to them, as Tekton propagates labels PipelineRun -> TaskRun -> Pod).

- A PipelineRun resolves ``spec.pipelineRef`` to a Pipeline in its namespace and creates one TaskRun
  ``<pipelinerun>-<task>`` per pipeline task once every task it ``runAfter`` has succeeded, with the
  task's ``taskRef`` and its params (``$(params.NAME)`` from the PipelineRun's params, else the
  Pipeline's defaults), labelled ``tekton.dev/pipeline``, ``tekton.dev/pipelineRun``,
  ``tekton.dev/pipelineTask`` and the PipelineRun's own labels, owned by the PipelineRun. Its status:
  condition ``Succeeded`` (Unknown/``Running`` while tasks run; True/``Succeeded`` with Tekton's
  "Tasks Completed: N (Failed: 0, Cancelled 0), Skipped: 0"; False/``Failed`` when one fails, the
  tasks after it skipped; False/``CouldntGetPipeline`` when the Pipeline is missing),
  ``childReferences``, ``startTime``, ``completionTime``.
- A TaskRun resolves ``spec.taskRef`` to a Task and creates its Pod ``<taskrun>-pod`` through the API
  (so Kueue's pod webhook gates it), one container ``step-<name>`` per step (``script`` run by
  ``/bin/sh -c``, ``$(params.NAME)`` substituted), ``restartPolicy: Never``, labelled as its TaskRun
  plus ``tekton.dev/taskRun`` and ``tekton.dev/task``, owned by the TaskRun. Its status follows the
  Pod: ``Succeeded`` Unknown/``Pending`` or ``Running``, then True/``Succeeded`` or False/``Failed``;
  ``podName``, ``startTime``, ``completionTime``.

Not done (the real controllers do): inline ``pipelineSpec``/``taskSpec``, workspaces, results,
``when`` expressions, ``finally`` tasks, retries, timeouts, cancellation, sidecars, the entrypoint
binary (steps run as plain containers, all at once, as the dev-cluster's kubelet runs any pod),
Events. ``spec.managedBy`` is Tekton's (tektoncd/pipeline#8891): a PipelineRun or TaskRun naming
another controller than Tekton's own (``tekton.dev/pipeline``) is left alone, as MultiKueue's
manager needs (Kueue's external-frameworks adapter creates its copy in a worker without it).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from hub.store.interface import Object

from .jobs import format_time
from .podbased import OwnerObjectController, owner_ref
from .podbased_crds import TEKTON_API_VERSION

PIPELINE, PIPELINE_RUN, PIPELINE_TASK = "tekton.dev/pipeline", "tekton.dev/pipelineRun", "tekton.dev/pipelineTask"
TASK, TASK_RUN = "tekton.dev/task", "tekton.dev/taskRun"
MANAGED_BY = "app.kubernetes.io/managed-by"
TEKTON_CONTROLLER = "tekton.dev/pipeline"  # spec.managedBy's value for Tekton's own controller
_PARAM = re.compile(r"\$\(params\.([A-Za-z0-9_.-]+)\)")


def substitute(value: Any, params: dict[str, str]) -> Any:
    """``$(params.NAME)`` replaced in every string of ``value`` (unknown names are left as written)."""
    if isinstance(value, str):
        return _PARAM.sub(lambda m: params.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [substitute(v, params) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, params) for k, v in value.items()}
    return value


def _params(declared: Any, given: Any) -> dict[str, str]:
    """The declared params' defaults overridden by the given ones (string values only)."""
    out = {str(p["name"]): str(p["default"]) for p in declared or [] if isinstance(p, dict) and "default" in p}
    out.update({str(p["name"]): str(p.get("value", "")) for p in given or [] if isinstance(p, dict) and "name" in p})
    return out


def _succeeded(status: dict[str, Any], value: str, reason: str, message: str, now: float) -> None:
    stamp = format_time(now)
    conds = [c for c in status.get("conditions") or [] if c.get("type") != "Succeeded"]
    old = next((c for c in status.get("conditions") or [] if c.get("type") == "Succeeded"), None)
    when = old["lastTransitionTime"] if old is not None and old.get("status") == value else stamp
    status["conditions"] = [*conds, {"type": "Succeeded", "status": value, "reason": reason, "message": message,
                                     "lastTransitionTime": when}]


def _ours(spec: dict[str, Any]) -> bool:
    """Tekton's controller runs the object: its ``managedBy`` is unset or names it."""
    return spec.get("managedBy") in (None, "", TEKTON_CONTROLLER)


def _state(obj: Object | None) -> str:
    """"True", "False" or "Unknown" (running or not there yet)."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "Succeeded":
            return str(c.get("status"))
    return "Unknown"


class TaskRunController(OwnerObjectController):
    KIND = "TaskRun"

    def _reconcile(self, tr: Object) -> float | None:
        meta, spec = tr["metadata"], tr.get("spec") or {}
        if not _ours(spec):
            return None
        ns, now = meta.get("namespace", ""), self.clock()
        status: dict[str, Any] = copy.deepcopy(tr.get("status") or {})
        if _state(tr) in ("True", "False"):
            return None
        status.setdefault("startTime", format_time(now))
        task_name = str((spec.get("taskRef") or {}).get("name", ""))
        task = self.store.get("Task", ns, task_name) if task_name else None
        if task is None:
            _succeeded(status, "False", "TaskRunResolutionFailed", f'tasks.tekton.dev "{task_name}" not found', now)
            status["completionTime"] = format_time(now)
            self._write_status(tr, status)
            return None
        pod_name = status.get("podName") or f"{meta['name']}-pod"
        pod = self.store.get("Pod", ns, pod_name)
        retry = None
        if pod is None:
            pod, retry = self._make(self._pod(tr, task, pod_name), f"TaskRun {ns}/{meta['name']}")
        status["podName"] = pod_name
        phase = ((pod or {}).get("status") or {}).get("phase", "Pending")
        if phase == "Succeeded":
            _succeeded(status, "True", "Succeeded", "All Steps have completed executing", now)
            status["completionTime"] = format_time(now)
        elif phase == "Failed":
            _succeeded(status, "False", "Failed", f'"step" exited with a failure in pod "{pod_name}"', now)
            status["completionTime"] = format_time(now)
        elif phase == "Running":
            _succeeded(status, "Unknown", "Running", "Not all Steps in the Task have finished executing", now)
        else:
            _succeeded(status, "Unknown", "Pending", f'pod status "PodScheduled":"False"; pod "{pod_name}" is pending', now)
        self._write_status(tr, status)
        return retry

    def _pod(self, tr: Object, task: Object, pod_name: str) -> Object:
        meta, spec, tspec = tr["metadata"], tr.get("spec") or {}, task.get("spec") or {}
        params = _params(tspec.get("params"), spec.get("params"))
        containers = []
        for i, step in enumerate(tspec.get("steps") or []):
            step = substitute(copy.deepcopy(step), params)
            container: dict[str, Any] = {"name": f"step-{step.get('name') or f'unnamed-{i}'}",
                                         "image": step.get("image", "")}
            if "script" in step:
                container["command"], container["args"] = ["/bin/sh", "-c"], [step["script"]]
            for key in ("command", "args", "env", "workingDir"):
                if key in step:
                    container[key] = step[key]
            if step.get("computeResources"):
                container["resources"] = step["computeResources"]
            containers.append(container)
        labels = {**(meta.get("labels") or {}), MANAGED_BY: "tekton-pipelines", TASK_RUN: meta["name"],
                  TASK: task["metadata"]["name"]}
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": meta.get("namespace", ""), "labels": labels,
                         "annotations": dict(meta.get("annotations") or {}),
                         "ownerReferences": [owner_ref(tr, TEKTON_API_VERSION, "TaskRun")]},
            "spec": {"containers": containers or [{"name": "step-noop", "image": "busybox"}],
                     "restartPolicy": "Never"},
        }


class PipelineRunController(OwnerObjectController):
    KIND = "PipelineRun"

    def _reconcile(self, pr: Object) -> float | None:
        meta, spec = pr["metadata"], pr.get("spec") or {}
        if not _ours(spec):
            return None
        ns, now = meta.get("namespace", ""), self.clock()
        status: dict[str, Any] = copy.deepcopy(pr.get("status") or {})
        if _state(pr) in ("True", "False"):
            return None
        status.setdefault("startTime", format_time(now))
        pipeline_name = str((spec.get("pipelineRef") or {}).get("name", ""))
        pipeline = self.store.get("Pipeline", ns, pipeline_name) if pipeline_name else None
        if pipeline is None:
            _succeeded(status, "False", "CouldntGetPipeline",
                       f"Error retrieving pipeline for pipelinerun {ns}/{meta['name']}: "
                       f'pipelines.tekton.dev "{pipeline_name}" not found', now)
            status["completionTime"] = format_time(now)
            self._write_status(pr, status)
            return None
        pspec = pipeline.get("spec") or {}
        params = _params(pspec.get("params"), spec.get("params"))
        tasks = [t for t in pspec.get("tasks") or [] if isinstance(t, dict) and t.get("name")]
        runs = {t["name"]: self.store.get("TaskRun", ns, f"{meta['name']}-{t['name']}") for t in tasks}
        failed = [n for n, run in runs.items() if _state(run) == "False"]
        retry = None
        if not failed:
            for task in tasks:
                after = [str(a) for a in task.get("runAfter") or []]
                if runs[task["name"]] is None and all(_state(runs.get(a)) == "True" for a in after):
                    runs[task["name"]], again = self._make(self._task_run(pr, pipeline, task, params),
                                                           f"PipelineRun {ns}/{meta['name']}")
                    retry = again if retry is None else retry
        status["childReferences"] = [
            {"apiVersion": TEKTON_API_VERSION, "kind": "TaskRun", "name": f"{meta['name']}-{t['name']}",
             "pipelineTaskName": t["name"]} for t in tasks if runs[t["name"]] is not None]
        done = [n for n, run in runs.items() if _state(run) == "True"]
        if failed and not any(_state(run) == "Unknown" and run is not None for run in runs.values()):
            skipped = sum(1 for run in runs.values() if run is None)
            _succeeded(status, "False", "Failed", f"Tasks Completed: {len(done) + len(failed)} (Failed: {len(failed)}, "
                       f"Cancelled 0), Skipped: {skipped}", now)
            status["completionTime"] = format_time(now)
        elif len(done) == len(tasks):
            _succeeded(status, "True", "Succeeded", f"Tasks Completed: {len(done)} (Failed: 0, Cancelled 0), Skipped: 0", now)
            status["completionTime"] = format_time(now)
        else:
            _succeeded(status, "Unknown", "Running", f"Tasks Completed: {len(done)} (Failed: {len(failed)}, Cancelled 0), "
                       f"Incomplete: {len(tasks) - len(done) - len(failed)}, Skipped: 0", now)
        self._write_status(pr, status)
        return retry

    def _task_run(self, pr: Object, pipeline: Object, task: dict[str, Any], params: dict[str, str]) -> Object:
        meta = pr["metadata"]
        labels = {**(meta.get("labels") or {}), MANAGED_BY: "tekton-pipelines", PIPELINE: pipeline["metadata"]["name"],
                  PIPELINE_RUN: meta["name"], PIPELINE_TASK: task["name"]}
        spec: dict[str, Any] = {"taskRef": copy.deepcopy(task.get("taskRef") or {}),
                                "params": substitute(copy.deepcopy(task.get("params") or []), params)}
        return {
            "apiVersion": TEKTON_API_VERSION, "kind": "TaskRun",
            "metadata": {"name": f"{meta['name']}-{task['name']}", "namespace": meta.get("namespace", ""),
                         "labels": labels, "annotations": dict(meta.get("annotations") or {}),
                         "ownerReferences": [owner_ref(pr, TEKTON_API_VERSION, "PipelineRun")]},
            "spec": spec,
        }


__all__ = ["PipelineRunController", "TaskRunController", "owner_ref", "substitute"]
