"""Observability: why workloads wait, what the hub and its agents decide, in Kueue's names.

Modules by job: :mod:`.metrics` (Kueue's counters, histograms and scrape-time
gauges) and :mod:`.series` (their lock-free storage), :mod:`.federation`
(MultiKueue's and the per-worker series, dispatch spans, the agent's view),
:mod:`.observer` (what a cluster's controller reports, turned into all of
them), :mod:`.events` (Kubernetes Events with client-go's aggregation),
:mod:`.tracing` (OpenTelemetry, chosen by ``OTEL_*``), :mod:`.logs`
(``--log-format``, decision lines), :mod:`.visibility` (Kueue's pending
workloads API), :mod:`.server` (``/metrics``), :mod:`.process` (one process's
wiring). The engine stays pure: everything here reads it.
"""
