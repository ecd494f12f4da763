"""The parts of a pod template the queueing engine reads.

The raw template dict is kept alongside for serialisation and for running the
pods; this parsed view holds only what admission needs: requests and limits
per container, overhead, and the node constraints matched against flavors.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hub.api import fastjson

from .meta import (
    NodeSelectorTerm,
    Toleration,
    read_node_selector_terms,
    read_tolerations,
)
from .reader import Reader

ResourceMap = dict[str, int]


@dataclass(frozen=True, slots=True)
class ContainerResources:
    name: str
    requests: tuple[tuple[str, int], ...]
    limits: tuple[tuple[str, int], ...]
    # Init containers with restartPolicy Always are sidecars and run beside the main containers.
    sidecar: bool = False


@dataclass(frozen=True, slots=True, eq=True, unsafe_hash=False)
class PodSpecInfo:
    containers: tuple[ContainerResources, ...]
    init_containers: tuple[ContainerResources, ...] = ()
    overhead: tuple[tuple[str, int], ...] = ()
    pod_requests: tuple[tuple[str, int], ...] = ()
    pod_limits: tuple[tuple[str, int], ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()
    required_affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    priority_class_name: str = ""
    # Kubernetes PodRequests of one pod, computed once at parse time.
    per_pod_requests: tuple[tuple[str, int], ...] = ()
    # Memo of __hash__ (workloads' equivalence shapes hash the spec, often shared between copies).
    _hash: int = field(default=0, compare=False, repr=False)

    def __hash__(self) -> int:
        if not self._hash:
            value = hash(
                (self.containers, self.init_containers, self.overhead, self.pod_requests, self.pod_limits,
                 self.node_selector, self.required_affinity, self.tolerations, self.priority_class_name)
            ) or 1
            object.__setattr__(self, "_hash", value)  # frozen: the memo is set once, by the object itself
        return self._hash


def _container(r: Reader, init: bool) -> ContainerResources:
    res = r.child("resources")
    return ContainerResources(
        name=r.string("name"),
        requests=tuple(sorted(res.resource_list("requests").items())),
        limits=tuple(sorted(res.resource_list("limits").items())),
        sidecar=init and r.string("restartPolicy") == "Always",
    )


# Workloads of one Job template share their pod spec: a parsed view per distinct template text.
_TEMPLATE_MEMO: dict[str, PodSpecInfo] = {}
_TEMPLATE_MEMO_SIZE = 4096


def read_pod_template(r: Reader) -> PodSpecInfo:
    """``r`` is the PodTemplateSpec (``template``).

    Templates read without a field error are remembered by their JSON text (a
    :class:`PodSpecInfo` is immutable); a template with errors is read every
    time, so that each reports its own field paths."""
    try:
        memo_key: str | None = fastjson.dumps_sorted(r.data)
    except (TypeError, ValueError):
        memo_key = None
    if memo_key is not None:
        known = _TEMPLATE_MEMO.get(memo_key)
        if known is not None:
            return known
    errors_before = len(r.errors.items)
    info = _read_pod_template(r)
    if memo_key is not None and len(r.errors.items) == errors_before:
        if len(_TEMPLATE_MEMO) >= _TEMPLATE_MEMO_SIZE:
            _TEMPLATE_MEMO.clear()
        _TEMPLATE_MEMO[memo_key] = info
    return info


def _read_pod_template(r: Reader) -> PodSpecInfo:
    spec = r.child("spec")
    pod_res = spec.child("resources")
    info = PodSpecInfo(
        containers=tuple(_container(c, False) for c in spec.items("containers")),
        init_containers=tuple(_container(c, True) for c in spec.items("initContainers")),
        overhead=tuple(sorted(spec.resource_list("overhead").items())),
        pod_requests=tuple(sorted(pod_res.resource_list("requests").items())),
        pod_limits=tuple(sorted(pod_res.resource_list("limits").items())),
        node_selector=tuple(sorted(spec.string_map("nodeSelector").items())),
        required_affinity=tuple(read_node_selector_terms(spec)),
        tolerations=tuple(read_tolerations(spec, "tolerations")),
        priority_class_name=spec.string("priorityClassName"),
    )
    return replace(info, per_pod_requests=tuple(sorted(pod_requests(info).items())))


def container_requests(c: ContainerResources) -> ResourceMap:
    """Requests with missing ones defaulted from limits, as the API server defaults them."""
    out = dict(c.limits)
    out.update(c.requests)
    return out


def pod_requests(spec: PodSpecInfo) -> ResourceMap:
    """Per-pod requests with Kubernetes ``PodRequests`` semantics.

    max(sum of regular containers + sidecars, for each non-sidecar init container:
    its request plus the sidecars started before it), plus pod overhead; pod-level
    requests replace the container sum for the resources they name.
    """
    total: ResourceMap = {}
    for c in spec.containers:
        for name, value in container_requests(c).items():
            total[name] = total.get(name, 0) + value
    sidecars: ResourceMap = {}
    init_peak: ResourceMap = {}
    for c in spec.init_containers:
        reqs = container_requests(c)
        if c.sidecar:
            for name, value in reqs.items():
                sidecars[name] = sidecars.get(name, 0) + value
                total[name] = total.get(name, 0) + value
            continue
        for name, value in reqs.items():
            candidate = value + sidecars.get(name, 0)
            if candidate > init_peak.get(name, 0):
                init_peak[name] = candidate
    for name, value in init_peak.items():
        if value > total.get(name, 0):
            total[name] = value
    pod_level = dict(spec.pod_limits)
    pod_level.update(spec.pod_requests)
    for name, value in pod_level.items():
        total[name] = value
    for name, value in spec.overhead:
        total[name] = total.get(name, 0) + value
    return {name: max(0, value) for name, value in total.items()}


def requests_exceed_limits(spec: PodSpecInfo) -> str | None:
    """Kueue marks a workload Misconfigured when a container requests more than its limit."""
    for group in (spec.containers, spec.init_containers):
        for c in group:
            limits = dict(c.limits)
            for name, value in c.requests:
                if name in limits and value > limits[name]:
                    return f"container {c.name!r} requests {name} above its limit"
    return None

