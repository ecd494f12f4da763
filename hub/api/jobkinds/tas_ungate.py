"""Which gated pod of a TAS pod set goes to which topology domain: Kueue's topology ungater
(``pkg/controller/tas/topology_ungater.go``), pure.

An admitted pod set's ``topologyAssignment`` says how many pods each domain gets. Its pods were
created with the ``kueue.x-k8s.io/topology`` scheduling gate; each gated pod is given one domain's
nodeSelector (the level labels' values) and ungated. By rank when every pod carries the pod set's
index label (``podIndexLabel``, and ``subGroupIndexLabel`` for pods of several Jobs, a JobSet's)
and the pods already running sit where their ranks say: rank ``r`` goes to the ``r``-th pod slot of
the assignment, so neighbours in rank are neighbours in the topology. Otherwise greedily: per domain
in the assignment's order, its count less the ungated pods already there, filled with gated pods
oldest first.

A pod's rank is its index (plus its Job's index times the Job's size, for a JobSet's pods) less the
pod set's offset (:func:`rank_offsets`): the larger pod set of a ``podSetGroupName`` pair (a
LeaderWorkerSet's workers beside their leader) counts after the smaller one, and a pod set whose pods
carry ``kueue.x-k8s.io/pod-index-offset`` (an MPIJob's workers when the launcher runs as worker 0)
starts its indexes there. Indexes are read below the pod set's largest rank (its count plus its
offsets), as Kueue's ``readRanksForLabels`` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..topology_assignment import TopologyAssignment


@dataclass(frozen=True, slots=True)
class TasPod:
    """One live (not Succeeded or Failed) pod of the pod set."""

    name: str
    gated: bool  # still holds the topology gate
    node_selector: Mapping[str, str]
    labels: Mapping[str, str]
    created: float = 0.0


Ungate = tuple[str, dict[str, str]]  # (pod name, the domain's nodeSelector)

POD_INDEX_OFFSET_ANNOTATION = "kueue.x-k8s.io/pod-index-offset"


@dataclass(frozen=True, slots=True)
class RankRange:
    """What a pod set's indexes mean: rank = index - ``offset``; an index is read below ``max_rank``."""

    offset: int
    max_rank: int


def rank_offsets(pod_sets: Sequence[tuple[str, int, str | None]]) -> dict[str, RankRange]:
    """Per pod set (name, admitted count, its ``podSetGroupName``), Kueue's ``rankOffsets`` and
    ``maxRank`` before the offset annotation: a group of two shares one rank space, the pod set of
    fewer pods (the first on a tie) first; any other pod set ranks from 0."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for i, (name, count, group) in enumerate(pod_sets):
        groups.setdefault(group if group else f"\0{i}", []).append((name, count))
    out: dict[str, RankRange] = {}
    for members in groups.values():
        if len(members) > 1:
            smaller, larger = members[0], members[1]
            if smaller[1] > larger[1]:
                smaller, larger = larger, smaller
            out[smaller[0]] = RankRange(0, smaller[1])
            out[larger[0]] = RankRange(smaller[1], larger[1] + smaller[1])
        else:
            out[members[0][0]] = RankRange(0, members[0][1])
    return out


def with_offset_annotation(base: RankRange, annotations: Mapping[str, str]) -> RankRange | str:
    """``base`` moved by the pod-index-offset annotation of a pod of the set (Kueue assumes every pod
    of a replica carries the same one), or a one-line reason when it is not an integer."""
    text = annotations.get(POD_INDEX_OFFSET_ANNOTATION)
    if text is None:
        return base
    try:
        offset = int(text.strip())
    except ValueError:
        return f"annotation {POD_INDEX_OFFSET_ANNOTATION}={text!r}: not an integer"
    return RankRange(base.offset + offset, base.max_rank + offset)


def assign_gated_pods(ta: TopologyAssignment, count: int, pods: Sequence[TasPod],
                      request: Mapping[str, Any] | None = None, ranks: RankRange | None = None) -> list[Ungate]:
    """The gated pods to ungate now, each with the nodeSelector of its domain (``ranks``: the pod
    set's offset, :func:`rank_offsets`; none by default)."""
    slots = [values for values, n in ta.domains for _ in range(n)]
    ranked = _by_rank(ta, count, pods, request or {}, slots, ranks or RankRange(0, count))
    if ranked is not None:
        return [(pod.name, dict(zip(ta.levels, slots[rank]))) for rank, pod in sorted(ranked.items())]
    return _greedy(ta, pods)


def _greedy(ta: TopologyAssignment, pods: Sequence[TasPod]) -> list[Ungate]:
    gated = sorted((p for p in pods if p.gated), key=lambda p: (p.created, p.name))
    placed: dict[tuple[str, ...], int] = {}
    for p in pods:
        if not p.gated:
            values = tuple(p.node_selector.get(level, "") for level in ta.levels)
            placed[values] = placed.get(values, 0) + 1
    out: list[Ungate] = []
    for values, n in ta.domains:
        room = max(n - placed.get(values, 0), 0)
        for pod in gated[len(out):len(out) + room]:
            out.append((pod.name, dict(zip(ta.levels, values))))
    return out


def _index(labels: Mapping[str, str], key: str, bound: int) -> int | None:
    text = labels.get(key)
    if text is None or not text.isdigit():
        return None
    value = int(text)
    return value if value < bound else None


def _by_rank(ta: TopologyAssignment, count: int, pods: Sequence[TasPod], request: Mapping[str, Any],
             slots: list[tuple[str, ...]], bounds: RankRange) -> dict[int, TasPod] | None:
    """Gated pods by rank, or None when ranks cannot be used (Kueue's ``readRanksIfAvailable``)."""
    index_label = request.get("podIndexLabel")
    if not index_label:
        return None
    group_label = request.get("subGroupIndexLabel")
    groups = request.get("subGroupCount")
    size = count
    if group_label:
        if not isinstance(groups, int) or groups <= 0:
            return None
        size = count // groups
    else:
        groups = 1
    ranks: dict[int, TasPod] = {}
    for pod in pods:
        index = _index(pod.labels, str(index_label), bounds.max_rank)
        if index is None:
            return None
        rank = index - bounds.offset
        if group_label:
            group = _index(pod.labels, str(group_label), groups)
            if group is None or index >= size:
                return None
            rank = index + group * size - bounds.offset
        if rank < 0 or rank >= count or rank >= len(slots) or rank in ranks:
            return None
        if not pod.gated and tuple(pod.node_selector.get(level, "") for level in ta.levels) != slots[rank]:
            return None  # a running pod is not where its rank says: Kueue falls back to greedy
        ranks[rank] = pod
    return {rank: pod for rank, pod in ranks.items() if pod.gated}
