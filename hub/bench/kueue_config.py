"""Kueue's scheduler performance configurations (``test/performance/scheduler`` in
kubernetes-sigs/kueue), the objects and workloads they generate, and the figures
Kueue's harness reports, computed the same way for every run of ``mkhub bench kueue-perf``.

Definitions (as Kueue's recorder and checker compute them):

* time to admission: from a workload's creation to its ``Admitted`` condition.
  Here creation is the moment the client sent the workload (real clock) or its
  scheduled creation time (virtual clock); admission is that of the run that
  finished (a workload evicted by preemption and admitted again counts its last
  admission).
* ClusterQueue usage: the integral of the queue's admitted cpu over the run,
  divided by its nominal quota times the run's length. Kueue's recorded figure
  is the class aggregate (all queues share one class), which equals the mean
  over queues here, as every queue has the same quota and the same span.
* capacity bound: per cohort, the cpu-seconds of all its work over the cohort's
  quota, or the arrival span, whichever is longer; the max over cohorts.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

NAMESPACE_PREFIX = "perf-c"
FLAVOR = "default-flavor"
CLASS_LABEL = "mkhub.dev/perf-class"
CLASSES = ("small", "medium", "large")


@dataclass(frozen=True, slots=True)
class WorkloadClass:
    name: str
    count: int  # per ClusterQueue
    interval: float  # seconds between two creations, per ClusterQueue
    runtime: float  # seconds
    priority: int
    cpu: int  # the whole workload's
    # Kueue's TAS configuration: pods (cpu split evenly), the topology constraint and level
    # (required, preferred, or balanced: slices of ``slice_size`` pods in one domain each), and the
    # size group (small/medium/large) its figures are summed into.
    pods: int = 1
    tas: str = ""
    tas_level: str = ""
    slice_size: int = 0
    group: str = ""

    @property
    def size(self) -> str:
        return self.group or self.name


@dataclass(frozen=True, slots=True)
class PerfConfig:
    name: str
    cohorts: int
    queues_per_cohort: int
    classes: tuple[WorkloadClass, ...]
    nominal_cpu: int = 20
    borrowing_limit_cpu: int = 100
    flavor: str = "default-flavor"
    # TAS: the topology's levels, highest first: (name, node label, count under the level above);
    # every node has ``node_cpu`` cpus and ``node_memory``.
    topology: tuple[tuple[str, str, int], ...] = ()
    node_cpu: int = 96
    node_memory: str = "256Gi"

    @property
    def cluster_queues(self) -> int:
        return self.cohorts * self.queues_per_cohort

    @property
    def workloads(self) -> int:
        return self.cluster_queues * sum(c.count for c in self.classes)


CONFIGS: dict[str, PerfConfig] = {
    "baseline": PerfConfig(
        "baseline",
        5,
        6,
        (
            WorkloadClass("small", 350, 0.1, 0.2, 50, 1),
            WorkloadClass("medium", 100, 0.5, 0.5, 100, 5),
            WorkloadClass("large", 50, 1.2, 1.0, 200, 20),
        ),
    ),
    "large-scale": PerfConfig(
        "large-scale",
        10,
        100,
        (
            WorkloadClass("small", 35, 0.06, 0.15, 50, 1),
            WorkloadClass("medium", 11, 0.3, 0.35, 100, 5),
            WorkloadClass("large", 4, 0.7, 0.7, 200, 20),
        ),
    ),
}

RACK_LABEL = "cloud.provider.com/topology-rack"


def _tas_classes() -> tuple[WorkloadClass, ...]:
    """Kueue's configs/tas/generator.yaml: each size class three times, rack required, preferred
    and balanced (slices of 1, 2 and 4 pods)."""
    out = []
    for size, n, interval, runtime, priority, cpu, pods, counts in (
        ("small", 1, 0.1, 0.2, 50, 1, 2, (120, 120, 110)),
        ("medium", 2, 0.5, 0.5, 100, 5, 4, (34, 33, 33)),
        ("large", 4, 1.2, 1.0, 200, 20, 8, (17, 17, 16)),
    ):
        for constraint, count in zip(("required", "preferred", "balanced"), counts):
            out.append(WorkloadClass(f"{size}-{constraint}-rack", count, interval, runtime, priority, cpu, pods=pods,
                                     tas=constraint, tas_level=RACK_LABEL, slice_size=n if constraint == "balanced" else 0,
                                     group=size))
    return tuple(out)


CONFIGS["tas"] = PerfConfig(
    "tas", 5, 6, _tas_classes(), flavor="tas-flavor",
    topology=(("block", "cloud.provider.com/topology-block", 1), ("rack", RACK_LABEL, 10),
              ("node", "kubernetes.io/hostname", 64)),
)

# Kueue's TAS rangespec: its recorded means of time to admission per class (ms).
KUEUE_TAS_CLASSES_MS = {
    "large-balanced-rack": 37862, "large-preferred-rack": 39573, "large-required-rack": 39625,
    "medium-balanced-rack": 106303, "medium-preferred-rack": 106324, "medium-required-rack": 107071,
    "small-balanced-rack": 237846, "small-preferred-rack": 246090, "small-required-rack": 246755,
}


def _kueue_tas() -> dict[str, float]:
    out = {"wall_s": 401.472, "mean_cq_usage": 0.6241}
    config = CONFIGS["tas"]
    for size in CLASSES:
        classes = [c for c in config.classes if c.size == size]
        total = sum(c.count for c in classes)
        out[f"tta_{size}_s"] = sum(KUEUE_TAS_CLASSES_MS[c.name] * c.count for c in classes) / total / 1000
    out.update({f"tta_{name}_s": ms / 1000 for name, ms in KUEUE_TAS_CLASSES_MS.items()})
    return out


# Kueue's recorded means (rangespec comments and runs of its CI) for the same configurations.
KUEUE_RECORDED: dict[str, dict[str, float]] = {
    "baseline": {"wall_s": 351.1, "tta_small_s": 215.5, "tta_medium_s": 76.8, "tta_large_s": 16.5, "mean_cq_usage": 0.559},
    "large-scale": {"wall_s": 1179.0, "tta_small_s": 700.0, "tta_medium_s": 256.0, "tta_large_s": 106.0, "mean_cq_usage": 0.386},
    "tas": _kueue_tas(),
}


@dataclass(frozen=True, slots=True)
class Arrival:
    at: float  # seconds after the start
    cohort: int
    queue: int  # index within the cohort
    cls: WorkloadClass
    index: int  # within (queue, class)

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.cohort}"

    @property
    def name(self) -> str:
        return f"{self.cls.name}-{self.queue}-{self.index}"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def cq_name(cohort: int, queue: int) -> str:
    return f"cq-{cohort}-{queue}"


def arrivals(config: PerfConfig) -> list[Arrival]:
    """Every workload with its creation time: one per interval per queue and class, from time 0."""
    out = [
        Arrival(round(i * cls.interval, 6), c, q, cls, i)
        for c in range(config.cohorts)
        for q in range(config.queues_per_cohort)
        for cls in config.classes
        for i in range(cls.count)
    ]
    out.sort(key=lambda a: (a.at, a.cohort, a.queue, a.cls.name))
    return out


def capacity_bound(config: PerfConfig, items: Iterable[Arrival] | None = None) -> float:
    """Per cohort: cpu-seconds of work / cohort quota, or the arrival span if longer; max over cohorts."""
    work: dict[int, float] = {}
    span: dict[int, float] = {}
    for a in arrivals(config) if items is None else items:
        work[a.cohort] = work.get(a.cohort, 0.0) + a.cls.cpu * a.cls.runtime
        span[a.cohort] = max(span.get(a.cohort, 0.0), a.at)
    quota = config.queues_per_cohort * config.nominal_cpu
    return max((max(work[c] / quota, span[c]) for c in work), default=0.0)


TAS_NODE_GROUP = "tas-node-group"


def topology_objects(config: PerfConfig) -> list[dict[str, Any]]:
    """Kueue's generator's Topology and Ready Nodes, every combination of the levels' values
    (``<level>-<i>``); the hostname label is the node's name, as a kubelet sets it (Kueue's
    generator writes ``node-<i>``, the same in every rack)."""
    levels = config.topology
    objs: list[dict[str, Any]] = [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology",
                                   "metadata": {"name": "default-topology"},
                                   "spec": {"levels": [{"nodeLabel": label} for _, label, _ in levels]}}]
    paths: list[list[str]] = [[]]
    for name, _, count in levels:
        paths = [[*p, f"{name}-{i}"] for p in paths for i in range(count)]
    for values in paths:
        node = "-".join(values)
        labels = {label: value for (_, label, _), value in zip(levels, values)}
        labels.update({"kubernetes.io/hostname": node, TAS_NODE_GROUP: "tas"})
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": labels},
                     "status": {"allocatable": {"cpu": str(config.node_cpu), "memory": config.node_memory, "pods": "110"},
                                "conditions": [{"type": "Ready", "status": "True"}]}})
    return objs


def setup_objects(config: PerfConfig) -> list[dict[str, Any]]:
    """Namespaces, the flavor, ClusterQueues in cohorts and one LocalQueue per ClusterQueue (and for
    TAS the Topology, its Nodes and a flavor of that topology)."""
    flavor: dict[str, Any] = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
                              "metadata": {"name": config.flavor}}
    if config.topology:
        flavor["spec"] = {"topologyName": "default-topology", "nodeLabels": {TAS_NODE_GROUP: "tas"}}
    objs: list[dict[str, Any]] = [*(topology_objects(config) if config.topology else []), flavor]
    for c in range(config.cohorts):
        ns = f"{NAMESPACE_PREFIX}{c}"
        objs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for q in range(config.queues_per_cohort):
            objs.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta1",
                    "kind": "ClusterQueue",
                    "metadata": {"name": cq_name(c, q)},
                    "spec": {
                        "cohort": f"cohort-{c}",
                        "namespaceSelector": {},
                        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu"],
                                "flavors": [
                                    {
                                        "name": config.flavor,
                                        "resources": [
                                            {
                                                "name": "cpu",
                                                "nominalQuota": str(config.nominal_cpu),
                                                "borrowingLimit": str(config.borrowing_limit_cpu),
                                            }
                                        ],
                                    }
                                ],
                            }
                        ],
                    },
                }
            )
            objs.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta1",
                    "kind": "LocalQueue",
                    "metadata": {"name": f"lq-{q}", "namespace": ns},
                    "spec": {"clusterQueue": cq_name(c, q)},
                }
            )
    return objs


def _pod_set(cls: WorkloadClass) -> dict[str, Any]:
    milli = cls.cpu * 1000 // cls.pods
    out: dict[str, Any] = {"name": "main", "count": cls.pods, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": f"{milli}m" if milli % 1000 else str(milli // 1000)}}}]}}}
    if cls.tas == "required":
        out["topologyRequest"] = {"required": cls.tas_level}
    elif cls.tas == "preferred":
        out["topologyRequest"] = {"preferred": cls.tas_level}
    elif cls.tas == "balanced":  # Kueue's generator: a slice-required topology and the slice size
        out["topologyRequest"] = {"podSetSliceRequiredTopology": cls.tas_level, "podSetSliceSize": cls.slice_size}
    return out


def workload_manifest(a: Arrival) -> dict[str, Any]:
    cls = a.cls
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": a.name,
            "namespace": a.namespace,
            "labels": {CLASS_LABEL: cls.name},
            "annotations": {"mkhub.dev/sim-duration": f"{round(cls.runtime * 1000)}ms"},
        },
        "spec": {
            "queueName": f"lq-{a.queue}",
            "priority": cls.priority,
            "podSets": [_pod_set(cls)],
        },
    }


# ---------------------------------------------------------------------------------------------- figures


@dataclass(slots=True)
class Record:
    """One workload's life, in seconds on one clock."""

    arrival: Arrival
    created: float  # sent by the client (real) or scheduled (virtual)
    admitted: float | None = None
    finished: float | None = None
    evictions: int = 0


