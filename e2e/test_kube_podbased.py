"""Pod-based frameworks through the hub on ``mkhub dev-cluster``, as Kueue's docs run them
(site/content/en/docs/tasks/run/external_workloads/): Kueue's published examples, unchanged, created
with kubectl; the dev-cluster's simulated operators (hub.devcluster.tekton, argo, sandbox_flux)
create Pods (a Job for a Flux MiniCluster) through the API, the hub's pod (or Job) webhook gates
(suspends) them, each gets its Workload, is admitted and runs, and the framework's object ends
as its operator reports it: a Tekton PipelineRun Succeeded after its two tasks ran one after the
other, an Argo Workflow Succeeded with each step's Pod in its template's queue, a Sandbox Ready,
a MiniCluster's Job Finished.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, samples_queue_setup
from test_kube_jobs import condition, hub_on_dev_cluster, kubectl, wait_for

from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(300)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
GATE = "kueue.x-k8s.io/admission"
QUEUE = "kueue.x-k8s.io/queue-name"

# The examples' LocalQueues: user-queue (samples_queue_setup), user-queue-2 and Tekton's my-local-queue.
QUEUES = samples_queue_setup({"cpu": "8", "memory": "8Gi"}) + "".join(f"""---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: {name}, namespace: default}}
spec: {{clusterQueue: cluster-queue}}
""" for name in ("user-queue-2", "my-local-queue"))

CONFIG = frameworks_config("batch/job", "pod")


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with hub_on_dev_cluster(tmp_path, QUEUES, ("--config", str(config))) as running:
        yield running


def get(kc: Path, *what: str) -> dict[str, Any]:
    out = kubectl(kc, "get", *what, "-n", "default", "-o", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def create(kc: Path, *files: str) -> list[str]:
    names = []
    for name in files:
        out = kubectl(kc, "create", "-f", str(EXAMPLES / name), "-o", "name")
        assert out.returncode == 0, out.stderr
        names.append(out.stdout.strip().rpartition("/")[2])
    return names


def pod_workloads(kc: Path) -> dict[str, dict[str, Any]]:
    """Pod name -> its Workload."""
    out = {}
    for wl in get(kc, "workloads")["items"]:
        for ref in wl["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Pod":
                out[ref["name"]] = wl
    return out


def test_a_tekton_pipeline_runs_task_after_task_each_pod_queued_and_admitted(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    (run,) = create(kc, "tekton-sleep-task.yaml", "tekton-hello-task.yaml", "tekton-pipeline.yaml",
                    "tekton-pipeline-run.yaml")[3:]
    pod = wait_for("the sleep task's pod", lambda: next(iter(get(kc, "pods", "-l", f"tekton.dev/pipelineRun={run}")
                                                             ["items"]), None), log=hub.log)
    assert pod["metadata"]["labels"][QUEUE] == "my-local-queue"

    def succeeded() -> dict[str, Any] | None:
        pr = get(kc, "pipelinerun", run)
        return pr if any(c["type"] == "Succeeded" and c["status"] != "Unknown"
                         for c in pr.get("status", {}).get("conditions") or []) else None

    done = wait_for("the PipelineRun to end", succeeded, timeout=150, log=hub.log)
    assert condition(done, "Succeeded")["reason"] == "Succeeded"
    pods = {p["metadata"]["labels"]["tekton.dev/pipelineTask"]: p
            for p in get(kc, "pods", "-l", f"tekton.dev/pipelineRun={run}")["items"]}
    assert set(pods) == {"sleep", "hello"}
    wls = pod_workloads(kc)
    for task, pod in pods.items():
        wl = wls[pod["metadata"]["name"]]
        assert condition(wl, "Admitted") and condition(wl, "Finished"), task
        assert wl["spec"]["queueName"] == "my-local-queue"
        assert GATE not in [g["name"] for g in pod["spec"].get("schedulingGates") or []]
    sleep_end = pods["sleep"]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    hello_start = pods["hello"]["status"]["startTime"]
    assert hello_start >= sleep_end  # runAfter: sleep


def test_argo_workflows_pods_go_to_their_templates_queues(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    steps, single = create(kc, "workflow-queue-per-template.yaml", "workflow-single-queue.yaml")

    def ended(name: str) -> dict[str, Any] | None:
        wf = get(kc, "workflow", name)
        return wf if wf.get("status", {}).get("phase") in ("Succeeded", "Failed") else None

    for name in (steps, single):
        assert wait_for(f"Workflow {name}", lambda n=name: ended(n), timeout=150, log=hub.log)["status"]["phase"] == \
            "Succeeded"
    wls = pod_workloads(kc)
    queues = sorted(wls[p["metadata"]["name"]]["spec"]["queueName"]
                    for p in get(kc, "pods", "-l", f"workflows.argoproj.io/workflow={steps}")["items"])
    assert queues == ["user-queue", "user-queue", "user-queue-2"]
    (pod,) = get(kc, "pods", "-l", f"workflows.argoproj.io/workflow={single}")["items"]
    assert condition(wls[pod["metadata"]["name"]], "Finished")


def test_a_sandbox_pod_and_a_flux_miniclusters_job_are_queued_and_run(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    sandbox, minicluster = create(kc, "sample-sandbox.yaml", "flux-minicluster.yaml")
    wl = wait_for("the Sandbox pod's Workload", lambda: pod_workloads(kc).get(sandbox), log=hub.log)
    assert wl["spec"]["queueName"] == "user-queue"
    wait_for("the Sandbox pod's admission", lambda: condition(pod_workloads(kc)[sandbox], "Admitted"), log=hub.log)
    def job_of_minicluster() -> dict[str, Any] | None:
        out = kubectl(kc, "get", "job", minicluster, "-n", "default", "-o", "json")
        return json.loads(out.stdout) if out.returncode == 0 else None

    job = wait_for("the MiniCluster's Job", job_of_minicluster, log=hub.log)
    assert job["metadata"]["labels"][QUEUE] == "user-queue"

    def finished() -> dict[str, Any] | None:
        mc = get(kc, "minicluster", minicluster)
        return mc if condition(mc, "JobFinished") else None

    wait_for("the MiniCluster's Job to finish", finished, timeout=150, log=hub.log)
    (jwl,) = [w for w in get(kc, "workloads")["items"]
              if any(r.get("kind") == "Job" and r.get("name") == minicluster for r in w["metadata"]["ownerReferences"])]
    assert condition(jwl, "Finished") and jwl["spec"]["podSets"][0]["template"]["spec"]["containers"][0][
        "resources"]["requests"]["cpu"] in (4, "4")
    table = kubectl(kc, "get", "wl", "-n", "default")
    assert table.returncode == 0 and "QUEUE" in table.stdout and "RESERVED IN" in table.stdout
