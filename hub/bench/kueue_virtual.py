"""``mkhub bench kueue-perf --clock virtual``: Kueue's configurations on the engine alone.

The hub's own driver (:class:`~hub.controllers.cluster.ClusterController` with the
simulated runner the standalone hub uses) on a simulated clock that jumps from
one event to the next (a creation, a run's end, an engine timer): scheduling
takes no time at all, so what remains is what Kueue's rules decide. The real
run (:mod:`hub.bench.kueue_perf`) prints these figures beside its own, to
separate scheduling quality from the service's cost.
"""

from __future__ import annotations

import time

from hub.api.config import Configuration
from hub.api.meta import format_time
from hub.api.registry import parse_object
from hub.controllers.cluster import ClusterController
from hub.controllers.simrunner import SimRunner
from hub.engine.engine import Engine

from .kueue_config import PerfConfig, Record, arrivals, setup_objects, summarize, workload_manifest

# Any fixed epoch: creation timestamps order the queues, so they must be real times.
EPOCH = 1_700_000_000.0


def replay(config: PerfConfig) -> tuple[list[Record], float, dict[str, float]]:
    """Run the configuration to the end; returns the records, the start time and the figures."""
    t_cpu = time.process_time()
    now = EPOCH
    engine = Engine(Configuration(), now)
    runner = SimRunner(default_duration=1.0, ready_delay=0.0)
    controller = ClusterController(engine, runner)
    for setup in setup_objects(config):
        controller.apply(parse_object(setup), now)
    controller.settle(now)
    controller.event_log.clear()
    plan = arrivals(config)
    records: dict[str, Record] = {}
    i = 0
    while True:
        while i < len(plan) and EPOCH + plan[i].at <= now:
            a = plan[i]
            manifest = workload_manifest(a)
            manifest["metadata"]["creationTimestamp"] = format_time(EPOCH + a.at)
            controller.apply(parse_object(manifest), now)
            records[a.key] = Record(a, EPOCH + a.at)
            i += 1
        controller.settle(now)
        for ev in controller.event_log:
            rec = records.get(ev.key)
            if rec is None:
                continue
            if ev.type == "Admitted":
                rec.admitted = now
            elif ev.type == "Finished":
                rec.finished = now
            elif ev.type == "Evicted":
                rec.evictions = 1  # workloads evicted at least once, as the real run can tell
        controller.event_log.clear()
        due = [t for t in (runner.next_due(), engine.next_wakeup()) if t is not None]
        if i < len(plan):
            due.append(EPOCH + plan[i].at)
        if not due:
            break
        # A timer already due was handled by this settle; never stand still.
        now = max(min(due), now + 1e-6)
    figures = summarize(config, list(records.values()), EPOCH)
    figures["replay_cpu_s"] = time.process_time() - t_cpu
    return list(records.values()), EPOCH, figures
