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
from .jobset import JOBSET

# Every adapter mkhub has, by Configuration.integrations.frameworks name. A new kind is one
# module beside batch_job.py and one entry here; tests/api/test_jobkinds_contract.py covers it.
ADAPTERS: dict[str, JobAdapter[Any]] = {adapter.framework: adapter for adapter in (BATCH_JOB, JOBSET)}


def adapter_for(api_version: str, kind: str) -> JobAdapter[Any] | None:
    for adapter in ADAPTERS.values():
        if adapter.kind == kind and adapter.api_version == api_version:
            return adapter
    return None


__all__ = ["ADAPTERS", "BATCH_JOB", "JOBSET", "JobAdapter", "adapter_for"]
