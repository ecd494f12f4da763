"""The job framework's contract, checked for every adapter in ``hub.api.jobkinds.ADAPTERS``.

A new kind registers its adapter and adds a :class:`Samples` entry below; these tests
then pin that it behaves as Kueue's reconciler needs: pod sets out, suspend and run,
the admission into its templates and back out, finished, pods ready, priority,
managedBy and the worker copy, and a mirrored status that tells the same outcome.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from hub.api.jobkinds import ADAPTERS, JobAdapter, adapter_for
from hub.api.jobkinds.framework import PodSetInfo, owner_reference, queue_name, workload_for
from hub.api.jobkinds.pod import read_pod
from hub.api.registry import parse_object

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Samples:
    """How a test makes one kind's objects: the fixture half of the contract."""

    make: Callable[[str, str, dict[str, str], dict[str, Any]], Manifest]  # (name, uid, labels, pod spec extra)
    finish: Callable[[Manifest, bool], None]  # the kind's controller ended it (succeeded or failed)
    all_ready: Callable[[Manifest], None]  # every pod of it is ready
    # Allow partial admission down to n pods in its first pod set; None: the kind has none.
    partial: Callable[[Manifest, int], None] | None
    templates: Callable[[Manifest], list[dict[str, Any]]]  # its pod templates, in pod-set order
    finishes: bool = True  # False: a long-running kind (RayCluster, RayService) whose Workload never finishes
    # A kind whose pod sets come from another object (a TrainJob's runtime): how to look that up.
    references: Callable[[str, str, str], Any] | None = None
    pod_priority: bool = True  # the pods' priorityClassName is a fallback priority (TrainJob's is not)
    # Put annotations on every pod template (default: into templates(m), which must then be the manifest's).
    annotate: Callable[[Manifest, dict[str, str]], None] | None = None
    # Where the admission lands when not in those templates (a SparkApplication's role fields), as templates.
    placed: Callable[[Manifest], list[dict[str, Any]]] | None = None


def _job(name: str, uid: str, labels: dict[str, str], pod_extra: dict[str, Any]) -> Manifest:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "team", "uid": uid, "labels": dict(labels)},
        "spec": {"parallelism": 3, "completions": 3, "template": {
            "metadata": {"labels": {"app": "x", "batch.kubernetes.io/job-name": name, "job-name": name}},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
                     "restartPolicy": "Never", "nodeSelector": {"zone": "a"}, **pod_extra}}},
    }


def _job_finish(m: Manifest, ok: bool) -> None:
    cond = {"type": "Complete" if ok else "Failed", "status": "True", "reason": "R", "message": "done"}
    m["status"] = {"conditions": [cond], "succeeded" if ok else "failed": 3}


def _job_ready(m: Manifest) -> None:
    m["status"] = {"active": 3, "ready": 3}


def _job_partial(m: Manifest, n: int) -> None:
    m["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": str(n)}


def _pod(name: str, uid: str, labels: dict[str, str], pod_extra: dict[str, Any]) -> Manifest:
    # As Kueue's webhook leaves a Pod it manages: gated at creation.
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "team", "uid": uid, "labels": dict(labels)},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
                 "restartPolicy": "Never", "nodeSelector": {"zone": "a"},
                 "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], **pod_extra},
    }


def _pod_finish(m: Manifest, ok: bool) -> None:
    m["status"] = {"phase": "Succeeded" if ok else "Failed", "message": "done"}


def _pod_ready(m: Manifest) -> None:
    m["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}


def _jobset(name: str, uid: str, labels: dict[str, str], pod_extra: dict[str, Any]) -> Manifest:
    def replicated(rj: str, replicas: int, cpu: str) -> dict[str, Any]:
        return {"name": rj, "replicas": replicas, "template": {"spec": {"parallelism": 2, "completions": 2, "template": {
            "metadata": {"labels": {"app": "x", "jobset.sigs.k8s.io/jobset-name": name, "job-name": name}},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
                     "restartPolicy": "Never", "nodeSelector": {"zone": "a"}, **pod_extra}}}}}

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team", "uid": uid, "labels": dict(labels)},
        "spec": {"replicatedJobs": [replicated("driver", 1, "1"), replicated("workers", 3, "2")]},
    }


