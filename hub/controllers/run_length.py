"""How long the simulated runner runs a Workload (embedded hub, agents' simulated runner).

``mkhub.dev/sim-duration`` on the Workload, else on its object (a Job, a JobSet...), else on one
of its Pods; else the runner's default (``--sim-duration``). A serving Workload (the Pods of a
Deployment, StatefulSet or LeaderWorkerSet, marked by the parent's webhook) runs until its Pods
are deleted, as a server does and as the dev-cluster's kubelet runs them.
"""

from __future__ import annotations

import math

from hub.api.annotations import duration_annotation
from hub.api.jobkinds.serving import parent_framework
from hub.api.workload import Workload

from .jobs import JobIntegration
from .pods import PodIntegration

FOREVER = math.inf


def run_length(jobs: JobIntegration, pods: PodIntegration, wl: Workload) -> float | None:
    """Seconds to run ``wl``, :data:`FOREVER`, or None for the default; ValueError on a bad annotation."""
    duration = duration_annotation(wl.meta.annotations)
    if duration is not None:
        return duration
    okey = jobs.job_of.get(wl.meta.key)
    job = jobs.jobs.get(okey) if okey is not None else None
    if job is not None:
        return duration_annotation(job.meta.annotations)
    members = pods.member_pods(wl.meta.key)
    for pod in members:
        duration = duration_annotation(pod.meta.annotations)
        if duration is not None:
            return duration
    if any(parent_framework(pod.meta.annotations) is not None for pod in members):
        return FOREVER
    return None
