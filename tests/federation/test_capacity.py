"""The capacity-aware dispatcher's pure decisions (hub.federation.capacity)."""

from __future__ import annotations

from hub.federation.capacity import (
    BLOCKED,
    BORROWS,
    FITS,
    NEVER,
    PREEMPTS,
    UNKNOWN,
    Nominate,
    QueueCapacity,
    Refuse,
    Request,
    ResourceQuota,
    Wait,
    WorkerCapacity,
    decide,
    level_of,
    names_from,
    rank,
    total_quota,
)

LQ = "team/lq"


def worker(name: str, nominal: int, usage: int = 0, borrowable: int = 0, potential: int | None = None,
           pending: int = 0, lqs: tuple[str, ...] = (LQ,), in_flight: int = 0) -> WorkerCapacity:
    m = 1000  # cpu in milli-units
    potential = nominal + borrowable if potential is None else potential
    quota = {("default", "cpu"): ResourceQuota(nominal * m, borrowable * m, usage * m, potential * m)}
    queue = QueueCapacity("cq", frozenset(lqs), quota, {"cpu": pending * m} if pending else {})
    return WorkerCapacity(name, {"cq": queue}, {"cpu": in_flight * m} if in_flight else {})


def req(cpu: int, only: tuple[str, ...] = (), preferred: tuple[str, ...] = ()) -> Request:
    return Request(LQ, {"cpu": cpu * 1000}, only, preferred)


def test_levels() -> None:
    assert level_of(worker("w", 4), req(4)) == (FITS, "")
    assert level_of(worker("w", 4, usage=2, borrowable=2), req(4))[0] == BORROWS
    assert level_of(worker("w", 4, usage=4, potential=4), req(4))[0] == PREEMPTS
    assert level_of(worker("w", 4), req(5)) == (NEVER, "cpu short by 1")
    assert level_of(WorkerCapacity("w"), req(5))[0] == UNKNOWN
    assert level_of(worker("w", 4, lqs=("other/lq",)), req(1)) == (NEVER, "no LocalQueue team/lq")


def test_pending_demand_and_in_flight_count_as_taken() -> None:
    assert level_of(worker("w", 4, pending=3), req(2))[0] == PREEMPTS
    assert level_of(worker("w", 4, in_flight=3), req(2))[0] == PREEMPTS
    assert level_of(worker("w", 4, pending=1, in_flight=1), req(2))[0] == FITS


def test_fit_beats_config_order_and_borrowing_beats_preemption() -> None:
    clusters = ["a", "b", "c"]
    workers = [worker("a", 4, usage=4, potential=4), worker("b", 4, usage=3, borrowable=4), worker("c", 4)]
    assert decide(req(2), clusters, workers, clusters) == Nominate("c", FITS)
    assert decide(req(2), clusters, workers[:2], clusters) == Nominate("b", BORROWS)


def test_config_order_then_least_loaded() -> None:
    workers = [worker("b", 8, usage=1), worker("a", 8, usage=6)]
    # both fit: config order decides
    assert decide(req(1), ["a", "b"], workers, ["a", "b"]) == Nominate("a", FITS)
    # equal in order (neither listed in the config): the least loaded ClusterQueue
    ranked = rank(workers, [], req(1))
    assert [w.name for _, w, _, _ in ranked] == ["b", "a"]


def test_preference_and_pinning() -> None:
    clusters = ["a", "b", "c"]
    workers = [worker(n, 4) for n in clusters]
    assert decide(req(1, preferred=("c",)), clusters, workers, clusters) == Nominate("c", FITS)
    # preferred but never fits: the others still serve
    small = [worker("a", 4), worker("b", 4), worker("c", 1)]
    assert decide(req(2, preferred=("c",)), clusters, small, clusters) == Nominate("a", FITS)
    # pinned: only the named worker
    assert decide(req(1, only=("b",)), clusters, workers, clusters) == Nominate("b", FITS)
    assert isinstance(decide(req(2, only=("c",)), clusters, small, clusters), Refuse)
    assert isinstance(decide(req(1, only=("zzz",)), clusters, workers, clusters), Refuse)


def test_next_nominee_after_timeout_and_wrap_around() -> None:
    clusters = ["a", "b"]
    workers = [worker("a", 4), worker("b", 4)]
    assert decide(req(1), clusters, workers, clusters, tried=["a"]) == Nominate("b", FITS)
    assert decide(req(1), clusters, workers, clusters, tried=["a", "b"]) == Nominate("a", FITS)
    assert decide(req(1), clusters, workers, clusters, tried=["b", "a"]) == Nominate("b", FITS)


def test_refuse_names_every_worker_and_shortfall() -> None:
    clusters = ["w1", "w2"]
    decision = decide(req(6), clusters, [worker("w2", 2), worker("w1", 4)], clusters)
    message = "No worker cluster can ever hold the workload: w1: cpu short by 2; w2: cpu short by 4"
    assert decision == Refuse(message, certain=True)  # both short of their quota totals: give up at once
    # A worker without the LocalQueue may yet get it: not certain, so the hub retries until giveUpTimeout.
    lacking = WorkerCapacity("w2", {"cq": QueueCapacity("cq", frozenset({"other/lq"}), {})})
    decision = decide(req(6), clusters, [lacking, worker("w1", 4)], clusters)
    assert isinstance(decision, Refuse) and not decision.certain, decision


def test_unknown_capacity_is_never_refused_and_ranks_before_preemption() -> None:
    clusters = ["w1", "w2"]
    # w2 never reported: its agent predates capacity reports, so it may still hold the workload
    assert decide(req(6), clusters, [worker("w1", 4), WorkerCapacity("w2")], clusters) == Nominate("w2", UNKNOWN)
    assert decide(req(4), clusters, [worker("w1", 4, usage=4), WorkerCapacity("w2")], clusters) == Nominate("w2", UNKNOWN)


