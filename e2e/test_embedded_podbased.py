"""Pod-based frameworks in the embedded hub (``mkhub serve`` over SQLite, no cluster): Kueue's
examples for Tekton, Argo Workflows, Sandbox and a Flux MiniCluster, unchanged, through
``mkhub create -f``. The hub runs the dev-cluster's simulated operators on its own store
(hub.service.embedded_operators); the Pods they make (a MiniCluster: its Job) are gated (suspended)
as Kueue's webhooks would, each gets its Workload, is admitted and run by the simulated runner, and
the framework's object ends as its operator reports it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, run_cli, samples_queue_setup

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(180)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
QUEUE = "kueue.x-k8s.io/queue-name"
QUEUES = samples_queue_setup({"cpu": "8", "memory": "8Gi"}, flavor="default-flavor") + "".join(f"""---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: {name}, namespace: default}}
spec: {{clusterQueue: cluster-queue}}
""" for name in ("user-queue-2", "my-local-queue"))
CONFIG = frameworks_config("batch/job", "pod")


def mkhub(hub: HubProcess, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = run_cli([*args, *hub.connection_args()], stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def items(hub: HubProcess, kind: str) -> dict[str, dict[str, Any]]:
    code, out, err = mkhub(hub, "get", kind, "-n", "default", "-o", "json")
    assert code == 0, err
    return {o["metadata"]["name"]: o for o in json.loads(out)["items"]}


def wait(what: str, check: Callable[[], Any], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def create(hub: HubProcess, *files: str) -> list[str]:
    names = []
    for name in files:
        code, out, err = mkhub(hub, "create", "-f", str(EXAMPLES / name))
        assert code == 0, err
        names.append(out.split()[0].rpartition("/")[2])
    return names


def condition(obj: dict[str, Any], type_: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return str(c.get("status"))
    return None


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubProcess]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml"),
                                                   "--sim-duration", "1s"]) as proc:
        code, _, err = mkhub(proc, "apply", "-f", "-", stdin=QUEUES)
        assert code == 0, err
        yield proc


def pod_workloads(hub: HubProcess) -> dict[str, dict[str, Any]]:
    return {ref["name"]: wl for wl in items(hub, "workloads").values()
            for ref in wl["metadata"].get("ownerReferences") or [] if ref.get("kind") == "Pod"}


def test_kueues_pod_based_examples_run_in_the_embedded_hub(hub: HubProcess) -> None:
    run = create(hub, "tekton-sleep-task.yaml", "tekton-hello-task.yaml", "tekton-pipeline.yaml",
                 "tekton-pipeline-run.yaml")[3]
    steps, single = create(hub, "workflow-queue-per-template.yaml", "workflow-single-queue.yaml")
    sandbox, minicluster = create(hub, "sample-sandbox.yaml", "flux-minicluster.yaml")

    done = wait("the PipelineRun", lambda: condition(items(hub, "pipelineruns")[run], "Succeeded") in ("True", "False")
                and items(hub, "pipelineruns")[run])
    assert condition(done, "Succeeded") == "True"
    for name in (steps, single):
        wf = wait(f"Workflow {name}", lambda n=name: items(hub, "workflows")[n].get("status", {}).get("phase")
                  in ("Succeeded", "Failed") and items(hub, "workflows")[n])
        assert wf["status"]["phase"] == "Succeeded", name
    wait("the Sandbox's pod to run", lambda: condition(items(hub, "sandboxes")[sandbox], "Ready") == "True"
         or items(hub, "pods").get(sandbox, {}).get("status", {}).get("phase") == "Succeeded")
    wait("the MiniCluster's Job", lambda: condition(items(hub, "miniclusters")[minicluster], "JobFinished") == "True")

    pods = items(hub, "pods")
    wls = pod_workloads(hub)
    queues = {n: wls[n]["spec"]["queueName"] for n, p in pods.items()}
    tekton = [n for n, p in pods.items() if p["metadata"]["labels"].get("tekton.dev/pipelineRun") == run]
    assert len(tekton) == 2 and {queues[n] for n in tekton} == {"my-local-queue"}
    argo = [n for n, p in pods.items() if p["metadata"]["labels"].get("workflows.argoproj.io/workflow") == steps]
    assert sorted(queues[n] for n in argo) == ["user-queue", "user-queue", "user-queue-2"]
    assert queues[sandbox] == "user-queue"
    for name in (*tekton, *argo):
        assert condition(wls[name], "Admitted") == "True" and condition(wls[name], "Finished") == "True", name
    (job_wl,) = [w for w in items(hub, "workloads").values()
                 if any(r.get("kind") == "Job" and r.get("name") == minicluster for r in w["metadata"]["ownerReferences"])]
    assert condition(job_wl, "Finished") == "True"


def test_a_bad_pipeline_run_is_refused_naming_the_field_and_nothing_is_stored(hub: HubProcess) -> None:
    bad = yaml.safe_load((EXAMPLES / "tekton-pipeline-run.yaml").read_text())
    bad["metadata"] = {"name": "bad", "labels": bad["metadata"]["labels"]}
    del bad["spec"]["pipelineRef"]
    code, _, err = mkhub(hub, "create", "-f", "-", stdin=yaml.safe_dump(bad))
    assert code == 1
    assert err.strip().splitlines()[-1].startswith('error: PipelineRun "default/bad" is invalid: spec.pipelineRef.name')
    assert items(hub, "pipelineruns") == {}