def _jobset_finish(m: Manifest, ok: bool) -> None:
    state = "Completed" if ok else "Failed"
    m["status"] = {"conditions": [{"type": state, "status": "True", "reason": "R", "message": "done"}],
                   "terminalState": state, "restarts": 0,
                   "replicatedJobsStatus": [{"name": rj["name"], "succeeded" if ok else "failed": rj["replicas"]}
                                            for rj in m["spec"]["replicatedJobs"]]}


def _jobset_ready(m: Manifest) -> None:
    m["status"] = {"replicatedJobsStatus": [{"name": rj["name"], "ready": rj["replicas"], "active": rj["replicas"]}
                                            for rj in m["spec"]["replicatedJobs"]]}


def _kubeflow(kind: str, field: str, types: tuple[tuple[str, int], ...], container: str) -> Callable[..., Manifest]:
    def make(name: str, uid: str, labels: dict[str, str], pod_extra: dict[str, Any]) -> Manifest:
        def replica(n: int) -> dict[str, Any]:
            return {"replicas": n, "restartPolicy": "OnFailure", "template": {
                "metadata": {"labels": {"app": "x", "training.kubeflow.org/job-name": name}},
                "spec": {"containers": [{"name": container, "image": "img", "resources": {"requests": {"cpu": "1"}}}],
                         "nodeSelector": {"zone": "a"}, **pod_extra}}}

        return {"apiVersion": "kubeflow.org/v1", "kind": kind,
                "metadata": {"name": name, "namespace": "team", "uid": uid, "labels": dict(labels)},
                "spec": {field: {t: replica(n) for t, n in types}}}
    return make


def _kubeflow_finish(m: Manifest, ok: bool) -> None:
    m["status"] = {"conditions": [{"type": "Created", "status": "True", "reason": "R", "message": "created"},
                                  {"type": "Running", "status": "False", "reason": "R", "message": "ran"},
                                  {"type": "Succeeded" if ok else "Failed", "status": "True", "reason": "R",
                                   "message": "done"}],
                   "replicaStatuses": {"Worker": {"succeeded" if ok else "failed": 1}}}


def _kubeflow_ready(m: Manifest) -> None:
    m["status"] = {"conditions": [{"type": "Running", "status": "True", "reason": "R", "message": "running"}],
                   "replicaStatuses": {"Worker": {"active": 1}}}


def _kubeflow_templates(field: str) -> Callable[[Manifest], list[dict[str, Any]]]:
    return lambda m: [rs["template"] for rs in m["spec"][field].values()]  # written in Kueue's order


_KUBEFLOW = {
    "kubeflow.org/pytorchjob": ("PyTorchJob", "pytorchReplicaSpecs", (("Master", 1), ("Worker", 3)), "pytorch"),
    "kubeflow.org/tfjob": ("TFJob", "tfReplicaSpecs", (("Chief", 1), ("PS", 1), ("Worker", 2), ("Evaluator", 1)),
                           "tensorflow"),
    "kubeflow.org/xgboostjob": ("XGBoostJob", "xgbReplicaSpecs", (("Master", 1), ("Worker", 2)), "xgboost"),
    "kubeflow.org/paddlejob": ("PaddleJob", "paddleReplicaSpecs", (("Master", 1), ("Worker", 2)), "paddle"),
    "kubeflow.org/jaxjob": ("JAXJob", "jaxReplicaSpecs", (("Worker", 2),), "jax"),
}
def _ray_cluster_spec(name: str, pod_extra: dict[str, Any]) -> dict[str, Any]:
    def template(cpu: str) -> dict[str, Any]:
        return {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "ray", "image": "rayproject/ray", "resources": {"requests": {"cpu": cpu}}}],
                         "nodeSelector": {"zone": "a"}, **pod_extra}}

    return {"headGroupSpec": {"rayStartParams": {}, "template": template("1")},
            "workerGroupSpecs": [{"groupName": "small-group", "replicas": 2, "minReplicas": 1, "maxReplicas": 5,
                                  "template": template("2")}]}


