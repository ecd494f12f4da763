"""The pod-based frameworks' kinds in the embedded hub: Tekton (``tekton.dev/v1`` Task, Pipeline,
PipelineRun, TaskRun), Argo Workflows (``argoproj.io/v1alpha1`` Workflow), agent-sandbox
(``agents.x-k8s.io/v1alpha1`` Sandbox) and the Flux Operator (``flux-framework.org/v1alpha1``
MiniCluster).

Kueue does not queue these objects themselves: it queues the Pods (a MiniCluster: the Job) their
operators create, through its plain-Pod (or Job) integration. The embedded hub stores them for
``mkhub apply``/``get``/``delete`` and runs them with the dev-cluster's simulated operators
(:mod:`hub.service.embedded_operators`). The spec is kept as written; the checks are those the
operators' CRDs and webhooks make that a manifest most often gets wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .apps_kind import Workload, spec_reader
from .errors import FieldErrors
from .meta import ObjectMeta
from .reader import Reader
from .validation import validate_name

TEKTON_VERSIONS = ("tekton.dev/v1",)
ARGO_VERSIONS = ("argoproj.io/v1alpha1",)
SANDBOX_VERSIONS = ("agents.x-k8s.io/v1alpha1",)
FLUX_VERSIONS = ("flux-framework.org/v1alpha1",)


# Stored as written (spec whole), as the apps kinds are.
PodBasedObject = Workload


def reader(kind: str) -> Callable[[Reader, ObjectMeta], PodBasedObject]:
    return spec_reader(kind)


def _list_of_named(spec: dict[str, Any], key: str, errs: FieldErrors, *, required: bool) -> list[dict[str, Any]]:
    items = spec.get(key)
    if items is None:
        if required:
            errs.required(f"spec.{key}")
        return []
    if not isinstance(items, list):
        errs.invalid(f"spec.{key}", items, "must be an array")
        return []
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item.get("name"):
            errs.required(f"spec.{key}[{i}].name")
            continue
        out.append(item)
    return out


def _ref(spec: dict[str, Any], key: str, errs: FieldErrors) -> None:
    ref = spec.get(key)
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str) or not ref.get("name"):
        errs.required(f"spec.{key}.name")


def validate(obj: PodBasedObject, errs: FieldErrors) -> None:
    validate_name(obj.meta, errs, namespaced=True)
    spec = obj.spec
    if obj.kind == "Task":
        for i, step in enumerate(_list_of_named(spec, "steps", errs, required=True)):
            if not step.get("image"):
                errs.required(f"spec.steps[{i}].image")
    elif obj.kind == "Pipeline":
        tasks = _list_of_named(spec, "tasks", errs, required=True)
        names = [t["name"] for t in tasks]
        for i, task in enumerate(tasks):
            run_after = task.get("runAfter") or []
            if not isinstance(run_after, list):
                errs.invalid(f"spec.tasks[{i}].runAfter", run_after, "must be an array")
                continue
            for after in run_after:
                if after not in names:
                    errs.invalid(f"spec.tasks[{i}].runAfter", after, "must name a task of this pipeline")
    elif obj.kind == "PipelineRun":
        _ref(spec, "pipelineRef", errs)
    elif obj.kind == "TaskRun":
        _ref(spec, "taskRef", errs)
    elif obj.kind == "Workflow":
        templates = _list_of_named(spec, "templates", errs, required=True)
        if not spec.get("entrypoint"):
            errs.required("spec.entrypoint")
        elif not isinstance(spec["entrypoint"], str):
            errs.invalid("spec.entrypoint", spec["entrypoint"], "must be a string")
        elif templates and spec["entrypoint"] not in {t["name"] for t in templates}:
            errs.invalid("spec.entrypoint", spec["entrypoint"], "must name one of spec.templates")
    elif obj.kind == "Sandbox":
        template = spec.get("podTemplate")
        pod_spec = template.get("spec") if isinstance(template, dict) else None
        if not isinstance(pod_spec, dict) or not pod_spec.get("containers"):
            errs.required("spec.podTemplate.spec.containers")
    elif obj.kind == "MiniCluster":
        size = spec.get("size", 1)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            errs.invalid("spec.size", size, "must be greater than or equal to 1")
        if not isinstance(spec.get("containers"), list) or not spec["containers"]:
            errs.required("spec.containers")


# (kind, api versions, plural, short names), as the projects' CRDs name them.
KINDS: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...] = (
    ("Task", TEKTON_VERSIONS, "tasks", ()),
    ("Pipeline", TEKTON_VERSIONS, "pipelines", ()),
    ("PipelineRun", TEKTON_VERSIONS, "pipelineruns", ("pr", "prs")),
    ("TaskRun", TEKTON_VERSIONS, "taskruns", ("tr", "trs")),
    ("Workflow", ARGO_VERSIONS, "workflows", ("wf",)),
    ("Sandbox", SANDBOX_VERSIONS, "sandboxes", ()),
    ("MiniCluster", FLUX_VERSIONS, "miniclusters", ()),
)
