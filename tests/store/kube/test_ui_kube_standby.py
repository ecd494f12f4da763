"""The dashboard of ``mkhub serve --kubeconfig``: the leader's answers, a standby's 503 naming the leader."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .conftest import ApiServer, Names, wait_for
from .hubproc import KubeHub, free_port
from .test_leader_failover import lease_args

pytestmark = pytest.mark.timeout(180)


def get(port: int, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_standby_says_who_leads_and_the_leader_answers(api: ApiServer, names: Names, tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    first = KubeHub(api.kubeconfig, tmp_path / "first.log", [*lease_args(names, 9.0), "--ui-listen", f"127.0.0.1:{ports[0]}"])
    second = KubeHub(api.kubeconfig, tmp_path / "second.log", [*lease_args(names, 9.0), "--ui-listen", f"127.0.0.1:{ports[1]}"])
    try:
        first.start().wait_serving()
        second.start()
        second.wait_log("Kubernetes store synced")
        # A standby that has not read the Lease yet answers 503 naming no leader (seen at load 28).
        def naming_a_leader() -> tuple[int, dict[str, Any]] | None:
            got = get(ports[1], "/api/v1/overview")
            return got if got[1].get("leader") else None

        status, body = wait_for(naming_a_leader, timeout=30, what="the standby naming the leader")
        assert status == 503, body
        assert body["leader"] == first.identity and "not the leader" in body["error"]
        wait_for(lambda: get(ports[0], "/api/v1/overview")[0] == 200, timeout=30, what="the leader's dashboard")
        assert "clusterQueues" in get(ports[0], "/api/v1/overview")[1]

        first.kill()
        second.wait_serving(timeout=60)
        wait_for(lambda: get(ports[1], "/api/v1/overview")[0] == 200, timeout=30, what="the new leader's dashboard")
    finally:
        first.kill()
        second.kill()
