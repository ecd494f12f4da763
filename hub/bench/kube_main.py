"""``mkhub bench kube``: which of the Kubernetes benchmarks the arguments ask for.

``--workers N``: MultiKueue on API servers (:mod:`.kube_fleet_bench`); ``--jobsets N``: the
hub's JobSet integration (:mod:`.kube_jobset_bench`); ``--client-requests N``: the Kubernetes store's client CPU per
batched write (:mod:`.kube_client_bench`); ``--pod-churn N``: the hub while pods
Kueue does not manage churn on the nodes (:mod:`.kube_churn_bench`); otherwise the API path and the hub on
the Kubernetes store (:mod:`.kube_bench`).
"""

from __future__ import annotations

import sys


def _given(argv: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(f"{flag}=") for a in argv)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if _given(args, "--workers"):
        from .kube_fleet_bench import main as fleet_main

        return fleet_main(argv)
    if _given(args, "--pod-churn"):
        from .kube_churn_bench import main as churn_main

        return churn_main(argv)
    if _given(args, "--client-requests"):
        from .kube_client_bench import main as client_main

        return client_main(argv)
    if _given(args, "--jobsets"):
        from .kube_jobset_bench import main as jobset_main

        return jobset_main(argv)
    from .kube_bench import main as kube_main

    return kube_main(argv)
