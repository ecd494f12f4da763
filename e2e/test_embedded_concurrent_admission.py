"""Concurrent admission in the embedded hub, as Kueue shows it: Kueue's concurrent-admission
example (e2e/kueue-examples, unchanged) through ``mkhub apply`` with the ConcurrentAdmission gate
on; each Job's Workload is labelled a parent, one variant Workload per flavor is created, owned by
it and restricted to its flavor; the parent is admitted with its admitted variant's flavors and the
Job runs; when reservation frees up, a Job running on on-demand migrates there (its on-demand
variant evicted for FlavorMigration); Kueue's events (CreatedVariant, DeactivatedVariant) are
recorded."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_embedded_jobsets import get_json, mkhub, true

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(180)

EXAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "concurrent-admission-setup.yaml"
PARENT = "kueue.x-k8s.io/concurrent-admission-parent"
ALLOWED = "kueue.x-k8s.io/workload-allowed-resource-flavors"
CONFIG = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
          "featureGates": {"ConcurrentAdmission": True}}
JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: NAME
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: team-queue}
  annotations: {mkhub.dev/sim-duration: 1h}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: registry.k8s.io/pause:3.9, resources: {requests: {cpu: "4", memory: 1Gi}}}]
"""


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubProcess]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with HubProcess(tmp_path / "data", extra_args=["--config", str(tmp_path / "config.yaml")]) as proc:
        code, out, err = mkhub(proc, "apply", "-f", str(EXAMPLE))
        assert code == 0 and "Warning" not in err, err
        yield proc


def wait(hub: HubProcess, what: str, check: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        items = {o["metadata"]["name"]: o for o in get_json(hub, "workloads")["items"]}
        if check(items):
            return items
        assert time.monotonic() < deadline, f"{what}: {sorted(items)}"
        time.sleep(0.2)


def parent_of(items: dict[str, Any], job: str) -> dict[str, Any]:
    return next(o for o in items.values() if (o["metadata"].get("ownerReferences") or [{}])[0].get("name") == job)


def flavor(wl: dict[str, Any]) -> str:
    return str(wl["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"])


def test_kueues_example_admits_through_variants_and_migrates_to_reservation(hub: HubProcess) -> None:
    for name in ("first", "second"):
        code, out, err = mkhub(hub, "create", "-f", "-", stdin=JOB.replace("NAME", name))
        assert code == 0, err

    def both_admitted(items: dict[str, Any]) -> bool:
        parents = [o for o in items.values() if o["metadata"].get("labels", {}).get(PARENT) == "true"]
        return len(parents) == 2 and all(true(p, "Admitted") for p in parents)

    items = wait(hub, "both parents admitted", both_admitted)
    first, second = parent_of(items, "first"), parent_of(items, "second")
    assert (flavor(first), flavor(second)) == ("reservation", "on-demand")
    variants = [o for o in items.values() if o["metadata"].get("labels", {}).get(PARENT) != "true"]
    assert len(variants) == 6
    for v in variants:
        (owner,) = v["metadata"]["ownerReferences"]
        assert owner["kind"] == "Workload" and owner["apiVersion"] == "kueue.x-k8s.io/v1beta2" and owner["controller"]
        assert owner["name"] in (first["metadata"]["name"], second["metadata"]["name"])
        assert v["metadata"]["name"].startswith(owner["name"].rsplit("-", 1)[0] + "-variant-" + v["metadata"]["annotations"][ALLOWED])
    labelled = get_json(hub, "workloads", "-l", f"{PARENT}=true")["items"]
    assert sorted(o["metadata"]["name"] for o in labelled) == sorted([first["metadata"]["name"], second["metadata"]["name"]])
    second_spot = next(v for v in variants if v["metadata"]["ownerReferences"][0]["name"] == second["metadata"]["name"]
                       and v["metadata"]["annotations"][ALLOWED] == "spot")
    assert second_spot["spec"]["active"] is False  # less preferred than its admitted on-demand sibling
    second_reservation = next(v for v in variants if v["metadata"]["ownerReferences"][0]["name"] == second["metadata"]["name"]
                              and v["metadata"]["annotations"][ALLOWED] == "reservation")
    assert second_reservation["spec"].get("active", True) is True  # keeps pursuing the preferred flavor
    job = get_json(hub, "job", "second")
    assert job["spec"]["suspend"] is False

    code, _, err = mkhub(hub, "delete", "job", "first", "-n", "default")
    assert code == 0, err
    second_name = second["metadata"]["name"]

    def migrated(items: dict[str, Any]) -> bool:
        wl = items.get(second_name)
        return wl is not None and true(wl, "Admitted") and flavor(wl) == "reservation" and first["metadata"]["name"] not in items

    items = wait(hub, "second migrated to reservation", migrated)
    assert len(items) == 4  # the first Job's parent and variants are gone with it
    on_demand = next(v for v in items.values() if v["metadata"].get("annotations", {}).get(ALLOWED) == "on-demand")
    evicted = next(c for c in on_demand["status"]["conditions"] if c["type"] == "Evicted")
    assert (evicted["status"], evicted["reason"]) == ("True", "FlavorMigration")
    active = {v["metadata"]["annotations"][ALLOWED]: v["spec"].get("active", True)
              for v in items.values() if v["metadata"].get("annotations", {}).get(ALLOWED)}
    assert active == {"reservation": True, "on-demand": False, "spot": False}
    events = get_json(hub, "events")["items"]
    reasons = {(e["involvedObject"]["name"], e["reason"]) for e in events}
    assert (second_name, "CreatedVariant") in reasons
    assert (second_spot["metadata"]["name"], "DeactivatedVariant") in reasons
