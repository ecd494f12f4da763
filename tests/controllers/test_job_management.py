"""The hub creates Workloads only for the Jobs Kueue manages: batch/job among
integrations.frameworks, a namespace managedJobsNamespaceSelector selects, and a queue
name or manageJobsWithoutQueueName (hub.api.jobkinds.management through JobIntegration)."""

from __future__ import annotations

from typing import Any

from hub_objects import T0, job, local_queue, seed, setup_objects

from hub.api.config import parse_configuration
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore


def _workload_owners(store: SQLiteStore, config: dict[str, Any]) -> set[str]:
    rec = HubReconciler(store, parse_configuration(config), T0, ready_delay=0.0)
    rec.load(T0)
    rec.round(T0)
    return {o["metadata"]["ownerReferences"][0]["name"] for o in store.list("Workload")[0]}


def _unlabelled(name: str, ns: str = "team") -> dict[str, Any]:
    out = job(name, ns=ns)
    out["metadata"]["labels"] = {}
    return out


def test_jobs_are_not_queued_when_batch_job_is_not_an_enabled_framework(store: SQLiteStore) -> None:
    seed(store, setup_objects() + [job("j1")])
    assert _workload_owners(store, {"integrations": {"frameworks": ["pod"]}}) == set()


def test_a_namespace_the_selector_leaves_out_is_not_managed_even_with_a_queue_name(store: SQLiteStore) -> None:
    opted_in = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "in", "labels": {"kueue": "yes"}}}
    seed(store, setup_objects() + [opted_in, local_queue(ns="in"), job("j-team"), job("j-in", ns="in")])
    assert _workload_owners(store, {"managedJobsNamespaceSelector": {"matchLabels": {"kueue": "yes"}}}) == {"j-in"}


def test_manage_jobs_without_queue_name_takes_unlabelled_jobs_of_selected_namespaces(store: SQLiteStore) -> None:
    system = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}
    seed(store, setup_objects() + [system, _unlabelled("free"), _unlabelled("sys", ns="kube-system")])
    assert _workload_owners(store, {"manageJobsWithoutQueueName": True}) == {"free"}
    assert store.get("Job", "kube-system", "sys") is not None



def test_a_job_a_managed_jobset_controls_is_the_jobsets_not_queued_on_its_own(store: SQLiteStore) -> None:
    child = job("js-workers-0")
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "u1", "controller": True}]
    seed(store, setup_objects() + [child, job("alone")])
    jobsets = {"integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}}
    assert _workload_owners(store, jobsets) == {"alone"}
