"""kubectl's (and kueuectl's) habits in the mkhub CLI, one test per behaviour, through real processes:
``mkhub serve`` and the ``mkhub`` command over gRPC."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cli_harness import HubFactory, run_cli

from hub.demo.processes import MKAGENT, MKHUB, HubProcess

pytestmark = pytest.mark.timeout(120)

SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 4}, {name: memory, nominalQuota: 8Gi}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: user-queue, namespace: team-a}
spec: {clusterQueue: cluster-queue}
"""


def workload(name: str, cpu: str, memory: str = "1Gi", count: int = 1, labels: dict[str, str] | None = None) -> dict[str, object]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team-a", "labels": labels or {}, "annotations": {"mkhub.dev/sim-duration": "1h"}},
        "spec": {
            "queueName": "user-queue",
            "podSets": [{"name": "main", "count": count, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}}],
        },
    }


@pytest.fixture(scope="module")
def hub(module_hub: HubFactory) -> HubProcess:
    return module_hub(SETUP + "---\n" + yaml.safe_dump_all(
        [workload("small", "1", labels={"tier": "gold"}), workload("big", "2", memory="3Gi", count=3, labels={"tier": "bronze"})]
    ))


def mkhub(hub: HubProcess, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    if env is None:
        done = run_cli([*args, *hub.connection_args()], stdin=stdin)
    else:
        done = subprocess.run(
            [*MKHUB, *args, *hub.connection_args()], input=stdin, capture_output=True, text=True, timeout=60, env={**os.environ, **env}
        )
    return done.returncode, done.stdout, done.stderr


def until(hub: HubProcess, check: str, *args: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        code, out, err = mkhub(hub, *args)
        if code == 0 and check in out:
            return out
        assert time.monotonic() < deadline, f"{check!r} never appeared in `mkhub {' '.join(args)}`: {out}{err}"
        time.sleep(0.1)


def test_options_anywhere_on_the_line(hub: HubProcess) -> None:
    for args in (["get", "wl", "-n", "team-a", "small"], ["get", "wl", "-o", "wide", "small", "-n", "team-a"]):
        code, out, err = mkhub(hub, *args)
        assert code == 0 and out.splitlines()[1].startswith("small "), err
    code, out, err = mkhub(hub, "describe", "wl", "-n", "team-a", "small")
    assert code == 0 and "Name:" in out and "small" in out, err
    assert mkhub(hub, "apply", "-f", "-", stdin=yaml.safe_dump(workload("gone", "1")))[0] == 0
    code, out, err = mkhub(hub, "delete", "wl", "-n", "team-a", "gone")
    assert code == 0 and out == 'workload.kueue.x-k8s.io "gone" deleted\n', err


def test_quantities_print_as_kubernetes_quantities(hub: HubProcess) -> None:
    # "big" asks for 3 x (2 cpu, 3Gi): more than the queue's 4 cpu, so it stays pending with its requests shown.
    out = until(hub, "resourceRequests", "get", "wl", "big", "-n", "team-a", "-o", "yaml")
    requests = yaml.safe_load(out)["status"]["resourceRequests"]
    assert requests == [{"name": "main", "resources": {"cpu": "6", "memory": "9Gi"}}]
    assert "cpu: '6'" in out and "memory: 9Gi" in out
    as_json = json.loads(mkhub(hub, "get", "wl", "big", "-n", "team-a", "-o", "json")[1])
    assert as_json["status"]["resourceRequests"][0]["resources"]["cpu"] == "6"


def test_jsonpath_custom_columns_sort_by_show_labels(hub: HubProcess) -> None:
    code, out, _ = mkhub(hub, "get", "wl", "-n", "team-a", "-o", "jsonpath={range .items[*]}{.metadata.name}:{.spec.podSets[0].count}{\"\\n\"}{end}")
    assert code == 0 and "big:3\n" in out and "small:1\n" in out
    code, out, _ = mkhub(hub, "get", "wl", "-n", "team-a", "-o", "custom-columns=NAME:.metadata.name,TIER:.metadata.labels.tier,CQ:.status.admission.clusterQueue")
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "TIER", "CQ"] and ["big", "bronze", "<none>"] in rows
    code, out, _ = mkhub(hub, "get", "wl", "-n", "team-a", "--sort-by", ".spec.podSets[0].count", "-o", "name")
    names = out.split()
    assert names.index("workload.kueue.x-k8s.io/small") < names.index("workload.kueue.x-k8s.io/big")
    code, out, _ = mkhub(hub, "get", "wl", "small", "-n", "team-a", "--show-labels")
    assert out.splitlines()[0].split()[-1] == "LABELS" and out.splitlines()[1].split()[-1] == "tier=gold"
    code, _, err = mkhub(hub, "get", "wl", "-o", "jsonpath={.items[0].nope}", "-n", "team-a")
    assert code == 1 and "nope is not found" in err


def test_several_kinds_at_once(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "get", "cq,lq", "-A")
    assert code == 0, err
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue" in out and "localqueue.kueue.x-k8s.io/user-queue" in out
    code, out, _ = mkhub(hub, "get", "cq/cluster-queue", "rf/default-flavor", "-o", "name")
    assert out.split() == ["clusterqueue.kueue.x-k8s.io/cluster-queue", "resourceflavor.kueue.x-k8s.io/default-flavor"]


def test_get_events_lists_the_event_kind(hub: HubProcess) -> None:
    # team-a has the hub's own Events (Pending, QuotaReserved, ...); a namespace without objects has none.
    code, out, err = mkhub(hub, "get", "events", "-n", "quiet")
    assert code == 0 and out == "" and err == "No resources found in quiet namespace.\n"
    event = {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "small.1", "namespace": "team-a"},
        "involvedObject": {"kind": "Workload", "name": "small", "namespace": "team-a"},
        "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue cluster-queue", "type": "Normal",
        "lastTimestamp": "2026-01-01T00:00:00Z",
    }
    assert mkhub(hub, "apply", "-f", "-", stdin=json.dumps(event))[0] == 0
    code, out, _ = mkhub(hub, "get", "ev", "-n", "team-a")
    assert out.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "workload/small" in out and "Quota reserved in ClusterQueue cluster-queue" in out