def _ray_make(kind: str) -> Callable[[str, str, dict[str, str], dict[str, Any]], Manifest]:
    def make(name: str, uid: str, labels: dict[str, str], pod_extra: dict[str, Any]) -> Manifest:
        cluster = _ray_cluster_spec(name, pod_extra)
        spec: dict[str, Any] = {
            "RayCluster": cluster,
            "RayJob": {"entrypoint": "python x.py", "shutdownAfterJobFinishes": True, "rayClusterSpec": cluster,
                       "submitterPodTemplate": {"metadata": {"labels": {"app": "x"}},
                                                "spec": {"restartPolicy": "Never", "nodeSelector": {"zone": "a"},
                                                         "containers": [{"name": "submit", "image": "rayproject/ray"}],
                                                         **pod_extra}}},
            "RayService": {"serveConfigV2": "applications: []", "rayClusterConfig": cluster},
        }[kind]
        return {"apiVersion": "ray.io/v1", "kind": kind,
                "metadata": {"name": name, "namespace": "team", "uid": uid, "labels": dict(labels)}, "spec": spec}
    return make


def _rayjob_finish(m: Manifest, ok: bool) -> None:
    m["status"] = {"jobDeploymentStatus": "Complete" if ok else "Failed", "jobStatus": "SUCCEEDED" if ok else "FAILED",
                   "message": "done", "rayClusterStatus": {"state": "ready"}}


def _ray_ready(m: Manifest) -> None:
    if m["kind"] == "RayJob":
        m["status"] = {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "rayClusterStatus": {"state": "ready"}}
    elif m["kind"] == "RayCluster":
        m["status"] = {"state": "ready", "readyWorkerReplicas": 2}
    else:
        m["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "R", "message": ""}]}


def _never_finishes(m: Manifest, ok: bool) -> None:
    raise AssertionError(f"a {m['kind']} never finishes")


def _ray_templates(m: Manifest) -> list[dict[str, Any]]:
    spec = m["spec"]
    cluster = spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec
    out = [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]
    return out + ([spec["submitterPodTemplate"]] if "submitterPodTemplate" in spec else [])


def _mpijob(name: str, uid: str, labels: dict[str, str], pod_extra: dict[str, Any]) -> Manifest:
    def replica(replicas: int, cpu: str) -> dict[str, Any]:
        return {"replicas": replicas, "template": {
            "metadata": {"labels": {"app": "x", "training.kubeflow.org/job-name": name}},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
                     "nodeSelector": {"zone": "a"}, **pod_extra}}}

    return {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "team", "uid": uid, "labels": dict(labels)},
        "spec": {"slotsPerWorker": 1, "runPolicy": {"cleanPodPolicy": "Running"},
                 "mpiReplicaSpecs": {"Launcher": replica(1, "1"), "Worker": replica(2, "2")}},
    }


def _mpijob_finish(m: Manifest, ok: bool) -> None:
    m["status"] = {"conditions": [{"type": "Succeeded" if ok else "Failed", "status": "True", "reason": "R",
                                   "message": "done"}],
                   "replicaStatuses": {"Launcher": {"succeeded" if ok else "failed": 1}}}


def _mpijob_ready(m: Manifest) -> None:
    m["status"] = {"conditions": [{"type": "Running", "status": "True", "reason": "MPIJobRunning"}],
                   "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 2}}}


# The runtime TrainJob samples name: one trainer step (numNodes from the TrainJob) and an initializer.
_RUNTIME = parse_object({
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "metadata": {"name": "torch"},
    "spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": [
        {"name": "initializer", "template": {"spec": {"template": {
            "metadata": {"labels": {"app": "x", "jobset.sigs.k8s.io/jobset-name": "sample"}},
            "spec": {"containers": [{"name": "init", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
                     "nodeSelector": {"zone": "a"}}}}}},
        {"name": "node", "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                      "spec": {"template": {
                                          "metadata": {"labels": {"app": "x"}},
                                          "spec": {"containers": [{"name": "node", "image": "pause"}],
                                                   "nodeSelector": {"zone": "a"}}}}}},
    ]}}},
})


def _trainjob(name: str, uid: str, labels: dict[str, str], pod_extra: dict[str, Any]) -> Manifest:
    m: Manifest = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "team", "uid": uid, "labels": dict(labels)},
        "spec": {"runtimeRef": {"name": "torch"},
                 "trainer": {"numNodes": 3, "resourcesPerNode": {"requests": {"cpu": "2"}}}},
    }
    if pod_extra:  # the user's own runtime patch: how a TrainJob changes its pods
        _user_patch(m, {"spec": dict(pod_extra)})
    return m


