"""The node inventory topology-aware scheduling admits against, as Kueue's TAS cache keeps it.

Input like quotas: Topologies and Nodes are applied and deleted; reserved workloads' topology
assignments are accounted per leaf domain (``account`` / ``unaccount``). A leaf's free capacity
is its eligible Nodes' allocatable minus that usage, and minus the requests of the bound pods Kueue
did not place (Kueue's non-TAS usage cache: :meth:`TASInventory.set_non_tas_usage`, fed by the hub's
and the agents' Pod watch). Trees are cached per flavor and rebuilt when a Node, a Topology or the
flavor changes; a change of non-TAS usage rebuilds no tree, only the eligible leaves of the trees
holding that node, and requeues nothing by itself: freed capacity is batched (:mod:`.nontas`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from hub.api.meta import Taint
from hub.api.pods import PodSpecInfo
from hub.api.queues import ResourceFlavor
from hub.api.tas_kinds import Node, Topology
from hub.api.topology_assignment import TopologyAssignment
from hub.api.workload import Admission

from .placement import NoFit, Request, place
from .tree import Domain, DomainTree, Values, build_tree

LeafKey = tuple[str, str | Values]  # (topology, hostname or the leaf's values)
_MAX_CHANGES = 200_000
_MAX_NODE_CHANGES = 10_000  # non-TAS usage changes logged; past it every eligible cache rebuilds


@dataclass(frozen=True, slots=True)
class PodSetPlacement:
    """One pod set's TAS request once its flavor is chosen."""

    name: str
    flavor: str
    count: int
    per_pod: tuple[tuple[str, int], ...]  # one pod's requests, ``pods: 1`` included
    spec: PodSpecInfo
    request: Mapping[str, object]  # the pod set's topologyRequest ({} when implied)
    implied: bool
    least_free_profile: bool = True  # TASProfileMixed


def explicitly_requested(request: Mapping[str, object] | None) -> bool:
    """Kueue's IsExplicitlyRequestingTAS."""
    if not request:
        return False
    return bool(request.get("required") or request.get("preferred") or request.get("unconstrained") is True
                or request.get("podSetSliceRequiredTopology"))


@dataclass(slots=True)
class _Eligible:
    tree: DomainTree
    leaves: list[tuple[Domain, LeafKey, dict[str, int]]] = field(default_factory=list)
    by_key: dict[LeafKey, tuple[Domain, dict[str, int]]] = field(default_factory=dict)
    excluded_leaves: list[Domain] = field(default_factory=list)
    total: int = 0
    excluded_selector: int = 0
    excluded_affinity: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    node_names: frozenset[str] = frozenset()  # the tree's nodes (whose non-TAS usage the leaves' free holds)
    non_tas_epoch: int = 0
    non_tas_position: int = 0
    # Per one-pod request: each leaf's pod count on empty nodes, and the used leaves' counts (_Memo).
    bases: dict[tuple[tuple[str, int], ...], list[int]] = field(default_factory=dict)
    used: dict[tuple[tuple[str, int], ...], _Memo] = field(default_factory=dict)


@dataclass(slots=True)
class _Memo:
    """Pod counts of the used leaves for one pod shape, brought up to date from the usage change log."""

    epoch: int
    position: int = 0
    counts: dict[LeafKey, tuple[Domain, int]] = field(default_factory=dict)


def _count(free: dict[str, int], used: dict[str, int], extra: dict[str, int],
           wanted: tuple[tuple[str, int], ...]) -> tuple[int, str]:
    """How many pods fit, and the resource that limits it."""
    fit, limiting = -1, ""
    for r, v in wanted:
        n = (free.get(r, 0) - used.get(r, 0) - extra.get(r, 0)) // v
        if fit < 0 or n < fit:
            fit, limiting = n, r
    return max(fit, 0), limiting