def test_api_resources(hub: HubProcess) -> None:
    done = run_cli(["api-resources"])
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:]}
    assert rows["clusterqueues"][1:] == ["cq", "kueue.x-k8s.io/v1beta2", "false", "ClusterQueue"]
    assert rows["jobs"][1:] == ["batch/v1", "true", "Job"] and "topologies" in rows


def test_watch_prints_changes(hub: HubProcess) -> None:
    proc = subprocess.Popen(
        [*MKHUB, "get", "lq", "-n", "team-a", "-w", *hub.connection_args()], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split()[0] == "NAME"
        assert proc.stdout.readline().split()[0] == "user-queue"
        lq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
              "metadata": {"name": "watched", "namespace": "team-a"}, "spec": {"clusterQueue": "cluster-queue"}}
        assert mkhub(hub, "apply", "-f", "-", stdin=json.dumps(lq))[0] == 0
        line = proc.stdout.readline()
        assert line.split()[:2] == ["watched", "cluster-queue"], line
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert mkhub(hub, "delete", "lq", "watched", "-n", "team-a")[0] == 0


def test_delete_by_selector_and_all(hub: HubProcess) -> None:
    docs = [workload(f"temp-{i}", "100m", labels={"batch": "temp" if i < 2 else "other"}) for i in range(3)]
    assert mkhub(hub, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))[0] == 0
    code, out, _ = mkhub(hub, "delete", "wl", "-l", "batch=temp", "-n", "team-a")
    assert code == 0 and sorted(out.splitlines()) == [f'workload.kueue.x-k8s.io "temp-{i}" deleted' for i in range(2)]
    assert mkhub(hub, "apply", "-f", "-", stdin=SETUP.replace("team-a", "scratch") + "---\n" + yaml.safe_dump(
        {**docs[2], "metadata": {**docs[2]["metadata"], "namespace": "scratch"}}))[0] == 0  # type: ignore[dict-item]
    code, out, _ = mkhub(hub, "delete", "wl", "--all", "-n", "scratch")
    assert code == 0 and out == 'workload.kueue.x-k8s.io "temp-2" deleted\n'
    code, _, err = mkhub(hub, "delete", "wl", "-n", "scratch")
    assert code == 1 and "no name was specified" in err
    assert mkhub(hub, "delete", "wl", "temp-2", "-n", "team-a")[0] == 0


