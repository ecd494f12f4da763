"""DRA device accounting before a Workload reaches the engine (Kueue's workload controller, ``handleDRA``).

The engine stays pure: it sees each pod set's per-pod requests with the devices the pod's
resource claims ask for already added (as the quota resources
``Configuration.resources.deviceClassMappings`` maps their DeviceClasses to), or the
workload marked inadmissible with Kueue's message (:attr:`hub.api.workload.Workload.inadmissible`).
The ResourceClaimTemplates and ResourceClaims come from the store like any object; a
workload held back for a missing template is worked out again when one arrives in its
namespace (Kueue retries the reconcile until it can read it).
"""

from __future__ import annotations

from dataclasses import replace

from hub.api.dra import ClaimSpec, DraObject, has_resource_claims, pod_set_device_requests
from hub.api.workload import PodSet, Workload
from hub.engine.engine import Engine


class DraAccounting:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.claims: dict[tuple[str, str, str], ClaimSpec] = {}  # (kind, namespace, name) of claims and templates
        self.held: set[str] = set()  # workloads held back by a DRA check: worked out again on a claim's change

    def _lookup(self, kind: str, namespace: str, name: str) -> ClaimSpec | None:
        return self.claims.get((kind, namespace, name))

    def prepare(self, wl: Workload) -> Workload:
        """``wl`` with its pod sets' claimed devices counted per pod, or marked inadmissible."""
        if not any(has_resource_claims(ps.template) for ps in wl.pod_sets):
            self.held.discard(wl.meta.key)
            return wl
        mappings = self.engine.config.device_class_mappings
        pod_sets: list[PodSet] = []
        for i, ps in enumerate(wl.pod_sets):
            extra, problem = pod_set_device_requests(i, ps.name, ps.template, wl.meta.namespace, mappings, self._lookup)
            if problem:
                self.held.add(wl.meta.key)
                return replace(wl, inadmissible=problem)
            if not extra:
                pod_sets.append(ps)
                continue
            per_pod = dict(ps.spec.per_pod_requests)
            for resource, count in extra.items():
                per_pod[resource] = per_pod.get(resource, 0) + count
            pod_sets.append(replace(ps, spec=replace(ps.spec, per_pod_requests=tuple(sorted(per_pod.items())))))
        self.held.discard(wl.meta.key)
        return replace(wl, pod_sets=tuple(pod_sets), inadmissible="")

    def apply(self, obj: DraObject) -> list[Workload]:
        """Keep a claim or template; the held workloads of its namespace, worked out again."""
        if obj.kind == "DeviceClass":
            return []  # the mapping is by class name, from the Configuration
        self.claims[(obj.kind, obj.meta.namespace, obj.meta.name)] = obj.claim
        return self._retry(obj.meta.namespace)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        # Admitted workloads keep their quota; pending ones see the template gone on their next change.
        self.claims.pop((kind, namespace, name), None)

    def _retry(self, namespace: str) -> list[Workload]:
        out = []
        for key in sorted(self.held):
            wl = self.engine.workloads.get(key)
            if wl is None or wl.meta.namespace != namespace or wl.is_quota_reserved or wl.is_finished:
                continue
            again = self.prepare(wl)
            if not again.inadmissible:
                out.append(again)
        return out
