"""The agent's ClusterRole (manifests/base/agent/agent-rbac.yaml) against what the agent does in its
worker cluster: it lists and watches every kind it keeps in its store, and creates and deletes every
kind a won copy runs as (a Job, a JobSet, an AppWrapper, a SparkApplication, Pods...)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hub.store.kube.requests import resource_for
from worker_agent.kube.cluster import RUN_KINDS, STORE_KINDS

ROOT = Path(__file__).resolve().parents[2]


def rules() -> list[dict[str, Any]]:
    rbac = list(yaml.safe_load_all((ROOT / "manifests/base/agent/agent-rbac.yaml").read_text()))
    return [r for doc in rbac if doc and doc.get("kind") == "ClusterRole" for r in doc.get("rules") or []]


def missing(kinds: tuple[str, ...], verbs: set[str]) -> list[str]:
    out = []
    for kind in kinds:
        res = resource_for(kind)
        if not any(res.group in r["apiGroups"] and res.plural in r["resources"] and verbs <= set(r["verbs"])
                   for r in rules()):
            out.append(f"{res.plural}.{res.group}" if res.group else res.plural)
    return out


def test_the_agent_may_list_and_watch_every_kind_it_watches() -> None:
    assert missing(STORE_KINDS, {"get", "list", "watch"}) == []


def test_the_agent_may_create_and_delete_every_kind_a_copy_runs_as() -> None:
    assert missing(RUN_KINDS, {"create", "delete"}) == []
