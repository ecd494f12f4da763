"""What the hub on Kubernetes lists and watches beside Kueue's kinds and the enabled frameworks':
the DRA objects pod templates claim devices through, and topology-aware scheduling's inventory;
and that its ClusterRole lets it list and watch every kind it does."""

from __future__ import annotations

from pathlib import Path

import yaml

from hub.api.config import KNOWN_FRAMEWORKS, parse_configuration
from hub.service.kubemode import KubeOptions, store_options, watched_job_kinds
from hub.store.kube.requests import resource_for

ROOT = Path(__file__).resolve().parents[2]


def test_dra_and_topology_kinds_are_watched_optionally() -> None:
    options = store_options(KubeOptions(kubeconfig=None, job_kinds=watched_job_kinds(parse_configuration({}))))
    for kind in ("ResourceClaim", "ResourceClaimTemplate", "Topology"):
        assert kind in options.kinds and kind in options.optional_kinds  # a cluster may not serve them


def test_the_hub_may_list_and_watch_every_kind_it_watches() -> None:
    every = parse_configuration({"integrations": {"frameworks": [f for f in KNOWN_FRAMEWORKS
                                                                 if f != "sparkoperator.k8s.io/sparkapplication"]}})
    kinds = store_options(KubeOptions(kubeconfig=None, job_kinds=watched_job_kinds(every))).kinds
    rbac = list(yaml.safe_load_all((ROOT / "manifests/base/hub-rbac.yaml").read_text()))
    rules = [r for doc in rbac if doc and doc.get("kind") == "ClusterRole" for r in doc.get("rules") or []]
    missing = []
    for kind in kinds:
        res = resource_for(kind)
        if not any(res.group in r["apiGroups"] and res.plural in r["resources"]
                   and {"list", "watch"} <= set(r["verbs"]) for r in rules):
            missing.append(f"{res.plural}.{res.group}" if res.group else res.plural)
    assert missing == []



def test_the_agent_watches_dra_objects_and_may() -> None:
    from worker_agent.kube.cluster import OPTIONAL_KINDS, STORE_KINDS

    assert {"ResourceClaim", "ResourceClaimTemplate"} <= set(STORE_KINDS) & set(OPTIONAL_KINDS)
    rbac = list(yaml.safe_load_all((ROOT / "manifests/base/agent/agent-rbac.yaml").read_text()))
    rules = [r for doc in rbac if doc and doc.get("kind") == "ClusterRole" for r in doc.get("rules") or []]
    assert any("resource.k8s.io" in r["apiGroups"] and {"resourceclaims", "resourceclaimtemplates"} <= set(r["resources"])
               and {"list", "watch"} <= set(r["verbs"]) for r in rules)
