"""Every mkhub command through real processes: ``mkhub serve`` and the ``mkhub`` CLI over gRPC."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_harness import run_cli

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)

SETUP = """
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels: {team: a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: cluster-queue
spec:
  cohort: all
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 2}
      - {name: memory, nominalQuota: 4Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: team-a
  name: user-queue
spec:
  clusterQueue: cluster-queue
"""


def workload(name: str, cpu: str, duration: str = "1h", labels: dict[str, str] | None = None) -> dict[str, object]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team-a", "labels": labels or {}, "annotations": {"mkhub.dev/sim-duration": duration}},
        "spec": {
            "queueName": "user-queue",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}}],
        },
    }


JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "quick", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                 "annotations": {"mkhub.dev/sim-duration": "200ms"}},
    "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "0"}}}], "restartPolicy": "Never"}}},
}


KUEUE_CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
manageJobsWithoutQueueName: false
featureGates:
  PartialAdmission: true
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    base = tmp_path_factory.mktemp("cli")
    (base / "kueue-config.yaml").write_text(KUEUE_CONFIG)
    proc = HubProcess(base / "data", extra_args=["--config", str(base / "kueue-config.yaml")]).start()
    files = base / "manifests"
    files.mkdir()
    (files / "00-setup.yaml").write_text(SETUP)
    (files / "10-work.yaml").write_text(
        yaml.safe_dump_all([workload("runs", "2", labels={"tier": "gold"}), workload("waits", "1", labels={"tier": "bronze"})])
    )
    applied = run_cli(["apply", "-f", str(files), *proc.connection_args()])
    assert applied.returncode == 0, applied.stderr + proc.log()
    try:
        yield proc
    finally:
        code = proc.terminate()
        assert code == 0, proc.log()  # SIGTERM: graceful shutdown, exit 0
        assert "store closed" in proc.log()


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


def test_apply_reports_per_object_results(hub: HubProcess, tmp_path: Path) -> None:
    (tmp_path / "setup.yaml").write_text(SETUP)
    code, out, err = mkhub(hub, "apply", "-f", str(tmp_path / "setup.yaml"))
    assert code == 0, err
    assert out.splitlines() == [
        "namespace/team-a unchanged",
        "resourceflavor.kueue.x-k8s.io/default-flavor unchanged",
        "clusterqueue.kueue.x-k8s.io/cluster-queue unchanged",
        "localqueue.kueue.x-k8s.io/user-queue unchanged",
    ]
    code, out, _ = mkhub(hub, "apply", "-f", "-", stdin=SETUP.replace("name: team-a\n  labels: {team: a}", "name: team-a\n  labels: {team: b}"))
    assert code == 0 and "namespace/team-a configured" in out


def test_get_workloads_table(hub: HubProcess) -> None:
    out = until(hub, "cluster-queue", "get", "workloads", "-n", "team-a")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED", "FINISHED", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["runs"][1:4] == ["user-queue", "cluster-queue", "True"]
    assert rows["waits"][1:3] == ["user-queue", "False"]  # no RESERVED IN, Admitted=False


def test_get_by_short_names_and_outputs(hub: HubProcess) -> None:
    code, out, _ = mkhub(hub, "get", "cq")
    assert code == 0 and out.splitlines()[0].split() == ["NAME", "COHORT", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS", "AGE"]
    assert out.splitlines()[1].split()[:4] == ["cluster-queue", "all", "1", "1"]
    code, out, _ = mkhub(hub, "get", "lq", "-A")
    assert out.splitlines()[0].startswith("NAMESPACE") and "team-a" in out and "cluster-queue" in out
    code, out, _ = mkhub(hub, "get", "wl", "runs", "-n", "team-a", "-o", "json")
    obj = json.loads(out)
    assert obj["kind"] == "Workload" and obj["status"]["admission"]["clusterQueue"] == "cluster-queue"
    code, out, _ = mkhub(hub, "get", "wl", "-n", "team-a", "-o", "yaml")
    listed = yaml.safe_load(out)
    assert listed["kind"] == "List" and {i["metadata"]["name"] for i in listed["items"]} == {"runs", "waits"}
    code, out, _ = mkhub(hub, "get", "kwl", "-n", "team-a", "-o", "name")
    assert out.split() == ["workload.kueue.x-k8s.io/runs", "workload.kueue.x-k8s.io/waits"]
    code, out, _ = mkhub(hub, "get", "workload", "-n", "team-a", "-o", "wide")
    assert "STATUS" in out.splitlines()[0] and "Admitted" in out and "Pending" in out
    code, out, _ = mkhub(hub, "get", "rf")
    assert "default-flavor" in out
    code, out, _ = mkhub(hub, "get", "ns")
    assert {line.split()[0] for line in out.splitlines()[1:]} >= {"default", "team-a"}


def test_get_label_selector(hub: HubProcess) -> None:
    code, out, _ = mkhub(hub, "get", "wl", "-n", "team-a", "-l", "tier=gold", "-o", "name")
    assert code == 0 and out.split() == ["workload.kueue.x-k8s.io/runs"]
    code, out, err = mkhub(hub, "get", "wl", "-n", "team-a", "-l", "tier in (")
    assert code == 1 and "invalid label selector" in err and len(err.strip().splitlines()) == 1


def test_get_nothing_and_missing(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "get", "wl")
    assert code == 0 and out == "" and err.strip() == "No resources found in default namespace."
    code, _, err = mkhub(hub, "get", "wl", "ghost", "-n", "team-a")
    assert code == 1 and err.strip() == 'Error from server (NotFound): workloads.kueue.x-k8s.io "ghost" not found'


def test_describe_workload_says_why_it_waits(hub: HubProcess) -> None:
    until(hub, "cluster-queue", "get", "wl", "runs", "-n", "team-a")
    code, out, err = mkhub(hub, "describe", "workload", "waits", "-n", "team-a")
    assert code == 0, err
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line and not line.startswith(" "))
    assert fields["Name"].strip() == "waits" and fields["Status"].strip() == "Pending"
    assert "insufficient unused quota for cpu in flavor default-flavor" in fields["Why"]
    assert "QuotaReserved   False" in out  # the conditions table
    assert "ClusterQueue cluster-queue:" in out and "default-flavor   cpu" in out
    code, out, _ = mkhub(hub, "describe", "wl", "runs", "-n", "team-a")
    assert "admitted in ClusterQueue cluster-queue" in out
    assert "Normal   QuotaReserved" in out and "Normal   Admitted" in out  # events
    assert "cpu=default-flavor" in out  # the admission's flavor assignment


def test_describe_queues(hub: HubProcess) -> None:
    code, out, _ = mkhub(hub, "describe", "cq", "cluster-queue")
    assert code == 0 and "Cohort:" in out and "pending 1" in out
    assert "default-flavor   cpu        2       2" in out  # usage against nominal quota
    code, out, _ = mkhub(hub, "describe", "lq", "user-queue", "-n", "team-a")
    assert code == 0 and "ClusterQueue:" in out and "Admitted Workloads:" in out


def test_job_runs_to_completion_and_describe_job(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "apply", "-f", "-", stdin=yaml.safe_dump(JOB))
    assert code == 0 and out.strip() == "job.batch/quick created", err
    out = until(hub, "Complete", "get", "jobs", "-n", "team-a")
    assert out.splitlines()[1].split()[:3] == ["quick", "Complete", "1/1"]
    code, out, _ = mkhub(hub, "describe", "job", "quick", "-n", "team-a")
    assert "Workload:" in out and "job-quick-" in out and "Normal   Finished" in out


def test_top_once(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "top", "--once")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("mkhub top") and "pending" in lines[0]
    row = next(line for line in lines if line.startswith("cluster-queue"))
    assert "default-flavor" in row and "cpu" in row and "2/2 (100%)" in row
    assert "standalone hub" in out


def test_top_streams_until_the_client_stops(hub: HubProcess) -> None:
    with hub.channel() as channel:
        snapshots = []
        for snap in hub.client(channel).top(interval=0.05):
            snapshots.append(snap)
            if len(snapshots) == 3:
                break
    assert [s.cluster_queues[0].name for s in snapshots] == ["cluster-queue"] * 3
    assert snapshots[0].time <= snapshots[1].time <= snapshots[2].time
    assert snapshots[-1].workloads_total >= 2


def test_serve_refuses_bad_flags_and_config(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("waitForPodsReady: {timeout: soon}\n")
    done = run_cli(["serve", "--data-dir", str(tmp_path / "d"), "--insecure", "--config", str(tmp_path / "bad.yaml")])
    assert done.returncode == 2 and "waitForPodsReady.timeout" in done.stderr
    done = run_cli(["serve", "--data-dir", str(tmp_path / "d")])
    assert done.returncode == 2 and "--tls-dir" in done.stderr
    done = run_cli(["serve", "--data-dir", str(tmp_path / "d"), "--insecure", "--listen", "0.0.0.0:0"])
    assert done.returncode == 1 and "loopback" in done.stderr


def test_a_second_hub_on_the_same_data_dir_is_refused(hub: HubProcess) -> None:
    done = run_cli(["serve", "--data-dir", str(hub.data_dir), "--insecure", "--listen", "127.0.0.1:0"])
    assert done.returncode == 1 and "in use" in done.stderr


def test_delete_by_name_and_by_file(hub: HubProcess, tmp_path: Path) -> None:
    doc = workload("doomed", "1")
    (tmp_path / "doomed.yaml").write_text(yaml.safe_dump(doc))
    assert mkhub(hub, "apply", "-f", str(tmp_path / "doomed.yaml"))[0] == 0
    code, out, _ = mkhub(hub, "delete", "-f", str(tmp_path / "doomed.yaml"))
    assert code == 0 and out.strip() == 'workload.kueue.x-k8s.io "doomed" deleted'
    assert mkhub(hub, "apply", "-f", str(tmp_path / "doomed.yaml"))[0] == 0
    code, out, _ = mkhub(hub, "delete", "wl", "doomed", "-n", "team-a")
    assert code == 0 and "deleted" in out
    code, _, err = mkhub(hub, "delete", "wl", "doomed", "-n", "team-a")
    assert code == 1 and err.strip() == 'Error from server (NotFound): workloads.kueue.x-k8s.io "doomed" not found'
    code, _, err = mkhub(hub, "delete", "ns", "default")
    assert code == 1 and "may not be deleted" in err


def test_unreachable_hub_is_one_line() -> None:
    done = run_cli(["get", "cq", "--server", "127.0.0.1:1", "--insecure", "--timeout", "5"])
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "cannot reach the hub at 127.0.0.1:1" in done.stderr


def test_bench_store_prints_figures() -> None:
    done = run_cli(["bench", "store", "--objects", "200", "--batch-size", "50"])
    assert done.returncode == 0, done.stderr
    assert "batched status updates" in done.stdout and "watch latency p99" in done.stdout