def _taint_text(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


class TASInventory:
    def __init__(self, flavors: dict[str, ResourceFlavor]) -> None:
        self.flavors = flavors
        self.balanced_placement = False  # the TASBalancedPlacement gate (alpha, off as in Kueue)
        self.topologies: dict[str, Topology] = {}
        self.nodes: dict[str, Node] = {}
        self.usage: dict[LeafKey, dict[str, int]] = {}
        self.held: dict[str, list[tuple[LeafKey, dict[str, int]]]] = {}
        self._changes: list[LeafKey] = []  # leaves whose usage changed, in order (what memos catch up on)
        self._epoch = 0
        self.version = 0
        self._trees: dict[str, tuple[int, int, DomainTree | None]] = {}
        # Kueue's nonTasUsageCache, per node; the nodes changed, in order (what eligible caches check).
        self.non_tas: dict[str, dict[str, int]] = {}
        self._non_tas_changes: list[str] = []
        self._non_tas_epoch = 0
        self.freed: set[str] = set()  # nodes whose non-TAS usage went down since the last requeue batch
        self.freed_at: float | None = None  # when the first of them did
        self._eligible_cache: dict[tuple[object, ...], _Eligible] = {}

    # --- input ---------------------------------------------------------------------------

    def apply(self, obj: Topology | Node) -> None:
        if isinstance(obj, Topology):
            self.topologies[obj.meta.name] = obj
        else:
            self.nodes[obj.meta.name] = obj
        self.version += 1

    def delete(self, kind: str, name: str) -> None:
        target: dict[str, Topology] | dict[str, Node] = self.topologies if kind == "Topology" else self.nodes
        if target.pop(name, None) is not None:
            self.version += 1

    def set_non_tas_usage(self, node: str, usage: Mapping[str, int], now: float) -> None:
        """The summed requests (``pods`` included) of the node's bound pods Kueue did not place. A
        decrease (a pod gone, ended or moved) marks capacity freed, for :func:`.nontas.requeue_freed`."""
        old = self.non_tas.get(node, {})
        if dict(usage) == old:
            return
        if any(v > 0 for v in usage.values()):
            self.non_tas[node] = dict(usage)
        else:
            self.non_tas.pop(node, None)
        if len(self._non_tas_changes) >= _MAX_NODE_CHANGES:  # eligible caches rebuild rather than the log grow
            self._non_tas_changes.clear()
            self._non_tas_epoch += 1
        self._non_tas_changes.append(node)
        if any(v > usage.get(r, 0) for r, v in old.items()):
            self.freed.add(node)
            if self.freed_at is None:
                self.freed_at = now

    def node_free(self, node: Node) -> Mapping[str, int]:
        """The node's allocatable less its non-TAS usage (Kueue's leaf freeCapacity, per node)."""
        used = self.non_tas.get(node.meta.name)
        if not used:
            return node.allocatable
        return {r: v - used.get(r, 0) for r, v in node.allocatable.items()}

    def _non_tas_unchanged(self, el: _Eligible) -> bool:
        """No node of the cached tree changed its non-TAS usage since ``el`` was built (brought up to date)."""
        if el.non_tas_epoch != self._non_tas_epoch:
            return False
        changes = self._non_tas_changes
        if any(n in el.node_names for n in changes[el.non_tas_position:]):
            return False
        el.non_tas_position = len(changes)
        return True

    # --- trees ---------------------------------------------------------------------------

    def tree(self, flavor_name: str) -> DomainTree | None:
        """The flavor's domain tree; None unless it names a Topology that exists."""
        flavor = self.flavors.get(flavor_name)
        if flavor is None or not flavor.topology_name:
            return None
        cached = self._trees.get(flavor_name)
        if cached is not None and cached[0] == self.version and cached[1] == id(flavor):
            return cached[2]
        topology = self.topologies.get(flavor.topology_name)
        built = build_tree(topology, flavor, list(self.nodes.values())) if topology is not None else None
        self._trees[flavor_name] = (self.version, id(flavor), built)
        return built

    def is_tas_flavor(self, flavor_name: str) -> bool:
        return self.tree(flavor_name) is not None

    # --- usage ---------------------------------------------------------------------------

    def _leaf_key(self, tree: DomainTree, values: Values) -> LeafKey:
        return (tree.topology, values[-1] if tree.lowest_is_node else values)

    def account(self, key: str, admission: Admission | None) -> None:
        """A reservation's topology assignments take their leaves' capacity."""
        self.unaccount(key)
        if admission is None:
            return
        held: list[tuple[LeafKey, dict[str, int]]] = []
        for psa in admission.pod_set_assignments:
            ta = psa.topology_assignment
            if ta is None or psa.count <= 0:
                continue
            flavor = next((f for _, f in psa.flavors if self.flavors.get(f) and self.flavors[f].topology_name), None)
            if flavor is None:
                continue
            topology = self.flavors[flavor].topology_name
            per_pod = {r: -(-v // psa.count) for r, v in psa.resource_usage if r != "pods"}
            per_pod["pods"] = 1
            hostname_only = len(ta.levels) == 1
            for values, count in ta.domains:
                leaf: LeafKey = (topology, values[-1] if hostname_only else values)
                amount = {r: v * count for r, v in per_pod.items()}
                self._add(leaf, amount, 1)
                held.append((leaf, amount))
        if held:
            self.held[key] = held

    def holds(self, key: str) -> bool:
        return key in self.held

    def take_out(self, key: str) -> list[tuple[LeafKey, dict[str, int]]]:
        """Simulate the workload's nodes freed (a preemption candidate); :meth:`put_back` undoes it."""
        held = self.held.pop(key, [])
        for leaf, amount in held:
            self._add(leaf, amount, -1)
        return held

    def put_back(self, key: str, held: list[tuple[LeafKey, dict[str, int]]]) -> None:
        for leaf, amount in held:
            self._add(leaf, amount, 1)
        if held:
            self.held[key] = held

    def unaccount(self, key: str) -> bool:
        """True if the workload held nodes."""
        held = self.held.pop(key, ())
        for leaf, amount in held:
            self._add(leaf, amount, -1)
        return bool(held)

    def _add(self, leaf: LeafKey, amount: dict[str, int], sign: int) -> None:
        if len(self._changes) >= _MAX_CHANGES:  # memos rescan the usage rather than the log grow forever
            self._changes.clear()
            self._epoch += 1
        self._changes.append(leaf)
        used = self.usage.setdefault(leaf, {})
        for r, v in amount.items():
            used[r] = used.get(r, 0) + sign * v
        if not any(used.values()):
            del self.usage[leaf]

    # --- placement -----------------------------------------------------------------------

    def _eligible(self, tree: DomainTree, ps: PodSetPlacement) -> _Eligible:
        """The leaves whose Nodes this pod set may use (taints, and nodeSelector and required node
        affinity when the lowest level is the Node), with their summed allocatable; cached per tree."""
        flavor = self.flavors[ps.flavor]
        key = (ps.flavor, id(tree), ps.spec.tolerations, ps.spec.node_selector, ps.spec.required_affinity)
        cached = self._eligible_cache.get(key)
        if cached is not None and cached.tree is tree and self._non_tas_unchanged(cached):
            return cached
        if len(self._eligible_cache) > 256:
            self._eligible_cache.clear()
        tolerations = ps.spec.tolerations + flavor.tolerations
        by_node = tree.lowest_is_node
        out = _Eligible(tree, node_names=frozenset(n.meta.name for leaf in tree.per_level[-1] for n in leaf.nodes),
                        non_tas_epoch=self._non_tas_epoch, non_tas_position=len(self._non_tas_changes))
        taints: dict[str, int] = {}
        for leaf in tree.per_level[-1]:
            free: dict[str, int] = {}
            eligible = False
            for node in leaf.nodes:
                out.total += 1
                labels = node.meta.labels
                if by_node and any(labels.get(k) != v for k, v in ps.spec.node_selector):
                    out.excluded_selector += 1
                    continue
                if by_node and ps.spec.required_affinity and not any(
                        all(req.matches(labels) for req in term.match_expressions) for term in ps.spec.required_affinity):
                    out.excluded_affinity += 1
                    continue
                blocking = next((t for t in node.taints if t.effect in ("NoSchedule", "NoExecute")
                                 and not any(tol.tolerates(t) for tol in tolerations)), None)
                if blocking is not None:
                    taints[_taint_text(blocking)] = taints.get(_taint_text(blocking), 0) + 1
                    continue
                eligible = True
                for r, v in self.node_free(node).items():
                    free[r] = free.get(r, 0) + v
            if eligible:
                leaf_key = self._leaf_key(tree, leaf.values)
                out.leaves.append((leaf, leaf_key, free))
                out.by_key[leaf_key] = (leaf, free)
            else:
                out.excluded_leaves.append(leaf)
        out.taints = taints
        self._eligible_cache[key] = out
        return out

    def _used_counts(self, el: _Eligible, wanted: tuple[tuple[str, int], ...]) -> dict[LeafKey, tuple[Domain, int]]:
        """The used leaves' pod counts for this shape, recounting only the leaves changed since last time."""
        memo = el.used.get(wanted)
        keys: Iterable[LeafKey]
        if memo is None or memo.epoch != self._epoch:
            memo = el.used[wanted] = _Memo(self._epoch)
            keys = list(self.usage)
        else:
            keys = set(self._changes[memo.position:])
        memo.position = len(self._changes)
        for key in keys:
            found = el.by_key.get(key)
            if found is None:
                continue
            used = self.usage.get(key)
            if used is None:
                memo.counts.pop(key, None)  # free again: its empty-node count stands
            else:
                memo.counts[key] = (found[0], _count(found[1], used, {}, wanted)[0])
        return memo.counts

    def _fill_leaves(self, tree: DomainTree, ps: PodSetPlacement, assumed: dict[LeafKey, dict[str, int]],
                     empty: bool, leader: PodSetPlacement | None = None) -> Callable[[], str]:
        """Each leaf's ``pods`` for this pod set (and, for a group, whether its leader fits and the
        workers' room beside it); returns what builds Kueue's exclusion stats text."""
        el = self._eligible(tree, ps)
        wanted = tuple((r, v) for r, v in ps.per_pod if v > 0)
        bases = el.bases.get(wanted)
        if bases is None:
            bases = el.bases[wanted] = [_count(free, {}, {}, wanted)[0] for _, _, free in el.leaves]
        for leaf in el.excluded_leaves:
            leaf.pods = leaf.pods_wl = leaf.leader = 0
        for (leaf, _, _), base in zip(el.leaves, bases):
            leaf.pods = base
        if not empty:
            for leaf, n in self._used_counts(el, wanted).values():
                leaf.pods = n
        for key, extra in assumed.items():
            found = el.by_key.get(key)
            if found is not None:
                found[0].pods = _count(found[1], {} if empty else self.usage.get(key, {}), extra, wanted)[0]
        lead_wanted = tuple((r, v) for r, v in leader.per_pod if v > 0) if leader is not None else ()
        for leaf, key, free in el.leaves if lead_wanted else ():  # the leader fields are read for groups only
            leaf.pods_wl, leaf.leader = leaf.pods, 0
            if lead_wanted:
                used = {} if empty else self.usage.get(key, {})
                extra = assumed.get(key, {})
                if _count(free, used, extra, lead_wanted)[0] > 0:
                    leaf.leader = 1
                    with_leader = dict(extra)
                    for r, v in lead_wanted:
                        with_leader[r] = with_leader.get(r, 0) + v
                    leaf.pods_wl = _count(free, used, with_leader, wanted)[0]

        def stats() -> str:
            reasons = [f"nodeSelector: {el.excluded_selector}"] if el.excluded_selector else []
            if el.excluded_affinity:
                reasons.append(f"affinity: {el.excluded_affinity}")
            reasons += [f'taint "{t}": {n}' for t, n in el.taints.items()]
            resources: dict[str, int] = {}
            for leaf, key, free in el.leaves:
                if leaf.pods == 0:
                    used = {} if empty else self.usage.get(key, {})
                    limiting = _count(free, used, assumed.get(key, {}), wanted)[1]
                    if limiting:
                        resources[limiting] = resources.get(limiting, 0) + 1
            reasons += [f'resource "{r}": {n}' for r, n in resources.items()]
            return f"Total nodes: {el.total}; excluded: {', '.join(sorted(reasons))}" if reasons else ""

        return stats

    def _request(self, tree: DomainTree, ps: PodSetPlacement, leader: int = 0) -> Request:
        req = ps.request
        slice_key = req.get("podSetSliceRequiredTopology")
        required = req.get("required")
        preferred = req.get("preferred")
        unconstrained = bool(req.get("unconstrained") is True or ps.implied
                             or (slice_key and not required and not preferred))
        if required or preferred:
            key = str(required or preferred)
        elif slice_key:
            key = tree.levels[0]
        else:
            key = tree.levels[-1]
        level = tree.level_index(key)
        if level < 0:
            raise NoFit(f"no requested topology level: {key}")
        slice_size, slice_level = 1, -1
        if slice_key:
            slice_level = tree.level_index(str(slice_key))
            if slice_level < 0:
                raise NoFit(f"no requested topology level for slices: {slice_key}")
            if level > slice_level:
                raise NoFit(f"podset slice topology {slice_key} is above the podset topology {key}")
            size = req.get("podSetSliceSize")
            if not isinstance(size, int) or size <= 0:
                raise NoFit("slice topology requested, but slice size not provided")
            if ps.count % size:
                # Kueue's webhook refuses a slice larger than the pod set; a remainder would go unplaced.
                raise NoFit(f"pod set count {ps.count} is not a multiple of the slice size {size}")
            slice_size = size
        return Request(ps.count, level, bool(required), unconstrained, slice_size, slice_level,
                       least_free=unconstrained and ps.least_free_profile, leader=leader,
                       balanced=self.balanced_placement)

    def place(self, pod_sets: list[PodSetPlacement], *, empty: bool = False
              ) -> tuple[dict[str, TopologyAssignment], str, str]:
        """Assignments per pod set name, or (partial, failed pod set, Kueue's reason). Pod sets of one
        workload see each other's placements (Kueue's assumed usage); a group of two (``podSetGroupName``)
        is placed together, the one of fewer pods as its leader; ``empty``: as if nothing ran."""
        out: dict[str, TopologyAssignment] = {}
        assumed: dict[LeafKey, dict[str, int]] = {}
        groups: dict[str, list[PodSetPlacement]] = {}
        for i, ps in enumerate(pod_sets):
            groups.setdefault(str(ps.request.get("podSetGroupName") or f"\0{i}"), []).append(ps)
        for members in groups.values():
            workers, leader = members[0], None
            if len(members) == 2:  # Kueue's findLeaderAndWorkers
                first, second = members
                workers, leader = (second, first) if second.count > first.count else (first, second)
            tree = self.tree(workers.flavor)
            if tree is None:
                return out, workers.name, f'Flavor "{workers.flavor}" information missing in TAS cache'
            try:
                req = self._request(tree, workers, 1 if leader is not None else 0)
                stats = self._fill_leaves(tree, workers, assumed, empty, leader)
                try:
                    placed = place(tree, req)
                except NoFit as exc:
                    text = str(exc)
                    more = stats() if text.startswith("topology ") else ""
                    raise NoFit(f"{text}. {more}" if more else text) from None
            except NoFit as exc:
                return out, workers.name, str(exc)
            for member, ta in ((workers, placed[0]), (leader, placed[1])):
                if member is None or ta is None:
                    continue
                out[member.name] = ta
                for values, count in ta.domains:
                    key: LeafKey = (tree.topology, values[-1] if len(ta.levels) == 1 else values)
                    extra = assumed.setdefault(key, {})
                    for r, v in member.per_pod:
                        extra[r] = extra.get(r, 0) + v * count
            if len(members) > 2:  # Kueue's webhook refuses these; say so rather than place part of one
                return out, members[2].name, f"can only define groups of exactly 2 pod sets, got: {len(members)} pod set(s)"
        return out, "", ""

    def fits(self, pod_sets: list[PodSetPlacement], assignments: Mapping[str, TopologyAssignment]) -> bool:
        """Whether placements chosen earlier in the cycle still fit their leaves now."""
        need: dict[LeafKey, tuple[Domain, dict[str, int]]] = {}
        for ps in pod_sets:
            ta = assignments.get(ps.name)
            tree = self.tree(ps.flavor)
            if ta is None or tree is None:
                continue
            for values, count in ta.domains:
                leaf_values = tree.leaf_of(ta.levels, values)
                if leaf_values is None:
                    return False
                key: LeafKey = (tree.topology, values[-1] if len(ta.levels) == 1 else values)
                extra = need.setdefault(key, (tree.leaves[leaf_values], {}))[1]
                for r, v in ps.per_pod:
                    extra[r] = extra.get(r, 0) + v * count
        for key, (leaf, amount) in need.items():
            used = self.usage.get(key, {})
            for r, v in amount.items():
                if sum(self.node_free(n).get(r, 0) for n in leaf.nodes) - used.get(r, 0) < v:
                    return False
        return True

    def replace(self, ps: PodSetPlacement, existing: TopologyAssignment, node: str) -> tuple[TopologyAssignment | None, str]:
        """Kueue's findReplacementAssignment: the pods ``existing`` put on the failed ``node`` placed
        again, beside the rest (whose nodes they keep), within the domain the request requires (the
        required level's domain, or the slice's domain a slice lost pods from); (None, why) if none."""
        tree = self.tree(ps.flavor)
        if tree is None:
            return None, f'Flavor "{ps.flavor}" information missing in TAS cache'
        kept = [(v, c) for v, c in existing.domains if v[-1] != node]
        count = sum(c for v, c in existing.domains if v[-1] == node)
        if count == 0:
            return existing, ""
        leaves: list[tuple[Values, int]] = []
        for values, c in kept:
            leaf = tree.leaf_of(existing.levels, values)
            if leaf is None:
                return None, ("Cannot replace the node, because the existing topologyAssignment is invalid, "
                              f"as it contains the stale domain {values[0]}")
            leaves.append((leaf, c))
        request = dict(ps.request)
        within: Values = ()
        slice_key, size = request.get("podSetSliceRequiredTopology"), request.get("podSetSliceSize")
        if slice_key and isinstance(size, int) and size > 0 and count % size and leaves:
            # Whole slices cannot be kept: the pods go where the broken slice's others are, one by one.
            depth = tree.level_index(str(slice_key)) + 1
            per_slice: dict[Values, int] = {}
            for leaf, c in leaves:
                per_slice[leaf[:depth]] = per_slice.get(leaf[:depth], 0) + c
            within = next((d for d, c in sorted(per_slice.items()) if c % size), ())
            request.pop("podSetSliceRequiredTopology")
            request.pop("podSetSliceSize", None)
        elif request.get("required") and leaves:
            within = leaves[0][0][: tree.level_index(str(request["required"])) + 1]
        missing = PodSetPlacement(ps.name, ps.flavor, count, ps.per_pod, ps.spec, request, ps.implied,
                                  ps.least_free_profile)
        try:
            req = self._request(tree, missing)
            self._fill_leaves(tree, missing, {}, False)
            if within:
                for domain in tree.per_level[-1]:
                    if domain.values[: len(within)] != within:
                        domain.pods = 0
            placed = place(tree, req)[0]
        except NoFit as exc:
            return None, str(exc)
        if not placed.domains:
            return None, f"cannot find replacement assignment for unhealthy node: {node}"
        merged: dict[Values, tuple[Values, int]] = {}
        for values, c in kept + list(placed.domains):
            full = tree.leaf_of(existing.levels, values) or values
            merged[full] = (values, merged.get(full, (values, 0))[1] + c)
        return TopologyAssignment(existing.levels, tuple(merged[k] for k in sorted(merged))), ""
