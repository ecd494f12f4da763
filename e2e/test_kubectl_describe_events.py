"""What a user debugging with kubectl meets against ``mkhub serve --kube-listen``: ``kubectl describe``
lists a pending workload's and a Job's Events (kubectl selects them by involvedObject.uid), and
kubectl's own strict validation refuses a bogus field inside a Job."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from cli_harness import run_cli

from hub.demo.processes import HubProcess, free_port
from tests.controllers.hub_objects import cluster_queue, flavor, local_queue, namespace, workload

pytestmark = pytest.mark.timeout(180)
KUBECTL = shutil.which("kubectl")


def _kubectl(port: int) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(KUBECTL), "--server", f"http://127.0.0.1:{port}", *args], input=stdin,
                              capture_output=True, text=True, timeout=60, check=False)
    return run


def _until(check: Callable[[], str], want: Callable[[str], bool]) -> str:
    out = check()
    for _ in range(100):
        if want(out):
            break
        time.sleep(0.2)
        out = check()
    return out


def _job(name: str, cpu: str, **spec: object) -> dict[str, object]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                         "annotations": {"mkhub.dev/sim-duration": "1h"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}, **spec}}


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_describe_lists_workload_and_job_events(tmp_path: Path) -> None:
    port = free_port()
    objects = [namespace(), flavor(), cluster_queue(cpu=1), local_queue("lq"),
               workload("first", duration="1h"), workload("second", duration="1h")]
    with HubProcess(tmp_path / "hub", extra_args=["--kube-listen", f"127.0.0.1:{port}"]) as hub:
        done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=yaml.safe_dump_all(objects))
        assert done.returncode == 0, done.stderr
        kubectl = _kubectl(port)

        pending = _until(lambda: kubectl("describe", "workload", "second", "-n", "team").stdout,
                         lambda out: "Pending" in out.split("Events:")[-1])
        events = pending.split("Events:")[-1]
        assert "<none>" not in events and "Pending" in events, pending
        assert "couldn't assign flavors" in events or "insufficient" in events, events

        created = kubectl("create", "-f", "-", stdin=yaml.safe_dump(_job("big", "500m")))
        assert created.returncode == 0, created.stderr
        described = _until(lambda: kubectl("describe", "job", "big", "-n", "team").stdout,
                           lambda out: "CreatedWorkload" in out)
        assert "CreatedWorkload" in described.split("Events:")[-1], described
        # The Workload the hub created for the Job: its first Events were recorded before it had a uid.
        names = kubectl("get", "workloads", "-n", "team", "-o", "name").stdout.split()
        [job_wl] = [n.split("/", 1)[1] for n in names if n.split("/", 1)[1].startswith("job-big-")]
        wl_events = _until(lambda: kubectl("describe", "workload", job_wl, "-n", "team").stdout,
                           lambda out: "Pending" in out.split("Events:")[-1]).split("Events:")[-1]
        assert "Pending" in wl_events and "<none>" not in wl_events, wl_events

        # A request for a resource the ClusterQueue does not cover can never fit there: not a waiting reason.
        gpu = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "nvidia.com/gpu": "1"}}}]}}
        never = workload("never", duration="1h", podSets=[{"name": "main", "count": 1, "template": gpu}])
        assert kubectl("create", "-f", "-", stdin=yaml.safe_dump(never)).returncode == 0
        path = '{.status.conditions[?(@.type=="QuotaReserved")].reason}|{.status.conditions[?(@.type=="QuotaReserved")].message}'
        shown = _until(lambda: kubectl("get", "workload", "never", "-n", "team", "-o", f"jsonpath={path}").stdout,
                       lambda out: "|" in out and out.split("|")[0] != "")
        assert shown == "NoMatchingFlavor|couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in ClusterQueue", shown


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_strict_validation_refuses_bogus_job_fields(tmp_path: Path) -> None:
    port = free_port()
    with HubProcess(tmp_path / "hub", extra_args=["--kube-listen", f"127.0.0.1:{port}"]) as hub:
        done = run_cli(["apply", "-f", "-", *hub.connection_args()],
                       stdin=yaml.safe_dump_all([namespace(), flavor(), cluster_queue(cpu=1), local_queue("lq")]))
        assert done.returncode == 0, done.stderr
        kubectl = _kubectl(port)
        bogus = _job("bogus", "100m", bogusField=1)
        refused = kubectl("create", "--validate=strict", "-f", "-", stdin=yaml.safe_dump(bogus))
        assert refused.returncode != 0 and 'unknown field "spec.bogusField"' in refused.stderr, refused.stderr
        inner = _job("inner", "100m")
        inner["spec"]["template"]["spec"]["containerz"] = []  # type: ignore[index]
        refused = kubectl("create", "--validate=strict", "-f", "-", stdin=yaml.safe_dump(inner))
        assert refused.returncode != 0 and "spec.template.spec.containerz" in refused.stderr, refused.stderr
        assert "not found" in kubectl("get", "job", "bogus", "-n", "team").stderr


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_meets_the_api_servers_limits(tmp_path: Path) -> None:
    """What kubectl prints for a body past 3 MiB (413), one nested 900 levels deep (400, never a 500)
    and a quantity no int64 holds (422): one line each, and nothing stored."""
    port = free_port()
    with HubProcess(tmp_path / "hub", extra_args=["--kube-listen", f"127.0.0.1:{port}"]) as hub:
        done = run_cli(["apply", "-f", "-", *hub.connection_args()],
                       stdin=yaml.safe_dump_all([namespace(), flavor(), cluster_queue(cpu=1), local_queue("lq")]))
        assert done.returncode == 0, done.stderr
        kubectl = _kubectl(port)
        big = _job("big", "100m")
        big["metadata"]["annotations"] = {"blob": "x" * (4 * 1024 * 1024)}  # type: ignore[index]
        refused = kubectl("create", "--validate=false", "-f", "-", stdin=json.dumps(big))
        assert refused.returncode != 0 and "Request entity too large: limit is 3145728" in refused.stderr, refused.stderr[:500]
        deep: object = {"x": 1}
        for _ in range(900):
            deep = {"a": deep}
        nested = _job("nested", "100m")
        nested["metadata"]["annotations"] = {}  # type: ignore[index]
        nested["spec"]["deep"] = deep  # type: ignore[index]
        refused = kubectl("create", "--validate=false", "-f", "-", stdin=json.dumps(nested))
        assert refused.returncode != 0 and "InternalError" not in refused.stderr, refused.stderr[:500]
        assert "nested deeper than 100 levels" in refused.stderr or "exceeded max depth" in refused.stderr, refused.stderr[:500]
        refused = kubectl("create", "-f", "-", stdin=yaml.safe_dump(_job("huge", "1e400")))
        assert refused.returncode != 0 and "is too large" in refused.stderr, refused.stderr
        assert "requests[cpu]" in refused.stderr
        listed = kubectl("get", "jobs", "-n", "team", "-o", "name")
        assert listed.returncode == 0 and listed.stdout.strip() == "", listed.stdout