def test_label_and_patch(hub: HubProcess) -> None:
    code, out, _ = mkhub(hub, "label", "lq", "user-queue", "-n", "team-a", "owner=ml")
    assert code == 0 and out == "localqueue.kueue.x-k8s.io/user-queue labeled\n"
    code, _, err = mkhub(hub, "label", "lq", "user-queue", "-n", "team-a", "owner=infra")
    assert code == 1 and "'owner' already has a value (ml), and --overwrite is false" in err
    assert mkhub(hub, "label", "lq", "user-queue", "-n", "team-a", "owner=infra", "--overwrite")[0] == 0
    code, out, _ = mkhub(hub, "label", "lq", "user-queue", "owner-", "-n", "team-a")
    assert code == 0 and out == "localqueue.kueue.x-k8s.io/user-queue unlabeled\n"
    code, out, err = mkhub(hub, "patch", "cq", "cluster-queue", "--type", "merge", "-p", '{"spec":{"queueingStrategy":"StrictFIFO"}}')
    assert code == 0 and out == "clusterqueue.kueue.x-k8s.io/cluster-queue patched\n", err
    assert mkhub(hub, "get", "cq", "cluster-queue", "-o", "jsonpath={.spec.queueingStrategy}")[1] == "StrictFIFO"
    code, out, _ = mkhub(hub, "patch", "cq", "cluster-queue", "-p", '{"spec":{"queueingStrategy":"StrictFIFO"}}')
    assert out == "clusterqueue.kueue.x-k8s.io/cluster-queue patched (no change)\n"
    code, _, err = mkhub(hub, "patch", "lq", "user-queue", "-n", "team-a", "-p", '{"spec":{"clusterQueue":"other"}}')
    assert code == 1 and "spec.clusterQueue" in err and "immutable" in err


def test_edit_through_the_editor(hub: HubProcess, tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\np.write_text(p.read_text().replace('nominalQuota: 4', 'nominalQuota: 5'))\n")
    code, out, err = mkhub(hub, "edit", "cq", "cluster-queue", env={"EDITOR": f"{sys.executable} {editor}"})
    assert code == 0 and out == "clusterqueue.kueue.x-k8s.io/cluster-queue edited\n", err
    assert mkhub(hub, "get", "cq", "cluster-queue", "-o", "jsonpath={.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota}")[1] == "5"
    code, out, err = mkhub(hub, "edit", "cq", "cluster-queue", env={"EDITOR": "true"})
    assert code == 0 and out == "" and err == "Edit cancelled, no changes made.\n"


def test_stop_and_resume(hub: HubProcess) -> None:
    code, out, _ = mkhub(hub, "stop", "workload", "small", "-n", "team-a")
    assert code == 0 and out == "workload.kueue.x-k8s.io/small stopped\n"
    assert mkhub(hub, "get", "wl", "small", "-n", "team-a", "-o", "jsonpath={.spec.active}")[1] == "false"
    assert mkhub(hub, "resume", "wl", "small", "-n", "team-a")[1] == "workload.kueue.x-k8s.io/small resumed\n"
    assert mkhub(hub, "get", "wl", "small", "-n", "team-a", "-o", "jsonpath={.spec.active}")[1] == "true"
    assert mkhub(hub, "stop", "lq", "user-queue", "-n", "team-a")[0] == 0
    assert mkhub(hub, "get", "lq", "user-queue", "-n", "team-a", "-o", "jsonpath={.spec.stopPolicy}")[1] == "HoldAndDrain"
    assert mkhub(hub, "stop", "cq", "cluster-queue", "--keep-already-running")[0] == 0
    assert mkhub(hub, "get", "cq", "cluster-queue", "-o", "jsonpath={.spec.stopPolicy}")[1] == "Hold"
    until(hub, "Stopped", "get", "cq", "cluster-queue", "-o", "jsonpath={.status.conditions[0].reason}")
    for kind in ("lq", "cq"):
        assert mkhub(hub, "resume", kind, "user-queue" if kind == "lq" else "cluster-queue", "-n", "team-a")[0] == 0
    assert mkhub(hub, "get", "cq", "cluster-queue", "-o", "jsonpath={.spec.stopPolicy}")[1] == "None"
    code, _, err = mkhub(hub, "stop", "rf", "default-flavor")
    assert code == 1 and "works on workloads, localqueues and clusterqueues" in err


def test_create_queues_with_flags(hub: HubProcess) -> None:
    code, out, err = mkhub(
        hub, "create", "clusterqueue", "flagged-cq", "--cohort", "all", "--queuing-strategy", "StrictFIFO",
        "--nominal-quota", "default-flavor:cpu=9;memory=36Gi", "--borrowing-limit", "default-flavor:cpu=1",
        "--reclaim-within-cohort", "Any",
    )
    assert code == 0 and out == "clusterqueue.kueue.x-k8s.io/flagged-cq created\n", err
    cq = json.loads(mkhub(hub, "get", "cq", "flagged-cq", "-o", "json")[1])
    assert cq["spec"]["cohortName"] == "all" and cq["spec"]["queueingStrategy"] == "StrictFIFO"
    assert cq["spec"]["resourceGroups"] == [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "default-flavor", "resources": [
        {"name": "cpu", "nominalQuota": "9", "borrowingLimit": "1"}, {"name": "memory", "nominalQuota": "36Gi"}]}]}]
    code, out, err = mkhub(hub, "create", "localqueue", "flagged-lq", "-n", "team-a", "-c", "flagged-cq")
    assert code == 0 and out == "localqueue.kueue.x-k8s.io/flagged-lq created\n", err
    code, _, err = mkhub(hub, "create", "lq", "orphan", "-n", "team-a", "-c", "no-such-cq")
    assert code == 1 and 'ClusterQueue "no-such-cq" not found; create it first or pass --ignore-unknown-cq' in err
    code, _, err = mkhub(hub, "create", "cq", "flagged-cq")
    assert code == 1 and "already exists" in err
    # Without flags, kueuectl's defaults are written out, not left unset.
    assert mkhub(hub, "create", "cq", "plain-cq")[0] == 0
    cq = json.loads(mkhub(hub, "get", "cq", "plain-cq", "-o", "json")[1])
    assert cq["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert cq["spec"]["preemption"] == {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"}, cq["spec"]


