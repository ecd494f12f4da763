"""kubectl's STATUS column of a Pod, as kube-apiserver's pod printer derives it (hub.kubeapi.tables)."""

from __future__ import annotations

from typing import Any

import pytest

from hub.kubeapi.tables import columns_for


def status_of(pod: dict[str, Any]) -> Any:
    column = next(c for c in columns_for("Pod") if c.name == "Status")
    assert column.compute is not None
    return column.compute(pod, 0.0)


def terminated(reason: str = "", code: int = 0, signal: int = 0) -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": code}
    if reason:
        state["reason"] = reason
    if signal:
        state["signal"] = signal
    return {"name": "c", "ready": False, "state": {"terminated": state}}


RUNNING = {"name": "c", "ready": True, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}


@pytest.mark.parametrize(("status", "meta", "shown"), [
    ({"phase": "Pending"}, {}, "Pending"),
    ({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]},
     {}, "SchedulingGated"),
    ({"phase": "Running", "containerStatuses": [RUNNING]}, {}, "Running"),
    ({"phase": "Succeeded", "containerStatuses": [terminated("Completed")]}, {}, "Completed"),
    ({"phase": "Failed", "containerStatuses": [terminated("Error", 1)]}, {}, "Error"),
    ({"phase": "Failed", "containerStatuses": [terminated(code=3)]}, {}, "ExitCode:3"),
    ({"phase": "Failed", "containerStatuses": [terminated(signal=9)]}, {}, "Signal:9"),
    ({"phase": "Failed", "reason": "Evicted"}, {}, "Evicted"),
    ({"phase": "Pending", "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}]},
     {}, "ContainerCreating"),
    ({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
      "containerStatuses": [RUNNING, terminated("Completed")]}, {}, "Running"),
    ({"phase": "Running", "containerStatuses": [RUNNING]}, {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "Terminating"),
    ({"phase": "Succeeded", "containerStatuses": [terminated("Completed")]},
     {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "Completed"),
])
def test_the_status_column_follows_kube_apiservers_pod_printer(
    status: dict[str, Any], meta: dict[str, Any], shown: str
) -> None:
    assert status_of({"metadata": {"name": "p", **meta}, "status": status}) == shown
