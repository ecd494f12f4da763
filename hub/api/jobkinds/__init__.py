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

from typing import Any

from .batch_job import BATCH_JOB
from .framework import JobAdapter
from .pod import POD

# Every adapter mkhub has, by Configuration.integrations.frameworks name. A new kind is one
# module beside batch_job.py and one entry here; tests/api/test_jobkinds_contract.py covers it.
# "pod" is the single-Pod half of Kueue's pod integration (pod groups: .pod_group); its Pods are
# read by .pod.read_pod, not hub.api.registry, and no controller serves them yet.
ADAPTERS: dict[str, JobAdapter[Any]] = {BATCH_JOB.framework: BATCH_JOB, POD.framework: POD}


def adapter_for(api_version: str, kind: str) -> JobAdapter[Any] | None:
    for adapter in ADAPTERS.values():
        if adapter.kind == kind and adapter.api_version == api_version:
            return adapter
    return None


__all__ = ["ADAPTERS", "BATCH_JOB", "POD", "JobAdapter", "adapter_for"]