def _p95(values: Sequence[float]) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def usage_by_queue(config: PerfConfig, records: Iterable[Record], start: float, end: float) -> dict[str, float]:
    """Per ClusterQueue: admitted cpu integrated over [start, end] / (nominal quota x (end - start))."""
    span = max(end - start, 1e-9)
    used = {cq_name(c, q): 0.0 for c in range(config.cohorts) for q in range(config.queues_per_cohort)}
    for r in records:
        if r.admitted is None:
            continue
        stop = r.finished if r.finished is not None else end
        used[cq_name(r.arrival.cohort, r.arrival.queue)] += r.arrival.cls.cpu * max(0.0, min(stop, end) - max(r.admitted, start))
    return {name: cpu_s / (config.nominal_cpu * span) for name, cpu_s in used.items()}


def summarize(config: PerfConfig, records: Sequence[Record], start: float) -> dict[str, float]:
    """The figures of one run: wall, times to admission per class, usage, bound, admissions/s."""
    finished = [r.finished for r in records if r.finished is not None]
    end = max(finished) if finished else start
    wall = end - start
    out: dict[str, float] = {
        "wall_s": wall,
        "bound_s": capacity_bound(config, (r.arrival for r in records)),
        "workloads": float(len(records)),
        "finished": float(len(finished)),
        "evictions": float(sum(r.evictions for r in records)),
    }
    for cls in CLASSES:
        waits = [r.admitted - r.created for r in records if r.arrival.cls.size == cls and r.admitted is not None]
        out[f"tta_{cls}_s"] = statistics.fmean(waits) if waits else math.nan
        out[f"tta_{cls}_p95_s"] = _p95(waits)
    for wc in config.classes:  # TAS: each constraint's figure too, as Kueue's rangespec lists them
        if wc.group:
            waits = [r.admitted - r.created for r in records if r.arrival.cls is wc and r.admitted is not None]
            out[f"tta_{wc.name}_s"] = statistics.fmean(waits) if waits else math.nan
    usage = usage_by_queue(config, records, start, end)
    out["min_cq_usage"] = min(usage.values()) if usage else math.nan
    out["mean_cq_usage"] = statistics.fmean(usage.values()) if usage else math.nan
    admitted = sum(1 for r in records if r.admitted is not None)
    out["admissions_per_s"] = admitted / wall if wall > 0 else math.nan
    return out


def timeline(config: PerfConfig, records: Sequence[Record], start: float, step: float) -> dict[str, list[float]]:
    """For plots: per ``step`` seconds, admissions in the step and the cohorts' usage of their total quota."""
    finished = [r.finished for r in records if r.finished is not None]
    end = max(finished) if finished else start
    bins = max(1, math.ceil((end - start) / step))
    admissions = [0.0] * bins
    used = [0.0] * bins  # cpu-seconds in each bin
    for r in records:
        if r.admitted is None:
            continue
        admissions[min(bins - 1, max(0, int((r.admitted - start) / step)))] += 1
        a, b = r.admitted - start, (r.finished if r.finished is not None else end) - start
        first, last = max(0, int(a / step)), min(bins - 1, int(b / step))
        for i in range(first, last + 1):
            overlap = min(b, (i + 1) * step) - max(a, i * step)
            if overlap > 0:
                used[i] += r.arrival.cls.cpu * overlap
    total_quota = config.cluster_queues * config.nominal_cpu
    return {
        "t": [i * step for i in range(bins)],
        "admissions_per_s": [n / step for n in admissions],
        "usage": [u / (total_quota * step) for u in used],
    }
