"""Kueue's DRA example files (site/static/examples/dra, copied unchanged into e2e/kueue-examples/dra)
with ``resources.deviceClassMappings`` mapping ``gpu.example.com`` to ``example.com/gpu``:

- through kubectl against ``mkhub dev-cluster`` with the hub on it: the ResourceClaimTemplates
  are served and stored, each Job's Workload is admitted with the device its claim asks for
  counted against ``example.com/gpu`` (and the extended-resource Job's request counted as is);
- through ``mkhub apply``/``mkhub create`` on the embedded hub: the same, and a Job whose
  template claims a device class no mapping names stays inadmissible with Kueue's message.

The counter and capacity examples' templates ask for one ``gpu.example.com`` device each: with a
device-count mapping (mkhub reads no ResourceSlices) each counts one ``example.com/gpu``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import run_cli
from test_kube_jobs import hub_on_dev_cluster, kubectl

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(240)

DRA = Path(__file__).resolve().parent / "kueue-examples" / "dra"
JOBS = ("sample-dra-rct-job.yaml", "sample-dra-counter-job.yaml", "sample-dra-capacity-job.yaml",
        "sample-dra-extended-resource-job.yaml")
CONFIG = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
          "resources": {"deviceClassMappings": [{"name": "example.com/gpu", "deviceClassNames": ["gpu.example.com"]}]}}


def wait_for(what: str, check: Callable[[], Any], log: Callable[[], str] = str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{log()[-3000:]}"
        time.sleep(0.2)


def admitted_gpus(workloads: list[dict[str, Any]]) -> dict[str, str] | None:
    """Job name prefix -> the example.com/gpu its admission reserved, once all four are admitted."""
    out = {}
    for wl in workloads:
        admission = (wl.get("status") or {}).get("admission")
        if admission is None:
            return None
        owner = wl["metadata"]["ownerReferences"][0]["name"]
        usage = admission["podSetAssignments"][0].get("resourceUsage") or {}
        out[owner.rsplit("-", 1)[0]] = str(usage.get("example.com/gpu"))
    return out if len(out) == len(JOBS) else None


EXPECTED = {"sample-dra-rct-job": "1", "sample-dra-counter-job": "1", "sample-dra-capacity-job": "1",
            "sample-dra-extended-job": "1"}


def test_dra_examples_through_kubectl_with_the_hub_on_a_dev_cluster(tmp_path: Path, kubectl_required: None) -> None:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    queues = (DRA / "sample-dra-queues.yaml").read_text()
    with hub_on_dev_cluster(tmp_path, queues, ("--config", str(tmp_path / "config.yaml"))) as (kc, hub):
        for name in JOBS:
            out = kubectl(kc, "create", "-f", str(DRA / name))
            assert out.returncode == 0, out.stderr
        templates = json.loads(kubectl(kc, "get", "resourceclaimtemplates", "-n", "default", "-o", "json").stdout)
        assert sorted(t["metadata"]["name"] for t in templates["items"]) == ["gpu-partition", "gpu-share", "single-gpu"]

        def workloads() -> dict[str, str] | None:
            got = kubectl(kc, "get", "workloads", "-n", "default", "-o", "json")
            return admitted_gpus(json.loads(got.stdout)["items"]) if got.returncode == 0 else None

        assert wait_for("four admitted Workloads", workloads, hub.log) == EXPECTED


def test_dra_examples_through_mkhub_on_the_embedded_hub(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml"),
                                                   "--sim-duration", "60s"]) as hub:
        def mkhub(*args: str, stdin: str | None = None) -> str:
            done = run_cli([*args, *hub.connection_args()], stdin=stdin)
            assert done.returncode == 0, done.stderr
            return done.stdout

        mkhub("apply", "-f", str(DRA / "sample-dra-queues.yaml"))
        for name in JOBS:
            mkhub("create", "-f", str(DRA / name))
        mkhub("create", "-f", "-", stdin=yaml.safe_dump_all([
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
             "metadata": {"name": "fpga", "namespace": "default"},
             "spec": {"spec": {"devices": {"requests": [{"name": "f", "exactly": {"deviceClassName": "fpga.example.com"}}]}}}},
            {"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": "fpga-job", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
             "spec": {"template": {"spec": {"restartPolicy": "Never", "resourceClaims": [
                 {"name": "f", "resourceClaimTemplateName": "fpga"}],
                 "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}},
        ]))

        def workloads() -> list[dict[str, Any]]:
            return json.loads(mkhub("get", "workloads", "-n", "default", "-o", "json"))["items"]  # type: ignore[no-any-return]

        def fpga() -> dict[str, Any] | None:
            return next((w for w in workloads() if w["metadata"]["ownerReferences"][0]["name"] == "fpga-job"), None)

        assert wait_for("four admitted Workloads",
                        lambda: admitted_gpus([w for w in workloads() if
                                               w["metadata"]["ownerReferences"][0]["name"] != "fpga-job"])) == EXPECTED

        def refused() -> dict[str, Any] | None:
            wl = fpga()
            conds = {c["type"]: c for c in ((wl or {}).get("status") or {}).get("conditions") or []}
            return conds.get("QuotaReserved")

        cond = wait_for("the fpga Job's Workload held back", refused)
        assert (cond["status"], cond["reason"]) == ("False", "Misconfigured")
        assert cond["message"] == ('spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: '
                                   'Not found: "DeviceClass fpga.example.com is not mapped in DRA configuration '
                                   'for podset main"')
