"""Leader election between two ``mkhub serve --kubeconfig`` processes over a coordination.k8s.io/v1 Lease."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hub.store.kube import ApiClientTransport, LeaseConfig
from hub.store.kube.lease import LeaseLock, LeaseRecord

from .conftest import ApiServer, Names, proxied_kubeconfig, start_proxy, wait_for
from .hubproc import KubeHub

pytestmark = pytest.mark.timeout(180)


def lease_args(names: Names, duration: float = 3.0) -> list[str]:
    """A short Lease (a take-over waits for it to expire); ``duration``: longer where the leader must
    keep it through the full suite's load (a renew deadline of 2 s was missed at load 15 and more)."""
    return ["--lease-name", names.name("leader"), "--lease-namespace", names.namespace,
            "--lease-duration", f"{duration:g}s", "--renew-deadline", f"{duration * 2 / 3:g}s",
            "--retry-period", f"{min(duration / 6, 1.0):g}s"]


def holder(api: ApiServer, names: Names) -> LeaseRecord | None:
    transport = ApiClientTransport.from_kubeconfig(api.kubeconfig)
    try:
        return LeaseLock(transport, LeaseConfig("reader", name=names.name("leader"), namespace=names.namespace)).read()
    finally:
        transport.close()


def test_one_leads_the_other_takes_over_after_kill_9(api: ApiServer, names: Names, tmp_path: Path) -> None:
    first = KubeHub(api.kubeconfig, tmp_path / "first.log", lease_args(names)).start()
    second = KubeHub(api.kubeconfig, tmp_path / "second.log", lease_args(names))
    try:
        first.wait_serving()
        second.start()
        second.wait_log("waiting for the leader Lease")
        # Its caches fill while it stands by (as controller-runtime's): a failover lists nothing.
        second.wait_log("Kubernetes store synced")
        record = holder(api, names)
        assert record is not None and record.holder == first.identity
        time.sleep(2.0)  # several renew periods: the standby must keep waiting while the leader renews
        assert "leading as" not in second.log()
        assert holder(api, names).holder == first.identity  # type: ignore[union-attr]

        first.kill()
        killed = time.monotonic()
        second.wait_serving(timeout=60)
        took = time.monotonic() - killed
        record = holder(api, names)
        assert record is not None and record.holder == second.identity
        assert record.transitions >= 1
        print(f"standby took over {took:.2f}s after the leader's kill -9 (lease duration 3s)")
    finally:
        first.kill()
        second.kill()


def test_a_leader_that_cannot_renew_stops(api: ApiServer, names: Names, tmp_path: Path) -> None:
    proxy = start_proxy(api)
    cut_off = KubeHub(proxied_kubeconfig(api, proxy, tmp_path / "kc"), tmp_path / "cut.log", lease_args(names)).start()
    standby = KubeHub(api.kubeconfig, tmp_path / "standby.log", lease_args(names))
    try:
        cut_off.wait_serving()
        standby.start()
        standby.wait_log("waiting for the leader Lease")
        proxy.freeze()  # its renewals hang, then time out: past the renew deadline it must stop
        proxy.close()  # and no new connection gets through
        wait_for(lambda: cut_off.proc is not None and cut_off.proc.poll() is not None, timeout=60, what="the cut-off leader to exit")
        assert cut_off.proc is not None and cut_off.proc.returncode == 1
        assert "lost the leader Lease" in cut_off.log()
        standby.wait_serving(timeout=60)
        assert holder(api, names).holder == standby.identity  # type: ignore[union-attr]
    finally:
        cut_off.kill()
        standby.kill()
        proxy.close()
