"""Manifests shaped like Kueue's published examples go in unchanged (real hub, real CLI).

The files in e2e/kueue-shaped/ are ours, written after the shapes of Kueue's
site/static/examples: generateName Jobs submitted with ``create -f``, a Job
before its LocalQueue, a file mixing stored and refused objects, Topology and
ProvisioningRequestConfig objects, a JobSet and a LeaderWorkerSet; and a ClusterQueue
deleted while it admits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import run_cli

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)

SHAPED = Path(__file__).resolve().parent / "kueue-shaped"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    base = tmp_path_factory.mktemp("kueue-shaped")
    with HubProcess(base / "data") as proc:
        done = mkhub(proc, "apply", "-f", str(SHAPED / "single-queue-setup.yaml"))
        assert done[0] == 0, done
        yield proc


def mkhub(hub: HubProcess, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = run_cli([*args, *hub.connection_args()], stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def until(hub: HubProcess, check: str, *args: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        code, out, err = mkhub(hub, *args)
        if code == 0 and check in out:
            return out
        assert time.monotonic() < deadline, f"{check!r} never appeared in `mkhub {' '.join(args)}`: {out}{err}"
        time.sleep(0.1)


def condition(obj: dict[str, object], type_: str) -> dict[str, str]:
    status = obj.get("status") or {}
    assert isinstance(status, dict)
    for cond in status.get("conditions") or []:
        if cond["type"] == type_:
            return dict(cond)
    return {}


def test_generate_name_jobs_through_create(hub: HubProcess) -> None:
    job = str(SHAPED / "generate-name-job.yaml")
    first, second = mkhub(hub, "create", "-f", job), mkhub(hub, "create", "-f", job)
    assert first[0] == 0 and second[0] == 0, (first, second)
    names = [line.split()[0] for line in (first[1] + second[1]).splitlines()]
    assert len(set(names)) == 2 and all(n.startswith("job.batch/demo-job-") and len(n) == len("job.batch/demo-job-") + 5 for n in names)
    # Each Job gets its Workload, named after it (find it by the Job's name, as the README shows).
    out = until(hub, names[1].split("/")[1], "get", "workloads", "-o", "custom-columns=NAME:.metadata.name,JOB:.metadata.ownerReferences[0].name")
    assert all(n.split("/")[1] in out for n in names)
    # kubectl apply refuses generateName; so does mkhub, and stores nothing.
    code, out, err = mkhub(hub, "apply", "-f", job)
    assert code == 1 and out == "" and err.strip() == "error: from demo-job-: cannot use generate name with apply"
    # create of an existing name is refused, as kubectl does.
    code, out, err = mkhub(hub, "create", "-f", str(SHAPED / "single-queue-setup.yaml"))
    assert code == 1 and out == ""
    assert 'Error from server (AlreadyExists): error when creating "' in err and 'clusterqueues.kueue.x-k8s.io "shared-cq" already exists' in err


def test_a_job_before_its_local_queue_waits_then_runs(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "apply", "-f", str(SHAPED / "job-before-queue.yaml"))
    assert code == 0 and out == "job.batch/early-job created\n", err
    assert 'Warning: Job "default/early-job": LocalQueue "default/late-queue" not found' in err
    wl_name = json.loads(until(hub, "early-job", "get", "wl", "-o", "json"))["items"]
    name = next(w["metadata"]["name"] for w in wl_name if w["metadata"]["name"].startswith("job-early-job-"))
    deadline = time.monotonic() + 30
    while True:
        wl = json.loads(mkhub(hub, "get", "wl", name, "-o", "json")[1])
        reserved = condition(wl, "QuotaReserved")
        if reserved:
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert reserved["status"] == "False" and reserved["message"] == "LocalQueue late-queue doesn't exist"
    assert mkhub(hub, "apply", "-f", str(SHAPED / "late-queue.yaml"))[0] == 0
    until(hub, "True", "get", "wl", name, "-o", "jsonpath={.status.conditions[?(@.type==\"QuotaReserved\")].status}")


def test_a_file_mixing_stored_and_refused_objects(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "apply", "-f", str(SHAPED / "topology-setup.yaml"))
    assert code == 1  # one object failed (a JobSet without its Jobs' template); the others are stored, each reported
    assert out.splitlines() == [
        "topology.kueue.x-k8s.io/rack-topology created",
        "resourceflavor.kueue.x-k8s.io/rack-flavor created",
        "clusterqueue.kueue.x-k8s.io/rack-cq created",
    ]
    lines = err.strip().splitlines()
    assert lines[0] == ('Warning: ResourceFlavor "rack-flavor": spec.topologyName is stored, but mkhub does not act on it '
                        "(checked, topology-aware scheduling is not implemented)")
    assert lines[1] == 'Warning: Topology "rack-topology" is stored, but mkhub does not act on Topology (topology-aware scheduling is not implemented)'
    assert lines[2] == 'error: JobSet "default/rack-jobset" is invalid: spec.replicatedJobs[0].template: Required value'
    assert len(lines) == 3
    code, out, _ = mkhub(hub, "get", "topologies")
    assert code == 0 and out.split()[:3] == ["NAME", "AGE", "rack-topology"]


def test_provisioning_request_config_is_stored_and_listed(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "apply", "-f", str(SHAPED / "provisioning-setup.yaml"))
    assert code == 0, err
    assert "provisioningrequestconfig.kueue.x-k8s.io/capacity-config created" in out
    assert "mkhub does not act on ProvisioningRequestConfig" in err
    code, out, _ = mkhub(hub, "get", "provisioningrequestconfigs", "capacity-config", "-o", "jsonpath={.spec.provisioningClassName}")
    assert code == 0 and out == "check-capacity.autoscaling.x-k8s.io"
    code, out, _ = mkhub(hub, "delete", "provisioningrequestconfig", "capacity-config")
    assert code == 0 and out == 'provisioningrequestconfig.kueue.x-k8s.io "capacity-config" deleted\n'


def test_jobsets_are_checked_and_stored_and_leader_worker_sets_stored_with_a_warning(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "create", "-f", str(SHAPED / "sample-jobset.yaml"))
    assert code == 0, err
    assert out.startswith("jobset.jobset.x-k8s.io/sleep-job-") and out.rstrip().endswith(" created"), out
    name = out.split()[0].split("/")[1]
    code, out, _ = mkhub(hub, "get", "jobsets", "-n", "default")
    assert code == 0 and out.splitlines()[0].split() == ["NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED", "SUSPENDED", "AGE"]
    assert name in out
    twice = (SHAPED / "sample-jobset.yaml").read_text().replace("name: workers", "name: leader")
    code, _, err = mkhub(hub, "create", "-f", "-", stdin=twice)
    assert code == 1 and 'spec.replicatedJobs[1].name: Duplicate value: "leader"' in err, err
    code, out, err = mkhub(hub, "apply", "-f", str(SHAPED / "leaderworkerset.yaml"))
    assert code == 0, err
    assert out == "leaderworkerset.leaderworkerset.x-k8s.io/nginx-leaderworkerset created\n"
    # The hub runs LeaderWorkerSets (hub.service.embedded_operators) once their framework is enabled; this one's is not.
    assert 'the "leaderworkerset.x-k8s.io/leaderworkerset" framework is not enabled' in err and "will not run" in err
    code, out, _ = mkhub(hub, "get", "lws", "nginx-leaderworkerset", "-n", "default", "-o", "jsonpath={.spec.leaderWorkerTemplate.size}")
    assert code == 0 and out == "3"


QUEUE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: doomed-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: base-flavor
      resources: [{name: cpu, nominalQuota: 1}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: doomed-lq, namespace: default}
spec: {clusterQueue: doomed-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: holder
  namespace: default
  annotations: {mkhub.dev/sim-duration: 1h}
spec:
  queueName: doomed-lq
  podSets:
  - count: 1
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
"""


