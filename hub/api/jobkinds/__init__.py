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

from ..config import Configuration
from .batch_job import BATCH_JOB
from .framework import JobAdapter

# Every adapter mkhub has, by Configuration.integrations.frameworks name. A new kind is one
# module beside batch_job.py and one entry here; tests/api/test_jobkinds_contract.py covers it.
ADAPTERS: dict[str, JobAdapter[Any]] = {BATCH_JOB.framework: BATCH_JOB}


# By kind (the store's kinds are unique by name), Job first: a name users give without a kind is a Job's first.
_BY_KIND: dict[str, JobAdapter[Any]] = {a.kind: a for a in sorted(ADAPTERS.values(), key=lambda a: a.kind != "Job")}
JOB_KINDS: tuple[str, ...] = tuple(_BY_KIND)


def adapter_for(api_version: str, kind: str) -> JobAdapter[Any] | None:
    adapter = _BY_KIND.get(kind)
    return adapter if adapter is not None and adapter.api_version == api_version else None


def enabled_job_kinds(config: Configuration) -> tuple[str, ...]:
    """The kinds of the frameworks ``config`` enables that mkhub has adapters for."""
    return tuple(a.kind for a in _BY_KIND.values() if a.framework in config.frameworks)


def adapter_of_kind(kind: str) -> JobAdapter[Any] | None:
    return _BY_KIND.get(kind)


__all__ = ["ADAPTERS", "BATCH_JOB", "JOB_KINDS", "JobAdapter", "adapter_for", "adapter_of_kind", "enabled_job_kinds"]
