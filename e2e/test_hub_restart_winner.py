"""The hub is killed while its winners run, and they finish while it is down: no completion is lost.

A real ``mkhub serve`` and one ``mkagent``. The hub's clock is pinned to times whose fraction of a
millisecond is 0.4998 (``MKHUB_DEBUG_SUBMILLISECOND``): the reservation times for which a dispatch
id built by rounding the in-memory float to milliseconds differed, about every other time, from the
id built from the stored time after a restart. The restarted hub then took the winner's report for a
stale copy, withdrew it, and the workload stayed Admitted for ever with its quota held.

Each Job is reserved in a round of its own (submitted one at a time), so each has its own time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import multikueue_setup, one_queue_setup, progress, wait_for

from hub.ctl.client import ControlClient
from hub.demo.processes import AgentProcess, HubProcess

pytestmark = pytest.mark.timeout(150)

JOBS = 8
RUN_SECONDS = 3

HUB_SETUP = one_queue_setup(8, checks=["multikueue"], between=multikueue_setup(["worker-1"]))
WORKER_OBJECTS = one_queue_setup(8)


def job(i: int) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": f"job-{i}",
                "namespace": "team-a",
                "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                "annotations": {"mkhub.dev/sim-duration": f"{RUN_SECONDS}s"},
            },
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                    }
                }
            },
        }
    )


def true_condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_ and c["status"] == "True":
            return dict(c)
    return None


def workloads(client: ControlClient) -> list[dict[str, Any]]:
    return client.list("Workload", namespace="team-a")[2]


def reserved(client: ControlClient) -> int:
    return sum(1 for w in workloads(client) if true_condition(w, "QuotaReserved"))


def test_winners_that_finish_while_the_hub_is_down_are_finished_after_its_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MKHUB_DEBUG_SUBMILLISECOND", "0.4998")
    (tmp_path / "config.yaml").write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nmultiKueue: {workerLostTimeout: 60s}\n"
    )
    (tmp_path / "worker-objects.yaml").write_text(WORKER_OBJECTS)
    hub = HubProcess(tmp_path / "hub", extra_args=["--config", str(tmp_path / "config.yaml")], log_path=tmp_path / "hub.log")
    agent_log = tmp_path / "worker-1.log"
    agent = AgentProcess(
        "worker-1", hub.address, tmp_path / "worker-objects.yaml", log_path=agent_log, extra_args=["--log-level", "debug"]
    )
    with hub, agent.start():
        with hub.channel() as channel:
            client = hub.client(channel)
            applied = client.apply(HUB_SETUP)
            assert not applied.rejected, [r.error for r in applied.results]
            wait_for(
                "worker-1 Active",
                lambda: true_condition(client.get("MultiKueueCluster", "worker-1"), "Active") is not None,
                60,
                hub,
            )
            for i in range(JOBS):  # one round, one reservation time each
                assert not client.apply(job(i)).rejected
                wait_for(f"job-{i} reserved", lambda n=i: reserved(client) > n, 30, hub)
            wait_for(
                "every workload admitted on worker-1",
                lambda: sum(1 for w in workloads(client) if true_condition(w, "Admitted")) == JOBS,
                60,
                hub,
            )
        hub.kill()
        progress("hub killed; waiting for the agent to finish every run")
        wait_for(
            "worker-1 to finish every run",
            lambda: agent_log.read_text(errors="replace").count("run succeeded") >= JOBS,
            60,
            agent,
        )
        hub.start()
        with hub.channel() as channel:
            client = hub.client(channel)
            wait_for(
                "every workload Finished after the restart",
                lambda: sum(1 for w in workloads(client) if true_condition(w, "Finished")) == JOBS,
                60,
                hub,
            )
            final = workloads(client)
            cq = client.get("ClusterQueue", "cluster-queue")
    for wl in final:
        finished = true_condition(wl, "Finished")
        assert finished is not None and finished["reason"] == "Succeeded", wl["status"]
        assert wl["status"].get("clusterName") == "worker-1"
        assert not (wl["status"].get("schedulingStats") or {}).get("evictions"), wl["status"]
    assert cq["status"].get("reservingWorkloads", 0) == 0, cq["status"]
