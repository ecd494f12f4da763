"""The workload kinds mkhub queues, one adapter each (see :mod:`.framework`).

Adding a kind: a module beside ``batch_job.py`` with its adapter (pod sets, suspend, run
with the admission's pod-set infos and restore, finished, pods ready, managedBy's path,
mirrored status fields, worker copy, simulated status), its typed object parsed by
:mod:`hub.api.registry`, an entry in ``ADAPTERS`` under its Kueue framework name (one of
``hub.api.config.KNOWN_FRAMEWORKS``), and its ``Samples`` in
``tests/api/test_jobkinds_contract.py``, which then runs the whole contract against it.
Which objects are managed is :mod:`.management`'s rule, the same for every kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..config import Configuration
from ..dra import DRA_KINDS
from .appwrapper import APPWRAPPER
from .batch_job import BATCH_JOB
from .external import ExternalAdapter, external_adapters, is_external
from .framework import JobAdapter
from .jobset import JOBSET
from .kubeflow import KUBEFLOW_ADAPTERS
from .management import framework_enabled
from .mpijob import MPIJOB
from .pod import POD
from .ray import RAYCLUSTER, RAYJOB, RAYSERVICE
from .spark import SPARK_APPLICATION
from .trainjob import TRAINJOB

# Every adapter mkhub has, by Configuration.integrations.frameworks name. A new kind is one
# module beside batch_job.py and one entry here; tests/api/test_jobkinds_contract.py covers it.
# "pod" is the single-Pod half of Kueue's pod integration (pod groups: .pod_group); its Pods are
# typed by .pod.read_pod (hub.api.registry's Pod kind) and run by hub.controllers.pods.
ADAPTERS: dict[str, JobAdapter[Any]] = {adapter.framework: adapter for adapter in (
    BATCH_JOB, JOBSET, POD, RAYJOB, RAYCLUSTER, RAYSERVICE, MPIJOB, TRAINJOB, APPWRAPPER, SPARK_APPLICATION)}
ADAPTERS.update({adapter.framework: adapter for adapter in KUBEFLOW_ADAPTERS})  # PyTorchJob, TFJob, ... (one shape)

# Kinds some adapter's pod sets come from (a TrainJob's runtimes): the controllers keep them.
REFERENCED_KINDS = frozenset(k for a in ADAPTERS.values() for k in getattr(a, "referenced_kinds", ()))
# And the DRA objects pod templates claim devices through (hub.controllers.dra), kept the same way.
REFERENCED_KINDS |= DRA_KINDS

# The kinds the per-object reconciler runs (hub.controllers.jobs: one object, one Workload,
# suspended until admitted), by kind (the store's kinds are unique by name), Job first: a name
# users give without a kind is a Job's first. Pods are not among them: a pod group is many
# objects for one Workload, and a Pod is gated rather than suspended (their own controller).
_BY_KIND: dict[str, JobAdapter[Any]] = {
    a.kind: a for a in sorted(ADAPTERS.values(), key=lambda a: a.kind != "Job") if a is not POD
}
JOB_KINDS: tuple[str, ...] = tuple(_BY_KIND)


def adapter_for(api_version: str, kind: str) -> JobAdapter[Any] | None:
    """The adapter of any kind mkhub has one for (Pods included)."""
    for adapter in ADAPTERS.values():
        if adapter.kind == kind and adapter.api_version == api_version:
            return adapter
    return None


def owner_managed(config: Configuration, owner_references: Iterable[Mapping[str, Any]]) -> bool:
    """An object (a Pod) whose controller is of a kind Kueue manages (its framework enabled): it is
    that object's, never queued on its own (Kueue's pod webhook skips it)."""
    for ref in owner_references:
        adapter = adapter_for(str(ref.get("apiVersion")), str(ref.get("kind"))) if ref.get("controller") else None
        if adapter is not None and framework_enabled(config, adapter.framework):
            return True
    return False


def enabled_job_kinds(config: Configuration) -> tuple[str, ...]:
    """The kinds of the frameworks ``config`` enables that the per-object reconciler runs."""
    return tuple(a.kind for a in _BY_KIND.values() if a.framework in config.frameworks)


def adapter_of_kind(kind: str) -> JobAdapter[Any] | None:
    """The adapter of a kind the per-object reconciler runs, or of an external framework
    registered by :func:`register_external_frameworks` (None for Pods and other kinds)."""
    return _BY_KIND.get(kind) or _EXTERNAL.get(kind)


# Kueue's multiKueue.externalFrameworks of this process's Configuration, by kind.
_EXTERNAL: dict[str, ExternalAdapter] = {}


def register_external_frameworks(config: Configuration) -> tuple[ExternalAdapter, ...]:
    """Make the configuration's external frameworks' adapters known (a process reads one
    Configuration: the hub and the agents at start-up; their kinds are served by
    :func:`hub.api.registry.serve_external_frameworks`, which calls this). Raises ValueError naming the entry that conflicts with a
    built-in adapter of an enabled framework, as Kueue's config validation does."""
    adapters = external_adapters(config.multikueue.external_frameworks)
    for i, adapter in enumerate(adapters.values()):
        built_in = _BY_KIND.get(adapter.kind)
        if built_in is not None and built_in.api_version == adapter.api_version and built_in.framework in config.frameworks:
            raise ValueError(f"multiKueue.externalFrameworks[{i}].name: Invalid value: \"{adapter.framework}\": "
                             "conflicts with a built-in MultiKueue adapter")
        if built_in is not None:
            raise ValueError(f"multiKueue.externalFrameworks[{i}].name: Invalid value: \"{adapter.framework}\": "
                             f"mkhub has an adapter of its own for {adapter.kind}: enable its framework instead")
    _EXTERNAL.clear()
    _EXTERNAL.update(adapters)
    return tuple(adapters.values())


def external_kinds() -> tuple[str, ...]:
    return tuple(_EXTERNAL)


__all__ = ["ADAPTERS", "BATCH_JOB", "JOBSET", "JOB_KINDS", "POD", "REFERENCED_KINDS", "ExternalAdapter", "JobAdapter",
           "adapter_for", "adapter_of_kind", "external_kinds", "is_external", "register_external_frameworks",
           "enabled_job_kinds", "owner_managed"]
