"""``mkhub describe job`` says why Kueue does not manage a Job: its framework, its namespace
(managedJobsNamespaceSelector) or its missing queue name."""

from __future__ import annotations

from hub.api.config import parse_configuration
from hub.controllers.hub import HubReconciler
from hub.service.views import describe
from hub.store import SQLiteStore

T0 = 1_800_000_000.0


def test_describe_says_why_a_job_is_not_managed() -> None:
    store = SQLiteStore(":memory:")
    opted_in = {"managedJobsNamespaceSelector": {"matchLabels": {"kueue": "yes"}}}
    cases = [
        ({"integrations": {"frameworks": ["pod"]}}, {"kueue.x-k8s.io/queue-name": "lq"}, "integrations.frameworks"),
        (opted_in, {"kueue.x-k8s.io/queue-name": "lq"}, "not selected by managedJobsNamespaceSelector"),
        ({}, {}, "no kueue.x-k8s.io/queue-name label"),
    ]
    for config, labels, why in cases:
        rec = HubReconciler(store, parse_configuration(config), T0, ready_delay=0.0)
        rec.load(T0)
        out = describe(rec, "Job", "team", "j1", uid="u1", labels=labels)
        assert out.explanation.startswith("not managed by Kueue") and why in out.explanation, out.explanation
        assert not out.workload_name