def _user_patch(m: Manifest, pod: dict[str, Any]) -> None:
    m["spec"].setdefault("runtimePatches", []).append({"manager": "example.com/user", "trainingRuntimeSpec": {
        "template": {"spec": {"replicatedJobs": [{"name": n, "template": {"spec": {"template": copy.deepcopy(pod)}}}
                                                 for n in ("initializer", "node")]}}}})


def _trainjob_templates(m: Manifest) -> list[dict[str, Any]]:
    """The pod templates of the TrainJob's JobSet (computed from the manifest and the runtime)."""
    from hub.api.trainjob_kind import child_jobset_spec

    spec = child_jobset_spec(m["spec"], _RUNTIME.spec_raw)
    return [rj["template"]["spec"]["template"] for rj in spec["replicatedJobs"]]


def _trainjob_finish(m: Manifest, ok: bool) -> None:
    m["status"] = {"conditions": [{"type": "Complete" if ok else "Failed", "status": "True", "reason": "R",
                                   "message": "done"}],
                   "jobsStatus": [{"name": n, "succeeded" if ok else "failed": 1} for n in ("initializer", "node")]}


def _trainjob_ready(m: Manifest) -> None:
    m["status"] = {"jobsStatus": [{"name": n, "ready": 1, "active": 1} for n in ("initializer", "node")]}

def _appwrapper(name: str, uid: str, labels: dict[str, str], pod_extra: dict[str, Any]) -> Manifest:
    def pod(cpu: str) -> dict[str, Any]:
        return {"metadata": {"labels": {"app": "x", "workload.codeflare.dev/appwrapper": name}},
                "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
                         "nodeSelector": {"zone": "a"}, **pod_extra}}

    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"replicas": 2, "template": pod("1")}}
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "lws"},
           "spec": {"leaderWorkerTemplate": {"leaderTemplate": pod("1"), "workerTemplate": pod("2"), "size": 3}}}
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": name, "namespace": "team", "uid": uid, "labels": dict(labels)},
        "spec": {"components": [
            {"podSets": [{"path": "template.spec.template", "replicas": 2}], "template": deployment},
            {"podSets": [{"path": "template.spec.leaderWorkerTemplate.leaderTemplate"},
                         {"path": "template.spec.leaderWorkerTemplate.workerTemplate", "replicas": 2}],
             "template": lws}]},
    }


def _appwrapper_finish(m: Manifest, ok: bool) -> None:
    m["status"] = {"phase": "Succeeded" if ok else "Failed", "conditions": [
        {"type": "ResourcesDeployed", "status": "False", "reason": "R", "message": "done"}]}


def _appwrapper_ready(m: Manifest) -> None:
    m["status"] = {"phase": "Running", "conditions": [{"type": "PodsReady", "status": "True", "reason": "R"}]}


def _appwrapper_templates(m: Manifest) -> list[dict[str, Any]]:
    deployment, lws = (c["template"] for c in m["spec"]["components"])
    return [deployment["spec"]["template"], lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"],
            lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]]


def _spark(name: str, uid: str, labels: dict[str, str], pod_extra: dict[str, Any]) -> Manifest:
    def role(cpu: str, **more: Any) -> dict[str, Any]:
        return {"coreRequest": cpu, "memory": "512m", "nodeSelector": {"zone": "a"}, "labels": {"app": "x"},
                "template": {"metadata": {"labels": {"t": "1"}}}, **pod_extra, **more}

    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
        "metadata": {"name": name, "namespace": "team", "uid": uid, "labels": dict(labels)},
        "spec": {"type": "Scala", "mode": "cluster", "sparkVersion": "4.0.0", "image": "spark:4.0.0",
                 "driver": role("1"), "executor": role("2", instances=2)},
    }


def _spark_finish(m: Manifest, ok: bool) -> None:
    m["status"] = {"applicationState": {"state": "COMPLETED" if ok else "FAILED", "errorMessage": "" if ok else "boom"},
                   "executorState": {"e-1": "COMPLETED", "e-2": "COMPLETED"}}


def _spark_ready(m: Manifest) -> None:
    m["status"] = {"applicationState": {"state": "RUNNING"}, "executorState": {"e-1": "RUNNING", "e-2": "RUNNING"}}


def _spark_placed(m: Manifest) -> list[dict[str, Any]]:
    return [{"metadata": {k: r.get(k) for k in ("labels", "annotations")},
             "spec": {k: r.get(k) for k in ("nodeSelector", "tolerations")}}
            for r in (m["spec"]["driver"], m["spec"]["executor"])]