def test_disconnected_workers_wait() -> None:
    clusters = ["w1", "w2"]
    workers = [worker("w1", 4), worker("w2", 4)]
    assert isinstance(decide(req(1), clusters, workers, []), Wait)
    assert decide(req(1), clusters, workers, ["w2"]) == Nominate("w2", FITS)


def test_multi_flavor_best_flavor_counts() -> None:
    quota = {("spot", "cpu"): ResourceQuota(2000, 0, 2000, 2000), ("on-demand", "cpu"): ResourceQuota(4000, 0, 0, 4000)}
    w = WorkerCapacity("w", {"cq": QueueCapacity("cq", frozenset({LQ}), quota)})
    assert level_of(w, req(3))[0] == FITS


def test_names_from_and_total_quota() -> None:
    assert names_from([{}, {"k": " a, b ,a,"}], "k") == ("a", "b")
    assert total_quota([{("f", "cpu"): 4}, {("f", "cpu"): 2, ("g", "cpu"): 1}]) == {("f", "cpu"): 6, ("g", "cpu"): 1}


def by_priority(name: str, policy: str, held: tuple[tuple[int, int], ...]) -> WorkerCapacity:
    """A full 4-cpu worker whose usage is held by workloads of the given (priority, cpu)."""
    m = 1000
    usage = sum(cpu for _, cpu in held)
    quota = ResourceQuota(4 * m, 0, usage * m, 4 * m, tuple((p, cpu * m) for p, cpu in held))
    queue = QueueCapacity("cq", frozenset({LQ}), {("default", "cpu"): quota}, within_cluster_queue=policy)
    return WorkerCapacity(name, {"cq": queue})


def test_preempts_only_where_lower_priority_work_would_make_room() -> None:
    urgent = Request(LQ, {"cpu": 2000}, priority=100)
    lower = by_priority("w1", "LowerPriority", ((0, 4),))
    peers = by_priority("w2", "LowerPriority", ((100, 4),))
    never = by_priority("w3", "Never", ((0, 4),))
    assert level_of(lower, urgent)[0] == PREEMPTS
    assert level_of(peers, urgent)[0] == BLOCKED  # same priority: it must wait for them to finish
    assert level_of(never, urgent)[0] == BLOCKED  # the worker's queue does not preempt
    assert level_of(by_priority("w4", "", ((100, 4),)), urgent)[0] == PREEMPTS  # an older agent: as before
    clusters = ["w2", "w3", "w1"]
    assert decide(urgent, clusters, [peers, never, lower], clusters) == Nominate("w1", PREEMPTS)


def test_a_waiting_copy_stays_unless_another_worker_ranks_better() -> None:
    """CapacityBook.nominate: at its deadline a copy that must wait for room stays where it has
    its place (another worker where it must wait too is no better); one that was expected to fit
    moves to an untried worker where it fits; any report ranking a worker better moves it."""
    from hub.federation.capacity_dispatch import CapacityBook

    book = CapacityBook(nomination_timeout=30.0)
    full = {"w1": by_priority("w1", "Never", ((0, 4),)), "w2": by_priority("w2", "Never", ((0, 4),))}
    book.worker = lambda name: full[name]  # type: ignore[method-assign]
    clusters = ["w1", "w2"]
    request = Request(LQ, {"cpu": 2000})
    assert book.nominate("k", "d", request, clusters, lambda n: True, 0.0) == Nominate("w1", BLOCKED)
    assert book.nominate("k", "d", request, clusters, lambda n: True, 31.0) is None  # due, w2 no better: stays
    full["w2"] = worker("w2", 4)  # w2 frees up; a report from it asks for a re-rank
    book.rerank.add("k")
    assert book.nominate("k", "d", request, clusters, lambda n: True, 32.0) == Nominate("w2", FITS)
    full["w1"] = worker("w1", 4)  # w1 fits too, but w2 was expected to admit it and still may
    book.rerank.add("k")
    assert book.nominate("k", "d", request, clusters, lambda n: True, 40.0) is None
    # w2 did not admit it in time: the estimate was wrong there, so w1, where it fits, is next.
    assert book.nominate("k", "d", request, clusters, lambda n: True, 63.0) == Nominate("w1", FITS)


def test_a_rack_required_gang_goes_to_the_worker_with_a_rack_that_holds_it() -> None:
    from dataclasses import replace

    from hub.engine.tas.fleet import FreeDomain, FreeLevel
    from hub.federation.capacity import TopologyNeed

    rack = "cloud.example.com/rack"

    def racked(name: str, rack_cpus: int) -> WorkerCapacity:
        level = FreeLevel(rack, (FreeDomain(("b1", "r1"), {"cpu": rack_cpus * 1000}, {"cpu": 4000}, 2),), 1)
        return replace(worker(name, 32), topologies={"tas": (level,)})

    gang = replace(req(12), topology=(TopologyNeed(rack, 12, {"cpu": 1000}),))
    small, big = racked("a", 8), racked("b", 16)
    assert level_of(small, gang)[0] == BLOCKED and level_of(big, gang)[0] == FITS
    assert decide(gang, ["a", "b"], [small, big], ["a", "b"]) == Nominate("b", FITS)
    # Quota alone would have sent it to the first worker of the config.
    assert decide(req(12), ["a", "b"], [small, big], ["a", "b"]) == Nominate("a", FITS)
    assert level_of(worker("c", 32), gang) == (NEVER, "no topology-aware flavor")