def test_deleting_a_cluster_queue_with_admitted_workloads_keeps_it_terminating(hub: HubProcess) -> None:
    assert mkhub(hub, "apply", "-f", "-", stdin=QUEUE)[0] == 0
    until(hub, "doomed-cq", "get", "wl", "holder", "-o", "jsonpath={.status.admission.clusterQueue}")
    code, out, err = mkhub(hub, "delete", "cq", "doomed-cq")
    assert code == 0 and out == 'clusterqueue.kueue.x-k8s.io "doomed-cq" deleted\n'
    assert "is terminating: 1 workload(s) hold quota in it" in err and "kueue.x-k8s.io/resource-in-use" in err
    cq = json.loads(mkhub(hub, "get", "cq", "doomed-cq", "-o", "json")[1])
    assert cq["metadata"]["deletionTimestamp"] and cq["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    until(hub, "Terminating", "get", "cq", "doomed-cq", "-o", "jsonpath={.status.conditions[0].reason}")
    code, out, _ = mkhub(hub, "get", "wl", "holder", "-o", "jsonpath={.status.conditions[?(@.type==\"Admitted\")].status}")
    assert out == "True"  # the admitted workload runs on
    # Once no workload holds quota in it (here: the workload is deleted), the hub drops the finalizer.
    assert mkhub(hub, "delete", "wl", "holder")[0] == 0
    deadline = time.monotonic() + 30
    while mkhub(hub, "get", "cq", "doomed-cq")[0] == 0:
        assert time.monotonic() < deadline, "the terminating ClusterQueue never went"
        time.sleep(0.2)
    code, _, err = mkhub(hub, "get", "cq", "doomed-cq")
    assert 'clusterqueues.kueue.x-k8s.io "doomed-cq" not found' in err
