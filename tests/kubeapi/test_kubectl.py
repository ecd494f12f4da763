"""Real kubectl (v1.32, /usr/bin/kubectl) as a black box against hub/kubeapi on 127.0.0.1.

kubectl runs with its defaults (``--validate=strict``: it reads /openapi/v3 and asks the
server for strict field validation), as a user would.
"""

from __future__ import annotations

from pathlib import Path

from .conftest import SAMPLES, Env, Kubectl


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_apply_unchanged_configured_and_server_side(kubectl: Kubectl, env: Env, tmp_path: Path) -> None:
    first = kubectl("apply", "-f", str(SAMPLES))
    assert first.returncode == 0, first.stderr
    assert lines(first.stdout) == [
        "namespace/team-a created",
        "resourceflavor.kueue.x-k8s.io/default-flavor created",
        "clusterqueue.kueue.x-k8s.io/cluster-queue created",
        "localqueue.kueue.x-k8s.io/user-queue created",
        "job.batch/sample-job created",
        "job.batch/big-job created",
    ]
    again = kubectl("apply", "-f", str(SAMPLES))
    assert again.returncode == 0, again.stderr
    assert [line.rsplit(" ", 1)[1] for line in lines(again.stdout)] == ["unchanged"] * 6

    edited = tmp_path / "samples"
    edited.mkdir()
    (edited / "1-queues.yaml").write_text((SAMPLES / "1-queues.yaml").read_text().replace("nominalQuota: 8\n", "nominalQuota: 10\n"))
    (edited / "2-jobs.yaml").write_text((SAMPLES / "2-jobs.yaml").read_text().replace("parallelism: 3", "parallelism: 2"))
    third = kubectl("apply", "-f", str(edited))
    assert third.returncode == 0, third.stderr
    assert lines(third.stdout) == [
        "namespace/team-a unchanged",
        "resourceflavor.kueue.x-k8s.io/default-flavor unchanged",
        "clusterqueue.kueue.x-k8s.io/cluster-queue configured",
        "localqueue.kueue.x-k8s.io/user-queue unchanged",
        "job.batch/sample-job configured",  # a strategic merge patch
        "job.batch/big-job unchanged",
    ]
    cq = env.store.get("ClusterQueue", "", "cluster-queue")
    assert cq is not None and cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 10
    job = env.store.get("Job", "team-a", "sample-job")
    assert job is not None and job["spec"]["parallelism"] == 2 and job["spec"]["template"]["spec"]["containers"][0]["name"] == "dummy-job"

    ssa = kubectl("apply", "--server-side", "-f", str(SAMPLES))
    assert ssa.returncode == 0, ssa.stderr
    assert [line.rsplit(" ", 1)[1] for line in lines(ssa.stdout)] == ["serverside-applied"] * 6
    cq = env.store.get("ClusterQueue", "", "cluster-queue")
    assert cq is not None and cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 8
    assert "kubectl" in [e["manager"] for e in cq["metadata"]["managedFields"]]


