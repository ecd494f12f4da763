"""The hub reconciler with MultiKueue wired in as ``mkhub serve`` wires it, against a real
(in-memory) SQLite store and a real agent over the loopback transport (real envelopes).

The rules under test: what a round decides reaches an agent only after the round's transaction
committed; the Active conditions MultiKueue sets are stored in the round; a reconciler rebuilt
after a failed commit takes the controller over (rebind) and learns from the agents' Hellos
what they hold.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hub_objects import T0, is_true, seed

from hub.api.config import parse_configuration
from hub.api.registry import parse_object
from hub.controllers.hub import HubReconciler
from hub.controllers.hub_runtime import HubRuntime
from hub.engine.engine import Engine
from hub.federation.loopback import LoopbackNetwork
from hub.federation.multikueue import MultiKueueController
from hub.federation.session import AgentEndpoint, HubEndpoint
from hub.sim.cluster import SimCluster
from hub.store import SQLiteStore, StoreError
from worker_agent.agent import Agent

CONFIG = parse_configuration({"multiKueue": {"workerLostTimeout": "5m", "gcInterval": "1m"}})
MK = "kueue.x-k8s.io/multikueue"


def objects(cpu: str, *, hub: bool) -> list[dict[str, Any]]:
    cq: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}],
    }
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": cq},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "team"}, "spec": {"clusterQueue": "cq"}},
    ]
    if hub:
        cq["admissionChecks"] = ["mk"]
        out += [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "MultiKueueCluster", "metadata": {"name": "worker-1"},
             "spec": {"kubeConfig": {"locationType": "Secret", "location": "w1"}}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "MultiKueueConfig", "metadata": {"name": "fleet"}, "spec": {"clusters": ["worker-1"]}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": "mk"},
             "spec": {"controllerName": MK, "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "fleet"}}},
        ]
    return out


def job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                     "annotations": {"mkhub.dev/sim-duration": "10s"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}},
    }


class FailingStore(SQLiteStore):
    """The real store; with ``fail_commit`` the next transaction never lands (kill -9 before COMMIT)."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.fail_commit = False
        self._batches = 0

    @contextmanager
    def batch(self) -> Iterator[None]:
        self._batches += 1
        try:
            with super().batch():
                yield
                if self._batches == 1 and self.fail_commit:
                    raise StoreError("simulated failure before commit")
        finally:
            self._batches -= 1


class Hub:
    """A store-backed hub reconciler, its MultiKueue controller and one worker agent (loopback)."""

    def __init__(self) -> None:
        self.now = T0
        self.store = FailingStore()
        seed(self.store, [*objects("4", hub=True), job("a")])
        self.mk = MultiKueueController(Engine(CONFIG, self.now), CONFIG, auto_flush=False)
        self.net = LoopbackNetwork(HubEndpoint(self.mk, authorize=self.mk.authorize, instance_id="hub", monotonic=lambda: self.now))
        self.worker = SimCluster("worker-1", CONFIG, self.now)
        for obj in objects("4", hub=False):
            self.worker.controller.apply(parse_object(obj), self.now)
        self.agent = Agent("worker-1", self.worker.controller)
        endpoint = AgentEndpoint(self.agent, session_id="w1", monotonic=lambda: self.now, now_ms=lambda: int(self.now * 1000))
        self.agent.send = endpoint.send
        self.net.add_agent("worker-1", endpoint)
        self.rec = self.build()

    def build(self) -> HubReconciler:
        rec = HubReconciler(self.store, CONFIG, self.now, ready_delay=0.0, federation=self.mk)
        rec.load(self.now)
        return rec

    def round(self) -> None:
        self.now += 0.5
        self.rec.round(self.now)

    def exchange(self) -> None:
        """Messages to the worker, the worker reacts, its reports to the hub's inbox."""
        self.net.pump()
        self.worker.controller.settle(self.now)
        self.net.pump()

    def stored(self, kind: str, name: str, ns: str = "") -> dict[str, Any]:
        obj = self.store.get(kind, ns, name)
        assert obj is not None
        return obj

    def workload(self) -> dict[str, Any]:
        [wl] = self.store.list("Workload")[0]
        return wl


@pytest.fixture
def hub() -> Iterator[Hub]:
    h = Hub()
    yield h
    h.store.close()


def test_agents_act_only_on_committed_rounds_and_a_rebuild_resyncs_them(hub: Hub) -> None:
    hub.round()  # the first round: the MultiKueueCluster has no agent yet
    hub.net.connect("worker-1")
    hub.exchange()
    hub.round()  # the connection: the cluster and the check become Active, the workload is reserved
    assert is_true(hub.stored("MultiKueueCluster", "worker-1"), "Active")
    assert is_true(hub.stored("AdmissionCheck", "mk"), "Active")
    wl = hub.workload()
    assert is_true(wl, "QuotaReserved") and not is_true(wl, "Admitted")
    key = f"team/{wl['metadata']['name']}"

    hub.exchange()  # the Dispatch (flushed after the commit) reaches the worker, which admits its copy
    assert key in hub.agent.copies and hub.worker.engine.workloads[key].is_admitted

    hub.store.fail_commit = True
    with pytest.raises(StoreError):
        hub.round()  # elects worker-1 and queues the Start, then the commit fails
    hub.exchange()
    assert not hub.agent.copies[key].started, "the agent acted on a decision that was never committed"
    assert hub.worker.runner.running == set()
    assert not is_true(hub.workload(), "Admitted")

    # What HubRuntime does on a failed round (on_rebuild, then a fresh reconciler), and the
    # agent's reconnection that serve triggers: its Hello says it holds an admitted copy.
    hub.store.fail_commit = False
    hub.mk.forget_agents_view()
    hub.rec = hub.build()
    hub.net.reconnect("worker-1")
    hub.exchange()
    hub.round()
    wl = hub.workload()
    assert is_true(wl, "Admitted") and wl["status"]["clusterName"] == "worker-1"
    hub.exchange()
    assert hub.agent.copies[key].started and hub.worker.runner.running == {key}