SAMPLES: dict[str, Samples] = {
    "batch/job": Samples(_job, _job_finish, _job_ready, _job_partial, lambda m: [m["spec"]["template"]]),
    # A Pod is its own template; it has no partial admission.
    "pod": Samples(_pod, _pod_finish, _pod_ready, None, lambda m: [m]),
    "jobset.x-k8s.io/jobset": Samples(_jobset, _jobset_finish, _jobset_ready, None,
                                      lambda m: [rj["template"]["spec"]["template"] for rj in m["spec"]["replicatedJobs"]]),
    **{framework: Samples(_kubeflow(*shape), _kubeflow_finish, _kubeflow_ready, None, _kubeflow_templates(shape[1]))
       for framework, shape in _KUBEFLOW.items()},
    "ray.io/rayjob": Samples(_ray_make("RayJob"), _rayjob_finish, _ray_ready, None, _ray_templates),
    "ray.io/raycluster": Samples(_ray_make("RayCluster"), _never_finishes, _ray_ready, None, _ray_templates,
                                 finishes=False),
    "ray.io/rayservice": Samples(_ray_make("RayService"), _never_finishes, _ray_ready, None, _ray_templates,
                                 finishes=False),
    "kubeflow.org/mpijob": Samples(_mpijob, _mpijob_finish, _mpijob_ready, None,
                                   lambda m: [m["spec"]["mpiReplicaSpecs"][t]["template"] for t in ("Launcher", "Worker")]),
    "trainer.kubeflow.org/trainjob": Samples(
        _trainjob, _trainjob_finish, _trainjob_ready, None, _trainjob_templates,
        references=lambda kind, ns, name: _RUNTIME if (kind, ns, name) == ("ClusterTrainingRuntime", "", "torch") else None,
        pod_priority=False, annotate=lambda m, annotations: _user_patch(m, {"metadata": {"annotations": annotations}})),
    "workload.codeflare.dev/appwrapper": Samples(_appwrapper, _appwrapper_finish, _appwrapper_ready, None,
                                                 _appwrapper_templates),
    "sparkoperator.k8s.io/sparkapplication": Samples(_spark, _spark_finish, _spark_ready, None,
                                                     lambda m: [m["spec"]["driver"]["template"],
                                                                m["spec"]["executor"]["template"]],
                                                     placed=_spark_placed),
}


@pytest.fixture(params=sorted(ADAPTERS))
def kind(request: pytest.FixtureRequest) -> tuple[JobAdapter[Any], Samples]:
    return ADAPTERS[request.param], SAMPLES[request.param]


def sample(s: Samples, labels: dict[str, str] | None = None, **pod_extra: Any) -> Manifest:
    return s.make("sample", "uid-1", {"kueue.x-k8s.io/queue-name": "lq", **(labels or {})}, pod_extra)


def parse(m: Manifest) -> Any:
    # Pods are not registry kinds (mkhub does not serve them yet): the pod integration reads its own.
    obj = read_pod(copy.deepcopy(m)) if m.get("kind") == "Pod" else parse_object(copy.deepcopy(m))
    adapter = adapter_for(str(m["apiVersion"]), str(m["kind"]))
    resolve = getattr(adapter, "resolve", None)
    if adapter is not None and resolve is not None:  # as the controllers resolve it (hub.controllers.jobs)
        lookup = SAMPLES[adapter.framework].references
        assert lookup is not None
        obj = resolve(obj, lookup)
    return obj


def test_every_adapter_has_samples_and_names_its_kind() -> None:
    assert set(ADAPTERS) == set(SAMPLES)
    for name, adapter in ADAPTERS.items():
        assert adapter.framework == name
        m = SAMPLES[name].make("x", "u", {}, {})
        assert (m["apiVersion"], m["kind"]) == (adapter.api_version, adapter.kind)
        assert adapter.controller_name and adapter.controller_name != "kueue.x-k8s.io/multikueue"
        if adapter.managed_by_path:  # a kind with managedBy names its controller there: a domain-prefixed path
            host, _, path = adapter.controller_name.partition("/")
            assert host and path


