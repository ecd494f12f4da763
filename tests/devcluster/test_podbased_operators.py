"""The dev-cluster's simulated pod-based operators (Tekton, Argo Workflows, Sandbox, Flux MiniCluster)
on Kueue's published examples, against a real SQLite store driven by a fake clock. Kueue queues what
they create (Pods, or a Job for a MiniCluster) through its plain-Pod or Job integration, so what is
pinned here is what Kueue's webhooks see: names, labels carrying the queue, owners, and the order
in which the pieces start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from test_devcluster import Clock, advance, cluster

from hub.devcluster.argo import unfold
from hub.store import SQLiteStore

NS = "default"
EXAMPLES = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples"
QUEUE = "kueue.x-k8s.io/queue-name"


def sample(name: str, generated: str = "") -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    obj["metadata"].setdefault("namespace", NS)
    if generated:  # the store names nothing: what the API server does with generateName
        obj["metadata"].pop("generateName", None)
        obj["metadata"]["name"] = generated
    return obj


def pods(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in store.list("Pod", NS)[0]}


def status(store: SQLiteStore, kind: str, name: str) -> dict[str, Any]:
    obj = store.get(kind, NS, name)
    assert obj is not None
    return dict(obj.get("status") or {})


def succeeded(store: SQLiteStore, kind: str, name: str) -> tuple[str, str]:
    (cond,) = [c for c in status(store, kind, name).get("conditions") or [] if c["type"] == "Succeeded"]
    return cond["status"], cond["reason"]


def test_a_pipeline_run_runs_its_tasks_in_order_each_as_one_pod_with_the_queue_label(
        store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    for name in ("tekton-sleep-task.yaml", "tekton-hello-task.yaml", "tekton-pipeline.yaml"):
        store.create(sample(name))
    run = store.create(sample("tekton-pipeline-run.yaml", "kueue-test-abc"))
    dc.step()
    assert sorted(pods(store)) == ["kueue-test-abc-sleep-pod"]  # hello runs after sleep
    pod = pods(store)["kueue-test-abc-sleep-pod"]
    labels = pod["metadata"]["labels"]
    assert labels[QUEUE] == "my-local-queue"  # the PipelineRun's label, propagated
    assert (labels["tekton.dev/pipelineRun"], labels["tekton.dev/pipelineTask"], labels["tekton.dev/task"]) == (
        "kueue-test-abc", "sleep", "sleep")
    assert pod["spec"]["restartPolicy"] == "Never"
    assert [c["name"] for c in pod["spec"]["containers"]] == ["step-echo"]
    tr = store.get("TaskRun", NS, "kueue-test-abc-sleep")
    assert tr is not None and tr["metadata"]["ownerReferences"][0]["uid"] == run["metadata"]["uid"]
    assert succeeded(store, "PipelineRun", "kueue-test-abc") == ("Unknown", "Running")

    advance(dc, clock, 11)  # the sleep pod finished (10 s: these tests' default run time)
    assert succeeded(store, "TaskRun", "kueue-test-abc-sleep") == ("True", "Succeeded")
    hello = pods(store)["kueue-test-abc-hello-pod"]
    assert "Hello Tekton!" in hello["spec"]["containers"][0]["args"][0]  # $(params.username) from the run
    advance(dc, clock, 11)
    assert succeeded(store, "PipelineRun", "kueue-test-abc") == ("True", "Succeeded")
    st = status(store, "PipelineRun", "kueue-test-abc")
    assert [c["pipelineTaskName"] for c in st["childReferences"]] == ["sleep", "hello"]
    assert "completionTime" in st

    store.delete("PipelineRun", NS, "kueue-test-abc")
    dc.step()
    assert store.list("TaskRun", NS)[0] == [] and pods(store) == {}


def test_a_pipeline_run_of_a_missing_pipeline_fails_and_a_failed_task_stops_the_rest(
        store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(sample("tekton-pipeline-run.yaml", "orphan"))
    dc.step()
    assert succeeded(store, "PipelineRun", "orphan") == ("False", "CouldntGetPipeline")
    for name in ("tekton-sleep-task.yaml", "tekton-hello-task.yaml", "tekton-pipeline.yaml"):
        store.create(sample(name))
    store.create(sample("tekton-pipeline-run.yaml", "failing"))
    dc.step()
    pod = pods(store)["failing-sleep-pod"]
    store.update_status({**pod, "status": {"phase": "Failed"}})
    dc.step()
    assert succeeded(store, "PipelineRun", "failing") == ("False", "Failed")
    assert sorted(pods(store)) == ["failing-sleep-pod"]  # hello never started


def test_workflow_steps_run_group_after_group_each_pod_with_its_templates_queue(
        store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    wf = sample("workflow-queue-per-template.yaml", "steps-x")
    assert [n.display for n in unfold(wf)] == ["steps-x[0].hello1", "steps-x[1].hello2a", "steps-x[1].hello2b"]
    store.create(wf)
    dc.step()
    (first,) = pods(store).values()
    assert first["metadata"]["labels"][QUEUE] == "user-queue"
    assert first["metadata"]["annotations"]["workflows.argoproj.io/node-name"] == "steps-x[0].hello1"
    assert first["spec"]["containers"][0]["args"] == ["hello1"]  # {{inputs.parameters.message}}
    assert status(store, "Workflow", "steps-x")["phase"] == "Running"
    advance(dc, clock, 11)
    queues = sorted(p["metadata"]["labels"][QUEUE] for p in pods(store).values())
    assert queues == ["user-queue", "user-queue", "user-queue-2"]  # hello2a and hello2b side by side
    advance(dc, clock, 11)
    st = status(store, "Workflow", "steps-x")
    assert (st["phase"], st["progress"]) == ("Succeeded", "3/3")
    assert {n["phase"] for n in st["nodes"].values()} == {"Succeeded"}


def test_a_single_queue_workflow_labels_its_pod_from_pod_metadata(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(sample("workflow-single-queue.yaml", "hello-world-x"))
    dc.step()
    (pod,) = pods(store).values()
    assert pod["metadata"]["labels"][QUEUE] == "user-queue"
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"memory": "32Mi", "cpu": "100m"}


def test_a_sandbox_is_one_pod_from_its_template(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(sample("sample-sandbox.yaml"))
    dc.step()
    pod = pods(store)["hello-world-kueue"]
    assert pod["metadata"]["labels"][QUEUE] == "user-queue"
    assert pod["spec"]["containers"][0]["args"] == ["6000"]
    assert {c["type"]: c["status"] for c in status(store, "Sandbox", "hello-world-kueue")["conditions"]} == {
        "Ready": "True"}


def test_a_minicluster_runs_as_one_job_of_size_pods_labelled_with_its_job_labels(
        store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    mc = sample("flux-minicluster.yaml", "flux-sample-kueue-x")
    mc["spec"]["size"] = 2
    store.create(mc)
    dc.step()
    job = store.get("Job", NS, "flux-sample-kueue-x")
    assert job is not None and job["metadata"]["labels"] == {QUEUE: "user-queue"}
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (2, 2)
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["/bin/sh", "-c", "sleep 10"]
    assert container["resources"]["requests"] == {"cpu": 4, "memory": "200Mi"}
    advance(dc, clock, 1)
    conds = {c["type"]: c["status"] for c in status(store, "MiniCluster", "flux-sample-kueue-x")["conditions"]}
    assert conds == {"MiniClusterReady": "True"}
    advance(dc, clock, 11)
    conds = {c["type"]: c["status"] for c in status(store, "MiniCluster", "flux-sample-kueue-x")["conditions"]}
    assert conds == {"MiniClusterReady": "False", "JobFinished": "True"}