def test_disconnection_is_stored_in_the_round_that_saw_it(hub: Hub) -> None:
    hub.round()
    hub.net.connect("worker-1")
    hub.exchange()
    hub.round()
    assert is_true(hub.stored("MultiKueueCluster", "worker-1"), "Active")
    hub.net.disconnect("worker-1")
    hub.round()
    cluster = hub.stored("MultiKueueCluster", "worker-1")
    assert not is_true(cluster, "Active")
    assert not is_true(hub.stored("AdmissionCheck", "mk"), "Active")
    # The ClusterQueue follows its check (Kueue: inactive while the check is), stored in that round too.
    assert not is_true(hub.stored("ClusterQueue", "cq"), "Active")


# ---------------------------------------------------------------------------------- on the runtime's thread


class CountingFederation:
    """A federation that only records what the runtime does with it (the order is what matters)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.engine: Engine | None = None
        self.ticks = 0

    def rebind(self, engine: Engine, jobs: Any = None, pods: Any = None) -> None:
        self.engine = engine
        self.calls.append("rebind")

    def on_events(self, events: list[Any], now: float) -> None:
        pass

    def tick(self, now: float) -> bool:
        self.ticks += 1
        return False

    def flush(self) -> None:
        self.calls.append("flush")

    def next_wakeup(self) -> float | None:
        return None

    def drain_status_changes(self) -> list[tuple[str, str]]:
        return []


class OnceFailingStore(SQLiteStore):
    """The real store; the reconciler's next transaction fails at commit once ``armed``."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.armed = False
        self._nesting = threading.local()

    @contextmanager
    def batch(self) -> Iterator[None]:
        depth = getattr(self._nesting, "depth", 0)
        self._nesting.depth = depth + 1
        try:
            with super().batch():
                yield
                if depth == 0 and self.armed and threading.current_thread().name == "mkhub-reconciler":
                    self.armed = False
                    raise StoreError("disk I/O error (simulated)")
        finally:
            self._nesting.depth = depth


def eventually(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_wake_runs_a_round_and_a_failed_round_is_never_flushed() -> None:
    store = OnceFailingStore()
    seed(store, objects("2", hub=False))
    fed = CountingFederation()
    rt = HubRuntime(store, CONFIG, default_duration=3600.0, federation=fed, on_rebuild=lambda: fed.calls.append("on_rebuild"))
    rt.start()
    try:
        assert rt.ready.wait(20)
        assert fed.calls[:2] == ["rebind", "flush"]  # bound before the first round, flushed after it
        ticks = fed.ticks
        rt.wake()  # nothing changed in the store: only the poke can run a round
        eventually(lambda: fed.ticks > ticks, "a round after wake()")

        first_engine = fed.engine
        fed.calls.clear()
        store.armed = True
        rt.wake()
        eventually(lambda: rt.rebuilds == 1 and "flush" in fed.calls, "the rebuild and its first round")
        # The failed round was not flushed; the federation forgot it, then followed the new engine.
        assert fed.calls[:3] == ["on_rebuild", "rebind", "flush"]
        assert fed.engine is not first_engine
        assert rt.call(lambda rec: rec.engine).result(timeout=10) is fed.engine
    finally:
        rt.stop()
        store.close()


def test_a_workload_created_and_dispatched_in_one_round_reaches_the_agent_with_its_uid(hub: Hub) -> None:
    """The store gives a Workload its uid at the commit of the round that created it; a Dispatch
    decided in that same round leaves after the commit and must carry it (else the agent's
    decision log reads ``uid -`` and its reports name no workload)."""
    hub.net.connect("worker-1")
    hub.exchange()
    hub.round()
    hub.exchange()
    hub.round()  # job a: reserved and dispatched
    since = hub.store.list("Job")[1]
    hub.store.create(job("b"))
    with hub.store.watch(since=since) as watch:
        while (event := watch.next(timeout=0)) is not None:
            hub.rec.observe(event, hub.now)
    hub.round()  # job b: its Workload is created, reserved and dispatched in this one round
    stored = {w["metadata"]["name"]: w for w in hub.store.list("Workload")[0]}
    name = next(n for n in stored if n.startswith("job-b-"))
    hub.exchange()
    copy = hub.agent.copies[f"team/{name}"]
    assert copy.uid == stored[name]["metadata"]["uid"] != ""