def test_apply_dry_run_says_unchanged(hub: HubProcess) -> None:
    code, out, _ = mkhub(hub, "apply", "-f", "-", "--dry-run", stdin=SETUP.split("---")[1])
    assert code == 0 and out == "resourceflavor.kueue.x-k8s.io/default-flavor unchanged (dry run)\n"


def test_a_closed_stdout_is_not_an_error(hub: HubProcess) -> None:
    ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: piped}\n"
    proc = subprocess.Popen(
        [*MKHUB, "apply", "-f", "-", *hub.connection_args()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the command writes anything (`| head -0`)
    _, err = proc.communicate(ns.encode(), timeout=60)
    assert proc.returncode == 0 and err == b"", err
    assert mkhub(hub, "get", "ns", "piped", "-o", "name")[1] == "namespace/piped\n"


def test_describe_job_without_queue_label(hub: HubProcess) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "plain", "namespace": "team-a"},
           "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}}}
    code, _, err = mkhub(hub, "apply", "-f", "-", stdin=json.dumps(job))
    assert code == 0 and "has no kueue.x-k8s.io/queue-name label" in err
    code, out, _ = mkhub(hub, "describe", "job", "plain", "-n", "team-a")
    assert "not managed by Kueue (no kueue.x-k8s.io/queue-name label)" in out and "job-plain-" not in out


def test_tls_flag_against_a_plaintext_hub(hub: HubProcess, tmp_path: Path) -> None:
    assert run_cli(["certs", "--out", str(tmp_path / "certs")]).returncode == 0
    done = run_cli(["get", "cq", "--server", hub.address, "--tls-dir", str(tmp_path / "certs"), "--timeout", "10"])
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "the hub serves plaintext (started with --insecure)" in done.stderr and "use --insecure" in done.stderr


def test_version_help_and_completion(tmp_path: Path) -> None:
    for cmd, name in ((MKHUB, "mkhub"), (MKAGENT, "mkagent")):
        done = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0 and done.stdout.startswith(f"{name} "), done.stderr
    done = subprocess.run([*MKHUB, "get", "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert "--sort-by JSONPATH" in done.stdout and "sort by a field" in done.stdout
    script = subprocess.run([*MKHUB, "completion", "bash"], capture_output=True, text=True, timeout=60, check=False).stdout
    assert "complete " in script and "mkhub" in script
    # What the shell asks argcomplete for `mkhub get clusterq<TAB>`.
    out = tmp_path / "completions"
    line = "mkhub get clusterq"
    env = {**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)), "_ARGCOMPLETE_IFS": "\n",
           "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}
    subprocess.run([*MKHUB], env=env, capture_output=True, timeout=60, check=False)
    assert out.read_text().split() == ["clusterqueues"]