def test_create_job_with_generate_name_and_get_with_kueue_columns(kubectl: Kubectl, env: Env) -> None:
    assert kubectl("apply", "-f", str(SAMPLES / "1-queues.yaml")).returncode == 0
    job = (SAMPLES / "2-jobs.yaml").read_text().split("---")[0].replace("  name: sample-job\n", "  generateName: sample-job-\n")
    created = kubectl("create", "-f", "-", stdin=job)
    assert created.returncode == 0, created.stderr
    name = created.stdout.split()[0].removeprefix("job.batch/")
    assert name.startswith("sample-job-") and len(name) == len("sample-job-") + 5 and created.stdout.strip().endswith("created")
    assert env.store.get("Job", "team-a", name) is not None

    workload = """apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: wl-1, namespace: team-a}
spec:
  queueName: user-queue
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}}]
"""
    assert kubectl("apply", "-f", "-", stdin=workload).returncode == 0
    got = kubectl("get", "cq,lq,wl", "-A")
    assert got.returncode == 0, got.stderr
    blocks = [lines(b) for b in got.stdout.split("\n\n")]
    assert blocks[0][0].split() == ["NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert blocks[0][1].split()[0] == "clusterqueue.kueue.x-k8s.io/cluster-queue"
    assert blocks[1][0].split() == ["NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"]
    assert blocks[1][1].split()[:3] == ["team-a", "localqueue.kueue.x-k8s.io/user-queue", "cluster-queue"]
    assert blocks[2][0].split() == ["NAMESPACE", "NAME", "QUEUE", "RESERVED", "IN", "ADMITTED", "FINISHED", "AGE"]
    assert blocks[2][1].split()[:3] == ["team-a", "workload.kueue.x-k8s.io/wl-1", "user-queue"]
    wide = kubectl("get", "cq", "-o", "wide")
    assert wide.stdout.split("\n")[0].split() == ["NAME", "COHORT", "STRATEGY", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"]


def test_describe_patch_delete(kubectl: Kubectl, env: Env) -> None:
    assert kubectl("apply", "-f", str(SAMPLES / "1-queues.yaml")).returncode == 0
    described = kubectl("describe", "cq", "cluster-queue")
    assert described.returncode == 0, described.stderr
    assert "Name:         cluster-queue" in described.stdout and "Nominal Quota:  32Gi" in described.stdout
    quota = '{"spec":{"resourceGroups":[{"coveredResources":["cpu","memory"],"flavors":[{"name":"default-flavor","resources":[{"name":"cpu","nominalQuota":16},{"name":"memory","nominalQuota":"64Gi"}]}]}]}}'
    patched = kubectl("patch", "cq", "cluster-queue", "--type=merge", "-p", quota)
    assert patched.returncode == 0 and patched.stdout.strip() == "clusterqueue.kueue.x-k8s.io/cluster-queue patched", patched.stderr
    cq = env.store.get("ClusterQueue", "", "cluster-queue")
    assert cq is not None and cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 16
    assert cq["metadata"]["generation"] == 2
    deleted = kubectl("delete", "lq", "user-queue", "-n", "team-a")
    assert deleted.returncode == 0 and deleted.stdout.strip() == 'localqueue.kueue.x-k8s.io "user-queue" deleted', deleted.stderr
    assert env.store.get("LocalQueue", "team-a", "user-queue") is None
    missing = kubectl("delete", "lq", "user-queue", "-n", "team-a")
    assert missing.returncode != 0
    assert 'Error from server (NotFound): localqueues.kueue.x-k8s.io "user-queue" not found' in missing.stderr


def test_delete_of_the_samples_directory(kubectl: Kubectl, env: Env) -> None:
    assert kubectl("apply", "-f", str(SAMPLES)).returncode == 0
    deleted = kubectl("delete", "-f", str(SAMPLES))  # the namespace first: its objects go with it, later
    assert deleted.returncode == 0, deleted.stderr
    assert [line.rsplit(" ", 1)[1] for line in lines(deleted.stdout)] == ["deleted"] * 6
    assert env.store.get("Namespace", "", "team-a") is None and env.store.get("Job", "team-a", "big-job") is None


def test_create_namespace(kubectl: Kubectl, env: Env) -> None:
    created = kubectl("create", "namespace", "team-b")
    assert created.returncode == 0 and created.stdout.strip() == "namespace/team-b created", created.stderr
    ns = env.store.get("Namespace", "", "team-b")
    assert ns is not None and ns["status"] == {"phase": "Active"}
    got = kubectl("get", "ns", "team-b", "--no-headers")
    assert got.stdout.split()[:2] == ["team-b", "Active"]
    labelled = kubectl("create", "namespace", "team-c", "--dry-run=server", "-o", "yaml")
    assert labelled.returncode == 0 and "name: team-c" in labelled.stdout and env.store.get("Namespace", "", "team-c") is None


def test_explain_and_client_side_strict_validation(kubectl: Kubectl, env: Env) -> None:
    explained = kubectl("explain", "clusterqueue.spec.resourceGroups")
    assert explained.returncode == 0, explained.stderr
    assert "KIND:       ClusterQueue" in explained.stdout and "FIELD: resourceGroups <[]Object>" in explained.stdout
    typo = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: x}\nspec: {nodeLabelz: {a: b}}\n"
    refused = kubectl("apply", "-f", "-", stdin=typo)
    assert refused.returncode != 0 and 'strict decoding error: unknown field "spec.nodeLabelz"' in refused.stderr
    assert env.store.get("ResourceFlavor", "", "x") is None


def test_api_resources(kubectl: Kubectl) -> None:
    out = kubectl("api-resources")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split() for line in lines(out.stdout)[1:]}
    assert rows["clusterqueues"] == ["clusterqueues", "cq", "kueue.x-k8s.io/v1beta2", "false", "ClusterQueue"]
    assert rows["workloads"][-3:] == ["kueue.x-k8s.io/v1beta2", "true", "Workload"]
    assert rows["jobs"] == ["jobs", "batch/v1", "true", "Job"]
    for name in ("namespaces", "pods", "events", "leases", "localqueues", "resourceflavors", "cohorts", "workloadpriorityclasses"):
        assert name in rows
    versions = kubectl("api-versions")
    assert "kueue.x-k8s.io/v1beta1" in versions.stdout.split() and "kueue.x-k8s.io/v1beta2" in versions.stdout.split()


def test_invalid_object_is_refused_with_the_field_named(kubectl: Kubectl, env: Env) -> None:
    bad = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: broken}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: -2}]}]
"""
    out = kubectl("apply", "-f", "-", stdin=bad)
    assert out.returncode != 0
    assert 'The ClusterQueue "broken" is invalid' in out.stderr
    assert "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota" in out.stderr
    assert "must be greater than or equal to 0" in out.stderr
    assert env.store.get("ClusterQueue", "", "broken") is None
    pods = kubectl("delete", "pod", "nothing", "-n", "default")
    assert pods.returncode != 0 and 'pods "nothing" not found' in pods.stderr