def test_workload_named_and_owned_as_kueue_does(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    wl = workload_for(adapter, parse(sample(s)))
    group = adapter.api_version.rpartition("/")[0]
    digest = hashlib.sha1(f"{adapter.kind}\n{group}\nsample\nuid-1".encode()).hexdigest()[:5]
    assert wl.meta.name == f"{adapter.kind.lower()}-sample-{digest}"
    assert wl.meta.namespace == "team"
    assert wl.meta.owner_references == [{"apiVersion": adapter.api_version, "kind": adapter.kind, "name": "sample",
                                         "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}]
    assert wl.meta.labels == {"kueue.x-k8s.io/job-uid": "uid-1"}
    assert wl.queue_name == "lq" == queue_name(parse(sample(s)))


def test_pod_sets_have_unique_names_counts_and_no_controller_labels(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    pod_sets = adapter.pod_sets(parse(sample(s)))
    assert pod_sets and len({ps.name for ps in pod_sets}) == len(pod_sets)
    for ps in pod_sets:
        assert ps.count > 0 and ps.min_count is None
        labels = (ps.template.get("metadata") or {}).get("labels") or {}
        assert not set(labels) & adapter.controller_template_labels
        assert ps.spec.containers


def test_partial_admission_sets_a_min_count(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    if s.partial is None:
        pytest.skip(f"{adapter.kind} has no partial admission")
    m = sample(s)
    s.partial(m, 1)
    assert adapter.pod_sets(parse(m))[0].min_count == 1


def test_priority_from_the_label_else_the_pods_priority_class(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    by_label = workload_for(adapter, parse(sample(s, {"kueue.x-k8s.io/priority-class": "high"}, priorityClassName="pc")))
    assert by_label.priority_class_ref is not None and by_label.priority_class_ref.is_workload_priority_class
    assert by_label.priority_class_ref.name == "high"
    by_pods = workload_for(adapter, parse(sample(s, priorityClassName="pc")))
    if not s.pod_priority:
        assert by_pods.priority_class_ref is None
        return
    assert by_pods.priority_class_ref is not None and not by_pods.priority_class_ref.is_workload_priority_class
    assert by_pods.priority_class_ref.name == "pc"
    assert workload_for(adapter, parse(sample(s))).priority_class_ref is None


def test_suspend_then_run_with_the_admission_then_restore(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    m = sample(s)
    original = adapter.pod_sets(parse(m))
    adapter.suspend(m)
    assert adapter.is_suspended(parse(m))
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    infos = [PodSetInfo(ps.name, ps.count, {"flavor": "big"}, [toleration], {"l": "1"}, {"a": "2"}) for ps in original]
    adapter.run_with_pod_sets_info(m, infos, original)
    adapter.run_with_pod_sets_info(m, infos, original)  # twice is once
    assert not adapter.is_suspended(parse(m))
    for template in (s.placed or s.templates)(m):
        pod = template["spec"]
        assert pod["nodeSelector"] == {"zone": "a", "flavor": "big"}
        assert pod["tolerations"] == [toleration]
        assert template["metadata"]["labels"]["l"] == "1"
        assert template["metadata"]["annotations"] == {"a": "2"}
    for ps in adapter.pod_sets(parse(m)):
        assert ps.template["spec"]["nodeSelector"] == {"zone": "a", "flavor": "big"}
    adapter.suspend(m)
    adapter.restore_pod_sets_info(m, original)
    assert adapter.is_suspended(parse(m))
    assert [ps.template for ps in adapter.pod_sets(parse(m))] == [ps.template for ps in original]


def test_a_partial_admission_runs_the_admitted_count_and_restore_undoes_it(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    if s.partial is None:
        pytest.skip(f"{adapter.kind} has no partial admission")
    m = sample(s)
    s.partial(m, 1)
    original = adapter.pod_sets(parse(m))
    infos = [PodSetInfo(ps.name, ps.min_count or ps.count) for ps in original]
    adapter.run_with_pod_sets_info(m, infos, original)
    assert adapter.pod_sets(parse(m))[0].count == 1
    adapter.suspend(m)
    adapter.restore_pod_sets_info(m, original)
    assert [ps.count for ps in adapter.pod_sets(parse(m))] == [ps.count for ps in original]


def test_finished_and_pods_ready(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    fresh = parse(sample(s))
    assert adapter.finished(fresh) is None and not adapter.pods_ready(fresh)
    ready = sample(s)
    s.all_ready(ready)
    assert adapter.pods_ready(parse(ready)) and adapter.finished(parse(ready)) is None
    for ok, outcome in ((True, "succeeded"), (False, "failed")) if s.finishes else ():
        done = sample(s)
        s.finish(done, ok)
        result = adapter.finished(parse(done))
        assert result is not None and result[0] == outcome and result[1]
        assert adapter.status_outcome(done["status"]) == result and adapter.status_terminal(done["status"])
    assert adapter.status_outcome(ready["status"]) is None and not adapter.status_terminal(ready["status"])


def test_a_mirrored_worker_status_tells_the_same_outcome(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    for ok in (True, False) if s.finishes else ():
        worker = sample(s)
        s.finish(worker, ok)
        manager = sample(s)
        manager["status"] = {k: v for k, v in worker["status"].items() if k in adapter.mirrored_status_fields}
        assert adapter.finished(parse(manager)) == adapter.finished(parse(worker))


def test_managed_by_and_the_worker_copy(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    m = sample(s)
    if adapter.managed_by_path:  # a kind without managedBy (a Pod) goes to workers by the prebuilt workload label
        node = m
        for step in adapter.managed_by_path[:-1]:
            node = node.setdefault(step, {})
        node[adapter.managed_by_path[-1]] = "kueue.x-k8s.io/multikueue"
    adapter.suspend(m)
    expected = "kueue.x-k8s.io/multikueue" if adapter.managed_by_path else ""
    assert adapter.managed_by(parse(m)) == expected
    copy_ = adapter.worker_copy(copy.deepcopy(m))
    assert adapter.managed_by(parse(copy_)) == ""
    assert not adapter.is_suspended(parse(copy_))


def test_owner_reference_is_the_controller(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    ref = owner_reference(adapter, parse(sample(s)).meta)
    assert ref["controller"] is True and ref["blockOwnerDeletion"] is True


def _workload_with(adapter: JobAdapter[Any], job: Any, *conditions: tuple[str, str]) -> Any:
    from hub.api.meta import Condition

    wl = workload_for(adapter, job)
    wl.status.conditions = [Condition(type_, "True", reason, "it ended", 100.0) for type_, reason in conditions]
    return wl


def test_the_simulated_status_tells_what_the_workload_says(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    m = sample(s)
    job = parse(m)

    def with_status(status: dict[str, Any]) -> Any:
        return parse({**m, "status": status})

    pending = adapter.simulated_status(_workload_with(adapter, job), job, None, None)
    assert adapter.finished(with_status(pending)) is None and not adapter.pods_ready(with_status(pending))
    running = adapter.simulated_status(_workload_with(adapter, job, ("Admitted", "Admitted")), job, None, None)
    assert not adapter.pods_ready(with_status(running)) and not adapter.status_terminal(running)
    ready = adapter.simulated_status(_workload_with(adapter, job, ("Admitted", "Admitted")), job, None, 100.0)
    assert adapter.pods_ready(with_status(ready))
    for reason, outcome in (("Succeeded", "succeeded"), ("Failed", "failed")) if s.finishes else ():
        done = adapter.simulated_status(
            _workload_with(adapter, job, ("Admitted", "Admitted"), ("Finished", reason)), job, running, 100.0)
        result = adapter.finished(with_status(done))
        assert adapter.status_terminal(done) and result is not None and result[0] == outcome


def test_topology_requests_come_from_the_template_annotations(kind: tuple[JobAdapter[Any], Samples]) -> None:
    adapter, s = kind
    assert all(ps.topology_request is None for ps in adapter.pod_sets(parse(sample(s))))
    m = sample(s)
    annotations = {"kueue.x-k8s.io/podset-required-topology": "rack", "kueue.x-k8s.io/podset-group-name": "g"}
    if s.annotate is not None:
        s.annotate(m, annotations)
    for template in s.templates(m) if s.annotate is None else ():
        template["metadata"]["annotations"] = dict(annotations)
    requests = [ps.topology_request for ps in adapter.pod_sets(parse(m))]
    assert requests and all(r is not None and r["required"] == "rack" and r["podSetGroupName"] == "g" for r in requests)
    wl = workload_for(adapter, parse(m))
    from hub.api.workload import workload_spec_to_dict

    assert workload_spec_to_dict(wl)["podSets"][0]["topologyRequest"]["required"] == "rack"
