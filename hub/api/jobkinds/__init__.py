"""The workload kinds mkhub queues, one adapter each (see :mod:`.framework`)."""

from __future__ import annotations

from typing import Any

from .batch_job import BATCH_JOB
from .framework import JobAdapter

# Every adapter mkhub has, by Configuration.integrations.frameworks name. A new kind is one
# module beside batch_job.py and one entry here; tests/api/test_jobkinds_contract.py covers it.
ADAPTERS: dict[str, JobAdapter[Any]] = {BATCH_JOB.framework: BATCH_JOB}


def adapter_for(api_version: str, kind: str) -> JobAdapter[Any] | None:
    for adapter in ADAPTERS.values():
        if adapter.kind == kind and adapter.api_version == api_version:
            return adapter
    return None


__all__ = ["ADAPTERS", "BATCH_JOB", "JobAdapter", "adapter_for"]
