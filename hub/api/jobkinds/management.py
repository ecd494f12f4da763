"""Which objects of a kind Kueue manages (``integrations.frameworks``, ``manageJobsWithoutQueueName``,
``managedJobsNamespaceSelector``).

As Kueue v0.15+ (``ManagedJobsNamespaceSelectorAlwaysRespected`` on by default): a
namespace the selector does not match is never managed, queue name or not; in the
others an object with a queue name is managed, and one without only under
``manageJobsWithoutQueueName``. With the gate off the selector only limits
``manageJobsWithoutQueueName`` (Kueue's older, weak exemption for Job-based kinds).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..config import Configuration

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def namespace_labels(namespace: str, labels: Mapping[str, str] | None) -> dict[str, str]:
    """A namespace's labels as the API server keeps them (its name label always set), also for a
    namespace never stored (the embedded hub creates objects in namespaces it has no object for)."""
    return {**(labels or {}), NAMESPACE_NAME_LABEL: namespace}


def framework_enabled(config: Configuration, framework: str) -> bool:
    return framework in config.frameworks


def manages(config: Configuration, framework: str, queue_name: str, namespace: str,
            labels: Mapping[str, str] | None) -> bool:
    """Kueue reconciles this object of ``framework`` in ``namespace`` (with those labels)."""
    if not framework_enabled(config, framework):
        return False
    in_selected = config.managed_jobs_namespace_selector.matches(namespace_labels(namespace, labels))
    if config.gate("ManagedJobsNamespaceSelectorAlwaysRespected") and not in_selected:
        return False
    if queue_name:
        return True
    return config.manage_jobs_without_queue_name and in_selected
